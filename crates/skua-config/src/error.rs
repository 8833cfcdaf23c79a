//! The one error type of this crate.

use std::fmt;

/// A place in the configuration: a file (or other source) and a 1-based line number.
///
/// Line 0 means "the source as a whole" (for example an unreadable file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as it was named (main file path, include path, or a pseudo source such as
    /// `<environment>`).
    pub file: String,
    /// 1-based line number of the first physical line of the statement; 0 for the whole source.
    pub line: usize,
    /// Set when the statement came from a metaknob body: the `use CATEGORY:TEMPLATE` that
    /// expanded it (the file and line then point at the `use` line).
    pub within: Option<Box<str>>,
}

impl Location {
    pub(crate) fn new(file: &str, line: usize) -> Self {
        Location {
            file: file.to_string(),
            line,
            within: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)?;
        } else {
            write!(f, "{}, line {}", self.file, self.line)?;
        }
        if let Some(within) = &self.within {
            write!(f, " (in {within})")?;
        }
        Ok(())
    }
}

/// Why a configuration was refused (HTCondor refuses the whole configuration in each case),
/// or why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The main configuration file could not be read.
    #[error("cannot read configuration file `{path}`: {reason}")]
    Unreadable { path: String, reason: String },
    /// A file named by `LOCAL_CONFIG_FILE` could not be read while `REQUIRE_LOCAL_CONFIG_FILE` is true.
    #[error("cannot read local configuration file `{path}` (named by {knob}): {reason}")]
    LocalUnreadable {
        path: String,
        knob: String,
        reason: String,
    },
    /// A knob name contains a character other than letters, digits, `_`, `.` and `/`.
    #[error("{at}: illegal knob name `{name}`")]
    IllegalName { at: Location, name: String },
    /// A line that is neither an assignment, a keyword line nor a conditional.
    #[error("{at}: cannot parse `{text}`: expected `NAME = value`, `NAME @=tag`, `include : FILE`, `use CATEGORY : TEMPLATE`, `error : TEXT` or a conditional")]
    Unparseable { at: Location, text: String },
    /// `include : FILE` where FILE cannot be read (and `ifexist` was not given).
    #[error("{at}: cannot read included file `{path}`: {reason}")]
    IncludeNotFound {
        at: Location,
        path: String,
        reason: String,
    },
    /// Includes nested deeper than the limit (usually an include cycle).
    #[error(
        "{at}: includes nested too deeply (limit {limit}) at `{path}`; is there an include cycle?"
    )]
    IncludeTooDeep {
        at: Location,
        path: String,
        limit: usize,
    },
    /// `include` followed by words other than `ifexist`.
    #[error("{at}: unexpected keyword(s) `{words}` after include")]
    IncludeKeyword { at: Location, words: String },
    /// `include : cmd |`, `include command : cmd` or `LOCAL_CONFIG_FILE = cmd |` whose command
    /// could not be run or failed.
    #[error("{at}: cannot include the output of `{command}`: {reason}")]
    IncludeCommand {
        at: Location,
        command: String,
        reason: String,
    },
    /// An `if`/`elif` condition that is not one of the supported forms.
    #[error("{at}: `{condition}` is not a valid {keyword} condition: {reason}")]
    BadCondition {
        at: Location,
        keyword: &'static str,
        condition: String,
        reason: String,
    },
    /// `elif`, `else` or `endif` without an open `if`.
    #[error("{at}: {keyword} without matching if")]
    UnmatchedConditional { at: Location, keyword: String },
    /// `elif` or `else` after the `else` of the same `if`.
    #[error("{at}: {keyword} is not allowed after else")]
    AfterElse { at: Location, keyword: String },
    /// End of a source with an `if` still open.
    #[error("{at}: endif(s) not found before end of file (if opened at line {opened_at})")]
    MissingEndif { at: Location, opened_at: usize },
    /// `NAME @=tag` without a closing `@tag` line.
    #[error("{at}: end of file while looking for `@{tag}` (multi-line value of `{name}`)")]
    UnterminatedMultiline {
        at: Location,
        name: String,
        tag: String,
    },
    /// An `error : message` line was reached (outside false conditional branches).
    #[error("{at}: error: {message}")]
    ErrorStatement { at: Location, message: String },
    /// `use CATEGORY : TEMPLATE` with an unknown category.
    #[error("{at}: use: unknown metaknob category `{category}`")]
    UnknownMetaknobCategory { at: Location, category: String },
    /// `use CATEGORY : TEMPLATE` with an unknown template.
    #[error("{at}: use {category}: unknown template `{name}`")]
    UnknownMetaknob {
        at: Location,
        category: String,
        name: String,
    },
    /// A malformed `use` line.
    #[error("{at}: invalid use line: {reason}")]
    BadUse { at: Location, reason: String },
    /// Macro expansion did not terminate (mutually recursive definitions).
    #[error("expansion of `{name}` does not terminate (recursive macro definitions?)")]
    Recursion { name: String },
}

impl ConfigError {
    /// Where the problem is, when it is tied to a line.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Unreadable { .. }
            | ConfigError::LocalUnreadable { .. }
            | ConfigError::Recursion { .. } => None,
            ConfigError::IllegalName { at, .. }
            | ConfigError::Unparseable { at, .. }
            | ConfigError::IncludeNotFound { at, .. }
            | ConfigError::IncludeTooDeep { at, .. }
            | ConfigError::IncludeKeyword { at, .. }
            | ConfigError::IncludeCommand { at, .. }
            | ConfigError::BadCondition { at, .. }
            | ConfigError::UnmatchedConditional { at, .. }
            | ConfigError::AfterElse { at, .. }
            | ConfigError::MissingEndif { at, .. }
            | ConfigError::UnterminatedMultiline { at, .. }
            | ConfigError::ErrorStatement { at, .. }
            | ConfigError::UnknownMetaknobCategory { at, .. }
            | ConfigError::UnknownMetaknob { at, .. }
            | ConfigError::BadUse { at, .. } => Some(at),
        }
    }
}
