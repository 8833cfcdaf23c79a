//! MPI across hosts (issue 17 item 3): `skua openmpi`, the wrapper every
//! node of a parallel job runs, and its launcher agent for Open MPI's
//! `mpirun`, with the allreduce program of `tests/data/mpi_allreduce.c`
//! (built here with `mpicc`).
//!
//! The nodes run on separate test hosts (network namespaces, `common::netns`)
//! as the submitting account (never root), with the node environment the
//! starter gives a parallel job's node (`_CONDOR_PROCNO`, `_CONDOR_NPROCS`,
//! `_CONDOR_REMOTE_SPOOL_DIR`, `_CONDOR_JOB_AD`). The orted commands travel
//! through a spool directory every host reaches (`SKUA_OPENMPI_SPOOL=local`:
//! the test hosts share the file system); through a running job they go by
//! chirp (the second test). The ranks talk over the hosts' network (loopback excluded).
//!
//! These tests need root (network namespaces), Open MPI and `mpicc` (`.ci/run`
//! installs Debian's openmpi-bin and libopenmpi-dev); they fail, not skip,
//! without them.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::netns::Hosts;

/// Builds the allreduce program into `dir`.
fn build_allreduce(dir: &Path) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mpi_allreduce.c");
    let exe = dir.join("allreduce");
    let out = Command::new("mpicc")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("run mpicc (Open MPI's libopenmpi-dev)");
    assert!(
        out.status.success(),
        "mpicc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs a parallel job's nodes, node `k` on host `placement[k]`, each with
/// `cpus` slots, as the submitting account; gives the program's output file.
fn run_job(hosts: &Hosts, dir: &Path, exe: &Path, placement: &[usize], cpus: u32) -> String {
    let job = dir.join(format!("job{}x{cpus}", placement.len()));
    let spool = job.join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    let ad = job.join("job.ad");
    std::fs::write(&ad, format!("JobUniverse = 11\nRequestCpus = {cpus}\n")).unwrap();
    let out_file = job.join("allreduce.out");
    let skua = Path::new(env!("CARGO_BIN_EXE_skua"));
    let user = common::submitter();
    let mut node_dirs = Vec::new();
    for (k, _) in placement.iter().enumerate() {
        let d = job.join(format!("node{k}"));
        std::fs::create_dir_all(&d).unwrap();
        node_dirs.push(d);
    }
    if let Some(u) = &user {
        for entry in walk(&job) {
            std::os::unix::fs::chown(&entry, Some(u.uid), Some(u.gid)).unwrap();
        }
    }
    let node_cmd = |k: usize| -> Command {
        let script = format!(
            "{} openmpi {} {} >out 2>&1; echo $? >rc",
            skua.display(),
            exe.display(),
            out_file.display()
        );
        let mut c = match &user {
            Some(u) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={}", u.uid))
                    .arg(format!("--regid={}", u.gid))
                    .arg("--clear-groups")
                    .args(["sh", "-c", &script]);
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.args(["-c", &script]);
                c
            }
        };
        c.current_dir(&node_dirs[k])
            .env("_CONDOR_PROCNO", k.to_string())
            .env("_CONDOR_NPROCS", placement.len().to_string())
            .env("_CONDOR_REMOTE_SPOOL_DIR", &spool)
            .env("_CONDOR_JOB_AD", &ad)
            .env("SKUA_OPENMPI_SPOOL", "local")
            .env("HOME", &node_dirs[k])
            .env("TMPDIR", &node_dirs[k]);
        c
    };
    // The other nodes first, then node 0 (mpirun), as the schedd may start
    // them in any order.
    for (k, host) in placement.iter().enumerate().skip(1) {
        hosts.spawn(*host, node_cmd(k), &job.join(format!("node{k}.log")));
    }
    hosts.spawn(placement[0], node_cmd(0), &job.join("node0.log"));
    let rc = |k: usize| std::fs::read_to_string(node_dirs[k].join("rc")).ok();
    common::wait_for(
        "every node's wrapper to end",
        Duration::from_secs(300),
        || (0..placement.len()).all(|k| rc(k).is_some()),
    );
    for (k, d) in node_dirs.iter().enumerate() {
        assert_eq!(
            rc(k).unwrap().trim(),
            "0",
            "node {k} failed: {}",
            std::fs::read_to_string(d.join("out")).unwrap_or_default()
        );
    }
    // Nothing is left in the spool but node 0's end marker.
    let left: Vec<_> = std::fs::read_dir(&spool)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["mpirun_done".to_string()]);
    std::fs::read_to_string(&out_file).expect("rank 0's output file")
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(walk(&p));
        } else {
            all.push(p);
        }
    }
    all
}

/// What rank 0 writes for `ranks` ranks, rank `r` on `host(r)`.
fn expected(ranks: u64, host: impl Fn(u64) -> String) -> String {
    let sum: u64 = (0..ranks).map(|r| r + 1).sum();
    let squares: u64 = (0..ranks).map(|r| r * r).sum();
    let mut s = format!("ranks {ranks}\nsum {sum}\nsquares {squares}\n");
    for r in 0..ranks {
        s.push_str(&format!("host {r} {}\n", host(r)));
    }
    s
}

#[test]
fn allreduce_across_three_hosts_with_four_and_six_ranks() {
    let dir = common::scratch("mpi");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = build_allreduce(&dir);
    let hosts = Hosts::up(3);

    // Four nodes of one CPU: hosts 1, 2, 3, 1; rank r on node r.
    let placement = [1, 2, 3, 1];
    let got = run_job(&hosts, &dir, &exe, &placement, 1);
    assert_eq!(
        got,
        expected(4, |r| hosts.name(placement[r as usize])),
        "4 ranks"
    );

    // Three nodes of two CPUs (RequestCpus = 2): two ranks on each host.
    let placement = [3, 1, 2];
    let got = run_job(&hosts, &dir, &exe, &placement, 2);
    assert_eq!(
        got,
        expected(6, |r| hosts.name(placement[(r / 2) as usize])),
        "6 ranks"
    );
}

/// The agent's and a node's side through a real job's chirp proxy: the
/// agent puts node 1's command into the spool directory on the submit
/// side, the node finds it there, removes it and runs it; a node never
/// handed a command ends once node 0's end marker is there.
const CHIRP_NODE_JOB: &str = r#"#!/bin/sh
S="$_CONDOR_REMOTE_SPOOL_DIR"
$SKUA_BIN openmpi agent 1 touch --daemonize orted-ran || { echo agent-failed; exit 3; }
$SKUA_BIN chirp stat "$S/orted_cmd.1" >/dev/null && echo agent-put
_CONDOR_PROCNO=1 _CONDOR_NPROCS=3 $SKUA_BIN openmpi ./not-run-on-node-1 || { echo node1-failed; exit 4; }
test -e orted-ran && echo node1-ran-the-command
$SKUA_BIN chirp stat "$S/orted_cmd.1" >/dev/null 2>&1 || echo node1-removed-it
echo done | $SKUA_BIN chirp put - "$S/mpirun_done"
_CONDOR_PROCNO=2 _CONDOR_NPROCS=3 $SKUA_BIN openmpi ./not-run-on-node-2 && echo node2-ended
"#;

#[test]
fn the_agent_and_a_node_meet_through_a_jobs_chirp_proxy() {
    let pool = common::job_pool("mpichirp", "1", &[]);
    let work = pool.home.join("work");
    common::user_dir(&work);
    let spool = work.join("spool");
    common::user_dir(&spool);
    let exe = work.join("node.sh");
    std::fs::write(&exe, CHIRP_NODE_JOB).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(u) = common::submitter() {
        std::os::unix::fs::chown(&exe, Some(u.uid), Some(u.gid)).unwrap();
    }
    pool.submit_job(
        &work,
        &format!(
            "executable = node.sh\n\
             want_io_proxy = true\n\
             environment = \"SKUA_BIN={} _CONDOR_REMOTE_SPOOL_DIR={}\"\n\
             should_transfer_files = YES\n\
             when_to_transfer_output = ON_EXIT\n\
             output = out.txt\n\
             error = err.txt\n\
             queue\n",
            common::SKUA,
            spool.display()
        ),
    );
    common::wait_for("the job to complete", Duration::from_secs(120), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .stdout
            .is_empty()
    });
    let out = std::fs::read_to_string(work.join("out.txt")).unwrap_or_default();
    let err = std::fs::read_to_string(work.join("err.txt")).unwrap_or_default();
    assert_eq!(
        out,
        "agent-put\nnode1-ran-the-command\nnode1-removed-it\nnode2-ended\n",
        "err: {err}\n{}",
        pool.logs()
    );
    let left: Vec<_> = std::fs::read_dir(&spool)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["mpirun_done".to_string()]);
}
