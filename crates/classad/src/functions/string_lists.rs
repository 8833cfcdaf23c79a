//! Builtin functions: HTCondor's string lists (`stringListSize`, the
//! summaries, membership and subsets, `stringList_regexpMember`) and the
//! library's own `stringListsIntersect`.
//!
//! HTCondor's "string lists" are strings of items separated by any of a set
//! of delimiter characters; unless said otherwise items are trimmed of
//! whitespace and empty items are skipped.

use std::collections::BTreeSet;

use super::support::{as_str, c_str, compile_regex, eval_all, eval_contained, is_c_space};
use super::Builtin;
use crate::ast::Expr;
use crate::eval::{strcasecmp, Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("stringListSize", string_list_size),
    ("stringListSum", string_list_sum),
    ("stringListAvg", string_list_avg),
    ("stringListMin", string_list_min),
    ("stringListMax", string_list_max),
    ("stringListMember", string_list_member),
    ("stringListIMember", string_list_imember),
    ("stringListSubsetMatch", string_list_subset_match),
    ("stringListISubsetMatch", string_list_isubset_match),
    ("stringList_regexpMember", string_list_regexp_member),
    ("stringListsIntersect", string_lists_intersect),
];

/// HTCondor's `StringTokenIterator` (trimming): items separated by any byte
/// of `delims`, trimmed of whitespace, empty items skipped.
fn tokens<'a>(s: &'a [u8], delims: &[u8]) -> Vec<&'a [u8]> {
    let s = c_str(s);
    let delims = c_str(delims);
    let mut out = Vec::new();
    let mut ix = 0;
    loop {
        while ix < s.len() && (delims.contains(&s[ix]) || is_c_space(s[ix])) {
            ix += 1;
        }
        let start = ix;
        let mut end = ix;
        while ix < s.len() && !delims.contains(&s[ix]) {
            if !is_c_space(s[ix]) {
                end = ix + 1;
            }
            ix += 1;
        }
        if ix <= start {
            return out;
        }
        out.push(&s[start..end]);
    }
}

// ----- stringListSize and the summaries --------------------------------

/// Default delimiters of `stringListSize`, `stringListSum`, ... and
/// `stringList_regexpMember`.
const LIST_DELIMS: &[u8] = b", ";

/// Evaluates `(list[, delims])`: both must be strings, else `Err(error)`.
fn list_and_delims(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
) -> Result<(Val, Val), Val> {
    if args.is_empty() || args.len() > 2 {
        return Err(Val::Error);
    }
    let mut vals = eval_all(ev, args, cur).into_iter();
    let list = vals.next().unwrap_or(Val::Error);
    let delims = vals.next().unwrap_or_else(|| Val::str(LIST_DELIMS));
    if as_str(&list).is_none() || as_str(&delims).is_none() {
        return Err(Val::Error);
    }
    Ok((list, delims))
}

/// `stringListSize(list[, delims])`: the number of items.
fn string_list_size(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    match list_and_delims(ev, args, cur) {
        Ok((list, delims)) => {
            let n = tokens(
                as_str(&list).unwrap_or_default(),
                as_str(&delims).unwrap_or_default(),
            )
            .len();
            Val::Int(i64::try_from(n).unwrap_or(i64::MAX))
        }
        Err(e) => e,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Summary {
    Sum,
    Avg,
    Min,
    Max,
}

/// The summaries of a string list of numbers (each item read like C's
/// `sscanf("%lf")`, any unreadable item is `error`). Accumulation is in
/// doubles; the result is an integer (truncated) unless some item has a
/// character other than `+-0123456789`. An empty list sums/averages to
/// the real 0 and has no min/max (`undefined`). As in the reference, max
/// starts from FLT_MIN and min from FLT_MAX.
fn summarize(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, kind: Summary) -> Val {
    let (list, delims) = match list_and_delims(ev, args, cur) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let items = tokens(
        as_str(&list).unwrap_or_default(),
        as_str(&delims).unwrap_or_default(),
    );
    if items.is_empty() {
        return match kind {
            Summary::Sum | Summary::Avg => Val::Real(0.0),
            Summary::Min | Summary::Max => Val::Undefined,
        };
    }
    let mut acc = match kind {
        Summary::Sum | Summary::Avg => 0.0,
        Summary::Min => f64::from(f32::MAX),
        Summary::Max => f64::from(f32::MIN_POSITIVE),
    };
    let mut is_real = false;
    for item in &items {
        let Some(x) = scan_double(item) else {
            return Val::Error;
        };
        if !item.iter().all(|b| b"+-0123456789".contains(b)) {
            is_real = true;
        }
        acc = match kind {
            Summary::Sum | Summary::Avg => x + acc,
            Summary::Min => {
                if x < acc {
                    x
                } else {
                    acc
                }
            }
            Summary::Max => {
                if x > acc {
                    x
                } else {
                    acc
                }
            }
        };
    }
    if kind == Summary::Avg {
        acc /= items.len() as f64;
    }
    if is_real {
        Val::Real(acc)
    } else {
        Val::Int(c_double_to_i64(acc))
    }
}

/// C's `(long long)` cast of a double on x86-64: out of range and NaN give
/// the "integer indefinite" value `INT64_MIN`.
fn c_double_to_i64(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// Reads a double the way glibc's `sscanf("%lf")` does: leading whitespace,
/// sign, decimal or hexadecimal number, `inf`/`infinity`/`nan[(...)]`. The
/// longest text that could begin a number is consumed and must itself be a
/// number (`"1e"` fails, `"1x"` reads 1).
fn scan_double(s: &[u8]) -> Option<f64> {
    let s = c_str(s);
    let mut i = s.iter().take_while(|&&b| is_c_space(b)).count();
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = s.get(i..).unwrap_or_default();
    let magnitude = scan_special(rest).or_else(|| scan_number(rest))??;
    Some(if negative { -magnitude } else { magnitude })
}

/// `inf`, `infinity`, `nan`, `nan(chars)`: `None` if `s` does not start
/// like one of them, `Some(None)` if it starts like one but is incomplete.
fn scan_special(s: &[u8]) -> Option<Option<f64>> {
    let lower: Vec<u8> = s.iter().take(8).map(|b| b.to_ascii_lowercase()).collect();
    if lower.first() == Some(&b'i') {
        if !lower.starts_with(b"inf") {
            return Some(None);
        }
        if lower.len() > 3 && lower[3] == b'i' && !lower.starts_with(b"infinity") {
            return Some(None);
        }
        return Some(Some(f64::INFINITY));
    }
    if lower.first() == Some(&b'n') {
        if !lower.starts_with(b"nan") {
            return Some(None);
        }
        if s.get(3) == Some(&b'(') {
            let body = s.get(4..).unwrap_or_default();
            let n = body
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if body.get(n) != Some(&b')') {
                return Some(None);
            }
        }
        return Some(Some(f64::NAN));
    }
    None
}

/// A decimal or hexadecimal number without sign: `None` if nothing could
/// start one, `Some(None)` if the text that could is not a number.
fn scan_number(s: &[u8]) -> Option<Option<f64>> {
    if s.len() >= 2 && s[0] == b'0' && (s[1] == b'x' || s[1] == b'X') {
        return Some(scan_hex(&s[2..]));
    }
    let int_digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = int_digits;
    let mut frac_digits = 0;
    if s.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return if i > 0 { Some(None) } else { None };
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_digits = s
            .get(j..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if exp_digits == 0 {
            return Some(None);
        }
        i = j + exp_digits;
    }
    let text = std::str::from_utf8(&s[..i]).ok()?;
    Some(text.parse::<f64>().ok())
}

/// The digits of a hexadecimal float after `0x`.
fn scan_hex(s: &[u8]) -> Option<f64> {
    let mut mantissa = 0.0f64;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut i = 0;
    while let Some(d) = s.get(i).and_then(|b| (*b as char).to_digit(16)) {
        mantissa = mantissa * 16.0 + f64::from(d);
        digits += 1;
        i += 1;
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = s.get(i).and_then(|b| (*b as char).to_digit(16)) {
            mantissa = mantissa * 16.0 + f64::from(d);
            exp -= 4;
            digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'p' | b'P')) {
        let mut j = i + 1;
        let neg = match s.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let mut e: i64 = 0;
        let mut n = 0;
        while let Some(d) = s.get(j).filter(|b| b.is_ascii_digit()) {
            e = e.saturating_mul(10).saturating_add(i64::from(d - b'0'));
            n += 1;
            j += 1;
        }
        if n == 0 {
            return None;
        }
        exp = exp.saturating_add(if neg { -e } else { e });
    }
    let exp = i32::try_from(exp.clamp(-4000, 4000)).unwrap_or(0);
    Some(mantissa * 2f64.powi(exp))
}

/// `stringListSum(list[, delims])`.
fn string_list_sum(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    summarize(ev, args, cur, Summary::Sum)
}

/// `stringListAvg(list[, delims])`.
fn string_list_avg(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    summarize(ev, args, cur, Summary::Avg)
}

/// `stringListMin(list[, delims])`.
fn string_list_min(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    summarize(ev, args, cur, Summary::Min)
}

/// `stringListMax(list[, delims])`.
fn string_list_max(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    summarize(ev, args, cur, Summary::Max)
}

// ----- membership --------------------------------------------------------

/// Default delimiters of the member / subset functions.
const MEMBER_DELIMS: &[u8] = b", \t\r\n";

/// Evaluates `(item, list[, delims])` for the member / subset functions:
/// each may be a string or `undefined` (which stands for `""`; the result
/// is `undefined` if both item and list are), anything else is `error`.
/// The item (or items), the list and the delimiters of a member / subset
/// call.
struct MemberArgs {
    item: Vec<u8>,
    list: Vec<u8>,
    delims: Vec<u8>,
}

fn item_list_delims(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
) -> Result<MemberArgs, Val> {
    if args.len() < 2 || args.len() > 3 {
        return Err(Val::Error);
    }
    let vals = eval_all(ev, args, cur);
    let text = |v: &Val, default: &[u8]| -> Result<Vec<u8>, Val> {
        match v {
            Val::Undefined => Ok(default.to_vec()),
            Val::Str(s) => Ok(s.to_vec()),
            _ => Err(Val::Error),
        }
    };
    let item = text(&vals[0], b"")?;
    let list = text(&vals[1], b"")?;
    let delims = match vals.get(2) {
        Some(v) => text(v, MEMBER_DELIMS)?,
        None => MEMBER_DELIMS.to_vec(),
    };
    if vals[0].is_undef() && vals[1].is_undef() {
        return Err(Val::Undefined);
    }
    Ok(MemberArgs { item, list, delims })
}

fn same(a: &[u8], b: &[u8], case_sensitive: bool) -> bool {
    if case_sensitive {
        a == b
    } else {
        strcasecmp(a, b).is_eq()
    }
}

/// `stringListMember` / `stringListIMember`: whether the item is one of
/// the list's items.
fn member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, case_sensitive: bool) -> Val {
    match item_list_delims(ev, args, cur) {
        Ok(MemberArgs { item, list, delims }) => Val::Bool(
            tokens(&list, &delims)
                .iter()
                .any(|t| same(t, c_str(&item), case_sensitive)),
        ),
        Err(e) => e,
    }
}

/// `stringListSubsetMatch` / `stringListISubsetMatch`: whether every item
/// of the first list is an item of the second (an empty first string is
/// always a subset; a first string without items is not).
fn subset_match(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
    case_sensitive: bool,
) -> Val {
    let MemberArgs {
        item: items,
        list,
        delims,
    } = match item_list_delims(ev, args, cur) {
        Ok(v) => v,
        Err(e) => return e,
    };
    if c_str(&items).is_empty() {
        return Val::Bool(true);
    }
    let set = tokens(&list, &delims);
    let wanted = tokens(&items, &delims);
    if wanted.is_empty() {
        return Val::Bool(false);
    }
    Val::Bool(
        wanted
            .iter()
            .all(|w| set.iter().any(|t| same(t, w, case_sensitive))),
    )
}

/// `stringListMember(item, list[, delims])`: case-sensitive membership.
fn string_list_member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    member(ev, args, cur, true)
}

/// `stringListIMember(item, list[, delims])`: case-insensitive membership.
fn string_list_imember(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    member(ev, args, cur, false)
}

/// `stringListSubsetMatch(items, list[, delims])`: case-sensitive subset.
fn string_list_subset_match(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    subset_match(ev, args, cur, true)
}

/// `stringListISubsetMatch(items, list[, delims])`: case-insensitive subset.
fn string_list_isubset_match(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    subset_match(ev, args, cur, false)
}

/// `stringList_regexpMember(pattern, list[, delims[, options]])`: whether
/// any item matches the PCRE pattern (options `i`, `m`, `s`, `x`, others
/// ignored). All arguments must be strings; an invalid pattern is `error`,
/// an empty list `undefined`.
fn string_list_regexp_member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.len() < 2 || args.len() > 4 {
        return Val::Error;
    }
    let vals = eval_all(ev, args, cur);
    let Some(strs) = vals.iter().map(as_str).collect::<Option<Vec<&[u8]>>>() else {
        return Val::Error;
    };
    let delims = strs.get(2).copied().unwrap_or(LIST_DELIMS);
    let options = strs.get(3).copied().unwrap_or_default();
    let has = |c: u8| options.iter().any(|o| o.eq_ignore_ascii_case(&c));
    let Some(re) = compile_regex(strs[0], "", has(b'i'), has(b'm'), has(b's'), has(b'x')) else {
        return Val::Error;
    };
    let items = tokens(strs[1], delims);
    if items.is_empty() {
        return Val::Undefined;
    }
    Val::Bool(items.iter().any(|t| re.is_match(t).unwrap_or(false)))
}

/// The library's own list splitting for `stringListsIntersect`: items are
/// the runs of bytes outside `delims` (no trimming).
fn plain_items<'a>(s: &'a [u8], delims: &[u8]) -> Vec<&'a [u8]> {
    c_str(s)
        .split(|b| delims.contains(b))
        .filter(|t| !t.is_empty())
        .collect()
}

/// `stringListsIntersect(a, b[, delims])`: whether the lists share an item
/// (case-sensitive; default delimiters space and comma, no trimming).
/// `error` beats `undefined`, which beats a type error.
fn string_lists_intersect(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.len() < 2 || args.len() > 3 {
        return Val::Error;
    }
    // The reference ignores failed evaluations of the arguments here.
    let vals: Vec<Val> = args.iter().map(|a| eval_contained(ev, a, cur)).collect();
    if vals.iter().any(Val::is_err) {
        return Val::Error;
    }
    if vals.iter().any(Val::is_undef) {
        return Val::Undefined;
    }
    let Some(strs) = vals.iter().map(as_str).collect::<Option<Vec<&[u8]>>>() else {
        return Val::Error;
    };
    let delims = match strs.get(2).map(|d| c_str(d)) {
        Some(d) if !d.is_empty() => d,
        _ => b" ,",
    };
    let right: BTreeSet<&[u8]> = plain_items(strs[1], delims).into_iter().collect();
    Val::Bool(
        plain_items(strs[0], delims)
            .iter()
            .any(|t| right.contains(t)),
    )
}

#[cfg(test)]
mod tests {
    use crate::functions::testing::ev;

    #[test]
    fn string_list_size() {
        assert_eq!(ev("stringListSize(\"a,b,c\")"), "3");
        assert_eq!(ev("stringListSize(\"a, b ,c\")"), "3");
        assert_eq!(ev("stringListSize(\"a,,b\")"), "2");
        assert_eq!(ev("stringListSize(\"\")"), "0");
        assert_eq!(ev("stringListSize(\"a;b,c\", \";\")"), "2");
        assert_eq!(ev("stringListSize(\"a; ;b\", \";\")"), "2");
        assert_eq!(ev("stringListSize(undefined)"), "error");
        assert_eq!(ev("stringListSize(1)"), "error");
        assert_eq!(ev("stringListSize(\"a,b\", \";\", 3)"), "error");
    }

    #[test]
    fn string_list_summaries() {
        assert_eq!(ev("stringListSum(\"1,2,3\")"), "6");
        assert_eq!(ev("stringListSum(\"-1,-2\")"), "-3");
        assert_eq!(ev("stringListSum(\"1,2.5\")"), "3.500000000000000E+00");
        assert_eq!(ev("stringListSum(\"\")"), "0.0");
        assert_eq!(ev("stringListSum(\"0x10\")"), "1.600000000000000E+01");
        assert_eq!(ev("stringListSum(\"a,1\")"), "error");
        assert_eq!(ev("stringListSum(\"1e\")"), "error");
        assert_eq!(ev("stringListSum(\"2x\")"), "2.000000000000000E+00");
        assert_eq!(ev("stringListAvg(\"1,2,3.5\")"), "2.166666666666667E+00");
        assert_eq!(ev("stringListAvg(\"\")"), "0.0");
        assert_eq!(ev("stringListMax(\"3,1,2\")"), "3");
        assert_eq!(ev("stringListMax(\"3,10.5\")"), "1.050000000000000E+01");
        assert_eq!(ev("stringListMax(\"-5,-3\")"), "0");
        assert_eq!(ev("stringListMin(\"3,1,2\")"), "1");
        assert_eq!(ev("stringListMax(\"\")"), "undefined");
        assert_eq!(ev("stringListMin(\"a,b\")"), "error");
    }

    #[test]
    fn string_list_membership() {
        assert_eq!(ev("stringListMember(\"b\", \"a, b ,c\")"), "true");
        assert_eq!(ev("stringListMember(\"B\", \"a,b\")"), "false");
        assert_eq!(ev("stringListIMember(\"B\", \"a,b\")"), "true");
        assert_eq!(ev("stringListMember(\"b\", \"a;b\", \";\")"), "true");
        assert_eq!(ev("stringListMember(\" a\", \"a,b\")"), "false");
        assert_eq!(ev("stringListMember(undefined, \"a\")"), "false");
        assert_eq!(ev("stringListMember(\"a\", undefined)"), "false");
        assert_eq!(ev("stringListMember(undefined, undefined)"), "undefined");
        assert_eq!(ev("stringListMember(1, \"1,2\")"), "error");
        assert_eq!(ev("stringListMember(\"a\")"), "error");
        assert_eq!(ev("stringListSubsetMatch(\"a,b\", \"a,b,c\")"), "true");
        assert_eq!(ev("stringListSubsetMatch(\"a,d\", \"a,b,c\")"), "false");
        assert_eq!(ev("stringListSubsetMatch(\"A\", \"a\")"), "false");
        assert_eq!(ev("stringListSubsetMatch(\"\", \"a\")"), "true");
        assert_eq!(ev("stringListSubsetMatch(\" , \", \"a\")"), "false");
        assert_eq!(ev("stringListISubsetMatch(\"A,B\", \"a,b,c\")"), "true");
    }

    #[test]
    fn string_list_regexp_member() {
        assert_eq!(ev("stringList_regexpMember(\"^b\", \"a,bc\")"), "true");
        assert_eq!(ev("stringList_regexpMember(\"^B\", \"a,bc\")"), "false");
        assert_eq!(
            ev("stringList_regexpMember(\"^B\", \"a,bc\", \",\", \"i\")"),
            "true"
        );
        assert_eq!(ev("stringList_regexpMember(\"[\", \"a\")"), "error");
        assert_eq!(ev("stringList_regexpMember(\"a\", \"\")"), "undefined");
        assert_eq!(ev("stringList_regexpMember(undefined, \"a\")"), "error");
    }

    #[test]
    fn string_lists_intersect() {
        assert_eq!(ev("stringListsIntersect(\"a,b\", \"c,d\")"), "false");
        assert_eq!(ev("stringListsIntersect(\"a,b\", \"B,c\")"), "false");
        assert_eq!(ev("stringListsIntersect(\"a , b\", \"b\")"), "true");
        assert_eq!(ev("stringListsIntersect(\"a;b\", \"b\", \";\")"), "true");
        assert_eq!(ev("stringListsIntersect(\"\", \"a\")"), "false");
        assert_eq!(ev("stringListsIntersect(undefined, \"a\")"), "undefined");
        assert_eq!(ev("stringListsIntersect(undefined, error)"), "error");
        assert_eq!(ev("stringListsIntersect(1, \"a\")"), "error");
        assert_eq!(ev("stringListsIntersect(\"a\")"), "error");
    }
}
