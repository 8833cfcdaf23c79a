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

fn header(ctx: &QContext) -> String {
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
fn id_range(ids: &[(i64, i64)]) -> String {
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
            string(ad, "Owner").unwrap_or_default(),
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
            string(ad, "Owner").unwrap_or_default(),
            short_date(int(ad, "EnteredCurrentStatus").unwrap_or(0), ctx.utc_offset),
            int(ad, "HoldReasonCode").unwrap_or(0),
            int(ad, "HoldReasonSubCode").unwrap_or(0),
            string(ad, "HoldReason").unwrap_or_default()
        );
    }
    out.push_str(&totals_block(ads, all, ctx));
    out
}

/// `-run`: running jobs with where.
pub fn format_running(ads: &[ClassAd], all: Option<&Totals>, ctx: &QContext) -> String {
    let mut out = header(ctx);
    out.push_str(" ID        OWNER            SUBMITTED     RUN_TIME HOST(S)\n");
    for ad in sorted(ads)
        .into_iter()
        .filter(|a| status(a) == Some(JobStatus::Running))
    {
        let (c, p) = job_id(ad);
        let host = string(ad, "RemoteHost").unwrap_or_default();
        let _ = writeln!(
            out,
            "{:>6}.{:<3} {:<14} {:>11} {:>12} {}",
            c,
            p,
            string(ad, "Owner").unwrap_or_default(),
            short_date(int(ad, "QDate").unwrap_or(0), ctx.utc_offset),
            duration(run_time(ad, ctx.now)),
            host
        );
    }
    out.push_str(&totals_block(ads, all, ctx));
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
            string(ad, "Owner").unwrap_or_default(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        }
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

    #[test]
    fn id_ranges() {
        assert_eq!(id_range(&[(3, 0)]), "3.0");
        assert_eq!(id_range(&[(3, 0), (3, 9)]), "3.0-9");
        assert_eq!(id_range(&[(3, 0), (4, 1)]), "3.0 ... 4.1");
    }
}
