//! Helpers shared by the function families: C string views, argument
//! evaluation as the reference library does it, string-list values and
//! PCRE2 compilation.

use std::sync::Arc;

use pcre2::bytes::{Regex, RegexBuilder};

use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};
use crate::value::Value;

/// C's `isspace` in the "C" locale.
pub(super) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The part of a byte string a C function sees (up to the first NUL).
pub(super) fn c_str(s: &[u8]) -> &[u8] {
    match s.iter().position(|&b| b == 0) {
        Some(i) => &s[..i],
        None => s,
    }
}

/// Evaluates the arguments that are present.
pub(super) fn eval_all(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Vec<Val> {
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
pub(super) fn rooted_contained(ev: &mut Evaluator, e: &Expr, scope: Option<FrameId>) -> Val {
    let failed_before = ev.failed;
    let v = ev.eval_rooted(e, scope);
    if ev.failed && !failed_before {
        ev.failed = false;
        return Val::Error;
    }
    v
}

/// The bytes of a string value.
pub(super) fn as_str(v: &Val) -> Option<&[u8]> {
    match v {
        Val::Str(s) => Some(s),
        _ => None,
    }
}

/// A list value of strings.
pub(super) fn str_list(items: Vec<Vec<u8>>) -> Val {
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

#[cfg(test)]
mod tests {
    use crate::functions::testing::ev;

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
}
