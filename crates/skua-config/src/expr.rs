//! A small, self-contained evaluator for the constant ClassAd expressions that configuration
//! functions need (`$INT`, `$REAL`, `$STRING`, `$EVAL`, `$CHOICE`/`$SUBSTR` indices).
//!
//! There is no ClassAd in scope, so every attribute reference evaluates to `undefined`, as it does
//! in HTCondor's configuration reader. Supported: integer, real, string, boolean, `undefined` and
//! `error` literals, lists `{...}`, the arithmetic, comparison, meta-comparison (`=?=`, `=!=`,
//! `is`, `isnt`), logical, bitwise and conditional (`?:`) operators, and a handful of common
//! functions.
//!
//! This is deliberately minimal: it should be replaced by the `classad` crate's evaluator once that
//! crate is available to depend on.

/// A ClassAd value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Undefined,
    Error,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(String),
    List(Vec<Value>),
}

impl Value {
    /// The value as a number (booleans count as 0/1), for `$INT`/`$REAL`.
    pub(crate) fn as_number(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }

    /// The value as an integer (reals truncate toward zero, booleans count as 0/1).
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Real(r) if r.is_finite() => Some(r.trunc() as i64),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    fn truth(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(i) => Some(*i != 0),
            Value::Real(r) => Some(*r != 0.0),
            _ => None,
        }
    }

    /// ClassAd unparse of the value, except that a top-level string is given without quotes
    /// (what `$EVAL` prints).
    pub(crate) fn to_eval_string(&self) -> String {
        match self {
            Value::Str(s) => s.clone(),
            other => other.unparse(),
        }
    }

    fn unparse(&self) -> String {
        match self {
            Value::Undefined => "undefined".to_string(),
            Value::Error => "error".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Real(r) => format_real_classad(*r),
            Value::Str(s) => {
                let mut out = String::with_capacity(s.len() + 2);
                out.push('"');
                for c in s.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\t' => out.push_str("\\t"),
                        c => out.push(c),
                    }
                }
                out.push('"');
                out
            }
            Value::List(items) => {
                let inner: Vec<String> = items.iter().map(Value::unparse).collect();
                format!("{{ {} }}", inner.join(","))
            }
        }
    }
}

/// Reals are printed like C's `%.15E` (`2.500000000000000E+00`), except zero (`0.0`).
fn format_real_classad(r: f64) -> String {
    if r == 0.0 {
        return if r.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    if r.is_nan() {
        return "real(\"NaN\")".to_string();
    }
    if r.is_infinite() {
        return if r > 0.0 {
            "real(\"INF\")".to_string()
        } else {
            "real(\"-INF\")".to_string()
        };
    }
    crate::printf::format_exp(r, 15, true)
}

/// Parses and evaluates `text`; `None` when it does not parse.
pub(crate) fn eval_str(text: &str) -> Option<Value> {
    let tokens = lex(text)?;
    let mut p = Parser {
        toks: &tokens,
        pos: 0,
    };
    let expr = p.ternary()?;
    if p.pos != tokens.len() {
        return None;
    }
    Some(eval(&expr))
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Real(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    ">>>", "=?=", "=!=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "?:", "+", "-", "*", "/",
    "%", "<", ">", "!", "~", "&", "|", "^", "?", ":", "(", ")", "{", "}", ",", ".", "[", "]",
];

fn lex(text: &str) -> Option<Vec<Tok>> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            let mut is_real = false;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if i < chars.len() && chars[i] == '.' {
                is_real = true;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    is_real = true;
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s: String = chars[start..i].iter().collect();
            if is_real {
                toks.push(Tok::Real(s.parse().ok()?));
            } else {
                match s.parse::<i64>() {
                    Ok(v) => toks.push(Tok::Int(v)),
                    Err(_) => toks.push(Tok::Real(s.parse().ok()?)),
                }
            }
            // A number directly followed by a letter (`0x10`, `8a`) is not an expression.
            if i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                return None;
            }
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            toks.push(Tok::Ident(chars[start..i].iter().collect()));
            continue;
        }
        if c == '"' {
            i += 1;
            let mut s = String::new();
            loop {
                let ch = *chars.get(i)?;
                i += 1;
                match ch {
                    '"' => break,
                    '\\' => {
                        let esc = *chars.get(i)?;
                        i += 1;
                        s.push(match esc {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            other => other,
                        });
                    }
                    other => s.push(other),
                }
            }
            toks.push(Tok::Str(s));
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
        let op = OPS.iter().find(|op| rest.starts_with(**op))?;
        toks.push(Tok::Op(op));
        i += op.chars().count();
    }
    Some(toks)
}

#[derive(Debug, Clone)]
enum Expr {
    Lit(Value),
    Attr,
    List(Vec<Expr>),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Elvis(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

struct Parser<'t> {
    toks: &'t [Tok],
    pos: usize,
}

/// Binary operators by precedence level, lowest first.
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!=", "=?=", "=!=", "is", "isnt"],
    &["<", "<=", ">", ">="],
    &["<<", ">>", ">>>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if let Some(Tok::Op(o)) = self.peek() {
            if *o == op {
                self.pos += 1;
                return true;
            }
        }
        false
    }

    fn ternary(&mut self) -> Option<Expr> {
        let cond = self.binary(0)?;
        if self.eat_op("?") {
            let then = self.ternary()?;
            if !self.eat_op(":") {
                return None;
            }
            let other = self.ternary()?;
            return Some(Expr::Cond(Box::new(cond), Box::new(then), Box::new(other)));
        }
        if self.eat_op("?:") {
            let other = self.ternary()?;
            return Some(Expr::Elvis(Box::new(cond), Box::new(other)));
        }
        Some(cond)
    }

    fn binary_op_at(&self, level: usize) -> Option<&'static str> {
        let ops = LEVELS.get(level)?;
        match self.peek()? {
            Tok::Op(o) => ops.iter().find(|x| **x == *o).copied(),
            Tok::Ident(w) => {
                let lw = w.to_ascii_lowercase();
                ops.iter().find(|x| **x == lw).copied()
            }
            _ => None,
        }
    }

    fn binary(&mut self, level: usize) -> Option<Expr> {
        if level >= LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(op) = self.binary_op_at(level) {
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Some(lhs)
    }

    fn unary(&mut self) -> Option<Expr> {
        for op in ["-", "+", "!", "~"] {
            if self.eat_op(op) {
                let inner = self.unary()?;
                return Some(Expr::Unary(op, Box::new(inner)));
            }
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Option<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.eat_op(".") {
                match self.peek() {
                    Some(Tok::Ident(_)) => {
                        self.pos += 1;
                        e = Expr::Attr;
                    }
                    _ => return None,
                }
            } else if self.eat_op("[") {
                let idx = self.ternary()?;
                if !self.eat_op("]") {
                    return None;
                }
                e = Expr::Binary("[]", Box::new(e), Box::new(idx));
            } else {
                return Some(e);
            }
        }
    }

    fn primary(&mut self) -> Option<Expr> {
        let tok = self.peek()?.clone();
        self.pos += 1;
        match tok {
            Tok::Int(i) => Some(Expr::Lit(Value::Int(i))),
            Tok::Real(r) => Some(Expr::Lit(Value::Real(r))),
            Tok::Str(s) => Some(Expr::Lit(Value::Str(s))),
            Tok::Ident(name) => {
                if self.eat_op("(") {
                    let mut args = Vec::new();
                    if !self.eat_op(")") {
                        loop {
                            args.push(self.ternary()?);
                            if self.eat_op(")") {
                                break;
                            }
                            if !self.eat_op(",") {
                                return None;
                            }
                        }
                    }
                    return Some(Expr::Call(name.to_ascii_lowercase(), args));
                }
                match name.to_ascii_lowercase().as_str() {
                    "true" => Some(Expr::Lit(Value::Bool(true))),
                    "false" => Some(Expr::Lit(Value::Bool(false))),
                    "undefined" => Some(Expr::Lit(Value::Undefined)),
                    "error" => Some(Expr::Lit(Value::Error)),
                    "is" | "isnt" => None,
                    _ => Some(Expr::Attr),
                }
            }
            Tok::Op("(") => {
                let e = self.ternary()?;
                if self.eat_op(")") {
                    Some(e)
                } else {
                    None
                }
            }
            Tok::Op("{") => {
                let mut items = Vec::new();
                if !self.eat_op("}") {
                    loop {
                        items.push(self.ternary()?);
                        if self.eat_op("}") {
                            break;
                        }
                        if !self.eat_op(",") {
                            return None;
                        }
                    }
                }
                Some(Expr::List(items))
            }
            _ => None,
        }
    }
}

fn eval(e: &Expr) -> Value {
    match e {
        Expr::Lit(v) => v.clone(),
        Expr::Attr => Value::Undefined,
        Expr::List(items) => Value::List(items.iter().map(eval).collect()),
        Expr::Unary(op, inner) => unary(op, eval(inner)),
        Expr::Binary("&&", a, b) => logical(true, eval(a), || eval(b)),
        Expr::Binary("||", a, b) => logical(false, eval(a), || eval(b)),
        Expr::Binary(op, a, b) => binary(op, eval(a), eval(b)),
        Expr::Cond(c, t, f) => match eval(c) {
            Value::Undefined => Value::Undefined,
            v => match v.truth() {
                Some(true) => eval(t),
                Some(false) => eval(f),
                None => Value::Error,
            },
        },
        Expr::Elvis(a, b) => match eval(a) {
            Value::Undefined => eval(b),
            v => v,
        },
        Expr::Call(name, args) => call(name, &args.iter().map(eval).collect::<Vec<_>>()),
    }
}

fn unary(op: &str, v: Value) -> Value {
    match (op, v) {
        (_, Value::Error) => Value::Error,
        (_, Value::Undefined) => Value::Undefined,
        ("-", Value::Int(i)) => Value::Int(i.wrapping_neg()),
        ("-", Value::Real(r)) => Value::Real(-r),
        ("+", v @ (Value::Int(_) | Value::Real(_))) => v,
        ("!", v) => match v.truth() {
            Some(b) => Value::Bool(!b),
            None => Value::Error,
        },
        ("~", Value::Int(i)) => Value::Int(!i),
        _ => Value::Error,
    }
}

/// `&&` (`is_and`) and `||` with ClassAd's three-valued logic.
fn logical(is_and: bool, a: Value, b: impl FnOnce() -> Value) -> Value {
    let short = !is_and; // the value that decides the result on its own
    let ta = match a {
        Value::Error => return Value::Error,
        Value::Undefined => None,
        ref v => match v.truth() {
            Some(t) => Some(t),
            None => return Value::Error,
        },
    };
    if ta == Some(short) {
        return Value::Bool(short);
    }
    let tb = match b() {
        Value::Error => return Value::Error,
        Value::Undefined => None,
        ref v => match v.truth() {
            Some(t) => Some(t),
            None => return Value::Error,
        },
    };
    match (ta, tb) {
        (_, Some(t)) if t == short => Value::Bool(short),
        (Some(_), Some(t)) => Value::Bool(t),
        _ => Value::Undefined,
    }
}

fn binary(op: &str, a: Value, b: Value) -> Value {
    match op {
        "=?=" | "is" => return Value::Bool(identical(&a, &b)),
        "=!=" | "isnt" => return Value::Bool(!identical(&a, &b)),
        _ => {}
    }
    if a == Value::Error || b == Value::Error {
        return Value::Error;
    }
    if a == Value::Undefined || b == Value::Undefined {
        return Value::Undefined;
    }
    match op {
        "+" | "-" | "*" | "/" | "%" => arith(op, &a, &b),
        "==" | "!=" | "<" | "<=" | ">" | ">=" => compare(op, &a, &b),
        "&" | "|" | "^" | "<<" | ">>" | ">>>" => match (a, b) {
            (Value::Int(x), Value::Int(y)) => Value::Int(match op {
                "&" => x & y,
                "|" => x | y,
                "^" => x ^ y,
                "<<" => x.wrapping_shl(y as u32),
                ">>" => x.wrapping_shr(y as u32),
                _ => ((x as u64).wrapping_shr(y as u32)) as i64,
            }),
            (Value::Bool(x), Value::Bool(y)) if matches!(op, "&" | "|" | "^") => {
                Value::Bool(match op {
                    "&" => x & y,
                    "|" => x | y,
                    _ => x ^ y,
                })
            }
            _ => Value::Error,
        },
        "[]" => match (a, b) {
            (Value::List(items), Value::Int(i)) => usize::try_from(i)
                .ok()
                .and_then(|i| items.get(i).cloned())
                .unwrap_or(Value::Error),
            _ => Value::Error,
        },
        _ => Value::Error,
    }
}

fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x == y,
        (Value::Int(x), Value::Real(y)) | (Value::Real(y), Value::Int(x)) => (*x as f64) == *y,
        _ => a == b,
    }
}

fn arith(op: &str, a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => match op {
            "+" => Value::Int(x.wrapping_add(*y)),
            "-" => Value::Int(x.wrapping_sub(*y)),
            "*" => Value::Int(x.wrapping_mul(*y)),
            "/" if *y == 0 => Value::Error,
            "/" => Value::Int(x.wrapping_div(*y)),
            _ if *y == 0 => Value::Error,
            _ => Value::Int(x.wrapping_rem(*y)),
        },
        (Value::Int(_) | Value::Real(_), Value::Int(_) | Value::Real(_)) => {
            let (Some(x), Some(y)) = (a.as_number(), b.as_number()) else {
                return Value::Error;
            };
            match op {
                "+" => Value::Real(x + y),
                "-" => Value::Real(x - y),
                "*" => Value::Real(x * y),
                "/" if y == 0.0 => Value::Error,
                "/" => Value::Real(x / y),
                _ if y == 0.0 => Value::Error,
                _ => Value::Real(x % y),
            }
        }
        _ => Value::Error,
    }
}

fn compare(op: &str, a: &Value, b: &Value) -> Value {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.to_lowercase().cmp(&y.to_lowercase())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Int(_) | Value::Real(_), Value::Int(_) | Value::Real(_)) => {
            match (a.as_number(), b.as_number()) {
                (Some(x), Some(y)) => x.partial_cmp(&y),
                _ => None,
            }
        }
        _ => None,
    };
    let Some(ord) = ord else {
        return Value::Error;
    };
    Value::Bool(match op {
        "==" => ord == Ordering::Equal,
        "!=" => ord != Ordering::Equal,
        "<" => ord == Ordering::Less,
        "<=" => ord != Ordering::Greater,
        ">" => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    })
}

fn call(name: &str, args: &[Value]) -> Value {
    let num = |i: usize| args.get(i).and_then(Value::as_number);
    match (name, args) {
        ("strcat", _) => {
            let mut out = String::new();
            for a in args {
                match a {
                    Value::Str(s) => out.push_str(s),
                    Value::Undefined => return Value::Undefined,
                    Value::Error | Value::List(_) => return Value::Error,
                    other => out.push_str(&other.unparse()),
                }
            }
            Value::Str(out)
        }
        ("toupper", [Value::Str(s)]) => Value::Str(s.to_uppercase()),
        ("tolower", [Value::Str(s)]) => Value::Str(s.to_lowercase()),
        ("size" | "length" | "strlen", [Value::Str(s)]) => Value::Int(s.chars().count() as i64),
        ("size", [Value::List(l)]) => Value::Int(l.len() as i64),
        ("substr", [Value::Str(s), rest @ ..]) if !rest.is_empty() && rest.len() <= 2 => {
            let chars: Vec<char> = s.chars().collect();
            let len = chars.len() as i64;
            let Some(mut start) = rest[0].as_int() else {
                return Value::Error;
            };
            if start < 0 {
                start = (len + start).max(0);
            }
            let start = start.min(len);
            let end = match rest.get(1) {
                None => len,
                Some(v) => match v.as_int() {
                    Some(l) if l < 0 => len + l,
                    Some(l) => start + l,
                    None => return Value::Error,
                },
            };
            let end = end.clamp(start, len);
            Value::Str(chars[start as usize..end as usize].iter().collect())
        }
        ("int", [v]) => match v {
            Value::Str(s) => eval_str(s)
                .and_then(|v| v.as_int())
                .map_or(Value::Error, Value::Int),
            other => other.as_int().map_or(Value::Error, Value::Int),
        },
        ("real", [v]) => match v {
            Value::Str(s) => s.trim().parse().map_or(Value::Error, Value::Real),
            other => other.as_number().map_or(Value::Error, Value::Real),
        },
        ("string", [v]) => Value::Str(v.to_eval_string()),
        ("floor", [_]) => num(0).map_or(Value::Error, |x| Value::Int(x.floor() as i64)),
        ("ceiling" | "ceil", [_]) => num(0).map_or(Value::Error, |x| Value::Int(x.ceil() as i64)),
        ("round", [_]) => num(0).map_or(Value::Error, |x| Value::Int(x.round() as i64)),
        ("pow", [_, _]) => match (&args[0], &args[1]) {
            (Value::Int(b), Value::Int(e)) if *e >= 0 => {
                Value::Int(b.wrapping_pow(u32::try_from(*e).unwrap_or(u32::MAX)))
            }
            _ => match (num(0), num(1)) {
                (Some(b), Some(e)) => Value::Real(b.powf(e)),
                _ => Value::Error,
            },
        },
        ("min" | "max", _) if !args.is_empty() => {
            let items: Vec<Value> = match args {
                [Value::List(l)] => l.clone(),
                _ => args.to_vec(),
            };
            let mut best: Option<Value> = None;
            for v in items {
                if v.as_number().is_none() {
                    return Value::Error;
                }
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let better = match compare(if name == "min" { "<" } else { ">" }, &v, &b) {
                            Value::Bool(t) => t,
                            _ => false,
                        };
                        if better {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Value::Undefined)
        }
        ("ifthenelse", [c, t, f]) => match c {
            Value::Undefined => Value::Undefined,
            v => match v.truth() {
                Some(true) => t.clone(),
                Some(false) => f.clone(),
                None => Value::Error,
            },
        },
        ("isundefined", [v]) => Value::Bool(*v == Value::Undefined),
        ("iserror", [v]) => Value::Bool(*v == Value::Error),
        ("isstring", [v]) => Value::Bool(matches!(v, Value::Str(_))),
        ("isinteger", [v]) => Value::Bool(matches!(v, Value::Int(_))),
        ("isreal", [v]) => Value::Bool(matches!(v, Value::Real(_))),
        ("isboolean", [v]) => Value::Bool(matches!(v, Value::Bool(_))),
        ("islist", [v]) => Value::Bool(matches!(v, Value::List(_))),
        ("strcmp", [Value::Str(a), Value::Str(b)]) => Value::Int(ordering_int(a.cmp(b))),
        ("stricmp", [Value::Str(a), Value::Str(b)]) => {
            Value::Int(ordering_int(a.to_lowercase().cmp(&b.to_lowercase())))
        }
        _ => Value::Error,
    }
}

fn ordering_int(o: std::cmp::Ordering) -> i64 {
    match o {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> String {
        eval_str(s).map_or("<parse error>".to_string(), |v| v.to_eval_string())
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
    fn comparisons_and_logic() {
        assert_eq!(ev("1 < 2"), "true");
        assert_eq!(ev("\"a\" == \"A\""), "true");
        assert_eq!(ev("\"a\" =?= \"A\""), "false");
        assert_eq!(ev("1 < \"a\""), "error");
        assert_eq!(ev("true || x"), "true");
        assert_eq!(ev("x || true"), "true");
        assert_eq!(ev("x && true"), "undefined");
        assert_eq!(ev("X * 7"), "undefined");
        assert_eq!(ev("1 ? 2 : 3"), "2");
        assert_eq!(ev("undefined ?: 4"), "4");
        assert_eq!(ev("x is undefined"), "true");
    }

    #[test]
    fn literals_and_unparse() {
        assert_eq!(ev("\"a\""), "a");
        assert_eq!(ev("{1,2}"), "{ 1,2 }");
        assert_eq!(ev("2.0"), "2.000000000000000E+00");
        assert_eq!(ev("-0.5"), "-5.000000000000000E-01");
        assert_eq!(ev("1e100"), "1.000000000000000E+100");
        assert_eq!(ev("strcat(\"a\", \"b\")"), "ab");
        assert_eq!(ev("1 +"), "<parse error>");
        assert_eq!(ev("0x10"), "<parse error>");
    }
}
