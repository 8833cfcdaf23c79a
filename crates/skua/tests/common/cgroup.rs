//! cgroup v2 as the tests see it: whether this host lets a root starter
//! place jobs in cgroups, and where a pool's job groups are.

use std::path::{Path, PathBuf};

/// The cgroup2 mount point when this process runs as root and may make
/// groups there (as the starter would); `None` otherwise.
pub fn usable_cgroup2() -> Option<PathBuf> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let euid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(2)?
        .to_string();
    if euid != "0" {
        return None;
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let point = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })?;
    let probe = point.join(format!("skua-test-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    std::fs::remove_dir(&probe).ok()?;
    Some(point)
}

/// Where a startd with `EXECUTE = execute` keeps its jobs' groups under the
/// default `BASE_CGROUP` (docs/starter.md: `/` spelled `_`, `_` and `%`
/// escaped).
pub fn job_groups_dir(mount: &Path, execute: &Path) -> PathBuf {
    let key: String = execute
        .to_string_lossy()
        .trim_start_matches('/')
        .chars()
        .map(|c| match c {
            '%' => "%25".to_string(),
            '_' => "%5F".to_string(),
            '/' => "_".to_string(),
            c => c.to_string(),
        })
        .collect();
    mount.join("htcondor").join(key)
}

/// The v2 group of a process (`0::` line of `/proc/<pid>/cgroup`).
pub fn cgroup_of(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
}

/// User plus system CPU ticks of a process so far.
pub fn cpu_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}
