//! The pool's schedds seen from one host: `skua q -global`, `skua q
//! -name`, actions at a named schedd, and `skua status` listing the
//! daemons of every schedd's host. Two personal pools on this host stand
//! for two hosts: pool B runs only a master and a schedd (named
//! `schedd-b.test`) that advertise to pool A's collector, with pool A's
//! signing key, so both schedds are in one collector.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

const SCHEDD_B: &str = "schedd-b.test";

/// Pool A: collector and schedd, anonymous READ allowed (as `use
/// SECURITY : recommended` does).
fn pool_a(name: &str) -> Pool {
    let mut env = fast();
    env.push(("_CONDOR_DAEMON_LIST", "MASTER, COLLECTOR, SCHEDD"));
    env.push(("_CONDOR_SEC_READ_AUTHENTICATION", "OPTIONAL"));
    let mut a = Pool::new(name, &env);
    a.start();
    wait_for("pool A's schedd", Duration::from_secs(30), || {
        a.dir.join("spool/.schedd_address").exists()
    });
    a
}

/// Pool B: a master and a schedd advertising to `a`'s collector.
fn pool_b(name: &str, a: &Pool) -> Pool {
    let collector = std::fs::read_to_string(a.dir.join("log/.collector_address"))
        .expect("pool A's collector address");
    let collector = collector
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_string();
    let key = a.dir.join("passwords.d/POOL").display().to_string();
    let mut b = Pool::new(name, &fast());
    for (k, v) in [
        ("_CONDOR_DAEMON_LIST", "MASTER, SCHEDD".to_string()),
        ("_CONDOR_COLLECTOR_HOST", collector),
        ("_CONDOR_SEC_TOKEN_POOL_SIGNING_KEY_FILE", key),
        ("_CONDOR_SCHEDD_NAME", SCHEDD_B.to_string()),
        ("_CONDOR_SEC_READ_AUTHENTICATION", "OPTIONAL".to_string()),
    ] {
        b.extra_env.push((k.to_string(), v));
    }
    b.start();
    b
}

/// Runs `skua` with `pool`'s configuration as the user of `token`.
fn as_user(pool: &Pool, token: &Path, args: &[&str]) -> std::process::Output {
    pool.skua_as(token, args)
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Submits `queue n` sleeping jobs of batch `batch` to `pool`'s schedd as
/// the user of `token`; the cluster id.
fn submit(pool: &Pool, token: &Path, batch: &str, n: u32) -> String {
    let dir = pool.home.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let file: PathBuf = dir.join(format!("{batch}.sub"));
    std::fs::write(
        &file,
        format!("executable = /bin/sleep\narguments = 600\nbatch_name = {batch}\nqueue {n}\n"),
    )
    .unwrap();
    let out = as_user(pool, token, &["submit", file.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "submit {batch}: {stderr}");
    stdout
        .split("cluster ")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('.'))
        .unwrap_or_else(|| panic!("no cluster in {stdout:?}"))
        .to_string()
}

/// The sections of `skua q` output, by schedd name: the text from each
/// `-- Schedd: NAME : ADDR @ DATE` line to the next.
fn sections(out: &str) -> Vec<(String, String, String)> {
    out.split("-- Schedd: ")
        .skip(1)
        .map(|s| {
            let (head, body) = s.split_once('\n').unwrap_or((s, ""));
            let mut parts = head.splitn(3, " : ");
            let name = parts.next().unwrap_or_default().to_string();
            let rest = parts.next().unwrap_or_default();
            let addr = rest.split(" @ ").next().unwrap_or_default().to_string();
            (name, addr, body.to_string())
        })
        .collect()
}

#[test]
fn q_global_and_name_show_every_schedd_and_rights_are_checked_where_the_jobs_are() {
    let a = pool_a("global-a");
    let b = pool_b("global-b", &a);
    wait_for(
        "both schedds in pool A's collector",
        Duration::from_secs(30),
        || a.ok(&["status", "-schedd", "-af", "Name"]).lines().count() == 2,
    );
    let names = a.ok(&["status", "-schedd", "-af", "Name"]);
    let name_a = names
        .lines()
        .find(|n| *n != SCHEDD_B)
        .expect("pool A's schedd")
        .to_string();
    assert!(names.lines().any(|n| n == SCHEDD_B), "{names}");

    let alice = a.user_token("alice");
    let bob = a.user_token("bob");
    let c_a = submit(&a, &alice, "from-a", 2);
    let c_b = submit(&b, &alice, "from-b", 1);

    // -global: one section per schedd, each with its own jobs and totals
    let out = a.skua(&["q", "-global", "-allusers"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}\n{}", a.logs());
    let secs = sections(&stdout);
    assert_eq!(secs.len(), 2, "{stdout}");
    let sec_of = |name: &str| {
        secs.iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no section for {name} in {stdout}"))
    };
    let (_, addr_b, body_b) = sec_of(SCHEDD_B);
    assert!(addr_b.starts_with("<127.0.0.1:"), "{addr_b}");
    assert!(body_b.contains("from-b"), "{body_b}");
    assert!(!body_b.contains("from-a"), "{body_b}");
    assert!(body_b.contains("Total for all users: 1 jobs"), "{body_b}");
    let (_, _, body_a) = sec_of(&name_a);
    assert!(body_a.contains("from-a"), "{body_a}");
    assert!(!body_a.contains("from-b"), "{body_a}");
    assert!(body_a.contains("Total for all users: 2 jobs"), "{body_a}");

    // with the whole-ad forms, every schedd's ads together, no headers
    let out = a.ok(&["q", "-global", "-allusers", "-af", "JobBatchName", "Owner"]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["from-a alice", "from-a alice", "from-b alice"],
        "{out}"
    );

    // -pool: the same, asking the collector named by address (from pool
    // B's configuration); a collector that is not there is an error
    let collector = std::fs::read_to_string(a.dir.join("log/.collector_address")).unwrap();
    let collector = collector
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    let out = b.ok(&[
        "q",
        "-global",
        "-pool",
        collector,
        "-allusers",
        "-af",
        "JobBatchName",
    ]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, ["from-a", "from-a", "from-b"], "{out}");
    let out = b.skua(&["q", "-global", "-pool", "127.0.0.1:1"]);
    assert!(!out.status.success());

    // -name: that schedd alone
    let out = a.ok(&[
        "q",
        "-name",
        SCHEDD_B,
        "-allusers",
        "-af",
        "ClusterId",
        "JobBatchName",
    ]);
    assert_eq!(out, format!("{c_b} from-b\n"));
    let out = a.ok(&["q", "-name", SCHEDD_B, "-allusers"]);
    let secs_b = sections(&out);
    assert_eq!(secs_b.len(), 1, "{out}");
    assert_eq!(secs_b[0].0, SCHEDD_B);
    // ... with a constraint and user arguments too
    let out = a.ok(&[
        "q",
        "-name",
        &name_a,
        "alice",
        "-constraint",
        "ProcId == 1",
        "-af",
        "ClusterId",
        "ProcId",
    ]);
    assert_eq!(out, format!("{c_a} 1\n"));
    let out = a.skua(&["q", "-name", "nowhere.test"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no record of a schedd named nowhere.test"),
        "{stderr}"
    );

    // a user without a token of theirs is anonymous at another schedd:
    // it refuses to act, and says why
    let out = a.skua(&["rm", "-name", SCHEDD_B, &c_b]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "an anonymous rm must be refused");
    assert!(stderr.contains(SCHEDD_B), "{stderr}");
    assert!(
        stderr.contains("anonymous requests are not allowed WRITE"),
        "{stderr}"
    );
    // another user may not act on alice's jobs, at either schedd
    for (schedd, cluster) in [(SCHEDD_B, &c_b), (name_a.as_str(), &c_a)] {
        for action in ["rm", "hold"] {
            let out = as_user(&a, &bob, &[action, "-name", schedd, cluster]);
            assert!(
                !out.status.success(),
                "bob's {action} of alice's job at {schedd} must be refused"
            );
        }
    }
    let status_at = |schedd: &str| a.ok(&["q", "-name", schedd, "-allusers", "-af", "JobStatus"]);
    assert_eq!(status_at(SCHEDD_B), "1\n");
    assert_eq!(status_at(&name_a), "1\n1\n");
    // alice, with her token, may act on her job at schedd B
    let out = as_user(&a, &alice, &["hold", "-name", SCHEDD_B, &c_b]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(status_at(SCHEDD_B), "5\n");
    assert_eq!(status_at(&name_a), "1\n1\n");

    // -global is for skua q only
    let out = a.skua(&["rm", "-global", &c_b]);
    assert!(!out.status.success());
    drop(b);
}

#[test]
fn an_unreachable_schedd_is_reported_and_the_others_are_shown() {
    let a = pool_a("global-gone");
    let alice = a.user_token("alice");
    submit(&a, &alice, "here", 1);
    // a schedd that the collector lists but that does not answer
    let collector: std::net::SocketAddr =
        std::fs::read_to_string(a.dir.join("log/.collector_address"))
            .unwrap()
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .parse()
            .unwrap();
    let daemon = a.ok(&[
        "token",
        "create",
        "--identity",
        "condor@test",
        "--authz",
        "DAEMON",
    ]);
    let client = skua_net::Client::new(
        skua_net::Endpoint::Tcp(collector),
        Some(daemon.trim().to_string()),
        Duration::from_secs(5),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _: skua_proto::Ack = rt
        .block_on(
            client.command(
                &skua_proto::routes::COLLECTOR_UPDATE,
                Some(&skua_proto::AdUpdate {
                    ad_type: "Scheduler".into(),
                    name: "gone.test".into(),
                    ad: "[ MyType = \"Scheduler\"; Name = \"gone.test\"; Machine = \"gone.test\"; \
                     MyAddress = \"<127.0.0.1:1>\" ]"
                        .into(),
                    lifetime_secs: 600,
                }),
            ),
        )
        .unwrap();
    wait_for(
        "two schedds in the collector",
        Duration::from_secs(30),
        || a.ok(&["status", "-schedd", "-af", "Name"]).lines().count() == 2,
    );
    let out = a.skua(&["q", "-global", "-allusers"]);
    let (stdout, stderr) = text(&out);
    assert!(
        !out.status.success(),
        "a failed schedd makes the exit non-zero"
    );
    assert!(
        stderr.contains("-- Failed to fetch ads from: <127.0.0.1:1> : gone.test"),
        "{stderr}"
    );
    let secs = sections(&stdout);
    assert_eq!(secs.len(), 1, "{stdout}");
    assert!(secs[0].2.contains("here"), "{stdout}");
    // the whole-ad forms too
    let out = a.skua(&["q", "-global", "-allusers", "-af", "JobBatchName"]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    assert_eq!(stdout, "here\n");
    assert!(stderr.contains("gone.test"), "{stderr}");
}

#[test]
fn status_lists_the_daemons_of_every_host() {
    let a = pool_a("status-a");
    let b = pool_b("status-b", &a);
    // (both masters are named after this host, so one ad stands for both;
    // the schedds, named apart, show the two "hosts")
    wait_for("both schedds", Duration::from_secs(30), || {
        a.ok(&["status", "-schedd", "-af", "Name"]).lines().count() == 2
    });
    let schedds = a.ok(&["status", "-schedd"]);
    let head: Vec<&str> = schedds.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        head,
        ["Name", "Machine", "RunningJobs", "IdleJobs", "HeldJobs"]
    );
    assert!(
        schedds.lines().any(|l| l.starts_with(SCHEDD_B)),
        "{schedds}"
    );
    let masters = a.ok(&["status", "-master"]);
    assert_eq!(
        masters
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["Name", "Version", "Cpus", "Memory", "Uptime"]
    );
    assert!(
        masters.lines().filter(|l| !l.trim().is_empty()).count() >= 2,
        "{masters}"
    );
    let any = a.ok(&["status", "-any", "-af", "MyType"]);
    let mut types: Vec<&str> = any.lines().collect();
    types.sort();
    types.dedup_by(|x, y| x == y);
    for t in ["Collector", "DaemonMaster", "Scheduler"] {
        assert!(types.contains(&t), "{any}");
    }
    assert_eq!(
        any.lines().filter(|l| *l == "Scheduler").count(),
        2,
        "{any}"
    );
    let collectors = a.ok(&["status", "-collector"]);
    assert_eq!(
        collectors
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["Name", "Machine", "RunningJobs", "IdleJobs", "HostsTotal"]
    );
    // -pool: a collector named by address, whatever the configuration says
    let addr = std::fs::read_to_string(a.dir.join("log/.collector_address")).unwrap();
    let addr = addr.trim().trim_start_matches('<').trim_end_matches('>');
    let out = b.ok(&["status", "-pool", addr, "-schedd", "-af", "Name"]);
    let mut names: Vec<&str> = out.lines().collect();
    names.sort();
    assert_eq!(names.len(), 2, "{out}");
    assert!(names.contains(&SCHEDD_B), "{out}");
    let out = b.skua(&["status", "-pool", "127.0.0.1:1", "-schedd"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
}
