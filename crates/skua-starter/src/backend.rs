//! Transparent checkpoint backends: a running job's processes saved to an
//! image directory without the job's cooperation, and restored from it in
//! a later run (possibly on another machine). A backend is opt-in per job
//! (`+SkuaCheckpoint = "criu"`) and per machine: the startd runs
//! [`CheckpointBackend::check`] once at start-up and advertises
//! `HasCheckpointBackend`, `CheckpointBackends` and `CheckpointPlatform`
//! only where it passes (docs/startd.md, docs/checkpointing.md).
//!
//! The one backend today is [`Criu`] (CRIU, `criu dump` / `criu restore`).
//! Its image travels through the checkpoint store like any checkpoint
//! file, under [`skua_proto::CRIU_IMAGE_DIR`] in the scratch directory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The CRIU backend's name (in `SkuaCheckpoint`, `CheckpointBackends`, the
/// checkpoint's `backend`).
pub const CRIU: &str = "criu";

/// The file, in an image directory, that holds the dumped job's process
/// id (its process group: the job is its group's leader, and a restored
/// process keeps its id).
pub const PID_FILE: &str = "skua-pid";

/// The file, in an image directory, that holds the scratch directory the
/// job ran in when it was dumped (its open files and working directory
/// are there; the restoring starter makes that path lead to its own
/// scratch directory).
pub const SCRATCH_FILE: &str = "skua-scratch";

/// How long `criu check` and `criu --version` may take at start-up.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether this machine can use a backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// It works here; `platform` describes it (the slot ad's
    /// `CheckpointPlatform`: a restore needs a compatible one).
    Available { platform: String },
    /// It does not, and why.
    Unavailable { reason: String },
}

/// A failed dump or restore.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} {action} failed ({status}): {detail}")]
    Failed {
        program: String,
        action: &'static str,
        status: String,
        detail: String,
    },
    #[error("checkpoint image {path}: {detail}")]
    Image { path: String, detail: String },
}

/// A transparent checkpoint backend.
pub trait CheckpointBackend: Send + Sync + std::fmt::Debug {
    /// Its name ([`CRIU`]).
    fn name(&self) -> &'static str;
    /// Whether it works on this machine (blocking; the startd calls it
    /// once at start-up).
    fn check(&self) -> Availability;
    /// The command that saves the process tree rooted at `pid` into
    /// `images` and then ends it.
    fn dump_command(&self, pid: i32, images: &Path) -> Command;
    /// The command that restores the process tree saved in `images` and
    /// stays its parent until it ends: its exit status is the restored
    /// job's. It runs in `scratch`.
    fn restore_command(&self, images: &Path, scratch: &Path) -> Command;
}

/// CRIU through its command-line tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Criu {
    /// The `criu` program (a name looked up in `PATH`, or a path).
    pub program: PathBuf,
}

impl Criu {
    pub fn new(program: impl Into<PathBuf>) -> Criu {
        Criu {
            program: program.into(),
        }
    }

    fn command(&self, action: &str, images: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg(action)
            .arg("--images-dir")
            .arg(images)
            // the job shares the starter's session: CRIU restores it into
            // the restoring process's session
            .arg("--shell-job")
            // the cgroups of this run are not those of the next one
            .arg("--manage-cgroups=ignore")
            .arg("--log-file")
            .arg(format!("{action}.log"))
            .arg("-v2");
        cmd
    }
}

impl CheckpointBackend for Criu {
    fn name(&self) -> &'static str {
        CRIU
    }

    fn check(&self) -> Availability {
        let program = self.program.display().to_string();
        let mut check = Command::new(&self.program);
        check.arg("check");
        match run_bounded(check, CHECK_TIMEOUT) {
            Err(e) => Availability::Unavailable {
                reason: format!("cannot run {program} check: {e}"),
            },
            Ok((true, _, _)) => {
                let mut version = Command::new(&self.program);
                version.arg("--version");
                let version = match run_bounded(version, CHECK_TIMEOUT) {
                    Ok((true, out, _)) => criu_version(&out),
                    _ => None,
                };
                let kernel = nix::sys::utsname::uname()
                    .map(|u| u.release().to_string_lossy().into_owned())
                    .unwrap_or_else(|_| "unknown".to_string());
                Availability::Available {
                    platform: format!(
                        "criu-{} linux-{kernel} {}",
                        version.as_deref().unwrap_or("unknown"),
                        std::env::consts::ARCH
                    ),
                }
            }
            Ok((false, out, err)) => Availability::Unavailable {
                reason: format!(
                    "{program} check fails: {}",
                    criu_errors(&err)
                        .or_else(|| criu_errors(&out))
                        .unwrap_or_else(|| { "no reason given".to_string() })
                ),
            },
        }
    }

    fn dump_command(&self, pid: i32, images: &Path) -> Command {
        let mut cmd = self.command("dump", images);
        cmd.arg("--tree").arg(pid.to_string());
        cmd
    }

    fn restore_command(&self, images: &Path, scratch: &Path) -> Command {
        let mut cmd = self.command("restore", images);
        cmd.current_dir(scratch);
        cmd
    }
}

/// The backends this starter knows, by name.
pub fn backend_named(name: &str, criu_program: &Path) -> Option<Box<dyn CheckpointBackend>> {
    name.eq_ignore_ascii_case(CRIU)
        .then(|| Box::new(Criu::new(criu_program)) as Box<dyn CheckpointBackend>)
}

/// What the startd advertises: the backends that passed their check, and
/// their platforms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Detected {
    /// Names of the backends that work here, in the configured order.
    pub backends: Vec<String>,
    /// `CheckpointPlatform`: the working backends' platforms, `; `-joined.
    pub platform: String,
    /// Why each configured backend that does not work here does not.
    pub unavailable: Vec<(String, String)>,
}

/// Checks every backend named in `configured` (the `SKUA_CHECKPOINT_BACKENDS`
/// list), with `criu_program` for CRIU. Blocking: once, at start-up.
pub fn detect(configured: &[String], criu_program: &Path) -> Detected {
    let mut out = Detected::default();
    let mut platforms = Vec::new();
    for name in configured {
        let name = name.trim();
        if name.is_empty() || out.backends.iter().any(|b| b.eq_ignore_ascii_case(name)) {
            continue;
        }
        let Some(backend) = backend_named(name, criu_program) else {
            out.unavailable
                .push((name.to_string(), "no such checkpoint backend".to_string()));
            continue;
        };
        match backend.check() {
            Availability::Available { platform } => {
                out.backends.push(backend.name().to_string());
                platforms.push(platform);
            }
            Availability::Unavailable { reason } => {
                out.unavailable.push((backend.name().to_string(), reason));
            }
        }
    }
    out.platform = platforms.join("; ");
    out
}

/// Runs `cmd` to its end (killing it after `timeout`): success, standard
/// output, standard error.
fn run_bounded(mut cmd: Command, timeout: Duration) -> std::io::Result<(bool, String, String)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    // The pipes are read on threads so that a chatty program cannot block.
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let mut bytes = Vec::new();
                let _ = p.by_ref().take(1 << 20).read_to_end(&mut bytes);
                text = String::from_utf8_lossy(&bytes).into_owned();
            }
            text
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    match status {
        Some(s) => Ok((s.success(), out, err)),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("did not finish within {} s", timeout.as_secs()),
        )),
    }
}

/// `3.17.1` from `criu --version` (`Version: 3.17.1`).
fn criu_version(out: &str) -> Option<String> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Version:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// CRIU's error lines (`Error (file.c:12): what`), as `what; what`,
/// without the bare exit statuses of its helper processes.
fn criu_errors(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.strip_prefix("Error (") {
            Some(rest) => rest.split_once("): ").map_or(l, |(_, what)| what),
            None => l,
        })
        .filter(|l| !l.starts_with("exited, status="))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut joined = lines.join("; ");
    if joined.len() > 400 {
        let mut cut = 400;
        while !joined.is_char_boundary(cut) {
            cut -= 1;
        }
        joined.truncate(cut);
        joined.push_str("...");
    }
    Some(joined)
}

/// The end of a command's log (`dump.log`, `restore.log` in `images`), for
/// an error message.
fn log_tail(images: &Path, action: &str) -> String {
    let text = std::fs::read_to_string(images.join(format!("{action}.log"))).unwrap_or_default();
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("Error")).collect();
    let pick = if errors.is_empty() {
        text.lines().rev().take(3).collect::<Vec<_>>().join("; ")
    } else {
        errors
            .iter()
            .rev()
            .take(3)
            .rev()
            .copied()
            .collect::<Vec<_>>()
            .join("; ")
    };
    criu_errors(&pick).unwrap_or_else(|| "no log".to_string())
}

/// Saves the job whose process group leader is `pid` into `images` (a
/// new directory the starter owns: never in a place the job can change
/// while the dump runs), with the [`PID_FILE`] and [`SCRATCH_FILE`]
/// beside the backend's own files. The job's processes end.
pub async fn dump(
    backend: &dyn CheckpointBackend,
    pid: i32,
    images: &Path,
    scratch: &Path,
) -> Result<(), BackendError> {
    let image_err = |detail: String| BackendError::Image {
        path: images.display().to_string(),
        detail,
    };
    std::fs::create_dir(images).map_err(|e| image_err(e.to_string()))?;
    let cmd = backend.dump_command(pid, images);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = cmd.output().await.map_err(|source| BackendError::Spawn {
        program: program.clone(),
        source,
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(BackendError::Failed {
            program,
            action: "dump",
            status: out.status.to_string(),
            detail: criu_errors(&stderr).unwrap_or_else(|| log_tail(images, "dump")),
        });
    }
    std::fs::write(images.join(PID_FILE), format!("{pid}\n"))
        .and_then(|()| {
            std::fs::write(
                images.join(SCRATCH_FILE),
                scratch.as_os_str().as_encoded_bytes(),
            )
        })
        .map_err(|e| image_err(e.to_string()))?;
    Ok(())
}

/// What a restore needs from an image directory that came in with the
/// job's checkpoint (written by the submit side or the job's owner: read
/// and checked, never trusted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    /// The restored job's process id (and process group).
    pub pid: i32,
    /// The scratch directory it was dumped in.
    pub scratch: PathBuf,
}

/// Reads [`PID_FILE`] and [`SCRATCH_FILE`] of `images`.
pub fn image_info(images: &Path) -> Result<ImageInfo, BackendError> {
    let bad = |detail: String| BackendError::Image {
        path: images.display().to_string(),
        detail,
    };
    let read = |name: &str| {
        std::fs::read_to_string(images.join(name)).map_err(|e| bad(format!("{name}: {e}")))
    };
    let pid: i32 = read(PID_FILE)?
        .trim()
        .parse()
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| bad(format!("{PID_FILE} does not hold a process id")))?;
    let scratch = PathBuf::from(read(SCRATCH_FILE)?.trim_end_matches('\n'));
    if !scratch.is_absolute()
        || scratch
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(bad(format!(
            "{SCRATCH_FILE} does not hold an absolute path: {}",
            scratch.display()
        )));
    }
    Ok(ImageInfo { pid, scratch })
}

/// Starts restoring the job saved in `images` in `scratch`: the returned
/// process is the backend's, the restored job's parent until it ends, and
/// its exit status is the job's.
pub fn restore(
    backend: &dyn CheckpointBackend,
    images: &Path,
    scratch: &Path,
) -> Result<tokio::process::Child, BackendError> {
    let cmd = backend.restore_command(images, scratch);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(false);
    cmd.spawn()
        .map_err(|source| BackendError::Spawn { program, source })
}

/// After a restore has failed, why (from its log in `images`).
pub fn restore_failure(images: &Path) -> String {
    log_tail(images, "restore")
}

/// The file, in an image directory, that seals it: an HMAC-SHA256, with
/// the pool signing key, of every other file's name, size and content.
/// A restore runs as root and gives the process the credentials its image
/// names, so an image is restored only if the seal proves that a starter
/// of this pool made it and nobody changed it since (the image passes
/// through the job owner's hands: their sandbox, a `file://` checkpoint
/// destination).
pub const SEAL_FILE: &str = "skua-seal";

/// The seal of the files of `dir` (a flat directory of regular files),
/// [`SEAL_FILE`] apart.
fn seal_of(key: &[u8], dir: &Path) -> Result<ring::hmac::Tag, BackendError> {
    let bad = |detail: String| BackendError::Image {
        path: dir.display().to_string(),
        detail,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| bad(e.to_string()))? {
        let entry = entry.map_err(|e| bad(e.to_string()))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| bad(format!("a file name that is not UTF-8: {n:?}")))?;
        if name != SEAL_FILE {
            names.push(name);
        }
    }
    names.sort();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let mut ctx = ring::hmac::Context::with_key(&key);
    let mut buf = vec![0u8; 1 << 16];
    for name in &names {
        let mut f = open_regular(&dir.join(name)).map_err(|e| bad(format!("{name}: {e}")))?;
        let len = f.metadata().map_err(|e| bad(format!("{name}: {e}")))?.len();
        ctx.update(name.as_bytes());
        ctx.update(&[0]);
        ctx.update(&len.to_le_bytes());
        let mut seen = 0u64;
        loop {
            let n = f.read(&mut buf).map_err(|e| bad(format!("{name}: {e}")))?;
            if n == 0 {
                break;
            }
            seen += n as u64;
            ctx.update(&buf[..n]);
        }
        if seen != len {
            return Err(bad(format!("{name} changed while it was read")));
        }
    }
    Ok(ctx.sign())
}

/// Opens `path` for reading if it is a regular file (never through a
/// symbolic link).
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // not even opened if it is not one (a device, a pipe)
    if !path.symlink_metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Seals the image directory `dir` with `key` ([`SEAL_FILE`]).
pub fn seal(key: &[u8], dir: &Path) -> Result<(), BackendError> {
    let tag = seal_of(key, dir)?;
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(dir.join(SEAL_FILE), hex).map_err(|e| BackendError::Image {
        path: dir.display().to_string(),
        detail: e.to_string(),
    })
}

/// Whether `dir`'s seal is good for `key`.
pub fn verify_seal(key: &[u8], dir: &Path) -> Result<(), BackendError> {
    let bad = |detail: String| BackendError::Image {
        path: dir.display().to_string(),
        detail,
    };
    let mut text = String::new();
    open_regular(&dir.join(SEAL_FILE))
        .and_then(|f| f.take(256).read_to_string(&mut text))
        .map_err(|e| bad(format!("{SEAL_FILE}: {e}")))?;
    let text = text.trim();
    let stored: Option<Vec<u8>> = text
        .len()
        .is_multiple_of(2)
        .then(|| {
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
                .collect()
        })
        .flatten();
    let stored = stored.ok_or_else(|| bad(format!("{SEAL_FILE} is not a seal")))?;
    let tag = seal_of(key, dir)?;
    // compared in constant time
    let tag = tag.as_ref();
    let diff = tag
        .iter()
        .zip(&stored)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if diff != 0 || tag.len() != stored.len() {
        return Err(bad(
            "its seal does not match: not made by this pool, or changed since".into(),
        ));
    }
    Ok(())
}

/// Copies the image directory `from` (in the job's sandbox, the owner's
/// to change) into `to`, a new directory only root may touch, so that
/// what is verified is what is restored. Only regular files, never
/// through a link, no subdirectories.
pub fn copy_in(from: &Path, to: &Path) -> Result<(), BackendError> {
    use std::os::unix::fs::DirBuilderExt;
    let bad = |detail: String| BackendError::Image {
        path: from.display().to_string(),
        detail,
    };
    // the directory itself, never through a link
    if !from.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(bad("not a directory".into()));
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(to)
        .map_err(|e| bad(format!("{}: {e}", to.display())))?;
    let dir = std::fs::read_dir(from).map_err(|e| bad(e.to_string()))?;
    for entry in dir {
        let entry = entry.map_err(|e| bad(e.to_string()))?;
        let name = entry.file_name();
        let mut src = open_regular(&entry.path())
            .map_err(|e| bad(format!("{}: {e}", name.to_string_lossy())))?;
        let mut dst = std::fs::File::create_new(to.join(&name))
            .map_err(|e| bad(format!("{}: {e}", name.to_string_lossy())))?;
        std::io::copy(&mut src, &mut dst)
            .map_err(|e| bad(format!("{}: {e}", name.to_string_lossy())))?;
    }
    Ok(())
}

/// Makes the scratch directory the job was dumped in (`old`) lead to this
/// run's (`new`), so that its working directory and open files are found
/// where the image says: a symbolic link, made only if `old` is a
/// `dir_<digits>` scratch directory of this machine's `execute` directory
/// and nothing is there. Returns the link to remove when the run ends
/// (`None`: the same directory).
pub fn link_old_scratch(
    old: &Path,
    new: &Path,
    execute: &Path,
) -> Result<Option<PathBuf>, BackendError> {
    if old == new {
        return Ok(None);
    }
    let bad = |detail: String| BackendError::Image {
        path: old.display().to_string(),
        detail,
    };
    let name = old.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let scratch_like = name
        .strip_prefix("dir_")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    if old.parent() != Some(execute) || !scratch_like {
        return Err(bad(format!(
            "the job was checkpointed in a scratch directory that is not one of {}: it \
             can be restored only where EXECUTE is the same",
            execute.display()
        )));
    }
    std::os::unix::fs::symlink(new, old).map_err(|e| {
        bad(format!(
            "cannot make the job's earlier scratch directory lead to {}: {e}",
            new.display()
        ))
    })?;
    Ok(Some(old.to_path_buf()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn args(cmd: &Command) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// A fake `criu` that answers `check` with `check_rc` (and `stderr`),
    /// `--version` with a version, and records `dump`/`restore` calls.
    fn fake_criu(dir: &Path, check_rc: i32, stderr: &str) -> PathBuf {
        let path = dir.join("criu");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n  check) printf '%s' '{stderr}' >&2; exit {check_rc} ;;\n  --version) echo 'Version: 9.8.7'; exit 0 ;;\nesac\nexit 3\n"
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn criu_commands_dump_the_tree_and_restore_attached() {
        let criu = Criu::new("/opt/criu/bin/criu");
        let dump = criu.dump_command(4242, Path::new("/x/dir_1.criu"));
        assert_eq!(dump.get_program(), "/opt/criu/bin/criu");
        let a = args(&dump);
        assert_eq!(a[0], "dump");
        let after = |flag: &str| a.iter().position(|x| x == flag).map(|i| a[i + 1].clone());
        assert_eq!(after("--tree").as_deref(), Some("4242"));
        assert_eq!(after("--images-dir").as_deref(), Some("/x/dir_1.criu"));
        assert!(a.contains(&"--shell-job".to_string()), "{a:?}");
        // dumping ends the job (no --leave-running)
        assert!(
            !a.iter().any(|x| x == "--leave-running" || x == "-R"),
            "{a:?}"
        );

        let restore = criu.restore_command(
            Path::new("/y/dir_2/.skua_criu_image"),
            Path::new("/y/dir_2"),
        );
        let a = args(&restore);
        assert_eq!(a[0], "restore");
        assert!(a.contains(&"--shell-job".to_string()), "{a:?}");
        // not detached: criu stays the restored job's parent, and its exit
        // status is the job's
        assert!(
            !a.iter().any(|x| x == "-d" || x == "--restore-detached"),
            "{a:?}"
        );
        assert_eq!(restore.get_current_dir(), Some(Path::new("/y/dir_2")));
        assert_eq!(criu.name(), "criu");
    }

    #[test]
    fn detection_passes_only_where_criu_check_does() {
        let dir = tempfile::tempdir().unwrap();
        let good = fake_criu(dir.path(), 0, "Looks good.");
        let d = detect(&["criu".to_string()], &good);
        assert_eq!(d.backends, vec!["criu".to_string()]);
        assert!(
            d.platform.starts_with("criu-9.8.7 linux-"),
            "{}",
            d.platform
        );
        assert!(d.unavailable.is_empty());

        let bad_dir = tempfile::tempdir().unwrap();
        let bad = fake_criu(
            bad_dir.path(),
            1,
            "Error (criu/util.c:642): exited, status=1\nError (criu/vdso.c:613): vdso: Failed to fill self vdso symtable\n",
        );
        let d = detect(&["criu".to_string()], &bad);
        assert!(d.backends.is_empty());
        assert_eq!(d.platform, "");
        assert_eq!(d.unavailable.len(), 1);
        let reason = &d.unavailable[0].1;
        assert!(
            reason.contains("Failed to fill self vdso symtable"),
            "{reason}"
        );
        assert!(!reason.contains("exited, status"), "{reason}");
    }

    #[test]
    fn detection_says_no_without_criu_or_when_not_configured() {
        let d = detect(&["criu".to_string()], Path::new("/nonexistent/criu"));
        assert!(d.backends.is_empty());
        assert!(
            d.unavailable[0].1.contains("cannot run /nonexistent/criu"),
            "{:?}",
            d
        );
        let dir = tempfile::tempdir().unwrap();
        let good = fake_criu(dir.path(), 0, "");
        assert_eq!(detect(&[], &good), Detected::default());
        let d = detect(&["dmtcp".to_string()], &good);
        assert!(d.backends.is_empty());
        assert_eq!(d.unavailable[0].0, "dmtcp");
    }

    #[test]
    fn image_info_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let images = dir.path();
        assert!(image_info(images).is_err());
        std::fs::write(images.join(PID_FILE), "4242\n").unwrap();
        std::fs::write(images.join(SCRATCH_FILE), "/var/skua/execute/dir_77").unwrap();
        assert_eq!(
            image_info(images).unwrap(),
            ImageInfo {
                pid: 4242,
                scratch: PathBuf::from("/var/skua/execute/dir_77")
            }
        );
        std::fs::write(images.join(SCRATCH_FILE), "../etc").unwrap();
        assert!(image_info(images).is_err());
        std::fs::write(images.join(SCRATCH_FILE), "/x/dir_1").unwrap();
        for bad in ["1", "-5", "x", ""] {
            std::fs::write(images.join(PID_FILE), bad).unwrap();
            assert!(image_info(images).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_sealed_image_is_verified_and_any_change_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let images = dir.path().join("img");
        std::fs::create_dir(&images).unwrap();
        std::fs::write(images.join("pages-1.img"), vec![7u8; 100_000]).unwrap();
        std::fs::write(images.join(PID_FILE), "4242\n").unwrap();
        let key = b"pool signing key";
        seal(key, &images).unwrap();
        verify_seal(key, &images).unwrap();
        // another pool's key
        assert!(verify_seal(b"another key", &images).is_err());
        // copied out of the sandbox, still good
        let copy = dir.path().join("copy");
        copy_in(&images, &copy).unwrap();
        verify_seal(key, &copy).unwrap();
        // a changed byte, a renamed file, an added file, a missing seal
        let mut pages = std::fs::read(images.join("pages-1.img")).unwrap();
        pages[500] = 8;
        std::fs::write(images.join("pages-1.img"), &pages).unwrap();
        let e = verify_seal(key, &images).unwrap_err();
        assert!(e.to_string().contains("seal does not match"), "{e}");
        pages[500] = 7;
        std::fs::write(images.join("pages-1.img"), &pages).unwrap();
        verify_seal(key, &images).unwrap();
        std::fs::write(images.join("extra.img"), "x").unwrap();
        assert!(verify_seal(key, &images).is_err());
        std::fs::remove_file(images.join("extra.img")).unwrap();
        std::fs::remove_file(images.join(SEAL_FILE)).unwrap();
        assert!(verify_seal(key, &images).is_err());
    }

    #[test]
    fn copy_in_takes_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let images = dir.path().join("img");
        std::fs::create_dir(&images).unwrap();
        std::fs::write(images.join("a.img"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", images.join("b.img")).unwrap();
        let e = copy_in(&images, &dir.path().join("copy")).unwrap_err();
        assert!(e.to_string().contains("b.img"), "{e}");
        // never from a link to a directory
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&images, &link).unwrap();
        std::fs::remove_file(images.join("b.img")).unwrap();
        let e = copy_in(&link, &dir.path().join("copy2")).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        // never into a directory that exists
        std::fs::create_dir(dir.path().join("there")).unwrap();
        assert!(copy_in(&images, &dir.path().join("there")).is_err());
    }

    #[test]
    fn the_old_scratch_directory_leads_to_the_new_one_only_inside_execute() {
        let dir = tempfile::tempdir().unwrap();
        let execute = dir.path().join("execute");
        let new = execute.join("dir_200");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(new.join("out"), "x").unwrap();
        assert_eq!(link_old_scratch(&new, &new, &execute).unwrap(), None);
        let old = execute.join("dir_100");
        let link = link_old_scratch(&old, &new, &execute).unwrap();
        assert_eq!(link.as_deref(), Some(old.as_path()));
        assert_eq!(std::fs::read_to_string(old.join("out")).unwrap(), "x");
        // taken already
        assert!(link_old_scratch(&old, &new, &execute).is_err());
        for elsewhere in ["/etc/dir_1", "/x/execute/dir_1"] {
            assert!(link_old_scratch(Path::new(elsewhere), &new, &execute).is_err());
        }
        assert!(link_old_scratch(&execute.join("passwd"), &new, &execute).is_err());
    }

    #[tokio::test]
    async fn a_failed_dump_names_criu_s_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("criu");
        std::fs::write(
            &path,
            "#!/bin/sh\necho 'Error (criu/cr-dump.c:1): Dumping FAILED.' >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let images = dir.path().join("img");
        let e = dump(&Criu::new(&path), 4242, &images, Path::new("/x/dir_1"))
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("dump failed") && text.contains("Dumping FAILED."),
            "{text}"
        );
        // an image directory that exists already is refused (never written into)
        let e = dump(&Criu::new(&path), 4242, &images, Path::new("/x/dir_1"))
            .await
            .unwrap_err();
        assert!(matches!(e, BackendError::Image { .. }), "{e}");
    }
}
