//! Builtin functions: HTCondor's compatibility layer (string lists,
//! `split*`, environment and argument strings, `evalInEachContext`,
//! `countMatches`, `userHome`, `userMap`) and the library's own
//! `stringListsIntersect`.
//!
//! HTCondor's "string lists" are strings of items separated by any of a set
//! of delimiter characters; unless said otherwise items are trimmed of
//! whitespace and empty items are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use pcre2::bytes::{Regex, RegexBuilder};

use super::Builtin;
use crate::ast::Expr;
use crate::eval::{strcasecmp, Evaluator, FrameId, Val};
use crate::value::Value;

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
    ("split", split),
    ("splitUserName", split_user_name),
    ("splitSlotName", split_slot_name),
    ("envV1ToV2", env_v1_to_v2),
    ("mergeEnvironment", merge_environment),
    ("listToArgs", list_to_args),
    ("argsToList", args_to_list),
    ("evalInEachContext", eval_in_each_context),
    ("countMatches", count_matches),
    ("userHome", user_home),
    ("userMap", user_map),
];

// ----- helpers ------------------------------------------------------------

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The part of a byte string a C function sees (up to the first NUL).
fn c_str(s: &[u8]) -> &[u8] {
    match s.iter().position(|&b| b == 0) {
        Some(i) => &s[..i],
        None => s,
    }
}

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

/// Evaluates the arguments that are present.
fn eval_all(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Vec<Val> {
    super::eval_args(ev, args, cur)
}

/// Evaluates `e`, but where the reference library ignores a failed
/// evaluation (its `Evaluate()` returning false) instead of passing it
/// on: such a failure is taken back and the value is `error`.
pub(super) fn eval_contained(ev: &mut Evaluator, e: &Expr, cur: Option<FrameId>) -> Val {
    let failed_before = ev.failed;
    let v = ev.eval_in(e, cur);
    if ev.failed && !failed_before {
        ev.failed = false;
        return Val::Error;
    }
    v
}

/// `eval_rooted` with failures taken back as in `eval_contained`.
fn rooted_contained(ev: &mut Evaluator, e: &Expr, scope: Option<FrameId>) -> Val {
    let failed_before = ev.failed;
    let v = ev.eval_rooted(e, scope);
    if ev.failed && !failed_before {
        ev.failed = false;
        return Val::Error;
    }
    v
}

/// The bytes of a string value.
fn as_str(v: &Val) -> Option<&[u8]> {
    match v {
        Val::Str(s) => Some(s),
        _ => None,
    }
}

/// A list value of strings.
fn str_list(items: Vec<Vec<u8>>) -> Val {
    let exprs = items
        .into_iter()
        .map(|s| Expr::Lit(Value::Str(Arc::from(s))))
        .collect();
    Val::List(Arc::new(exprs), None)
}

/// Compiles a PCRE2 pattern (bytes, no UTF) with HTCondor's option flags;
/// `prefix` is prepended to the pattern (e.g. a `(*NOTEMPTY)` verb).
/// `None` if the pattern is invalid.
pub(super) fn compile_regex(
    pattern: &[u8],
    prefix: &str,
    caseless: bool,
    multi_line: bool,
    dotall: bool,
    extended: bool,
) -> Option<Regex> {
    let pattern = std::str::from_utf8(c_str(pattern)).ok()?;
    RegexBuilder::new()
        .caseless(caseless)
        .multi_line(multi_line)
        .dotall(dotall)
        .extended(extended)
        .build(&format!("{prefix}{pattern}"))
        .ok()
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

// ----- splitting -----------------------------------------------------------

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

// ----- argument and environment strings -------------------------------

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

// ----- evaluation in nested ads -----------------------------------------

/// What `evalInEachContext` and `countMatches` iterate over: the
/// expression to evaluate and the list items (with the list's scope)
/// that should evaluate to ads.
struct Contexts {
    expr: Expr,
    items: Arc<Vec<Expr>>,
    scope: Option<FrameId>,
    /// The scope of ad literals written in a literal list (their enclosing
    /// ad, whatever the lookup of the first argument did).
    ad_scope: Option<FrameId>,
}

/// The contexts of `evalInEachContext` / `countMatches`. `Err` carries the
/// result for an `undefined` second argument (`None`) or `error`.
fn contexts(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
) -> Result<Contexts, Option<Val>> {
    let [expr, list] = args else {
        return Err(Some(Val::Error));
    };
    // The reference leaves its evaluation state in the ad where it looked
    // the first argument up, and evaluates a list argument from there.
    let list_scope = ev.deref_scope(expr, cur);
    // An attribute reference stands for the expression it names, if any.
    let expr = match expr {
        Expr::Attr(_) | Expr::AbsAttr(_) | Expr::Select(..) => ev
            .find_attr_expr(expr, cur)
            .map(|(e, _)| e)
            .unwrap_or_else(|| expr.clone()),
        _ => expr.clone(),
    };
    match list {
        Expr::List(items) => Ok(Contexts {
            expr,
            items: items.clone(),
            scope: list_scope,
            ad_scope: cur,
        }),
        other => match eval_contained(ev, other, list_scope) {
            Val::List(items, scope) => Ok(Contexts {
                expr,
                items,
                scope,
                ad_scope: scope,
            }),
            Val::Undefined => Err(None),
            _ => Err(Some(Val::Error)),
        },
    }
}

/// Evaluates `expr` with the ad that `item` evaluates to as its scope:
/// `undefined` if the item is `undefined`, `error` if it is not an ad.
/// Failed evaluations give `error` for that item only.
fn eval_in_context(ev: &mut Evaluator, expr: &Expr, item: &Expr, scope: Option<FrameId>) -> Val {
    match eval_contained(ev, item, scope) {
        Val::Ad(f) => {
            // In HTCondor's default mode a name missing from the context ad
            // falls back to the other side of the match its parent is in.
            let saved = ev.frame_alt(f);
            if !ev.is_strict() && saved.is_none() {
                let inherited = ev.frame_parent(f).and_then(|p| ev.frame_alt(p));
                ev.set_frame_alt(f, inherited);
            }
            let v = rooted_contained(ev, expr, Some(f));
            ev.set_frame_alt(f, saved);
            v
        }
        Val::Undefined => Val::Undefined,
        _ => Val::Error,
    }
}

/// `evalInEachContext(expr, ads)`: the list of the values of `expr`
/// evaluated in each ad of the list (an attribute reference is replaced by
/// the expression it names, if it names one). `undefined` if the list is.
fn eval_in_each_context(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let Contexts {
        expr,
        items,
        scope,
        ad_scope,
    } = match contexts(ev, args, cur) {
        Ok(v) => v,
        Err(e) => return e.unwrap_or(Val::Undefined),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items.iter() {
        let scope = if matches!(item, Expr::Ad(_)) {
            ad_scope
        } else {
            scope
        };
        let v = eval_in_context(ev, &expr, item, scope);
        out.push(ev.val_to_expr(v));
    }
    Val::List(Arc::new(out), None)
}

/// `countMatches(expr, ads)`: how many ads of the list `expr` is true in
/// (a non-zero number counts as true); 0 if the list is `undefined`.
fn count_matches(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let Contexts {
        expr,
        items,
        scope,
        ad_scope,
    } = match contexts(ev, args, cur) {
        Ok(v) => v,
        Err(e) => return e.unwrap_or(Val::Int(0)),
    };
    let mut n: i64 = 0;
    for item in items.iter() {
        let scope = if matches!(item, Expr::Ad(_)) {
            ad_scope
        } else {
            scope
        };
        let hit = match eval_in_context(ev, &expr, item, scope) {
            Val::Bool(b) => b,
            Val::Int(i) => i != 0,
            Val::Real(r) => r != 0.0,
            _ => false,
        };
        n += i64::from(hit);
    }
    Val::Int(n)
}

// ----- user database -----------------------------------------------------

/// `userHome(user[, default])`: HTCondor's default configuration disables
/// the user-database lookup (and a pure core has none), so the result is
/// `default` if it is a non-empty string, else `undefined` (`error` when
/// `user` is neither a string nor `undefined`). A wrong number of
/// arguments makes the whole evaluation fail, as in the reference.
fn user_home(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() || args.len() > 2 {
        return ev.fail();
    }
    // Failed evaluations of the arguments are ignored by the reference.
    let default = match args.get(1).map(|a| eval_contained(ev, a, cur)) {
        Some(Val::Str(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    let user = eval_contained(ev, &args[0], cur);
    match (user, default) {
        (_, Some(d)) => Val::Str(d),
        (Val::Undefined | Val::Str(_), None) => Val::Undefined,
        (_, None) => Val::Error,
    }
}

/// `userMap(map, input[, preferred[, default]])`: no user maps are
/// configured, so no mapping exists: `undefined` (or the value of
/// `default` with four arguments); `error` if `map` or `input` is.
fn user_map(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.len() < 2 || args.len() > 4 {
        return Val::Error;
    }
    let vals = eval_all(ev, args, cur);
    let names_ok = as_str(&vals[0]).is_some() && as_str(&vals[1]).is_some();
    if !names_ok && (vals[0].is_err() || vals[1].is_err()) {
        return Val::Error;
    }
    match vals.get(3) {
        Some(default) => default.clone(),
        None => Val::Undefined,
    }
}

#[cfg(test)]
mod tests {

    use crate::functions::testing::{ev, ev_in, ev_match};

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

    #[test]
    fn evaluation_in_nested_ads() {
        assert_eq!(
            ev("evalInEachContext(x * 2, {[x = 1], [x = 2]})"),
            "{ 2,4 }"
        );
        assert_eq!(
            ev("evalInEachContext(x * 2, {[x = 1], [y = 2]})"),
            "{ 2,undefined }"
        );
        assert_eq!(
            ev("evalInEachContext(x, {1, undefined})"),
            "{ error,undefined }"
        );
        assert_eq!(ev("evalInEachContext(x, undefined)"), "undefined");
        assert_eq!(ev("evalInEachContext(x, 1)"), "error");
        assert_eq!(ev("evalInEachContext(x)"), "error");
        assert_eq!(ev_in("evalInEachContext(a, {[a = 5]})", "[a = 3]"), "{ 3 }");
        assert_eq!(
            ev_in("evalInEachContext(c, {[a = 5]})", "[a = 3; c = a + 1]"),
            "{ 6 }"
        );
        assert_eq!(
            ev_in(
                "evalInEachContext(x * 10, ads)",
                "[ads = {[x = 1], [x = 2]}]"
            ),
            "{ 10,20 }"
        );
        assert_eq!(
            ev_match(
                "evalInEachContext(x, {[x = 1], [x = 2]})",
                "[a = 1]",
                "[x = 99]"
            ),
            "{ 99,99 }"
        );
        assert_eq!(ev("countMatches(x > 1, {[x = 1], [x = 2], [x = 3]})"), "2");
        assert_eq!(
            ev("countMatches(x, {[x = true], [x = 1], [x = \"t\"]})"),
            "2"
        );
        assert_eq!(ev("countMatches(x, undefined)"), "0");
        assert_eq!(ev("countMatches(x)"), "error");
    }

    #[test]
    fn ignored_evaluation_failures() {
        // random(-1) makes an evaluation fail; these functions ignore that.
        assert_eq!(ev("stringListsIntersect(random(-1), \"a\")"), "error");
        assert_eq!(ev("evalInEachContext(random(-1), {[a = 1]})"), "{ error }");
        assert_eq!(ev("countMatches(x, random(-1))"), "error");
        assert_eq!(ev("userHome(random(-1), \"/d\")"), "\"/d\"");
        assert_eq!(ev("isError(stringListSize(random(-1)))"), "error");
        assert_eq!(
            ev("isError(stringListsIntersect(random(-1), \"a\"))"),
            "true"
        );
    }

    #[test]
    fn user_database() {
        assert_eq!(ev("userHome(\"no_such_user\")"), "undefined");
        assert_eq!(
            ev("userHome(\"no_such_user\", \"/default\")"),
            "\"/default\""
        );
        assert_eq!(ev("userHome(1)"), "error");
        assert_eq!(ev("userHome(1, \"/d\")"), "\"/d\"");
        assert_eq!(ev("userHome()"), "error");
        assert_eq!(ev("userMap(\"m\", \"in\")"), "undefined");
        assert_eq!(ev("userMap(\"m\", \"in\", \"pref\")"), "undefined");
        assert_eq!(ev("userMap(\"m\", \"in\", \"pref\", 7)"), "7");
        assert_eq!(ev("userMap(error, \"in\")"), "error");
        assert_eq!(ev("userMap(\"m\")"), "error");
    }
}
