//! Builtin functions: HTCondor's argument and environment strings
//! (`argsToList`, `listToArgs`, `envV1ToV2`, `mergeEnvironment`).

use std::collections::BTreeMap;

use super::support::{as_str, c_str, str_list};
use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("envV1ToV2", env_v1_to_v2),
    ("mergeEnvironment", merge_environment),
    ("listToArgs", list_to_args),
    ("argsToList", args_to_list),
];

/// Appends one argument in HTCondor's V2 syntax: whitespace and `'` are
/// single-quoted (a quote doubled), adjacent quoted sections merged, an
/// empty argument is `''`.
fn append_arg(arg: &[u8], out: &mut Vec<u8>) {
    if !out.is_empty() {
        out.push(b' ');
    }
    if arg.is_empty() {
        out.extend_from_slice(b"''");
    }
    for &c in arg {
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\'') {
            if out.last() == Some(&b'\'') {
                out.pop();
            } else {
                out.push(b'\'');
            }
            if c == b'\'' {
                out.push(b'\'');
            }
            out.push(c);
            out.push(b'\'');
        } else {
            out.push(c);
        }
    }
}

/// Parses a V2 argument string: whitespace separates, `'...'` quotes (with
/// `''` for a quote). `None` on an unbalanced quote.
fn split_v2_args(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let s = c_str(s);
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut in_token = false;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\'' => {
                in_token = true;
                i += 1;
                loop {
                    match s.get(i) {
                        None => return None,
                        Some(b'\'') if s.get(i + 1) == Some(&b'\'') => {
                            buf.push(b'\'');
                            i += 2;
                        }
                        Some(b'\'') => break,
                        Some(&c) => {
                            buf.push(c);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                if in_token {
                    in_token = false;
                    out.push(std::mem::take(&mut buf));
                }
            }
            c => {
                in_token = true;
                buf.push(c);
                i += 1;
            }
        }
    }
    if in_token {
        out.push(buf);
    }
    Some(out)
}

/// Parses a V1 (Unix) argument string: items separated by whitespace.
fn split_v1_args(s: &[u8]) -> Vec<Vec<u8>> {
    c_str(s)
        .split(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .filter(|t| !t.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The value HTCondor stores for an environment entry without `=` that
/// holds an unexpanded `$$()` macro (printed as the name alone).
const NO_ENVIRONMENT_VALUE: &[u8] = b"\x01\x02\x03\x04\x05\x06";

/// An environment, ordered by name as HTCondor's `Env` keeps it.
type Env = BTreeMap<Vec<u8>, Vec<u8>>;

/// Adds a `NAME=value` entry; `false` if it has no name or no `=` (unless
/// it holds a `$$` macro, kept verbatim).
fn set_env_entry(env: &mut Env, entry: &[u8]) -> bool {
    if entry.is_empty() {
        return false;
    }
    match entry.iter().position(|&b| b == b'=') {
        Some(0) => false,
        Some(i) => {
            env.insert(entry[..i].to_vec(), entry[i + 1..].to_vec());
            true
        }
        None if entry.windows(2).any(|w| w == b"$$") => {
            env.insert(entry.to_vec(), NO_ENVIRONMENT_VALUE.to_vec());
            true
        }
        None => false,
    }
}

/// Merges a V1 environment string: entries separated by `;` (or by the
/// first character, if it is one of HTCondor's permitted delimiters) or a
/// newline, leading whitespace of each entry dropped, empty entries
/// skipped.
fn merge_env_v1(env: &mut Env, s: &[u8]) -> bool {
    let s = c_str(s);
    let Some(&first) = s.first() else { return true };
    let mut delim = b';';
    let mut rest = s;
    if first == delim {
        rest = &s[1..];
    } else if b"!#$%&*+,-/:;<>?@^`|~\x1F".contains(&first) {
        delim = first;
        rest = &s[1..];
    }
    while !rest.is_empty() {
        let skip = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count();
        rest = &rest[skip..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == delim)
            .unwrap_or(rest.len());
        let entry = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        if !entry.is_empty() && !set_env_entry(env, entry) {
            return false;
        }
    }
    true
}

/// Merges a V2 environment string (V2 argument syntax, one entry each).
fn merge_env_v2(env: &mut Env, s: &[u8]) -> bool {
    match split_v2_args(s) {
        Some(entries) => entries.iter().all(|e| set_env_entry(env, e)),
        None => false,
    }
}

/// The V2 text of an environment.
fn env_to_v2(env: &Env) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in env {
        let mut entry = name.clone();
        if value != NO_ENVIRONMENT_VALUE {
            entry.push(b'=');
            entry.extend_from_slice(value);
        }
        append_arg(&entry, &mut out);
    }
    out
}

/// `envV1ToV2(env)`: converts a V1 environment string to V2 syntax;
/// `undefined` stays `undefined`, a non-string or malformed entry is
/// `error`.
fn env_v1_to_v2(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [arg] = args else { return Val::Error };
    match ev.eval_in(arg, cur) {
        Val::Undefined => Val::Undefined,
        Val::Str(s) => {
            let mut env = Env::new();
            if merge_env_v1(&mut env, &s) {
                Val::str(env_to_v2(&env))
            } else {
                Val::Error
            }
        }
        _ => Val::Error,
    }
}

/// `mergeEnvironment(env...)`: merges V2 environment strings left to right
/// (later definitions win) into one V2 string, ordered by name; `undefined`
/// arguments are skipped, anything else that is not a valid V2
/// environment string is `error`.
fn merge_environment(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let mut env = Env::new();
    for arg in args {
        match ev.eval_in(arg, cur) {
            Val::Undefined => {}
            Val::Str(s) => {
                if !merge_env_v2(&mut env, &s) {
                    return Val::Error;
                }
            }
            _ => return Val::Error,
        }
    }
    Val::str(env_to_v2(&env))
}

/// The optional version argument of `argsToList` / `listToArgs`: an
/// integer, 1 or 2 (as a C `int`); default 2.
fn args_version(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Option<i32> {
    match args.get(1) {
        None => Some(2),
        Some(e) => match ev.eval_in(e, cur) {
            Val::Int(i) => Some(i as i32).filter(|v| *v == 1 || *v == 2),
            _ => None,
        },
    }
}

/// `argsToList(args[, version])`: splits an argument string (V2 syntax by
/// default, V1 = whitespace-separated) into a list of strings.
fn args_to_list(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() || args.len() > 2 {
        return Val::Error;
    }
    let Some(version) = args_version(ev, args, cur) else {
        return Val::Error;
    };
    let v = ev.eval_in(&args[0], cur);
    let Some(s) = as_str(&v) else {
        return Val::Error;
    };
    if version == 1 {
        return str_list(split_v1_args(s));
    }
    match split_v2_args(s) {
        Some(items) => str_list(items),
        None => Val::Error,
    }
}

/// `listToArgs(list[, version])`: joins a list of strings into an argument
/// string (V2 quoting by default; V1 fails on arguments with whitespace).
fn list_to_args(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() || args.len() > 2 {
        return Val::Error;
    }
    let Some(version) = args_version(ev, args, cur) else {
        return Val::Error;
    };
    let Val::List(items, scope) = ev.eval_in(&args[0], cur) else {
        return Val::Error;
    };
    let mut strs = Vec::with_capacity(items.len());
    for item in items.iter() {
        match ev.eval_in(item, scope) {
            Val::Str(s) => strs.push(s),
            _ => return Val::Error,
        }
    }
    let mut out = Vec::new();
    for s in &strs {
        if version == 1 {
            if s.iter().any(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')) {
                return Val::Error;
            }
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(c_str(s));
        } else {
            append_arg(c_str(s), &mut out);
        }
    }
    Val::str(out)
}

#[cfg(test)]
mod tests {
    use crate::functions::testing::ev;

    #[test]
    fn environment_strings() {
        assert_eq!(ev("envV1ToV2(\"A=1;B=2\")"), "\"A=1 B=2\"");
        assert_eq!(ev("envV1ToV2(\"A=1 2;B='x'\")"), "\"A=1' '2 B=''''x''''\"");
        assert_eq!(ev("envV1ToV2(\"|B=1|A=2\")"), "\"A=2 B=1\"");
        assert_eq!(ev("envV1ToV2(\"\")"), "\"\"");
        assert_eq!(ev("envV1ToV2(\"A\")"), "error");
        assert_eq!(ev("envV1ToV2(undefined)"), "undefined");
        assert_eq!(ev("envV1ToV2(1)"), "error");
        assert_eq!(ev("mergeEnvironment(\"A=1 B=2\", \"A=3\")"), "\"A=3 B=2\"");
        assert_eq!(ev("mergeEnvironment(undefined, \"A=1\")"), "\"A=1\"");
        assert_eq!(ev("mergeEnvironment()"), "\"\"");
        assert_eq!(ev("mergeEnvironment(\"'A=1\")"), "error");
        assert_eq!(ev("mergeEnvironment(1)"), "error");
    }

    #[test]
    fn argument_strings() {
        assert_eq!(ev("listToArgs({\"a\", \"b c\"})"), "\"a b' 'c\"");
        assert_eq!(ev("listToArgs({\"a'b\"})"), "\"a''''b\"");
        assert_eq!(ev("listToArgs({\"\"})"), "\"''\"");
        assert_eq!(ev("listToArgs({})"), "\"\"");
        assert_eq!(ev("listToArgs({\"a\", \"b\"}, 1)"), "\"a b\"");
        assert_eq!(ev("listToArgs({\"a b\"}, 1)"), "error");
        assert_eq!(ev("listToArgs({1, 2})"), "error");
        assert_eq!(ev("listToArgs(\"a\")"), "error");
        assert_eq!(ev("argsToList(\"a 'b c'\")"), "{ \"a\",\"b c\" }");
        assert_eq!(ev("argsToList(\"'a''b'\")"), "{ \"a'b\" }");
        assert_eq!(ev("argsToList(\"''\")"), "{ \"\" }");
        assert_eq!(ev("argsToList(\"a 'b\")"), "error");
        assert_eq!(ev("argsToList(\"a 'b\", 1)"), "{ \"a\",\"'b\" }");
        assert_eq!(ev("argsToList(\"a\", 3)"), "error");
        assert_eq!(ev("argsToList(undefined)"), "error");
    }
}
