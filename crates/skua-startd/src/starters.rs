//! Starter processes: one per active claim, running the claim's jobs one
//! after another (see docs/startd.md, "Starters").
//!
//! The loop keeps the [`Starters`] (by slot) and calls [`spawn`] when a
//! claim's first job is activated. Each starter's standard input takes one
//! JSON `StarterSpec` per job; a task reads its standard output (a
//! `StarterDone` line: [`Event::StarterDone`]) and another waits for its
//! exit, cleans up after it (off the loop: removing a scratch directory
//! or a job's cgroups may take a while) and then sends
//! [`Event::StarterExited`]. The files of `EXECUTE`: `dir_<pid>` (a job's
//! scratch directory), `dir_<pid>.pgid` (its process group),
//! `dir_<pid>.hold` (a `StarterHold` written before a WANT_HOLD stop).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use skua_daemon::DaemonContext;
use skua_proto::{StarterDone, StarterGone, StarterHold, StarterSpec};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

use crate::event::Event;

/// A starter: one per active claim, running the claim's jobs one after
/// another.
pub struct Starter {
    pub pid: u32,
    /// The claim it serves.
    pub claim_id: String,
    /// A job is running (false: the starter reported it done and waits).
    pub busy: bool,
    /// The job it was last given (`"C.P"`): while idle, it may still hold
    /// that job's results for a shadow it cannot reach.
    pub job_id: String,
    /// The next jobs' specs; dropping it closes the starter's standard
    /// input, which ends an idle starter (and kills a busy one's job).
    input: mpsc::UnboundedSender<Vec<u8>>,
}

impl Starter {
    /// Hands an idle starter the claim's next job.
    pub fn send(&mut self, spec: &StarterSpec) -> bool {
        let Ok(mut doc) = serde_json::to_vec(spec) else {
            return false;
        };
        doc.push(b'\n');
        if self.input.send(doc).is_err() {
            return false;
        }
        self.busy = true;
        self.job_id = spec.job_id.clone();
        true
    }

    /// Passes the shadow's new address to the starter.
    pub fn send_message(&mut self, msg: &skua_proto::StarterMessage) -> bool {
        let Ok(mut doc) = serde_json::to_vec(msg) else {
            return false;
        };
        doc.push(b'\n');
        self.input.send(doc).is_ok()
    }
}

/// The starters, by slot.
#[derive(Default)]
pub struct Starters {
    by_slot: BTreeMap<String, Starter>,
}

impl Starters {
    pub fn get(&self, slot: &str) -> Option<&Starter> {
        self.by_slot.get(slot)
    }

    pub fn get_mut(&mut self, slot: &str) -> Option<&mut Starter> {
        self.by_slot.get_mut(slot)
    }

    pub fn insert(&mut self, slot: String, starter: Starter) {
        self.by_slot.insert(slot, starter);
    }

    /// Forgets `slot`'s starter (dropping it closes its standard input).
    pub fn remove(&mut self, slot: &str) -> Option<Starter> {
        self.by_slot.remove(slot)
    }

    /// Keeps only the starters `keep` says yes to.
    pub fn retain(&mut self, keep: impl FnMut(&String, &mut Starter) -> bool) {
        self.by_slot.retain(keep);
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Starter)> {
        self.by_slot.iter()
    }

    /// Signals the starter running `slot`'s job. False when no job runs
    /// there (an idle starter is not signalled: it has nothing to stop).
    pub fn signal(&self, slot: &str, sig: Signal) -> bool {
        let Some(s) = self.by_slot.get(slot).filter(|s| s.busy) else {
            return false;
        };
        let Ok(pid) = i32::try_from(s.pid) else {
            return false;
        };
        // the starter leads its own process group
        match nix::sys::signal::kill(Pid::from_raw(pid), sig) {
            Ok(()) => {
                tracing::info!("sent {sig} to the starter {pid} of {slot}");
                true
            }
            Err(e) => {
                tracing::warn!("sending {sig} to the starter {pid} of {slot}: {e}");
                false
            }
        }
    }
}

/// How starters are run and where.
#[derive(Clone, Debug)]
pub struct StarterSetup {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub execute: PathBuf,
    /// Where the starters put their jobs' cgroups (when they do).
    pub cgroups: Option<skua_daemon::cgroup::CgroupTree>,
}

impl StarterSetup {
    /// The starter program: `STARTER` when the configuration sets it (not
    /// the built-in default, which names HTCondor's own starter), with
    /// `STARTER_ARGS`; otherwise this executable with the argument
    /// `starter`.
    pub fn from_context(ctx: &DaemonContext, execute: PathBuf) -> anyhow::Result<StarterSetup> {
        let (program, args) = match ctx.configured_knob("STARTER")? {
            Some(p) => {
                let args = match ctx.configured_knob("STARTER_ARGS")? {
                    Some(a) => a.split_whitespace().map(str::to_string).collect(),
                    None => Vec::new(),
                };
                (PathBuf::from(p), args)
            }
            None => (
                std::env::current_exe().context("locating skuad")?,
                vec!["starter".to_string()],
            ),
        };
        let base_cgroup = ctx.knob("BASE_CGROUP")?.unwrap_or_default();
        Ok(StarterSetup {
            program,
            args,
            cgroups: skua_daemon::cgroup::CgroupTree::discover(&base_cgroup, &execute).ok(),
            execute,
        })
    }

    /// Where the starter `pid` writes its job's process group.
    pub fn pgid_file(&self, pid: u32) -> PathBuf {
        self.execute.join(format!("dir_{pid}.pgid"))
    }

    /// Where the startd writes a WANT_HOLD for the starter `pid`.
    pub fn hold_file(&self, pid: u32) -> PathBuf {
        self.execute.join(format!("dir_{pid}.hold"))
    }

    /// Asks the starter `pid` to hold its job: `dir_<pid>.hold`, read by
    /// the starter when it stops the job.
    pub fn write_hold(&self, pid: u32, hold: &StarterHold) {
        let path = self.hold_file(pid);
        match serde_json::to_vec(hold) {
            Ok(doc) => {
                if let Err(e) = std::fs::write(&path, doc) {
                    tracing::warn!("writing {}: {e}", path.display());
                }
            }
            Err(e) => tracing::warn!("encoding the hold: {e}"),
        }
    }

    /// Kills the starter `pid`, its job's process group and its own.
    pub fn kill_tree(&self, pid: u32) {
        kill_group_of(&self.pgid_file(pid));
        if let Ok(pid) = i32::try_from(pid) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    /// After the starter `pid` exited: an abnormal exit leaves its job's
    /// process group behind, so it is killed; the scratch directory and
    /// the job's cgroups go either way.
    fn clean_after(&self, pid: u32, abnormal: bool) {
        let _ = std::fs::remove_file(self.hold_file(pid));
        let file = self.pgid_file(pid);
        if abnormal {
            kill_group_of(&file);
        } else {
            let _ = std::fs::remove_file(&file);
        }
        let dir = self.execute.join(format!("dir_{pid}"));
        if dir.exists() {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!("removing {}: {e}", dir.display());
            }
        }
        // pending output sandboxes a starter that died left behind (their
        // jobs go back to Idle at the schedd: never completed without them)
        if let Ok(entries) = std::fs::read_dir(&self.execute) {
            for e in entries.flatten() {
                let name = e.file_name();
                if name.to_str().and_then(pending_sandbox_pid) == Some(pid) {
                    tracing::warn!("removing the pending output sandbox {}", e.path().display());
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        if let Some(cgroups) = &self.cgroups {
            cgroups.clean_leftovers(Some(pid), Duration::from_secs(2));
        }
    }
}

/// Kills the process group named in `file` (if any) and removes it.
fn kill_group_of(file: &Path) {
    if let Ok(text) = std::fs::read_to_string(file) {
        if let Ok(pgid) = text.trim().parse::<i32>() {
            if pgid > 1 {
                match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
                    Ok(()) => tracing::info!("killed the leftover process group {pgid}"),
                    Err(nix::errno::Errno::ESRCH) => {}
                    Err(e) => tracing::warn!("killing process group {pgid}: {e}"),
                }
            }
        }
    }
    let _ = std::fs::remove_file(file);
}

/// At start-up: kills the process groups of leftover `dir_*.pgid` files
/// and removes every `dir_*` in the execute directory.
pub fn clean_execute(execute: &Path) {
    let Ok(entries) = std::fs::read_dir(execute) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "hold"))
    {
        let _ = std::fs::remove_file(p);
    }
    for p in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "pgid"))
    {
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("dir_"))
        {
            kill_group_of(p);
        }
    }
    for p in &entries {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.starts_with("dir_") || !p.exists() {
            continue;
        }
        let r = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
        match r {
            Ok(()) => tracing::info!("removed the leftover {}", p.display()),
            Err(e) => tracing::warn!("removing the leftover {}: {e}", p.display()),
        }
    }
}

/// Spawns a starter for `slot` with its first job's spec on standard
/// input. Further specs go through [`Starter::send`]; each `StarterDone`
/// line on its standard output comes back as an [`Event::StarterDone`],
/// its exit (once cleaned up after) as an [`Event::StarterExited`].
pub async fn spawn(
    setup: &StarterSetup,
    slot: &str,
    spec: &StarterSpec,
    events: mpsc::Sender<Event>,
) -> anyhow::Result<Starter> {
    let mut cmd = tokio::process::Command::new(&setup.program);
    cmd.args(&setup.args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", setup.program.display()))?;
    let pid = child.id().context("the starter has no pid")?;
    let mut stdin = child.stdin.take().context("the starter has no stdin")?;
    let stdout = child.stdout.take().context("the starter has no stdout")?;
    let (input, mut docs) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        // until the startd drops the sender: then standard input closes
        while let Some(doc) = docs.recv().await {
            if let Err(e) = stdin.write_all(&doc).await {
                tracing::warn!("writing a spec to starter {pid}: {e}");
                break;
            }
            let _ = stdin.flush().await;
        }
        drop(stdin);
    });
    let slot_name = slot.to_string();
    let done_events = events.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            match serde_json::from_str::<StarterDone>(&line) {
                Ok(_) => {
                    let ev = Event::StarterDone {
                        slot: slot_name.clone(),
                        pid,
                    };
                    if done_events.send(ev).await.is_err() {
                        break;
                    }
                }
                Err(_) => tracing::debug!("starter {pid} wrote: {line}"),
            }
        }
    });
    let slot_name = slot.to_string();
    let cleaner = setup.clone();
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        match status {
            Some(s) if s.success() => tracing::info!("{slot_name}: starter {pid} exited"),
            Some(s) => tracing::warn!("{slot_name}: starter {pid} exited abnormally ({s})"),
            None => tracing::warn!("{slot_name}: starter {pid}: exit status lost"),
        }
        let abnormal = !status.is_some_and(|s| s.success());
        let cleaned = tokio::task::spawn_blocking(move || cleaner.clean_after(pid, abnormal)).await;
        if let Err(e) = cleaned {
            tracing::warn!("cleaning up after starter {pid}: {e}");
        }
        let _ = events
            .send(Event::StarterExited {
                slot: slot_name,
                pid,
                status,
            })
            .await;
    });
    let mut starter = Starter {
        pid,
        claim_id: spec.claim_id.clone(),
        busy: false,
        job_id: spec.job_id.clone(),
        input,
    };
    if !starter.send(spec) {
        anyhow::bail!("cannot hand starter {pid} its job");
    }
    Ok(starter)
}

/// The starter pid of a pending output sandbox's name (`dir_<pid>.out<n>`,
/// see skua-starter's `sandbox_manager.rs`).
pub fn pending_sandbox_pid(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix("dir_")?.split_once(".out")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// The KB the pending output sandboxes of `execute` take, by starter pid
/// (the files' allocated blocks; links are not followed).
pub fn pending_outputs(execute: &Path) -> BTreeMap<u32, i64> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(execute) else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(pending_sandbox_pid) else {
            continue;
        };
        *out.entry(pid).or_insert(0) += tree_kb(&e.path());
    }
    out
}

fn tree_kb(path: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    let mut kb = i64::try_from(m.blocks() / 2).unwrap_or(i64::MAX);
    if m.is_dir() {
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                kb = kb.saturating_add(tree_kb(&e.path()));
            }
        }
    }
    kb
}

/// The jobs whose output transfers the dead starter `pid` left pending
/// (`dir_<pid>.out<n>.job` records, removed as they are read): each with
/// its shadow's address, to be reported gone.
pub fn orphaned_transfers(execute: &Path, pid: u32) -> Vec<(String, StarterGone)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(execute) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(sandbox) = name.to_str().and_then(|n| n.strip_suffix(".job")) else {
            continue;
        };
        if pending_sandbox_pid(sandbox) != Some(pid) {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let _ = std::fs::remove_file(e.path());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        match (field("shadow_addr"), field("claim_id"), field("job_id")) {
            (Some(shadow_addr), Some(claim_id), Some(job_id)) => out.push((
                shadow_addr,
                StarterGone {
                    claim_id,
                    reason: format!(
                        "the starter {pid} died with the output transfer of job {job_id} pending"
                    ),
                    job_id,
                },
            )),
            _ => tracing::warn!("{}: not a pending transfer record", e.path().display()),
        }
    }
    out
}

#[cfg(test)]
mod pending_tests {
    use super::*;

    #[test]
    fn pending_sandboxes_are_found_by_name_and_measured() {
        assert_eq!(pending_sandbox_pid("dir_123.out1"), Some(123));
        assert_eq!(pending_sandbox_pid("dir_123.out12"), Some(123));
        for name in [
            "dir_123",
            "dir_123.pgid",
            "dir_123.out",
            "dir_x.out1",
            "dir_1.outx",
        ] {
            assert_eq!(pending_sandbox_pid(name), None, "{name}");
        }
        let dir = tempfile::tempdir().unwrap();
        let sandbox = dir.path().join("dir_77.out1");
        std::fs::create_dir_all(sandbox.join("sub")).unwrap();
        std::fs::write(sandbox.join("sub/a"), vec![1u8; 256 * 1024]).unwrap();
        std::fs::create_dir(dir.path().join("dir_78")).unwrap();
        std::fs::write(dir.path().join("dir_78/b"), vec![1u8; 64 * 1024]).unwrap();
        let found = pending_outputs(dir.path());
        assert_eq!(found.keys().copied().collect::<Vec<_>>(), vec![77]);
        assert!(found[&77] >= 256, "{found:?}");
    }
}
