//! One path per command, with the method and the authorization level the
//! server requires for it.

use crate::AuthLevel;

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
}

/// `GET /hello` → [`crate::WhoAmI`]. Served by every daemon.
pub const HELLO: Route = Route {
    method: "GET",
    path: "/hello",
    level: None,
};

/// `POST /collector/update` with [`crate::AdUpdate`] → [`crate::Ack`].
/// DAEMON, as HTCondor's `ADVERTISE_*` levels default to DAEMON's lists.
pub const COLLECTOR_UPDATE: Route = Route {
    method: "POST",
    path: "/collector/update",
    level: Some(AuthLevel::Daemon),
};

/// `POST /collector/invalidate` with [`crate::Invalidate`] → [`crate::Ack`].
pub const COLLECTOR_INVALIDATE: Route = Route {
    method: "POST",
    path: "/collector/invalidate",
    level: Some(AuthLevel::Daemon),
};

/// `POST /collector/query` with [`crate::Query`] → [`crate::QueryReply`].
pub const COLLECTOR_QUERY: Route = Route {
    method: "POST",
    path: "/collector/query",
    level: Some(AuthLevel::Read),
};

/// `POST /master/command` with [`crate::DaemonCommand`] →
/// [`crate::CommandReply`].
pub const MASTER_COMMAND: Route = Route {
    method: "POST",
    path: "/master/command",
    level: Some(AuthLevel::Administrator),
};

/// `POST /schedd/new_cluster` with [`crate::NewCluster`] →
/// [`crate::NewClusterReply`].
pub const SCHEDD_NEW_CLUSTER: Route = Route {
    method: "POST",
    path: "/schedd/new_cluster",
    level: Some(AuthLevel::Write),
};

/// `POST /schedd/submit` with [`crate::Submit`] → [`crate::SubmitReply`].
pub const SCHEDD_SUBMIT: Route = Route {
    method: "POST",
    path: "/schedd/submit",
    level: Some(AuthLevel::Write),
};

/// `POST /schedd/query` with [`crate::JobQuery`] → [`crate::JobQueryReply`].
pub const SCHEDD_QUERY: Route = Route {
    method: "POST",
    path: "/schedd/query",
    level: Some(AuthLevel::Read),
};

/// `POST /schedd/history` with [`crate::JobQuery`] →
/// [`crate::JobQueryReply`].
pub const SCHEDD_HISTORY: Route = Route {
    method: "POST",
    path: "/schedd/history",
    level: Some(AuthLevel::Read),
};

/// `POST /schedd/act` with [`crate::JobAction`] → [`crate::JobActionReply`].
/// WRITE; the schedd further limits a non-administrator to their own jobs.
pub const SCHEDD_ACT: Route = Route {
    method: "POST",
    path: "/schedd/act",
    level: Some(AuthLevel::Write),
};

/// `POST /schedd/set_attribute` with [`crate::SetAttribute`] →
/// [`crate::JobActionReply`].
pub const SCHEDD_SET_ATTRIBUTE: Route = Route {
    method: "POST",
    path: "/schedd/set_attribute",
    level: Some(AuthLevel::Write),
};

/// `POST /schedd/resource_requests` with [`crate::ResourceRequests`] →
/// [`crate::ResourceRequestsReply`].
pub const SCHEDD_RESOURCE_REQUESTS: Route = Route {
    method: "POST",
    path: "/schedd/resource_requests",
    level: Some(AuthLevel::Negotiator),
};

/// `POST /schedd/matches` with [`crate::Matches`] → [`crate::Ack`].
pub const SCHEDD_MATCHES: Route = Route {
    method: "POST",
    path: "/schedd/matches",
    level: Some(AuthLevel::Negotiator),
};

/// `POST /negotiator/reschedule` with [`crate::Reschedule`] → [`crate::Ack`].
pub const NEGOTIATOR_RESCHEDULE: Route = Route {
    method: "POST",
    path: "/negotiator/reschedule",
    level: Some(AuthLevel::Write),
};

/// `POST /negotiator/userprio` with [`crate::UserPrioQuery`] →
/// [`crate::UserPrioReply`].
pub const NEGOTIATOR_USERPRIO: Route = Route {
    method: "POST",
    path: "/negotiator/userprio",
    level: Some(AuthLevel::Read),
};

/// `POST /negotiator/userprio_edit` with [`crate::UserPrioEdit`] →
/// [`crate::Ack`].
pub const NEGOTIATOR_USERPRIO_EDIT: Route = Route {
    method: "POST",
    path: "/negotiator/userprio_edit",
    level: Some(AuthLevel::Administrator),
};

/// `POST /startd/match` with [`crate::MatchNotice`] → [`crate::Ack`].
pub const STARTD_MATCH: Route = Route {
    method: "POST",
    path: "/startd/match",
    level: Some(AuthLevel::Negotiator),
};

/// `POST /startd/claim` with [`crate::ClaimRequest`] → [`crate::ClaimReply`].
pub const STARTD_CLAIM: Route = Route {
    method: "POST",
    path: "/startd/claim",
    level: Some(AuthLevel::Daemon),
};

/// `POST /startd/activate` with [`crate::ActivateRequest`] → [`crate::Ack`].
pub const STARTD_ACTIVATE: Route = Route {
    method: "POST",
    path: "/startd/activate",
    level: Some(AuthLevel::Daemon),
};

/// `POST /startd/deactivate` with [`crate::DeactivateRequest`] →
/// [`crate::Ack`].
pub const STARTD_DEACTIVATE: Route = Route {
    method: "POST",
    path: "/startd/deactivate",
    level: Some(AuthLevel::Daemon),
};

/// `POST /startd/release` with [`crate::ReleaseRequest`] → [`crate::Ack`].
pub const STARTD_RELEASE: Route = Route {
    method: "POST",
    path: "/startd/release",
    level: Some(AuthLevel::Daemon),
};

/// `POST /startd/alive` with [`crate::ClaimAlive`] → [`crate::ClaimStatus`].
pub const STARTD_ALIVE: Route = Route {
    method: "POST",
    path: "/startd/alive",
    level: Some(AuthLevel::Daemon),
};

/// `POST /startd/vacate` with [`crate::VacateRequest`] →
/// [`crate::SlotStates`].
pub const STARTD_VACATE: Route = Route {
    method: "POST",
    path: "/startd/vacate",
    level: Some(AuthLevel::Administrator),
};

/// `POST /startd/drain` with [`crate::DrainRequest`] → [`crate::SlotStates`].
pub const STARTD_DRAIN: Route = Route {
    method: "POST",
    path: "/startd/drain",
    level: Some(AuthLevel::Administrator),
};

/// `POST /shadow/begin` with [`crate::ShadowBegin`] → [`crate::BeginReply`].
pub const SHADOW_BEGIN: Route = Route {
    method: "POST",
    path: "/shadow/begin",
    level: Some(AuthLevel::Daemon),
};

/// `POST /shadow/input_file` with [`crate::InputFileRequest`] → the file's
/// bytes (`application/octet-stream`).
pub const SHADOW_INPUT_FILE: Route = Route {
    method: "POST",
    path: "/shadow/input_file",
    level: Some(AuthLevel::Daemon),
};

/// `POST /shadow/output_file` with an [`crate::OutputFileMeta`] in the
/// [`crate::TRANSFER_HEADER`] header and the file's bytes as body →
/// [`crate::Ack`].
pub const SHADOW_OUTPUT_FILE: Route = Route {
    method: "POST",
    path: "/shadow/output_file",
    level: Some(AuthLevel::Daemon),
};

/// `POST /shadow/update` with [`crate::JobUpdate`] → [`crate::Ack`].
pub const SHADOW_UPDATE: Route = Route {
    method: "POST",
    path: "/shadow/update",
    level: Some(AuthLevel::Daemon),
};

/// `POST /shadow/exit` with [`crate::JobExit`] → [`crate::Ack`].
pub const SHADOW_EXIT: Route = Route {
    method: "POST",
    path: "/shadow/exit",
    level: Some(AuthLevel::Daemon),
};

/// `POST /shadow/starter_gone` with [`crate::StarterGone`] → [`crate::Ack`].
pub const SHADOW_STARTER_GONE: Route = Route {
    method: "POST",
    path: "/shadow/starter_gone",
    level: Some(AuthLevel::Daemon),
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
}
