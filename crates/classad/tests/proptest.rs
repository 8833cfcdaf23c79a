//! Property tests of the parser, the unparser and the evaluator.
//!
//! Expression trees are built by generating ClassAd source TEXT from a
//! recursive strategy and parsing it (texts that do not parse are skipped),
//! so every tree is one the parser can really produce. The properties:
//!
//! - round trip: `parse(unparse(e)) == e`, and the canonical text is a fixed
//!   point after one round (`- 5` prints ` -5`, as HTCondor prints it, which
//!   reads back as the literal `-5`, printed `-5`). Trees whose canonical
//!   text HTCondor itself cannot read back are left out, see
//!   [`reference_quirk`];
//! - evaluation never panics: without ads, with a MY ad, and in a match of
//!   MY and TARGET ads full of self-references and cycles, in HTCondor's
//!   default mode and in strict mode;
//! - the parsers never panic, whatever the input (arbitrary bytes, arbitrary
//!   strings, soups of ClassAd tokens, old-syntax ads).

use classad::{
    parse_ad, parse_expr, parse_expr_bytes, parse_old_ad, rank, symmetric_match, unparse,
    unparse_ad, ClassAd, EvalOptions, Evaluator, Expr, UnOp,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;

/// Cases per property: enough to find the usual suspects, fast enough for
/// every test run.
const CASES: u32 = 256;

/// Each property runs in a child process (`fork`), so that a stack overflow
/// or an abort is reported, with its shrunk input, like any other failure
/// instead of killing the whole test binary; a case that runs longer than
/// `timeout` milliseconds (an endless loop) fails too. Every crash costs a
/// new child process, so shrinking is bounded in time rather than in steps.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        fork: true,
        timeout: 10_000,
        max_shrink_time: 30_000,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Source-text strategies
// ---------------------------------------------------------------------------

/// Plain attribute names. They overlap the attributes of the test ads (so
/// references resolve, often into cycles) and include the special names of
/// scoping.
const NAMES: &[&str] = &[
    "a",
    "b",
    "c",
    "x",
    "y",
    "A",
    "Cpus",
    "Memory",
    "Requirements",
    "Rank",
    "self_ref",
    "loop1",
    "loop2",
    "list",
    "nested",
    "str",
    "ev",
    "me",
    "tg",
    "missing",
    "_u9",
    "parent",
    "root",
    "toplevel",
    "self",
    "MY",
    "TARGET",
    "other",
    "CurrentTime",
];

/// Quoted attribute names (escapes, non-ASCII, keywords, dots, spaces).
const QUOTED_NAMES: &[&str] = &[
    "'a'",
    "'weird name'",
    "'with\\'quote'",
    "'日本'",
    "'a.b'",
    "'123'",
    "'true'",
    "'is'",
    "'x\\\\y'",
    "'Requirements'",
    "'parent'",
    "'my'",
    "'a\\nb'",
    "'tab\\there'",
];

/// Scope prefixes of attribute references.
const PREFIXES: &[&str] = &[
    "MY.", "TARGET.", "my.", "target.", "OTHER.", ".", "self.", "parent.", "root.", "MY..",
];

/// Real builtins of HTCondor's library (whether or not this crate
/// implements them yet), plus one unknown name.
const FUNCS: &[&str] = &[
    "strcat",
    "substr",
    "size",
    "length",
    "toUpper",
    "toLower",
    "strcmp",
    "stricmp",
    "join",
    "split",
    "splitUserName",
    "splitSlotName",
    "member",
    "identicalMember",
    "sum",
    "avg",
    "min",
    "max",
    "anyCompare",
    "allCompare",
    "stringListSize",
    "stringListSum",
    "stringListAvg",
    "stringListMin",
    "stringListMax",
    "stringListMember",
    "stringListIMember",
    "stringListsIntersect",
    "stringListSubsetMatch",
    "regexp",
    "regexpMember",
    "regexps",
    "replace",
    "replaceAll",
    "countMatches",
    "ifThenElse",
    "isUndefined",
    "isError",
    "isString",
    "isInteger",
    "isReal",
    "isBoolean",
    "isList",
    "isClassAd",
    "isAbsTime",
    "isRelTime",
    "int",
    "real",
    "string",
    "bool",
    "floor",
    "ceiling",
    "round",
    "pow",
    "quantize",
    "random",
    "time",
    "absTime",
    "relTime",
    "formatTime",
    "splitTime",
    "getYear",
    "getMonth",
    "getDayOfMonth",
    "getHours",
    "interval",
    "dayTime",
    "eval",
    "unparse",
    "unresolved",
    "evalInEachContext",
    "versioncmp",
    "versionGT",
    "versionInRange",
    "userHome",
    "userMap",
    "debug",
    "envV1ToV2",
    "mergeEnvironment",
    "STRCAT",
    "noSuchFunction",
];

/// Texts of numbers at the edges of what the lexer and the printer handle.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "0.0",
    "-0.0",
    ".5",
    "-.5",
    "1e5",
    "1E+2",
    "2.5e-3",
    "0.1",
    "0.30000000000000004",
    "9007199254740993.0",
    "123456789012345678.5",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "5e-324",
    "1e-400",
    "1e999",
];

/// Other literals: keywords (any case), folded times, special reals.
const OTHER_LITERALS: &[&str] = &[
    "true",
    "false",
    "TRUE",
    "False",
    "undefined",
    "UNDEFINED",
    "error",
    "Error",
    "absTime(\"2020-01-01T00:00:00Z\")",
    "absTime(\"2020-06-15T08:30:00+0200\")",
    "relTime(\"1+01:01:01\")",
    "relTime(\"-00:00:30\")",
    "real(\"NaN\")",
    "real(\"INF\")",
    "real(\"-INF\")",
];

/// Pieces of string literals: escapes, octal escapes (including bytes that
/// are not UTF-8), non-ASCII characters.
const STRING_PIECES: &[&str] = &[
    "\\n", "\\t", "\\r", "\\b", "\\f", "\\v", "\\a", "\\\\", "\\\"", "\\'", "\\101", "\\7",
    "\\177", "\\377", "\\x", "'", "é", "日本", "😀", "\u{80}", "ß", "%Y-%m-%d", "a.*", "[", "(",
    "*", "$", " ", ",", "i", "1.2.3",
];

fn string_literal() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        2 => "[a-zA-Z0-9 _.,:;!?#$%&*+=<>/|~^@-]{1,4}",
        2 => select(STRING_PIECES).prop_map(String::from),
    ];
    (vec(piece, 0..6), vec("[a-z ]{0,3}", 0..2)).prop_map(|(parts, more)| {
        // Adjacent literals ("a" "b") are concatenated by the parser.
        let mut s = format!("\"{}\"", parts.concat());
        for m in more {
            s.push_str(&format!(" \"{m}\""));
        }
        s
    })
}

fn attr_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(NAMES).prop_map(String::from),
        1 => select(QUOTED_NAMES).prop_map(String::from),
    ]
}

fn attr_ref() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => attr_name(),
        2 => (select(PREFIXES), attr_name()).prop_map(|(p, n)| format!("{p}{n}")),
    ]
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<i64>().prop_map(|i| i.to_string()),
        2 => (-100i64..100).prop_map(|i| i.to_string()),
        2 => any::<f64>()
            .prop_filter("finite", |r| r.is_finite())
            .prop_map(|r| format!("{r:?}")),
        1 => (-1e6f64..1e6).prop_map(|r| format!("{r:?}")),
        1 => select(EDGE_NUMBERS).prop_map(String::from),
        2 => string_literal(),
        2 => select(OTHER_LITERALS).prop_map(String::from),
        6 => attr_ref(),
    ]
}

const UNARY: &[&str] = &["-", "+", "!", "~", "- ", "! ", "-- ", "!!"];

const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", ">>>", "<", "<=", ">", ">=", "==", "!=",
    "=?=", "=!=", "is", "isnt", "IS", "&&", "||",
];

/// Blanks around binary operators: spaces, newlines, comments, or nothing.
const BLANKS: &[&str] = &[" ", " ", " ", "", "\n", " /* c */ ", " // c\n", "\t"];

/// Argument separators (`;` separates arguments in HTCondor's default mode).
const ARG_SEPS: &[&str] = &[", ", ",", ", ", "; "];

/// ClassAd expression source text, recursively.
fn expr_text() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 64, 4, |inner| {
        prop_oneof![
            2 => (select(UNARY), inner.clone()).prop_map(|(op, e)| format!("{op}{e}")),
            6 => (inner.clone(), select(BLANKS), select(BINARY), select(BLANKS), inner.clone())
                .prop_map(|(a, s1, op, s2, b)| {
                    // `is`/`isnt` need blanks to be operators at all.
                    let (s1, s2) = if op.starts_with(['i', 'I']) { (" ", " ") } else { (s1, s2) };
                    format!("{a}{s1}{op}{s2}{b}")
                }),
            2 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("{c} ? {a} : {b}")),
            2 => (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} ?: {b}")),
            1 => (inner.clone(), inner.clone()).prop_map(|(a, i)| format!("{a}[{i}]")),
            1 => (inner.clone(), inner.clone()).prop_map(|(a, i)| format!("({a})[{i}]")),
            1 => (inner.clone(), attr_name()).prop_map(|(a, n)| format!("{a}.{n}")),
            1 => (inner.clone(), attr_name()).prop_map(|(a, n)| format!("({a}).{n}")),
            4 => (select(FUNCS), select(ARG_SEPS), vec(inner.clone(), 0..4))
                .prop_map(|(f, sep, args)| format!("{f}({})", args.join(sep))),
            2 => vec(inner.clone(), 0..4).prop_map(|items| format!("{{{}}}", items.join(", "))),
            2 => (vec((attr_name(), inner.clone()), 0..4), any::<bool>()).prop_map(
                |(attrs, trailing)| {
                    let body: Vec<String> =
                        attrs.iter().map(|(n, e)| format!("{n} = {e}")).collect();
                    let tail = if trailing && !body.is_empty() { ";" } else { "" };
                    format!("[{}{tail}]", body.join("; "))
                }
            ),
            3 => inner.clone().prop_map(|e| format!("({e})")),
        ]
    })
}

/// Generated text together with the tree it parses to.
fn parsed_expr() -> impl Strategy<Value = (String, Expr)> {
    expr_text().prop_filter_map("text does not parse", |t| {
        parse_expr(&t).ok().map(|e| (t, e))
    })
}

// ---------------------------------------------------------------------------
// Ads full of self-references and cycles
// ---------------------------------------------------------------------------

const MY_AD: &str = r#"[
    a = b + 1; b = a; c = c; x = 1; y = x * 2;
    self_ref = self.self_ref; loop1 = loop2; loop2 = TARGET.loop1;
    list = { a, b, list, self, MY.list };
    nested = [ p = parent.a; q = q; r = parent.nested.r; s = root.x; t = nested.t ];
    Requirements = TARGET.Requirements && MY.Requirements;
    Rank = Rank + TARGET.Rank;
    Cpus = 4; Memory = 2048; str = "日本\377";
    ev = eval("ev"); up = unparse(up);
    me = MY; tg = TARGET; 'weird name' = 'weird name' + 1
]"#;

const TARGET_AD: &str = r#"[
    a = MY.a; b = TARGET.b; c = other.c; x = 2.5; y = MY.y;
    loop1 = MY.loop2; list = { TARGET.list, MY.list };
    nested = [ p = parent.parent; q = TARGET.nested ];
    Requirements = MY.Requirements || TARGET.Requirements;
    Rank = TARGET.Rank * 2;
    Cpus = "four"; Memory = undefined; str = { 1, "x" };
    ev = eval("TARGET.ev"); me = MY; tg = TARGET
]"#;

fn base_ad(text: &str) -> ClassAd {
    match parse_ad(text) {
        Ok(ad) => ad,
        Err(e) => panic!("test ad does not parse: {e}"),
    }
}

/// Named generated expressions to add to (or replace in) an ad.
fn extra_attrs() -> impl Strategy<Value = Vec<(String, String)>> {
    vec((select(NAMES).prop_map(String::from), expr_text()), 0..4)
}

fn with_attrs(mut ad: ClassAd, attrs: &[(String, String)]) -> ClassAd {
    for (name, text) in attrs {
        if let Ok(e) = parse_expr(text) {
            ad.insert(name.as_str(), e);
        }
    }
    ad
}

/// Evaluates `e` every way there is, in both modes; the results are
/// printed too (printing must not panic either).
fn evaluate_everywhere(e: &Expr, my: &ClassAd, target: &ClassAd) {
    for strict in [false, true] {
        let mut ev = Evaluator::new(EvalOptions {
            strict,
            now: 1_700_000_000.0,
            ..EvalOptions::default()
        });
        let _ = ev.eval(e, None, None).to_string();
        let _ = ev.eval(e, Some(my), None).to_string();
        let _ = ev.eval(e, Some(my), Some(target)).to_string();
        let _ = ev.eval(e, Some(target), Some(my)).to_string();
        for name in NAMES {
            let _ = ev.eval_attr(name, my, Some(target)).to_string();
            let _ = ev.eval_attr(name, target, None).to_string();
        }
        let _ = symmetric_match(&mut ev, my, target).matched;
        let _ = symmetric_match(&mut ev, target, my).matched;
        let _ = rank(&mut ev, my, target).to_string();
        let _ = rank(&mut ev, target, my).to_string();
    }
}

/// Every value `evaluate_everywhere` computes, printed, with or without
/// remembering attribute values.
fn values_everywhere(e: &Expr, my: &ClassAd, target: &ClassAd, memo: bool) -> Vec<String> {
    let mut out = Vec::new();
    for strict in [false, true] {
        let mut ev = Evaluator::new(EvalOptions {
            strict,
            now: 1_700_000_000.0,
            ..EvalOptions::default()
        });
        ev.set_memoisation(memo);
        out.push(ev.eval(e, Some(my), None).to_string());
        out.push(ev.eval(e, Some(my), Some(target)).to_string());
        out.push(ev.eval(e, Some(target), Some(my)).to_string());
        for name in NAMES {
            out.push(ev.eval_attr(name, my, Some(target)).to_string());
        }
        out.push(symmetric_match(&mut ev, my, target).matched.to_string());
        out.push(rank(&mut ev, target, my).to_string());
    }
    out
}

// ---------------------------------------------------------------------------
// Token soups (mostly invalid input close to valid)
// ---------------------------------------------------------------------------

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ".",
    "..",
    "?",
    ":",
    "?:",
    "=",
    "==",
    "=?=",
    "=!=",
    "!",
    "!=",
    "-",
    "+",
    "*",
    "/",
    "%",
    "<",
    "<<",
    ">>>",
    "&&",
    "||",
    "&",
    "|",
    "^",
    "~",
    " is ",
    " isnt ",
    "\"",
    "'",
    "\\",
    "\"str\"",
    "'q'",
    "1",
    "-1",
    "0",
    "007",
    "0x1F",
    "1.",
    ".5",
    "1e",
    "1e5",
    "-1e-5",
    "x",
    "MY",
    "TARGET",
    "parent",
    "strcat",
    "absTime",
    "relTime",
    "absTime(\"x\")",
    "relTime(\"1\")",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "\t",
    "\r",
    "é",
    "\u{0}",
    "\\\"",
    "\\377",
    "true",
    "undefined",
    "error",
    "a = 1",
    "\n\n",
    "#",
];

fn token_soup() -> impl Strategy<Value = String> {
    vec(select(TOKENS), 0..48).prop_map(|t| t.concat())
}

/// Old-syntax ad text: `Name = expr` lines, some broken, some blank or
/// comments.
fn old_ad_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => (attr_name(), select(&[" = ", "=", " =", "== "][..]), expr_text())
            .prop_map(|(n, eq, e)| format!("{n}{eq}{e}")),
        1 => (select(NAMES), token_soup()).prop_map(|(n, s)| format!("{n} = {s}")),
        1 => token_soup(),
        1 => select(&["", "# comment", "// comment", "   ", "\r"][..]).prop_map(String::from),
    ];
    (vec(line, 0..8), select(&["\n", "\r\n"][..])).prop_map(|(lines, nl)| lines.join(nl))
}

/// Openers of nested constructs, and what closes each.
const NESTERS: &[(&str, &str)] = &[
    ("(", ")"),
    ("{", "}"),
    ("[a = ", "]"),
    ("f(", ")"),
    ("x[", "]"),
    ("-(", ")"),
    ("!", ""),
    ("1 ? 2 : ", ""),
    ("a ?: (", ")"),
    ("strcat(1, ", ")"),
];

/// Deeply nested text, closed or not: `((((1))))`, `[a = [a = ...`, ...
/// (the parser rejects trees deeper than `MAX_DEPTH`; input deeper than
/// that must be rejected cleanly, input within it parsed, printed and
/// evaluated without exhausting the stack).
fn deep_text() -> impl Strategy<Value = String> {
    (select(NESTERS), 1..3000usize, any::<bool>()).prop_map(|((open, close), n, closed)| {
        let mut s = open.repeat(n);
        s.push('1');
        if closed {
            s.push_str(&close.repeat(n));
        }
        s
    })
}

// ---------------------------------------------------------------------------
// Canonical texts HTCondor cannot read back either
// ---------------------------------------------------------------------------

fn is_plain_identifier(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !["true", "false", "undefined", "error", "is", "isnt"]
            .iter()
            .any(|k| name.eq_ignore_ascii_case(k))
}

/// Whether `e` contains a construct whose canonical text, printed exactly as
/// HTCondor's unparser prints it (which the conformance corpus requires),
/// does not parse back to the same tree, in HTCondor too:
/// - a quoted name after `.` is printed without its quotes (`x.'y z'` prints
///   `x.y z`);
/// - a selection from a number prints `4.x`, which lexes as a bad real;
/// - a real within the last unit of the largest double prints with 16
///   digits, which reads back as infinity;
/// - a relative time is printed in whole seconds and in 32 bits;
/// - a minus sign before a postfix chain starting with a number;
/// - a minus sign before a negated integer zero (`- -0` reads back as
///   `-(0)` and prints ` -0`, which reads back as `0`: the same value, but
///   the canonical text settles only after a second round).
fn starts_with_number(e: &Expr) -> bool {
    match e {
        Expr::Lit(classad::Value::Int(_) | classad::Value::Real(_)) => true,
        Expr::Elvis(a, _) | Expr::Index(a, _) | Expr::Select(a, _) => starts_with_number(a),
        _ => false,
    }
}

fn reference_quirk(e: &Expr) -> bool {
    use classad::Value;
    match e {
        Expr::Lit(Value::Real(r)) => r.is_finite() && r.abs() >= 1.797_693_134_862_315e308,
        Expr::RelTimeStr(r) => r.fract() != 0.0 || r.abs() >= 2_147_483_648.0,
        Expr::Lit(_) | Expr::Attr(_) | Expr::AbsAttr(_) => false,
        Expr::Select(base, name) => {
            !is_plain_identifier(name.as_str())
                || matches!(**base, Expr::Lit(Value::Int(_) | Value::Real(_)))
                || reference_quirk(base)
        }
        Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::Elvis(a, b) => {
            reference_quirk(a) || reference_quirk(b)
        }
        // ` -` printed before a postfix chain that starts with a number
        // (`-(5 ?: x)` prints ` -5 ?: x`) reads back with the sign folded
        // into the number: the same value, another tree.
        Expr::Unary(UnOp::Neg, a)
            if !matches!(**a, Expr::Lit(_) | Expr::Unary(..)) && starts_with_number(a) =>
        {
            true
        }
        Expr::Unary(UnOp::Neg, a) if matches!(&**a, Expr::Unary(UnOp::Neg, b) if matches!(**b, Expr::Lit(Value::Int(0)))) => {
            true
        }
        Expr::Unary(_, a) | Expr::Paren(a) => reference_quirk(a),
        Expr::Cond(c) => reference_quirk(&c.0) || reference_quirk(&c.1) || reference_quirk(&c.2),
        Expr::Call(c) => c.args.iter().any(reference_quirk),
        Expr::List(items) => items.iter().any(reference_quirk),
        Expr::Ad(ad) => ad.iter().any(|(_, e)| reference_quirk(e)),
    }
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// `parse(unparse(e)) == e`, and the canonical text is a fixed point
    /// after one round.
    #[test]
    fn unparse_round_trips((text, e) in parsed_expr()) {
        prop_assume!(!reference_quirk(&e));
        let printed = unparse(&e);
        let reparsed = match parse_expr(&printed) {
            Ok(r) => r,
            Err(err) => {
                return Err(TestCaseError::fail(format!(
                    "the unparsed text does not parse\n  source:   {text:?}\n  unparsed: \
                     {printed:?}\n  error:    {err}"
                )));
            }
        };
        prop_assert_eq!(
            &reparsed,
            &e,
            "parse(unparse(e)) != e\n  source:   {:?}\n  unparsed: {:?}\n  reparsed: {:?}",
            text,
            printed,
            unparse(&reparsed)
        );
        let once = unparse(&reparsed);
        let twice = parse_expr(&once).map(|r| unparse(&r)).unwrap_or_default();
        prop_assert_eq!(
            twice,
            once,
            "the canonical text is not a fixed point; source: {:?}",
            text
        );
    }

    /// Evaluation never panics, with no ads, a MY ad, or MY and TARGET ads
    /// with self-references and cycles (some through generated attributes).
    #[test]
    fn evaluation_never_panics(
        (_text, e) in parsed_expr(),
        my_extra in extra_attrs(),
        target_extra in extra_attrs(),
    ) {
        let my = with_attrs(base_ad(MY_AD), &my_extra);
        let target = with_attrs(base_ad(TARGET_AD), &target_extra);
        evaluate_everywhere(&e, &my, &target);
        // The expression inside a nested ad, and as its own attribute.
        let mut inner = ClassAd::new();
        inner.insert("z", e.clone());
        let mut outer = my.clone();
        outer.insert("nest", Expr::Ad(inner));
        outer.insert("z", e);
        evaluate_everywhere(&Expr::Attr("z".into()), &outer, &target);
    }

    /// Remembering attribute values within an evaluation never changes a
    /// result: MY and TARGET, nested ads, parent scopes, cycles.
    #[test]
    fn remembering_never_changes_a_value(
        (text, e) in parsed_expr(),
        my_extra in extra_attrs(),
        target_extra in extra_attrs(),
    ) {
        // `random()` is the one builtin whose value differs per call.
        prop_assume!(!text.to_ascii_lowercase().contains("random")
            && !my_extra.iter().chain(&target_extra)
                .any(|(_, t)| t.to_ascii_lowercase().contains("random")));
        let my = with_attrs(base_ad(MY_AD), &my_extra);
        let target = with_attrs(base_ad(TARGET_AD), &target_extra);
        prop_assert_eq!(
            values_everywhere(&e, &my, &target, true),
            values_everywhere(&e, &my, &target, false),
            "expression {:?}", text
        );
    }

    /// The expression parser never panics on arbitrary bytes.
    #[test]
    fn expr_parser_never_panics_on_bytes(bytes in vec(any::<u8>(), 0..512)) {
        let _ = parse_expr_bytes(&bytes);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = parse_ad(s);
            let _ = parse_old_ad(s);
        }
    }

    /// No parser panics on arbitrary strings.
    #[test]
    fn parsers_never_panic_on_strings(s in any::<String>()) {
        let _ = parse_expr(&s);
        let _ = parse_ad(&s);
        let _ = parse_old_ad(&s);
    }

    /// No parser panics on soups of ClassAd tokens; whatever parses also
    /// prints and evaluates without panicking.
    #[test]
    fn parsers_never_panic_on_token_soup(s in token_soup()) {
        if let Ok(e) = parse_expr(&s) {
            let _ = unparse(&e);
            let _ = classad::eval(&e);
        }
        if let Ok(ad) = parse_ad(&format!("[{s}]")) {
            let _ = unparse_ad(&ad);
        }
        if let Ok(ad) = parse_old_ad(&s) {
            let _ = unparse_ad(&ad);
        }
    }

    /// Deep nesting is parsed, or rejected, without exhausting the stack;
    /// what parses also prints, evaluates and drops.
    #[test]
    fn deep_nesting_never_crashes(s in deep_text()) {
        if let Ok(e) = parse_expr(&s) {
            let _ = unparse(&e);
            let _ = classad::eval(&e);
        }
        let _ = parse_old_ad(&format!("A = {s}"));
    }

    /// Old-syntax ad parsing never panics; a parsed ad prints and its
    /// attributes evaluate without panicking.
    #[test]
    fn old_ad_parser_never_panics(text in old_ad_text()) {
        if let Ok(ad) = parse_old_ad(&text) {
            let _ = unparse_ad(&ad);
            let mut ev = Evaluator::default();
            let names: Vec<String> = ad.names().map(|n| n.as_str().to_string()).collect();
            for n in names {
                let _ = ev.eval_attr(&n, &ad, Some(&ad)).to_string();
            }
        }
    }
}
