//! One path per command, with the method, the authorization level the
//! server requires for it, and the largest request body it accepts.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use crate::{
    Ack, ActivateRequest, AdUpdate, AuthLevel, BeginReply, CheckpointCommit, ClaimAlive,
    ClaimReply, ClaimRequest, ClaimStatus, CommandReply, CredentialList, CredentialQuery,
    DaemonCommand, DeactivateRequest, DrainRequest, EvictedFileRequest, EvictedFilesQuery,
    EvictedFilesReply, InputFileRequest, Invalidate, JobAction, JobActionReply, JobExit, JobQuery,
    JobQueryReply, JobUpdate, JoinReply, JoinRequest, MatchNotice, Matches, NewCluster,
    NewClusterReply, Query, QueryReply, ReconnectRequest, ReleaseRequest, Reschedule,
    ResourceRequests, ResourceRequestsReply, RevocationList, RevocationQuery, RevokeReply,
    RevokeRequest, SetAttribute, ShadowBegin, ShadowChirp, ShadowChirpReply, SlotStates,
    StarterGone, Submit, SubmitReply, UserPrioEdit, UserPrioQuery, UserPrioReply, VacateRequest,
    WhoAmI,
};
use crate::{
    JobCommandReply, JobCommandRequest, SandboxChunk, SandboxReadRequest, StartdJobCommand,
    StartdSandboxRead,
};
use crate::{
    OutputFetched, SpoolCommit, SpooledFileRequest, SpooledOutputQuery, SpooledOutputReply,
};

/// Largest request body of a command or a query (a job action, a
/// collector or queue query, a claim keep-alive): 1 MiB.
pub const COMMAND_BODY_LIMIT: usize = 1024 * 1024;
/// Largest request body of a route that carries one ad (an
/// advertisement, a claim or activation with its job ad, a job update):
/// 16 MiB.
pub const AD_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Largest request body of a route that carries ads in bulk (a
/// submission, a negotiation cycle's matches): 64 MiB.
pub const BULK_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// How a route takes its request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestBody {
    /// Read whole and decoded; a body longer than this many bytes is
    /// refused with `too_large` (413) before it is read.
    Buffered(usize),
    /// Streamed to its destination chunk by chunk and never held whole
    /// (file uploads); no size limit here.
    Streamed,
}

impl RequestBody {
    /// The most bytes buffered, `None` for a streamed body.
    pub fn limit(self) -> Option<usize> {
        match self {
            RequestBody::Buffered(n) => Some(n),
            RequestBody::Streamed => None,
        }
    }
}

/// A command's place in the protocol, whatever its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteSpec {
    /// The HTTP method, `"GET"` or `"POST"`.
    pub method: &'static str,
    /// The path.
    pub path: &'static str,
    /// The level the caller must hold. `None`: any caller the server can
    /// identify (and an anonymous one where the policy allows anonymous
    /// reads); only [`HELLO`] is like that.
    pub level: Option<AuthLevel>,
    /// How the request body is taken, and its size limit.
    pub body: RequestBody,
    /// Open to every caller, anonymous ones included, whatever the
    /// policy: the request body carries its own authorization (a join
    /// token), which the handler checks. Only [`COLLECTOR_JOIN`] is open.
    pub open: bool,
}

/// A command's place in the protocol with the message it takes (`Req`)
/// and the one it answers (`Resp`): skua-net's client call returns a
/// `Resp` and its server registration takes a handler of `Req` answering
/// `Resp`, so a caller expecting another reply does not compile. Its
/// [`RouteSpec`] (method, path, level, body) is reached through `Deref`.
/// [`RawBytes`] stands for a body that is a file's bytes rather than JSON.
pub struct Route<Req, Resp> {
    spec: RouteSpec,
    messages: PhantomData<fn(Req) -> Resp>,
}

impl<Req, Resp> Route<Req, Resp> {
    /// A route at `path` with `method` (`"GET"` or `"POST"`), callable by
    /// those holding `level` (`None`: any identified caller), taking its
    /// request body as `body` says.
    pub const fn new(
        method: &'static str,
        path: &'static str,
        level: Option<AuthLevel>,
        body: RequestBody,
    ) -> Self {
        Route {
            spec: RouteSpec {
                method,
                path,
                level,
                body,
                open: false,
            },
            messages: PhantomData,
        }
    }

    /// A `POST` route open to every caller, anonymous ones included (see
    /// [`RouteSpec::open`]).
    pub const fn open(path: &'static str, body: RequestBody) -> Self {
        Route {
            spec: RouteSpec {
                method: "POST",
                path,
                level: None,
                body,
                open: true,
            },
            messages: PhantomData,
        }
    }

    /// The route without its message types.
    pub const fn spec(&self) -> RouteSpec {
        self.spec
    }
}

impl<Req, Resp> Deref for Route<Req, Resp> {
    type Target = RouteSpec;

    fn deref(&self) -> &RouteSpec {
        &self.spec
    }
}

impl<Req, Resp> Clone for Route<Req, Resp> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Req, Resp> Copy for Route<Req, Resp> {}

impl<Req, Resp> fmt::Debug for Route<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({} -> {})",
            self.spec.method,
            self.spec.path,
            std::any::type_name::<Req>(),
            std::any::type_name::<Resp>()
        )
    }
}

/// The message of a route whose body is a file's bytes
/// (`application/octet-stream`), not JSON: the reply of
/// [`SHADOW_INPUT_FILE`], the request of [`SHADOW_OUTPUT_FILE`]. No value
/// of it exists; it only names the kind of body.
#[derive(Debug)]
pub enum RawBytes {}

/// `GET /hello` → [`crate::WhoAmI`]. Served by every daemon.
pub const HELLO: Route<(), WhoAmI> = Route::new(
    "GET",
    "/hello",
    None,
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /collector/update` with [`crate::AdUpdate`] → [`crate::Ack`].
/// DAEMON, as HTCondor's `ADVERTISE_*` levels default to DAEMON's lists.
pub const COLLECTOR_UPDATE: Route<AdUpdate, Ack> = Route::new(
    "POST",
    "/collector/update",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /collector/invalidate` with [`crate::Invalidate`] → [`crate::Ack`].
pub const COLLECTOR_INVALIDATE: Route<Invalidate, Ack> = Route::new(
    "POST",
    "/collector/invalidate",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /collector/query` with [`crate::Query`] → [`crate::QueryReply`].
pub const COLLECTOR_QUERY: Route<Query, QueryReply> = Route::new(
    "POST",
    "/collector/query",
    Some(AuthLevel::Read),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /collector/join` with [`crate::JoinRequest`] →
/// [`crate::JoinReply`]. Open to anonymous callers (a joining host has no
/// credential yet): the request's join token is its authorization.
pub const COLLECTOR_JOIN: Route<JoinRequest, JoinReply> =
    Route::open("/collector/join", RequestBody::Buffered(COMMAND_BODY_LIMIT));

/// `POST /collector/credentials` with [`crate::CredentialQuery`] →
/// [`crate::CredentialList`]: the credential registry.
pub const COLLECTOR_CREDENTIALS: Route<CredentialQuery, CredentialList> = Route::new(
    "POST",
    "/collector/credentials",
    Some(AuthLevel::Administrator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /collector/revoke` with [`crate::RevokeRequest`] →
/// [`crate::RevokeReply`].
pub const COLLECTOR_REVOKE: Route<RevokeRequest, RevokeReply> = Route::new(
    "POST",
    "/collector/revoke",
    Some(AuthLevel::Administrator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /collector/revocations` with [`crate::RevocationQuery`] →
/// [`crate::RevocationList`]: the revoked credential ids, which every
/// daemon fetches on each advertise cycle.
pub const COLLECTOR_REVOCATIONS: Route<RevocationQuery, RevocationList> = Route::new(
    "POST",
    "/collector/revocations",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /master/command` with [`crate::DaemonCommand`] →
/// [`crate::CommandReply`].
pub const MASTER_COMMAND: Route<DaemonCommand, CommandReply> = Route::new(
    "POST",
    "/master/command",
    Some(AuthLevel::Administrator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/new_cluster` with [`crate::NewCluster`] →
/// [`crate::NewClusterReply`].
pub const SCHEDD_NEW_CLUSTER: Route<NewCluster, NewClusterReply> = Route::new(
    "POST",
    "/schedd/new_cluster",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/submit` with [`crate::Submit`] → [`crate::SubmitReply`].
pub const SCHEDD_SUBMIT: Route<Submit, SubmitReply> = Route::new(
    "POST",
    "/schedd/submit",
    Some(AuthLevel::Write),
    RequestBody::Buffered(BULK_BODY_LIMIT),
);

/// `POST /schedd/query` with [`crate::JobQuery`] → [`crate::JobQueryReply`].
pub const SCHEDD_QUERY: Route<JobQuery, JobQueryReply> = Route::new(
    "POST",
    "/schedd/query",
    Some(AuthLevel::Read),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/history` with [`crate::JobQuery`] →
/// [`crate::JobQueryReply`].
pub const SCHEDD_HISTORY: Route<JobQuery, JobQueryReply> = Route::new(
    "POST",
    "/schedd/history",
    Some(AuthLevel::Read),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/act` with [`crate::JobAction`] → [`crate::JobActionReply`].
/// WRITE; the schedd further limits a non-administrator to their own jobs.
pub const SCHEDD_ACT: Route<JobAction, JobActionReply> = Route::new(
    "POST",
    "/schedd/act",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/set_attribute` with [`crate::SetAttribute`] →
/// [`crate::JobActionReply`].
pub const SCHEDD_SET_ATTRIBUTE: Route<SetAttribute, JobActionReply> = Route::new(
    "POST",
    "/schedd/set_attribute",
    Some(AuthLevel::Write),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /schedd/resource_requests` with [`crate::ResourceRequests`] →
/// [`crate::ResourceRequestsReply`].
pub const SCHEDD_RESOURCE_REQUESTS: Route<ResourceRequests, ResourceRequestsReply> = Route::new(
    "POST",
    "/schedd/resource_requests",
    Some(AuthLevel::Negotiator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/matches` with [`crate::Matches`] → [`crate::Ack`].
pub const SCHEDD_MATCHES: Route<Matches, Ack> = Route::new(
    "POST",
    "/schedd/matches",
    Some(AuthLevel::Negotiator),
    RequestBody::Buffered(BULK_BODY_LIMIT),
);

/// `POST /negotiator/reschedule` with [`crate::Reschedule`] → [`crate::Ack`].
pub const NEGOTIATOR_RESCHEDULE: Route<Reschedule, Ack> = Route::new(
    "POST",
    "/negotiator/reschedule",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /negotiator/userprio` with [`crate::UserPrioQuery`] →
/// [`crate::UserPrioReply`].
pub const NEGOTIATOR_USERPRIO: Route<UserPrioQuery, UserPrioReply> = Route::new(
    "POST",
    "/negotiator/userprio",
    Some(AuthLevel::Read),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /negotiator/userprio_edit` with [`crate::UserPrioEdit`] →
/// [`crate::Ack`].
pub const NEGOTIATOR_USERPRIO_EDIT: Route<UserPrioEdit, Ack> = Route::new(
    "POST",
    "/negotiator/userprio_edit",
    Some(AuthLevel::Administrator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/match` with [`crate::MatchNotice`] → [`crate::Ack`].
pub const STARTD_MATCH: Route<MatchNotice, Ack> = Route::new(
    "POST",
    "/startd/match",
    Some(AuthLevel::Negotiator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/claim` with [`crate::ClaimRequest`] → [`crate::ClaimReply`].
pub const STARTD_CLAIM: Route<ClaimRequest, ClaimReply> = Route::new(
    "POST",
    "/startd/claim",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /startd/activate` with [`crate::ActivateRequest`] → [`crate::Ack`].
pub const STARTD_ACTIVATE: Route<ActivateRequest, Ack> = Route::new(
    "POST",
    "/startd/activate",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /startd/deactivate` with [`crate::DeactivateRequest`] →
/// [`crate::Ack`].
pub const STARTD_DEACTIVATE: Route<DeactivateRequest, Ack> = Route::new(
    "POST",
    "/startd/deactivate",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/release` with [`crate::ReleaseRequest`] → [`crate::Ack`].
pub const STARTD_RELEASE: Route<ReleaseRequest, Ack> = Route::new(
    "POST",
    "/startd/release",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/alive` with [`crate::ClaimAlive`] → [`crate::ClaimStatus`].
pub const STARTD_ALIVE: Route<ClaimAlive, ClaimStatus> = Route::new(
    "POST",
    "/startd/alive",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/reconnect` with [`crate::ReconnectRequest`] →
/// [`crate::ClaimStatus`]: a restarted schedd finds its run again.
pub const STARTD_RECONNECT: Route<ReconnectRequest, ClaimStatus> = Route::new(
    "POST",
    "/startd/reconnect",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/vacate` with [`crate::VacateRequest`] →
/// [`crate::SlotStates`].
pub const STARTD_VACATE: Route<VacateRequest, SlotStates> = Route::new(
    "POST",
    "/startd/vacate",
    Some(AuthLevel::Administrator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/drain` with [`crate::DrainRequest`] → [`crate::SlotStates`].
pub const STARTD_DRAIN: Route<DrainRequest, SlotStates> = Route::new(
    "POST",
    "/startd/drain",
    Some(AuthLevel::Administrator),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/evicted_files` with [`crate::EvictedFilesQuery`] →
/// [`crate::EvictedFilesReply`] (the job's owner or an administrator).
pub const SCHEDD_EVICTED_FILES: Route<EvictedFilesQuery, EvictedFilesReply> = Route::new(
    "POST",
    "/schedd/evicted_files",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/evicted_file` with [`crate::EvictedFileRequest`] → the
/// file's bytes (`application/octet-stream`).
pub const SCHEDD_EVICTED_FILE: Route<EvictedFileRequest, RawBytes> = Route::new(
    "POST",
    "/schedd/evicted_file",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /shadow/begin` with [`crate::ShadowBegin`] → [`crate::BeginReply`].
pub const SHADOW_BEGIN: Route<ShadowBegin, BeginReply> = Route::new(
    "POST",
    "/shadow/begin",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /shadow/input_file` with [`crate::InputFileRequest`] → the file's
/// bytes (`application/octet-stream`).
pub const SHADOW_INPUT_FILE: Route<InputFileRequest, RawBytes> = Route::new(
    "POST",
    "/shadow/input_file",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /shadow/output_file` with an [`crate::OutputFileMeta`] in the
/// [`crate::TRANSFER_HEADER`] header and the file's bytes as body →
/// [`crate::Ack`].
pub const SHADOW_OUTPUT_FILE: Route<RawBytes, Ack> = Route::new(
    "POST",
    "/shadow/output_file",
    Some(AuthLevel::Daemon),
    RequestBody::Streamed,
);

/// `POST /shadow/checkpoint_file` with a [`crate::CheckpointFileMeta`] in
/// the [`crate::TRANSFER_HEADER`] header and the file's bytes as body →
/// [`crate::Ack`].
pub const SHADOW_CHECKPOINT_FILE: Route<RawBytes, Ack> = Route::new(
    "POST",
    "/shadow/checkpoint_file",
    Some(AuthLevel::Daemon),
    RequestBody::Streamed,
);

/// `POST /shadow/checkpoint_commit` with [`crate::CheckpointCommit`] →
/// [`crate::Ack`].
pub const SHADOW_CHECKPOINT_COMMIT: Route<CheckpointCommit, Ack> = Route::new(
    "POST",
    "/shadow/checkpoint_commit",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /shadow/update` with [`crate::JobUpdate`] → [`crate::Ack`].
pub const SHADOW_UPDATE: Route<JobUpdate, Ack> = Route::new(
    "POST",
    "/shadow/update",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /shadow/exit` with [`crate::JobExit`] → [`crate::Ack`].
pub const SHADOW_EXIT: Route<JobExit, Ack> = Route::new(
    "POST",
    "/shadow/exit",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /shadow/transferring` with [`crate::JobExit`] → [`crate::Ack`]:
/// the job exited and its outputs follow in the background (the final
/// `/shadow/exit` comes once they all arrived).
pub const SHADOW_TRANSFERRING: Route<JobExit, Ack> = Route::new(
    "POST",
    "/shadow/transferring",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /shadow/starter_gone` with [`crate::StarterGone`] → [`crate::Ack`].
pub const SHADOW_STARTER_GONE: Route<StarterGone, Ack> = Route::new(
    "POST",
    "/shadow/starter_gone",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/job_sandbox_read` with [`crate::SandboxReadRequest`] →
/// [`crate::SandboxChunk`]: `skua tail` (the job's owner or a queue
/// super-user; the job must be running).
pub const SCHEDD_JOB_SANDBOX_READ: Route<SandboxReadRequest, SandboxChunk> = Route::new(
    "POST",
    "/schedd/job_sandbox_read",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/ssh_to_job` with [`crate::JobCommandRequest`] →
/// [`crate::JobCommandReply`]: `skua ssh_to_job` (the job's owner or a
/// queue super-user; `SCHEDD_ENABLE_SSH_TO_JOB`).
pub const SCHEDD_SSH_TO_JOB: Route<JobCommandRequest, JobCommandReply> = Route::new(
    "POST",
    "/schedd/ssh_to_job",
    Some(AuthLevel::Write),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /startd/sandbox_read` with [`crate::StartdSandboxRead`] →
/// [`crate::SandboxChunk`]: the schedd of the claim reads its running
/// job's file, with the job user's rights.
pub const STARTD_SANDBOX_READ: Route<StartdSandboxRead, SandboxChunk> = Route::new(
    "POST",
    "/startd/sandbox_read",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /startd/job_command` with [`crate::StartdJobCommand`] →
/// [`crate::JobCommandReply`]: the schedd of the claim runs a command in
/// its running job's sandbox (`ENABLE_SSH_TO_JOB`).
pub const STARTD_JOB_COMMAND: Route<StartdJobCommand, JobCommandReply> = Route::new(
    "POST",
    "/startd/job_command",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(AD_BODY_LIMIT),
);

/// `POST /shadow/chirp` with [`crate::ShadowChirp`] (`stat`, `remove`,
/// `get_job_attr`, `set_job_attr`, `ulog`) → [`crate::ShadowChirpReply`].
pub const SHADOW_CHIRP: Route<ShadowChirp, ShadowChirpReply> = Route::new(
    "POST",
    "/shadow/chirp",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /shadow/chirp_fetch` with [`crate::ShadowChirp`] (`fetch`) → the
/// file's bytes (`application/octet-stream`).
pub const SHADOW_CHIRP_FETCH: Route<ShadowChirp, RawBytes> = Route::new(
    "POST",
    "/shadow/chirp_fetch",
    Some(AuthLevel::Daemon),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /shadow/chirp_put` with a [`crate::ShadowChirp`] (`put`) in the
/// [`crate::CHIRP_HEADER`] header and the file's bytes as body →
/// [`crate::Ack`].
pub const SHADOW_CHIRP_PUT: Route<RawBytes, Ack> = Route::new(
    "POST",
    "/shadow/chirp_put",
    Some(AuthLevel::Daemon),
    RequestBody::Streamed,
);
/// `POST /shadow/transfer_queue` with [`crate::TransferQueueRequest`] →
/// [`crate::TransferQueueReply`]: a starter's turn in the submit side's
/// transfer queue, its progress and its end.
pub const SHADOW_TRANSFER_QUEUE: Route<crate::TransferQueueRequest, crate::TransferQueueReply> =
    Route::new(
        "POST",
        "/shadow/transfer_queue",
        Some(AuthLevel::Daemon),
        RequestBody::Buffered(COMMAND_BODY_LIMIT),
    );

/// `POST /schedd/spool_file` with a [`crate::SpoolFileMeta`] in the
/// [`crate::TRANSFER_HEADER`] header and the file's bytes as body →
/// [`crate::Ack`]: one input file of a job submitted with `-spool`.
pub const SCHEDD_SPOOL_FILE: Route<RawBytes, Ack> = Route::new(
    "POST",
    "/schedd/spool_file",
    Some(AuthLevel::Write),
    RequestBody::Streamed,
);

/// `POST /schedd/spool_commit` with [`crate::SpoolCommit`] → [`crate::Ack`].
pub const SCHEDD_SPOOL_COMMIT: Route<SpoolCommit, Ack> = Route::new(
    "POST",
    "/schedd/spool_commit",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/spooled_output` with [`crate::SpooledOutputQuery`] →
/// [`crate::SpooledOutputReply`].
pub const SCHEDD_SPOOLED_OUTPUT: Route<SpooledOutputQuery, SpooledOutputReply> = Route::new(
    "POST",
    "/schedd/spooled_output",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/spooled_file` with [`crate::SpooledFileRequest`] → the
/// file's bytes (`application/octet-stream`).
pub const SCHEDD_SPOOLED_FILE: Route<SpooledFileRequest, RawBytes> = Route::new(
    "POST",
    "/schedd/spooled_file",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// `POST /schedd/output_fetched` with [`crate::OutputFetched`] →
/// [`crate::Ack`].
pub const SCHEDD_OUTPUT_FETCHED: Route<OutputFetched, Ack> = Route::new(
    "POST",
    "/schedd/output_fetched",
    Some(AuthLevel::Write),
    RequestBody::Buffered(COMMAND_BODY_LIMIT),
);

/// Every route defined so far.
pub const ALL: &[RouteSpec] = &[
    HELLO.spec(),
    COLLECTOR_UPDATE.spec(),
    COLLECTOR_INVALIDATE.spec(),
    COLLECTOR_QUERY.spec(),
    COLLECTOR_JOIN.spec(),
    COLLECTOR_CREDENTIALS.spec(),
    COLLECTOR_REVOKE.spec(),
    COLLECTOR_REVOCATIONS.spec(),
    MASTER_COMMAND.spec(),
    SCHEDD_NEW_CLUSTER.spec(),
    SCHEDD_SUBMIT.spec(),
    SCHEDD_QUERY.spec(),
    SCHEDD_HISTORY.spec(),
    SCHEDD_ACT.spec(),
    SCHEDD_SET_ATTRIBUTE.spec(),
    SCHEDD_RESOURCE_REQUESTS.spec(),
    SCHEDD_MATCHES.spec(),
    NEGOTIATOR_RESCHEDULE.spec(),
    NEGOTIATOR_USERPRIO.spec(),
    NEGOTIATOR_USERPRIO_EDIT.spec(),
    STARTD_MATCH.spec(),
    STARTD_CLAIM.spec(),
    STARTD_ACTIVATE.spec(),
    STARTD_DEACTIVATE.spec(),
    STARTD_RELEASE.spec(),
    STARTD_ALIVE.spec(),
    STARTD_RECONNECT.spec(),
    STARTD_VACATE.spec(),
    STARTD_DRAIN.spec(),
    SHADOW_BEGIN.spec(),
    SHADOW_INPUT_FILE.spec(),
    SHADOW_OUTPUT_FILE.spec(),
    SHADOW_UPDATE.spec(),
    SHADOW_EXIT.spec(),
    SHADOW_TRANSFERRING.spec(),
    SHADOW_STARTER_GONE.spec(),
    SHADOW_TRANSFER_QUEUE.spec(),
    SHADOW_CHECKPOINT_FILE.spec(),
    SHADOW_CHECKPOINT_COMMIT.spec(),
    SHADOW_CHIRP.spec(),
    SHADOW_CHIRP_FETCH.spec(),
    SHADOW_CHIRP_PUT.spec(),
    SCHEDD_EVICTED_FILES.spec(),
    SCHEDD_EVICTED_FILE.spec(),
    SCHEDD_JOB_SANDBOX_READ.spec(),
    SCHEDD_SSH_TO_JOB.spec(),
    STARTD_SANDBOX_READ.spec(),
    STARTD_JOB_COMMAND.spec(),
    SCHEDD_SPOOL_FILE.spec(),
    SCHEDD_SPOOL_COMMIT.spec(),
    SCHEDD_SPOOLED_OUTPUT.spec(),
    SCHEDD_SPOOLED_FILE.spec(),
    SCHEDD_OUTPUT_FETCHED.spec(),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unique_and_absolute() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(a.path.starts_with('/'));
            assert!(a.method == "GET" || a.method == "POST");
            for b in &ALL[i + 1..] {
                assert_ne!(a.path, b.path);
            }
        }
    }

    #[test]
    fn only_bulk_routes_take_large_bodies() {
        for r in ALL {
            let limit = r.body.limit();
            match r.path {
                "/schedd/submit" | "/schedd/matches" => assert_eq!(limit, Some(BULK_BODY_LIMIT)),
                "/shadow/output_file"
                | "/shadow/checkpoint_file"
                | "/shadow/chirp_put"
                | "/schedd/spool_file" => {
                    assert_eq!(limit, None)
                }
                _ => assert!(
                    limit.is_some_and(|l| l <= AD_BODY_LIMIT),
                    "{} takes {limit:?}",
                    r.path
                ),
            }
        }
        assert!(COLLECTOR_QUERY.body.limit() <= Some(COMMAND_BODY_LIMIT));
    }

    #[test]
    fn only_the_join_route_is_open() {
        for r in ALL {
            assert_eq!(r.open, r.path == "/collector/join", "{}", r.path);
        }
        assert_eq!(COLLECTOR_JOIN.level, None);
    }
}
