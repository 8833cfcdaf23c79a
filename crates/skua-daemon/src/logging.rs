//! Structured logs per daemon: `$(LOG)/<Subsys>Log`, rotated daily with the
//! last `MAX_<SUBSYS>_LOG_FILES` (default 7) kept, level from
//! `<SUBSYS>_DEBUG` / `SKUA_LOG` (an `EnvFilter` directive, default `info`).
//!
//! Logs name users, their jobs and arguments: every log file is readable
//! and writable by the daemon's user only (0600). Existing files of the
//! daemon's log are tightened at start-up, and each day's file is created
//! with that mode before the appender opens it (a day ahead, checked every
//! ten minutes). The log directory itself stays searchable: the daemons'
//! address files and sockets live there by default, and other users must
//! reach them.

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

/// Where a daemon logs: the configuration's `<SUBSYS>_LOG` (`SCHEDD_LOG = $(LOG)/SchedLog`)
/// when set, else `log_dir/<Subsys>Log`; the directory and the file name (the daily files'
/// prefix).
pub fn log_location(
    log_dir: &Path,
    subsystem: &str,
    configured: Option<&str>,
) -> (std::path::PathBuf, String) {
    if let Some(path) = configured.map(str::trim).filter(|p| !p.is_empty()) {
        let path = Path::new(path);
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
            let dir = if dir.as_os_str().is_empty() {
                log_dir.to_path_buf()
            } else {
                log_dir.join(dir)
            };
            return (dir, name.to_string_lossy().into_owned());
        }
    }
    (log_dir.to_path_buf(), log_file_name(subsystem))
}

/// Installs the global subscriber writing daily files `prefix.<date>` in `log_dir`.
pub fn init(log_dir: &Path, prefix: &str, filter: &str, keep: usize) -> anyhow::Result<LogGuard> {
    let prefix = prefix.to_string();
    prepare_log_files(log_dir, &prefix, unix_now());
    {
        let (dir, prefix) = (log_dir.to_path_buf(), prefix.clone());
        let _ = std::thread::Builder::new()
            .name("log-files".into())
            .spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_secs(600));
                prepare_log_files(&dir, &prefix, unix_now());
            });
    }
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix(&prefix)
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

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Opens `path` for appending (a daemon's standard output and error),
/// creating it readable and writable by its owner only (0600) and taking
/// away the access of the group and others if it existed.
pub fn open_private_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    make_private(path)?;
    Ok(f)
}

/// Takes away any access of the group and others from `path`.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}

/// The UTC calendar date (year, month, day) of a Unix time.
fn utc_date(secs: i64) -> (i64, u32, u32) {
    // days since 1970-01-01 to a civil date (the proleptic Gregorian
    // calendar, eras of 400 years)
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The daily log file of `prefix` for the UTC day of `secs`, as the
/// appender names it (`SchedLog.2026-11-21`).
fn daily_name(prefix: &str, secs: i64) -> String {
    let (y, m, d) = utc_date(secs);
    format!("{prefix}.{y:04}-{m:02}-{d:02}")
}

/// Makes every file of the log `prefix` in `dir` private, and creates
/// today's and tomorrow's files (0600) so that the appender, which opens
/// them with the process's default mode, finds them already private.
/// Failures are ignored: logging must not stop a daemon.
fn prepare_log_files(dir: &Path, prefix: &str, now: i64) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name == prefix || name.starts_with(&format!("{prefix}.")) {
                let _ = make_private(&e.path());
            }
        }
    }
    for secs in [now, now + 86_400] {
        let _ = open_private_append(&dir.join(daily_name(prefix, secs)));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn htcondor_log_names() {
        assert_eq!(super::log_file_name("COLLECTOR"), "CollectorLog");
        assert_eq!(super::log_file_name("master"), "MasterLog");
        let dir = std::path::Path::new("/var/log/skua");
        assert_eq!(
            super::log_location(dir, "SCHEDD", Some("/var/log/skua/SchedLog")),
            (dir.to_path_buf(), "SchedLog".to_string())
        );
        assert_eq!(
            super::log_location(dir, "SCHEDD", None),
            (dir.to_path_buf(), "ScheddLog".to_string())
        );
        assert_eq!(
            super::log_location(dir, "STARTD", Some("other/StartLog")),
            (dir.join("other"), "StartLog".to_string())
        );
    }

    #[test]
    fn daily_names_are_the_appenders() {
        assert_eq!(super::utc_date(0), (1970, 1, 1));
        assert_eq!(super::utc_date(951_782_400), (2000, 2, 29));
        // 2026-11-21 12:00:00 UTC and the last second of 2026
        assert_eq!(
            super::daily_name("SchedLog", 1_795_262_400),
            "SchedLog.2026-11-21"
        );
        assert_eq!(super::utc_date(1_798_761_599), (2026, 12, 31));
    }

    #[test]
    fn log_files_are_private_old_and_new() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let old = dir.path().join("SchedLog.2020-01-01");
        std::fs::write(&old, "user alice ran /bin/secret --password x\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let other = dir.path().join(".schedd_address");
        std::fs::write(&other, "<127.0.0.1:1>\n").unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o644)).unwrap();
        let now = 1_795_262_400;
        super::prepare_log_files(dir.path(), "SchedLog", now);
        assert_eq!(mode(&old), 0o600);
        // the address file is not a log: others must still read it
        assert_eq!(mode(&other), 0o644);
        for day in ["SchedLog.2026-11-21", "SchedLog.2026-11-22"] {
            assert_eq!(mode(&dir.path().join(day)), 0o600, "{day}");
        }
        let out = dir.path().join("schedd.out");
        std::fs::write(&out, "").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o664)).unwrap();
        drop(super::open_private_append(&out).unwrap());
        assert_eq!(mode(&out), 0o600);
        let fresh = dir.path().join("startd.out");
        drop(super::open_private_append(&fresh).unwrap());
        assert_eq!(mode(&fresh), 0o600);
    }
}
