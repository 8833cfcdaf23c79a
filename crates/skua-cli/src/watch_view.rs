//! The pure part of `skua wait` (condor_wait) and `skua watch_q`
//! (condor_watch_q): job event log text in, decisions and tables out. No
//! clock, no file system: the commands (`watch_cmd`) read the logs and
//! call these.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use classad::{ClassAd, Expr};

use crate::q_source::ads_from_userlog;

/// A job as its events leave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobState {
    pub cluster: i64,
    pub proc: i64,
    /// `JobStatus`: 1 idle, 2 running, 3 removed, 4 completed, 5 held,
    /// 7 suspended.
    pub status: i64,
    /// Its submit event is in the log.
    pub submitted: bool,
    /// Where it runs (its last execute event), while it runs.
    pub host: Option<String>,
}

impl JobState {
    pub fn id(&self) -> (i64, i64) {
        (self.cluster, self.proc)
    }

    /// Terminated or aborted.
    pub fn ended(&self) -> bool {
        matches!(self.status, 3 | 4)
    }
}

/// The part of a log that ends with a whole event (`...` line): a log
/// being written may end with half an event.
pub fn complete_part(text: &str) -> &str {
    let mut end = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        pos += line.len();
        if line.ends_with('\n') && line.trim() == "..." {
            end = pos;
        }
    }
    &text[..end]
}

fn int(ad: &ClassAd, n: &str) -> Option<i64> {
    match ad.lookup(n) {
        Some(Expr::Lit(v)) => v.as_int(),
        _ => None,
    }
}

/// The jobs of a job event log (its whole events), in job-id order.
pub fn job_states(text: &str) -> Result<Vec<JobState>, String> {
    let ads = ads_from_userlog(complete_part(text), 0, 2000)?;
    Ok(ads
        .iter()
        .map(|ad| JobState {
            cluster: int(ad, "ClusterId").unwrap_or(0),
            proc: int(ad, "ProcId").unwrap_or(0),
            status: int(ad, "JobStatus").unwrap_or(1),
            submitted: ad.lookup("QDate").is_some(),
            host: match ad.lookup("RemoteHost") {
                Some(Expr::Lit(v)) => v.as_string(),
                _ => None,
            },
        })
        .collect())
}

/// `C` or `C.P`: which jobs `skua wait` waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobPick {
    pub cluster: Option<i64>,
    pub proc: Option<i64>,
}

impl JobPick {
    pub fn parse(text: &str) -> Result<JobPick, String> {
        let bad = || format!("`{text}` is not a job id (C or C.P)");
        let mut parts = text.split('.');
        let cluster: i64 = parts.next().and_then(|c| c.parse().ok()).ok_or_else(bad)?;
        let proc = match parts.next() {
            Some(p) => Some(p.parse::<i64>().map_err(|_| bad())?),
            None => None,
        };
        if parts.next().is_some() || cluster < 0 || proc.is_some_and(|p| p < 0) {
            return Err(bad());
        }
        Ok(JobPick {
            cluster: Some(cluster),
            proc,
        })
    }

    pub fn matches(&self, cluster: i64, proc: i64) -> bool {
        self.cluster.is_none_or(|c| c == cluster) && self.proc.is_none_or(|p| p == proc)
    }
}

/// What `skua wait` does after reading the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitStep {
    /// Keep waiting.
    Waiting,
    /// Done: the message to print, exit 0.
    Done(String),
}

/// condor_wait's decision. Without a job id, the jobs watched are those
/// submitted in the log when it is first read with a submit event in it
/// (`tracked` keeps them between calls); with one, the log's jobs that it
/// names. Done when every watched job terminated or was aborted, or when
/// `num` of them did; never before a watched job's submit event is read.
pub fn wait_step(
    jobs: &[JobState],
    pick: JobPick,
    num: Option<usize>,
    tracked: &mut Option<BTreeSet<(i64, i64)>>,
) -> WaitStep {
    let watched: Vec<&JobState> = if pick.cluster.is_some() {
        jobs.iter()
            .filter(|j| j.submitted && pick.matches(j.cluster, j.proc))
            .collect()
    } else {
        if tracked.is_none() {
            let set: BTreeSet<_> = jobs
                .iter()
                .filter(|j| j.submitted)
                .map(JobState::id)
                .collect();
            if !set.is_empty() {
                *tracked = Some(set);
            }
        }
        match tracked {
            Some(set) => jobs.iter().filter(|j| set.contains(&j.id())).collect(),
            None => Vec::new(),
        }
    };
    if watched.is_empty() {
        return WaitStep::Waiting;
    }
    let ended = watched.iter().filter(|j| j.ended()).count();
    match num {
        Some(n) if ended >= n => WaitStep::Done(format!("Specified number of jobs ({n}) done.")),
        Some(_) => WaitStep::Waiting,
        None if ended == watched.len() => WaitStep::Done("All jobs done.".to_string()),
        None => WaitStep::Waiting,
    }
}

/// `skua wait -status`: a line for each job whose state changed since
/// `before` (the previous read).
pub fn status_lines(before: &[JobState], now: &[JobState], pick: JobPick) -> Vec<String> {
    let old: BTreeMap<(i64, i64), &JobState> = before.iter().map(|j| (j.id(), j)).collect();
    let mut out = Vec::new();
    for j in now.iter().filter(|j| pick.matches(j.cluster, j.proc)) {
        if old.get(&j.id()).is_some_and(|o| o.status == j.status) {
            continue;
        }
        let what = match j.status {
            1 if !old.contains_key(&j.id()) => "submitted".to_string(),
            1 => "idle".to_string(),
            2 => match &j.host {
                Some(h) => format!("executing on host {h}"),
                None => "executing".to_string(),
            },
            3 => "aborted".to_string(),
            4 => "completed".to_string(),
            5 => "held".to_string(),
            7 => "suspended".to_string(),
            s => format!("status {s}"),
        };
        out.push(format!("{}.{}.0 {what}", j.cluster, j.proc));
    }
    out
}

/// How `skua watch_q` groups jobs into rows (`-groupby`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum GroupBy {
    /// `JobBatchName`, else `ID: <cluster>`.
    #[default]
    Batch,
    /// The job event log.
    Log,
    /// The cluster.
    Cluster,
}

/// A job for the table: its state and its row's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracked {
    pub state: JobState,
    pub key: String,
}

/// The counted states, in column order (condor_watch_q's).
const STATES: &[(&str, i64, bool)] = &[
    ("REMOVED", 3, false),
    ("HELD", 5, false),
    ("SUSPENDED", 7, false),
    ("IDLE", 1, true),
    ("RUN", 2, true),
    ("DONE", 4, true),
];

/// condor_watch_q's table: the key column, then REMOVED, HELD, SUSPENDED
/// when any job is in that state, IDLE, RUN and DONE always, TOTAL and
/// JOB_IDS; one row per key in order of the keys' first job.
pub fn watch_table(jobs: &[Tracked], group: GroupBy) -> String {
    let title = match group {
        GroupBy::Batch => "BATCH",
        GroupBy::Log => "LOG",
        GroupBy::Cluster => "CLUSTER",
    };
    let mut rows: Vec<(String, Vec<&JobState>)> = Vec::new();
    let mut sorted: Vec<&Tracked> = jobs.iter().collect();
    sorted.sort_by_key(|t| t.state.id());
    for t in sorted {
        match rows.iter_mut().find(|(k, _)| *k == t.key) {
            Some((_, v)) => v.push(&t.state),
            None => rows.push((t.key.clone(), vec![&t.state])),
        }
    }
    let shown: Vec<&(&str, i64, bool)> = STATES
        .iter()
        .filter(|(_, code, always)| *always || jobs.iter().any(|t| t.state.status == *code))
        .collect();
    let key_width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(title.len());
    let mut out = String::new();
    let _ = write!(out, "{title:<key_width$}");
    for (name, _, _) in &shown {
        let _ = write!(out, "  {name:>w$}", w = name.len().max(4));
    }
    let _ = writeln!(out, "  TOTAL  JOB_IDS");
    for (key, states) in &rows {
        let _ = write!(out, "{key:<key_width$}");
        for (name, code, _) in &shown {
            let n = states.iter().filter(|s| s.status == *code).count();
            let cell = if n == 0 {
                "-".to_string()
            } else {
                n.to_string()
            };
            let _ = write!(out, "  {cell:>w$}", w = name.len().max(4));
        }
        let ids: Vec<(i64, i64)> = states.iter().map(|s| s.id()).collect();
        let _ = writeln!(
            out,
            "  {:>5}  {}",
            states.len(),
            crate::q_fmt::id_range(&ids)
        );
    }
    out
}

/// Which jobs `-exit` looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    All,
    Any,
    None,
}

/// `-exit all|any|none,active|done|idle|held|running[,CODE]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitWhen {
    pub quantifier: Quantifier,
    /// `active`, `done`, `idle`, `held` or `running`.
    pub state: &'static str,
    pub code: u8,
}

impl ExitWhen {
    pub fn parse(text: &str) -> Result<ExitWhen, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let bad = || {
            format!(
                "-exit {text:?}: expected all|any|none,active|done|idle|held|running[,exit-code]"
            )
        };
        if parts.len() < 2 || parts.len() > 3 {
            return Err(bad());
        }
        let quantifier = match parts[0] {
            "all" => Quantifier::All,
            "any" => Quantifier::Any,
            "none" => Quantifier::None,
            _ => return Err(bad()),
        };
        let state = match parts[1] {
            "active" => "active",
            "done" => "done",
            "idle" => "idle",
            "held" => "held",
            "running" => "running",
            _ => return Err(bad()),
        };
        let code = match parts.get(2) {
            Some(c) => c.parse().map_err(|_| bad())?,
            None => 0,
        };
        Ok(ExitWhen {
            quantifier,
            state,
            code,
        })
    }

    fn holds_for(&self, j: &JobState) -> bool {
        match self.state {
            "done" => j.ended(),
            "active" => !j.ended(),
            "idle" => j.status == 1,
            "held" => j.status == 5,
            _ => j.status == 2,
        }
    }

    /// Whether the jobs meet the condition (never for no job at all).
    pub fn met(&self, jobs: &[Tracked]) -> bool {
        if jobs.is_empty() {
            return false;
        }
        match self.quantifier {
            Quantifier::All => jobs.iter().all(|t| self.holds_for(&t.state)),
            Quantifier::Any => jobs.iter().any(|t| self.holds_for(&t.state)),
            Quantifier::None => !jobs.iter().any(|t| self.holds_for(&t.state)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
000 (007.000.000) 2026-11-25 01:00:00 Job submitted from host: <127.0.0.1:9618>
...
000 (007.001.000) 2026-11-25 01:00:00 Job submitted from host: <127.0.0.1:9618>
...
001 (007.000.000) 2026-11-25 01:00:05 Job executing on host: <10.0.0.5:9618>
...
005 (007.000.000) 2026-11-25 01:00:09 Job terminated.
\t(1) Normal termination (return value 0)
...
012 (007.001.000) 2026-11-25 01:00:10 Job was held.
\tvia skua hold
\tCode 1 Subcode 0
...
001 (007.001.000) 2026-11-25 01:00:11 Job exec";

    fn tracked(text: &str, key: &str) -> Vec<Tracked> {
        job_states(text)
            .unwrap()
            .into_iter()
            .map(|state| Tracked {
                state,
                key: key.to_string(),
            })
            .collect()
    }

    #[test]
    fn half_written_events_are_left_for_the_next_read() {
        let jobs = job_states(LOG).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].status, jobs[1].status), (4, 5));
        assert!(complete_part(LOG).ends_with("Code 1 Subcode 0\n...\n"));
        assert_eq!(complete_part("000 (1.0.0) 2026-11-25 01:00:00 x\n..."), "");
    }

    #[test]
    fn wait_ends_when_the_watched_jobs_end_and_not_before_a_submit_event() {
        let mut tracked = None;
        let none = job_states("").unwrap();
        assert_eq!(
            wait_step(&none, JobPick::default(), None, &mut tracked),
            WaitStep::Waiting
        );
        assert_eq!(tracked, None);
        let jobs = job_states(LOG).unwrap();
        // 7.1 is held, not ended
        assert_eq!(
            wait_step(&jobs, JobPick::default(), None, &mut tracked),
            WaitStep::Waiting
        );
        let one = JobPick::parse("7.0").unwrap();
        assert_eq!(
            wait_step(&jobs, one, None, &mut None),
            WaitStep::Done("All jobs done.".into())
        );
        assert_eq!(
            wait_step(&jobs, JobPick::parse("7").unwrap(), Some(1), &mut None),
            WaitStep::Done("Specified number of jobs (1) done.".into())
        );
        // a job the log does not have (yet): wait
        assert_eq!(
            wait_step(&jobs, JobPick::parse("8").unwrap(), None, &mut None),
            WaitStep::Waiting
        );
        let more = format!(
            "{}\n009 (007.001.000) 2026-11-25 01:00:12 Job was aborted.\n\tvia skua rm\n...\n",
            complete_part(LOG).trim_end()
        );
        let jobs = job_states(&more).unwrap();
        assert_eq!(
            wait_step(&jobs, JobPick::default(), None, &mut tracked),
            WaitStep::Done("All jobs done.".into())
        );
        // jobs submitted after the first read are not waited for
        let later = format!(
            "{more}000 (009.000.000) 2026-11-25 01:00:13 Job submitted from host: <h>\n...\n"
        );
        let jobs = job_states(&later).unwrap();
        assert_eq!(
            wait_step(&jobs, JobPick::default(), None, &mut tracked),
            WaitStep::Done("All jobs done.".into())
        );
        for bad in ["x", "1.2.3", "-1", "1.x"] {
            assert!(JobPick::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn status_lines_name_each_change() {
        let first =
            job_states("000 (007.000.000) 2026-11-25 01:00:00 Job submitted from host: <h>\n...\n")
                .unwrap();
        let lines = status_lines(&[], &first, JobPick::default());
        assert_eq!(lines, vec!["7.0.0 submitted"]);
        let now = job_states(LOG).unwrap();
        let lines = status_lines(&first, &now, JobPick::default());
        assert_eq!(lines, vec!["7.0.0 completed", "7.1.0 held"]);
        assert!(status_lines(&now, &now, JobPick::default()).is_empty());
    }

    #[test]
    fn the_table_shows_held_only_when_a_job_is_held() {
        let jobs = tracked(LOG, "ID: 7");
        let t = watch_table(&jobs, GroupBy::Batch);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "BATCH  HELD  IDLE   RUN  DONE  TOTAL  JOB_IDS");
        assert_eq!(lines[1], "ID: 7     1     -     -     1      2  7.0-1");
        assert_eq!(lines.len(), 2);
        let done = tracked(
            "000 (003.000.000) 2026-11-25 01:00:00 Job submitted from host: <h>\n...\n",
            "/tmp/a.log",
        );
        let t = watch_table(&done, GroupBy::Log);
        assert_eq!(
            t,
            "LOG         IDLE   RUN  DONE  TOTAL  JOB_IDS\n/tmp/a.log     1     -     -      1  3.0\n"
        );
    }

    #[test]
    fn exit_conditions() {
        let jobs = tracked(LOG, "k");
        let all_done = ExitWhen::parse("all,done").unwrap();
        assert!(!all_done.met(&jobs));
        assert!(ExitWhen::parse("any,done").unwrap().met(&jobs));
        assert!(ExitWhen::parse("any,held,3").unwrap().met(&jobs));
        assert_eq!(ExitWhen::parse("any,held,3").unwrap().code, 3);
        assert!(!ExitWhen::parse("none,held").unwrap().met(&jobs));
        assert!(!all_done.met(&[]));
        for bad in [
            "all",
            "every,done",
            "all,finished",
            "all,done,x",
            "all,done,1,2",
        ] {
            assert!(ExitWhen::parse(bad).is_err(), "{bad}");
        }
    }
}
