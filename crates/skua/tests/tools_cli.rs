//! HTCondor's everyday tools through the real `skua` and daemons:
//! `skua status`'s options (-total, -compact, -avail, -claimed/-run,
//! -format, -af:QUALIFIERS, -direct), `skua who`, `skua ping`,
//! `skua version`, `skua config_val`, `skua reschedule`, `-help` for every
//! command and command-line errors that quote options as typed.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{job_pool, wait_for, Pool, SKUA};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A two-slot pool with one job running (a sleeper): one slot Claimed,
/// one Unclaimed. The job's cluster id.
fn pool_with_a_running_job(name: &str) -> (Pool, String) {
    let pool = job_pool(name, "2", &[]);
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cluster = pool.submit_job(
        &work,
        "executable = /bin/sleep\narguments = 300\nrequest_disk = 1024\nqueue\n",
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"2\n"
    });
    wait_for("the claimed slot's ad", Duration::from_secs(30), || {
        pool.ok(&["status", "-af", "State"]).contains("Claimed")
    });
    (pool, cluster)
}

#[test]
fn status_options_show_the_pool_as_condor_status_does() {
    let (pool, cluster) = pool_with_a_running_job("statusopts");

    // -total: only the totals block, one claimed and one unclaimed slot
    let totals = pool.ok(&["status", "-total"]);
    let lines: Vec<&str> = totals.lines().collect();
    assert!(
        lines[0]
            .trim_start()
            .starts_with("Total Owner Claimed Unclaimed"),
        "{totals}"
    );
    assert!(!totals.contains("ActvtyTime"), "no slot table: {totals}");
    let total_row: Vec<&str> = lines.last().unwrap().split_whitespace().collect();
    assert_eq!(total_row[..5], ["Total", "2", "0", "1", "1"], "{totals}");
    // options may be shortened as HTCondor's tools allow
    assert_eq!(pool.ok(&["status", "-tot"]), totals);

    // -avail: the unclaimed slot only; -claimed and -run: the claimed one
    let avail = pool.ok(&["status", "-avail", "-af", "Name", "State"]);
    assert_eq!(avail.lines().count(), 1, "{avail}");
    assert!(avail.trim_end().ends_with(" Unclaimed"), "{avail}");
    let claimed_name = pool.ok(&["status", "-claimed", "-af", "Name"]);
    assert_eq!(claimed_name.lines().count(), 1, "{claimed_name}");
    assert_eq!(pool.ok(&["status", "-run", "-af", "Name"]), claimed_name);
    let claimed = pool.ok(&["status", "-claimed"]);
    let head: Vec<&str> = claimed.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        head,
        [
            "Name",
            "OpSys",
            "Arch",
            "LoadAv",
            "RemoteUser",
            "ClientMachine"
        ]
    );
    assert!(claimed.contains(claimed_name.trim()), "{claimed}");
    assert!(claimed.contains("Machines") && claimed.contains("AvgLoadAvg"));

    // -compact: one row for the machine, its two slots
    let compact = pool.ok(&["status", "-compact"]);
    let cl: Vec<&str> = compact.lines().collect();
    assert!(cl[0].starts_with("Machine "), "{compact}");
    let row: Vec<&str> = cl[2].split_whitespace().collect();
    assert_eq!(row[2], "2", "two slots: {compact}");
    assert!(cl[3].is_empty(), "one machine: {compact}");
    // -total wins over -compact, with HTCondor's warning
    let both = pool.skua(&["status", "-total", "-compact"]);
    assert!(both.status.success());
    assert!(
        stderr(&both)
            .contains("Warning: ignoring -compact option because -total option is also set"),
        "{}",
        stderr(&both)
    );
    assert_eq!(stdout(&both), totals);

    // -format pairs, printf-style; an undefined attribute prints nothing
    let formatted = pool.ok(&[
        "status",
        "-format",
        "%s:",
        "Name",
        "-format",
        "%d",
        "Cpus",
        "-format",
        "[%s]",
        "NoSuchAttr",
        "-format",
        "\\n",
        "Name",
    ]);
    let names = pool.ok(&["status", "-af", "Name"]);
    let want: String = names.lines().map(|n| format!("{n}:1\n")).collect();
    assert_eq!(formatted, want);

    // -af:h headings, -af:ln labels, -af:, commas
    let h = pool.ok(&["status", "-af:h", "Name", "State"]);
    let hl: Vec<&str> = h.lines().collect();
    assert!(
        hl[0].starts_with("Name ") && hl[0].ends_with(" State"),
        "{h}"
    );
    assert_eq!(hl.len(), 3, "{h}");
    assert_eq!(
        hl[1].find("Claimed").or(hl[1].find("Unclaimed")),
        hl[0].find("State")
    );
    let ln = pool.ok(&["status", "-avail", "-af:ln", "Name", "State"]);
    assert!(
        ln.starts_with("Name = slot") && ln.ends_with("\n State = Unclaimed\n"),
        "{ln}"
    );
    let comma = pool.ok(&["status", "-avail", "-af:,", "Cpus", "State"]);
    assert_eq!(comma, "1, Unclaimed\n");
    let bad = pool.skua(&["status", "-af:z", "Name"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("-af:z"), "{}", stderr(&bad));

    // -direct cannot be served, and says so
    let direct = pool.skua(&["status", "-direct", "localhost"]);
    assert!(!direct.status.success());
    let msg = stderr(&direct);
    assert!(
        msg.contains("-direct localhost") && msg.contains("collector"),
        "{msg}"
    );

    // the ads' CondorVersion compares as the HTCondor release Skua follows
    let versions = pool.ok(&["status", "-af", "split(CondorVersion)[1]"]);
    assert!(versions.lines().all(|v| v == "25.14.1"), "{versions}");

    // skua who: the running job on this machine's slot
    let who = pool.ok(&["who"]);
    let wl: Vec<&str> = who.lines().collect();
    let wh: Vec<&str> = wl[0].split_whitespace().collect();
    assert_eq!(wh, ["OWNER", "CLIENT", "SLOT", "JOB", "RUNTIME"], "{who}");
    assert_eq!(wl.len(), 3, "one running job: {who}");
    assert!(
        wl[2].contains(&format!(" {cluster}.0 ")),
        "job {cluster}.0 in {who}"
    );

    // skua reschedule reaches the negotiator
    let r = pool.ok(&["reschedule"]);
    assert_eq!(r, "Sent \"Reschedule\" command to the negotiator\n");
}

#[test]
fn ping_version_and_config_val_answer_as_htcondors_tools() {
    let pool = job_pool("pingver", "1", &[]);

    // ping: this account reaches the schedd through its Unix socket
    let ping = pool.ok(&["ping", "WRITE"]);
    assert!(
        ping.starts_with("WRITE command using (no encryption, no integrity, and FS) succeeded as "),
        "{ping}"
    );
    assert!(ping.ends_with(" to schedd.\n"), "{ping}");
    // a token user: READ granted, ADMINISTRATOR refused (exit status 1)
    let token = pool.user_token("alice");
    let t = pool.skua_as(
        &token,
        &[
            "ping",
            "-type",
            "collector",
            "-table",
            "READ",
            "ADMINISTRATOR",
        ],
    );
    assert_eq!(t.status.code(), Some(1), "{}", stderr(&t));
    let table = stdout(&t);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "Instruction",
            "Authentication",
            "Encryption",
            "Integrity",
            "Decision",
            "Identity"
        ]
    );
    assert_eq!(rows[1][0], "READ");
    assert_eq!(rows[1][1], "IDTOKENS");
    assert_eq!(rows[1][4..], ["ALLOW", "alice@test"]);
    assert_eq!(rows[2][0], "ADMINISTRATOR");
    assert_eq!(rows[2][4..], ["DENY", "alice@test"]);
    let unknown = pool.skua(&["ping", "SOUP"]);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("\"SOUP\""),
        "{}",
        stderr(&unknown)
    );

    // a command's own messages spell options as the command line does
    let one = pool.skua(&["token", "create", "-join", "-authz", "READ"]);
    assert!(!one.status.success());
    assert!(
        stderr(&one).contains("-join takes only -lifetime") && !stderr(&one).contains("--"),
        "{}",
        stderr(&one)
    );
    let two = pool.skua(&["token", "create", "--join", "--authz", "READ"]);
    assert!(
        stderr(&two).contains("--join takes only --lifetime"),
        "{}",
        stderr(&two)
    );

    // version: condor_version's two lines
    let v = pool.ok(&["version"]);
    let vl: Vec<&str> = v.lines().collect();
    assert_eq!(vl.len(), 2, "{v}");
    assert!(vl[0].starts_with("$CondorVersion: 25.14.1 ") && vl[0].ends_with(" $"));
    assert!(vl[1].starts_with("$CondorPlatform: ") && vl[1].ends_with(" $"));

    // config_val: values, -v with where, undefined, -config, -dump
    assert_eq!(pool.ok(&["config_val", "NUM_CPUS"]), "1\n");
    let verbose = pool.ok(&["config_val", "-v", "NUM_CPUS"]);
    assert_eq!(
        verbose,
        "NUM_CPUS = 1\n # at: environment variable _CONDOR_NUM_CPUS\n # raw: NUM_CPUS = 1\n"
    );
    let missing = pool.skua(&["config_val", "NO_SUCH_KNOB_HERE"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(stderr(&missing), "Not defined: NO_SUCH_KNOB_HERE\n");
    let sources = pool.ok(&["config_val", "-config"]);
    assert_eq!(
        sources.lines().take(2).collect::<Vec<_>>(),
        [
            "Configuration source:",
            &format!("\t{}", pool.config().display())
        ]
    );
    let dump = pool.ok(&["config_val", "-dump", "NEGOTIATOR_INTERVAL"]);
    assert!(dump.starts_with("# Configuration from machine: "), "{dump}");
    assert!(dump.contains("\nNEGOTIATOR_INTERVAL = 1\n"), "{dump}");
    assert!(
        dump.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .all(|l| l.to_ascii_uppercase().contains("NEGOTIATOR_INTERVAL")),
        "{dump}"
    );
}

#[test]
fn help_for_every_command_and_errors_quote_options_as_typed() {
    for cmd in [
        "status",
        "q",
        "submit",
        "config",
        "pool",
        "classad",
        "token",
        "ping",
        "who",
        "version",
        "config_val",
        "reschedule",
        "off",
        "userprio",
    ] {
        let out = std::process::Command::new(SKUA)
            .args([cmd, "-help"])
            .output()
            .unwrap();
        assert!(out.status.success(), "skua {cmd} -help: {}", stderr(&out));
        assert!(stdout(&out).contains("Usage: skua "), "skua {cmd} -help");
    }
    let out = std::process::Command::new(SKUA)
        .args(["status", "-totl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let msg = stderr(&out);
    assert!(msg.contains("unexpected argument '-totl'"), "{msg}");
    assert!(!msg.contains("--"), "one-dash spelling throughout: {msg}");
    let out = std::process::Command::new(SKUA)
        .args(["status", "-constraint"])
        .output()
        .unwrap();
    let msg = stderr(&out);
    assert!(msg.contains("'-constraint <CONSTRAINT>'"), "{msg}");
    // options typed with two dashes are quoted with two
    let out = std::process::Command::new(SKUA)
        .args(["status", "--totl"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("'--totl'"), "{}", stderr(&out));
}

#[test]
fn compact_rolls_a_partitionable_slots_jobs_into_its_machine() {
    let mut pool = Pool::new(
        "compactp",
        &common::job_env(
            "4",
            &[
                ("_CONDOR_MEMORY", "2048"),
                ("_CONDOR_NUM_SLOTS_TYPE_1", "1"),
                ("_CONDOR_SLOT_TYPE_1", "cpus=100%, mem=100%"),
                ("_CONDOR_SLOT_TYPE_1_PARTITIONABLE", "true"),
            ],
        ),
    );
    pool.start();
    wait_for("the partitionable slot", Duration::from_secs(30), || {
        pool.ok(&["status", "-af", "PartitionableSlot"]) == "true\n"
    });
    wait_for("the schedd's address file", Duration::from_secs(30), || {
        pool.dir.join("spool/.schedd_address").exists()
    });
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cluster = pool.submit_job(
        &work,
        "executable = /bin/sleep\narguments = 300\nrequest_cpus = 1\nrequest_memory = 512\n\
         request_disk = 1024\nqueue\n",
    );
    wait_for("the job to run", Duration::from_secs(30), || {
        pool.skua(&["q", &cluster, "-af", "JobStatus"]).stdout == b"2\n"
    });
    wait_for("the dynamic slot's ad", Duration::from_secs(30), || {
        pool.ok(&["status", "-claimed", "-af", "Name"])
            .lines()
            .count()
            == 1
            && pool.ok(&["status", "-af", "Name"]).lines().count() == 2
    });
    let compact = pool.ok(&["status", "-compact"]);
    let lines: Vec<&str> = compact.lines().collect();
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    // Slots (dynamic), Cpus, Gpus, TotalGb, FreCpu, FreeGb, CpuLoad, ST,
    // Jobs/Min, MaxSlotGb
    assert_eq!(row[2..6], ["1", "4", "0", "2.00"], "{compact}");
    assert_eq!(row[6..8], ["3", "1.50"], "{compact}");
    assert_eq!(row[9], "Cb", "{compact}");
    assert_eq!(row[11], "0.50", "{compact}");
    assert!(lines[3].is_empty(), "one machine row: {compact}");
    // -avail: the partitionable slot with its CPUs left
    let avail = pool.ok(&["status", "-avail", "-af", "PartitionableSlot", "Cpus"]);
    assert_eq!(avail, "true 3\n");
}
