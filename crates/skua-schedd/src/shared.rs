//! What the schedd's request handlers and background tasks share: the
//! schedd behind its lock, the claim registry, the wake-ups of the shell's
//! loop, and the clock. A leaf module: the shell (`daemon.rs`), the
//! negotiator-facing routes (`negotiator.rs`), the claim tasks
//! (`claim.rs`), the starter-facing routes (`shadow.rs`) and `lease.rs`
//! all use it and none of them imports another through it.
//!
//! The schedd's state stays behind one mutex (not yet owned by the shell's
//! event loop, see ARCHITECTURE.md): a request takes the lock on a
//! blocking thread ([`with_schedd`]), decides with the queue core, commits
//! to SQLite and lets go.

use std::sync::{Arc, Mutex};

use skua_daemon::Clock;
use skua_net::ApiError;
use skua_queue::QueueError;
use tokio::sync::Notify;

use crate::runs::Shadows;
use crate::schedd::{Schedd, ScheddError};

#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) schedd: Arc<Mutex<Schedd>>,
    /// The queue changed: the shell advertises again.
    pub(crate) changed: Arc<Notify>,
    pub(crate) shadows: Arc<Shadows>,
    /// Asks the negotiator for a cycle soon (there are new idle jobs).
    pub(crate) reschedule: Arc<Notify>,
    /// The daemon's clock (`ctx.clock`): every time written to the queue
    /// and every lease and timer is read from it.
    pub(crate) clock: Clock,
}

/// A schedd error as the protocol's error code.
pub(crate) fn api_error(e: ScheddError) -> ApiError {
    match e {
        ScheddError::Queue(q) => match q {
            QueueError::NotFound(m) => ApiError::not_found(m),
            QueueError::PermissionDenied(m) => {
                ApiError::new(skua_proto::ErrorCode::PermissionDenied, m)
            }
            QueueError::Conflict(m) | QueueError::LimitExceeded(m) => ApiError::conflict(m),
            other => ApiError::bad_request(other.to_string()),
        },
        ScheddError::BadRequest(m) => ApiError::bad_request(m),
        ScheddError::Store(s) => {
            ApiError::unavailable(format!("the job queue is unavailable: {s}"))
        }
    }
}

/// Runs `f` on the schedd in a blocking task (SQLite commits wait for the
/// disk).
pub(crate) async fn with_schedd<T: Send + 'static>(
    st: &Shared,
    f: impl FnOnce(&mut Schedd) -> Result<T, ScheddError> + Send + 'static,
) -> Result<T, ApiError> {
    let schedd = st.schedd.clone();
    let result = tokio::task::spawn_blocking(move || {
        let mut guard = schedd.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    })
    .await
    .map_err(|e| ApiError::internal(format!("schedd task failed: {e}")))?;
    result.map_err(api_error)
}
