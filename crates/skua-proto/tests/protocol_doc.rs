//! Keeps docs/protocol.md's command table true: every route in
//! `routes::ALL` has a row there with its method and authorization level,
//! and every path in the table is a route.

use std::collections::BTreeMap;

use skua_proto::routes;

/// One row of the table under `## Commands`, for one path.
#[derive(Debug)]
struct Documented {
    method: String,
    level: String,
}

/// The paths in the command table of docs/protocol.md (a row may name
/// several paths in backquotes, sharing the method and level).
fn documented_routes(text: &str) -> Result<BTreeMap<String, Documented>, String> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.trim() == "## Commands")
        .ok_or("no `## Commands` section")?;
    let rows: Vec<&str> = lines
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .collect();
    if rows.len() < 3 || !rows[1].contains("---") {
        return Err("the command table has no header and separator".into());
    }
    let mut out = BTreeMap::new();
    for row in &rows[2..] {
        let cells: Vec<&str> = row
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [method, paths, level, ..] = cells.as_slice() else {
            return Err(format!("a row with fewer than three columns: {row}"));
        };
        for path in paths.split('`').skip(1).step_by(2) {
            let doc = Documented {
                method: method.to_string(),
                level: level.to_string(),
            };
            if out.insert(path.to_string(), doc).is_some() {
                return Err(format!("{path} has two rows"));
            }
        }
    }
    Ok(out)
}

#[test]
fn every_route_is_documented_with_its_method_and_level() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/protocol.md");
    let text = std::fs::read_to_string(path).expect("read docs/protocol.md");
    let documented = documented_routes(&text).unwrap_or_else(|e| panic!("docs/protocol.md: {e}"));
    for route in routes::ALL {
        let Some(doc) = documented.get(route.path) else {
            panic!(
                "{} {} is not in docs/protocol.md's command table",
                route.method, route.path
            );
        };
        assert_eq!(
            doc.method, route.method,
            "docs/protocol.md gives {} the wrong method",
            route.path
        );
        let level = match route.level {
            _ if route.open => "anyone, anonymous included",
            Some(level) => level.as_str(),
            None => "any identified caller",
        };
        assert_eq!(
            doc.level, level,
            "docs/protocol.md gives {} the wrong level",
            route.path
        );
    }
    for path in documented.keys() {
        assert!(
            routes::ALL.iter().any(|r| r.path == path),
            "docs/protocol.md documents {path}, which is no route"
        );
    }
}

#[test]
fn the_table_reader_splits_rows_naming_several_paths() {
    let text = "\
## Commands

| method | path | level | request | reply |
|---|---|---|---|---|
| GET | `/hello` | any identified caller | — | `WhoAmI` |
| POST | `/a/b`, `/a/c` (from the startd) | DAEMON | `B`, `C` | `{}` |
";
    let doc = documented_routes(text).expect("parses");
    assert_eq!(doc.len(), 3);
    assert_eq!(doc["/hello"].method, "GET");
    assert_eq!(doc["/hello"].level, "any identified caller");
    assert_eq!(doc["/a/c"].method, "POST");
    assert_eq!(doc["/a/c"].level, "DAEMON");
}
