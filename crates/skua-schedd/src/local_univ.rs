//! The scheduler and local universes: jobs the schedd runs itself on the
//! submit host, as their owner, never matched by the negotiator (the
//! queue's rules are in `skua_queue::local`).
//!
//! - The start pass ([`start_due`]) runs on the schedd's loop each
//!   `SCHEDD_INTERVAL` and whenever the queue changed: it takes the idle
//!   scheduler/local jobs in queue order, applies the start test
//!   (`START_SCHEDULER_UNIVERSE` / `START_LOCAL_UNIVERSE` in the Scheduler
//!   ad, then the job's `Requirements` against that ad) and marks each
//!   job it starts Running in the same queue operation.
//! - Each started job gets a thread of its own ([`run_job`]) that opens
//!   the job's standard streams and spawns its program with the owner's
//!   whole identity (`skua_daemon::account`), in a process group of its
//!   own, waits for it, and reports the exit (or the hold) to the queue's
//!   owner: the exit policy, the user log and the accounting are the
//!   queue's, as for a job that ran on a slot.
//! - [`LocalRuns::kill`] (after `skua rm` / `skua hold`, or a periodic
//!   hold or remove seen by the next start pass) sends the job's
//!   `KillSig` to its process group, then `SIGKILL` after
//!   [`KILL_GRACE`].
//!
//! Both universes run the same way: in the job's `Iwd` (`/tmp` when it
//! has none), with `In`/`Out`/`Err` relative to it (`/dev/null` when
//! unset), `CONDOR_ID=<cluster>.<proc>` added to the job's environment,
//! and no file transfer (HTCondor's local universe transfers nothing
//! either unless `SCHEDD_USES_STARTD_FOR_LOCAL_UNIVERSE` is set).

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use classad::args_env::{self, DoubleQuotes};
use classad::{ClassAd, Expr, Value};
use skua_daemon::account::{run_as_thread, Account};
use skua_daemon::{Clock, DaemonContext};
use skua_queue::local::{
    may_start, SubmitHostUniverse, DEFAULT_START_LOCAL_UNIVERSE, DEFAULT_START_SCHEDULER_UNIVERSE,
};
use skua_queue::{ExitInfo, JobId, RunEnd, Rusage};

use crate::shared::{with_schedd, Shared};

/// How long a job killed with its `KillSig` has before `SIGKILL`.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(10);

/// HTCondor's hold code for a program that cannot be started
/// (`FailedToCreateProcess`; the subcode is the errno).
const HOLD_FAILED_TO_CREATE_PROCESS: i64 = 6;
/// HTCondor's hold code for a job whose owner cannot be switched to.
const HOLD_FAILED_TO_ACCESS_USER_ACCOUNT: i64 = 23;
/// HTCondor's hold codes for standard streams that cannot be opened.
const HOLD_UNABLE_TO_OPEN_OUTPUT: i64 = 7;
const HOLD_UNABLE_TO_OPEN_INPUT: i64 = 8;

/// The start expressions, read once from the configuration.
#[derive(Clone, Debug)]
pub(crate) struct StartKnobs {
    scheduler: Expr,
    local: Expr,
}

impl StartKnobs {
    /// `START_SCHEDULER_UNIVERSE` and `START_LOCAL_UNIVERSE`, with
    /// HTCondor's defaults.
    pub(crate) fn from_context(ctx: &DaemonContext) -> anyhow::Result<StartKnobs> {
        let knob = |name: &str, default: &str| -> anyhow::Result<Expr> {
            let text = ctx.knob(name)?.unwrap_or_else(|| default.to_string());
            classad::parse_expr(&text)
                .map_err(|e| anyhow::anyhow!("{e}"))
                .with_context(|| format!("{name} = {text} is not an expression"))
        };
        Ok(StartKnobs {
            scheduler: knob("START_SCHEDULER_UNIVERSE", DEFAULT_START_SCHEDULER_UNIVERSE)?,
            local: knob("START_LOCAL_UNIVERSE", DEFAULT_START_LOCAL_UNIVERSE)?,
        })
    }

    fn start_for(&self, u: SubmitHostUniverse) -> &Expr {
        match u {
            SubmitHostUniverse::Scheduler => &self.scheduler,
            SubmitHostUniverse::Local => &self.local,
        }
    }
}

/// One job the schedd runs.
#[derive(Debug, Default)]
struct Entry {
    /// The process group, once spawned.
    pgid: Option<i32>,
    /// The job's `KillSig`.
    kill_sig: i32,
    /// Killed by Skua (removed, held): the run ends as an eviction, not
    /// by the job's own exit.
    killed: bool,
}

/// The scheduler/local-universe jobs running now.
pub(crate) struct LocalRuns {
    running: Mutex<HashMap<JobId, Entry>>,
    clock: Clock,
    /// `SPOOL`, whose file system's free space is the start test's `Disk`.
    spool: PathBuf,
}

impl LocalRuns {
    pub(crate) fn new(clock: Clock, spool: PathBuf) -> LocalRuns {
        LocalRuns {
            running: Mutex::new(HashMap::new()),
            clock,
            spool,
        }
    }

    /// Where the process of each running job is recorded, for a restarted
    /// schedd: `$(SPOOL)/local_univ/<cluster>.<proc>`, holding the process
    /// id and its start time (`/proc/<pid>/stat` field 22), so that a
    /// recycled process id is never mistaken for the job.
    fn record_dir(&self) -> PathBuf {
        self.spool.join("local_univ")
    }

    fn record(&self, id: JobId, pid: i32) {
        let Some(start) = process_start(pid) else {
            return;
        };
        let dir = self.record_dir();
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join(id.to_string()), format!("{pid} {start}\n")));
        if let Err(e) = written {
            tracing::warn!(
                "recording the process of job {id} in {}: {e}",
                dir.display()
            );
        }
    }

    fn forget(&self, id: JobId) {
        let _ = std::fs::remove_file(self.record_dir().join(id.to_string()));
    }

    /// At start-up: kills the process groups of the scheduler/local jobs a
    /// previous schedd started (the queue puts those jobs back to Idle, so
    /// they must not go on running) and forgets them. Returns how many
    /// were still running.
    pub(crate) fn kill_leftovers(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(self.record_dir()) else {
            return 0;
        };
        let mut killed = 0;
        for e in entries.flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let mut words = text.split_whitespace();
            let pid = words.next().and_then(|w| w.parse::<i32>().ok());
            let start = words.next().and_then(|w| w.parse::<u64>().ok());
            if let (Some(pid), Some(start)) = (pid, start) {
                if pid > 1 && process_start(pid) == Some(start) {
                    tracing::info!(
                        "killing process group {pid} of job {}, started before the restart",
                        e.file_name().to_string_lossy()
                    );
                    signal_group(pid, libc::SIGKILL);
                    killed += 1;
                }
            }
            let _ = std::fs::remove_file(e.path());
        }
        killed
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<JobId, Entry>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn ids(&self) -> Vec<JobId> {
        self.lock().keys().copied().collect()
    }

    /// At shutdown: every running job gets its `KillSig`, then `SIGKILL`
    /// after at most a second; their jobs go back to Idle (now, or at the
    /// next start from the queue).
    pub(crate) async fn kill_all(&self) {
        let groups: Vec<(i32, i32)> = {
            let mut running = self.lock();
            running
                .values_mut()
                .filter_map(|e| {
                    e.killed = true;
                    e.pgid.map(|p| (p, e.kill_sig))
                })
                .collect()
        };
        if groups.is_empty() {
            return;
        }
        tracing::info!("stopping {} scheduler/local universe job(s)", groups.len());
        for (pgid, sig) in &groups {
            signal_group(*pgid, *sig);
        }
        for _ in 0..10 {
            if self.lock().values().all(|e| e.pgid.is_none()) {
                break;
            }
            self.clock.sleep(Duration::from_millis(100)).await;
        }
        for (pgid, _) in &groups {
            signal_group(*pgid, libc::SIGKILL);
        }
    }

    /// Kills the process groups of those of `jobs` that run here: their
    /// `KillSig` now, `SIGKILL` after [`KILL_GRACE`] if still running.
    pub(crate) fn kill(self: &Arc<Self>, jobs: &[JobId]) {
        let mut targets = Vec::new();
        {
            let mut running = self.lock();
            for id in jobs {
                if let Some(e) = running.get_mut(id) {
                    e.killed = true;
                    if let Some(pgid) = e.pgid {
                        targets.push((*id, pgid, e.kill_sig));
                    }
                }
            }
        }
        for (id, pgid, sig) in targets {
            tracing::info!("killing job {id} (process group {pgid})");
            signal_group(pgid, sig);
            let me = self.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    me.clock.sleep(KILL_GRACE).await;
                    let still = me.lock().get(&id).and_then(|e| e.pgid) == Some(pgid);
                    if still {
                        signal_group(pgid, libc::SIGKILL);
                    }
                });
            }
        }
    }
}

fn signal_group(pgid: i32, sig: i32) {
    let (Some(pid), Some(sig)) = (
        rustix::process::Pid::from_raw(pgid),
        rustix::process::Signal::from_named_raw(sig),
    ) else {
        return;
    };
    if let Err(e) = rustix::process::kill_process_group(pid, sig) {
        tracing::debug!("signalling process group {pgid}: {e}");
    }
}

/// The submit host's own facts, added to the Scheduler ad for the start
/// test so that the clauses `skua submit` (as `condor_submit`) puts in
/// every job's default `Requirements` (`TARGET.Arch`, `TARGET.OpSys`,
/// `TARGET.Disk >= RequestDisk`, `TARGET.Memory >= RequestMemory`) are
/// decided by the machine the job will run on.
struct HostFacts {
    arch: String,
    memory_mb: i64,
    disk_kb: i64,
    cpus: i64,
}

impl HostFacts {
    fn insert_into(&self, ad: &mut ClassAd) {
        ad.insert_value("Arch", self.arch.as_str());
        ad.insert_value("OpSys", "LINUX");
        ad.insert_value("Memory", self.memory_mb);
        ad.insert_value("Disk", self.disk_kb);
        ad.insert_value("Cpus", self.cpus);
    }
}

fn host_facts(spool: &Path) -> HostFacts {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "X86_64".to_string(),
        "aarch64" => "ARM64".to_string(),
        other => other.to_ascii_uppercase(),
    };
    let memory_mb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
        })
        .map_or(0, |kb| kb / 1024);
    let disk_kb = rustix::fs::statvfs(spool)
        .map(|v| (v.f_bavail.saturating_mul(v.f_frsize) / 1024) as i64)
        .unwrap_or(0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as i64);
    HostFacts {
        arch,
        memory_mb,
        disk_kb,
        cpus,
    }
}

/// One start pass: starts the scheduler/local-universe jobs whose start
/// test passes in `schedd_ad` (the Scheduler ad as advertised), and kills
/// the runs whose job is no longer running (a periodic hold or remove).
/// `host` is the schedd's address (the execute event's host).
pub(crate) async fn start_due(st: &Shared, knobs: &StartKnobs, schedd_ad: ClassAd, host: &str) {
    let now = st.clock.now_secs();
    let knobs = knobs.clone();
    let registered = st.local.ids();
    let h = host.to_string();
    let facts = host_facts(&st.local.spool);
    let picked = with_schedd(st, move |s| {
        let stopped: Vec<JobId> = registered
            .into_iter()
            .filter(|id| !s.status(*id).is_some_and(|st| st.is_active()))
            .collect();
        let (idle, running) = s.submit_host_jobs();
        if idle.is_empty() {
            return Ok((stopped, Vec::new()));
        }
        let mut ad = schedd_ad;
        facts.insert_into(&mut ad);
        let mut counts = running;
        let mut chosen = Vec::new();
        {
            let ev = s.evaluator(now);
            for (id, u, job) in idle {
                counts.insert_into(&mut ad);
                if !may_start(ev, knobs.start_for(u), &ad, &job) {
                    continue;
                }
                match u {
                    SubmitHostUniverse::Scheduler => counts.scheduler += 1,
                    SubmitHostUniverse::Local => counts.local += 1,
                }
                chosen.push((id, u, job));
            }
        }
        let mut started = Vec::new();
        for (id, u, job) in chosen {
            match s.start_on_submit_host(id, &h, now) {
                Ok(()) => started.push((id, u, job)),
                Err(e) => tracing::warn!("starting {} universe job {id}: {e}", u.name()),
            }
        }
        Ok((stopped, started))
    })
    .await;
    let (stopped, started) = match picked {
        Ok(p) => p,
        Err(e) => {
            tracing::error!("starting scheduler/local universe jobs: {}", e.0.message);
            return;
        }
    };
    if !stopped.is_empty() {
        st.local.kill(&stopped);
    }
    if started.is_empty() {
        return;
    }
    st.changed.notify_one();
    for (id, u, job) in started {
        st.local.lock().insert(
            id,
            Entry {
                kill_sig: kill_signal(&job),
                ..Entry::default()
            },
        );
        let st2 = st.clone();
        let host = host.to_string();
        let spawned = std::thread::Builder::new()
            .name(format!("{}-{id}", u.name()))
            .spawn(move || run_job(st2, id, u, job, host));
        if let Err(e) = spawned {
            tracing::error!("job {id}: no thread to run it: {e}");
            st.local.lock().remove(&id);
            report(
                st,
                id,
                Ended::Failed(RunEnd::Failed {
                    reason: format!("the schedd could not start a thread for the job: {e}"),
                    hold_code: 0,
                    hold_subcode: 0,
                    permanent: false,
                }),
            );
        }
    }
}

/// How a run ended.
enum Ended {
    /// The program exited (or was killed by a signal nobody in Skua sent).
    Exited(Box<ExitInfo>),
    /// Skua killed it (removed, held): the queue already knows why.
    Killed(Rusage),
    /// It could not start (held) or failed outside the job.
    Failed(RunEnd),
}

/// Tells the queue how the run of `id` ended.
fn report(st: &Shared, id: JobId, ended: Ended) {
    let now = st.clock.now_secs();
    let (changed, reschedule) = (st.changed.clone(), st.reschedule.clone());
    st.queue.send(move |q| {
        let r = match &ended {
            Ended::Exited(exit) => q.schedd.job_exited(id, exit, now),
            Ended::Killed(usage) => q.schedd.run_ended(
                id,
                &RunEnd::Evicted {
                    reason: "the job was removed or held".into(),
                },
                *usage,
                now,
            ),
            Ended::Failed(end) => q.schedd.run_ended(id, end, Rusage::default(), now),
        };
        if let Err(e) = r {
            tracing::error!("recording the end of job {id}: {e}");
        }
        changed.notify_one();
        // a requeued job may start again at once
        reschedule.notify_one();
    });
}

/// A hold decided before the program ran.
fn held(code: i64, subcode: i64, reason: String) -> Ended {
    Ended::Failed(RunEnd::Held {
        reason,
        code,
        subcode,
    })
}

/// What is needed to start the program, taken from its ad.
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    iwd: PathBuf,
    stdin: PathBuf,
    stdout: PathBuf,
    stderr: PathBuf,
}

fn string_of(ad: &ClassAd, name: &str) -> Option<String> {
    match classad::Evaluator::default().eval_attr(name, ad, None) {
        Value::Undefined | Value::Error => None,
        v => v.as_string(),
    }
}

fn kill_signal(job: &ClassAd) -> i32 {
    let named = string_of(job, "KillSig").unwrap_or_default();
    let upper = named.trim().to_ascii_uppercase();
    match upper.strip_prefix("SIG").unwrap_or(&upper) {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        other => other
            .parse::<i32>()
            .ok()
            .filter(|n| (1..=64).contains(n))
            .unwrap_or(libc::SIGTERM),
    }
}

/// The program, arguments, environment and streams of `job` (cluster
/// `id.cluster`): paths relative to the job's `Iwd`.
fn launch_of(id: JobId, job: &ClassAd) -> Result<Launch, String> {
    let iwd = PathBuf::from(string_of(job, "Iwd").unwrap_or_else(|| "/tmp".into()));
    let within = |p: String| -> PathBuf {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            iwd.join(p)
        }
    };
    let cmd = string_of(job, "Cmd").ok_or("Executable unknown - not specified in job ad!")?;
    let args = if let Some(v2) = string_of(job, "Arguments") {
        args_env::v2_words(&v2, DoubleQuotes::Ordinary).map_err(|e| format!("Arguments: {e}"))?
    } else {
        string_of(job, "Args")
            .map(|a| args_env::v1_words(&a))
            .unwrap_or_default()
    };
    let mut env = if let Some(v2) = string_of(job, "Environment") {
        args_env::env_v2_pairs(&v2, DoubleQuotes::Ordinary)
            .map_err(|e| format!("Environment: {e}"))?
    } else if let Some(v1) = string_of(job, "Env") {
        args_env::env_v1_pairs(&v1).map_err(|e| format!("Env: {e}"))?
    } else {
        Vec::new()
    };
    env.retain(|(k, _)| k != "CONDOR_ID");
    env.push(("CONDOR_ID".into(), format!("{}.{}", id.cluster, id.proc)));
    let stream = |name: &str| {
        string_of(job, name)
            .filter(|s| !s.is_empty())
            .map_or_else(|| PathBuf::from("/dev/null"), &within)
    };
    Ok(Launch {
        program: within(cmd),
        args,
        env,
        stdin: stream("In"),
        stdout: stream("Out"),
        stderr: stream("Err"),
        iwd,
    })
}

/// Whose identity the program runs with: `Some(account)` when the schedd
/// is root (never root itself), `None` when the schedd runs as the owner.
fn account_for(owner: &str) -> Result<Option<Account>, String> {
    let unable = |why: String| format!("Unable to switch to user: {owner} ({why})");
    if rustix::process::geteuid().is_root() {
        let account = Account::lookup(owner).map_err(|e| unable(e.to_string()))?;
        if account.is_root() {
            return Err(unable("jobs never run as root".into()));
        }
        return Ok(Some(account));
    }
    let me =
        Account::by_uid(rustix::process::geteuid().as_raw()).map_err(|e| unable(e.to_string()))?;
    if me.name == owner {
        Ok(None)
    } else {
        Err(unable(format!("the schedd runs as {}", me.name)))
    }
}

/// The stdio files and the spawned child, or the hold that stops the job.
fn spawn(launch: &Launch, account: Option<&Account>) -> Result<std::process::Child, Ended> {
    let open_and_spawn = || -> Result<std::process::Child, Ended> {
        // the program: HTCondor's check, with the owner's rights
        let missing = |e: &io::Error| {
            held(
                HOLD_FAILED_TO_CREATE_PROCESS,
                i64::from(e.raw_os_error().unwrap_or(libc::ENOENT)),
                format!(
                    "File '{}' is missing or not executable",
                    launch.program.display()
                ),
            )
        };
        let meta = std::fs::metadata(&launch.program).map_err(|e| missing(&e))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(missing(&io::Error::from_raw_os_error(libc::EACCES)));
        }
        let open_err = |code: i64, what: &str, p: &Path, e: io::Error| {
            held(
                code,
                i64::from(e.raw_os_error().unwrap_or(0)),
                format!("cannot open the job's {what} {}: {e}", p.display()),
            )
        };
        let stdin = std::fs::File::open(&launch.stdin).map_err(|e| {
            open_err(
                HOLD_UNABLE_TO_OPEN_INPUT,
                "standard input",
                &launch.stdin,
                e,
            )
        })?;
        let create = |p: &Path| {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .map_err(|e| open_err(HOLD_UNABLE_TO_OPEN_OUTPUT, "output", p, e))
        };
        let stdout = create(&launch.stdout)?;
        let stderr = if launch.stderr == launch.stdout {
            stdout
                .try_clone()
                .map_err(|e| open_err(HOLD_UNABLE_TO_OPEN_OUTPUT, "error", &launch.stderr, e))?
        } else {
            create(&launch.stderr)?
        };
        std::process::Command::new(&launch.program)
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&launch.iwd)
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .spawn()
            .map_err(|e| missing(&e))
    };
    match account {
        // a process spawned from a thread that became the account is born
        // with its whole identity (uid, gid, groups, no capabilities)
        Some(a) => run_as_thread(a, open_and_spawn).map_err(|e| {
            held(
                HOLD_FAILED_TO_ACCESS_USER_ACCOUNT,
                0,
                format!("Unable to switch to user: {} ({e})", a.name),
            )
        })?,
        None => open_and_spawn(),
    }
}

/// When process `pid` started (clock ticks after boot), if it exists.
fn process_start(pid: i32) -> Option<u64> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &line[line.rfind(')')? + 1..];
    // rest starts at field 3 (state); the start time is field 22
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// CPU seconds of the exited (not yet reaped) process `pid`, its waited
/// children included, from `/proc/<pid>/stat`.
fn zombie_usage(pid: i32) -> Rusage {
    let Ok(line) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Rusage::default();
    };
    let Some(rest) = line.rfind(')').map(|i| &line[i + 1..]) else {
        return Rusage::default();
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state); utime, stime, cutime, cstime are 14..=17
    let field = |n: usize| -> u64 { f.get(n - 3).and_then(|v| v.parse().ok()).unwrap_or(0) };
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Rusage {
        user_secs: ((field(14) + field(16)) / hz) as i64,
        sys_secs: ((field(15) + field(17)) / hz) as i64,
    }
}

/// Runs one job to its end (on a thread of its own).
fn run_job(st: Shared, id: JobId, u: SubmitHostUniverse, job: ClassAd, host: String) {
    let ended = run_job_inner(&st, id, &job, &host);
    st.local.lock().remove(&id);
    st.local.forget(id);
    tracing::info!("{} universe job {id} ended", u.name());
    report(&st, id, ended);
}

fn run_job_inner(st: &Shared, id: JobId, job: &ClassAd, host: &str) -> Ended {
    let owner = string_of(job, "Owner").unwrap_or_default();
    let account = match account_for(&owner) {
        Ok(a) => a,
        Err(reason) => return held(HOLD_FAILED_TO_ACCESS_USER_ACCOUNT, 0, reason),
    };
    let launch = match launch_of(id, job) {
        Ok(l) => l,
        Err(reason) => return held(HOLD_FAILED_TO_CREATE_PROCESS, 0, reason),
    };
    let mut child = match spawn(&launch, account.as_ref()) {
        Ok(c) => c,
        Err(ended) => return ended,
    };
    let Ok(pid) = i32::try_from(child.id()) else {
        return Ended::Failed(RunEnd::Failed {
            reason: "the job's process id is out of range".into(),
            hold_code: 0,
            hold_subcode: 0,
            permanent: false,
        });
    };
    tracing::info!(pid, program = %launch.program.display(), "job {id} is running on the submit host");
    st.local.record(id, pid);
    let killed_early = {
        let mut running = st.local.lock();
        let entry = running.entry(id).or_default();
        entry.pgid = Some(pid);
        entry.killed
    };
    if killed_early {
        signal_group(pid, libc::SIGKILL);
    } else {
        let now = st.clock.now_secs();
        let host = host.to_string();
        st.queue.send(move |q| {
            if let Err(e) = q.schedd.executing(id, &host, "", now) {
                tracing::warn!("recording the execution of job {id}: {e}");
            }
        });
    }
    // wait without reaping, so the usage can still be read
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::waitid(
            rustix::process::WaitId::Pid(p),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        );
    }
    let usage = zombie_usage(pid);
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            return Ended::Failed(RunEnd::Failed {
                reason: format!("waiting for the job's process: {e}"),
                hold_code: 0,
                hold_subcode: 0,
                permanent: false,
            })
        }
    };
    // whatever is left of the group goes with the job
    signal_group(pid, libc::SIGKILL);
    if st.local.lock().get(&id).is_some_and(|e| e.killed) {
        return Ended::Killed(usage);
    }
    Ended::Exited(Box::new(ExitInfo {
        exit_code: status.code().map(i64::from),
        signal: status.signal().map(i64::from),
        core_file: status.core_dumped().then(|| "core".to_string()),
        remote_usage: usage,
        ..ExitInfo::default()
    }))
}
