//! Attributes a job's `Requirements` looks up in the machine (`TARGET.x`, or a bare `x` the
//! job does not define) that no slot of the pool defines: such a clause is undefined on every
//! machine, so the job never matches. `skua submit` warns about them and
//! `skua q -better-analyze` names them with the closest names the slots do have
//! (`Memroy` → `Memory`).

use std::collections::BTreeMap;

use classad::ClassAd;

/// One attribute of the job's `Requirements` that no slot defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndefinedAttr {
    /// The name as the expression writes it.
    pub name: String,
    /// Names the slots do define that are closest to it (at most three, closest first).
    pub suggestions: Vec<String>,
}

/// The machine attributes `job`'s `Requirements` refers to that none of `slots` defines (none
/// when there are no slots: nothing can be said of an empty pool).
pub fn undefined_target_attrs(job: &ClassAd, slots: &[ClassAd]) -> Vec<UndefinedAttr> {
    let Some(req) = job.lookup("Requirements") else {
        return Vec::new();
    };
    if slots.is_empty() {
        return Vec::new();
    }
    // every name the slots define, lower-cased → as the first slot spells it
    let mut known: BTreeMap<String, String> = BTreeMap::new();
    for slot in slots {
        for (name, _) in slot.iter_chained() {
            known
                .entry(name.as_str().to_ascii_lowercase())
                .or_insert_with(|| name.as_str().to_string());
        }
    }
    let refs = classad::references(req, job);
    let text = classad::unparse(req);
    refs.external
        .iter()
        .filter(|name| !known.contains_key(&name.to_ascii_lowercase()))
        .map(|name| UndefinedAttr {
            name: as_written(&text, name),
            suggestions: closest(name, known.values()),
        })
        .collect()
}

/// `name` as `text` spells it (names are case-insensitive; the references come lower-cased).
fn as_written(text: &str, name: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let want = name.to_ascii_lowercase();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = lower[from..].find(&want) {
        let start = from + i;
        let end = start + want.len();
        let before = lower[..start].chars().next_back();
        let after = lower[end..].chars().next();
        if !before.is_some_and(ident) && !after.is_some_and(ident) {
            return text[start..end].to_string();
        }
        from = end;
    }
    name.to_string()
}

/// The names within a small edit distance of `name` (case ignored), closest first.
fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a String>) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let limit = if lower.chars().count() <= 3 { 1 } else { 2 };
    let mut scored: Vec<(usize, &String)> = candidates
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c.clone()).collect()
}

/// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbours each cost one.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).expect("ad")
    }

    #[test]
    fn distance_counts_a_swap_as_one() {
        assert_eq!(edit_distance("memroy", "memory"), 1);
        assert_eq!(edit_distance("disk", "disk"), 0);
        assert_eq!(edit_distance("cpu", "cpus"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn a_name_no_slot_defines_is_reported_with_the_closest_names() {
        let slots = [
            ad("[Memory = 100; Cpus = 1; Disk = 5; Arch = \"X86_64\"]"),
            ad("[Memory = 200; Cpus = 2; Disk = 5; Arch = \"X86_64\"; HasGpu = true]"),
        ];
        let job = ad(
            "[RequestMemory = 10; Requirements = TARGET.Memroy >= RequestMemory \
                      && Arch == \"X86_64\" && HasGpu && TARGET.NoSuchThing]",
        );
        let found = undefined_target_attrs(&job, &slots);
        let names: Vec<&str> = found.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, vec!["Memroy", "NoSuchThing"], "{found:?}");
        assert_eq!(found[0].suggestions, vec!["Memory".to_string()]);
        assert!(found[1].suggestions.is_empty());
        // a name one slot defines is fine; an empty pool says nothing
        let job = ad("[Requirements = HasGpu]");
        assert!(undefined_target_attrs(&job, &slots).is_empty());
        let job = ad("[Requirements = TARGET.Memroy > 0]");
        assert!(undefined_target_attrs(&job, &[]).is_empty());
    }
}
