//! The shell of the submit side's transfer queue: `/shadow/transfer_queue`
//! asks the pure queue (`skua_queue::xferq`) for a starter's turn, keeps
//! what each transfer logged, and sends the steps (event 040 and the job's
//! transfer attributes) to the queue's owner in the order they were
//! decided.

use std::collections::HashMap;
use std::sync::Mutex;

use skua_daemon::DaemonContext;
use skua_net::{ApiError, Json, State};
use skua_proto::{TransferDirection, TransferQueueReply, TransferQueueRequest, TransferStep};
use skua_queue::xferq::{Direction, Limits, Throttle, TransferQueue, Turn};
use skua_queue::{FileTransfer, JobId};

use crate::shared::Shared;

/// How long a starter waits before asking again for its turn.
pub(crate) const RETRY_MS: u64 = 500;

/// What the shell remembers of a transfer that asked.
struct Ticket {
    job: JobId,
    claim_id: String,
    queued: bool,
    started: bool,
    /// Bytes already added to the job's totals.
    reported: u64,
}

/// The queue and its transfers.
pub(crate) struct Transfers {
    inner: Mutex<(TransferQueue, HashMap<String, Ticket>)>,
}

impl Default for Transfers {
    fn default() -> Transfers {
        Transfers::new(Limits::default())
    }
}

impl Transfers {
    pub(crate) fn new(limits: Limits) -> Transfers {
        Transfers {
            inner: Mutex::new((TransferQueue::new(limits), HashMap::new())),
        }
    }
}

/// The queue's limits from the configuration, HTCondor's defaults for
/// the knobs it lacks.
pub(crate) fn limits_from(ctx: &DaemonContext) -> anyhow::Result<Limits> {
    use skua_daemon::context::knob_u64;
    let config = &ctx.config;
    let d = Limits::default();
    let max_uploads = knob_u64(config, "MAX_CONCURRENT_UPLOADS", u64::from(d.max_uploads))?;
    let max_downloads = knob_u64(
        config,
        "MAX_CONCURRENT_DOWNLOADS",
        u64::from(d.max_downloads),
    )?;
    let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let throttle = match ctx.knob("FILE_TRANSFER_DISK_LOAD_THROTTLE")? {
        Some(t) if !t.trim().is_empty() => Some(
            Throttle::parse(&t)
                .map_err(|e| anyhow::anyhow!("FILE_TRANSFER_DISK_LOAD_THROTTLE: {e}"))?,
        ),
        _ => None,
    };
    Ok(Limits {
        max_uploads: clamp(max_uploads),
        max_downloads: clamp(max_downloads),
        // HTCondor's MAX_CONCURRENT_UPLOADS_PER_USER limits matches, not
        // the queue: not read here
        max_uploads_per_user: 0,
        max_downloads_per_user: 0,
        bytes_required: knob_u64(
            config,
            "BYTES_REQUIRED_TO_QUEUE_FOR_TRANSFER",
            d.bytes_required,
        )?,
        throttle,
        forget_after: d.forget_after,
    })
}

fn steps(d: TransferDirection) -> (Direction, FileTransfer, FileTransfer, FileTransfer) {
    match d {
        TransferDirection::In => (
            Direction::Upload,
            FileTransfer::InputQueued,
            FileTransfer::InputStarted,
            FileTransfer::InputFinished,
        ),
        TransferDirection::Out => (
            Direction::Download,
            FileTransfer::OutputQueued,
            FileTransfer::OutputStarted,
            FileTransfer::OutputFinished,
        ),
    }
}

/// `/shadow/transfer_queue`.
pub(crate) async fn transfer_queue(
    State(st): State<Shared>,
    Json(req): Json<TransferQueueRequest>,
) -> Result<Json<TransferQueueReply>, ApiError> {
    let (job, owner, host, live) = {
        let runs = st.shadows.runs();
        let run = runs
            .get(&req.claim_id)
            .filter(|r| r.job.to_string() == req.job_id)
            .ok_or_else(|| ApiError::not_found("no job runs under this claim here"))?;
        let owner = crate::sandbox::string_attr(&run.job_ad, "Owner").unwrap_or_default();
        let live: Vec<(String, JobId)> = runs.iter().map(|(c, r)| (c.clone(), r.job)).collect();
        (run.job, owner, run.startd_addr.clone(), live)
    };
    let (direction, queued, started, finished) = steps(req.direction);
    let input = req.direction == TransferDirection::In;
    let key = format!("{}#{}#{:?}", req.claim_id, req.job_id, direction);
    let now = st.clock.now_secs();
    let mut guard = st
        .shadows
        .transfers
        .inner
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let (queue, tickets) = &mut *guard;
    // the turns of runs that ended are free, and requests not asked
    // about again are forgotten
    let ended: Vec<String> = tickets
        .iter()
        .filter(|(_, t)| !live.iter().any(|(c, j)| *c == t.claim_id && *j == t.job))
        .map(|(k, _)| k.clone())
        .collect();
    for k in ended {
        queue.release(&k);
        tickets.remove(&k);
    }
    for k in queue.expire(now) {
        tickets.remove(&k);
    }
    let host = Some(host);
    let log = |step: FileTransfer, bytes: u64| {
        let host = host.clone();
        st.queue.send(move |q| {
            let r = q
                .schedd
                .transfer_step(job, step, host.as_deref(), bytes, now);
            if let Err(e) = r {
                tracing::warn!("job {job}: recording a file transfer step: {e}");
            }
        });
    };
    let reply = match req.step {
        TransferStep::Ask => {
            let turn = queue.request(&key, &owner, direction, req.bytes, now);
            let t = tickets.entry(key).or_insert(Ticket {
                job,
                claim_id: req.claim_id.clone(),
                queued: false,
                started: false,
                reported: 0,
            });
            match turn {
                Turn::Waiting => {
                    if !t.queued {
                        t.queued = true;
                        log(queued, 0);
                    }
                    TransferQueueReply {
                        granted: false,
                        retry_ms: RETRY_MS,
                    }
                }
                Turn::Granted { .. } => {
                    if !t.started {
                        t.started = true;
                        log(started, 0);
                    }
                    TransferQueueReply {
                        granted: true,
                        retry_ms: 0,
                    }
                }
            }
        }
        TransferStep::Progress => {
            let delta = match tickets.get_mut(&key) {
                Some(t) => {
                    let d = req.bytes.saturating_sub(t.reported);
                    t.reported = t.reported.max(req.bytes);
                    d
                }
                None => 0,
            };
            if delta > 0 {
                st.queue.send(move |q| {
                    if let Err(e) = q.schedd.transfer_progress(job, input, delta, now) {
                        tracing::warn!("job {job}: recording a transfer's progress: {e}");
                    }
                });
            }
            TransferQueueReply {
                granted: true,
                retry_ms: 0,
            }
        }
        TransferStep::Done => {
            queue.release(&key);
            if let Some(t) = tickets.remove(&key) {
                if t.started {
                    log(finished, req.bytes.saturating_sub(t.reported));
                }
            }
            TransferQueueReply {
                granted: true,
                retry_ms: 0,
            }
        }
    };
    Ok(Json(reply))
}
