//! The startd's routes (docs/startd.md, "Claiming"): each turns its
//! request into an [`Event::Request`] for the loop and waits for the
//! loop's answer. No route touches the slots itself.

use skua_net::routing::post;
use skua_net::{ApiError, Caller, Json, Routes, State};
use skua_proto::{
    routes, Ack, ActivateRequest, ClaimAlive, ClaimReply, ClaimRequest, ClaimStatus,
    DeactivateRequest, DrainRequest, MatchNotice, ReconnectRequest, ReleaseRequest, SlotStates,
    VacateRequest,
};
use tokio::sync::{mpsc, oneshot};

use crate::event::{Event, Reply, Request};

/// The routes, sending their requests to the loop on `events`.
pub fn routes(events: mpsc::Sender<Event>, access: crate::job_access::Access) -> Routes {
    Routes::new()
        .command(&routes::STARTD_MATCH, post(match_route))
        .command(&routes::STARTD_CLAIM, post(claim_route))
        .command(&routes::STARTD_ACTIVATE, post(activate_route))
        .command(&routes::STARTD_DEACTIVATE, post(deactivate_route))
        .command(&routes::STARTD_RELEASE, post(release_route))
        .command(&routes::STARTD_ALIVE, post(alive_route))
        .command(&routes::STARTD_RECONNECT, post(reconnect_route))
        .command(&routes::STARTD_VACATE, post(vacate_route))
        .command(&routes::STARTD_DRAIN, post(drain_route))
        .command(&routes::STARTD_SANDBOX_READ, post(sandbox_read_route))
        .command(&routes::STARTD_JOB_COMMAND, post(job_command_route))
        .with_state(Loop { events, access })
}

/// The way to the loop.
#[derive(Clone)]
struct Loop {
    events: mpsc::Sender<Event>,
    access: crate::job_access::Access,
}

async fn ask(st: &Loop, caller: &Caller, request: Request) -> Result<Reply, ApiError> {
    let (tx, rx) = oneshot::channel();
    st.events
        .send(Event::Request {
            request,
            caller: caller.identity.to_string(),
            reply: tx,
        })
        .await
        .map_err(|_| ApiError::unavailable("the startd is shutting down"))?;
    rx.await
        .map_err(|_| ApiError::unavailable("the startd is shutting down"))?
}

async fn ack(st: &Loop, caller: &Caller, request: Request) -> Result<Json<Ack>, ApiError> {
    ask(st, caller, request).await.map(|_| Json(Ack {}))
}

async fn match_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<MatchNotice>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Match(req)).await
}

async fn claim_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<ClaimRequest>,
) -> Result<Json<ClaimReply>, ApiError> {
    match ask(&st, &caller, Request::Claim(req)).await? {
        Reply::Claim(r) => Ok(Json(r)),
        _ => Err(ApiError::internal("no claim reply")),
    }
}

async fn activate_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<ActivateRequest>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Activate(req)).await
}

async fn deactivate_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<DeactivateRequest>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Deactivate(req)).await
}

async fn release_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<ReleaseRequest>,
) -> Result<Json<Ack>, ApiError> {
    ack(&st, &caller, Request::Release(req)).await
}

async fn alive_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<ClaimAlive>,
) -> Result<Json<ClaimStatus>, ApiError> {
    match ask(&st, &caller, Request::Alive(req)).await? {
        Reply::Status(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no claim status")),
    }
}

async fn reconnect_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<ReconnectRequest>,
) -> Result<Json<ClaimStatus>, ApiError> {
    match ask(&st, &caller, Request::Reconnect(req)).await? {
        Reply::Status(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no claim status")),
    }
}

async fn vacate_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<VacateRequest>,
) -> Result<Json<SlotStates>, ApiError> {
    match ask(&st, &caller, Request::Vacate(req)).await? {
        Reply::States(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no slot states")),
    }
}

async fn drain_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<DrainRequest>,
) -> Result<Json<SlotStates>, ApiError> {
    match ask(&st, &caller, Request::Drain(req)).await? {
        Reply::States(s) => Ok(Json(s)),
        _ => Err(ApiError::internal("no slot states")),
    }
}

async fn locate(
    st: &Loop,
    caller: &Caller,
    claim_id: &str,
    job_id: &str,
) -> Result<crate::job_access::JobProcess, ApiError> {
    let request = Request::Locate {
        claim_id: claim_id.to_string(),
        job_id: job_id.to_string(),
    };
    match ask(st, caller, request).await? {
        Reply::Job(j) => Ok(j),
        _ => Err(ApiError::internal("no job process")),
    }
}

async fn sandbox_read_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<skua_proto::StartdSandboxRead>,
) -> Result<Json<skua_proto::SandboxChunk>, ApiError> {
    let job = locate(&st, &caller, &req.claim_id, &req.job_id).await?;
    crate::job_access::read(&st.access, &job, req)
        .await
        .map(Json)
}

async fn job_command_route(
    State(st): State<Loop>,
    caller: Caller,
    Json(req): Json<skua_proto::StartdJobCommand>,
) -> Result<Json<skua_proto::JobCommandReply>, ApiError> {
    let job = locate(&st, &caller, &req.claim_id, &req.job_id).await?;
    tracing::info!(
        "job {}: command {:?} for {} (ssh_to_job)",
        req.job_id,
        req.argv,
        caller.identity
    );
    crate::job_access::command(&st.access, &job, req)
        .await
        .map(Json)
}
