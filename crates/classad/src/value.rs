//! ClassAd values.

use std::sync::Arc;

use crate::ad::ClassAd;
use crate::ast::Expr;

/// An absolute time: seconds since the Unix epoch and the UTC offset (in
/// seconds) it is expressed in. `==` compares instants; `=?=` also offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbsTime {
    pub secs: i64,
    pub offset: i32,
}

/// Strings are byte strings, as in HTCondor (`size("日本")` is 6).
pub type Str = Arc<[u8]>;

/// The value of a ClassAd expression.
#[derive(Clone, Debug)]
pub enum Value {
    Undefined,
    Error,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(Str),
    AbsTime(AbsTime),
    /// Relative time in seconds (fractions are kept but not printed).
    RelTime(f64),
    /// A list holds unevaluated expressions (`{1, 2 + 3}` stays `{ 1,2 + 3 }`).
    List(Arc<Vec<Expr>>),
    Ad(ClassAd),
}

/// The type name of a value, as the conformance protocol spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    Undefined,
    Error,
    Boolean,
    Integer,
    Real,
    String,
    AbsTime,
    RelTime,
    List,
    ClassAd,
}

impl ValueType {
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::Undefined => "undefined",
            ValueType::Error => "error",
            ValueType::Boolean => "boolean",
            ValueType::Integer => "integer",
            ValueType::Real => "real",
            ValueType::String => "string",
            ValueType::AbsTime => "abstime",
            ValueType::RelTime => "reltime",
            ValueType::List => "list",
            ValueType::ClassAd => "classad",
        }
    }
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Undefined => ValueType::Undefined,
            Value::Error => ValueType::Error,
            Value::Bool(_) => ValueType::Boolean,
            Value::Int(_) => ValueType::Integer,
            Value::Real(_) => ValueType::Real,
            Value::Str(_) => ValueType::String,
            Value::AbsTime(_) => ValueType::AbsTime,
            Value::RelTime(_) => ValueType::RelTime,
            Value::List(_) => ValueType::List,
            Value::Ad(_) => ValueType::ClassAd,
        }
    }

    pub fn is_undefined(&self) -> bool {
        matches!(self, Value::Undefined)
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error)
    }

    /// The boolean meaning used by matchmaking and policy expressions:
    /// `true`, or a non-zero number. Everything else (UNDEFINED, ERROR,
    /// strings, lists, zero) is false.
    pub fn is_true(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Real(r) => *r != 0.0,
            _ => false,
        }
    }

    /// The string contents, if this is a string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The string contents as text (invalid UTF-8 replaced), if a string.
    pub fn as_string(&self) -> Option<String> {
        self.as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The number as an integer (reals truncated, booleans 0/1).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Real(r) => Some(*r as i64),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    /// The number as a real.
    pub fn as_real(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            Value::Bool(b) => Some(*b as i64 as f64),
            _ => None,
        }
    }

    /// Identity of two literal values (used for structural tree equality).
    pub(crate) fn same_literal(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Undefined, Value::Undefined) | (Value::Error, Value::Error) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Real(a), Value::Real(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) || {
                    let (mut x, mut y) = (String::new(), String::new());
                    format_real(*a, &mut x);
                    format_real(*b, &mut y);
                    x == y
                }
            }
            (Value::RelTime(a), Value::RelTime(b)) => {
                a.to_bits() == b.to_bits()
                    || crate::time::format_reltime(*a) == crate::time::format_reltime(*b)
            }
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::AbsTime(a), Value::AbsTime(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Ad(a), Value::Ad(b)) => a == b,
            _ => false,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(Arc::from(s.as_bytes()))
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(Arc::from(s.into_bytes()))
    }
}
impl From<Vec<u8>> for Value {
    fn from(s: Vec<u8>) -> Value {
        Value::Str(Arc::from(s))
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(r: f64) -> Value {
        Value::Real(r)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

/// Formats a real the way HTCondor's unparser does: `%.15E`, except zero
/// (`0.0` / `-0.0`), NaN and infinities (`real("NaN")`, `real("INF")`).
pub fn format_real(r: f64, out: &mut String) {
    if r.is_nan() {
        out.push_str("real(\"NaN\")");
    } else if r.is_infinite() {
        out.push_str(if r > 0.0 {
            "real(\"INF\")"
        } else {
            "real(\"-INF\")"
        });
    } else if r == 0.0 {
        out.push_str(if r.is_sign_negative() { "-0.0" } else { "0.0" });
    } else {
        format_e15(r, out);
    }
}

/// C's `%.15E` for a finite value.
pub(crate) fn format_e15(r: f64, out: &mut String) {
    let s = format!("{:.15e}", r);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    out.push_str(mant);
    out.push('E');
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(r: f64) -> String {
        let mut s = String::new();
        format_real(r, &mut s);
        s
    }

    #[test]
    fn reals_print_like_printf_e15() {
        assert_eq!(f(1.0), "1.000000000000000E+00");
        assert_eq!(f(0.1), "1.000000000000000E-01");
        assert_eq!(f(1.0 / 3.0), "3.333333333333333E-01");
        assert_eq!(f(1e20), "1.000000000000000E+20");
        assert_eq!(f(1e-300), "1.000000000000000E-300");
        assert_eq!(f(-2.5), "-2.500000000000000E+00");
        assert_eq!(f(0.0), "0.0");
        assert_eq!(f(-0.0), "-0.0");
        assert_eq!(f(f64::NAN), "real(\"NaN\")");
        assert_eq!(f(f64::INFINITY), "real(\"INF\")");
        assert_eq!(f(f64::NEG_INFINITY), "real(\"-INF\")");
    }

    #[test]
    fn truthiness_follows_matchmaking_rules() {
        assert!(Value::Bool(true).is_true());
        assert!(Value::Int(3).is_true());
        assert!(Value::Real(0.5).is_true());
        assert!(!Value::Int(0).is_true());
        assert!(!Value::Undefined.is_true());
        assert!(!Value::from("true").is_true());
    }
}
