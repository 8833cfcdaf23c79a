//! Collector benchmark: many simulated machines advertise to one real
//! `skuad collector`; prints the updates per second it accepted and the
//! latency of `skua status` queries with 10,000 slot ads present.
//!
//!     cargo bench -p skua --bench pool
//!
//! Figures are medians over repeated runs; machines of this kind are shared
//! and noisy, so compare ratios within one run.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SKUA: &str = env!("CARGO_BIN_EXE_skua");
const SKUAD: &str = env!("CARGO_BIN_EXE_skuad");
const MACHINES: usize = 10_000;
const CLIENTS: usize = 16;

fn machine_ad(i: usize, seq: u64) -> String {
    format!(
        "[ MyType = \"Machine\"; Name = \"slot1@node{i:05}.example.org\"; Machine = \"node{i:05}.example.org\"; \
         OpSys = \"LINUX\"; Arch = \"X86_64\"; State = \"{}\"; Activity = \"Idle\"; LoadAvg = 0.1; \
         Memory = {}; Cpus = 8; Disk = 100000000; EnteredCurrentActivity = 1700000000; \
         UpdateSequenceNumber = {seq}; DaemonStartTime = 1700000000; Start = true ]",
        if i.is_multiple_of(3) { "Claimed" } else { "Unclaimed" },
        512 * (1 + i % 8)
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Collector {
    child: Child,
    dir: PathBuf,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn main() {
    let dir = std::env::temp_dir().join(format!("skua-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("skua_config");
    std::fs::write(
        &config,
        format!(
            "LOCAL_DIR = {}\nNETWORK_INTERFACE = 127.0.0.1\nCOLLECTOR_HOST = 127.0.0.1:0\nCLASSAD_LIFETIME = 3600\nUPDATE_INTERVAL = 300\n\
             SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(LOCAL_DIR)/passwords.d/POOL\nLOCK = $(LOCAL_DIR)/lock\n",
            dir.display()
        ),
    )
    .expect("config");
    let child = Command::new(SKUAD)
        .arg("collector")
        .env("SKUA_CONFIG", &config)
        .spawn()
        .expect("skuad");
    let collector = Collector {
        child,
        dir: dir.clone(),
    };
    let sock = dir.join("lock/collector.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "collector did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let client = Arc::new(
        skua_net::Client::new(
            skua_net::Endpoint::Unix(sock.clone()),
            None,
            Duration::from_secs(30),
        )
        .expect("client"),
    );
    let mut rates = Vec::new();
    for round in 0..5u64 {
        let t = Instant::now();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for c in 0..CLIENTS {
                let client = client.clone();
                tasks.push(tokio::spawn(async move {
                    for i in (c..MACHINES).step_by(CLIENTS) {
                        let u = skua_proto::AdUpdate {
                            ad_type: "Machine".into(),
                            name: format!("slot1@node{i:05}.example.org"),
                            ad: machine_ad(i, round),
                            lifetime_secs: 3600,
                        };
                        let _: skua_proto::Ack = client
                            .command(&skua_proto::routes::COLLECTOR_UPDATE, Some(&u))
                            .await
                            .expect("update");
                    }
                }));
            }
            for t in tasks {
                t.await.expect("task");
            }
        });
        rates.push(MACHINES as f64 / t.elapsed().as_secs_f64());
    }
    println!("collector updates accepted: median {:.0} updates/s ({CLIENTS} concurrent clients over the Unix socket, {MACHINES} machines, 5 rounds)", median(rates));

    let constraint = "Memory > 2048 && State == \"Unclaimed\"";
    let mut inproc = Vec::new();
    for _ in 0..10 {
        let q = skua_proto::Query {
            ad_type: "Machine".into(),
            constraint: Some(constraint.into()),
            projection: vec![],
        };
        let t = Instant::now();
        let r: skua_proto::QueryReply = rt
            .block_on(client.command(&skua_proto::routes::COLLECTOR_QUERY, Some(&q)))
            .expect("query");
        inproc.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(!r.ads.is_empty());
    }
    println!(
        "constrained query over {MACHINES} ads (client API, whole ads returned): median {:.1} ms",
        median(inproc)
    );
    let mut cli = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let out = Command::new(SKUA)
            .args(["status", "-constraint", constraint, "-af", "Name"])
            .env("SKUA_CONFIG", &config)
            .output()
            .expect("skua status");
        cli.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!("`skua status -constraint ... -af Name` with {MACHINES} ads (whole command): median {:.1} ms", median(cli));
    let mut full = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = Command::new(SKUA)
            .args(["status"])
            .env("SKUA_CONFIG", &config)
            .output()
            .expect("skua status");
        full.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(out.status.success());
    }
    println!(
        "`skua status` (all {MACHINES} slots, default table): median {:.1} ms",
        median(full)
    );
    drop(collector);
}
