//! Why a submit description is rejected, with the file and line.

/// A rejected submit description. Every variant names the file and the line (of the statement
/// or command at fault; for problems found while building a job, the line that defined the
/// command, or of the queue statement).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// A line that is not a statement, an unbalanced `if`, an invalid queue statement, ...
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An `error : message` statement.
    #[error("{file}:{line}: error statement: {message}")]
    ErrorStatement {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The statement's message.
        message: String,
    },
    /// A command whose value is invalid.
    #[error("{file}:{line}: invalid value for {command}: {reason}")]
    InvalidValue {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The command (as HTCondor names it).
        command: String,
        /// What is wrong, with the value.
        reason: String,
    },
    /// A file (include, queue item list) that cannot be read, or a command that cannot run.
    #[error("{file}:{line}: cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The path (or command) that could not be read.
        path: String,
        /// Why.
        reason: String,
    },
    /// A job was queued but no `executable` was given.
    #[error("{file}:{line}: no 'executable' command was given for the job queued here")]
    MissingExecutable {
        /// The file.
        file: String,
        /// The line of the queue statement.
        line: usize,
    },
    /// A parallel-universe job was queued without `machine_count` (or `node_count`).
    #[error("{file}:{line}: No machine_count specified! (a parallel universe job needs machine_count = N, its number of nodes)")]
    MissingMachineCount {
        /// The file.
        file: String,
        /// The line of the queue statement.
        line: usize,
    },
    /// The description has no queue statement.
    #[error("{file}: the submit description has no queue statement")]
    NoQueue {
        /// The file.
        file: String,
    },
    /// More jobs than the limit allows.
    #[error("{file}:{line}: too many jobs: this submission would create more than {limit}")]
    TooManyJobs {
        /// The file.
        file: String,
        /// The line of the queue statement that went over the limit.
        line: usize,
        /// The limit.
        limit: usize,
    },
}

impl SubmitError {
    /// The line the error is about (0 when it concerns the whole file).
    pub fn line(&self) -> usize {
        match self {
            SubmitError::Syntax { line, .. }
            | SubmitError::ErrorStatement { line, .. }
            | SubmitError::InvalidValue { line, .. }
            | SubmitError::Unreadable { line, .. }
            | SubmitError::MissingExecutable { line, .. }
            | SubmitError::MissingMachineCount { line, .. }
            | SubmitError::TooManyJobs { line, .. } => *line,
            SubmitError::NoQueue { .. } => 0,
        }
    }
}
