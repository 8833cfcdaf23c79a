//! A pool of several machines: the configuration of a central manager
//! (`skua pool start --role central-manager`) and of a host that joined it
//! (`skua pool join`), and where their credentials live in the pool
//! directory:
//!
//! ```text
//! DIR/certs/pool_ca.pem        the pool CA's certificate (public; TRUST_DOMAIN_CAFILE
//!                              on the central manager, AUTH_SSL_CLIENT_CAFILE everywhere)
//! DIR/certs/host.pem           this host's certificate, signed by the pool CA
//! DIR/passwords.d/host.key     its private key (0600; never leaves the host)
//! DIR/passwords.d/pool_ca.key  the pool CA's key (0600; central manager only)
//! DIR/passwords.d/POOL         the pool signing key (0600; central manager only)
//! ```

use std::path::PathBuf;

use skua_proto::PoolRole;

use super::{Config, PoolError, PoolLayout, PoolOptions, POOL_SIGNING_KEY_NAME};

/// The collector's well-known port (HTCondor's `COLLECTOR_PORT`).
pub const COLLECTOR_PORT: u16 = 9618;

/// What makes a host's configuration a network pool's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkOptions {
    /// The host's roles (at least one); [`PoolRole::CentralManager`] makes
    /// it hold the pool CA and the signing key.
    pub roles: Vec<PoolRole>,
    /// This host's address: `NETWORK_INTERFACE`, where its daemons listen
    /// and what their certificates name.
    pub address: String,
    /// The central manager's address or name: `CONDOR_HOST`.
    pub condor_host: String,
    /// The collector's port in `COLLECTOR_HOST = $(CONDOR_HOST):<port>`;
    /// default [`COLLECTOR_PORT`].
    pub collector_port: u16,
    /// `UID_DOMAIN`: `None` is `$(FULL_HOSTNAME)` (a central manager's own
    /// name); a joined host takes the pool's.
    pub uid_domain: Option<String>,
    /// `TRUST_DOMAIN`: `None` is `$(UID_DOMAIN)`.
    pub trust_domain: Option<String>,
}

impl NetworkOptions {
    /// Whether this host is the central manager.
    pub fn is_central_manager(&self) -> bool {
        self.roles.contains(&PoolRole::CentralManager)
    }

    /// `DAEMON_LIST` as the roles make it: `MASTER`, then `COLLECTOR` and
    /// `NEGOTIATOR` (central manager), `SCHEDD` (submit), `STARTD`
    /// (execute), in that order whatever the order of the roles.
    pub fn daemons(&self) -> Vec<String> {
        let mut out = vec!["MASTER".to_string()];
        for (role, daemons) in [
            (PoolRole::CentralManager, &["COLLECTOR", "NEGOTIATOR"][..]),
            (PoolRole::Submit, &["SCHEDD"][..]),
            (PoolRole::Execute, &["STARTD"][..]),
        ] {
            if self.roles.contains(&role) {
                out.extend(daemons.iter().map(|d| d.to_string()));
            }
        }
        out
    }

    /// The roles in `use ROLE :` order.
    fn ordered_roles(&self) -> Vec<PoolRole> {
        [
            PoolRole::CentralManager,
            PoolRole::Submit,
            PoolRole::Execute,
        ]
        .into_iter()
        .filter(|r| self.roles.contains(r))
        .collect()
    }
}

impl PoolLayout {
    /// `DIR/certs`: certificates (public).
    pub fn certs_dir(&self) -> PathBuf {
        self.dir().join("certs")
    }

    /// `DIR/certs/pool_ca.pem`.
    pub fn ca_cert_file(&self) -> PathBuf {
        self.certs_dir().join("pool_ca.pem")
    }

    /// `DIR/passwords.d/pool_ca.key` (central manager only).
    pub fn ca_key_file(&self) -> PathBuf {
        self.password_dir().join("pool_ca.key")
    }

    /// `DIR/certs/host.pem`.
    pub fn host_cert_file(&self) -> PathBuf {
        self.certs_dir().join("host.pem")
    }

    /// `DIR/passwords.d/host.key`.
    pub fn host_key_file(&self) -> PathBuf {
        self.password_dir().join("host.key")
    }

    /// The text of `DIR/skua_config` for a network pool; see
    /// [`network_pool_config`].
    pub fn network_config_text(
        &self,
        options: &PoolOptions,
        net: &NetworkOptions,
    ) -> Result<String, PoolError> {
        network_pool_config(self.dir(), options, net)
    }
}

/// A value written into the configuration: refused if the configuration
/// language would change it.
fn config_value<'a>(knob: &'static str, value: &'a str) -> Result<&'a str, PoolError> {
    let bad = |reason: String| PoolError::BadInterval { knob, reason };
    if value.is_empty() {
        return Err(bad("it is empty".into()));
    }
    if value.contains(['\n', '\r', '\0', '$', '#']) || value.trim() != value {
        return Err(bad(format!(
            "{value:?} holds characters the configuration language would change"
        )));
    }
    Ok(value)
}

/// The configuration of a host of a network pool in `dir`: the personal
/// pool's directories, logs and intervals ([`super::pool_config`]), with
/// the host's roles as HTCondor's role metaknobs (`use ROLE :
/// CentralManager`, `Submit`, `Execute`; `options.daemons` is ignored:
/// the roles decide), `CONDOR_HOST`, `COLLECTOR_HOST` at the collector's
/// port, the host's own address as `NETWORK_INTERFACE`, and TLS with the
/// pool CA for every connection (the files of the module documentation).
pub fn network_pool_config(
    dir: &std::path::Path,
    options: &PoolOptions,
    net: &NetworkOptions,
) -> Result<String, PoolError> {
    if net.roles.is_empty() {
        return Err(PoolError::BadDaemonList(
            "a host needs at least one role".into(),
        ));
    }
    let address = config_value("NETWORK_INTERFACE", &net.address)?;
    let condor_host = config_value("CONDOR_HOST", &net.condor_host)?;
    let options = PoolOptions {
        daemons: net.daemons(),
        ..options.clone()
    };
    let mut parts = NetworkParts {
        network: Config::default(),
        daemons: Config::default(),
        domains: Config::default(),
        security: Config::default(),
    };

    let c = &mut parts.network;
    c.section("Network: this host's address; the central manager's collector at its port");
    c.set("CONDOR_HOST", condor_host);
    c.set("NETWORK_INTERFACE", address);
    c.set("BIND_ALL_INTERFACES", "False");
    c.set(
        "COLLECTOR_HOST",
        format!("$(CONDOR_HOST):{}", net.collector_port),
    );

    let c = &mut parts.daemons;
    c.comment("The host's roles (HTCondor's role metaknobs add their daemons to DAEMON_LIST)");
    c.set("DAEMON_LIST", "MASTER");
    for role in net.ordered_roles() {
        c.text
            .push_str(&format!("use ROLE : {}\n", role.metaknob()));
    }

    let c = &mut parts.domains;
    c.section("Domains: the pool's users; this host's own file system");
    match &net.uid_domain {
        Some(d) => c.set("UID_DOMAIN", config_value("UID_DOMAIN", d)?),
        None => c.set("UID_DOMAIN", "$(FULL_HOSTNAME)"),
    }
    c.set("FILESYSTEM_DOMAIN", "$(FULL_HOSTNAME)");
    match &net.trust_domain {
        Some(d) => c.set("TRUST_DOMAIN", config_value("TRUST_DOMAIN", d)?),
        None => c.set("TRUST_DOMAIN", "$(UID_DOMAIN)"),
    }

    let c = &mut parts.security;
    c.section("Security: keys readable by this host's administrator only");
    c.set("SEC_PASSWORD_DIRECTORY", "$(LOCAL_DIR)/passwords.d");
    if net.is_central_manager() {
        c.comment("The pool signing key (tokens, join tokens): the central manager's only");
        c.set(
            "SEC_TOKEN_POOL_SIGNING_KEY_FILE",
            format!("$(SEC_PASSWORD_DIRECTORY)/{POOL_SIGNING_KEY_NAME}"),
        );
    }
    c.set("SEC_TOKEN_SYSTEM_DIRECTORY", "$(LOCAL_DIR)/tokens.d");
    c.set("SEC_TOKEN_DIRECTORY", "$(LOCAL_DIR)/tokens.d");
    c.section("TLS: the pool's CA and this host's certificate, for every connection");
    if net.is_central_manager() {
        c.set("TRUST_DOMAIN_CAFILE", "$(LOCAL_DIR)/certs/pool_ca.pem");
        c.set(
            "TRUST_DOMAIN_CAKEY",
            "$(SEC_PASSWORD_DIRECTORY)/pool_ca.key",
        );
        c.set("AUTH_SSL_CLIENT_CAFILE", "$(TRUST_DOMAIN_CAFILE)");
    } else {
        c.set("AUTH_SSL_CLIENT_CAFILE", "$(LOCAL_DIR)/certs/pool_ca.pem");
    }
    c.set("AUTH_SSL_SERVER_CERTFILE", "$(LOCAL_DIR)/certs/host.pem");
    c.set(
        "AUTH_SSL_SERVER_KEYFILE",
        "$(SEC_PASSWORD_DIRECTORY)/host.key",
    );
    c.set("AUTH_SSL_CLIENT_CERTFILE", "$(AUTH_SSL_SERVER_CERTFILE)");
    c.set("AUTH_SSL_CLIENT_KEYFILE", "$(AUTH_SSL_SERVER_KEYFILE)");

    super::config_text(dir, &options, Some(parts))
}

/// The sections a network pool's configuration has in place of a
/// personal pool's.
pub(super) struct NetworkParts {
    pub(super) network: Config,
    pub(super) daemons: Config,
    pub(super) domains: Config,
    pub(super) security: Config,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> skua_config::Config {
        let files = skua_config::MemoryFiles::new().with("/pool/skua_config", text);
        let opts = skua_config::LoadOptions::new().main_file("/pool/skua_config");
        skua_config::Config::load(&files, &opts).expect("the written configuration loads")
    }

    fn get(c: &skua_config::Config, name: &str) -> String {
        c.get(name).expect("expands").unwrap_or_default()
    }

    fn net(roles: &[PoolRole]) -> NetworkOptions {
        NetworkOptions {
            roles: roles.to_vec(),
            address: "10.77.3.11".into(),
            condor_host: "10.77.3.11".into(),
            collector_port: COLLECTOR_PORT,
            uid_domain: None,
            trust_domain: None,
        }
    }

    #[test]
    fn a_central_manager_holds_the_ca_and_listens_on_its_address() {
        let opts = PoolOptions {
            skuad: Some("/usr/bin/skuad".into()),
            ..PoolOptions::default()
        };
        let text = PoolLayout::new("/pool")
            .network_config_text(&opts, &net(&[PoolRole::Submit, PoolRole::CentralManager]))
            .unwrap();
        assert!(
            text.contains("use ROLE : CentralManager\nuse ROLE : Submit\n"),
            "{text}"
        );
        let c = load(&text);
        let daemons: Vec<String> = get(&c, "DAEMON_LIST")
            .split([' ', ','])
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect();
        assert_eq!(daemons, ["MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD"]);
        assert_eq!(get(&c, "COLLECTOR_HOST"), "10.77.3.11:9618");
        assert_eq!(get(&c, "NETWORK_INTERFACE"), "10.77.3.11");
        assert_eq!(get(&c, "TRUST_DOMAIN_CAFILE"), "/pool/certs/pool_ca.pem");
        assert_eq!(
            get(&c, "TRUST_DOMAIN_CAKEY"),
            "/pool/passwords.d/pool_ca.key"
        );
        assert_eq!(get(&c, "AUTH_SSL_CLIENT_CAFILE"), "/pool/certs/pool_ca.pem");
        assert_eq!(get(&c, "AUTH_SSL_CLIENT_CERTFILE"), "/pool/certs/host.pem");
        assert_eq!(
            get(&c, "AUTH_SSL_SERVER_KEYFILE"),
            "/pool/passwords.d/host.key"
        );
        assert_eq!(
            get(&c, "SEC_TOKEN_POOL_SIGNING_KEY_FILE"),
            "/pool/passwords.d/POOL"
        );
        // every daemon of the roles is run by skuad
        assert_eq!(get(&c, "SCHEDD"), "/usr/bin/skuad");
        assert_eq!(get(&c, "NEGOTIATOR_ARGS"), "negotiator");
        let layout = PoolLayout::new("/pool");
        assert_eq!(
            layout.ca_cert_file().to_str(),
            Some("/pool/certs/pool_ca.pem")
        );
        assert_eq!(
            layout.host_key_file().to_str(),
            Some("/pool/passwords.d/host.key")
        );
    }

    #[test]
    fn a_joined_host_has_the_pools_domain_and_no_ca_key() {
        let mut n = net(&[PoolRole::Execute]);
        n.address = "10.77.3.12".into();
        n.uid_domain = Some("cm.example".into());
        n.trust_domain = Some("cm.example".into());
        n.collector_port = 19618;
        let text = network_pool_config(std::path::Path::new("/pool"), &PoolOptions::default(), &n)
            .unwrap();
        let c = load(&text);
        assert_eq!(
            get(&c, "DAEMON_LIST")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["MASTER", "STARTD"]
        );
        assert_eq!(get(&c, "COLLECTOR_HOST"), "10.77.3.11:19618");
        assert_eq!(get(&c, "NETWORK_INTERFACE"), "10.77.3.12");
        assert_eq!(get(&c, "UID_DOMAIN"), "cm.example");
        assert_eq!(get(&c, "TRUST_DOMAIN"), "cm.example");
        assert_eq!(get(&c, "AUTH_SSL_CLIENT_CAFILE"), "/pool/certs/pool_ca.pem");
        assert!(!text.contains("TRUST_DOMAIN_CAKEY"));
        assert!(!text.contains("SEC_TOKEN_POOL_SIGNING_KEY_FILE"));
    }

    #[test]
    fn bad_values_and_no_roles_are_refused() {
        let mut n = net(&[PoolRole::Execute]);
        n.condor_host = "$(EVIL)".into();
        assert!(
            network_pool_config(std::path::Path::new("/p"), &PoolOptions::default(), &n).is_err()
        );
        let n = net(&[]);
        assert!(
            network_pool_config(std::path::Path::new("/p"), &PoolOptions::default(), &n).is_err()
        );
    }
}
