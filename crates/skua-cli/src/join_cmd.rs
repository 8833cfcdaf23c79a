//! A pool of several machines from the command line: `skua pool start
//! --role central-manager` (the pool CA, the central manager's own
//! certificate, the signing key, the join command), `skua pool join`,
//! `skua token create --join`, `skua token list`, `skua token revoke`.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use skua_master::{NetworkOptions, PoolLayout, PoolOptions, COLLECTOR_PORT};
use skua_net::pki::{self, PoolCa};
use skua_net::{Client, Endpoint, SigningKey};
use skua_proto::{
    routes, CredentialList, CredentialQuery, CredentialRecord, JoinReply, JoinRequest, PoolRole,
    RevokeReply, RevokeRequest,
};

use crate::pool_cmd::{
    client_for, config_for, load_config, pool_dir, runtime, start_master, write_private, PoolArgs,
    PoolStartArgs,
};

/// How long the central manager's own certificate is valid: five years,
/// as the certificates it issues to joining hosts.
const HOST_CERT_VALIDITY_SECS: u64 = skua_collector::join::HOST_CERT_VALIDITY_SECS;

fn now_secs() -> u64 {
    u64::try_from(skua_daemon::now_secs()).unwrap_or(0)
}

/// A join token valid for `lifetime` seconds (default one hour).
pub(crate) fn join_token(key: &SigningKey, lifetime: Option<u64>) -> Result<String> {
    let lifetime = lifetime
        .map(Duration::from_secs)
        .unwrap_or(skua_net::DEFAULT_JOIN_LIFETIME);
    if lifetime.is_zero() {
        bail!("{} must be at least 1 second", crate::opt("lifetime"));
    }
    Ok(skua_net::issue_join_token_at(key, lifetime, now_secs())?)
}

fn parse_roles(texts: &[String]) -> Result<Vec<PoolRole>> {
    let mut roles = Vec::new();
    for t in texts.iter().filter(|t| !t.trim().is_empty()) {
        let role = PoolRole::parse(t)
            .with_context(|| format!("--role {t}: expected central-manager, submit or execute"))?;
        if !roles.contains(&role) {
            roles.push(role);
        }
    }
    Ok(roles)
}

/// This host's address: `--address`, else the first non-loopback
/// address its host name resolves to.
fn own_address(given: Option<&str>, toward: Option<SocketAddr>) -> Result<IpAddr> {
    if let Some(a) = given {
        return a
            .trim()
            .parse()
            .with_context(|| format!("--address {a}: not an IP address"));
    }
    // the address this host uses toward the central manager (no packet is
    // sent: a UDP socket only picks its route)
    if let Some(target) = toward {
        let bind: SocketAddr = if target.is_ipv4() {
            "0.0.0.0:0".parse()?
        } else {
            "[::]:0".parse()?
        };
        if let Ok(sock) = UdpSocket::bind(bind) {
            if sock.connect(target).is_ok() {
                if let Ok(local) = sock.local_addr() {
                    return Ok(local.ip());
                }
            }
        }
    }
    let host = skua_daemon::host_name();
    let found = (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .into_iter()
        .flatten()
        .map(|a| a.ip())
        .find(|ip| !ip.is_loopback() && !ip.is_unspecified());
    // else HTCondor's NETWORK_INTERFACE = *: the host's best interface
    // address (public before private), if it has one besides loopback
    let found = found.or_else(|| {
        let interfaces = skua_daemon::interfaces::host_interfaces().ok()?;
        skua_daemon::interfaces::choose_address("*", &interfaces)
            .ok()
            .filter(|ip| !ip.is_loopback())
    });
    found.with_context(|| {
        format!("cannot tell this host's address (its name {host} resolves to no non-loopback address, and it has no interface address but loopback); give --address")
    })
}

fn write_public(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}

fn create_dirs(layout: &PoolLayout) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut dirs = layout.directories();
    dirs.push(skua_master::PoolDir {
        path: layout.certs_dir(),
        mode: 0o755,
    });
    for d in dirs {
        std::fs::create_dir_all(&d.path)
            .with_context(|| format!("creating {}", d.path.display()))?;
        std::fs::set_permissions(&d.path, std::fs::Permissions::from_mode(d.mode))?;
    }
    Ok(())
}

fn skuad_path() -> Result<PathBuf> {
    Ok(std::env::current_exe()?.with_file_name("skuad"))
}

// ----- skua pool start --role central-manager ------------------------------

/// `skua pool start --role ...`: a host of a pool of several machines.
/// Only a central manager can be started this way; other hosts join one.
pub(crate) fn pool_start_network(a: &PoolStartArgs) -> Result<ExitCode> {
    let roles = parse_roles(&a.roles)?;
    if !roles.contains(&PoolRole::CentralManager) {
        bail!(
            "a submit or execute host joins a central manager: `skua pool join HOST --token T --ca-hash H`"
        );
    }
    let dir = pool_dir(&a.pool)?;
    let layout = PoolLayout::new(&dir);
    create_dirs(&layout)?;
    let port = a.collector_port.unwrap_or(COLLECTOR_PORT);
    let host = skuad_host_name();

    // the pool's secrets, each made once
    let key = SigningKey::load_or_create(&layout.pool_signing_key())?;
    let ca = if layout.ca_key_file().exists() {
        let read = |p: PathBuf| {
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
        };
        PoolCa::from_pem(&read(layout.ca_cert_file())?, &read(layout.ca_key_file())?)?
    } else {
        let ca = PoolCa::generate(&format!("Skua pool CA of {host}"))?;
        write_private(&layout.ca_key_file(), ca.key_pem())?;
        write_public(&layout.ca_cert_file(), ca.cert_pem())?;
        println!("created the pool CA {}", layout.ca_cert_file().display());
        ca
    };

    let config_file = layout.config_file();
    let mut port = port;
    let address = if config_file.exists() {
        let config = config_for(&dir)?;
        let knob = |name: &str| config.get(name).ok().flatten();
        if knob("TRUST_DOMAIN_CAKEY").is_none() {
            bail!(
                "{} is not a central manager's configuration (it names no TRUST_DOMAIN_CAKEY); \
                 give another --dir",
                config_file.display()
            );
        }
        println!("kept {}", config_file.display());
        if let Some(p) = knob("COLLECTOR_HOST")
            .and_then(|h| h.rsplit_once(':').and_then(|(_, p)| p.trim().parse().ok()))
        {
            port = p;
        }
        own_address(
            knob("NETWORK_INTERFACE")
                .as_deref()
                .or(a.address.as_deref()),
            None,
        )?
    } else {
        let address = own_address(a.address.as_deref(), None)?;
        let net = NetworkOptions {
            roles: roles.clone(),
            address: address.to_string(),
            condor_host: address.to_string(),
            collector_port: port,
            uid_domain: None,
            trust_domain: None,
        };
        let opts = PoolOptions {
            skuad: Some(skuad_path()?),
            ..PoolOptions::default()
        };
        std::fs::write(&config_file, layout.network_config_text(&opts, &net)?)
            .with_context(|| format!("writing {}", config_file.display()))?;
        println!("wrote {}", config_file.display());
        address
    };
    if !layout.host_cert_file().exists() || !layout.host_key_file().exists() {
        let issued = ca.issue_host(&host, &[address], None, HOST_CERT_VALIDITY_SECS)?;
        let host_key = issued
            .key_pem
            .as_deref()
            .context("the CA returned no key for the central manager's certificate")?;
        write_private(&layout.host_key_file(), host_key)?;
        write_public(&layout.host_cert_file(), &issued.cert_pem)?;
        println!(
            "created the certificate of {host} ({address}), credential {}",
            issued.id
        );
    }

    start_master(&dir)?;
    println!("to use it: export SKUA_CONFIG={}", config_file.display());
    let token = join_token(&key, None)?;
    let target = SocketAddr::new(address, port);
    println!("to join other hosts to this pool (the token works once, for one hour):");
    println!(
        "skua pool join {target} --token {token} --ca-hash {}",
        ca.hash()
    );
    Ok(ExitCode::SUCCESS)
}

fn skuad_host_name() -> String {
    skua_daemon::host_name()
}

// ----- skua pool join --------------------------------------------------------

#[derive(clap::Args)]
pub struct PoolJoinArgs {
    /// The central manager: HOST or HOST:PORT (default port 9618).
    central_manager: String,
    /// The join token (`skua token create --join` on the central manager).
    #[arg(long)]
    token: String,
    /// The pool CA's hash, `sha256:<64 hex digits>`, as the central manager
    /// printed it: the central manager is trusted only if it proves to hold
    /// that CA.
    #[arg(long)]
    ca_hash: Option<String>,
    /// This host's roles: submit, execute (repeat or separate with commas;
    /// default execute).
    #[arg(long = "role", value_delimiter = ',')]
    roles: Vec<String>,
    /// This host's address (default: the one it reaches the central manager
    /// from).
    #[arg(long)]
    address: Option<String>,
    #[command(flatten)]
    pool: PoolArgs,
}

fn resolve_central_manager(text: &str) -> Result<SocketAddr> {
    let t = text.trim();
    let with_port = match t.rsplit_once(':') {
        Some((_, p)) if p.parse::<u16>().is_ok() && !t.ends_with(']') => t.to_string(),
        _ if t.parse::<std::net::Ipv6Addr>().is_ok() => format!("[{t}]:{COLLECTOR_PORT}"),
        _ => format!("{t}:{COLLECTOR_PORT}"),
    };
    with_port
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the central manager {t}"))?
        .next()
        .with_context(|| format!("the central manager {t} has no address"))
}

pub(crate) fn pool_join(a: &PoolJoinArgs) -> Result<ExitCode> {
    let Some(hash) = &a.ca_hash else {
        bail!(
            "--ca-hash is required: without the pool CA's hash nothing proves that {} is your \
             central manager (give the sha256:... that `skua pool start` printed there)",
            a.central_manager
        );
    };
    let hash = pki::parse_hash(hash)?;
    let mut roles = parse_roles(&a.roles)?;
    if roles.is_empty() {
        roles.push(PoolRole::Execute);
    }
    if roles.contains(&PoolRole::CentralManager) {
        bail!("a pool has one central manager; a joining host is submit and/or execute");
    }
    let dir = pool_dir(&a.pool)?;
    let layout = PoolLayout::new(&dir);
    if layout.config_file().exists() {
        println!(
            "{} exists already: this directory is configured (joined before?); nothing was \
             overwritten. Remove the directory to join again.",
            layout.config_file().display()
        );
        start_master(&dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    let cm = resolve_central_manager(&a.central_manager)?;
    let rt = runtime()?;

    // 1. the CA, accepted only if the central manager proves it holds the
    //    pinned one; nothing is sent before that
    let ca_pem = rt
        .block_on(pki::fetch_pinned_ca(cm, &hash, Duration::from_secs(20)))
        .with_context(|| format!("verifying the central manager {cm}"))?;
    println!("the central manager {cm} holds the pool CA {hash}");

    // 2. this host's key pair, made here; only the public key is sent
    let (private_pem, public_pem) = pki::generate_key()?;
    let address = own_address(a.address.as_deref(), Some(cm))?;
    let host = skuad_host_name();
    let request = JoinRequest {
        token: a.token.trim().to_string(),
        host: host.clone(),
        addresses: vec![address.to_string()],
        roles: roles.clone(),
        public_key_pem: public_pem,
    };
    let client = Client::new(
        Endpoint::Tls(cm, ca_pem.clone()),
        None,
        Duration::from_secs(30),
    )?;
    let reply: JoinReply = rt
        .block_on(client.command(&routes::COLLECTOR_JOIN, Some(&request)))
        .with_context(|| format!("joining the pool of {cm}"))?;
    if pki::ca_hash(&reply.ca_pem)? != hash {
        bail!("the central manager answered with another CA than the one pinned ({hash})");
    }

    // 3. the files and the configuration
    create_dirs(&layout)?;
    write_private(&layout.host_key_file(), &private_pem)?;
    write_public(&layout.host_cert_file(), &reply.cert_pem)?;
    write_public(&layout.ca_cert_file(), &ca_pem)?;
    let condor_host = if reply.condor_host.trim().is_empty() {
        cm.ip().to_string()
    } else {
        reply.condor_host.clone()
    };
    let net = NetworkOptions {
        roles,
        address: address.to_string(),
        condor_host,
        collector_port: cm.port(),
        uid_domain: Some(reply.uid_domain.clone()),
        trust_domain: Some(reply.trust_domain.clone()),
    };
    let opts = PoolOptions {
        skuad: Some(skuad_path()?),
        ..PoolOptions::default()
    };
    std::fs::write(
        layout.config_file(),
        layout.network_config_text(&opts, &net)?,
    )
    .with_context(|| format!("writing {}", layout.config_file().display()))?;
    println!(
        "{host} ({address}) joined the pool of {cm} as {}: credential {}",
        net.roles
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        reply.credential_id
    );
    println!("wrote {}", layout.config_file().display());
    start_master(&dir)?;
    println!(
        "to use it: export SKUA_CONFIG={}",
        layout.config_file().display()
    );
    Ok(ExitCode::SUCCESS)
}

// ----- skua token list / revoke ----------------------------------------------

#[derive(clap::Args)]
pub struct TokenListArgs {
    /// The registry as JSON.
    #[arg(long = "json")]
    json: bool,
}

#[derive(clap::Args)]
pub struct TokenRevokeArgs {
    /// A credential id (as `skua token list` shows it) or a host name (every
    /// credential of that host).
    target: String,
}

fn format_time(secs: u64) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_opt(i64::try_from(secs).unwrap_or(0), 0) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%d %H:%M:%S").to_string()
        }
        chrono::LocalResult::None => secs.to_string(),
    }
}

/// The registry as `skua token list` shows it: one row per credential,
/// ID HOST ROLES ISSUED STATUS.
pub(crate) fn format_credentials(
    list: &[CredentialRecord],
    time: impl Fn(u64) -> String,
) -> String {
    let rows: Vec<[String; 5]> = list
        .iter()
        .map(|c| {
            let roles = c
                .roles
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(",");
            let status = match c.revoked {
                Some(at) => format!("revoked {}", time(at)),
                None => "valid".to_string(),
            };
            [c.id.clone(), c.host.clone(), roles, time(c.issued), status]
        })
        .collect();
    let header = ["ID", "HOST", "ROLES", "ISSUED", "STATUS"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

pub(crate) fn token_list(a: &TokenListArgs) -> Result<ExitCode> {
    let config = load_config()?;
    let client = client_for(&config, "COLLECTOR", Duration::from_secs(20))?;
    let list: CredentialList = runtime()?
        .block_on(client.command(&routes::COLLECTOR_CREDENTIALS, Some(&CredentialQuery {})))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&list.credentials)?);
    } else {
        print!("{}", format_credentials(&list.credentials, format_time));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn token_revoke(a: &TokenRevokeArgs) -> Result<ExitCode> {
    let config = load_config()?;
    let client = client_for(&config, "COLLECTOR", Duration::from_secs(20))?;
    let body = RevokeRequest {
        target: a.target.clone(),
    };
    let reply: RevokeReply =
        runtime()?.block_on(client.command(&routes::COLLECTOR_REVOKE, Some(&body)))?;
    if reply.revoked.is_empty() {
        println!("{}: already revoked", a.target);
    }
    for c in &reply.revoked {
        println!("revoked credential {} of {}", c.id, c.host);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_table_has_one_row_per_credential() {
        let rec = |id: &str, host: &str, revoked| CredentialRecord {
            id: id.into(),
            host: host.into(),
            addresses: vec![],
            roles: vec![PoolRole::Submit, PoolRole::Execute],
            issued: 10,
            token_jti: "j".into(),
            revoked,
        };
        let out = format_credentials(
            &[
                rec("0a1b", "exec1.example", None),
                rec("ff", "sub", Some(20)),
            ],
            |t| format!("t{t}"),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "ID    HOST           ROLES           ISSUED  STATUS",
                "0a1b  exec1.example  submit,execute  t10     valid",
                "ff    sub            submit,execute  t10     revoked t20",
            ]
        );
    }

    #[test]
    fn roles_and_addresses_from_the_command_line() {
        let roles = parse_roles(&["execute".into(), "Submit".into(), "execute".into()]).unwrap();
        assert_eq!(roles, [PoolRole::Execute, PoolRole::Submit]);
        assert!(parse_roles(&["worker".into()]).is_err());
        assert_eq!(
            resolve_central_manager("127.0.0.1").unwrap(),
            "127.0.0.1:9618".parse().unwrap()
        );
        assert_eq!(
            resolve_central_manager("127.0.0.1:19618").unwrap(),
            "127.0.0.1:19618".parse().unwrap()
        );
        assert_eq!(
            own_address(Some("10.1.2.3"), None).unwrap(),
            "10.1.2.3".parse::<IpAddr>().unwrap()
        );
        assert!(own_address(Some("nowhere"), None).is_err());
        // toward a loopback address, this host's address is loopback too
        assert!(own_address(None, Some("127.0.0.1:9618".parse().unwrap()))
            .unwrap()
            .is_loopback());
    }
}
