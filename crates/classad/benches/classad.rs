//! Benchmarks of the ClassAd core on a realistic job/machine pair.
//!
//! The ads live in the shared data directory beside the repository
//! (`../shared/classad/bench/` from the repository root): `machine.ad` is
//! in the old syntax (one `Name = expr` per line, as `condor_status -l`
//! prints it), `job.ad` in the new syntax (`[a = 1; b = 2]`).
//!
//! Run with `cargo bench -p classad --bench classad`.

use std::hint::black_box;
use std::time::Duration;

use classad::{parse_ad, parse_old_ad, symmetric_match, EvalOptions, Evaluator};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The machine ad, old syntax.
const MACHINE_AD: &str = include_str!("../../../../shared/classad/bench/machine.ad");
/// The job ad, new syntax.
const JOB_AD: &str = include_str!("../../../../shared/classad/bench/job.ad");

fn bench_classad(c: &mut Criterion) {
    let machine = parse_old_ad(MACHINE_AD).expect("machine.ad parses (old syntax)");
    let job = parse_ad(JOB_AD.trim()).expect("job.ad parses (new syntax)");
    let mut ev = Evaluator::new(EvalOptions::default());

    // Sanity checks, so that the benchmarks measure the real work and not
    // an early failure.
    assert!(
        symmetric_match(&mut ev, &job, &machine).matched,
        "job and machine should match"
    );
    assert!(
        classad::rank(&mut ev, &job, &machine).to_string() != "undefined",
        "the job's Rank should evaluate against the machine"
    );

    let mut g = c.benchmark_group("classad");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_secs(1));

    g.throughput(Throughput::Bytes(MACHINE_AD.len() as u64));
    g.bench_function("parse_machine_ad", |b| {
        b.iter(|| parse_old_ad(black_box(MACHINE_AD)))
    });

    // The remaining benchmarks are per operation, not per byte.
    g.throughput(Throughput::Elements(1));
    g.bench_function("symmetric_match", |b| {
        b.iter(|| symmetric_match(&mut ev, black_box(&job), black_box(&machine)).matched)
    });
    g.bench_function("job_rank", |b| {
        b.iter(|| classad::rank(&mut ev, black_box(&job), black_box(&machine)))
    });
    g.bench_function("eval_requirements_job_side", |b| {
        b.iter(|| ev.eval_attr("Requirements", black_box(&job), Some(black_box(&machine))))
    });
    g.finish();
}

criterion_group!(benches, bench_classad);
criterion_main!(benches);
