//! File-transfer plugins (HTCondor's interface): a program that answers
//! `-classad` with one ad naming the URL schemes it serves
//! (`SupportedMethods`), and moves files with
//! `-infile F -outfile F.out [-upload]`: `F` holds one new-style ad per
//! file (`URL`, `LocalFileName`), the plugin writes one result ad per file
//! to `F.out` (`TransferFileName`, `TransferURL`, `TransferSuccess`,
//! `TransferError`, ...) and exits 0 when all went well.
//!
//! The built-in plugins (`file`, `http`) are the same interface: `skuad
//! transfer_plugin` ([`builtin_main`]); site plugins (`FILETRANSFER_PLUGINS`)
//! and the job's own (`TransferPlugins`) override them scheme by scheme.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use classad::{ClassAd, Value};

/// HTCondor's `MAX_FILE_TRANSFER_PLUGIN_LIFETIME` default (seconds).
pub const DEFAULT_PLUGIN_LIFETIME: u64 = 72000;
/// The subcode of a plugin that ran out of time (ETIME).
pub const ETIME: i64 = 62;
/// The most of a plugin's result file read.
const MAX_RESULT_BYTES: u64 = 16 << 20;
/// How long a `-classad` query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(20);

/// A plugin program and the arguments before HTCondor's (the built-in one
/// is `skuad transfer_plugin`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plugin {
    pub program: PathBuf,
    pub prefix: Vec<String>,
}

impl Plugin {
    pub fn site(path: &str) -> Plugin {
        Plugin {
            program: PathBuf::from(path),
            prefix: Vec::new(),
        }
    }
    /// The built-in plugin: this program run as `transfer_plugin`.
    pub fn builtin(skuad: PathBuf) -> Plugin {
        Plugin {
            program: skuad,
            prefix: vec!["transfer_plugin".into()],
        }
    }
    fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.program);
        c.args(&self.prefix);
        c
    }
}

/// Which plugin serves each scheme.
#[derive(Clone, Debug, Default)]
pub struct PluginTable {
    pub by_scheme: BTreeMap<String, Plugin>,
}

impl PluginTable {
    /// Asks the built-in plugin and each of `site` (in order: a later one
    /// wins a scheme) for their schemes. Blocking. A plugin whose query
    /// fails is left out, with a log line.
    pub fn discover(builtin: Option<Plugin>, site: &[String]) -> PluginTable {
        let mut table = PluginTable::default();
        let plugins = builtin
            .into_iter()
            .chain(site.iter().map(|p| Plugin::site(p)));
        for plugin in plugins {
            match query(&plugin) {
                Ok(methods) => {
                    tracing::debug!(plugin = %plugin.program.display(), ?methods, "file-transfer plugin");
                    for m in methods {
                        table.by_scheme.insert(m, plugin.clone());
                    }
                }
                Err(e) => tracing::warn!(
                    plugin = %plugin.program.display(),
                    error = %e,
                    "file-transfer plugin left out: its -classad query failed"
                ),
            }
        }
        table
    }

    /// The schemes served, sorted, as `HasFileTransferPluginMethods`.
    pub fn methods(&self) -> Vec<String> {
        self.by_scheme.keys().cloned().collect()
    }
}

/// `FILETRANSFER_PLUGINS` as a list of paths.
pub fn site_plugins(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or("")
        .split([',', ' ', '\t', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Runs `plugin -classad`; its `SupportedMethods`, lower-case.
pub fn query(plugin: &Plugin) -> Result<Vec<String>, String> {
    let mut cmd = plugin.command();
    cmd.arg("-classad")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().map_err(|e| format!("cannot run it: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(QUERY_TIMEOUT) {
        Ok(r) => r.map_err(|e| e.to_string())?,
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            return Err("no answer in time".into());
        }
    };
    if !out.status.success() {
        return Err(format!("it exited with {}", out.status));
    }
    parse_capabilities(&String::from_utf8_lossy(&out.stdout))
}

/// The schemes of a `-classad` answer (an old-style ad).
pub fn parse_capabilities(text: &str) -> Result<Vec<String>, String> {
    let ad = classad::parse_old_ad(text).map_err(|e| format!("its ad does not parse: {e}"))?;
    let s = |n: &str| crate::plan::string_attr(&ad, n);
    if let Some(t) = s("PluginType") {
        if !t.eq_ignore_ascii_case("FileTransfer") {
            return Err(format!("PluginType is {t}, not FileTransfer"));
        }
    }
    let methods: Vec<String> = s("SupportedMethods")
        .ok_or("its ad has no SupportedMethods")?
        .split(',')
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty())
        .collect();
    if methods.is_empty() {
        return Err("SupportedMethods is empty".into());
    }
    Ok(methods)
}

/// One file for a plugin: the URL and the local path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub url: String,
    pub local: String,
}

/// The `-infile` text: one new-style ad per item.
pub fn request_text(items: &[Item]) -> String {
    let mut out = String::new();
    for i in items {
        let mut ad = ClassAd::new();
        ad.insert_value("URL", i.url.as_str());
        ad.insert_value("LocalFileName", i.local.as_str());
        out.push_str(&classad::unparse_ad(&ad));
        out.push('\n');
    }
    out
}

/// One result ad from a plugin's `-outfile`.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferResult {
    pub file: String,
    pub url: String,
    pub success: bool,
    pub error: Option<String>,
    pub bytes: Option<i64>,
}

/// The new-style ads of `text`, one after another (whitespace between).
pub fn parse_ads(text: &str) -> Result<Vec<ClassAd>, String> {
    let mut ads = Vec::new();
    let bytes = text.as_bytes();
    let (mut depth, mut start, mut in_str, mut escaped) = (0usize, None, None::<u8>, false);
    for (i, &b) in bytes.iter().enumerate() {
        if let Some(q) = in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == q {
                in_str = None;
            }
            continue;
        }
        match b {
            b'"' | b'\'' => in_str = Some(b),
            b'[' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            b']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unbalanced ']' at byte {i}"))?;
                if depth == 0 {
                    let s = start.take().unwrap_or(0);
                    let ad = classad::parse_ad(&text[s..=i])
                        .map_err(|e| format!("a result ad does not parse: {e}"))?;
                    ads.push(ad);
                }
            }
            c if depth == 0 && !c.is_ascii_whitespace() => {
                return Err(format!("unexpected text at byte {i} between ads"));
            }
            _ => {}
        }
    }
    if depth != 0 || in_str.is_some() {
        return Err("the last ad is cut short".into());
    }
    Ok(ads)
}

/// The result ads of an `-outfile`.
pub fn parse_results(text: &str) -> Result<Vec<TransferResult>, String> {
    parse_ads(text)?
        .iter()
        .map(|ad| {
            let s = |n: &str| crate::plan::string_attr(ad, n);
            let success = match classad::Evaluator::default().eval_attr("TransferSuccess", ad, None)
            {
                Value::Bool(b) => b,
                _ => return Err("a result ad has no boolean TransferSuccess".to_string()),
            };
            Ok(TransferResult {
                file: s("TransferFileName").unwrap_or_default(),
                url: s("TransferURL").unwrap_or_default(),
                success,
                error: s("TransferError"),
                bytes: crate::plan::int_attr(ad, "TransferTotalBytes"),
            })
        })
        .collect()
}

/// How a plugin run failed: the hold subcode and the details.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginFailure {
    pub subcode: i64,
    pub details: String,
}

/// Everything a plugin run needs.
pub struct Run<'a> {
    pub plugin: &'a Plugin,
    pub items: &'a [Item],
    pub upload: bool,
    /// The scratch directory: the plugin's working directory and where
    /// its in/out files are (removed afterwards).
    pub scratch: &'a Path,
    /// Run as this uid/gid (with these groups), when the starter is root.
    pub account: Option<&'a skua_daemon::account::Account>,
    pub lifetime: Duration,
}

/// Runs the plugin once for `run.items`. Ok: every item succeeded.
pub async fn transfer(run: Run<'_>) -> Result<Vec<TransferResult>, PluginFailure> {
    let fail = |subcode: i64, details: String| PluginFailure { subcode, details };
    let tag = format!(
        ".skua_plugin_{}_{}",
        std::process::id(),
        if run.upload { "up" } else { "down" }
    );
    let infile = run.scratch.join(&tag);
    let outfile = run.scratch.join(format!("{tag}.out"));
    let text = request_text(run.items);
    // the request and the (empty) result file belong to the job's account
    let write = {
        let (infile, outfile) = (infile.clone(), outfile.clone());
        move || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&infile)?;
            f.write_all(text.as_bytes())?;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&outfile)?;
            Ok(())
        }
    };
    let written = match run.account {
        Some(a) => {
            skua_daemon::account::run_as_thread(a, write).map_err(|e| fail(0, e.to_string()))?
        }
        None => write(),
    };
    let cleanup = || {
        let _ = std::fs::remove_file(&infile);
        let _ = std::fs::remove_file(&outfile);
    };
    if let Err(e) = written {
        cleanup();
        return Err(fail(
            e.raw_os_error().map(i64::from).unwrap_or(0),
            format!("cannot write the plugin's input file: {e}"),
        ));
    }
    let mut cmd = tokio::process::Command::from(run.plugin.command());
    cmd.arg("-infile")
        .arg(&tag)
        .arg("-outfile")
        .arg(format!("{tag}.out"));
    if run.upload {
        cmd.arg("-upload");
    }
    cmd.current_dir(run.scratch)
        .env("_CONDOR_JOB_AD", run.scratch.join(".job.ad"))
        .env("_CONDOR_MACHINE_AD", run.scratch.join(".machine.ad"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // spawned from a thread that has become the job's account: the
    // plugin runs with the account's whole identity
    let runtime = tokio::runtime::Handle::current();
    let spawned = match run.account {
        None => cmd.spawn(),
        Some(a) => skua_daemon::account::run_as_thread(a, || {
            let _entered = runtime.enter();
            cmd.spawn()
        })
        .map_err(std::io::Error::other)
        .and_then(|r| r),
    };
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            cleanup();
            return Err(fail(
                e.raw_os_error().map(i64::from).unwrap_or(0),
                format!("cannot run {}: {e}", run.plugin.program.display()),
            ));
        }
    };
    let waited = tokio::time::timeout(run.lifetime, child.wait_with_output()).await;
    // read with the job's rights: the plugin (running as the job's
    // account) could have put a link there
    let read = || {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut text = String::new();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&outfile)?
            .take(MAX_RESULT_BYTES)
            .read_to_string(&mut text)?;
        Ok::<_, std::io::Error>(text)
    };
    let result_text = match run.account {
        Some(a) => skua_daemon::account::run_as_thread(a, read)
            .ok()
            .and_then(Result::ok),
        None => read().ok(),
    }
    .unwrap_or_default();
    cleanup();
    let output = match waited {
        Err(_) => {
            return Err(fail(
                ETIME,
                format!(
                    "the plugin {} ran longer than {} s and was killed",
                    run.plugin.program.display(),
                    run.lifetime.as_secs()
                ),
            ))
        }
        Ok(Err(e)) => return Err(fail(0, format!("waiting for the plugin: {e}"))),
        Ok(Ok(o)) => o,
    };
    let results = parse_results(&result_text);
    let first_error = results.as_ref().ok().and_then(|r| {
        r.iter()
            .find(|t| !t.success)
            .map(|t| format!("{}: {}", t.url, t.error.as_deref().unwrap_or("failed")))
    });
    if !output.status.success() {
        let code = output.status.code().unwrap_or(1);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let details = first_error.unwrap_or_else(|| {
            let s = stderr.trim();
            if s.is_empty() {
                format!("the plugin exited with {}", output.status)
            } else {
                s.lines().last().unwrap_or(s).to_string()
            }
        });
        return Err(fail(i64::from(code) << 8, details));
    }
    let results = results.map_err(|e| fail(0, format!("the plugin's results: {e}")))?;
    if let Some(e) = first_error {
        return Err(fail(0, e));
    }
    Ok(results)
}

/// `skuad transfer_plugin`: the built-in `file` and `http` plugin, with
/// HTCondor's plugin arguments. Returns the exit code.
pub fn builtin_main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-classad") {
        println!("MultipleFileSupport = true");
        println!("PluginType = \"FileTransfer\"");
        println!("SupportedMethods = \"file,http\"");
        println!("ProtocolVersion = 2");
        println!("PluginVersion = \"{}\"", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let (Some(infile), Some(outfile)) = (arg("-infile"), arg("-outfile")) else {
        eprintln!("usage: transfer_plugin -classad | -infile F -outfile F.out [-upload]");
        return 2;
    };
    let upload = args.iter().any(|a| a == "-upload");
    let text = match std::fs::read_to_string(infile) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {infile}: {e}");
            return 1;
        }
    };
    let ads = match parse_ads(&text) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{infile}: {e}");
            return 1;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let mut out = String::new();
    let mut all_ok = true;
    for ad in &ads {
        let (Some(url), Some(local)) = (
            crate::plan::string_attr(ad, "URL"),
            crate::plan::string_attr(ad, "LocalFileName"),
        ) else {
            continue; // a context ad
        };
        let r = runtime.block_on(builtin_one(&url, Path::new(&local), upload));
        let mut res = ClassAd::new();
        res.insert_value("TransferFileName", local.as_str());
        res.insert_value("TransferURL", url.as_str());
        match r {
            Ok(n) => {
                res.insert_value("TransferSuccess", true);
                res.insert_value("TransferTotalBytes", n as i64);
            }
            Err(e) => {
                all_ok = false;
                res.insert_value("TransferSuccess", false);
                res.insert_value("TransferError", e.as_str());
            }
        }
        out.push_str(&classad::unparse_ad(&res));
        out.push('\n');
    }
    if let Err(e) = std::fs::write(outfile, out) {
        eprintln!("cannot write {outfile}: {e}");
        return 1;
    }
    if all_ok {
        0
    } else {
        1
    }
}

async fn builtin_one(url: &str, local: &Path, upload: bool) -> Result<u64, String> {
    let scheme = crate::plan::url_scheme(url).ok_or_else(|| format!("not a URL: {url}"))?;
    let rest = url.split_once("://").map_or("", |(_, r)| r);
    match scheme.as_str() {
        "file" => {
            // file:///path (an empty or `localhost` host)
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') {
                return Err(format!("{url}: a file URL needs an absolute path"));
            }
            let (from, to) = if upload {
                (local, Path::new(path))
            } else {
                (Path::new(path), local)
            };
            std::fs::copy(from, to)
                .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
        }
        "http" => crate::http::transfer(url, local, upload).await,
        other => Err(format!("scheme {other} is not supported")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_parse_from_the_query_ad() {
        let m = parse_capabilities(concat!(
            "MultipleFileSupport = true\nPluginType = \"FileTransfer\"\n",
            "SupportedMethods = \"HTTP, https,foo\"\nProtocolVersion = 2\n"
        ))
        .unwrap();
        assert_eq!(m, vec!["http", "https", "foo"]);
        assert!(parse_capabilities("PluginType = \"Other\"\nSupportedMethods = \"x\"\n").is_err());
        assert!(parse_capabilities("PluginType = \"FileTransfer\"\n").is_err());
    }

    #[test]
    fn request_and_results_round_trip() {
        let items = [
            Item {
                url: "http://h/a\"b".into(),
                local: "a".into(),
            },
            Item {
                url: "file:///x".into(),
                local: "x".into(),
            },
        ];
        let ads = parse_ads(&request_text(&items)).unwrap();
        assert_eq!(ads.len(), 2);
        assert_eq!(
            crate::plan::string_attr(&ads[0], "URL").as_deref(),
            Some("http://h/a\"b")
        );
        let results = parse_results(concat!(
            "[ TransferFileName = \"a\"; TransferURL = \"http://h/a\"; TransferSuccess = true; TransferTotalBytes = 5 ]\n",
            "[ TransferFileName = \"x]\"; TransferURL = \"file:///x\"; TransferSuccess = false;\n",
            "  TransferError = \"not found\"; TransferErrorData = { [ ErrorType = \"Transfer\" ] } ]\n"
        ))
        .unwrap();
        assert_eq!(results.len(), 2);
        assert!(results[0].success);
        assert_eq!(results[0].bytes, Some(5));
        assert_eq!(results[1].file, "x]");
        assert_eq!(results[1].error.as_deref(), Some("not found"));
        assert!(parse_results("[ TransferFileName = \"a\" ]").is_err());
        assert!(parse_results("[ A = 1 ").is_err());
        assert!(parse_results("junk").is_err());
    }

    fn plugin_script(dir: &Path, body: &str) -> Plugin {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("plugin.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Plugin::site(path.to_str().unwrap())
    }

    fn run_plugin(
        plugin: &Plugin,
        dir: &Path,
        lifetime: Duration,
    ) -> Result<Vec<TransferResult>, PluginFailure> {
        let items = [Item {
            url: "x://h/f".into(),
            local: dir.join("f").display().to_string(),
        }];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(transfer(Run {
            plugin,
            items: &items,
            upload: false,
            scratch: dir,
            account: None,
            lifetime,
        }))
    }

    #[test]
    fn a_plugin_s_exit_code_timeout_and_results_decide_the_outcome() {
        let dir = tempfile::tempdir().unwrap();
        // exit 3 with a result ad: subcode 3 << 8, the ad's error
        let p = plugin_script(
            dir.path(),
            "echo '[ TransferFileName = \"f\"; TransferURL = \"x://h/f\"; TransferSuccess = false; TransferError = \"gone\" ]' > \"$4\"; exit 3",
        );
        let f = run_plugin(&p, dir.path(), Duration::from_secs(30)).unwrap_err();
        assert_eq!(f.subcode, 3 << 8);
        assert_eq!(f.details, "x://h/f: gone");
        // the request and result files are gone afterwards
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != "plugin.sh")
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // exit 0 with a successful ad: the results
        let p = plugin_script(
            dir.path(),
            "grep -q 'URL = \"x://h/f\"' \"$2\" || exit 9; echo '[ TransferFileName = \"f\"; TransferURL = \"x://h/f\"; TransferSuccess = true; TransferTotalBytes = 4 ]' > \"$4\"",
        );
        let r = run_plugin(&p, dir.path(), Duration::from_secs(30)).unwrap();
        assert_eq!(r[0].bytes, Some(4));
        // exit 0 but an ad saying it failed: a failure
        let p = plugin_script(
            dir.path(),
            "echo '[ TransferFileName = \"f\"; TransferURL = \"x://h/f\"; TransferSuccess = false; TransferError = \"no\" ]' > \"$4\"",
        );
        assert_eq!(
            run_plugin(&p, dir.path(), Duration::from_secs(30))
                .unwrap_err()
                .subcode,
            0
        );
        // too slow: killed, ETIME
        let p = plugin_script(dir.path(), "exec sleep 30");
        let f = run_plugin(&p, dir.path(), Duration::from_millis(300)).unwrap_err();
        assert_eq!(f.subcode, ETIME);
    }

    #[test]
    fn site_plugin_list_splits_on_commas_and_spaces() {
        assert_eq!(
            site_plugins(Some("/a/p1, /b/p2\n /c")),
            vec!["/a/p1", "/b/p2", "/c"]
        );
        assert!(site_plugins(None).is_empty());
    }
}

/// The starter's plugin settings (from the configuration).
#[derive(Clone, Debug)]
pub struct PluginSettings {
    /// The built-in plugin (this `skuad`), if found.
    pub builtin: Option<Plugin>,
    /// `FILETRANSFER_PLUGINS`.
    pub site: Vec<String>,
    /// `MAX_FILE_TRANSFER_PLUGIN_LIFETIME`.
    pub lifetime: Duration,
}

/// A hold the URL transfers ask for.
#[derive(Clone, Debug, PartialEq)]
pub struct Hold {
    pub code: i64,
    pub subcode: i64,
    pub reason: String,
}

/// HTCondor's TransferOutputError.
pub const HOLD_TRANSFER_OUTPUT: i64 = 12;
/// HTCondor's TransferInputError.
pub const HOLD_TRANSFER_INPUT: i64 = 13;

async fn table(settings: &PluginSettings) -> PluginTable {
    let (builtin, site) = (settings.builtin.clone(), settings.site.clone());
    tokio::task::spawn_blocking(move || PluginTable::discover(builtin, &site))
        .await
        .unwrap_or_default()
}

/// Moves `items` (grouped by scheme, one plugin run per scheme) in the
/// given direction; the first failure as HTCondor's hold.
async fn move_items(
    settings: &PluginSettings,
    items: Vec<(String, Item)>,
    upload: bool,
    scratch: &Path,
    account: Option<&skua_daemon::account::Account>,
    slot: &str,
) -> Result<(), Hold> {
    if items.is_empty() {
        return Ok(());
    }
    let (code, what) = if upload {
        (HOLD_TRANSFER_OUTPUT, "Transfer output files")
    } else {
        (HOLD_TRANSFER_INPUT, "Transfer input files")
    };
    let table = table(settings).await;
    let mut by_scheme: BTreeMap<String, Vec<Item>> = BTreeMap::new();
    for (scheme, item) in items {
        by_scheme.entry(scheme).or_default().push(item);
    }
    for (scheme, items) in by_scheme {
        let hold = |subcode: i64, details: String| {
            Hold {
            code,
            subcode,
            reason: format!(
                "{what} failure at execution point {slot} using protocol {scheme}. Details: {details}"
            ),
        }
        };
        let Some(plugin) = table.by_scheme.get(&scheme) else {
            return Err(hold(
                0,
                format!(
                    "no file-transfer plugin for {} (FILETRANSFER_PLUGINS)",
                    items.first().map(|i| i.url.as_str()).unwrap_or("")
                ),
            ));
        };
        let run = Run {
            plugin,
            items: &items,
            upload,
            scratch,
            account,
            lifetime: settings.lifetime,
        };
        match transfer(run).await {
            Ok(results) => {
                let bytes: i64 = results.iter().filter_map(|r| r.bytes).sum();
                tracing::info!(%scheme, files = items.len(), bytes, upload, "URL transfer done");
            }
            Err(f) => {
                tracing::info!(%scheme, subcode = f.subcode, details = %f.details, "URL transfer failed; the job is held");
                // the reason names the URL
                let mut details = f.details;
                if !items.iter().any(|i| details.contains(&i.url)) {
                    let urls: Vec<&str> = items.iter().map(|i| i.url.as_str()).collect();
                    details = format!("{details} (URL {})", urls.join(", "));
                }
                return Err(hold(f.subcode, details));
            }
        }
    }
    Ok(())
}

/// Fetches the job's URL inputs into `scratch` through the plugins.
pub async fn fetch_url_inputs(
    settings: &PluginSettings,
    job: &ClassAd,
    scratch: &Path,
    account: Option<&skua_daemon::account::Account>,
    slot: &str,
) -> Result<(), Hold> {
    let urls = crate::plan::url_inputs(job).map_err(|e| Hold {
        code: HOLD_TRANSFER_INPUT,
        subcode: 0,
        reason: format!("Transfer input files failure at execution point {slot}. Details: {e}"),
    })?;
    let items = urls
        .into_iter()
        .map(|u| {
            (
                u.scheme,
                Item {
                    url: u.url,
                    local: scratch.join(&u.name).display().to_string(),
                },
            )
        })
        .collect();
    move_items(settings, items, false, scratch, account, slot).await
}

/// Sends outputs to URLs: each (name relative to `scratch`, URL) pair
/// (`OutputDestination`'s `<dest>/<name>`, or a URL remap).
pub async fn send_to_urls(
    settings: &PluginSettings,
    files: &[(String, String)],
    scratch: &Path,
    account: Option<&skua_daemon::account::Account>,
    slot: &str,
) -> Result<(), Hold> {
    let items = files
        .iter()
        .map(|(n, url)| {
            (
                crate::plan::url_scheme(url).unwrap_or_default(),
                Item {
                    url: url.clone(),
                    local: scratch.join(n).display().to_string(),
                },
            )
        })
        .collect();
    move_items(settings, items, true, scratch, account, slot).await
}
