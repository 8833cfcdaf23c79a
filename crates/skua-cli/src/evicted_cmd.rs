//! `skua evicted_files` (HTCondor's `condor_evicted_files`): jobs' stored
//! checkpoints, for inspection. `dir` prints the directory holding each
//! on the submit host, `list` their files, and `get` copies each into a
//! new directory named after the job (`C.P`) in the current directory.
//! Unlike HTCondor's tool, it works from any host that reaches the schedd
//! (the files travel through the schedd) and a command must be named.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use skua_proto::{routes, EntryKind, EvictedFileRequest, EvictedFilesQuery, EvictedFilesReply};

use crate::pool_cmd::{client_for, load_config, report, runtime};

/// How long the command waits for the schedd (and for each chunk of a
/// file).
const TIMEOUT: Duration = Duration::from_secs(120);

#[derive(clap::Subcommand)]
pub enum EvictedCommand {
    /// Print the directory holding each job's stored checkpoint.
    Dir {
        /// The jobs (C.P).
        #[arg(required = true)]
        jobs: Vec<String>,
    },
    /// List the files of the jobs' stored checkpoints.
    List {
        /// The jobs (C.P).
        #[arg(required = true)]
        jobs: Vec<String>,
    },
    /// Copy the jobs' stored checkpoints into new directories named after
    /// the jobs (C.P) in the current directory.
    Get {
        /// The jobs (C.P).
        #[arg(required = true)]
        jobs: Vec<String>,
    },
}

pub fn run(cmd: EvictedCommand) -> ExitCode {
    report("evicted_files", run_inner(cmd))
}

fn check_job(text: &str) -> Result<skua_types::JobId> {
    text.parse()
        .map_err(|_| anyhow::anyhow!("`{text}` is not a job id (C.P)"))
}

/// `path` from the schedd as a relative path (no `..`, not absolute).
fn safe_relative(path: &str) -> Result<PathBuf> {
    let p = Path::new(path);
    if path.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("the schedd named a file {path:?} that is not a plain relative path");
    }
    Ok(p.to_path_buf())
}

fn run_inner(cmd: EvictedCommand) -> Result<ExitCode> {
    let config = load_config()?;
    let client = client_for(&config, "SCHEDD", TIMEOUT)?;
    let rt = runtime()?;
    let query = |job: &str| -> Result<EvictedFilesReply> {
        let q = EvictedFilesQuery {
            job_id: job.to_string(),
        };
        Ok(rt.block_on(client.command(&routes::SCHEDD_EVICTED_FILES, Some(&q)))?)
    };
    let mut status = ExitCode::SUCCESS;
    match cmd {
        EvictedCommand::Dir { jobs } => {
            for job in &jobs {
                check_job(job)?;
                match query(job)?.directory {
                    Some(dir) => println!("{dir}"),
                    None => {
                        eprintln!("job {job} has no evicted files");
                        status = ExitCode::from(1);
                    }
                }
            }
        }
        EvictedCommand::List { jobs } => {
            for job in &jobs {
                check_job(job)?;
                let reply = query(job)?;
                if reply.number.is_none() {
                    eprintln!("job {job} has no evicted files");
                    status = ExitCode::from(1);
                    continue;
                }
                for f in &reply.files {
                    match f.kind {
                        EntryKind::Dir => println!("{}/", f.path),
                        EntryKind::File => println!("{}", f.path),
                    }
                }
            }
        }
        EvictedCommand::Get { jobs } => {
            for job in &jobs {
                let id = check_job(job)?;
                let reply = query(job)?;
                let Some(number) = reply.number else {
                    eprintln!("job {job} has no evicted files");
                    status = ExitCode::from(1);
                    continue;
                };
                let dest = PathBuf::from(id.to_string());
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&dest)
                    .with_context(|| format!("cannot make the directory {}", dest.display()))?;
                for f in &reply.files {
                    let path = dest.join(safe_relative(&f.path)?);
                    match f.kind {
                        EntryKind::Dir => std::fs::DirBuilder::new()
                            .mode(0o700)
                            .create(&path)
                            .with_context(|| format!("cannot make {}", path.display()))?,
                        EntryKind::File => {
                            let file = std::fs::OpenOptions::new()
                                .write(true)
                                .create_new(true)
                                .mode(if f.mode == 0 { 0o644 } else { f.mode & 0o777 })
                                .custom_flags(libc::O_NOFOLLOW)
                                .open(&path)
                                .with_context(|| format!("cannot create {}", path.display()))?;
                            let req = EvictedFileRequest {
                                job_id: job.clone(),
                                number,
                                path: f.path.clone(),
                            };
                            let mut out = tokio::fs::File::from_std(file);
                            rt.block_on(client.download(
                                &routes::SCHEDD_EVICTED_FILE,
                                &req,
                                &mut out,
                            ))
                            .with_context(|| format!("copying {}", f.path))?;
                        }
                    }
                }
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(
                    stdout,
                    "job {job}: checkpoint {number} copied into {}",
                    dest.display()
                );
            }
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_schedd_stay_inside_the_new_directory() {
        assert_eq!(
            safe_relative("sub/state.txt").expect("plain"),
            PathBuf::from("sub/state.txt")
        );
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "./a"] {
            assert!(safe_relative(bad).is_err(), "{bad:?} accepted");
        }
    }
}
