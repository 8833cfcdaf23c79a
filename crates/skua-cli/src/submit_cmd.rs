//! `skua submit`: turn a submit description into job ads (HTCondor's `condor_submit`).
//!
//! This is the edge: it reads the submit file, the environment, the host and the configuration,
//! and hands them to the pure `skua-submit` crate. `-dry-run` prints every job ad in
//! HTCondor's long form (a blank line after each job) and submits nothing; otherwise the jobs
//! go to the schedd as one cluster, committed before the tool reports them.
//!
//! A submission carries a key unique to it (recorded as the jobs' `SubmissionId`): when the
//! connection breaks before the answer arrives, the tool sends the same request again and the
//! schedd answers with the cluster it already made instead of queueing the jobs twice. When
//! the schedd cannot be reached again, the tool says that the outcome is unknown and how to
//! find out.

use std::process::ExitCode;

use anyhow::{bail, Context};
use skua_daemon::system_config::{self, RealFiles};
use skua_submit::{Submission, SubmitOptions};

#[derive(clap::Args)]
pub struct SubmitArgs {
    /// Print the job ads instead of submitting them.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Copy the input files into the schedd's spool; the job runs from there and its output
    /// waits there for `skua transfer_data`.
    #[arg(long = "spool")]
    spool: bool,
    /// A submit command to add just before the first queue statement (repeatable).
    #[arg(short = 'a', long = "append", value_name = "LINE")]
    append: Vec<String>,
    /// A script executable with CRLF line endings is a warning, not an error.
    #[arg(long = "allow-crlf-script")]
    allow_crlf_script: bool,
    /// The job batch name (`JobBatchName`), as `batch_name = NAME` in the description.
    #[arg(long = "batch-name", value_name = "NAME")]
    batch_name: Option<String>,
    /// The submit description file (`-` or none: standard input).
    file: Option<String>,
    /// Macro definitions `name=value`, made before the file is read.
    overrides: Vec<String>,
    /// A queue statement's arguments (`-queue 3`, `-queue in (a, b)`): the description then
    /// has no queue statement of its own. The last option on the command line.
    #[arg(long = "queue", num_args = 0.., allow_hyphen_values = true, value_name = "ARGS")]
    queue: Option<Vec<String>>,
}

impl SubmitArgs {
    /// The description's text and the name it goes by (`-` read from standard input).
    fn description(&self) -> anyhow::Result<(String, String)> {
        match self.file.as_deref() {
            None | Some("-") => {
                use std::io::Read;
                let mut bytes = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut bytes)
                    .context("cannot read the submit description from standard input")?;
                Ok((String::from_utf8_lossy(&bytes).into_owned(), "-".into()))
            }
            Some(path) => {
                let bytes = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
                Ok((
                    String::from_utf8_lossy(&bytes).into_owned(),
                    path.to_string(),
                ))
            }
        }
    }

    /// `-append` lines with `-batch-name`'s.
    fn appended(&self) -> Vec<String> {
        let mut lines = self.append.clone();
        if let Some(name) = &self.batch_name {
            lines.push(format!("batch_name = {name}"));
        }
        lines
    }

    fn queue_args(&self) -> Option<String> {
        self.queue.as_ref().map(|words| words.join(" "))
    }
}

/// The cluster id a dry run shows.
const DRY_RUN_CLUSTER: u32 = 1;

pub fn run(args: SubmitArgs) -> ExitCode {
    let overrides = match parse_overrides(&args.overrides) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skua submit: {e:#}");
            return ExitCode::from(1);
        }
    };
    if !args.dry_run {
        return crate::pool_cmd::report("submit", submit_to_schedd(&args, &overrides));
    }
    let built = args.description().and_then(|(text, name)| {
        build_from_text(
            &text,
            &name,
            &args.appended(),
            &overrides,
            DRY_RUN_CLUSTER,
            args.queue_args(),
        )
    });
    match built {
        Ok(sub) => {
            // the dry run shows the ads only: the file checks belong to a
            // real submission (HTCondor's submit conformance corpus is made
            // with them off)
            let ads: Vec<classad::ClassAd> = sub.jobs().cloned().collect();
            print!("{}", crate::ad_output::format_long(&ads, 0));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("skua submit: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Builds the jobs with a cluster id reserved at the schedd, then queues
/// them in one transaction; prints condor_submit's summary.
fn submit_to_schedd(args: &SubmitArgs, overrides: &[(String, String)]) -> anyhow::Result<ExitCode> {
    use skua_proto::{routes, NewCluster, NewClusterReply, Submit, SubmitReply};
    let config = crate::pool_cmd::load_config()?;
    let rt = crate::pool_cmd::runtime()?;
    // $(Cluster) is in the ads: the id comes first. An id reserved for a
    // file that then fails is simply never used, so asking again is safe.
    let mut attempt = 0;
    let reserved: NewClusterReply = loop {
        let client =
            crate::pool_cmd::client_for(&config, "SCHEDD", std::time::Duration::from_secs(300))?;
        match rt.block_on(client.command(&routes::SCHEDD_NEW_CLUSTER, Some(&NewCluster {}))) {
            Ok(r) => break r,
            Err(e) if transient(&e) && attempt < RETRY_DELAYS.len() => {
                retry_after(attempt, &e);
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    };
    let (text, file) = args.description()?;
    let mut sub = build_from_text(
        &text,
        &file,
        &args.appended(),
        overrides,
        reserved.cluster,
        args.queue_args(),
    )?;
    // A parallel job names the dedicated scheduler of the schedd it goes to (this host's).
    skua_submit::assign_dedicated_scheduler(
        &mut sub,
        &crate::queue_cmd::local_schedd_name(&config),
    );
    if let Some(what) = skua_submit::unsupported_universe(&sub) {
        match universe_line(&text) {
            Some(line) => bail!("{file}:{line}: {what}"),
            None => bail!("{file}: {what} (DEFAULT_UNIVERSE)"),
        }
    }
    if let Err(code) = file_checks(&sub, args.allow_crlf_script) {
        return Ok(code);
    }
    if sub.clusters.len() > 1 {
        bail!(
            "{}: its jobs form {} clusters; Skua submits one cluster per submit file so far",
            file,
            sub.clusters.len()
        );
    }
    let Some(mut cluster) = sub
        .clusters
        .into_iter()
        .next()
        .filter(|c| !c.jobs.is_empty())
    else {
        println!("Submitting job(s).\n0 job(s) submitted.");
        return Ok(ExitCode::SUCCESS);
    };
    if args.spool {
        crate::spool_cmd::prepare(&mut cluster.jobs).with_context(|| file.clone())?;
    }
    warn_undefined_attrs(&config, &rt, &cluster.jobs);
    // the attributes every job shares travel once
    let (common, rests) = classad::ClassAd::factor_common(&cluster.jobs);
    let key = submission_key();
    let body = Submit {
        cluster: reserved.cluster,
        jobs: rests.iter().map(classad::unparse_ad).collect(),
        cluster_ad: Some(classad::unparse_ad(&common)),
        submission_id: Some(key.clone()),
    };
    // Sent again, with the same key, when the answer is lost: the schedd
    // answers a repeated key with the cluster it made the first time.
    let mut attempt = 0;
    let mut may_have_arrived = false;
    let reply: SubmitReply = loop {
        // a new client each time: a restarted schedd may have a new address
        // the jobs themselves may take longer to send than TOOL_TIMEOUT
        let sent =
            crate::pool_cmd::client_for(&config, "SCHEDD", std::time::Duration::from_secs(300))
                .map(|c| {
                    let label = c.label().to_string();
                    c.with_label_and_timeout(label, std::time::Duration::from_secs(300))
                })
                .map_err(|e| (e, None))
                .and_then(|client| {
                    rt.block_on(client.command(&routes::SCHEDD_SUBMIT, Some(&body)))
                        .map_err(|e| {
                            let arrived = !matches!(e, skua_net::NetError::Connect { .. });
                            let retry = transient(&e);
                            (anyhow::Error::from(e), Some((retry, arrived)))
                        })
                });
        match sent {
            Ok(r) => break r,
            Err((e, how)) => {
                // not finding the schedd (no address yet) is worth another try
                let (retry, arrived) = how.unwrap_or((true, false));
                may_have_arrived |= arrived;
                if retry && attempt < RETRY_DELAYS.len() {
                    let delay = RETRY_DELAYS[attempt];
                    eprintln!("skua submit: {e:#}; trying again in {delay} s");
                    std::thread::sleep(std::time::Duration::from_secs(delay));
                    attempt += 1;
                    continue;
                }
                if may_have_arrived {
                    bail!("{}", uncertain(&e, &key));
                }
                return Err(e);
            }
        }
    };
    println!("Submitting job(s).");
    if args.spool && !reply.repeated {
        crate::spool_cmd::upload(&config, &rt, reply.cluster, &cluster.jobs).with_context(
            || {
                format!(
                    "the jobs of cluster {} stay held until their input files are spooled; \
                 remove them with `skua rm {}`",
                    reply.cluster, reply.cluster
                )
            },
        )?;
    }
    println!(
        "{} job(s) submitted to cluster {}.",
        reply.jobs, reply.cluster
    );
    Ok(ExitCode::SUCCESS)
}

/// condor_submit's file checks ([`crate::submit_checks`]): prints the warnings, and the
/// errors with the exit code to end with.
fn file_checks(sub: &skua_submit::Submission, allow_crlf: bool) -> Result<(), ExitCode> {
    use crate::submit_checks::{check, CheckMode};
    let knob_skip = system_config::load(Some("SUBMIT"), None)
        .ok()
        .and_then(|c| c.get("SUBMIT_SKIP_FILECHECKS").ok().flatten())
        .map(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "false" | "no" | "0"))
        .unwrap_or(true);
    let mode = match CheckMode::new(sub.skip_filechecks.as_deref(), knob_skip, allow_crlf) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("\nERROR: {e}");
            return Err(ExitCode::from(1));
        }
    };
    let found = check(sub.jobs(), mode);
    for w in &found.warnings {
        eprintln!("\nWARNING: {w}");
    }
    for e in &found.errors {
        eprintln!("\nERROR: {e}");
    }
    if found.errors.is_empty() {
        Ok(())
    } else {
        Err(ExitCode::from(1))
    }
}

/// Warns about attributes the jobs' Requirements need from the machine that no slot in the
/// pool defines (`Memroy` for `Memory`): the collector's slot ads are asked for once, and
/// when they cannot be had nothing is said. A warning, never an error: the machine that
/// defines the attribute may simply not have joined yet.
fn warn_undefined_attrs(
    config: &skua_config::Config,
    rt: &tokio::runtime::Runtime,
    jobs: &[classad::ClassAd],
) {
    let mut distinct = std::collections::BTreeMap::new();
    for job in jobs {
        if let Some(req) = job.lookup("Requirements") {
            distinct
                .entry(classad::unparse(req))
                .or_insert_with(|| job.clone());
        }
    }
    if distinct.is_empty() {
        return;
    }
    let slots = match query_slots(config, rt) {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(error = %format!("{e:#}"), "no slot ads to check Requirements against");
            return;
        }
    };
    let mut said = std::collections::BTreeSet::new();
    for job in distinct.values() {
        for u in skua_negotiation::undefined_target_attrs(job, &slots) {
            if said.insert(u.name.to_ascii_lowercase()) {
                eprintln!("\nWARNING: {}.", crate::q_fmt::undefined_line(&u));
            }
        }
    }
}

/// The collector's slot ads (a short wait: this is only for a warning).
fn query_slots(
    config: &skua_config::Config,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Vec<classad::ClassAd>> {
    use skua_proto::{routes, Query, QueryReply};
    let collector =
        crate::pool_cmd::client_for(config, "COLLECTOR", std::time::Duration::from_secs(5))?;
    let reply: QueryReply = rt.block_on(collector.command(
        &routes::COLLECTOR_QUERY,
        Some(&Query {
            ad_type: "Machine".into(),
            constraint: None,
            projection: Vec::new(),
        }),
    ))?;
    reply
        .ads
        .iter()
        .map(|t| classad::parse_ad(t).context("the collector sent an ad that does not parse"))
        .collect()
}

/// Seconds to wait before each new attempt when the schedd's answer is lost.
const RETRY_DELAYS: [u64; 4] = [1, 2, 4, 8];

/// A failure of the connection, not an answer: the request may be sent again.
fn transient(e: &skua_net::NetError) -> bool {
    use skua_net::NetError;
    matches!(
        e,
        NetError::Connect { .. }
            | NetError::Http { .. }
            | NetError::Timeout { .. }
            | NetError::Decode { .. }
    )
}

fn retry_after(attempt: usize, e: &skua_net::NetError) {
    let delay = RETRY_DELAYS.get(attempt).copied().unwrap_or(1);
    eprintln!("skua submit: {e}; trying again in {delay} s");
    std::thread::sleep(std::time::Duration::from_secs(delay));
}

/// What the user is told when the schedd may or may not have queued the
/// jobs: the outcome is unknown, and how to find out.
fn uncertain(e: &anyhow::Error, key: &str) -> String {
    format!(
        "{e:#}\n\
         The schedd could not be reached again: the jobs may or may not have been queued.\n\
         Do not simply submit again. To find out, once the schedd answers, run\n\
         \x20   skua q -constraint 'SubmissionId == \"{key}\"'\n\
         (and, if the jobs may have finished already,\n\
         \x20   skua history -constraint 'SubmissionId == \"{key}\"')\n\
         and submit again only if neither lists any job."
    )
}

/// A key unique to one submission: 128 random bits from the kernel (the
/// time and the process id if those cannot be read), as hex.
fn submission_key() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !random {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes[..8].copy_from_slice(&(now as u64).to_le_bytes());
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `name=value` words from the command line.
fn parse_overrides(words: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    words
        .iter()
        .map(|w| match w.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() => {
                Ok((n.trim().to_string(), v.trim().to_string()))
            }
            _ => bail!("'{w}' is not a macro definition of the form name=value"),
        })
        .collect()
}

/// HTCondor's name for this machine's architecture.
fn htcondor_arch() -> String {
    match std::env::consts::ARCH {
        "x86_64" => "X86_64".to_string(),
        "aarch64" => "ARM64".to_string(),
        other => other.to_ascii_uppercase(),
    }
}

/// The line number (from 1) of the last `universe` command of the submit
/// file at `path`, for messages about the universe.
fn universe_line(text: &str) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start();
            l.get(..8)
                .is_some_and(|w| w.eq_ignore_ascii_case("universe"))
                && l.get(8..).is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|(i, _)| i + 1)
        .last()
}

/// Reads the submit file at `path` and builds its jobs as the current user in the current
/// directory, with the Skua configuration's domains and defaults. Reusable by a real
/// submission (which asks the schedd for `cluster_id` first).
pub fn build_submission(
    path: &str,
    appended_lines: &[String],
    overrides: &[(String, String)],
    cluster_id: u32,
) -> anyhow::Result<Submission> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
    let text = String::from_utf8_lossy(&text).into_owned();
    build_from_text(&text, path, appended_lines, overrides, cluster_id, None)
}

/// [`build_submission`] for a description already read (`path` the name it goes by), with
/// `-queue`'s arguments if given.
fn build_from_text(
    text: &str,
    path: &str,
    appended_lines: &[String],
    overrides: &[(String, String)],
    cluster_id: u32,
    queue_args: Option<String>,
) -> anyhow::Result<Submission> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let cwd = cwd.to_string_lossy().into_owned();
    let env = system_config::environment();
    let config = system_config::load(Some("SUBMIT"), None).context("reading the configuration")?;
    let knob = |name: &str| config.get(name).ok().flatten();
    let host = system_config::host_facts(&env);
    let hostname = host
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".to_string());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let owner = system_config::current_username(&env).unwrap_or_else(|| "nobody".to_string());
    let mut opts = SubmitOptions::new(&owner, cluster_id, now, &cwd);
    opts.submit_file = path.to_string();
    opts.arch = htcondor_arch();
    opts.opsys = std::env::consts::OS.to_ascii_uppercase();
    opts.filesystem_domain = knob("FILESYSTEM_DOMAIN").unwrap_or_else(|| hostname.clone());
    opts.uid_domain = knob("UID_DOMAIN").unwrap_or_else(|| hostname.clone());
    opts.hostname = hostname;
    if let Some(v) = knob("JOB_DEFAULT_REQUESTMEMORY") {
        opts.default_request_memory = v;
    }
    if let Some(v) = knob("JOB_DEFAULT_REQUESTDISK") {
        opts.default_request_disk = v;
    }
    if let Some(v) = knob("JOB_DEFAULT_REQUESTCPUS") {
        opts.default_request_cpus = v;
    }
    if let Some(v) = knob("JOB_DEFAULT_LEASE_DURATION").and_then(|v| v.trim().parse().ok()) {
        opts.default_lease_duration = v;
    }
    if let Some(v) = knob("DEFAULT_UNIVERSE") {
        opts.default_universe = v.to_ascii_lowercase();
    }
    opts.max_jobs_per_submission = knob("MAX_JOBS_PER_SUBMISSION").and_then(|v| v.parse().ok());
    if let Some(list) = knob("SUBMIT_ATTRS") {
        for name in list.split(|c: char| c == ',' || c.is_whitespace()) {
            if name.is_empty() {
                continue;
            }
            if let Some(value) = knob(name) {
                opts.submit_attrs.push((name.to_string(), value));
            }
        }
    }
    opts.random_seed = now as u64 ^ u64::from(std::process::id());
    opts.env = env;
    opts.appended_lines = appended_lines.to_vec();
    opts.overrides = overrides.to_vec();
    opts.queue_args = queue_args;
    Ok(skua_submit::submit(text, &RealFiles, &opts)?)
}
