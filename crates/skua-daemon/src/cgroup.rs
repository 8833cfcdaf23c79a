//! Jobs in cgroup v2: one group per job, so that no process of the job
//! escapes being killed, frozen or accounted for (a process that calls
//! `setsid` leaves the job's process group, never its cgroup).
//!
//! Layout (HTCondor's `BASE_CGROUP`, default `htcondor`, names the parent):
//!
//! ```text
//! <cgroup2 mount>/<BASE_CGROUP>/<execute key>/<slot>_<starter pid>_<serial>
//! ```
//!
//! The execute key is the startd's `EXECUTE` directory spelled as one path
//! component (`/var/lib/skua/execute` → `var_lib_skua_execute`), so two
//! startds on one machine never touch each other's groups and a startd's
//! start-up clean-up ([`CgroupTree::clean_leftovers`]) only removes its
//! own. The starter uses [`CgroupTree::create_job`],
//! [`JobCgroup::spawn_inside`], [`JobCgroup::kill`], [`JobCgroup::freeze`],
//! [`JobCgroup::usage`] and [`JobCgroup::remove`].
//!
//! Cgroups are used only by root, with a cgroup2 file system mounted
//! (found in `/proc/self/mountinfo`: `/sys/fs/cgroup` on a pure v2 host,
//! `/sys/fs/cgroup/unified` on a hybrid one). No controller needs to be
//! enabled: `cgroup.procs`, `cgroup.kill`, `cgroup.freeze`,
//! `cgroup.events` and `cpu.stat` exist in every group; `memory.current`
//! and `memory.peak` are read when the memory controller is there.
//!
//! The parsers are pure and tested with sample text; the rest reads and
//! writes the cgroup file system.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why cgroups cannot be used, or an operation on one failed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("BASE_CGROUP is empty: jobs are not placed in cgroups")]
    Disabled,
    #[error("BASE_CGROUP `{0}` is not a relative path below the cgroup root")]
    BadBase(String),
    #[error("no cgroup2 file system is mounted")]
    NoCgroup2,
    #[error("cannot tell this process's cgroup v2 group from /proc/self/cgroup")]
    NoOwnGroup,
    #[error("only a daemon running as root places jobs in cgroups")]
    NotRoot,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the cgroup {} still has processes", .0.display())]
    Busy(PathBuf),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError + '_ {
    move |source| CgroupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------- parsing

/// A cgroup2 mount from `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup2Mount {
    /// Where it is mounted.
    pub point: PathBuf,
    /// Which group of the hierarchy is at the mount point (`/` unless a
    /// subtree was bind-mounted).
    pub root: String,
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape_mountinfo(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let digits = b.get(i + 1..i + 4).unwrap_or_default();
            if digits.len() == 3 && digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                if let Ok(byte) = u8::try_from(v) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first cgroup2 mount in `/proc/self/mountinfo` text. A line is
/// `id parent major:minor root mount-point options [optional...] -
/// fstype source super-options`.
pub fn parse_mountinfo(text: &str) -> Option<Cgroup2Mount> {
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        if fstype != "cgroup2" {
            return None;
        }
        let f: Vec<&str> = left.split_whitespace().collect();
        Some(Cgroup2Mount {
            root: unescape_mountinfo(f.get(3)?),
            point: PathBuf::from(unescape_mountinfo(f.get(4)?)),
        })
    })
}

/// This process's group in the v2 hierarchy: the path of the `0::` line of
/// `/proc/self/cgroup` (e.g. `/system.slice/skua.service`).
pub fn parse_proc_cgroup(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim_end().to_string())
        .filter(|p| p.starts_with('/'))
}

/// The CPU time of a group, from `cpu.stat` (microseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub usage_usec: u64,
    pub user_usec: u64,
    pub system_usec: u64,
}

impl CpuStat {
    /// Parses `cpu.stat` (`key value` lines; unknown keys are ignored).
    /// `None` without `usage_usec`.
    pub fn parse(text: &str) -> Option<CpuStat> {
        let mut s = CpuStat::default();
        let mut usage = false;
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(k), Some(v)) = (it.next(), it.next()) else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            match k {
                "usage_usec" => {
                    s.usage_usec = v;
                    usage = true;
                }
                "user_usec" => s.user_usec = v,
                "system_usec" => s.system_usec = v,
                _ => {}
            }
        }
        usage.then_some(s)
    }

    /// User CPU seconds.
    pub fn user_secs(&self) -> f64 {
        self.user_usec as f64 / 1e6
    }

    /// System CPU seconds.
    pub fn sys_secs(&self) -> f64 {
        self.system_usec as f64 / 1e6
    }

    /// Reads `<dir>/cpu.stat`.
    pub fn read(dir: &Path) -> Option<CpuStat> {
        CpuStat::parse(&std::fs::read_to_string(dir.join("cpu.stat")).ok()?)
    }
}

/// `cgroup.events`: whether the group (or a descendant) has processes, and
/// whether it is frozen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    pub populated: bool,
    pub frozen: bool,
}

impl Events {
    pub fn parse(text: &str) -> Option<Events> {
        let mut e = Events::default();
        let mut seen = false;
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("populated", v)) => {
                    e.populated = v.trim() == "1";
                    seen = true;
                }
                Some(("frozen", v)) => e.frozen = v.trim() == "1",
                _ => {}
            }
        }
        seen.then_some(e)
    }
}

/// `EXECUTE` as one cgroup name: the path without its leading `/`, with
/// `/` spelled `_` as HTCondor does, and `%` and `_` escaped (`%25`,
/// `%5F`) so that two directories never share a key. A key longer than a
/// file name may be keeps its head and ends with a hash of the whole.
pub fn execute_key(execute: &Path) -> String {
    let text = execute.to_string_lossy();
    let mut key = String::with_capacity(text.len());
    for c in text.trim_start_matches('/').chars() {
        match c {
            '/' => key.push('_'),
            '_' => key.push_str("%5F"),
            '%' => key.push_str("%25"),
            '\n' | '\0' => key.push_str("%0A"),
            c => key.push(c),
        }
    }
    if key.is_empty() {
        key.push_str("%2F");
    }
    if key.len() > 200 {
        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let mut cut = 160;
        while !key.is_char_boundary(cut) {
            cut -= 1;
        }
        key.truncate(cut);
        key.push_str(&format!("..{hash:016x}"));
    }
    key
}

/// A job group's name: `<slot>_<starter pid>_<serial>`, the slot name kept
/// to letters, digits and `.@-_`.
pub fn job_group_name(slot: &str, starter_pid: u32, serial: u64) -> String {
    let slot: String = slot
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._@-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let slot = if slot.is_empty() { "job".into() } else { slot };
    format!("{slot}_{starter_pid}_{serial}")
}

/// The starter pid in a job group's name (see [`job_group_name`]).
pub fn starter_pid_of(name: &str) -> Option<u32> {
    let mut parts = name.rsplitn(3, '_');
    let _serial: u64 = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    parts.next()?;
    Some(pid)
}

// ---------------------------------------------------------------- the tree

/// Where a daemon's job groups live; see the module documentation.
#[derive(Clone, Debug)]
pub struct CgroupTree {
    /// `<mount>/<BASE_CGROUP>/<execute key>`.
    dir: PathBuf,
    /// This process's own group (where it returns after a spawn).
    home: PathBuf,
}

/// Serial numbers of the job groups a process makes.
static SERIAL: AtomicU64 = AtomicU64::new(1);

impl CgroupTree {
    /// Finds the cgroup2 mount and this process's group, and checks that
    /// groups can be made: `base` is `BASE_CGROUP` (empty: disabled),
    /// `execute` the startd's `EXECUTE`.
    pub fn discover(base: &str, execute: &Path) -> Result<CgroupTree, CgroupError> {
        let base = base.trim().trim_matches('/');
        if base.is_empty() {
            return Err(CgroupError::Disabled);
        }
        if base
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(CgroupError::BadBase(base.to_string()));
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(io_err(Path::new("/proc/self/mountinfo")))?;
        let mount = parse_mountinfo(&mountinfo).ok_or(CgroupError::NoCgroup2)?;
        if !nix::unistd::geteuid().is_root() {
            return Err(CgroupError::NotRoot);
        }
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(io_err(Path::new("/proc/self/cgroup")))?;
        let own = parse_proc_cgroup(&own).ok_or(CgroupError::NoOwnGroup)?;
        // the own group is relative to the hierarchy's root; the mount
        // shows the group `mount.root` at `mount.point`
        let root = mount.root.trim_end_matches('/');
        let rel = own
            .strip_prefix(root)
            .filter(|r| r.is_empty() || r.starts_with('/'))
            .ok_or(CgroupError::NoOwnGroup)?;
        let home = mount.point.join(rel.trim_start_matches('/'));
        if !home.join("cgroup.procs").exists() {
            return Err(CgroupError::NoOwnGroup);
        }
        Ok(CgroupTree {
            dir: mount.point.join(base).join(execute_key(execute)),
            home,
        })
    }

    /// `<mount>/<BASE_CGROUP>/<execute key>`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes a fresh, empty group for one job of `slot`, run by the
    /// starter `starter_pid`.
    pub fn create_job(&self, slot: &str, starter_pid: u32) -> Result<JobCgroup, CgroupError> {
        let mut last = None;
        for _ in 0..8 {
            let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
            let path = self.dir.join(job_group_name(slot, starter_pid, serial));
            std::fs::create_dir_all(&self.dir).map_err(io_err(&self.dir))?;
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(JobCgroup {
                        path,
                        home: self.home.clone(),
                    })
                }
                // a leftover of an earlier starter with this pid, or the
                // key directory removed by another starter meanwhile
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound
                    ) =>
                {
                    last = Some(CgroupError::Io { path, source: e });
                }
                Err(e) => return Err(CgroupError::Io { path, source: e }),
            }
        }
        Err(last.unwrap_or(CgroupError::Busy(self.dir.clone())))
    }

    /// Every job group below [`dir`](Self::dir) (of starters that are
    /// gone: the startd calls this at start-up), or only those of
    /// `starter` when given: whatever is left in them is killed, then they
    /// are removed. Returns how many were removed.
    pub fn clean_leftovers(&self, starter: Option<u32>, timeout: Duration) -> usize {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut removed = 0;
        for e in rd.flatten() {
            let path = e.path();
            if !path.is_dir() {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if starter.is_some() && starter_pid_of(&name) != starter {
                continue;
            }
            let group = JobCgroup {
                path,
                home: self.home.clone(),
            };
            let procs = group.procs();
            if !procs.is_empty() {
                tracing::info!(
                    group = %group.path.display(),
                    processes = procs.len(),
                    "killing what is left in a job's cgroup"
                );
            }
            if let Err(e) = group.kill() {
                tracing::warn!(error = %e, "killing a leftover job cgroup");
            }
            match group.remove(timeout) {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(error = %e, "removing a leftover job cgroup"),
            }
        }
        removed
    }
}

/// The startd's start-up clean-up: kills what is left in the job groups
/// of its earlier life (below `BASE_CGROUP`/`<execute key>`) and removes
/// them. Does nothing (but log at debug) where cgroups are not used.
pub fn clean_leftover_job_groups(base: &str, execute: &Path) {
    match CgroupTree::discover(base, execute) {
        Ok(tree) => {
            let n = tree.clean_leftovers(None, Duration::from_secs(2));
            if n > 0 {
                tracing::info!(dir = %tree.dir().display(), groups = n, "removed leftover job cgroups");
            }
            let _ = std::fs::remove_dir(tree.dir());
        }
        Err(e) => tracing::debug!(reason = %e, "no job cgroups to clean"),
    }
}

// ---------------------------------------------------------------- one job

/// One job's group. Dropping it removes the group only if it is empty
/// (the kernel refuses to remove a group with processes): call
/// [`kill`](Self::kill) and [`remove`](Self::remove).
#[derive(Debug)]
pub struct JobCgroup {
    path: PathBuf,
    home: PathBuf,
}

/// What a group used (see [`JobCgroup::usage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CgroupUsage {
    pub cpu: CpuStat,
    /// `memory.current`, bytes (only with the memory controller).
    pub memory_current: Option<u64>,
    /// `memory.peak`, bytes (memory controller, Linux 5.19 and later).
    pub memory_peak: Option<u64>,
}

/// One process moves through the groups at a time (see
/// [`JobCgroup::spawn_inside`]).
static HOP: Mutex<()> = Mutex::new(());

fn write_file(path: &Path, text: &str) -> Result<(), CgroupError> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(io_err(path))
}

impl JobCgroup {
    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `spawn` (which forks the job) with this whole process moved
    /// into the group, then moves the process back to its own group: the
    /// child is born in the job's group, so not even its first instruction
    /// runs outside it.
    ///
    /// Why this way: the workspace allows no `unsafe`, so the child cannot
    /// place itself between fork and exec (`pre_exec`), and std has no
    /// `clone3(CLONE_INTO_CGROUP)`. Writing the child's pid after the spawn
    /// leaves a window in which the job can fork a process that stays
    /// outside; a trampoline (re-exec ourselves, join the group, drop
    /// privileges, exec the job) costs a whole extra exec per job and
    /// re-implements what `Command` does for uid, gid and exec errors.
    /// Two writes to `cgroup.procs` cost tens of microseconds. The price:
    /// the starter's few microseconds inside are charged to the job's
    /// `cpu.stat`, and a process whose other threads fork at that moment
    /// would place their children there too (the starter forks nothing
    /// else; the moves are serialized by a lock).
    ///
    /// Fails (without calling `spawn`) when the process cannot join the
    /// group. If it cannot go back (it always can as root), it stays in the
    /// job's group, and [`kill`](Self::kill) spares it.
    pub fn spawn_inside<T>(&self, spawn: impl FnOnce() -> T) -> Result<T, CgroupError> {
        let _guard = HOP.lock().unwrap_or_else(|p| p.into_inner());
        let me = std::process::id().to_string();
        write_file(&self.path.join("cgroup.procs"), &me)?;
        let out = spawn();
        let home = self.home.join("cgroup.procs");
        let mut back = write_file(&home, &me);
        for _ in 0..3 {
            if back.is_ok() {
                break;
            }
            back = write_file(&home, &me);
        }
        if let Err(e) = back {
            tracing::error!(error = %e, "cannot leave the job's cgroup");
        }
        Ok(out)
    }

    /// The processes in the group (not its descendants).
    pub fn procs(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// `cgroup.events`, when it can be read.
    pub fn events(&self) -> Option<Events> {
        Events::parse(&std::fs::read_to_string(self.path.join("cgroup.events")).ok()?)
    }

    /// Whether any process is left in the group or below it.
    pub fn populated(&self) -> bool {
        match self.events() {
            Some(e) => e.populated,
            None => !self.procs().is_empty(),
        }
    }

    /// Kills every process in the group and below: `cgroup.kill` (Linux
    /// 5.14), else SIGKILL to each process (with the group frozen so that
    /// nothing forks meanwhile) until none is left. This process itself is
    /// never killed, should it be inside.
    pub fn kill(&self) -> Result<(), CgroupError> {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let inside = self.procs().contains(&me);
        if !inside && write_file(&self.path.join("cgroup.kill"), "1").is_ok() {
            return Ok(());
        }
        // (never freeze a group this process is in: it would stop itself)
        let froze = !inside && self.freeze(true).is_ok();
        for _ in 0..100 {
            let others: Vec<i32> = self
                .procs()
                .into_iter()
                .filter(|p| *p != me && *p > 0)
                .collect();
            if others.is_empty() {
                break;
            }
            for pid in others {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if froze {
            let _ = self.freeze(false);
        }
        if self.procs().iter().any(|p| *p != me) {
            return Err(CgroupError::Busy(self.path.clone()));
        }
        Ok(())
    }

    /// Freezes (suspends) or thaws every process of the group through
    /// `cgroup.freeze` (Linux 5.2).
    pub fn freeze(&self, frozen: bool) -> Result<(), CgroupError> {
        write_file(
            &self.path.join("cgroup.freeze"),
            if frozen { "1" } else { "0" },
        )
    }

    /// CPU and memory the group used so far (its exited processes
    /// included).
    pub fn usage(&self) -> Result<CgroupUsage, CgroupError> {
        let stat = self.path.join("cpu.stat");
        let text = std::fs::read_to_string(&stat).map_err(io_err(&stat))?;
        let cpu = CpuStat::parse(&text).unwrap_or_default();
        let read_u64 = |name: &str| {
            std::fs::read_to_string(self.path.join(name))
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
        };
        Ok(CgroupUsage {
            cpu,
            memory_current: read_u64("memory.current"),
            memory_peak: read_u64("memory.peak"),
        })
    }

    /// Waits up to `timeout` for the group to empty (`cgroup.events` says
    /// `populated 0`); true when it did.
    pub fn wait_empty(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_micros(200);
        loop {
            if !self.populated() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Waits (up to `timeout`) until no process is left, then removes the
    /// group (and any group the job made below it), and its execute-key
    /// parent when that is empty too. Blocking.
    pub fn remove(&self, timeout: Duration) -> Result<(), CgroupError> {
        if !self.path.exists() {
            return Ok(());
        }
        if !self.wait_empty(timeout) {
            return Err(CgroupError::Busy(self.path.clone()));
        }
        remove_tree(&self.path)?;
        if let Some(parent) = self.path.parent() {
            // fails while another job's group is there: fine
            let _ = std::fs::remove_dir(parent);
        }
        Ok(())
    }
}

impl Drop for JobCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// Removes an empty group and the groups below it (children first; a
/// cgroup directory is removed with `rmdir`, its files go with it).
fn remove_tree(dir: &Path) -> Result<(), CgroupError> {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path())?;
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CgroupError::Io {
            path: dir.to_path_buf(),
            source: e,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const PURE_V2: &str = "\
22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
29 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";

    #[test]
    fn the_cgroup2_mount_is_found_on_hybrid_and_pure_v2_hosts() {
        assert_eq!(
            parse_mountinfo(HYBRID),
            Some(Cgroup2Mount {
                point: "/sys/fs/cgroup/unified".into(),
                root: "/".into()
            })
        );
        // optional fields (shared:N) before the separator
        assert_eq!(
            parse_mountinfo(PURE_V2).unwrap().point,
            PathBuf::from("/sys/fs/cgroup")
        );
        // v1 only: none
        let v1: String = HYBRID.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse_mountinfo(&v1), None);
        assert_eq!(parse_mountinfo(""), None);
        assert_eq!(parse_mountinfo("garbage - cgroup2"), None);
    }

    #[test]
    fn mount_points_with_escaped_spaces_and_subtree_roots() {
        let line = "50 22 0:40 /system.slice /mnt/my\\040cg rw - cgroup2 none rw\n";
        assert_eq!(
            parse_mountinfo(line),
            Some(Cgroup2Mount {
                point: "/mnt/my cg".into(),
                root: "/system.slice".into()
            })
        );
        assert_eq!(unescape_mountinfo("a\\134b"), "a\\b");
        assert_eq!(unescape_mountinfo("trailing\\"), "trailing\\");
        assert_eq!(unescape_mountinfo("short\\04"), "short\\04");
    }

    #[test]
    fn the_own_group_is_the_v2_line_of_proc_self_cgroup() {
        let hybrid = "9:name=systemd:/\n4:memory:/process_api/e93d\n1:cpu:/\n0::/\n";
        assert_eq!(parse_proc_cgroup(hybrid).as_deref(), Some("/"));
        let v2 = "0::/system.slice/skua.service\n";
        assert_eq!(
            parse_proc_cgroup(v2).as_deref(),
            Some("/system.slice/skua.service")
        );
        assert_eq!(parse_proc_cgroup("4:memory:/x\n"), None);
        assert_eq!(parse_proc_cgroup(""), None);
    }

    #[test]
    fn cpu_stat_and_events() {
        let text = "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnice_usec 0\n\
                    nr_periods 0\ncore_sched.force_idle_usec 0\n";
        let s = CpuStat::parse(text).unwrap();
        assert_eq!(
            s,
            CpuStat {
                usage_usec: 2_500_000,
                user_usec: 2_000_000,
                system_usec: 500_000
            }
        );
        assert!((s.user_secs() - 2.0).abs() < 1e-9 && (s.sys_secs() - 0.5).abs() < 1e-9);
        assert_eq!(CpuStat::parse("nr_periods 3\n"), None);
        assert_eq!(CpuStat::parse("usage_usec x\n"), None);

        assert_eq!(
            Events::parse("populated 1\nfrozen 0\n"),
            Some(Events {
                populated: true,
                frozen: false
            })
        );
        assert_eq!(
            Events::parse("populated 0\nfrozen 1\n"),
            Some(Events {
                populated: false,
                frozen: true
            })
        );
        assert_eq!(Events::parse(""), None);
    }

    #[test]
    fn names_of_keys_and_job_groups() {
        assert_eq!(
            execute_key(Path::new("/var/lib/skua/execute")),
            "var_lib_skua_execute"
        );
        // distinct directories never share a key
        assert_ne!(
            execute_key(Path::new("/a/b_c")),
            execute_key(Path::new("/a_b/c"))
        );
        assert_eq!(execute_key(Path::new("/a/b_c")), "a_b%5Fc");
        assert_eq!(execute_key(Path::new("/")), "%2F");
        let long = format!("/{}", "x/".repeat(300));
        let k = execute_key(Path::new(&long));
        assert!(k.len() <= 200 && !k.contains('/'), "{k}");
        assert_ne!(k, execute_key(Path::new(&format!("{long}y"))));

        let n = job_group_name("slot1_1@host.example", 4242, 7);
        assert_eq!(n, "slot1_1@host.example_4242_7");
        assert_eq!(starter_pid_of(&n), Some(4242));
        assert_eq!(job_group_name("a/b c", 1, 2), "a_b_c_1_2");
        assert_eq!(job_group_name("", 1, 2), "job_1_2");
        assert_eq!(starter_pid_of("slot1"), None);
        assert_eq!(starter_pid_of("x_y_z"), None);
    }

    #[test]
    fn an_empty_or_escaping_base_disables_cgroups() {
        assert!(matches!(
            CgroupTree::discover("", Path::new("/x")),
            Err(CgroupError::Disabled)
        ));
        assert!(matches!(
            CgroupTree::discover("  ", Path::new("/x")),
            Err(CgroupError::Disabled)
        ));
        assert!(matches!(
            CgroupTree::discover("a/../..", Path::new("/x")),
            Err(CgroupError::BadBase(_))
        ));
    }

    /// The real thing, where this host offers cgroup v2 to root (CI does):
    /// a job that escapes its process group stays in its cgroup, is frozen
    /// and killed with it, and its CPU time is counted.
    #[test]
    fn a_job_group_holds_kills_freezes_and_measures_escaped_processes() {
        let execute = tempfile::tempdir().unwrap();
        let base = format!("skua-unit-{}", std::process::id());
        let tree = match CgroupTree::discover(&base, execute.path()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipped: no usable cgroup v2 here ({e})");
                return;
            }
        };
        let group = tree.create_job("slot1@test", std::process::id()).unwrap();
        // whatever fails below, no process of the group outlives the test
        struct KillOnDrop<'a>(&'a JobCgroup);
        impl Drop for KillOnDrop<'_> {
            fn drop(&mut self) {
                let _ = self.0.kill();
            }
        }
        let _cleanup = KillOnDrop(&group);
        assert!(group.path().starts_with(tree.dir()));
        assert!(!group.populated());
        let pidfile = execute.path().join("escaped");
        let script = format!(
            "setsid sh -c 'echo $$ > {}; i=0; while :; do i=$((i+1)); done' & exec sleep 300",
            pidfile.display()
        );
        let started = Instant::now();
        let mut child = group
            .spawn_inside(|| {
                std::process::Command::new("sh")
                    .args(["-c", &script])
                    .spawn()
            })
            .unwrap()
            .unwrap();
        let hop = started.elapsed();
        eprintln!("spawn inside the group took {hop:?}");
        // this process went back home
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(!group.procs().contains(&me));
        let deadline = Instant::now() + Duration::from_secs(10);
        let escaped = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                break p;
            }
            assert!(
                Instant::now() < deadline,
                "the escaped process never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        let procs = group.procs();
        assert!(procs.contains(&(child.id() as i32)), "{procs:?}");
        assert!(procs.contains(&escaped), "{procs:?}");
        assert!(group.populated());

        // let the busy loop run until it used a tenth of a second (however
        // loaded the machine is), then freeze and thaw
        let deadline = Instant::now() + Duration::from_secs(20);
        while group.usage().unwrap().cpu.usage_usec < 100_000 {
            assert!(Instant::now() < deadline, "the busy loop never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        group.freeze(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group.events().unwrap().frozen {
            assert!(Instant::now() < deadline, "never frozen");
            std::thread::sleep(Duration::from_millis(5));
        }
        let frozen_cpu = group.usage().unwrap().cpu.usage_usec;
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            group.usage().unwrap().cpu.usage_usec,
            frozen_cpu,
            "a frozen group uses no CPU"
        );
        group.freeze(false).unwrap();
        assert!(!group.events().unwrap().frozen);

        let usage = group.usage().unwrap();
        assert!(usage.cpu.usage_usec >= 100_000, "{usage:?}");
        assert!(usage.cpu.user_usec > 0, "{usage:?}");

        group.kill().unwrap();
        let _ = child.wait();
        assert!(group.wait_empty(Duration::from_secs(5)));
        assert!(
            !Path::new(&format!("/proc/{escaped}")).exists()
                || std::fs::read_to_string(format!("/proc/{escaped}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "the escaped process is gone"
        );
        group.remove(Duration::from_secs(5)).unwrap();
        assert!(!group.path().exists());
        assert!(!tree.dir().exists(), "the empty key directory went too");

        // leftovers: a populated group of a gone starter is cleaned up
        let left = tree.create_job("slot2@test", 999_999).unwrap();
        let other = tree.create_job("slot3@test", 999_998).unwrap();
        let mut sleeper = left
            .spawn_inside(|| std::process::Command::new("sleep").arg("300").spawn())
            .unwrap()
            .unwrap();
        assert_eq!(
            tree.clean_leftovers(Some(999_999), Duration::from_secs(5)),
            1
        );
        let _ = sleeper.wait();
        assert!(!left.path().exists() && other.path().exists());
        assert_eq!(tree.clean_leftovers(None, Duration::from_secs(5)), 1);
        assert!(!other.path().exists());
        let _ = std::fs::remove_dir(tree.dir());
        let _ = std::fs::remove_dir(tree.dir().parent().unwrap());
    }
}
