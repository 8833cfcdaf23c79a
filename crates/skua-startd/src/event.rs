//! Everything the startd's loop reacts to: one closed [`Event`] enum.
//!
//! Every source of change sends one: the routes (a schedd, the
//! negotiator, an administrator) send [`Event::Request`] with a oneshot
//! for the answer, the `POLLING_INTERVAL` timer sends [`Event::Poll`] with
//! the owner's activity measured off the loop, a starter's output and exit
//! arrive as [`Event::StarterDone`] and [`Event::StarterExited`], a
//! STARTD_CRON script's as [`Event::Cron`]. The loop ([`crate::shell`])
//! owns the slots (`skua_slot::Machine`) and handles them in order; nothing
//! else touches the slots.

use std::collections::BTreeMap;

use classad::Expr;
use skua_net::ApiError;
use skua_proto::{
    ActivateRequest, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus, DeactivateRequest,
    DrainRequest, MatchNotice, ReconnectRequest, ReleaseRequest, SlotStates, VacateRequest,
};
use tokio::sync::oneshot;

/// A request from a route.
#[derive(Debug)]
pub enum Request {
    Match(MatchNotice),
    Claim(ClaimRequest),
    Activate(ActivateRequest),
    Deactivate(DeactivateRequest),
    Release(ReleaseRequest),
    Alive(ClaimAlive),
    /// A schedd finds its run again after a restart or a lost connection.
    Reconnect(ReconnectRequest),
    Vacate(VacateRequest),
    Drain(DrainRequest),
    /// The claim's schedd reaches its running job (`skua tail`,
    /// `skua ssh_to_job`): where is it?
    Locate {
        claim_id: String,
        job_id: String,
    },
}

/// A route's answer.
#[derive(Debug)]
pub enum Reply {
    Ack,
    Claim(ClaimReply),
    Status(ClaimStatus),
    States(SlotStates),
    Job(crate::job_access::JobProcess),
}

/// What is measured at each `POLLING_INTERVAL`, before the policy is
/// evaluated: the owner's activity and the load, and the
/// `STARTD_ATTRIBUTE_FILE` overrides (when that knob names a file).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    pub load_avg: f64,
    pub keyboard_idle: i64,
    pub console_idle: i64,
    pub overrides: Option<BTreeMap<String, Expr>>,
    /// The KB of the pending output sandboxes in `EXECUTE`, by the pid of
    /// the starter that made them (asynchronous output transfer).
    pub pending_outputs: BTreeMap<u32, i64>,
}

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum Event {
    /// A request from a route; the answer goes back on `reply`.
    Request {
        request: Request,
        /// The caller's identity, for the log.
        caller: String,
        reply: oneshot::Sender<Result<Reply, ApiError>>,
    },
    /// The `POLLING_INTERVAL` timer: every slot's policy is evaluated
    /// (claim leases too) with what was just measured.
    Poll(Measured),
    /// A starter reported its job's run over; it waits for the claim's
    /// next job.
    StarterDone { slot: String, pid: u32 },
    /// A starter exited (its scratch directory and leftovers are cleaned
    /// by the loop).
    StarterExited {
        slot: String,
        pid: u32,
        status: Option<std::process::ExitStatus>,
    },
    /// A STARTD_CRON job produced attributes (replacing that job's
    /// previous set).
    Cron {
        job: String,
        attrs: BTreeMap<String, Expr>,
    },
}
