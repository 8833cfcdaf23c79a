//! Cross-process tests of the schedd in a personal pool: durability under
//! SIGKILL, the queue tools, authorization between users, the periodic
//! policy and the user log, through the real binaries.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;

fn schedd_fast() -> Vec<(&'static str, &'static str)> {
    let mut env = fast();
    env.push(("_CONDOR_PERIODIC_EXPR_INTERVAL", "1"));
    env
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn schedd_client(pool: &Pool) -> skua_net::Client {
    skua_net::Client::new(
        skua_net::Endpoint::Unix(pool.dir.join("lock/schedd.sock")),
        None,
        Duration::from_secs(10),
    )
    .unwrap()
}

fn wait_for_schedd(pool: &Pool) {
    wait_for("the schedd", Duration::from_secs(20), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .status
            .success()
    });
}

/// A tiny deterministic generator (the seed is printed on failure).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const PROCS: u32 = 25;

fn job_ad(attempt: u64, proc: u32) -> String {
    format!(
        "[ Cmd = \"/bin/true\"; JobUniverse = 5; JobStatus = 1; ProcId = {proc}; \
           Iwd = \"/tmp\"; RequestMemory = 1; Attempt = {attempt} ]"
    )
}

#[test]
fn acknowledged_submissions_survive_sigkill_of_the_schedd() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    eprintln!("crash test seed {seed}");
    let mut rng = Lcg(seed);
    let mut pool = Pool::new("crash", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let rt = runtime();

    let mut acked: BTreeMap<u64, u32> = BTreeMap::new(); // attempt -> cluster
    let mut attempts = 0u64;
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut next_kill = Instant::now() + Duration::from_millis(100 + rng.next() % 400);
    while (kills < 6 || acked.len() < 30) && Instant::now() < deadline {
        if Instant::now() >= next_kill {
            for pid in pids_of(&pool, "schedd") {
                kill(pid, "-KILL");
                kills += 1;
            }
            next_kill = Instant::now() + Duration::from_millis(150 + rng.next() % 500);
        }
        attempts += 1;
        let client = schedd_client(&pool);
        let reserved: Result<skua_proto::NewClusterReply, _> = rt.block_on(client.command(
            &skua_proto::routes::SCHEDD_NEW_CLUSTER,
            Some(&skua_proto::NewCluster {}),
        ));
        let Ok(reserved) = reserved else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let submit = skua_proto::Submit {
            cluster: reserved.cluster,
            jobs: (0..PROCS).map(|p| job_ad(attempts, p)).collect(),
        };
        let reply: Result<skua_proto::SubmitReply, _> =
            rt.block_on(client.command(&skua_proto::routes::SCHEDD_SUBMIT, Some(&submit)));
        if let Ok(r) = reply {
            assert_eq!(r.jobs, PROCS);
            assert_eq!(r.cluster, reserved.cluster);
            acked.insert(attempts, r.cluster);
        }
    }
    assert!(
        kills >= 3,
        "the schedd was killed only {kills} times (seed {seed})"
    );
    assert!(
        acked.len() >= 10,
        "only {} acknowledged submissions (seed {seed})\n{}",
        acked.len(),
        pool.logs()
    );
    // let the master restart it one last time, then read the queue
    wait_for_schedd(&pool);
    let out = pool.ok(&["q", "-allusers", "-af", "ClusterId", "ProcId", "Attempt"]);
    let mut clusters: BTreeMap<u32, (BTreeSet<u32>, BTreeSet<u64>)> = BTreeMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "{line}");
        let c: u32 = f[0].parse().unwrap();
        let e = clusters.entry(c).or_default();
        assert!(e.0.insert(f[1].parse().unwrap()), "job {c}.{} twice", f[1]);
        e.1.insert(f[2].parse().unwrap());
    }
    for (c, (procs, attempt)) in &clusters {
        assert_eq!(
            procs.len() as u32,
            PROCS,
            "cluster {c} is half-present (seed {seed})"
        );
        assert_eq!(attempt.len(), 1, "cluster {c} mixes submissions");
    }
    for (attempt, cluster) in &acked {
        let (_, attempts_there) = clusters.get(cluster).unwrap_or_else(|| {
            panic!("acknowledged cluster {cluster} (attempt {attempt}) is lost (seed {seed})")
        });
        assert!(attempts_there.contains(attempt));
    }
    eprintln!(
        "{} attempts, {} acknowledged, {} clusters present, {kills} kills",
        attempts,
        acked.len(),
        clusters.len()
    );
}
