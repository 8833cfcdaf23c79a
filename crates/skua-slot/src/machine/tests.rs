//! The machine's tests: configuration, the claim protocol, policy and
//! slot ads, driven through `Machine`.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::claim::*;
use crate::config::*;
use crate::state::Activity;

const CLAIM: &str = "claim-0123456789abcdef";
const CLAIM2: &str = "claim-fedcba9876543210";

fn facts() -> MachineFacts {
    MachineFacts {
        cpus: 4,
        memory_mb: 4096,
        disk_kb: 400_000,
        hostname: "node.example".into(),
        load_avg: 1.5,
        start_time: 100,
        ..MachineFacts::default()
    }
}

fn machine(knobs: &[(&str, &str)]) -> Machine {
    let map: BTreeMap<String, String> = knobs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |k: &str| map.get(k).cloned();
    let f = facts();
    let cfg = StartdConfig::from_knobs(&lookup, &f).unwrap();
    let mut m = Machine::new(f, cfg, 1000);
    m.address = "<127.0.0.1:5555>".into();
    m
}

fn job(text: &str) -> ClassAd {
    classad::parse_ad(text).unwrap()
}

fn simple_job() -> ClassAd {
    job(
        "[ Owner = \"alice\"; RequestCpus = 1; RequestMemory = 100; RequestDisk = 1000; \
          Requirements = TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory; \
          GlobalJobId = \"sub#1.0#5\" ]",
    )
}

fn attr(ad: &ClassAd, name: &str) -> String {
    classad::unparse_value(&evaluator(0).eval_attr(name, ad, None))
}

fn v(x: impl Into<Value>) -> String {
    classad::unparse_value(&x.into())
}

fn pslot() -> Machine {
    machine(&[
        ("NUM_SLOTS_TYPE_1", "1"),
        ("SLOT_TYPE_1", "100%"),
        ("SLOT_TYPE_1_PARTITIONABLE", "true"),
    ])
}

#[test]
fn slot_ads_carry_htcondor_attributes() {
    let m = machine(&[("NUM_CPUS", "6"), ("START", "TARGET.Owner == \"alice\"")]);
    let ads = m.ads(1234);
    assert_eq!(ads.len(), 6);
    let (name, ad) = &ads[1];
    assert_eq!(name, "slot2@node.example");
    for (a, v) in [
        ("MyType", v("Machine")),
        ("TargetType", v("Job")),
        ("Name", v("slot2@node.example")),
        ("Machine", v("node.example")),
        ("SlotID", v(2_i64)),
        ("VirtualMachineID", v(2_i64)),
        ("SlotType", v("Static")),
        ("PartitionableSlot", v(false)),
        ("Cpus", v(1_i64)),
        ("Memory", v(682_i64)),
        ("TotalCpus", v(6_i64)),
        ("TotalSlots", v(6_i64)),
        ("State", v("Unclaimed")),
        ("Activity", v("Idle")),
        ("EnteredCurrentState", v(1000_i64)),
        ("MyCurrentTime", v(1234_i64)),
        ("DaemonStartTime", v(100_i64)),
        ("MyAddress", v("<127.0.0.1:5555>")),
        ("StartdIpAddr", v("<127.0.0.1:5555>")),
        ("HasFileTransfer", v(true)),
        ("OpSys", v("LINUX")),
        ("TotalLoadAvg", v(1.5)),
        ("IsOwner", v(false)),
        ("CurrentRank", v(0.0)),
    ] {
        assert_eq!(attr(ad, a), v, "{a}");
    }
    // Requirements is START, evaluated against the job
    let alice = job("[ Owner = \"alice\" ]");
    let bob = job("[ Owner = \"bob\" ]");
    let mut ev = evaluator(0);
    assert!(ev.eval_attr("Requirements", ad, Some(&alice)).is_true());
    assert!(!ev.eval_attr("Requirements", ad, Some(&bob)).is_true());
}

/// A slot offers a transparent checkpoint backend only where the startd's
/// check found one, and a `+SkuaCheckpoint = "criu"` job's clause matches
/// only there.
#[test]
fn checkpoint_backends_are_advertised_only_where_detected() {
    let clause = "stringListIMember(MY.SkuaCheckpoint, TARGET.CheckpointBackends)";
    let criu_job = job(&format!(
        "[ SkuaCheckpoint = \"criu\"; Requirements = {clause} ]"
    ));
    let plain = machine(&[]);
    let ad = &plain.ads(0)[0].1;
    assert_eq!(attr(ad, "HasSelfCheckpointTransfers"), v(true));
    for a in [
        "HasCheckpointBackend",
        "CheckpointBackends",
        "CheckpointPlatform",
    ] {
        assert!(ad.lookup(a).is_none(), "{a}");
    }
    assert!(!evaluator(0)
        .eval_attr("Requirements", &criu_job, Some(ad))
        .is_true());

    let mut f = facts();
    f.checkpoint_backends = vec!["criu".into()];
    f.checkpoint_platform = "criu-3.19 linux-6.8.0 x86_64".into();
    let cfg = StartdConfig::from_knobs(&|_: &str| None, &f).unwrap();
    let m = Machine::new(f, cfg, 1000);
    let ad = &m.ads(0)[0].1;
    assert_eq!(attr(ad, "HasCheckpointBackend"), v(true));
    assert_eq!(attr(ad, "CheckpointBackends"), v("criu"));
    assert_eq!(
        attr(ad, "CheckpointPlatform"),
        v("criu-3.19 linux-6.8.0 x86_64")
    );
    assert!(evaluator(0)
        .eval_attr("Requirements", &criu_job, Some(ad))
        .is_true());
}

#[test]
fn startd_attrs_and_cron_attributes_are_merged() {
    let mut m = machine(&[
        ("STARTD_ATTRS", "HasBlast, Site"),
        ("HasBlast", "true"),
        ("Site", "\"lab\""),
        ("STARTD_EXPRS", "Undefined_Knob"),
    ]);
    m.cron
        .insert("Temperature".into(), classad::parse_expr("42").unwrap());
    let ad = &m.ads(0)[0].1;
    assert_eq!(attr(ad, "HasBlast"), v(true));
    assert_eq!(attr(ad, "Site"), v("lab"));
    assert_eq!(attr(ad, "Temperature"), v(42_i64));
    assert!(ad.lookup("Undefined_Knob").is_none());
}

#[test]
fn a_bad_start_expression_names_the_knob() {
    let lookup = |k: &str| (k == "START").then(|| "((".to_string());
    let e = StartdConfig::from_knobs(&lookup, &facts()).unwrap_err();
    assert!(e.to_string().starts_with("START:"), "{e}");
}

#[test]
fn static_slot_match_claim_activate_release() {
    let mut m = machine(&[]);
    let slot = "slot1@node.example";
    m.match_notice(slot, CLAIM, "alice@dom", "<127.0.0.1:9>", 1000)
        .unwrap();
    assert_eq!(m.slot(slot).unwrap().status.state, State::Matched);
    // a second match on the same slot is stale
    let r = m
        .match_notice(slot, CLAIM2, "bob@dom", "<127.0.0.1:9>", 1001)
        .unwrap_err();
    assert!(
        matches!(r, Refusal::Conflict(ref m) if m.contains("stale")),
        "{r:?}"
    );
    // a wrong claim id is not found
    let r = m.claim(CLAIM2, &simple_job(), "", 1002).unwrap_err();
    assert!(matches!(r, Refusal::NotFound(_)), "{r:?}");
    let (name, ad) = m
        .claim(CLAIM, &simple_job(), "<127.0.0.1:9>", 1002)
        .unwrap();
    assert_eq!(name, slot);
    assert_eq!(attr(&ad, "State"), v("Claimed"));
    assert_eq!(attr(&ad, "RemoteUser"), v("alice@dom"));
    assert_eq!(attr(&ad, "ClientMachine"), v("127.0.0.1"));
    let launch = m
        .activate(CLAIM, &simple_job(), "1.0", "<127.0.0.1:9>", 1003)
        .unwrap();
    assert_eq!(launch.slot, slot);
    assert_eq!(attr(&launch.slot_ad, "Activity"), v("Busy"));
    assert_eq!(attr(&launch.slot_ad, "JobId"), v("1.0"));
    assert_eq!(attr(&launch.slot_ad, "GlobalJobId"), v("sub#1.0#5"));
    assert_eq!(attr(&launch.slot_ad, "JobStart"), v(1003_i64));
    // busy: a second activation is put off until the first job is done
    assert!(matches!(
        m.activate(CLAIM, &simple_job(), "1.1", "", 1004),
        Err(Refusal::Unavailable(_))
    ));
    let a = m.starter_exited(slot, 1010);
    assert!(a.is_empty());
    assert_eq!(m.slot(slot).unwrap().status.activity, Activity::Idle);
    // claim reuse
    m.activate(CLAIM, &simple_job(), "1.1", "", 1011).unwrap();
    let a = m.release(CLAIM, 1012).unwrap();
    assert_eq!(a, vec![(slot.to_string(), Action::HardKillStarter)]);
    assert_eq!(m.slot(slot).unwrap().status.state, State::Preempting);
    let a = m.starter_exited(slot, 1013);
    assert_eq!(a, vec![(slot.to_string(), Action::DropClaim)]);
    let s = m.slot(slot).unwrap();
    assert_eq!(
        (s.status.state, s.claim.is_none()),
        (State::Unclaimed, true)
    );
    assert!(matches!(m.release(CLAIM, 1014), Err(Refusal::NotFound(_))));
}

#[test]
fn a_stale_match_is_refused_with_the_reason() {
    let mut m = machine(&[("START", "TARGET.Owner != \"mallory\"")]);
    let slot = "slot1@node.example";
    m.match_notice(slot, CLAIM, "m@dom", "", 0).unwrap();
    let r = m
        .claim(
            CLAIM,
            &job("[ Owner = \"mallory\"; Requirements = true ]"),
            "",
            1,
        )
        .unwrap_err();
    assert!(
        matches!(&r, Refusal::Conflict(m) if m.contains("START")),
        "{r:?}"
    );
    let r = m
        .claim(
            CLAIM,
            &job("[ Owner = \"a\"; Requirements = TARGET.Memory > 100000 ]"),
            "",
            1,
        )
        .unwrap_err();
    assert!(
        matches!(&r, Refusal::Conflict(m) if m.contains("job's Requirements")),
        "{r:?}"
    );
    // still Matched: the refusal changed nothing
    assert_eq!(m.slot(slot).unwrap().status.state, State::Matched);
}

#[test]
fn matches_expire_and_idle_claims_are_released() {
    let mut m = machine(&[("MATCH_TIMEOUT", "30"), ("MAX_CLAIM_IDLE", "50")]);
    m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
        .unwrap();
    m.match_notice("slot2@node.example", CLAIM2, "a@d", "", 0)
        .unwrap();
    m.claim(CLAIM2, &simple_job(), "", 10).unwrap();
    assert!(m.tick(29).is_empty());
    let a = m.tick(30);
    assert_eq!(a, vec![("slot1@node.example".into(), Action::DropClaim)]);
    assert!(matches!(
        m.claim(CLAIM, &simple_job(), "", 31),
        Err(Refusal::NotFound(_))
    ));
    assert!(m.tick(59).is_empty());
    let a = m.tick(60);
    assert_eq!(a, vec![("slot2@node.example".into(), Action::DropClaim)]);
}

#[test]
fn a_claim_without_keep_alives_is_dropped_after_its_lease() {
    let slot = "slot1@node.example";
    // no JobLeaseDuration: MAX_CLAIM_ALIVES_MISSED x the schedd's
    // announced interval (3 x 4 = 12 s)
    let mut m = machine(&[("MAX_CLAIM_ALIVES_MISSED", "3"), ("ALIVE_INTERVAL", "300")]);
    m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
    m.claim(CLAIM, &simple_job(), "", 10).unwrap();
    m.set_alive_interval(CLAIM, 4);
    assert_eq!(m.claim_lease(0, 10), Some(12));
    m.activate(CLAIM, &simple_job(), "1.0", "", 11).unwrap();
    // keep-alives renew it
    m.keep_alive(CLAIM, 20).unwrap();
    assert!(m.tick(31).is_empty());
    assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Busy));
    // none for 12 s: the job is killed, then the claim goes
    let a = m.tick(32);
    assert_eq!(
        a,
        vec![
            (slot.into(), Action::LeaseExpired { lease_secs: 12 }),
            (slot.into(), Action::KillStarterTree)
        ]
    );
    assert_eq!(state_of(&m, slot), (State::Preempting, Activity::Killing));
    // announced once
    assert!(m.tick(33).is_empty());
    let a = m.starter_exited(slot, 34);
    assert_eq!(a, vec![(slot.into(), Action::DropClaim)]);
    m.tick(34);
    assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
    assert!(matches!(m.keep_alive(CLAIM, 35), Err(Refusal::NotFound(_))));
}

#[test]
fn the_running_jobs_lease_duration_is_the_claims_lease() {
    let slot = "slot1@node.example";
    let mut m = machine(&[]);
    m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
    m.claim(CLAIM, &simple_job(), "", 0).unwrap();
    // no announced interval: HTCondor's defaults, 6 x 300 s
    assert_eq!(m.claim_lease(0, 0), Some(1800));
    let mut j = simple_job();
    j.insert_value("JobLeaseDuration", 20);
    m.activate(CLAIM, &j, "1.0", "", 0).unwrap();
    assert_eq!(m.claim_lease(0, 0), Some(20));
    assert!(m.tick(19).is_empty());
    let a = m.tick(20);
    assert_eq!(a[0], (slot.into(), Action::LeaseExpired { lease_secs: 20 }));
    // an idle claim goes at once, to Owner then Unclaimed
    let mut m = machine(&[("ALIVE_INTERVAL", "5")]);
    m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
    m.claim(CLAIM, &simple_job(), "", 0).unwrap();
    let a = m.tick(30);
    assert_eq!(
        a,
        vec![
            (slot.into(), Action::LeaseExpired { lease_secs: 30 }),
            (slot.into(), Action::DropClaim)
        ]
    );
    assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
}

#[test]
fn claim_worklife_stops_new_activations() {
    let mut m = machine(&[("CLAIM_WORKLIFE", "100")]);
    m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
        .unwrap();
    m.claim(CLAIM, &simple_job(), "", 0).unwrap();
    m.activate(CLAIM, &simple_job(), "1.0", "", 50).unwrap();
    m.starter_exited("slot1@node.example", 90);
    let r = m
        .activate(CLAIM, &simple_job(), "1.1", "", 101)
        .unwrap_err();
    assert!(
        matches!(&r, Refusal::Conflict(m) if m.contains("CLAIM_WORKLIFE")),
        "{r:?}"
    );
}

#[test]
fn partitionable_slot_carves_and_gets_resources_back() {
    let mut m = pslot();
    let p = "slot1@node.example";
    let ad = &m.ads(0)[0].1;
    assert_eq!(attr(ad, "SlotType"), v("Partitionable"));
    assert_eq!(attr(ad, "PartitionableSlot"), v(true));
    assert_eq!(attr(ad, "Cpus"), v(4_i64));
    m.match_notice(p, CLAIM, "a@d", "", 0).unwrap();
    m.match_notice(p, CLAIM2, "a@d", "", 0).unwrap();
    // the partitionable slot stays Unclaimed and takes both matches
    assert_eq!(m.slot(p).unwrap().status.state, State::Unclaimed);
    let big =
        job("[ RequestCpus = 3; RequestMemory = 1000.5; RequestDisk = 10; Requirements = true ]");
    let (d1, ad1) = m.claim(CLAIM, &big, "", 1).unwrap();
    assert_eq!(d1, "slot1_1@node.example");
    assert_eq!(attr(&ad1, "SlotType"), v("Dynamic"));
    assert_eq!(attr(&ad1, "DynamicSlot"), v(true));
    assert_eq!(attr(&ad1, "Cpus"), v(3_i64));
    assert_eq!(attr(&ad1, "Memory"), v(1001_i64));
    assert_eq!(attr(&ad1, "Disk"), v(10_i64));
    assert_eq!(attr(&ad1, "State"), v("Claimed"));
    let pad = &m.ads(1)[0].1;
    assert_eq!(attr(pad, "Cpus"), v(1_i64));
    assert_eq!(attr(pad, "Memory"), v(4096_i64 - 1001));
    assert_eq!(attr(pad, "NumDynamicSlots"), v(1_i64));
    // the second job no longer fits
    let r = m.claim(CLAIM2, &big, "", 2).unwrap_err();
    assert!(
        matches!(&r, Refusal::Conflict(m) if m.contains("3 CPUs")),
        "{r:?}"
    );
    // a small one does, and gets the next name
    let (d2, _) = m.claim(CLAIM2, &simple_job(), "", 2).unwrap();
    assert_eq!(d2, "slot1_2@node.example");
    assert_eq!(m.slot(p).unwrap().cpus, 0);
    // releasing the first dynamic slot removes it and gives its share back
    let a = m.release(CLAIM, 3).unwrap();
    assert_eq!(a, vec![(d1.clone(), Action::DropClaim)]);
    assert!(m.slot(&d1).is_none());
    let ps = m.slot(p).unwrap();
    assert_eq!(
        (ps.cpus, ps.memory_mb, ps.disk_kb),
        (3, 4096 - 100, 400_000 - 1000)
    );
    // a busy dynamic slot released: killed first, removed after its starter exits
    m.activate(CLAIM2, &simple_job(), "2.0", "", 4).unwrap();
    m.release(CLAIM2, 5).unwrap();
    assert!(m.slot(&d2).is_some());
    m.starter_exited(&d2, 6);
    assert!(m.slot(&d2).is_none());
    let ps = m.slot(p).unwrap();
    assert_eq!((ps.cpus, ps.memory_mb, ps.disk_kb), (4, 4096, 400_000));
}

#[test]
fn pending_partitionable_matches_expire() {
    let mut m = pslot();
    m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
        .unwrap();
    m.tick(119);
    assert_eq!(m.slot("slot1@node.example").unwrap().pending.len(), 1);
    m.tick(120);
    assert!(matches!(
        m.claim(CLAIM, &simple_job(), "", 121),
        Err(Refusal::NotFound(_))
    ));
}

#[test]
fn match_notice_refusals() {
    let mut m = machine(&[]);
    assert!(matches!(
        m.match_notice("slot9@node.example", CLAIM, "a@d", "", 0),
        Err(Refusal::NotFound(_))
    ));
    assert!(matches!(
        m.match_notice("slot1@node.example", "short", "a@d", "", 0),
        Err(Refusal::BadRequest(_))
    ));
    m.match_notice("slot1@node.example", CLAIM, "a@d", "", 0)
        .unwrap();
    assert!(matches!(
        m.match_notice("slot2@node.example", CLAIM, "a@d", "", 0),
        Err(Refusal::Conflict(_))
    ));
}

#[test]
fn claim_ids_compare_exactly() {
    assert!(claim_ids_equal(CLAIM, CLAIM));
    assert!(!claim_ids_equal(CLAIM, CLAIM2));
    assert!(!claim_ids_equal(CLAIM, &CLAIM[1..]));
}

#[test]
fn owner_state_when_is_owner_holds() {
    let mut m = machine(&[("IS_OWNER", "KeyboardIdle < 60")]);
    m.tick(1);
    assert_eq!(m.slots[0].status.state, State::Owner);
    m.facts.keyboard_idle = 600;
    m.tick(2);
    assert_eq!(m.slots[0].status.state, State::Unclaimed);
}

fn running(m: &mut Machine, claim: &str, job_ad: &ClassAd, now: i64) {
    m.match_notice("slot1@node.example", claim, "a@d", "", now)
        .unwrap();
    m.claim(claim, job_ad, "", now).unwrap();
    m.activate(claim, job_ad, "1.0", "", now).unwrap();
}

fn state_of(m: &Machine, slot: &str) -> (State, Activity) {
    let s = m.slot(slot).unwrap();
    (s.status.state, s.status.activity)
}

/// HTCondor's desktop expressions (POLICY : Desktop with its fragments
/// expanded), times scaled down.
fn desktop() -> Vec<(&'static str, &'static str)> {
    vec![
        ("NUM_CPUS", "1"),
        ("START", "((KeyboardIdle > 60) && ((LoadAvg - CondorLoadAvg) <= 0.3 || (State != \"Unclaimed\" && State != \"Owner\")))"),
        ("SUSPEND", "((KeyboardIdle < 60) || (((time() - CpuBusyTime) > 120) && CpuBusyValue == 1))"),
        ("CONTINUE", "(((LoadAvg - CondorLoadAvg) <= 0.3) && ((time() - EnteredCurrentActivity) > 10) && (KeyboardIdle > 30))"),
        ("PREEMPT", "(((Activity == \"Suspended\") && ((time() - EnteredCurrentActivity) > 100)) || (SUSPEND && (WANT_SUSPEND == False)))"),
        ("WANT_SUSPEND", "(TARGET.ImageSize < 15 * 1024 || KeyboardIdle >= 60 || TARGET.JobUniverse == 5) && (SUSPEND)"),
        ("WANT_VACATE", "true"),
        ("IS_OWNER", "(START =?= False)"),
        ("STARTD_LATCH_EXPRS", "CpuBusy"),
        ("CpuBusy", "((LoadAvg - CondorLoadAvg) >= 0.5)"),
    ]
}

#[test]
fn desktop_policy_suspends_continues_and_vacates() {
    let mut m = machine(&desktop());
    m.facts.load_avg = 0.0;
    m.facts.keyboard_idle = 1000;
    m.tick(1000);
    let slot = "slot1@node.example";
    assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
    let j = job("[ Owner = \"a\"; JobUniverse = 5; ImageSize = 100; Requirements = true ]");
    running(&mut m, CLAIM, &j, 1000);
    // the latch is published
    let ad = &m.ads(1001)[0].1;
    assert_eq!(attr(ad, "CpuBusyValue"), v(0_i64));
    // the owner is back: suspended at the next poll
    m.facts.keyboard_idle = 0;
    let a = m.tick(1005);
    assert_eq!(a, vec![(slot.to_string(), Action::Suspend)]);
    assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Suspended));
    // still busy: stays suspended
    assert!(m.tick(1050).is_empty());
    // the owner leaves: continued
    m.facts.keyboard_idle = 100;
    let a = m.tick(1060);
    assert_eq!(a, vec![(slot.to_string(), Action::Continue)]);
    assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Busy));
    // back again, and stays past the max suspend time: vacated
    m.facts.keyboard_idle = 0;
    m.tick(1070);
    assert_eq!(state_of(&m, slot).1, Activity::Suspended);
    assert!(m.tick(1170).is_empty());
    let a = m.tick(1171);
    assert_eq!(
        a,
        vec![
            (slot.to_string(), Action::Continue),
            (slot.to_string(), Action::SoftKillStarter)
        ]
    );
    assert_eq!(state_of(&m, slot), (State::Preempting, Activity::Vacating));
    let ad = &m.ads(1171)[0].1;
    assert_eq!(attr(ad, "Requirements"), v(false));
    let a = m.starter_exited(slot, 1172);
    assert_eq!(a, vec![(slot.to_string(), Action::DropClaim)]);
    // the owner is still there: Owner (START is false)
    m.tick(1173);
    assert_eq!(state_of(&m, slot), (State::Owner, Activity::Idle));
    m.facts.keyboard_idle = 100;
    m.tick(1180);
    assert_eq!(state_of(&m, slot), (State::Unclaimed, Activity::Idle));
}

#[test]
fn per_slot_knobs_and_slot_id_in_expressions() {
    let mut m = machine(&[
        ("NUM_CPUS", "3"),
        ("START", "SlotID <= 2"),
        ("SLOT2_START", "TARGET.Owner == \"bob\""),
    ]);
    let alice = job("[ Owner = \"alice\"; Requirements = true ]");
    let bob = job("[ Owner = \"bob\"; Requirements = true ]");
    let ads = m.ads(0);
    let mut ev = evaluator(0);
    let ok = |ev: &mut Evaluator, i: usize, j: &ClassAd| {
        ev.eval_attr("Requirements", &ads[i].1, Some(j)).is_true()
    };
    assert!(ok(&mut ev, 0, &alice));
    assert!(!ok(&mut ev, 1, &alice));
    assert!(ok(&mut ev, 1, &bob));
    assert!(!ok(&mut ev, 2, &bob));
    // slot 3's START is locally false: IS_OWNER stays false (default)
    m.tick(1);
    assert_eq!(m.slots[2].status.state, State::Unclaimed);
}

#[test]
fn startd_job_attrs_are_copied_from_the_running_job() {
    let mut m = machine(&[
        ("NUM_CPUS", "1"),
        ("STARTD_JOB_ATTRS", "BolognaBatchJob LongRunningJob"),
    ]);
    let j = job("[ Owner = \"a\"; BolognaBatchJob = true; Requirements = true ]");
    running(&mut m, CLAIM, &j, 10);
    let ad = &m.ads(20)[0].1;
    assert_eq!(attr(ad, "BolognaBatchJob"), v(true));
    assert!(ad.lookup("LongRunningJob").is_none());
    assert_eq!(attr(ad, "ActivityTimer"), v(10_i64));
    assert_eq!(attr(ad, "TotalJobRunTime"), v(10_i64));
    m.starter_exited("slot1@node.example", 30);
    assert!(m.ads(31)[0].1.lookup("BolognaBatchJob").is_none());
}

#[test]
fn the_job_may_lower_retirement_and_vacate_times_but_not_raise_them() {
    let mut m = machine(&[
        ("NUM_CPUS", "1"),
        ("MAXJOBRETIREMENTTIME", "100"),
        ("MachineMaxVacateTime", "50"),
    ]);
    let j = job(
        "[ Owner = \"a\"; MaxJobRetirementTime = 10; JobMaxVacateTime = 500; Requirements = true ]",
    );
    running(&mut m, CLAIM, &j, 0);
    let p = m.policy(0, 5);
    assert_eq!((p.max_job_retirement_time, p.max_vacate_time), (10, 50));
}

#[test]
fn want_hold_with_reason_and_subcode() {
    let mut m = machine(&[
        ("NUM_CPUS", "1"),
        ("PREEMPT", "TARGET.Big =?= true"),
        ("WANT_HOLD", "TARGET.Big =?= true"),
        ("WANT_HOLD_REASON", "too big for this machine"),
        ("WANT_HOLD_SUBCODE", "7"),
    ]);
    let j = job("[ Owner = \"a\"; Big = true; Requirements = true ]");
    running(&mut m, CLAIM, &j, 0);
    let a = m.tick(1);
    let slot = "slot1@node.example".to_string();
    assert_eq!(
        a,
        vec![
            (
                slot.clone(),
                Action::Hold {
                    reason: "too big for this machine".into(),
                    subcode: 7
                }
            ),
            (slot, Action::SoftKillStarter)
        ]
    );
}

#[test]
fn a_preempting_match_waits_for_the_job_then_takes_the_slot() {
    let mut m = machine(&[("NUM_CPUS", "1"), ("MAXJOBRETIREMENTTIME", "60")]);
    let slot = "slot1@node.example";
    running(&mut m, CLAIM, &simple_job(), 0);
    // an ordinary match on a claimed slot is stale
    assert!(matches!(
        m.match_notice(slot, CLAIM2, "b@d", "", 1),
        Err(Refusal::Conflict(_))
    ));
    let a = m
        .preempting_match(slot, CLAIM2, "b@d", "<1.2.3.4:5>", 10)
        .unwrap();
    assert!(a.is_empty());
    assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Retiring));
    // a second one is refused: already being preempted
    let third = "claim-aaaaaaaaaaaaaaaaaaaa";
    assert!(matches!(
        m.preempting_match(slot, third, "c@d", "", 11),
        Err(Refusal::Conflict(_))
    ));
    // the new schedd must wait
    assert!(matches!(
        m.claim(CLAIM2, &simple_job(), "", 12),
        Err(Refusal::Unavailable(_))
    ));
    // the old claim still works for the keep-alive
    assert!(m.claim_status(CLAIM).is_ok());
    assert!(m.tick(59).is_empty());
    let a = m.tick(60);
    assert_eq!(a, vec![(slot.to_string(), Action::SoftKillStarter)]);
    let a = m.starter_exited(slot, 61);
    assert_eq!(
        a,
        vec![
            (slot.to_string(), Action::DropClaim),
            (slot.to_string(), Action::PromoteClaim)
        ]
    );
    assert_eq!(state_of(&m, slot), (State::Matched, Activity::Idle));
    assert!(matches!(m.claim_status(CLAIM), Err(Refusal::NotFound(_))));
    let (_, ad) = m.claim(CLAIM2, &simple_job(), "", 62).unwrap();
    assert_eq!(attr(&ad, "RemoteUser"), v("b@d"));
}

#[test]
fn vacate_and_drain_by_command() {
    let mut m = machine(&[("NUM_CPUS", "2")]);
    running(&mut m, CLAIM, &simple_job(), 0);
    let a = m.vacate(&["slot1".to_string()], true, 5).unwrap();
    assert_eq!(
        a,
        vec![("slot1@node.example".to_string(), Action::SoftKillStarter)]
    );
    assert!(matches!(
        m.vacate(&["slot9".to_string()], true, 5),
        Err(Refusal::NotFound(_))
    ));
    // draining: slot 2 drains at once, slot 1 once its job is gone
    m.drain(false, 6).unwrap();
    assert_eq!(
        state_of(&m, "slot2@node.example"),
        (State::Drained, Activity::Retiring)
    );
    m.starter_exited("slot1@node.example", 7);
    m.tick(8);
    assert_eq!(
        state_of(&m, "slot1@node.example"),
        (State::Drained, Activity::Idle)
    );
    assert_eq!(
        state_of(&m, "slot2@node.example"),
        (State::Drained, Activity::Idle)
    );
    assert!(m
        .match_notice("slot2@node.example", CLAIM2, "a@d", "", 9)
        .is_err());
    m.drain(true, 10).unwrap();
    assert_eq!(
        state_of(&m, "slot2@node.example"),
        (State::Unclaimed, Activity::Idle)
    );
}

#[test]
fn an_idle_claim_evaluates_start_against_its_job() {
    let mut m = machine(&[("NUM_CPUS", "1"), ("START", "TARGET.Owner == \"a\"")]);
    let slot = "slot1@node.example";
    m.match_notice(slot, CLAIM, "a@d", "", 0).unwrap();
    m.claim(CLAIM, &job("[ Owner = \"a\"; Requirements = true ]"), "", 0)
        .unwrap();
    assert!(m.tick(1).is_empty());
    assert_eq!(state_of(&m, slot), (State::Claimed, Activity::Idle));
}

#[test]
fn pending_output_sandboxes_shrink_the_slots_disk() {
    use crate::machine::advertised_disk;
    assert_eq!(advertised_disk(400_000, 0), 400_000);
    assert_eq!(advertised_disk(400_000, 150_000), 250_000);
    // never below zero, and a nonsense negative size counts for nothing
    assert_eq!(advertised_disk(400_000, 500_000), 0);
    assert_eq!(advertised_disk(400_000, -5), 400_000);
    let mut m = machine(&[("NUM_CPUS", "2")]);
    let names: Vec<String> = m.slots.iter().map(|s| s.name.clone()).collect();
    let before: Vec<_> = m
        .ads(0)
        .into_iter()
        .map(|(_, ad)| attr(&ad, "Disk"))
        .collect();
    m.pending_output_kb.insert(names[0].clone(), 1000);
    let after: Vec<_> = m
        .ads(0)
        .into_iter()
        .map(|(_, ad)| attr(&ad, "Disk"))
        .collect();
    let d0: i64 = before[0].parse().unwrap();
    assert_eq!(after[0], v(d0 - 1000));
    assert_eq!(after[1], before[1]);
}
