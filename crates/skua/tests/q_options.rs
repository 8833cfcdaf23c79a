//! `skua q` and `skua history` options as an HTCondor user types them
//! (`-run`, `-idle`, `-af:jh`, `-format`, `-totals`, `-limit`, `-dag`,
//! `-userlog`, `-jobads`; `history -forwards -match -since -file`),
//! through a real personal pool, their output compared with the layouts
//! condor_q and condor_history document.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{job_pool, wait_for, Pool};

/// The lines of `skua ARGS`' standard output (it must succeed).
fn lines(pool: &Pool, args: &[&str]) -> Vec<String> {
    pool.ok(args).lines().map(str::to_string).collect()
}

/// A 1-slot pool running job `C.0` of a three-job cluster of sleepers
/// (`C.1` idle, `C.2` held), with a job event log; the cluster id.
fn three_jobs(pool: &Pool) -> String {
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cluster = pool.submit_job(
        &work,
        "executable = /bin/sleep\narguments = 300\nlog = job.log\nrequest_disk = 1024\nrequest_memory = 100\nqueue 3\n",
    );
    let c = cluster.as_str();
    pool.ok(&["hold", &format!("{c}.2")]);
    wait_for("job .0 to run", Duration::from_secs(30), || {
        let out = pool.skua(&["q", "-allusers", "-af", "ProcId", "JobStatus"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == "0 2")
    });
    cluster
}

#[test]
fn q_options_select_and_format_as_condor_q() {
    let pool = job_pool("qopts", "1", &[]);
    let c = three_jobs(&pool);
    let c = c.as_str();

    // -run shows only the running job, in every output form (it printed
    // the idle ones too with -af)
    assert_eq!(
        lines(
            &pool,
            &["q", "-allusers", "-run", "-af", "ProcId", "JobStatus"]
        ),
        ["0 2"]
    );
    let run = pool.ok(&["q", "-allusers", "-run"]);
    assert!(
        run.contains(" ID        OWNER            SUBMITTED     RUN_TIME HOST(S)\n"),
        "{run}"
    );
    let rows: Vec<&str> = run
        .lines()
        .filter(|l| l.contains(&format!("{c}.")))
        .collect();
    assert_eq!(rows.len(), 1, "{run}");
    assert!(
        rows[0].trim_start().starts_with(&format!("{c}.0 ")),
        "{run}"
    );
    assert!(rows[0].contains("slot1@"), "the host column: {run}");
    assert!(
        !run.contains("Total for"),
        "condor_q -run prints no totals: {run}"
    );

    // -idle: only the idle job, condor_q's idle columns
    assert_eq!(
        lines(&pool, &["q", "-allusers", "-idle", "-af", "ProcId"]),
        ["1"]
    );
    let idle = pool.ok(&["q", "-allusers", "-idle"]);
    assert!(
        idle.contains(" ID        OWNER          UNIVERSE  CPUS MEMORY STARTS LAST_HOST\n"),
        "{idle}"
    );
    let row = idle
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{c}.1 ")))
        .unwrap_or_else(|| panic!("{idle}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[2..], ["vanilla", "1", "100", "0"], "{row}");
    // -hold with a constraint; -run and -hold together are refused
    assert_eq!(
        lines(&pool, &["q", "-allusers", "-hold", "-af", "ProcId"]),
        ["2"]
    );
    assert!(pool
        .ok(&[
            "q",
            "-allusers",
            "-run",
            "-constraint",
            "ProcId == 1",
            "-af",
            "ProcId"
        ])
        .is_empty());
    let both = pool.skua(&["q", "-run", "-hold"]);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("incompatible"));

    // -af qualifiers: j and h (condor_q -af:jh)
    let jh = lines(&pool, &["q", "-allusers", "-af:jh", "JobStatus", "ProcId"]);
    assert_eq!(
        jh[0],
        format!(" ID{} JobStatus ProcId", " ".repeat(c.len() + 2 - 3))
    );
    assert_eq!(jh[1], format!("{c}.0 2         0"));
    assert_eq!(jh.len(), 4, "{jh:?}");
    // -af:, and -af:ln
    assert_eq!(
        lines(
            &pool,
            &["q", &format!("{c}.1"), "-af:,", "ProcId", "JobStatus"]
        ),
        ["1, 1"]
    );
    assert_eq!(
        lines(
            &pool,
            &["q", &format!("{c}.1"), "-af:ln", "ProcId", "JobStatus"]
        ),
        ["ProcId = 1", " JobStatus = 1"]
    );
    // -format, printf-style, repeatable, escapes collapsed
    let f = pool.ok(&[
        "q",
        "-allusers",
        "-format",
        "%d.",
        "ClusterId",
        "-format",
        "%03d|",
        "ProcId",
        "-format",
        "%s\\n",
        "Owner",
    ]);
    let owner = pool.ok(&["q", "-allusers", "-af", "Owner"]);
    let owner = owner.lines().next().unwrap();
    assert_eq!(
        f,
        format!("{c}.000|{owner}\n{c}.001|{owner}\n{c}.002|{owner}\n")
    );
    // -limit
    assert_eq!(
        lines(&pool, &["q", "-allusers", "-limit", "2", "-af", "ProcId"]),
        ["0", "1"]
    );
    let limited = pool.ok(&["q", "-allusers", "-limit", "1", "-nobatch"]);
    assert!(limited.contains("Total for query: 1 jobs;"), "{limited}");

    // -totals: the header and the totals, no table
    let totals = pool.ok(&["q", "-allusers", "-totals"]);
    let t: Vec<&str> = totals.lines().filter(|l| !l.is_empty()).collect();
    assert!(t[0].starts_with("-- Schedd: "), "{totals}");
    assert_eq!(
        t[1],
        "Total for query: 3 jobs; 0 completed, 0 removed, 1 idle, 1 running, 1 held, 0 suspended"
    );
    assert!(t[2].starts_with("Total for all users: 3 jobs;"), "{totals}");
    assert_eq!(t.len(), 3, "{totals}");

    // -dag -nobatch without DAG jobs: the flat view, owners as names
    let dag = pool.ok(&["q", "-allusers", "-dag", "-nobatch"]);
    assert!(
        dag.contains(" ID        OWNER/NODENAME      SUBMITTED"),
        "{dag}"
    );
    assert_eq!(
        dag.lines().filter(|l| l.contains(owner)).count(),
        3,
        "{dag}"
    );
    assert!(!dag.contains("|-"), "{dag}");
    // -wide changes nothing through a pipe (condor_q cuts only a terminal)
    assert_eq!(
        pool.ok(&["q", "-allusers", "-wide", "-nobatch"])
            .lines()
            .count(),
        pool.ok(&["q", "-allusers", "-nobatch"]).lines().count()
    );

    // -userlog: the queue as the log has it, no schedd needed
    let log = pool.home.join("work/job.log");
    let log = log.to_str().unwrap();
    let from_log = pool.ok(&["q", "-userlog", log, "-nobatch"]);
    assert!(
        from_log.starts_with(&format!("\n\n-- Userlog: {log}\n")),
        "{from_log}"
    );
    let states: Vec<String> = from_log
        .lines()
        .filter(|l| l.contains(&format!("{c}.")))
        .map(|l| l.split_whitespace().nth(5).unwrap_or("").to_string())
        .collect();
    assert_eq!(states, ["R", "I", "H"], "{from_log}");
    assert!(from_log
        .contains("Total for query: 3 jobs; 0 completed, 0 removed, 1 idle, 1 running, 1 held"));
    assert_eq!(
        lines(&pool, &["q", "-userlog", log, "-run", "-af:j", "JobStatus"]),
        [format!("{c}.0 2")]
    );
    let batch = pool.ok(&["q", "-userlog", log]);
    assert!(batch.contains("OWNER          BATCH_NAME"), "{batch}");
    assert!(batch.contains(&format!("ID: {c}")), "{batch}");

    // -jobads: `skua q -l` saved to a file reads back as the queue
    let saved = pool.home.join("queue.ads");
    std::fs::write(&saved, pool.ok(&["q", "-allusers", "-l"])).unwrap();
    let saved = saved.to_str().unwrap();
    let from_file = pool.ok(&["q", "-jobads", saved, "-hold"]);
    assert!(
        from_file.starts_with(&format!("\n\n-- Jobads: {saved}\n")),
        "{from_file}"
    );
    assert!(from_file.contains("via skua hold"), "{from_file}");
    assert_eq!(
        lines(
            &pool,
            &[
                "q",
                "-jobads",
                saved,
                "-constraint",
                "ProcId > 0",
                "-af",
                "ProcId"
            ]
        ),
        ["1", "2"]
    );
    let bad = pool.skua(&["q", "-jobads", "/nonexistent/ads"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("/nonexistent/ads"),
        "the error names the file"
    );
}

#[test]
fn history_reads_forwards_since_and_from_a_file() {
    let pool = job_pool("histopts", "1", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let c = pool.submit_job(
        &work,
        "executable = /bin/sleep\narguments = 300\nrequest_disk = 1024\nhold = true\nqueue 4\n",
    );
    let c = c.as_str();
    // removed one at a time: the history's order is the removal order
    for p in 0..4 {
        pool.ok(&["rm", &format!("{c}.{p}")]);
        wait_for(
            "the job to leave the queue",
            Duration::from_secs(20),
            || pool.ok(&["history", "-af", "ProcId"]).lines().count() == p + 1,
        );
    }
    let ids = |args: &[&str]| {
        let mut v = vec!["history", "-af", "ProcId"];
        v.extend_from_slice(args);
        lines(&pool, &v)
    };
    assert_eq!(ids(&[]), ["3", "2", "1", "0"]);
    assert_eq!(ids(&["-forwards"]), ["0", "1", "2", "3"]);
    assert_eq!(ids(&["-match", "2"]), ["3", "2"]);
    assert_eq!(ids(&["-forwards", "-limit", "1"]), ["0"]);
    assert_eq!(ids(&["-since", &format!("{c}.1")]), ["3", "2"]);
    assert_eq!(ids(&["-since", "ProcId == 2"]), ["3"]);
    assert_eq!(ids(&["-since", &format!("{c}.1"), "-forwards"]), ["2", "3"]);
    // the default table, condor_history's columns, X for removed
    let table = pool.ok(&["history", "-match", "1"]);
    assert!(
        table.starts_with(" ID     OWNER          SUBMITTED   RUN_TIME     ST  COMPLETED   CMD\n"),
        "{table}"
    );
    assert!(table.contains(" X "), "{table}");

    // a history file in HTCondor's format: ads with `***` banners, oldest
    // first; read newest first like the schedd's
    let mut file = String::new();
    for ad in pool.ok(&["history", "-forwards", "-l"]).split("\n\n") {
        if ad.trim().is_empty() {
            continue;
        }
        file.push_str(ad.trim_end());
        file.push_str(
            "\n*** Offset = 0 ClusterId = 0 ProcId = 0 Owner = \"x\" CompletionDate = 0\n",
        );
    }
    let path = pool.home.join("history");
    std::fs::write(&path, file).unwrap();
    let path = path.to_str().unwrap();
    assert_eq!(ids(&["-file", path]), ["3", "2", "1", "0"]);
    assert_eq!(
        ids(&["-file", path, "-forwards", "-match", "3"]),
        ["0", "1", "2"]
    );
    assert_eq!(ids(&["-file", path, "-since", &format!("{c}.2")]), ["3"]);
    assert_eq!(
        ids(&["-file", path, "-constraint", "ProcId % 2 == 0"]),
        ["2", "0"]
    );
}

#[test]
fn dag_nodes_are_listed_under_their_dagman_job() {
    let pool = job_pool("qdag", "1", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let sub = "executable = /bin/sleep\narguments = 300\nrequest_disk = 1024\nhold = true\n";
    let dagman = pool.submit_job(&work, &format!("{sub}queue\n"));
    let other = pool.submit_job(&work, &format!("{sub}queue\n"));
    let node = pool.submit_job(
        &work,
        &format!("{sub}+DAGManJobId = {dagman}\n+DAGNodeName = \"NodeB\"\nqueue\n"),
    );
    let out = pool.ok(&["q", "-allusers", "-dag", "-nobatch"]);
    assert!(
        out.contains(" ID        OWNER/NODENAME      SUBMITTED"),
        "{out}"
    );
    let ids: Vec<(String, String)> = out
        .lines()
        .filter(|l| l.contains(" H "))
        .map(|l| {
            let mut w = l.split_whitespace();
            (w.next().unwrap().to_string(), w.next().unwrap().to_string())
        })
        .collect();
    let owner = pool.ok(&["q", "-allusers", "-af", "Owner"]);
    let owner = owner.lines().next().unwrap().to_string();
    assert_eq!(
        ids,
        [
            (format!("{dagman}.0"), owner.clone()),
            (format!("{node}.0"), "|-NodeB".to_string()),
            (format!("{other}.0"), owner),
        ],
        "{out}"
    );
    // naming the DAGMan job's cluster brings its nodes along
    let named = pool.ok(&["q", "-dag", "-nobatch", &dagman]);
    let rows: Vec<&str> = named.lines().filter(|l| l.contains(" H ")).collect();
    assert_eq!(rows.len(), 2, "{named}");
    assert!(rows[1].contains("|-NodeB"), "{named}");
    // without -nobatch, -dag is the batch summary (as condor_q)
    let batch = pool.ok(&["q", "-allusers", "-dag"]);
    assert!(batch.contains("BATCH_NAME"), "{batch}");
}
