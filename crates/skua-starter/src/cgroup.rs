//! The job's cgroup, from the starter's side (the mechanics are in
//! `skua_daemon::cgroup`): where the machine offers cgroup v2 to a root
//! starter and `BASE_CGROUP` is not empty, each job is born in a fresh
//! group `<BASE_CGROUP>/<execute key>/<slot>_<starter pid>_<serial>`; at
//! its end everything left in the group is killed, its CPU time read and
//! the group removed. Without cgroups the job runs in its process group
//! only (logged once): a job never fails for want of a cgroup.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use skua_daemon::cgroup::{CgroupTree, JobCgroup};

use crate::usage::UsageMeter;

/// How long the end of a job waits for its killed processes to go.
const EMPTY_TIMEOUT: Duration = Duration::from_secs(5);

static TREE: OnceLock<Option<CgroupTree>> = OnceLock::new();

/// The starter's cgroup tree, discovered once per process.
fn tree(base: &str, execute: &Path) -> Option<&'static CgroupTree> {
    TREE.get_or_init(|| match CgroupTree::discover(base, execute) {
        Ok(t) => {
            tracing::info!(dir = %t.dir().display(), "jobs run in their own cgroup v2 group");
            Some(t)
        }
        Err(e) => {
            tracing::info!(reason = %e, "jobs run without a cgroup (process group only)");
            None
        }
    })
    .as_ref()
}

/// Spawns the job (`cmd`) inside a fresh cgroup when there can be one,
/// else as is. `base` is `BASE_CGROUP`, `execute` the execute directory.
/// The error is the spawn's own (the group is then removed).
pub fn spawn_job(
    base: &str,
    execute: &Path,
    slot: &str,
    mut spawn: impl FnMut() -> std::io::Result<tokio::process::Child>,
) -> std::io::Result<(tokio::process::Child, Option<JobCgroup>)> {
    let group = tree(base, execute).and_then(|t| {
        t.create_job(slot, std::process::id())
            .map_err(
                |e| tracing::warn!(error = %e, "cannot make the job's cgroup; it runs without"),
            )
            .ok()
    });
    let Some(group) = group else {
        return spawn().map(|c| (c, None));
    };
    match group.spawn_inside(&mut spawn) {
        Ok(Ok(child)) => {
            tracing::debug!(group = %group.path().display(), "the job's cgroup");
            Ok((child, Some(group)))
        }
        Ok(Err(e)) => {
            let _ = group.remove(Duration::from_millis(100));
            Err(e)
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot enter the job's cgroup; it runs without");
            let _ = group.remove(Duration::from_millis(100));
            spawn().map(|c| (c, None))
        }
    }
}

/// Freezes or thaws the job's group (suspend and continue; the process
/// group gets SIGSTOP/SIGCONT as well, see `docs/starter.md`).
pub fn freeze(group: Option<&JobCgroup>, frozen: bool) {
    if let Some(g) = group {
        if let Err(e) = g.freeze(frozen) {
            tracing::warn!(error = %e, frozen, "cannot freeze or thaw the job's cgroup");
        }
    }
}

/// Kills every process in the job's group (on top of the process group).
pub fn kill(group: Option<&JobCgroup>) {
    if let Some(g) = group {
        if let Err(e) = g.kill() {
            tracing::warn!(error = %e, "cannot kill the job's cgroup");
        }
    }
}

/// The job is over: kills what is left in its group, waits for it to
/// empty, hands the group's CPU time to `meter` and removes the group.
pub async fn close(group: Option<JobCgroup>, meter: &mut UsageMeter) {
    let Some(group) = group else { return };
    let done = tokio::task::spawn_blocking(move || {
        if let Err(e) = group.kill() {
            tracing::warn!(error = %e, "cannot kill the job's cgroup");
        }
        if !group.wait_empty(EMPTY_TIMEOUT) {
            tracing::warn!(group = %group.path().display(), "processes are left in the job's cgroup");
        }
        let usage = group.usage().ok();
        if let Err(e) = group.remove(Duration::ZERO) {
            tracing::warn!(error = %e, "cannot remove the job's cgroup");
        }
        usage
    })
    .await;
    if let Ok(Some(usage)) = done {
        meter.cgroup_final(usage.cpu);
    }
}
