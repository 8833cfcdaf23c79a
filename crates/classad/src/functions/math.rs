//! Builtin functions: math family (`floor`, `ceiling`, `round`, `pow`,
//! `quantize`, `random`) and the conversions (`int`, `real`, `string`,
//! `bool`, `absTime`, `relTime`).
//!
//! The conversions follow the reference library's `convertValueTo*`
//! helpers: strings are read with C's `strtod` (prefix parsing, hex and
//! `inf`/`nan` accepted), reals become integers with the x86-64 C cast
//! (NaN and out-of-range values give `INT64_MIN`).

use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};
use crate::time::c_double_to_int;
use crate::value::AbsTime;

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("floor", floor),
    ("ceil", ceiling),
    ("ceiling", ceiling),
    ("round", round),
    ("pow", pow),
    ("quantize", quantize),
    ("random", random),
    ("int", int),
    ("real", real),
    ("string", string),
    ("bool", boolean),
    ("absTime", abs_time),
    ("relTime", rel_time),
];

// ----- C conversions ----------------------------------------------------

/// C's `(long long) r` on x86-64: truncation toward zero; NaN and values
/// outside the range of `i64` give `INT64_MIN`.
pub(super) fn c_f64_to_i64(r: f64) -> i64 {
    // NaN is outside every range too.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
        i64::MIN
    } else {
        r as i64
    }
}

/// The whole seconds the reference reads from a relative time wherever it
/// wants an integer (`int()`, `real()`, `bool()`, offsets, `get*`): the
/// double cut to a C `int` (so values beyond 2^31 read as `INT_MIN`).
pub(super) fn rel_secs(r: f64) -> i64 {
    i64::from(c_double_to_int(r))
}

/// C's `(int) i` for a 64-bit integer: keeps the low 32 bits.
pub(super) fn c_i64_to_i32(i: i64) -> i32 {
    i as i32
}

fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Length of the longest prefix of `s` equal (ASCII case-insensitively)
/// to `word`, if all of `word` matches.
fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len()
        && s.iter()
            .zip(word)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
}

/// `m * 2^e` without intermediate overflow or underflow.
fn ldexp(mut m: f64, mut e: i64) -> f64 {
    if m == 0.0 || !m.is_finite() {
        return m;
    }
    while e > 1000 {
        m *= 2f64.powi(1000);
        e -= 1000;
        if m.is_infinite() {
            return m;
        }
    }
    while e < -1000 {
        m *= 2f64.powi(-1000);
        e += 1000;
        if m == 0.0 {
            return m;
        }
    }
    m * 2f64.powi(e as i32)
}

/// Parses a C99 hexadecimal float body (after `0x`); returns the value and
/// the bytes consumed, or `None` if no hex digit follows.
fn parse_hex(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let mut mant: u64 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut sticky = false;
    let mut add_digit = |d: u64, frac: bool, mant: &mut u64, exp: &mut i64| {
        if *mant >> 56 == 0 {
            *mant = (*mant << 4) | d;
            if frac {
                *exp -= 4;
            }
        } else {
            sticky |= d != 0;
            if !frac {
                *exp += 4;
            }
        }
    };
    while let Some(d) = s.get(i).and_then(|c| (*c as char).to_digit(16)) {
        add_digit(d as u64, false, &mut mant, &mut exp);
        digits += 1;
        i += 1;
    }
    if s.get(i) == Some(&b'.') {
        let mut j = i + 1;
        let mut frac_digits = 0;
        while let Some(d) = s.get(j).and_then(|c| (*c as char).to_digit(16)) {
            add_digit(d as u64, true, &mut mant, &mut exp);
            frac_digits += 1;
            j += 1;
        }
        if digits + frac_digits > 0 {
            i = j;
            digits += frac_digits;
        }
    }
    if digits == 0 {
        return None;
    }
    if sticky {
        mant |= 1;
    }
    if matches!(s.get(i), Some(b'p') | Some(b'P')) {
        if let Some((e, used)) = parse_exponent(&s[i + 1..]) {
            exp = exp.saturating_add(e);
            i += 1 + used;
        }
    }
    Some((ldexp(mant as f64, exp), i))
}

/// An optionally signed decimal exponent; `None` without digits.
fn parse_exponent(s: &[u8]) -> Option<(i64, usize)> {
    let mut i = 0;
    let mut neg = false;
    if let Some(&c) = s.first() {
        if c == b'+' || c == b'-' {
            neg = c == b'-';
            i = 1;
        }
    }
    let start = i;
    let mut e: i64 = 0;
    while let Some(c) = s.get(i).filter(|c| c.is_ascii_digit()) {
        e = e
            .saturating_mul(10)
            .saturating_add((c - b'0') as i64)
            .min(1 << 40);
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { -e } else { e }, i))
}

/// Parses a decimal float body (no sign); returns the value and the bytes
/// consumed, or `None` without a digit.
fn parse_decimal(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    let mut digits = i;
    if s.get(i) == Some(&b'.') {
        let mut j = i + 1;
        while s.get(j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
        digits += j - i - 1;
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return None;
    }
    let mant_end = i;
    if matches!(s.get(i), Some(b'e') | Some(b'E')) && parse_exponent(&s[i + 1..]).is_some() {
        i += 1;
        if matches!(s.get(i), Some(b'+') | Some(b'-')) {
            i += 1;
        }
        while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    let text = std::str::from_utf8(&s[..i]).ok()?;
    let value = match text.parse::<f64>() {
        Ok(v) => v,
        // Only a mantissa like "5." can trouble the parser: retry without
        // the trailing point.
        Err(_) => std::str::from_utf8(&s[..mant_end])
            .ok()?
            .trim_end_matches('.')
            .parse()
            .ok()?,
    };
    Some((value, i))
}

/// C's `strtod` in the "C" locale: the value of the longest numeric prefix
/// (after white space) and the number of bytes consumed, 0 if none.
pub(super) fn strtod(s: &[u8]) -> (f64, usize) {
    let mut i = 0;
    while s.get(i).is_some_and(|c| is_c_space(*c)) {
        i += 1;
    }
    let mut neg = false;
    if let Some(&c) = s.get(i) {
        if c == b'+' || c == b'-' {
            neg = c == b'-';
            i += 1;
        }
    }
    let rest = &s[i..];
    let parsed = if starts_with_ci(rest, b"infinity") {
        Some((f64::INFINITY, 8))
    } else if starts_with_ci(rest, b"inf") {
        Some((f64::INFINITY, 3))
    } else if starts_with_ci(rest, b"nan") {
        let mut used = 3;
        if rest.get(3) == Some(&b'(') {
            let mut j = 4;
            while rest
                .get(j)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                j += 1;
            }
            if rest.get(j) == Some(&b')') {
                used = j + 1;
            }
        }
        Some((f64::NAN, used))
    } else if rest.len() >= 2 && rest[0] == b'0' && (rest[1] == b'x' || rest[1] == b'X') {
        match parse_hex(&rest[2..]) {
            Some((v, used)) => Some((v, used + 2)),
            None => Some((0.0, 1)),
        }
    } else {
        parse_decimal(rest)
    };
    match parsed {
        Some((v, used)) => (if neg { -v } else { v }, i + used),
        None => (0.0, 0),
    }
}

/// The reference's `convertValueToRealValue`: `Err` carries the result to
/// return when the value cannot be converted (UNDEFINED stays UNDEFINED,
/// everything else is ERROR).
pub(super) fn to_real(v: &Val) -> Result<f64, Val> {
    match v {
        Val::Undefined => Err(Val::Undefined),
        Val::Error | Val::List(..) | Val::Ad(_) => Err(Val::Error),
        Val::Str(s) => match strtod(s) {
            (_, 0) => Err(Val::Error),
            (r, _) => Ok(r),
        },
        Val::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Val::Int(i) => Ok(*i as f64),
        Val::Real(r) => Ok(*r),
        Val::Abs(t) => Ok(t.secs as f64),
        Val::Rel(r) => Ok(rel_secs(*r) as f64),
    }
}

/// The reference's `convertValueToIntegerValue` (see [`to_real`]).
pub(super) fn to_int(v: &Val) -> Result<i64, Val> {
    match v {
        Val::Undefined => Err(Val::Undefined),
        Val::Error | Val::List(..) | Val::Ad(_) => Err(Val::Error),
        Val::Str(s) => match strtod(s) {
            (_, 0) => Err(Val::Error),
            (r, _) => Ok(c_f64_to_i64(r)),
        },
        Val::Bool(b) => Ok(*b as i64),
        Val::Int(i) => Ok(*i),
        Val::Real(r) => Ok(c_f64_to_i64(*r)),
        Val::Abs(t) => Ok(t.secs),
        Val::Rel(r) => Ok(rel_secs(*r)),
    }
}

/// Evaluates the single argument of a one-argument function; `None` (the
/// caller returns ERROR) for any other number of arguments.
fn one_arg(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Option<Val> {
    match args {
        [a] => Some(ev.eval_in(a, cur)),
        _ => None,
    }
}

// ----- conversions ------------------------------------------------------

/// `int(x)`: integer conversion; reals truncate, strings are read with
/// `strtod` (`int("42x")` = 42, `int("0x10")` = 16), booleans are 0/1, time
/// values give their seconds. UNDEFINED stays UNDEFINED, the rest is ERROR.
fn int(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let Some(v) = one_arg(ev, args, cur) else {
        return Val::Error;
    };
    to_int(&v).map_or_else(|e| e, Val::Int)
}

/// `real(x)`: real conversion with the same rules as `int()` (no
/// truncation; `real("INF")` and `real("NaN")` give the special reals).
fn real(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let Some(v) = one_arg(ev, args, cur) else {
        return Val::Error;
    };
    to_real(&v).map_or_else(|e| e, Val::Real)
}

/// `string(x)`: strings unchanged, other values unparsed (as `strcat`
/// does); UNDEFINED and ERROR propagate.
fn string(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let Some(v) = one_arg(ev, args, cur) else {
        return Val::Error;
    };
    match v {
        Val::Undefined | Val::Error => v,
        Val::Str(_) => v,
        other => Val::str(super::to_text(ev, &other)),
    }
}

/// `bool(x)`: numbers and relative times are true when non-zero, strings
/// `"true"`/`"false"` (any case) convert, other strings are UNDEFINED;
/// lists, ads and absolute times are ERROR.
fn boolean(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let Some(v) = one_arg(ev, args, cur) else {
        return Val::Error;
    };
    match v {
        Val::Undefined => Val::Undefined,
        Val::Error | Val::List(..) | Val::Ad(_) | Val::Abs(_) => Val::Error,
        Val::Bool(b) => Val::Bool(b),
        Val::Int(i) => Val::Bool(i != 0),
        Val::Real(r) => Val::Bool(r != 0.0),
        Val::Rel(r) => Val::Bool(rel_secs(r) != 0),
        Val::Str(s) => {
            if s.eq_ignore_ascii_case(b"true") {
                Val::Bool(true)
            } else if s.eq_ignore_ascii_case(b"false") {
                Val::Bool(false)
            } else {
                Val::Undefined
            }
        }
    }
}

/// The local time zone's offset at `secs`.
fn local_offset(ev: &Evaluator, secs: i64) -> i32 {
    (ev.opts.tz)(secs)
}

/// `absTime([t[, offset]])` with a non-literal argument: no argument is the
/// current time; an integer (taken as a C `int`) or real is seconds since
/// the epoch in the local zone or the given offset (an integer, real or
/// relative time); an absolute time is returned unchanged, a relative time
/// counts from the epoch. A string falls through the reference's switch
/// and comes back unchanged; booleans, lists and ads are ERROR.
fn abs_time(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() {
        return super::time::current_abs_time(ev);
    }
    convert_time(ev, args, cur, false)
}

/// `relTime(x)` with a non-literal argument: integers (taken as a C `int`)
/// and reals are seconds, an absolute time gives its seconds since the
/// epoch, a relative time is unchanged; a string gives `relTime(0)` (it
/// falls through the reference's switch). A second argument is ERROR.
fn rel_time(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    convert_time(ev, args, cur, true)
}

/// The offset given as `absTime`'s second argument, or the ERROR to return.
fn offset_arg(v: &Val) -> Result<i32, Val> {
    match v {
        Val::Int(i) => Ok(c_i64_to_i32(*i)),
        Val::Real(r) => Ok(c_double_to_int(*r)),
        Val::Rel(r) => Ok(c_double_to_int(*r)),
        _ => Err(Val::Error),
    }
}

fn convert_time(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, relative: bool) -> Val {
    if args.is_empty() || args.len() > 2 {
        return Val::Error;
    }
    let arg = ev.eval_in(&args[0], cur);
    let mut offset = None;
    if let Some(second) = args.get(1) {
        let v = ev.eval_in(second, cur);
        if relative {
            return Val::Error;
        }
        match offset_arg(&v) {
            Ok(o) => offset = Some(o),
            Err(e) => return e,
        }
    }
    let abs_at = |ev: &Evaluator, secs: i64| -> AbsTime {
        AbsTime {
            secs,
            offset: offset.unwrap_or_else(|| local_offset(ev, secs)),
        }
    };
    match arg {
        Val::Undefined => Val::Undefined,
        Val::Error | Val::List(..) | Val::Ad(_) | Val::Bool(_) => Val::Error,
        Val::Int(i) => {
            let secs = c_i64_to_i32(i) as i64;
            if relative {
                return Val::Rel(secs as f64);
            }
            let t = abs_at(ev, secs);
            if t.offset == -1 {
                // The reference treats an offset of -1 as a lookup failure.
                return ev.fail();
            }
            Val::Abs(t)
        }
        Val::Real(r) => {
            if relative {
                Val::Rel(r)
            } else {
                Val::Abs(abs_at(ev, c_double_to_int(r) as i64))
            }
        }
        Val::Str(_) => {
            if relative {
                Val::Rel(0.0)
            } else {
                arg
            }
        }
        Val::Abs(t) => {
            if relative {
                Val::Rel(t.secs as f64)
            } else {
                arg
            }
        }
        Val::Rel(r) => {
            if relative {
                arg
            } else {
                Val::Abs(abs_at(ev, rel_secs(r)))
            }
        }
    }
}

// ----- math -------------------------------------------------------------

/// The shared body of `floor`, `ceiling` and `round`: integers are returned
/// unchanged, anything else is converted to a real (so `floor("2.5")` is 2
/// and `floor(undefined)` is ERROR), rounded by `f` and cast to an integer
/// as C does.
fn do_round(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, f: fn(f64) -> f64) -> Val {
    let Some(v) = one_arg(ev, args, cur) else {
        return Val::Error;
    };
    if let Val::Int(_) = v {
        return v;
    }
    match to_real(&v) {
        Ok(r) => Val::Int(c_f64_to_i64(f(r))),
        Err(_) => Val::Error,
    }
}

/// `floor(x)`: largest integer not above `x`, as an integer.
fn floor(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    do_round(ev, args, cur, f64::floor)
}

/// `ceiling(x)` / `ceil(x)`: smallest integer not below `x`, as an integer.
fn ceiling(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    do_round(ev, args, cur, f64::ceil)
}

/// `round(x)`: nearest integer, halves to even (C's `rint`).
fn round(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    do_round(ev, args, cur, f64::round_ties_even)
}

/// `pow(b, e)`: with two integers and `e >= 0`, the integer
/// `(long long)(pow(b, e) + 0.5)` (so `pow(2, 63)` is `INT64_MIN` and
/// `pow(-2, 3)` is -7); otherwise both are converted to reals and the
/// result is the real `pow` (ERROR if either cannot be converted).
fn pow(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [a, b] = args else { return Val::Error };
    let base = ev.eval_in(a, cur);
    let exp = ev.eval_in(b, cur);
    if let (Val::Int(i), Val::Int(e)) = (&base, &exp) {
        if *e >= 0 {
            return Val::Int(c_f64_to_i64((*i as f64).powf(*e as f64) + 0.5));
        }
    }
    match (to_real(&base), to_real(&exp)) {
        (Ok(x), Ok(y)) => Val::Real(x.powf(y)),
        _ => Val::Error,
    }
}

/// `quantize(a, b)`: the smallest multiple of `b` that is `>= a` (an
/// integer when both are integers, else a real; `b` = 0 returns `a`). With
/// a list, the first element `>= a` is returned as is; if there is none,
/// `a` is quantized on the last element. Unconvertible values are ERROR.
fn quantize(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [a, b] = args else { return Val::Error };
    let arg = ev.eval_in(a, cur);
    let arg2 = ev.eval_in(b, cur);
    let Ok(rval) = to_real(&arg) else {
        return Val::Error;
    };
    let (base, rbase) = match arg2 {
        Val::List(items, scope) => {
            let mut base = Val::Real(0.0);
            let mut rbase = 0.0;
            for item in items.iter() {
                base = ev.eval_in(item, scope);
                match to_real(&base) {
                    Ok(r) if r >= rval => return base,
                    Ok(r) => rbase = r,
                    Err(_) => return Val::Error,
                }
            }
            (base, rbase)
        }
        other => match to_real(&other) {
            Ok(r) => (other, r),
            Err(_) => return Val::Error,
        },
    };
    if let Val::Int(ibase) = base {
        if ibase == 0 {
            return arg;
        }
        if let Val::Int(ival) = arg {
            let up = ival.wrapping_add(ibase).wrapping_sub(1);
            return Val::Int(up.checked_div(ibase).unwrap_or(up).wrapping_mul(ibase));
        }
        return Val::Real((rval / ibase as f64).ceil() * ibase as f64);
    }
    if (-1e-8..=1e-8).contains(&rbase) {
        return arg;
    }
    Val::Real((rval / rbase).ceil() * rbase)
}

/// `random([n])`: without an argument a real in [0, 1); with an integer `n`
/// (taken as a C `int`) an integer in [0, n); with a real `x` a real in
/// [0, x). A non-positive bound makes the whole evaluation fail (as the
/// reference's `Evaluate()` does); other argument types are ERROR.
fn random(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let arg = match args {
        [] => Val::Real(1.0),
        [a] => ev.eval_in(a, cur),
        _ => return Val::Error,
    };
    match arg {
        Val::Int(i) => {
            let max = c_i64_to_i32(i);
            if max <= 0 {
                return ev.fail();
            }
            // A non-negative C int, as the reference's generator returns.
            let r = (ev.next_random() >> 33) as i64;
            Val::Int(r % max as i64)
        }
        Val::Real(max) => {
            if max <= 0.0 || max.is_nan() {
                return ev.fail();
            }
            let unit = (ev.next_random() >> 11) as f64 / (1u64 << 53) as f64;
            Val::Real(max * unit)
        }
        _ => Val::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::EvalOptions;

    use crate::functions::testing::ev;

    #[test]
    fn strtod_prefixes() {
        assert_eq!(strtod(b"42abc"), (42.0, 2));
        assert_eq!(strtod(b"  -1.5e3x"), (-1500.0, 8));
        assert_eq!(strtod(b"0x10"), (16.0, 4));
        assert_eq!(strtod(b"0x"), (0.0, 1));
        assert_eq!(strtod(b"1e"), (1.0, 1));
        assert_eq!(strtod(b".5"), (0.5, 2));
        assert_eq!(strtod(b"5."), (5.0, 2));
        assert_eq!(strtod(b"abc"), (0.0, 0));
        assert_eq!(strtod(b"."), (0.0, 0));
        assert_eq!(strtod(b"-"), (0.0, 0));
        assert_eq!(strtod(b"INFINITY"), (f64::INFINITY, 8));
        assert_eq!(strtod(b"-inf"), (f64::NEG_INFINITY, 4));
        assert!(strtod(b"nan(12)").0.is_nan());
        assert_eq!(strtod(b"nan(12)").1, 7);
        assert_eq!(strtod(b"0x1.8p1"), (3.0, 7));
        assert_eq!(strtod(b"1e400").0, f64::INFINITY);
        assert_eq!(strtod(b"0x0p99999999999999"), (0.0, 18));
        assert_eq!(strtod(b"0x1p-99999999999999"), (0.0, 19));
        assert_eq!(strtod(b"0x1p99999999999999").0, f64::INFINITY);
    }

    #[test]
    fn c_casts() {
        assert_eq!(c_f64_to_i64(-2.9), -2);
        assert_eq!(c_f64_to_i64(f64::NAN), i64::MIN);
        assert_eq!(c_f64_to_i64(1e300), i64::MIN);
        assert_eq!(c_f64_to_i64(-1e300), i64::MIN);
        assert_eq!(c_i64_to_i32(1 << 32), 0);
    }

    #[test]
    fn int_conversion() {
        assert_eq!(ev("int(2.9)"), "2");
        assert_eq!(ev("int(-2.9)"), "-2");
        assert_eq!(ev("int(\"42abc\")"), "42");
        assert_eq!(ev("int(\"0x10\")"), "16");
        assert_eq!(ev("int(\"1e3\")"), "1000");
        assert_eq!(ev("int(\"abc\")"), "error");
        assert_eq!(ev("int(\"\")"), "error");
        assert_eq!(ev("int(real(\"NaN\"))"), "-9223372036854775808");
        assert_eq!(ev("int(true)"), "1");
        assert_eq!(ev("int(undefined)"), "undefined");
        assert_eq!(ev("int({})"), "error");
        assert_eq!(ev("int(absTime(100))"), "100");
        assert_eq!(ev("int(1, 2)"), "error");
    }

    #[test]
    fn real_conversion() {
        assert_eq!(ev("real(1)"), "1.000000000000000E+00");
        assert_eq!(ev("real(\"  3 \")"), "3.000000000000000E+00");
        assert_eq!(ev("real(\"inf\")"), "real(\"INF\")");
        assert_eq!(ev("real(\"-0\")"), "-0.0");
        assert_eq!(ev("real(\"\")"), "error");
        assert_eq!(ev("real(relTime(90.5))"), "9.000000000000000E+01");
        assert_eq!(ev("real(false)"), "0.0");
    }

    #[test]
    fn string_conversion() {
        assert_eq!(ev("string(1)"), "\"1\"");
        assert_eq!(ev("string(2.5)"), "\"2.500000000000000E+00\"");
        assert_eq!(ev("string(true)"), "\"true\"");
        assert_eq!(ev("string({1, \"a\"})"), "\"{ 1,\\\"a\\\" }\"");
        assert_eq!(ev("string(relTime(90061))"), "\"1+01:01:01\"");
        assert_eq!(ev("string(undefined)"), "undefined");
        assert_eq!(ev("string(error)"), "error");
    }

    #[test]
    fn bool_conversion() {
        assert_eq!(ev("bool(2.5)"), "true");
        assert_eq!(ev("bool(-0.0)"), "false");
        assert_eq!(ev("bool(\"TRUE\")"), "true");
        assert_eq!(ev("bool(\"yes\")"), "undefined");
        assert_eq!(ev("bool(absTime(0))"), "error");
        assert_eq!(ev("bool(relTime(1))"), "true");
        assert_eq!(ev("bool({})"), "error");
    }

    #[test]
    fn time_conversions() {
        assert_eq!(ev("absTime(0)"), "absTime(\"1970-01-01T00:00:00-00:00\")");
        assert_eq!(
            ev("absTime(0, -3600)"),
            "absTime(\"1969-12-31T23:00:00-01:00\")"
        );
        assert_eq!(ev("absTime(\"a\", 1)"), "\"a\"");
        assert_eq!(ev("absTime(true)"), "error");
        assert_eq!(ev("absTime(undefined)"), "undefined");
        assert_eq!(ev("absTime(1, 2, 3)"), "error");
        assert_eq!(ev("absTime(1, \"x\")"), "error");
        assert_eq!(ev("relTime(61)"), "relTime(\"01:01\")");
        assert_eq!(ev("relTime(absTime(5))"), "relTime(\"05\")");
        assert_eq!(ev("relTime(1, 2)"), "error");
        assert_eq!(ev("relTime()"), "error");
        assert_eq!(ev("relTime(4294967296)"), "relTime(\"00\")");
    }

    #[test]
    fn rounding() {
        assert_eq!(ev("floor(-2.5)"), "-3");
        assert_eq!(ev("floor(\"2.5\")"), "2");
        assert_eq!(ev("floor(undefined)"), "error");
        assert_eq!(ev("floor(1e300)"), "-9223372036854775808");
        assert_eq!(ev("ceiling(2.5)"), "3");
        assert_eq!(ev("ceil(true)"), "1");
        assert_eq!(ev("round(2.5)"), "2");
        assert_eq!(ev("round(3.5)"), "4");
        assert_eq!(ev("round(-2.5)"), "-2");
        assert_eq!(ev("round(-0.5)"), "0");
        assert_eq!(ev("round()"), "error");
    }

    #[test]
    fn powers() {
        assert_eq!(ev("pow(2, 10)"), "1024");
        assert_eq!(ev("pow(-2, 3)"), "-7");
        assert_eq!(ev("pow(2, 63)"), "-9223372036854775808");
        assert_eq!(ev("pow(2, -1)"), "5.000000000000000E-01");
        assert_eq!(ev("pow(0, -1)"), "real(\"INF\")");
        assert_eq!(ev("pow(\"2\", 2)"), "4.000000000000000E+00");
        assert_eq!(ev("pow(true, 2)"), "1.000000000000000E+00");
        assert_eq!(ev("pow(\"x\", 2)"), "error");
        assert_eq!(ev("pow(2, 2, 2)"), "error");
    }

    #[test]
    fn quantizing() {
        assert_eq!(ev("quantize(7, 3)"), "9");
        assert_eq!(ev("quantize(7.0, 3)"), "9.000000000000000E+00");
        assert_eq!(ev("quantize(7, 0)"), "7");
        assert_eq!(ev("quantize(25, {5, 10})"), "30");
        assert_eq!(ev("quantize(7, {5, 10, 20})"), "10");
        assert_eq!(ev("quantize(25, {5, 10, 20.5})"), "4.100000000000000E+01");
        assert_eq!(ev("quantize(1, {1.5, 3})"), "1.500000000000000E+00");
        assert_eq!(ev("quantize(7, undefined)"), "error");
        assert_eq!(ev("quantize(7)"), "error");
    }

    #[test]
    fn random_numbers() {
        assert_eq!(ev("random(1)"), "0");
        assert_eq!(ev("random(\"x\")"), "error");
        assert_eq!(ev("random(1, 2)"), "error");
        let mut e = Evaluator::new(EvalOptions::default());
        for _ in 0..100 {
            match e.eval(
                &crate::parse_expr("random(10)").expect("parses"),
                None,
                None,
            ) {
                crate::Value::Int(i) => assert!((0..10).contains(&i)),
                other => panic!("unexpected {other}"),
            }
            match e.eval(&crate::parse_expr("random()").expect("parses"), None, None) {
                crate::Value::Real(r) => assert!((0.0..1.0).contains(&r)),
                other => panic!("unexpected {other}"),
            }
        }
        // A non-positive bound fails the evaluation.
        let v = e.eval(
            &crate::parse_expr("random(-1)").expect("parses"),
            None,
            None,
        );
        assert!(v.is_error());
        assert!(e.failed);
    }
}
