//! Fair share through real daemons: the negotiator's accountant sees what
//! users run, `skua userprio` shows it, administrators change factors and
//! priorities (others are refused), and the records survive a restart of
//! the negotiator.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{job_pool, wait_for, Pool};

fn start_pool(name: &str, cpus: &str, extra: &[(&'static str, &'static str)]) -> Pool {
    let mut env = vec![common::EXECUTE_IN_OTHER_UID_DOMAIN];
    env.extend_from_slice(extra);
    job_pool(name, cpus, &env)
}

/// The userprio row of `user` (its whitespace-separated fields).
fn row(pool: &Pool, args: &[&str], user: &str) -> Option<Vec<String>> {
    let mut a = vec!["userprio"];
    a.extend_from_slice(args);
    pool.ok(&a)
        .lines()
        .find(|l| l.starts_with(user))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
}

#[test]
fn userprio_shows_usage_and_administrators_change_it() {
    let pool = start_pool("userprio", "2", &[]);
    let domain = pool.ok(&["config", "get", "UID_DOMAIN"]).trim().to_string();
    let (alice, bob) = (pool.user_token("alice"), pool.user_token("bob"));
    pool.submit_as(
        &alice,
        "a.sub",
        "executable = /bin/sleep\narguments = 600\nrequest_disk = 1000\nqueue 2\n",
    );
    let alice_name = format!("alice@{domain}");
    // Both jobs run; the accountant counts 2 slots in use for alice.
    wait_for(
        "alice's 2 slots in userprio",
        Duration::from_secs(60),
        || row(&pool, &[], &alice_name).is_some_and(|r| r.get(3).map(String::as_str) == Some("2")),
    );
    let r = row(&pool, &["-all"], &alice_name).unwrap();
    // Effective = real x factor (DEFAULT_PRIO_FACTOR 1000).
    let eff: f64 = r[1].parse().unwrap();
    let real: f64 = r[2].parse().unwrap();
    assert_eq!(r[3], "1000.00");
    assert!((eff - real * 1000.0).abs() < 0.01 * eff.max(1.0), "{r:?}");
    assert!(real >= 0.5);

    // bob may read but not change.
    let out = pool.skua_as(&bob, &["userprio", "-setfactor", &alice_name, "1"]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("permission denied"), "{msg}");
    assert!(pool.skua_as(&bob, &["userprio"]).status.success());

    // The pool's owner is an administrator.
    pool.ok(&["userprio", "-setfactor", &alice_name, "5000"]);
    pool.ok(&["userprio", "-setprio", &format!("bob@{domain}"), "40"]);
    let r = row(&pool, &["-all"], &alice_name).unwrap();
    assert_eq!(r[3], "5000.00");
    let b = row(&pool, &["-all"], &format!("bob@{domain}")).unwrap();
    assert_eq!(b[2], "40.00");
    assert_eq!(b[1], "40000.00");
    // Invalid values are refused.
    let out = pool.skua(&["userprio", "-setfactor", &alice_name, "0.1"]);
    assert!(!out.status.success());

    // The records survive a restart of the negotiator.
    pool.ok(&["restart", "negotiator"]);
    wait_for("the negotiator back", Duration::from_secs(30), || {
        let out = pool.skua(&["userprio", "-all"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with(&alice_name) && l.split_whitespace().nth(3) == Some("5000.00"))
    });
    pool.ok(&["rm", "-all"]);
}

#[test]
fn a_user_with_a_better_priority_is_served_first() {
    // One slot; carol occupies it (10 s) while alice (factor 1e6) and bob
    // (default) queue a job each. When carol's job ends, bob's job runs
    // first although alice submitted first.
    let pool = start_pool("order", "1", &[]);
    let domain = pool.ok(&["config", "get", "UID_DOMAIN"]).trim().to_string();
    let (alice, bob, carol) = (
        pool.user_token("alice"),
        pool.user_token("bob"),
        pool.user_token("carol"),
    );
    pool.ok(&[
        "userprio",
        "-setfactor",
        &format!("alice@{domain}"),
        "1000000",
    ]);
    pool.submit_as(
        &carol,
        "c.sub",
        "executable = /bin/sleep\narguments = 10\nrequest_disk = 1000\nqueue\n",
    );
    wait_for("carol's job running", Duration::from_secs(60), || {
        pool.ok(&["q", "-allusers", "-af", "JobStatus"]).trim() == "2"
    });
    pool.submit_as(
        &alice,
        "a.sub",
        "executable = /bin/sleep\narguments = 600\nrequest_disk = 1000\nqueue\n",
    );
    pool.submit_as(
        &bob,
        "b.sub",
        "executable = /bin/sleep\narguments = 600\nrequest_disk = 1000\nqueue\n",
    );
    wait_for("a job after carol's", Duration::from_secs(60), || {
        pool.ok(&["q", "-allusers", "-af", "Owner", "JobStatus"])
            .lines()
            .any(|l| l.ends_with(" 2") && !l.starts_with("carol"))
    });
    let running: Vec<String> = pool
        .ok(&["q", "-allusers", "-af", "Owner", "JobStatus"])
        .lines()
        .filter(|l| l.ends_with(" 2"))
        .map(str::to_string)
        .collect();
    assert_eq!(running, ["bob 2"]);
    pool.ok(&["rm", "-all"]);
}
