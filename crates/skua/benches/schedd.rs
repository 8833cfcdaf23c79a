//! Schedd benchmark, with the real binaries: a lone `skuad schedd` in a
//! temporary directory, driven by `skua submit` and `skua q`.
//!
//!     cargo bench -p skua --bench schedd
//!
//! Prints: `skua submit` of one 10,000-job cluster end to end (durable
//! when the tool returns), the `skua q` batch summary with 100,000 jobs
//! queued, the schedd's resident memory with 100,000 idle jobs, and the
//! time a restarted schedd takes to recover the 100,000-job queue and
//! answer again. Medians of repeated runs; machines of this kind are shared
//! and noisy.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const SKUA: &str = env!("CARGO_BIN_EXE_skua");
const SKUAD: &str = env!("CARGO_BIN_EXE_skuad");
const CLUSTER: usize = 10_000;
const CLUSTERS: usize = 10;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Schedd {
    child: Option<Child>,
    dir: PathBuf,
    config: PathBuf,
}

impl Schedd {
    fn start(&mut self) -> Duration {
        let sock = self.dir.join("lock/schedd.sock");
        let _ = std::fs::remove_file(&sock);
        let t = Instant::now();
        let child = Command::new(SKUAD)
            .arg("schedd")
            .env("SKUA_CONFIG", &self.config)
            .spawn()
            .expect("skuad schedd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(Instant::now() < deadline, "the schedd did not start");
            if sock.exists() && self.skua(&["q", "-allusers", "-totals"]).status.success() {
                return t.elapsed();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    fn skua(&self, args: &[&str]) -> std::process::Output {
        Command::new(SKUA)
            .args(args)
            .current_dir(&self.dir)
            .env("SKUA_CONFIG", &self.config)
            .output()
            .expect("skua")
    }
}

impl Drop for Schedd {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn recovery_log_line(dir: &Path) -> String {
    let mut lines = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("log")) {
        for e in entries.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path()) {
                lines.extend(
                    t.lines()
                        .filter(|l| l.contains("job queue recovered"))
                        .map(str::to_string),
                );
            }
        }
    }
    lines.pop().unwrap_or_default()
}

fn main() {
    let dir = std::env::temp_dir().join(format!("skua-schedd-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("skua_config");
    std::fs::write(
        &config,
        format!(
            "LOCAL_DIR = {}\nLOG = $(LOCAL_DIR)/log\nSPOOL = $(LOCAL_DIR)/spool\nLOCK = $(LOCAL_DIR)/lock\n\
             NETWORK_INTERFACE = 127.0.0.1\nCOLLECTOR_HOST = 127.0.0.1:1\nUPDATE_INTERVAL = 300\n\
             SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(LOCAL_DIR)/passwords.d/POOL\nSCHEDD_DEBUG = warn\n\
             UID_DOMAIN = bench.test\nFILESYSTEM_DOMAIN = bench.test\n",
            dir.display()
        ),
    )
    .expect("config");
    std::fs::write(
        dir.join("job.sub"),
        format!(
            "executable = /bin/sleep\narguments = 600 $(Process)\noutput = out.$(Process)\n\
             error = err.$(Process)\nlog = job.log\nrequest_memory = 100MB\nqueue {CLUSTER}\n"
        ),
    )
    .expect("submit file");
    let mut schedd = Schedd {
        child: None,
        dir: dir.clone(),
        config,
    };
    schedd.start();

    let mut submit_times = Vec::new();
    for _ in 0..CLUSTERS {
        let t = Instant::now();
        let out = schedd.skua(&["submit", "job.sub"]);
        submit_times.push(t.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!(
        "skua submit, one cluster of {CLUSTER} jobs, end to end: median {:.0} ms (min {:.0}, max {:.0}; {} runs)",
        median(submit_times.clone()) * 1e3,
        submit_times.iter().cloned().fold(f64::INFINITY, f64::min) * 1e3,
        submit_times.iter().cloned().fold(0.0, f64::max) * 1e3,
        submit_times.len()
    );
    let total = CLUSTER * CLUSTERS;
    let mut q_times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = schedd.skua(&["q", "-allusers"]);
        q_times.push(t.elapsed().as_secs_f64());
        assert!(out.status.success());
    }
    let mut totals_times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = schedd.skua(&["q", "-allusers", "-totals"]);
        totals_times.push(t.elapsed().as_secs_f64());
        assert!(out.status.success());
    }
    println!(
        "skua q (batch summary) with {total} jobs: median {:.0} ms; skua q -totals: median {:.0} ms",
        median(q_times) * 1e3,
        median(totals_times) * 1e3
    );
    println!(
        "schedd resident memory with {total} idle jobs: {:.0} MB",
        rss_mb(schedd.pid())
    );
    let mut restart = Vec::new();
    for _ in 0..3 {
        schedd.kill();
        restart.push(schedd.start().as_secs_f64());
    }
    println!(
        "restart after SIGKILL with {total} jobs, until it answers: median {:.0} ms ({})",
        median(restart) * 1e3,
        recovery_log_line(&dir)
    );
}
