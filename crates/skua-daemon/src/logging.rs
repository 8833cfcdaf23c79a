//! Structured logs per daemon: `$(LOG)/<Subsys>Log`, rotated daily with the
//! last `MAX_<SUBSYS>_LOG_FILES` (default 7) kept, level from
//! `<SUBSYS>_DEBUG` / `SKUA_LOG` (an `EnvFilter` directive, default `info`).

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};

/// Keeps the background log writer alive; drop it last.
pub struct LogGuard {
    _guard: WorkerGuard,
}

/// The log file name of a subsystem, HTCondor style: `COLLECTOR` ->
/// `CollectorLog`.
pub fn log_file_name(subsystem: &str) -> String {
    let lower = subsystem.to_ascii_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(c) => format!("{}{}Log", c.to_ascii_uppercase(), chars.as_str()),
        None => "Log".to_string(),
    }
}

/// Installs the global subscriber writing to `log_dir`.
pub fn init(
    log_dir: &Path,
    subsystem: &str,
    filter: &str,
    keep: usize,
) -> anyhow::Result<LogGuard> {
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix(log_file_name(subsystem))
        .max_log_files(keep.max(1))
        .build(log_dir)?;
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A second initialisation (tests running several daemons in one
    // process) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init();
    Ok(LogGuard { _guard: guard })
}

#[cfg(test)]
mod tests {
    #[test]
    fn htcondor_log_names() {
        assert_eq!(super::log_file_name("COLLECTOR"), "CollectorLog");
        assert_eq!(super::log_file_name("master"), "MasterLog");
    }
}
