//! Pools across hosts (issue 13, "How it is checked"): real daemons on
//! separate test hosts made with network namespaces (`common::netns`,
//! `../shared/netns/hosts.sh`), each host with its own pool directory,
//! address and host name (`common::multihost`). Host 1 is the central
//! manager, host 2 the submit host, hosts 3 and 4 execute hosts, unless a
//! test says otherwise.
//!
//! Every job appends a line `<job> <host>` to a file of the submitting
//! account's working directory (the hosts share the file system, not the
//! pool directories), so executions are counted whatever host ran them; its
//! input file travels to the execute host and its output file comes back,
//! checked byte for byte.
//!
//! These tests need root (network namespaces); they fail, not skip, when
//! the hosts cannot be made.
//!
//! Hosts join as an administrator joins them: the central manager with
//! `skua pool start --role central-manager`, every other host with
//! `skua pool join` (`MultiPool::join_all`). Hosts refused by the pool are
//! configured by hand (`MultiPool::configure_host`).
//!
//! Leases and reconnect across hosts: a cut shorter than the job's lease
//! is a disconnection (022) then a reconnection (023); a longer one is a
//! disconnection then a failed reconnection (024), the job killed on its
//! cut-off host and run on the other; a schedd killed under a running job
//! is restarted by its master and reconnects (023, no 022).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::multihost::{chown_to_submitter, Credentials, MultiPool, Role};

const CM: Role = Role::CentralManager;
const SUBMIT: Role = Role::Submit;
const EXEC: Role = Role::Execute;

/// The standard four hosts.
const FOUR: &[&[Role]] = &[&[CM], &[SUBMIT], &[EXEC], &[EXEC]];

/// The job: records its execution, sleeps, then writes its output (its
/// input followed by the host it ran on) and exits with `$JOB_EXIT` (0
/// when unset).
const JOB_SCRIPT: &str = "#!/bin/sh\n\
# $1: the job's number, $2: seconds to sleep, $3: the executions file\n\
echo \"$1 $(hostname)\" >> \"$3\"\n\
sleep \"$2\"\n\
{ cat \"in.$1\"; echo \"ran on $(hostname)\"; } > \"out.$1\"\n\
exit \"${JOB_EXIT:-0}\"\n";

/// The input of job `p`: every byte value, then text unique to the job.
fn input_of(p: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    v.extend(format!("\ninput of job {p}\n").bytes());
    v.extend(std::iter::repeat_n(b'a' + (p % 26) as u8, 1000 * (p + 1)));
    v.push(b'\n');
    v
}

/// Writes the job script and the inputs of `n` jobs in `dir`, and a submit
/// description of `n` jobs sleeping `secs` seconds, with `extra` lines.
fn job_files(dir: &Path, n: usize, secs: &str, extra: &str) -> String {
    let script = dir.join("job.sh");
    std::fs::write(&script, JOB_SCRIPT).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    chown_to_submitter(&script);
    for p in 0..n {
        let f = dir.join(format!("in.{p}"));
        std::fs::write(&f, input_of(p)).unwrap();
        chown_to_submitter(&f);
    }
    format!(
        "executable = job.sh\n\
         arguments = $(Process) {secs} {runs}\n\
         transfer_input_files = in.$(Process)\n\
         transfer_output_files = out.$(Process)\n\
         should_transfer_files = YES\n\
         when_to_transfer_output = ON_EXIT\n\
         log = job.log\n\
         {extra}\n\
         queue {n}\n",
        runs = dir.join("runs").display()
    )
}

/// The executions recorded in `dir/runs`: (job, host name) in order.
fn runs(dir: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (p, h) = l.split_once(' ')?;
            Some((p.parse().ok()?, h.to_string()))
        })
        .collect()
}

/// The job event log of `dir`.
fn event_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("job.log")).unwrap_or_default()
}

/// How many events `code` (`001`, `004`, `005`, `022`...) job `cluster.p`
/// has.
fn events(dir: &Path, code: &str, cluster: &str, p: usize) -> usize {
    let head = format!("{code} ({:03}.{p:03}.000)", cluster.parse::<u32>().unwrap());
    event_log(dir)
        .lines()
        .filter(|l| l.starts_with(&head))
        .count()
}

/// The codes of job `cluster.p`'s events that tell where it ran and how
/// its runs ended (`001`, `004`, `005`, `022`, `023`, `024`), in the order
/// of the event log.
fn run_events(dir: &Path, cluster: &str, p: usize) -> Vec<String> {
    const CODES: [&str; 6] = ["001", "004", "005", "022", "023", "024"];
    let id = format!("({:03}.{p:03}.000)", cluster.parse::<u32>().unwrap());
    event_log(dir)
        .lines()
        .filter_map(|l| {
            let (code, rest) = l.split_once(' ')?;
            (CODES.contains(&code) && rest.starts_with(&id)).then(|| code.to_string())
        })
        .collect()
}

/// The addresses (IPs) the job `cluster.p` was executed at, in order
/// (its 001 events: `Job executing on host: <ip:port>`).
fn executed_at(dir: &Path, cluster: &str, p: usize) -> Vec<String> {
    let head = format!("001 ({:03}.{p:03}.000)", cluster.parse::<u32>().unwrap());
    event_log(dir)
        .lines()
        .filter(|l| l.starts_with(&head))
        .filter_map(|l| {
            let addr = l.split("host: <").nth(1)?;
            Some(addr.split(':').next()?.to_string())
        })
        .collect()
}

/// Job `p`'s output came back byte for byte: its input and the host that
/// ran it (`host`).
fn assert_output(dir: &Path, p: usize, host: &str) {
    let got = std::fs::read(dir.join(format!("out.{p}")))
        .unwrap_or_else(|e| panic!("no output of job {p}: {e}"));
    let mut want = input_of(p);
    want.extend(format!("ran on {host}\n").bytes());
    assert!(
        got == want,
        "the output of job {p} differs from what it wrote"
    );
}

/// The queue of the submit host is empty.
fn queue_empty(pool: &MultiPool) -> bool {
    let out = pool.skua(
        pool.host_with(SUBMIT),
        &["q", "-allusers", "-af", "ClusterId"],
    );
    out.status.success() && out.stdout.is_empty()
}

/// The PIDs on host `i` of the job with number `p` (its `job.sh` process).
fn job_processes_on(pool: &MultiPool, i: usize, p: usize) -> Vec<u32> {
    pool.hosts
        .pids(i)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.iter().any(|a| a.ends_with(b"job.sh")) && args.contains(&p.to_string().as_bytes())
        })
        .collect()
}

/// The slot ads in the collector as (name, state).
fn slot_states(pool: &MultiPool) -> Vec<(String, String)> {
    pool.status(&["-af", "Name", "State"])
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

#[test]
fn jobs_with_files_flow_from_the_submit_host_to_both_execute_hosts_and_back() {
    // no periodic negotiation within the test: the submit host's schedd
    // finds the negotiator on the central manager (through the collector)
    // and asks it for a cycle
    let pool = MultiPool::start("flow", FOUR, &[("NEGOTIATOR_INTERVAL", "300")]);
    pool.wait_for("the negotiator's first cycle", 30, || {
        let out = pool.skua(
            1,
            &["status", "-negotiator", "-af", "LastNegotiationCycleEnd0"],
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<i64>()
            .is_ok()
    });
    let dir = pool.work_dir("flow");
    let n = 8;
    let cluster = pool.submit(&dir, &job_files(&dir, n, "1", ""));
    pool.wait_for("every job done", 60, || queue_empty(&pool));

    let runs = runs(&dir);
    let exec_names = [pool.hosts.name(3), pool.hosts.name(4)];
    for p in 0..n {
        let mine: Vec<&String> = runs
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, h)| h)
            .collect();
        assert_eq!(
            mine.len(),
            1,
            "job {p} executed {} times: {runs:?}",
            mine.len()
        );
        assert!(exec_names.contains(mine[0]), "job {p} ran on {}", mine[0]);
        assert_output(&dir, p, mine[0]);
        assert_eq!(events(&dir, "001", &cluster, p), 1, "{}", event_log(&dir));
        assert_eq!(events(&dir, "005", &cluster, p), 1, "{}", event_log(&dir));
        // the event log names the execute host by its own address
        let at = executed_at(&dir, &cluster, p);
        let host = pool.hosts.host_of(&at[0]).unwrap();
        assert_eq!(&pool.hosts.name(host), mine[0]);
    }
    for h in &exec_names {
        assert!(
            runs.iter().any(|(_, r)| r == h),
            "no job ran on {h}: {runs:?}"
        );
    }
}

/// Submits one job sleeping `secs` with lease `lease`, waits for it to
/// run, and returns (its directory, cluster, the host running it, the
/// other execute host).
fn one_running_job(
    pool: &MultiPool,
    name: &str,
    secs: &str,
    lease: u32,
) -> (std::path::PathBuf, String, usize, usize) {
    running_job(pool, name, secs, &format!("job_lease_duration = {lease}"))
}

/// [`one_running_job`] with the submit description's `extra` lines.
fn running_job(
    pool: &MultiPool,
    name: &str,
    secs: &str,
    extra: &str,
) -> (std::path::PathBuf, String, usize, usize) {
    let dir = pool.work_dir(name);
    let cluster = pool.submit(&dir, &job_files(&dir, 1, secs, extra));
    // the job has begun, and the schedd has logged where (the event may
    // come a moment after the job's first line)
    pool.wait_for("the job running", 60, || {
        !runs(&dir).is_empty() && !executed_at(&dir, &cluster, 0).is_empty()
    });
    let at = executed_at(&dir, &cluster, 0);
    let host = pool.hosts.host_of(&at[0]).unwrap();
    let other = if host == 3 { 4 } else { 3 };
    assert_eq!(runs(&dir)[0].1, pool.hosts.name(host));
    (dir, cluster, host, other)
}

#[test]
fn a_cut_shorter_than_the_lease_is_a_disconnection_then_a_reconnection_and_one_completion() {
    let pool = MultiPool::start("shortcut", FOUR, &[]);
    // lease 30 s: a keep-alive unanswered for a third of it (10 s) is a
    // disconnection; the next try comes 8 s later, well within the lease
    let (dir, cluster, host, _) = one_running_job(&pool, "shortcut", "24", 30);
    pool.hosts.cut(host);
    pool.wait_for("the disconnection (022)", 30, || {
        events(&dir, "022", &cluster, 0) == 1
    });
    // the job still runs on its cut-off host
    assert_eq!(job_processes_on(&pool, host, 0).len(), 1);
    pool.hosts.heal(host);
    pool.wait_for("the reconnection (023)", 30, || {
        events(&dir, "023", &cluster, 0) == 1
    });
    pool.wait_for("the job done", 60, || queue_empty(&pool));

    assert_eq!(runs(&dir).len(), 1, "{:?}", runs(&dir));
    assert_output(&dir, 0, &pool.hosts.name(host));
    let log = event_log(&dir);
    assert!(
        log.contains(&format!(
            "Trying to reconnect to slot1@{} <{}:",
            pool.hosts.name(host),
            pool.hosts.addr(host)
        )) || log.contains(&format!(
            "Trying to reconnect to slot2@{} <{}:",
            pool.hosts.name(host),
            pool.hosts.addr(host)
        )),
        "022 names the execute host's slot and address:\n{log}"
    );
    assert_eq!(
        run_events(&dir, &cluster, 0),
        ["001", "022", "023", "005"],
        "{log}"
    );
    let history = pool.ok(
        pool.host_with(SUBMIT),
        &[
            "history",
            "-af",
            "ExitCode",
            "NumJobStarts",
            "NumJobReconnects",
        ],
    );
    assert_eq!(history.trim(), "0 1 1", "{}", pool.logs());
}

#[test]
fn a_job_that_ends_during_a_short_cut_completes_once_when_the_link_returns() {
    let pool = MultiPool::start("endcut", FOUR, &[]);
    let (dir, cluster, host, _) = one_running_job(&pool, "endcut", "2", 30);
    pool.hosts.cut(host);
    pool.wait_for("the job ended on its cut-off host", 30, || {
        job_processes_on(&pool, host, 0).is_empty()
    });
    // its result waits on the execute host: the submit side still has the
    // job running
    assert!(!queue_empty(&pool));
    std::thread::sleep(std::time::Duration::from_secs(2));
    pool.hosts.heal(host);
    pool.wait_for("the job done", 60, || queue_empty(&pool));

    assert_eq!(runs(&dir).len(), 1, "{:?}", runs(&dir));
    assert_output(&dir, 0, &pool.hosts.name(host));
    assert_eq!(events(&dir, "001", &cluster, 0), 1, "{}", event_log(&dir));
    assert_eq!(events(&dir, "004", &cluster, 0), 0, "{}", event_log(&dir));
    assert_eq!(events(&dir, "005", &cluster, 0), 1, "{}", event_log(&dir));
}

#[test]
fn a_cut_longer_than_the_lease_kills_the_job_there_and_it_runs_again_on_the_other_host() {
    let pool = MultiPool::start("longcut", FOUR, &[]);
    let (dir, cluster, host, other) = one_running_job(&pool, "longcut", "15", 10);
    pool.hosts.cut(host);
    // the execute side kills the job when the lease runs out, still cut off
    pool.wait_for("the job killed on its cut-off host", 60, || {
        job_processes_on(&pool, host, 0).is_empty()
    });
    // the submit side puts it back to Idle and it runs on the other host
    pool.wait_for("the job run again", 60, || runs(&dir).len() == 2);
    pool.wait_for("the job done", 60, || queue_empty(&pool));
    pool.hosts.heal(host);

    let r = runs(&dir);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[1].1, pool.hosts.name(other));
    assert_output(&dir, 0, &pool.hosts.name(other));
    let at = executed_at(&dir, &cluster, 0);
    assert_eq!(at.len(), 2, "{}", event_log(&dir));
    assert_eq!(pool.hosts.host_of(&at[1]), Some(other));
    // disconnected (022) while the lease ran, given up when it ran out
    // (024), then run and completed on the other host
    assert_eq!(
        run_events(&dir, &cluster, 0),
        ["001", "022", "024", "001", "005"],
        "{}",
        event_log(&dir)
    );
    assert!(
        event_log(&dir).contains("JobLeaseDuration (10 seconds) expired"),
        "{}",
        event_log(&dir)
    );
    // once healed, nothing is left claimed anywhere
    pool.wait_for("every slot back and unclaimed", 60, || {
        let s = slot_states(&pool);
        s.len() == 4 && s.iter().all(|(_, st)| st == "Unclaimed")
    });
}

/// The processes of host `i` running `skuad <daemon>` (not yet reaped
/// ones excluded).
fn daemon_pids(pool: &MultiPool, i: usize, daemon: &str) -> Vec<u32> {
    pool.hosts
        .pids(i)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(") ")
                .is_none_or(|(_, rest)| rest.starts_with('Z'));
            args.first().is_some_and(|a| a.ends_with(b"skuad"))
                && args.get(1) == Some(&daemon.as_bytes())
                && !zombie
        })
        .collect()
}

#[test]
fn a_schedd_killed_while_its_job_runs_on_an_execute_host_reconnects_and_the_job_completes_once() {
    let pool = MultiPool::start("schedkill", FOUR, &[]);
    let submit = pool.host_with(SUBMIT);
    let (dir, cluster, host, _) = running_job(
        &pool,
        "schedkill",
        "8",
        "job_lease_duration = 30\nenvironment = \"JOB_EXIT=7\"",
    );
    let schedds = daemon_pids(&pool, submit, "schedd");
    assert_eq!(schedds.len(), 1, "{schedds:?}");
    // only the schedd dies (SIGKILL); the submit host's master starts a
    // new one (MASTER_BACKOFF_CONSTANT = 0), which reconnects to the run
    let out = std::process::Command::new("kill")
        .args(["-KILL", &schedds[0].to_string()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(job_processes_on(&pool, host, 0).len(), 1);
    pool.wait_for("a new schedd", 30, || {
        let now = daemon_pids(&pool, submit, "schedd");
        !now.is_empty() && !now.contains(&schedds[0])
    });
    pool.wait_for("the reconnection (023)", 60, || {
        events(&dir, "023", &cluster, 0) == 1
    });
    pool.wait_for("the job done", 60, || queue_empty(&pool));

    assert_eq!(runs(&dir).len(), 1, "{:?}", runs(&dir));
    assert_output(&dir, 0, &pool.hosts.name(host));
    let log = event_log(&dir);
    // a restarted schedd writes no 022 (it did not see the run go silent)
    assert_eq!(
        run_events(&dir, &cluster, 0),
        ["001", "023", "005"],
        "{log}"
    );
    assert!(
        log.contains(&format!("    startd address: <{}:", pool.hosts.addr(host))),
        "{log}"
    );
    assert!(log.contains("return value 7"), "{log}");
    let history = pool.ok(
        submit,
        &[
            "history",
            "-af",
            "JobStatus",
            "ExitCode",
            "NumJobStarts",
            "NumJobReconnects",
        ],
    );
    assert_eq!(history.trim(), "4 7 1 1", "{}", pool.logs());
    // its usage: the whole run (8 s of sleep), across the schedd's absence
    let wall = pool.ok(submit, &["history", "-af", "RemoteWallClockTime"]);
    let wall: f64 = wall.trim().parse().unwrap();
    assert!(wall >= 8.0, "RemoteWallClockTime {wall}");
}

#[test]
fn an_execute_host_that_crashes_loses_its_slots_and_its_job_runs_on_the_other_host() {
    let pool = MultiPool::start("crash", FOUR, &[]);
    let (dir, cluster, host, other) = one_running_job(&pool, "crash", "15", 8);
    pool.hosts.crash(host);
    let gone = pool.hosts.name(host);
    pool.wait_for("the crashed host's slots expired", 60, || {
        let s = pool.slots();
        !s.is_empty() && s.iter().all(|n| !n.ends_with(&format!("@{gone}")))
    });
    pool.wait_for("the job done", 60, || queue_empty(&pool));

    let r = runs(&dir);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[1].1, pool.hosts.name(other));
    assert_output(&dir, 0, &pool.hosts.name(other));
    assert_eq!(events(&dir, "005", &cluster, 0), 1, "{}", event_log(&dir));
    pool.wait_for("the other host's slots unclaimed", 30, || {
        let s = slot_states(&pool);
        s.len() == 2 && s.iter().all(|(_, st)| st == "Unclaimed")
    });
}

#[test]
fn running_jobs_survive_a_crashed_central_manager_and_matches_resume_when_it_returns() {
    let pool = MultiPool::start("cmcrash", FOUR, &[]);
    let dir = pool.work_dir("cmcrash");
    // eight jobs for four slots: the second four run on the claims the
    // first four leave, without a central manager
    let n = 8;
    let cluster = pool.submit(&dir, &job_files(&dir, n, "3", "job_lease_duration = 30"));
    pool.wait_for("four jobs running", 60, || runs(&dir).len() >= 4);
    let cm = pool.central_manager();
    pool.hosts.crash(cm);
    pool.wait_for("every job done", 90, || queue_empty(&pool));
    let r = runs(&dir);
    for p in 0..n {
        let mine: Vec<&String> = r.iter().filter(|(q, _)| *q == p).map(|(_, h)| h).collect();
        assert_eq!(
            mine.len(),
            1,
            "job {p} executed {} times: {r:?}",
            mine.len()
        );
        assert_output(&dir, p, mine[0]);
        assert_eq!(events(&dir, "005", &cluster, p), 1, "{}", event_log(&dir));
        assert_eq!(events(&dir, "004", &cluster, p), 0, "{}", event_log(&dir));
    }

    // the central manager returns: the daemons advertise again and a new
    // job is matched
    pool.start_host(cm);
    pool.wait_ready();
    let dir2 = pool.work_dir("cmcrash2");
    pool.submit(&dir2, &job_files(&dir2, 1, "0", ""));
    pool.wait_for("the new job done", 60, || queue_empty(&pool));
    assert_eq!(runs(&dir2).len(), 1);
}

#[test]
fn hosts_without_the_pools_credentials_cannot_advertise() {
    // host 2 joins the pool; 3 has no credentials, 4 a token signed with a
    // key of its own, 5 a client certificate from another CA (all three
    // trust the pool's CA)
    let pool = MultiPool::new("creds", &[&[CM], &[EXEC], &[EXEC], &[EXEC], &[EXEC]], &[]);
    pool.join_all(&[3, 4, 5]);
    pool.configure_host(3, Credentials::Nothing);
    pool.configure_host(4, Credentials::ForgedKey);
    pool.configure_host(5, Credentials::OtherCa);
    // the refused hosts come up while the central manager is down: each
    // finds no collector, then a collector that refuses it, and says so
    pool.hosts.crash(1);
    for i in [3, 4, 5] {
        pool.start_host(i);
    }
    for i in [3, 4, 5] {
        pool.wait_for("the startd finding no collector", 30, || {
            pool.log(i, "StartLog").contains("cannot advertise")
        });
    }
    pool.start_host(1);
    let good = pool.hosts.name(2);
    pool.wait_for("the joined host's slots", 60, || {
        pool.slots()
            .iter()
            .filter(|n| n.ends_with(&format!("@{good}")))
            .count()
            == 2
    });
    let cm = pool.central_manager();
    // what the collector logs (with the peer's address), and what the
    // refused host's startd logs
    let expected = [
        (3, "not allowed", "unauthenticated"),
        (
            4,
            "token signature does not verify",
            "token signature does not verify",
        ),
        // the collector's TLS refuses the host's client certificate
        (
            5,
            "refused the client's certificate",
            "refused our certificate",
        ),
    ];
    for (i, collector_says, host_says) in expected {
        let peer = format!("peer={}:", pool.hosts.addr(i));
        pool.wait_for("the collector's refusal", 30, || {
            pool.log(cm, "Collector")
                .lines()
                .any(|l| l.contains(&peer) && l.contains(collector_says))
        });
        pool.wait_for("the refused host's log line", 30, || {
            pool.log(i, "StartLog")
                .lines()
                .any(|l| l.contains("cannot advertise") && l.contains(host_says))
        });
    }
    let names = pool.slots();
    for i in [3, 4, 5] {
        let n = pool.hosts.name(i);
        assert!(
            names.iter().all(|s| !s.ends_with(&format!("@{n}"))),
            "host {n} advertised: {names:?}"
        );
    }
}

#[test]
fn a_revoked_host_is_refused_and_its_slots_leave_the_pool() {
    let pool = MultiPool::start("revoke", &[&[CM], &[EXEC], &[EXEC]], &[]);
    let cm = pool.central_manager();
    let gone = pool.hosts.name(3);
    let out = pool.ok(cm, &["token", "revoke", &gone]);
    assert!(out.contains(&gone), "{out}");
    let peer = format!("peer={}:", pool.hosts.addr(3));
    pool.wait_for("the collector's refusal", 30, || {
        pool.log(cm, "Collector")
            .lines()
            .any(|l| l.contains(&peer) && l.contains("revoked"))
    });
    pool.wait_for("the revoked host's log line", 30, || {
        pool.log(3, "StartLog")
            .lines()
            .any(|l| l.contains("cannot advertise") && l.contains("revoked"))
    });
    pool.wait_for("its slots gone, the other host's kept", 30, || {
        let s = pool.slots();
        s.len() == 2 && s.iter().all(|n| !n.ends_with(&format!("@{gone}")))
    });
}

#[test]
fn only_the_owner_on_the_submit_host_removes_a_job_running_on_an_execute_host() {
    let pool = MultiPool::start("owner", FOUR, &[]);
    let (dir, cluster, host, _) = one_running_job(&pool, "owner", "60", 300);
    let submit = pool.host_with(SUBMIT);
    // another account of the submit host is refused, and the job runs on
    if let Some(other) = common::test_user("skuatest2") {
        let out = pool.skua_account(submit, Some(&other), &pool.base, &["rm", &cluster]);
        assert!(
            !out.status.success()
                && String::from_utf8_lossy(&out.stderr).contains("permission_denied"),
            "another user removed the job: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(job_processes_on(&pool, host, 0).len(), 1);
        assert!(!queue_empty(&pool));
    }
    // its owner removes it: the job stops on its execute host
    let out = pool.skua_user(submit, &dir, &["rm", &cluster]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pool.wait_for("the job stopped on its execute host", 30, || {
        job_processes_on(&pool, host, 0).is_empty()
    });
    pool.wait_for("the job gone from the queue", 30, || queue_empty(&pool));
    assert_eq!(events(&dir, "009", &cluster, 0), 1, "{}", event_log(&dir));
    assert_eq!(runs(&dir).len(), 1);
}
