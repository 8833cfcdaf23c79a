//! The ClassAd benchmarks of `classad.rs`, measured for a shared, loaded
//! machine: each operation runs in 400 batches (parse: 20 operations a
//! batch, the others 500) and the median batch gives the time per
//! operation. A batch lasts well under a scheduler's time slice, so most
//! run uninterrupted, and the median ignores those that did not; the mean
//! that criterion reports is inflated by every interruption.
//!
//! Run with `cargo bench -p classad --bench batches`.

use std::hint::black_box;

use classad::{parse_ad, parse_old_ad, symmetric_match, ClassAd, EvalOptions, Evaluator};

/// The machine ad, old syntax.
const MACHINE_AD: &str = include_str!("../../../../shared/classad/bench/machine.ad");
/// The job ad, new syntax.
const JOB_AD: &str = include_str!("../../../../shared/classad/bench/job.ad");

const BATCHES: usize = 400;

/// Nanoseconds per operation of each batch, sorted.
// A benchmark reads the clock; the library never does.
#[allow(clippy::disallowed_methods)]
fn batches(per_batch: u32, mut op: impl FnMut()) -> Vec<f64> {
    let mut times: Vec<f64> = (0..BATCHES)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..per_batch {
                op();
            }
            start.elapsed().as_nanos() as f64 / f64::from(per_batch)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times
}

fn report(name: &str, times: &[f64], bytes: Option<usize>) {
    let median = times[times.len() / 2];
    let min = times[0];
    let rate = bytes.map_or(String::new(), |b| {
        format!("  ({:.0} MB/s)", b as f64 / median * 1e3)
    });
    println!("{name:<28} median {median:>9.1} ns  min {min:>9.1} ns{rate}");
}

fn main() {
    let machine: ClassAd = parse_old_ad(MACHINE_AD).expect("machine.ad parses (old syntax)");
    let job: ClassAd = parse_ad(JOB_AD.trim()).expect("job.ad parses (new syntax)");
    let mut ev = Evaluator::new(EvalOptions::default());
    assert!(symmetric_match(&mut ev, &job, &machine).matched);

    let t = batches(20, || {
        black_box(parse_old_ad(black_box(MACHINE_AD)).is_ok());
    });
    report("parse_machine_ad", &t, Some(MACHINE_AD.len()));
    let t = batches(500, || {
        black_box(symmetric_match(&mut ev, black_box(&job), black_box(&machine)).matched);
    });
    report("symmetric_match", &t, None);
    let t = batches(500, || {
        black_box(classad::rank(&mut ev, black_box(&job), black_box(&machine)));
    });
    report("job_rank", &t, None);
    let t = batches(500, || {
        black_box(ev.eval_attr("Requirements", black_box(&job), Some(black_box(&machine))));
    });
    report("eval_requirements_job_side", &t, None);
}
