//! `use CATEGORY : TEMPLATE[(args)] ...` metaknobs: template lookup, the template list syntax
//! and argument substitution.
//!
//! Arguments are split at every comma and trimmed; empty arguments are not counted (so
//! `(3,,7)` has two arguments, `3` and `7`), as in HTCondor. In a template body: `$(N)` is
//! argument N (empty if absent), `$(N:default)` is argument N if given else the default,
//! `$(N+)` is the text after the (N-1)-th comma when argument N is given (`$(N+:default)`
//! likewise), `$(N?)` is `1` when argument N is given else `0`, `$(0)` is all the argument text,
//! `$(0#)` the number of arguments.

use crate::lines::{is_c_space, trim_c};
use crate::metaknob_table::METAKNOBS;

/// Why a template could not be found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    Category,
    Template,
}

/// The body of template `name` in `category` (both case-insensitive).
pub(crate) fn template(category: &str, name: &str) -> Result<&'static str, Missing> {
    let mut category_known = false;
    for (c, n, body) in METAKNOBS {
        if c.eq_ignore_ascii_case(category) {
            category_known = true;
            if n.eq_ignore_ascii_case(name) {
                return Ok(body);
            }
        }
    }
    Err(if category_known {
        Missing::Template
    } else {
        Missing::Category
    })
}

/// Whether `category` names a metaknob category.
pub(crate) fn category_exists(category: &str) -> bool {
    METAKNOBS
        .iter()
        .any(|(c, _, _)| c.eq_ignore_ascii_case(category))
}

/// One entry of a `use` list: a template name and its argument text (inside the parentheses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UseItem {
    pub(crate) name: String,
    pub(crate) args: Option<String>,
}

/// Parses `A, B(x, y) C` into items.
pub(crate) fn parse_list(list: &str) -> Result<Vec<UseItem>, String> {
    let chars: Vec<char> = list.chars().collect();
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && (is_c_space(chars[i]) || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            return Ok(items);
        }
        let start = i;
        while i < chars.len() && !is_c_space(chars[i]) && chars[i] != ',' && chars[i] != '(' {
            i += 1;
        }
        let name: String = chars[start..i].iter().collect();
        if name.is_empty() {
            return Err(format!("unexpected `{}`", chars[i]));
        }
        let mut j = i;
        while j < chars.len() && is_c_space(chars[j]) {
            j += 1;
        }
        let mut args = None;
        if chars.get(j) == Some(&'(') {
            let mut depth = 0usize;
            let mut k = j + 1;
            loop {
                match chars.get(k) {
                    None => return Err(format!("unbalanced parentheses after `{name}`")),
                    Some('(') => depth += 1,
                    Some(')') if depth == 0 => break,
                    Some(')') => depth -= 1,
                    Some(_) => {}
                }
                k += 1;
            }
            args = Some(chars[j + 1..k].iter().collect());
            i = k + 1;
        }
        items.push(UseItem { name, args });
    }
}

/// The arguments: the text split at every comma (parentheses do not protect commas), trimmed,
/// empty ones dropped, as HTCondor counts them.
fn split_args(args: &str) -> Vec<&str> {
    args.split(',')
        .map(trim_c)
        .filter(|a| !a.is_empty())
        .collect()
}

/// `$(N+)`: the argument text after the (N-1)-th comma, trimmed.
fn args_from(args: &str, n: usize) -> &str {
    let mut rest = args;
    for _ in 1..n {
        match rest.find(',') {
            Some(i) => rest = &rest[i + 1..],
            None => return "",
        }
    }
    trim_c(rest)
}

/// Substitutes the template arguments into `body`.
pub(crate) fn expand_args(body: &str, args: Option<&str>) -> String {
    let args_text = args.unwrap_or("");
    let list = split_args(args_text);
    let all = trim_c(args_text);
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(p) = rest.find("$(") {
        out.push_str(&rest[..p]);
        let after = &rest[p + 2..];
        match parse_arg_ref(after) {
            Some((n, suffix, default, used)) => {
                let given = n >= 1 && n <= list.len();
                let value = match (n, suffix) {
                    (_, Some('#')) => Some(list.len().to_string()),
                    (0, Some('?')) => Some(if list.is_empty() { "0" } else { "1" }.to_string()),
                    (_, Some('?')) => Some(if given { "1" } else { "0" }.to_string()),
                    (0, _) => (!list.is_empty()).then(|| all.to_string()),
                    (_, Some('+')) => given.then(|| args_from(args_text, n).to_string()),
                    _ => given.then(|| list[n - 1].to_string()),
                };
                match value {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(default.unwrap_or("")),
                }
                rest = &after[used..];
            }
            None => {
                out.push_str("$(");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parses `N[+?#][:default])` at the start of `s`; returns the number, the suffix, the default and
/// the bytes consumed (including the `)`).
fn parse_arg_ref(s: &str) -> Option<(usize, Option<char>, Option<&str>, usize)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: usize = s[..digits].parse().ok()?;
    let mut i = digits;
    let suffix = match s.as_bytes().get(i) {
        Some(&c @ (b'+' | b'?' | b'#')) => {
            i += 1;
            Some(c as char)
        }
        _ => None,
    };
    match s.as_bytes().get(i) {
        Some(b')') => Some((n, suffix, None, i + 1)),
        Some(b':') => {
            let mut depth = 0usize;
            for (k, c) in s[i + 1..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        return Some((n, suffix, Some(&s[i + 1..i + 1 + k]), i + 2 + k));
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(
            parse_list("Submit, Execute CentralManager").expect("list"),
            vec![
                UseItem {
                    name: "Submit".into(),
                    args: None
                },
                UseItem {
                    name: "Execute".into(),
                    args: None
                },
                UseItem {
                    name: "CentralManager".into(),
                    args: None
                },
            ]
        );
        assert_eq!(
            parse_list("PartitionableSlot (2, x(y,z)) StaticSlots").expect("list"),
            vec![
                UseItem {
                    name: "PartitionableSlot".into(),
                    args: Some("2, x(y,z)".into())
                },
                UseItem {
                    name: "StaticSlots".into(),
                    args: None
                },
            ]
        );
        assert!(parse_list("A(b").is_err());
    }

    #[test]
    fn arguments() {
        let body = "N=$(1:1) S=$(2+:100%) Q=$(3?) C=$(0#) A=$(0)";
        assert_eq!(expand_args(body, None), "N=1 S=100% Q=0 C=0 A=");
        assert_eq!(
            expand_args(body, Some("2, cpus=50%,  mem=50% ")),
            "N=2 S=cpus=50%,  mem=50% Q=1 C=3 A=2, cpus=50%,  mem=50%"
        );
        assert_eq!(expand_args("[$(1:1)] [$(2+:d)]", Some(",x")), "[x] [d]");
        assert_eq!(expand_args("[$(2)] [$(2+)]", Some("2,,y")), "[y] [,y]");
        assert_eq!(
            expand_args("[$(2)] [$(3+)]", Some("3, f(a,b), q")),
            "[f(a] [b), q]"
        );
        assert_eq!(expand_args("$($(1))", Some("FOO")), "$(FOO)");
        assert_eq!(expand_args("$(X) $(1", Some("a")), "$(X) $(1");
    }

    #[test]
    fn lookups() {
        assert!(template("role", "personal").is_ok());
        assert_eq!(template("ROLE", "Nope"), Err(Missing::Template));
        assert_eq!(template("NOPE", "x"), Err(Missing::Category));
        assert!(category_exists("Feature"));
    }
}
