//! The constant ClassAd expressions of the function macros (`$INT`, `$REAL`, `$STRING`, `$EVAL`,
//! `$CHOICE`/`$SUBSTR` indices), parsed and evaluated by the `classad` crate.
//!
//! There is no ClassAd in scope, so every attribute reference evaluates to `undefined`, as it does
//! in HTCondor's configuration reader. What is the configuration language's own lives here, at
//! the boundary: text that does not parse gives no value (the function expands to nothing), a
//! number is taken from integers, reals and booleans only (an infinite or NaN real is none), and
//! `$EVAL` prints a top-level string without its quotes.

use classad::{EvalOptions, Evaluator, Value};

/// Parses and evaluates `text`; `None` when it does not parse as one ClassAd expression.
/// `seed` seeds `random()` (the configuration's own generator draws it). The configuration
/// reader has no clock, so `time()` and `CurrentTime` see the epoch.
pub(crate) fn eval_str(text: &str, seed: u64) -> Option<Value> {
    let expr = classad::parse_expr(text).ok()?;
    let opts = EvalOptions {
        seed,
        ..EvalOptions::default()
    };
    Some(Evaluator::new(opts).eval(&expr, None, None))
}

/// The value as a number (booleans count as 0/1), for `$REAL`.
pub(crate) fn as_number(v: &Value) -> Option<f64> {
    v.as_real()
}

/// The value as an integer (finite reals truncate toward zero, booleans count as 0/1), for `$INT`
/// and the indices of `$CHOICE` and `$SUBSTR`.
pub(crate) fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Real(r) if !r.is_finite() => None,
        other => other.as_int(),
    }
}

/// The string contents, if the value is a string (`$STRING` prints them as they are).
pub(crate) fn as_text(v: &Value) -> Option<String> {
    v.as_string()
}

/// What `$EVAL` prints: the value's ClassAd text, except that a top-level string is given
/// without its quotes.
pub(crate) fn to_eval_string(v: &Value) -> String {
    match v.as_string() {
        Some(s) => s,
        None => classad::unparse_value(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> String {
        eval_str(s, 1).map_or("<parse error>".to_string(), |v| to_eval_string(&v))
    }

    #[test]
    fn arithmetic_follows_classad_rules() {
        assert_eq!(ev("1+1"), "2");
        assert_eq!(ev("7/2"), "3");
        assert_eq!(ev("-7/2"), "-3");
        assert_eq!(ev("7%3"), "1");
        assert_eq!(ev("1.0/4"), "2.500000000000000E-01");
        assert_eq!(ev("3/0"), "error");
        assert_eq!(ev("10 - - 2"), "12");
        assert_eq!(ev("2 * (3 + 4)"), "14");
    }

    #[test]
    fn attribute_references_are_undefined_without_an_ad() {
        assert_eq!(ev("true || x"), "true");
        assert_eq!(ev("x || true"), "true");
        assert_eq!(ev("x && true"), "undefined");
        assert_eq!(ev("X * 7"), "undefined");
        assert_eq!(ev("x is undefined"), "true");
        assert_eq!(ev("undefined ?: 4"), "4");
    }

    #[test]
    fn comparisons_and_literals() {
        assert_eq!(ev("1 < 2"), "true");
        assert_eq!(ev("\"a\" == \"A\""), "true");
        assert_eq!(ev("\"a\" =?= \"A\""), "false");
        assert_eq!(ev("1 < \"a\""), "error");
        assert_eq!(ev("1 ? 2 : 3"), "2");
        assert_eq!(ev("{1,2}"), "{ 1,2 }");
        assert_eq!(ev("2.0"), "2.000000000000000E+00");
        assert_eq!(ev("-0.5"), "-5.000000000000000E-01");
        assert_eq!(ev("1e100"), "1.000000000000000E+100");
    }

    #[test]
    fn eval_prints_a_top_level_string_without_quotes() {
        assert_eq!(ev("\"a\""), "a");
        assert_eq!(ev("strcat(\"a\", \"b\")"), "ab");
        assert_eq!(ev("{\"a\"}"), "{ \"a\" }");
    }

    #[test]
    fn random_follows_the_seed_it_is_given() {
        let draws: Vec<String> = (0..16)
            .map(|seed| {
                eval_str("random(1000)", seed).map_or(String::new(), |v| to_eval_string(&v))
            })
            .collect();
        assert!(draws
            .iter()
            .all(|d| d.parse::<i64>().is_ok_and(|n| (0..1000).contains(&n))));
        assert!(draws.iter().any(|d| *d != draws[0]), "{draws:?}");
    }

    #[test]
    fn text_that_does_not_parse_has_no_value() {
        assert_eq!(ev("1 +"), "<parse error>");
        assert_eq!(ev("0x10"), "<parse error>");
        assert_eq!(ev(""), "<parse error>");
    }

    #[test]
    fn numbers_come_from_numbers_and_booleans_only() {
        let int = |s: &str| eval_str(s, 1).as_ref().and_then(as_int);
        assert_eq!(int("7.9"), Some(7));
        assert_eq!(int("-7.9"), Some(-7));
        assert_eq!(int("true"), Some(1));
        assert_eq!(int("\"5\""), None);
        assert_eq!(int("real(\"INF\")"), None);
        assert_eq!(int("undefined"), None);
        let real = |s: &str| eval_str(s, 1).as_ref().and_then(as_number);
        assert_eq!(real("3"), Some(3.0));
        assert_eq!(real("false"), Some(0.0));
        assert_eq!(real("\"2.5\""), None);
    }
}
