//! `skua q` and `skua history` output in condor_q's and condor_history's
//! layouts. Pure: ads, the current time and the local time zone's offset
//! come in as arguments.

use std::fmt::Write as _;

use classad::{ClassAd, Expr, Value};
use skua_proto::BatchRow;
use skua_types::JobStatus;

use crate::table::duration;

/// What the tool needs to know besides the ads.
#[derive(Clone, Debug)]
pub struct QContext {
    /// The schedd's name and address, for the header line.
    pub schedd_name: String,
    /// `<ip:port>`.
    pub schedd_addr: String,
    /// Now, Unix seconds.
    pub now: i64,
    /// Seconds east of UTC for local times.
    pub utc_offset: i64,
    /// The user running the tool (for the "Total for USER" line).
    pub user: String,
    /// Whether the query was limited to `user`'s jobs.
    pub only_mine: bool,
    /// The header's source instead of the schedd (`Userlog: FILE`,
    /// `Jobads: FILE`), printed without a time.
    pub label: Option<String>,
}

fn lit<'a>(ad: &'a ClassAd, name: &str) -> Option<&'a Value> {
    match ad.lookup(name) {
        Some(Expr::Lit(v)) => Some(v),
        _ => None,
    }
}

fn int(ad: &ClassAd, name: &str) -> Option<i64> {
    lit(ad, name).and_then(|v| v.as_int().or_else(|| v.as_real().map(|r| r as i64)))
}

fn real(ad: &ClassAd, name: &str) -> Option<f64> {
    lit(ad, name).and_then(|v| v.as_real().or_else(|| v.as_int().map(|i| i as f64)))
}

fn string(ad: &ClassAd, name: &str) -> Option<String> {
    lit(ad, name).and_then(|v| v.as_string())
}

fn status(ad: &ClassAd) -> Option<JobStatus> {
    int(ad, "JobStatus").and_then(JobStatus::from_code)
}

fn job_id(ad: &ClassAd) -> (i64, i64) {
    (
        int(ad, "ClusterId").unwrap_or(0),
        int(ad, "ProcId").unwrap_or(0),
    )
}

/// The owner, `??` when the ad has none (a queue read from a user log).
fn owner(ad: &ClassAd) -> String {
    string(ad, "Owner").unwrap_or_else(|| "??".into())
}

/// `MM/DD HH:MM` in local time.
pub fn short_date(t: i64, utc_offset: i64) -> String {
    let (_, mo, d, h, mi, _) = civil(t + utc_offset);
    format!("{mo:02}/{d:02} {h:02}:{mi:02}")
}

/// `MM/DD/YY HH:MM:SS` in local time.
fn long_date(t: i64, utc_offset: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(t + utc_offset);
    format!(
        "{mo:02}/{d:02}/{:02} {h:02}:{mi:02}:{s:02}",
        y.rem_euclid(100)
    )
}

/// Unix seconds to (year, month, day, hour, minute, second).
fn civil(t: i64) -> (i64, u32, u32, u32, u32, u32) {
    let tm = classad::time::broken_down(t, 0);
    (tm.year, tm.mon + 1, tm.mday, tm.hour, tm.min, tm.sec)
}

/// Wall-clock time of all runs so far, including the current one.
fn run_time(ad: &ClassAd, now: i64) -> i64 {
    let past = real(ad, "RemoteWallClockTime").unwrap_or(0.0) as i64;
    let current = match (status(ad), int(ad, "JobCurrentStartDate")) {
        (Some(JobStatus::Running), Some(start)) if start > 0 => now - start,
        _ => 0,
    };
    past + current
}

fn cmd_line(ad: &ClassAd) -> String {
    let cmd = string(ad, "Cmd").unwrap_or_default();
    let base = cmd.rsplit('/').next().unwrap_or(&cmd).to_string();
    let args = string(ad, "Args")
        .or_else(|| string(ad, "Arguments"))
        .unwrap_or_default();
    if args.is_empty() {
        base
    } else {
        format!("{base} {args}")
    }
}

pub fn header(ctx: &QContext) -> String {
    if let Some(label) = &ctx.label {
        return format!("\n\n-- {label}\n");
    }
    format!(
        "\n\n-- Schedd: {} : {} @ {}\n",
        ctx.schedd_name,
        ctx.schedd_addr,
        long_date(ctx.now, ctx.utc_offset)
    )
}

/// Counts by state, as the totals lines print them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub jobs: u64,
    pub completed: u64,
    pub removed: u64,
    pub idle: u64,
    pub running: u64,
    pub held: u64,
    pub suspended: u64,
}

impl Totals {
    /// Counts the ads.
    pub fn of<'a>(ads: impl IntoIterator<Item = &'a ClassAd>) -> Totals {
        let mut t = Totals::default();
        for ad in ads {
            t.jobs += 1;
            match status(ad) {
                Some(JobStatus::Idle) => t.idle += 1,
                Some(JobStatus::Running | JobStatus::TransferringOutput) => t.running += 1,
                Some(JobStatus::Removed) => t.removed += 1,
                Some(JobStatus::Completed) => t.completed += 1,
                Some(JobStatus::Held) => t.held += 1,
                Some(JobStatus::Suspended) => t.suspended += 1,
                None => {}
            }
        }
        t
    }

    /// Sums the batch rows.
    pub fn of_batches(rows: &[BatchRow]) -> Totals {
        let mut t = Totals::default();
        for b in rows {
            t.jobs += b.idle + b.running + b.held + b.suspended + b.removed + b.completed;
            t.idle += b.idle;
            t.running += b.running;
            t.held += b.held;
            t.suspended += b.suspended;
            t.removed += b.removed;
            t.completed += b.completed;
        }
        t
    }

    fn line(&self, who: &str) -> String {
        format!(
            "Total for {who}: {} jobs; {} completed, {} removed, {} idle, {} running, {} held, {} suspended\n",
            self.jobs, self.completed, self.removed, self.idle, self.running, self.held, self.suspended
        )
    }
}

fn totals_block(ads: &[ClassAd], all: Option<&Totals>, ctx: &QContext) -> String {
    totals_lines(&Totals::of(ads), all, ctx)
}

/// The totals lines after a table (`-totals` prints only these).
pub fn totals_lines(query: &Totals, all: Option<&Totals>, ctx: &QContext) -> String {
    let mut out = String::from("\n");
    out.push_str(&query.line("query"));
    if ctx.only_mine {
        out.push_str(&query.line(&ctx.user));
    }
    if let Some(all) = all {
        out.push_str(&all.line("all users"));
    }
    out
}

/// The ids of a batch: `5.0`, `5.0-9`, or `5.0 ... 7.3`.
pub(crate) fn id_range(ids: &[(i64, i64)]) -> String {
    match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if a == b => format!("{}.{}", a.0, a.1),
        (Some(a), Some(b)) if a.0 == b.0 => format!("{}.{}-{}", a.0, a.1, b.1),
        (Some(a), Some(b)) => format!("{}.{} ... {}.{}", a.0, a.1, b.0, b.1),
        _ => String::new(),
    }
}

fn dash_zero(n: u64) -> String {
    if n == 0 {
        "_".into()
    } else {
        n.to_string()
    }
}

/// The default view: one line per batch (the `JobBatchName`, else the
/// cluster) and owner, as the schedd summarized them.
pub fn format_batches(rows: &[BatchRow], all: Option<&Totals>, ctx: &QContext) -> String {
    let any_held = rows.iter().any(|b| b.held > 0);
    let mut out = header(ctx);
    let _ = write!(
        out,
        "{:<14} {:<14} {:>11} {:>6} {:>6} {:>6}",
        "OWNER", "BATCH_NAME", "SUBMITTED", "DONE", "RUN", "IDLE"
    );
    if any_held {
        let _ = write!(out, " {:>6}", "HOLD");
    }
    let _ = writeln!(out, " {:>6} JOB_IDS", "TOTAL");
    let query = Totals::of_batches(rows);
    for b in rows {
        let jobs = b.idle + b.running + b.held + b.suspended + b.removed + b.completed;
        let _ = write!(
            out,
            "{:<14} {:<14} {:>11} {:>6} {:>6} {:>6}",
            b.owner,
            b.name,
            short_date(b.submitted, ctx.utc_offset),
            dash_zero(b.done),
            dash_zero(b.running),
            dash_zero(b.idle),
        );
        if any_held {
            let _ = write!(out, " {:>6}", dash_zero(b.held));
        }
        let mut ids = vec![(i64::from(b.first.0), i64::from(b.first.1))];
        if b.last != b.first {
            ids.push((i64::from(b.last.0), i64::from(b.last.1)));
        }
        let _ = writeln!(out, " {:>6} {}", jobs + b.done, id_range(&ids));
    }
    out.push_str(&totals_lines(&query, all, ctx));
    out
}

fn sorted(ads: &[ClassAd]) -> Vec<&ClassAd> {
    let mut v: Vec<&ClassAd> = ads.iter().collect();
    v.sort_by_key(|a| job_id(a));
    v
}

/// `-nobatch`: one line per job.
pub fn format_jobs(ads: &[ClassAd], all: Option<&Totals>, ctx: &QContext) -> String {
    let mut out = header(ctx);
    out.push_str(" ID        OWNER            SUBMITTED     RUN_TIME ST PRI SIZE    CMD\n");
    for ad in sorted(ads) {
        let (c, p) = job_id(ad);
        let st = status_letter(status(ad));
        let size = real(ad, "ImageSize").unwrap_or(0.0) / 1024.0;
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<14} {:>11} {:>12} {:<2} {:<3} {:<7.1} {}",
            c,
            p,
            owner(ad),
            short_date(int(ad, "QDate").unwrap_or(0), ctx.utc_offset),
            duration(run_time(ad, ctx.now)),
            st,
            int(ad, "JobPrio").unwrap_or(0),
            size,
            cmd_line(ad)
        );
    }
    out.push_str(&totals_block(ads, all, ctx));
    out
}

/// `-hold`: held jobs with when and why.
pub fn format_held(ads: &[ClassAd], all: Option<&Totals>, ctx: &QContext) -> String {
    let mut out = header(ctx);
    out.push_str(" ID        OWNER           HELD_SINCE  CODE  SUB HOLD_REASON\n");
    for ad in sorted(ads)
        .into_iter()
        .filter(|a| status(a) == Some(JobStatus::Held))
    {
        let (c, p) = job_id(ad);
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<14} {:>11} {:>5} {:>4} {}",
            c,
            p,
            owner(ad),
            short_date(int(ad, "EnteredCurrentStatus").unwrap_or(0), ctx.utc_offset),
            int(ad, "HoldReasonCode").unwrap_or(0),
            int(ad, "HoldReasonSubCode").unwrap_or(0),
            string(ad, "HoldReason").unwrap_or_default()
        );
    }
    out.push_str(&totals_block(ads, all, ctx));
    out
}

/// A byte count as condor_q's `-io` shows it (`40.0 MB`).
fn metric_units(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B ", "KB", "MB", "GB", "TB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

fn flag(ad: &ClassAd, name: &str) -> bool {
    matches!(lit(ad, name), Some(Value::Bool(true)))
}

/// `-io`: the jobs transferring files (or waiting in the transfer
/// queue), with the bytes they received (`BytesRecvd`, their input) and
/// sent (`BytesSent`, their output), as condor_q's: `ST` is `<` for input,
/// `>` for output, `<q`/`q>` while queued; `MISC` says which.
pub fn format_io(ads: &[ClassAd], all: Option<&Totals>, ctx: &QContext) -> String {
    let mut out = header(ctx);
    out.push_str(" ID        OWNER            RUNS ST    INPUT     OUTPUT       RATE MISC\n");
    for ad in sorted(ads) {
        let (input, output, queued) = (
            flag(ad, "TransferringInput"),
            flag(ad, "TransferringOutput"),
            flag(ad, "TransferQueued"),
        );
        if !(input || output || queued) {
            continue;
        }
        let st = match (input, output, queued) {
            (true, _, true) => "<q".to_string(),
            (true, _, false) => "<".to_string(),
            (false, true, true) => "q>".to_string(),
            (false, true, false) => ">".to_string(),
            _ => status_letter(status(ad)).to_string(),
        };
        let mut misc: Vec<&str> = Vec::new();
        if input {
            misc.push("in");
        }
        if output {
            misc.push("out");
        }
        if queued {
            misc.push("queued");
        }
        let (c, p) = job_id(ad);
        let recvd = real(ad, "BytesRecvd").unwrap_or(0.0);
        let sent = real(ad, "BytesSent").unwrap_or(0.0);
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<14} {:>6} {:<2} {:>10} {:>10} {:>10} transfer={}",
            c,
            p,
            owner(ad),
            int(ad, "NumJobStarts").unwrap_or(0),
            st,
            metric_units(recvd),
            metric_units(sent),
            metric_units(recvd + sent),
            misc.join(",")
        );
    }
    out.push_str(&totals_block(ads, all, ctx));
    out
}

/// `-run`: running jobs (also transferring output or suspended, as
/// condor_q's `-run` selects them) with where; no totals (condor_q prints
/// none for this view).
pub fn format_running(ads: &[ClassAd], ctx: &QContext) -> String {
    let mut out = header(ctx);
    out.push_str(" ID        OWNER            SUBMITTED     RUN_TIME HOST(S)\n");
    for ad in sorted(ads).into_iter().filter(|a| {
        matches!(
            status(a),
            Some(JobStatus::Running | JobStatus::TransferringOutput | JobStatus::Suspended)
        )
    }) {
        let (c, p) = job_id(ad);
        let host = running_hosts(ad);
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<14} {:>11} {:>12} {}",
            c,
            p,
            owner(ad),
            short_date(int(ad, "QDate").unwrap_or(0), ctx.utc_offset),
            duration(run_time(ad, ctx.now)),
            host
        );
    }
    out
}

/// Where a running job runs, for the `-run` view: its `RemoteHost`, or for a
/// parallel job (universe 11) the number of its nodes and their slots in
/// node order, from `RemoteHosts` (`4 nodes: slot1@a,slot2@a,slot1@b,slot1@c`).
/// condor_q shows only `RemoteHost` there.
fn running_hosts(ad: &ClassAd) -> String {
    if int(ad, "JobUniverse") == Some(11) {
        if let Some(list) = string(ad, "RemoteHosts") {
            let hosts: Vec<&str> = list
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .collect();
            if !hosts.is_empty() {
                let n = hosts.len();
                let word = if n == 1 { "node" } else { "nodes" };
                return format!("{n} {word}: {}", hosts.join(","));
            }
        }
    }
    string(ad, "RemoteHost").unwrap_or_default()
}

/// An attribute evaluated in its ad (requests may be expressions), as a
/// whole number.
fn evaluated_int(ad: &ClassAd, name: &str) -> Option<i64> {
    let v = classad::Evaluator::default().eval_attr(name, ad, None);
    v.as_int().or_else(|| v.as_real().map(|r| r as i64))
}

/// condor_q's name of a `JobUniverse` code.
fn universe_name(code: Option<i64>) -> String {
    match code {
        Some(5) => "vanilla".into(),
        Some(7) => "scheduler".into(),
        Some(12) => "local".into(),
        Some(1) => "standard".into(),
        Some(9) => "grid".into(),
        Some(10) => "java".into(),
        Some(11) => "parallel".into(),
        Some(13) => "vm".into(),
        Some(c) => c.to_string(),
        None => "??".into(),
    }
}

/// `-idle`: idle jobs with what they ask for, how often they started and
/// where they last ran; no totals (as condor_q).
pub fn format_idle(ads: &[ClassAd], ctx: &QContext) -> String {
    let mut out = header(ctx);
    out.push_str(" ID        OWNER          UNIVERSE  CPUS MEMORY STARTS LAST_HOST\n");
    for ad in sorted(ads)
        .into_iter()
        .filter(|a| status(a) == Some(JobStatus::Idle))
    {
        let (c, p) = job_id(ad);
        let line = format!(
            "{:>6}.{:<3} {:<14} {:<9} {:>4} {:>6} {:>6} {}",
            c,
            p,
            owner(ad),
            universe_name(int(ad, "JobUniverse")),
            evaluated_int(ad, "RequestCpus").unwrap_or(1),
            evaluated_int(ad, "RequestMemory").map_or_else(|| "??".into(), |m| m.to_string()),
            int(ad, "NumShadowStarts").unwrap_or(0),
            string(ad, "LastRemoteHost").unwrap_or_default()
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The DAGMan job a node job belongs to (`DAGManJobId`, an integer or an
/// old `"C.P"` string).
fn dagman_id(ad: &ClassAd) -> Option<i64> {
    match lit(ad, "DAGManJobId")? {
        Value::Int(i) => Some(*i),
        v => v
            .as_string()
            .and_then(|s| s.split('.').next().and_then(|c| c.parse().ok())),
    }
}

/// `-dag -nobatch`: one line per job, each DAG's node jobs right under
/// their DAGMan job, named ` |-NODE` in the `OWNER/NODENAME` column (one
/// more space per level of nested DAGs). Jobs whose DAGMan job is not in
/// the listing are shown as ordinary jobs; without DAG jobs this is the
/// `-nobatch` view with a wider owner column.
pub fn format_dag(ads: &[ClassAd], all: Option<&Totals>, ctx: &QContext) -> String {
    use std::collections::{BTreeMap, HashMap};
    let jobs = sorted(ads);
    let clusters: std::collections::HashSet<i64> = jobs.iter().map(|a| job_id(a).0).collect();
    let mut children: HashMap<i64, Vec<&ClassAd>> = HashMap::new();
    let mut roots: BTreeMap<(i64, i64), &ClassAd> = BTreeMap::new();
    for ad in &jobs {
        match dagman_id(ad) {
            Some(d) if clusters.contains(&d) && d != job_id(ad).0 => {
                children.entry(d).or_default().push(ad)
            }
            _ => {
                roots.insert(job_id(ad), ad);
            }
        }
    }
    let mut out = header(ctx);
    out.push_str(" ID        OWNER/NODENAME      SUBMITTED     RUN_TIME ST PRI SIZE    CMD\n");
    fn emit<'a>(
        ad: &'a ClassAd,
        depth: usize,
        children: &std::collections::HashMap<i64, Vec<&'a ClassAd>>,
        done: &mut std::collections::HashSet<i64>,
        ctx: &QContext,
        out: &mut String,
    ) {
        let (c, p) = job_id(ad);
        let name = if depth == 0 {
            owner(ad)
        } else {
            format!(
                "{}|-{}",
                " ".repeat(depth),
                string(ad, "DAGNodeName").unwrap_or_default()
            )
        };
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<17} {:>11} {:>12} {:<2} {:<3} {:<7.1} {}",
            c,
            p,
            name,
            short_date(int(ad, "QDate").unwrap_or(0), ctx.utc_offset),
            duration(run_time(ad, ctx.now)),
            status_letter(status(ad)),
            int(ad, "JobPrio").unwrap_or(0),
            real(ad, "ImageSize").unwrap_or(0.0) / 1024.0,
            cmd_line(ad)
        );
        // a DAG's nodes once, after its first proc
        if done.insert(c) {
            if let Some(kids) = children.get(&c) {
                for k in kids {
                    emit(k, depth + 1, children, done, ctx, out);
                }
            }
        }
    }
    let mut done = std::collections::HashSet::new();
    for ad in roots.values() {
        emit(ad, 0, &children, &mut done, ctx, &mut out);
    }
    out.push_str(&totals_block(ads, all, ctx));
    out
}

/// condor_q's batch rows computed from the ads themselves (a queue read
/// from a file, or a `-limit`ed query): one row per owner and batch
/// (`JobBatchName`, else the cluster), in order of their first job; jobs
/// of a cluster missing from `ads` (up to `TotalSubmitProcs`) count as
/// done.
pub fn batches_of_ads(ads: &[ClassAd]) -> Vec<BatchRow> {
    use std::collections::HashMap;
    let mut rows: Vec<BatchRow> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut present: HashMap<i64, (i64, usize)> = HashMap::new();
    for ad in sorted(ads) {
        let (c, p) = job_id(ad);
        let id = (u32::try_from(c).unwrap_or(0), u32::try_from(p).unwrap_or(0));
        let owner = owner(ad);
        let name = string(ad, "JobBatchName").unwrap_or_else(|| format!("ID: {c}"));
        let i = *index
            .entry((owner.clone(), name.clone()))
            .or_insert_with(|| {
                rows.push(BatchRow {
                    owner,
                    name,
                    submitted: i64::MAX,
                    first: id,
                    ..BatchRow::default()
                });
                rows.len() - 1
            });
        let e = present.entry(c).or_insert((0, i));
        e.0 = e.0.max(int(ad, "TotalSubmitProcs").unwrap_or(0));
        let row = &mut rows[i];
        row.submitted = row.submitted.min(int(ad, "QDate").unwrap_or(0));
        row.last = id;
        match status(ad) {
            Some(JobStatus::Idle) => row.idle += 1,
            Some(JobStatus::Running | JobStatus::TransferringOutput) => row.running += 1,
            Some(JobStatus::Removed) => row.removed += 1,
            Some(JobStatus::Completed) => row.completed += 1,
            Some(JobStatus::Held) => row.held += 1,
            Some(JobStatus::Suspended) => row.suspended += 1,
            None => {}
        }
    }
    let mut counts: HashMap<i64, i64> = HashMap::new();
    for ad in ads {
        *counts.entry(job_id(ad).0).or_default() += 1;
    }
    for (c, (submitted, i)) in present {
        let n = counts.get(&c).copied().unwrap_or(0);
        rows[i].done += (submitted - n).max(0) as u64;
    }
    for r in &mut rows {
        if r.submitted == i64::MAX {
            r.submitted = 0;
        }
    }
    rows
}

/// Each line cut to `width` characters (the table views on a terminal
/// without `-wide`, as condor_q fits them to the screen).
pub fn fit_width(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.extend(body.chars().take(width));
        out.push_str(nl);
    }
    out
}

/// `skua history`: one line per job that left the queue, newest first.
pub fn format_history(ads: &[ClassAd], utc_offset: i64) -> String {
    let mut out =
        String::from(" ID     OWNER          SUBMITTED   RUN_TIME     ST  COMPLETED   CMD\n");
    for ad in ads {
        let (c, p) = job_id(ad);
        let completed = int(ad, "CompletionDate")
            .filter(|t| *t > 0)
            .or_else(|| int(ad, "EnteredCurrentStatus"))
            .unwrap_or(0);
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<12} {:>11} {:>12} {:<2} {:>11} {}",
            c,
            p,
            owner(ad),
            short_date(int(ad, "QDate").unwrap_or(0), utc_offset),
            duration(real(ad, "RemoteWallClockTime").unwrap_or(0.0) as i64),
            status_letter(status(ad)),
            short_date(completed, utc_offset),
            cmd_line(ad)
        );
    }
    out
}

/// condor_q's status letter (`?` for a code that is not a status).
fn status_letter(status: Option<JobStatus>) -> char {
    status.map_or('?', JobStatus::letter)
}

/// A parallel-universe job (`JobUniverse = 11`).
pub fn is_parallel(job: &classad::ClassAd) -> bool {
    matches!(job.lookup("JobUniverse"), Some(classad::Expr::Lit(v)) if v.as_int() == Some(11))
}

/// The dedicated scheduler's part of `-better-analyze` for a parallel job.
pub fn format_parallel_analysis(a: &skua_negotiation::dedicated::ParallelAnalysis) -> String {
    let mut out = String::from("\nDedicated scheduling (parallel universe):\n");
    for line in a.describe() {
        out.push_str("    ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The `-better-analyze` report of one job, in condor_q's layout.
pub fn format_analysis(
    job: &classad::ClassAd,
    a: &skua_negotiation::Analysis,
    schedd_name: &str,
    schedd_addr: &str,
) -> String {
    use std::fmt::Write as _;
    let int = |n: &str| match job.lookup(n) {
        Some(classad::Expr::Lit(v)) => v.as_int().unwrap_or(0),
        _ => 0,
    };
    let id = format!("{}.{:03}", int("ClusterId"), int("ProcId"));
    let mut out = String::new();
    let _ = writeln!(out, "\n-- Schedd: {schedd_name} : {schedd_addr}");
    if a.requirements.is_empty() {
        let _ = writeln!(out, "Job {id} has no Requirements expression.\n");
    } else {
        let _ = writeln!(out, "The Requirements expression for job {id} is\n");
        let _ = writeln!(out, "    {}\n", a.requirements);
        let defined: Vec<String> = job
            .lookup("Requirements")
            .map(|e| classad::references(e, job).internal.into_iter().collect())
            .unwrap_or_default();
        if !defined.is_empty() {
            let _ = writeln!(out, "Job {id} defines the following attributes:\n");
            for name in &defined {
                if let Some((n, e)) = job
                    .iter_chained()
                    .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
                {
                    let _ = writeln!(out, "    {} = {e}", n.as_str());
                }
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "The Requirements expression for job {id} reduces to these conditions:\n"
        );
        let _ = writeln!(out, "         Slots");
        let _ = writeln!(out, "Step    Matched  Condition");
        let _ = writeln!(out, "-----  --------  ---------");
        for (i, c) in a.clauses.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:<5}  {:>8}  {}",
                format!("[{i}]"),
                c.matched,
                c.clause
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\n{id}:  Run analysis summary ignoring user priority.  Of {} machines,",
        a.slots
    );
    let _ = writeln!(
        out,
        "{:>7} are rejected by your job's requirements",
        a.rejected_by_job
    );
    let _ = writeln!(
        out,
        "{:>7} reject your job because of their own requirements",
        a.reject_job
    );
    let _ = writeln!(
        out,
        "{:>7} match and are already running your jobs",
        a.running_yours
    );
    let _ = writeln!(
        out,
        "{:>7} match but are serving other users",
        a.serving_others
    );
    let _ = writeln!(out, "{:>7} are able to run your job", a.available);
    let none: Vec<&str> = a.unsatisfiable().map(|c| c.clause.as_str()).collect();
    if a.slots > 0 && a.rejected_by_job + a.reject_job == a.slots {
        let _ = writeln!(out, "\nWARNING:  Be advised:");
        let _ = writeln!(out, "   No machines matched the jobs's constraints");
        for c in none {
            let _ = writeln!(out, "   No slot satisfies: {c}");
        }
    }
    out
}

/// The attributes a job's Requirements needs from the machine that no slot defines, one
/// line each with the closest names the slots do define: the `-better-analyze` addendum
/// (empty when there are none).
pub fn format_undefined(undefined: &[skua_negotiation::UndefinedAttr]) -> String {
    let mut out = String::new();
    for u in undefined {
        out.push_str(&undefined_line(u));
        out.push('\n');
    }
    if !out.is_empty() {
        out.insert(0, '\n');
    }
    out
}

/// One undefined attribute, in words.
pub fn undefined_line(u: &skua_negotiation::UndefinedAttr) -> String {
    let mut line = format!(
        "The Requirements refer to {}, which no slot in the pool defines: a clause that needs it never matches",
        u.name
    );
    if !u.suggestions.is_empty() {
        line.push_str(&format!(" (did you mean {}?)", u.suggestions.join(" or ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_attributes_are_named_with_suggestions() {
        let u = [
            skua_negotiation::UndefinedAttr {
                name: "Memroy".into(),
                suggestions: vec!["Memory".into()],
            },
            skua_negotiation::UndefinedAttr {
                name: "Foo".into(),
                suggestions: vec![],
            },
        ];
        assert_eq!(
            format_undefined(&u),
            "\nThe Requirements refer to Memroy, which no slot in the pool defines: a clause \
             that needs it never matches (did you mean Memory?)\n\
             The Requirements refer to Foo, which no slot in the pool defines: a clause that \
             needs it never matches\n"
        );
        assert_eq!(format_undefined(&[]), "");
    }

    fn job(c: i64, p: i64, owner: &str, st: i64) -> ClassAd {
        let text = format!(
            "[ ClusterId = {c}; ProcId = {p}; Owner = \"{owner}\"; JobStatus = {st}; QDate = 1763726400; \
               Cmd = \"/bin/sleep\"; Args = \"60\"; JobPrio = 0; ImageSize = 2048; TotalSubmitProcs = 3; \
               EnteredCurrentStatus = 1763726460; HoldReasonCode = 1; HoldReasonSubCode = 0; \
               HoldReason = \"via skua hold\" ]"
        );
        classad::parse_ad(&text).unwrap()
    }

    fn ctx() -> QContext {
        QContext {
            schedd_name: "host.example".into(),
            schedd_addr: "<127.0.0.1:9618>".into(),
            now: 1763726400 + 3600,
            utc_offset: 0,
            user: "ann".into(),
            only_mine: true,
            label: None,
        }
    }

    #[test]
    fn io_shows_transferring_jobs_with_their_bytes() {
        let with = |c, extra: &str| {
            let mut ad = job(c, 0, "ann", 2);
            let more = classad::parse_ad(&format!("[ NumJobStarts = 1; {extra} ]")).unwrap();
            for (n, e) in more.iter_chained() {
                ad.insert(n.as_str(), e.clone());
            }
            ad
        };
        let ads = vec![
            with(1, "TransferringInput = true; TransferQueued = false; BytesRecvd = 1048576.0"),
            with(2, "TransferringOutput = true; TransferQueued = true; BytesRecvd = 512.0; BytesSent = 0.0"),
            with(3, "TransferringInput = false; TransferringOutput = false; TransferQueued = false"),
        ];
        let text = format_io(&ads, None, &ctx());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3],
            " ID        OWNER            RUNS ST    INPUT     OUTPUT       RATE MISC"
        );
        assert_eq!(
            lines[4],
            "     1.0   ann                 1 <      1.0 MB     0.0 B      1.0 MB transfer=in"
        );
        assert_eq!(
            lines[5],
            "     2.0   ann                 1 q>   512.0 B      0.0 B    512.0 B  transfer=out,queued"
        );
        assert!(
            !text.contains("     3.0"),
            "a job not transferring is not listed:\n{text}"
        );
        assert!(text.contains("3 jobs;"), "the totals line:\n{text}");
    }

    #[test]
    fn dates() {
        assert_eq!(short_date(1763726400, 0), "11/21 12:00");
        assert_eq!(short_date(1763726400, 3600), "11/21 13:00");
        assert_eq!(long_date(1763726400, 0), "11/21/25 12:00:00");
    }

    fn row(
        idle: u64,
        running: u64,
        held: u64,
        done: u64,
        first: (u32, u32),
        last: (u32, u32),
    ) -> BatchRow {
        BatchRow {
            owner: "ann".into(),
            name: format!("ID: {}", first.0),
            submitted: 1763726400,
            done,
            idle,
            running,
            held,
            first,
            last,
            ..BatchRow::default()
        }
    }

    #[test]
    fn batch_summary_prints_one_line_per_batch_and_the_totals() {
        let rows = vec![row(1, 1, 1, 0, (5, 0), (5, 2))];
        let all = Totals {
            jobs: 4,
            idle: 2,
            running: 1,
            held: 1,
            ..Totals::default()
        };
        let out = format_batches(&rows, Some(&all), &ctx());
        assert!(
            out.contains("-- Schedd: host.example : <127.0.0.1:9618> @ "),
            "{out}"
        );
        assert!(out.contains("HOLD"), "{out}");
        let line = out.lines().find(|l| l.starts_with("ann")).unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cols,
            ["ann", "ID:", "5", "11/21", "12:00", "_", "1", "1", "1", "3", "5.0-2"],
            "{line}"
        );
        assert!(out.contains(
            "Total for query: 3 jobs; 0 completed, 0 removed, 1 idle, 1 running, 1 held, 0 suspended"
        ));
        assert!(out.contains("Total for ann: 3 jobs;"));
        assert!(out.contains("Total for all users: 4 jobs;"));
    }

    #[test]
    fn done_jobs_count_in_the_total_and_no_hold_column_without_held_jobs() {
        let out = format_batches(&[row(1, 0, 0, 2, (7, 2), (7, 2))], None, &ctx());
        let line = out.lines().find(|l| l.starts_with("ann")).unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[5], "2", "{line}");
        assert_eq!(cols[cols.len() - 2], "3", "{line}");
        assert_eq!(cols[cols.len() - 1], "7.2", "{line}");
        assert!(!out.contains("HOLD"), "{out}");
    }

    #[test]
    fn nobatch_lists_each_job() {
        let ads = vec![job(5, 1, "ann", 2), job(5, 0, "ann", 1)];
        let out = format_jobs(&ads, None, &ctx());
        let rows: Vec<&str> = out.lines().filter(|l| l.contains("sleep 60")).collect();
        assert_eq!(rows.len(), 2);
        assert!(rows[0].trim_start().starts_with("5.0"), "{out}");
        assert!(rows[1].contains(" R "), "{out}");
        assert!(rows[0].contains(" I "), "{out}");
        assert!(rows[0].contains("2.0"), "image size in MB: {out}");
    }

    #[test]
    fn status_letters_and_totals_follow_the_job_status_codes() {
        let ads: Vec<ClassAd> = (1..=8).map(|st| job(6, st, "ann", st)).collect();
        let out = format_jobs(&ads, None, &ctx());
        let letters: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("sleep 60"))
            .map(|l| l.split_whitespace().nth(5).unwrap_or(""))
            .collect();
        assert_eq!(letters, ["I", "R", "X", "C", "H", ">", "S", "?"], "{out}");
        let t = Totals::of(&ads);
        assert_eq!(
            (
                t.jobs,
                t.idle,
                t.running,
                t.removed,
                t.completed,
                t.held,
                t.suspended
            ),
            (8, 1, 2, 1, 1, 1, 1)
        );
    }

    #[test]
    fn hold_view_shows_reason_and_code() {
        let ads = vec![job(5, 0, "ann", 5), job(5, 1, "ann", 1)];
        let out = format_held(&ads, None, &ctx());
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("via skua hold"))
            .collect();
        assert_eq!(rows.len(), 1, "{out}");
        assert!(rows[0].contains("5.0"));
        assert!(rows[0].contains("11/21 12:01"), "{out}");
    }

    fn with(ad: ClassAd, extra: &str) -> ClassAd {
        let more = classad::parse_ad(extra).unwrap();
        let mut ad = ad;
        for (n, e) in more.iter() {
            ad.insert(n.as_str(), e.clone());
        }
        ad
    }

    #[test]
    fn run_view_lists_running_suspended_and_transferring_jobs_without_totals() {
        let ads = vec![
            with(job(5, 0, "ann", 2), "[ RemoteHost = \"slot1@h\" ]"),
            job(5, 1, "ann", 1),
            job(5, 2, "ann", 7),
            job(5, 3, "ann", 6),
        ];
        let out = format_running(&ads, &ctx());
        let rows: Vec<&str> = out.lines().filter(|l| l.contains("ann")).collect();
        assert_eq!(rows.len(), 3, "{out}");
        assert!(rows[0].ends_with("slot1@h"), "{out}");
        assert!(!out.contains("5.1 "), "{out}");
        assert!(out.contains(" ID        OWNER            SUBMITTED     RUN_TIME HOST(S)"));
        assert!(!out.contains("Total for"), "{out}");
    }

    #[test]
    fn run_view_shows_a_parallel_jobs_node_count_and_slots_in_node_order() {
        let ads = vec![
            with(
                job(7, 0, "ann", 2),
                "[ JobUniverse = 11; RemoteHost = \"slot1@a\"; CurrentHosts = 3;
                   RemoteHosts = \"slot1@a, slot2@a,slot1@b\" ]",
            ),
            with(
                job(7, 1, "ann", 2),
                "[ JobUniverse = 11; RemoteHosts = \"slot1@c\" ]",
            ),
            // a parallel job the schedd has not given its host list: its RemoteHost
            with(
                job(8, 0, "ann", 2),
                "[ JobUniverse = 11; RemoteHost = \"slot3@d\" ]",
            ),
            // RemoteHosts means nothing for a vanilla job
            with(
                job(9, 0, "ann", 2),
                "[ JobUniverse = 5; RemoteHost = \"slot1@e\"; RemoteHosts = \"x,y\" ]",
            ),
        ];
        let out = format_running(&ads, &ctx());
        let rows: Vec<&str> = out.lines().filter(|l| l.contains("ann")).collect();
        assert_eq!(rows.len(), 4, "{out}");
        assert!(
            rows[0].ends_with(" 3 nodes: slot1@a,slot2@a,slot1@b"),
            "{out}"
        );
        assert!(rows[1].ends_with(" 1 node: slot1@c"), "{out}");
        assert!(rows[2].ends_with(" slot3@d"), "{out}");
        assert!(rows[3].ends_with(" slot1@e"), "{out}");
    }

    #[test]
    fn idle_view_shows_requests_starts_and_the_last_host() {
        let ads = vec![
            with(
                job(8, 0, "ann", 1),
                "[ JobUniverse = 5; RequestCpus = 2; RequestMemory = 512; NumShadowStarts = 3; \
                   LastRemoteHost = \"slot2@h\" ]",
            ),
            job(8, 1, "ann", 2),
        ];
        let out = format_idle(&ads, &ctx());
        assert!(
            out.contains(" ID        OWNER          UNIVERSE  CPUS MEMORY STARTS LAST_HOST\n"),
            "{out}"
        );
        let rows: Vec<&str> = out.lines().filter(|l| l.contains("ann")).collect();
        assert_eq!(
            rows,
            ["     8.0   ann            vanilla      2    512      3 slot2@h"]
        );
        assert!(!out.contains("Total for"), "{out}");
    }

    #[test]
    fn dag_view_puts_node_jobs_under_their_dagman_job() {
        let ads = vec![
            with(
                job(20, 0, "ann", 2),
                "[ JobUniverse = 7; Cmd = \"/usr/bin/condor_dagman\" ]",
            ),
            with(
                job(21, 0, "ann", 1),
                "[ DAGManJobId = 20; DAGNodeName = \"A\" ]",
            ),
            job(19, 0, "ann", 1),
            with(
                job(22, 0, "ann", 2),
                "[ DAGManJobId = 20; DAGNodeName = \"B\" ]",
            ),
            with(
                job(30, 0, "ann", 1),
                "[ DAGManJobId = 99; DAGNodeName = \"orphan\" ]",
            ),
        ];
        let out = format_dag(&ads, None, &ctx());
        assert!(
            out.contains(" ID        OWNER/NODENAME      SUBMITTED"),
            "{out}"
        );
        let rows: Vec<String> = out
            .lines()
            .filter(|l| l.contains("11/21") && !l.starts_with("--"))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            rows,
            ["19.0 ann", "20.0 ann", "21.0 |-A", "22.0 |-B", "30.0 ann"],
            "{out}"
        );
        assert!(out.contains("    21.0    |-A              11/21"), "{out}");
        assert!(out.contains("Total for query: 5 jobs;"), "{out}");
    }

    #[test]
    fn batches_made_from_ads_match_the_schedds() {
        let ads = vec![
            job(5, 0, "ann", 1),
            job(5, 2, "ann", 5),
            with(
                job(6, 0, "ann", 2),
                "[ JobBatchName = \"b\"; TotalSubmitProcs = 1 ]",
            ),
            with(
                job(7, 0, "ann", 1),
                "[ JobBatchName = \"b\"; TotalSubmitProcs = 1 ]",
            ),
        ];
        let rows = batches_of_ads(&ads);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "ID: 5");
        assert_eq!((rows[0].idle, rows[0].held, rows[0].done), (1, 1, 1));
        assert_eq!((rows[0].first, rows[0].last), ((5, 0), (5, 2)));
        assert_eq!(rows[1].name, "b");
        assert_eq!((rows[1].idle, rows[1].running, rows[1].done), (1, 1, 0));
        assert_eq!((rows[1].first, rows[1].last), ((6, 0), (7, 0)));
        assert_eq!(rows[1].submitted, 1763726400);
    }

    #[test]
    fn a_file_source_heads_the_table_with_its_label() {
        let mut c = ctx();
        c.label = Some("Userlog: /tmp/x.log".into());
        let out = format_jobs(&[job(1, 0, "ann", 1)], None, &c);
        assert!(out.starts_with("\n\n-- Userlog: /tmp/x.log\n ID "), "{out}");
    }

    #[test]
    fn lines_are_cut_to_the_width() {
        assert_eq!(fit_width("abcdef\nab\nabcd", 3), "abc\nab\nabc");
        assert_eq!(fit_width("héllo\n", 2), "hé\n");
    }

    #[test]
    fn id_ranges() {
        assert_eq!(id_range(&[(3, 0)]), "3.0");
        assert_eq!(id_range(&[(3, 0), (3, 9)]), "3.0-9");
        assert_eq!(id_range(&[(3, 0), (4, 1)]), "3.0 ... 4.1");
    }

    #[test]
    fn a_parallel_job_gets_the_dedicated_scheduler_explanation() {
        let parallel = classad::parse_ad("[ JobUniverse = 11; MaxHosts = 3 ]").unwrap();
        let vanilla = classad::parse_ad("[ JobUniverse = 5 ]").unwrap();
        assert!(is_parallel(&parallel));
        assert!(!is_parallel(&vanilla));
        let a = skua_negotiation::dedicated::ParallelAnalysis {
            scheduler: Some("DedicatedScheduler@sub".into()),
            nodes: 3,
            dedicated: 4,
            matching: 2,
            fifo_head: None,
        };
        let text = format_parallel_analysis(&a);
        assert!(
            text.contains("4 slot(s) advertise this dedicated scheduler; 2 of them match"),
            "{text}"
        );
        assert!(
            text.contains("Not enough dedicated machines match: the job needs 3"),
            "{text}"
        );
    }
}
