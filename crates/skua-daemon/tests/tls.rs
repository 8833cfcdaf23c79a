//! The daemons' TLS knobs: a daemon with a server certificate listens with
//! TLS (loopback too) and knows the hosts of the pool by their
//! certificates; a joined host (no pool signing key) speaks with its host
//! certificate and is `condor@HOST` to the others.

#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use skua_config::{Config, LoadOptions, MemoryFiles};
use skua_daemon::{DaemonContext, ManualClock};
use skua_net::pki::PoolCa;
use skua_net::{AuthLevel, AuthMethod, ErrorCode, NetError, Routes, Server};

const DAY: u64 = 24 * 3600;
const T: Duration = Duration::from_secs(5);

fn config(text: &str, subsystem: &str) -> Config {
    let files = MemoryFiles::new().with("/test/skua_config", text);
    let opts = LoadOptions::new()
        .main_file("/test/skua_config")
        .subsystem(subsystem);
    Config::load(&files, &opts).unwrap()
}

fn base(dir: &Path, name: &str) -> String {
    format!(
        "LOG = {d}/{name}/log\nLOCK = {d}/{name}/lock\nUID_DOMAIN = test.domain\n\
         SEC_TOKEN_POOL_SIGNING_KEY_FILE = {d}/{name}/key\n",
        d = dir.display()
    )
}

/// Writes a host certificate for `host` (with 127.0.0.1) and its key under
/// `dir`; returns the certificate's credential id and the knobs naming
/// them (as server and as client certificate).
fn host_files(ca: &PoolCa, dir: &Path, host: &str) -> (String, String) {
    let issued = ca
        .issue_host(host, &[IpAddr::V4(Ipv4Addr::LOCALHOST)], None, DAY)
        .unwrap();
    let cert = dir.join(format!("{host}.crt"));
    let key = dir.join(format!("{host}.key"));
    std::fs::write(&cert, &issued.cert_pem).unwrap();
    std::fs::write(&key, issued.key_pem.unwrap()).unwrap();
    let knobs = format!(
        "AUTH_SSL_SERVER_CERTFILE = {c}\nAUTH_SSL_SERVER_KEYFILE = {k}\n\
         AUTH_SSL_CLIENT_CERTFILE = {c}\nAUTH_SSL_CLIENT_KEYFILE = {k}\n",
        c = cert.display(),
        k = key.display()
    );
    (issued.id, knobs)
}

#[tokio::test]
async fn a_joined_host_speaks_with_its_certificate_and_can_be_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let clock = ManualClock::frozen(1_000_000);
    let ca = PoolCa::generate("test pool").unwrap();
    let ca_file = d.join("ca.crt");
    std::fs::write(&ca_file, ca.cert_pem()).unwrap();
    let ca_knob = format!("AUTH_SSL_CLIENT_CAFILE = {}\n", ca_file.display());

    // the central manager's collector: a server certificate, the pool key
    let cm_knobs = format!(
        "{}{ca_knob}AUTH_SSL_SERVER_CERTFILE = {c}\nAUTH_SSL_SERVER_KEYFILE = {k}\n",
        base(d, "cm"),
        c = d.join("cm.crt").display(),
        k = d.join("cm.key").display(),
    );
    let cm_cert = ca
        .issue_host("cm.example", &[IpAddr::V4(Ipv4Addr::LOCALHOST)], None, DAY)
        .unwrap();
    std::fs::write(d.join("cm.crt"), &cm_cert.cert_pem).unwrap();
    std::fs::write(d.join("cm.key"), cm_cert.key_pem.unwrap()).unwrap();
    let cm = DaemonContext::for_test(
        "collector",
        config(&cm_knobs, "COLLECTOR"),
        "tester",
        clock.clock(),
    )
    .unwrap();
    assert!(cm.signing_key.is_some());
    // TLS on loopback, because a certificate is configured
    let listener = cm.tcp_listener(0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    assert!(addr.ip().is_loopback());
    let server = Server::new(cm.server_config(), Routes::new())
        .unwrap()
        .spawn(vec![listener]);

    // an execute host that joined: its certificate, no pool key
    let (exec_id, exec_knobs) = host_files(&ca, d, "exec1.example");
    let exec = DaemonContext::for_test(
        "startd",
        config(
            &format!("{}{ca_knob}{exec_knobs}", base(d, "exec")),
            "STARTD",
        ),
        "tester",
        clock.clock(),
    )
    .unwrap();
    assert!(exec.signing_key.is_none() && exec.daemon_token.is_none());
    assert!(
        !d.join("exec/key").exists(),
        "a joined host makes no pool key"
    );
    let c = exec.client_at(&format!("<{addr}>"), T).unwrap();
    let me = c.hello().await.unwrap();
    assert_eq!(me.identity, "condor@exec1.example");
    assert_eq!(me.method, AuthMethod::Ssl);
    assert!(me.levels.contains(&AuthLevel::Daemon), "{:?}", me.levels);
    let dialed = exec
        .dialer()
        .unwrap()
        .client_at(&addr.to_string(), T)
        .unwrap();
    assert_eq!(dialed.hello().await.unwrap().method, AuthMethod::Ssl);

    // the central manager's own daemons still speak with their token
    let own = cm.client_at(&format!("<{addr}>"), T).unwrap();
    assert_eq!(own.hello().await.unwrap().method, AuthMethod::Token);

    // a plain-TCP client cannot talk to the TLS listener
    let plain = skua_daemon::context::client_at(&addr.to_string(), None, None, T).unwrap();
    assert!(plain.hello().await.is_err());

    // revoked: refused at once, with a clear error
    cm.revocations.insert(&exec_id);
    let e = c.hello().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::PermissionDenied, "{e}");
    assert!(e.to_string().contains("revoked"), "{e}");

    // a host with a certificate from another CA is refused at the handshake
    let other = PoolCa::generate("test pool").unwrap();
    let other_dir = d.join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let (_, intruder_knobs) = host_files(&other, &other_dir, "exec2.example");
    let intruder = DaemonContext::for_test(
        "startd",
        config(
            &format!("{}{ca_knob}{intruder_knobs}", base(d, "intruder")),
            "STARTD",
        ),
        "tester",
        clock.clock(),
    )
    .unwrap();
    let e = intruder
        .client_at(&format!("<{addr}>"), T)
        .unwrap()
        .hello()
        .await
        .unwrap_err();
    assert!(matches!(e, NetError::Tls { .. }), "{e:?}");
    server.shutdown().await;
}

#[test]
fn half_configured_certificates_are_configuration_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let clock = ManualClock::frozen(1_000_000);
    let text = format!(
        "{}AUTH_SSL_CLIENT_CERTFILE = {}/x.crt\n",
        base(d, "h"),
        d.display()
    );
    let e = DaemonContext::for_test("startd", config(&text, "STARTD"), "tester", clock.clock())
        .err()
        .unwrap();
    assert!(e.to_string().contains("AUTH_SSL_CLIENT_KEYFILE"), "{e}");
    let text = format!(
        "{}AUTH_SSL_SERVER_CERTFILE = {}/x.crt\n",
        base(d, "h"),
        d.display()
    );
    let ctx = DaemonContext::for_test("startd", config(&text, "STARTD"), "tester", clock.clock())
        .unwrap();
    let e = ctx.server_tls().err().unwrap();
    assert!(e.to_string().contains("AUTH_SSL_SERVER_KEYFILE"), "{e}");
    // a daemon must load its host certificate; a user's command goes
    // without one it cannot read
    let text = format!(
        "{}AUTH_SSL_CLIENT_CERTFILE = {d}/missing.crt\nAUTH_SSL_CLIENT_KEYFILE = {d}/missing.key\n",
        base(d, "h3"),
        d = d.display()
    );
    let e = DaemonContext::for_test("startd", config(&text, "STARTD"), "tester", clock.clock())
        .err()
        .unwrap();
    assert!(e.to_string().contains("host certificate"), "{e}");
    skua_daemon::context::Locator::new(&config(&text, "TOOL"), "SCHEDD").unwrap();
    // garbage in a certificate file is named
    std::fs::write(d.join("bad.crt"), "not a certificate").unwrap();
    let text = format!(
        "{}AUTH_SSL_SERVER_CERTFILE = {d}/bad.crt\nAUTH_SSL_SERVER_KEYFILE = {d}/bad.crt\n",
        base(d, "h2"),
        d = d.display()
    );
    let ctx = DaemonContext::for_test("startd", config(&text, "STARTD"), "tester", clock.clock())
        .unwrap();
    let e = ctx.server_tls().err().unwrap();
    assert!(e.to_string().contains("server certificate"), "{e}");
}
