//! HTCondor's custom print forms for the commands that list ads:
//! `-af:QUALIFIERS ATTR...` ([`AfOptions`], [`format_autoformat_with`])
//! and `-format FMT ATTR` pairs ([`format_custom`], printf-style).
//!
//! Pure functions: the ads, the arguments and the current time in, the
//! text out.

use classad::{ClassAd, EvalOptions, Evaluator, Expr, Value};

/// The qualifiers of `-af:QUALIFIERS` (condor_q's and condor_status's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AfOptions {
    /// `h`: a heading row of the attribute names, columns aligned.
    pub headings: bool,
    /// `l`: each field as `Name = value`.
    pub labels: bool,
    /// `j`: a leading `cluster.proc` column.
    pub job_id: bool,
    /// What follows each field but the last: `n` a newline, `,` a comma.
    pub suffix: Option<&'static str>,
    /// What precedes each field but the first: a space (the default), a
    /// tab (`t`), nothing (`g`).
    pub prefix: &'static str,
    /// `g`: a newline before each ad.
    pub row_prefix: bool,
    /// `V`: strings quoted.
    pub quoted: bool,
    /// `r` / `o`: the expressions as written, unevaluated.
    pub raw: bool,
}

impl AfOptions {
    /// Parses the qualifiers after `-af:`; an unknown one, or `l` with
    /// `h` or `n` with `,` (which exclude each other), is an error naming
    /// it.
    pub fn parse(q: &str) -> Result<AfOptions, String> {
        let mut o = AfOptions {
            prefix: " ",
            ..AfOptions::default()
        };
        for c in q.chars() {
            match c {
                'h' => o.headings = true,
                'l' => o.labels = true,
                'j' => o.job_id = true,
                'n' => {
                    if o.suffix == Some(",") {
                        return Err(format!("-af:{q}: `n` and `,` exclude each other"));
                    }
                    o.suffix = Some("\n")
                }
                ',' => {
                    if o.suffix == Some("\n") {
                        return Err(format!("-af:{q}: `n` and `,` exclude each other"));
                    }
                    o.suffix = Some(",")
                }
                't' => o.prefix = "\t",
                'g' => {
                    o.prefix = "";
                    o.row_prefix = true;
                }
                'V' => o.quoted = true,
                'r' | 'o' => o.raw = true,
                'T' | 'Y' => {
                    return Err(format!(
                        "-af:{q}: the qualifier `{c}` (time formats) is not supported"
                    ))
                }
                other => {
                    return Err(format!(
                        "-af:{q}: unknown qualifier `{other}` (known: h j l n , t g V r o)"
                    ))
                }
            }
        }
        if o.labels && o.headings {
            return Err(format!("-af:{q}: `l` and `h` exclude each other"));
        }
        Ok(o)
    }
}

/// An `-af` argument as an expression (a name when it does not parse).
fn af_expr(a: &str) -> Expr {
    classad::parse_expr(a).unwrap_or_else(|_| Expr::Attr(classad::Name::new(a)))
}

fn evaluator(now: i64) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    })
}

/// A value as `-af` prints it: strings bare (quoted with `V`), the rest in
/// the old ClassAd syntax.
fn af_value(v: &Value, quoted: bool) -> String {
    match v {
        Value::Str(s) if !quoted => String::from_utf8_lossy(s).into_owned(),
        v => classad::unparse_old_value(v),
    }
}

/// A job's `cluster.proc`, as `-af:j` prints it.
fn job_id_text(ad: &ClassAd, ev: &mut Evaluator) -> String {
    let c = ev.eval_attr("ClusterId", ad, None);
    let p = ev.eval_attr("ProcId", ad, None);
    format!("{}.{}", af_value(&c, false), af_value(&p, false))
}

/// The heading of an `-af:h` column: the argument, or `(expr)` for an
/// expression longer than 16 characters.
fn af_heading(a: &str) -> String {
    let is_name = a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_name && a.chars().count() > 16 {
        "(expr)".into()
    } else {
        a.to_string()
    }
}

/// `-af[:QUALIFIERS] ATTR...` (condor_q's qualifiers; see [`AfOptions`]):
/// per ad a row of fields; fields after the first are preceded by the
/// separator (a space, a tab with `t`, nothing with `g`), fields before the
/// last followed by `,` or a newline (`,` / `n`); `l` labels each field
/// `Name = value`; `h` adds a heading row and pads the columns to a
/// common width; `j` puts the job id first.
pub fn format_autoformat_with(
    ads: &[ClassAd],
    attrs: &[String],
    opts: &AfOptions,
    now: i64,
) -> String {
    let exprs: Vec<Expr> = attrs.iter().map(|a| af_expr(a)).collect();
    let mut heads: Vec<String> = Vec::new();
    if opts.job_id {
        heads.push(" ID".into());
    }
    heads.extend(attrs.iter().map(|a| af_heading(a)));
    let mut labels: Vec<String> = Vec::new();
    if opts.job_id {
        labels.push("ID".into());
    }
    labels.extend(attrs.iter().cloned());
    let mut ev = evaluator(now);
    let rows: Vec<Vec<String>> = ads
        .iter()
        .map(|ad| {
            let mut row = Vec::with_capacity(heads.len());
            if opts.job_id {
                row.push(job_id_text(ad, &mut ev));
            }
            for (a, e) in attrs.iter().zip(&exprs) {
                let text = if opts.raw {
                    match ad.lookup(a) {
                        Some(e) => classad::unparse_old(e),
                        None => match classad::parse_expr(a) {
                            Ok(Expr::Attr(_)) | Err(_) => "undefined".into(),
                            Ok(e) => classad::unparse_old(&e),
                        },
                    }
                } else {
                    af_value(&ev.eval(e, Some(ad), None), opts.quoted)
                };
                row.push(text);
            }
            row
        })
        .collect();
    let widths: Vec<usize> = if opts.headings {
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
        Vec::new()
    };
    let line = |cells: &[String], out: &mut String, labelled: bool| {
        if opts.row_prefix {
            out.push('\n');
        }
        let n = cells.len();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push_str(opts.prefix);
            }
            if labelled {
                out.push_str(&labels[i]);
                out.push_str(" = ");
            }
            out.push_str(cell);
            if opts.headings && i + 1 < n {
                let pad = widths[i].saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
            if i + 1 < n {
                if let Some(s) = opts.suffix {
                    out.push_str(s);
                }
            }
        }
        out.push('\n');
    };
    let mut out = String::new();
    if opts.headings {
        line(&heads, &mut out, false);
    }
    for row in &rows {
        line(row, &mut out, opts.labels);
    }
    out
}

// ----- -format: printf-style -----------------------------------------------

/// `\n`, `\t`, `\\` and friends in a `-format` string, as the shell hands
/// them over.
fn collapse_escapes(s: &str) -> String {
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
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('\'') => out.push('\''),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// One `%...` conversion of a `-format` string.
#[derive(Debug, Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    width: Option<usize>,
    precision: Option<usize>,
    conv: char,
}

fn pad_to(s: String, spec: &Spec, numeric: bool) -> String {
    let Some(w) = spec.width else { return s };
    let len = s.chars().count();
    if len >= w {
        return s;
    }
    let fill = w - len;
    if spec.left {
        let mut s = s;
        s.extend(std::iter::repeat_n(' ', fill));
        s
    } else if spec.zero && numeric {
        let (sign, digits) = match s.strip_prefix(['-', '+', ' ']) {
            Some(rest) => (&s[..1], rest),
            None => ("", s.as_str()),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

fn signed(s: String, spec: &Spec, negative: bool) -> String {
    if negative {
        s
    } else if spec.plus {
        format!("+{s}")
    } else if spec.space {
        format!(" {s}")
    } else {
        s
    }
}

/// A value as an integer for `%d` (reals truncated, booleans 0/1).
fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Real(r) => Some(*r as i64),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Str(s) => String::from_utf8_lossy(s).trim().parse().ok(),
        _ => None,
    }
}

fn as_real(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Real(r) => Some(*r),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Str(s) => String::from_utf8_lossy(s).trim().parse().ok(),
        _ => None,
    }
}

/// C's `%e`: one digit, the fraction, `e`, a sign and two or more digits.
fn c_exp(r: f64, prec: usize, upper: bool) -> String {
    let s = format!("{r:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mant}{e}{sign}{:02}", exp.abs())
}

/// C's `%g`.
fn c_general(r: f64, prec: usize, upper: bool) -> String {
    let p = prec.max(1);
    if r == 0.0 {
        return "0".into();
    }
    let exp = r.abs().log10().floor() as i32;
    let strip = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp < -4 || exp >= p as i32 {
        let s = c_exp(r, p - 1, upper);
        let (mant, rest) = s.split_at(s.find(['e', 'E']).unwrap_or(s.len()));
        format!("{}{rest}", strip(mant.to_string()))
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip(format!("{r:.decimals$}"))
    }
}

/// One conversion applied to a value (`raw`: the expression's text for
/// `%r`).
fn convert(spec: &Spec, v: &Value, raw: &str) -> String {
    match spec.conv {
        'd' | 'i' | 'u' => {
            let i = as_int(v).unwrap_or(0);
            pad_to(signed(i.to_string(), spec, i < 0), spec, true)
        }
        'x' | 'X' | 'o' => {
            let i = as_int(v).unwrap_or(0);
            let s = match spec.conv {
                'x' => format!("{i:x}"),
                'X' => format!("{i:X}"),
                _ => format!("{i:o}"),
            };
            pad_to(s, spec, true)
        }
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
            let r = as_real(v).unwrap_or(0.0);
            let prec = spec.precision.unwrap_or(6);
            let s = match spec.conv {
                'f' | 'F' => format!("{r:.prec$}"),
                'e' | 'E' => c_exp(r, prec, spec.conv == 'E'),
                _ => c_general(r, prec, spec.conv == 'G'),
            };
            pad_to(signed(s, spec, r.is_sign_negative()), spec, true)
        }
        'c' => {
            let c = as_int(v)
                .and_then(|i| u32::try_from(i).ok())
                .and_then(char::from_u32)
                .unwrap_or('?');
            pad_to(c.to_string(), spec, false)
        }
        'r' => pad_to(raw.to_string(), spec, false),
        'V' => pad_to(classad::unparse_old_value(v), spec, false),
        // %s and %v: strings bare, other values in the old syntax
        _ => {
            let mut s = af_value(v, false);
            if let Some(p) = spec.precision {
                s = s.chars().take(p).collect();
            }
            pad_to(s, spec, false)
        }
    }
}

/// `fmt` with each conversion applied to `v`; `%%` is a percent sign.
fn printf_one(fmt: &str, v: &Value, raw: &str) -> String {
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
                '#' => {}
                _ => break,
            }
            chars.next();
        }
        let mut digits = String::new();
        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(d);
            chars.next();
        }
        spec.width = digits.parse().ok();
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                p.push(d);
                chars.next();
            }
            spec.precision = Some(p.parse().unwrap_or(0));
        }
        // length modifiers mean nothing here
        while matches!(chars.peek(), Some('l' | 'h' | 'L' | 'q' | 'j' | 'z')) {
            chars.next();
        }
        match chars.next() {
            Some(conv) => {
                spec.conv = conv;
                out.push_str(&convert(&spec, v, raw));
            }
            None => out.push('%'),
        }
    }
    out
}

/// `-format FMT ATTR ...`: per ad, each FMT (escapes such as `\n`
/// collapsed) with its attribute's value substituted printf-style; nothing
/// is added between the pieces or after the ad. A piece whose attribute
/// the ad does not have (and that is no other expression) is skipped, as
/// condor_q does.
pub fn format_custom(ads: &[ClassAd], pairs: &[(String, String)], now: i64) -> String {
    let pieces: Vec<(String, Expr, &str)> = pairs
        .iter()
        .map(|(f, a)| (collapse_escapes(f), af_expr(a), a.as_str()))
        .collect();
    let mut ev = evaluator(now);
    let mut out = String::new();
    for ad in ads {
        for (fmt, e, attr) in &pieces {
            let raw = match (e, ad.lookup(attr)) {
                (_, Some(found)) => classad::unparse_old(found),
                (Expr::Attr(_), None) => continue,
                (e, None) => classad::unparse_old(e),
            };
            let v = ev.eval(e, Some(ad), None);
            out.push_str(&printf_one(fmt, &v, &raw));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use classad::parse_old_ad;

    const NOW: i64 = 1_700_000_000;

    fn ad(text: &str) -> ClassAd {
        parse_old_ad(text).expect("test ad parses")
    }

    fn af(q: &str, ads: &[ClassAd], attrs: &[&str]) -> String {
        let opts = AfOptions::parse(q).expect("qualifiers parse");
        let attrs: Vec<String> = attrs.iter().map(|s| s.to_string()).collect();
        format_autoformat_with(ads, &attrs, &opts, NOW)
    }

    fn jobs() -> Vec<ClassAd> {
        vec![
            ad("ClusterId = 7\nProcId = 0\nOwner = \"ann\"\nJobStatus = 2\n"),
            ad("ClusterId = 7\nProcId = 12\nOwner = \"bartholomew\"\nJobStatus = 1\n"),
        ]
    }

    #[test]
    fn autoformat_qualifiers_follow_condor_q() {
        let j = jobs();
        // h: a heading row, columns padded to the widest cell (not the last)
        assert_eq!(
            af("h", &j, &["Owner", "JobStatus"]),
            "Owner       JobStatus\nann         2\nbartholomew 1\n"
        );
        // j: the job id first, headed ` ID`
        assert_eq!(af("j", &j, &["Owner"]), "7.0 ann\n7.12 bartholomew\n");
        assert_eq!(
            af("jh", &j, &["Owner"]),
            " ID  Owner\n7.0  ann\n7.12 bartholomew\n"
        );
        // l: Name = value; with n one per line, the separator still leading
        assert_eq!(
            af("l", &j[..1], &["Owner", "JobStatus"]),
            "Owner = ann JobStatus = 2\n"
        );
        assert_eq!(
            af("ln", &j[..1], &["Owner", "JobStatus"]),
            "Owner = ann\n JobStatus = 2\n"
        );
        assert_eq!(af("lj", &j[..1], &["Owner"]), "ID = 7.0 Owner = ann\n");
        // , : a comma after each field but the last; t: tabs; g: no
        // separator and a newline before each ad
        assert_eq!(
            af(",", &j[..1], &["Owner", "JobStatus", "ProcId"]),
            "ann, 2, 0\n"
        );
        assert_eq!(af("t", &j[..1], &["Owner", "JobStatus"]), "ann\t2\n");
        assert_eq!(af("g", &j[..1], &["Owner", "JobStatus"]), "\nann2\n");
        // V: strings quoted; r: unevaluated
        assert_eq!(af("V", &j[..1], &["Owner"]), "\"ann\"\n");
        let e = ad("A = B + 1\nB = 2\n");
        assert_eq!(af("r", std::slice::from_ref(&e), &["A"]), "B + 1\n");
        assert_eq!(af("", std::slice::from_ref(&e), &["A"]), "3\n");
        // h and l, n and , exclude each other
        assert!(AfOptions::parse("hl").is_err());
        assert!(AfOptions::parse("n,").is_err());
        // a long expression is headed (expr)
        assert_eq!(
            af("h", &j[..1], &["ifThenElse(JobStatus == 2, 1, 0)"]),
            "(expr)\n1\n"
        );
        let err = AfOptions::parse("hz").unwrap_err();
        assert!(err.contains("`z`"), "{err}");
    }

    #[test]
    fn format_is_printf_style() {
        let a = ad(concat!(
            "Name = \"slot1\"\nMemory = 2048\nLoad = 0.256\nHas = true\n",
            "Req = Memory > 1024\nNeg = -5\n",
        ));
        let f = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(f, a)| (f.to_string(), a.to_string()))
                .collect();
            format_custom(std::slice::from_ref(&a), &pairs, NOW)
        };
        assert_eq!(f(&[("%s\\n", "Name")]), "slot1\n");
        assert_eq!(
            f(&[("[%-8s]", "Name"), ("[%6d]", "Memory")]),
            "[slot1   ][  2048]"
        );
        assert_eq!(f(&[("%05d", "Neg"), (" %+d", "Memory")]), "-0005 +2048");
        assert_eq!(
            f(&[("%.2f", "Load"), (" %d", "Load"), (" %d", "Has")]),
            "0.26 0 1"
        );
        assert_eq!(
            f(&[("%e", "Memory"), (" %g", "Load"), (" %g", "Memory")]),
            "2.048000e+03 0.256 2048"
        );
        assert_eq!(f(&[("%x %%", "Memory")]), "800 %");
        assert_eq!(f(&[("%v/%V", "Name")]), "slot1/\"slot1\"");
        assert_eq!(f(&[("%r", "Req"), (" %s", "Req")]), "Memory > 1024 true");
        assert_eq!(f(&[("%.3s", "Name")]), "slo");
        // a missing attribute skips its piece; an expression is evaluated
        assert_eq!(f(&[("<%s>", "NoSuch"), ("%d", "Memory * 2")]), "4096");
        assert_eq!(f(&[("a\\tb\\\\", "Name")]), "a\tb\\");
    }
}
