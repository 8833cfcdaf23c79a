//! Builtin functions: HTCondor's argument and environment strings
//! (`argsToList`, `listToArgs`, `envV1ToV2`, `mergeEnvironment`); the
//! syntax itself is `crate::args_env`.

use std::collections::BTreeMap;

use super::support::{as_str, c_str, str_list};
use super::Builtin;
use crate::args_env::{self as syntax, DoubleQuotes, V1Delimiters};
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("envV1ToV2", env_v1_to_v2),
    ("mergeEnvironment", merge_environment),
    ("listToArgs", list_to_args),
    ("argsToList", args_to_list),
];

/// The value HTCondor stores for an environment entry without `=` that
/// holds an unexpanded `$$()` macro (printed as the name alone).
const NO_ENVIRONMENT_VALUE: &[u8] = b"\x01\x02\x03\x04\x05\x06";

/// An environment, ordered by name as HTCondor's `Env` keeps it.
type Env = BTreeMap<Vec<u8>, Vec<u8>>;

/// Adds a `NAME=value` entry; `false` if it has no name or no `=` (unless
/// it holds a `$$` macro, kept verbatim).
fn set_env_entry(env: &mut Env, entry: &[u8]) -> bool {
    match syntax::env_entry(entry) {
        Some((name, value)) => {
            env.insert(name.to_vec(), value.to_vec());
            true
        }
        None if !entry.contains(&b'=') && entry.windows(2).any(|w| w == b"$$") => {
            env.insert(entry.to_vec(), NO_ENVIRONMENT_VALUE.to_vec());
            true
        }
        None => false,
    }
}

/// Merges a V1 environment string (HTCondor's `Env` class delimiters).
fn merge_env_v1(env: &mut Env, s: &[u8]) -> bool {
    syntax::v1_env_entries(c_str(s), V1Delimiters::Auto)
        .into_iter()
        .all(|e| set_env_entry(env, e))
}

/// Merges a V2 environment string (V2 argument syntax, one entry each).
fn merge_env_v2(env: &mut Env, s: &[u8]) -> bool {
    match syntax::split_v2(c_str(s), DoubleQuotes::Ordinary) {
        Ok(entries) => entries.iter().all(|e| set_env_entry(env, e)),
        Err(_) => false,
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
        syntax::push_v2_word(&entry, &mut out);
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
        let words = syntax::split_v1_args(c_str(s));
        return str_list(words.into_iter().map(<[u8]>::to_vec).collect());
    }
    match syntax::split_v2(c_str(s), DoubleQuotes::Ordinary) {
        Ok(items) => str_list(items),
        Err(_) => Val::Error,
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
            if s.iter().any(|&b| syntax::is_v1_arg_space(b)) {
                return Val::Error;
            }
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(c_str(s));
        } else {
            syntax::push_v2_word(c_str(s), &mut out);
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
