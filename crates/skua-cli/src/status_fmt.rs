//! Output formats of `skua status`, in the layouts of `condor_status`.
//!
//! Pure functions: each takes the ads to show and the current time (seconds
//! since the epoch) and returns the text to print.
//!
//! - [`format_machines`]: the default slot table (Name, OpSys, Arch, State,
//!   Activity, LoadAv, Mem, ActvtyTime) followed by the totals by Arch/OpSys
//!   (Total, Owner, Claimed, Unclaimed, Matched, Preempting, Drain; Backfill
//!   and BkIdle appear when a slot is a backfill slot or in Backfill state).
//! - [`format_schedds`], [`format_submitters`], [`format_masters`],
//!   [`format_any`]: the tables of `-schedd`, `-submitters`, `-master` and
//!   `-any`; [`format_default`] picks the table for an ad type.
//! - [`format_autoformat`] (`-af`), [`format_long`] (`-l`) and
//!   [`format_json`] (`-json`).
//!
//! Column rules: headings are left-justified in their column, text columns
//! are left-justified and numbers right-justified, columns are separated by
//! one space, a column is as wide as its widest cell (or its minimum width),
//! trailing blanks are trimmed, and a blank line follows the headings. An
//! attribute that is missing or of the wrong type shows as `??`. The input
//! order of the ads is kept: sorting is the caller's.

use std::collections::BTreeMap;

use classad::{unparse, unparse_value, ClassAd, EvalOptions, Evaluator, Expr, UnOp, Value};
use serde_json::Value as Json;

// ----------------------------------------------------------------------
// Evaluation

/// Evaluates attributes of ads at a fixed time.
struct Eval {
    ev: Evaluator,
}

impl Eval {
    fn new(now: i64) -> Eval {
        Eval {
            ev: Evaluator::new(EvalOptions {
                now: now as f64,
                ..EvalOptions::default()
            }),
        }
    }

    fn attr(&mut self, ad: &ClassAd, name: &str) -> Value {
        self.ev.eval_attr(name, ad, None)
    }

    fn string(&mut self, ad: &ClassAd, name: &str) -> Option<String> {
        self.attr(ad, name).as_string()
    }

    fn int(&mut self, ad: &ClassAd, name: &str) -> Option<i64> {
        match self.attr(ad, name) {
            v @ (Value::Int(_) | Value::Real(_) | Value::Bool(_)) => v.as_int(),
            _ => None,
        }
    }

    fn real(&mut self, ad: &ClassAd, name: &str) -> Option<f64> {
        match self.attr(ad, name) {
            v @ (Value::Int(_) | Value::Real(_) | Value::Bool(_)) => v.as_real(),
            _ => None,
        }
    }

    fn is_true(&mut self, ad: &ClassAd, name: &str) -> bool {
        matches!(self.attr(ad, name), Value::Bool(true))
    }
}

const MISSING: &str = "??";

// ----------------------------------------------------------------------
// Tables

#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

struct Column {
    head: &'static str,
    /// Minimum width (the column grows to fit its heading and cells).
    min: usize,
    align: Align,
    /// Whether a space separates this column from the previous one.
    sep: bool,
}

const fn col(head: &'static str, min: usize, align: Align) -> Column {
    Column {
        head,
        min,
        align,
        sep: true,
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(s: &str, w: usize, align: Align, out: &mut String) {
    let fill = w.saturating_sub(width(s));
    if align == Align::Right {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    out.push_str(s);
    if align == Align::Left {
        out.extend(std::iter::repeat_n(' ', fill));
    }
}

fn end_line(line: &mut String, out: &mut String) {
    out.push_str(line.trim_end());
    out.push('\n');
    line.clear();
}

/// Headings, a blank line, then one line per row.
fn render_table(cols: &[Column], rows: &[Vec<String>], out: &mut String) {
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| width(&r[i]))
                .chain([c.min, width(c.head)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut line = String::new();
    for (i, c) in cols.iter().enumerate() {
        if i > 0 && c.sep {
            line.push(' ');
        }
        pad(c.head, widths[i], Align::Left, &mut line);
    }
    end_line(&mut line, out);
    out.push('\n');
    for row in rows {
        for (i, c) in cols.iter().enumerate() {
            if i > 0 && c.sep {
                line.push(' ');
            }
            pad(&row[i], widths[i], c.align, &mut line);
        }
        end_line(&mut line, out);
    }
}

/// A totals table: headings right-justified over `(heading, width)`
/// columns after a key column of `key_width`, a blank line, one line per
/// key (`None`: the key is shown without numbers), a blank line, the
/// `Total` line.
fn render_totals(
    key_width: usize,
    cols: &[(&str, usize)],
    rows: &[(String, Option<Vec<u64>>)],
    total: &[u64],
    out: &mut String,
) {
    let mut line = String::new();
    line.extend(std::iter::repeat_n(' ', key_width));
    for (i, (head, w)) in cols.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        pad(head, *w, Align::Right, &mut line);
    }
    end_line(&mut line, out);
    out.push('\n');
    let numbers = |key: &str, values: Option<&[u64]>, line: &mut String| {
        pad(key, key_width, Align::Right, line);
        for (i, ((_, w), v)) in cols.iter().zip(values.unwrap_or(&[])).enumerate() {
            if i > 0 {
                line.push(' ');
            }
            pad(&v.to_string(), *w, Align::Right, line);
        }
    };
    for (key, values) in rows {
        numbers(key, values.as_deref(), &mut line);
        end_line(&mut line, out);
    }
    if !rows.is_empty() {
        out.push('\n');
    }
    numbers("Total", Some(total), &mut line);
    end_line(&mut line, out);
}

/// `d+hh:mm:ss` (negative durations show as zero).
fn duration(secs: i64) -> String {
    let s = secs.max(0);
    format!(
        "{}+{:02}:{:02}:{:02}",
        s / 86_400,
        s % 86_400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

fn or_missing(v: Option<String>) -> String {
    v.unwrap_or_else(|| MISSING.to_string())
}

// ----------------------------------------------------------------------
// The default slot table and its totals

/// Totals columns: Total, Owner, Claimed, Unclaimed, Matched, Preempting,
/// Drain, Backfill, BkIdle.
const TOTALS_COLS: [(&str, usize); 9] = [
    ("Total", 6),
    ("Owner", 5),
    ("Claimed", 7),
    ("Unclaimed", 9),
    ("Matched", 7),
    ("Preempting", 10),
    ("Drain", 6),
    ("Backfill", 8),
    ("BkIdle", 6),
];
const BACKFILL: usize = 7;
const BK_IDLE: usize = 8;

/// The totals column a slot counts in, from its State.
fn state_column(state: &str, backfill_slot: bool) -> Option<usize> {
    use skua_types::SlotState;
    Some(match (SlotState::from_name(state)?, backfill_slot) {
        (SlotState::Unclaimed, true) => BK_IDLE,
        (SlotState::Claimed, true) => BACKFILL,
        (SlotState::Owner, _) => 1,
        (SlotState::Claimed, _) => 2,
        (SlotState::Unclaimed, _) => 3,
        (SlotState::Matched, _) => 4,
        (SlotState::Preempting, _) => 5,
        (SlotState::Drained, _) => 6,
        (SlotState::Backfill, _) => BACKFILL,
    })
}

/// The default `skua status` output for slot (Machine) ads: one line per
/// slot, then the totals by Arch/OpSys. No ads, no output.
pub fn format_machines(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let cols = [
        col("Name", 18, Align::Left),
        col("OpSys", 10, Align::Left),
        col("Arch", 6, Align::Left),
        col("State", 9, Align::Left),
        col("Activity", 8, Align::Left),
        col("LoadAv", 6, Align::Right),
        col("Mem", 4, Align::Right),
        Column {
            head: "  ActvtyTime",
            min: 12,
            align: Align::Right,
            sep: false,
        },
    ];
    let mut rows = Vec::with_capacity(ads.len());
    let mut keys: BTreeMap<String, [u64; 9]> = BTreeMap::new();
    let mut total = [0u64; 9];
    let mut malformed = 0usize;
    for ad in ads {
        let load = ev
            .real(ad, "LoadAvg")
            .or_else(|| ev.real(ad, "CondorLoadAvg"))
            .map(|l| {
                let mut s = format!("{l:.3}");
                s.truncate(6);
                s
            });
        let activity_time = match ev.int(ad, "EnteredCurrentActivity") {
            Some(t) => duration(now.saturating_sub(t)),
            None => "-".to_string(),
        };
        rows.push(vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.string(ad, "OpSys")),
            or_missing(ev.string(ad, "Arch")),
            or_missing(ev.string(ad, "State")),
            or_missing(ev.string(ad, "Activity")),
            or_missing(load),
            or_missing(ev.int(ad, "Memory").map(|m| m.to_string())),
            activity_time,
        ]);

        let (Some(arch), Some(opsys)) = (ev.string(ad, "Arch"), ev.string(ad, "OpSys")) else {
            malformed += 1;
            continue;
        };
        let row = keys.entry(format!("{arch}/{opsys}")).or_default();
        let backfill_slot = ev.is_true(ad, "SlotBackfill");
        match ev
            .string(ad, "State")
            .and_then(|s| state_column(&s, backfill_slot))
        {
            None => malformed += 1,
            Some(BK_IDLE) => {
                row[BK_IDLE] += 1;
                total[BK_IDLE] += 1;
            }
            Some(c) => {
                for counts in [&mut *row, &mut total] {
                    counts[0] += 1;
                    counts[c] += 1;
                }
            }
        }
    }

    let mut out = String::new();
    render_table(&cols, &rows, &mut out);
    out.push('\n');
    let shown = if total[BACKFILL] + total[BK_IDLE] > 0 {
        TOTALS_COLS.len()
    } else {
        BACKFILL
    };
    let key_width = keys.keys().map(|k| width(k)).max().unwrap_or(0).max(14);
    let rows: Vec<(String, Option<Vec<u64>>)> = keys
        .into_iter()
        .map(|(k, v)| (k, Some(v[..shown].to_vec())))
        .collect();
    render_totals(
        key_width,
        &TOTALS_COLS[..shown],
        &rows,
        &total[..shown],
        &mut out,
    );
    if malformed > 0 {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', key_width));
        out.push_str(&format!(
            "(slots left out of the totals for lack of Arch, OpSys or a known State: {malformed})\n"
        ));
    }
    out
}

// ----------------------------------------------------------------------
// Tables for other ad types

fn int_cell(ev: &mut Eval, ad: &ClassAd, name: &str) -> String {
    ev.int(ad, name).map(|i| i.to_string()).unwrap_or_default()
}

/// `-schedd`: Name, Machine, running/idle/held jobs, then their totals.
pub fn format_schedds(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let cols = [
        col("Name", 0, Align::Left),
        col("Machine", 0, Align::Left),
        col("RunningJobs", 11, Align::Right),
        col("  IdleJobs", 10, Align::Right),
        col("  HeldJobs", 10, Align::Right),
    ];
    let mut total = [0u64; 3];
    let rows: Vec<Vec<String>> = ads
        .iter()
        .map(|ad| {
            let counts = ["TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"];
            for (t, name) in total.iter_mut().zip(counts) {
                *t += ev.int(ad, name).unwrap_or(0).max(0) as u64;
            }
            let mut row = vec![
                or_missing(ev.string(ad, "Name")),
                or_missing(ev.string(ad, "Machine")),
            ];
            row.extend(counts.iter().map(|n| int_cell(&mut ev, ad, n)));
            row
        })
        .collect();
    let mut out = String::new();
    render_table(&cols, &rows, &mut out);
    out.push('\n');
    // All schedds share one (blank) key: its line carries no numbers.
    render_totals(
        14,
        &[
            ("TotalRunningJobs", 18),
            ("TotalIdleJobs", 18),
            ("TotalHeldJobs", 18),
        ],
        &[(String::new(), None)],
        &total,
        &mut out,
    );
    out
}

/// `-submitters`: Name, Machine, running/idle/held jobs, then the totals
/// per submitter name.
pub fn format_submitters(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let cols = [
        col("Name", 0, Align::Left),
        col("Machine", 0, Align::Left),
        col("RunningJobs", 11, Align::Right),
        col("  IdleJobs", 10, Align::Right),
        col("  HeldJobs", 10, Align::Right),
    ];
    let counts = ["RunningJobs", "IdleJobs", "HeldJobs"];
    let mut keys: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let mut total = [0u64; 3];
    let mut rows = Vec::with_capacity(ads.len());
    for ad in ads {
        let name = ev.string(ad, "Name");
        let mut row = vec![
            or_missing(name.clone()),
            or_missing(ev.string(ad, "Machine")),
        ];
        row.extend(counts.iter().map(|n| int_cell(&mut ev, ad, n)));
        rows.push(row);
        if let Some(name) = name {
            let per = keys.entry(name).or_default();
            for (i, n) in counts.iter().enumerate() {
                let v = ev.int(ad, n).unwrap_or(0).max(0) as u64;
                per[i] += v;
                total[i] += v;
            }
        }
    }
    let mut out = String::new();
    render_table(&cols, &rows, &mut out);
    out.push('\n');
    let key_width = keys.keys().map(|k| width(k)).max().unwrap_or(0).max(5);
    let rows: Vec<(String, Option<Vec<u64>>)> = keys
        .into_iter()
        .map(|(k, v)| (k, Some(v.to_vec())))
        .collect();
    render_totals(
        key_width,
        &[("RunningJobs", 11), ("IdleJobs", 10), ("HeldJobs", 10)],
        &rows,
        &total,
        &mut out,
    );
    out
}

/// The version number out of a `CondorVersion` string
/// (`$CondorVersion: 24.0.1 2024-10-31 ... $` gives `24.0.1`).
fn version_number(v: &str) -> String {
    v.split_once("Version:")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or(v)
        .to_string()
}

/// Megabytes in the largest unit that keeps the number at least 1.
fn readable_mb(mb: f64) -> String {
    let units = ["MB", "GB", "TB", "PB"];
    let mut v = mb;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", units[u])
}

/// `-master`: Name, Version, Cpus, Memory, Uptime.
pub fn format_masters(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let cols = [
        col("Name", 0, Align::Left),
        col("Version", 14, Align::Left),
        col("Cpus", 4, Align::Right),
        col("  Memory", 10, Align::Right),
        col("   Uptime", 13, Align::Right),
    ];
    let rows: Vec<Vec<String>> = ads
        .iter()
        .map(|ad| {
            vec![
                or_missing(ev.string(ad, "Name")),
                or_missing(ev.string(ad, "CondorVersion").map(|v| version_number(&v))),
                or_missing(ev.int(ad, "DetectedCpus").map(|c| c.to_string())),
                or_missing(ev.real(ad, "DetectedMemory").map(readable_mb)),
                ev.int(ad, "DaemonStartTime")
                    .map(|t| duration(now.saturating_sub(t)))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let mut out = String::new();
    render_table(&cols, &rows, &mut out);
    out
}

/// `-any`: MyType, TargetType and Name of every ad.
pub fn format_any(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let cols = [
        col("MyType", 18, Align::Left),
        col("TargetType", 18, Align::Left),
        col("Name", 0, Align::Left),
    ];
    let rows: Vec<Vec<String>> = ads
        .iter()
        .map(|ad| {
            vec![
                ev.string(ad, "MyType").unwrap_or_else(|| "None".into()),
                ev.string(ad, "TargetType").unwrap_or_else(|| "None".into()),
                or_missing(ev.string(ad, "Name")),
            ]
        })
        .collect();
    let mut out = String::new();
    render_table(&cols, &rows, &mut out);
    out
}

/// The default table for ads of `ad_type` (HTCondor's MyType or a usual
/// alias, any case): slots, schedds, submitters and masters have their own
/// tables; every other type gets the `-any` table.
pub fn format_default(ad_type: &str, ads: &[ClassAd], now: i64) -> String {
    match ad_type.to_ascii_lowercase().as_str() {
        "machine" | "startd" | "slot" => format_machines(ads, now),
        "scheduler" | "schedd" => format_schedds(ads, now),
        "submitter" | "submittor" => format_submitters(ads, now),
        "daemonmaster" | "master" => format_masters(ads, now),
        _ => format_any(ads, now),
    }
}

// ----------------------------------------------------------------------
// -af, -l: values in the old ClassAd syntax

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
    let mut ev = Eval::new(now);
    let mut out = String::new();
    for ad in ads {
        for (i, e) in exprs.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            match ev.ev.eval(e, Some(ad), None) {
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

// ----------------------------------------------------------------------
// -json

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

/// `-state`: condor_status -state's slot table (Name, Cpu, Mem, LoadAv,
/// KbdIdle, State, StateTime, Activ, ActvtyTime).
pub fn format_state(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let cols = [
        col("Name", 18, Align::Left),
        col("Cpu", 3, Align::Right),
        col("Mem", 5, Align::Right),
        col("LoadAv", 6, Align::Right),
        col("KbdIdle", 10, Align::Right),
        col("State", 10, Align::Left),
        col("StateTime", 10, Align::Right),
        col("Activ", 6, Align::Left),
        col("ActvtyTime", 10, Align::Right),
    ];
    let since = |ev: &mut Eval, ad: &ClassAd, name: &str| match ev.int(ad, name) {
        Some(t) => duration(now.saturating_sub(t)),
        None => "??".to_string(),
    };
    let mut rows = Vec::with_capacity(ads.len());
    for ad in ads {
        let load = ev.real(ad, "LoadAvg").map(|l| format!("{l:.3}"));
        let activity = ev.string(ad, "Activity").map(|mut a| {
            a.truncate(6);
            a
        });
        rows.push(vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.int(ad, "Cpus").map(|c| c.to_string())),
            or_missing(ev.int(ad, "Memory").map(|m| m.to_string())),
            or_missing(load),
            or_missing(ev.int(ad, "KeyboardIdle").map(duration)),
            or_missing(ev.string(ad, "State")),
            since(&mut ev, ad, "EnteredCurrentState"),
            or_missing(activity),
            since(&mut ev, ad, "EnteredCurrentActivity"),
        ]);
    }
    let mut out = String::new();
    render_table(&cols, &rows, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_slot_state_counts_in_its_totals_column() {
        let column =
            |state: &str, backfill: bool| state_column(state, backfill).map(|i| TOTALS_COLS[i].0);
        assert_eq!(column("Owner", false), Some("Owner"));
        assert_eq!(column("claimed", false), Some("Claimed"));
        assert_eq!(column("Unclaimed", false), Some("Unclaimed"));
        assert_eq!(column("Matched", false), Some("Matched"));
        assert_eq!(column("Preempting", false), Some("Preempting"));
        assert_eq!(column("Drained", false), Some("Drain"));
        assert_eq!(column("Backfill", false), Some("Backfill"));
        assert_eq!(column("Claimed", true), Some("Backfill"));
        assert_eq!(column("Unclaimed", true), Some("BkIdle"));
        assert_eq!(column("Owner", true), Some("Owner"));
        assert_eq!(column("Retiring", false), None);
    }
    use classad::parse_old_ad;

    const NOW: i64 = 1_700_000_000;

    fn ad(text: &str) -> ClassAd {
        parse_old_ad(text).expect("test ad parses")
    }

    fn slot(name: &str, state: &str, activity: &str, load: f64, mem: i64, ago: i64) -> ClassAd {
        let mut a = ClassAd::new();
        a.insert_value("MyType", "Machine");
        a.insert_value("Name", name);
        a.insert_value("OpSys", "LINUX");
        a.insert_value("Arch", "X86_64");
        a.insert_value("State", state);
        a.insert_value("Activity", activity);
        a.insert_value("LoadAvg", load);
        a.insert_value("Memory", mem);
        a.insert_value("EnteredCurrentActivity", NOW - ago);
        a
    }

    #[test]
    fn machines_table_and_totals() {
        let ads = [
            slot(
                "slot1@exec-0.novalocal",
                "Unclaimed",
                "Idle",
                0.15,
                991,
                928,
            ),
            slot("slot1@exec-1.novalocal", "Unclaimed", "Idle", 0.0, 991, 932),
        ];
        let expected = "\
Name                   OpSys      Arch   State     Activity LoadAv Mem   ActvtyTime

slot1@exec-0.novalocal LINUX      X86_64 Unclaimed Idle      0.150  991  0+00:15:28
slot1@exec-1.novalocal LINUX      X86_64 Unclaimed Idle      0.000  991  0+00:15:32

               Total Owner Claimed Unclaimed Matched Preempting  Drain

  X86_64/LINUX     2     0       0         2       0          0      0

         Total     2     0       0         2       0          0      0
";
        assert_eq!(format_machines(&ads, NOW), expected);
    }

    #[test]
    fn machines_short_names_mixed_states_and_platforms() {
        let mut win = slot("w1", "Owner", "Idle", 0.0, 512, 3600);
        win.insert_value("OpSys", "WINDOWS");
        let mut bad = slot("nostate", "Unclaimed", "Idle", 1.0, 2048, 0);
        bad.remove("State");
        let ads = [
            slot("a1", "Claimed", "Busy", 1.03, 2000, 86_400 * 2 + 3661),
            slot("a2", "Drained", "Retiring", 12.5, 64263, 5),
            slot("a3", "Matched", "Idle", 0.0, 1, 0),
            slot("a4", "Preempting", "Vacating", 0.0, 1, 0),
            win,
            bad,
        ];
        let expected = "\
Name               OpSys      Arch   State      Activity LoadAv Mem    ActvtyTime

a1                 LINUX      X86_64 Claimed    Busy      1.030  2000  2+01:01:01
a2                 LINUX      X86_64 Drained    Retiring 12.500 64263  0+00:00:05
a3                 LINUX      X86_64 Matched    Idle      0.000     1  0+00:00:00
a4                 LINUX      X86_64 Preempting Vacating  0.000     1  0+00:00:00
w1                 WINDOWS    X86_64 Owner      Idle      0.000   512  0+01:00:00
nostate            LINUX      X86_64 ??         Idle      1.000  2048  0+00:00:00

               Total Owner Claimed Unclaimed Matched Preempting  Drain

  X86_64/LINUX     4     0       1         0       1          1      1
X86_64/WINDOWS     1     1       0         0       0          0      0

         Total     5     1       1         0       1          1      1

              (slots left out of the totals for lack of Arch, OpSys or a known State: 1)
";
        assert_eq!(format_machines(&ads, NOW), expected);
    }

    #[test]
    fn machines_backfill_columns_appear_when_needed() {
        let mut idle = slot("b1", "Unclaimed", "Idle", 0.0, 100, 0);
        idle.insert_value("SlotBackfill", true);
        let mut busy = slot("b2", "Claimed", "Busy", 0.0, 100, 0);
        busy.insert_value("SlotBackfill", true);
        let out = format_machines(&[idle, busy, slot("c", "Claimed", "Busy", 0.0, 1, 0)], NOW);
        let totals: Vec<&str> = out.lines().skip(6).collect();
        assert_eq!(
            totals,
            [
                "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle",
                "",
                "  X86_64/LINUX     2     0       1         0       0          0      0        1      1",
                "",
                "         Total     2     0       1         0       0          0      0        1      1",
            ]
        );
    }

    #[test]
    fn machines_missing_values() {
        let a = ad("MyType = \"Machine\"\nName = \"x\"\n");
        let out = format_machines(&[a], NOW);
        let row = out.lines().nth(2).expect("a row");
        assert_eq!(
            row,
            "x                  ??         ??     ??        ??           ??   ??           -"
        );
        assert!(out.ends_with("known State: 1)\n"));
        assert_eq!(format_machines(&[], NOW), "");
    }

    #[test]
    fn expressions_are_evaluated_for_the_table() {
        let a = ad(concat!(
            "Name = \"e\"\nOpSys = strcat(\"LIN\", \"UX\")\nArch = \"X86_64\"\n",
            "State = \"Unclaimed\"\nActivity = \"Idle\"\nLoadAvg = 0.5\n",
            "Memory = 1024 * 2\nEnteredCurrentActivity = time() - 60\n",
        ));
        let out = format_machines(&[a], NOW);
        let row = out.lines().nth(2).expect("a row");
        assert!(row.ends_with(" 0.500 2048  0+00:01:00"), "{row}");
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

    #[test]
    fn schedd_table() {
        let a = ad(concat!(
            "MyType = \"Scheduler\"\nName = \"submit.example.org\"\n",
            "Machine = \"submit.example.org\"\nTotalRunningJobs = 12\n",
            "TotalIdleJobs = 3\nTotalHeldJobs = 1\n",
        ));
        let b = ad(concat!(
            "MyType = \"Scheduler\"\nName = \"s2\"\nMachine = \"s2.example.org\"\n",
            "TotalRunningJobs = 0\nTotalIdleJobs = 100\nTotalHeldJobs = 0\n",
        ));
        let expected = "\
Name               Machine            RunningJobs   IdleJobs   HeldJobs

submit.example.org submit.example.org          12          3          1
s2                 s2.example.org               0        100          0

                TotalRunningJobs      TotalIdleJobs      TotalHeldJobs



         Total                12                103                  1
";
        assert_eq!(format_schedds(&[a, b], NOW), expected);
        assert_eq!(format_default("SCHEDD", &[], NOW), "");
    }

    #[test]
    fn submitter_table() {
        let a = ad(concat!(
            "Name = \"alice@example.org\"\nMachine = \"s1\"\n",
            "RunningJobs = 2\nIdleJobs = 5\nHeldJobs = 0\n",
        ));
        let b = ad(concat!(
            "Name = \"bob@example.org\"\nMachine = \"s1\"\n",
            "RunningJobs = 1\nIdleJobs = 0\nHeldJobs = 4\n",
        ));
        let expected = "\
Name              Machine RunningJobs   IdleJobs   HeldJobs

alice@example.org s1                2          5          0
bob@example.org   s1                1          0          4

                 RunningJobs   IdleJobs   HeldJobs

alice@example.org          2          5          0
  bob@example.org          1          0          4

            Total          3          5          4
";
        assert_eq!(format_default("Submitter", &[a, b], NOW), expected);
    }

    #[test]
    fn master_table() {
        let a = ad(concat!(
            "MyType = \"DaemonMaster\"\nName = \"cm.example.org\"\n",
            "CondorVersion = \"$CondorVersion: 24.0.1 2024-10-31 BuildID: 1 $\"\n",
            "DetectedCpus = 8\nDetectedMemory = 15865\n",
            "DaemonStartTime = 1699900000\n",
        ));
        let expected = "\
Name           Version        Cpus   Memory      Uptime

cm.example.org 24.0.1            8   15.49 GB    1+03:46:40
";
        assert_eq!(format_default("Master", &[a], NOW), expected);
    }

    #[test]
    fn any_table() {
        let ads = [
            ad("MyType = \"Collector\"\nName = \"Pool@cm\"\n"),
            ad("MyType = \"Machine\"\nTargetType = \"Job\"\nName = \"slot1@e\"\n"),
            ad("Name = \"untyped\"\n"),
        ];
        let expected = "\
MyType             TargetType         Name

Collector          None               Pool@cm
Machine            Job                slot1@e
None               None               untyped
";
        assert_eq!(format_any(&ads, NOW), expected);
        assert_eq!(format_default("Negotiator", &ads, NOW), expected);
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0+00:00:00");
        assert_eq!(duration(59), "0+00:00:59");
        assert_eq!(duration(86_399), "0+23:59:59");
        assert_eq!(duration(86_400 * 123 + 1), "123+00:00:01");
        assert_eq!(duration(-5), "0+00:00:00");
    }

    #[test]
    fn state_table_shows_times_in_state_and_activity() {
        let ad = classad::parse_ad(
            "[ Name = \"slot1@h\"; Cpus = 1; Memory = 512; LoadAvg = 0.25; KeyboardIdle = 3700; \
               State = \"Claimed\"; EnteredCurrentState = 900; Activity = \"Suspended\"; \
               EnteredCurrentActivity = 990 ]",
        )
        .unwrap();
        let out = format_state(&[ad], 1000);
        let mut lines = out.lines();
        let head = lines.next().unwrap();
        for h in [
            "Name",
            "Cpu",
            "Mem",
            "LoadAv",
            "KbdIdle",
            "State",
            "StateTime",
            "Activ",
            "ActvtyTime",
        ] {
            assert!(head.contains(h), "{head}");
        }
        assert_eq!(lines.next(), Some(""));
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            row,
            [
                "slot1@h",
                "1",
                "512",
                "0.250",
                "0+01:01:40",
                "Claimed",
                "0+00:01:40",
                "Suspen",
                "0+00:00:10"
            ]
        );
    }
}
