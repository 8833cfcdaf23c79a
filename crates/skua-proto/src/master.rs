//! Master messages: turning daemons off, on, restarting, reconfiguring.

use serde::{Deserialize, Serialize};

/// What the master is asked to do (`skua off`, `skua on`, `skua restart`,
/// `skua reconfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MasterCommand {
    /// Stop the daemon(s) gracefully and keep them stopped.
    Off,
    /// Start daemon(s) that were turned off.
    On,
    /// Stop and start again.
    Restart,
    /// Re-read the configuration.
    Reconfig,
}

/// `POST /master/command`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonCommand {
    /// The command.
    pub command: MasterCommand,
    /// The daemon to act on (`"schedd"`, `"startd"`, ...); `None` means
    /// every daemon the master runs, and for `Off`/`Restart` the master too.
    #[serde(default)]
    pub daemon: Option<String>,
}

/// The reply to a [`DaemonCommand`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandReply {
    /// What was done, for the user.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_shape() {
        let c: DaemonCommand = serde_json::from_str(r#"{"command":"reconfig"}"#).unwrap();
        assert_eq!(c.command, MasterCommand::Reconfig);
        assert_eq!(c.daemon, None);
        let c = DaemonCommand {
            command: MasterCommand::Off,
            daemon: Some("schedd".into()),
        };
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"command":"off","daemon":"schedd"}"#
        );
    }
}
