//! The shadow's file rules: which files of the submit side make up a
//! job's input sandbox ([`plan_inputs`]), and where each output file the
//! starter sends back goes ([`output_path`]).
//!
//! HTCondor's semantics:
//! - the executable (`Cmd`) is transferred unless `TransferExecutable` is
//!   false, named by its base name; standard input (`In`) likewise unless
//!   it is `/dev/null` or undefined;
//! - `TransferInput` is a comma- or space-separated list of paths,
//!   relative to `Iwd`; each lands at the top level of the scratch
//!   directory under its base name; a directory `d` transfers itself
//!   (`d`, then `d/...`), `d/` transfers only its contents; URLs are not
//!   supported;
//! - `_condor_stdout`/`_condor_stderr` go to `Out`/`Err`;
//!   `TransferOutputRemaps` (`"a = b; c = /abs/d"`) renames outputs; a file
//!   named in `TransferOutput` with a directory part comes back under its
//!   base name; everything else keeps its path below `Iwd`.
//!
//! Reads the submit side's file system (metadata only); no network.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use classad::{ClassAd, Evaluator, Value};
use skua_proto::{EntryKind, InputEntry, STDERR_NAME, STDOUT_NAME};

/// HTCondor's HoldReasonCode for "the shadow could not read the job's
/// input files" (`TransferInputError`).
pub const HOLD_TRANSFER_INPUT_ERROR: i32 = 13;
/// HTCondor's HoldReasonCode for output that could not be stored
/// (`TransferOutputError`).
pub const HOLD_TRANSFER_OUTPUT_ERROR: i32 = 12;

/// Why a sandbox rule failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// An input file or directory does not exist (or cannot be read).
    #[error("cannot read input file {path}: {reason}")]
    Input {
        /// The path, as it is on the submit side.
        path: PathBuf,
        /// Why.
        reason: String,
        /// The errno of the failure (0 when none).
        errno: i64,
    },
    /// A URL in `TransferInput`.
    #[error("input {0} is not a valid URL")]
    Url(String),
    /// Two inputs would land at the same place in the scratch directory.
    #[error("two input files would both be named {0} in the job's scratch directory")]
    Duplicate(String),
    /// An output name that is absolute, empty, or climbs out with `..`.
    #[error("invalid output file name `{0}`: it must be a relative path without `..`")]
    BadName(String),
    /// The job ad lacks what the rule needs (`Iwd`, `Out`...).
    #[error("the job ad {0}")]
    Ad(String),
}

impl SandboxError {
    /// The HoldReasonCode for holding a job on this error.
    pub fn hold_reason_code(&self) -> i32 {
        match self {
            SandboxError::BadName(_) => HOLD_TRANSFER_OUTPUT_ERROR,
            _ => HOLD_TRANSFER_INPUT_ERROR,
        }
    }

    /// The errno behind it (HoldReasonSubCode), 0 when none.
    pub fn errno(&self) -> i64 {
        match self {
            SandboxError::Input { errno, .. } => *errno,
            _ => 0,
        }
    }
}

/// The input sandbox: the entries to announce to the starter, and for
/// each the file on the submit side to serve (`None` for directories).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputPlan {
    /// What the starter fetches, directories before their contents.
    pub entries: Vec<InputEntry>,
    /// `sources[i]` is the submit-side file of `entries[i]`.
    pub sources: Vec<Option<PathBuf>>,
}

impl InputPlan {
    fn add(&mut self, seen: &mut HashSet<String>, entry: InputEntry, source: Option<PathBuf>) {
        seen.insert(entry.path.clone());
        self.entries.push(entry);
        self.sources.push(source);
    }
}

/// A job attribute as a string (literal or evaluated in the job ad).
pub(crate) fn string_attr(job: &ClassAd, name: &str) -> Option<String> {
    match Evaluator::default().eval_attr(name, job, None) {
        Value::Undefined | Value::Error => None,
        v => v.as_string(),
    }
}

/// A job attribute as a boolean, `default` when undefined or not boolean.
fn bool_attr(job: &ClassAd, name: &str, default: bool) -> bool {
    match Evaluator::default().eval_attr(name, job, None) {
        Value::Bool(b) => b,
        v => v.as_int().map(|i| i != 0).unwrap_or(default),
    }
}

fn iwd(job: &ClassAd) -> Result<PathBuf, SandboxError> {
    string_attr(job, "Iwd")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| SandboxError::Ad("has no Iwd".into()))
}

/// Splits a `TransferInput`/`TransferOutput` list: commas and white space
/// separate items.
pub fn split_list(list: &str) -> Vec<String> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn mode_of(meta: &std::fs::Metadata) -> u32 {
    meta.permissions().mode() & 0o7777
}

fn base_name(path: &str) -> Option<String> {
    Path::new(path.trim_end_matches('/'))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

fn input_error(path: &Path, e: std::io::Error) -> SandboxError {
    SandboxError::Input {
        path: path.to_path_buf(),
        reason: if e.kind() == std::io::ErrorKind::NotFound {
            "no such file or directory".into()
        } else {
            e.to_string()
        },
        errno: e.raw_os_error().map(i64::from).unwrap_or(0),
    }
}

/// The input sandbox of `job`, checked against the submit side's file
/// system. A missing input is an error naming it.
pub fn plan_inputs(job: &ClassAd) -> Result<InputPlan, SandboxError> {
    let iwd = iwd(job)?;
    let mut plan = InputPlan::default();
    let mut seen = HashSet::new();

    if bool_attr(job, "TransferExecutable", true) {
        if let Some(cmd) = string_attr(job, "Cmd").filter(|c| !c.is_empty()) {
            let source = iwd.join(&cmd);
            let name = base_name(&cmd)
                .ok_or_else(|| SandboxError::Ad(format!("has a bad Cmd `{cmd}`")))?;
            let meta = std::fs::metadata(&source).map_err(|e| input_error(&source, e))?;
            if !meta.is_file() {
                return Err(SandboxError::Input {
                    path: source,
                    reason: "the executable is not a regular file".into(),
                    errno: 0,
                });
            }
            let entry = InputEntry {
                path: name,
                kind: EntryKind::File,
                size: meta.len(),
                mode: mode_of(&meta) | 0o700,
                executable: true,
                stdin: false,
                checkpoint: false,
            };
            plan.add(&mut seen, entry, Some(source));
        }
    }

    if let Some(input) = string_attr(job, "In").filter(|s| !s.is_empty() && s != "/dev/null") {
        let source = iwd.join(&input);
        let name =
            base_name(&input).ok_or_else(|| SandboxError::Ad(format!("has a bad In `{input}`")))?;
        let meta = std::fs::metadata(&source).map_err(|e| input_error(&source, e))?;
        if !meta.is_file() {
            return Err(SandboxError::Input {
                path: source,
                reason: "standard input is not a regular file".into(),
                errno: 0,
            });
        }
        if seen.contains(&name) {
            return Err(SandboxError::Duplicate(name));
        }
        let entry = InputEntry {
            path: name,
            kind: EntryKind::File,
            size: meta.len(),
            mode: mode_of(&meta),
            executable: false,
            stdin: true,
            checkpoint: false,
        };
        plan.add(&mut seen, entry, Some(source));
    }

    for item in string_attr(job, "TransferInput")
        .map(|l| split_list(&l))
        .unwrap_or_default()
    {
        if item.contains("://") {
            // a URL the execute side's file-transfer plugins fetch
            if url_like(&item) {
                continue;
            }
            return Err(SandboxError::Url(item));
        }
        let source = iwd.join(&item);
        let meta = std::fs::metadata(&source).map_err(|e| input_error(&source, e))?;
        if meta.is_dir() {
            if item.ends_with('/') {
                // the contents only, at the top level
                add_dir_contents(&mut plan, &mut seen, &source, "")?;
            } else {
                let name = base_name(&item)
                    .filter(|n| n != "." && n != "..")
                    .ok_or_else(|| SandboxError::Input {
                        path: source.clone(),
                        reason: "a directory needs a name".into(),
                        errno: 0,
                    })?;
                add_entry(&mut plan, &mut seen, &source, &meta, name.clone())?;
                add_dir_contents(&mut plan, &mut seen, &source, &name)?;
            }
        } else {
            let name = base_name(&item).ok_or_else(|| SandboxError::Input {
                path: source.clone(),
                reason: "not a file name".into(),
                errno: 0,
            })?;
            add_entry(&mut plan, &mut seen, &source, &meta, name)?;
        }
    }
    Ok(plan)
}

fn add_entry(
    plan: &mut InputPlan,
    seen: &mut HashSet<String>,
    source: &Path,
    meta: &std::fs::Metadata,
    path: String,
) -> Result<(), SandboxError> {
    if seen.contains(&path) {
        // the same directory reached twice is harmless; a second file of
        // the same name is not
        if meta.is_dir() {
            return Ok(());
        }
        return Err(SandboxError::Duplicate(path));
    }
    let (kind, size, source) = if meta.is_dir() {
        (EntryKind::Dir, 0, None)
    } else if meta.is_file() {
        (EntryKind::File, meta.len(), Some(source.to_path_buf()))
    } else {
        return Err(SandboxError::Input {
            path: source.to_path_buf(),
            reason: "not a regular file or directory".into(),
            errno: 0,
        });
    };
    let entry = InputEntry {
        path,
        kind,
        size,
        mode: mode_of(meta),
        executable: false,
        stdin: false,
        checkpoint: false,
    };
    plan.add(seen, entry, source);
    Ok(())
}

/// Adds the contents of `dir` below `prefix` ("" = the top level),
/// recursively, directories before their contents, names sorted. Symbolic
/// links to files are followed; links to directories are not descended
/// (no cycles).
fn add_dir_contents(
    plan: &mut InputPlan,
    seen: &mut HashSet<String>,
    dir: &Path,
    prefix: &str,
) -> Result<(), SandboxError> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| input_error(dir, e))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(|e| input_error(dir, e))?;
    names.sort();
    for name in names {
        let source = dir.join(&name);
        let name = name.to_string_lossy().into_owned();
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let link = std::fs::symlink_metadata(&source).map_err(|e| input_error(&source, e))?;
        let meta = std::fs::metadata(&source).map_err(|e| input_error(&source, e))?;
        if link.file_type().is_symlink() && meta.is_dir() {
            tracing::warn!(path = %source.display(), "not following a symbolic link to a directory in the input sandbox");
            continue;
        }
        add_entry(plan, seen, &source, &meta, path.clone())?;
        if meta.is_dir() {
            add_dir_contents(plan, seen, &source, &path)?;
        }
    }
    Ok(())
}

/// Whether `name` is a safe relative path: not empty, not absolute, no
/// `..` component.
pub fn is_safe_relative(name: &str) -> bool {
    !name.is_empty()
        && Path::new(name)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && Path::new(name)
            .components()
            .any(|c| matches!(c, Component::Normal(_)))
}

/// Parses `TransferOutputRemaps`: `"src = dst; src2 = dst2"`, with `\;`
/// and `\=` for literal `;` and `=`.
pub fn parse_remaps(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars();
    // split on unescaped ';', keeping escapes of '=' for the next step
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(';') => cur.push(';'),
                Some(n) => {
                    cur.push('\\');
                    cur.push(n);
                }
                None => cur.push('\\'),
            },
            ';' => items.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    items.push(cur);
    for item in items {
        let mut src = String::new();
        let mut dst = String::new();
        let mut in_dst = false;
        let mut chars = item.chars();
        while let Some(c) = chars.next() {
            let target = if in_dst { &mut dst } else { &mut src };
            match c {
                '\\' => match chars.next() {
                    Some(n) => target.push(n),
                    None => target.push('\\'),
                },
                '=' if !in_dst => in_dst = true,
                c => target.push(c),
            }
        }
        let (src, dst) = (src.trim().to_string(), dst.trim().to_string());
        if in_dst && !src.is_empty() && !dst.is_empty() {
            out.push((src, dst));
        }
    }
    out
}

/// Where the output file `name` (relative to the job's scratch directory,
/// as the starter sends it) goes on the submit side.
pub fn output_path(job: &ClassAd, name: &str) -> Result<PathBuf, SandboxError> {
    if !is_safe_relative(name) {
        return Err(SandboxError::BadName(name.to_string()));
    }
    let iwd = iwd(job)?;
    if name == STDOUT_NAME || name == STDERR_NAME {
        let attr = if name == STDOUT_NAME { "Out" } else { "Err" };
        let target = string_attr(job, attr)
            .filter(|s| !s.is_empty() && s != "/dev/null")
            .ok_or_else(|| SandboxError::Ad(format!("has no {attr} for {name}")))?;
        return Ok(iwd.join(target));
    }
    let remaps = string_attr(job, "TransferOutputRemaps")
        .map(|r| parse_remaps(&r))
        .unwrap_or_default();
    let base = base_name(name).unwrap_or_else(|| name.to_string());
    if let Some((_, dst)) = remaps
        .iter()
        .find(|(src, _)| src == name)
        .or_else(|| remaps.iter().find(|(src, _)| *src == base))
    {
        return Ok(iwd.join(dst));
    }
    // A file named with a directory part in TransferOutput comes back under
    // its base name; files of an output directory keep their path.
    let listed = string_attr(job, "TransferOutput")
        .map(|l| split_list(&l))
        .unwrap_or_default();
    if name.contains('/') && listed.iter().any(|l| l.trim_end_matches('/') == name) {
        return Ok(iwd.join(base));
    }
    Ok(iwd.join(name))
}

/// Whether `item` is a URL (`scheme://rest`) that the execute side fetches
/// with a file-transfer plugin.
fn url_like(item: &str) -> bool {
    item.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && !rest.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    fn job(iwd: &Path, extra: &str) -> ClassAd {
        let text = format!("[ Iwd = \"{}\"; {extra} ]", iwd.display());
        classad::parse_ad(&text).unwrap()
    }

    fn paths(plan: &InputPlan) -> Vec<(&str, EntryKind)> {
        plan.entries
            .iter()
            .map(|e| (e.path.as_str(), e.kind))
            .collect()
    }

    fn setup() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        fs::write(p.join("run.sh"), b"#!/bin/sh\necho hi\n").unwrap();
        fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(p.join("in.txt"), b"input").unwrap();
        fs::create_dir_all(p.join("data/sub")).unwrap();
        fs::write(p.join("data/a.bin"), [0u8, 1, 2, 255]).unwrap();
        fs::write(p.join("data/sub/b.txt"), b"bb").unwrap();
        fs::write(p.join("extra.cfg"), b"x=1").unwrap();
        d
    }

    #[test]
    fn executable_stdin_and_listed_files_with_directories_before_contents() {
        let d = setup();
        let j = job(
            d.path(),
            r#"Cmd = "run.sh"; In = "in.txt"; TransferInput = "data, extra.cfg""#,
        );
        let plan = plan_inputs(&j).unwrap();
        assert_eq!(
            paths(&plan),
            vec![
                ("run.sh", EntryKind::File),
                ("in.txt", EntryKind::File),
                ("data", EntryKind::Dir),
                ("data/a.bin", EntryKind::File),
                ("data/sub", EntryKind::Dir),
                ("data/sub/b.txt", EntryKind::File),
                ("extra.cfg", EntryKind::File),
            ]
        );
        assert!(plan.entries[0].executable && !plan.entries[0].stdin);
        assert_eq!(plan.entries[0].mode & 0o777, 0o755);
        assert!(plan.entries[1].stdin && !plan.entries[1].executable);
        assert_eq!(plan.entries[3].size, 4);
        assert_eq!(plan.sources[2], None);
        assert_eq!(plan.sources[3], Some(d.path().join("data/a.bin")));
        assert_eq!(plan.entries.len(), plan.sources.len());
    }

    #[test]
    fn trailing_slash_transfers_contents_only_and_paths_flatten_to_base_names() {
        let d = setup();
        let j = job(
            d.path(),
            r#"Cmd = "run.sh"; TransferExecutable = false; TransferInput = "data/ data/sub/b.txt""#,
        );
        let plan = plan_inputs(&j).unwrap();
        assert_eq!(
            paths(&plan),
            vec![
                ("a.bin", EntryKind::File),
                ("sub", EntryKind::Dir),
                ("sub/b.txt", EntryKind::File),
                ("b.txt", EntryKind::File),
            ]
        );
    }

    #[test]
    fn missing_inputs_urls_and_duplicates_are_errors_naming_the_file() {
        let d = setup();
        let err = plan_inputs(&job(d.path(), r#"Cmd = "nope.sh""#)).unwrap_err();
        assert!(err.to_string().contains("nope.sh"), "{err}");
        assert_eq!(err.hold_reason_code(), 13);
        let err = plan_inputs(&job(
            d.path(),
            r#"Cmd = "run.sh"; TransferInput = "in.txt, gone.dat""#,
        ))
        .unwrap_err();
        assert!(err.to_string().contains("gone.dat"), "{err}");
        // a URL is left to the execute side's plugins; a malformed one is
        // an error
        let plan = plan_inputs(&job(
            d.path(),
            r#"Cmd = "run.sh"; TransferInput = "http://example.org/x, in.txt""#,
        ))
        .unwrap();
        assert!(paths(&plan).iter().all(|(p, _)| !p.contains("example")));
        assert!(paths(&plan).iter().any(|(p, _)| *p == "in.txt"));
        let err = plan_inputs(&job(d.path(), r#"TransferInput = "://x""#)).unwrap_err();
        assert!(matches!(err, SandboxError::Url(_)), "{err}");
        fs::create_dir(d.path().join("other")).unwrap();
        fs::write(d.path().join("other/in.txt"), b"2").unwrap();
        let err =
            plan_inputs(&job(d.path(), r#"TransferInput = "in.txt other/in.txt""#)).unwrap_err();
        assert!(matches!(err, SandboxError::Duplicate(ref n) if n == "in.txt"));
        assert!(plan_inputs(&classad::parse_ad("[ Cmd = \"x\" ]").unwrap()).is_err());
    }

    #[test]
    fn no_transfer_of_executable_and_no_stdin_gives_an_empty_plan() {
        let d = setup();
        let plan = plan_inputs(&job(
            d.path(),
            r#"Cmd = "/bin/true"; TransferExecutable = false; In = "/dev/null""#,
        ))
        .unwrap();
        assert!(plan.entries.is_empty());
    }

    #[test]
    fn output_paths_follow_out_err_remaps_and_iwd() {
        let iwd = Path::new("/home/u/job");
        let j = job(
            iwd,
            r#"Out = "logs/out.txt"; Err = "/abs/err.txt";
               TransferOutput = "res/a.dat, outdir";
               TransferOutputRemaps = "x.dat = /tmp/y.dat; r.txt = sub/r2.txt; we\\;ird = w""#,
        );
        assert_eq!(
            output_path(&j, STDOUT_NAME).unwrap(),
            iwd.join("logs/out.txt")
        );
        assert_eq!(
            output_path(&j, STDERR_NAME).unwrap(),
            PathBuf::from("/abs/err.txt")
        );
        assert_eq!(
            output_path(&j, "x.dat").unwrap(),
            PathBuf::from("/tmp/y.dat")
        );
        assert_eq!(output_path(&j, "r.txt").unwrap(), iwd.join("sub/r2.txt"));
        assert_eq!(output_path(&j, "we;ird").unwrap(), iwd.join("w"));
        assert_eq!(output_path(&j, "plain.txt").unwrap(), iwd.join("plain.txt"));
        assert_eq!(output_path(&j, "res/a.dat").unwrap(), iwd.join("a.dat"));
        assert_eq!(output_path(&j, "outdir/f1").unwrap(), iwd.join("outdir/f1"));
        for bad in ["", "/etc/passwd", "../up", "a/../../b", "."] {
            assert!(
                matches!(output_path(&j, bad), Err(SandboxError::BadName(_))),
                "{bad}"
            );
        }
        let no_out = job(iwd, r#"Out = "/dev/null""#);
        assert!(output_path(&no_out, STDOUT_NAME).is_err());
    }

    #[test]
    fn remap_parsing() {
        assert_eq!(
            parse_remaps(" a = b ;c=/d/e; bad; =x; f\\=g = h"),
            vec![
                ("a".into(), "b".into()),
                ("c".into(), "/d/e".into()),
                ("f=g".into(), "h".into())
            ]
        );
    }
}
