//! Measuring the machine: CPUs, memory, the execute directory's free disk,
//! the operating system, the load average and the keyboard and console
//! idle times (from the access times of terminals and input devices, as
//! HTCondor does).

use std::path::Path;
use std::time::SystemTime;

use skua_slot::MachineFacts;

/// What the measurement needs from the configuration.
#[derive(Clone, Debug)]
pub struct FactSources {
    /// `$(EXECUTE)`.
    pub execute: std::path::PathBuf,
    /// `CONSOLE_DEVICES` (names under `/dev`).
    pub console_devices: Vec<String>,
    pub hostname: String,
    pub filesystem_domain: String,
    pub uid_domain: String,
    pub start_time: i64,
    /// The transparent checkpoint backends found at start-up
    /// ([`detect_checkpoint_backends`]).
    pub checkpoint: skua_starter::backend::Detected,
    /// The file-transfer plugins' schemes, queried at start-up.
    pub transfer_plugin_methods: Vec<String>,
}

/// `SKUA_CHECKPOINT_BACKENDS` when unset: CRIU, where its check passes.
pub const DEFAULT_CHECKPOINT_BACKENDS: &str = "criu";

/// Checks the transparent checkpoint backends the configuration names
/// (`SKUA_CHECKPOINT_BACKENDS`, default [`DEFAULT_CHECKPOINT_BACKENDS`];
/// `none`: none) with the `criu` program `SKUA_CRIU` (default `criu`, looked
/// up in `PATH`). Blocking (it runs `criu check`): once, at start-up. A
/// backend that fails its check is logged with the reason and not
/// advertised. Without the pool signing key (`can_seal` false) none is:
/// the starter seals the images with it and restores only sealed ones.
pub fn detect_checkpoint_backends(
    configured: Option<&str>,
    criu: Option<&str>,
    can_seal: bool,
) -> skua_starter::backend::Detected {
    // (an empty value is an undefined one: `none` turns them off)
    let names: Vec<String> =
        skua_daemon::security::split_list(configured.unwrap_or(DEFAULT_CHECKPOINT_BACKENDS))
            .into_iter()
            .filter(|n| !n.eq_ignore_ascii_case("none") && !n.eq_ignore_ascii_case("false"))
            .collect();
    if !can_seal {
        if !names.is_empty() {
            tracing::info!("no checkpoint backend offered: no pool signing key (SEC_TOKEN_POOL_SIGNING_KEY_FILE) to seal their images with");
        }
        return skua_starter::backend::Detected {
            unavailable: names
                .into_iter()
                .map(|n| (n, "no pool signing key to seal its images".to_string()))
                .collect(),
            ..Default::default()
        };
    }
    let criu = criu
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or(skua_starter::backend::CRIU);
    let found = skua_starter::backend::detect(&names, Path::new(criu));
    for (name, reason) in &found.unavailable {
        tracing::info!(backend = %name, %reason, "checkpoint backend not offered");
    }
    for name in &found.backends {
        tracing::info!(backend = %name, platform = %found.platform, "checkpoint backend offered");
    }
    found
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `MemTotal` of `/proc/meminfo`, MB.
fn memory_mb() -> Option<i64> {
    let text = read("/proc/meminfo")?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// Free space for unprivileged users in `dir`, KB.
fn disk_kb(dir: &Path) -> Option<i64> {
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    let bytes = (st.blocks_available() as u128) * (st.fragment_size() as u128);
    i64::try_from(bytes / 1024).ok()
}

fn load_avg() -> f64 {
    read("/proc/loadavg")
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

fn uptime_secs() -> i64 {
    read("/proc/uptime")
        .and_then(|t| {
            t.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|f| f as i64)
        .unwrap_or(0)
}

/// Seconds since the most recent access of any of `paths` (`None` when
/// none can be read).
fn idle_of(paths: &[std::path::PathBuf], now: SystemTime) -> Option<i64> {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok()?.accessed().ok())
        .map(|t| {
            now.duration_since(t)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        })
        .min()
}

fn dev_entries(dir: &str, keep: impl Fn(&str) -> bool) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_str().is_some_and(&keep))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// `/etc/os-release` as `OpSysName`, `OpSysMajorVer`, `OpSysAndVer`,
/// `OpSysLongName`.
fn os_release(opsys: &str) -> (String, i64, String, String) {
    let text = read("/etc/os-release").unwrap_or_default();
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim().trim_matches('"').to_string())
    };
    let name = get("NAME")
        .map(|n| n.split_whitespace().next().unwrap_or("").to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| opsys.to_string());
    let major: i64 = get("VERSION_ID")
        .and_then(|v| v.split('.').next().and_then(|m| m.parse().ok()))
        .unwrap_or(0);
    let long = get("PRETTY_NAME").unwrap_or_else(|| name.clone());
    (name.clone(), major, format!("{name}{major}"), long)
}

/// Measures the machine now.
pub fn measure(src: &FactSources) -> MachineFacts {
    // the system's time, not the daemon's clock: idle times compare the
    // devices' real access times with it
    let now = SystemTime::now();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as i64)
        .unwrap_or(1);
    let (arch, opsys) = match nix::sys::utsname::uname() {
        Ok(u) => (
            u.machine().to_string_lossy().to_ascii_uppercase(),
            u.sysname().to_string_lossy().to_ascii_uppercase(),
        ),
        Err(_) => ("X86_64".into(), "LINUX".into()),
    };
    let arch = match arch.as_str() {
        "AMD64" => "X86_64".to_string(),
        "ARM64" => "AARCH64".to_string(),
        _ => arch,
    };
    let (opsys_name, opsys_major_ver, opsys_and_ver, opsys_long_name) = os_release(&opsys);
    // HTCondor: the console devices (CONSOLE_DEVICES) count for both; the
    // terminals (/dev/tty*, /dev/pts/*) for the keyboard only.
    let mut console: Vec<std::path::PathBuf> = src
        .console_devices
        .iter()
        .map(|d| Path::new("/dev").join(d))
        .collect();
    console.extend(dev_entries("/dev/input", |n| {
        n.starts_with("mouse") || n.starts_with("event") || n == "mice"
    }));
    let mut ttys = dev_entries("/dev", |n| n.starts_with("tty"));
    ttys.extend(dev_entries("/dev/pts", |n| {
        n.chars().all(|c| c.is_ascii_digit())
    }));
    let never = uptime_secs();
    let console_idle = idle_of(&console, now).unwrap_or(never);
    let keyboard_idle = idle_of(&ttys, now).unwrap_or(never).min(console_idle);
    MachineFacts {
        cpus,
        memory_mb: memory_mb().unwrap_or(1024),
        disk_kb: disk_kb(&src.execute).unwrap_or(0),
        arch,
        opsys,
        opsys_and_ver,
        opsys_name,
        opsys_major_ver,
        opsys_long_name,
        load_avg: load_avg(),
        keyboard_idle,
        console_idle,
        hostname: src.hostname.clone(),
        filesystem_domain: src.filesystem_domain.clone(),
        uid_domain: src.uid_domain.clone(),
        mips: None,
        kflops: None,
        start_time: src.start_time,
        condor_version: skua_proto::CONDOR_VERSION.to_string(),
        checkpoint_backends: src.checkpoint.backends.clone(),
        checkpoint_platform: src.checkpoint.platform.clone(),
        transfer_plugin_methods: src.transfer_plugin_methods.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn measures_this_machine() {
        let dir = tempfile::tempdir().unwrap();
        let f = measure(&FactSources {
            execute: dir.path().to_path_buf(),
            console_devices: vec!["console".into()],
            hostname: "h".into(),
            filesystem_domain: "fs".into(),
            uid_domain: "uid".into(),
            start_time: 7,
            checkpoint: Default::default(),
            transfer_plugin_methods: Vec::new(),
        });
        assert!(f.cpus >= 1);
        assert!(f.memory_mb > 0);
        assert!(f.disk_kb > 0);
        assert_eq!(f.opsys, "LINUX");
        assert!(!f.arch.is_empty() && f.arch == f.arch.to_ascii_uppercase());
        assert!(f.keyboard_idle >= 0 && f.console_idle >= 0);
        assert_eq!((f.hostname.as_str(), f.start_time), ("h", 7));
        assert!(f.checkpoint_backends.is_empty());
    }

    /// A fake `criu` whose `check` exits with `rc`.
    fn fake_criu(dir: &Path, rc: i32) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("criu");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n  check) echo 'Error (criu/vdso.c:613): vdso: Failed to fill self vdso symtable' >&2; exit {rc} ;;\n  --version) echo 'Version: 3.19'; exit 0 ;;\nesac\nexit 3\n"
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    #[test]
    fn criu_is_offered_only_where_its_check_passes() {
        let dir = tempfile::tempdir().unwrap();
        let passing = fake_criu(dir.path(), 0);
        let found = detect_checkpoint_backends(None, Some(&passing), true);
        assert_eq!(found.backends, vec!["criu".to_string()]);
        assert!(
            found.platform.starts_with("criu-3.19 linux-"),
            "{}",
            found.platform
        );
        let f = measure(&FactSources {
            execute: dir.path().to_path_buf(),
            console_devices: vec![],
            hostname: "h".into(),
            filesystem_domain: "fs".into(),
            uid_domain: "uid".into(),
            start_time: 7,
            checkpoint: found,
            transfer_plugin_methods: Vec::new(),
        });
        assert_eq!(f.checkpoint_backends, vec!["criu".to_string()]);
        assert!(f.checkpoint_platform.starts_with("criu-3.19"));

        // turned off by the administrator
        assert!(
            detect_checkpoint_backends(Some("none"), Some(&passing), true)
                .backends
                .is_empty()
        );
        // no signing key to seal images with
        let found = detect_checkpoint_backends(None, Some(&passing), false);
        assert!(found.backends.is_empty());
        assert!(found.unavailable[0].1.contains("signing key"), "{found:?}");
        // check fails (this kernel's vDSO, say), or no criu at all
        let failing_dir = tempfile::tempdir().unwrap();
        let failing = fake_criu(failing_dir.path(), 1);
        let found = detect_checkpoint_backends(Some("criu"), Some(&failing), true);
        assert!(found.backends.is_empty());
        assert!(found.unavailable[0].1.contains("vdso"), "{:?}", found);
        let absent = dir.path().join("no-criu").display().to_string();
        assert!(detect_checkpoint_backends(None, Some(&absent), true)
            .backends
            .is_empty());
    }
}
