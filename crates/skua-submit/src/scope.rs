//! The submit macro table and the scope the configuration crate's macro engine expands in.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

use skua_config::MacroScope;

/// One definition in the submit file (or on the command line).
#[derive(Debug, Clone)]
pub(crate) struct Def {
    /// The name as first written (`+Foo` is stored as `MY.Foo`).
    pub(crate) name: String,
    /// The raw value.
    pub(crate) raw: String,
    /// The line that defined it (0: command line or appended).
    pub(crate) line: usize,
}

/// The macros defined so far, keyed by upper-cased name, plus the order in which `MY.` names
/// first appeared.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    defs: HashMap<String, Def>,
    /// `MY.` attribute names in order of first definition (as first written, without `MY.`).
    pub(crate) custom: Vec<String>,
    /// The names in `custom`, upper-cased: whether a name is already there, without a scan
    /// (a file of many `+Attr` lines stays linear).
    custom_seen: HashSet<String>,
}

impl Table {
    pub(crate) fn get(&self, name: &str) -> Option<&Def> {
        self.defs.get(&name.to_ascii_uppercase())
    }

    /// Every defined name (as first written), sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.defs.values().map(|d| d.name.clone()).collect();
        v.sort();
        v
    }

    pub(crate) fn set(&mut self, name: &str, raw: String, line: usize) {
        let key = name.to_ascii_uppercase();
        if let Some(attr) = strip_my(name) {
            if self.custom_seen.insert(attr.to_ascii_uppercase()) {
                self.custom.push(attr.to_string());
            }
        }
        let written = self
            .defs
            .get(&key)
            .map_or_else(|| name.to_string(), |d| d.name.clone());
        self.defs.insert(
            key,
            Def {
                name: written,
                raw,
                line,
            },
        );
    }
}

/// `MY.Name` → `Name` (case-insensitive prefix).
pub(crate) fn strip_my(name: &str) -> Option<&str> {
    if name.len() > 3 && name[..3].eq_ignore_ascii_case("MY.") {
        Some(&name[3..])
    } else {
        None
    }
}

/// What macro expansion sees: the per-job live variables first (`Process`, `Item`, ...), then
/// the submit file's definitions, then the predefined macros (`ARCH`, `OPSYS`, ...). An
/// undefined macro expands to nothing.
pub(crate) struct Scope<'a> {
    pub(crate) table: &'a Table,
    pub(crate) live: &'a BTreeMap<String, String>,
    pub(crate) predefined: &'a BTreeMap<String, String>,
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) rng: &'a Cell<u64>,
}

impl MacroScope for Scope<'_> {
    fn raw_lookup(&self, name: &str) -> Option<&str> {
        let upper = name.to_ascii_uppercase();
        if let Some(v) = self.live.get(&upper) {
            return Some(v);
        }
        if let Some(d) = self.table.defs.get(&upper) {
            return Some(&d.raw);
        }
        self.predefined.get(&upper).map(String::as_str)
    }

    fn env_var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    fn next_random(&self) -> u64 {
        let mut z = self.rng.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.rng.set(z);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_keeps_first_spelling_and_custom_order() {
        let mut t = Table::default();
        t.set("MY.Foo", "1".into(), 1);
        t.set("my.FOO", "2".into(), 2);
        t.set("MY.Bar", "3".into(), 3);
        assert_eq!(t.get("my.foo").map(|d| d.raw.as_str()), Some("2"));
        assert_eq!(t.get("MY.FOO").map(|d| d.name.as_str()), Some("MY.Foo"));
        assert_eq!(t.custom, vec!["Foo".to_string(), "Bar".to_string()]);
    }
}
