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
//! - `-af`, `-l` and `-json` are `ad_output.rs`, shared with `skua q` and
//!   `skua history`.
//!
//! The tables are built with `table.rs` (its column rules): text columns
//! are left-justified and numbers right-justified. An
//! attribute that is missing or of the wrong type shows as `??`. The input
//! order of the ads is kept: sorting is the caller's.

use std::collections::BTreeMap;

use classad::{ClassAd, EvalOptions, Evaluator, Value};

use crate::table::{col, col_joined, duration, render_totals, width, Align, Column, Table};

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

    /// An integer attribute as a table cell: blank when missing.
    fn count(&mut self, ad: &ClassAd, name: &str) -> String {
        self.int(ad, name)
            .map(|i| i.to_string())
            .unwrap_or_default()
    }
}

const MISSING: &str = "??";

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
    let mut table = Table::new([
        col("Name", 18, Align::Left),
        col("OpSys", 10, Align::Left),
        col("Arch", 6, Align::Left),
        col("State", 9, Align::Left),
        col("Activity", 8, Align::Left),
        col("LoadAv", 6, Align::Right),
        col("Mem", 4, Align::Right),
        col_joined("  ActvtyTime", 12, Align::Right),
    ]);
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
        table.row(vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.string(ad, "OpSys")),
            or_missing(ev.string(ad, "Arch")),
            or_missing(ev.string(ad, "State")),
            or_missing(ev.string(ad, "Activity")),
            or_missing(load),
            or_missing(ev.int(ad, "Memory").map(|m| m.to_string())),
            activity_time,
        ]);
    }
    let mut out = table.to_text();
    out.push('\n');
    out.push_str(&machine_totals(ads, now));
    out
}

/// The `Arch/OpSys` key of a slot's totals row.
fn platform_key(ev: &mut Eval, ad: &ClassAd) -> Option<String> {
    let (arch, opsys) = (ev.string(ad, "Arch")?, ev.string(ad, "OpSys")?);
    Some(format!("{arch}/{opsys}"))
}

/// The totals by state of slot ads, keyed by `key` (a slot without a key
/// or a known State is counted as left out), rendered as condor_status
/// does; `-total` prints only this. No ads, no output.
fn state_totals(
    ads: &[ClassAd],
    now: i64,
    mut key: impl FnMut(&mut Eval, &ClassAd) -> Option<String>,
) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let mut keys: BTreeMap<String, [u64; 9]> = BTreeMap::new();
    let mut total = [0u64; 9];
    let mut malformed = 0usize;
    for ad in ads {
        let Some(k) = key(&mut ev, ad) else {
            malformed += 1;
            continue;
        };
        let row = keys.entry(k).or_default();
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

/// The totals that end the slot table, by Arch/OpSys (what `-total`
/// prints alone).
pub fn machine_totals(ads: &[ClassAd], now: i64) -> String {
    state_totals(ads, now, platform_key)
}

/// `-claimed` (and `-run`): the claimed slots with who runs on them (Name,
/// OpSys, Arch, LoadAv, RemoteUser, ClientMachine), then their totals by
/// Arch/OpSys (Machines, MIPS, KFLOPS, AvgLoadAvg). No ads, no output.
pub fn format_claimed(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let mut table = Table::new([
        col("Name", 18, Align::Left),
        col("OpSys", 10, Align::Left),
        col("Arch", 6, Align::Left),
        col("LoadAv", 6, Align::Right),
        col("RemoteUser", 20, Align::Left),
        col("ClientMachine", 0, Align::Left),
    ]);
    for ad in ads {
        table.row(vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.string(ad, "OpSys")),
            or_missing(ev.string(ad, "Arch")),
            or_missing(ev.real(ad, "LoadAvg").map(|l| format!("{l:.3}"))),
            or_missing(ev.string(ad, "RemoteUser")),
            or_missing(ev.string(ad, "ClientMachine")),
        ]);
    }
    let mut out = table.to_text();
    out.push('\n');
    out.push_str(&claimed_totals(ads, now));
    out
}

/// The totals of `-claimed`: per Arch/OpSys the slots, their MIPS and
/// KFLOPS summed and their mean LoadAvg.
pub fn claimed_totals(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    // (slots, mips, kflops, load sum)
    let mut keys: BTreeMap<String, (u64, i64, i64, f64)> = BTreeMap::new();
    let mut total = (0u64, 0i64, 0i64, 0f64);
    for ad in ads {
        let Some(k) = platform_key(&mut ev, ad) else {
            continue;
        };
        let mips = ev.int(ad, "Mips").unwrap_or(0);
        let kflops = ev.int(ad, "KFlops").unwrap_or(0);
        let load = ev.real(ad, "LoadAvg").unwrap_or(0.0);
        for t in [keys.entry(k).or_default(), &mut total] {
            t.0 += 1;
            t.1 += mips;
            t.2 += kflops;
            t.3 += load;
        }
    }
    let key_width = keys.keys().map(|k| width(k)).max().unwrap_or(0).max(14);
    let line = |key: &str, t: &(u64, i64, i64, f64)| {
        let avg = if t.0 > 0 { t.3 / t.0 as f64 } else { 0.0 };
        format!(
            "{key:>key_width$} {:>9}  {:>11}  {:>11}   {avg:.3}\n",
            t.0, t.1, t.2
        )
    };
    let mut out = format!(
        "{:key_width$} {:>9}  {:>11}  {:>11}  {:>11}\n\n",
        "", "Machines", "MIPS", "KFLOPS", "AvgLoadAvg"
    );
    for (k, t) in &keys {
        out.push_str(&line(k, t));
    }
    out.push('\n');
    out.push_str(&line("Total", &total));
    out
}

/// The slot ads `-compact` shows, grouped by machine: a machine's row
/// sums its partitionable and static slots and rolls up its dynamic ones.
#[derive(Default)]
struct CompactRow {
    machine: String,
    platform: String,
    job_slots: u64,
    cpus: f64,
    gpus: f64,
    total_mb: f64,
    free_cpus: f64,
    free_mb: f64,
    load: Option<(f64, f64)>,
    states: Vec<(String, String)>,
    own_state: Option<(String, String)>,
    job_starts: f64,
    max_slot_mb: Option<f64>,
}

/// HTCondor's one-letter codes of a state and of an activity (`#` when
/// unknown).
fn state_code(state: &str) -> char {
    match state.to_ascii_lowercase().as_str() {
        "owner" => 'O',
        "unclaimed" => 'U',
        "matched" => 'M',
        "claimed" => 'C',
        "preempting" => 'P',
        "drained" => 'D',
        "backfill" => 'B',
        _ => '#',
    }
}

fn activity_code(activity: &str) -> char {
    match activity.to_ascii_lowercase().as_str() {
        "idle" => 'i',
        "busy" => 'b',
        "retiring" => 'r',
        "vacating" => 'v',
        "suspended" => 's',
        "killing" => 'k',
        "benchmarking" => 'e',
        _ => '#',
    }
}

/// The `ST` of a compact row: the state and activity codes its job slots
/// agree on, `#` for either where they differ (a Preempting slot makes
/// the state `P`).
fn consensus(states: &[(String, String)]) -> String {
    let pick = |codes: Vec<char>, wins: Option<char>| -> char {
        if wins.is_some_and(|w| codes.contains(&w)) {
            return wins.unwrap_or('#');
        }
        match codes.first() {
            Some(&c) if codes.iter().all(|&x| x == c) => c,
            Some(_) => '#',
            None => '#',
        }
    };
    let s = pick(
        states.iter().map(|(s, _)| state_code(s)).collect(),
        Some('P'),
    );
    let a = pick(states.iter().map(|(_, a)| activity_code(a)).collect(), None);
    format!("{s}{a}")
}

/// The Platform column: short arch (`x64`, `x86`, else as advertised) and
/// OpSysAndVer (else OpSys).
fn compact_platform(ev: &mut Eval, ad: &ClassAd) -> String {
    let arch = match ev.string(ad, "Arch").as_deref() {
        Some("X86_64") => "x64".to_string(),
        Some("INTEL") => "x86".to_string(),
        Some(a) => a.to_string(),
        None => MISSING.to_string(),
    };
    let os = ev
        .string(ad, "OpSysAndVer")
        .or_else(|| ev.string(ad, "OpSys"))
        .unwrap_or_else(|| MISSING.to_string());
    format!("{arch}/{os}")
}

fn compact_rows(ads: &[ClassAd], now: i64) -> Vec<CompactRow> {
    let mut ev = Eval::new(now);
    let mut rows: Vec<CompactRow> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for ad in ads {
        let machine = ev
            .string(ad, "Machine")
            .or_else(|| ev.string(ad, "Name"))
            .unwrap_or_else(|| MISSING.to_string());
        let i = *index.entry(machine.clone()).or_insert_with(|| {
            rows.push(CompactRow {
                machine: machine.clone(),
                ..CompactRow::default()
            });
            rows.len() - 1
        });
        let platform = compact_platform(&mut ev, ad);
        let r = &mut rows[i];
        r.platform = platform;
        let partitionable = ev.is_true(ad, "PartitionableSlot");
        let dynamic = ev.is_true(ad, "DynamicSlot");
        let cpus = ev.real(ad, "Cpus").unwrap_or(0.0);
        let mem = ev.real(ad, "Memory").unwrap_or(0.0);
        let state = ev.string(ad, "State").unwrap_or_default();
        let activity = ev.string(ad, "Activity").unwrap_or_default();
        if r.load.is_none() {
            if let (Some(l), Some(c)) = (ev.real(ad, "TotalLoadAvg"), ev.real(ad, "TotalCpus")) {
                r.load = Some((l, c));
            }
        }
        r.job_starts += ev.real(ad, "RecentJobStarts").unwrap_or(0.0);
        if !dynamic {
            r.cpus += ev.real(ad, "TotalSlotCpus").unwrap_or(cpus);
            r.gpus += ev
                .real(ad, "TotalSlotGPUs")
                .or_else(|| ev.real(ad, "GPUs"))
                .unwrap_or(0.0);
            r.total_mb += ev.real(ad, "TotalSlotMemory").unwrap_or(mem);
        }
        if partitionable {
            r.free_cpus += cpus;
            r.free_mb += mem;
            r.own_state = Some((state, activity));
            continue;
        }
        r.job_slots += 1;
        if state.eq_ignore_ascii_case("Unclaimed") {
            r.free_cpus += cpus;
            r.free_mb += mem;
        }
        r.max_slot_mb = Some(r.max_slot_mb.map_or(mem, |m: f64| m.max(mem)));
        r.states.push((state, activity));
    }
    rows
}

/// `-compact`: one row per machine (Machine, Platform, Slots, Cpus, Gpus,
/// TotalGb, FreCpu, FreeGb, CpuLoad, ST, Jobs/Min, MaxSlotGb), then the
/// totals by Platform. No ads, no output.
pub fn format_compact(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let gb = |mb: f64| format!("{:.2}", mb / 1024.0);
    let mut table = Table::new([
        col("Machine", 18, Align::Left),
        col("Platform", 10, Align::Left),
        col("Slots", 5, Align::Right),
        col("Cpus", 4, Align::Right),
        col("Gpus", 4, Align::Right),
        col("TotalGb", 7, Align::Right),
        col("FreCpu", 6, Align::Right),
        col(" FreeGb", 7, Align::Right),
        col("CpuLoad", 7, Align::Right),
        col("ST", 2, Align::Left),
        col("Jobs/Min", 8, Align::Right),
        col("MaxSlotGb", 9, Align::Right),
    ]);
    for r in compact_rows(ads, now) {
        let st = if r.states.is_empty() {
            r.own_state
                .as_ref()
                .map(|s| consensus(std::slice::from_ref(s)))
                .unwrap_or_else(|| "##".into())
        } else {
            consensus(&r.states)
        };
        table.row(vec![
            r.machine,
            r.platform,
            r.job_slots.to_string(),
            format!("{}", r.cpus.round() as i64),
            format!("{}", r.gpus.round() as i64),
            gb(r.total_mb),
            format!("{}", r.free_cpus.round() as i64),
            gb(r.free_mb),
            r.load
                .map(|(l, c)| format!("{:.2}", if c > 0.0 { l / c } else { 0.0 }))
                .unwrap_or_else(|| MISSING.to_string()),
            st,
            format!("{:.2}", r.job_starts / 20.0),
            r.max_slot_mb.map(gb).unwrap_or_else(|| "*".into()),
        ]);
    }
    let mut out = table.to_text();
    out.push('\n');
    out.push_str(&compact_totals(ads, now));
    out
}

/// The totals of `-compact`: by Platform, every static and dynamic slot by
/// its state, and a partitionable slot with CPUs left as one Unclaimed
/// slot.
pub fn compact_totals(ads: &[ClassAd], now: i64) -> String {
    let mut ev = Eval::new(now);
    let counted: Vec<ClassAd> = ads
        .iter()
        .filter(|ad| {
            !ev.is_true(ad, "PartitionableSlot") || ev.real(ad, "Cpus").unwrap_or(0.0) > 0.0
        })
        .cloned()
        .collect();
    state_totals(&counted, now, compact_platform_key)
}

fn compact_platform_key(ev: &mut Eval, ad: &ClassAd) -> Option<String> {
    Some(compact_platform(ev, ad))
}

// ----------------------------------------------------------------------
// Tables for other ad types

/// The columns of `-schedd` and `-submitters`.
const JOB_COUNT_COLS: [Column; 5] = [
    col("Name", 0, Align::Left),
    col("Machine", 0, Align::Left),
    col("RunningJobs", 11, Align::Right),
    col("  IdleJobs", 10, Align::Right),
    col("  HeldJobs", 10, Align::Right),
];

/// A `-schedd` / `-submitters` row: Name, Machine and the three counts
/// (blank when missing).
fn job_count_row(ev: &mut Eval, ad: &ClassAd, counts: &[&str; 3]) -> Vec<String> {
    let mut row = vec![
        or_missing(ev.string(ad, "Name")),
        or_missing(ev.string(ad, "Machine")),
    ];
    row.extend(counts.iter().map(|n| ev.count(ad, n)));
    row
}

/// The table of `ads` with these columns, one row per ad; no ads, no
/// output.
fn ad_table(
    ads: &[ClassAd],
    now: i64,
    cols: impl Into<Vec<Column>>,
    mut row: impl FnMut(&mut Eval, &ClassAd) -> Vec<String>,
) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let mut table = Table::new(cols);
    for ad in ads {
        table.row(row(&mut ev, ad));
    }
    table.to_text()
}

/// `-schedd`: Name, Machine, running/idle/held jobs, then their totals.
pub fn format_schedds(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let mut table = Table::new(JOB_COUNT_COLS);
    let counts = ["TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"];
    for ad in ads {
        table.row(job_count_row(&mut ev, ad, &counts));
    }
    let mut out = table.to_text();
    out.push('\n');
    out.push_str(&schedd_totals(ads, now));
    out
}

/// The totals of `-schedd` (what `-schedd -total` prints alone).
pub fn schedd_totals(ads: &[ClassAd], now: i64) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let mut ev = Eval::new(now);
    let counts = ["TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"];
    let mut total = [0u64; 3];
    for ad in ads {
        for (t, name) in total.iter_mut().zip(counts) {
            *t += ev.int(ad, name).unwrap_or(0).max(0) as u64;
        }
    }
    let mut out = String::new();
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
    let mut table = Table::new(JOB_COUNT_COLS);
    let counts = ["RunningJobs", "IdleJobs", "HeldJobs"];
    let mut keys: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let mut total = [0u64; 3];
    for ad in ads {
        table.row(job_count_row(&mut ev, ad, &counts));
        if let Some(name) = ev.string(ad, "Name") {
            let per = keys.entry(name).or_default();
            for (i, n) in counts.iter().enumerate() {
                let v = ev.int(ad, n).unwrap_or(0).max(0) as u64;
                per[i] += v;
                total[i] += v;
            }
        }
    }
    let mut out = table.to_text();
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
    let cols = [
        col("Name", 0, Align::Left),
        col("Version", 14, Align::Left),
        col("Cpus", 4, Align::Right),
        col("  Memory", 10, Align::Right),
        col("   Uptime", 13, Align::Right),
    ];
    ad_table(ads, now, cols, |ev, ad| {
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
}

/// `-collector`: Name, Machine, the pool's running and idle jobs (when
/// the ad carries them) and how many slots it holds.
pub fn format_collectors(ads: &[ClassAd], now: i64) -> String {
    let cols = [
        col("Name", 0, Align::Left),
        col("Machine", 0, Align::Left),
        col("RunningJobs", 11, Align::Right),
        col("  IdleJobs", 10, Align::Right),
        col("HostsTotal", 10, Align::Right),
    ];
    ad_table(ads, now, cols, |ev, ad| {
        vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.string(ad, "Machine")),
            ev.count(ad, "RunningJobs"),
            ev.count(ad, "IdleJobs"),
            ev.count(ad, "HostsTotal"),
        ]
    })
}

/// `-negotiator`: Name, Machine and the figures of the last cycle (its
/// end in local time, seconds, candidate slots, submitters, schedds, idle
/// jobs, matches, rejections).
pub fn format_negotiators(ads: &[ClassAd], now: i64, utc_offset: i64) -> String {
    let cols = [
        col("Name", 0, Align::Left),
        col("Machine", 0, Align::Left),
        col("LastCycleEnd", 12, Align::Left),
        col("(Sec)", 5, Align::Right),
        col("  Slots", 7, Align::Right),
        col("Submitrs", 8, Align::Right),
        col("Schedds", 7, Align::Right),
        col("   Jobs", 7, Align::Right),
        col("Matches", 7, Align::Right),
        col("Rejections", 10, Align::Right),
    ];
    ad_table(ads, now, cols, |ev, ad| {
        vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.string(ad, "Machine")),
            ev.int(ad, "LastNegotiationCycleEnd0")
                .map(|t| crate::q_fmt::short_date(t, utc_offset))
                .unwrap_or_default(),
            ev.real(ad, "LastNegotiationCycleDuration0")
                .map(|d| format!("{}", d.round() as i64))
                .unwrap_or_default(),
            ev.count(ad, "LastNegotiationCycleCandidateSlots0"),
            ev.count(ad, "LastNegotiationCycleActiveSubmitterCount0"),
            ev.count(ad, "LastNegotiationCycleNumSchedulers0"),
            ev.count(ad, "LastNegotiationCycleNumIdleJobs0"),
            ev.count(ad, "LastNegotiationCycleMatches0"),
            ev.count(ad, "LastNegotiationCycleRejections0"),
        ]
    })
}

/// `-any`: MyType, TargetType and Name of every ad.
pub fn format_any(ads: &[ClassAd], now: i64) -> String {
    let cols = [
        col("MyType", 18, Align::Left),
        col("TargetType", 18, Align::Left),
        col("Name", 0, Align::Left),
    ];
    ad_table(ads, now, cols, |ev, ad| {
        vec![
            ev.string(ad, "MyType").unwrap_or_else(|| "None".into()),
            ev.string(ad, "TargetType").unwrap_or_else(|| "None".into()),
            or_missing(ev.string(ad, "Name")),
        ]
    })
}

/// The default table for ads of `ad_type` (HTCondor's MyType or a usual
/// alias, any case): slots, schedds, submitters and masters have their own
/// tables (negotiators' dates in UTC here; see [`format_negotiators`]);
/// every other type gets the `-any` table.
pub fn format_default(ad_type: &str, ads: &[ClassAd], now: i64) -> String {
    match ad_type.to_ascii_lowercase().as_str() {
        "collector" => format_collectors(ads, now),
        "negotiator" => format_negotiators(ads, now, 0),
        "machine" | "startd" | "slot" => format_machines(ads, now),
        "scheduler" | "schedd" => format_schedds(ads, now),
        "submitter" | "submittor" => format_submitters(ads, now),
        "daemonmaster" | "master" => format_masters(ads, now),
        _ => format_any(ads, now),
    }
}

/// `-state`: condor_status -state's slot table (Name, Cpu, Mem, LoadAv,
/// KbdIdle, State, StateTime, Activ, ActvtyTime).
pub fn format_state(ads: &[ClassAd], now: i64) -> String {
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
        None => MISSING.to_string(),
    };
    ad_table(ads, now, cols, |ev, ad| {
        let load = ev.real(ad, "LoadAvg").map(|l| format!("{l:.3}"));
        let activity = ev.string(ad, "Activity").map(|mut a| {
            a.truncate(6);
            a
        });
        vec![
            or_missing(ev.string(ad, "Name")),
            or_missing(ev.int(ad, "Cpus").map(|c| c.to_string())),
            or_missing(ev.int(ad, "Memory").map(|m| m.to_string())),
            or_missing(load),
            or_missing(ev.int(ad, "KeyboardIdle").map(duration)),
            or_missing(ev.string(ad, "State")),
            since(ev, ad, "EnteredCurrentState"),
            or_missing(activity),
            since(ev, ad, "EnteredCurrentActivity"),
        ]
    })
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
        assert_eq!(format_default("Grid", &ads, NOW), expected);
    }

    #[test]
    fn collector_table_lists_each_pools_collector() {
        let ads = [
            ad(concat!(
                "MyType = \"Collector\"\nName = \"Pool A@cm.a.test\"\n",
                "Machine = \"cm.a.test\"\nHostsTotal = 16\n",
            )),
            ad(concat!(
                "MyType = \"Collector\"\nName = \"Pool B@cm.b.test\"\n",
                "Machine = \"cm.b.test\"\nRunningJobs = 3\nIdleJobs = 4\nHostsTotal = 2\n",
            )),
        ];
        let expected = "\
Name             Machine   RunningJobs   IdleJobs HostsTotal

Pool A@cm.a.test cm.a.test                                16
Pool B@cm.b.test cm.b.test           3          4          2
";
        assert_eq!(format_default("Collector", &ads, NOW), expected);
    }

    #[test]
    fn negotiator_table_shows_the_last_cycle() {
        let a = ad(concat!(
            "MyType = \"Negotiator\"\nName = \"cm.a.test\"\nMachine = \"cm.a.test\"\n",
            "LastNegotiationCycleEnd0 = 1700000000\nLastNegotiationCycleDuration0 = 1.6\n",
            "LastNegotiationCycleCandidateSlots0 = 16\n",
            "LastNegotiationCycleActiveSubmitterCount0 = 2\n",
            "LastNegotiationCycleNumIdleJobs0 = 40\nLastNegotiationCycleMatches0 = 16\n",
            "LastNegotiationCycleRejections0 = 24\n",
        ));
        let out = format_negotiators(&[a], NOW, 3600);
        let mut lines = out.lines();
        let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            head,
            [
                "Name",
                "Machine",
                "LastCycleEnd",
                "(Sec)",
                "Slots",
                "Submitrs",
                "Schedds",
                "Jobs",
                "Matches",
                "Rejections"
            ]
        );
        assert_eq!(lines.next(), Some(""));
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        // 1700000000 is 11/14 22:13 UTC; one hour east
        assert_eq!(
            row,
            [
                "cm.a.test",
                "cm.a.test",
                "11/14",
                "23:13",
                "2",
                "16",
                "2",
                "40",
                "16",
                "24"
            ]
        );
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

    fn claimed_slot(name: &str, user: &str, load: f64) -> ClassAd {
        let mut a = slot(name, "Claimed", "Busy", load, 1024, 60);
        a.insert_value("RemoteUser", user);
        a.insert_value("ClientMachine", "submit.test");
        a.insert_value("Mips", 1000_i64);
        a.insert_value("KFlops", 200_i64);
        a
    }

    #[test]
    fn totals_alone_are_the_end_of_the_slot_table() {
        let ads = [
            slot("a1", "Claimed", "Busy", 1.0, 100, 0),
            slot("a2", "Unclaimed", "Idle", 0.0, 100, 0),
        ];
        let full = format_machines(&ads, NOW);
        let totals = machine_totals(&ads, NOW);
        assert!(full.ends_with(&format!("\n\n{totals}")), "{full}");
        assert_eq!(
            totals,
            "               Total Owner Claimed Unclaimed Matched Preempting  Drain

  X86_64/LINUX     2     0       1         1       0          0      0

         Total     2     0       1         1       0          0      0
"
        );
        assert_eq!(machine_totals(&[], NOW), "");
    }

    #[test]
    fn claimed_table_shows_who_runs_where_and_run_totals() {
        let ads = [
            claimed_slot("slot1@e1", "alice@test", 1.0),
            claimed_slot("slot2@e1", "bob@test", 0.5),
        ];
        let expected = "\
Name     OpSys Arch   LoadAv RemoteUser           ClientMachine

slot1@e1 LINUX X86_64  1.000 alice@test           submit.test
slot2@e1 LINUX X86_64  0.500 bob@test             submit.test

                Machines         MIPS       KFLOPS   AvgLoadAvg

  X86_64/LINUX         2         2000          400   0.750

         Total         2         2000          400   0.750
";
        let out = format_claimed(&ads, NOW);
        // the table's minimum widths make short names wider
        let head = out.lines().next().unwrap();
        assert!(
            head.starts_with("Name               OpSys      Arch   LoadAv RemoteUser"),
            "{head}"
        );
        let got_totals: Vec<&str> = out.lines().skip(5).collect();
        let want_totals: Vec<&str> = expected.lines().skip(5).collect();
        assert_eq!(got_totals, want_totals, "{out}");
        assert_eq!(
            claimed_totals(&ads, NOW),
            expected
                .lines()
                .skip(5)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
    }

    #[test]
    fn compact_rolls_dynamic_slots_into_their_machine() {
        let mut p = slot("slot1@e1", "Unclaimed", "Idle", 0.0, 2048, 0);
        p.insert_value("Machine", "e1");
        p.insert_value("PartitionableSlot", true);
        p.insert_value("Cpus", 2_i64);
        p.insert_value("TotalSlotCpus", 4_i64);
        p.insert_value("TotalSlotMemory", 4096_i64);
        p.insert_value("TotalLoadAvg", 2.0);
        p.insert_value("TotalCpus", 4_i64);
        p.insert_value("OpSysAndVer", "Ubuntu22");
        let dynamic = |n: &str, act: &str, mem: i64| {
            let mut d = slot(n, "Claimed", act, 1.0, mem, 0);
            d.insert_value("Machine", "e1");
            d.insert_value("DynamicSlot", true);
            d.insert_value("Cpus", 1_i64);
            d.insert_value("OpSysAndVer", "Ubuntu22");
            d
        };
        let mut s1 = slot("slot1@e2", "Unclaimed", "Idle", 0.0, 1024, 0);
        s1.insert_value("Machine", "e2");
        s1.insert_value("Cpus", 1_i64);
        s1.insert_value("TotalLoadAvg", 0.0);
        s1.insert_value("TotalCpus", 2_i64);
        let mut s2 = s1.clone();
        s2.insert_value("Name", "slot2@e2");
        let ads = [
            p,
            dynamic("slot1_1@e1", "Busy", 1024),
            dynamic("slot1_2@e1", "Retiring", 512),
            s1,
            s2,
        ];
        let out = format_compact(&ads, NOW);
        let lines: Vec<&str> = out.lines().collect();
        let head: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(
            head,
            [
                "Machine",
                "Platform",
                "Slots",
                "Cpus",
                "Gpus",
                "TotalGb",
                "FreCpu",
                "FreeGb",
                "CpuLoad",
                "ST",
                "Jobs/Min",
                "MaxSlotGb"
            ]
        );
        let row = |i: usize| -> Vec<&str> { lines[i].split_whitespace().collect() };
        assert_eq!(
            row(2),
            [
                "e1",
                "x64/Ubuntu22",
                "2",
                "4",
                "0",
                "4.00",
                "2",
                "2.00",
                "0.50",
                "C#",
                "0.00",
                "1.00"
            ]
        );
        assert_eq!(
            row(3),
            [
                "e2",
                "x64/LINUX",
                "2",
                "2",
                "0",
                "2.00",
                "2",
                "2.00",
                "0.00",
                "Ui",
                "0.00",
                "1.00"
            ]
        );
        // totals by platform: the two dynamic slots, the p-slot with CPUs
        // left as one Unclaimed, the two static slots
        let totals = &lines[5..];
        let cells = |l: &str| -> Vec<String> { l.split_whitespace().map(str::to_string).collect() };
        assert_eq!(
            cells(totals[2]),
            ["x64/LINUX", "2", "0", "0", "2", "0", "0", "0"]
        );
        assert_eq!(
            cells(totals[3]),
            ["x64/Ubuntu22", "3", "0", "2", "1", "0", "0", "0"]
        );
        assert_eq!(
            cells(totals[5]),
            ["Total", "5", "0", "2", "3", "0", "0", "0"]
        );
    }

    #[test]
    fn compact_state_codes_agree_or_hash() {
        let st = |v: &[(&str, &str)]| {
            consensus(
                &v.iter()
                    .map(|(s, a)| (s.to_string(), a.to_string()))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(st(&[("Claimed", "Busy"), ("Claimed", "Busy")]), "Cb");
        assert_eq!(st(&[("Claimed", "Busy"), ("Unclaimed", "Idle")]), "##");
        assert_eq!(st(&[("Claimed", "Busy"), ("Preempting", "Vacating")]), "P#");
        assert_eq!(st(&[("Drained", "Retiring")]), "Dr");
    }

    #[test]
    fn schedd_totals_alone() {
        let a = ad("Name = \"s\"\nMachine = \"s\"\nTotalRunningJobs = 1\nTotalIdleJobs = 2\nTotalHeldJobs = 3\n");
        let full = format_schedds(std::slice::from_ref(&a), NOW);
        let totals = schedd_totals(&[a], NOW);
        assert!(full.ends_with(&totals));
        assert!(
            totals
                .trim_end()
                .ends_with("Total                 1                  2                  3"),
            "{totals}"
        );
    }
}
