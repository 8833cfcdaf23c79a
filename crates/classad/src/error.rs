//! Errors of the ClassAd library. UNDEFINED and ERROR are values, not
//! Rust errors: only parsing can fail.

/// A parse error with its 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {msg}")]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    pub msg: String,
}

impl ParseError {
    pub(crate) fn new(line: u32, col: u32, msg: impl Into<String>) -> ParseError {
        ParseError {
            line,
            col,
            msg: msg.into(),
        }
    }
}
