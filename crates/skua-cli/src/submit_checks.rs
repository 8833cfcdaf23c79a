//! The submit-time file checks of `skua submit` (condor_submit's): the executable of every
//! job is looked at before anything is queued, and with `SUBMIT_SKIP_FILECHECKS = false` (or
//! `skip_filechecks = false` in the description) the input files too.
//!
//! The executable is checked when it travels with the job: not when `transfer_executable =
//! false` (it is then a path on the execute side's shared file system) and not when its name
//! holds a `$$(` substitution (it is only known at match time). A file that cannot be opened,
//! an empty file and a script whose first line ends in CRLF are errors (`-allow-crlf-script`
//! makes the last a warning; `skip_filechecks = warn` all of them). The user runs the tool, so
//! the files are opened with the user's own rights.

use std::io::Read;
use std::path::Path;

/// How the checks go, from the description's `skip_filechecks` and the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckMode {
    /// No checks at all (`skip_filechecks = true`).
    pub skip_all: bool,
    /// Problems with the executable are warnings, not errors (`skip_filechecks = warn`).
    pub warn_only: bool,
    /// Input files are checked too (`SUBMIT_SKIP_FILECHECKS = false`, or
    /// `skip_filechecks = false`).
    pub inputs: bool,
    /// A script with CRLF line endings is a warning (`-allow-crlf-script`).
    pub allow_crlf: bool,
}

impl CheckMode {
    /// The mode for a description whose `skip_filechecks` is `command` (if set), with the
    /// configuration's `SUBMIT_SKIP_FILECHECKS` = `knob_skip`.
    pub fn new(command: Option<&str>, knob_skip: bool, allow_crlf: bool) -> Result<Self, String> {
        let mut mode = CheckMode {
            skip_all: false,
            warn_only: false,
            inputs: !knob_skip,
            allow_crlf,
        };
        match command.map(str::to_ascii_lowercase).as_deref() {
            None => {}
            Some("warn") => {
                mode.warn_only = true;
            }
            Some("true" | "yes" | "1") => {
                mode.skip_all = true;
                mode.inputs = false;
            }
            Some("false" | "no" | "0") => mode.inputs = true,
            Some(other) => {
                return Err(format!(
                    "SUBMIT_CMD_skip_filechecks={other} is invalid, must be 'warn' or a boolean"
                ))
            }
        }
        Ok(mode)
    }
}

/// What the checks found: the errors stop the submission, the warnings are printed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// The text of an errno, without Rust's " (os error N)".
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn string_attr(ad: &classad::ClassAd, name: &str) -> Option<String> {
    match ad.lookup(name) {
        Some(classad::Expr::Lit(v @ classad::Value::Str(_))) => v.as_string(),
        _ => None,
    }
}

fn false_attr(ad: &classad::ClassAd, name: &str) -> bool {
    matches!(
        ad.lookup(name),
        Some(classad::Expr::Lit(classad::Value::Bool(false)))
    )
}

/// What is wrong with the executable at `path` (none when nothing is): an error, or with
/// `crlf_warning` a warning.
fn check_executable(path: &Path, mode: CheckMode, out: &mut Findings) {
    let shown = path.display();
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            return push(
                out,
                !mode.warn_only,
                format!("Can't access executable file {shown}: {}", strerror(&e)),
            )
        }
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return push(
            out,
            !mode.warn_only,
            format!("Executable file {shown} has zero length"),
        );
    }
    let mut head = [0u8; 4096];
    let n = file.read(&mut head).unwrap_or(0);
    if crlf_script(&head[..n]) {
        push(
            out,
            !(mode.warn_only || mode.allow_crlf),
            format!(
                "Executable file {shown} is a script with CRLF (DOS/Windows) line endings. \
                 Its interpreter line would name a program with a carriage return; convert it \
                 (dos2unix {shown}, say) before submitting again, or submit with \
                 -allow-crlf-script if it really works."
            ),
        );
    }
}

/// A script (`#!`) whose first line ends in CR LF.
pub fn crlf_script(head: &[u8]) -> bool {
    if !head.starts_with(b"#!") {
        return false;
    }
    match head.iter().position(|&b| b == b'\n') {
        Some(i) => i > 0 && head[i - 1] == b'\r',
        None => false,
    }
}

fn push(out: &mut Findings, error: bool, text: String) {
    if error {
        out.errors.push(text);
    } else {
        out.warnings.push(text);
    }
}

/// Checks the files of `jobs` as `mode` says. Each distinct file is looked at once.
pub fn check<'a>(
    jobs: impl IntoIterator<Item = &'a classad::ClassAd>,
    mode: CheckMode,
) -> Findings {
    let mut out = Findings::default();
    if mode.skip_all {
        return out;
    }
    let mut seen = std::collections::BTreeSet::new();
    for job in jobs {
        let iwd = string_attr(job, "Iwd").unwrap_or_else(|| "/".to_string());
        let iwd = Path::new(&iwd);
        if let Some(cmd) = string_attr(job, "Cmd").filter(|c| !c.is_empty()) {
            let travels = !false_attr(job, "TransferExecutable");
            if travels && !cmd.contains("$$(") {
                let path = iwd.join(&cmd);
                if seen.insert(("exe", path.clone())) {
                    check_executable(&path, mode, &mut out);
                }
            }
        }
        if !mode.inputs {
            continue;
        }
        let mut inputs: Vec<String> = Vec::new();
        if let Some(list) = string_attr(job, "TransferInput") {
            inputs.extend(
                list.split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(str::to_string),
            );
        }
        if let Some(stdin) = string_attr(job, "In").filter(|i| i != "/dev/null") {
            inputs.push(stdin);
        }
        for name in inputs {
            if name.contains("://") || name.contains("$$(") {
                continue;
            }
            let path = iwd.join(&name);
            if !seen.insert(("in", path.clone())) {
                continue;
            }
            if let Err(e) = std::fs::File::open(&path) {
                out.errors.push(format!(
                    "Can't open \"{}\"  with flags 00 ({})",
                    path.display(),
                    strerror(&e)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> classad::ClassAd {
        classad::parse_ad(text).expect("ad")
    }

    fn mode() -> CheckMode {
        CheckMode::new(None, true, false).expect("mode")
    }

    #[test]
    fn skip_filechecks_values_are_htcondors() {
        assert!(CheckMode::new(Some("True"), false, false).unwrap().skip_all);
        assert!(CheckMode::new(Some("warn"), true, false).unwrap().warn_only);
        assert!(CheckMode::new(Some("false"), true, false).unwrap().inputs);
        assert!(!CheckMode::new(None, true, false).unwrap().inputs);
        assert!(CheckMode::new(None, false, false).unwrap().inputs);
        let e = CheckMode::new(Some("maybe"), true, false).unwrap_err();
        assert_eq!(
            e,
            "SUBMIT_CMD_skip_filechecks=maybe is invalid, must be 'warn' or a boolean"
        );
    }

    #[test]
    fn crlf_is_seen_on_the_first_line_of_a_script_only() {
        assert!(crlf_script(b"#!/bin/sh\r\necho\r\n"));
        assert!(!crlf_script(b"#!/bin/sh\necho\r\n"));
        assert!(!crlf_script(b"\x7fELF\r\n"));
    }

    #[test]
    fn the_executable_is_checked_unless_it_stays_or_waits_for_the_match() {
        struct Gone(std::path::PathBuf);
        impl Drop for Gone {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let dir = std::env::temp_dir().join(format!("skua-checks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _gone = Gone(dir.clone());
        std::fs::write(dir.join("empty"), "").unwrap();
        std::fs::write(dir.join("dos.sh"), "#!/bin/sh\r\necho hi\r\n").unwrap();
        std::fs::write(dir.join("ok.sh"), "#!/bin/sh\necho hi\n").unwrap();
        let d = dir.display();
        let ad =
            |cmd: &str, extra: &str| job(&format!("[Iwd = \"{d}\"; Cmd = \"{cmd}\"; {extra}]"));
        let f = check(&[ad("missing", "")], mode());
        assert_eq!(
            f.errors,
            vec![format!(
                "Can't access executable file {d}/missing: No such file or directory"
            )]
        );
        let f = check(&[ad("empty", "")], mode());
        assert_eq!(
            f.errors,
            vec![format!("Executable file {d}/empty has zero length")]
        );
        let f = check(&[ad("dos.sh", "")], mode());
        assert!(
            f.errors[0].contains("CRLF (DOS/Windows) line endings"),
            "{f:?}"
        );
        let crlf_ok = CheckMode::new(None, true, true).unwrap();
        let f = check(&[ad("dos.sh", "")], crlf_ok);
        assert!(f.errors.is_empty() && f.warnings.len() == 1, "{f:?}");
        let warn = CheckMode::new(Some("warn"), true, false).unwrap();
        let f = check(&[ad("missing", "")], warn);
        assert!(f.errors.is_empty() && f.warnings.len() == 1, "{f:?}");
        // not transferred, or named at match time: not looked at
        assert_eq!(
            check(&[ad("missing", "TransferExecutable = false")], mode()),
            Findings::default()
        );
        assert_eq!(check(&[ad("$$(Prog)", "")], mode()), Findings::default());
        assert_eq!(check(&[ad("ok.sh", "")], mode()), Findings::default());
        // inputs only when asked for
        let inputs = ad("ok.sh", "TransferInput = \"ok.sh, gone.txt, http://x/y\"");
        assert_eq!(
            check(std::slice::from_ref(&inputs), mode()),
            Findings::default()
        );
        let f = check(
            &[inputs],
            CheckMode::new(Some("false"), true, false).unwrap(),
        );
        assert_eq!(
            f.errors,
            vec![format!(
                "Can't open \"{d}/gone.txt\"  with flags 00 (No such file or directory)"
            )]
        );
    }
}
