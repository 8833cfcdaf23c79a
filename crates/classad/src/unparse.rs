//! Canonical unparsing (HTCondor's `ClassAdUnParser` format).

use crate::ad::ClassAd;
use crate::ast::{BinOp, Expr, UnOp};
use crate::time;
use crate::value::{format_real, Value};

/// The two printed forms of ClassAds: the canonical new syntax, and the old
/// syntax `condor_q -l` / `condor_status -l` print (reals as `%.16G`, only
/// `"` escaped in strings, `=?=`/`=!=`, negative numbers without a space).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Syntax {
    New,
    Old,
}

/// A real as the old syntax prints it: `%.16G`, with `.0` added when the
/// text would read as an integer; zero, NaN and the infinities as in the new
/// syntax.
pub fn format_real_old(r: f64, out: &mut String) {
    if r == 0.0 || !r.is_finite() {
        format_real(r, out);
        return;
    }
    const DIGITS: i32 = 16;
    let sci = format!("{:.*e}", (DIGITS - 1) as usize, r);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    let text = if !(-4..DIGITS).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}E{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{:.*}", (DIGITS - 1 - exp) as usize, r))
    };
    out.push_str(&text);
    if !text.contains(['.', 'E', 'e']) {
        out.push_str(".0");
    }
}

/// A string literal of the old syntax: only the quote is escaped.
fn quote_string_old(bytes: &[u8], out: &mut String) {
    out.push('"');
    for ch in String::from_utf8_lossy(bytes).chars() {
        if ch == '"' {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('"');
}

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
    write_name_as(name, out, Syntax::New)
}

fn write_name_as(name: &str, out: &mut String, syntax: Syntax) {
    if is_identifier(name) && !is_reserved(name) {
        out.push_str(name);
    } else if syntax == Syntax::New {
        quote_string(name.as_bytes(), b'\'', out);
    } else {
        out.push('\'');
        for ch in name.chars() {
            if ch == '\'' || ch == '\\' {
                out.push('\\');
            }
            out.push(ch);
        }
        out.push('\'');
    }
}

/// Appends the canonical text of a value.
pub fn write_value(v: &Value, out: &mut String) {
    write_value_as(v, out, Syntax::New)
}

/// Appends the text of a value in the given syntax.
pub fn write_value_as(v: &Value, out: &mut String, syntax: Syntax) {
    match v {
        Value::Real(r) if syntax == Syntax::Old => format_real_old(*r, out),
        Value::Str(s) if syntax == Syntax::Old => quote_string_old(s, out),
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
        Value::List(items) => write_list(items, out, syntax),
        Value::Ad(ad) => write_ad_as(ad, out, syntax),
    }
}

fn write_list(items: &[Expr], out: &mut String, syntax: Syntax) {
    out.push_str("{ ");
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_expr_as(e, out, syntax);
    }
    out.push_str(" }");
}

/// Appends the canonical text of an ad: `[ a = 1; b = 2 ]`. Attributes
/// come in the reference library's order: shorter names first, then
/// case-insensitively alphabetical.
pub fn write_ad(ad: &ClassAd, out: &mut String) {
    write_ad_as(ad, out, Syntax::New)
}

/// Appends the text of an ad in the given syntax.
pub fn write_ad_as(ad: &ClassAd, out: &mut String, syntax: Syntax) {
    out.push_str("[ ");
    let mut attrs: Vec<_> = ad.iter_chained().collect();
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
        write_name_as(n.as_str(), out, syntax);
        out.push_str(" = ");
        write_expr_as(e, out, syntax);
    }
    out.push_str(" ]");
}

/// Appends the canonical text of an expression.
pub fn write_expr(e: &Expr, out: &mut String) {
    write_expr_as(e, out, Syntax::New)
}

/// Appends the text of an expression in the given syntax.
pub fn write_expr_as(e: &Expr, out: &mut String, syntax: Syntax) {
    match e {
        Expr::Lit(v) => write_value_as(v, out, syntax),
        Expr::RelTimeStr(r) => {
            out.push_str("relTime(\"");
            out.push_str(&time::format_reltime_literal(*r));
            out.push_str("\")");
        }
        Expr::Attr(n) => write_name_as(n.as_str(), out, syntax),
        Expr::AbsAttr(n) => {
            out.push('.');
            write_name_as(n.as_str(), out, syntax);
        }
        Expr::Select(base, n) => {
            write_expr_as(base, out, syntax);
            out.push('.');
            // The reference does not re-quote a name after `.` (except
            // `parent`).
            if n.as_str().eq_ignore_ascii_case("parent") {
                write_name_as(n.as_str(), out, syntax);
            } else {
                out.push_str(n.as_str());
            }
        }
        Expr::Index(base, idx) => {
            write_expr_as(base, out, syntax);
            out.push('[');
            write_expr_as(idx, out, syntax);
            out.push(']');
        }
        // the old syntax prints a negated number as the negative number
        Expr::Unary(UnOp::Neg, a)
            if syntax == Syntax::Old
                && matches!(**a, Expr::Lit(Value::Int(_) | Value::Real(_))) =>
        {
            out.push('-');
            write_expr_as(a, out, syntax);
        }
        Expr::Unary(op, a) => {
            out.push_str(match op {
                UnOp::Neg => " -",
                UnOp::Plus => " +",
                UnOp::Not => " !",
                UnOp::BitNot => " ~",
            });
            write_expr_as(a, out, syntax);
        }
        Expr::Binary(op, a, b) => {
            write_expr_as(a, out, syntax);
            out.push(' ');
            out.push_str(match (syntax, op) {
                (Syntax::Old, BinOp::Is) => "=?=",
                (Syntax::Old, BinOp::Isnt) => "=!=",
                _ => op.symbol(),
            });
            out.push(' ');
            write_expr_as(b, out, syntax);
        }
        Expr::Cond(c) => {
            write_expr_as(&c.0, out, syntax);
            out.push_str(" ? ");
            write_expr_as(&c.1, out, syntax);
            out.push_str(" : ");
            write_expr_as(&c.2, out, syntax);
        }
        Expr::Elvis(a, b) => {
            write_expr_as(a, out, syntax);
            out.push_str(" ?: ");
            write_expr_as(b, out, syntax);
        }
        Expr::Paren(a) => {
            out.push('(');
            write_expr_as(a, out, syntax);
            out.push(')');
        }
        Expr::Call(c) => {
            out.push_str(&c.name);
            out.push('(');
            for (i, a) in c.args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_expr_as(a, out, syntax);
            }
            out.push(')');
        }
        Expr::List(items) => write_list(items, out, syntax),
        Expr::Ad(ad) => write_ad_as(ad, out, syntax),
    }
}

/// The text of an expression in the old syntax (`condor_q -l`).
pub fn unparse_old(e: &Expr) -> String {
    let mut s = String::new();
    write_expr_as(e, &mut s, Syntax::Old);
    s
}

/// The text of a value in the old syntax.
pub fn unparse_old_value(v: &Value) -> String {
    let mut s = String::new();
    write_value_as(v, &mut s, Syntax::Old);
    s
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
