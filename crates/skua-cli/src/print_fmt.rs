//! HTCondor's custom print forms, shared by the commands that list ads:
//! `-af:QUALIFIERS ATTR...` ([`AfOptions`], [`format_autoformat_with`])
//! and `-format FMT ATTR` pairs ([`format_custom`], printf-style).
//!
//! Pure functions: the ads, the arguments and the current time in, the
//! text out.

use classad::{ClassAd, EvalOptions, Evaluator, Expr, Value};

/// The qualifiers of `-af:QUALIFIERS` (condor_q's and condor_status's):
/// `h` a heading row and columns as wide as their widest cell, `j` a
/// leading `ClusterId.ProcId` column, `l` each value labelled `Name = `,
/// `n` a newline after each field but the last, `,` a comma after each
/// field but the last, `t` tabs between fields, `g` no separator and a
/// newline before each ad, `V` strings quoted, `r`/`o` the attribute's
/// expression as written, not its value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AfOptions {
    pub heading: bool,
    pub job_id: bool,
    pub label: bool,
    pub newline: bool,
    pub comma: bool,
    pub tab: bool,
    pub group: bool,
    pub quoted: bool,
    pub raw: bool,
}

impl AfOptions {
    /// Reads the qualifiers after `-af:`; where two exclude each other
    /// (`l`/`h`, `n`/`,`) the later one wins. An unknown or unsupported
    /// one is an error naming it.
    pub fn parse(qualifiers: &str) -> Result<AfOptions, String> {
        let mut o = AfOptions::default();
        for c in qualifiers.chars() {
            match c {
                'h' => {
                    o.heading = true;
                    o.label = false;
                }
                'l' => {
                    o.label = true;
                    o.heading = false;
                }
                'j' => o.job_id = true,
                'n' => {
                    o.newline = true;
                    o.comma = false;
                }
                ',' => {
                    o.comma = true;
                    o.newline = false;
                }
                't' => o.tab = true,
                'g' => o.group = true,
                'V' => o.quoted = true,
                'r' | 'o' => o.raw = true,
                'T' | 'Y' => {
                    return Err(format!(
                        "-af:{qualifiers}: the qualifier `{c}` (time formats) is not supported"
                    ))
                }
                _ => {
                    return Err(format!(
                        "-af:{qualifiers}: unknown qualifier `{c}` (known: h j l n , t g V r o)"
                    ))
                }
            }
        }
        Ok(o)
    }
}

fn evaluator(now: i64) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    })
}

/// An `-af` argument as an expression: an argument that does not parse is
/// taken as an attribute name.
fn arg_expr(a: &str) -> Expr {
    classad::parse_expr(a).unwrap_or_else(|_| Expr::Attr(classad::Name::new(a)))
}

/// A value as `-af` prints it: strings bare (quoted with `V`), anything
/// else in the old ClassAd syntax.
fn value_text(v: &Value, quoted: bool) -> String {
    match v {
        Value::Str(s) if !quoted => String::from_utf8_lossy(s).into_owned(),
        v => classad::unparse_old_value(v),
    }
}

/// The heading of an `-af` column: the argument as typed, `(expr)` for an
/// expression longer than 16 characters.
fn heading(arg: &str) -> String {
    let mut chars = arg.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain && arg.chars().count() > 16 {
        "(expr)".to_string()
    } else {
        arg.to_string()
    }
}

/// `-af:QUALIFIERS ATTR...`: one line (or group of lines) per ad in the
/// form the qualifiers ask for (see [`AfOptions`]).
pub fn format_autoformat_with(
    ads: &[ClassAd],
    attrs: &[String],
    o: &AfOptions,
    now: i64,
) -> String {
    let exprs: Vec<Expr> = attrs.iter().map(|a| arg_expr(a)).collect();
    let mut ev = evaluator(now);
    let mut heads: Vec<String> = Vec::new();
    if o.job_id {
        heads.push(" ID".to_string());
    }
    heads.extend(attrs.iter().map(|a| heading(a)));
    let labels: Vec<String> = o
        .job_id
        .then(|| "ID".to_string())
        .into_iter()
        .chain(attrs.iter().cloned())
        .collect();
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(ads.len());
    for ad in ads {
        let mut cells = Vec::with_capacity(heads.len());
        if o.job_id {
            let c = ev.eval_attr("ClusterId", ad, None);
            let p = ev.eval_attr("ProcId", ad, None);
            cells.push(format!(
                "{}.{}",
                value_text(&c, false),
                value_text(&p, false)
            ));
        }
        for (a, e) in attrs.iter().zip(&exprs) {
            let text = if o.raw {
                match ad.lookup(a) {
                    Some(found) => classad::unparse_old(found),
                    None => classad::unparse_old(e),
                }
            } else {
                value_text(&ev.eval(e, Some(ad), None), o.quoted)
            };
            cells.push(text);
        }
        rows.push(cells);
    }
    let widths: Vec<usize> = if o.heading {
        (0..heads.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain(std::iter::once(heads[i].chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    } else {
        vec![0; heads.len()]
    };
    let sep = if o.group {
        ""
    } else if o.tab {
        "\t"
    } else {
        " "
    };
    let line = |cells: &[String], labelled: bool| -> String {
        let mut s = String::new();
        if o.group {
            s.push('\n');
        }
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str(sep);
            }
            if labelled {
                s.push_str(&labels[i]);
                s.push_str(" = ");
            }
            s.push_str(cell);
            if i < last {
                if o.heading {
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    s.extend(std::iter::repeat_n(' ', pad));
                }
                if o.comma {
                    s.push(',');
                }
                if o.newline {
                    s.push('\n');
                }
            }
        }
        s.push('\n');
        s
    };
    let mut out = String::new();
    if o.heading && !rows.is_empty() {
        out.push_str(&line(&heads, false));
    }
    for r in &rows {
        out.push_str(&line(r, o.label));
    }
    out
}

// ----- -format FMT ATTR -----------------------------------------------------

/// A `-format` string's backslash escapes (`\n`, `\t`, `\\`, `\"`...) made
/// into the characters, as HTCondor's tools read them.
pub fn collapse_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// One `%` conversion of a format string.
#[derive(Debug, Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
    conv: char,
}

/// C's `%e` exponent form: `1.500000e+20`.
fn c_exp(x: f64, prec: usize, upper: bool) -> String {
    let s = format!("{x:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mant}{e}{sign}{:02}", exp.abs())
}

/// C's `%g`: the shorter of `%e` and `%f` at `prec` significant digits,
/// trailing zeros dropped (kept with `#`).
fn c_general(x: f64, prec: usize, upper: bool, alt: bool) -> String {
    let p = prec.max(1);
    if x == 0.0 {
        return "0".to_string();
    }
    let exp = x.abs().log10().floor() as i32;
    let trim = |s: String| -> String {
        if alt || !s.contains('.') {
            return s;
        }
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if exp < -4 || exp >= p as i32 {
        let s = c_exp(x, p - 1, upper);
        let (m, e) = s.split_at(s.find(['e', 'E']).unwrap_or(s.len()));
        format!("{}{e}", trim(m.to_string()))
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    }
}

/// A value as `%d`: integers, reals truncated, booleans 1/0.
fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Real(r) => Some(*r as i64),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn as_real(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Real(r) => Some(*r),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// The text of one conversion of `v`; `None` when the value cannot be
/// shown that way (a string for `%d`).
fn convert(spec: &Spec, v: &Value) -> Option<String> {
    let signed = |s: String, neg: bool| -> String {
        if neg {
            s
        } else if spec.plus {
            format!("+{s}")
        } else if spec.space {
            format!(" {s}")
        } else {
            s
        }
    };
    let body = match spec.conv {
        's' => {
            let s = value_text(v, false);
            match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s,
            }
        }
        'v' => value_text(v, false),
        'V' => value_text(v, true),
        'd' | 'i' | 'u' => {
            let i = as_int(v)?;
            signed(i.to_string(), i < 0)
        }
        'x' => format!("{:x}", as_int(v)?),
        'X' => format!("{:X}", as_int(v)?),
        'o' => format!("{:o}", as_int(v)?),
        'c' => char::from_u32(u32::try_from(as_int(v)?).ok()?)?.to_string(),
        'f' | 'F' => {
            let x = as_real(v)?;
            let p = spec.precision.unwrap_or(6);
            signed(format!("{x:.p$}"), x.is_sign_negative())
        }
        'e' | 'E' => {
            let x = as_real(v)?;
            let p = spec.precision.unwrap_or(6);
            signed(c_exp(x, p, spec.conv == 'E'), x.is_sign_negative())
        }
        'g' | 'G' => {
            let x = as_real(v)?;
            let p = spec.precision.unwrap_or(6);
            signed(
                c_general(x, p, spec.conv == 'G', spec.alt),
                x.is_sign_negative(),
            )
        }
        _ => return None,
    };
    let len = body.chars().count();
    if len >= spec.width {
        return Some(body);
    }
    let pad = spec.width - len;
    Some(if spec.left {
        format!("{body}{}", " ".repeat(pad))
    } else if spec.zero && !matches!(spec.conv, 's' | 'v' | 'V' | 'c') {
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), body[1..].to_string()),
            _ => (String::new(), body),
        };
        format!("{sign}{}{digits}", "0".repeat(pad))
    } else {
        format!("{}{body}", " ".repeat(pad))
    })
}

/// A format string applied to one value: the text around the conversion
/// kept, `%%` a percent sign. `None` when the value cannot be shown with
/// the conversion the string asks for.
pub fn printf_value(fmt: &str, v: &Value) -> Option<String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.left = true,
                '0' => spec.zero = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alt = true,
                _ => break,
            }
            chars.next();
        }
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            spec.width = spec.width * 10 + d as usize;
            chars.next();
        }
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                p = p * 10 + d as usize;
                chars.next();
            }
            spec.precision = Some(p);
        }
        // length modifiers (`%ld`, `%lld`, `%hd`) change nothing here
        while matches!(chars.peek(), Some('l' | 'h' | 'L' | 'q' | 'j' | 'z')) {
            chars.next();
        }
        spec.conv = chars.next()?;
        out.push_str(&convert(&spec, v)?);
    }
    Some(out)
}

/// `-format FMT ATTR ...`: for each ad, each pair's format applied to the
/// attribute's (or expression's) value, with nothing between the pairs
/// and no newline but those the formats write. A pair whose value is
/// undefined, or cannot be shown with its conversion, prints nothing.
pub fn format_custom(ads: &[ClassAd], pairs: &[(String, String)], now: i64) -> String {
    let items: Vec<(String, Expr)> = pairs
        .iter()
        .map(|(f, a)| (collapse_escapes(f), arg_expr(a)))
        .collect();
    let mut ev = evaluator(now);
    let mut out = String::new();
    for ad in ads {
        for (fmt, e) in &items {
            let v = ev.eval(e, Some(ad), None);
            if matches!(v, Value::Undefined) {
                continue;
            }
            if let Some(text) = printf_value(fmt, &v) {
                out.push_str(&text);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ad(text).expect("test ad parses")
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn slots() -> Vec<ClassAd> {
        vec![
            ad("Name = \"slot1@a\"\nMemory = 2048\nState = \"Unclaimed\"\n"),
            ad("Name = \"slot10@a\"\nMemory = 16\nState = \"Claimed\"\n"),
        ]
    }

    fn af(q: &str, attrs: &[&str], ads: &[ClassAd]) -> String {
        let o = AfOptions::parse(q).expect("valid qualifiers");
        format_autoformat_with(ads, &strings(attrs), &o, NOW)
    }

    #[test]
    fn plain_af_is_space_separated_values() {
        assert_eq!(
            af("", &["Name", "Memory"], &slots()),
            "slot1@a 2048\nslot10@a 16\n"
        );
    }

    #[test]
    fn heading_makes_aligned_columns() {
        assert_eq!(
            af("h", &["Name", "Memory", "State"], &slots()),
            "Name     Memory State\nslot1@a  2048   Unclaimed\nslot10@a 16     Claimed\n"
        );
        // a long expression is titled (expr); no ads, no heading
        let out = af("h", &["Memory * 1024 * 1024", "Name"], &slots()[..1]);
        assert_eq!(out, "(expr)     Name\n2147483648 slot1@a\n");
        assert_eq!(af("h", &["Name"], &[]), "");
    }

    #[test]
    fn labels_newlines_commas_tabs() {
        let one = &slots()[..1];
        assert_eq!(
            af("ln", &["Name", "Memory"], one),
            "Name = slot1@a\n Memory = 2048\n"
        );
        assert_eq!(af(",", &["Name", "Memory"], one), "slot1@a, 2048\n");
        assert_eq!(af("t", &["Name", "Memory"], one), "slot1@a\t2048\n");
        assert_eq!(af("V", &["Name", "Memory"], one), "\"slot1@a\" 2048\n");
        assert_eq!(
            af("lng", &["Name", "Memory"], one),
            "\nName = slot1@a\nMemory = 2048\n"
        );
    }

    #[test]
    fn job_id_column_and_raw_expressions() {
        let j = ad("ClusterId = 12\nProcId = 3\nOwner = \"alice\"\nRequestMemory = 2 * 1024\n");
        let jobs = std::slice::from_ref(&j);
        assert_eq!(af("j", &["Owner"], jobs), "12.3 alice\n");
        assert_eq!(af("jh", &["Owner"], jobs), " ID  Owner\n12.3 alice\n");
        assert_eq!(af("jl", &["Owner"], jobs), "ID = 12.3 Owner = alice\n");
        assert_eq!(af("r", &["RequestMemory"], jobs), "2 * 1024\n");
        assert_eq!(af("", &["RequestMemory"], jobs), "2048\n");
    }

    #[test]
    fn bad_qualifiers_are_named_and_the_later_of_two_exclusive_ones_wins() {
        for (q, word) in [("z", "`z`"), ("T", "`T`")] {
            let e = AfOptions::parse(q).unwrap_err();
            assert!(e.contains(word), "{q}: {e}");
            assert!(e.contains(&format!("-af:{q}")), "{e}");
        }
        let lh = AfOptions::parse("lh").expect("valid");
        assert!(lh.heading && !lh.label);
        let nc = AfOptions::parse("n,").expect("valid");
        assert!(nc.comma && !nc.newline);
        assert_eq!(
            af("hl", &["Name"], &slots()[..1]),
            "Name = slot1@a\n",
            "l after h: labels"
        );
    }

    #[test]
    fn printf_conversions() {
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            ("%s\\n", Value::from("x"), Some("x\\n")),
            ("%d", Value::Int(42), Some("42")),
            ("%5d|", Value::Int(42), Some("   42|")),
            ("%-5d|", Value::Int(42), Some("42   |")),
            ("%05d", Value::Int(-42), Some("-0042")),
            ("%+d", Value::Int(7), Some("+7")),
            ("%d", Value::Real(2.9), Some("2")),
            ("%d", Value::Bool(true), Some("1")),
            ("%d", Value::from("abc"), None),
            ("%.2f", Value::Real(0.256), Some("0.26")),
            ("%f", Value::Int(3), Some("3.000000")),
            ("%e", Value::Real(1.5e20), Some("1.500000e+20")),
            ("%g", Value::Real(0.0001), Some("0.0001")),
            ("%g", Value::Real(1.5e20), Some("1.5e+20")),
            ("%g", Value::Real(2.5), Some("2.5")),
            ("%x", Value::Int(255), Some("ff")),
            ("%s", Value::Int(2048), Some("2048")),
            ("%s", Value::Bool(false), Some("false")),
            ("%-8s|", Value::from("ab"), Some("ab      |")),
            ("%.3s", Value::from("abcdef"), Some("abc")),
            ("%v", Value::from("s"), Some("s")),
            ("%V", Value::from("s"), Some("\"s\"")),
            ("100%% %d", Value::Int(5), Some("100% 5")),
            ("%ld", Value::Int(5), Some("5")),
        ];
        for (fmt, v, want) in cases {
            assert_eq!(printf_value(fmt, &v).as_deref(), want, "{fmt}");
        }
    }

    #[test]
    fn format_pairs_apply_in_order_and_skip_undefined() {
        let pairs = vec![
            ("%-10s ".to_string(), "Name".to_string()),
            ("%d".to_string(), "Memory".to_string()),
            (" gpus=%d".to_string(), "Gpus".to_string()),
            ("\\n".to_string(), "Name".to_string()),
        ];
        assert_eq!(
            format_custom(&slots(), &pairs, NOW),
            "slot1@a    2048\nslot10@a   16\n"
        );
        assert_eq!(collapse_escapes("a\\tb\\\\c\\n"), "a\tb\\c\n");
    }
}
