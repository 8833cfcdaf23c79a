//! `skua submit -spool` and `skua transfer_data` (HTCondor's
//! `condor_submit -spool` and `condor_transfer_data`).
//!
//! With `-spool` the jobs are queued held (HoldReasonCode 16, "Spooling
//! input data files") with `LeaveJobInQueue` set as condor_submit sets it;
//! the tool then uploads each job's executable, standard input and input
//! files into the job's spool directory at the schedd and commits: the
//! schedd releases the job, which runs from there (the submit directory
//! may change or go away meanwhile). When it completes, it stays in the
//! queue until `skua transfer_data` has copied its output, with the
//! user's own rights (the tool runs as the user), into the directory it
//! was submitted from (`SUBMIT_Iwd`; `output`/`error` given as absolute
//! paths and `transfer_output_remaps` where they say); then it leaves the
//! queue.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use classad::{ClassAd, Expr, Value};
use skua_proto::{
    routes, JobQuery, JobQueryReply, OutputFetched, SpoolCommit, SpoolFileMeta, SpooledFileRequest,
    SpooledOutputQuery, SpooledOutputReply, TRANSFER_HEADER,
};
use skua_schedd::spool::rules;

/// How long a transfer may go without progress.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

fn string(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.lookup(name) {
        Some(Expr::Lit(v)) => v.as_string(),
        _ => None,
    }
}

/// Marks the jobs of a `-spool` submission: held for spooling, kept in
/// the queue when complete (unless the submit file set
/// `leave_in_queue`). Every input file must be a readable regular file
/// now (directories are not spooled yet).
pub(crate) fn prepare(jobs: &mut [ClassAd]) -> Result<()> {
    let keep = classad::parse_expr(rules::SPOOLED_LEAVE_IN_QUEUE)
        .context("the LeaveJobInQueue expression")?;
    for ad in jobs.iter_mut() {
        for (path, _) in rules::spool_inputs(ad) {
            let meta = std::fs::metadata(&path)
                .with_context(|| format!("-spool: cannot read input file {path}"))?;
            if !meta.is_file() {
                bail!("-spool: input {path} is not a regular file (directories cannot be spooled yet)");
            }
        }
        ad.insert_value("JobStatus", skua_types::JobStatus::Held.code());
        ad.insert_value("HoldReasonCode", rules::HOLD_SPOOLING_INPUT);
        ad.insert_value("HoldReasonSubCode", 0i64);
        ad.insert_value("HoldReason", rules::SPOOLING_HOLD_REASON);
        if matches!(
            ad.lookup(rules::LEAVE_JOB_IN_QUEUE),
            None | Some(Expr::Lit(Value::Bool(false)))
        ) {
            ad.insert(rules::LEAVE_JOB_IN_QUEUE, keep.clone());
        }
    }
    Ok(())
}

/// Uploads the input files of the jobs of `cluster` (in ProcId order) and
/// commits each job.
pub(crate) fn upload(
    config: &skua_config::Config,
    rt: &tokio::runtime::Runtime,
    cluster: u32,
    jobs: &[ClassAd],
) -> Result<()> {
    let client = crate::pool_cmd::client_for(config, "SCHEDD", TRANSFER_TIMEOUT)?;
    for (proc, ad) in jobs.iter().enumerate() {
        let job_id = format!("{cluster}.{proc}");
        for (path, name) in rules::spool_inputs(ad) {
            let file = std::fs::File::open(&path)
                .with_context(|| format!("job {job_id}: cannot read input file {path}"))?;
            let meta = file
                .metadata()
                .with_context(|| format!("job {job_id}: {path}"))?;
            let header = serde_json::to_string(&SpoolFileMeta {
                job_id: job_id.clone(),
                name,
                mode: meta.mode() & 0o777,
            })?;
            rt.block_on(client.upload(
                &routes::SCHEDD_SPOOL_FILE,
                (TRANSFER_HEADER, header),
                tokio::fs::File::from_std(file),
                meta.len(),
            ))
            .with_context(|| format!("job {job_id}: spooling {path}"))?;
        }
        let commit = SpoolCommit {
            job_id: job_id.clone(),
        };
        rt.block_on(client.command(&routes::SCHEDD_SPOOL_COMMIT, Some(&commit)))
            .with_context(|| format!("job {job_id}: committing its spooled input"))?;
    }
    Ok(())
}

/// `skua transfer_data`.
#[derive(clap::Args)]
pub struct TransferDataArgs {
    /// Job ids (C or C.P) or owners.
    names: Vec<String>,
    /// Jobs for which this ClassAd expression is true.
    #[arg(long)]
    constraint: Option<String>,
    /// Every completed spooled job of yours.
    #[arg(short = 'a', long = "all")]
    all: bool,
}

pub fn run(args: TransferDataArgs) -> ExitCode {
    crate::pool_cmd::report("transfer_data", transfer_data(&args))
}

fn transfer_data(args: &TransferDataArgs) -> Result<ExitCode> {
    if args.names.is_empty() && args.constraint.is_none() && !args.all {
        bail!("name jobs (C or C.P), owners, -constraint EXPR or -all");
    }
    let config = crate::pool_cmd::load_config()?;
    let rt = crate::pool_cmd::runtime()?;
    let client = crate::pool_cmd::client_for(&config, "SCHEDD", TRANSFER_TIMEOUT)?;
    let selector = crate::queue_cmd::selector_of(&args.names, args.constraint.clone(), args.all)?;
    let named: Vec<String> = selector.jobs.clone();
    let query = JobQuery {
        selector,
        projection: vec![
            "ClusterId".into(),
            "ProcId".into(),
            "Owner".into(),
            "JobStatus".into(),
            rules::SUBMIT_IWD.into(),
        ],
        ..JobQuery::default()
    };
    let reply: JobQueryReply = rt.block_on(client.command(&routes::SCHEDD_QUERY, Some(&query)))?;
    let me = crate::queue_cmd::current_user();
    let mut ids = Vec::new();
    for text in &reply.ads {
        let ad = classad::parse_ad(text).context("the schedd sent an ad that does not parse")?;
        let id = match (int(&ad, "ClusterId"), int(&ad, "ProcId")) {
            (Some(c), Some(p)) => format!("{c}.{p}"),
            _ => continue,
        };
        let explicit = named
            .iter()
            .any(|n| *n == id || id.split('.').next() == Some(n.as_str()));
        // jobs named by id go to the schedd, which decides; selected ones
        // are the user's own completed spooled jobs
        let mine = string(&ad, "Owner").as_deref() == Some(me.as_str());
        let ready = int(&ad, "JobStatus") == Some(4) && string(&ad, rules::SUBMIT_IWD).is_some();
        if explicit || (mine && ready) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        println!("No spooled jobs with output to fetch.");
        return Ok(ExitCode::SUCCESS);
    }
    println!("Fetching data files...");
    let mut status = ExitCode::SUCCESS;
    for id in &ids {
        if let Err(e) = fetch_job(&rt, &client, id) {
            eprintln!("skua transfer_data: job {id}: {e:#}");
            status = ExitCode::from(1);
        }
    }
    Ok(status)
}

fn int(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.lookup(name) {
        Some(Expr::Lit(v)) => v.as_int(),
        _ => None,
    }
}

/// Copies one job's output into place, then tells the schedd.
fn fetch_job(rt: &tokio::runtime::Runtime, client: &skua_net::Client, id: &str) -> Result<()> {
    let started = now();
    let q = SpooledOutputQuery {
        job_id: id.to_string(),
    };
    let reply: SpooledOutputReply =
        rt.block_on(client.command(&routes::SCHEDD_SPOOLED_OUTPUT, Some(&q)))?;
    let ad = classad::parse_ad(&reply.ad).context("the schedd sent an ad that does not parse")?;
    let iwd = string(&ad, rules::SUBMIT_IWD)
        .ok_or_else(|| anyhow::anyhow!("the job has no SUBMIT_Iwd"))?;
    let places = Places::of(&ad, &iwd);
    for f in &reply.files {
        let rel = safe_relative(&f.path)?;
        let dest = places.destination(&f.path, &rel);
        let req = SpooledFileRequest {
            job_id: id.to_string(),
            path: f.path.clone(),
        };
        write_beside(&dest, f.mode, |file| {
            let mut out = tokio::fs::File::from_std(file);
            rt.block_on(client.download(&routes::SCHEDD_SPOOLED_FILE, &req, &mut out))
                .with_context(|| format!("copying {}", f.path))?;
            Ok(())
        })?;
    }
    let done = OutputFetched {
        job_id: id.to_string(),
        started,
    };
    rt.block_on(client.command(&routes::SCHEDD_OUTPUT_FETCHED, Some(&done)))?;
    let _ = writeln!(
        std::io::stdout().lock(),
        "job {id}: {} file(s) copied into {iwd}",
        reply.files.len()
    );
    Ok(())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Where a spooled job's output files go.
struct Places {
    iwd: PathBuf,
    /// `(name in the spool, destination as submitted)`: `Out`/`Err` given
    /// as absolute paths, then the remaps.
    named: Vec<(String, String)>,
}

impl Places {
    fn of(ad: &ClassAd, iwd: &str) -> Places {
        let mut named = Vec::new();
        for (now_attr, was) in [("Out", rules::SUBMIT_OUT), ("Err", rules::SUBMIT_ERR)] {
            if let (Some(n), Some(w)) = (string(ad, now_attr), string(ad, was)) {
                named.push((n, w));
            }
        }
        if let Some(remaps) = string(ad, rules::SUBMIT_TRANSFER_OUTPUT_REMAPS) {
            for pair in remaps.split(';') {
                if let Some((from, to)) = pair.split_once('=') {
                    let (from, to) = (from.trim(), to.trim());
                    if !from.is_empty() && !to.is_empty() {
                        named.push((from.to_string(), to.to_string()));
                    }
                }
            }
        }
        Places {
            iwd: PathBuf::from(iwd),
            named,
        }
    }

    fn destination(&self, name: &str, rel: &Path) -> PathBuf {
        match self.named.iter().find(|(n, _)| n == name) {
            Some((_, to)) => self.iwd.join(to),
            None => self.iwd.join(rel),
        }
    }
}

/// `name` from the schedd as a relative path that stays below the
/// directory it is joined to.
fn safe_relative(name: &str) -> Result<PathBuf> {
    let path = Path::new(name);
    if name.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("the schedd sent a file name that is not a plain relative path: {name:?}");
    }
    Ok(path.to_path_buf())
}

/// Writes `dest` whole or not at all: its directories made, a new
/// temporary file beside it (never through a link) filled by `fill`,
/// given `mode`, renamed over `dest`.
fn write_beside(
    dest: &Path,
    mode: u32,
    fill: impl FnOnce(std::fs::File) -> Result<()>,
) -> Result<()> {
    let parent = dest
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{} names no file", dest.display()))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(parent)
        .with_context(|| format!("cannot make {}", parent.display()))?;
    let name = dest
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{} names no file", dest.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".part-{}", std::process::id()));
    let tmp = dest.with_file_name(tmp_name);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if mode == 0 { 0o644 } else { mode & 0o777 })
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let filled = fill(file).and_then(|()| {
        std::fs::rename(&tmp, dest)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), dest.display()))
    });
    if filled.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_goes_to_the_submit_directory_or_where_the_job_said() {
        let ad = classad::parse_ad(
            "[Out = \"out.txt\"; Err = \"err.txt\"; SUBMIT_Err = \"/logs/e.txt\"; \
              SUBMIT_TransferOutputRemaps = \"result = res/r.txt; big = /data/big\"]",
        )
        .expect("ad");
        let p = Places::of(&ad, "/home/ada/run");
        let at = |n: &str| p.destination(n, Path::new(n));
        assert_eq!(at("out.txt"), PathBuf::from("/home/ada/run/out.txt"));
        assert_eq!(at("err.txt"), PathBuf::from("/logs/e.txt"));
        assert_eq!(at("result"), PathBuf::from("/home/ada/run/res/r.txt"));
        assert_eq!(at("big"), PathBuf::from("/data/big"));
        assert_eq!(at("sub/x"), PathBuf::from("/home/ada/run/sub/x"));
    }

    #[test]
    fn names_from_the_schedd_stay_below_the_submit_directory() {
        assert!(safe_relative("sub/out.txt").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "./a"] {
            assert!(safe_relative(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_spooled_submission_is_held_for_spooling_and_kept_when_complete() {
        let dir = std::env::temp_dir().join(format!("skua-spool-prep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("prog.sh"), "#!/bin/sh\n").expect("write");
        let iwd = dir.display().to_string();
        let mut jobs = vec![classad::parse_ad(&format!(
            "[Iwd = \"{iwd}\"; Cmd = \"{iwd}/prog.sh\"; JobStatus = 1; LeaveJobInQueue = false]"
        ))
        .expect("ad")];
        prepare(&mut jobs).expect("prepared");
        assert_eq!(int(&jobs[0], "JobStatus"), Some(5));
        assert_eq!(int(&jobs[0], "HoldReasonCode"), Some(16));
        assert_ne!(
            jobs[0].lookup("LeaveJobInQueue"),
            Some(&Expr::Lit(Value::Bool(false)))
        );
        // a missing input is refused before anything is queued
        let mut missing = vec![classad::parse_ad(&format!(
            "[Iwd = \"{iwd}\"; Cmd = \"{iwd}/prog.sh\"; TransferInput = \"nope.txt\"]"
        ))
        .expect("ad")];
        let e = prepare(&mut missing).expect_err("refused");
        assert!(format!("{e:#}").contains("nope.txt"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
