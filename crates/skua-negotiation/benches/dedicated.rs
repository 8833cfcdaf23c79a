//! The dedicated scheduler's pass at scale: 1,000 queued parallel jobs
//! (1 to 16 nodes, some restricted to half the machines) and 200 held
//! dedicated claims (100 two-slot hosts), some running backfill jobs.
//! FIFO (HTCondor's default) and best fit; the baseline is the bare cost
//! of matching every job's proc ad against every claim's slot once.
//!
//! Run with `cargo bench -p skua-negotiation --bench dedicated`.

use std::hint::black_box;
use std::time::Duration;

use classad::{parse_ad, symmetric_match, ClassAd};
use criterion::{criterion_group, criterion_main, Criterion};
use skua_negotiation::dedicated::{
    schedule, ClaimUse, DedicatedPolicy, HeldClaim, NodeGroup, ParallelJob,
};

const NOW: i64 = 1_700_000_000;
const DS: &str = "DedicatedScheduler@submit.example.org";

fn claims(n: usize) -> Vec<HeldClaim> {
    (0..n)
        .map(|i| {
            let host = i / 2;
            let slot = parse_ad(&format!(
                "[ Name = \"slot{s}@host{host:03}\"; Machine = \"host{host:03}\"; Cpus = 1; Memory = {mem}; \
                   Arch = \"X86_64\"; OpSys = \"LINUX\"; DedicatedScheduler = \"{DS}\"; \
                   Start = Scheduler =?= \"{DS}\"; Requirements = Start; Rank = Scheduler =?= \"{DS}\" ]",
                s = i % 2 + 1,
                mem = if host % 2 == 0 { 4096 } else { 2048 },
            ))
            .expect("slot ad");
            let state = match i % 5 {
                0 => ClaimUse::Backfill {
                    job: (5000 + i as u32, 0),
                },
                1 => ClaimUse::Parallel { cluster: 1 },
                _ => ClaimUse::Idle { since: NOW - 60 },
            };
            HeldClaim {
                id: format!("claim{i}"),
                slot,
                state,
            }
        })
        .collect()
}

fn jobs(n: u32) -> Vec<ParallelJob> {
    (0..n)
        .map(|c| {
            let count = 1 + (c * 7) % 16;
            let mem = if c % 3 == 0 { 3000 } else { 1024 };
            let ad = parse_ad(&format!(
                "[ JobUniverse = 11; Owner = \"u{u}\"; Scheduler = \"{DS}\"; MinHosts = {count}; MaxHosts = {count}; \
                   RequestMemory = {mem}; RequestCpus = 1; \
                   Requirements = (TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Memory >= RequestMemory) ]",
                u = c % 10
            ))
            .expect("job ad");
            ParallelJob {
                cluster: 100 + c,
                procs: vec![NodeGroup {
                    proc: 0,
                    ad,
                    count,
                }],
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let claims = claims(200);
    let jobs = jobs(1000);
    let mut ev = skua_negotiation::evaluator(NOW, classad::time::utc_zone);
    let mut group = c.benchmark_group("dedicated_pass_1000_jobs_200_claims");
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(20);
    group.bench_function("fifo", |b| {
        b.iter(|| {
            black_box(schedule(
                &jobs,
                &claims,
                &DedicatedPolicy::default(),
                NOW,
                &mut ev,
            ))
        })
    });
    let best_fit = DedicatedPolicy {
        use_fifo: false,
        ..DedicatedPolicy::default()
    };
    group.bench_function("best_fit", |b| {
        b.iter(|| black_box(schedule(&jobs, &claims, &best_fit, NOW, &mut ev)))
    });
    let ads: Vec<&ClassAd> = jobs.iter().map(|j| &j.procs[0].ad).collect();
    group.bench_function("baseline_match_every_job_against_every_claim", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for ad in &ads {
                for cl in &claims {
                    n += usize::from(symmetric_match(&mut ev, ad, &cl.slot).matched);
                }
            }
            black_box(n)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
