//! Canonical unparsing (HTCondor's `ClassAdUnParser` format).

use crate::ad::ClassAd;
use crate::ast::{Expr, UnOp};
use crate::time;
use crate::value::{format_real, Value};

/// Appends a string literal with HTCondor's escapes: `" \ \n \t \r \b \f
/// \v \a` escaped, every other byte below 0x20, DEL, and every byte of
/// 0x80 or more as a three-digit octal escape.
pub fn quote_string(bytes: &[u8], quote: u8, out: &mut String) {
    out.push(quote as char);
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            8 => out.push_str("\\b"),
            12 => out.push_str("\\f"),
            11 => out.push_str("\\v"),
            7 => out.push_str("\\a"),
            _ if b == quote => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                out.push('\\');
                out.push(char::from(b'0' + (b >> 6)));
                out.push(char::from(b'0' + ((b >> 3) & 7)));
                out.push(char::from(b'0' + (b & 7)));
            }
        }
    }
    out.push(quote as char);
}

fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

fn is_reserved(s: &str) -> bool {
    [
        "true",
        "false",
        "undefined",
        "error",
        "is",
        "isnt",
        "parent",
    ]
    .iter()
    .any(|k| s.eq_ignore_ascii_case(k))
}

/// Appends an attribute name, single-quoted when it is not a plain
/// identifier (or is a keyword, or `parent`).
pub fn write_name(name: &str, out: &mut String) {
    if is_identifier(name) && !is_reserved(name) {
        out.push_str(name);
    } else {
        quote_string(name.as_bytes(), b'\'', out);
    }
}

/// Appends the canonical text of a value.
pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Undefined => out.push_str("undefined"),
        Value::Error => out.push_str("error"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Real(r) => format_real(*r, out),
        Value::Str(s) => quote_string(s, b'"', out),
        Value::AbsTime(t) => {
            out.push_str("absTime(\"");
            out.push_str(&time::format_abstime(*t));
            out.push_str("\")");
        }
        Value::RelTime(r) => {
            out.push_str("relTime(\"");
            out.push_str(&time::format_reltime(*r));
            out.push_str("\")");
        }
        Value::List(items) => write_list(items, out),
        Value::Ad(ad) => write_ad(ad, out),
    }
}

fn write_list(items: &[Expr], out: &mut String) {
    out.push_str("{ ");
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_expr(e, out);
    }
    out.push_str(" }");
}

/// Appends the canonical text of an ad: `[ a = 1; b = 2 ]`. Attributes
/// come in the reference library's order: shorter names first, then
/// case-insensitively alphabetical.
pub fn write_ad(ad: &ClassAd, out: &mut String) {
    out.push_str("[ ");
    let mut attrs: Vec<_> = ad.iter().collect();
    attrs.sort_by(|(a, _), (b, _)| {
        let (a, b) = (a.as_str(), b.as_str());
        a.len().cmp(&b.len()).then_with(|| {
            a.bytes()
                .map(|c| c.to_ascii_lowercase())
                .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
        })
    });
    for (i, (n, e)) in attrs.into_iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        write_name(n.as_str(), out);
        out.push_str(" = ");
        write_expr(e, out);
    }
    out.push_str(" ]");
}

/// Appends the canonical text of an expression.
pub fn write_expr(e: &Expr, out: &mut String) {
    match e {
        Expr::Lit(v) => write_value(v, out),
        Expr::RelTimeStr(r) => write_value(&Value::RelTime(*r), out),
        Expr::Attr(n) => write_name(n.as_str(), out),
        Expr::AbsAttr(n) => {
            out.push('.');
            write_name(n.as_str(), out);
        }
        Expr::Select(base, n) => {
            write_expr(base, out);
            out.push('.');
            // The reference does not re-quote a name after `.` (except
            // `parent`).
            if n.as_str().eq_ignore_ascii_case("parent") {
                write_name(n.as_str(), out);
            } else {
                out.push_str(n.as_str());
            }
        }
        Expr::Index(base, idx) => {
            write_expr(base, out);
            out.push('[');
            write_expr(idx, out);
            out.push(']');
        }
        Expr::Unary(op, a) => {
            out.push_str(match op {
                UnOp::Neg => " -",
                UnOp::Plus => " +",
                UnOp::Not => " !",
                UnOp::BitNot => " ~",
            });
            write_expr(a, out);
        }
        Expr::Binary(op, a, b) => {
            write_expr(a, out);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            write_expr(b, out);
        }
        Expr::Cond(c) => {
            write_expr(&c.0, out);
            out.push_str(" ? ");
            write_expr(&c.1, out);
            out.push_str(" : ");
            write_expr(&c.2, out);
        }
        Expr::Elvis(a, b) => {
            write_expr(a, out);
            out.push_str(" ?: ");
            write_expr(b, out);
        }
        Expr::Paren(a) => {
            out.push('(');
            write_expr(a, out);
            out.push(')');
        }
        Expr::Call(c) => {
            out.push_str(&c.name);
            out.push('(');
            for (i, a) in c.args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_expr(a, out);
            }
            out.push(')');
        }
        Expr::List(items) => write_list(items, out),
        Expr::Ad(ad) => write_ad(ad, out),
    }
}

/// The canonical text of an expression.
pub fn unparse(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(e, &mut s);
    s
}

/// The canonical text of a value.
pub fn unparse_value(v: &Value) -> String {
    let mut s = String::new();
    write_value(v, &mut s);
    s
}

/// The canonical text of an ad.
pub fn unparse_ad(ad: &ClassAd) -> String {
    let mut s = String::new();
    write_ad(ad, &mut s);
    s
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&unparse(self))
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&unparse_value(self))
    }
}
