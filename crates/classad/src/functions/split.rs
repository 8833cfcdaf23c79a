//! Builtin functions: HTCondor's `split`, `splitUserName` and
//! `splitSlotName`.

use super::support::{as_str, c_str, eval_all, is_c_space, str_list};
use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("split", split),
    ("splitUserName", split_user_name),
    ("splitSlotName", split_slot_name),
];

/// `split(s[, seps])`: splits at any byte of `seps` (default comma, space,
/// tab). Runs of whitespace and separators mixed with whitespace count as
/// one separator, but a non-space separator repeated directly gives an
/// empty item (`split("a,,b")` is `{"a", "", "b"}`).
fn split(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() || args.len() > 2 {
        return Val::Error;
    }
    let vals = eval_all(ev, args, cur);
    let Some(s) = as_str(&vals[0]) else {
        return Val::Error;
    };
    let seps: &[u8] = match vals.get(1) {
        Some(v) => match as_str(v) {
            Some(seps) => seps,
            None => return Val::Error,
        },
        None => b", \t",
    };
    str_list(split_arbitrary(c_str(s), c_str(seps)))
}

fn split_arbitrary(s: &[u8], seps: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut last = 0;
    if !seps.is_empty() {
        // The last non-space separator seen.
        let mut prev_sep: Option<u8> = None;
        for (ix, &c) in s.iter().enumerate() {
            if !seps.contains(&c) {
                continue;
            }
            if ix > last {
                out.push(s[last..ix].to_vec());
            } else if prev_sep == Some(c) {
                out.push(Vec::new());
            }
            if !is_c_space(c) {
                prev_sep = Some(c);
            }
            last = ix + 1;
        }
    }
    if s.len() > last {
        out.push(s[last..].to_vec());
    }
    out
}

/// `splitUserName(s)`: `{user, domain}` split at the first `@`
/// (`{s, ""}` without one).
fn split_user_name(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    split_at(ev, args, cur, false)
}

/// `splitSlotName(s)`: `{slot, host}` split at the first `@`
/// (`{"", s}` without one).
fn split_slot_name(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    split_at(ev, args, cur, true)
}

fn split_at(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, host_if_alone: bool) -> Val {
    let [arg] = args else { return Val::Error };
    let v = ev.eval_in(arg, cur);
    let Some(s) = as_str(&v) else {
        return Val::Error;
    };
    let s = c_str(s);
    let (first, second) = match s.iter().position(|&b| b == b'@') {
        Some(i) => (s[..i].to_vec(), s[i + 1..].to_vec()),
        None if host_if_alone => (Vec::new(), s.to_vec()),
        None => (s.to_vec(), Vec::new()),
    };
    str_list(vec![first, second])
}

#[cfg(test)]
mod tests {
    use crate::functions::testing::ev;

    #[test]
    fn split_functions() {
        assert_eq!(ev("split(\"a, b  c\")"), "{ \"a\",\"b\",\"c\" }");
        assert_eq!(ev("split(\"a,,b\", \",\")"), "{ \"a\",\"\",\"b\" }");
        assert_eq!(ev("split(\"a;;b\", \";\")"), "{ \"a\",\"\",\"b\" }");
        assert_eq!(ev("split(\"\")"), "{  }");
        assert_eq!(ev("split(\" \")"), "{  }");
        assert_eq!(ev("split(\"abc\", \"\")"), "{ \"abc\" }");
        assert_eq!(ev("split(undefined)"), "error");
        assert_eq!(ev("split(\"a\", undefined)"), "error");
        assert_eq!(
            ev("splitUserName(\"foo@bar@baz\")"),
            "{ \"foo\",\"bar@baz\" }"
        );
        assert_eq!(ev("splitUserName(\"foo\")"), "{ \"foo\",\"\" }");
        assert_eq!(ev("splitSlotName(\"host\")"), "{ \"\",\"host\" }");
        assert_eq!(
            ev("splitSlotName(\"slot1@host\")"),
            "{ \"slot1\",\"host\" }"
        );
        assert_eq!(ev("splitSlotName(1)"), "error");
        assert_eq!(ev("splitUserName()"), "error");
    }
}
