//! Chirp: a running job's remote I/O through its starter and shadow.
//!
//! Two legs. The job (`skua chirp`, or any client) talks to its starter's
//! loopback proxy with [`ChirpJobRequest`] lines and [`ChirpJobReply`]
//! lines (the format is in docs/protocol.md, "Chirp"). The starter
//! forwards each operation to the shadow with a [`ShadowChirp`] on
//! `/shadow/chirp`, `/shadow/chirp_fetch` or `/shadow/chirp_put`, bound to
//! its claim and job like every other starter call.

use serde::{Deserialize, Serialize};

/// The file, in the job's scratch directory, that tells a Chirp client
/// where its proxy is: one line `<ip> <port> <cookie>`.
pub const CHIRP_CONFIG_NAME: &str = ".chirp.config";
/// The environment variable naming [`CHIRP_CONFIG_NAME`]'s path.
pub const CHIRP_CONFIG_ENV: &str = "_CONDOR_CHIRP_CONFIG";
/// The length of the proxy's cookie.
pub const CHIRP_COOKIE_LEN: usize = 32;
/// The longest request line the proxy reads, in bytes.
pub const CHIRP_LINE_LIMIT: usize = 64 * 1024;
/// The most bytes of a `ulog` message kept (HTCondor's limit).
pub const CHIRP_ULOG_LIMIT: usize = 128;

/// One Chirp operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ChirpOp {
    /// The bytes of the submit-side file `path`.
    Fetch {
        /// Absolute, or relative to the job's Iwd.
        path: String,
    },
    /// Writes `size` bytes (which follow the request) to `path`.
    Put {
        /// Absolute, or relative to the job's Iwd.
        path: String,
        /// `condor_chirp put -mode` letters: `w` write, `c` create,
        /// `t` truncate, `a` append, `x` exclusive (with `c`: the file
        /// must not exist). Empty: `cwt`.
        #[serde(default)]
        mode: String,
        /// The new file's permission bits (default 0644).
        #[serde(default)]
        perm: Option<u32>,
        /// The number of bytes.
        size: u64,
    },
    /// Removes the file `path`.
    Remove {
        /// Absolute, or relative to the job's Iwd.
        path: String,
    },
    /// Whether `path` exists, and what it is.
    Stat {
        /// Absolute, or relative to the job's Iwd.
        path: String,
    },
    /// The expression of attribute `name` in the job's current ad.
    GetJobAttr {
        /// The attribute.
        name: String,
    },
    /// Sets attribute `name` of the job to the expression `value`
    /// (the schedd's qedit rules apply: the job's owner's rights).
    SetJobAttr {
        /// The attribute.
        name: String,
        /// A ClassAd expression (`'"Stage 3"'` for a string).
        value: String,
    },
    /// Writes a generic event (008) with `message` to the job's user log.
    Ulog {
        /// The text (at most [`CHIRP_ULOG_LIMIT`] bytes are kept).
        message: String,
    },
    /// The name the proxy knows the job by (its owner).
    Whoami,
    /// Sets attribute `name` (which must match the execute side's
    /// `CHIRP_DELAYED_UPDATE_PREFIX`) with the starter's next update
    /// rather than at once; kept by the starter, never forwarded as such.
    SetJobAttrDelayed {
        /// The attribute.
        name: String,
        /// A ClassAd expression.
        value: String,
    },
    /// The expression of a delayed attribute this job set (the starter's
    /// copy).
    GetJobAttrDelayed {
        /// The attribute.
        name: String,
    },
}

impl ChirpOp {
    /// The operation's name, as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            ChirpOp::Fetch { .. } => "fetch",
            ChirpOp::Put { .. } => "put",
            ChirpOp::Remove { .. } => "remove",
            ChirpOp::Stat { .. } => "stat",
            ChirpOp::GetJobAttr { .. } => "get_job_attr",
            ChirpOp::SetJobAttr { .. } => "set_job_attr",
            ChirpOp::Ulog { .. } => "ulog",
            ChirpOp::Whoami => "whoami",
            ChirpOp::SetJobAttrDelayed { .. } => "set_job_attr_delayed",
            ChirpOp::GetJobAttrDelayed { .. } => "get_job_attr_delayed",
        }
    }

    /// Whether it reads or writes files (`ENABLE_CHIRP_IO`), rather than
    /// the job's ad or log (`ENABLE_CHIRP_UPDATES`).
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            ChirpOp::Fetch { .. }
                | ChirpOp::Put { .. }
                | ChirpOp::Remove { .. }
                | ChirpOp::Stat { .. }
        )
    }
}

/// A request from the job to its proxy: one line of JSON (the cookie and
/// the operation's fields side by side), followed, for `put`, by the
/// file's bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChirpJobRequest {
    /// The cookie of `.chirp.config`.
    pub cookie: String,
    /// The operation.
    #[serde(flatten)]
    pub op: ChirpOp,
}

/// What `stat` tells of a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChirpStat {
    /// Size in bytes.
    pub size: u64,
    /// Unix mode (type and permission bits).
    pub mode: u32,
    /// It is a directory.
    pub is_dir: bool,
    /// Last modification, seconds since the epoch.
    pub mtime: i64,
}

/// The proxy's final reply line to the job (after any `data` frames).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChirpJobReply {
    /// Whether the operation succeeded.
    pub ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `get_job_attr`: the expression; `whoami`: the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `stat`: the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<ChirpStat>,
    /// `fetch` and `put`: the bytes moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl ChirpJobReply {
    /// A failure with `message`.
    pub fn failed(message: impl Into<String>) -> ChirpJobReply {
        ChirpJobReply {
            ok: false,
            error: Some(message.into()),
            ..ChirpJobReply::default()
        }
    }
}

/// `POST /shadow/chirp` (DAEMON): the starter forwards a job's operation
/// (not `fetch` or `put`, which have routes of their own: this same
/// message is their request body, resp. their [`CHIRP_HEADER`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowChirp {
    /// The claim.
    pub claim_id: String,
    /// `"C.P"` of the job.
    pub job_id: String,
    /// The operation.
    pub op: ChirpOp,
}

/// The reply to [`ShadowChirp`] on `/shadow/chirp`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowChirpReply {
    /// `get_job_attr`: the expression.
    #[serde(default)]
    pub value: Option<String>,
    /// `stat`: the file.
    #[serde(default)]
    pub stat: Option<ChirpStat>,
}

/// The header carrying a [`ShadowChirp`] (a `put`) on
/// `POST /shadow/chirp_put`.
pub const CHIRP_HEADER: &str = "Skua-Chirp";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_request_is_one_flat_json_object() {
        let line = r#"{"cookie":"c","op":"put","path":"out/x","mode":"wa","size":3}"#;
        let req: ChirpJobRequest = serde_json::from_str(line).unwrap();
        assert_eq!(req.cookie, "c");
        assert_eq!(
            req.op,
            ChirpOp::Put {
                path: "out/x".into(),
                mode: "wa".into(),
                perm: None,
                size: 3
            }
        );
        let back = serde_json::to_string(&ChirpJobRequest {
            cookie: "k".into(),
            op: ChirpOp::Whoami,
        })
        .unwrap();
        assert_eq!(back, r#"{"cookie":"k","op":"whoami"}"#);
        assert!(serde_json::from_str::<ChirpJobRequest>(r#"{"cookie":"c","op":"chmod"}"#).is_err());
    }

    #[test]
    fn io_operations_are_told_from_updates() {
        assert!(ChirpOp::Stat { path: "a".into() }.is_io());
        assert!(!ChirpOp::Ulog {
            message: "m".into()
        }
        .is_io());
    }
}
