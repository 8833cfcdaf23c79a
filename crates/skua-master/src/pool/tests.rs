use super::*;
use std::collections::BTreeMap;

/// A strict reader of the subset of HTCondor's configuration syntax the
/// pool configuration may use: blank lines, `#` comment lines, and
/// `NAME = value` with NAME an identifier defined once; no continuation
/// lines. Returns the definitions, names upper-cased.
fn read_config(text: &str) -> BTreeMap<String, String> {
    let mut defs = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        assert!(!line.ends_with('\\'), "line {n} continues: {line:?}");
        let (name, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {n} is not NAME = value: {line:?}"));
        let name = name.trim();
        assert!(
            name.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
            "line {n}: bad name {name:?}"
        );
        assert_eq!(
            line,
            format!("{name} = {}", value.trim()),
            "line {n} not in canonical `NAME = value` form"
        );
        let old = defs.insert(name.to_ascii_uppercase(), value.trim().to_string());
        assert!(old.is_none(), "line {n}: {name} defined twice");
    }
    assert!(text.ends_with('\n'), "missing final newline");
    defs
}

/// Expands `$(NAME)` recursively (HTCondor's lazy expansion), with
/// `FULL_HOSTNAME` predefined; an undefined name is a test failure (it
/// would silently expand to nothing).
fn expand(defs: &BTreeMap<String, String>, value: &str, depth: usize) -> String {
    assert!(depth < 20, "macro recursion in {value:?}");
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("$(") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find(')').expect("unterminated $(");
        let name = after[..end].to_ascii_uppercase();
        let sub = if name == "FULL_HOSTNAME" {
            "host.example".to_string()
        } else {
            let v = defs
                .get(&name)
                .unwrap_or_else(|| panic!("$({name}) is not defined"));
            expand(defs, v, depth + 1)
        };
        out.push_str(&sub);
        rest = &after[end + 1..];
    }
    assert!(!rest.contains('$'), "stray $ in {value:?}");
    out.push_str(rest);
    out
}

fn expanded(text: &str) -> BTreeMap<String, String> {
    let defs = read_config(text);
    defs.iter()
        .map(|(k, v)| (k.clone(), expand(&defs, v, 0)))
        .collect()
}

fn dir() -> PathBuf {
    PathBuf::from("/home/ada/.skua/pool")
}

#[test]
fn default_pool_dir_is_under_home() {
    assert_eq!(
        default_pool_dir(Path::new("/home/ada")),
        PathBuf::from("/home/ada/.skua/pool")
    );
}

#[test]
fn config_is_valid_syntax_and_every_macro_is_defined() {
    let text = pool_config(&dir(), &PoolOptions::default()).unwrap();
    assert!(text.starts_with("# Skua personal pool configuration"));
    let e = expanded(&text);
    assert!(e.len() > 20);
}

#[test]
fn config_directories_agree_with_the_layout() {
    let layout = PoolLayout::new(dir());
    let e = expanded(&layout.config_text(&PoolOptions::default()).unwrap());
    let path = |name: &str| PathBuf::from(&e[name]);
    assert_eq!(path("LOCAL_DIR"), dir());
    assert_eq!(e["LOCAL_DIR"], "/home/ada/.skua/pool");
    assert_eq!(path("LOG"), layout.log_dir());
    assert_eq!(path("SPOOL"), layout.spool_dir());
    assert_eq!(path("EXECUTE"), layout.execute_dir());
    assert_eq!(path("LOCK"), layout.lock_dir());
    assert_eq!(path("MASTER_INSTANCE_LOCK"), layout.master_instance_lock());
    assert_eq!(path("SEC_PASSWORD_DIRECTORY"), layout.password_dir());
    assert_eq!(
        path("SEC_TOKEN_POOL_SIGNING_KEY_FILE"),
        layout.pool_signing_key()
    );
    assert_eq!(path("SEC_TOKEN_SYSTEM_DIRECTORY"), layout.token_dir());
    assert_eq!(path("SEC_TOKEN_DIRECTORY"), layout.token_dir());
    assert_eq!(
        path("COLLECTOR_ADDRESS_FILE"),
        layout.collector_address_file()
    );
    assert_eq!(path("MASTER_ADDRESS_FILE"), layout.master_address_file());
    assert_eq!(
        layout.config_file(),
        PathBuf::from("/home/ada/.skua/pool/skua_config")
    );
    assert_eq!(
        layout.collector_address_file(),
        PathBuf::from("/home/ada/.skua/pool/log/.collector_address")
    );
    // Every directory the configuration names is created.
    let created: Vec<PathBuf> = layout.directories().into_iter().map(|d| d.path).collect();
    for name in [
        "LOCAL_DIR",
        "LOG",
        "SPOOL",
        "EXECUTE",
        "LOCK",
        "SEC_PASSWORD_DIRECTORY",
        "SEC_TOKEN_SYSTEM_DIRECTORY",
    ] {
        assert!(created.contains(&path(name)), "{name} is not created");
    }
}

#[test]
fn config_network_is_loopback_with_os_chosen_ports() {
    let e = expanded(&pool_config(&dir(), &PoolOptions::default()).unwrap());
    assert_eq!(e["NETWORK_INTERFACE"], "127.0.0.1");
    assert_eq!(e["BIND_ALL_INTERFACES"], "False");
    assert_eq!(e["COLLECTOR_HOST"], "127.0.0.1:0");
    assert!(collector_host_uses_address_file(&e["COLLECTOR_HOST"]));
}

#[test]
fn config_daemons_domains_and_intervals() {
    let e = expanded(&pool_config(&dir(), &PoolOptions::default()).unwrap());
    assert_eq!(
        e["DAEMON_LIST"],
        "MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD"
    );
    assert_eq!(e["NEGOTIATOR_CYCLE_DELAY"], "1");
    assert_eq!(e["MASTER_LOG"], "/home/ada/.skua/pool/log/MasterLog");
    assert_eq!(e["COLLECTOR_LOG"], "/home/ada/.skua/pool/log/CollectorLog");
    assert_eq!(e["UID_DOMAIN"], "host.example");
    assert_eq!(e["FILESYSTEM_DOMAIN"], "host.example");
    assert_eq!(e["UPDATE_INTERVAL"], "5");
    assert_eq!(e["MASTER_UPDATE_INTERVAL"], "5");
    assert_eq!(e["CLASSAD_LIFETIME"], "60");
    // No program paths unless asked for.
    assert!(!e.contains_key("SKUAD"));
    assert!(!e.contains_key("COLLECTOR"));
}

#[test]
fn config_with_more_daemons_and_a_skuad_program() {
    let options = PoolOptions {
        daemons: ["MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"]
            .map(String::from)
            .to_vec(),
        update_interval: 2,
        classad_lifetime: 2,
        skuad: Some(PathBuf::from("/opt/skua/bin/skuad")),
    };
    let e = expanded(&pool_config(&dir(), &options).unwrap());
    assert_eq!(
        e["DAEMON_LIST"],
        "MASTER, COLLECTOR, NEGOTIATOR, SCHEDD, STARTD"
    );
    assert_eq!(e["SKUAD"], "/opt/skua/bin/skuad");
    assert_eq!(e["COLLECTOR"], "/opt/skua/bin/skuad");
    assert_eq!(e["COLLECTOR_ARGS"], "collector");
    assert_eq!(e["STARTD_ARGS"], "startd");
    assert!(!e.contains_key("MASTER"), "the master does not run itself");
    assert_eq!(e["SCHEDD_LOG"], "/home/ada/.skua/pool/log/SchedLog");
    assert_eq!(e["STARTD_LOG"], "/home/ada/.skua/pool/log/StartLog");
    assert_eq!(
        e["NEGOTIATOR_LOG"],
        "/home/ada/.skua/pool/log/NegotiatorLog"
    );
    assert_eq!(
        e["SCHEDD_ADDRESS_FILE"],
        "/home/ada/.skua/pool/spool/.schedd_address"
    );
    assert_eq!(
        e["STARTD_ADDRESS_FILE"],
        "/home/ada/.skua/pool/log/.startd_address"
    );
    assert_eq!(e["UPDATE_INTERVAL"], "2");
}

#[test]
fn unknown_daemons_get_htcondor_style_log_names() {
    assert_eq!(log_name("JOB_ROUTER"), "JobRouterLog");
    assert_eq!(log_name("SHARED_PORT"), "SharedPortLog");
    assert_eq!(log_name("SCHEDD"), "SchedLog");
}

#[test]
fn config_refuses_paths_the_language_would_alter() {
    let bad = |p: &str| pool_config(Path::new(p), &PoolOptions::default()).unwrap_err();
    assert!(
        matches!(bad("relative/pool"), PoolError::BadPath { reason, .. } if reason.contains("absolute"))
    );
    assert!(
        matches!(bad("/tmp/$(HOME)"), PoolError::BadPath { reason, .. } if reason.contains("macro"))
    );
    assert!(matches!(bad("/tmp/a\nB = 1"), PoolError::BadPath { .. }));
    assert!(matches!(bad("/tmp/pool "), PoolError::BadPath { .. }));
    assert!(matches!(bad("/tmp/pool\\"), PoolError::BadPath { .. }));
    let e = bad("/tmp/$x");
    assert_eq!(
        e.to_string(),
        "pool path `/tmp/$x` cannot be used: `$` would start a macro in the configuration"
    );
    // A path with blanks and `#` inside is fine: values run to the end of
    // the line and `#` starts a comment only at the start of a line.
    let text = pool_config(Path::new("/tmp/my pool #1"), &PoolOptions::default()).unwrap();
    assert_eq!(expanded(&text)["LOG"], "/tmp/my pool #1/log");
    // The skuad path is checked too (it may be relative).
    let options = PoolOptions {
        skuad: Some(PathBuf::from("bin/$skuad")),
        ..PoolOptions::default()
    };
    assert!(matches!(
        pool_config(&dir(), &options),
        Err(PoolError::BadPath { .. })
    ));
}

#[test]
fn config_refuses_bad_daemon_lists_and_intervals() {
    let with = |daemons: &[&str]| PoolOptions {
        daemons: daemons.iter().map(|d| d.to_string()).collect(),
        ..PoolOptions::default()
    };
    for list in [
        &[][..],
        &["COLLECTOR", "MASTER"][..],
        &["MASTER", "COLL ECTOR"][..],
        &["MASTER", "COLLECTOR", "collector"][..],
        &["MASTER", "1X"][..],
    ] {
        assert!(
            matches!(
                pool_config(&dir(), &with(list)),
                Err(PoolError::BadDaemonList(_))
            ),
            "{list:?}"
        );
    }
    let zero = PoolOptions {
        update_interval: 0,
        ..PoolOptions::default()
    };
    assert!(matches!(
        pool_config(&dir(), &zero),
        Err(PoolError::BadInterval {
            knob: "UPDATE_INTERVAL",
            ..
        })
    ));
    let short = PoolOptions {
        update_interval: 10,
        classad_lifetime: 9,
        ..PoolOptions::default()
    };
    assert!(matches!(
        pool_config(&dir(), &short),
        Err(PoolError::BadInterval {
            knob: "CLASSAD_LIFETIME",
            ..
        })
    ));
}

#[test]
fn directories_come_parents_first_with_private_key_dirs() {
    let dirs = directories_to_create(&dir());
    let root = dir();
    assert_eq!(
        dirs[0],
        PoolDir {
            path: root.clone(),
            mode: 0o755
        }
    );
    for d in &dirs[1..] {
        assert_eq!(d.path.parent(), Some(root.as_path()));
    }
    let mode = |name: &str| {
        dirs.iter()
            .find(|d| d.path == root.join(name))
            .map(|d| d.mode)
    };
    assert_eq!(mode("log"), Some(0o755));
    assert_eq!(mode("spool"), Some(0o755));
    assert_eq!(mode("execute"), Some(0o755));
    assert_eq!(mode("lock"), Some(0o755));
    assert_eq!(mode("passwords.d"), Some(0o700));
    assert_eq!(mode("tokens.d"), Some(0o700));
    assert_eq!(dirs.len(), 7);
}

#[test]
fn which_collector_hosts_need_the_address_file() {
    for host in [
        "127.0.0.1:0",
        " 127.0.0.1:0 ",
        "<127.0.0.1:0>",
        "[::1]:0",
        "cm:0",
    ] {
        assert!(collector_host_uses_address_file(host), "{host}");
    }
    for host in [
        "127.0.0.1:9618",
        "cm.example.org",
        "cm.example.org:9620",
        "::1",
        "[::1]",
        "[::1]:9618",
        "",
    ] {
        assert!(!collector_host_uses_address_file(host), "{host}");
    }
}
