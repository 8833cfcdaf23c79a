//! Writing job event logs (HTCondor's "user log", `log = file` in the
//! submit file). The text of each event is the core's
//! (`skua_queue::userlog`); this is the edge that appends it to the file.
//!
//! Each event is one `write` on a file opened for appending, so events of
//! several writers do not interleave. A log that cannot be written is
//! reported in the schedd's log and never stops the queue.

use std::io::Write as _;
use std::path::Path;

use skua_daemon::account::AsUser;
use skua_queue::{JobId, UserLogEvent};

/// Appends events to user logs, each with its job owner's rights.
#[derive(Clone, Debug)]
pub struct UserLogWriter {
    utc_offset: Option<fn(i64) -> i32>,
    as_user: AsUser,
}

impl UserLogWriter {
    /// A writer stamping events in the time zone `utc_offset` gives (the
    /// host's local time when `None`, as HTCondor does).
    pub fn new(utc_offset: Option<fn(i64) -> i32>) -> UserLogWriter {
        UserLogWriter {
            utc_offset,
            as_user: AsUser::new(),
        }
    }

    /// The event's text as it goes into the log.
    pub fn text(&self, id: JobId, event: &UserLogEvent, now: i64) -> String {
        skua_queue::userlog::format_event(
            event,
            id,
            now,
            self.utc_offset.unwrap_or(skua_daemon::local_utc_offset),
            &skua_queue::userlog::FormatOptions::default(),
        )
    }

    /// Appends one event of `owner`'s job; failures are logged.
    pub fn write(&self, path: &Path, owner: &str, id: JobId, event: &UserLogEvent, now: i64) {
        self.append(path, owner, &self.text(id, event, now));
    }

    /// Appends events' text in one write, with the rights of `owner` (the
    /// jobs' owner: a log goes where they could write it, or nowhere);
    /// failures are logged.
    pub fn append(&self, path: &Path, owner: &str, text: &str) {
        let rights = match self.as_user.rights_of(owner) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("not writing the job event log {}: {e}", path.display());
                return;
            }
        };
        let (p, t) = (path.to_path_buf(), text.to_string());
        let result = self.as_user.run(&rights, move || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .and_then(|mut f| f.write_all(t.as_bytes()))
        });
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("cannot write the job event log {}: {e}", path.display()),
            Err(e) => tracing::warn!("cannot write the job event log {}: {e}", path.display()),
        }
    }
}
