//! Joining a pool with the real binaries on loopback: a central manager
//! started with `--role central-manager` (TLS with its own CA, as on a
//! network), hosts joining it with `skua pool join`, the credential
//! registry, revocation.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;

/// A free TCP port on loopback for the collector (the well-known 9618 may
/// be taken by another test or pool on this machine).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

struct CentralManager {
    pool: Pool,
    /// `127.0.0.1:PORT`.
    addr: String,
    token: String,
    ca_hash: String,
}

fn central_manager(name: &str) -> CentralManager {
    let mut pool = Pool::new(name, &fast());
    let port = free_port().to_string();
    let dir = pool.dir.display().to_string();
    let out = pool.ok(&[
        "pool",
        "start",
        "--role",
        "central-manager",
        "--dir",
        &dir,
        "--address",
        "127.0.0.1",
        "--collector-port",
        &port,
    ]);
    pool.master_pid = out
        .split("master pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.trim().parse().ok());
    let join = out
        .lines()
        .find(|l| l.starts_with("skua pool join "))
        .unwrap_or_else(|| panic!("no join command in {out}"));
    let words: Vec<&str> = join.split_whitespace().collect();
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag).expect(flag);
        words[i + 1].to_string()
    };
    assert_eq!(words[3], format!("127.0.0.1:{port}"), "{join}");
    // the pool's secrets are private
    for key in [
        "passwords.d/pool_ca.key",
        "passwords.d/host.key",
        "passwords.d/POOL",
    ] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(pool.dir.join(key))
            .expect(key)
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{key}");
    }
    CentralManager {
        addr: words[3].to_string(),
        token: after("--token"),
        ca_hash: after("--ca-hash"),
        pool,
    }
}

/// `skua pool join` for a host whose pool directory is `host`'s.
fn join(host: &Pool, cm: &str, token: &str, ca_hash: Option<&str>) -> std::process::Output {
    let dir = host.dir.display().to_string();
    let mut args = vec!["pool", "join", cm, "--token", token, "--dir", &dir];
    if let Some(h) = ca_hash {
        args.extend(["--ca-hash", h]);
    }
    args.extend(["--role", "execute,submit"]);
    host.skua(&args)
}

fn collector_log(cm: &Pool) -> String {
    let mut s = String::new();
    if let Ok(entries) = std::fs::read_dir(cm.dir.join("log")) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("CollectorLog") {
                s.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
    }
    s
}

fn machine_names(cm: &Pool) -> String {
    String::from_utf8_lossy(&cm.skua(&["status", "-af", "Name"]).stdout).into_owned()
}

fn wait_dir_configured(dir: &Path) -> bool {
    dir.join("skua_config").exists()
}

#[test]
fn a_host_joins_once_advertises_and_is_shut_out_when_revoked() {
    let cm = central_manager("join-cm");
    let mut host = Pool::new("join-exec", &fast());

    // no --ca-hash: refused, nothing written
    let out = join(&host, &cm.addr, &cm.token, None);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--ca-hash is required"),
        "{}",
        text(&out)
    );
    // a wrong hash: refused before the request (and its token) is sent
    let wrong = format!("sha256:{}", "0".repeat(64));
    let out = join(&host, &cm.addr, &cm.token, Some(&wrong));
    assert!(!out.status.success());
    let said = text(&out);
    assert!(said.contains("does not match the pinned hash"), "{said}");
    assert!(said.contains(&cm.ca_hash), "{said}");
    assert!(!wait_dir_configured(&host.dir));
    let log = collector_log(&cm.pool);
    assert!(
        !log.contains("join refused") && !log.contains("joined"),
        "{log}"
    );

    // the right hash: joined, configured, running
    let out = join(&host, &cm.addr, &cm.token, Some(&cm.ca_hash));
    assert!(out.status.success(), "{}\n{}", text(&out), cm.pool.logs());
    let said = text(&out);
    assert!(said.contains("joined the pool"), "{said}");
    host.master_pid = said
        .split("master pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.trim().parse().ok());
    let config = std::fs::read_to_string(host.config()).expect("the joined host's configuration");
    assert!(
        config.contains("use ROLE : Submit\nuse ROLE : Execute\n"),
        "{config}"
    );
    assert!(config.contains(&format!(
        "COLLECTOR_HOST = $(CONDOR_HOST):{}",
        &cm.addr[10..]
    )));
    assert!(!config.contains("TRUST_DOMAIN_CAKEY"));
    assert!(
        !host.dir.join("passwords.d/POOL").exists(),
        "a joined host gets no pool key"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(host.dir.join("passwords.d/host.key"))
            .expect("host key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // joining again in the same directory changes nothing
    let out = join(&host, &cm.addr, &cm.token, Some(&cm.ca_hash));
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("exists already"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(host.config()).expect("config"),
        config
    );

    // the token worked once: another host cannot use it
    let other = Pool::new("join-other", &fast());
    let out = join(&other, &cm.addr, &cm.token, Some(&cm.ca_hash));
    assert!(!out.status.success());
    assert!(text(&out).contains("already used"), "{}", text(&out));
    assert!(!wait_dir_configured(&other.dir));

    // an expired join token is refused
    let short = cm
        .pool
        .ok(&["token", "create", "--join", "--lifetime", "1"])
        .trim()
        .to_string();
    std::thread::sleep(Duration::from_millis(2100));
    let out = join(&other, &cm.addr, &short, Some(&cm.ca_hash));
    assert!(!out.status.success());
    assert!(text(&out).contains("expired"), "{}", text(&out));
    // the collector's log is written beside its reply: wait for the line
    wait_for(
        "the expired token's refusal in the log",
        Duration::from_secs(30),
        || collector_log(&cm.pool).contains("join refused: join token: token has expired"),
    );
    let log = collector_log(&cm.pool);
    assert!(
        log.contains("peer=\"127.0.0.1:"),
        "refusals name the peer: {log}"
    );

    // a second machine calling itself by the joined host's name is refused
    // while that host's credential is valid (the pools here share this
    // machine's host name); its token stays unused
    let fresh = cm
        .pool
        .ok(&["token", "create", "--join"])
        .trim()
        .to_string();
    let out = join(&other, &cm.addr, &fresh, Some(&cm.ca_hash));
    assert!(!out.status.success());
    assert!(text(&out).contains("revoke it first"), "{}", text(&out));
    assert!(!wait_dir_configured(&other.dir));

    // the joined host's daemons advertise to the central manager's collector
    wait_for("the joined host's slots", Duration::from_secs(30), || {
        machine_names(&cm.pool).contains("slot1@")
    });
    wait_for("the joined host's schedd", Duration::from_secs(30), || {
        let out = cm.pool.skua(&["status", "-schedd", "-af", "Name"]);
        !String::from_utf8_lossy(&out.stdout).trim().is_empty()
    });

    // the registry shows the host
    let list = cm.pool.ok(&["token", "list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with("ID"), "{list}");
    assert!(lines[1].contains("submit,execute"), "{list}");
    assert!(lines[1].ends_with("valid"), "{list}");
    let json = cm.pool.ok(&["token", "list", "-json"]);
    let records: serde_json::Value = serde_json::from_str(&json).expect("json");
    let id = records[0]["id"].as_str().expect("an id").to_string();
    let host_name = records[0]["host"].as_str().expect("a host").to_string();
    assert!(records[0]["revoked"].is_null());

    // revoked by host name: its updates are refused and its ads expire
    let out = cm.pool.ok(&["token", "revoke", &host_name]);
    assert!(out.contains(&format!("revoked credential {id}")), "{out}");
    let list = cm.pool.ok(&["token", "list"]);
    assert!(
        list.lines().nth(1).is_some_and(|l| l.contains("revoked")),
        "{list}"
    );
    wait_for(
        "the revoked host's updates refused",
        Duration::from_secs(30),
        || collector_log(&cm.pool).contains(&format!("credential {id}) has been revoked")),
    );
    wait_for(
        "the revoked host's ads to expire",
        Duration::from_secs(30),
        || !machine_names(&cm.pool).contains("slot1@"),
    );
    // a revocation is permanent: asking again revokes nothing new
    let out = cm.pool.ok(&["token", "revoke", &id]);
    assert!(out.contains("already revoked"), "{out}");
    // once revoked, the name may join again (a new credential) with the
    // token that was refused before
    let out = join(&other, &cm.addr, &fresh, Some(&cm.ca_hash));
    assert!(out.status.success(), "{}", text(&out));
    let list = cm.pool.ok(&["token", "list"]);
    assert_eq!(list.lines().count(), 3, "{list}");
    assert!(
        list.lines().nth(2).is_some_and(|l| l.ends_with("valid")),
        "{list}"
    );
    drop(host);
}
