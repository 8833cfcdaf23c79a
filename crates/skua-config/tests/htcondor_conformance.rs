//! Differential conformance against values recorded from HTCondor itself.
//!
//! Runs every case of `tests/data/htcondor_cases*.json` (recorded for this crate) and, when the
//! shared corpus is beside the project, `shared/config/cases_public.json`, directly through the
//! library: the case files live in an in-memory file system rooted at the case directory, the
//! environment is the checker's (`HOME`, `TZ`, `LANG`, `PATH` plus the case's variables), and
//! host facts come from the corpus file (so host-dependent answers match the recording host).
//!
//! The same corpora run through the `skua config` binary in `crates/skua/tests`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;
use skua_config::{Config, ConfigError, FileSource, LoadOptions, MemoryFiles};

/// The case's files, with paths relative to the case directory (the working directory).
struct CaseFiles {
    dir: String,
    files: MemoryFiles,
}

impl CaseFiles {
    fn resolve(&self, path: &str) -> String {
        if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{}/{}", self.dir, path)
        }
    }
}

impl FileSource for CaseFiles {
    fn read(&self, path: &str) -> io::Result<String> {
        let path = self.resolve(path);
        match self.files.read(&path) {
            // A directory read as a file gives nothing, as on the real file system.
            Err(_) if self.files.list_dir(&path).is_ok() => Ok(String::new()),
            other => other,
        }
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.files.list_dir(&self.resolve(path))
    }

    // the test's file source is an edge: it runs the commands the cases
    // name, as the real one in skua-cli does
    #[allow(clippy::disallowed_methods)]
    fn run_command(&self, command: &str) -> io::Result<String> {
        let mut words = command.split_whitespace();
        let program = words
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
        let out = std::process::Command::new(program).args(words).output()?;
        if !out.status.success() {
            return Err(io::Error::other("command failed"));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

enum Outcome {
    Defined(String),
    Undefined,
    Error(ConfigError),
}

fn run_query(case: &Value, root: &str, host: &BTreeMap<String, String>, query: &Value) -> Outcome {
    let id = case["id"].as_str().unwrap_or_default();
    let dir = format!("{root}/{id}");
    let mut files = MemoryFiles::new();
    if let Some(map) = case["files"].as_object() {
        for (rel, text) in map {
            let text = text.as_str().unwrap_or_default().replace("{D}", &dir);
            files.insert(&format!("{dir}/{rel}"), &text);
        }
    }
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    env.insert("HOME".to_string(), dir.clone());
    env.insert("TZ".to_string(), "UTC".to_string());
    env.insert("LANG".to_string(), "C".to_string());
    let main = format!("{dir}/condor_config");
    env.insert("SKUA_CONFIG".to_string(), main.clone());
    if let Some(map) = case["env"].as_object() {
        for (k, v) in map {
            env.insert(
                k.clone(),
                v.as_str().unwrap_or_default().replace("{D}", &dir),
            );
        }
    }
    let opts = LoadOptions {
        main_file: Some(main),
        subsystem: query["subsystem"].as_str().map(str::to_string),
        local_name: query["local_name"].as_str().map(str::to_string),
        env,
        host: host.clone(),
        random_seed: 1,
    };
    let source = CaseFiles { dir, files };
    // HTCondor's answers were recorded by a process that read the configuration as a tool
    // before taking on the subsystem and local name (as `skua config` does too): a
    // configuration refused in that context is refused for every query.
    if opts.subsystem.is_some() || opts.local_name.is_some() {
        let as_tool = LoadOptions {
            subsystem: None,
            local_name: None,
            ..opts.clone()
        };
        if let Err(e) = Config::load(&source, &as_tool) {
            return Outcome::Error(e);
        }
    }
    let config = match Config::load(&source, &opts) {
        Ok(c) => c,
        Err(e) => return Outcome::Error(e),
    };
    match config.get(query["knob"].as_str().unwrap_or_default()) {
        Ok(Some(v)) => Outcome::Defined(v),
        Ok(None) => Outcome::Undefined,
        Err(e) => Outcome::Error(e),
    }
}

/// Runs a corpus; returns (agreements, total, descriptions of disagreements).
// the corpus is a data file beside the test
#[allow(clippy::disallowed_methods)]
fn run_corpus(path: &Path) -> (usize, usize, Vec<String>) {
    let text = std::fs::read_to_string(path).expect("corpus file is readable");
    let doc: Value = serde_json::from_str(&text).expect("corpus file is JSON");
    let root = doc["case_root"]
        .as_str()
        .unwrap_or("/tmp/skua-config-case")
        .to_string();
    let host: BTreeMap<String, String> = doc["host"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let mut ok = 0;
    let mut total = 0;
    let mut failures = Vec::new();
    for case in doc["cases"].as_array().expect("cases array") {
        for query in case["queries"].as_array().expect("queries array") {
            total += 1;
            let expected = &query["expected"];
            let outcome = run_query(case, &root, &host, query);
            let good = match (expected["status"].as_str(), &outcome) {
                (Some("defined"), Outcome::Defined(v)) => {
                    v.trim() == expected["value"].as_str().unwrap_or_default().trim()
                }
                (Some("undefined"), Outcome::Undefined) => true,
                (Some("error"), Outcome::Error(_)) => true,
                _ => false,
            };
            if good {
                ok += 1;
            } else {
                let got = match outcome {
                    Outcome::Defined(v) => format!("defined {v:?}"),
                    Outcome::Undefined => "undefined".to_string(),
                    Outcome::Error(e) => format!("error: {e}"),
                };
                failures.push(format!(
                    "{} {} [sub={:?} local={:?}]: expected {expected}, got {got}",
                    case["id"], query["knob"], query["subsystem"], query["local_name"]
                ));
            }
        }
    }
    (ok, total, failures)
}

fn check(path: &Path) {
    let (ok, total, failures) = run_corpus(path);
    println!("{}: {ok}/{total}", path.display());
    assert!(total > 0, "no queries in {}", path.display());
    assert!(
        failures.is_empty(),
        "{} disagreements with HTCondor in {}:\n{}",
        failures.len(),
        path.display(),
        failures.join("\n")
    );
}

#[test]
fn recorded_htcondor_cases_agree() {
    check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/htcondor_cases.json"));
}

#[test]
fn recorded_host_dependent_cases_agree() {
    check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/htcondor_cases_host.json"));
}

#[test]
fn recorded_random_cases_agree() {
    check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/htcondor_random_cases.json"));
}

#[test]
// the shared corpus lives outside the repository and may be absent
#[allow(clippy::disallowed_methods)]
fn shared_public_cases_agree() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/config/cases_public.json");
    if !path.exists() {
        println!("skipped: {} not present", path.display());
        return;
    }
    check(&path);
}
