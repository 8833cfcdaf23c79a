//! Cross-process tests of the startd in a personal pool: slot layouts and
//! attributes in `skua status`, STARTD_ATTRS and STARTD_CRON, the clean-up
//! of leftover execute directories and job cgroups, `Mips` and `KFlops`,
//! and matching, claiming, activating,
//! deactivating and releasing a slot through its routes with a fake
//! starter, and a match that preempts a running claim.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use common::*;
use skua_proto::{
    routes, Ack, ActivateRequest, ClaimReply, ClaimRequest, DeactivateRequest, MatchNotice,
    ReleaseRequest, StarterSpec,
};
use skua_testkit::starter::StarterMode;
use skua_testkit::{FakeStarter, JobAdBuilder};

const CLAIM: &str = "startd-test-claim-0123456789abcdef";

fn startd_pool(name: &str, extra: &[(&str, &str)]) -> Pool {
    let mut env = fast();
    env.push(("_CONDOR_DAEMON_LIST", "MASTER, COLLECTOR, STARTD"));
    // the pool's configuration names the programs of its default daemons
    // only; the startd's comes from the environment
    env.push(("_CONDOR_STARTD", SKUAD));
    env.push(("_CONDOR_STARTD_ARGS", "startd"));
    env.extend_from_slice(extra);
    Pool::new(name, &env)
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `skua status -af` lines, sorted.
fn status_af(pool: &Pool, attrs: &[&str]) -> Vec<String> {
    let mut args = vec!["status", "-af"];
    args.extend_from_slice(attrs);
    let out = pool.skua(&args);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn slots_attributes_cron_and_execute_cleanup() {
    let base = scratch("startd-layout-files");
    let cron = base.join("probe.sh");
    write_script(
        &cron,
        "#!/bin/sh\necho 'ProbeValue = 42'\necho '-'\necho 'Ignored = 1'\n",
    );
    let cron_s = cron.to_string_lossy().into_owned();
    let mut pool = startd_pool(
        "startd-layout",
        &[
            // far more CPUs than any test machine has: overcommit
            ("_CONDOR_NUM_CPUS", "64"),
            ("_CONDOR_MEMORY", "2000"),
            ("_CONDOR_NUM_SLOTS_TYPE_1", "2"),
            ("_CONDOR_SLOT_TYPE_1", "cpus=1, ram=100"),
            ("_CONDOR_NUM_SLOTS_TYPE_2", "1"),
            ("_CONDOR_SLOT_TYPE_2", "cpus=60, mem=50%"),
            ("_CONDOR_SLOT_TYPE_2_PARTITIONABLE", "true"),
            ("_CONDOR_STARTD_ATTRS", "HasSkuaTest"),
            ("_CONDOR_HasSkuaTest", "true"),
            ("_CONDOR_STARTD_CRON_JOBLIST", "probe"),
            ("_CONDOR_STARTD_CRON_probe_EXECUTABLE", &cron_s),
            ("_CONDOR_STARTD_CRON_probe_PERIOD", "1"),
        ],
    );
    // leftovers of an earlier startd: a job directory and a job still
    // running in its own process group
    let execute = pool.dir.join("execute");
    std::fs::create_dir_all(execute.join("dir_4242/sub")).unwrap();
    std::fs::write(execute.join("dir_4242/sub/out"), "x").unwrap();
    let mut orphan = std::process::Command::new("sleep")
        .arg("300")
        .process_group(0)
        .spawn()
        .unwrap();
    let orphan_pid = orphan.id() as i32;
    std::fs::write(execute.join("dir_4242.pgid"), format!("{orphan_pid}\n")).unwrap();
    std::fs::write(execute.join("keep_me"), "not a job directory").unwrap();
    // and, where jobs get cgroups, a job left in its group
    let leftover_group = match common::cgroup::usable_cgroup2() {
        Some(mount) => {
            let group = common::cgroup::job_groups_dir(&mount, &execute).join("slot1@gone_4242_1");
            std::fs::create_dir_all(&group).unwrap();
            let job = std::process::Command::new("sleep")
                .arg("300")
                .spawn()
                .unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(group.join("cgroup.procs"))
                .and_then(|mut f| {
                    std::io::Write::write_all(&mut f, job.id().to_string().as_bytes())
                })
                .unwrap();
            Some((group, job))
        }
        None => {
            eprintln!("no cgroup v2 for root here: the leftover job cgroup is not tested");
            None
        }
    };

    pool.start();
    wait_for(
        "the cron attribute in every slot",
        Duration::from_secs(30),
        || {
            let l = status_af(&pool, &["Name", "ProbeValue"]);
            l.len() == 3 && l.iter().all(|l| l.ends_with(" 42"))
        },
    );
    let lines = status_af(
        &pool,
        &[
            "SlotID",
            "SlotType",
            "Cpus",
            "Memory",
            "TotalCpus",
            "TotalMemory",
            "PartitionableSlot",
            "HasSkuaTest",
            "State",
            "Activity",
            "Ignored",
        ],
    );
    assert_eq!(
        lines,
        vec![
            "1 Static 1 100 64 2000 false true Unclaimed Idle undefined",
            "2 Static 1 100 64 2000 false true Unclaimed Idle undefined",
            "3 Partitionable 60 1000 64 2000 true true Unclaimed Idle undefined",
        ],
        "{}",
        pool.logs()
    );
    let names = status_af(
        &pool,
        &["Name", "Machine", "MyAddress", "Requirements", "Start"],
    );
    for (i, l) in names.iter().enumerate() {
        let parts: Vec<&str> = l.split(' ').collect();
        assert_eq!(parts[0], format!("slot{}@{}", i + 1, parts[1]), "{l}");
        assert!(parts[2].starts_with("<127.0.0.1:"), "{l}");
        // Requirements is START (true by default)
        assert_eq!(&parts[3..], ["true", "true"], "{l}");
    }
    // the default listing shows the slots
    let out = pool.ok(&["status"]);
    assert!(out.contains("slot3@"), "{out}");

    // leftovers: the process group killed, the directories and files gone,
    // other files kept
    wait_for(
        "the leftover job to be killed",
        Duration::from_secs(10),
        || orphan.try_wait().unwrap().is_some(),
    );
    assert!(!execute.join("dir_4242").exists());
    assert!(!execute.join("dir_4242.pgid").exists());
    assert!(execute.join("keep_me").exists());
    if let Some((group, mut job)) = leftover_group {
        wait_for(
            "the job left in its cgroup to be killed",
            Duration::from_secs(10),
            || job.try_wait().unwrap().is_some(),
        );
        assert!(!group.exists(), "the leftover group is removed");
        assert!(!group.parent().unwrap().exists());
    }

    // the machine's speed, in every slot ad
    let long = pool.ok(&["status", "-l"]);
    for attr in ["Mips", "KFlops"] {
        let values: Vec<i64> = long
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{attr} = ")))
            .map(|v| v.trim().parse().unwrap())
            .collect();
        assert_eq!(values.len(), 3, "{attr} in each slot ad: {long}");
        assert!(values.iter().all(|v| *v > 0), "{attr}: {values:?}");
    }
}

#[test]
fn a_bad_slot_layout_stops_the_startd_naming_the_knob() {
    let mut pool = startd_pool(
        "startd-bad",
        &[
            ("_CONDOR_NUM_CPUS", "2"),
            ("_CONDOR_NUM_SLOTS_TYPE_1", "3"),
            ("_CONDOR_SLOT_TYPE_1", "cpus=1"),
        ],
    );
    pool.start();
    wait_for("the startd's complaint", Duration::from_secs(20), || {
        pool.logs()
            .contains("SLOT_TYPE_1: the slots ask for 3 CPUs")
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn remote_status(e: &skua_net::NetError) -> u16 {
    match e {
        skua_net::NetError::Remote { status, .. } => *status,
        other => panic!("not an answer from the startd: {other}"),
    }
}

/// Starts `pool` with `starter` as its STARTER; waits for `slots` slots and
/// returns the first one's name.
fn start_with_starter(pool: &mut Pool, starter: &Path, slots: usize) -> String {
    pool.extra_env.push((
        "_CONDOR_STARTER".into(),
        starter.to_string_lossy().into_owned(),
    ));
    pool.start();
    wait_for("the slots", Duration::from_secs(30), || {
        status_af(pool, &["Name"]).len() == slots
    });
    status_af(pool, &["Name"])[0].clone()
}

/// A client of the pool's startd, over its Unix socket.
fn startd_client(pool: &Pool) -> skua_net::Client {
    skua_net::Client::new(
        skua_net::Endpoint::Unix(pool.dir.join("lock/startd.sock")),
        None,
        Duration::from_secs(10),
    )
    .unwrap()
}

/// A job ad of alice's that fits any slot.
fn job_ad() -> String {
    JobAdBuilder::new()
        .owner("alice")
        .requests(1, 10, 1)
        .requirements("TARGET.Cpus >= 1")
        .text()
}

/// The negotiator's match of `slot` for `submitter`, as the startd gets it.
fn notice(slot: &str, claim: &str, submitter: &str, preempting: bool) -> MatchNotice {
    MatchNotice {
        slot: slot.into(),
        claim_id: claim.into(),
        submitter: submitter.into(),
        schedd_addr: "<127.0.0.1:1>".into(),
        preempting,
    }
}

/// A schedd's claim with `claim` and [`job_ad`].
fn claim_request(claim: &str) -> ClaimRequest {
    ClaimRequest {
        claim_id: claim.into(),
        job_ad: job_ad(),
        schedd_addr: "<127.0.0.1:1>".into(),
        alive_interval_secs: 0,
    }
}

#[test]
fn match_claim_activate_deactivate_release_with_a_fake_starter() {
    let base = scratch("startd-claim-files");
    let mut pool = startd_pool("startd-claim", &[("_CONDOR_NUM_CPUS", "2")]);
    let execute = pool.dir.join("execute");
    // the starter's contract: the spec on stdin, a scratch directory
    // dir_<pid> and the job's process group in dir_<pid>.pgid; it runs
    // until its stdin closes or a signal ends it
    let fake = FakeStarter::write(&base, &execute, StarterMode::Hold).unwrap();
    let slot1 = start_with_starter(&mut pool, &fake.script, 2);
    let host = slot1.split('@').nth(1).unwrap().to_string();
    let rt = runtime();
    let client = startd_client(&pool);
    let job_ad = job_ad();

    // match, then a claim under a wrong id is refused and changes nothing
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_MATCH,
            Some(&notice(&slot1, CLAIM, "alice@test", false)),
        ))
        .unwrap();
    let wrong = claim_request("startd-test-claim-XXXXXXXXXXXXXXXX");
    let e = rt
        .block_on(client.command::<_, ClaimReply>(&routes::STARTD_CLAIM, Some(&wrong)))
        .unwrap_err();
    assert_eq!(remote_status(&e), 404, "{e}");
    // a second match of a matched slot is stale
    let e = rt
        .block_on(client.command::<_, Ack>(
            &routes::STARTD_MATCH,
            Some(&notice(
                &slot1,
                "startd-test-claim-another-0000000",
                "bob@test",
                false,
            )),
        ))
        .unwrap_err();
    assert_eq!(remote_status(&e), 409, "{e}");

    let reply: ClaimReply = rt
        .block_on(client.command(&routes::STARTD_CLAIM, Some(&claim_request(CLAIM))))
        .unwrap();
    assert_eq!(reply.slot, slot1);
    assert!(
        reply.slot_ad.contains("State = \"Claimed\""),
        "{}",
        reply.slot_ad
    );
    wait_for("the slot to show Claimed", Duration::from_secs(10), || {
        status_af(&pool, &["Name", "State", "RemoteUser"])
            .contains(&format!("{slot1} Claimed alice@test"))
    });

    // activate: the fake starter gets the spec on stdin and keeps running
    let activate = ActivateRequest {
        claim_id: CLAIM.into(),
        job_ad: job_ad.clone(),
        job_id: "1.0".into(),
        shadow_addr: "<127.0.0.1:1>".into(),
        owner_ids: None,
    };
    let _: Ack = rt
        .block_on(client.command(&routes::STARTD_ACTIVATE, Some(&activate)))
        .unwrap();
    wait_for("the starter's spec", Duration::from_secs(10), || {
        fake.specs().len() == 1
    });
    let (starter_pid, _, spec) = fake.specs().remove(0);
    let spec: StarterSpec = serde_json::from_str(&spec).unwrap();
    assert_eq!(spec.claim_id, CLAIM);
    assert_eq!(spec.job_id, "1.0");
    assert_eq!(Path::new(&spec.execute_dir), execute);
    assert!(spec.slot_ad.contains(&format!("Name = \"{slot1}\"")));
    assert!(execute.join(format!("dir_{starter_pid}")).is_dir());
    wait_for("the slot to show Busy", Duration::from_secs(10), || {
        status_af(&pool, &["Name", "Activity", "JobId"]).contains(&format!("{slot1} Busy 1.0"))
    });
    // its stdin stays open while it runs
    assert!(fake.marks("eof.").is_empty());
    // a second activation of a busy claim is put off: not yet
    let e = rt
        .block_on(client.command::<_, Ack>(&routes::STARTD_ACTIVATE, Some(&activate)))
        .unwrap_err();
    assert_eq!(remote_status(&e), 503, "{e}");

    // a graceful deactivation: SIGTERM to the starter; it dies abnormally,
    // so the startd kills the job's process group and removes its
    // directory; the claim stays, idle
    let job_pid = fake.job_pid(starter_pid).unwrap();
    assert!(alive(job_pid));
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_DEACTIVATE,
            Some(&DeactivateRequest {
                claim_id: CLAIM.into(),
                graceful: true,
            }),
        ))
        .unwrap();
    wait_for(
        "the job's process group killed",
        Duration::from_secs(10),
        || !alive(job_pid),
    );
    wait_for(
        "the scratch directory removed",
        Duration::from_secs(10),
        || {
            !execute.join(format!("dir_{starter_pid}")).exists()
                && !execute.join(format!("dir_{starter_pid}.pgid")).exists()
        },
    );
    wait_for("the claim idle again", Duration::from_secs(10), || {
        status_af(&pool, &["Name", "State", "Activity"]).contains(&format!("{slot1} Claimed Idle"))
    });

    // the claim is reused, then released while busy: hard kill, Unclaimed
    let _: Ack = rt
        .block_on(client.command(&routes::STARTD_ACTIVATE, Some(&activate)))
        .unwrap();
    wait_for("a second starter", Duration::from_secs(10), || {
        fake.specs().len() == 2
    });
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_RELEASE,
            Some(&ReleaseRequest {
                claim_id: CLAIM.into(),
            }),
        ))
        .unwrap();
    wait_for("the slot Unclaimed", Duration::from_secs(10), || {
        status_af(&pool, &["Name", "State", "Activity"])
            .contains(&format!("{slot1} Unclaimed Idle"))
    });
    for job in fake.marks("job.") {
        let pid: i32 = std::fs::read_to_string(job)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        wait_for("every job killed", Duration::from_secs(10), || !alive(pid));
    }
    // the released claim is gone
    let e = rt
        .block_on(client.command::<_, Ack>(
            &routes::STARTD_RELEASE,
            Some(&ReleaseRequest {
                claim_id: CLAIM.into(),
            }),
        ))
        .unwrap_err();
    assert_eq!(remote_status(&e), 404, "{e}");
    assert!(pool.logs().contains("unknown claim id"), "{}", pool.logs());
    let _ = host;
}

/// The startd side of claim reuse: a starter that reports its job done
/// leaves the slot Claimed/Idle and gets the claim's next job on its
/// standard input; when the claim is released its standard input closes.
#[test]
fn a_starter_that_reports_done_gets_the_claims_next_job() {
    let base = scratch("startd-reuse-files");
    let mut pool = startd_pool("startd-reuse", &[("_CONDOR_NUM_CPUS", "1")]);
    // each spec is recorded, then reported done at once
    let execute = pool.dir.join("execute");
    let fake = FakeStarter::write(&base, &execute, StarterMode::ReportDone).unwrap();
    let slot1 = start_with_starter(&mut pool, &fake.script, 1);
    let rt = runtime();
    let client = startd_client(&pool);
    let job_ad = job_ad();
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_MATCH,
            Some(&notice(&slot1, CLAIM, "alice@test", false)),
        ))
        .unwrap();
    let _: ClaimReply = rt
        .block_on(client.command(&routes::STARTD_CLAIM, Some(&claim_request(CLAIM))))
        .unwrap();
    let activate = |job_id: &str| {
        let req = ActivateRequest {
            claim_id: CLAIM.into(),
            job_ad: job_ad.clone(),
            job_id: job_id.into(),
            shadow_addr: "<127.0.0.1:1>".into(),
            owner_ids: None,
        };
        // the startd may not have read the done line yet: it says so
        wait_for("the activation", Duration::from_secs(10), || {
            match rt.block_on(client.command::<_, Ack>(&routes::STARTD_ACTIVATE, Some(&req))) {
                Ok(_) => true,
                Err(e) => {
                    assert_eq!(remote_status(&e), 503, "{e}");
                    false
                }
            }
        });
    };
    for (n, job) in ["1.0", "1.1", "1.2"].iter().enumerate() {
        activate(job);
        wait_for("the spec", Duration::from_secs(10), || {
            fake.specs().len() == n + 1
        });
    }
    // one starter process got all three jobs, in order
    let specs = fake.specs();
    let pid = specs[0].0;
    let order: Vec<(u32, u32)> = specs.iter().map(|(p, n, _)| (*p, *n)).collect();
    assert_eq!(order, vec![(pid, 1), (pid, 2), (pid, 3)]);
    let third = &specs[2].2;
    assert!(third.contains("\"job_id\":\"1.2\""), "{third}");
    wait_for("the claim idle", Duration::from_secs(10), || {
        status_af(&pool, &["Name", "State", "Activity"]).contains(&format!("{slot1} Claimed Idle"))
    });
    // the claim ends: the starter's standard input closes and it exits
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_RELEASE,
            Some(&ReleaseRequest {
                claim_id: CLAIM.into(),
            }),
        ))
        .unwrap();
    wait_for("the starter to end", Duration::from_secs(10), || {
        fake.saw_eof(pid)
    });
    wait_for("the slot unclaimed", Duration::from_secs(10), || {
        status_af(&pool, &["Name", "State"]).contains(&format!("{slot1} Unclaimed"))
    });
}

#[test]
fn a_preempting_match_retires_the_job_then_the_slot_is_matched_to_it() {
    let base = scratch("startd-preempt-files");
    let mut pool = startd_pool(
        "startd-preempt",
        &[
            ("_CONDOR_NUM_CPUS", "1"),
            ("_CONDOR_POLLING_INTERVAL", "1"),
            ("_CONDOR_MAXJOBRETIREMENTTIME", "4"),
        ],
    );
    let execute = pool.dir.join("execute");
    // a starter whose job ignores nothing: SIGTERM ends it
    let fake = FakeStarter::write(&base, &execute, StarterMode::RunUntilTerm).unwrap();
    let slot1 = start_with_starter(&mut pool, &fake.script, 1);
    let rt = runtime();
    let client = startd_client(&pool);
    let job_ad = job_ad();
    let notice = |claim: &str, who: &str, preempting: bool| notice(&slot1, claim, who, preempting);
    let claim = claim_request;
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_MATCH,
            Some(&notice(CLAIM, "alice@test", false)),
        ))
        .unwrap();
    let _: ClaimReply = rt
        .block_on(client.command(&routes::STARTD_CLAIM, Some(&claim(CLAIM))))
        .unwrap();
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_ACTIVATE,
            Some(&ActivateRequest {
                claim_id: CLAIM.into(),
                job_ad: job_ad.clone(),
                job_id: "1.0".into(),
                shadow_addr: "<127.0.0.1:1>".into(),
                owner_ids: None,
            }),
        ))
        .unwrap();
    wait_for("the job running", Duration::from_secs(10), || {
        status_af(&pool, &["Activity"]) == ["Busy"]
    });
    // the preempting match is accepted; the job retires
    let new_claim = "startd-test-preempting-claim-000000";
    let _: Ack = rt
        .block_on(client.command(
            &routes::STARTD_MATCH,
            Some(&notice(new_claim, "bob@test", true)),
        ))
        .unwrap();
    // a second preempting match is refused: already being preempted
    let e = rt
        .block_on(client.command::<_, Ack>(
            &routes::STARTD_MATCH,
            Some(&notice(
                "startd-test-preempting-claim-111111",
                "carol@test",
                true,
            )),
        ))
        .unwrap_err();
    assert_eq!(remote_status(&e), 409, "{e}");
    // the new schedd asks too early: Unavailable, ask again
    let e = rt
        .block_on(client.command::<_, ClaimReply>(&routes::STARTD_CLAIM, Some(&claim(new_claim))))
        .unwrap_err();
    assert_eq!(remote_status(&e), 503, "{e}");
    assert!(e.to_string().contains("being preempted"), "{e}");
    // after MaxJobRetirementTime the job gets SIGTERM, the old claim is gone
    // and the slot is Matched to the new one
    wait_for("the job vacated", Duration::from_secs(15), || {
        !fake.marks("term.").is_empty()
    });
    let reply = loop {
        match rt.block_on(
            client.command::<_, ClaimReply>(&routes::STARTD_CLAIM, Some(&claim(new_claim))),
        ) {
            Ok(r) => break r,
            Err(e) if remote_status(&e) == 503 => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        reply.slot_ad.contains("RemoteUser = \"bob@test\""),
        "{}",
        reply.slot_ad
    );
    let e = rt
        .block_on(client.command::<_, Ack>(
            &routes::STARTD_RELEASE,
            Some(&ReleaseRequest {
                claim_id: CLAIM.into(),
            }),
        ))
        .unwrap_err();
    assert_eq!(remote_status(&e), 404, "the old claim is gone: {e}");
}

/// The startd checks `criu` once at start-up and its slots offer the
/// transparent checkpoint backend only where `criu check` passes (a
/// stand-in `criu` here, named by `SKUA_CRIU`); `SKUA_CHECKPOINT_BACKENDS
/// = none` turns it off.
#[test]
fn slots_offer_criu_only_where_criu_check_passes() {
    let tools = common::scratch("startd-criu-tools");
    let passing = tools.join("criu-passing");
    write_script(
        &passing,
        "#!/bin/sh\ncase \"$1\" in\n  check) echo 'Looks good.'; exit 0 ;;\n  --version) echo 'Version: 4.1'; exit 0 ;;\nesac\nexit 3\n",
    );
    let failing = tools.join("criu-failing");
    write_script(
        &failing,
        "#!/bin/sh\necho 'Error (criu/vdso.c:613): vdso: Failed to fill self vdso symtable' >&2\nexit 1\n",
    );
    let attrs = [
        "Name",
        "HasCheckpointBackend",
        "CheckpointBackends",
        "CheckpointPlatform",
    ];
    let cases = [
        ("startd-criu-yes", passing.display().to_string(), None, true),
        ("startd-criu-no", failing.display().to_string(), None, false),
        (
            "startd-criu-off",
            passing.display().to_string(),
            Some("none"),
            false,
        ),
    ];
    for (name, criu, configured, offered) in cases {
        let mut env = vec![
            ("_CONDOR_NUM_CPUS", "1"),
            ("_CONDOR_SKUA_CRIU", criu.as_str()),
        ];
        if let Some(c) = configured {
            env.push(("_CONDOR_SKUA_CHECKPOINT_BACKENDS", c));
        }
        let mut pool = startd_pool(name, &env);
        pool.start();
        wait_for("the slot's ad", Duration::from_secs(30), || {
            status_af(&pool, &["Name"]).len() == 1
        });
        let line = status_af(&pool, &attrs).remove(0);
        let fields: Vec<&str> = line.split_whitespace().collect();
        if offered {
            assert_eq!(
                &fields[1..4],
                &["true", "criu", "criu-4.1"],
                "{name}: {line}"
            );
        } else {
            assert_eq!(
                &fields[1..],
                &["undefined", "undefined", "undefined"],
                "{name}: {line}"
            );
        }
        // every slot says the starter sends self-checkpoints
        assert_eq!(
            status_af(&pool, &["HasSelfCheckpointTransfers"]),
            vec!["true"]
        );
    }
}
