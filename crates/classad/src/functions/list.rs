//! Builtin functions: list family (`size`, `member`, `identicalMember`,
//! `sum`, `avg`, `min`, `max`, `anyCompare`, `allCompare`).
//!
//! List elements are evaluated lazily, in the scope the list lives in.

use std::sync::Arc;

use super::Builtin;
use crate::ast::{BinOp, Expr};
use crate::eval::{binary, Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("size", size),
    ("member", member),
    ("identicalMember", identical_member),
    ("sum", sum),
    ("avg", avg),
    ("min", min),
    ("max", max),
    ("anyCompare", any_compare),
    ("allCompare", all_compare),
];

/// The elements and scope of a list value.
type ListParts = (Arc<Vec<Expr>>, Option<FrameId>);

/// Evaluates the single list argument of `sum`, `avg`, `min` and `max`:
/// `Err` carries the result to return (UNDEFINED for UNDEFINED, ERROR for
/// a non-list or a wrong number of arguments).
fn list_arg(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Result<ListParts, Val> {
    let [a] = args else { return Err(Val::Error) };
    match ev.eval_in(a, cur) {
        Val::List(items, scope) => Ok((items, scope)),
        Val::Undefined => Err(Val::Undefined),
        _ => Err(Val::Error),
    }
}

/// Booleans, integers and reals: the values `sum`/`min`/... accept.
fn is_number(v: &Val) -> bool {
    matches!(v, Val::Bool(_) | Val::Int(_) | Val::Real(_))
}

/// `size(x)`: the number of bytes of a string, elements of a list or
/// attributes of an ad; UNDEFINED stays UNDEFINED, other types are ERROR.
fn size(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [a] = args else { return Val::Error };
    match ev.eval_in(a, cur) {
        Val::Undefined => Val::Undefined,
        Val::List(items, _) => Val::Int(items.len() as i64),
        Val::Ad(f) => Val::Int(ev.frame_ad(f).len() as i64),
        Val::Str(s) => Val::Int(s.len() as i64),
        _ => Val::Error,
    }
}

/// The shared body of `member` and `identicalMember`: whether some element
/// of the list compares `==` (resp. `=?=`) to the value. An UNDEFINED list
/// (or, for `member`, value) gives UNDEFINED; a non-list, a list or ad
/// value, or (for `member`) an ERROR value give ERROR.
fn test_member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, identical: bool) -> Val {
    let [a, b] = args else { return Val::Error };
    let x = ev.eval_in(a, cur);
    let list = ev.eval_in(b, cur);
    if list.is_undef() || (!identical && x.is_undef()) {
        return Val::Undefined;
    }
    let Val::List(items, scope) = list else {
        return Val::Error;
    };
    if matches!(x, Val::List(..) | Val::Ad(_)) || (!identical && x.is_err()) {
        return Val::Error;
    }
    let op = if identical { BinOp::Is } else { BinOp::Eq };
    for item in items.iter() {
        let v = ev.eval_in(item, scope);
        if let Val::Bool(true) = binary(op, v, x.clone()) {
            return Val::Bool(true);
        }
    }
    Val::Bool(false)
}

/// `member(x, list)`: whether `x == e` for some element `e` (so strings
/// match case-insensitively and `1` matches `1.0`).
fn member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    test_member(ev, args, cur, false)
}

/// `identicalMember(x, list)`: whether `x =?= e` for some element `e`.
fn identical_member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    test_member(ev, args, cur, true)
}

/// The sum of the numeric elements (UNDEFINED ones skipped) with `+`, and
/// how many were added; `Err` with ERROR if an element is not a number.
fn sum_elements(
    ev: &mut Evaluator,
    items: &[Expr],
    scope: Option<FrameId>,
) -> Result<(Val, usize), Val> {
    let mut total = Val::Int(0);
    let mut count = 0;
    for item in items {
        let v = ev.eval_in(item, scope);
        if v.is_undef() {
            continue;
        }
        if !is_number(&v) {
            return Err(Val::Error);
        }
        total = if count == 0 {
            v
        } else {
            binary(BinOp::Add, total, v)
        };
        count += 1;
    }
    Ok((total, count))
}

/// `sum(list)`: the sum of the elements with `+` (`sum({})` is 0, a lone
/// element is returned as is, UNDEFINED elements are skipped, any other
/// non-number is ERROR).
fn sum(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let (items, scope) = match list_arg(ev, args, cur) {
        Ok(parts) => parts,
        Err(v) => return v,
    };
    match sum_elements(ev, &items, scope) {
        Ok((total, _)) => total,
        Err(e) => e,
    }
}

/// `avg(list)`: the sum divided by the (real) number of non-UNDEFINED
/// elements; with none the integer 0.
fn avg(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let (items, scope) = match list_arg(ev, args, cur) {
        Ok(parts) => parts,
        Err(v) => return v,
    };
    match sum_elements(ev, &items, scope) {
        Ok((total, 0)) => total,
        Ok((total, n)) => binary(BinOp::Div, total, Val::Real(n as f64)),
        Err(e) => e,
    }
}

/// The reference's numeric coercion before a comparison, which it applies
/// to the compared values in place: booleans become integers, and an
/// integer compared with a real becomes a real.
fn coerce(a: Val, b: Val) -> (Val, Val) {
    let int = |v: Val| match v {
        Val::Bool(x) => Val::Int(x as i64),
        other => other,
    };
    match (int(a), int(b)) {
        (Val::Int(i), r @ Val::Real(_)) => (Val::Real(i as f64), r),
        (r @ Val::Real(_), Val::Int(i)) => (r, Val::Real(i as f64)),
        pair => pair,
    }
}

/// The shared body of `min` and `max`: the bound of the numeric elements
/// (UNDEFINED ones skipped; UNDEFINED for none), keeping the types the
/// comparisons coerced (so `min({1, 2.5})` is the real 1.0).
fn bound(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, op: BinOp) -> Val {
    let (items, scope) = match list_arg(ev, args, cur) {
        Ok(parts) => parts,
        Err(v) => return v,
    };
    let mut best: Option<Val> = None;
    for item in items.iter() {
        let v = ev.eval_in(item, scope);
        if v.is_undef() {
            continue;
        }
        if !is_number(&v) {
            return Val::Error;
        }
        best = Some(match best {
            None => v,
            Some(b) => {
                let (v, b) = coerce(v, b);
                match binary(op, v.clone(), b.clone()) {
                    Val::Bool(true) => v,
                    _ => b,
                }
            }
        });
    }
    best.unwrap_or(Val::Undefined)
}

/// `min(list)`: the smallest number in the list.
fn min(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    bound(ev, args, cur, BinOp::Lt)
}

/// `max(list)`: the largest number in the list.
fn max(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    bound(ev, args, cur, BinOp::Gt)
}

/// The operator named by `anyCompare`/`allCompare`'s first argument
/// (exact spelling: `<`, `<=`, `!=`, `==`, `>`, `>=`, `is`, `isnt`).
fn compare_op(name: &[u8]) -> Option<BinOp> {
    Some(match name {
        b"<" => BinOp::Lt,
        b"<=" => BinOp::Le,
        b"!=" => BinOp::Ne,
        b"==" => BinOp::Eq,
        b">" => BinOp::Gt,
        b">=" => BinOp::Ge,
        b"is" => BinOp::Is,
        b"isnt" => BinOp::Isnt,
        _ => return None,
    })
}

/// The shared body of `anyCompare(op, list, x)` / `allCompare(op, list, x)`:
/// whether `e op x` holds for some (resp. every) element `e`. An UNDEFINED
/// operator or list gives UNDEFINED, an unknown operator or a non-list
/// ERROR. A comparison that is UNDEFINED ends the scan with `false`; one
/// that is ERROR (or not a boolean) gives ERROR.
fn list_compare(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, all: bool) -> Val {
    let [op_arg, list_arg, x_arg] = args else {
        return Val::Error;
    };
    let op = match ev.eval_in(op_arg, cur) {
        Val::Undefined => return Val::Undefined,
        Val::Str(s) => match compare_op(&s) {
            Some(op) => op,
            None => return Val::Error,
        },
        _ => return Val::Error,
    };
    let (items, scope) = match ev.eval_in(list_arg, cur) {
        Val::List(items, scope) => (items, scope),
        Val::Undefined => return Val::Undefined,
        _ => return Val::Error,
    };
    let x = ev.eval_in(x_arg, cur);
    for item in items.iter() {
        let v = ev.eval_in(item, scope);
        match binary(op, v, x.clone()) {
            Val::Bool(b) if b != all => return Val::Bool(b),
            Val::Bool(_) => {}
            Val::Undefined => return Val::Bool(false),
            _ => return Val::Error,
        }
    }
    Val::Bool(all)
}

/// `anyCompare(op, list, x)`: whether some element `e` has `e op x`.
fn any_compare(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    list_compare(ev, args, cur, false)
}

/// `allCompare(op, list, x)`: whether every element `e` has `e op x`.
fn all_compare(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    list_compare(ev, args, cur, true)
}

#[cfg(test)]
mod tests {
    use crate::functions::testing::{ev, ev_in};

    #[test]
    fn sizes() {
        assert_eq!(ev("size(\"abc\")"), "3");
        assert_eq!(ev("size(\"日本\")"), "6");
        assert_eq!(ev("size({1, 2 + 3})"), "2");
        assert_eq!(ev("size([a = 1; b = 2])"), "2");
        assert_eq!(ev("size(undefined)"), "undefined");
        assert_eq!(ev("size(1)"), "error");
        assert_eq!(ev("size()"), "error");
        assert_eq!(ev_in("size(l)", "[l = {1, 2, x}]"), "3");
    }

    #[test]
    fn membership() {
        assert_eq!(ev("member(\"A\", {\"a\"})"), "true");
        assert_eq!(ev("member(1, {1.0})"), "true");
        assert_eq!(ev("member(\"1\", {1})"), "false");
        assert_eq!(ev("member(1, {error})"), "false");
        assert_eq!(ev("member(undefined, {1})"), "undefined");
        assert_eq!(ev("member(1, undefined)"), "undefined");
        assert_eq!(ev("member(error, {1})"), "error");
        assert_eq!(ev("member(1, 2)"), "error");
        assert_eq!(ev("member({1}, {{1}})"), "error");
        assert_eq!(ev("member(1)"), "error");
        assert_eq!(ev("identicalMember(\"A\", {\"a\"})"), "false");
        assert_eq!(ev("identicalMember(1.0, {1, 2})"), "false");
        assert_eq!(ev("identicalMember(undefined, {undefined})"), "true");
        assert_eq!(ev("identicalMember(error, {error})"), "true");
        assert_eq!(ev_in("member(x, {x})", "[x = 3]"), "true");
    }

    #[test]
    fn sums_and_averages() {
        assert_eq!(ev("sum({})"), "0");
        assert_eq!(ev("sum({1, 2, 3})"), "6");
        assert_eq!(ev("sum({1, 2.5})"), "3.500000000000000E+00");
        assert_eq!(ev("sum({1, undefined})"), "1");
        assert_eq!(ev("sum({true})"), "true");
        assert_eq!(ev("sum({true, 1})"), "2");
        assert_eq!(ev("sum({1, \"a\"})"), "error");
        assert_eq!(ev("sum({9223372036854775807, 1})"), "-9223372036854775808");
        assert_eq!(ev("sum(undefined)"), "undefined");
        assert_eq!(ev("sum(1)"), "error");
        assert_eq!(ev("sum({1}, {2})"), "error");
        assert_eq!(ev("avg({})"), "0");
        assert_eq!(ev("avg({undefined})"), "0");
        assert_eq!(ev("avg({1, 2})"), "1.500000000000000E+00");
        assert_eq!(ev("avg({true})"), "1.000000000000000E+00");
        assert_eq!(ev("avg({1, \"a\"})"), "error");
    }

    #[test]
    fn bounds() {
        assert_eq!(ev("min({})"), "undefined");
        assert_eq!(ev("min({3, 1, 2})"), "1");
        assert_eq!(ev("min({1, 2.5})"), "1.000000000000000E+00");
        assert_eq!(ev("min({2.5, 1})"), "1.000000000000000E+00");
        assert_eq!(ev("min({true, 2})"), "1");
        assert_eq!(ev("min({undefined})"), "undefined");
        assert_eq!(ev("min({1, \"a\"})"), "error");
        assert_eq!(ev("max({3, 3.0})"), "3.000000000000000E+00");
        assert_eq!(ev("max({1, error})"), "error");
        assert_eq!(ev("max(undefined)"), "undefined");
    }

    #[test]
    fn list_comparisons() {
        assert_eq!(ev("anyCompare(\"<\", {1, 2, 3}, 2)"), "true");
        assert_eq!(ev("anyCompare(\">\", {1, 2, 3}, 5)"), "false");
        assert_eq!(ev("anyCompare(\"==\", {\"a\", \"b\"}, \"A\")"), "true");
        assert_eq!(ev("anyCompare(\"<\", {undefined, 1}, 2)"), "false");
        assert_eq!(ev("anyCompare(\"<\", {1, undefined}, 2)"), "true");
        assert_eq!(ev("anyCompare(\"bogus\", {1}, 1)"), "error");
        assert_eq!(ev("anyCompare(\"<\", 1, 1)"), "error");
        assert_eq!(ev("anyCompare(undefined, {1}, 1)"), "undefined");
        assert_eq!(ev("anyCompare(\"<\", {1})"), "error");
        assert_eq!(ev("allCompare(\"<\", {1, 2, 3}, 4)"), "true");
        assert_eq!(ev("allCompare(\"<\", {1, 2, 3}, 2)"), "false");
        assert_eq!(ev("allCompare(\"is\", {\"a\", \"A\"}, \"a\")"), "false");
        assert_eq!(ev("allCompare(\"=!=\", {1, 2}, 3)"), "error");
        assert_eq!(ev("allCompare(\"<\", {}, 3)"), "true");
        assert_eq!(ev("allCompare(\"<\", {\"a\"}, 3)"), "error");
    }
}
