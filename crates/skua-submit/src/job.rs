//! Building one job ad from the submit commands in effect at a queue statement.

use std::collections::BTreeMap;

use classad::{ClassAd, Expr, Value};
use skua_config::{bool_literal, expand_macro_value};
use skua_types::JobStatus;

use crate::quoting;
use crate::reader::Reader;
use crate::scope::Scope;
use crate::units::{parse_size, Size};
use crate::{universe, SubmitError};

/// What building one job needs.
pub(crate) struct JobCtx<'r, 'a> {
    pub(crate) reader: &'r Reader<'a>,
    /// Per-job variables (`Process`, `Item`, the queue variables, ...), upper-cased names.
    pub(crate) live: BTreeMap<String, String>,
    pub(crate) file: &'r str,
    pub(crate) queue_line: usize,
    pub(crate) proc_id: usize,
    /// The environment of the cluster's first job, once it exists.
    pub(crate) cluster_env: Option<BTreeMap<String, String>>,
    /// The arguments attribute (`Args` or `Arguments`) and value of the cluster's first job.
    pub(crate) cluster_args: Option<(&'static str, String)>,
    /// The environment this job ended up with.
    pub(crate) env_out: std::cell::RefCell<BTreeMap<String, String>>,
}

/// A command's expanded value and where it was defined.
struct Cmd {
    value: String,
    line: usize,
    name: &'static str,
}

/// `base` joined with `p` unless `p` is absolute, as condor_submit makes a full path: runs of
/// `/` are squeezed to one, nothing else is normalised (`./` and `../` stay, and so does a
/// trailing `/`).
pub(crate) fn join_path(base: &str, p: &str) -> String {
    if p.starts_with('/') || base.is_empty() {
        squeeze_slashes(p)
    } else {
        squeeze_slashes(&format!("{base}/{p}"))
    }
}

/// condor_submit's `compress_path`: every run of `/` becomes a single `/`.
pub(crate) fn squeeze_slashes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut prev_slash = false;
    for c in p.chars() {
        let slash = c == '/';
        if !(slash && prev_slash) {
            out.push(c);
        }
        prev_slash = slash;
    }
    out
}

/// Attribute names referenced by an expression (as written, any scope).
fn referenced(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Attr(n) | Expr::AbsAttr(n) => out.push(n.as_str().to_string()),
        Expr::Select(base, n) => {
            out.push(n.as_str().to_string());
            referenced(base, out);
        }
        Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::Elvis(a, b) => {
            referenced(a, out);
            referenced(b, out);
        }
        Expr::Unary(_, a) | Expr::Paren(a) => referenced(a, out),
        Expr::Cond(c) => {
            referenced(&c.0, out);
            referenced(&c.1, out);
            referenced(&c.2, out);
        }
        Expr::Call(c) => c.args.iter().for_each(|a| referenced(a, out)),
        Expr::List(items) => items.iter().for_each(|a| referenced(a, out)),
        Expr::Lit(_) | Expr::RelTimeStr(_) | Expr::Ad(_) => {}
    }
}

impl JobCtx<'_, '_> {
    fn scope(&self) -> Scope<'_> {
        Scope {
            table: &self.reader.table,
            live: &self.live,
            predefined: &self.reader.predefined,
            env: &self.reader.opts.env,
            rng: &self.reader.rng,
        }
    }

    /// The expanded value of the first of `names` that is defined (empty values count as not
    /// given).
    fn get(&self, names: &[&'static str]) -> Result<Option<Cmd>, SubmitError> {
        for &name in names {
            if let Some(v) = self.live.get(&name.to_ascii_uppercase()) {
                let value = self.expand(name, v, 0)?.trim().to_string();
                if value.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Cmd {
                    value,
                    line: 0,
                    name,
                }));
            }
            if let Some(def) = self.reader.table.get(name) {
                let value = self.expand(name, &def.raw, def.line)?;
                let value = value.trim().to_string();
                if value.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Cmd {
                    value,
                    line: def.line,
                    name,
                }));
            }
        }
        Ok(None)
    }

    fn expand(&self, name: &str, raw: &str, line: usize) -> Result<String, SubmitError> {
        expand_macro_value(&self.scope(), name, raw).map_err(|e| SubmitError::Syntax {
            file: self.file.to_string(),
            line: self.line_or_queue(line),
            message: e.to_string(),
        })
    }

    fn line_or_queue(&self, line: usize) -> usize {
        if line == 0 {
            self.queue_line
        } else {
            line
        }
    }

    fn invalid(&self, cmd: &Cmd, reason: impl Into<String>) -> SubmitError {
        SubmitError::InvalidValue {
            file: self.file.to_string(),
            line: self.line_or_queue(cmd.line),
            command: cmd.name.to_string(),
            reason: reason.into(),
        }
    }

    /// A ClassAd expression from a command's value.
    fn expr(&self, cmd: &Cmd) -> Result<Expr, SubmitError> {
        parse_expr(&cmd.value)
            .map_err(|e| self.invalid(cmd, format!("invalid expression '{}': {e}", cmd.value)))
    }

    fn boolean(&self, cmd: &Cmd) -> Result<bool, SubmitError> {
        if let Some(b) = bool_literal(&cmd.value) {
            return Ok(b);
        }
        match parse_expr(&cmd.value).map(|e| classad::eval(&e)) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(Value::Int(i)) => Ok(i != 0),
            _ => Err(self.invalid(cmd, format!("'{}' must evaluate to a boolean", cmd.value))),
        }
    }

    fn integer(&self, cmd: &Cmd) -> Result<i64, SubmitError> {
        match parse_expr(&cmd.value).map(|e| classad::eval(&e)) {
            Ok(Value::Int(i)) => Ok(i),
            _ => Err(self.invalid(cmd, format!("'{}' must evaluate to an integer", cmd.value))),
        }
    }
}

/// The integer at the start of `text`, as C's `atoi` reads it: leading blanks, an optional
/// sign, then digits; 0 when there are none.
fn leading_int(text: &str) -> i64 {
    let t = text.trim_start();
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n = digits
        .parse::<i64>()
        .unwrap_or(if digits.is_empty() { 0 } else { i64::MAX });
    if neg {
        -n
    } else {
        n
    }
}

fn parse_expr(text: &str) -> Result<Expr, String> {
    classad::parse_expr(text).map_err(|e| e.to_string())
}

/// The job ad under construction.
struct Ad(ClassAd);

impl Ad {
    fn set(&mut self, name: &str, e: Expr) {
        self.0.insert(name, e);
    }
    fn str(&mut self, name: &str, s: &str) {
        self.set(name, Expr::string(s));
    }
    fn int(&mut self, name: &str, i: i64) {
        self.set(name, Expr::int(i));
    }
    fn boolean(&mut self, name: &str, b: bool) {
        self.set(name, Expr::boolean(b));
    }
    fn real(&mut self, name: &str, r: f64) {
        self.set(name, Expr::Lit(Value::Real(r)));
    }
    fn has(&self, name: &str) -> bool {
        self.0.lookup(name).is_some()
    }
}

/// A list command (`transfer_input_files`): items separated by commas, trimmed, joined by `,`.
fn normalize_list(value: &str) -> String {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

/// The URL scheme of a transfer item (`osdf://x` → `osdf`), if it is a URL.
fn url_scheme(item: &str) -> Option<String> {
    let (scheme, _) = item.split_once("://")?;
    (!scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.'))
    .then(|| scheme.to_ascii_lowercase())
}

pub(crate) fn build(ctx: &JobCtx<'_, '_>) -> Result<ClassAd, SubmitError> {
    let opts = ctx.reader.opts;
    let files = ctx.reader.files;
    let mut ad = Ad(ClassAd::new());

    // Universe.
    let universe_cmd = ctx.get(&["universe"])?;
    let universe_name = universe_cmd
        .as_ref()
        .map_or(opts.default_universe.clone(), |c| {
            c.value.to_ascii_lowercase()
        });
    let (uni, docker, container) = match universe_name.as_str() {
        "vanilla" => (universe::VANILLA, false, false),
        "docker" => (universe::VANILLA, true, false),
        "container" => (universe::VANILLA, false, true),
        "scheduler" => (universe::SCHEDULER, false, false),
        "local" => (universe::LOCAL, false, false),
        "grid" => (universe::GRID, false, false),
        "java" => (universe::JAVA, false, false),
        "parallel" => (universe::PARALLEL, false, false),
        "vm" => (universe::VM, false, false),
        other => {
            let reason = format!("unknown universe '{other}'");
            return Err(match &universe_cmd {
                Some(c) => ctx.invalid(c, reason),
                None => SubmitError::InvalidValue {
                    file: ctx.file.to_string(),
                    line: ctx.queue_line,
                    command: "universe".to_string(),
                    reason,
                },
            });
        }
    };
    let local_like = uni == universe::SCHEDULER || uni == universe::LOCAL;
    ad.int("JobUniverse", uni);

    // Initial directory.
    let iwd = match ctx.get(&["initialdir", "initial_dir", "iwd"])? {
        Some(c) => {
            // As condor_submit writes it: joined to the submit directory, slashes squeezed, a
            // trailing `/` kept (`initialdir = $(Item)` of `queue matching dirs *` gives
            // `.../d1/`).
            let dir = join_path(&opts.submit_dir, &c.value);
            if !files.is_dir(&dir) {
                return Err(ctx.invalid(&c, format!("No such directory: {dir}")));
            }
            dir
        }
        None => opts.submit_dir.clone(),
    };
    ad.str("Iwd", &iwd);

    // Executable.
    let exe = ctx.get(&["executable"])?;
    let mut exe_size = None;
    let mut java_class = None;
    match &exe {
        Some(c) => {
            let path = join_path(&opts.submit_dir, &c.value);
            exe_size = files.file_size(&path);
            // condor_submit leaves the name as written when the executable is not transferred
            // (`transfer_executable` starting with `f` or `F`).
            let kept = ctx
                .get(&["transfer_executable"])?
                .is_some_and(|t| t.value.starts_with(['f', 'F']));
            if uni == universe::JAVA {
                ad.str("Cmd", "java");
                java_class = Some(path);
            } else if kept {
                ad.str("Cmd", &c.value);
            } else {
                ad.str("Cmd", &path);
            }
        }
        None if docker => {
            ad.str("Cmd", "");
            ad.boolean("TransferExecutable", false);
        }
        None => {
            return Err(SubmitError::MissingExecutable {
                file: ctx.file.to_string(),
                line: ctx.queue_line,
            })
        }
    }
    if let Some(c) = ctx.get(&["transfer_executable"])? {
        if !ctx.boolean(&c)? {
            ad.boolean("TransferExecutable", false);
        }
    } else if uni == universe::JAVA {
        ad.boolean("TransferExecutable", false);
    }

    // Arguments.
    match ctx.get(&["arguments", "args"])? {
        Some(c) => {
            let (v2, text) = quoting::arguments(&c.value).map_err(|e| ctx.invalid(&c, e))?;
            ad.str(if v2 { "Arguments" } else { "Args" }, &text);
        }
        None => match &ctx.cluster_args {
            // A later job without arguments keeps the cluster's (its first job's).
            Some((name, text)) => ad.str(name, text),
            None => ad.str("Arguments", ""),
        },
    }

    // Environment: getenv first, then the explicit variables (which win). After the first job
    // of the cluster, only a job that names an environment recomputes it, starting from the
    // first job's.
    let env_cmd = ctx.get(&["environment", "env"])?;
    let mut env: BTreeMap<String, String> = ctx.cluster_env.clone().unwrap_or_default();
    let recompute = ctx.cluster_env.is_none() || env_cmd.is_some();
    if !recompute {
        // nothing to add
    } else if let Some(c) = ctx.get(&["getenv"])? {
        let patterns: Vec<String> = match bool_literal(&c.value) {
            Some(true) => vec!["*".to_string()],
            Some(false) => Vec::new(),
            None => c
                .value
                .split(|ch: char| ch == ',' || ch.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        };
        for (k, v) in &opts.env {
            if quoting::getenv_selects(&patterns, k) {
                env.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(c) = &env_cmd {
        for (k, v) in quoting::environment(&c.value).map_err(|e| ctx.invalid(c, e))? {
            env.insert(k, v);
        }
    }
    let words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    ad.str("Environment", &quoting::join_v2(&words));
    ctx.env_out.replace(env);

    // Standard streams and the user log.
    for (cmd, attr, transfer, stream_cmd, stream_attr) in [
        ("input", "In", "TransferIn", "stream_input", "StreamIn"),
        ("output", "Out", "TransferOut", "stream_output", "StreamOut"),
        ("error", "Err", "TransferErr", "stream_error", "StreamErr"),
    ] {
        let names: &[&'static str] = match cmd {
            "input" => &["input", "stdin"],
            "output" => &["output", "stdout"],
            _ => &["error", "stderr"],
        };
        match ctx.get(names)? {
            Some(c) => {
                ad.str(attr, &c.value);
                let stream = match ctx.get(&[match stream_cmd {
                    "stream_input" => "stream_input",
                    "stream_output" => "stream_output",
                    _ => "stream_error",
                }])? {
                    Some(s) => ctx.boolean(&s)?,
                    None => false,
                };
                ad.boolean(stream_attr, stream);
            }
            None => {
                ad.str(attr, "/dev/null");
                ad.boolean(transfer, false);
            }
        }
    }
    if let Some(c) = ctx.get(&["log"])? {
        ad.str("UserLog", &join_path(&iwd, &c.value));
    }

    // Resource requests.
    let mut custom_requests = Vec::new();
    let mut cpus_clause = false;
    match ctx.get(&["request_cpus", "requestcpus"])? {
        Some(c) => {
            cpus_clause = c.value != "1";
            ad.set("RequestCpus", ctx.expr(&c)?);
        }
        // A parallel job asks for one core per node unless it says otherwise (condor_submit
        // ignores JOB_DEFAULT_REQUESTCPUS there).
        None if uni == universe::PARALLEL => ad.int("RequestCpus", 1),
        None => ad.set(
            "RequestCpus",
            parse_expr(&opts.default_request_cpus).unwrap_or(Expr::int(1)),
        ),
    }
    match ctx.get(&["request_memory", "requestmemory"])? {
        Some(c) => match parse_size(&c.value, 1024.0).map_err(|e| ctx.invalid(&c, e))? {
            Size::Number(n) => ad.int("RequestMemory", n),
            Size::Expression => ad.set("RequestMemory", ctx.expr(&c)?),
        },
        None => ad.set(
            "RequestMemory",
            parse_expr(&opts.default_request_memory).unwrap_or(Expr::int(128)),
        ),
    }
    match ctx.get(&["request_disk", "requestdisk"])? {
        Some(c) => match parse_size(&c.value, 1.0).map_err(|e| ctx.invalid(&c, e))? {
            Size::Number(n) => ad.int("RequestDisk", n),
            Size::Expression => ad.set("RequestDisk", ctx.expr(&c)?),
        },
        None => ad.set(
            "RequestDisk",
            parse_expr(&opts.default_request_disk).unwrap_or(Expr::int(1_048_576)),
        ),
    }
    let gpus = ctx.get(&["request_gpus", "requestgpus"])?;
    if let Some(c) = &gpus {
        ad.set("RequestGPUs", ctx.expr(c)?);
    }
    let mut gpu_terms: Vec<String> = Vec::new();
    if let Some(c) = ctx.get(&["require_gpus"])? {
        ctx.expr(&c)?;
        gpu_terms.push(c.value.clone());
    }
    if let Some(c) = ctx.get(&["gpus_minimum_capability"])? {
        ad.set("GPUsMinCapability", ctx.expr(&c)?);
        gpu_terms.push("Capability >= GPUsMinCapability".to_string());
    }
    if let Some(c) = ctx.get(&["gpus_maximum_capability"])? {
        ad.set("GPUsMaxCapability", ctx.expr(&c)?);
        gpu_terms.push("Capability <= GPUsMaxCapability".to_string());
    }
    if let Some(c) = ctx.get(&["gpus_minimum_memory"])? {
        match parse_size(&c.value, 1024.0).map_err(|e| ctx.invalid(&c, e))? {
            Size::Number(n) => ad.int("GPUsMinMemory", n),
            Size::Expression => ad.set("GPUsMinMemory", ctx.expr(&c)?),
        }
        gpu_terms.push("GlobalMemoryMb >= GPUsMinMemory".to_string());
    }
    if let Some(c) = ctx.get(&["gpus_minimum_runtime"])? {
        ad.set("GPUsMinRuntime", ctx.expr(&c)?);
        gpu_terms.push("DriverVersion >= GPUsMinRuntime".to_string());
    }
    let require_gpus = if gpu_terms.is_empty() {
        None
    } else {
        let text = gpu_terms.join(" && ");
        let e = parse_expr(&text).map_err(|e| SubmitError::InvalidValue {
            file: ctx.file.to_string(),
            line: ctx.queue_line,
            command: "require_gpus".to_string(),
            reason: format!("invalid expression '{text}': {e}"),
        })?;
        ad.set("RequireGPUs", e);
        Some(text)
    };
    for name in ctx.reader.table_names() {
        let lower = name.to_ascii_lowercase();
        let Some(res) = lower.strip_prefix("request_") else {
            continue;
        };
        if matches!(res, "cpus" | "memory" | "disk" | "gpus")
            || res.len() < 2
            || res.starts_with('_')
        {
            continue;
        }
        let Some(def) = ctx.reader.table.get(&name) else {
            continue;
        };
        let value = ctx.expand(&name, &def.raw, def.line)?;
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let written = &def.name["request_".len()..];
        let cmd = Cmd {
            value: value.to_string(),
            line: def.line,
            name: "request_<resource>",
        };
        ad.set(&format!("Request{written}"), ctx.expr(&cmd)?);
        custom_requests.push(written.to_string());
    }

    // File transfer.
    let stf_cmd = ctx.get(&["should_transfer_files"])?;
    let when_cmd = ctx.get(&["when_to_transfer_output"])?;
    let when = match &when_cmd {
        Some(c) => {
            let mut v = c.value.to_ascii_uppercase();
            if v == "NEVER" {
                // An old spelling HTCondor still takes as ON_EXIT.
                v = "ON_EXIT".to_string();
            }
            if !matches!(v.as_str(), "ON_EXIT" | "ON_EXIT_OR_EVICT" | "ON_SUCCESS") {
                return Err(ctx.invalid(
                    c,
                    format!(
                        "'{}' is not ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS",
                        c.value
                    ),
                ));
            }
            Some(v)
        }
        None => None,
    };
    let stf = match &stf_cmd {
        Some(c) => {
            let v = c.value.to_ascii_uppercase();
            let v = match v.as_str() {
                "YES" | "TRUE" | "ALWAYS" => "YES".to_string(),
                "NO" | "FALSE" | "NEVER" => "NO".to_string(),
                "IF_NEEDED" => "IF_NEEDED".to_string(),
                _ => {
                    return Err(ctx.invalid(c, format!("'{}' is not YES, NO or IF_NEEDED", c.value)))
                }
            };
            if v == "IF_NEEDED" && when.as_deref() == Some("ON_EXIT_OR_EVICT") {
                return Err(ctx.invalid(
                    c,
                    "IF_NEEDED cannot be combined with when_to_transfer_output = ON_EXIT_OR_EVICT",
                ));
            }
            v
        }
        None if when.as_deref() == Some("ON_EXIT_OR_EVICT") => "YES".to_string(),
        None => "IF_NEEDED".to_string(),
    };
    ad.str("ShouldTransferFiles", &stf);
    if stf != "NO" {
        ad.str("WhenToTransferOutput", when.as_deref().unwrap_or("ON_EXIT"));
    }
    let mut plugin_methods: Vec<String> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    if let Some(c) = ctx.get(&["transfer_input_files"])? {
        inputs = normalize_list(&c.value)
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    }
    if let Some(c) = ctx.get(&["transfer_output_files"])? {
        ad.str("TransferOutput", &normalize_list(&c.value));
    }
    // Self-checkpointing (HTCondor's names): the exit code that means "checkpoint taken", the
    // files it is made of (kept as written, as HTCondor does) and where the store is.
    let checkpoint_exit = ctx.get(&["checkpoint_exit_code"])?;
    if let Some(c) = &checkpoint_exit {
        ad.int("SuccessCheckpointExitCode", ctx.integer(c)?);
        ad.boolean("WantFTOnCheckpoint", true);
    }
    let checkpoint_files = ctx.get(&["transfer_checkpoint_files"])?;
    if let Some(c) = &checkpoint_files {
        ad.str("TransferCheckpoint", c.value.trim());
    }
    if let Some(c) = ctx.get(&["checkpoint_destination"])? {
        ad.str("CheckpointDestination", c.value.trim());
    }
    // URL transfers: where the outputs go, and the job's own plugins
    // (HTCondor's `OutputDestination` and `TransferPlugins`)
    if let Some(c) = ctx.get(&["output_destination"])? {
        let dest = c.value.trim().to_string();
        if let Some(s) = url_scheme(&dest) {
            plugin_methods.push(s);
        }
        ad.str("OutputDestination", &dest);
    }
    let mut job_plugin_methods: Vec<String> = Vec::new();
    if let Some(c) = ctx.get(&["transfer_plugins"])? {
        let v = c.value.trim();
        for part in v.split(';') {
            if let Some((schemes, _)) = part.split_once('=') {
                job_plugin_methods.extend(
                    schemes
                        .split(',')
                        .map(|m| m.trim().to_ascii_lowercase())
                        .filter(|m| !m.is_empty()),
                );
            }
        }
        ad.str("TransferPlugins", v);
    }
    if let Some(c) = ctx.get(&["transfer_output_remaps"])? {
        let v = c.value.trim();
        let inner = v
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(v);
        ad.str("TransferOutputRemaps", inner);
    }

    // Container images.
    if docker {
        ad.boolean("WantDocker", true);
        if let Some(c) = ctx.get(&["docker_image"])? {
            ad.str("DockerImage", &c.value);
        }
    }
    // The container clause: `HasDockerURL`, `HasSIF` or `HasSandboxImage`.
    let mut container_kind: Option<&'static str> = None;
    if container {
        ad.boolean("WantContainer", true);
        if let Some(c) = ctx.get(&["container_image"])? {
            let image = c.value.trim_matches('"').to_string();
            let scheme = url_scheme(&image);
            let sif = image.ends_with(".sif");
            match scheme.as_deref() {
                Some("docker") => {
                    ad.str("ContainerImage", &image);
                    ad.str("ContainerImageSource", "docker");
                    ad.boolean("WantDockerImage", true);
                    container_kind = Some("HasDockerURL");
                }
                Some(scheme) => {
                    let base = image
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .unwrap_or(&image);
                    ad.str("ContainerImage", base);
                    ad.str("ContainerImageSource", scheme);
                    ad.str("ContainerImageFullPath", &image);
                    inputs.push(image.clone());
                }
                None => {
                    ad.str("ContainerImage", &image);
                    ad.str("ContainerImageSource", "local");
                    if sif && !image.starts_with('/') {
                        inputs.push(image.clone());
                    }
                }
            }
            if scheme.as_deref() != Some("docker") {
                if sif {
                    ad.boolean("WantSIF", true);
                    container_kind = Some("HasSIF");
                } else {
                    ad.boolean("WantSandboxImage", true);
                    container_kind = Some("HasSandboxImage");
                }
            }
        }
    }
    // A Java job's class file travels with its other input files.
    if let Some(class) = java_class.filter(|_| !inputs.is_empty()) {
        inputs.push(class);
    }
    if !inputs.is_empty() {
        ad.str("TransferInput", &inputs.join(","));
        for item in &inputs {
            if let Some(s) = url_scheme(item) {
                if !plugin_methods.contains(&s) {
                    plugin_methods.push(s);
                }
            }
        }
    }
    if stf == "NO" && !inputs.is_empty() {
        return Err(SubmitError::InvalidValue {
            file: ctx.file.to_string(),
            line: stf_cmd
                .as_ref()
                .map_or(ctx.queue_line, |c| ctx.line_or_queue(c.line)),
            command: "should_transfer_files".to_string(),
            reason: "NO cannot be combined with transfer_input_files".to_string(),
        });
    }
    if plugin_methods.iter().any(|m| m == "s3" || m == "gs")
        && ctx
            .get(&[
                "aws_secret_access_key_file",
                "s3_secret_access_key_file",
                "gs_secret_access_key_file",
            ])?
            .is_none()
    {
        return Err(SubmitError::InvalidValue {
            file: ctx.file.to_string(),
            line: ctx.queue_line,
            command: "transfer_input_files".to_string(),
            reason: "s3:// and gs:// URLs need aws_secret_access_key_file (or gs_...) to be set"
                .to_string(),
        });
    }
    if !plugin_methods.is_empty() {
        ad.str("WantTransferPluginMethods", &plugin_methods.join(","));
    }
    // a scheme the job brings its own plugin for needs nothing of the slot
    plugin_methods.retain(|m| !job_plugin_methods.contains(m));
    let input_bytes: u64 = exe_size.unwrap_or(0);
    ad.int(
        "TransferInputSizeMB",
        input_bytes.div_ceil(1024 * 1024) as i64,
    );
    if let Some(size) = exe_size {
        let kib = size.div_ceil(1024) as i64;
        ad.int("ExecutableSize", kib);
        ad.int("ImageSize", kib);
        ad.int("DiskUsage", kib);
    }

    // Policy.
    for (cmd, attr) in [
        ("periodic_hold", "PeriodicHold"),
        ("periodic_hold_reason", "PeriodicHoldReason"),
        ("periodic_hold_subcode", "PeriodicHoldSubCode"),
        ("periodic_release", "PeriodicRelease"),
        ("periodic_remove", "PeriodicRemove"),
        ("periodic_vacate", "PeriodicVacate"),
        ("on_exit_hold", "OnExitHold"),
        ("on_exit_hold_reason", "OnExitHoldReason"),
        ("on_exit_hold_subcode", "OnExitHoldSubCode"),
        ("on_exit_remove", "OnExitRemove"),
        ("leave_in_queue", "LeaveJobInQueue"),
        ("allowed_job_duration", "AllowedJobDuration"),
        ("allowed_execute_duration", "AllowedExecuteDuration"),
        ("job_max_vacate_time", "JobMaxVacateTime"),
        ("max_job_retirement_time", "MaxJobRetirementTime"),
        ("deferral_time", "DeferralTime"),
        ("deferral_window", "DeferralWindow"),
        ("deferral_prep_time", "DeferralPrepTime"),
        ("rank", "Rank"),
        ("job_lease_duration", "JobLeaseDuration"),
        ("concurrency_limits_expr", "ConcurrencyLimitsExpr"),
        ("want_graceful_removal", "WantGracefulRemoval"),
        ("coresize", "CoreSize"),
    ] {
        let names: [&'static str; 1] = [cmd];
        if let Some(c) = ctx.get(&names)? {
            ad.set(attr, ctx.expr(&c)?);
        }
    }
    let success = ctx.get(&["success_exit_code"])?;
    if let Some(c) = &success {
        ad.int("JobSuccessExitCode", ctx.integer(c)?);
    }
    if let Some(c) = ctx.get(&["max_retries"])? {
        ad.int("JobMaxRetries", ctx.integer(&c)?);
        let cond = if success.is_some() {
            "NumJobCompletions > JobMaxRetries || ExitCode =?= JobSuccessExitCode"
        } else {
            "NumJobCompletions > JobMaxRetries || ExitCode =?= 0"
        };
        if !ad.has("OnExitRemove") {
            ad.set(
                "OnExitRemove",
                parse_expr(cond).unwrap_or(Expr::boolean(true)),
            );
        }
        if !ad.has("OnExitHold") {
            ad.boolean("OnExitHold", false);
        }
    }
    // `$$()` match-time substitution keeps the names of the last N
    // machines matched (`LastMatchName0..`), rotated by the schedd.
    if let Some(c) = ctx.get(&["match_list_length"])? {
        ad.int("LastMatchListLength", ctx.integer(&c)?);
    }
    if let Some(c) = ctx.get(&["retry_until"])? {
        ad.set("RetryUntil", ctx.expr(&c)?);
    }
    for (cmd, attr) in [
        ("kill_sig", "KillSig"),
        ("remove_kill_sig", "RemoveKillSig"),
        ("hold_kill_sig", "HoldKillSig"),
    ] {
        let names: [&'static str; 1] = [cmd];
        if let Some(c) = ctx.get(&names)? {
            ad.str(attr, &c.value);
        }
    }
    if !ad.has("KillSig") && (local_like || uni == universe::JAVA || uni == universe::PARALLEL) {
        ad.str("KillSig", "SIGTERM");
    }

    // Scheduling and bookkeeping.
    match ctx.get(&["priority", "prio"])? {
        Some(c) => ad.int("JobPrio", ctx.integer(&c)?),
        None => ad.int("JobPrio", 0),
    }
    let nice = match ctx.get(&["nice_user"])? {
        Some(c) => ctx.boolean(&c)?,
        None => false,
    };
    let notification = match ctx.get(&["notification"])? {
        Some(c) => match c.value.to_ascii_lowercase().as_str() {
            "never" => 0,
            "always" => 1,
            "complete" => 2,
            "error" => 3,
            "start" => 4,
            _ => {
                return Err(ctx.invalid(
                    &c,
                    format!(
                        "'{}' is not Always, Complete, Error, Start or Never",
                        c.value
                    ),
                ))
            }
        },
        None => 0,
    };
    ad.int("JobNotification", notification);
    // Chirp: the starter's I/O proxy for the job (set only when asked, as
    // condor_submit does).
    if let Some(c) = ctx.get(&["want_io_proxy"])? {
        if ctx.boolean(&c)? {
            ad.boolean("WantIOProxy", true);
        }
    }
    if let Some(c) = ctx.get(&["notify_user"])? {
        ad.str("NotifyUser", &c.value);
    }
    if let Some(c) = ctx.get(&["batch_name", "JobBatchName"])? {
        let v = c.value.trim_matches('"');
        ad.str("JobBatchName", v);
    }
    if let Some(c) = ctx.get(&["concurrency_limits"])? {
        let lower = normalize_list(&c.value).to_ascii_lowercase();
        let mut limits: Vec<&str> = lower.split(',').collect();
        limits.sort_unstable();
        ad.str("ConcurrencyLimits", &limits.join(","));
    }
    let group = ctx.get(&["accounting_group"])?;
    let group_user = ctx.get(&["accounting_group_user"])?;
    if nice {
        ad.str("AccountingGroup", &format!("nice-user.{}", opts.owner));
        ad.int("MaxJobRetirementTime", 0);
    } else if let Some(g) = &group {
        let user = group_user
            .as_ref()
            .map_or(opts.owner.as_str(), |u| u.value.as_str());
        ad.str("AcctGroup", &g.value);
        ad.str("AcctGroupUser", user);
        ad.str("AccountingGroup", &format!("{}.{user}", g.value));
    } else if let Some(u) = &group_user {
        ad.str("AcctGroupUser", &u.value);
        ad.str("AccountingGroup", &u.value);
    }
    if uni == universe::PARALLEL {
        // condor_submit reads the count as C's atoi does: "2.7" is 2, "abc" is 0.
        let n = match ctx.get(&["machine_count", "node_count"])? {
            Some(c) => leading_int(&c.value),
            None => {
                return Err(SubmitError::MissingMachineCount {
                    file: ctx.file.to_string(),
                    line: ctx.queue_line,
                })
            }
        };
        ad.int("MaxHosts", n);
        ad.int("MinHosts", n);
        // Every node talks to the submit side (chirp) and has its own sandbox.
        ad.boolean("WantIOProxy", true);
        ad.boolean("JobRequiresSandbox", true);
    } else {
        ad.int("MaxHosts", 1);
        ad.int("MinHosts", 1);
    }
    // condor_submit's JOB_DEFAULT_LEASE_DURATION (2400 s) for a job that
    // may reconnect; `job_lease_duration = 0` (or a default of 0) leaves it
    // undefined (no reconnect: the job is rerun when its schedd restarts).
    let no_lease = match ctx.get(&["job_lease_duration"])? {
        Some(c) => matches!(
            parse_expr(&c.value).map(|e| classad::eval(&e)),
            Ok(Value::Int(0))
        ),
        None => false,
    };
    if no_lease {
        ad.0.remove("JobLeaseDuration");
    } else if !ad.has("JobLeaseDuration") && !local_like && opts.default_lease_duration > 0 {
        ad.int("JobLeaseDuration", opts.default_lease_duration);
    }
    if !ad.has("Rank") {
        ad.real("Rank", 0.0);
    }
    if !ad.has("LeaveJobInQueue") {
        ad.boolean("LeaveJobInQueue", false);
    }
    if let Some(c) = ctx.get(&["x509userproxy"])? {
        let path = join_path(&iwd, &c.value);
        if files.read(&path).is_err() {
            return Err(ctx.invalid(&c, format!("unable to read proxy file {path}")));
        }
        ad.str("x509userproxy", &path);
    }

    // Status.
    let hold = match ctx.get(&["hold"])? {
        Some(c) => ctx.boolean(&c)?,
        None => false,
    };
    if hold {
        ad.int("JobStatus", JobStatus::Held.code());
        ad.int("HoldReasonCode", 15);
        ad.int("HoldReasonSubCode", 0);
        ad.str("HoldReason", "submitted on hold at user's request");
    } else {
        ad.int("JobStatus", JobStatus::Idle.code());
    }

    // The standard attributes of a new job.
    ad.int("ClusterId", i64::from(opts.cluster_id));
    ad.int("ProcId", ctx.proc_id as i64);
    ad.int("QDate", opts.now);
    ad.int("EnteredCurrentStatus", opts.now);
    ad.str("Owner", &opts.owner);
    ad.str("MyType", "Job");
    ad.str("TargetType", "Machine");
    ad.int("JobSubmitMethod", 0);
    for name in [
        "CommittedSlotTime",
        "CommittedSuspensionTime",
        "CommittedTime",
        "CumulativeSlotTime",
        "CumulativeSuspensionTime",
        "CurrentHosts",
        "ExitStatus",
        "LastSuspensionTime",
        "NumCkpts",
        "NumJobCompletions",
        "NumJobStarts",
        "NumRestarts",
        "NumSystemHolds",
        "TotalSuspensions",
    ] {
        ad.int(name, 0);
    }
    for name in [
        "CumulativeRemoteSysCpu",
        "CumulativeRemoteUserCpu",
        "RemoteSysCpu",
        "RemoteUserCpu",
        "RemoteWallClockTime",
    ] {
        ad.real(name, 0.0);
    }
    ad.boolean("ExitBySignal", false);

    // SUBMIT_ATTRS, then the submit file's own attributes (which win).
    for (name, text) in &opts.submit_attrs {
        if let Ok(e) = parse_expr(text) {
            ad.set(name, e);
        }
    }
    for attr in &ctx.reader.table.custom {
        let key = format!("MY.{attr}");
        let Some(def) = ctx.reader.table.get(&key) else {
            continue;
        };
        let value = ctx.expand(&key, &def.raw, def.line)?;
        let value = value.trim();
        let cmd = Cmd {
            value: value.to_string(),
            line: def.line,
            name: "+attribute",
        };
        if value.is_empty() {
            return Err(ctx.invalid(&cmd, format!("attribute {attr} has no value")));
        }
        let e = parse_expr(value).map_err(|e| {
            ctx.invalid(
                &cmd,
                format!("invalid expression for {attr} '{value}': {e}"),
            )
        })?;
        ad.set(attr, e);
    }

    // Requirements, with HTCondor's default clauses.
    let user_req = ctx.get(&["requirements"])?;
    let mut refs = Vec::new();
    let mut clauses: Vec<String> = Vec::new();
    if let Some(c) = &user_req {
        let e = parse_expr(&c.value)
            .map_err(|e| ctx.invalid(c, format!("invalid expression '{}': {e}", c.value)))?;
        referenced(&e, &mut refs);
        clauses.push(format!("({})", c.value));
    }
    let mentions = |name: &str| refs.iter().any(|r| r.eq_ignore_ascii_case(name));
    let needs_fs_domain;
    if uni == universe::JAVA {
        clauses.push("TARGET.HasJava".to_string());
    } else {
        if !mentions("Arch") {
            clauses.push(format!("(TARGET.Arch == \"{}\")", opts.arch));
        }
        if docker {
            clauses.push("TARGET.HasDocker".to_string());
        } else if container {
            clauses.push("TARGET.HasContainer".to_string());
            if let Some(kind) = container_kind {
                clauses.push(format!("TARGET.{kind}"));
            }
        } else if !mentions("OpSys") && !mentions("OpSysAndVer") && !mentions("OpSysName") {
            clauses.push(format!("(TARGET.OpSys == \"{}\")", opts.opsys));
        }
    }
    if mentions("Disk") || uni != universe::VANILLA {
        clauses.push("(TARGET.Disk >= RequestDisk)".to_string());
    } else {
        clauses.push(
            "(versionGE(split(TARGET.CondorVersion)[1], \"25.12.0\") || (TARGET.Disk >= RequestDisk))"
                .to_string(),
        );
    }
    if !mentions("Memory") {
        clauses.push("(TARGET.Memory >= RequestMemory)".to_string());
    }
    if cpus_clause && !mentions("Cpus") {
        clauses.push("(TARGET.Cpus >= RequestCpus)".to_string());
    }
    if gpus.is_some() && !mentions("GPUs") {
        if require_gpus.is_some() {
            clauses.push(
                "(countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs)".to_string(),
            );
        } else {
            clauses.push("(TARGET.GPUs >= RequestGPUs)".to_string());
        }
    }
    for res in &custom_requests {
        if !mentions(res) {
            clauses.push(format!("(TARGET.{res} >= Request{res})"));
        }
    }
    if local_like || mentions("HasFileTransfer") || mentions("FileSystemDomain") {
        needs_fs_domain = true;
    } else {
        let plugins = plugin_methods
            .iter()
            .map(|m| format!(" && stringListIMember(\"{m}\", TARGET.HasFileTransferPluginMethods)"))
            .collect::<String>();
        // Checkpoint files need a starter that sends them (HTCondor's version floor).
        let ckpt_version = if checkpoint_files.is_some() {
            " && versioncmp(split(TARGET.CondorVersion)[1], \"8.9.7\") >= 0"
        } else {
            ""
        };
        let ft = format!("TARGET.HasFileTransfer{ckpt_version}{plugins}");
        let fs = "TARGET.FileSystemDomain == MY.FileSystemDomain";
        match stf.as_str() {
            "NO" => {
                clauses.push(format!("({fs})"));
                needs_fs_domain = true;
            }
            "YES" => {
                clauses.push(format!("({ft})"));
                needs_fs_domain = false;
            }
            _ => {
                clauses.push(format!("(({fs}) || ({ft}))"));
                needs_fs_domain = true;
            }
        }
    }
    if ad.has("DeferralTime") {
        if !ad.has("DeferralWindow") {
            ad.int("DeferralWindow", 0);
        }
        if !ad.has("DeferralPrepTime") {
            ad.int("DeferralPrepTime", 300);
        }
        ad.int("ScheddInterval", 300);
        clauses.push("TARGET.HasJobDeferral".to_string());
        clauses.push("(((time() + ScheddInterval) >= (DeferralTime - DeferralPrepTime)) && (time() < (DeferralTime + DeferralWindow)))".to_string());
    }
    if checkpoint_exit.is_some() {
        clauses.push("TARGET.HasSelfCheckpointTransfers".to_string());
    }
    // Skua's opt-in to a transparent checkpoint backend (`+SkuaCheckpoint = "criu"`): only a
    // slot that offers that backend will do.
    if ad.has("SkuaCheckpoint") {
        clauses.push("stringListIMember(MY.SkuaCheckpoint, TARGET.CheckpointBackends)".to_string());
    }
    if needs_fs_domain {
        ad.str("FileSystemDomain", &opts.filesystem_domain);
    }
    let req_text = clauses.join(" && ");
    let req = parse_expr(&req_text).map_err(|e| match &user_req {
        Some(c) => ctx.invalid(c, format!("invalid requirements '{req_text}': {e}")),
        None => SubmitError::Syntax {
            file: ctx.file.to_string(),
            line: ctx.queue_line,
            message: format!("invalid requirements '{req_text}': {e}"),
        },
    })?;
    ad.set("Requirements", req);
    Ok(ad.0)
}
