//! Macro expansion: finding `$(NAME)`, `$(NAME:default)`, `$ENV(...)` and the function macros in
//! a value, and replacing them.
//!
//! Expansion repeats "find the first expandable macro from the start, replace it" until none is
//! left, so a replacement is itself expanded and names can be built from other macros
//! (`$(A$(B))`). `$$` is never a macro. `$(DOLLAR)` is left alone during that loop and turned into
//! `$` at the very end, so `$(DOLLAR)(X)` gives the text `$(X)`.
//!
//! Body rules follow HTCondor: a `$(...)` or `$ENV(...)` body is a name (letters, digits, `_`,
//! `.`, `/`) optionally followed by `:default`, where the default may hold balanced parentheses;
//! any other character means "not a macro here" and the search goes on from the next `$`. The
//! body of every other function (`$INT`, `$EVAL`, `$F...`) runs to the first `)`, whatever it
//! holds.

use crate::funcs::{self, Func};
use crate::ConfigError;

/// What macro expansion reads: the macro table, the environment (for `$ENV`) and a random
/// source (for `$RANDOM_*`). [`crate::Config`] is one; the submit language supplies its own.
pub trait MacroScope {
    /// The raw (unexpanded) value of the macro `name`, `None` when it is not defined.
    fn raw_lookup(&self, name: &str) -> Option<&str>;
    /// The environment variable `name`, for `$ENV(name)`.
    fn env_var(&self, name: &str) -> Option<&str>;
    /// The next pseudo-random number, for `$RANDOM_CHOICE` and `$RANDOM_INTEGER`.
    fn next_random(&self) -> u64;
    /// Whether `if defined NAME` holds: by default, a non-empty raw value is found.
    fn is_defined_for_if(&self, name: &str) -> bool {
        self.raw_lookup(name).is_some_and(|v| !v.is_empty())
    }
}

/// Replacements allowed in one expansion before it is declared non-terminating.
const MAX_STEPS: usize = 100_000;
/// Longest expansion result allowed.
const MAX_LEN: usize = 1 << 20;
/// Nesting of expansions (function arguments that are macros) allowed.
pub(crate) const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind<'s> {
    /// `$(name)` or `$(name:default)`.
    Plain {
        name: &'s str,
        default: Option<&'s str>,
    },
    /// `$ENV(name)` or `$ENV(name:default)`.
    Env {
        name: &'s str,
        default: Option<&'s str>,
    },
    /// `$INT(...)`, `$EVAL(...)`, ...
    Func { func: Func, body: &'s str },
    /// `$F<flags>(name)`.
    File { flags: &'s str, body: &'s str },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found<'s> {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) kind: Kind<'s>,
}

pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'/'
}

/// A valid knob name: non-empty, letters, digits, `_`, `.`, `/`.
pub(crate) fn is_valid_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_name_byte)
}

fn is_dollar(kind: &Kind<'_>) -> bool {
    matches!(kind, Kind::Plain { name, .. } if name.eq_ignore_ascii_case("DOLLAR"))
}

/// Parses `name[:default])` starting at `i` (just after the `(`); returns the name, the default
/// and the index just after the closing `)`.
fn name_body(s: &str, i: usize) -> Option<(&str, Option<&str>, usize)> {
    let b = s.as_bytes();
    let mut k = i;
    while k < b.len() && is_name_byte(b[k]) {
        k += 1;
    }
    match b.get(k) {
        Some(b')') => Some((&s[i..k], None, k + 1)),
        Some(b':') => {
            let mut depth = 0usize;
            let mut m = k + 1;
            while m < b.len() {
                match b[m] {
                    b'(' => depth += 1,
                    b')' if depth == 0 => return Some((&s[i..k], Some(&s[k + 1..m]), m + 1)),
                    b')' => depth -= 1,
                    _ => {}
                }
                m += 1;
            }
            None
        }
        _ => None,
    }
}

/// Finds the first macro at or after `from`. With `skip_dollar`, `$(DOLLAR)` is stepped over.
pub(crate) fn find_macro(s: &str, from: usize, skip_dollar: bool) -> Option<Found<'_>> {
    let b = s.as_bytes();
    let mut i = from;
    while i < b.len() {
        let p = i + s.get(i..)?.find('$')?;
        if b.get(p + 1) == Some(&b'$') {
            i = p + 2;
            continue;
        }
        let mut j = p + 1;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if b.get(j) != Some(&b'(') {
            i = p + 1;
            continue;
        }
        let ident = &s[p + 1..j];
        let body_start = j + 1;
        let found = match ident {
            "" | "ENV" => name_body(s, body_start).map(|(name, default, end)| {
                let kind = if ident.is_empty() {
                    Kind::Plain { name, default }
                } else {
                    Kind::Env { name, default }
                };
                Found {
                    start: p,
                    end,
                    kind,
                }
            }),
            _ => s[body_start..].find(')').and_then(|off| {
                let body = &s[body_start..body_start + off];
                let kind = if let Some(func) = Func::from_name(ident) {
                    Some(Kind::Func { func, body })
                } else if let Some(flags) = ident.strip_prefix('F') {
                    flags
                        .bytes()
                        .all(|c| b"fpdnxbqauwFPDNXBQAUW".contains(&c))
                        .then_some(Kind::File { flags, body })
                } else {
                    None
                };
                kind.map(|kind| Found {
                    start: p,
                    end: body_start + off + 1,
                    kind,
                })
            }),
        };
        match found {
            Some(f) if skip_dollar && is_dollar(&f.kind) => i = f.end,
            Some(f) => return Some(f),
            None => i = p + 1,
        }
    }
    None
}

/// Fully expands `text` (see the module documentation). `origin` is the knob whose value
/// `text` is, if any: meeting it again while expanding is a recursion.
///
/// Every byte of the working string remembers the chain of macro names whose expansion
/// produced it, so a macro that (directly or through others) expands to itself is reported
/// as [`ConfigError::Recursion`] instead of looping (HTCondor loops forever).
pub(crate) fn expand_at(
    scope: &dyn MacroScope,
    text: &str,
    depth: usize,
    origin: Option<&str>,
) -> Result<String, ConfigError> {
    let recursion = || ConfigError::Recursion {
        name: origin.unwrap_or(text).to_string(),
    };
    if depth > MAX_DEPTH {
        return Err(recursion());
    }
    if !text.contains('$') {
        return Ok(text.to_string());
    }
    // Chain nodes: (parent, upper-cased macro name); node 0 is the empty chain.
    let mut chains: Vec<(usize, String)> = vec![(0, String::new())];
    let root = match origin {
        Some(name) => {
            chains.push((0, name.to_ascii_uppercase()));
            1
        }
        None => 0,
    };
    let in_chain = |chains: &[(usize, String)], mut id: usize, name: &str| {
        while id != 0 {
            if chains[id].1 == name {
                return true;
            }
            id = chains[id].0;
        }
        false
    };
    let mut s = text.to_string();
    let mut ids: Vec<usize> = vec![root; s.len()];
    let mut steps = 0usize;
    while let Some(found) = find_macro(&s, 0, true) {
        let chain = ids.get(found.start).copied().unwrap_or(0);
        // Only a macro replaced by its own value (not by its default, which was already
        // part of the text) extends the chain.
        let new_chain = match &found.kind {
            Kind::Plain { name, .. } if scope.raw_lookup(name).is_some_and(|v| !v.is_empty()) => {
                let key = name.to_ascii_uppercase();
                if in_chain(&chains, chain, &key) {
                    return Err(recursion());
                }
                chains.push((chain, key));
                chains.len() - 1
            }
            _ => chain,
        };
        let replacement = replacement(scope, &found, depth)?;
        let (start, end) = (found.start, found.end);
        s.replace_range(start..end, &replacement);
        ids.splice(
            start..end,
            std::iter::repeat_n(new_chain, replacement.len()),
        );
        steps += 1;
        if steps > MAX_STEPS || s.len() > MAX_LEN {
            return Err(recursion());
        }
    }
    // Finally `$(DOLLAR)` becomes `$` (the result is not expanded again).
    let mut from = 0;
    while let Some(found) = find_macro(&s, from, false) {
        if is_dollar(&found.kind) {
            let start = found.start;
            s.replace_range(start..found.end, "$");
            from = 0;
        } else {
            from = found.start + 1;
        }
    }
    Ok(s)
}

fn replacement(
    scope: &dyn MacroScope,
    found: &Found<'_>,
    depth: usize,
) -> Result<String, ConfigError> {
    Ok(match &found.kind {
        Kind::Plain { name, default } => match scope.raw_lookup(name) {
            Some(raw) if !raw.is_empty() => raw.to_string(),
            _ => default.unwrap_or("").to_string(),
        },
        Kind::Env { name, default } => match scope.env_var(name) {
            Some(v) => v.to_string(),
            None => default.unwrap_or("UNDEFINED").to_string(),
        },
        Kind::Func { func, body } => funcs::call(scope, *func, body, depth)?,
        Kind::File { flags, body } => funcs::filename(scope, flags, body, depth)?,
    })
}

/// The value of the macro `name` for a function argument: `None` when `name` is not a
/// defined knob, `Some("")` when it is defined but empty, else its expanded value.
pub(crate) fn macro_value(
    scope: &dyn MacroScope,
    name: &str,
    depth: usize,
) -> Result<Option<String>, ConfigError> {
    if !is_valid_name(name) {
        return Ok(None);
    }
    match scope.raw_lookup(name) {
        None => Ok(None),
        Some("") => Ok(Some(String::new())),
        Some(raw) => Ok(Some(expand_at(scope, raw, depth + 1, Some(name))?)),
    }
}

/// Most self-reference substitutions made in one value (a previous value that refers to
/// itself again would otherwise never end).
const MAX_SELF_SUBSTITUTIONS: usize = 64;

/// Replaces the self-references in `value` (the value being assigned to a knob): every
/// `$(NAME)` / `$(NAME:default)` whose name is one of `self_names` becomes the value `lookup`
/// finds for the name as written (the previous definition, looked up as at this line), or the
/// default when that is missing or empty. The substituted text is scanned again. Other macros,
/// including their defaults and function bodies, are stepped over whole and left for lazy
/// expansion.
pub(crate) fn expand_self(
    value: &str,
    self_names: &[&str],
    lookup: impl Fn(&str) -> Option<String>,
) -> String {
    let mut s = value.to_string();
    let mut i = 0;
    let mut substitutions = 0;
    while let Some(found) = find_macro(&s, i, false) {
        let replacement = match found.kind {
            Kind::Plain { name, default }
                if substitutions < MAX_SELF_SUBSTITUTIONS
                    && self_names.iter().any(|n| n.eq_ignore_ascii_case(name)) =>
            {
                Some(match lookup(name) {
                    Some(prev) if !prev.is_empty() => prev,
                    _ => default.unwrap_or("").to_string(),
                })
            }
            _ => None,
        };
        let (start, end) = (found.start, found.end);
        match replacement {
            Some(rep) => {
                s.replace_range(start..end, &rep);
                substitutions += 1;
                i = start;
            }
            None => i = end,
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Option<(usize, usize, Kind<'_>)> {
        find_macro(s, 0, true).map(|f| (f.start, f.end, f.kind))
    }

    #[test]
    fn finds_plain_and_default_forms() {
        assert_eq!(
            kinds("a $(B) c"),
            Some((
                2,
                6,
                Kind::Plain {
                    name: "B",
                    default: None
                }
            ))
        );
        assert_eq!(
            kinds("$(NOPE:a(b)c)x"),
            Some((
                0,
                13,
                Kind::Plain {
                    name: "NOPE",
                    default: Some("a(b)c")
                }
            ))
        );
        // Inner macro first when the outer name is not a plain name.
        assert_eq!(
            kinds("$(A$(B))"),
            Some((
                3,
                7,
                Kind::Plain {
                    name: "B",
                    default: None
                }
            ))
        );
    }

    #[test]
    fn skips_non_macros() {
        assert_eq!(kinds("$$(X) $( X ) $(X-Y) $FOO(x) $env(HOME)"), None);
        assert_eq!(kinds("$(DOLLAR)"), None);
        assert!(find_macro("$(DOLLAR)", 0, false).is_some());
    }

    #[test]
    fn function_bodies_end_at_first_paren() {
        assert_eq!(
            kinds("$EVAL(strcat(\"a\",\"b\"))"),
            Some((
                0,
                21,
                Kind::Func {
                    func: Func::Eval,
                    body: "strcat(\"a\",\"b\""
                }
            ))
        );
        assert_eq!(
            kinds("$Fpn(P)"),
            Some((
                0,
                7,
                Kind::File {
                    flags: "pn",
                    body: "P"
                }
            ))
        );
        assert_eq!(kinds("$Fz(P)"), None);
    }

    #[test]
    fn self_references_use_the_previous_value() {
        let one = |_: &str| Some("1".to_string());
        let none = |_: &str| None;
        assert_eq!(expand_self("$(A) 2", &["A"], one), "1 2");
        assert_eq!(expand_self("$(a) $(B)", &["A"], one), "1 $(B)");
        assert_eq!(expand_self("$(A) x", &["A"], none), " x");
        assert_eq!(expand_self("$(A:init) x", &["A"], none), "init x");
        assert_eq!(expand_self("$$(A) x", &["A"], one), "$$(A) x");
        assert_eq!(expand_self("$(B:$(A))", &["A"], one), "$(B:$(A))");
        let six = |_: &str| Some("6".to_string());
        assert_eq!(
            expand_self("$EVAL($(A) * 7)", &["A"], six),
            "$EVAL($(A) * 7)"
        );
        assert_eq!(expand_self("$(A$(A))", &["A"], one), "$(A1)");
        // The substituted text is scanned again; the names are looked up as written.
        let prev = |n: &str| (n == "L.A").then(|| "$(A)".to_string());
        assert_eq!(expand_self("$(L.A:d)", &["L.A", "A"], prev), "");
        let looping = |_: &str| Some("$(A)".to_string());
        assert_eq!(expand_self("$(A)", &["A"], looping), "$(A)");
    }
}
