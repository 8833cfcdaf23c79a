//! Cross-process tests: a personal pool started and driven as a user would,
//! through the real `skua` and `skuad` binaries, on loopback ports chosen by
//! the OS, in a temporary directory. Intervals are scaled down through
//! `_CONDOR_` environment overrides, not faked clocks. Every process started
//! is stopped by PID at the end.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

#[test]
fn personal_pool_comes_up_shows_its_daemons_and_stops() {
    let mut pool = Pool::new("updown", &fast());
    pool.start();
    assert!(
        pool.config().exists(),
        "skua pool start writes DIR/skua_config"
    );
    wait_for("the master's ad", Duration::from_secs(10), || {
        pool.types().contains("DaemonMaster")
    });
    let types = pool.types();
    assert!(types.contains("Collector"), "{types}");
    let list = pool.ok(&["status", "-master", "-af", "DaemonList"]);
    assert!(list.contains("COLLECTOR"), "{list}");
    let json = pool.ok(&["status", "-any", "-json"]);
    assert!(json.trim_start().starts_with('['), "{json}");
    // no machines yet: an empty slot table is not an error
    pool.ok(&["status"]);
    // a bad constraint is a clear error
    let bad = pool.skua(&["status", "-constraint", "Memory >"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("constraint"));

    let master = pool.master_pid.expect("master pid");
    let collector = pool.collector_pid().expect("collector pid");
    let dir = pool.dir.to_string_lossy().into_owned();
    pool.ok(&["pool", "stop", "--dir", &dir]);
    wait_for("the daemons to exit", Duration::from_secs(10), || {
        !alive(master) && !alive(collector)
    });
    assert!(!pool.dir.join("lock/master.sock").exists());
    assert!(!pool.dir.join("log/.collector_address").exists());
    // starting again keeps the (possibly edited) configuration
    std::fs::write(
        pool.config(),
        std::fs::read_to_string(pool.config()).unwrap() + "# edited\n",
    )
    .unwrap();
    pool.start();
    assert!(std::fs::read_to_string(pool.config())
        .unwrap()
        .contains("# edited"));
}

#[test]
fn killed_collector_is_restarted_and_repopulated() {
    let mut pool = Pool::new("restart", &fast());
    pool.start();
    wait_for("the master's ad", Duration::from_secs(10), || {
        pool.types().contains("DaemonMaster")
    });
    let first = pool.collector_pid().expect("collector pid");
    kill(first, "-KILL");
    // the master restarts it, and the master re-advertises within one
    // update interval (the new collector starts empty: soft state)
    wait_for("a new collector", Duration::from_secs(15), || {
        pool.collector_pid().is_some_and(|p| p != first)
    });
    assert!(pool.types().contains("DaemonMaster"));
    // skua off / on through the master
    let off = pool.ok(&["off", "collector"]);
    assert!(off.to_lowercase().contains("collector"), "{off}");
    wait_for("the collector to stop", Duration::from_secs(10), || {
        !pool.skua(&["status", "-any"]).status.success()
    });
    pool.ok(&["on", "collector"]);
    wait_for("the collector back", Duration::from_secs(10), || {
        pool.types().contains("DaemonMaster")
    });
}

#[test]
fn ads_expire_when_their_daemon_is_killed() {
    let mut pool = Pool::new("expire", &fast());
    pool.start();
    wait_for("the master's ad", Duration::from_secs(10), || {
        pool.types().contains("DaemonMaster")
    });
    let collector = pool.collector_pid().expect("collector pid");
    kill(pool.master_pid.expect("master pid"), "-KILL");
    // the orphaned collector keeps running; the master's ad is not refreshed
    // and expires after CLASSAD_LIFETIME (3 s)
    wait_for("the master's ad to expire", Duration::from_secs(10), || {
        let t = pool.types();
        t.contains("Collector") && !t.contains("DaemonMaster")
    });
    kill(collector, "-TERM");
    wait_for("the collector to exit", Duration::from_secs(10), || {
        !alive(collector)
    });
}

#[test]
fn requests_need_a_valid_token_over_tcp() {
    let mut pool = Pool::new("tokens", &fast());
    pool.start();
    wait_for("the collector", Duration::from_secs(10), || {
        pool.types().contains("Collector")
    });
    let addr: std::net::SocketAddr =
        std::fs::read_to_string(pool.dir.join("log/.collector_address"))
            .expect("address file")
            .trim()
            .parse()
            .expect("address");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let query = skua_proto::Query {
        ad_type: "Any".into(),
        constraint: None,
        projection: vec![],
    };
    let call = |token: Option<String>| {
        let client =
            skua_net::Client::new(skua_net::Endpoint::Tcp(addr), token, Duration::from_secs(5))
                .unwrap();
        rt.block_on(client.command::<_, skua_proto::QueryReply>(
            &skua_proto::routes::COLLECTOR_QUERY,
            Some(&query),
        ))
    };
    // no token
    let e = call(None).expect_err("anonymous query must be refused");
    assert_eq!(e.code(), skua_proto::ErrorCode::Unauthenticated, "{e}");
    // a token signed with another key
    let other = skua_net::SigningKey::generate().unwrap();
    let forged =
        skua_net::issue_token(&other, "alice@vm", &[skua_net::AuthLevel::Read], None).unwrap();
    let e = call(Some(forged)).expect_err("forged token must be refused");
    assert_eq!(e.code(), skua_proto::ErrorCode::Unauthenticated, "{e}");
    // a token issued by the pool's administrator
    let token = pool.ok(&[
        "token",
        "create",
        "--identity",
        "alice@vm",
        "--authz",
        "READ",
    ]);
    let reply = call(Some(token.trim().to_string())).expect("a valid token is accepted");
    assert!(!reply.ads.is_empty());
    // ... but READ does not allow advertising
    let client = skua_net::Client::new(
        skua_net::Endpoint::Tcp(addr),
        Some(token.trim().to_string()),
        Duration::from_secs(5),
    )
    .unwrap();
    let update = skua_proto::AdUpdate {
        ad_type: "Machine".into(),
        name: "fake".into(),
        ad: "[Name = \"fake\"]".into(),
        lifetime_secs: 60,
    };
    let e = rt
        .block_on(
            client.command::<_, skua_proto::Ack>(
                &skua_proto::routes::COLLECTOR_UPDATE,
                Some(&update),
            ),
        )
        .expect_err("READ may not advertise");
    assert_eq!(e.code(), skua_proto::ErrorCode::PermissionDenied, "{e}");
}

#[test]
fn a_daemon_refuses_an_invalid_configuration() {
    let dir = scratch("badconfig");
    let config = dir.join("skua_config");
    std::fs::write(
        &config,
        format!(
            "LOCAL_DIR = {}\nthis line is not configuration\n",
            dir.display()
        ),
    )
    .unwrap();
    let out = Command::new(SKUAD)
        .arg("collector")
        .env("SKUA_CONFIG", &config)
        .output()
        .expect("run skuad");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}, line 2", config.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reconfig_with_a_broken_file_keeps_the_running_configuration() {
    let mut pool = Pool::new("reconfig", &fast());
    pool.start();
    wait_for("the master's ad", Duration::from_secs(10), || {
        pool.types().contains("DaemonMaster")
    });
    let good = std::fs::read_to_string(pool.config()).unwrap();
    std::fs::write(
        pool.config(),
        format!("{good}this line is not configuration\n"),
    )
    .unwrap();
    // the tool reports the broken file and line ...
    let out = pool.skua(&["reconfig"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}, line", pool.config().display())),
        "{err}"
    );
    // ... and a daemon told to reconfigure (SIGHUP, as `kill -HUP`) keeps
    // its running configuration and says why
    kill(pool.master_pid.expect("master pid"), "-HUP");
    wait_for(
        "the master to report the error",
        Duration::from_secs(10),
        || pool.logs().contains("keeping the running configuration"),
    );
    // the pool still runs
    std::fs::write(pool.config(), good).unwrap();
    assert!(pool.types().contains("DaemonMaster"));
    let out = pool.ok(&["reconfig"]);
    assert!(!out.contains("error"), "{out}");
}

#[test]
fn a_collector_with_a_minimal_configuration_listens_on_loopback() {
    let dir = scratch("minimal");
    let config = dir.join("skua_config");
    std::fs::write(
        &config,
        format!(
            "LOCAL_DIR = {}\nLOCK = $(LOCAL_DIR)/lock\nCOLLECTOR_HOST = 127.0.0.1:0\n\
             SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(LOCAL_DIR)/passwords.d/POOL\n",
            dir.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(SKUAD)
        .arg("collector")
        .env("SKUA_CONFIG", &config)
        .spawn()
        .expect("skuad");
    let addr_file = dir.join("log/.collector_address");
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("the address file", Duration::from_secs(10), || {
            addr_file.exists()
        })
    }));
    let text = std::fs::read_to_string(&addr_file).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(waited.is_ok(), "the collector did not start");
    assert!(text.starts_with("127.0.0.1:"), "{text}");
}

#[test]
fn with_no_configuration_file_the_master_runs_a_personal_pool_in_home() {
    let home = scratch("noconfig").into_path(); // the Pool below removes it
    let env_of = |cmd: &mut Command| {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .envs(fast())
            .env("_CONDOR_DAEMON_LIST", "MASTER, COLLECTOR");
    };
    // any daemon but the master refuses, naming the missing LOCAL_DIR,
    // and creates nothing
    let mut collector = Command::new(SKUAD);
    collector.arg("collector").current_dir(&home);
    env_of(&mut collector);
    let out = collector.output().expect("run skuad");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("LOCAL_DIR is not set"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the master makes the default personal pool and runs it
    let mut master = Command::new(SKUAD);
    master.arg("master").stderr(std::process::Stdio::null());
    env_of(&mut master);
    let mut child = master.spawn().expect("skuad master");
    let mut pool = Pool {
        dir: home.join(".skua/pool"),
        home: home.clone(),
        master_pid: Some(child.id() as i32),
        extra_env: Vec::new(),
    };
    let skua = |args: &[&str]| {
        let mut cmd = Command::new(SKUA);
        cmd.args(args);
        env_of(&mut cmd);
        cmd.output().expect("run skua")
    };
    wait_for("the pool's collector", Duration::from_secs(20), || {
        String::from_utf8_lossy(&skua(&["status", "-any", "-af", "MyType"]).stdout)
            .contains("Collector")
    });
    assert!(pool.config().exists());
    assert!(pool.dir.join("log").is_dir());
    // the tools find the default pool without SKUA_CONFIG, and stop it
    assert!(skua(&["pool", "stop"]).status.success());
    let master_pid = child.id() as i32;
    wait_for("the master to exit", Duration::from_secs(10), || {
        !alive(master_pid)
    });
    let _ = child.wait();
    // an empty configuration file configures nothing either: same pool
    let empty = home.join("empty_config");
    std::fs::write(&empty, "# nothing here\n\n").unwrap();
    let mut master = Command::new(SKUAD);
    master.arg("master").stderr(std::process::Stdio::null());
    env_of(&mut master);
    let mut child = master
        .env("SKUA_CONFIG", &empty)
        .spawn()
        .expect("skuad master");
    pool.master_pid = Some(child.id() as i32);
    wait_for(
        "the pool's collector again",
        Duration::from_secs(20),
        || {
            String::from_utf8_lossy(&skua(&["status", "-any", "-af", "MyType"]).stdout)
                .contains("Collector")
        },
    );
    assert!(skua(&["pool", "stop"]).status.success());
    let master_pid = child.id() as i32;
    wait_for("the master to exit", Duration::from_secs(10), || {
        !alive(master_pid)
    });
    let _ = child.wait();
    drop(pool);
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn reconfig_reaches_every_daemon_without_restarting_it() {
    let mut pool = Pool::new("reconfig-all", &fast());
    pool.start();
    let roles = ["collector", "negotiator", "schedd", "startd"];
    wait_for("every daemon", Duration::from_secs(20), || {
        roles.iter().all(|r| pids_of(&pool, r).len() == 1)
    });
    let before: Vec<Vec<i32>> = roles.iter().map(|r| pids_of(&pool, r)).collect();
    pool.ok(&["reconfig"]);
    wait_for("the daemons to re-read", Duration::from_secs(10), || {
        pool.logs()
            .matches("reconfig: configuration re-read")
            .count()
            >= roles.len()
    });
    let after: Vec<Vec<i32>> = roles.iter().map(|r| pids_of(&pool, r)).collect();
    assert_eq!(before, after, "{}", pool.logs());
    assert!(
        !pool.logs().contains("SIGHUP); restarting"),
        "{}",
        pool.logs()
    );
}
