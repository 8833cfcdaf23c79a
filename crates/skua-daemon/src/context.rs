//! The daemon context: configuration, directories, security, and how to
//! reach other daemons.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use skua_config::Config;
use skua_net::{
    Client, ClientIdentity, ConcurrencyLimits, Endpoint, FaultFilter, Revocations, SecurityPolicy,
    ServerConfig, SigningKey,
};

use crate::address::{self, Sinful};
use crate::interfaces::{ListenKnobs, ListenPlan};
use crate::security;

/// HTCondor's default collector port.
pub const DEFAULT_COLLECTOR_PORT: u16 = 9618;

/// Errors setting up or running a daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("{0}")]
    Io(String),
    #[error("security: {0}")]
    Security(String),
    #[error("{0}")]
    Net(String),
}

/// Reads a knob (expanded); `None` when undefined or empty.
pub fn knob(config: &Config, name: &str) -> Result<Option<String>, DaemonError> {
    config
        .get(name)
        .map_err(|e| DaemonError::Config(e.to_string()))
}

/// A knob that must be a non-negative integer.
pub fn knob_u64(config: &Config, name: &str, default: u64) -> Result<u64, DaemonError> {
    match knob(config, name)? {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| {
            DaemonError::Config(format!("{name} = {v:?} is not a non-negative integer"))
        }),
    }
}

/// A boolean knob, as HTCondor reads one: the value is a ClassAd
/// expression (`True`, `false`, `1`, `2 > 1`...); anything that is not a
/// boolean or a number is an error naming the knob.
pub fn knob_bool(config: &Config, name: &str, default: bool) -> Result<bool, DaemonError> {
    let Some(v) = knob(config, name)? else {
        return Ok(default);
    };
    let not_bool = || DaemonError::Config(format!("{name} = {v:?} is not a boolean"));
    let expr = classad::parse_expr(v.trim()).map_err(|_| not_bool())?;
    match classad::Evaluator::default().eval(&expr, None, None) {
        classad::Value::Bool(b) => Ok(b),
        classad::Value::Int(i) => Ok(i != 0),
        classad::Value::Real(r) => Ok(r != 0.0),
        _ => Err(not_bool()),
    }
}

fn path_knob(config: &Config, name: &str) -> Result<PathBuf, DaemonError> {
    knob(config, name)?
        .map(PathBuf::from)
        .ok_or_else(|| DaemonError::Config(format!("{name} is not defined")))
}

/// HTCondor's built-in `LOCAL_DIR` is `$(TILDE)`, the home of a `condor`
/// account: without such an account and without a configuration naming
/// one, `LOG`, `LOCK` and the key directory would become `/log`, `/lock`,
/// `/passwords.d` at the root of the file system. A daemon refuses that
/// rather than scatter its files there (`knobs`: the paths it creates).
fn check_local_dir(config: &Config, knobs: &[&str]) -> Result<(), DaemonError> {
    if knob(config, "LOCAL_DIR")?.is_some() {
        return Ok(());
    }
    let mut at_root = Vec::new();
    for k in knobs {
        if let Some(v) = knob(config, k)? {
            let path = Path::new(&v);
            let parent = if k.ends_with("_FILE") {
                path.parent().unwrap_or(path)
            } else {
                path
            };
            if parent
                .parent()
                .is_none_or(|p| p == Path::new("/") || p.as_os_str().is_empty())
            {
                at_root.push(format!("{k} = {v}"));
            }
        }
    }
    if at_root.is_empty() {
        return Ok(());
    }
    Err(DaemonError::Config(format!(
        "LOCAL_DIR is not set (HTCondor's default is the home of a `condor` account, and there \
         is none), so {} would be at the root of the file system. Name a configuration file in \
         SKUA_CONFIG, set LOCAL_DIR, or run `skuad master` (or `skua pool start`) with no \
         configuration file to get a personal pool in ~/.skua/pool",
        at_root.join(", ")
    )))
}

/// The Unix-domain socket of a daemon on this host: `$(LOCK)/<daemon>.sock`.
pub fn socket_path(config: &Config, daemon: &str) -> Result<PathBuf, DaemonError> {
    Ok(path_knob(config, "LOCK")?.join(format!("{}.sock", daemon.to_ascii_lowercase())))
}

/// Where a daemon of this host publishes its TCP address
/// (`<SUBSYS>_ADDRESS_FILE`, default `$(LOG)/.<subsys>_address`).
pub fn address_file(config: &Config, subsystem: &str) -> Result<PathBuf, DaemonError> {
    let upper = subsystem.to_ascii_uppercase();
    match knob(config, &format!("{upper}_ADDRESS_FILE"))? {
        Some(p) => Ok(PathBuf::from(p)),
        None => {
            Ok(path_knob(config, "LOG")?
                .join(format!(".{}_address", subsystem.to_ascii_lowercase())))
        }
    }
}

/// Resolves `host[:port][?sock=ID]` or a sinful string `<ip:port?...>`
/// (HTCondor's `COLLECTOR_HOST` forms, e.g. `cm.example.org:9618?sock=collector`)
/// into a [`Sinful`]; a missing port is `default_port`.
pub fn resolve(host_port: &str, default_port: u16) -> Result<Sinful, DaemonError> {
    let text = host_port.trim();
    if let Ok(sinful) = Sinful::parse(text) {
        return Ok(sinful);
    }
    let text = text
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .unwrap_or(text);
    let (hp, params) = match text.split_once('?') {
        Some((hp, params)) => (hp, Some(params)),
        None => (text, None),
    };
    let with_port = if hp
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        hp.to_string()
    } else {
        format!("{hp}:{default_port}")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| DaemonError::Net(format!("cannot resolve {hp}: {e}")))?
        .next()
        .ok_or_else(|| DaemonError::Net(format!("{hp} has no address")))?;
    let sinful = match params {
        Some(p) => format!("<{addr}?{p}>"),
        None => format!("<{addr}>"),
    };
    Sinful::parse(&sinful).map_err(|e| DaemonError::Net(format!("{host_port}: {e}")))
}

/// A client of `endpoint` reaching the daemon behind a shared port when
/// the address names one (`sock`).
fn client_to(
    endpoint: Endpoint,
    sock: Option<&str>,
    token: Option<String>,
    timeout: Duration,
) -> Result<Client, DaemonError> {
    let client =
        Client::new(endpoint, token, timeout).map_err(|e| DaemonError::Net(e.to_string()))?;
    match sock {
        Some(id) => client
            .with_shared_port_id(id)
            .map_err(|e| DaemonError::Net(e.to_string())),
        None => Ok(client),
    }
}

/// A client for the daemon at `address` (a sinful string, `<ip:port>` or
/// `<ip:port?sock=ID>` behind a shared port), presenting `token`: TLS
/// trusting `ca_pem` when there is one (the pool's CA,
/// `AUTH_SSL_CLIENT_CAFILE`), plain TCP to a loopback address without it;
/// a non-loopback address without a CA is an error. For callers that read
/// the CA once and dial many daemons; [`DaemonContext::client_at`] reads
/// it from the configuration (and presents the host's certificate).
pub fn client_at(
    address: &str,
    token: Option<String>,
    ca_pem: Option<String>,
    timeout: Duration,
) -> Result<Client, DaemonError> {
    client_with_identity(address, token, ca_pem, None, timeout)
}

/// [`client_at`] that also presents `identity` over TLS.
fn client_with_identity(
    address: &str,
    token: Option<String>,
    ca_pem: Option<String>,
    identity: Option<&ClientIdentity>,
    timeout: Duration,
) -> Result<Client, DaemonError> {
    let sinful = Sinful::parse(address).map_err(|e| DaemonError::Net(e.to_string()))?;
    let endpoint = tls_or_tcp(sinful.addr, ca_pem)?;
    let client = client_to(endpoint, sinful.sock.as_deref(), token, timeout)?;
    with_identity(client, identity)
}

/// How a client reaches `addr` (contract of docs/security.md): TLS
/// whenever the pool's CA is configured (a server with a certificate
/// speaks only TLS, loopback too), plain TCP to loopback otherwise, and
/// never plain TCP across the network.
fn tls_or_tcp(addr: SocketAddr, ca_pem: Option<String>) -> Result<Endpoint, DaemonError> {
    match ca_pem {
        Some(pem) => Ok(Endpoint::Tls(addr, pem)),
        None if addr.ip().is_loopback() => Ok(Endpoint::Tcp(addr)),
        None => Err(DaemonError::Config(format!(
            "{addr} is not a loopback address: TLS needs AUTH_SSL_CLIENT_CAFILE"
        ))),
    }
}

fn with_identity(client: Client, identity: Option<&ClientIdentity>) -> Result<Client, DaemonError> {
    match identity {
        Some(id) if matches!(client.endpoint(), Endpoint::Tls(..)) => client
            .with_identity(id.clone())
            .map_err(|e| DaemonError::Security(format!("the host certificate: {e}"))),
        _ => Ok(client),
    }
}

/// The host certificate a daemon presents to the daemons it calls over
/// TLS (`AUTH_SSL_CLIENT_CERTFILE` and `AUTH_SSL_CLIENT_KEYFILE`, both or
/// neither), or `None` when not configured. With `lenient` (a user's
/// command on a pool host: users hold no pool secrets, and most commands
/// go over the Unix socket), a certificate that does not load (a key the
/// caller may not read) counts as none; a daemon gets the error.
pub fn client_identity(
    config: &Config,
    lenient: bool,
) -> Result<Option<ClientIdentity>, DaemonError> {
    let cert = knob(config, "AUTH_SSL_CLIENT_CERTFILE")?;
    let key = knob(config, "AUTH_SSL_CLIENT_KEYFILE")?;
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(c), Some(k)) => (c, k),
        _ => return Err(DaemonError::Config(
            "AUTH_SSL_CLIENT_CERTFILE and AUTH_SSL_CLIENT_KEYFILE go together: set both or neither"
                .into(),
        )),
    };
    match ClientIdentity::from_files(Path::new(&cert), Path::new(&key)) {
        Ok(id) => Ok(Some(id)),
        Err(e) if lenient => {
            tracing::debug!(error = %e, "the host certificate does not load here; calling without it");
            Ok(None)
        }
        Err(e) => Err(DaemonError::Security(format!("the host certificate: {e}"))),
    }
}

/// A test's fault filter with the name of the daemon whose clients carry it.
#[derive(Clone, Debug)]
struct Faults {
    filter: FaultFilter,
    from: String,
}

impl Faults {
    fn apply(faults: &Option<Faults>, client: Client, to: Option<&str>) -> Client {
        match faults {
            None => client,
            Some(f) => client.with_faults(f.filter.clone(), &f.from, to),
        }
    }
}

/// What a daemon needs to dial other daemons by address, read from its
/// context once ([`DaemonContext::dialer`]) so it can move between tasks:
/// its token, the CA it trusts, and a test's fault filter. The default
/// dials loopback addresses only, with no token.
#[derive(Clone, Debug, Default)]
pub struct Dialer {
    token: Option<String>,
    ca_pem: Option<String>,
    identity: Option<ClientIdentity>,
    faults: Option<Faults>,
}

impl Dialer {
    /// A client for the daemon at `address` (see [`DaemonContext::client_at`]).
    pub fn client_at(&self, address: &str, timeout: Duration) -> Result<Client, DaemonError> {
        let client = client_with_identity(
            address,
            self.token.clone(),
            self.ca_pem.clone(),
            self.identity.as_ref(),
            timeout,
        )?;
        Ok(Faults::apply(&self.faults, client, None))
    }
}

/// Where a daemon is found, read from the configuration once (so it can
/// move between threads; the configuration itself cannot).
#[derive(Clone, Debug)]
pub struct Locator {
    subsystem: String,
    socket: PathBuf,
    host: Option<String>,
    address_file: PathBuf,
    ca_file: Option<String>,
    identity: Option<ClientIdentity>,
    faults: Option<Faults>,
}

impl Locator {
    /// Where `subsystem` is found, by `config`. Over TLS its clients
    /// present the host certificate (`AUTH_SSL_CLIENT_CERTFILE`) when the
    /// caller may read its key.
    pub fn new(config: &Config, subsystem: &str) -> Result<Locator, DaemonError> {
        let upper = subsystem.to_ascii_uppercase();
        Ok(Locator {
            subsystem: subsystem.to_ascii_lowercase(),
            socket: socket_path(config, subsystem)?,
            host: knob(config, &format!("{upper}_HOST"))?,
            address_file: address_file(config, subsystem)?,
            ca_file: knob(config, "AUTH_SSL_CLIENT_CAFILE")?,
            identity: client_identity(config, true)?,
            faults: None,
        })
    }

    /// How a client on this host reaches the daemon: its Unix socket if
    /// present (the kernel vouches for the caller), else TCP at
    /// `<SUBSYS>_HOST` (port 0: the address file), with TLS unless the
    /// address is loopback.
    pub fn endpoint(&self) -> Result<Endpoint, DaemonError> {
        if self.socket.exists() {
            return Ok(Endpoint::Unix(self.socket.clone()));
        }
        self.network_endpoint()
    }

    /// A client of the daemon at [`Locator::endpoint`], presenting `token`
    /// only over the network (on the Unix socket the kernel vouches).
    pub fn client(&self, token: Option<String>, timeout: Duration) -> Result<Client, DaemonError> {
        if self.socket.exists() {
            let endpoint = Endpoint::Unix(self.socket.clone());
            let client = client_to(endpoint, None, None, timeout)?;
            return Ok(Faults::apply(&self.faults, client, Some(&self.subsystem)));
        }
        self.network_client(token, timeout)
    }

    /// A client of the daemon over the network ([`Locator::network_sinful`]:
    /// through the shared port when the address names one), presenting
    /// `token`.
    pub fn network_client(
        &self,
        token: Option<String>,
        timeout: Duration,
    ) -> Result<Client, DaemonError> {
        let sinful = self.network_sinful()?;
        let endpoint = self.endpoint_for(sinful.addr)?;
        let client = client_to(endpoint, sinful.sock.as_deref(), token, timeout)?;
        let client = with_identity(client, self.identity.as_ref())?;
        Ok(Faults::apply(&self.faults, client, Some(&self.subsystem)))
    }

    /// The daemon's network address: `<SUBSYS>_HOST` (`host[:port][?sock=ID]`)
    /// or, when that is unset or its port is 0, the daemon's address file.
    pub fn network_sinful(&self) -> Result<Sinful, DaemonError> {
        match &self.host {
            Some(h) if !address::collector_host_uses_address_file(h) => {
                resolve(h, DEFAULT_COLLECTOR_PORT)
            }
            _ => address::read_address_file_sinful(&self.address_file).map_err(|e| {
                DaemonError::Net(format!("the {} is not running here ({e})", self.subsystem))
            }),
        }
    }

    /// How any client reaches the daemon over the network (TCP at
    /// `<SUBSYS>_HOST` or the address file; TLS when the pool's CA is
    /// configured, plain TCP only to loopback without one), even on its
    /// own host: for a caller that must speak with a token. Behind a
    /// shared port the endpoint is the shared port's; see
    /// [`Locator::network_client`], which also routes to the daemon.
    pub fn network_endpoint(&self) -> Result<Endpoint, DaemonError> {
        let sinful = self.network_sinful()?;
        self.endpoint_for(sinful.addr)
    }

    fn endpoint_for(&self, addr: SocketAddr) -> Result<Endpoint, DaemonError> {
        let pem = match &self.ca_file {
            Some(ca) => Some(
                std::fs::read_to_string(ca).map_err(|e| DaemonError::Io(format!("{ca}: {e}")))?,
            ),
            None => None,
        };
        tls_or_tcp(addr, pem)
    }
}

/// How a client on this host reaches a daemon (see [`Locator::endpoint`]).
pub fn daemon_endpoint(config: &Config, subsystem: &str) -> Result<Endpoint, DaemonError> {
    Locator::new(config, subsystem)?.endpoint()
}

/// The server's concurrency limits from Skua's own knobs (HTCondor has no
/// equivalent): `MAX_CONCURRENT_REQUESTS` (in all, default 256),
/// `MAX_CONCURRENT_REQUESTS_PER_PEER` (per identity and host, default 16;
/// the pool's daemons are exempt) and `CONCURRENT_REQUEST_WAIT` (seconds
/// a request over a limit waits for its turn, default 2). 0 turns a limit
/// off (or, for the wait, refuses at once).
pub fn concurrency_limits(config: &Config) -> Result<ConcurrencyLimits, DaemonError> {
    let defaults = ConcurrencyLimits::default();
    let count = |name: &str, default: usize| -> Result<usize, DaemonError> {
        let n = knob_u64(config, name, default as u64)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    };
    Ok(ConcurrencyLimits {
        total: count("MAX_CONCURRENT_REQUESTS", defaults.total)?,
        per_peer: count("MAX_CONCURRENT_REQUESTS_PER_PEER", defaults.per_peer)?,
        wait: Duration::from_secs(knob_u64(
            config,
            "CONCURRENT_REQUEST_WAIT",
            defaults.wait.as_secs(),
        )?),
    })
}

/// Everything a daemon needs from its environment.
pub struct DaemonContext {
    /// `COLLECTOR`, `MASTER`, ...
    pub subsystem: String,
    pub config: Config,
    pub log_dir: PathBuf,
    pub lock_dir: PathBuf,
    pub uid_domain: String,
    /// The account the daemon runs as.
    pub owner: String,
    pub signing_key: Option<SigningKey>,
    /// The daemon's own token (for TCP calls to other daemons); `None` on
    /// a host without the pool signing key (a joined host) and on a host
    /// whose daemons authenticate by the host certificate
    /// ([`DaemonContext::client_identity`]; the central manager's too).
    pub daemon_token: Option<String>,
    /// The host certificate the daemon presents over TLS
    /// (`AUTH_SSL_CLIENT_CERTFILE`, `AUTH_SSL_CLIENT_KEYFILE`).
    pub client_identity: Option<ClientIdentity>,
    /// Credential ids (host certificate serials) this daemon's server
    /// refuses; shared with the server ([`DaemonContext::server_config`]),
    /// refreshed from the collector.
    pub revocations: Revocations,
    pub policy: SecurityPolicy,
    pub update_interval: Duration,
    pub classad_lifetime: u64,
    /// How many requests the daemon's server serves at once
    /// (`MAX_CONCURRENT_REQUESTS`, `MAX_CONCURRENT_REQUESTS_PER_PEER`,
    /// `CONCURRENT_REQUEST_WAIT`).
    pub concurrency: ConcurrencyLimits,
    /// The clock decisions are made by (leases, timers, ad times): the
    /// system's, or a test's [`crate::ManualClock`].
    pub clock: crate::Clock,
    /// A test's fault filter, applied to every client made through this
    /// context ([`DaemonContext::client_for`], [`DaemonContext::client_at`],
    /// [`DaemonContext::dialer`], [`DaemonContext::locator`]); `None` in
    /// a real daemon.
    pub faults: Option<FaultFilter>,
    /// The port of the shared port this daemon's master runs (the
    /// `SKUA_SHARED_PORT` environment variable the master passes its
    /// children, or set by the master itself): the daemon then listens
    /// behind it ([`DaemonContext::behind_shared_port`]). `None`: its own
    /// TCP port.
    pub shared_port: Option<u16>,
}

/// The environment variable a master running a shared port passes its
/// children: the shared port's TCP port.
pub const SHARED_PORT_ENV: &str = "SKUA_SHARED_PORT";

impl DaemonContext {
    /// Builds the context from an already loaded configuration: creates the
    /// log and lock directories, loads (or, for the collector and master,
    /// creates) the pool signing key.
    pub fn from_config(subsystem: &str, config: Config) -> Result<DaemonContext, DaemonError> {
        let subsystem = subsystem.to_ascii_uppercase();
        let create_key = matches!(subsystem.as_str(), "COLLECTOR" | "MASTER");
        let mut created = vec!["LOG", "LOCK"];
        if create_key {
            created.push("SEC_TOKEN_POOL_SIGNING_KEY_FILE");
        }
        check_local_dir(&config, &created)?;
        let env = crate::system_config::environment();
        let owner =
            crate::system_config::current_username(&env).unwrap_or_else(|| "nobody".to_string());
        let mut ctx =
            DaemonContext::build(subsystem, config, owner, create_key, crate::Clock::system())?;
        ctx.shared_port = match env.get(SHARED_PORT_ENV) {
            Some(v) => Some(v.trim().parse().map_err(|_| {
                DaemonError::Config(format!("{SHARED_PORT_ENV} = {v:?} is not a port"))
            })?),
            None => None,
        };
        Ok(ctx)
    }

    /// The context of `subsystem` (upper case) running as `owner`: creates
    /// the log and lock directories, loads (or, with `create_key`, creates)
    /// the pool signing key.
    fn build(
        subsystem: String,
        config: Config,
        owner: String,
        create_key: bool,
        clock: crate::Clock,
    ) -> Result<DaemonContext, DaemonError> {
        let log_dir = path_knob(&config, "LOG")?;
        let lock_dir = path_knob(&config, "LOCK")?;
        for d in [&log_dir, &lock_dir] {
            std::fs::create_dir_all(d)
                .map_err(|e| DaemonError::Io(format!("creating {}: {e}", d.display())))?;
        }
        let uid_domain = knob(&config, "UID_DOMAIN")?.unwrap_or_else(|| "localdomain".to_string());
        let client_identity = client_identity(&config, false)?;
        // A host that authenticates by its certificate (a joined host) does
        // not make a pool signing key of its own: tokens signed by it would
        // mean nothing to the rest of the pool. An existing key is loaded.
        let create_key = create_key && client_identity.is_none();
        let signing_key = security::load_signing_key(&config, create_key)?;
        // A daemon with a host certificate speaks by it, not by a token: a
        // joined host has no signing key to check tokens with, so the
        // central manager's daemons (which hold the key) calling it with a
        // token would be refused.
        let daemon_token = match (&signing_key, &client_identity) {
            (Some(k), None) => Some(security::daemon_token(k, &uid_domain)?),
            _ => None,
        };
        let policy = security::policy_from_config(&config, &owner)?;
        let update_interval =
            Duration::from_secs(knob_u64(&config, "UPDATE_INTERVAL", 300)?.max(1));
        let classad_lifetime = knob_u64(&config, "CLASSAD_LIFETIME", 900)?;
        let concurrency = concurrency_limits(&config)?;
        Ok(DaemonContext {
            subsystem,
            config,
            log_dir,
            lock_dir,
            uid_domain,
            owner,
            signing_key,
            daemon_token,
            client_identity,
            revocations: Revocations::new(),
            policy,
            update_interval,
            classad_lifetime,
            concurrency,
            clock,
            faults: None,
            shared_port: None,
        })
    }

    /// A context for a daemon inside a test process: nothing read from the
    /// environment. The caller gives the configuration (with `LOG`,
    /// `LOCK`, `UID_DOMAIN` and, for tokens, the pool signing key file,
    /// created if missing), the account the daemon counts as running as,
    /// and the clock; [`DaemonContext::with_faults`] adds a fault filter.
    pub fn for_test(
        subsystem: &str,
        config: Config,
        owner: &str,
        clock: crate::Clock,
    ) -> Result<DaemonContext, DaemonError> {
        let subsystem = subsystem.to_ascii_uppercase();
        DaemonContext::build(subsystem, config, owner.to_string(), true, clock)
    }

    /// The same context with a test's fault filter on every client it makes.
    pub fn with_faults(mut self, faults: FaultFilter) -> DaemonContext {
        self.faults = Some(faults);
        self
    }

    fn faults(&self) -> Option<Faults> {
        self.faults.as_ref().map(|filter| Faults {
            filter: filter.clone(),
            from: self.subsystem.clone(),
        })
    }

    /// Loads the system configuration as `subsystem` and builds the context.
    pub fn load(subsystem: &str) -> Result<DaemonContext, DaemonError> {
        let config = crate::system_config::load(Some(subsystem), None)
            .map_err(|e| DaemonError::Config(e.to_string()))?;
        DaemonContext::from_config(subsystem, config)
    }

    /// A knob of this daemon's configuration.
    pub fn knob(&self, name: &str) -> Result<Option<String>, DaemonError> {
        knob(&self.config, name)
    }

    /// A knob's value only when a configuration file or the environment
    /// sets it, not HTCondor's built-in default table (whose program paths,
    /// `$(SBIN)/condor_startd` and the like, do not exist here).
    pub fn configured_knob(&self, name: &str) -> Result<Option<String>, DaemonError> {
        let set = self
            .config
            .knob(name)
            .is_some_and(|k| !matches!(k.origin, skua_config::Origin::Default));
        if set {
            self.knob(name)
        } else {
            Ok(None)
        }
    }

    /// The transport's server configuration.
    pub fn server_config(&self) -> ServerConfig {
        let mut config = ServerConfig::new(
            self.policy.clone(),
            self.signing_key.clone(),
            self.uid_domain.clone(),
        );
        config.concurrency = self.concurrency;
        config.revocations = self.revocations.clone();
        config
    }

    /// This daemon's Unix socket.
    pub fn socket_path(&self) -> Result<PathBuf, DaemonError> {
        socket_path(&self.config, &self.subsystem)
    }

    /// This daemon's address file.
    pub fn address_file(&self) -> Result<PathBuf, DaemonError> {
        address_file(&self.config, &self.subsystem)
    }

    /// A client for another daemon of the pool (its socket if local, else
    /// TCP with this daemon's token).
    pub fn client_for(&self, subsystem: &str, timeout: Duration) -> Result<Client, DaemonError> {
        self.locator(subsystem)?
            .client(self.daemon_token.clone(), timeout)
    }

    /// Where another daemon of the pool is found (see [`Locator`]), its
    /// clients carrying this context's fault filter.
    pub fn locator(&self, subsystem: &str) -> Result<Locator, DaemonError> {
        let mut locator = Locator::new(&self.config, subsystem)?;
        locator.identity = self.client_identity.clone();
        locator.faults = self.faults();
        Ok(locator)
    }

    /// What this daemon's tasks need to dial other daemons by address.
    pub fn dialer(&self) -> Result<Dialer, DaemonError> {
        let ca_pem = match self.knob("AUTH_SSL_CLIENT_CAFILE")? {
            Some(ca) => Some(
                std::fs::read_to_string(&ca).map_err(|e| DaemonError::Io(format!("{ca}: {e}")))?,
            ),
            None => None,
        };
        Ok(Dialer {
            token: self.daemon_token.clone(),
            ca_pem,
            identity: self.client_identity.clone(),
            faults: self.faults(),
        })
    }

    /// A client for the daemon at `address` (HTCondor's sinful string
    /// `<ip:port>` from an ad's `MyAddress`, or plain `ip:port`), speaking
    /// with this daemon's token and, over TLS, presenting its host
    /// certificate: TLS (trusting `AUTH_SSL_CLIENT_CAFILE`) when the CA is
    /// configured, plain TCP to a loopback address otherwise.
    pub fn client_at(&self, address: &str, timeout: Duration) -> Result<Client, DaemonError> {
        self.dialer()?.client_at(address, timeout)
    }

    /// The TCP listener of this daemon: `listen_addr(port)`, with TLS
    /// ([`DaemonContext::server_tls`]) whenever a server certificate is
    /// configured, loopback too; plain TCP only on loopback without one:
    /// tokens never cross a network in clear.
    pub async fn tcp_listener(&self, port: u16) -> Result<skua_net::Listener, DaemonError> {
        let addr = self.listen_addr(port)?;
        match self.server_tls()? {
            Some(tls) => skua_net::Listener::tls(addr, tls)
                .await
                .map_err(|e| DaemonError::Net(format!("binding {addr} with TLS: {e}"))),
            None if addr.ip().is_loopback() => skua_net::Listener::tcp(addr)
                .await
                .map_err(|e| DaemonError::Net(format!("binding {addr}: {e}"))),
            None => Err(DaemonError::Config(format!(
                "{addr} is not a loopback address: TLS needs AUTH_SSL_SERVER_CERTFILE and AUTH_SSL_SERVER_KEYFILE"
            ))),
        }
    }

    /// The TLS configuration of this daemon's server, when
    /// `AUTH_SSL_SERVER_CERTFILE` and `AUTH_SSL_SERVER_KEYFILE` are set in
    /// the configuration (HTCondor's default paths, which do not exist
    /// here, do not count): it sends the host certificate and the pool CA
    /// and verifies client certificates, when sent, against
    /// `AUTH_SSL_SERVER_CAFILE` (default `AUTH_SSL_CLIENT_CAFILE`). `None`
    /// without a certificate; an error when only one of the two is set or
    /// the files do not load.
    pub fn server_tls(&self) -> Result<Option<skua_net::tls::ServerTls>, DaemonError> {
        let cert = self.configured_knob("AUTH_SSL_SERVER_CERTFILE")?;
        let key = self.configured_knob("AUTH_SSL_SERVER_KEYFILE")?;
        let (cert, key) = match (cert, key) {
            (None, None) => return Ok(None),
            (Some(c), Some(k)) => (c, k),
            _ => {
                return Err(DaemonError::Config(
                    "AUTH_SSL_SERVER_CERTFILE and AUTH_SSL_SERVER_KEYFILE go together: set both or neither"
                        .into(),
                ))
            }
        };
        let ca = match self.knob("AUTH_SSL_SERVER_CAFILE")? {
            Some(ca) => Some(ca),
            None => self.knob("AUTH_SSL_CLIENT_CAFILE")?,
        };
        skua_net::tls::server_config_mtls_from_files(
            Path::new(&cert),
            Path::new(&key),
            ca.as_deref().map(Path::new),
        )
        .map(Some)
        .map_err(|e| DaemonError::Security(format!("the server certificate: {e}")))
    }

    /// Where this daemon listens and what address it advertises, from
    /// `NETWORK_INTERFACE`, `BIND_ALL_INTERFACES` and the host's interfaces
    /// (see [`crate::interfaces`]): the personal pool (no
    /// `NETWORK_INTERFACE` configured, no `AUTH_SSL_SERVER_CERTFILE`) stays
    /// on 127.0.0.1.
    pub fn listen_plan(&self) -> Result<ListenPlan, DaemonError> {
        let interface_configured = self
            .config
            .knob("NETWORK_INTERFACE")
            .is_some_and(|k| !matches!(k.origin, skua_config::Origin::Default));
        let knobs = ListenKnobs {
            network_interface: self
                .knob("NETWORK_INTERFACE")?
                .unwrap_or_else(|| "*".to_string()),
            interface_configured,
            serves_network: self.configured_knob("AUTH_SSL_SERVER_CERTFILE")?.is_some(),
            bind_all: knob_bool(&self.config, "BIND_ALL_INTERFACES", true)?,
        };
        if !knobs.interface_configured && !knobs.serves_network {
            return Ok(ListenPlan::LOOPBACK);
        }
        let interfaces = crate::interfaces::host_interfaces().map_err(DaemonError::Net)?;
        crate::interfaces::plan_listen(&knobs, &interfaces).map_err(DaemonError::Config)
    }

    /// The TCP address to listen on: [`DaemonContext::listen_plan`]'s with
    /// `port`.
    pub fn listen_addr(&self, port: u16) -> Result<SocketAddr, DaemonError> {
        Ok(SocketAddr::new(self.listen_plan()?.bind, port))
    }

    /// Whether this host's daemons go behind one shared port
    /// (`USE_SHARED_PORT`; when not configured: true for a host that listens
    /// on the network, false for the loopback personal pool).
    pub fn use_shared_port(&self) -> Result<bool, DaemonError> {
        let default = !self.listen_plan()?.is_loopback();
        if self.configured_knob("USE_SHARED_PORT")?.is_none() {
            return Ok(default);
        }
        knob_bool(&self.config, "USE_SHARED_PORT", default)
    }

    /// The port the master opens the shared port on: a collector of this
    /// host's `COLLECTOR_HOST` port when the collector is behind the shared
    /// port (HTCondor's rule), else `SHARED_PORT_PORT` (default
    /// `$(COLLECTOR_PORT)`, 9618; 0: any).
    pub fn shared_port_port(&self) -> Result<u16, DaemonError> {
        let list = self.knob("DAEMON_LIST")?.unwrap_or_default();
        let has_collector = security::split_list(&list)
            .iter()
            .any(|d| d.eq_ignore_ascii_case("COLLECTOR"));
        if has_collector && self.uses_shared_port("COLLECTOR")? {
            let port = self.knob("COLLECTOR_HOST")?.and_then(|h| {
                let h = h.split('?').next().unwrap_or(&h).to_string();
                h.rsplit_once(':')
                    .and_then(|(_, p)| p.trim().parse::<u16>().ok())
            });
            if let Some(p) = port.filter(|p| *p != 0) {
                return Ok(p);
            }
        }
        let port = knob_u64(
            &self.config,
            "SHARED_PORT_PORT",
            u64::from(DEFAULT_COLLECTOR_PORT),
        )?;
        u16::try_from(port)
            .map_err(|_| DaemonError::Config(format!("SHARED_PORT_PORT = {port} is not a port")))
    }

    /// Whether daemon `subsystem` goes behind this host's shared port when
    /// there is one: `<SUBSYS>_USES_SHARED_PORT` (HTCondor's
    /// `COLLECTOR_USES_SHARED_PORT`, extended to every daemon), default
    /// true; false keeps the daemon on its own TCP port.
    pub fn uses_shared_port(&self, subsystem: &str) -> Result<bool, DaemonError> {
        let name = format!("{}_USES_SHARED_PORT", subsystem.to_ascii_uppercase());
        knob_bool(&self.config, &name, true)
    }

    /// Where the daemons' handoff sockets are: `DAEMON_SOCKET_DIR`
    /// (`auto`, HTCondor's default: `$(LOCK)/daemon_sock`).
    pub fn daemon_socket_dir(&self) -> Result<PathBuf, DaemonError> {
        match self.knob("DAEMON_SOCKET_DIR")? {
            Some(d) if !d.trim().eq_ignore_ascii_case("auto") => Ok(PathBuf::from(d.trim())),
            _ => Ok(self.lock_dir.join("daemon_sock")),
        }
    }

    /// The id of this daemon behind the shared port: its lower-case
    /// subsystem name (stable, so a restarted daemon keeps its address).
    pub fn shared_port_id(&self) -> String {
        self.subsystem.to_ascii_lowercase()
    }

    /// `SHARED_PORT_DEFAULT_ID` (default `collector`): where a connection
    /// without a preamble that begins with a TLS ClientHello goes.
    pub fn shared_port_default_id(&self) -> Result<String, DaemonError> {
        Ok(self
            .knob("SHARED_PORT_DEFAULT_ID")?
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| skua_net::shared_port::DEFAULT_ID.to_string()))
    }

    /// Whether this daemon goes behind its master's shared port: the master
    /// runs one ([`DaemonContext::shared_port`]) and
    /// `<SUBSYS>_USES_SHARED_PORT` is not false.
    pub fn behind_shared_port(&self) -> Result<Option<u16>, DaemonError> {
        match self.shared_port {
            Some(port) if self.uses_shared_port(&self.subsystem)? => Ok(Some(port)),
            _ => Ok(None),
        }
    }

    /// The handoff listener of this daemon behind the shared port
    /// (`<DAEMON_SOCKET_DIR>/<id>`, the directory created private to the
    /// daemons' account): TLS when `AUTH_SSL_SERVER_CERTFILE` /
    /// `AUTH_SSL_SERVER_KEYFILE` are configured, which a host listening on
    /// the network needs (as for [`DaemonContext::tcp_listener`]).
    pub async fn handoff_listener(&self) -> Result<skua_net::Listener, DaemonError> {
        let dir = self.daemon_socket_dir()?;
        create_private_dir(&dir)?;
        let path = dir.join(self.shared_port_id());
        let loopback = self.listen_plan()?.is_loopback();
        // the same TLS as the daemon's own TCP listener: the chain with the
        // pool CA, client certificates verified against it
        match self.server_tls()? {
            Some(tls) => skua_net::Listener::handoff(&path, Some(tls))
                .await
                .map_err(|e| DaemonError::Net(format!("{}: {e}", path.display()))),
            None if loopback => skua_net::Listener::handoff(&path, None)
                .await
                .map_err(|e| DaemonError::Net(format!("{}: {e}", path.display()))),
            None => Err(DaemonError::Config(
                "the shared port listens on the network: TLS needs AUTH_SSL_SERVER_CERTFILE and AUTH_SSL_SERVER_KEYFILE".into(),
            )),
        }
    }
}

/// Creates `dir` (and its parents) with mode 0700: only the daemons'
/// account (or root) may pass connections through it.
pub fn create_private_dir(dir: &Path) -> Result<(), DaemonError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)
        .map_err(|e| DaemonError::Io(format!("creating {}: {e}", dir.display())))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| DaemonError::Io(format!("setting the mode of {}: {e}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_host_forms_resolve_with_their_shared_port_id() {
        let s = resolve("127.0.0.1:9700?sock=collector", DEFAULT_COLLECTOR_PORT).unwrap();
        assert_eq!(s.addr, "127.0.0.1:9700".parse().unwrap());
        assert_eq!(s.sock.as_deref(), Some("collector"));
        // a host name, no port: the default port
        let s = resolve("localhost?sock=schedd", DEFAULT_COLLECTOR_PORT).unwrap();
        assert_eq!(s.addr.port(), 9618);
        assert!(s.addr.ip().is_loopback());
        assert_eq!(s.sock.as_deref(), Some("schedd"));
        let s = resolve("localhost", DEFAULT_COLLECTOR_PORT).unwrap();
        assert_eq!((s.addr.port(), s.sock), (9618, None));
        // a sinful string as it is
        let s = resolve("<10.0.0.1:5000?sock=startd&alias=h>", 9618).unwrap();
        assert_eq!(s.addr, "10.0.0.1:5000".parse().unwrap());
        assert_eq!(s.sock.as_deref(), Some("startd"));
        // an invalid id is an error naming the text
        let e = resolve("127.0.0.1:9618?sock=", 9618)
            .unwrap_err()
            .to_string();
        assert!(e.contains("127.0.0.1:9618?sock="), "{e}");
    }

    #[test]
    fn a_client_at_a_sinful_with_sock_routes_through_the_shared_port() {
        let c = client_at(
            "<127.0.0.1:9618?sock=negotiator>",
            None,
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(c.shared_port_id(), Some("negotiator"));
        let c = client_at("<127.0.0.1:9618>", None, None, Duration::from_secs(1)).unwrap();
        assert_eq!(c.shared_port_id(), None);
        // a non-loopback address needs the CA; garbage is an error
        assert!(client_at("<10.0.0.1:9618?sock=x>", None, None, Duration::from_secs(1)).is_err());
        let e = client_at("<nonsense", None, None, Duration::from_secs(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a daemon address"), "{e}");
        // an id the preamble cannot carry
        assert!(client_at(
            "<127.0.0.1:9618?sock=a%2Fb>",
            None,
            None,
            Duration::from_secs(1)
        )
        .is_err());
    }
}
