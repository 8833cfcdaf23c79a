//! One inbound TCP port per host: a pool whose master runs the shared port
//! (`USE_SHARED_PORT = true`), every daemon reached through it, on
//! loopback; and a host serving the network (TLS, port 9618) in a network
//! namespace, reached from another (needs root, as CI runs).

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

/// Two hosts in network namespaces (`../shared/netns/hosts.sh`, prefix
/// `tsp`, subnet 10.77.213.0/24), removed with everything running in them
/// when dropped.
struct Hosts {
    script: std::path::PathBuf,
}

const PREFIX: &str = "tsp";
const NET: &str = "10.77.213";

impl Hosts {
    fn up(n: usize) -> Hosts {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/netns/hosts.sh");
        let hosts = Hosts { script };
        let out = hosts.command(&["up", &n.to_string()]).output().unwrap();
        // CI runs as root: namespaces that cannot be made are a failure
        assert!(
            out.status.success(),
            "cannot create the test hosts (root needed): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        hosts
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new("bash");
        c.arg(&self.script)
            .args(args)
            .env("HOSTS_PREFIX", PREFIX)
            .env("HOSTS_NET", NET);
        c
    }

    /// Runs `args` on host `i` with `env`; its output.
    fn run(&self, i: usize, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
        let mut full = vec!["run".to_string(), i.to_string(), "env".to_string()];
        full.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        full.extend(args.iter().map(|a| a.to_string()));
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        self.command(&full).output().unwrap()
    }

    fn ok(&self, i: usize, env: &[(&str, &str)], args: &[&str]) -> String {
        let out = self.run(i, env, args);
        assert!(
            out.status.success(),
            "{args:?} on host {i} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = self.command(&["down"]).output();
    }
}

#[test]
fn a_host_serving_the_network_opens_one_port_and_other_hosts_reach_every_daemon_through_it() {
    use common::{scratch, submitter, SKUA};
    let hosts = Hosts::up(2);
    let cm = format!("{NET}.11");
    let base = scratch("netshared");
    std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = base.join("pool");
    let dir_s = dir.display().to_string();
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let home_s = home.display().to_string();
    let config = format!("{dir_s}/skua_config");
    // a host certificate naming the host's address; clients trust it
    let ck = skua_net::tls::self_signed(&[cm.as_str()]).unwrap();
    let cert = base.join("cert.pem");
    let key = base.join("key.pem");
    std::fs::write(&cert, &ck.cert_pem).unwrap();
    std::fs::write(&key, &ck.key_pem).unwrap();
    let env1: Vec<(&str, &str)> = vec![
        ("HOME", home_s.as_str()),
        ("SKUA_CONFIG", config.as_str()),
        ("_CONDOR_UPDATE_INTERVAL", "1"),
        ("_CONDOR_NEGOTIATOR_INTERVAL", "1"),
        ("_CONDOR_NEGOTIATOR_CYCLE_DELAY", "0"),
        ("_CONDOR_NUM_CPUS", "1"),
    ];
    // the personal pool's configuration, then what makes it serve the network
    hosts.ok(1, &env1, &[SKUA, "pool", "start", "--dir", &dir_s]);
    hosts.ok(1, &env1, &[SKUA, "pool", "stop", "--dir", &dir_s]);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "NETWORK_INTERFACE = {NET}.*\nBIND_ALL_INTERFACES = True\nCONDOR_HOST = {cm}\n\
         COLLECTOR_HOST = $(CONDOR_HOST):9618\n\
         AUTH_SSL_SERVER_CERTFILE = {}\nAUTH_SSL_SERVER_KEYFILE = {}\n\
         AUTH_SSL_CLIENT_CAFILE = {}\n",
        cert.display(),
        key.display(),
        cert.display()
    ));
    std::fs::write(&config, text).unwrap();
    let stop = || {
        let _ = hosts.run(1, &env1, &[SKUA, "pool", "stop", "--dir", &dir_s]);
    };
    struct Stop<F: Fn()>(F);
    impl<F: Fn()> Drop for Stop<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let _stop = Stop(stop);
    hosts.ok(1, &env1, &[SKUA, "pool", "start", "--dir", &dir_s]);

    // another host: a client configuration with the central manager's
    // address, the CA, and a user's token
    let h2 = base.join("h2");
    std::fs::create_dir_all(h2.join("tokens.d")).unwrap();
    let token = hosts.ok(
        1,
        &env1,
        &[SKUA, "token", "create", "--identity", "alice@test"],
    );
    std::fs::write(h2.join("tokens.d/alice"), token.trim()).unwrap();
    let config2 = h2.join("skua_config");
    std::fs::write(
        &config2,
        format!(
            "LOCAL_DIR = {0}\nLOCK = $(LOCAL_DIR)/lock\nCOLLECTOR_HOST = {cm}\n\
             SCHEDD_HOST = {cm}:9618?sock=schedd\nAUTH_SSL_CLIENT_CAFILE = {1}\n\
             SEC_TOKEN_DIRECTORY = {0}/tokens.d\n",
            h2.display(),
            cert.display()
        ),
    )
    .unwrap();
    let h2_s = h2.display().to_string();
    let config2_s = config2.display().to_string();
    let env2 = [("HOME", h2_s.as_str()), ("SKUA_CONFIG", config2_s.as_str())];

    // every daemon's ad, read from the other host through port 9618 (TLS,
    // no preamble: the collector), names that one port and its own id
    let want: BTreeSet<&str> = [
        "DaemonMaster",
        "Collector",
        "Negotiator",
        "Scheduler",
        "Machine",
    ]
    .into_iter()
    .collect();
    let mut last = String::new();
    wait_for(
        "every daemon's ad from the other host",
        Duration::from_secs(60),
        || {
            let out = hosts.run(
                2,
                &env2,
                &[SKUA, "status", "-any", "-af", "MyType", "MyAddress"],
            );
            last = String::from_utf8_lossy(&out.stdout).into_owned();
            let have: BTreeSet<&str> = last.lines().filter_map(|l| l.split(' ').next()).collect();
            want.is_subset(&have)
        },
    );
    for line in last.lines() {
        let (_, address) = line.split_once(' ').unwrap();
        let sinful = skua_daemon::address::Sinful::parse(address).unwrap();
        assert_eq!(sinful.addr, format!("{cm}:9618").parse().unwrap(), "{line}");
        assert!(sinful.sock.is_some(), "{line}");
        assert_eq!(
            sinful.alias.as_deref(),
            Some(format!("{PREFIX}1").as_str()),
            "{line}"
        );
    }
    // the host listens on one TCP port
    let listening = hosts.ok(1, &[], &["ss", "-Hltn"]);
    let ports: Vec<&str> = listening
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    assert_eq!(ports, ["0.0.0.0:9618"], "{listening}");
    // the schedd, by its id, from the other host
    let q = hosts.ok(2, &env2, &[SKUA, "q", "-allusers"]);
    assert!(q.contains(&format!("<{cm}:9618?sock=schedd>")), "{q}");

    // a job runs: every call between the daemons goes through the port,
    // with TLS done by each daemon
    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("in.txt"), "through one port, with TLS\n").unwrap();
    std::fs::write(
        work.join("job.sub"),
        "executable = /bin/cat\narguments = in.txt\ntransfer_input_files = in.txt\n\
         should_transfer_files = YES\noutput = out.txt\nqueue\n",
    )
    .unwrap();
    let user = submitter().expect("the tests run as root");
    std::os::unix::fs::chown(&work, Some(user.uid), Some(user.gid)).unwrap();
    let work_s = work.display().to_string();
    let submit = format!("cd {work_s} && {SKUA} submit job.sub");
    hosts.ok(
        1,
        &env1,
        &[
            "setpriv",
            &format!("--reuid={}", user.uid),
            &format!("--regid={}", user.gid),
            "--clear-groups",
            "sh",
            "-c",
            &submit,
        ],
    );
    wait_for("the job's output", Duration::from_secs(60), || {
        std::fs::read_to_string(work.join("out.txt")).is_ok_and(|t| !t.is_empty())
    });
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "through one port, with TLS\n"
    );
    drop(_stop);
    drop(hosts);
    let _ = std::fs::remove_dir_all(&base);
}
