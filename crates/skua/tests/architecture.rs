//! Keeps ARCHITECTURE.md true: reads its dependency table and its list of
//! pure cores, and checks them against `cargo metadata`:
//!
//! - every crate of the workspace has a row, and every row a crate;
//! - a crate depends (normal and build dependencies) only on the crates of
//!   ours its row allows;
//! - no pure core depends on `tokio` or `rusqlite`, directly or through
//!   any other crate;
//! - every pure core has a `clippy.toml` with the shared
//!   `disallowed-methods` list (clock, environment, file system, processes).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Crates no pure core may reach through its normal dependencies.
const FORBIDDEN_IN_CORES: &[&str] = &["tokio", "rusqlite"];

/// Methods every pure core's `clippy.toml` must disallow (the list there
/// is longer; these stand for each kind of effect).
const MUST_DISALLOW: &[&str] = &[
    "std::time::SystemTime::now",
    "std::time::Instant::now",
    "std::env::var",
    "std::env::vars",
    "std::fs::read_to_string",
    "std::fs::File::open",
    "std::fs::File::create",
    "std::process::Command::new",
];

/// What ARCHITECTURE.md says.
#[derive(Debug)]
struct Architecture {
    /// crate directory (`crates/NAME`) -> crates of ours it may depend on
    table: BTreeMap<String, BTreeSet<String>>,
    /// the pure cores, by crate name
    cores: BTreeSet<String>,
}

/// The words in backquotes in `text`, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|w| w.trim().to_string())
        .collect()
}

/// Parses ARCHITECTURE.md: the table under `## Crates` (first column the
/// crate's directory in backquotes, last column the crates it may depend
/// on in backquotes or `nothing`; other columns and words outside
/// backquotes are free text) and the sentence "The pure cores are ...".
fn parse_architecture(text: &str) -> Result<Architecture, String> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.trim() == "## Crates")
        .ok_or("no `## Crates` section")?;
    let rows: Vec<&str> = lines
        .by_ref()
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .collect();
    // a header, a separator, then one row per crate
    if rows.len() < 3 || !rows[1].contains("---") {
        return Err(format!(
            "the table under `## Crates` has no header and separator: {rows:?}"
        ));
    }
    let mut table = BTreeMap::new();
    for row in &rows[2..] {
        let cells: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
        let (first, last) = match (cells.first(), cells.last()) {
            (Some(f), Some(l)) if cells.len() >= 2 => (*f, *l),
            _ => return Err(format!("a row with fewer than two columns: {row}")),
        };
        let dir = match quoted(first).as_slice() {
            [dir] if dir.starts_with("crates/") => dir.clone(),
            _ => return Err(format!("the first column is not one `crates/NAME`: {row}")),
        };
        let allowed: BTreeSet<String> = if last.trim() == "nothing" {
            BTreeSet::new()
        } else {
            let names = quoted(last);
            if names.is_empty() {
                return Err(format!(
                    "the last column names no crate (write `nothing` for none): {row}"
                ));
            }
            names.into_iter().collect()
        };
        if table.insert(dir.clone(), allowed).is_some() {
            return Err(format!("two rows for {dir}"));
        }
    }
    let cores_line = text
        .lines()
        .find(|l| l.starts_with("The pure cores are "))
        .ok_or("no sentence \"The pure cores are ...\"")?;
    // the crates named before the colon or parenthesis that ends the list
    let list = cores_line.split(['(', ':']).next().unwrap_or(cores_line);
    let cores: BTreeSet<String> = quoted(list).into_iter().collect();
    if cores.is_empty() {
        return Err("the sentence \"The pure cores are ...\" names no crate".into());
    }
    Ok(Architecture { table, cores })
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn metadata(root: &Path) -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("metadata json")
}

/// One package of the workspace.
struct Member {
    name: String,
    /// `crates/NAME`, relative to the workspace root
    dir: String,
    /// our crates among its normal and build dependencies
    deps: Vec<String>,
}

fn members(meta: &serde_json::Value, root: &Path) -> Vec<Member> {
    let ids: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let packages: Vec<&serde_json::Value> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| ids.contains(id)))
        .collect();
    let ours: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
            let dir = manifest
                .parent()
                .and_then(|d| d.strip_prefix(root).ok())
                .expect("a member lies under the workspace root")
                .to_string_lossy()
                .into_owned();
            let deps = p["dependencies"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter_map(|d| d["name"].as_str())
                .filter(|d| ours.contains(d))
                .map(String::from)
                .collect();
            Member {
                name: p["name"].as_str().expect("name").to_string(),
                dir,
                deps,
            }
        })
        .collect()
}

fn architecture() -> Architecture {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    parse_architecture(&text).unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"))
}

#[test]
fn dependency_rules_hold() {
    let root = workspace_root();
    let arch = architecture();
    let members = members(&metadata(&root), &root);
    let names: BTreeSet<&str> = members.iter().map(|m| m.name.as_str()).collect();
    let dirs: BTreeSet<&str> = members.iter().map(|m| m.dir.as_str()).collect();
    for (dir, allowed) in &arch.table {
        assert!(
            dirs.contains(dir.as_str()),
            "ARCHITECTURE.md has a row for `{dir}`, which is not a crate of the workspace"
        );
        for a in allowed {
            assert!(
                names.contains(a.as_str()),
                "ARCHITECTURE.md lets `{dir}` depend on `{a}`, which is not a crate of ours"
            );
        }
    }
    for core in &arch.cores {
        assert!(
            names.contains(core.as_str()),
            "ARCHITECTURE.md names `{core}` a pure core, which is not a crate of ours"
        );
    }
    for m in &members {
        let Some(allowed) = arch.table.get(&m.dir) else {
            panic!(
                "crate `{}` ({}) has no row in ARCHITECTURE.md's table",
                m.name, m.dir
            );
        };
        for dep in &m.deps {
            assert!(
                allowed.contains(dep),
                "`{}` must not depend on `{dep}` (ARCHITECTURE.md allows {allowed:?})",
                m.name
            );
        }
    }
}

/// The chain of packages (by name) from `from` to a package named one of
/// `targets`, following normal dependencies in the resolved graph.
fn path_to(meta: &serde_json::Value, from: &str, targets: &[&str]) -> Option<Vec<String>> {
    let nodes = meta["resolve"]["nodes"].as_array().expect("resolve.nodes");
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let edges: BTreeMap<&str, Vec<&str>> = nodes
        .iter()
        .map(|n| {
            let id = n["id"].as_str().expect("node id");
            let deps = n["deps"]
                .as_array()
                .expect("node deps")
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .is_some_and(|ks| ks.iter().any(|k| k["kind"].is_null()))
                })
                .filter_map(|d| d["pkg"].as_str())
                .collect();
            (id, deps)
        })
        .collect();
    let start = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(|v| v.as_str())
        .find(|id| name_of.get(id) == Some(&from))?;
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(id) = queue.pop_front() {
        if id != start && targets.contains(name_of.get(id).unwrap_or(&"")) {
            let mut chain = vec![name_of[id].to_string()];
            let mut at = id;
            while let Some(prev) = came_from.get(at) {
                chain.push(name_of[prev].to_string());
                at = prev;
            }
            chain.reverse();
            return Some(chain);
        }
        for next in edges.get(id).into_iter().flatten() {
            if *next != start && !came_from.contains_key(next) {
                came_from.insert(next, id);
                queue.push_back(next);
            }
        }
    }
    None
}

#[test]
fn pure_cores_reach_no_runtime_and_no_database() {
    let root = workspace_root();
    let arch = architecture();
    let meta = metadata(&root);
    for core in &arch.cores {
        if let Some(chain) = path_to(&meta, core, FORBIDDEN_IN_CORES) {
            panic!(
                "pure core `{core}` depends on `{}`: {}",
                chain.last().map(String::as_str).unwrap_or_default(),
                chain.join(" -> ")
            );
        }
    }
    // the check itself finds such a chain where there is one
    let chain = path_to(&meta, "skua-schedd", &["rusqlite"]).expect("the schedd uses SQLite");
    assert_eq!(chain.first().map(String::as_str), Some("skua-schedd"));
    assert_eq!(chain.last().map(String::as_str), Some("rusqlite"));
}

/// The `disallowed-methods` entries of a `clippy.toml`, in order.
fn disallowed_methods(toml: &str) -> Vec<String> {
    let Some(start) = toml.find("disallowed-methods") else {
        return Vec::new();
    };
    let list = &toml[start..];
    let list = &list[..list.find("\n]").unwrap_or(list.len())];
    list.lines()
        .filter_map(|l| {
            let rest = &l[l.find("path = \"")? + "path = \"".len()..];
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

#[test]
fn pure_cores_forbid_the_clock_environment_files_and_processes() {
    let root = workspace_root();
    let arch = architecture();
    let members = members(&metadata(&root), &root);
    let mut lists: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for core in &arch.cores {
        let m = members
            .iter()
            .find(|m| &m.name == core)
            .unwrap_or_else(|| panic!("pure core `{core}` is not a crate of the workspace"));
        let path = root.join(&m.dir).join("clippy.toml");
        let toml = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("pure core `{core}` needs {}: {e}", path.display()));
        let list = disallowed_methods(&toml);
        for method in MUST_DISALLOW {
            assert!(
                list.iter().any(|l| l == method),
                "{} does not disallow `{method}`",
                path.display()
            );
        }
        lists.insert(core, list);
    }
    // one list, the same in every core
    let mut distinct = lists.values().collect::<Vec<_>>();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        1,
        "the pure cores' disallowed-methods lists differ: {lists:#?}"
    );
}

#[test]
fn the_table_parser_reads_rows_comments_and_nothing() {
    let text = "\
# Architecture

## Crates

| crate | owns | may depend on (ours) |
|---|---|---|
| `crates/a` | the `a` language | nothing |
| `crates/b` | b, with `a` | `a` (for its values) |
| `crates/c` | c | `a`, `b` |

The pure cores are `a` and `b` (rule 2 below).
";
    let arch = parse_architecture(text).expect("parses");
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(arch.table["crates/a"], set(&[]));
    assert_eq!(arch.table["crates/b"], set(&["a"]));
    assert_eq!(arch.table["crates/c"], set(&["a", "b"]));
    assert_eq!(arch.cores, set(&["a", "b"]));
    // a row whose last column names nothing is an error, not "nothing"
    let bad = text.replace("| `a`, `b` |", "| a and b |");
    assert!(parse_architecture(&bad)
        .unwrap_err()
        .contains("names no crate"));
}
