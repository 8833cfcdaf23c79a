//! Builtin functions: regular expressions (`regexp`, `regexpMember`,
//! `regexps`, `replace`, `replaceAll`), with PCRE2 semantics as in the
//! reference library: patterns are compiled without UTF mode (they work on
//! bytes), options are letters of an option string (`i` caseless, `m`
//! multi-line, `s` dot-all, `x` extended; for substitutions also `f`: keep
//! the rest of the target, and `g`: all matches), unknown letters are
//! ignored. Pattern, target and replacement stop at a NUL byte, as the C
//! strings they are in the reference.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use pcre2::bytes::{CaptureLocations, Regex, RegexBuilder};

use super::string::c_str;
use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("regexp", regexp),
    ("regexpMember", regexp_member),
    ("regexps", regexps),
    ("replace", replace),
    ("replaceAll", replace_all),
];

// ----- options and compilation ---------------------------------------------

/// The options of one regex operation, read from its option string.
#[derive(Clone, Copy, Default)]
struct Opts {
    caseless: bool,
    multi_line: bool,
    dotall: bool,
    extended: bool,
    /// `f`: the result is the whole target with the replacement(s) applied.
    full: bool,
    /// `g`: replace every (non-overlapping) match.
    global: bool,
}

impl Opts {
    /// Reads an option string; `f` and `g` only count for substitutions.
    fn parse(s: &[u8], substitution: bool) -> Opts {
        let has = |c: u8| s.contains(&c);
        Opts {
            caseless: has(b'i'),
            multi_line: has(b'm'),
            dotall: has(b's'),
            extended: has(b'x'),
            full: substitution && has(b'f'),
            global: substitution && has(b'g'),
        }
    }

    /// The compile flags, as a cache key.
    fn flags(self) -> u8 {
        u8::from(self.caseless)
            | u8::from(self.multi_line) << 1
            | u8::from(self.dotall) << 2
            | u8::from(self.extended) << 3
    }
}

/// Compiled patterns by (pattern, flags, retry variant); `None` caches a
/// pattern that does not compile.
type Cache = HashMap<(Vec<u8>, u8, bool), Option<Rc<Regex>>>;

const CACHE_LIMIT: usize = 512;

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(HashMap::new());
}

/// The pattern as text for the PCRE2 binding (which takes `&str`). Bytes
/// that are not UTF-8 are written as `\x{..}` escapes, which mean the same
/// byte in non-UTF mode; a backslash escaping such a byte is dropped, since
/// `\` before a non-alphanumeric byte only makes it literal.
fn pattern_text(p: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(p) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(p.len() + 8);
    for chunk in p.utf8_chunks() {
        out.push_str(chunk.valid());
        for (k, b) in chunk.invalid().iter().enumerate() {
            if k == 0 {
                let slashes = out.bytes().rev().take_while(|&c| c == b'\\').count();
                if slashes % 2 == 1 {
                    out.pop();
                }
            }
            out.push_str(&format!("\\x{{{b:02x}}}"));
        }
    }
    Cow::Owned(out)
}

/// Compiles `pattern` with the options (cached). With `retry`, the pattern
/// refuses an empty match at the start offset (PCRE2's
/// `NOTEMPTY_ATSTART`), for the step after an empty match in a global
/// substitution.
fn compile(pattern: &[u8], opts: Opts, retry: bool) -> Option<Rc<Regex>> {
    let key = (pattern.to_vec(), opts.flags(), retry);
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return hit;
    }
    let text = pattern_text(pattern);
    let text = if retry {
        Cow::Owned(format!("(*NOTEMPTY_ATSTART){text}"))
    } else {
        text
    };
    let re = RegexBuilder::new()
        .caseless(opts.caseless)
        .multi_line(opts.multi_line)
        .dotall(opts.dotall)
        .extended(opts.extended)
        .build(&text)
        .ok()
        .map(Rc::new);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, re.clone());
    });
    re
}

// ----- matching and substitution ---------------------------------------------

/// The outcome of one match attempt.
enum Step {
    /// A match; the capture locations are filled in.
    Found,
    NoMatch,
    /// A PCRE2 matching error (match limit, bad offset, ...).
    Failed,
}

/// Searches `target` from `start`; with `anchored`, a match must begin at
/// `start` exactly.
fn search(
    re: &Regex,
    locs: &mut CaptureLocations,
    target: &[u8],
    start: usize,
    anchored: bool,
) -> Step {
    if start > target.len() {
        return Step::Failed;
    }
    match re.captures_read_at(locs, target, start) {
        Ok(Some(m)) if !anchored || m.start() == start => Step::Found,
        Ok(_) => Step::NoMatch,
        Err(_) => Step::Failed,
    }
}

/// Appends the replacement text for the current match: `\0`..`\9` are the
/// groups (an unset group is empty; a group above the highest one set is an
/// error: `None`), a backslash before anything else is kept as is.
fn expand(out: &mut Vec<u8>, replace: &[u8], target: &[u8], locs: &CaptureLocations) -> Option<()> {
    let set = (0..locs.len())
        .rev()
        .find(|&g| locs.get(g).is_some())
        .map_or(0, |g| g + 1);
    let mut k = 0;
    while let Some(&c) = replace.get(k) {
        match replace.get(k + 1) {
            Some(d) if c == b'\\' && d.is_ascii_digit() => {
                let g = usize::from(d - b'0');
                if g >= set {
                    return None;
                }
                if let Some((s, e)) = locs.get(g) {
                    out.extend_from_slice(target.get(s..e).unwrap_or_default());
                }
                k += 1;
            }
            _ => out.push(c),
        }
        k += 1;
    }
    Some(())
}

/// A substitution's output outgrew the evaluation's work budget.
struct TooBig;

/// The reference's regex helper. Without `replace`: whether `pattern`
/// matches `target`. With it: the replacement text for the first match (or
/// every match with `g`), embedded in the target with `f`; no match gives
/// `""` (or the target with `f`). An invalid pattern or a matching error
/// gives `error`.
///
/// The global loop is the reference's: after an empty match it retries at
/// the same offset refusing an empty match; if that fails it copies one
/// byte and goes on. An empty match at the very end thus steps past the
/// end of the target, which PCRE2 rejects: the result is `error`
/// (`replaceAll("b*", "abc", "-")`). The byte copied after a failed retry
/// is kept even without `f`.
///
/// A substitution whose output would exceed `max_out` bytes (the rest of
/// the evaluation's work budget) stops with `TooBig`.
fn regexp_helper(
    pattern: &[u8],
    target: &[u8],
    replace: Option<&[u8]>,
    opts: Opts,
    max_out: usize,
) -> Result<Val, TooBig> {
    let (pattern, target) = (c_str(pattern), c_str(target));
    let Some(re) = compile(pattern, opts, false) else {
        return Ok(Val::Error);
    };
    let Some(replace) = replace.map(c_str) else {
        let mut locs = re.capture_locations();
        return Ok(match search(&re, &mut locs, target, 0, false) {
            Step::Found => Val::Bool(true),
            Step::NoMatch => Val::Bool(false),
            Step::Failed => Val::Error,
        });
    };
    let mut main_locs = re.capture_locations();
    let mut retry: Option<(Rc<Regex>, CaptureLocations)> = None;
    let mut out = Vec::new();
    let mut idx = 0;
    let mut after_empty = false;
    loop {
        let (step, locs) = if after_empty {
            if retry.is_none() {
                let Some(re2) = compile(pattern, opts, true) else {
                    return Ok(Val::Error);
                };
                let locs = re2.capture_locations();
                retry = Some((re2, locs));
            }
            let Some((re2, locs)) = retry.as_mut() else {
                return Ok(Val::Error);
            };
            let step = search(re2, locs, target, idx, true);
            if let Step::NoMatch = step {
                // The reference copies the byte at `idx` (the terminating
                // NUL at the end) and moves on.
                out.push(target.get(idx).copied().unwrap_or(0));
                idx += 1;
                after_empty = false;
                if !opts.global {
                    break;
                }
                continue;
            }
            (step, &*locs)
        } else {
            let step = search(&re, &mut main_locs, target, idx, false);
            (step, &main_locs)
        };
        match step {
            Step::Failed => return Ok(Val::Error),
            Step::NoMatch => break,
            Step::Found => {
                let Some((s, e)) = locs.get(0) else {
                    return Ok(Val::Error);
                };
                if opts.full {
                    out.extend_from_slice(target.get(idx..s).unwrap_or_default());
                }
                if expand(&mut out, replace, target, locs).is_none() {
                    return Ok(Val::Error);
                }
                if out.len() > max_out {
                    return Err(TooBig);
                }
                idx = e;
                after_empty = s == e;
                if !opts.global {
                    break;
                }
            }
        }
    }
    if opts.full {
        out.extend_from_slice(target.get(idx..).unwrap_or_default());
    }
    Ok(Val::str(out))
}

// ----- argument handling -------------------------------------------------------

/// Evaluates the arguments of a regex function with `fixed` required
/// arguments and an optional option string after them, with the
/// reference's precedence: `error` in a required argument, then in the
/// options, then `undefined` likewise, then an option string that is not a
/// string (`error`). Gives the required values and the option bytes.
fn eval_regex_args(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
    fixed: usize,
) -> Result<(Vec<Val>, Option<Vec<u8>>), Val> {
    if args.len() != fixed && args.len() != fixed + 1 {
        return Err(Val::Error);
    }
    let mut vals = super::eval_args(ev, args, cur);
    let opt = if vals.len() > fixed { vals.pop() } else { None };
    if vals.iter().any(Val::is_err) || opt.as_ref().is_some_and(Val::is_err) {
        return Err(Val::Error);
    }
    if vals.iter().any(Val::is_undef) || opt.as_ref().is_some_and(Val::is_undef) {
        return Err(Val::Undefined);
    }
    let opt = match opt {
        None => None,
        Some(Val::Str(s)) => Some(s.to_vec()),
        Some(_) => return Err(Val::Error),
    };
    Ok((vals, opt))
}

/// `regexp(pattern, target[, options])`: whether the PCRE pattern matches
/// somewhere in `target`. Both must be strings (`error` else; `error` also
/// for an invalid pattern); `undefined` arguments give `undefined`.
fn regexp(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let (vals, opt) = match eval_regex_args(ev, args, cur, 2) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let opts = Opts::parse(opt.as_deref().unwrap_or_default(), false);
    match vals.as_slice() {
        [Val::Str(p), Val::Str(t)] => {
            regexp_helper(p, t, None, opts, usize::MAX).unwrap_or(Val::Error)
        }
        _ => Val::Error,
    }
}

/// `regexpMember(pattern, list[, options])`: whether the pattern matches
/// some string of the list. Elements are evaluated in order: a match gives
/// `true` at once; an `undefined` element is remembered (the result is
/// `undefined` if nothing matches); any other non-string element gives
/// `error`. An invalid pattern simply never matches (`false`).
fn regexp_member(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let (vals, opt) = match eval_regex_args(ev, args, cur, 2) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let opts = Opts::parse(opt.as_deref().unwrap_or_default(), false);
    let [Val::Str(pattern), Val::List(items, scope)] = vals.as_slice() else {
        return Val::Error;
    };
    let mut saw_undefined = false;
    for item in items.iter() {
        // The reference turns an element whose evaluation fails into a
        // plain `error` result, without failing the whole evaluation.
        let failed_before = ev.failed;
        let v = ev.eval_in(item, *scope);
        if ev.failed && !failed_before {
            ev.failed = false;
            return Val::Error;
        }
        match v {
            Val::Str(t) => {
                if let Ok(Val::Bool(true)) = regexp_helper(pattern, &t, None, opts, usize::MAX) {
                    return Val::Bool(true);
                }
            }
            Val::Undefined => saw_undefined = true,
            _ => return Val::Error,
        }
    }
    if saw_undefined {
        Val::Undefined
    } else {
        Val::Bool(false)
    }
}

/// Shared body of the substitutions; `implied` are the option letters the
/// function adds to the caller's (`f` for `replace`, `fg` for
/// `replaceAll`).
fn substitute(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, implied: &[u8]) -> Val {
    let (vals, opt) = match eval_regex_args(ev, args, cur, 3) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let mut letters = opt.unwrap_or_default();
    letters.extend_from_slice(implied);
    let opts = Opts::parse(&letters, true);
    match vals.as_slice() {
        [Val::Str(p), Val::Str(t), Val::Str(r)] => {
            match regexp_helper(p, t, Some(r), opts, ev.byte_allowance()) {
                Ok(v) => v,
                Err(TooBig) => {
                    // Charging what is left fails the evaluation for good.
                    ev.charge(u64::MAX);
                    Val::Error
                }
            }
        }
        _ => Val::Error,
    }
}

/// `regexps(pattern, target, replacement[, options])`: the replacement text
/// for the first match (`\0`..`\9` are groups), `""` if none; options `f`
/// and `g` as for the other substitutions.
fn regexps(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    substitute(ev, args, cur, b"")
}

/// `replace(pattern, target, replacement[, options])`: `target` with its
/// first match replaced.
fn replace(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    substitute(ev, args, cur, b"f")
}

/// `replaceAll(pattern, target, replacement[, options])`: `target` with
/// every match replaced.
fn replace_all(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    substitute(ev, args, cur, b"fg")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::functions::testing::ev;

    #[test]
    fn regexp_matches() {
        assert_eq!(ev(r#"regexp("^a", "abc")"#), "true");
        assert_eq!(ev(r#"regexp("^b", "abc")"#), "false");
        assert_eq!(ev(r#"regexp("^B", "bob", "i")"#), "true");
        assert_eq!(ev(r#"regexp("^c", "ab\nc", "m")"#), "true");
        assert_eq!(ev(r#"regexp("^c", "ab\nc")"#), "false");
        assert_eq!(ev(r#"regexp("a.c", "a\nc", "s")"#), "true");
        assert_eq!(ev(r#"regexp("a b", "ab", "x")"#), "true");
        assert_eq!(ev(r#"regexp("[[:digit:]]+", "x9")"#), "true");
        assert_eq!(ev(r#"regexp("\\bfoo\\b", "a foo b")"#), "true");
        assert_eq!(ev(r#"regexp("", "")"#), "true");
        assert_eq!(ev(r#"regexp("a", "a", "q")"#), "true");
        assert_eq!(ev(r#"regexp("é", "café")"#), "true");
    }

    #[test]
    fn regexp_errors() {
        assert_eq!(ev(r#"regexp("[", "a")"#), "error");
        assert_eq!(ev(r#"regexp("a", 1)"#), "error");
        assert_eq!(ev(r#"regexp("a", undefined)"#), "undefined");
        assert_eq!(ev(r#"regexp(undefined, error)"#), "error");
        assert_eq!(ev(r#"regexp("a", "a", 1)"#), "error");
        assert_eq!(ev(r#"regexp("a", "a", undefined)"#), "undefined");
        assert_eq!(ev(r#"regexp("a")"#), "error");
    }

    #[test]
    fn regexp_member() {
        assert_eq!(ev(r#"regexpMember("^A", {"abc"}, "i")"#), "true");
        assert_eq!(ev(r#"regexpMember("a", {})"#), "false");
        assert_eq!(ev(r#"regexpMember("a", {1, "a"})"#), "error");
        assert_eq!(ev(r#"regexpMember("a", {"a", 1})"#), "true");
        assert_eq!(ev(r#"regexpMember("a", {undefined, "a"})"#), "true");
        assert_eq!(ev(r#"regexpMember("a", {undefined, "b"})"#), "undefined");
        assert_eq!(ev(r#"regexpMember("[", {"a"})"#), "false");
        assert_eq!(ev(r#"regexpMember("a", "a")"#), "error");
        // A failing element evaluation is a plain `error`, not a failure.
        let e = crate::parse_expr(r#"regexpMember("a", {.x})"#).expect("parses");
        let mut evaluator = Evaluator::default();
        assert_eq!(evaluator.eval(&e, None, None).to_string(), "error");
        assert!(!evaluator.failed);
        let e = crate::parse_expr(r#"regexp("a", .x)"#).expect("parses");
        assert_eq!(evaluator.eval(&e, None, None).to_string(), "error");
        assert!(evaluator.failed);
    }

    #[test]
    fn substitutions() {
        assert_eq!(ev(r#"regexps("(a)(n)", "banana", "\\2\\1")"#), r#""na""#);
        assert_eq!(ev(r#"regexps("x", "banana", "o")"#), r#""""#);
        assert_eq!(ev(r#"regexps("(.*)", "abc", "[\\1]")"#), r#""[abc]""#);
        assert_eq!(ev(r#"regexps("a", "banana", "\\0")"#), r#""a""#);
        assert_eq!(ev(r#"regexps("a", "banana", "\\1")"#), "error");
        assert_eq!(ev(r#"regexps("a", "banana", "\\x")"#), r#""\\x""#);
        assert_eq!(ev(r#"regexps("a", "aaa", "b", "g")"#), r#""bbb""#);
        assert_eq!(ev(r#"replace("a", "banana", "o")"#), r#""bonana""#);
        assert_eq!(ev(r#"replace("A", "banana", "o", "i")"#), r#""bonana""#);
        assert_eq!(ev(r#"replace("x", "banana", "o")"#), r#""banana""#);
        assert_eq!(ev(r#"replace("", "abc", "-")"#), r#""-abc""#);
        assert_eq!(ev(r#"replaceAll("a", "banana", "o")"#), r#""bonono""#);
        assert_eq!(ev(r#"replaceAll("a+", "caaataa", "X")"#), r#""cXtX""#);
        assert_eq!(
            ev(r#"replaceAll("(n)(a)", "banana", "\\2\\1")"#),
            r#""baanan""#
        );
        assert_eq!(ev(r#"replaceAll("(x)?a", "banana", "[\\1]")"#), "error");
        assert_eq!(
            ev(r#"replaceAll("(x)?(a)", "banana", "[\\1]")"#),
            r#""b[]n[]n[]""#
        );
        assert_eq!(ev(r#"replaceAll("b*", "abc", "-")"#), "error");
        assert_eq!(ev(r#"replaceAll("(?=n)", "banana", "-")"#), r#""ba-na-na""#);
        assert_eq!(ev(r#"regexps("[", "a", "b")"#), "error");
        assert_eq!(ev(r#"regexps("a", undefined, "b")"#), "undefined");
        assert_eq!(ev(r#"replace("a", "b")"#), "error");
    }

    #[test]
    fn non_utf8_patterns() {
        assert_eq!(ev(r#"regexp("\303", "é")"#), "true");
        assert_eq!(ev(r#"regexp("^\303$", "é")"#), "false");
        assert_eq!(ev(r#"replaceAll("\251", "éé", "x")"#), r#""\303x\303x""#);
        assert_eq!(ev(r#"regexp("\\\303", "é")"#), "true");
        assert_eq!(pattern_text(b"a\xffb"), "a\\x{ff}b");
        assert_eq!(pattern_text(b"a\\\xff"), "a\\x{ff}");
        assert_eq!(pattern_text(b"a\\\\\xff"), "a\\\\\\x{ff}");
    }
}
