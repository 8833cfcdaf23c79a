//! A running job's sandbox reached from outside (issue 16, "watching
//! jobs"): the claim's schedd reads the job's output files (`skua tail`)
//! and runs commands in its sandbox (`skua ssh_to_job`).
//!
//! The loop finds the claim's running job ([`locate`]: the starter of the
//! claim's slot, its job's process group from `dir_<pid>.pgid`); the
//! route then works off the loop. Everything is done with the job's
//! user's rights (the owner of the job's process, read from `/proc`), never
//! root's: a file is opened as that user (so a symbolic link leads only
//! where the user may go), a command runs as that user with the job's
//! environment and working directory.

use std::io::Read as _;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use classad::{ClassAd, Expr};
use skua_daemon::account::{Account, AsUser, Rights};
use skua_net::ApiError;
use skua_proto::{
    JobCommandReply, SandboxChunk, SandboxFile, StartdJobCommand, StartdSandboxRead,
    JOB_COMMAND_OUTPUT_MAX, SANDBOX_READ_MAX,
};

/// The running job of a claim, as the loop finds it.
#[derive(Debug, Clone)]
pub struct JobProcess {
    /// The job's process (the leader of its process group).
    pub pid: i32,
    /// Its starter (its parent).
    pub starter_pid: u32,
    /// The slot's ad (`MY` of `ENABLE_SSH_TO_JOB`).
    pub slot_ad: ClassAd,
    /// The job's ad (`TARGET` of `ENABLE_SSH_TO_JOB`).
    pub job_ad: Option<ClassAd>,
}

/// What the routes need besides the loop.
#[derive(Clone, Default)]
pub struct Access {
    /// `ENABLE_SSH_TO_JOB` (`None`: HTCondor's default, true).
    pub enable_ssh: Option<Expr>,
    pub as_user: AsUser,
}

/// How long a job command may run before it is killed.
const COMMAND_LIMIT: Duration = Duration::from_secs(3600);

/// The job `job_id` running under a claim whose starter is
/// `starter_pid` (`busy`: it runs a job of `starter_job`): the process
/// group named in `pgid_file` (written when the job has no cgroup), else
/// the starter's child that leads its own process group (the job).
pub fn process_of(
    pgid_file: &Path,
    starter_pid: u32,
    busy: bool,
    starter_job: &str,
    job_id: &str,
) -> Result<i32, ApiError> {
    if !busy || starter_job != job_id {
        return Err(ApiError::conflict(format!(
            "job {job_id} is not running under this claim"
        )));
    }
    let from_file = std::fs::read_to_string(pgid_file)
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok());
    from_file
        .or_else(|| child_group_leader(starter_pid))
        .filter(|p| *p > 1)
        .ok_or_else(|| ApiError::conflict(format!("job {job_id} has not started its process yet")))
}

/// The parent of `pid`, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether the job's process is still the one its starter started: read
/// after its user, environment or files were taken from `/proc`, so that a
/// process id reused by another process in between is never acted on.
fn still_the_job(job: &JobProcess) -> Result<(), ApiError> {
    if parent_of(job.pid) == Some(job.starter_pid) {
        Ok(())
    } else {
        Err(ApiError::conflict("the job's process has exited"))
    }
}

/// The child of `parent` that leads its own process group, from `/proc`.
fn child_group_leader(parent: u32) -> Option<i32> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`: comm may hold anything
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut f = rest.split_whitespace().skip(1);
        let ppid = f.next().and_then(|p| p.parse::<u32>().ok());
        let pgrp = f.next().and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) && pgrp == Some(pid) {
            return Some(pid);
        }
    }
    None
}

/// Whose rights act for the job whose process is `pid`: the process's
/// real user. A startd that is not root acts only for its own user.
fn job_rights(pid: i32) -> Result<Rights, ApiError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|_| ApiError::conflict("the job's process has exited"))?;
    let uid: u32 = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|u| u.parse().ok())
        .ok_or_else(|| ApiError::internal(format!("/proc/{pid}/status: no Uid line")))?;
    let me = nix::unistd::geteuid().as_raw();
    if me != 0 {
        if uid != me {
            return Err(denied(
                "the job runs as another user and this startd is not root",
            ));
        }
        return Ok(Rights::Daemon);
    }
    if uid == 0 {
        return Err(denied(
            "the job runs as root: the startd never acts as root for a user",
        ));
    }
    let account = Account::by_uid(uid).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Rights::User(Arc::new(account)))
}

fn denied(msg: &str) -> ApiError {
    ApiError::new(skua_proto::ErrorCode::PermissionDenied, msg)
}

/// A file name from another host: relative, plain components only.
pub fn check_relative(name: &str) -> Result<&Path, ApiError> {
    let p = Path::new(name);
    let plain = !name.is_empty()
        && !name.contains('\0')
        && p.components().all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(p)
    } else {
        Err(ApiError::bad_request(format!(
            "`{name}`: a file name must be relative, without `..`"
        )))
    }
}

/// Reads a piece of the job's file, opened with the job user's rights:
/// its standard output or error as the job's process has them open, or a
/// file of its working directory (the last component never a symbolic
/// link). Only regular files are read.
pub async fn read(
    access: &Access,
    job: &JobProcess,
    req: StartdSandboxRead,
) -> Result<SandboxChunk, ApiError> {
    let pid = job.pid;
    let path: PathBuf = match &req.file {
        SandboxFile::Stdout => format!("/proc/{pid}/fd/1").into(),
        SandboxFile::Stderr => format!("/proc/{pid}/fd/2").into(),
        SandboxFile::Named(name) => {
            Path::new(&format!("/proc/{pid}/cwd")).join(check_relative(name)?)
        }
    };
    let follow_last = !matches!(req.file, SandboxFile::Named(_));
    let what = match &req.file {
        SandboxFile::Stdout => "the job's standard output".to_string(),
        SandboxFile::Stderr => "the job's standard error".to_string(),
        SandboxFile::Named(n) => format!("`{n}`"),
    };
    let rights = job_rights(pid)?;
    let max = req.max_bytes.min(SANDBOX_READ_MAX);
    let offset = req.offset;
    let result = access
        .as_user
        .run_async(&rights, move || -> Result<SandboxChunk, String> {
            let mut open = std::fs::OpenOptions::new();
            open.read(true);
            let mut flags = nix::fcntl::OFlag::O_NONBLOCK;
            if !follow_last {
                flags |= nix::fcntl::OFlag::O_NOFOLLOW;
            }
            let flags = flags.bits();
            open.custom_flags(flags);
            let file = open.open(&path).map_err(|e| e.to_string())?;
            let meta = file.metadata().map_err(|e| e.to_string())?;
            if !meta.is_file() {
                return Err("not a regular file".into());
            }
            let size = meta.len();
            let start = offset.unwrap_or_else(|| size.saturating_sub(max)).min(size);
            let want = usize::try_from(max.min(size - start)).unwrap_or(0);
            let mut data = vec![0u8; want];
            let mut got = 0;
            while got < want {
                match file.read_at(&mut data[got..], start + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            data.truncate(got);
            Ok(SandboxChunk {
                data,
                offset: start,
                size,
            })
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let chunk =
        result.map_err(|e| ApiError::not_found(format!("{what} of job {}: {e}", req.job_id)))?;
    // opened (and read) from the job's process, not a newcomer's
    still_the_job(job)?;
    Ok(chunk)
}

/// Whether `ENABLE_SSH_TO_JOB` lets the job's user in (MY: the slot,
/// TARGET: the job; true unless it evaluates to false or to something
/// that is not a boolean).
pub fn ssh_allowed(access: &Access, job: &JobProcess) -> bool {
    let Some(expr) = &access.enable_ssh else {
        return true;
    };
    match classad::Evaluator::default().eval(expr, Some(&job.slot_ad), job.job_ad.as_ref()) {
        classad::Value::Bool(b) => b,
        classad::Value::Int(i) => i != 0,
        _ => false,
    }
}

/// The job's environment (its process's, as it started) with
/// `_CONDOR_JOB_PIDS`, and its working directory.
fn job_context(pid: i32) -> Result<(Vec<(String, String)>, PathBuf), ApiError> {
    let gone = |_| ApiError::conflict("the job's process has exited");
    let raw = std::fs::read(format!("/proc/{pid}/environ")).map_err(gone)?;
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).map_err(gone)?;
    let mut env: Vec<(String, String)> = raw
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .filter(|(k, _)| k != "_CONDOR_JOB_PIDS")
        .collect();
    env.push(("_CONDOR_JOB_PIDS".to_string(), pid.to_string()));
    Ok((env, cwd))
}

/// Runs the command in the job's sandbox as the job's user, with the
/// job's environment and working directory, its standard input given
/// whole; waits for it (an hour at most) and returns what it wrote.
pub async fn command(
    access: &Access,
    job: &JobProcess,
    req: StartdJobCommand,
) -> Result<JobCommandReply, ApiError> {
    if !ssh_allowed(access, job) {
        return Err(denied("Rejecting request, because ENABLE_SSH_TO_JOB=false"));
    }
    let pid = job.pid;
    let rights = job_rights(pid)?;
    let (env, cwd) = job_context(pid)?;
    still_the_job(job)?;
    let argv = if req.argv.is_empty() {
        let shell = env
            .iter()
            .find(|(k, _)| k == "SHELL")
            .map(|(_, v)| v.clone())
            .filter(|s| s.starts_with('/'))
            .unwrap_or_else(|| "/bin/sh".to_string());
        vec![shell]
    } else {
        req.argv.clone()
    };
    let spawn = move || -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt as _;
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env_clear()
            .envs(env)
            .current_dir(&cwd)
            .process_group(0)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
    };
    let child = match &rights {
        Rights::Daemon => spawn(),
        Rights::User(account) => {
            let account = (**account).clone();
            tokio::task::spawn_blocking(move || {
                skua_daemon::account::run_as_thread(&account, spawn)
            })
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(|e| ApiError::internal(e.to_string()))?
        }
    }
    .map_err(|e| ApiError::bad_request(format!("cannot run `{}`: {e}", req.argv.join(" "))))?;
    let stdin = req.stdin;
    tokio::task::spawn_blocking(move || finish(child, stdin))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
}

/// Feeds the child its input, collects its output (each stream up to
/// [`JOB_COMMAND_OUTPUT_MAX`]) and waits for it; kills its process group
/// after [`COMMAND_LIMIT`].
fn finish(mut child: std::process::Child, stdin: Vec<u8>) -> Result<JobCommandReply, ApiError> {
    use std::io::Write as _;
    let pgid = child.id();
    if let Some(mut input) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = input.write_all(&stdin);
        });
    }
    let collect = |stream: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stream {
                let _ = s.take(JOB_COMMAND_OUTPUT_MAX as u64).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = collect(child.stdout.take().map(|s| Box::new(s) as _));
    let err = collect(child.stderr.take().map(|s| Box::new(s) as _));
    let deadline = std::time::Instant::now() + COMMAND_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if std::time::Instant::now() >= deadline => {
                if let Ok(g) = i32::try_from(pgid) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(g),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(ApiError::internal(format!("waiting for the command: {e}"))),
        }
    };
    use std::os::unix::process::ExitStatusExt as _;
    let exit_code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    Ok(JobCommandReply {
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        exit_code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_another_host_must_be_plain_and_relative() {
        assert!(check_relative("out.txt").is_ok());
        assert!(check_relative("sub/out.txt").is_ok());
        for bad in ["", "/etc/shadow", "../x", "a/../../b", "./x", "a\0b"] {
            assert!(check_relative(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_claim_without_that_running_job_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let pgid = dir.path().join("dir_1.pgid");
        // (pid 1 has no child leading its own group in a test's namespace
        // that the test could mistake: use a pid that cannot exist)
        let starter = u32::MAX;
        assert!(process_of(&pgid, starter, false, "1.0", "1.0").is_err());
        assert!(process_of(&pgid, starter, true, "2.0", "1.0").is_err());
        assert!(process_of(&pgid, starter, true, "1.0", "1.0").is_err());
        std::fs::write(&pgid, "4242\n").unwrap();
        assert_eq!(
            process_of(&pgid, starter, true, "1.0", "1.0").unwrap(),
            4242
        );
        std::fs::write(&pgid, "1\n").unwrap();
        assert!(process_of(&pgid, starter, true, "1.0", "1.0").is_err());
    }

    #[test]
    fn the_job_is_the_starters_child_leading_its_own_group() {
        use std::os::unix::process::CommandExt as _;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let me = std::process::id();
        let found = child_group_leader(me);
        let child_pid = child.id() as i32;
        let job = |starter_pid| JobProcess {
            pid: child_pid,
            starter_pid,
            slot_ad: ClassAd::new(),
            job_ad: None,
        };
        let (mine, other) = (still_the_job(&job(me)), still_the_job(&job(me + 1)));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, Some(child.id() as i32));
        assert!(mine.is_ok());
        assert!(other.is_err(), "another starter's child is not the job");
        // once reaped, the process is gone
        assert!(still_the_job(&job(me)).is_err());
    }
}
