//! `skua config` against HTCondor's own answers, through the real binary.
//!
//! Runs the shared differential checker (`shared/config/check_config.py`, beside the project)
//! exactly as documented:
//!
//! ```text
//! python3 ../shared/config/check_config.py -- "$(pwd)/target/debug/skua" config
//! ```
//!
//! on the public corpus and on the cases recorded for `skua-config`
//! (`crates/skua-config/tests/data/htcondor_cases.json`), and requires 100% agreement. When
//! `python3` or the shared folder is missing the test says so and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// Runs the checker; `None` when it cannot run here.
fn run_checker(cases: Option<&Path>) -> Option<String> {
    let checker = workspace_root().join("../shared/config/check_config.py");
    if !checker.exists() {
        println!("skipped: {} not found", checker.display());
        return None;
    }
    let mut cmd = Command::new("python3");
    cmd.arg(&checker).arg("-v");
    if let Some(cases) = cases {
        cmd.arg("--cases").arg(cases);
    }
    cmd.arg("--").arg(env!("CARGO_BIN_EXE_skua")).arg("config");
    let output = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: cannot run python3: {e}");
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "checker failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(stdout)
}

/// Parses the checker's last line, `config agreement: X/Y (Z%)`.
fn agreement(report: &str) -> (usize, usize) {
    let line = report
        .lines()
        .rev()
        .find(|l| l.starts_with("config agreement:"))
        .unwrap_or_else(|| panic!("no agreement line in:\n{report}"));
    let figures = line
        .trim_start_matches("config agreement:")
        .split_whitespace()
        .next()
        .unwrap_or_default();
    let (ok, total) = figures
        .split_once('/')
        .unwrap_or_else(|| panic!("malformed agreement line: {line}"));
    (
        ok.parse().expect("agreement count"),
        total.parse().expect("query count"),
    )
}

fn assert_full_agreement(cases: Option<&Path>) {
    let Some(report) = run_checker(cases) else {
        return;
    };
    println!("{report}");
    let (ok, total) = agreement(&report);
    assert!(total > 0, "no queries were checked:\n{report}");
    assert_eq!(ok, total, "disagreements with HTCondor:\n{report}");
}

#[test]
fn public_config_corpus_agrees_fully() {
    assert_full_agreement(None);
}

#[test]
fn recorded_config_corpus_agrees_fully() {
    let cases = workspace_root().join("crates/skua-config/tests/data/htcondor_cases.json");
    assert_full_agreement(Some(&cases));
}

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("skua-config-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn skua_config(config: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_skua"))
        .arg("config")
        .args(args)
        .env_clear()
        .env("SKUA_CONFIG", config)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run skua config")
}

#[test]
fn get_dump_and_verbose() {
    let dir = scratch("dump");
    let main = dir.join("skua_config");
    std::fs::write(
        &main,
        "A = 1\nB = $(A) two\nEMPTY =\nSTARTD.C = startd\nML @=end\nx\ny\n@end\n",
    )
    .expect("write config");

    let out = skua_config(&main, &["get", "b"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1 two\n");

    let out = skua_config(&main, &["get", "EMPTY"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());

    let out = skua_config(&main, &["get", "C", "--subsystem", "STARTD", "--verbose"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("startd\n"), "{text}");
    assert!(text.contains("STARTD.C defined at:"), "{text}");
    assert!(text.contains(", line 4"), "{text}");

    let out = skua_config(&main, &["dump"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0));
    assert!(text.contains("A = 1\n"), "{text}");
    assert!(text.contains("B = 1 two\n"), "{text}");
    assert!(text.contains("ML @=end\nx\ny\n@end\n"), "{text}");
    assert!(!text.contains("EMPTY"), "{text}");

    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn invalid_configuration_exits_2_naming_file_and_line() {
    let dir = scratch("invalid");
    let main = dir.join("skua_config");
    std::fs::write(&main, "A = 1\nthis is not valid\n").expect("write config");
    let out = skua_config(&main, &["get", "A"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}, line 2", main.display())),
        "{err}"
    );

    let out = skua_config(&dir.join("missing"), &["get", "A"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
