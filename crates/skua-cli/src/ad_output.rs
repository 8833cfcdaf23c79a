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
    /// space-separated.
    #[arg(long = "af", alias = "autoformat", num_args = 1.., value_name = "ATTR")]
    pub af: Vec<String>,
    /// The qualifiers of `-af:QUALIFIERS` (`h`, `l`, `n`, `,`, `t`, ...),
    /// which the command line hands over separately.
    #[arg(long = "af-qualifiers", hide = true, value_name = "QUALIFIERS")]
    pub af_qualifiers: Option<String>,
    /// Long form: every attribute of each ad, as `Name = value` lines.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// JSON: an array of ads.
    #[arg(long)]
    pub json: bool,
}

impl AdOutputArgs {
    /// The form these flags ask for (see [`AdOutput::chosen`]).
    pub fn chosen(&self) -> Option<AdOutput> {
        AdOutput::chosen(self.json, self.long, &self.af)
    }
}

/// One of the whole-ad output forms a command's flags ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdOutput {
    /// `-json`.
    Json,
    /// `-l`.
    Long,
    /// `-af ATTR...`.
    Autoformat(Vec<String>),
}

impl AdOutput {
    /// The form asked for, in HTCondor's order of precedence (`-json`, then
    /// `-l`, then `-af`); `None` when the command's own table is wanted.
    pub fn chosen(json: bool, long: bool, af: &[String]) -> Option<AdOutput> {
        if json {
            Some(AdOutput::Json)
        } else if long {
            Some(AdOutput::Long)
        } else if !af.is_empty() {
            Some(AdOutput::Autoformat(af.to_vec()))
        } else {
            None
        }
    }

    /// The text of `ads` in this form (`now` for `-af` expressions).
    pub fn render(&self, ads: &[ClassAd], now: i64) -> String {
        match self {
            AdOutput::Json => format_json(ads, now),
            AdOutput::Long => format_long(ads, now),
            AdOutput::Autoformat(attrs) => format_autoformat(ads, attrs, now),
        }
    }
}

// ----- -af, -l: values in the old ClassAd syntax ---------------------------

/// `-af ATTR...`: per ad, one line with the value of each attribute (or
/// expression), separated by single spaces; strings unquoted, other values
/// in the old ClassAd syntax, a missing attribute as `undefined`. An
/// argument that does not parse as an expression is taken as an attribute
/// name.
pub fn format_autoformat(ads: &[ClassAd], attrs: &[String], now: i64) -> String {
    let exprs: Vec<Expr> = attrs
        .iter()
        .map(|a| classad::parse_expr(a).unwrap_or_else(|_| Expr::Attr(classad::Name::new(a))))
        .collect();
    let mut ev = Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    });
    let mut out = String::new();
    for ad in ads {
        for (i, e) in exprs.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            match ev.eval(e, Some(ad), None) {
                Value::Str(s) => out.push_str(&String::from_utf8_lossy(&s)),
                v => out.push_str(&classad::unparse_old_value(&v)),
            }
        }
        out.push('\n');
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
        assert_eq!(AdOutput::chosen(true, true, &af), Some(AdOutput::Json));
        assert_eq!(AdOutput::chosen(false, true, &af), Some(AdOutput::Long));
        assert_eq!(
            AdOutput::chosen(false, false, &af),
            Some(AdOutput::Autoformat(af.clone()))
        );
        assert_eq!(AdOutput::chosen(false, false, &[]), None);
        let a = ad("Owner = \"alice\"\n");
        assert_eq!(
            AdOutput::Autoformat(af).render(std::slice::from_ref(&a), NOW),
            "alice\n"
        );
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
