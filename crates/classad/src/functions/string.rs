//! Builtin functions: string family (`strcat`, `join`, `toUpper`,
//! `toLower`, `substr`, `strcmp`, `stricmp`, `versioncmp`, `versionLT`,
//! `versionLE`, `versionGT`, `versionGE`, `versionEQ`, `version_in_range`).
//!
//! Strings are byte strings. Where the reference library hands a string to
//! a C routine (`strcmp`, its natural comparison) it stops at the first NUL
//! byte; that is reproduced with [`c_str`].

use std::cmp::Ordering;
use std::sync::Arc;

use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("strcat", strcat),
    ("join", join),
    ("toUpper", to_upper),
    ("toLower", to_lower),
    ("substr", substr),
    ("strcmp", strcmp),
    ("stricmp", stricmp),
    ("versioncmp", versioncmp),
    ("versionLT", version_lt),
    ("versionLE", version_le),
    ("versionGT", version_gt),
    ("versionGE", version_ge),
    ("versionEQ", version_eq),
    ("version_in_range", version_in_range),
];

/// The part of `s` a C string routine sees: everything before the first NUL.
pub(super) fn c_str(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == 0) {
        Some(n) => &s[..n],
        None => s,
    }
}

/// The reference's `convertValueToStringValue`: strings as they are, other
/// values as `strcat` prints them; `undefined` and `error` do not convert
/// (the value to return instead is given back as the error).
fn text_of(ev: &Evaluator, v: &Val) -> Result<Vec<u8>, Val> {
    match v {
        Val::Undefined => Err(Val::Undefined),
        Val::Error => Err(Val::Error),
        Val::Str(s) => Ok(s.to_vec()),
        other => Ok(super::to_text(ev, other)),
    }
}

// ----- strcat / join ------------------------------------------------------

/// `strcat(a, b, ...)`: the concatenation of the arguments, non-strings
/// converted as `string()` does. Arguments are evaluated left to right and
/// the first `undefined` (-> `undefined`) or `error` (-> `error`) stops the
/// evaluation. No arguments give `""`.
fn strcat(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let mut buf = Vec::new();
    for a in args {
        let v = ev.eval_in(a, cur);
        match text_of(ev, &v) {
            Ok(s) => buf.extend_from_slice(&s),
            Err(stop) => return stop,
        }
    }
    Val::str(buf)
}

/// `join(sep, a, b, ...)`, `join(sep, list)`, `join(list)`: the arguments
/// (or the list's elements) converted as `strcat` does, separated by `sep`
/// (`""` for the one-argument list form). `undefined` items are skipped (the
/// result is `undefined` only if no item was defined); an `error` item, or an
/// error separator, makes the result `error`. The separator goes between
/// items only once something non-empty has been written, as in the
/// reference (`join(",", "", "a")` is `"a"`).
fn join(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    // With one or two arguments whose last one is a list, the list's
    // elements are the items.
    let mut list: Option<(Arc<Vec<Expr>>, Option<FrameId>)> = None;
    if let Some(last) = args.last().filter(|_| args.len() <= 2) {
        if let Val::List(items, scope) = ev.eval_in(last, cur) {
            list = Some((items, scope));
        }
    }
    let count = match &list {
        Some((items, _)) => items.len() + 1,
        None => args.len(),
    };
    let mut sep: Vec<u8> = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let (mut undef, mut defined) = (false, false);
    for i in 0..count {
        let v = match (&list, i) {
            (Some(_), 0) if args.len() == 2 => ev.eval_in(&args[0], cur),
            (Some(_), 0) => Val::str(""),
            (Some((items, scope)), _) => match items.get(i - 1) {
                Some(e) => ev.eval_in(e, *scope),
                None => Val::Undefined,
            },
            (None, _) => match args.get(i) {
                Some(e) => ev.eval_in(e, cur),
                None => Val::Undefined,
            },
        };
        let s = match text_of(ev, &v) {
            Ok(s) => s,
            Err(Val::Undefined) => {
                undef = true;
                continue;
            }
            Err(_) => return Val::Error,
        };
        if i == 0 {
            sep = s;
            continue;
        }
        if !buf.is_empty() {
            buf.extend_from_slice(&sep);
        }
        defined = true;
        buf.extend_from_slice(&s);
    }
    if undef && !defined {
        return Val::Undefined;
    }
    Val::str(buf)
}

// ----- toUpper / toLower ----------------------------------------------------

/// Shared body of `toUpper` / `toLower`: exactly one argument, converted to
/// a string as `strcat` does (`undefined` / `error` pass through), then every
/// ASCII letter mapped (C locale: other bytes are unchanged).
fn change_case(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, upper: bool) -> Val {
    let [arg] = args else { return Val::Error };
    let v = ev.eval_in(arg, cur);
    match text_of(ev, &v) {
        Ok(mut s) => {
            if upper {
                s.make_ascii_uppercase();
            } else {
                s.make_ascii_lowercase();
            }
            Val::str(s)
        }
        Err(stop) => stop,
    }
}

/// `toUpper(s)`: `s` with ASCII letters in upper case (`toUpper(1)` is
/// `"1"`, `toUpper(true)` is `"TRUE"`).
fn to_upper(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    change_case(ev, args, cur, true)
}

/// `toLower(s)`: `s` with ASCII letters in lower case.
fn to_lower(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    change_case(ev, args, cur, false)
}

// ----- substr ---------------------------------------------------------------

/// `substr(s, offset[, length])`, Perl-like: a negative offset counts from
/// the end (clamped to the start), an offset past the end gives `""`; a
/// missing or non-positive length leaves that many bytes off the end, and
/// an explicit `0` gives `""`. `undefined` in any argument gives
/// `undefined`; otherwise `s` must be a string and the others integers
/// (`error` else). As in the reference, offset and length are C `int`s:
/// integers are truncated to 32 bits.
fn substr(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if !(2..=3).contains(&args.len()) {
        return Val::Error;
    }
    let vals = super::eval_args(ev, args, cur);
    if vals.iter().any(Val::is_undef) {
        return Val::Undefined;
    }
    let (Some(Val::Str(s)), Some(Val::Int(off))) = (vals.first(), vals.get(1)) else {
        return Val::Error;
    };
    let len = match vals.get(2) {
        None => None,
        Some(Val::Int(l)) => Some(*l as i32),
        Some(_) => return Val::Error,
    };
    let (start, n) = substr_range(s.len(), *off as i32, len);
    Val::str(s.get(start..start + n).unwrap_or_default())
}

/// The byte range (start, length) `substr` takes from a string of `size`
/// bytes, with the reference's 32-bit arithmetic.
fn substr_range(size: usize, offset: i32, length: Option<i32>) -> (usize, usize) {
    let alen = i32::try_from(size).unwrap_or(i32::MAX);
    let offset = if offset < 0 {
        alen.saturating_add(offset).max(0)
    } else {
        offset.min(alen)
    };
    let rest = alen - offset;
    let n = match length {
        Some(0) => 0,
        Some(l) if l > 0 => l.min(rest),
        Some(l) => rest.saturating_add(l).max(0),
        None => rest,
    };
    (offset as usize, n as usize)
}

// ----- strcmp / stricmp -----------------------------------------------------

/// Evaluates the two arguments of a string comparison and converts them to
/// strings: `undefined` if either is `undefined`, `error` if either does
/// not convert (or the argument count is not two).
fn two_strings(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
) -> Result<(Vec<u8>, Vec<u8>), Val> {
    let [a, b] = args else { return Err(Val::Error) };
    let x = ev.eval_in(a, cur);
    let y = ev.eval_in(b, cur);
    if x.is_undef() || y.is_undef() {
        return Err(Val::Undefined);
    }
    match (text_of(ev, &x), text_of(ev, &y)) {
        (Ok(s), Ok(t)) => Ok((s, t)),
        _ => Err(Val::Error),
    }
}

fn ordering_int(o: Ordering) -> Val {
    Val::Int(match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    })
}

/// `strcmp(a, b)`: -1, 0 or 1 as C's `strcmp` orders the two strings
/// (bytes compared unsigned); numbers etc. are converted to strings first.
fn strcmp(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    match two_strings(ev, args, cur) {
        Ok((s, t)) => ordering_int(c_str(&s).cmp(c_str(&t))),
        Err(v) => v,
    }
}

/// `stricmp(a, b)`: like `strcmp`, ignoring ASCII case (C's `strcasecmp`,
/// which compares lower-cased bytes: `"_"` sorts before `"a"`).
fn stricmp(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    match two_strings(ev, args, cur) {
        Ok((s, t)) => ordering_int(crate::eval::strcasecmp(c_str(&s), c_str(&t))),
        Err(v) => v,
    }
}

// ----- version comparison ---------------------------------------------------

/// The reference's `natural_cmp` (a `strverscmp`-like order): strings are
/// compared bytewise up to the first difference; if the difference lies in
/// a run of digits in both strings, the runs compare as numbers, except that
/// a run with more leading zeros sorts first (as a fraction would). The
/// result is the raw C difference (not clamped to -1/0/1), with C's signed
/// `char` arithmetic.
pub(super) fn natural_cmp(a: &[u8], b: &[u8]) -> i64 {
    let (a, b) = (c_str(a), c_str(b));
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let digit = |c: u8| c.is_ascii_digit();
    let diff = |x: u8, y: u8| i64::from(x as i8) - i64::from(y as i8);

    let mut i = 0;
    while at(a, i) != 0 && at(a, i) == at(b, i) {
        i += 1;
    }
    let (c1, c2) = (at(a, i), at(b, i));
    if c1 == c2 {
        return 0;
    }
    // The run of digits leading up to the mismatch (common to both).
    let mut beg = i;
    while beg > 0 && digit(at(a, beg - 1)) {
        beg -= 1;
    }
    if beg == i && (!digit(c1) || !digit(c2)) {
        return diff(c1, c2);
    }
    // Leading zeros; a final zero of the run is not a leading zero.
    let zeros_end = |s: &[u8]| {
        let mut z = beg;
        while at(s, z) == b'0' {
            z += 1;
        }
        if z > beg && !digit(at(s, z)) {
            z -= 1;
        }
        z
    };
    let (z1, z2) = (zeros_end(a), zeros_end(b));
    if z1 != z2 {
        return (z2 - beg) as i64 - (z1 - beg) as i64;
    }
    if z1 > beg {
        return diff(c1, c2);
    }
    let run_end = |s: &[u8], mut e: usize| {
        while digit(at(s, e)) {
            e += 1;
        }
        e
    };
    let (e1, e2) = (run_end(a, z1), run_end(b, z2));
    if e1 != e2 {
        return e1 as i64 - e2 as i64;
    }
    diff(c1, c2)
}

/// Evaluates the arguments of a version comparison: `undefined` if either
/// is `undefined`, `error` if either does not convert to a string.
fn version_pair(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Result<i64, Val> {
    let (s, t) = two_strings(ev, args, cur)?;
    Ok(natural_cmp(&s, &t))
}

/// `versioncmp(a, b)`: the natural-order difference of two version strings
/// (negative, zero or positive, not clamped); non-strings are converted.
fn versioncmp(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    match version_pair(ev, args, cur) {
        Ok(r) => Val::Int(r),
        Err(v) => v,
    }
}

/// Shared body of the boolean version comparisons.
fn version_test(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
    test: fn(i64) -> bool,
) -> Val {
    match version_pair(ev, args, cur) {
        Ok(r) => Val::Bool(test(r)),
        Err(v) => v,
    }
}

/// `versionLT(a, b)`: `versioncmp(a, b) < 0`.
fn version_lt(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    version_test(ev, args, cur, |r| r < 0)
}

/// `versionLE(a, b)`: `versioncmp(a, b) <= 0`.
fn version_le(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    version_test(ev, args, cur, |r| r <= 0)
}

/// `versionGT(a, b)`: `versioncmp(a, b) > 0`.
fn version_gt(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    version_test(ev, args, cur, |r| r > 0)
}

/// `versionGE(a, b)`: `versioncmp(a, b) >= 0`.
fn version_ge(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    version_test(ev, args, cur, |r| r >= 0)
}

/// `versionEQ(a, b)`: `versioncmp(a, b) == 0` (unlike `=?=`, `undefined`
/// stays `undefined`).
fn version_eq(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    version_test(ev, args, cur, |r| r == 0)
}

/// `version_in_range(v, min, max)`: `min <= v <= max` in natural version
/// order. `undefined` if `min` or `max` is `undefined`; `error` if any of
/// the three does not convert to a string (so an `undefined` `v` is
/// `error`).
fn version_in_range(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [v, lo, hi] = args else { return Val::Error };
    let v = ev.eval_in(v, cur);
    let lo = ev.eval_in(lo, cur);
    let hi = ev.eval_in(hi, cur);
    if lo.is_undef() || hi.is_undef() {
        return Val::Undefined;
    }
    match (text_of(ev, &v), text_of(ev, &lo), text_of(ev, &hi)) {
        (Ok(v), Ok(lo), Ok(hi)) => {
            Val::Bool(natural_cmp(&lo, &v) <= 0 && natural_cmp(&v, &hi) <= 0)
        }
        _ => Val::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::functions::testing::{ev, ev_in};

    #[test]
    fn strcat_converts_and_stops() {
        assert_eq!(
            ev(r#"strcat("a", 1, 2.5, true)"#),
            r#""a12.500000000000000E+00true""#
        );
        assert_eq!(ev(r#"strcat("x", {1, 2})"#), r#""x{ 1,2 }""#);
        assert_eq!(ev(r#"strcat([a = 1])"#), r#""[ a = 1 ]""#);
        assert_eq!(
            ev(r#"strcat("a", absTime("2020-01-01T00:00:00"))"#),
            r#""a2020-01-01T00:00:00-00:00""#
        );
        assert_eq!(ev(r#"strcat("a", undefined)"#), "undefined");
        assert_eq!(ev(r#"strcat(undefined, error)"#), "undefined");
        assert_eq!(ev(r#"strcat("a", error)"#), "error");
        assert_eq!(ev("strcat()"), r#""""#);
        assert_eq!(
            ev_in("strcat(s, t)", r#"[s = "He"; t = "llo"]"#),
            r#""Hello""#
        );
    }

    #[test]
    fn join_forms() {
        assert_eq!(ev(r#"join(",", {"a", "b"})"#), r#""a,b""#);
        assert_eq!(ev(r#"join(",", "a", "b")"#), r#""a,b""#);
        assert_eq!(ev(r#"join({"a", "b"})"#), r#""ab""#);
        assert_eq!(
            ev(r#"join(", ", {1, 2.5, true})"#),
            r#""1, 2.500000000000000E+00, true""#
        );
        assert_eq!(ev("join()"), r#""""#);
        assert_eq!(ev(r#"join(",", {undefined, "a"})"#), r#""a""#);
        assert_eq!(ev(r#"join(",", {undefined})"#), "undefined");
        assert_eq!(ev(r#"join(",", {error})"#), "error");
        assert_eq!(ev(r#"join(undefined, {"a"})"#), r#""a""#);
        assert_eq!(ev(r#"join(1, {"a", "b"})"#), r#""a1b""#);
        assert_eq!(ev(r#"join(",", {"", "a", "", "b"})"#), r#""a,,b""#);
        assert_eq!(ev(r#"join("-", x)"#), "undefined");
    }

    #[test]
    fn change_case() {
        assert_eq!(ev(r#"toUpper("AbC1!")"#), r#""ABC1!""#);
        assert_eq!(ev(r#"toUpper("éa")"#), r#""\303\251A""#);
        assert_eq!(ev("toUpper(true)"), r#""TRUE""#);
        assert_eq!(ev(r#"toLower("MiXeD")"#), r#""mixed""#);
        assert_eq!(ev("toLower(undefined)"), "undefined");
        assert_eq!(ev("toLower(error)"), "error");
        assert_eq!(ev("toUpper()"), "error");
        assert_eq!(ev(r#"toUpper("a", "b")"#), "error");
    }

    #[test]
    fn substr_perl_like() {
        assert_eq!(ev(r#"substr("abcdef", 2)"#), r#""cdef""#);
        assert_eq!(ev(r#"substr("abcdef", 2, 3)"#), r#""cde""#);
        assert_eq!(ev(r#"substr("abcdef", -2)"#), r#""ef""#);
        assert_eq!(ev(r#"substr("abcdef", -2, 1)"#), r#""e""#);
        assert_eq!(ev(r#"substr("abcdef", 1, -1)"#), r#""bcde""#);
        assert_eq!(ev(r#"substr("abcdef", 1, -10)"#), r#""""#);
        assert_eq!(ev(r#"substr("abcdef", -10)"#), r#""abcdef""#);
        assert_eq!(ev(r#"substr("abc", 10)"#), r#""""#);
        assert_eq!(ev(r#"substr("abc", 1, 0)"#), r#""""#);
        assert_eq!(ev(r#"substr("abcdef", 4294967298)"#), r#""cdef""#);
        assert_eq!(ev(r#"substr("abcdef", 2.7)"#), "error");
        assert_eq!(ev(r#"substr(123456, 2)"#), "error");
        assert_eq!(ev(r#"substr(error, undefined)"#), "undefined");
        assert_eq!(ev(r#"substr("abcdef")"#), "error");
        assert_eq!(ev(r#"substr("abcdef", 1, 2, 3)"#), "error");
    }

    #[test]
    fn string_compare() {
        assert_eq!(ev(r#"strcmp("a", "b")"#), "-1");
        assert_eq!(ev(r#"strcmp("a", "A")"#), "1");
        assert_eq!(ev(r#"strcmp("abc", "ab")"#), "1");
        assert_eq!(ev(r#"strcmp(1, "1")"#), "0");
        assert_eq!(ev(r#"strcmp(1.5, "1.5")"#), "1");
        assert_eq!(ev(r#"strcmp("a", error)"#), "error");
        assert_eq!(ev(r#"strcmp(undefined, error)"#), "undefined");
        assert_eq!(ev(r#"strcmp("a")"#), "error");
        assert_eq!(ev(r#"stricmp("B", "a")"#), "1");
        assert_eq!(ev(r#"stricmp("_", "a")"#), "-1");
        assert_eq!(ev(r#"stricmp("ABC", "abc")"#), "0");
    }

    #[test]
    fn natural_order() {
        assert_eq!(natural_cmp(b"1.10", b"1.9"), 1);
        assert_eq!(natural_cmp(b"1.0", b"1.0"), 0);
        assert_eq!(natural_cmp(b"a", b"b"), -1);
        assert_eq!(natural_cmp(b"a", b"z"), -25);
        assert_eq!(natural_cmp(b"01", b"1"), -1);
        assert_eq!(natural_cmp(b"00", b"01"), -1);
        assert_eq!(natural_cmp(b"abc10", b"abc9"), 1);
        assert_eq!(natural_cmp(b"1.2", b"1.2.1"), -46);
        assert_eq!(natural_cmp(b"\xc3", b"a"), -61 - 97);
    }

    #[test]
    fn version_functions() {
        assert_eq!(ev(r#"versioncmp("1.10", "1.9")"#), "1");
        assert_eq!(ev(r#"versioncmp("1", 1)"#), "0");
        assert_eq!(ev(r#"versioncmp(undefined, error)"#), "undefined");
        assert_eq!(ev(r#"versioncmp("1", error)"#), "error");
        assert_eq!(ev(r#"versionLT("1.9", "1.10")"#), "true");
        assert_eq!(ev(r#"versionLE("1", "1")"#), "true");
        assert_eq!(ev(r#"versionGT("1.10", "1.9")"#), "true");
        assert_eq!(ev(r#"versionGE("1", "2")"#), "false");
        assert_eq!(ev(r#"versionEQ("1.0", "1.0")"#), "true");
        assert_eq!(ev(r#"versionEQ("1")"#), "error");
        assert_eq!(ev(r#"version_in_range("1.5", "1.0", "2.0")"#), "true");
        assert_eq!(ev(r#"version_in_range("2.0", "1.0", "2.0")"#), "true");
        assert_eq!(ev(r#"version_in_range("2.1", "1.0", "2.0")"#), "false");
        assert_eq!(ev(r#"version_in_range(undefined, "1.0", "2.0")"#), "error");
        assert_eq!(
            ev(r#"version_in_range("1", undefined, "2.0")"#),
            "undefined"
        );
        assert_eq!(ev(r#"version_in_range("1.5", "1.0")"#), "error");
    }
}
