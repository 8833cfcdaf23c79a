//! What the schedd's request handlers and background tasks share: the
//! schedd behind its lock, the claim registry, the wake-ups of the shell's
//! loop, and the clock. A leaf module: the shell (`daemon.rs`), the
//! negotiator-facing routes (`negotiator.rs`), the claim tasks
//! (`claim.rs`), the starter-facing routes (`shadow.rs`) and `lease.rs`
//! all use it and none of them imports another through it.
//!
//! The queue ([`Schedd`]) and the jobs some claim holds (busy) are owned
//! by one thread, [`QueueOwner`], that runs the operations handlers and
//! tasks send it, one after another, each with a reply ([`with_schedd`],
//! [`with_queue`]): no lock is shared, a job is picked and marked busy in
//! one operation, and SQLite commits wait for the disk on that thread,
//! never on the async runtime. Queries only ask it for a snapshot
//! (`snapshot.rs`), taken at the end of a batch of operations, and read
//! that on a blocking thread. The runs by claim id (`runs.rs`) are still
//! behind a mutex.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc};

use skua_daemon::Clock;
use skua_net::ApiError;
use skua_queue::{JobId, QueueError};
use tokio::sync::Notify;

use crate::runs::Shadows;
use crate::schedd::{Schedd, ScheddError};
use crate::snapshot::{Snapshot, Snapshots};

/// What the queue's thread owns.
pub(crate) struct Queue {
    pub(crate) schedd: Schedd,
    /// Jobs with a claim being made or a run under way: not offered to
    /// the negotiator, not picked by another claim.
    pub(crate) busy: HashSet<JobId>,
}

/// What the owner runs: an operation on the queue, or a query's request
/// for a snapshot (answered at the end of the batch it arrives in).
enum QueueWork {
    Op(Box<dyn FnOnce(&mut Queue) + Send>),
    Snapshot(tokio::sync::oneshot::Sender<Arc<Snapshot>>),
}

/// At most this many operations run after a query asked for a snapshot
/// before it is taken (a bound on the query's wait, not a batch size for
/// the operations, which run one after another in any case).
const SNAPSHOT_AFTER_AT_MOST: usize = 64;

/// The thread that owns the queue and runs the operations sent to it in
/// the order they arrive. It ends when every handle to it is gone.
#[derive(Clone)]
pub(crate) struct QueueOwner {
    tx: mpsc::Sender<QueueWork>,
}

impl QueueOwner {
    /// Starts the owner thread of `schedd`.
    pub(crate) fn start(schedd: Schedd) -> std::io::Result<QueueOwner> {
        let (tx, rx) = mpsc::channel::<QueueWork>();
        std::thread::Builder::new()
            .name("schedd-queue".into())
            .spawn(move || {
                let mut queue = Queue {
                    schedd,
                    busy: HashSet::new(),
                };
                let mut snapshots = Snapshots::default();
                while let Ok(first) = rx.recv() {
                    // a batch: what has arrived, then one snapshot for the
                    // queries that asked during it
                    let mut work = Some(first);
                    let mut since_asked = 0;
                    while let Some(w) = work.take() {
                        match w {
                            QueueWork::Op(op) => {
                                snapshots.touched();
                                // a panic fails that one operation (its
                                // caller gets no reply), not the queue
                                if std::panic::catch_unwind(AssertUnwindSafe(|| op(&mut queue)))
                                    .is_err()
                                {
                                    tracing::error!("an operation on the job queue panicked");
                                }
                            }
                            QueueWork::Snapshot(reply) => snapshots.ask(reply),
                        }
                        if snapshots.wanted() {
                            since_asked += 1;
                            if since_asked > SNAPSHOT_AFTER_AT_MOST {
                                break;
                            }
                        }
                        work = rx.try_recv().ok();
                    }
                    if std::panic::catch_unwind(AssertUnwindSafe(|| {
                        snapshots.publish(&queue.schedd)
                    }))
                    .is_err()
                    {
                        tracing::error!("taking a snapshot of the job queue panicked");
                        snapshots = Snapshots::default();
                    }
                }
            })?;
        Ok(QueueOwner { tx })
    }

    /// Asks for a snapshot of the queue once every operation sent before
    /// has run; the answer comes at the end of the owner's batch.
    pub(crate) fn ask_snapshot(
        &self,
    ) -> Result<tokio::sync::oneshot::Receiver<Arc<Snapshot>>, ApiError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(QueueWork::Snapshot(tx))
            .map_err(|_| ApiError::internal("the job queue has stopped"))?;
        Ok(rx)
    }

    /// Sends `f` to run on the queue without waiting for it: it runs
    /// before anything sent later.
    pub(crate) fn send(&self, f: impl FnOnce(&mut Queue) + Send + 'static) {
        if self.tx.send(QueueWork::Op(Box::new(f))).is_err() {
            tracing::error!("the job queue has stopped");
        }
    }
}

#[derive(Clone)]
pub(crate) struct Shared {
    /// The queue's owner.
    pub(crate) queue: QueueOwner,
    /// The queue changed: the shell advertises again.
    pub(crate) changed: Arc<Notify>,
    pub(crate) shadows: Arc<Shadows>,
    /// Asks the negotiator for a cycle soon (there are new idle jobs).
    pub(crate) reschedule: Arc<Notify>,
    /// The daemon's clock (`ctx.clock`): every time written to the queue
    /// and every lease and timer is read from it.
    pub(crate) clock: Clock,
    /// The scheduler/local-universe jobs running on this host.
    pub(crate) local: Arc<crate::local_univ::LocalRuns>,
}

/// The queue as it is once every operation sent before this call has
/// run (see `snapshot.rs`): the query's only visit to the owner.
pub(crate) async fn snapshot(st: &Shared) -> Result<Arc<Snapshot>, ApiError> {
    st.queue
        .ask_snapshot()?
        .await
        .map_err(|_| ApiError::internal("the job queue gave no snapshot"))
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

/// Runs `f` on the schedd, on the thread that owns it, and gives its
/// answer back.
pub(crate) async fn with_schedd<T: Send + 'static>(
    st: &Shared,
    f: impl FnOnce(&mut Schedd) -> Result<T, ScheddError> + Send + 'static,
) -> Result<T, ApiError> {
    with_queue(st, move |q| f(&mut q.schedd)).await
}

/// Runs `f` on the queue and the busy jobs, on the thread that owns them,
/// and gives its answer back.
pub(crate) async fn with_queue<T: Send + 'static>(
    st: &Shared,
    f: impl FnOnce(&mut Queue) -> Result<T, ScheddError> + Send + 'static,
) -> Result<T, ApiError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    st.queue
        .tx
        .send(QueueWork::Op(Box::new(move |q: &mut Queue| {
            let _ = tx.send(f(q));
        })))
        .map_err(|_| ApiError::internal("the job queue has stopped"))?;
    rx.await
        .map_err(|_| ApiError::internal("schedd task failed: the queue operation gave no answer"))?
        .map_err(api_error)
}

/// Job `text` (`C.P`) and its ad, if `caller` owns it or is a queue
/// administrator: the check of every route that lets a user reach one of
/// their jobs (`skua evicted_files`, `skua tail`, `skua ssh_to_job`, the
/// spool routes). An unknown job is `NotFound`, another user's
/// `PermissionDenied` naming its owner.
pub(crate) async fn owned_job(
    st: &Shared,
    caller: &skua_net::Caller,
    text: &str,
) -> Result<(JobId, classad::ClassAd), ApiError> {
    let job: JobId = text
        .parse()
        .map_err(|_| ApiError::bad_request(format!("`{text}` is not a job id (C.P)")))?;
    let ad = with_schedd(st, move |s| Ok(s.job_ad(job)))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("job {job} is not in the queue")))?;
    let owner = crate::sandbox::string_attr(&ad, "Owner").unwrap_or_default();
    if owner != caller.identity.user && !caller.has(skua_net::AuthLevel::Administrator) {
        return Err(ApiError::new(
            skua_proto::ErrorCode::PermissionDenied,
            format!("job {job} belongs to {owner}, not {}", caller.identity.user),
        ));
    }
    Ok((job, ad))
}
