//! The commands that talk to a running pool: `skua status`, `skua pool
//! start|stop`, `skua token create`, `skua off|on|restart|reconfig`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use classad::ClassAd;
use skua_daemon::context::Locator;
use skua_master::{PoolLayout, PoolOptions};
use skua_net::{AuthLevel, Client, Endpoint};
use skua_proto::{routes, CommandReply, DaemonCommand, MasterCommand, Query, QueryReply};

use crate::ad_output::{AdOutput, AdOutputArgs};
use crate::opt;
use crate::status_fmt;

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

pub(crate) fn load_config() -> Result<skua_config::Config> {
    let config = skua_daemon::system_config::load(Some("TOOL"), None).context("configuration")?;
    for w in config.warnings() {
        eprintln!("skua: warning: {w}");
    }
    Ok(config)
}

/// A client for a daemon of the pool this configuration describes: its Unix
/// socket when local (identified by the kernel), else TCP with the user's
/// token. With `SKUA_TOKEN_FILE` set, always the network with that token:
/// the caller speaks as the token's identity.
pub(crate) fn client_for(
    config: &skua_config::Config,
    subsystem: &str,
    timeout: Duration,
) -> Result<Client> {
    let client = unnamed_client_for(config, subsystem, timeout)?;
    // a daemon that does not answer is named, with where it was asked, and
    // given up on after TOOL_TIMEOUT seconds at most
    let timeout = timeout.min(tool_timeout(config));
    let label = format!(
        "the {} at {}",
        subsystem.to_ascii_lowercase(),
        client.label()
    );
    Ok(client.with_label_and_timeout(label, timeout))
}

/// `TOOL_TIMEOUT`: the longest a tool waits for a daemon's answer, in seconds (default 20;
/// HTCondor's tools wait a fixed time scaled by `TOOL_TIMEOUT_MULTIPLIER`).
pub(crate) fn tool_timeout(config: &skua_config::Config) -> Duration {
    let secs = config
        .get("TOOL_TIMEOUT")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS);
    Duration::from_secs(secs)
}

/// `TOOL_TIMEOUT`'s default.
const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 20;

fn unnamed_client_for(
    config: &skua_config::Config,
    subsystem: &str,
    timeout: Duration,
) -> Result<Client> {
    if let Some(path) = std::env::var_os("SKUA_TOKEN_FILE") {
        let path = PathBuf::from(path);
        let token = std::fs::read_to_string(&path)
            .with_context(|| format!("SKUA_TOKEN_FILE {}", path.display()))?;
        return Ok(Locator::new(config, subsystem)?
            .network_client(Some(token.trim().to_string()), timeout)?);
    }
    let locator = Locator::new(config, subsystem)?;
    let endpoint = locator.endpoint()?;
    if let Endpoint::Unix(_) = endpoint {
        return Ok(Client::new(endpoint, None, timeout)?);
    }
    // over the network (through the host's shared port when the daemon's
    // address names one), with the user's token
    let dirs = skua_daemon::security::token_dirs(config, home().as_deref())?;
    let token = skua_daemon::security::find_token(&dirs);
    Ok(locator.network_client(token, timeout)?)
}

/// The user's token, if any: `SKUA_TOKEN_FILE`, else the first in the
/// token directories.
fn user_token(config: &skua_config::Config) -> Result<Option<String>> {
    if let Some(path) = std::env::var_os("SKUA_TOKEN_FILE") {
        let path = PathBuf::from(path);
        let token = std::fs::read_to_string(&path)
            .with_context(|| format!("SKUA_TOKEN_FILE {}", path.display()))?;
        return Ok(Some(token.trim().to_string()));
    }
    let dirs = skua_daemon::security::token_dirs(config, home().as_deref())?;
    Ok(skua_daemon::security::find_token(&dirs))
}

/// The pool CA (`AUTH_SSL_CLIENT_CAFILE`), if configured.
fn pool_ca(config: &skua_config::Config) -> Result<Option<String>> {
    match config
        .get("AUTH_SSL_CLIENT_CAFILE")
        .context("AUTH_SSL_CLIENT_CAFILE")?
    {
        Some(path) => {
            Ok(Some(std::fs::read_to_string(&path).with_context(|| {
                format!("AUTH_SSL_CLIENT_CAFILE {path}")
            })?))
        }
        None => Ok(None),
    }
}

/// A client for the daemon at `address` (an ad's `MyAddress`, HTCondor's
/// sinful string), on another host or in another pool: over the network,
/// TLS trusting `AUTH_SSL_CLIENT_CAFILE` unless loopback, with the user's
/// token if they have one (else anonymous: READ at most).
pub(crate) fn client_at_address(
    config: &skua_config::Config,
    address: &str,
    timeout: Duration,
) -> Result<Client> {
    let token = user_token(config)?;
    let ca = pool_ca(config)?;
    skua_daemon::context::client_at(address, token, ca, timeout)
        .with_context(|| format!("reaching {address}"))
}

/// A client for the collector: this pool's, or with `pool`
/// (`HOST[:PORT]`, port 9618 by default) another pool's, over the network
/// as [`client_at_address`].
pub(crate) fn collector_client(
    config: &skua_config::Config,
    pool: Option<&str>,
    timeout: Duration,
) -> Result<Client> {
    let Some(pool) = pool else {
        return client_for(config, "COLLECTOR", timeout);
    };
    let addr = resolve_pool(pool)?;
    client_at_address(config, &format!("<{addr}>"), timeout)
}

/// `HOST[:PORT]` (or `<ip:port>`) to an address, port 9618 by default.
fn resolve_pool(pool: &str) -> Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let hp = pool.trim().trim_start_matches('<').trim_end_matches('>');
    let hp = hp.split('?').next().unwrap_or(hp);
    if let Ok(a) = hp.parse::<std::net::SocketAddr>() {
        return Ok(a);
    }
    let with_port = match hp.rsplit_once(':') {
        Some((_, p)) if p.parse::<u16>().is_ok() => hp.to_string(),
        _ => format!("{hp}:{}", skua_daemon::context::DEFAULT_COLLECTOR_PORT),
    };
    with_port
        .to_socket_addrs()
        .with_context(|| format!("-pool {pool}: cannot resolve"))?
        .next()
        .with_context(|| format!("-pool {pool}: no address"))
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

pub(crate) fn report(cmd: &str, r: Result<ExitCode>) -> ExitCode {
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skua {cmd}: {e:#}");
            ExitCode::from(1)
        }
    }
}

// ----- skua status ----------------------------------------------------------

#[derive(clap::Args)]
pub struct StatusArgs {
    /// Only ads for which this ClassAd expression is true.
    #[arg(long)]
    constraint: Option<String>,
    #[command(flatten)]
    output: AdOutputArgs,
    /// Master ads instead of machine slots.
    #[arg(long)]
    master: bool,
    /// Scheduler ads.
    #[arg(long)]
    schedd: bool,
    /// Collector ads.
    #[arg(long)]
    collector: bool,
    /// Negotiator ads.
    #[arg(long)]
    negotiator: bool,
    /// Ads of every type.
    #[arg(long)]
    any: bool,
    /// The slots' states and activities with their times
    /// (condor_status -state).
    #[arg(long)]
    state: bool,
    /// Another pool's collector, `HOST[:PORT]` (port 9618 by default).
    #[arg(long, value_name = "HOST[:PORT]")]
    pool: Option<String>,
    /// Only the totals that end the table (condor_status -total).
    #[arg(long, alias = "totals")]
    total: bool,
    /// One row per machine, its dynamic slots rolled up
    /// (condor_status -compact).
    #[arg(long)]
    compact: bool,
    /// Only slots that can take a job now: Unclaimed, with CPUs and memory.
    #[arg(long, conflicts_with_all = ["claimed", "run"])]
    avail: bool,
    /// Only claimed slots, with who runs on them and their totals.
    #[arg(long)]
    claimed: bool,
    /// The slots running jobs: the same as `-claimed`.
    #[arg(long)]
    run: bool,
    /// A printf-style format for an attribute (repeatable, applied in
    /// order, with no newline but the formats' own: `-format "%s\n" Name`).
    #[arg(
        short = 'f',
        long = "format",
        num_args = 2,
        value_names = ["FMT", "ATTR"],
        action = clap::ArgAction::Append,
        allow_hyphen_values = true
    )]
    format: Vec<String>,
    /// Ask this host's daemon directly instead of the collector.
    #[arg(long, value_name = "HOST")]
    direct: Option<String>,
}

/// The constraint `-avail` adds (condor_status's).
const AVAIL_CONSTRAINT: &str = "State == \"Unclaimed\" && Cpus > 0 && Memory > 0";
/// The constraint `-claimed` and `-run` add.
const CLAIMED_CONSTRAINT: &str = "State == \"Claimed\"";

/// Whether an `-af` argument names an attribute (rather than being an
/// expression).
fn plain_attribute_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Two constraints that must both hold.
fn and_constraints(a: Option<&str>, b: Option<&str>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("({a}) && ({b})")),
        (Some(x), None) | (None, Some(x)) => Some(x.to_string()),
        (None, None) => None,
    }
}

pub fn status(a: StatusArgs) -> ExitCode {
    report("status", status_inner(a))
}

fn status_inner(a: StatusArgs) -> Result<ExitCode> {
    let ad_type = if a.master {
        "Master"
    } else if a.schedd {
        "Scheduler"
    } else if a.collector {
        "Collector"
    } else if a.negotiator {
        "Negotiator"
    } else if a.any {
        "Any"
    } else {
        "Machine"
    };
    if let Some(c) = &a.constraint {
        classad::parse_expr(c).with_context(|| format!("-constraint {c:?}"))?;
    }
    if let Some(host) = &a.direct {
        bail!(
            "-direct {host}: Skua's daemons do not answer queries for their ads themselves \
             (every ad reaches the tools through the collector); ask the collector for that \
             host's ads instead: skua status -constraint 'Machine == \"{host}\"'"
        );
    }
    let slots = ad_type == "Machine";
    let claimed = a.claimed || a.run;
    if (a.compact || a.avail || claimed) && !slots {
        bail!("-compact, -avail, -claimed and -run apply to slot (machine) ads only");
    }
    let mut compact = a.compact;
    if compact && a.total {
        eprintln!("Warning: ignoring -compact option because -total option is also set");
        compact = false;
    }
    let af_options = match &a.output.af_qualifiers {
        Some(q) => Some(crate::print_fmt::AfOptions::parse(q).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let format_pairs: Vec<(String, String)> = a
        .format
        .chunks(2)
        .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
        .collect();
    let mode_constraint = if a.avail {
        Some(AVAIL_CONSTRAINT)
    } else if claimed {
        Some(CLAIMED_CONSTRAINT)
    } else {
        None
    };
    let config = load_config()?;
    let client = collector_client(&config, a.pool.as_deref(), Duration::from_secs(20))?;
    let q = Query {
        ad_type: ad_type.to_string(),
        constraint: and_constraints(a.constraint.as_deref(), mode_constraint),
        // the collector projects attribute names: an expression's
        // attributes (and theirs) are only sure to be there in whole ads
        projection: if format_pairs.is_empty()
            && !af_options.as_ref().is_some_and(|o| o.job_id)
            && a.output.af.iter().all(|x| plain_attribute_name(x))
        {
            a.output.af.clone()
        } else {
            Vec::new()
        },
    };
    let reply: QueryReply =
        runtime()?.block_on(client.command(&routes::COLLECTOR_QUERY, Some(&q)))?;
    let mut ads: Vec<ClassAd> = Vec::with_capacity(reply.ads.len());
    for text in &reply.ads {
        ads.push(
            classad::parse_ad(text)
                .with_context(|| "the collector sent an ad that does not parse")?,
        );
    }
    let key = |ad: &ClassAd| match ad.lookup("Name") {
        Some(classad::Expr::Lit(v)) => v.as_string().unwrap_or_default(),
        _ => String::new(),
    };
    ads.sort_by_key(key);
    let now = skua_daemon::now_secs();
    let chosen = a.output.chosen();
    let out = match chosen {
        Some(form @ (AdOutput::Json | AdOutput::Long)) => form.render(&ads, now),
        _ if a.total => {
            if !slots {
                match ad_type {
                    "Scheduler" => status_fmt::schedd_totals(&ads, now),
                    _ => String::new(),
                }
            } else if claimed {
                status_fmt::claimed_totals(&ads, now)
            } else {
                status_fmt::machine_totals(&ads, now)
            }
        }
        Some(AdOutput::Autoformat(attrs)) => match &af_options {
            Some(o) => crate::print_fmt::format_autoformat_with(&ads, &attrs, o, now),
            None => crate::ad_output::format_autoformat(&ads, &attrs, now),
        },
        None if !format_pairs.is_empty() => {
            crate::print_fmt::format_custom(&ads, &format_pairs, now)
        }
        None if compact => status_fmt::format_compact(&ads, now),
        None if claimed => status_fmt::format_claimed(&ads, now),
        None if a.state && slots => status_fmt::format_state(&ads, now),
        None if ad_type == "Negotiator" => {
            status_fmt::format_negotiators(&ads, now, crate::queue_cmd::utc_offset(now))
        }
        None => status_fmt::format_default(ad_type, &ads, now),
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

// ----- skua off|on|restart|reconfig ------------------------------------------

#[derive(clap::Args)]
pub struct DaemonArgs {
    /// The daemon (e.g. collector); all daemons when omitted.
    daemon: Option<String>,
}

pub fn master_command(command: MasterCommand, a: DaemonArgs) -> ExitCode {
    let name = format!("{command:?}").to_ascii_lowercase();
    report(
        &name,
        (|| {
            let config = load_config()?;
            let client = client_for(&config, "MASTER", Duration::from_secs(20))?;
            let body = DaemonCommand {
                command,
                daemon: a.daemon.map(|d| d.to_ascii_uppercase()),
            };
            let reply: CommandReply =
                runtime()?.block_on(client.command(&routes::MASTER_COMMAND, Some(&body)))?;
            println!("{}", reply.message);
            Ok(ExitCode::SUCCESS)
        })(),
    )
}

// ----- skua token create ------------------------------------------------------

#[derive(clap::Subcommand)]
pub enum TokenCommand {
    /// Issue a token signed with the pool signing key (needs read access to
    /// the key, i.e. the pool's administrator); `--join`: a join token.
    Create(TokenCreateArgs),
    /// The host credentials the collector issued (ADMINISTRATOR).
    List(crate::join_cmd::TokenListArgs),
    /// Revoke a host credential by its id, or every credential of a host.
    Revoke(crate::join_cmd::TokenRevokeArgs),
}

#[derive(clap::Args)]
pub struct TokenCreateArgs {
    /// The identity the token speaks for, user@domain.
    #[arg(long, required_unless_present = "join", conflicts_with = "join")]
    identity: Option<String>,
    /// A join token instead: lets one host join the pool once
    /// (`skua pool join`), for `--lifetime` seconds (default 3600).
    #[arg(long)]
    join: bool,
    /// Levels the token may be used for (repeatable); default READ and WRITE.
    #[arg(long = "authz", value_name = "LEVEL")]
    authz: Vec<String>,
    /// Lifetime in seconds (default: no expiry).
    #[arg(long)]
    lifetime: Option<u64>,
    /// Also save the token as this file name in SEC_TOKEN_DIRECTORY.
    #[arg(long)]
    token_file: Option<String>,
}

pub fn token(cmd: TokenCommand) -> ExitCode {
    let a = match cmd {
        TokenCommand::Create(a) => a,
        TokenCommand::List(a) => return report("token list", crate::join_cmd::token_list(&a)),
        TokenCommand::Revoke(a) => {
            return report("token revoke", crate::join_cmd::token_revoke(&a))
        }
    };
    report(
        "token create",
        (|| {
            let config = load_config()?;
            let key = skua_daemon::security::load_signing_key(&config, false)?.context(
                "no pool signing key (SEC_TOKEN_POOL_SIGNING_KEY_FILE) is readable here",
            )?;
            if a.join {
                if !a.authz.is_empty() || a.token_file.is_some() {
                    bail!("{} takes only {}", opt("join"), opt("lifetime"));
                }
                println!("{}", crate::join_cmd::join_token(&key, a.lifetime)?);
                return Ok(ExitCode::SUCCESS);
            }
            let identity = a
                .identity
                .as_deref()
                .with_context(|| format!("{} is required", opt("identity")))?;
            let levels: Vec<AuthLevel> = if a.authz.is_empty() {
                vec![AuthLevel::Read, AuthLevel::Write]
            } else {
                a.authz
                    .iter()
                    .map(|l| {
                        l.parse::<AuthLevel>()
                            .map_err(|e| anyhow::anyhow!("{} {l}: {e:?}", opt("authz")))
                    })
                    .collect::<Result<_>>()?
            };
            let token = skua_net::issue_token(
                &key,
                identity,
                &levels,
                a.lifetime.map(Duration::from_secs),
            )?;
            if let Some(name) = &a.token_file {
                if name.contains('/') {
                    bail!("{} takes a file name, not a path", opt("token-file"));
                }
                let dirs = skua_daemon::security::token_dirs(&config, home().as_deref())?;
                let dir = dirs.first().context("no token directory is configured")?;
                std::fs::create_dir_all(dir)?;
                let path = dir.join(name);
                write_private(&path, &token)?;
                eprintln!("saved to {}", path.display());
            }
            println!("{token}");
            Ok(ExitCode::SUCCESS)
        })(),
    )
}

pub(crate) fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

// ----- skua pool start|stop -------------------------------------------------

#[derive(clap::Subcommand)]
pub enum PoolCommand {
    /// Write DIR/skua_config (kept if it exists), start the master in the
    /// background, and return once the pool answers. With `--role
    /// central-manager`: the central manager of a pool of several machines,
    /// which prints the command other hosts join it with.
    Start(PoolStartArgs),
    /// Stop the pool's daemons cleanly.
    Stop(PoolArgs),
    /// Join the pool of a central manager: verify it by its CA hash, obtain
    /// this host's certificate, write DIR/skua_config, start the master.
    Join(crate::join_cmd::PoolJoinArgs),
}

#[derive(clap::Args)]
pub struct PoolStartArgs {
    #[command(flatten)]
    pub(crate) pool: PoolArgs,
    /// This host's roles in a pool of several machines: central-manager,
    /// submit, execute (repeat the option or separate with commas). Without
    /// it: a personal pool on loopback.
    #[arg(long = "role", value_delimiter = ',')]
    pub(crate) roles: Vec<String>,
    /// This host's address, where its daemons listen (default: the address
    /// its host name resolves to).
    #[arg(long)]
    pub(crate) address: Option<String>,
    /// The collector's port (default 9618).
    #[arg(long)]
    pub(crate) collector_port: Option<u16>,
}

#[derive(clap::Args)]
pub struct PoolArgs {
    /// The pool directory (default ~/.skua/pool).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
}

pub(crate) fn pool_dir(a: &PoolArgs) -> Result<PathBuf> {
    match &a.dir {
        Some(d) => Ok(std::path::absolute(d)?),
        None => Ok(skua_master::default_pool_dir(
            &home().context("HOME is not set; give --dir")?,
        )),
    }
}

pub(crate) fn config_for(dir: &Path) -> Result<skua_config::Config> {
    // the pool's own configuration, whatever SKUA_CONFIG says
    let layout = PoolLayout::new(dir);
    let env = skua_daemon::system_config::environment();
    let opts = skua_config::LoadOptions {
        main_file: Some(layout.config_file().to_string_lossy().into_owned()),
        subsystem: Some("TOOL".into()),
        local_name: None,
        host: skua_daemon::system_config::host_facts(&env),
        env,
        random_seed: 1,
    };
    Ok(skua_config::Config::load(
        &skua_daemon::system_config::RealFiles,
        &opts,
    )?)
}

pub fn pool(cmd: PoolCommand) -> ExitCode {
    match cmd {
        PoolCommand::Start(a) if !a.roles.is_empty() => {
            report("pool start", crate::join_cmd::pool_start_network(&a))
        }
        PoolCommand::Start(a) => report("pool start", pool_start(&a.pool)),
        PoolCommand::Stop(a) => report("pool stop", pool_stop(&a)),
        PoolCommand::Join(a) => report("pool join", crate::join_cmd::pool_join(&a)),
    }
}

pub(crate) fn answers(
    config: &skua_config::Config,
    subsystem: &str,
    rt: &tokio::runtime::Runtime,
) -> bool {
    match client_for(config, subsystem, Duration::from_secs(2)) {
        Ok(c) => rt.block_on(c.hello()).is_ok(),
        Err(_) => false,
    }
}

/// Creates a personal pool's directories in `dir` and writes its
/// configuration file unless one is there (a user's edits are kept).
/// Returns the configuration file and whether it was written now.
fn prepare_pool_dir(dir: &Path, skuad: &Path) -> Result<(PathBuf, bool)> {
    let layout = PoolLayout::new(dir);
    for d in layout.directories() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&d.path)
            .with_context(|| format!("creating {}", d.path.display()))?;
        std::fs::set_permissions(&d.path, std::fs::Permissions::from_mode(d.mode))?;
    }
    let config_file = layout.config_file();
    if config_file.exists() {
        return Ok((config_file, false));
    }
    let opts = PoolOptions {
        skuad: Some(skuad.to_path_buf()),
        ..PoolOptions::default()
    };
    std::fs::write(&config_file, layout.config_text(&opts)?)
        .with_context(|| format!("writing {}", config_file.display()))?;
    Ok((config_file, true))
}

/// `skuad master` with no configuration file anywhere (no `SKUA_CONFIG`
/// or `CONDOR_CONFIG`, nothing at the default paths), or with an empty
/// one: the master runs the
/// default personal pool in `~/.skua/pool`, as `skua pool start` would,
/// and points itself and its children at that pool's configuration.
/// Returns the pool directory when it did so.
pub(crate) fn personal_pool_without_config() -> Result<Option<PathBuf>> {
    let env = skua_daemon::system_config::environment();
    let configured = match skua_daemon::system_config::main_file(&env) {
        // an empty file (blank and comment lines only) configures nothing
        Some(file) => std::fs::read_to_string(&file).map_or(true, |text| {
            text.lines()
                .map(str::trim)
                .any(|l| !l.is_empty() && !l.starts_with('#'))
        }),
        // `ONLY_ENV`: the environment is the whole configuration
        None => env.contains_key("SKUA_CONFIG") || env.contains_key("CONDOR_CONFIG"),
    };
    let local_dir_set = env.keys().any(|k| {
        k.eq_ignore_ascii_case("_CONDOR_LOCAL_DIR") || k.eq_ignore_ascii_case("_SKUA_LOCAL_DIR")
    });
    if configured || local_dir_set {
        return Ok(None);
    }
    let dir = skua_master::default_pool_dir(
        &home().context("no configuration file and HOME is not set")?,
    );
    let skuad = std::env::current_exe()?;
    let (config_file, _) = prepare_pool_dir(&dir, &skuad)?;
    // Single-threaded here: no runtime or thread exists yet.
    std::env::set_var("SKUA_CONFIG", &config_file);
    Ok(Some(dir))
}

fn pool_start(a: &PoolArgs) -> Result<ExitCode> {
    let dir = pool_dir(a)?;
    let exe = std::env::current_exe()?;
    let skuad = exe.with_file_name("skuad");
    let (config_file, written) = prepare_pool_dir(&dir, &skuad)?;
    if written {
        println!("wrote {}", config_file.display());
    }
    start_master(&dir)?;
    println!("to use it: export SKUA_CONFIG={}", config_file.display());
    Ok(ExitCode::SUCCESS)
}

/// Starts the master of the pool in `dir` (configured already) in the
/// background and returns once it and, when this host runs one, the
/// collector answer; says so if the pool runs already.
pub(crate) fn start_master(dir: &Path) -> Result<()> {
    let layout = PoolLayout::new(dir);
    let config_file = layout.config_file();
    let exe = std::env::current_exe()?;
    let skuad = exe.with_file_name("skuad");
    let config = config_for(dir)?;
    let rt = runtime()?;
    if answers(&config, "MASTER", &rt) {
        println!("the pool in {} is already running", dir.display());
        return Ok(());
    }
    let local_collector = config.get("DAEMON_LIST").ok().flatten().is_some_and(|l| {
        skua_daemon::security::split_list(&l)
            .iter()
            .any(|d| d.eq_ignore_ascii_case("COLLECTOR"))
    });
    let log = layout.log_dir().join("master.out");
    let out = skua_daemon::logging::open_private_append(&log)
        .with_context(|| format!("opening {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = std::process::Command::new(&skuad);
    cmd.arg("master")
        .env("SKUA_CONFIG", &config_file)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", skuad.display()))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if (!local_collector || answers(&config, "COLLECTOR", &rt))
            && answers(&config, "MASTER", &rt)
        {
            break;
        }
        if let Some(status) = child.try_wait()? {
            bail!("the master exited ({status}); see {}", log.display());
        }
        if Instant::now() > deadline {
            bail!(
                "the pool did not answer within 30 s; see {}",
                layout.log_dir().display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "pool running in {} (master pid {})",
        dir.display(),
        child.id()
    );
    Ok(())
}

fn pool_stop(a: &PoolArgs) -> Result<ExitCode> {
    let dir = pool_dir(a)?;
    let layout = PoolLayout::new(&dir);
    if !layout.config_file().exists() {
        bail!("{} holds no pool", dir.display());
    }
    let config = config_for(&dir)?;
    let rt = runtime()?;
    if !answers(&config, "MASTER", &rt) {
        println!("the pool in {} is not running", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let client = client_for(&config, "MASTER", Duration::from_secs(10))?;
    let body = DaemonCommand {
        command: MasterCommand::Off,
        daemon: Some("MASTER".into()),
    };
    let _: CommandReply = rt.block_on(client.command(&routes::MASTER_COMMAND, Some(&body)))?;
    let sock = skua_daemon::context::socket_path(&config, "MASTER")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while sock.exists() {
        if Instant::now() > deadline {
            bail!("the master did not stop within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("pool in {} stopped", dir.display());
    Ok(ExitCode::SUCCESS)
}
