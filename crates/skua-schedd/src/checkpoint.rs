//! The checkpoint store: where a job's checkpoints are kept between its
//! runs (HTCondor keeps them in the job's spool directory).
//!
//! Layout, under a root (`$(SPOOL)/checkpoints`, or the directory of the
//! job's `CheckpointDestination = "file:///DIR"`):
//!
//! - `<C>.<P>/incoming-<N>/`: checkpoint `N` being received (the starter's
//!   files, each written under its relative name);
//! - `<C>.<P>/<N>/`: checkpoint `N`, stored whole.
//!
//! A commit makes the staged files durable (each file, then each
//! directory, is `fsync`ed), renames `incoming-<N>` to `<N>` in one step
//! and `fsync`s the job's directory: a checkpoint is whole or absent. The
//! shadow then records it in the job ad and removes the older numbers
//! and every staging directory left behind ([`prune`]).
//!
//! The functions here are plain file operations, synchronous, run by the
//! caller with the store's rights (the schedd's for the spool, the job
//! owner's for a `file://` destination: see [`Location`]).

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use classad::ClassAd;
use skua_proto::{EntryKind, InputEntry};
use skua_queue::JobId;

/// The staging directory's prefix (`incoming-<N>`).
const STAGING_PREFIX: &str = "incoming-";

/// What went wrong with a checkpoint, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file name from the starter that is not a plain relative path.
    #[error("checkpoint file name {0:?} is not a relative path without '..'")]
    BadName(String),
    /// The commit names a file that was not received.
    #[error("checkpoint {number}: file {name} was not received")]
    Missing {
        /// The checkpoint.
        number: u64,
        /// The file.
        name: String,
    },
    /// The job's `CheckpointDestination` is not a `file://` URL of an
    /// absolute directory.
    #[error("checkpoint_destination {0:?}: only file:///DIR URLs are supported")]
    Destination(String),
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl CheckpointError {
    /// The errno of the failure, if any (a hold's subcode).
    pub fn errno(&self) -> i64 {
        match self {
            CheckpointError::Io { source, .. } => source.raw_os_error().map(i64::from).unwrap_or(0),
            CheckpointError::Missing { .. } => i64::from(libc::ENOENT),
            _ => 0,
        }
    }
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where the checkpoints of a job live, and whose rights reach them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The root holding `<C>.<P>/`.
    pub root: PathBuf,
    /// True for a user-named place (`checkpoint_destination`): every
    /// operation there runs with the job owner's rights, never root's.
    pub as_owner: bool,
}

/// The job attribute naming a checkpoint destination.
pub const CHECKPOINT_DESTINATION: &str = "CheckpointDestination";

/// Where the checkpoints of the job `ad` go: its `CheckpointDestination`
/// (`file:///DIR`, owner's rights) or `spool_root` (the schedd's own).
pub fn location(ad: &ClassAd, spool_root: &Path) -> Result<Location, CheckpointError> {
    match crate::sandbox::string_attr(ad, CHECKPOINT_DESTINATION).filter(|s| !s.is_empty()) {
        None => Ok(Location {
            root: spool_root.to_path_buf(),
            as_owner: false,
        }),
        Some(url) => {
            let path = url
                .strip_prefix("file://")
                .filter(|p| p.starts_with('/'))
                .ok_or_else(|| CheckpointError::Destination(url.clone()))?;
            let path = Path::new(path);
            if path.components().any(|c| matches!(c, Component::ParentDir)) {
                return Err(CheckpointError::Destination(url));
            }
            Ok(Location {
                root: path.to_path_buf(),
                as_owner: true,
            })
        }
    }
}

/// The directory of the job's checkpoints.
pub fn job_dir(root: &Path, job: JobId) -> PathBuf {
    root.join(format!("{}.{}", job.cluster, job.proc))
}

/// The directory of stored checkpoint `number`.
pub fn stored_dir(root: &Path, job: JobId, number: u64) -> PathBuf {
    job_dir(root, job).join(number.to_string())
}

fn staging_dir(root: &Path, job: JobId, number: u64) -> PathBuf {
    job_dir(root, job).join(format!("{STAGING_PREFIX}{number}"))
}

/// `name` (from the starter) as a relative path: refused when empty,
/// absolute, or with a `..` component.
pub fn check_name(name: &str) -> Result<PathBuf, CheckpointError> {
    let bad = || CheckpointError::BadName(name.to_string());
    if name.is_empty() || name.contains('\0') {
        return Err(bad());
    }
    let mut out = PathBuf::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return Err(bad()),
        }
    }
    if out.as_os_str().is_empty() {
        return Err(bad());
    }
    Ok(out)
}

/// Creates the directories from `base` down to `rel`'s parent, one at a
/// time, never following a symbolic link.
fn make_dirs(base: &Path, rel: &Path) -> Result<PathBuf, CheckpointError> {
    let mut dir = base.to_path_buf();
    if let Some(parent) = rel.parent() {
        for c in parent.components() {
            dir.push(c);
            match fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(CheckpointError::Io {
                        path: dir,
                        source: io::Error::new(io::ErrorKind::AlreadyExists, "not a directory"),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&dir).map_err(io_at(&dir))?;
                }
                Err(e) => return Err(io_at(&dir)(e)),
            }
        }
    }
    Ok(dir)
}

/// Opens a new file for `name` in the staging area of checkpoint
/// `number` (made as needed; a copy staged before is replaced), created
/// exclusively, mode 0600, never through a symbolic link. Gives the file
/// and its path.
pub fn create_staged(
    root: &Path,
    job: JobId,
    number: u64,
    name: &str,
) -> Result<(File, PathBuf), CheckpointError> {
    let rel = check_name(name)?;
    let staging = staging_dir(root, job, number);
    // the store is the schedd's (or the owner's) alone: files are given
    // out through the schedd, never read in place by other users
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&staging)
        .map_err(io_at(&staging))?;
    make_dirs(&staging, &rel)?;
    let path = staging.join(&rel);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(&path).map_err(io_at(&path))?,
        Ok(_) => fs::remove_file(&path).map_err(io_at(&path))?,
        Err(_) => {}
    }
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(io_at(&path))?;
    Ok((file, path))
}

/// Sets a received file's mode (the job's bits, without set-id or sticky
/// bits; 0644 when none was given).
pub fn set_mode(path: &Path, mode: u32) -> Result<(), CheckpointError> {
    let mode = if mode == 0 { 0o644 } else { mode & 0o777 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_at(path))
}

fn fsync_dir(dir: &Path) -> Result<(), CheckpointError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))
}

/// `fsync`s every file and directory under `dir` (the directory last).
fn sync_tree(dir: &Path) -> Result<(), CheckpointError> {
    for entry in fs::read_dir(dir).map_err(io_at(dir))? {
        let entry = entry.map_err(io_at(dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io_at(&path))?;
        if kind.is_dir() {
            sync_tree(&path)?;
        } else if kind.is_file() {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io_at(&path))?;
        }
    }
    fsync_dir(dir)
}

/// Makes the staged checkpoint `number` the job's stored one: checks
/// that every file of `files` was received, makes them durable, and
/// renames the staging directory into place in one step. A checkpoint
/// already stored under that number (a repeated commit) is left as it
/// is. The older checkpoints stay until [`prune`].
pub fn commit(
    root: &Path,
    job: JobId,
    number: u64,
    files: &[String],
) -> Result<(), CheckpointError> {
    let staging = staging_dir(root, job, number);
    let target = stored_dir(root, job, number);
    if !staging.exists() && target.is_dir() {
        return Ok(());
    }
    if files.is_empty() && !staging.exists() {
        // a checkpoint of no files is a real (empty) checkpoint
        fs::create_dir_all(&staging).map_err(io_at(&staging))?;
    }
    check_staged(root, job, number, files)?;
    sync_tree(&staging)?;
    if target.exists() {
        // left by a run whose commit was never recorded: replaced
        fs::remove_dir_all(&target).map_err(io_at(&target))?;
    }
    fs::rename(&staging, &target).map_err(io_at(&target))?;
    fsync_dir(&job_dir(root, job))
}

/// Checks that every file of `files` was received for checkpoint
/// `number` (its staging area holds each as a regular file), or that the
/// checkpoint is stored already. Cheap: no data is read or synced.
pub fn check_staged(
    root: &Path,
    job: JobId,
    number: u64,
    files: &[String],
) -> Result<(), CheckpointError> {
    let staging = staging_dir(root, job, number);
    if !staging.exists() && stored_dir(root, job, number).is_dir() {
        return Ok(());
    }
    for name in files {
        let rel = check_name(name)?;
        match fs::symlink_metadata(staging.join(&rel)) {
            Ok(m) if m.is_file() => {}
            _ => {
                return Err(CheckpointError::Missing {
                    number,
                    name: name.clone(),
                })
            }
        }
    }
    Ok(())
}

/// After checkpoint `keep` is recorded: removes every other numbered
/// checkpoint and every staging directory of the job. Also used when a
/// run begins (with the job's recorded number), to drop what a cut
/// transfer or an unrecorded commit left.
pub fn prune(root: &Path, job: JobId, keep: Option<u64>) -> Result<(), CheckpointError> {
    remove_entries(root, job, |name| {
        name.starts_with(STAGING_PREFIX) || name.parse::<u64>().is_ok_and(|n| Some(n) != keep)
    })
}

/// After checkpoint `stored` is recorded: removes the older numbered
/// checkpoints and the staging directories of numbers up to `stored`, but
/// never a later one's staging (the job, restarted at once, may already be
/// sending its next checkpoint). Runs beside the job: a directory another
/// clean-up removed first is not an error.
pub fn prune_older(root: &Path, job: JobId, stored: u64) -> Result<(), CheckpointError> {
    remove_entries(root, job, |name| match name.strip_prefix(STAGING_PREFIX) {
        Some(staged) => staged.parse::<u64>().is_ok_and(|n| n <= stored),
        None => name.parse::<u64>().is_ok_and(|n| n < stored),
    })
}

/// Removes the entries of the job's store whose names `stale` picks; one
/// already gone is not an error.
fn remove_entries(
    root: &Path,
    job: JobId,
    stale: impl Fn(&str) -> bool,
) -> Result<(), CheckpointError> {
    let dir = job_dir(root, job);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_at(&dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_at(&dir))?;
        if !stale(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        match removed {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_at(&path)(e)),
        }
    }
    Ok(())
}

/// Removes every checkpoint of the job (it left the queue).
pub fn remove_job(root: &Path, job: JobId) -> Result<(), CheckpointError> {
    let dir = job_dir(root, job);
    match fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_at(&dir)(e)),
    }
}

/// The files of stored checkpoint `number` as input entries (flagged
/// [`InputEntry::checkpoint`], directories before their contents, sorted
/// by path), each with its stored path (`None` for a directory).
pub fn entries(
    root: &Path,
    job: JobId,
    number: u64,
) -> Result<Vec<(InputEntry, Option<PathBuf>)>, CheckpointError> {
    let dir = stored_dir(root, job, number);
    let mut out = Vec::new();
    walk(&dir, "", &mut out)?;
    Ok(out)
}

fn walk(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<(InputEntry, Option<PathBuf>)>,
) -> Result<(), CheckpointError> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .map_err(io_at(dir))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io_at(dir))?;
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let meta = fs::symlink_metadata(&path).map_err(io_at(&path))?;
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() {
            out.push((
                InputEntry {
                    path: rel.clone(),
                    kind: EntryKind::Dir,
                    size: 0,
                    mode,
                    executable: false,
                    stdin: false,
                    checkpoint: true,
                },
                None,
            ));
            walk(&path, &rel, out)?;
        } else if meta.is_file() {
            out.push((
                InputEntry {
                    path: rel,
                    kind: EntryKind::File,
                    size: meta.len(),
                    mode,
                    executable: false,
                    stdin: false,
                    checkpoint: true,
                },
                Some(path),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    const JOB: JobId = JobId {
        cluster: 7,
        proc: 3,
    };

    fn stage(root: &Path, n: u64, name: &str, text: &str) {
        let (mut f, path) = create_staged(root, JOB, n, name).expect("staged");
        f.write_all(text.as_bytes()).expect("written");
        set_mode(&path, 0o640).expect("mode");
    }

    fn read(root: &Path, n: u64, name: &str) -> String {
        fs::read_to_string(stored_dir(root, JOB, n).join(name)).expect("stored file")
    }

    #[test]
    fn a_commit_stores_the_checkpoint_whole_and_prune_drops_the_older() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        stage(root, 1, "state.txt", "one");
        commit(root, JOB, 1, &["state.txt".into()]).expect("commit 1");
        prune(root, JOB, Some(1)).expect("prune");
        stage(root, 2, "state.txt", "two");
        stage(root, 2, "sub/dir/more.dat", "more");
        commit(
            root,
            JOB,
            2,
            &["state.txt".into(), "sub/dir/more.dat".into()],
        )
        .expect("commit 2");
        // checkpoint 1 stays until the new one is recorded
        assert_eq!(read(root, 1, "state.txt"), "one");
        // the job, restarted, already sends checkpoint 3: its staging stays
        stage(root, 3, "state.txt", "thr");
        prune_older(root, JOB, 2).expect("prune");
        assert_eq!(
            fs::read_to_string(staging_dir(root, JOB, 3).join("state.txt")).expect("staged"),
            "thr"
        );
        assert!(!stored_dir(root, JOB, 1).exists());
        assert_eq!(read(root, 2, "state.txt"), "two");
        assert_eq!(read(root, 2, "sub/dir/more.dat"), "more");
        let listed = entries(root, JOB, 2).expect("entries");
        let paths: Vec<_> = listed.iter().map(|(e, _)| e.path.as_str()).collect();
        let job_mode = fs::metadata(job_dir(root, JOB))
            .expect("job dir")
            .permissions()
            .mode();
        assert_eq!(job_mode & 0o777, 0o700, "the store is not for other users");
        assert_eq!(paths, ["state.txt", "sub", "sub/dir", "sub/dir/more.dat"]);
        assert!(listed.iter().all(|(e, _)| e.checkpoint));
        assert_eq!(listed[0].0.mode, 0o640);
        assert_eq!(listed[0].0.size, 3);
        assert_eq!(listed[1].0.kind, EntryKind::Dir);
        assert!(listed[1].1.is_none());
    }

    #[test]
    fn a_cut_staging_leaves_the_previous_checkpoint_and_is_swept() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        stage(root, 1, "state.txt", "one");
        commit(root, JOB, 1, &["state.txt".into()]).expect("commit 1");
        // checkpoint 2: one file arrived, the transfer was cut, no commit
        stage(root, 2, "state.txt", "tw");
        assert_eq!(read(root, 1, "state.txt"), "one");
        assert!(!stored_dir(root, JOB, 2).exists());
        // the next run begins: what was left is dropped, 1 stays
        prune(root, JOB, Some(1)).expect("prune");
        assert!(!staging_dir(root, JOB, 2).exists());
        assert_eq!(read(root, 1, "state.txt"), "one");
        // a commit naming a file never received is refused
        stage(root, 2, "state.txt", "two");
        let err = commit(root, JOB, 2, &["state.txt".into(), "other".into()])
            .expect_err("missing file refused");
        assert!(err.to_string().contains("other"), "{err}");
        assert_eq!(err.errno(), i64::from(libc::ENOENT));
        assert!(!stored_dir(root, JOB, 2).exists());
    }

    #[test]
    fn a_repeated_commit_changes_nothing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        stage(root, 4, "state.txt", "four");
        commit(root, JOB, 4, &["state.txt".into()]).expect("commit");
        commit(root, JOB, 4, &["state.txt".into()]).expect("commit again");
        assert_eq!(read(root, 4, "state.txt"), "four");
    }

    #[test]
    fn hostile_names_are_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a/..", ".", "a\0b"] {
            assert!(
                matches!(
                    create_staged(root, JOB, 1, bad),
                    Err(CheckpointError::BadName(_))
                ),
                "{bad:?} accepted"
            );
            assert!(commit(root, JOB, 1, &[bad.to_string()]).is_err());
        }
        assert_eq!(check_name("./a/b").expect("fine"), PathBuf::from("a/b"));
        // a symbolic link planted in the staging area is not followed
        let staging = staging_dir(root, JOB, 1);
        fs::create_dir_all(&staging).expect("staging");
        let outside = root.join("outside");
        fs::create_dir(&outside).expect("outside");
        std::os::unix::fs::symlink(&outside, staging.join("sub")).expect("link");
        assert!(create_staged(root, JOB, 1, "sub/f").is_err());
        assert!(!outside.join("f").exists());
    }

    #[test]
    fn destinations_are_file_urls_of_absolute_directories() {
        let spool = Path::new("/spool/checkpoints");
        let ad = |text: &str| classad::parse_ad(text).expect("ad");
        assert_eq!(
            location(&ad("[Owner = \"u\"]"), spool).expect("spool"),
            Location {
                root: spool.to_path_buf(),
                as_owner: false
            }
        );
        assert_eq!(
            location(&ad("[CheckpointDestination = \"file:///data/ck\"]"), spool).expect("file"),
            Location {
                root: PathBuf::from("/data/ck"),
                as_owner: true
            }
        );
        for bad in ["s3://bucket/x", "file://relative", "file:///a/../b"] {
            let text = format!("[CheckpointDestination = \"{bad}\"]");
            assert!(location(&ad(&text), spool).is_err(), "{bad}");
        }
    }

    #[test]
    fn removing_the_job_removes_everything() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        stage(root, 1, "state.txt", "one");
        commit(root, JOB, 1, &["state.txt".into()]).expect("commit");
        stage(root, 2, "state.txt", "two");
        remove_job(root, JOB).expect("removed");
        assert!(!job_dir(root, JOB).exists());
        remove_job(root, JOB).expect("removing nothing is fine");
    }
}
