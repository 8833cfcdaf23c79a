//! Lookups in the built-in default table (see `defaults_table.rs`).

use crate::defaults_table::{DEFAULTS, SUBSYSTEM_DEFAULTS};
use std::cmp::Ordering;

fn cmp_upper(a: &str, b: &str) -> Ordering {
    a.bytes()
        .map(|c| c.to_ascii_uppercase())
        .cmp(b.bytes().map(|c| c.to_ascii_uppercase()))
}

/// The default of `name` for `subsystem`: `(name as in the table, raw default)`.
pub(crate) fn lookup(subsystem: &str, name: &str) -> Option<(&'static str, &'static str)> {
    if let Some((_, n, v)) = SUBSYSTEM_DEFAULTS
        .iter()
        .find(|(s, n, _)| s.eq_ignore_ascii_case(subsystem) && n.eq_ignore_ascii_case(name))
    {
        return Some((n, v));
    }
    DEFAULTS
        .binary_search_by(|(n, _)| cmp_upper(n, name))
        .ok()
        .and_then(|i| DEFAULTS.get(i))
        .map(|(n, v)| (*n, *v))
}

/// The generic defaults, sorted by name.
pub(crate) fn all() -> impl Iterator<Item = (&'static str, &'static str)> {
    DEFAULTS.iter().map(|(n, v)| (*n, *v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        for pair in DEFAULTS.windows(2) {
            assert_eq!(cmp_upper(pair[0].0, pair[1].0), Ordering::Less, "{pair:?}");
        }
    }

    #[test]
    fn lookups_are_case_insensitive_and_subsystem_aware() {
        assert_eq!(lookup("TOOL", "start").map(|x| x.1), Some("True"));
        assert_eq!(
            lookup("TOOL", "Negotiator_Interval").map(|x| x.1),
            Some("60")
        );
        assert_eq!(lookup("TOOL", "MaxJobRetirementTime"), None);
        assert_eq!(lookup("TOOL", "CLASSAD_LIFETIME"), None);
        assert_eq!(lookup("STARTD", "IsStartd").map(|x| x.1), Some("true"));
        assert_eq!(lookup("TOOL", "IsStartd").map(|x| x.1), Some("false"));
    }
}
