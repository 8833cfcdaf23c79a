//! Ads printed whole or in part, the same way by `skua status`, `skua q`
//! and `skua history` (and `skua submit -dry-run`): `-af` ([`format_autoformat`]),
//! `-l` ([`format_long`]) and `-json` ([`format_json`]); [`AdOutput`]
//! picks one from a command's flags.

use classad::{unparse, unparse_value, ClassAd, EvalOptions, Evaluator, Expr, UnOp, Value};
use serde_json::Value as Json;

/// The flags that ask for a whole-ad form (`skua status`, `q`, `history`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct AdOutputArgs {
    /// Autoformat: print these attributes (or expressions) of each ad,
    /// space-separated. `-af:QUALIFIERS` (h, j, l, n, `,`, t, g, V, r)
    /// changes the layout as condor_q's does.
    #[arg(long = "af", visible_alias = "autoformat", num_args = 1.., value_name = "ATTR")]
    pub af: Vec<String>,
    /// The qualifiers of `-af:QUALIFIERS` (the command line's `-af:hj`
    /// arrives here as `hj`).
    #[arg(long = "af-qualifiers", hide = true, value_name = "QUALIFIERS")]
    pub af_qualifiers: Option<String>,
    /// `-format FMT ATTR`: print ATTR with the printf-style FMT (`%d`,
    /// `%s`, `%f`, `%v`, `%V`, `%r`...); repeatable, nothing is added
    /// between them (write `\n` in FMT).
    #[arg(
        long = "format",
        num_args = 2,
        value_names = ["FMT", "ATTR"],
        action = clap::ArgAction::Append,
        allow_hyphen_values = true
    )]
    pub format: Vec<String>,
    /// Long form: every attribute of each ad, as `Name = value` lines.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// JSON: an array of ads.
    #[arg(long)]
    pub json: bool,
}

impl AdOutputArgs {
    /// The form these flags ask for, in HTCondor's order of precedence
    /// (`-json`, then `-l`, then `-format`, then `-af`); `None` when the
    /// command's own table is wanted; an error for unknown `-af`
    /// qualifiers or `-af` mixed with `-format`.
    pub fn form(&self) -> Result<Option<AdOutput>, String> {
        if self.json {
            return Ok(Some(AdOutput::Json));
        }
        if self.long {
            return Ok(Some(AdOutput::Long));
        }
        if !self.format.is_empty() {
            if !self.af.is_empty() {
                return Err("use -format or -af, not both".into());
            }
            let pairs = self
                .format
                .chunks(2)
                .map(|c| (c[0].clone(), c.get(1).cloned().unwrap_or_default()))
                .collect();
            return Ok(Some(AdOutput::Format(pairs)));
        }
        if self.af.is_empty() {
            if self.af_qualifiers.is_some() {
                return Err("-af needs at least one attribute".into());
            }
            return Ok(None);
        }
        let opts = AfOptions::parse(self.af_qualifiers.as_deref().unwrap_or(""))?;
        Ok(Some(AdOutput::Autoformat {
            attrs: self.af.clone(),
            opts,
        }))
    }

    /// The form these flags ask for (see [`AdOutputArgs::form`]; a bad
    /// combination counts as none).
    pub fn chosen(&self) -> Option<AdOutput> {
        self.form().ok().flatten()
    }

    /// The attributes a projection must keep for this form (empty: whole
    /// ads): `-af`'s and `-format`'s attributes, the job id's for `-af:j`.
    pub fn projection(&self) -> Vec<String> {
        match self.form() {
            Ok(Some(AdOutput::Autoformat { attrs, opts })) => {
                let mut p = attrs;
                if opts.job_id {
                    p.push("ClusterId".into());
                    p.push("ProcId".into());
                }
                p
            }
            Ok(Some(AdOutput::Format(pairs))) => pairs.into_iter().map(|(_, a)| a).collect(),
            _ => Vec::new(),
        }
    }
}

/// The qualifiers of `-af:...` (condor_q's and condor_status's).
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
    /// Parses the qualifiers after `-af:` (later ones win where two
    /// exclude each other: `l`/`h`, `n`/`,`).
    pub fn parse(q: &str) -> Result<AfOptions, String> {
        let mut o = AfOptions {
            prefix: " ",
            ..AfOptions::default()
        };
        for c in q.chars() {
            match c {
                'h' => {
                    o.headings = true;
                    o.labels = false;
                }
                'l' => {
                    o.labels = true;
                    o.headings = false;
                }
                'j' => o.job_id = true,
                'n' => o.suffix = Some("\n"),
                ',' => o.suffix = Some(","),
                't' => o.prefix = "\t",
                'g' => {
                    o.prefix = "";
                    o.row_prefix = true;
                }
                'V' => o.quoted = true,
                'r' | 'o' => o.raw = true,
                other => {
                    return Err(format!(
                        "-af:{q}: unknown qualifier `{other}` (known: h j l n , t g V r o)"
                    ))
                }
            }
        }
        Ok(o)
    }
}

/// One of the whole-ad output forms a command's flags ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdOutput {
    /// `-json`.
    Json,
    /// `-l`.
    Long,
    /// `-af[:QUALIFIERS] ATTR...`.
    Autoformat { attrs: Vec<String>, opts: AfOptions },
    /// `-format FMT ATTR` pairs, in order.
    Format(Vec<(String, String)>),
}

impl AdOutput {
    /// The text of `ads` in this form (`now` for `-af` expressions).
    pub fn render(&self, ads: &[ClassAd], now: i64) -> String {
        match self {
            AdOutput::Json => format_json(ads, now),
            AdOutput::Long => format_long(ads, now),
            AdOutput::Autoformat { attrs, opts } => format_autoformat_with(ads, attrs, opts, now),
            AdOutput::Format(pairs) => format_printf(ads, pairs, now),
        }
    }
}

// ----- -af, -l: values in the old ClassAd syntax ---------------------------

/// `-af ATTR...`: per ad, one line with the value of each attribute (or
/// expression), separated by single spaces; strings unquoted, other values
/// in the old ClassAd syntax, a missing attribute as `undefined`. An
/// argument that does not parse as an expression is taken as an attribute
/// name.
#[cfg(test)]
pub fn format_autoformat(ads: &[ClassAd], attrs: &[String], now: i64) -> String {
    let opts = AfOptions {
        prefix: " ",
        ..AfOptions::default()
    };
    format_autoformat_with(ads, attrs, &opts, now)
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
pub fn format_printf(ads: &[ClassAd], pairs: &[(String, String)], now: i64) -> String {
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

/// Attributes sorted by name, case-insensitively (as `-l` and `-json`
/// list them).
fn sorted_attrs(ad: &ClassAd) -> Vec<(&classad::Name, &Expr)> {
    let mut attrs: Vec<_> = ad.iter().collect();
    attrs.sort_by_cached_key(|(n, _)| n.as_str().to_ascii_lowercase());
    attrs
}

/// `-l`: every ad as old-style `Name = value` lines (names sorted
/// case-insensitively), each ad followed by a blank line.
pub fn format_long(ads: &[ClassAd], _now: i64) -> String {
    let mut out = String::new();
    for ad in ads {
        for (n, e) in sorted_attrs(ad) {
            out.push_str(n.as_str());
            out.push_str(" = ");
            out.push_str(&classad::unparse_old(e));
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

// ----- -json ---------------------------------------------------------------

/// HTCondor's JSON spelling of an expression that is not a literal.
fn json_expr(text: &str) -> Json {
    Json::String(format!("{EXPR_OPEN}{text}{EXPR_CLOSE}"))
}

/// Markers around an expression's text inside a JSON string, replaced
/// after serialization by HTCondor's `\/Expr(` and `)\/`: its JSON reader
/// recognizes expressions only with the slashes escaped.
const EXPR_OPEN: &str = "\u{1}SKUA-EXPR(";
const EXPR_CLOSE: &str = ")SKUA-EXPR\u{1}";

/// A JSON value's text with HTCondor's expression strings.
fn json_text(j: &Json) -> String {
    j.to_string()
        .replace("\"\\u0001SKUA-EXPR(", "\"\\/Expr(")
        .replace(")SKUA-EXPR\\u0001\"", ")\\/\"")
}

fn json_value(v: &Value) -> Json {
    match v {
        Value::Undefined => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Real(r) => match serde_json::Number::from_f64(*r) {
            Some(n) => Json::Number(n),
            None => json_expr(&unparse_value(v)),
        },
        Value::Str(s) => Json::String(String::from_utf8_lossy(s).into_owned()),
        Value::List(items) => Json::Array(items.iter().map(json_of).collect()),
        Value::Ad(ad) => json_object(ad),
        Value::Error | Value::AbsTime(_) | Value::RelTime(_) => json_expr(&unparse_value(v)),
    }
}

/// The JSON of an attribute's expression: literals (lists and nested ads
/// of literals included) as JSON values, anything else as a string
/// `/Expr(<expression>)/`.
fn json_of(e: &Expr) -> Json {
    match e {
        Expr::Lit(v) => json_value(v),
        Expr::Unary(UnOp::Neg, a) => match &**a {
            Expr::Lit(Value::Int(i)) => Json::from(i.wrapping_neg()),
            Expr::Lit(Value::Real(r)) => json_value(&Value::Real(-r)),
            _ => json_expr(&unparse(e)),
        },
        Expr::List(items) => Json::Array(items.iter().map(json_of).collect()),
        Expr::Ad(ad) => json_object(ad),
        _ => json_expr(&unparse(e)),
    }
}

fn json_object(ad: &ClassAd) -> Json {
    let mut m = serde_json::Map::new();
    for (n, e) in ad.iter() {
        m.insert(n.as_str().to_string(), json_of(e));
    }
    Json::Object(m)
}

/// `-json`: a JSON array with one object per ad (attributes sorted by
/// name, case-insensitively); ClassAd literals map to JSON values
/// (UNDEFINED to null) and other expressions to `/Expr(...)/` strings. No
/// ads give an empty array.
pub fn format_json(ads: &[ClassAd], _now: i64) -> String {
    let mut out = String::from("[\n");
    for (i, ad) in ads.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str("{\n");
        let attrs = sorted_attrs(ad);
        for (j, (n, e)) in attrs.iter().enumerate() {
            out.push_str("  ");
            out.push_str(&Json::String(n.as_str().to_string()).to_string());
            out.push_str(": ");
            out.push_str(&json_text(&json_of(e)));
            if j + 1 < attrs.len() {
                out.push(',');
            }
            out.push('\n');
        }
        out.push_str("}\n");
    }
    out.push_str("]\n");
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

    #[test]
    fn json_beats_long_beats_autoformat_and_none_means_the_table() {
        let af = vec!["Owner".to_string()];
        let args = |json, long| AdOutputArgs {
            af: af.clone(),
            json,
            long,
            ..AdOutputArgs::default()
        };
        assert_eq!(args(true, true).chosen(), Some(AdOutput::Json));
        assert_eq!(args(false, true).chosen(), Some(AdOutput::Long));
        let auto = args(false, false).chosen().expect("-af chosen");
        assert!(matches!(&auto, AdOutput::Autoformat { attrs, .. } if *attrs == af));
        assert_eq!(AdOutputArgs::default().chosen(), None);
        let a = ad("Owner = \"alice\"\n");
        assert_eq!(auto.render(std::slice::from_ref(&a), NOW), "alice\n");
        assert_eq!(AdOutput::Long.render(&[a], NOW), "Owner = \"alice\"\n\n");
    }

    #[test]
    fn autoformat() {
        let a = ad(concat!(
            "Name = \"slot1@a\"\nMemory = 2048\nLoadAvg = 0.25\nBig = 1.5e20\n",
            "Whole = 3.0\nHas = true\nList = {1, \"x\", 2.5}\nPath = \"C:\\dir\"\n",
        ));
        let attrs: Vec<String> = [
            "Name",
            "Memory",
            "LoadAvg",
            "Big",
            "Whole",
            "Has",
            "List",
            "NoSuch",
            "Memory * 2",
            "Path",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let b = ad("Name = \"slot2@a\"\nMemory = \"lots\"\n");
        assert_eq!(
            format_autoformat(&[a, b], &attrs, NOW),
            "slot1@a 2048 0.25 1.5E+20 3.0 true { 1,\"x\",2.5 } undefined 4096 C:\\dir\n\
             slot2@a lots undefined undefined undefined undefined undefined undefined error undefined\n"
        );
        assert_eq!(format_autoformat(&[], &attrs, NOW), "");
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
        // h and l exclude each other: the later wins
        assert!(!AfOptions::parse("hl").unwrap().headings);
        assert!(AfOptions::parse("lh").unwrap().headings);
        // a long expression is headed (expr)
        assert_eq!(
            af("h", &j[..1], &["ifThenElse(JobStatus == 2, 1, 0)"]),
            "(expr)\n1\n"
        );
        let err = AfOptions::parse("hz").unwrap_err();
        assert!(err.contains("`z`"), "{err}");
    }

    #[test]
    fn af_qualifiers_and_format_arrive_through_the_flags() {
        let args = AdOutputArgs {
            af: vec!["Owner".into()],
            af_qualifiers: Some("j".into()),
            ..AdOutputArgs::default()
        };
        assert_eq!(args.projection(), ["Owner", "ClusterId", "ProcId"]);
        let both = AdOutputArgs {
            af: vec!["Owner".into()],
            format: vec!["%s".into(), "Owner".into()],
            ..AdOutputArgs::default()
        };
        assert!(both.form().is_err());
        let fmt = AdOutputArgs {
            format: vec![
                "%d.".into(),
                "ClusterId".into(),
                "%d\\n".into(),
                "ProcId".into(),
            ],
            ..AdOutputArgs::default()
        };
        let form = fmt.form().unwrap().unwrap();
        assert_eq!(form.render(&jobs(), NOW), "7.0\n7.12\n");
        assert_eq!(fmt.projection(), ["ClusterId", "ProcId"]);
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
            format_printf(std::slice::from_ref(&a), &pairs, NOW)
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

    #[test]
    fn autoformat_evaluates_with_now() {
        let a = ad("Entered = 1699999000\n");
        let attrs = ["time() - Entered".to_string()];
        assert_eq!(format_autoformat(&[a], &attrs, NOW), "1000\n");
    }

    #[test]
    fn long_form() {
        let a = ad(concat!(
            "Name = \"slot1@a\"\nmemory = 2048\nActivity = \"Idle\"\n",
            "Requirements = START && (TARGET.RequestMemory <= Memory)\n",
            "IsOwner = (START is false)\nLoad = 0.1\nQuote = \"say \\\"hi\\\"\"\n",
            "Neg = -5\nTiny = 1.0E-7\n",
        ));
        let b = ad("Name = \"slot2@a\"\n");
        assert_eq!(
            format_long(&[a, b], NOW),
            "\
Activity = \"Idle\"
IsOwner = (START =?= false)
Load = 0.1
memory = 2048
Name = \"slot1@a\"
Neg = -5
Quote = \"say \\\"hi\\\"\"
Requirements = START && (TARGET.RequestMemory <= Memory)
Tiny = 1E-07

Name = \"slot2@a\"

"
        );
        assert_eq!(format_long(&[], NOW), "");
    }

    #[test]
    fn long_form_round_trips_through_the_old_parser() {
        let a = ad(concat!(
            "A = 1.5\nB = \"x\"\nC = {1, 2}\nD = [ e = 1; f = \"g\" ]\n",
            "E = ifThenElse(A > 1, \"big\", \"small\")\nF = -2.25\nG = undefined\n",
        ));
        let text = format_long(std::slice::from_ref(&a), NOW);
        let back = parse_old_ad(&text).expect("the -l text parses");
        for (n, _) in a.iter() {
            let name = n.as_str();
            let want = Evaluator::default().eval_attr(name, &a, None);
            let got = Evaluator::default().eval_attr(name, &back, None);
            assert_eq!(unparse_value(&want), unparse_value(&got), "{name}");
        }
    }

    #[test]
    fn old_reals() {
        let cases: [(f64, &str); 9] = [
            (0.15, "0.15"),
            (3.0, "3.0"),
            (-0.0, "-0.0"),
            (1e16, "1E+16"),
            (123456789012345.0, "123456789012345.0"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.0001, "0.0001"),
            (0.00001, "1E-05"),
            (f64::NAN, "real(\"NaN\")"),
        ];
        for (r, want) in cases {
            let mut s = String::new();
            classad::format_real_old(r, &mut s);
            assert_eq!(s, want, "{r}");
        }
    }

    #[test]
    fn json_form() {
        let a = ad(concat!(
            "Name = \"slot1@a\"\nMemory = 2048\nLoadAvg = 0.25\nHas = true\n",
            "Nothing = undefined\nList = {1, \"x\"}\nNested = [ a = 1 ]\n",
            "Requirements = Memory > 1024\nNeg = -3\nbig = 1.0e300\n",
        ));
        let out = format_json(&[a, ad("Name = \"b\"\n")], NOW);
        assert_eq!(
            out,
            r#"[
{
  "big": 1e+300,
  "Has": true,
  "List": [1,"x"],
  "LoadAvg": 0.25,
  "Memory": 2048,
  "Name": "slot1@a",
  "Neg": -3,
  "Nested": {"a":1},
  "Nothing": null,
  "Requirements": "\/Expr(Memory > 1024)\/"
}
,
{
  "Name": "b"
}
]
"#
        );
        let parsed: Json = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(parsed[0]["Memory"], Json::from(2048));
        assert_eq!(
            parsed[0]["Requirements"],
            Json::from("/Expr(Memory > 1024)/")
        );
        assert_eq!(format_json(&[], NOW), "[\n]\n");
        let empty: Json = serde_json::from_str(&format_json(&[], NOW)).expect("valid JSON");
        assert_eq!(empty, Json::Array(vec![]));
    }

    #[test]
    fn json_strings_are_escaped() {
        let a = classad::parse_ad(r#"[ S = "a\"b\\c" ]"#).expect("parses");
        let out = format_json(&[a], NOW);
        let parsed: Json = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(parsed[0]["S"], Json::String("a\"b\\c".into()));
    }
}
