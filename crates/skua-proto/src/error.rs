//! The closed set of protocol error codes and the error body.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a request failed. Closed: every failure a peer can report is one of
/// these, and each has exactly one HTTP status ([`ErrorCode::http_status`]).
///
/// On the wire a code is spelled in snake case (`"permission_denied"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No credentials, or credentials that do not verify (401).
    Unauthenticated,
    /// Authenticated, but not authorized for the command's level (403).
    PermissionDenied,
    /// The path, or the thing it names, does not exist (404).
    NotFound,
    /// The request is malformed or names an unsupported version (400).
    BadRequest,
    /// The request conflicts with the current state (409).
    Conflict,
    /// The request body is larger than the route accepts (413).
    TooLarge,
    /// The server cannot serve the request now; try later (503).
    Unavailable,
    /// The operation did not finish in time (504).
    Timeout,
    /// A bug or unexpected failure in the server (500).
    Internal,
}

impl ErrorCode {
    /// All codes, in declaration order.
    pub const ALL: [ErrorCode; 9] = [
        ErrorCode::Unauthenticated,
        ErrorCode::PermissionDenied,
        ErrorCode::NotFound,
        ErrorCode::BadRequest,
        ErrorCode::Conflict,
        ErrorCode::TooLarge,
        ErrorCode::Unavailable,
        ErrorCode::Timeout,
        ErrorCode::Internal,
    ];

    /// The HTTP status a response carrying this code has.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::Unauthenticated => 401,
            ErrorCode::PermissionDenied => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::BadRequest => 400,
            ErrorCode::Conflict => 409,
            ErrorCode::TooLarge => 413,
            ErrorCode::Unavailable => 503,
            ErrorCode::Timeout => 504,
            ErrorCode::Internal => 500,
        }
    }

    /// The code for an error status whose body is not an [`ErrorBody`]
    /// (a proxy, or a peer that broke the contract): the inverse of
    /// [`ErrorCode::http_status`], other 4xx as `BadRequest`, 408 as
    /// `Timeout`, 429 and 502 as `Unavailable`, anything else as `Internal`.
    pub fn from_http_status(status: u16) -> ErrorCode {
        match status {
            401 => ErrorCode::Unauthenticated,
            403 => ErrorCode::PermissionDenied,
            404 => ErrorCode::NotFound,
            409 => ErrorCode::Conflict,
            413 => ErrorCode::TooLarge,
            408 | 504 => ErrorCode::Timeout,
            429 | 502 | 503 => ErrorCode::Unavailable,
            400..=499 => ErrorCode::BadRequest,
            _ => ErrorCode::Internal,
        }
    }

    /// The snake-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::NotFound => "not_found",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::Conflict => "conflict",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The JSON body of every error response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What kind of failure; fixes the HTTP status.
    pub code: ErrorCode,
    /// Human-readable detail: lowercase, no trailing period.
    pub message: String,
}

impl ErrorBody {
    /// An error body with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ErrorBody {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trips() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_http_status(c.http_status()), c);
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
        assert_eq!(ErrorCode::from_http_status(405), ErrorCode::BadRequest);
        assert_eq!(ErrorCode::from_http_status(502), ErrorCode::Unavailable);
        assert_eq!(ErrorCode::from_http_status(599), ErrorCode::Internal);
    }

    #[test]
    fn body_shape() {
        let b = ErrorBody::new(ErrorCode::PermissionDenied, "no");
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"code":"permission_denied","message":"no"}"#
        );
        assert_eq!(b.to_string(), "permission_denied: no");
    }
}
