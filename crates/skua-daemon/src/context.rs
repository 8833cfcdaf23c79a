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

use crate::address;
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

/// Parses `host[:port]`.
fn resolve(host_port: &str, default_port: u16) -> Result<SocketAddr, DaemonError> {
    let hp = host_port
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    let hp = hp.split('?').next().unwrap_or(hp);
    let with_port = if hp
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        hp.to_string()
    } else {
        format!("{hp}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| DaemonError::Net(format!("cannot resolve {hp}: {e}")))?
        .next()
        .ok_or_else(|| DaemonError::Net(format!("{hp} has no address")))
}

/// Parses an address as daemons publish it: `<ip:port>` (HTCondor's
/// sinful string, parameters after `?` ignored) or `ip:port`.
pub fn parse_sinful(address: &str) -> Result<SocketAddr, DaemonError> {
    let hp = address.trim().trim_start_matches('<').trim_end_matches('>');
    let hp = hp.split('?').next().unwrap_or(hp);
    hp.parse()
        .map_err(|_| DaemonError::Net(format!("{address:?} is not an address (<ip:port>)")))
}

/// A client for the daemon at `address` (`<ip:port>`), presenting `token`:
/// TLS trusting `ca_pem` when there is one (the pool's CA,
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
    let addr = parse_sinful(address)?;
    let endpoint = tls_or_tcp(addr, ca_pem)?;
    let client =
        Client::new(endpoint, token, timeout).map_err(|e| DaemonError::Net(e.to_string()))?;
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
        let endpoint = self.endpoint()?;
        let token = match endpoint {
            Endpoint::Unix(_) => None,
            _ => token,
        };
        let client =
            Client::new(endpoint, token, timeout).map_err(|e| DaemonError::Net(e.to_string()))?;
        let client = with_identity(client, self.identity.as_ref())?;
        Ok(Faults::apply(&self.faults, client, Some(&self.subsystem)))
    }

    /// How any client reaches the daemon over the network (TCP at
    /// `<SUBSYS>_HOST` or the address file; TLS when the pool's CA is
    /// configured, plain TCP only to loopback without one), even on its
    /// own host: for a caller that must speak with a token.
    pub fn network_endpoint(&self) -> Result<Endpoint, DaemonError> {
        let addr = match &self.host {
            Some(h) if !address::collector_host_uses_address_file(h) => {
                resolve(h, DEFAULT_COLLECTOR_PORT)?
            }
            _ => address::read_address_file(&self.address_file).map_err(|e| {
                DaemonError::Net(format!("the {} is not running here ({e})", self.subsystem))
            })?,
        };
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
}

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
        DaemonContext::build(subsystem, config, owner, create_key, crate::Clock::system())
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

    /// The TCP address to listen on: `NETWORK_INTERFACE` (default
    /// 127.0.0.1) and `port`.
    pub fn listen_addr(&self, port: u16) -> Result<SocketAddr, DaemonError> {
        // HTCondor's built-in default is `*` (every interface). This release
        // has no daemon that serves other hosts yet, so unless the
        // configuration names an interface, daemons listen on loopback.
        let configured = self
            .config
            .knob("NETWORK_INTERFACE")
            .is_some_and(|k| !matches!(k.origin, skua_config::Origin::Default));
        let iface = match self.knob("NETWORK_INTERFACE")? {
            Some(i) if configured => i,
            _ => "127.0.0.1".to_string(),
        };
        let ip = if iface == "*" {
            "0.0.0.0".to_string()
        } else {
            iface
        };
        format!("{ip}:{port}")
            .parse()
            .or_else(|_| resolve(&ip, port))
            .map_err(|_| {
                DaemonError::Config(format!("NETWORK_INTERFACE = {ip:?} is not an address"))
            })
    }
}
