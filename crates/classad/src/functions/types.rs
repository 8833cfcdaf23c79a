//! Builtin functions: the type predicates (`isUndefined`, `isString`, ...).
//!
//! Each takes exactly one argument (otherwise `error`), evaluates it and
//! says whether the value has the tested type. They never propagate
//! `undefined` or `error`: those are just types to test for.

use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("isUndefined", is_undefined),
    ("isError", is_error),
    ("isString", is_string),
    ("isInteger", is_integer),
    ("isReal", is_real),
    ("isBoolean", is_boolean),
    ("isList", is_list),
    ("isClassAd", is_classad),
    ("isAbsTime", is_abstime),
    ("isRelTime", is_reltime),
];

/// Evaluates the single argument and applies `test`; any other number of
/// arguments is `error`.
fn type_test(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
    test: fn(&Val) -> bool,
) -> Val {
    match args {
        [arg] => {
            let v = ev.eval_in(arg, cur);
            Val::Bool(test(&v))
        }
        _ => Val::Error,
    }
}

/// `isUndefined(x)`: `x` is `undefined`.
fn is_undefined(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Undefined))
}

/// `isError(x)`: `x` is `error`.
fn is_error(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Error))
}

/// `isString(x)`: `x` is a string.
fn is_string(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Str(_)))
}

/// `isInteger(x)`: `x` is an integer (booleans are not).
fn is_integer(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Int(_)))
}

/// `isReal(x)`: `x` is a real (relative times are not).
fn is_real(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Real(_)))
}

/// `isBoolean(x)`: `x` is `true` or `false` (numbers are not).
fn is_boolean(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Bool(_)))
}

/// `isList(x)`: `x` is a list.
fn is_list(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::List(..)))
}

/// `isClassAd(x)`: `x` is a ClassAd.
fn is_classad(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Ad(_)))
}

/// `isAbsTime(x)`: `x` is an absolute time.
fn is_abstime(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Abs(_)))
}

/// `isRelTime(x)`: `x` is a relative time.
fn is_reltime(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    type_test(ev, args, cur, |v| matches!(v, Val::Rel(_)))
}

#[cfg(test)]
mod tests {

    use crate::functions::testing::{ev, ev_in};

    #[test]
    fn is_undefined_and_error() {
        assert_eq!(ev("isUndefined(undefined)"), "true");
        assert_eq!(ev("isUndefined(1)"), "false");
        assert_eq!(ev("isUndefined(x)"), "true");
        assert_eq!(ev("isUndefined()"), "error");
        assert_eq!(ev("isError(1/0)"), "true");
        assert_eq!(ev("isError(\"e\")"), "false");
        assert_eq!(ev("isError(1, 2)"), "error");
    }

    #[test]
    fn scalar_predicates() {
        assert_eq!(ev("isString(\"\")"), "true");
        assert_eq!(ev("isString(1)"), "false");
        assert_eq!(ev("isInteger(1)"), "true");
        assert_eq!(ev("isInteger(true)"), "false");
        assert_eq!(ev("isInteger(\"1\")"), "false");
        assert_eq!(ev("isReal(1.0)"), "true");
        assert_eq!(ev("isReal(0.0 / 0.0)"), "true");
        assert_eq!(ev("isReal(1)"), "false");
        assert_eq!(ev("isBoolean(false)"), "true");
        assert_eq!(ev("isBoolean(\"true\")"), "false");
    }

    #[test]
    fn compound_and_time_predicates() {
        assert_eq!(ev("isList({})"), "true");
        assert_eq!(ev("isList([a=1])"), "false");
        assert_eq!(ev("isClassAd([])"), "true");
        assert_eq!(ev("isClassAd({})"), "false");
        assert_eq!(ev("isClassAd(MY)"), "false");
        assert_eq!(ev_in("isClassAd(MY)", "[a = 1]"), "true");
        let at = "absTime(\"2020-01-01T00:00:00Z\")";
        assert_eq!(ev(&format!("isAbsTime({at})")), "true");
        assert_eq!(ev("isAbsTime(0)"), "false");
        assert_eq!(ev(&format!("isRelTime({at} - {at})")), "true");
        assert_eq!(ev(&format!("isRelTime({at})")), "false");
        assert_eq!(ev(&format!("isReal({at} - {at})")), "false");
        assert_eq!(
            ev_in("isString(s) && isInteger(a)", "[s = \"x\"; a = 1]"),
            "true"
        );
    }
}
