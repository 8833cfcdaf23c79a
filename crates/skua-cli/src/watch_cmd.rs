//! The tools users watch their jobs with (issue 16): `skua tail`
//! (condor_tail), `skua ssh_to_job` (condor_ssh_to_job, one command at a
//! time), `skua wait` (condor_wait) and `skua watch_q` (condor_watch_q).
//! `tail` and `ssh_to_job` go through the schedd to the job's startd
//! (docs/protocol.md, "Reaching a running job"); `wait` and `watch_q`
//! read job event logs (the decisions are pure: `watch_view`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use skua_net::NetError;
use skua_proto::{
    routes, ErrorCode, JobCommandRequest, JobQuery, JobSelector, SandboxFile, SandboxReadRequest,
};

use crate::pool_cmd::{client_for, load_config, report, runtime};
use crate::watch_view::{
    job_states, status_lines, wait_step, watch_table, ExitWhen, GroupBy, JobPick, JobState,
    Tracked, WaitStep,
};

/// How long a read waits for the schedd.
const TIMEOUT: Duration = Duration::from_secs(120);
/// How long a job command may take (the startd kills it after an hour).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3700);

fn error_code(e: &anyhow::Error) -> Option<ErrorCode> {
    match e.downcast_ref::<NetError>() {
        Some(NetError::Remote { body, .. }) => Some(body.code),
        _ => None,
    }
}

// ----- skua tail ------------------------------------------------------------

#[derive(clap::Args)]
pub struct TailArgs {
    /// The most bytes shown of each file (condor_tail's 1024 by default).
    #[arg(long, default_value_t = 1024)]
    maxbytes: u64,
    /// Keep showing new output until the job stops running.
    #[arg(long, short = 'f')]
    follow: bool,
    /// Seconds between two reads with -follow or -auto-retry.
    #[arg(long, default_value_t = 2.0)]
    interval: f64,
    /// Do not show the standard output.
    #[arg(long = "no-stdout")]
    no_stdout: bool,
    /// Show the standard error.
    #[arg(long)]
    stderr: bool,
    /// Wait for the job to start running instead of failing.
    #[arg(long = "auto-retry")]
    auto_retry: bool,
    /// The job (C.P, or C for proc 0).
    job: String,
    /// Output files of the job (names in its transfer_output_files).
    files: Vec<String>,
}

pub fn tail(a: TailArgs) -> ExitCode {
    report("tail", tail_inner(a))
}

fn tail_inner(a: TailArgs) -> Result<ExitCode> {
    if !a.interval.is_finite() || a.interval <= 0.0 {
        bail!(
            "{} must be a positive number of seconds",
            crate::opt("interval")
        );
    }
    let interval = Duration::from_secs_f64(a.interval);
    let mut files = Vec::new();
    if !a.no_stdout {
        files.push(SandboxFile::Stdout);
    }
    if a.stderr {
        files.push(SandboxFile::Stderr);
    }
    files.extend(a.files.iter().cloned().map(SandboxFile::Named));
    if files.is_empty() {
        bail!(
            "nothing to show: {} without -stderr or a file",
            crate::opt("no-stdout")
        );
    }
    let config = load_config()?;
    let client = client_for(&config, "SCHEDD", TIMEOUT)?;
    let rt = runtime()?;
    let read = |file: &SandboxFile, offset: Option<u64>| -> Result<skua_proto::SandboxChunk> {
        let req = SandboxReadRequest {
            job_id: a.job.clone(),
            file: file.clone(),
            offset,
            max_bytes: a.maxbytes,
        };
        Ok(rt.block_on(client.command(&routes::SCHEDD_JOB_SANDBOX_READ, Some(&req)))?)
    };
    let mut offsets: Vec<Option<u64>> = vec![None; files.len()];
    let mut out = std::io::stdout().lock();
    let mut started = false;
    loop {
        for (i, file) in files.iter().enumerate() {
            let chunk = match read(file, offsets[i]) {
                Ok(c) => c,
                Err(e)
                    if started
                        && a.follow
                        && matches!(
                            error_code(&e),
                            Some(ErrorCode::Conflict | ErrorCode::NotFound)
                        ) =>
                {
                    // the job stopped running (or left the queue): what it
                    // wrote is shown
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) if error_code(&e) == Some(ErrorCode::Conflict) => {
                    if a.auto_retry && !started {
                        std::thread::sleep(interval);
                        continue;
                    }
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            started = true;
            out.write_all(&chunk.data)?;
            let mut next = chunk.offset + chunk.data.len() as u64;
            // with -follow, catch up with a file that grew by more than
            // one read
            if a.follow {
                while next < chunk.size {
                    let more = read(file, Some(next))?;
                    if more.data.is_empty() {
                        break;
                    }
                    out.write_all(&more.data)?;
                    next = more.offset + more.data.len() as u64;
                }
            }
            offsets[i] = Some(next);
        }
        out.flush()?;
        if !a.follow && started {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(interval);
    }
}

// ----- skua ssh_to_job --------------------------------------------------------

#[derive(clap::Args)]
pub struct SshArgs {
    /// The job (C.P, or C for proc 0).
    job: String,
    /// The command to run in the job's sandbox, with its arguments
    /// (default: the job's shell, reading commands from standard input).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

pub fn ssh_to_job(a: SshArgs) -> ExitCode {
    match ssh_inner(a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skua ssh_to_job: {e:#}");
            ExitCode::from(255)
        }
    }
}

fn ssh_inner(a: SshArgs) -> Result<ExitCode> {
    let mut stdin = Vec::new();
    let terminal = std::io::stdin().is_terminal();
    if a.command.is_empty() && terminal {
        bail!(
            "an interactive terminal session is not supported yet: name a command, \
             or give the shell its commands on standard input"
        );
    }
    if !terminal {
        std::io::stdin()
            .read_to_end(&mut stdin)
            .context("reading standard input")?;
    }
    let config = load_config()?;
    let client = client_for(&config, "SCHEDD", COMMAND_TIMEOUT)?;
    let rt = runtime()?;
    let req = JobCommandRequest {
        job_id: a.job.clone(),
        argv: a.command,
        stdin,
    };
    let reply = rt.block_on(client.command(&routes::SCHEDD_SSH_TO_JOB, Some(&req)))?;
    std::io::stdout().write_all(&reply.stdout)?;
    std::io::stdout().flush()?;
    std::io::stderr().write_all(&reply.stderr)?;
    Ok(ExitCode::from(u8::try_from(reply.exit_code).unwrap_or(255)))
}

// ----- skua wait --------------------------------------------------------------

#[derive(clap::Args)]
pub struct WaitArgs {
    /// Show the jobs' submissions, starts and ends.
    #[arg(long)]
    status: bool,
    /// Print the log's events as they are read.
    #[arg(long)]
    echo: bool,
    /// Give up after this many seconds (exit 1, "Time expired.").
    #[arg(long)]
    wait: Option<f64>,
    /// Wait for this many jobs to end (default: all).
    #[arg(long)]
    num: Option<usize>,
    /// With -echo, print the events of every job, not only the watched.
    #[arg(long)]
    allevents: bool,
    /// Seconds between two reads of the log.
    #[arg(long, default_value_t = 1.0, hide = true)]
    interval: f64,
    /// The job event log.
    log: PathBuf,
    /// The job (C.P) or cluster (C) to wait for (default: every job of the
    /// log).
    job: Option<String>,
}

pub fn wait(a: WaitArgs) -> ExitCode {
    match wait_inner(a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skua wait: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// An event's job (cluster, proc) and its text.
type LogEvent = ((i64, i64), String);

/// The whole events of `text` after its first `from` bytes, each with its
/// job; and where the whole events end.
fn new_events(text: &str, from: usize) -> (Vec<LogEvent>, usize) {
    let done = crate::watch_view::complete_part(text).len();
    let mut events = Vec::new();
    let mut cur: Option<LogEvent> = None;
    for line in text[from.min(done)..done].split_inclusive('\n') {
        match cur.as_mut() {
            Some((_, body)) => body.push_str(line),
            None => {
                let id = line
                    .split_once('(')
                    .and_then(|(_, r)| r.split_once(')'))
                    .map(|(id, _)| {
                        let mut p = id.split('.').map(|n| n.parse::<i64>().unwrap_or(-1));
                        (p.next().unwrap_or(-1), p.next().unwrap_or(-1))
                    })
                    .unwrap_or((-1, -1));
                cur = Some((id, line.to_string()));
            }
        }
        if line.trim() == "..." {
            events.extend(cur.take());
        }
    }
    (events, done)
}

fn wait_inner(a: WaitArgs) -> Result<ExitCode> {
    let pick = match &a.job {
        Some(j) => JobPick::parse(j).map_err(anyhow::Error::msg)?,
        None => JobPick::default(),
    };
    if a.interval.is_nan() || a.interval <= 0.0 {
        bail!("{} must be positive", crate::opt("interval"));
    }
    let deadline = match a.wait {
        Some(s) if s.is_finite() && s >= 0.0 => Some(Instant::now() + Duration::from_secs_f64(s)),
        Some(s) => bail!("{} {s}: not a number of seconds", crate::opt("wait")),
        None => None,
    };
    let mut tracked = None;
    let mut before: Vec<JobState> = Vec::new();
    let mut echoed = 0;
    let mut out = std::io::stdout().lock();
    loop {
        let text = std::fs::read_to_string(&a.log)
            .with_context(|| format!("cannot read the log {}", a.log.display()))?;
        let jobs = job_states(&text).map_err(|e| anyhow::anyhow!("{}: {e}", a.log.display()))?;
        if a.echo {
            let (events, end) = new_events(&text, echoed);
            for (id, ev) in events {
                if a.allevents || pick.matches(id.0, id.1) {
                    out.write_all(ev.as_bytes())?;
                }
            }
            echoed = end;
        }
        if a.status {
            for l in status_lines(&before, &jobs, pick) {
                writeln!(out, "{l}")?;
            }
        }
        before = jobs;
        if let WaitStep::Done(msg) = wait_step(&before, pick, a.num, &mut tracked) {
            writeln!(out, "{msg}")?;
            return Ok(ExitCode::SUCCESS);
        }
        out.flush()?;
        let pause = Duration::from_secs_f64(a.interval);
        if let Some(d) = deadline {
            let now = Instant::now();
            if now >= d {
                writeln!(out, "Time expired.")?;
                return Ok(ExitCode::from(1));
            }
            std::thread::sleep(pause.min(d - now));
        } else {
            std::thread::sleep(pause);
        }
    }
}

// ----- skua watch_q ------------------------------------------------------------

#[derive(clap::Args)]
pub struct WatchQArgs {
    /// Track the jobs of these users (default: yours, when no cluster or
    /// file is named).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    users: Vec<String>,
    /// Track these clusters.
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    clusters: Vec<u32>,
    /// Track the jobs of these job event logs (no schedd query).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    files: Vec<PathBuf>,
    /// Exit when all|any|none of the jobs are active|done|idle|held|running
    /// (with the exit code given last, 0 by default), e.g. `all,done`.
    #[arg(long)]
    exit: Option<String>,
    /// Seconds between two reads of the logs.
    #[arg(long, default_value_t = 0.5)]
    interval: f64,
    /// Rows by batch name, event log or cluster.
    #[arg(long, value_enum, default_value_t = GroupBy::Batch)]
    groupby: GroupBy,
}

pub fn watch_q(a: WatchQArgs) -> ExitCode {
    report("watch_q", watch_q_inner(a))
}

/// A tracked log: which clusters of it to show (`None`: all) and each
/// cluster's batch name.
struct LogSource {
    clusters: Option<BTreeSet<i64>>,
    batch: BTreeMap<i64, String>,
}

fn string_of(ad: &classad::ClassAd, n: &str) -> Option<String> {
    match ad.lookup(n) {
        Some(classad::Expr::Lit(v)) => v.as_string(),
        _ => None,
    }
}

fn int_of(ad: &classad::ClassAd, n: &str) -> Option<i64> {
    match ad.lookup(n) {
        Some(classad::Expr::Lit(v)) => v.as_int(),
        _ => None,
    }
}

/// The logs to read: from `-files`, else from one schedd query.
fn find_logs(a: &WatchQArgs) -> Result<BTreeMap<PathBuf, LogSource>> {
    let mut logs = BTreeMap::new();
    for f in &a.files {
        logs.insert(
            f.clone(),
            LogSource {
                clusters: None,
                batch: BTreeMap::new(),
            },
        );
    }
    if !a.files.is_empty() && a.users.is_empty() && a.clusters.is_empty() {
        return Ok(logs);
    }
    let mut selector = JobSelector {
        owners: a.users.clone(),
        jobs: a.clusters.iter().map(|c| c.to_string()).collect(),
        ..JobSelector::default()
    };
    if selector.owners.is_empty() && selector.jobs.is_empty() {
        selector.owners.push(crate::queue_cmd::current_user());
    }
    let config = load_config()?;
    let client = client_for(&config, "SCHEDD", TIMEOUT)?;
    let rt = runtime()?;
    let q = JobQuery {
        selector,
        projection: ["ClusterId", "ProcId", "UserLog", "Iwd", "JobBatchName"]
            .map(String::from)
            .to_vec(),
        ..JobQuery::default()
    };
    let reply = rt.block_on(client.command(&routes::SCHEDD_QUERY, Some(&q)))?;
    let mut warned = BTreeSet::new();
    for text in &reply.ads {
        let ad = classad::parse_ad(text).map_err(|e| anyhow::anyhow!("a job ad: {e}"))?;
        let cluster = int_of(&ad, "ClusterId").unwrap_or(-1);
        let Some(log) = string_of(&ad, "UserLog") else {
            if warned.insert(cluster) {
                eprintln!(
                    "Cluster {cluster} does not have a job event log file \
                     (set log=<path> in the submit description)"
                );
            }
            continue;
        };
        let path = match string_of(&ad, "Iwd") {
            Some(iwd) if !Path::new(&log).is_absolute() => Path::new(&iwd).join(&log),
            _ => PathBuf::from(&log),
        };
        let src = logs.entry(path).or_insert_with(|| LogSource {
            clusters: Some(BTreeSet::new()),
            batch: BTreeMap::new(),
        });
        if let Some(c) = src.clusters.as_mut() {
            c.insert(cluster);
        }
        if let Some(b) = string_of(&ad, "JobBatchName") {
            src.batch.insert(cluster, b);
        }
    }
    Ok(logs)
}

fn watch_q_inner(a: WatchQArgs) -> Result<ExitCode> {
    if !a.interval.is_finite() || a.interval <= 0.0 {
        bail!(
            "{} must be a positive number of seconds",
            crate::opt("interval")
        );
    }
    let exit = match &a.exit {
        Some(e) => Some(ExitWhen::parse(e).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let logs = find_logs(&a)?;
    if logs.is_empty() {
        bail!("no job event log to read: no job found has one");
    }
    let terminal = std::io::stdout().is_terminal();
    let mut shown = String::new();
    let mut shown_lines = 0;
    loop {
        let mut jobs = Vec::new();
        for (path, src) in &logs {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            };
            let states =
                job_states(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            for state in states {
                if src
                    .clusters
                    .as_ref()
                    .is_some_and(|c| !c.contains(&state.cluster))
                {
                    continue;
                }
                let key = match a.groupby {
                    GroupBy::Batch => src
                        .batch
                        .get(&state.cluster)
                        .cloned()
                        .unwrap_or_else(|| format!("ID: {}", state.cluster)),
                    GroupBy::Log => path.display().to_string(),
                    GroupBy::Cluster => state.cluster.to_string(),
                };
                jobs.push(Tracked { state, key });
            }
        }
        let table = watch_table(&jobs, a.groupby);
        if table != shown {
            let mut out = std::io::stdout().lock();
            if terminal && shown_lines > 0 {
                // back to the table's first line, and clear below
                write!(out, "\x1b[{shown_lines}A\x1b[J")?;
            }
            out.write_all(table.as_bytes())?;
            out.flush()?;
            shown_lines = table.lines().count();
            shown = table;
        }
        if let Some(e) = &exit {
            if e.met(&jobs) {
                return Ok(ExitCode::from(e.code));
            }
        }
        std::thread::sleep(Duration::from_secs_f64(a.interval));
    }
}
