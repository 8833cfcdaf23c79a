//! The credential ids a server refuses: revoked host certificates.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

/// A shared set of revoked credential ids (certificate serials, lowercase
/// hex). Cheap to clone: clones share the set, so a daemon refreshes it
/// in one place and its server sees the change at the next request.
#[derive(Clone, Debug, Default)]
pub struct Revocations {
    ids: Arc<RwLock<HashSet<String>>>,
}

fn normalize(id: &str) -> String {
    id.trim().to_ascii_lowercase()
}

impl Revocations {
    /// An empty set.
    pub fn new() -> Self {
        Revocations::default()
    }

    /// Replaces the whole set (a fresh list from the collector).
    pub fn replace<I, S>(&self, ids: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let fresh: HashSet<String> = ids.into_iter().map(|s| normalize(s.as_ref())).collect();
        *self.ids.write().unwrap_or_else(|p| p.into_inner()) = fresh;
    }

    /// Adds one id; returns whether it was new.
    pub fn insert(&self, id: &str) -> bool {
        self.ids
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(normalize(id))
    }

    /// Whether `id` is revoked.
    pub fn contains(&self, id: &str) -> bool {
        self.ids
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&normalize(id))
    }

    /// Every revoked id, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .ids
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_set_and_ids_are_case_insensitive() {
        let r = Revocations::new();
        let seen_by_server = r.clone();
        assert!(!seen_by_server.contains("ab12"));
        assert!(r.insert("AB12"));
        assert!(!r.insert("ab12"));
        assert!(seen_by_server.contains("ab12"));
        r.replace(["01", "ff"]);
        assert!(!seen_by_server.contains("ab12"));
        assert_eq!(seen_by_server.ids(), vec!["01", "ff"]);
    }
}
