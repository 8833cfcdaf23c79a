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

/// Every route defined so far.
pub const ALL: &[Route] = &[
    HELLO,
    COLLECTOR_UPDATE,
    COLLECTOR_INVALIDATE,
    COLLECTOR_QUERY,
    MASTER_COMMAND,
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
