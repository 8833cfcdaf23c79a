//! One inbound TCP port per host: a pool whose master runs the shared port
//! (`USE_SHARED_PORT = true`), every daemon reached through it, on
//! loopback.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::time::Duration;

use common::{job_pool, wait_for};

#[test]
fn every_daemon_of_the_pool_is_reached_through_one_port() {
    let pool = job_pool(
        "sharedport",
        "2",
        &[
            ("_CONDOR_USE_SHARED_PORT", "true"),
            ("_CONDOR_SHARED_PORT_PORT", "0"),
        ],
    );
    let want: BTreeSet<&str> = [
        "DaemonMaster",
        "Collector",
        "Negotiator",
        "Scheduler",
        "Machine",
    ]
    .into_iter()
    .collect();
    wait_for("every daemon's ad", Duration::from_secs(30), || {
        let out = pool.ok(&["status", "-any", "-af", "MyType"]);
        let have: BTreeSet<&str> = out.lines().map(str::trim).collect();
        want.is_subset(&have)
    });
    // every ad's MyAddress is the one shared port, with the daemon's id
    let out = pool.ok(&["status", "-any", "-af", "MyType", "MyAddress"]);
    let mut ports = BTreeSet::new();
    for line in out.lines() {
        let (my_type, address) = line.split_once(' ').unwrap();
        let sinful = skua_daemon::address::Sinful::parse(address).unwrap();
        let id = match my_type {
            "DaemonMaster" => "master",
            "Collector" => "collector",
            "Negotiator" => "negotiator",
            "Scheduler" | "Submitter" => "schedd",
            "Machine" => "startd",
            other => panic!("unexpected ad {other}"),
        };
        assert_eq!(sinful.sock.as_deref(), Some(id), "{line}");
        assert!(sinful.alias.is_some(), "{line}");
        ports.insert(sinful.addr);
    }
    assert_eq!(ports.len(), 1, "one port for every daemon: {out}");
    let shared = *ports.iter().next().unwrap();
    assert!(
        pool.logs()
            .contains(&format!("shared port listening on {shared}")),
        "{}",
        pool.logs()
    );

    // a job flows through it: negotiator -> startd and schedd, schedd ->
    // startd, starter -> schedd
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("in.txt"), "through one port\n").unwrap();
    pool.submit_job(
        &work,
        "executable = /bin/cat\n\
         arguments = in.txt\n\
         transfer_input_files = in.txt\n\
         should_transfer_files = YES\n\
         output = out.txt\n\
         queue\n",
    );
    wait_for("the job to finish", Duration::from_secs(60), || {
        std::fs::read_to_string(work.join("out.txt")).is_ok_and(|t| !t.is_empty())
            && pool
                .skua(&["q", "-allusers", "-af", "ClusterId"])
                .stdout
                .is_empty()
    });
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "through one port\n"
    );

    // a user with a token reaches the collector over the network, through
    // the shared port
    let token = pool.user_token("alice");
    let out = pool.skua_as(&token, &["status", "-any", "-af", "MyType"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Scheduler"));

    // something that is neither a preamble nor TLS is closed unanswered,
    // and the port keeps serving
    let mut s = std::net::TcpStream::connect(shared).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    assert!(reply.is_empty(), "{}", String::from_utf8_lossy(&reply));
    wait_for("the refusal to be logged", Duration::from_secs(10), || {
        pool.logs()
            .contains("shared port: connection refused: neither a shared-port preamble")
    });
    pool.ok(&["status", "-any", "-af", "MyType"]);
}
