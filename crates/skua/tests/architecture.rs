//! Keeps ARCHITECTURE.md's dependency table true: reads `cargo metadata`
//! and checks which of our crates each crate may depend on.

use std::collections::BTreeMap;
use std::process::Command;

/// crate -> our crates it may depend on (normal and build dependencies).
const ALLOWED: &[(&str, &[&str])] = &[
    // pure cores
    ("classad", &[]),
    ("skua-config", &[]),
    ("skua-queue", &["classad"]),
    ("skua-negotiation", &["classad"]),
    ("skua-submit", &["classad", "skua-config"]),
    ("skua-slot", &["classad"]),
    // the wire contract and the transport
    ("skua-proto", &[]),
    ("skua-net", &["skua-proto"]),
    // daemons (a pure core inside, a thin async shell around it)
    (
        "skua-collector",
        &["classad", "skua-proto", "skua-net", "skua-daemon"],
    ),
    (
        "skua-master",
        &["classad", "skua-proto", "skua-net", "skua-daemon"],
    ),
    (
        "skua-negotiator",
        &[
            "classad",
            "skua-negotiation",
            "skua-proto",
            "skua-net",
            "skua-daemon",
        ],
    ),
    (
        "skua-schedd",
        &[
            "classad",
            "skua-queue",
            "skua-proto",
            "skua-net",
            "skua-daemon",
        ],
    ),
    (
        "skua-startd",
        &[
            "classad",
            "skua-config",
            "skua-slot",
            "skua-proto",
            "skua-net",
            "skua-daemon",
        ],
    ),
    (
        "skua-starter",
        &[
            "classad",
            "skua-submit",
            "skua-proto",
            "skua-net",
            "skua-daemon",
        ],
    ),
    (
        "skua-daemon",
        &["classad", "skua-config", "skua-proto", "skua-net"],
    ),
    // user tools and binaries
    (
        "skua-cli",
        &[
            "classad",
            "skua-config",
            "skua-submit",
            "skua-proto",
            "skua-net",
            "skua-daemon",
            "skua-collector",
            "skua-master",
            "skua-schedd",
            "skua-negotiation",
            "skua-negotiator",
            "skua-startd",
            "skua-starter",
        ],
    ),
    ("skua", &["skua-cli"]),
    // test-only: a dev-dependency of others, never a normal one
    (
        "skua-testkit",
        &[
            "classad",
            "skua-config",
            "skua-submit",
            "skua-proto",
            "skua-net",
            "skua-daemon",
            "skua-collector",
            "skua-negotiator",
            "skua-schedd",
            "skua-startd",
        ],
    ),
];

/// Crates only tests may use: nothing depends on them but as a
/// dev-dependency.
const TEST_ONLY: &[&str] = &["skua-testkit"];

#[test]
fn dependency_rules_hold() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata failed");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata json");
    let packages = meta["packages"].as_array().expect("packages");
    let ours: Vec<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    for p in packages {
        let name = p["name"].as_str().expect("name");
        let Some(ok) = allowed.get(name) else {
            panic!("crate `{name}` is not in ARCHITECTURE.md's table (and this test's ALLOWED)");
        };
        for d in p["dependencies"].as_array().expect("deps") {
            let dep = d["name"].as_str().expect("dep name");
            let dev = d["kind"].as_str() == Some("dev");
            assert!(
                dev || !TEST_ONLY.contains(&dep),
                "`{name}` depends on the test-only `{dep}` outside [dev-dependencies]"
            );
            if ours.iter().any(|o| o == dep) && !dev {
                assert!(ok.contains(&dep), "`{name}` must not depend on `{dep}`");
            }
        }
    }
}
