//! HTCondor's submit description language, as a pure library.
//!
//! [`submit`] reads a submit description (the text of a submit file), runs its statements in
//! order — macro definitions, `+Attr` / `MY.Attr` attributes, `if`/`else`, `include`, and every
//! form of the `queue` statement — and returns the complete job ClassAds `condor_submit` would
//! build, in ProcId order.
//!
//! The crate is a pure core: files arrive through a [`FileSource`] (the submit file's
//! `include`s, `queue ... from FILE`, `queue ... matching`, the size of the executable), and
//! everything else a submission depends on — the owner, the cluster id, the current time, the
//! submitter's environment, the host's Arch/OpSys, the configuration's FileSystemDomain and
//! UidDomain, `SUBMIT_ATTRS` — through [`SubmitOptions`]. The macro engine (`$(X)`,
//! `$(X:default)`, `$ENV`, `$INT`, `$EVAL`, `$CHOICE`, `$F...`, `$SUBSTR`, `$RANDOM_INTEGER`,
//! `if`/`elif`/`else`, `@=` blocks) is the configuration language's, from `skua-config`.
//!
//! ```
//! use skua_submit::{submit, SubmitOptions};
//! use skua_config::MemoryFiles;
//!
//! let opts = SubmitOptions::new("alice", 7, 1_700_000_000, "/home/alice");
//! let text = "executable = /bin/sleep\narguments = $(Process)\nqueue 2\n";
//! let sub = submit(text, &MemoryFiles::new(), &opts).expect("valid submit file");
//! let jobs = &sub.clusters[0].jobs;
//! assert_eq!(jobs.len(), 2);
//! let args = jobs[1].lookup("Args").map(classad::unparse);
//! assert_eq!(args.as_deref(), Some("\"1\""));
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod error;
mod job;
mod queue;
mod quoting;
mod reader;
mod scope;
mod units;

use std::collections::BTreeMap;

pub use error::SubmitError;
pub use queue::{parse_queue_args, ForeachMode, QueueArgs, Slice};
pub use skua_config::{FileSource, MemoryFiles};

/// Everything a submission depends on besides the submit text and the files.
#[derive(Debug, Clone)]
pub struct SubmitOptions {
    /// The submitting user (`Owner`).
    pub owner: String,
    /// The cluster id given to the submission's first cluster.
    pub cluster_id: u32,
    /// The submission time, seconds since the epoch (`QDate`, `EnteredCurrentStatus`).
    pub now: i64,
    /// The submitter's current directory, absolute (relative paths are taken from it).
    pub submit_dir: String,
    /// The submit file's path as given (the `$(SUBMIT_FILE)` macro, and error messages).
    pub submit_file: String,
    /// The submitter's environment (for `getenv` and `$ENV(...)`).
    pub env: BTreeMap<String, String>,
    /// The submit host's architecture as HTCondor names it (`X86_64`).
    pub arch: String,
    /// The submit host's operating system as HTCondor names it (`LINUX`).
    pub opsys: String,
    /// `OpSysAndVer` of the submit host (`AlmaLinux9`), for the `$(OPSYSANDVER)` macro.
    pub opsys_and_ver: String,
    /// `OpSysMajorVer` of the submit host (`9`).
    pub opsys_major_ver: String,
    /// `OpSysVer` of the submit host (`900`).
    pub opsys_ver: String,
    /// The configuration's `FILESYSTEM_DOMAIN` (the job's `FileSystemDomain`).
    pub filesystem_domain: String,
    /// The configuration's `UID_DOMAIN`.
    pub uid_domain: String,
    /// The submit host's name.
    pub hostname: String,
    /// `SUBMIT_ATTRS`: attribute name and expression text put into every job (a `+Attr` of the
    /// submit file overrides).
    pub submit_attrs: Vec<(String, String)>,
    /// Extra lines (`-append`), read just before the first queue statement.
    pub appended_lines: Vec<String>,
    /// Command-line macro definitions (`name=value`), defined before the file is read.
    pub overrides: Vec<(String, String)>,
    /// Most jobs one submission may create (`None`: no limit).
    pub max_jobs_per_submission: Option<usize>,
    /// `JOB_DEFAULT_REQUESTMEMORY` (expression text; MiB).
    pub default_request_memory: String,
    /// `JOB_DEFAULT_REQUESTDISK` (expression text; KiB).
    pub default_request_disk: String,
    /// `JOB_DEFAULT_REQUESTCPUS` (expression text).
    pub default_request_cpus: String,
    /// The universe used when the file names none (`DEFAULT_UNIVERSE`).
    pub default_universe: String,
    /// `JOB_DEFAULT_LEASE_DURATION` (seconds, 2400): the `JobLeaseDuration`
    /// of a job whose file sets no `job_lease_duration` (0: none).
    pub default_lease_duration: i64,
    /// Seed for `$RANDOM_CHOICE` / `$RANDOM_INTEGER`.
    pub random_seed: u64,
    /// The arguments of condor_submit's `-queue` option: a queue statement read after the
    /// description, which then may not have one of its own.
    pub queue_args: Option<String>,
}

impl SubmitOptions {
    /// Options with HTCondor's defaults for everything but the owner, cluster id, time and
    /// submit directory: Linux on x86_64, an empty environment, no limits.
    pub fn new(owner: &str, cluster_id: u32, now: i64, submit_dir: &str) -> Self {
        SubmitOptions {
            owner: owner.to_string(),
            cluster_id,
            now,
            submit_dir: submit_dir.to_string(),
            submit_file: "job.sub".to_string(),
            env: BTreeMap::new(),
            arch: "X86_64".to_string(),
            opsys: "LINUX".to_string(),
            opsys_and_ver: String::new(),
            opsys_major_ver: String::new(),
            opsys_ver: String::new(),
            filesystem_domain: "localdomain".to_string(),
            uid_domain: "localdomain".to_string(),
            hostname: "localhost".to_string(),
            submit_attrs: Vec::new(),
            appended_lines: Vec::new(),
            overrides: Vec::new(),
            max_jobs_per_submission: None,
            default_request_memory: "128".to_string(),
            default_request_disk: "MAX({1024, (TransferInputSizeMB + 1) * 1.25}) * 1024"
                .to_string(),
            default_request_cpus: "1".to_string(),
            default_universe: "vanilla".to_string(),
            default_lease_duration: 2400,
            random_seed: now as u64,
            queue_args: None,
        }
    }
}

/// The result of a submission: normally one cluster.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The clusters, in order.
    pub clusters: Vec<ClusterJobs>,
    /// The value of the `skip_filechecks` command (`true`, `false` or `warn`), when the
    /// description sets it: the submitting tool's file checks follow it (HTCondor's
    /// `SUBMIT_SKIP_FILECHECKS` when unset).
    pub skip_filechecks: Option<String>,
}

impl Submission {
    /// Every job of every cluster, in order.
    pub fn jobs(&self) -> impl Iterator<Item = &classad::ClassAd> {
        self.clusters.iter().flat_map(|c| c.jobs.iter())
    }
}

/// The jobs of one cluster.
#[derive(Debug, Clone)]
pub struct ClusterJobs {
    /// The cluster id.
    pub cluster_id: u32,
    /// Complete job ads (cluster attributes included, `ClusterId` and `ProcId` set), in ProcId
    /// order.
    pub jobs: Vec<classad::ClassAd>,
}

/// HTCondor's universe numbers.
pub mod universe {
    /// `vanilla` (also `docker` and `container`, which are vanilla jobs with an image).
    pub const VANILLA: i64 = 5;
    /// `scheduler`
    pub const SCHEDULER: i64 = 7;
    /// `grid`
    pub const GRID: i64 = 9;
    /// `java`
    pub const JAVA: i64 = 10;
    /// `parallel`
    pub const PARALLEL: i64 = 11;
    /// `local`
    pub const LOCAL: i64 = 12;
    /// `vm`
    pub const VM: i64 = 13;
}

/// Reads a submit description and builds its job ads. `text` is the submit file's content,
/// `files` gives access to the files it refers to, `opts` everything else.
///
/// Fails (naming the file and line) on anything `condor_submit` rejects: an invalid command
/// value, an `error :` statement, a missing executable, an unreadable queue source, an invalid
/// expression, an unknown universe, more jobs than [`SubmitOptions::max_jobs_per_submission`],
/// or no queue statement at all.
pub fn submit(
    text: &str,
    files: &dyn FileSource,
    opts: &SubmitOptions,
) -> Result<Submission, SubmitError> {
    reader::run(text, files, opts)
}

/// The name a schedd's dedicated scheduler goes by: `DedicatedScheduler@<schedd name>`.
pub fn dedicated_scheduler_name(schedd_name: &str) -> String {
    format!("DedicatedScheduler@{schedd_name}")
}

/// Gives every parallel-universe job of `submission` the schedd's dedicated scheduler as its
/// `Scheduler` (`"DedicatedScheduler@<schedd_name>"`): the scheduler that runs it, and what an
/// execute host's `START`/`RANK` expressions compare with. A real submission calls this with
/// the name of the schedd it submits to; a dry run, like `condor_submit`'s ads, has none.
pub fn assign_dedicated_scheduler(submission: &mut Submission, schedd_name: &str) {
    let name = dedicated_scheduler_name(schedd_name);
    for cluster in &mut submission.clusters {
        for job in &mut cluster.jobs {
            if matches!(
                job.lookup("JobUniverse"),
                Some(classad::Expr::Lit(classad::Value::Int(universe::PARALLEL)))
            ) {
                job.insert("Scheduler", classad::Expr::string(&name));
            }
        }
    }
}

/// A description of the first job whose universe Skua cannot run yet (everything but vanilla
/// without a container image, parallel, scheduler and local), or `None` when Skua can run
/// every job. The dry run
/// shows such jobs as HTCondor would; a real submission should refuse them with this message.
pub fn unsupported_universe(submission: &Submission) -> Option<String> {
    for job in submission.jobs() {
        let universe = match job.lookup("JobUniverse") {
            Some(classad::Expr::Lit(classad::Value::Int(u))) => *u,
            _ => universe::VANILLA,
        };
        let name = match universe {
            universe::VANILLA => {
                if job.lookup("DockerImage").is_some() {
                    "docker"
                } else if job.lookup("ContainerImage").is_some() {
                    "container"
                } else {
                    continue;
                }
            }
            // the schedd runs these itself, on the submit host
            universe::SCHEDULER | universe::LOCAL => continue,
            universe::GRID => "grid",
            universe::JAVA => "java",
            // The schedd's dedicated scheduler runs a parallel job's nodes.
            universe::PARALLEL => continue,
            universe::VM => "vm",
            _ => "unknown",
        };
        return Some(format!(
            "the {name} universe is not supported yet (Skua runs vanilla, parallel, scheduler and local universe jobs)"
        ));
    }
    None
}
