//! Expensive ClassAd expressions cannot stall a daemon: an ad whose
//! attributes refer to each other twice per level (`a0 = a1 + a1; a1 =
//! a2 + a2; ...`, 2^60 additions if evaluated naively) sent to the
//! collector as a query constraint or advertised in a slot ad, put in a
//! job's attributes under its `periodic_remove`, or in its requirements:
//! each daemon keeps answering other requests within a second, and the
//! query, job or match still gets its right answer.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{job_pool, wait_for, Pool};

/// Levels of the chain, and the value of its top attribute.
const LEVELS: usize = 60;
const TOP: &str = "1152921504606846976"; // 2^60

/// `{p}0 = {p}1 + {p}1; ...; {p}60 = 1` as `(name, expression)` pairs.
fn chain(prefix: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = (0..LEVELS)
        .map(|i| {
            let next = format!("{prefix}{}", i + 1);
            (format!("{prefix}{i}"), format!("{next} + {next}"))
        })
        .collect();
    out.push((format!("{prefix}{LEVELS}"), "1".to_string()));
    out
}

/// The chain as a nested ad literal whose top is selected: an expression
/// of about 700 bytes.
fn chain_expr(prefix: &str) -> String {
    let attrs: Vec<String> = chain(prefix)
        .iter()
        .map(|(n, e)| format!("{n} = {e}"))
        .collect();
    format!("[{}].{prefix}0", attrs.join("; "))
}

/// Runs `skua args` and asserts that it succeeds within a second.
fn answers_quickly(pool: &Pool, args: &[&str]) -> String {
    let t = Instant::now();
    let out = pool.skua(args);
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "skua {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took < Duration::from_secs(1),
        "skua {args:?} took {took:?} while the daemons evaluate the chain"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn submit_job(pool: &Pool, dir: &Path, text: &str) -> String {
    pool.submit_job(dir, text)
}

/// The chain as `+name = expr` submit lines.
fn plus_lines(prefix: &str) -> String {
    chain(prefix)
        .iter()
        .map(|(n, e)| format!("+{n} = {e}\n"))
        .collect()
}

/// A pool whose one slot advertises the chain `s0..s60` (STARTD_ATTRS).
fn chain_slot_pool(name: &str) -> Pool {
    let knobs: Vec<(String, String)> = chain("s")
        .into_iter()
        .map(|(n, e)| (format!("_CONDOR_{n}"), e))
        .collect();
    let names: Vec<String> = chain("s").into_iter().map(|(n, _)| n).collect();
    let attrs = names.join(", ");
    let mut extra: Vec<(&str, &str)> = knobs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    extra.push(("_CONDOR_STARTD_ATTRS", &attrs));
    extra.push(("_CONDOR_PERIODIC_EXPR_INTERVAL", "1"));
    job_pool(name, "1", &extra)
}

#[test]
fn the_collector_answers_a_chain_constraint_and_a_chain_ad_and_keeps_answering() {
    let pool = chain_slot_pool("evalcost-collector");

    // A query whose constraint is the chain, from several clients at once.
    let constraint = format!("{} == {TOP} && MyType == \"Collector\"", chain_expr("q"));
    std::thread::scope(|scope| {
        let heavy: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    pool.skua(&[
                        "status",
                        "-any",
                        "-constraint",
                        &constraint,
                        "-af",
                        "MyType",
                    ])
                })
            })
            .collect();
        // Meanwhile the collector answers others.
        for _ in 0..3 {
            answers_quickly(&pool, &["status", "-any", "-af", "MyType"]);
        }
        for h in heavy {
            let out = h.join().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Collector");
        }
    });

    // The advertised slot ad holding the chain: others select it by it,
    // print it, and the default table still comes quickly.
    let by_chain = answers_quickly(
        &pool,
        &[
            "status",
            "-constraint",
            &format!("s0 == {TOP} && s1 == 576460752303423488 && s59 == 2"),
            "-af",
            "Name",
        ],
    );
    assert!(by_chain.trim().starts_with("slot1@"), "{by_chain}");
    assert_eq!(by_chain.lines().count(), 1, "{by_chain}");
    answers_quickly(&pool, &["status"]);
    answers_quickly(&pool, &["status", "-long"]);
}

#[test]
fn the_schedd_evaluates_a_chain_periodic_remove_and_keeps_answering() {
    let pool = job_pool(
        "evalcost-schedd",
        "1",
        &[("_CONDOR_PERIODIC_EXPR_INTERVAL", "1")],
    );
    let work = pool.home.join("work");
    // Held, so it never runs; removed by its periodic_remove once it has
    // been in the queue for two seconds.
    let cluster = submit_job(
        &pool,
        &work,
        &format!(
            "executable = /bin/true\nhold = true\n{}\
             periodic_remove = j0 == {TOP} && time() - QDate >= 2\nqueue\n",
            plus_lines("j")
        ),
    );
    // While the schedd evaluates it every second, `skua q` answers at
    // once, with constraints over the chain too.
    for _ in 0..3 {
        let all = answers_quickly(&pool, &["q", "-allusers", "-af", "ClusterId"]);
        let selected = answers_quickly(
            &pool,
            &[
                "q",
                "-allusers",
                "-constraint",
                &format!("j0 == {TOP} && j1 == 576460752303423488"),
                "-af",
                "ClusterId",
            ],
        );
        if all.trim().is_empty() {
            break; // removed already
        }
        assert_eq!(all.trim(), cluster);
        assert!(
            selected.trim().is_empty() || selected.trim() == cluster,
            "{selected}"
        );
    }
    // The policy fires: the job leaves the queue, removed.
    wait_for("the periodic_remove", Duration::from_secs(30), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .stdout
            .is_empty()
    });
    let hist = pool.ok(&["history", "-af", "ClusterId", "JobStatus"]);
    assert_eq!(hist.trim(), format!("{cluster} 3"), "{hist}");
    answers_quickly(&pool, &["q", "-allusers"]);
}

#[test]
fn the_negotiator_matches_chain_requirements_and_the_pool_keeps_answering() {
    let pool = chain_slot_pool("evalcost-negotiator");
    let work = pool.home.join("work");
    // The job's requirements use its own chain and the slot's.
    let cluster = submit_job(
        &pool,
        &work,
        &format!(
            "executable = /bin/true\n{}\
             requirements = j0 == {TOP} && TARGET.s0 == {TOP} && TARGET.s1 + MY.j1 > 0\nqueue\n",
            plus_lines("j")
        ),
    );
    // Negotiation cycles run every second meanwhile.
    for _ in 0..3 {
        answers_quickly(&pool, &["status", "-af", "Name"]);
        answers_quickly(&pool, &["q", "-allusers", "-af", "ClusterId"]);
        answers_quickly(&pool, &["userprio"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    // The match is made and the job runs to completion.
    wait_for("the job to complete", Duration::from_secs(60), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .stdout
            .is_empty()
    });
    let hist = pool.ok(&["history", "-af", "ClusterId", "JobStatus", "ExitCode"]);
    assert_eq!(hist.trim(), format!("{cluster} 4 0"), "{hist}");
}
