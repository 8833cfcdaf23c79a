//! The transport's error type.

use std::io;
use std::time::Duration;

use skua_proto::{ErrorBody, ErrorCode};

/// What went wrong with a call, or with setting up a server or client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The connection could not be made.
    #[error("cannot connect to {endpoint}: {source}")]
    Connect {
        /// The endpoint, as text.
        endpoint: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The TLS handshake failed (untrusted or mismatched certificate...).
    #[error("tls with {endpoint}: {message}")]
    Tls {
        /// The endpoint, as text.
        endpoint: String,
        /// Why.
        message: String,
    },
    /// No complete answer within the client's timeout.
    #[error("{endpoint} did not answer within {after:?}")]
    Timeout {
        /// The endpoint, as text.
        endpoint: String,
        /// The timeout that expired.
        after: Duration,
    },
    /// The server answered with an error.
    #[error("{endpoint}: {body}")]
    Remote {
        /// The endpoint, as text.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The error the server sent (or one made from the status when the
        /// body was not an [`ErrorBody`]).
        body: ErrorBody,
    },
    /// The HTTP exchange broke (connection reset, protocol violation).
    #[error("exchange with {endpoint} failed: {message}")]
    Http {
        /// The endpoint, as text.
        endpoint: String,
        /// Why.
        message: String,
    },
    /// The reply did not decode as the expected message.
    #[error("cannot decode reply from {endpoint}: {message}")]
    Decode {
        /// The endpoint, as text.
        endpoint: String,
        /// Why.
        message: String,
    },
    /// The request did not encode.
    #[error("cannot encode request: {0}")]
    Encode(#[source] serde_json::Error),
    /// A local I/O failure (binding a listener, reading a file).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// Invalid configuration: bad PEM, bad policy, bad token text.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl NetError {
    /// The protocol error code that best describes this error: the
    /// server's code for [`NetError::Remote`], `Unavailable` for connection
    /// and exchange failures, `Timeout`, `Internal` for decoding failures,
    /// `BadRequest` for encoding and configuration errors.
    pub fn code(&self) -> ErrorCode {
        match self {
            NetError::Remote { body, .. } => body.code,
            NetError::Connect { .. } | NetError::Tls { .. } | NetError::Http { .. } => {
                ErrorCode::Unavailable
            }
            NetError::Timeout { .. } => ErrorCode::Timeout,
            NetError::Decode { .. } | NetError::Io { .. } => ErrorCode::Internal,
            NetError::Encode(_) | NetError::Config(_) => ErrorCode::BadRequest,
        }
    }

    /// The server's error body, for [`NetError::Remote`].
    pub fn remote(&self) -> Option<&ErrorBody> {
        match self {
            NetError::Remote { body, .. } => Some(body),
            _ => None,
        }
    }
}
