//! `if` / `elif` conditions.
//!
//! After macro expansion a condition is one of: empty (false); a boolean literal (`true`,
//! `false`, `yes`, `no`, `t`, `f`, any case); a number (non-zero is true); `defined NAME`;
//! `version OP X.Y[.Z]`; any of these after a single `!`. Everything else is an error, as in
//! HTCondor ("complex conditionals are not supported").

use crate::expand::is_valid_name;
use crate::expand::{expand_at, MacroScope};
use crate::lines::{is_c_space, trim_c};
use crate::COMPATIBLE_VERSION;

const NOT_CONDITIONAL: &str = "expression is not a conditional";
const COMPLEX: &str = "complex conditionals are not supported";
const BAD_VERSION: &str = "the version literal is invalid";
const BAD_DEFINED: &str = "defined argument must be param name, boolean, or number";

/// A boolean literal as HTCondor's configuration reader accepts it.
pub(crate) fn bool_literal(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "yes" | "t" => Some(true),
        "false" | "no" | "f" => Some(false),
        _ => None,
    }
}

/// A decimal number (`1`, `-1`, `1.5`, `.5`, `1e3`); hexadecimal and words are not numbers.
pub(crate) fn number_literal(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse().ok()
}

/// A boolean-valued knob (`REQUIRE_LOCAL_CONFIG_FILE`) as `param_boolean` reads it: a prefix
/// of `true` or `false` (any case), or a number (non-zero is true); else `None`.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    let s = trim_c(s).to_ascii_lowercase();
    if s.is_empty() {
        return None;
    }
    if "true".starts_with(&s) {
        return Some(true);
    }
    if "false".starts_with(&s) {
        return Some(false);
    }
    number_literal(&s).map(|n| n != 0.0)
}

fn reason_for(s: &str) -> &'static str {
    if s.chars()
        .any(|c| is_c_space(c) || "()=<>&|!\"+-*/%?:{}[],'".contains(c))
    {
        COMPLEX
    } else {
        NOT_CONDITIONAL
    }
}

/// Evaluates a condition (the text after `if`/`elif`); `Err` holds the reason it is invalid.
pub(crate) fn evaluate(cfg: &dyn MacroScope, text: &str) -> Result<bool, String> {
    if trim_c(text).is_empty() {
        return Err(NOT_CONDITIONAL.to_string());
    }
    let expanded = if text.contains('$') {
        expand_at(cfg, text, 0, None).map_err(|e| e.to_string())?
    } else {
        text.to_string()
    };
    let mut e = trim_c(&expanded);
    let mut invert = false;
    if let Some(rest) = e.strip_prefix('!') {
        invert = true;
        e = trim_c(rest);
    }
    if e.is_empty() {
        return Ok(invert);
    }
    let value = simple_condition(cfg, e)?;
    Ok(value != invert)
}

fn simple_condition(cfg: &dyn MacroScope, e: &str) -> Result<bool, String> {
    if let Some(b) = bool_literal(e) {
        return Ok(b);
    }
    if let Some(n) = number_literal(e) {
        return Ok(n != 0.0);
    }
    let (word, rest) = match e.find(is_c_space) {
        Some(i) => (&e[..i], trim_c(&e[i..])),
        None => (e, ""),
    };
    if word.eq_ignore_ascii_case("defined") {
        if rest.is_empty() {
            return Ok(false);
        }
        if rest.contains(is_c_space) {
            return Err(BAD_DEFINED.to_string());
        }
        if bool_literal(rest).is_some() || number_literal(rest).is_some() {
            return Ok(true);
        }
        if !is_valid_name(rest) {
            return Err(COMPLEX.to_string());
        }
        return Ok(cfg.is_defined_for_if(rest));
    }
    if word.eq_ignore_ascii_case("version") {
        return version_condition(rest).map_err(str::to_string);
    }
    Err(reason_for(e).to_string())
}

#[derive(Clone, Copy)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

fn version_condition(rest: &str) -> Result<bool, &'static str> {
    if rest.is_empty() {
        return Err(BAD_VERSION);
    }
    let (op, lit) = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">=", Op::Ge),
        ("<=", Op::Le),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ]
    .iter()
    .find_map(|(text, op)| rest.strip_prefix(text).map(|lit| (*op, lit)))
    .ok_or(COMPLEX)?;
    let lit = lit.trim_start_matches(is_c_space);
    let wanted = parse_version_literal(lit)?;
    let (maj, min, sub) = COMPATIBLE_VERSION;
    let ord = match wanted {
        (a, b, Some(c)) => (u64::from(maj), u64::from(min), u64::from(sub)).cmp(&(a, b, c)),
        (a, b, None) => (u64::from(maj), u64::from(min)).cmp(&(a, b)),
    };
    use std::cmp::Ordering::*;
    Ok(match op {
        Op::Eq => ord == Equal,
        Op::Ne => ord != Equal,
        Op::Lt => ord == Less,
        Op::Le => ord != Greater,
        Op::Gt => ord == Greater,
        Op::Ge => ord != Less,
    })
}

/// `X.Y` or `X.Y.Z` (anything after `Z`, or after whitespace, is ignored).
fn parse_version_literal(lit: &str) -> Result<(u64, u64, Option<u64>), &'static str> {
    let b = lit.as_bytes();
    let digits = |from: usize| {
        let mut i = from;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i, lit[from..i].parse::<u64>().unwrap_or(u64::MAX))
    };
    let at_end = |i: usize| i >= b.len() || is_c_space(b[i] as char);
    let (i, major) = digits(0);
    if i == 0 {
        return Err(BAD_VERSION);
    }
    if at_end(i) {
        return Err(BAD_VERSION);
    }
    if b[i] != b'.' {
        return Err(COMPLEX);
    }
    let (j, minor) = digits(i + 1);
    if j == i + 1 {
        return Err(if at_end(j) { BAD_VERSION } else { COMPLEX });
    }
    if at_end(j) {
        return Ok((major, minor, None));
    }
    if b[j] != b'.' {
        return Err(COMPLEX);
    }
    let (k, sub) = digits(j + 1);
    if k == j + 1 {
        return Err(COMPLEX);
    }
    Ok((major, minor, Some(sub)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        assert_eq!(bool_literal("Yes"), Some(true));
        assert_eq!(bool_literal("F"), Some(false));
        assert_eq!(bool_literal("on"), None);
        assert_eq!(number_literal("1e3"), Some(1000.0));
        assert_eq!(number_literal("-1"), Some(-1.0));
        assert_eq!(number_literal("0x10"), None);
        assert_eq!(number_literal("."), None);
    }

    #[test]
    fn boolean_knobs() {
        assert_eq!(parse_bool("FALSE"), Some(false));
        assert_eq!(parse_bool("fals"), Some(false));
        assert_eq!(parse_bool("T"), Some(true));
        assert_eq!(parse_bool("0.0"), Some(false));
        assert_eq!(parse_bool("2"), Some(true));
        assert_eq!(parse_bool("no"), None);
        assert_eq!(parse_bool(""), None);
    }

    #[test]
    fn versions() {
        assert_eq!(version_condition(">= 8.0"), Ok(true));
        assert_eq!(version_condition("== 25.14"), Ok(true));
        assert_eq!(version_condition("> 25.14"), Ok(false));
        assert_eq!(version_condition(">= 25.14.2"), Ok(false));
        assert_eq!(version_condition("< 99.0.0"), Ok(true));
        assert_eq!(version_condition(">= 26"), Err(BAD_VERSION));
        assert_eq!(version_condition("25"), Err(COMPLEX));
        assert_eq!(version_condition(">= 8.a"), Err(COMPLEX));
        assert_eq!(version_condition(">= 25."), Err(BAD_VERSION));
        assert_eq!(version_condition(">= 25.14.1x"), Ok(true));
        assert_eq!(version_condition("=> 8.0"), Err(BAD_VERSION));
    }
}
