//! One negotiation cycle at pool scale.
//!
//! 100,000 idle jobs in 500 autoclusters (10 per submitter) from 50
//! submitters against 20,000 static slots (2,500 eight-slot machines),
//! half of them claimed by those submitters; then with slots and jobs
//! doubled. HTCondor's default policy (preemption considered, but
//! `PREEMPTION_REQUIREMENTS = False`), and the same pool with priority
//! preemption on (`RemoteUserPrio > SubmitterUserPrio * 1.2`).
//!
//! Run with `cargo bench -p skua-negotiation --bench cycle`.

use std::hint::black_box;
use std::time::Duration;

use classad::{parse_ad, parse_expr, ClassAd};
use criterion::{criterion_group, criterion_main, Criterion};
use skua_negotiation::{negotiate, CycleInput, Policy, Request, Submitter};

const NOW: i64 = 1_700_000_000;
const SUBMITTERS: usize = 50;
const AUTOCLUSTERS_PER_SUBMITTER: usize = 10;

fn slot_ad(machine: usize, slot: usize, claimed_by: Option<usize>) -> ClassAd {
    let state = match claimed_by {
        Some(u) => format!(
            "State = \"Claimed\"; Activity = \"Busy\"; RemoteUser = \"user{u}@example.org\"; RemoteOwner = \"user{u}@example.org\"; JobId = \"{machine}.{slot}\"; JobStart = {}; TotalJobRunTime = {};",
            NOW - 3600,
            3600
        ),
        None => "State = \"Unclaimed\"; Activity = \"Idle\";".to_string(),
    };
    let text = format!(
        "[ MyType = \"Machine\"; Name = \"slot{slot}@node{machine:05}.example.org\"; Machine = \"node{machine:05}.example.org\"; SlotID = {slot}; SlotType = \"Static\"; \
          Cpus = 1; Memory = {mem}; Disk = 20000000; TotalCpus = 8; TotalMemory = {tm}; TotalDisk = 160000000; TotalSlots = 8; DetectedCpus = 8; DetectedMemory = {tm}; \
          Arch = \"X86_64\"; OpSys = \"LINUX\"; OpSysAndVer = \"AlmaLinux9\"; OpSysName = \"AlmaLinux\"; OpSysMajorVer = 9; OpSysLongName = \"AlmaLinux 9.4\"; \
          KFlops = {kflops}; Mips = {mips}; LoadAvg = 0.0; CondorLoadAvg = 0.0; TotalLoadAvg = 0.5; KeyboardIdle = 100000; ConsoleIdle = 100000; \
          FileSystemDomain = \"node{machine:05}.example.org\"; UidDomain = \"example.org\"; HasFileTransfer = true; \
          CondorVersion = \"$CondorVersion: 25.0.0 2025-01-01 $\"; CondorPlatform = \"$CondorPlatform: X86_64-Linux $\"; \
          StartdIpAddr = \"<10.0.{a}.{b}:9618>\"; MyAddress = \"<10.0.{a}.{b}:9618>\"; {state} \
          EnteredCurrentState = {t}; EnteredCurrentActivity = {t}; MyCurrentTime = {now}; DaemonStartTime = {t}; MachineMaxVacateTime = 600; \
          Start = (KeyboardIdle > 15 * 60) && (LoadAvg - CondorLoadAvg) <= 0.3; Requirements = START; Rank = 0.0; CurrentRank = 0.0; IsOwner = false ]",
        mem = if machine.is_multiple_of(4) { 8192 } else { 4096 },
        tm = if machine.is_multiple_of(4) { 65536 } else { 32768 },
        kflops = 1_000_000 + (machine * 7919) % 500_000,
        mips = 20_000 + (machine * 31) % 5_000,
        a = machine / 250,
        b = machine % 250,
        t = NOW - 86_400,
        now = NOW,
    );
    parse_ad(&text).expect("slot ad parses")
}

fn job_ad(user: usize, ac: usize) -> ClassAd {
    let mem = 1024 * (1 + (ac % 6));
    let rank = if ac.is_multiple_of(3) {
        "Rank = TARGET.KFlops;"
    } else {
        ""
    };
    let text = format!(
        "[ MyType = \"Job\"; Owner = \"user{user}\"; User = \"user{user}@example.org\"; ClusterId = {c}; ProcId = 0; JobUniverse = 5; \
          RequestCpus = 1; RequestMemory = {mem}; RequestDisk = 1000000; ImageSize = 100000; DiskUsage = 1000; JobPrio = 0; \
          Cmd = \"/home/user{user}/sim\"; QDate = {q}; WantCheckpoint = false; {rank} \
          Requirements = (TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer) ]",
        c = user * 100 + ac,
        q = NOW - 1000,
    );
    parse_ad(&text).expect("job ad parses")
}

/// A pool of `machines` eight-slot machines, half the slots claimed, and
/// `jobs_per_autocluster` idle jobs in each of the 500 autoclusters.
fn pool(machines: usize, jobs_per_autocluster: u64) -> CycleInput {
    let mut slots = Vec::with_capacity(machines * 8);
    for m in 0..machines {
        for s in 1..=8usize {
            let claimed = s.is_multiple_of(2).then_some((m * 8 + s) % SUBMITTERS);
            slots.push(slot_ad(m, s, claimed));
        }
    }
    let submitters = (0..SUBMITTERS)
        .map(|u| Submitter {
            name: format!("user{u}@example.org"),
            priority: 500.0 + (u as f64) * 97.0,
            requests: (0..AUTOCLUSTERS_PER_SUBMITTER)
                .map(|ac| Request {
                    autocluster: (u * AUTOCLUSTERS_PER_SUBMITTER + ac) as u64,
                    ad: job_ad(u, ac),
                    count: jobs_per_autocluster,
                })
                .collect(),
        })
        .collect();
    let priorities = (0..SUBMITTERS)
        .map(|u| (format!("user{u}@example.org"), 500.0 + (u as f64) * 97.0))
        .collect();
    CycleInput {
        slots,
        submitters,
        policy: Policy::default(),
        priorities,
    }
}

fn with_priority_preemption(mut input: CycleInput) -> CycleInput {
    input.policy.preemption_requirements =
        parse_expr("RemoteUserPrio > SubmitterUserPrio * 1.2").expect("parses");
    input
}

fn bench_cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("cycle");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    let cases = [
        ("20k_slots_100k_jobs", pool(2_500, 200), false),
        ("40k_slots_200k_jobs", pool(5_000, 400), false),
        (
            "20k_slots_100k_jobs_prio_preemption",
            pool(2_500, 200),
            true,
        ),
        (
            "40k_slots_200k_jobs_prio_preemption",
            pool(5_000, 400),
            true,
        ),
    ];
    for (name, input, prio) in cases {
        let input = if prio {
            with_priority_preemption(input)
        } else {
            input
        };
        let mut ev = skua_negotiation::evaluator(NOW, classad::time::utc_zone);
        let out = negotiate(&input, &mut ev);
        let preempting = out.matches.iter().filter(|m| m.preempting()).count();
        eprintln!(
            "{name}: {} slots, {} matches ({} preempting), {} spins",
            input.slots.len(),
            out.matches.len(),
            preempting,
            out.spins
        );
        assert!(out.matches.len() >= input.slots.len() / 2 * 9 / 10);
        g.bench_function(name, |b| {
            b.iter(|| black_box(negotiate(black_box(&input), &mut ev)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_cycle);
criterion_main!(benches);
