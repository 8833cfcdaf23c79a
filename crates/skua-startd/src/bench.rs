//! `Mips` and `KFlops`: a cheap stand-in for HTCondor's benchmarks
//! (Dhrystone for the integer rating, Linpack for floating point), run
//! once when the startd starts, in a blocking task beside the rest of its
//! start-up, about 20 ms each. Only the magnitude matters: the figures let
//! a `Rank` prefer faster machines (HTCondor's default
//! `NEGOTIATOR_POST_JOB_RANK` prefers a higher `KFlops`).

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long each loop runs.
const BUDGET: Duration = Duration::from_millis(20);

/// The machine's speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Speed {
    /// Millions of integer instructions per second.
    pub mips: i64,
    /// Thousands of floating-point operations per second.
    pub kflops: i64,
}

/// Runs both loops (about 40 ms). Blocking: call it off the event loop.
pub fn measure() -> Speed {
    Speed {
        mips: mips(BUDGET),
        kflops: kflops(BUDGET),
    }
}

/// Waits for [`measure`] started in a blocking task: `(Mips, KFlops)`, or
/// nothing if the task failed.
pub async fn results(task: tokio::task::JoinHandle<Speed>) -> (Option<i64>, Option<i64>) {
    match task.await {
        Ok(s) => {
            tracing::info!(mips = s.mips, kflops = s.kflops, "benchmarks");
            (Some(s.mips), Some(s.kflops))
        }
        Err(e) => {
            tracing::warn!(error = %e, "the benchmarks did not run");
            (None, None)
        }
    }
}

fn rate(work: f64, elapsed: Duration, unit: f64) -> i64 {
    let secs = elapsed.as_secs_f64().max(1e-9);
    ((work / secs / unit).round() as i64).max(1)
}

/// Integer work in the spirit of Dhrystone: eight independent chains of
/// multiply-add, xor-shift, rotate and a data-dependent select, counted as
/// instructions executed (six per chain and round; the compiler may run
/// the chains side by side, as it helps Dhrystone). An optimized build on
/// a current x86-64 core rates some thousands.
fn mips(budget: Duration) -> i64 {
    const ROUNDS: u64 = 4096;
    const OPS_PER_ROUND: u64 = 8 * 6;
    let mut s = [
        0x9e37_79b9u32,
        0x7f4a_7c15,
        0x85eb_ca6b,
        0xc2b2_ae35,
        1,
        2,
        3,
        4,
    ];
    let mut ops = 0u64;
    let start = Instant::now();
    loop {
        for _ in 0..ROUNDS {
            for (i, v) in s.iter_mut().enumerate() {
                let mut x = v.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                x ^= x >> 13;
                x = x.rotate_left(i as u32 + 5);
                *v = if x & 1 == 0 { x } else { x ^ 0x5bd1_e995 };
            }
        }
        s = black_box(s);
        ops += ROUNDS * OPS_PER_ROUND;
        if start.elapsed() >= budget {
            break;
        }
    }
    black_box(s);
    rate(ops as f64, start.elapsed(), 1e6)
}

/// Floating-point work in the spirit of Linpack: `daxpy` (`y += a·x`, two
/// operations per element) over a vector that fits in the first-level
/// cache, the sign of `a` alternating so that `y` stays bounded. An
/// optimized build on a current x86-64 core rates some millions.
fn kflops(budget: Duration) -> i64 {
    const N: usize = 512;
    const PASSES: u64 = 64;
    let x: Vec<f64> = (0..N).map(|i| 1.0 + (i % 7) as f64 * 0.125).collect();
    let mut y: Vec<f64> = (0..N).map(|i| (i % 5) as f64 * 0.5).collect();
    let mut a = 0.000_976_562_5f64;
    let mut flops = 0u64;
    let start = Instant::now();
    loop {
        for _ in 0..PASSES {
            let xs = black_box(&x[..]);
            for (yi, xi) in y.iter_mut().zip(xs) {
                *yi += a * xi;
            }
            a = -black_box(a);
            black_box(&mut y[..]);
        }
        flops += PASSES * 2 * N as u64;
        if start.elapsed() >= budget {
            break;
        }
    }
    black_box(&y);
    rate(flops as f64, start.elapsed(), 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_positive_and_quick() {
        let start = Instant::now();
        let s = measure();
        let took = start.elapsed();
        assert!(s.mips > 0 && s.kflops > 0, "{s:?}");
        // even an unoptimized build does millions of operations a second
        assert!(s.mips >= 10 && s.kflops >= 10_000, "{s:?}");
        assert!(took < Duration::from_millis(500), "{took:?}");
        eprintln!("{s:?} in {took:?}");
    }
}
