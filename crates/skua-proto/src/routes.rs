//! One path per command, with the method, the authorization level the
//! server requires for it, and the largest request body it accepts.

use crate::AuthLevel;

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

/// A command's place in the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
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
}

/// `GET /hello` → [`crate::WhoAmI`]. Served by every daemon.
pub const HELLO: Route = Route {
    method: "GET",
    path: "/hello",
    level: None,
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /collector/update` with [`crate::AdUpdate`] → [`crate::Ack`].
/// DAEMON, as HTCondor's `ADVERTISE_*` levels default to DAEMON's lists.
pub const COLLECTOR_UPDATE: Route = Route {
    method: "POST",
    path: "/collector/update",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(AD_BODY_LIMIT),
};

/// `POST /collector/invalidate` with [`crate::Invalidate`] → [`crate::Ack`].
pub const COLLECTOR_INVALIDATE: Route = Route {
    method: "POST",
    path: "/collector/invalidate",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /collector/query` with [`crate::Query`] → [`crate::QueryReply`].
pub const COLLECTOR_QUERY: Route = Route {
    method: "POST",
    path: "/collector/query",
    level: Some(AuthLevel::Read),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /master/command` with [`crate::DaemonCommand`] →
/// [`crate::CommandReply`].
pub const MASTER_COMMAND: Route = Route {
    method: "POST",
    path: "/master/command",
    level: Some(AuthLevel::Administrator),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /schedd/new_cluster` with [`crate::NewCluster`] →
/// [`crate::NewClusterReply`].
pub const SCHEDD_NEW_CLUSTER: Route = Route {
    method: "POST",
    path: "/schedd/new_cluster",
    level: Some(AuthLevel::Write),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /schedd/submit` with [`crate::Submit`] → [`crate::SubmitReply`].
pub const SCHEDD_SUBMIT: Route = Route {
    method: "POST",
    path: "/schedd/submit",
    level: Some(AuthLevel::Write),
    body: RequestBody::Buffered(BULK_BODY_LIMIT),
};

/// `POST /schedd/query` with [`crate::JobQuery`] → [`crate::JobQueryReply`].
pub const SCHEDD_QUERY: Route = Route {
    method: "POST",
    path: "/schedd/query",
    level: Some(AuthLevel::Read),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /schedd/history` with [`crate::JobQuery`] →
/// [`crate::JobQueryReply`].
pub const SCHEDD_HISTORY: Route = Route {
    method: "POST",
    path: "/schedd/history",
    level: Some(AuthLevel::Read),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /schedd/act` with [`crate::JobAction`] → [`crate::JobActionReply`].
/// WRITE; the schedd further limits a non-administrator to their own jobs.
pub const SCHEDD_ACT: Route = Route {
    method: "POST",
    path: "/schedd/act",
    level: Some(AuthLevel::Write),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /schedd/set_attribute` with [`crate::SetAttribute`] →
/// [`crate::JobActionReply`].
pub const SCHEDD_SET_ATTRIBUTE: Route = Route {
    method: "POST",
    path: "/schedd/set_attribute",
    level: Some(AuthLevel::Write),
    body: RequestBody::Buffered(AD_BODY_LIMIT),
};

/// `POST /schedd/resource_requests` with [`crate::ResourceRequests`] →
/// [`crate::ResourceRequestsReply`].
pub const SCHEDD_RESOURCE_REQUESTS: Route = Route {
    method: "POST",
    path: "/schedd/resource_requests",
    level: Some(AuthLevel::Negotiator),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /schedd/matches` with [`crate::Matches`] → [`crate::Ack`].
pub const SCHEDD_MATCHES: Route = Route {
    method: "POST",
    path: "/schedd/matches",
    level: Some(AuthLevel::Negotiator),
    body: RequestBody::Buffered(BULK_BODY_LIMIT),
};

/// `POST /negotiator/reschedule` with [`crate::Reschedule`] → [`crate::Ack`].
pub const NEGOTIATOR_RESCHEDULE: Route = Route {
    method: "POST",
    path: "/negotiator/reschedule",
    level: Some(AuthLevel::Write),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /negotiator/userprio` with [`crate::UserPrioQuery`] →
/// [`crate::UserPrioReply`].
pub const NEGOTIATOR_USERPRIO: Route = Route {
    method: "POST",
    path: "/negotiator/userprio",
    level: Some(AuthLevel::Read),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /negotiator/userprio_edit` with [`crate::UserPrioEdit`] →
/// [`crate::Ack`].
pub const NEGOTIATOR_USERPRIO_EDIT: Route = Route {
    method: "POST",
    path: "/negotiator/userprio_edit",
    level: Some(AuthLevel::Administrator),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /startd/match` with [`crate::MatchNotice`] → [`crate::Ack`].
pub const STARTD_MATCH: Route = Route {
    method: "POST",
    path: "/startd/match",
    level: Some(AuthLevel::Negotiator),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /startd/claim` with [`crate::ClaimRequest`] → [`crate::ClaimReply`].
pub const STARTD_CLAIM: Route = Route {
    method: "POST",
    path: "/startd/claim",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(AD_BODY_LIMIT),
};

/// `POST /startd/activate` with [`crate::ActivateRequest`] → [`crate::Ack`].
pub const STARTD_ACTIVATE: Route = Route {
    method: "POST",
    path: "/startd/activate",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(AD_BODY_LIMIT),
};

/// `POST /startd/deactivate` with [`crate::DeactivateRequest`] →
/// [`crate::Ack`].
pub const STARTD_DEACTIVATE: Route = Route {
    method: "POST",
    path: "/startd/deactivate",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /startd/release` with [`crate::ReleaseRequest`] → [`crate::Ack`].
pub const STARTD_RELEASE: Route = Route {
    method: "POST",
    path: "/startd/release",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /startd/alive` with [`crate::ClaimAlive`] → [`crate::ClaimStatus`].
pub const STARTD_ALIVE: Route = Route {
    method: "POST",
    path: "/startd/alive",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /startd/vacate` with [`crate::VacateRequest`] →
/// [`crate::SlotStates`].
pub const STARTD_VACATE: Route = Route {
    method: "POST",
    path: "/startd/vacate",
    level: Some(AuthLevel::Administrator),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /startd/drain` with [`crate::DrainRequest`] → [`crate::SlotStates`].
pub const STARTD_DRAIN: Route = Route {
    method: "POST",
    path: "/startd/drain",
    level: Some(AuthLevel::Administrator),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /shadow/begin` with [`crate::ShadowBegin`] → [`crate::BeginReply`].
pub const SHADOW_BEGIN: Route = Route {
    method: "POST",
    path: "/shadow/begin",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /shadow/input_file` with [`crate::InputFileRequest`] → the file's
/// bytes (`application/octet-stream`).
pub const SHADOW_INPUT_FILE: Route = Route {
    method: "POST",
    path: "/shadow/input_file",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// `POST /shadow/output_file` with an [`crate::OutputFileMeta`] in the
/// [`crate::TRANSFER_HEADER`] header and the file's bytes as body →
/// [`crate::Ack`].
pub const SHADOW_OUTPUT_FILE: Route = Route {
    method: "POST",
    path: "/shadow/output_file",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Streamed,
};

/// `POST /shadow/update` with [`crate::JobUpdate`] → [`crate::Ack`].
pub const SHADOW_UPDATE: Route = Route {
    method: "POST",
    path: "/shadow/update",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(AD_BODY_LIMIT),
};

/// `POST /shadow/exit` with [`crate::JobExit`] → [`crate::Ack`].
pub const SHADOW_EXIT: Route = Route {
    method: "POST",
    path: "/shadow/exit",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(AD_BODY_LIMIT),
};

/// `POST /shadow/starter_gone` with [`crate::StarterGone`] → [`crate::Ack`].
pub const SHADOW_STARTER_GONE: Route = Route {
    method: "POST",
    path: "/shadow/starter_gone",
    level: Some(AuthLevel::Daemon),
    body: RequestBody::Buffered(COMMAND_BODY_LIMIT),
};

/// Every route defined so far.
pub const ALL: &[Route] = &[
    HELLO,
    COLLECTOR_UPDATE,
    COLLECTOR_INVALIDATE,
    COLLECTOR_QUERY,
    MASTER_COMMAND,
    SCHEDD_NEW_CLUSTER,
    SCHEDD_SUBMIT,
    SCHEDD_QUERY,
    SCHEDD_HISTORY,
    SCHEDD_ACT,
    SCHEDD_SET_ATTRIBUTE,
    SCHEDD_RESOURCE_REQUESTS,
    SCHEDD_MATCHES,
    NEGOTIATOR_RESCHEDULE,
    NEGOTIATOR_USERPRIO,
    NEGOTIATOR_USERPRIO_EDIT,
    STARTD_MATCH,
    STARTD_CLAIM,
    STARTD_ACTIVATE,
    STARTD_DEACTIVATE,
    STARTD_RELEASE,
    STARTD_ALIVE,
    STARTD_VACATE,
    STARTD_DRAIN,
    SHADOW_BEGIN,
    SHADOW_INPUT_FILE,
    SHADOW_OUTPUT_FILE,
    SHADOW_UPDATE,
    SHADOW_EXIT,
    SHADOW_STARTER_GONE,
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
                "/shadow/output_file" => assert_eq!(limit, None),
                _ => assert!(
                    limit.is_some_and(|l| l <= AD_BODY_LIMIT),
                    "{} takes {limit:?}",
                    r.path
                ),
            }
        }
        assert!(COLLECTOR_QUERY.body.limit() <= Some(COMMAND_BODY_LIMIT));
    }
}
