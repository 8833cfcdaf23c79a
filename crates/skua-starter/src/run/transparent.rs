//! The starter's side of a transparent checkpoint backend ([`crate::backend`]):
//! a `+SkuaCheckpoint = "criu"` job on a slot that offers that backend is
//! dumped at vacate (instead of being sent its kill signal), and its image
//! and changed files are sent as a checkpoint (kind `Backend`); a run that
//! begins from such a checkpoint restores the job instead of starting its
//! executable.
//!
//! The dump is made in a directory beside the scratch directory that only
//! root can touch, sealed with the pool signing key, then handed to the
//! job's account and moved into the scratch directory
//! ([`skua_proto::CRIU_IMAGE_DIR`]) to travel like the job's other files.
//! A restore copies the image out of the sandbox into such a directory and
//! checks the seal there before `criu restore` (root) reads it.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use classad::ClassAd;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use skua_proto::{CheckpointKind, CRIU_IMAGE_DIR, STDERR_NAME, STDOUT_NAME};

use super::{plan, top_level_files, Ending, Failure, Running, Starter};
use crate::backend::{self, CheckpointBackend};
use crate::checkpoint::CheckpointError;

/// The file `criu restore` writes once the job is restored (in the image
/// directory): a restore that ends without it failed.
const RESTORED_PID_FILE: &str = "restored.pid";

/// What a run keeps about the job's transparent backend.
#[derive(Debug, Default)]
pub(super) struct Transparent {
    /// The backend the job asked for and the slot offers.
    backend: Option<Box<dyn CheckpointBackend>>,
    /// The job was dumped at vacate: its image is in the scratch
    /// directory, to be sent.
    dumped: bool,
    /// This run restores the job from an image instead of starting its
    /// executable (once: a restart after a self-checkpoint starts it).
    restore_pending: bool,
    /// The root-only copy of the image restored from.
    restore_copy: Option<PathBuf>,
    /// The running process is a restore (its exit without the restored
    /// pid file is a failed restore).
    restoring: bool,
    /// The link from the job's earlier scratch directory to this one.
    link: Option<PathBuf>,
}

/// The backend a job asks for (`SkuaCheckpoint`, a string).
pub(super) fn job_backend(job: &ClassAd) -> Option<String> {
    plan::string_attr(job, "SkuaCheckpoint")
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
}

/// Whether the slot ad offers backend `name` (`CheckpointBackends`, the
/// startd's check at start-up).
pub(super) fn slot_offers(slot: &ClassAd, name: &str) -> bool {
    plan::string_attr(slot, "CheckpointBackends").is_some_and(|list| {
        plan::split_list(&list)
            .iter()
            .any(|b| b.eq_ignore_ascii_case(name))
    })
}

impl Starter<'_> {
    /// The image directory only root can touch, beside the scratch one
    /// (`restore`: the copy a restore reads).
    fn private_images(&self, restore: bool) -> PathBuf {
        let suffix = if restore { "criu-restore" } else { "criu" };
        Path::new(&self.spec.execute_dir).join(format!("dir_{}.{suffix}", std::process::id()))
    }

    /// At the run's start: the job's backend, if the slot offers it, and
    /// whether the run restores a checkpoint the backend made (`backend`:
    /// the stored checkpoint's). A checkpoint of a backend this machine
    /// does not offer cannot be used: the run fails (the job should not
    /// have matched this slot).
    pub(super) fn transparent_setup(&mut self, stored: Option<&str>) -> Result<(), Failure> {
        let key_ok = self.settings.checkpoint_key.is_some();
        if let Some(name) = job_backend(&self.job) {
            // its image travels with the job's files: not for a job
            // that runs in a shared file system
            let transfers = !plan::uses_shared_fs(&self.job, &self.slot);
            if slot_offers(&self.slot, &name) && key_ok && transfers {
                self.transparent.backend = backend::backend_named(&name, &self.settings.criu);
            } else {
                tracing::info!(backend = %name, "the job asks for a checkpoint backend this slot does not offer: it is vacated as usual");
            }
        }
        let Some(made_by) = stored else {
            return Ok(());
        };
        let usable = self
            .transparent
            .backend
            .as_ref()
            .is_some_and(|b| b.name().eq_ignore_ascii_case(made_by));
        if !usable {
            let why = if !slot_offers(&self.slot, made_by) {
                "which this machine does not offer".to_string()
            } else if !key_ok {
                "whose images this starter cannot verify (no pool signing key)".to_string()
            } else {
                "which the job no longer asks for (SkuaCheckpoint)".to_string()
            };
            return Err(Failure::permanent(format!(
                "the job's checkpoint was made by the {made_by} checkpoint backend, {why}: it cannot be restored here (the job should not have matched this slot)"
            )));
        }
        self.transparent.restore_pending = true;
        Ok(())
    }

    /// Restores the job from its image instead of starting it (the
    /// first start of a run that begins from a backend's checkpoint).
    pub(super) fn transparent_restore(&mut self) -> Result<Option<Running>, Failure> {
        if !std::mem::take(&mut self.transparent.restore_pending) {
            return Ok(None);
        }
        let copy = self.private_images(true);
        let (Some(b), Some(key)) = (
            self.transparent.backend.as_ref(),
            self.settings.checkpoint_key.as_ref(),
        ) else {
            return Ok(None);
        };
        let fail = |e: backend::BackendError| {
            Failure::retry(format!("cannot restore the job's checkpoint: {e}"))
        };
        let _ = std::fs::remove_dir_all(&copy);
        backend::copy_in(&self.scratch.join(CRIU_IMAGE_DIR), &copy).map_err(fail)?;
        backend::verify_seal(key.as_bytes(), &copy).map_err(fail)?;
        let info = backend::image_info(&copy).map_err(fail)?;
        self.transparent.link = backend::link_old_scratch(
            &info.scratch,
            &self.scratch,
            Path::new(&self.spec.execute_dir),
        )
        .map_err(fail)?;
        let mut cmd = b.restore_command(&copy, &self.scratch);
        cmd.arg("--pidfile").arg(RESTORED_PID_FILE);
        let child = tokio::process::Command::from(cmd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(false)
            .spawn()
            .map_err(|e| Failure::retry(format!("cannot run {}: {e}", b.name())))?;
        tracing::info!(
            pid = info.pid,
            backend = b.name(),
            "restoring the job from its checkpoint"
        );
        self.transparent.restoring = true;
        self.transparent.restore_copy = Some(copy);
        // the image is used up: a later checkpoint of the job's own (a
        // self-checkpoint of the restored job) does not carry it
        let prefix = format!("{CRIU_IMAGE_DIR}/");
        self.restored.retain(|n| !n.starts_with(&prefix));
        let _ = std::fs::remove_dir_all(self.scratch.join(CRIU_IMAGE_DIR));
        Ok(Some(Running {
            child,
            pgid: Pid::from_raw(info.pid),
            cgroup: None,
        }))
    }

    /// After the restoring process ended: a restore that never restored
    /// the job is a failed run, not the job's exit.
    pub(super) fn transparent_check_restore(&mut self, ending: &Ending) -> Result<(), Failure> {
        if !std::mem::take(&mut self.transparent.restoring) {
            return Ok(());
        }
        let Some(copy) = &self.transparent.restore_copy else {
            return Ok(());
        };
        if copy.join(RESTORED_PID_FILE).exists() || !matches!(ending, Ending::Exited(_)) {
            return Ok(());
        }
        Err(Failure::retry(format!(
            "restoring the job's checkpoint failed: {}",
            backend::restore_failure(copy)
        )))
    }

    /// At vacate: dumps the job with its backend instead of signalling it.
    /// `None`: no backend, or the dump failed (the job is then vacated as
    /// usual).
    pub(super) async fn transparent_dump(&mut self, running: &mut Running) -> Option<Ending> {
        let (Some(b), Some(key)) = (
            self.transparent.backend.as_ref(),
            self.settings.checkpoint_key.clone(),
        ) else {
            return None;
        };
        crate::cgroup::freeze(running.cgroup.as_ref(), false);
        let _ = killpg(running.pgid, Signal::SIGCONT);
        let images = self.private_images(false);
        let _ = std::fs::remove_dir_all(&images);
        let grace = std::time::Duration::from_secs(self.spec.max_vacate_secs.max(1));
        tracing::info!(backend = b.name(), pid = %running.pgid, "checkpointing the job at vacate");
        let dump = backend::dump(b.as_ref(), running.pgid.as_raw(), &images, &self.scratch);
        let result = match tokio::time::timeout(grace, dump).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("the dump took longer than {} s", grace.as_secs())),
        };
        let result = result
            .and_then(|()| backend::seal(key.as_bytes(), &images).map_err(|e| e.to_string()))
            .and_then(|()| self.hand_over_images(&images));
        match result {
            Ok(()) => {
                // the dump ended the job; nothing of it may survive
                let _ = killpg(running.pgid, Signal::SIGKILL);
                let status = running.child.wait().await.ok();
                self.transparent.dumped = true;
                Some(Ending::Vacated(status))
            }
            Err(e) => {
                tracing::warn!(error = %e, "the job could not be checkpointed: vacated as usual");
                let _ = std::fs::remove_dir_all(&images);
                None
            }
        }
    }

    /// Gives the dumped image to the job's account and moves it into the
    /// scratch directory ([`CRIU_IMAGE_DIR`]), replacing the one it was
    /// restored from.
    fn hand_over_images(&self, images: &Path) -> Result<(), String> {
        if let Some(a) = &self.account {
            let own = |p: &Path| {
                std::os::unix::fs::lchown(p, Some(a.uid), Some(a.gid))
                    .map_err(|e| format!("cannot give {} to {}: {e}", p.display(), a.name))
            };
            for entry in std::fs::read_dir(images).map_err(|e| e.to_string())? {
                own(&entry.map_err(|e| e.to_string())?.path())?;
            }
            own(images)?;
        }
        let target = self.scratch.join(CRIU_IMAGE_DIR);
        // the previous image (std's removal never follows a link)
        if let Ok(m) = target.symlink_metadata() {
            let removed = if m.is_dir() {
                std::fs::remove_dir_all(&target)
            } else {
                std::fs::remove_file(&target)
            };
            removed.map_err(|e| format!("cannot remove {}: {e}", target.display()))?;
        }
        std::fs::rename(images, &target)
            .map_err(|e| format!("cannot move the image to {}: {e}", target.display()))
    }

    /// Whether the job was dumped at vacate (its checkpoint is to be sent).
    pub(super) fn transparent_dumped(&self) -> bool {
        self.transparent.dumped
    }

    /// Sends the dumped job as a checkpoint: its image, the files it
    /// changed and its streams (a restored process finds its open files
    /// where and as they were), and the files of the checkpoint it started
    /// from.
    pub(super) async fn send_transparent_checkpoint(&mut self) -> Result<(), CheckpointError> {
        let Some(name) = self.transparent.backend.as_ref().map(|b| b.name()) else {
            return Ok(());
        };
        let exe = self.executable.as_deref();
        let now = top_level_files(&self.scratch);
        let mut files = plan::changed_outputs(&self.baseline, &now, exe);
        for stream in [STDOUT_NAME, STDERR_NAME] {
            if now.contains_key(stream) {
                files.push(stream.to_string());
            }
        }
        let image_prefix = format!("{CRIU_IMAGE_DIR}/");
        for name in &self.restored {
            if !name.starts_with(&image_prefix) && now.contains_key(name) {
                files.push(name.clone());
            }
        }
        let images = self.scratch.join(CRIU_IMAGE_DIR);
        let rd = std::fs::read_dir(&images)
            .map_err(|e| CheckpointError::Failed(format!("reading {}: {e}", images.display())))?;
        for entry in rd.flatten() {
            let regular = entry
                .metadata()
                .is_ok_and(|m| m.is_file() && m.nlink() == 1);
            if let (true, Ok(n)) = (regular, entry.file_name().into_string()) {
                files.push(format!("{image_prefix}{n}"));
            }
        }
        files.sort();
        files.dedup();
        self.send_checkpoint(CheckpointKind::Backend, &files, Some(name))
            .await
    }

    /// At the run's end: the link and the root-only image copy go.
    pub(super) fn transparent_cleanup(&mut self) {
        if let Some(link) = self.transparent.link.take() {
            let _ = std::fs::remove_file(link);
        }
        let _ = std::fs::remove_dir_all(self.private_images(false));
        let _ = std::fs::remove_dir_all(self.private_images(true));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_job_asks_and_a_slot_offers() {
        let job = classad::parse_ad("[ SkuaCheckpoint = \"CRIU\" ]").unwrap();
        assert_eq!(job_backend(&job).as_deref(), Some("criu"));
        let plain = classad::parse_ad("[ Cmd = \"x\" ]").unwrap();
        assert_eq!(job_backend(&plain), None);
        let slot = classad::parse_ad("[ CheckpointBackends = \"dmtcp, criu\" ]").unwrap();
        assert!(slot_offers(&slot, "criu"));
        assert!(!slot_offers(&slot, "other"));
        assert!(!slot_offers(&plain, "criu"));
    }
}
