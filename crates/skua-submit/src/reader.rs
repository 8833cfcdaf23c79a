//! Reading a submit description in order: statements, conditionals, includes and queue
//! statements; each queue statement makes its jobs with the macros defined at that point.

use std::cell::Cell;
use std::collections::BTreeMap;

use skua_config::{
    evaluate_condition, expand_macros, expand_self_references, is_c_space, is_valid_macro_name,
    trim_c, LineReader,
};

use crate::job::{self, JobCtx};
use crate::queue::{self, ForeachMode, QueueArgs};
use crate::scope::{Scope, Table};
use crate::{ClusterJobs, FileSource, Submission, SubmitError, SubmitOptions};
use classad::time::civil_from_days;

/// Include nesting allowed.
const MAX_INCLUDE_DEPTH: usize = 20;

/// Jobs one submission may create when no limit is given (a guard against runaway counts).
const HARD_JOB_LIMIT: usize = 10_000_000;

struct IfFrame {
    active: bool,
    taken: bool,
    seen_else: bool,
    parent_active: bool,
}

pub(crate) struct Reader<'a> {
    pub(crate) opts: &'a SubmitOptions,
    pub(crate) files: &'a dyn FileSource,
    pub(crate) table: Table,
    pub(crate) predefined: BTreeMap<String, String>,
    pub(crate) rng: Cell<u64>,
    jobs: Vec<classad::ClassAd>,
    cluster_env: Option<BTreeMap<String, String>>,
    cluster_args: Option<(&'static str, String)>,
    queued: bool,
    appended_done: bool,
}

pub(crate) fn run(
    text: &str,
    files: &dyn FileSource,
    opts: &SubmitOptions,
) -> Result<Submission, SubmitError> {
    let mut r = Reader {
        opts,
        files,
        table: Table::default(),
        predefined: predefined(opts),
        rng: Cell::new(opts.random_seed ^ 0x5eed),
        jobs: Vec::new(),
        cluster_env: None,
        cluster_args: None,
        queued: false,
        appended_done: false,
    };
    for (name, value) in &opts.overrides {
        r.table.set(name, value.clone(), 0);
    }
    r.parse(text, &opts.submit_file, 0)?;
    if let Some(args) = &opts.queue_args {
        if r.queued {
            return Err(SubmitError::Syntax {
                file: opts.submit_file.clone(),
                line: 0,
                message: "the -queue option cannot be used with a submit description that \
                          has a queue statement of its own"
                    .to_string(),
            });
        }
        r.parse(&format!("queue {args}\n"), "-queue", 0)?;
    }
    if !r.queued {
        return Err(SubmitError::NoQueue {
            file: opts.submit_file.clone(),
        });
    }
    Ok(Submission {
        clusters: vec![ClusterJobs {
            cluster_id: opts.cluster_id,
            jobs: r.jobs,
        }],
        skip_filechecks: r
            .table
            .get("skip_filechecks")
            .map(|d| d.raw.trim().to_string())
            .filter(|v| !v.is_empty()),
    })
}

/// The macros every submit description can use without defining them.
fn predefined(opts: &SubmitOptions) -> BTreeMap<String, String> {
    let (y, m, d) = civil_from_days(opts.now.div_euclid(86_400));
    let is_linux = opts.opsys.eq_ignore_ascii_case("LINUX");
    let is_windows = opts.opsys.eq_ignore_ascii_case("WINDOWS");
    let is_mac = opts.opsys.eq_ignore_ascii_case("OSX") || opts.opsys.eq_ignore_ascii_case("MACOS");
    let pairs = [
        ("ARCH", opts.arch.clone()),
        ("OPSYS", opts.opsys.clone()),
        ("OPSYSANDVER", opts.opsys_and_ver.clone()),
        ("OPSYSMAJORVER", opts.opsys_major_ver.clone()),
        ("OPSYSVER", opts.opsys_ver.clone()),
        ("FILESYSTEM_DOMAIN", opts.filesystem_domain.clone()),
        ("UID_DOMAIN", opts.uid_domain.clone()),
        ("HOSTNAME", opts.hostname.clone()),
        ("SUBMIT_FILE", opts.submit_file.clone()),
        ("SUBMIT_TIME", opts.now.to_string()),
        ("YEAR", format!("{y:04}")),
        ("MONTH", format!("{m:02}")),
        ("DAY", format!("{d:02}")),
        ("ISLINUX", is_linux.to_string()),
        ("ISWINDOWS", is_windows.to_string()),
        ("ISMACOS", is_mac.to_string()),
        ("ISOSX", is_mac.to_string()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl<'a> Reader<'a> {
    fn syntax(file: &str, line: usize, message: impl Into<String>) -> SubmitError {
        SubmitError::Syntax {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }

    /// Expands `text` with the macros defined so far (no per-job variables).
    fn expand_now(&self, text: &str, file: &str, line: usize) -> Result<String, SubmitError> {
        let live = BTreeMap::new();
        let scope = Scope {
            table: &self.table,
            live: &live,
            predefined: &self.predefined,
            env: &self.opts.env,
            rng: &self.rng,
        };
        expand_macros(&scope, text).map_err(|e| Self::syntax(file, line, e.to_string()))
    }

    /// Whether the job about to be made (with the per-job variables `live`) is in the parallel
    /// universe, whose `$(Node)` is a placeholder the schedd fills in per node. A `universe`
    /// written with macros is expanded (a value that does not expand is not parallel; building
    /// the job reports it).
    fn universe_is_parallel(&self, live: &BTreeMap<String, String>) -> bool {
        let Some(def) = self.table.get("universe") else {
            return self.opts.default_universe.eq_ignore_ascii_case("parallel");
        };
        if !def.raw.contains('$') {
            return def.raw.trim().eq_ignore_ascii_case("parallel");
        }
        let scope = Scope {
            table: &self.table,
            live,
            predefined: &self.predefined,
            env: &self.opts.env,
            rng: &self.rng,
        };
        expand_macros(&scope, &def.raw).is_ok_and(|v| v.trim().eq_ignore_ascii_case("parallel"))
    }

    fn condition(&self, cond: &str, file: &str, line: usize) -> Result<bool, SubmitError> {
        let live = BTreeMap::new();
        let scope = Scope {
            table: &self.table,
            live: &live,
            predefined: &self.predefined,
            env: &self.opts.env,
            rng: &self.rng,
        };
        evaluate_condition(&scope, cond).map_err(|reason| {
            Self::syntax(file, line, format!("invalid condition '{cond}': {reason}"))
        })
    }

    pub(crate) fn parse(
        &mut self,
        text: &str,
        file: &str,
        depth: usize,
    ) -> Result<(), SubmitError> {
        let mut reader = LineReader::new(text);
        let mut ifs: Vec<IfFrame> = Vec::new();
        while let Some((line, text)) = reader.next_line() {
            let stmt = text.trim_start_matches(is_c_space);
            if stmt.starts_with('#') || stmt.is_empty() {
                continue;
            }
            let (word, rest) = match stmt.find(is_c_space) {
                Some(i) => (&stmt[..i], trim_c(&stmt[i..])),
                None => (stmt, ""),
            };
            let lower = word.to_ascii_lowercase();
            match lower.as_str() {
                "if" => {
                    let parent_active = ifs.last().is_none_or(|f| f.active);
                    let value = parent_active && self.condition(rest, file, line)?;
                    ifs.push(IfFrame {
                        active: value,
                        taken: value || !parent_active,
                        seen_else: false,
                        parent_active,
                    });
                    continue;
                }
                "elif" | "else" => {
                    let Some(frame) = ifs.last() else {
                        return Err(Self::syntax(file, line, format!("'{word}' without 'if'")));
                    };
                    if frame.seen_else {
                        return Err(Self::syntax(file, line, format!("'{word}' after 'else'")));
                    }
                    let (taken, parent_active) = (frame.taken, frame.parent_active);
                    let (active, seen_else) = if lower == "else" {
                        (parent_active && !taken, true)
                    } else if taken {
                        (false, false)
                    } else {
                        (self.condition(rest, file, line)?, false)
                    };
                    if let Some(frame) = ifs.last_mut() {
                        frame.active = active;
                        frame.taken = taken || active;
                        frame.seen_else = seen_else;
                    }
                    continue;
                }
                "endif" => {
                    if ifs.pop().is_none() {
                        return Err(Self::syntax(file, line, "'endif' without 'if'"));
                    }
                    continue;
                }
                _ => {}
            }
            if ifs.last().is_some_and(|f| !f.active) {
                continue;
            }
            if lower == "queue" {
                self.queue_statement(rest, &mut reader, file, line)?;
                continue;
            }
            self.statement(stmt, &mut reader, file, line, depth)?;
        }
        if !ifs.is_empty() {
            return Err(Self::syntax(
                file,
                reader.current_line(),
                "'if' without 'endif' at the end of the file",
            ));
        }
        Ok(())
    }

    /// A statement that is not a conditional or a queue statement.
    fn statement(
        &mut self,
        stmt: &str,
        reader: &mut LineReader<'_>,
        file: &str,
        line: usize,
        depth: usize,
    ) -> Result<(), SubmitError> {
        let name_end = stmt
            .find(|c: char| is_c_space(c) || c == ':' || c == '=')
            .unwrap_or(stmt.len());
        let name = &stmt[..name_end];
        let after = stmt[name_end..].trim_start_matches(is_c_space);
        let lower = name.to_ascii_lowercase();

        // Keyword statements: `include [command] : X`, `error : X`, `warning : X`.
        if matches!(lower.as_str(), "include" | "error" | "warning") {
            if let Some(colon) = after.find(':') {
                let words = trim_c(&after[..colon]);
                let value = trim_c(&after[colon + 1..]);
                if !after.starts_with('=') {
                    return match lower.as_str() {
                        "error" => Err(SubmitError::ErrorStatement {
                            file: file.to_string(),
                            line,
                            message: self.expand_now(value, file, line)?,
                        }),
                        "warning" => Ok(()),
                        _ => self.include(words, value, file, line, depth),
                    };
                }
            }
        }

        let (op, value) = if let Some(v) = after.strip_prefix("@=") {
            ("@=", v)
        } else if let Some(v) = after.strip_prefix("+=") {
            ("+=", v)
        } else if let Some(v) = after.strip_prefix('=') {
            ("=", v)
        } else if let Some(v) = after.strip_prefix(':') {
            ("=", v)
        } else {
            return Err(Self::syntax(
                file,
                line,
                format!("not a valid submit statement: {stmt}"),
            ));
        };
        let value = trim_c(value);
        let name = if name.contains('$') {
            self.expand_now(name, file, line)?
        } else {
            name.to_string()
        };
        let name = match name.strip_prefix('+') {
            Some(attr) => format!("MY.{attr}"),
            None => name,
        };
        if !is_valid_macro_name(&name) || name.starts_with('.') {
            return Err(Self::syntax(file, line, format!("invalid name '{name}'")));
        }
        let mut value = match op {
            "@=" => {
                let end = format!("@{value}");
                let mut lines = Vec::new();
                loop {
                    let Some((_, l)) = reader.next_line() else {
                        return Err(Self::syntax(
                            file,
                            line,
                            format!("'{name} @={value}' is not closed by '{end}'"),
                        ));
                    };
                    if trim_c(&l) == end {
                        break;
                    }
                    if l.starts_with('#') {
                        continue;
                    }
                    lines.push(l);
                }
                lines.join("\n")
            }
            "+=" => match self.table.get(&name) {
                Some(prev) if !prev.raw.is_empty() => format!("{} {value}", prev.raw),
                _ => value.to_string(),
            },
            _ => value.to_string(),
        };
        if value.contains('$') {
            let table = &self.table;
            value = expand_self_references(&value, &[name.as_str()], |n| {
                table.get(n).map(|d| d.raw.clone())
            });
        }
        self.table.set(&name, value, line);
        Ok(())
    }

    fn include(
        &mut self,
        words: &str,
        value: &str,
        file: &str,
        line: usize,
        depth: usize,
    ) -> Result<(), SubmitError> {
        if depth + 1 >= MAX_INCLUDE_DEPTH {
            return Err(Self::syntax(file, line, "includes nested too deeply"));
        }
        let target = self.expand_now(value, file, line)?;
        let target = trim_c(&target).to_string();
        let command = words.split_whitespace().any(|w| w == "command");
        let unreadable = |path: &str, e: std::io::Error| SubmitError::Unreadable {
            file: file.to_string(),
            line,
            path: path.to_string(),
            reason: e.to_string(),
        };
        let (text, name) = match target.strip_suffix('|') {
            Some(cmd) => {
                let cmd = trim_c(cmd);
                (
                    self.files
                        .run_command(cmd)
                        .map_err(|e| unreadable(cmd, e))?,
                    cmd.to_string(),
                )
            }
            None if command => (
                self.files
                    .run_command(&target)
                    .map_err(|e| unreadable(&target, e))?,
                target.clone(),
            ),
            None => {
                let path = self.path(&target);
                (
                    self.files.read(&path).map_err(|e| unreadable(&path, e))?,
                    path,
                )
            }
        };
        self.parse(&text, &name, depth + 1)
    }

    /// Every macro name defined so far.
    pub(crate) fn table_names(&self) -> Vec<String> {
        self.table.names()
    }

    /// A path relative to the submit directory made absolute.
    pub(crate) fn path(&self, p: &str) -> String {
        job::join_path(&self.opts.submit_dir, p)
    }

    fn queue_statement(
        &mut self,
        rest: &str,
        reader: &mut LineReader<'_>,
        file: &str,
        line: usize,
    ) -> Result<(), SubmitError> {
        if !self.appended_done {
            self.appended_done = true;
            let appended = self.opts.appended_lines.join("\n");
            if !appended.is_empty() {
                self.parse(&appended, "<appended lines>", 1)?;
            }
        }
        let expanded = self.expand_now(rest, file, line)?;
        let mut args = queue::parse_queue_args(&expanded)
            .map_err(|e| Self::syntax(file, line, format!("invalid queue statement: {e}")))?;
        if args.open_list {
            let mut body = Vec::new();
            if !args.items.is_empty() {
                body.push(args.items.clone());
            }
            loop {
                let Some((_, l)) = reader.next_line() else {
                    return Err(Self::syntax(
                        file,
                        line,
                        "the queue item list is not closed by ')'",
                    ));
                };
                let t = trim_c(&l);
                if t.starts_with(')') {
                    break;
                }
                if t.starts_with('#') {
                    continue;
                }
                body.push(t.to_string());
            }
            args.items = body.join("\n");
        }
        self.queued = true;
        self.run_queue(&args, file, line)
    }

    fn count(&self, args: &QueueArgs, file: &str, line: usize) -> Result<usize, SubmitError> {
        let text = trim_c(&args.count);
        if text.is_empty() {
            return Ok(1);
        }
        let bad = || Self::syntax(file, line, format!("invalid queue count: {text}"));
        let expr = classad::parse_expr(text).map_err(|_| bad())?;
        match classad::eval(&expr) {
            classad::Value::Int(n) if n >= 0 => usize::try_from(n).map_err(|_| bad()),
            classad::Value::Real(r) if r >= 0.0 && r.is_finite() => Ok(r as usize),
            _ => Err(bad()),
        }
    }

    /// The rows of the queue statement: each row's variable values and its index in the full
    /// list (before slicing).
    fn items(
        &self,
        args: &QueueArgs,
        file: &str,
        line: usize,
    ) -> Result<Vec<(usize, Vec<String>)>, SubmitError> {
        let nvars = args.vars.len().max(1);
        let rows: Vec<Vec<String>> = match &args.mode {
            ForeachMode::None => return Ok(vec![(0, Vec::new())]),
            ForeachMode::In => {
                let list = if args.inline {
                    queue::list_lines(&args.items).join("\n")
                } else {
                    args.items.clone()
                };
                queue::split_items(&list)
                    .into_iter()
                    .map(|item| queue::split_row(&item, nvars))
                    .collect()
            }
            ForeachMode::From => {
                let text = if args.inline {
                    args.items.clone()
                } else {
                    let src = trim_c(&args.items);
                    let unreadable = |path: &str, e: std::io::Error| SubmitError::Unreadable {
                        file: file.to_string(),
                        line,
                        path: path.to_string(),
                        reason: e.to_string(),
                    };
                    match src.strip_suffix('|') {
                        Some(cmd) => {
                            let cmd = trim_c(cmd);
                            self.files
                                .run_command(cmd)
                                .map_err(|e| unreadable(cmd, e))?
                        }
                        None => {
                            let path = self.path(src);
                            self.files.read(&path).map_err(|e| unreadable(src, e))?
                        }
                    }
                };
                queue::rows(&text)
                    .iter()
                    .map(|row| queue::split_row(row, nvars))
                    .collect()
            }
            ForeachMode::Matching { files, dirs } => {
                let list = if args.inline {
                    queue::list_lines(&args.items).join("\n")
                } else {
                    args.items.clone()
                };
                // As condor_submit: each pattern expanded by glob(3) (directories marked with a
                // trailing `/`; `dirs` asks glob for directories only, which it applies to
                // wildcard components), `files` then drops the directories, and a match that an
                // earlier pattern already gave is skipped.
                let only_dirs = *dirs && !*files;
                let no_dirs = *files && !*dirs;
                let mut found: Vec<String> = Vec::new();
                for pattern in queue::split_items(&list) {
                    let earlier = found.len();
                    for m in self.glob(&pattern, only_dirs) {
                        if no_dirs && m.ends_with('/') {
                            continue;
                        }
                        if !found[..earlier].contains(&m) {
                            found.push(m);
                        }
                    }
                }
                found.into_iter().map(|m| vec![m]).collect()
            }
        };
        let len = rows.len();
        Ok(rows
            .into_iter()
            .enumerate()
            .filter(|(i, _)| args.slice.is_none_or(|s| s.selects(*i, len)))
            .collect())
    }

    /// The paths matching a pattern as glibc's `glob(3)` finds them with `GLOB_MARK` (every
    /// directory written with a trailing `/`) and, when `only_dirs`, `GLOB_ONLYDIR`; sorted
    /// bytewise. Wildcards may appear in any component.
    fn glob(&self, pattern: &str, only_dirs: bool) -> Vec<String> {
        let mut out = self.glob_expand(pattern, only_dirs, true);
        out.sort();
        out
    }

    /// One level of glob(3): `pattern/` is `pattern` with marks, directories only (unless `pattern` is a single
    /// character, which glob treats as a directory whose empty entry name is looked up, so `*/`
    /// gives `d1//`); a directory part with wildcards is expanded to directories first; a
    /// final component with wildcards is matched against the directory's entries (a leading `.`
    /// only explicitly; only directories when `only_dirs`), one without is kept if it exists.
    fn glob_expand(&self, pattern: &str, only_dirs: bool, mark: bool) -> Vec<String> {
        if let Some(dir) = pattern.strip_suffix('/') {
            if dir.len() > 1 {
                return self.glob_expand(dir, true, true);
            }
        }
        let (dirs, name) = match pattern.rfind('/') {
            None => (vec![String::new()], pattern),
            Some(0) => (vec!["/".to_string()], &pattern[1..]),
            Some(i) => {
                let dir = &pattern[..i];
                let dirs = if queue::has_glob(dir) {
                    self.glob_expand(dir, true, false)
                } else {
                    vec![dir.to_string()]
                };
                (dirs, &pattern[i + 1..])
            }
        };
        let mut out = Vec::new();
        for dir in dirs {
            let join = |n: &str| match dir.as_str() {
                "" => n.to_string(),
                "/" => format!("/{n}"),
                d => format!("{d}/{n}"),
            };
            let names: Vec<String> = if queue::has_glob(name) {
                let listing = if dir.is_empty() {
                    self.opts.submit_dir.clone()
                } else {
                    self.path(&dir)
                };
                let Ok(entries) = self.files.list_entries(&listing) else {
                    continue;
                };
                let dots = [".", ".."].map(|n| skua_config::DirEntry {
                    name: n.to_string(),
                    is_dir: true,
                });
                entries
                    .into_iter()
                    .chain(dots)
                    .filter(|e| !only_dirs || e.is_dir)
                    .filter(|e| queue::glob_match(name, &e.name))
                    .map(|e| e.name)
                    .collect()
            } else {
                let full = self.path(&join(name));
                if self.files.is_dir(&full) || self.files.file_size(&full).is_some() {
                    vec![name.to_string()]
                } else {
                    Vec::new()
                }
            };
            for n in names {
                let path = join(&n);
                if mark && self.files.is_dir(&self.path(&path)) {
                    out.push(format!("{path}/"));
                } else {
                    out.push(path);
                }
            }
        }
        out
    }

    fn run_queue(&mut self, args: &QueueArgs, file: &str, line: usize) -> Result<(), SubmitError> {
        let count = self.count(args, file, line)?;
        let rows = self.items(args, file, line)?;
        let limit = self.opts.max_jobs_per_submission.unwrap_or(HARD_JOB_LIMIT);
        let total = rows.len().saturating_mul(count);
        if self.jobs.len().saturating_add(total) > limit {
            return Err(SubmitError::TooManyJobs {
                file: file.to_string(),
                line,
                limit,
            });
        }
        for (index, values) in rows {
            for step in 0..count {
                let proc_id = self.jobs.len();
                let mut live = BTreeMap::new();
                let cluster = self.opts.cluster_id.to_string();
                live.insert("CLUSTER".to_string(), cluster.clone());
                live.insert("CLUSTERID".to_string(), cluster.clone());
                live.insert("PROCESS".to_string(), proc_id.to_string());
                live.insert("PROCID".to_string(), proc_id.to_string());
                live.insert("JOBID".to_string(), format!("{cluster}.{proc_id}"));
                live.insert("STEP".to_string(), step.to_string());
                live.insert("ITEMINDEX".to_string(), index.to_string());
                live.insert("ROW".to_string(), index.to_string());
                if args.mode == ForeachMode::None {
                    live.insert("ITEM".to_string(), String::new());
                } else if args.vars.is_empty() {
                    live.insert(
                        "ITEM".to_string(),
                        values.first().cloned().unwrap_or_default(),
                    );
                } else {
                    for (var, value) in args.vars.iter().zip(values.iter()) {
                        live.insert(var.to_ascii_uppercase(), value.clone());
                    }
                }
                // A parallel job's `$(Node)` stays HTCondor's placeholder, which the schedd
                // replaces by each node's number; a file's own `Node` macro (or queue variable)
                // wins.
                if self.table.get("Node").is_none()
                    && !live.contains_key("NODE")
                    && self.universe_is_parallel(&live)
                {
                    live.insert("NODE".to_string(), "#pArAlLeLnOdE#".to_string());
                }
                let ctx = JobCtx {
                    reader: self,
                    live,
                    file,
                    queue_line: line,
                    proc_id,
                    cluster_env: self.cluster_env.clone(),
                    cluster_args: self.cluster_args.clone(),
                    env_out: Default::default(),
                };
                let ad = job::build(&ctx)?;
                let env = ctx.env_out.into_inner();
                if self.cluster_env.is_none() {
                    self.cluster_env = Some(env);
                    self.cluster_args =
                        ["Args", "Arguments"]
                            .into_iter()
                            .find_map(|n| match ad.lookup(n) {
                                Some(classad::Expr::Lit(v)) => v.as_string().map(|s| (n, s)),
                                _ => None,
                            });
                }
                self.jobs.push(ad);
            }
        }
        Ok(())
    }
}
