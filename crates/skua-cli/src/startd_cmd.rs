//! `skua vacate` and `skua drain`: the owner's and the administrator's
//! commands to a machine's startd.
//!
//! With no name, the command goes to this machine's startd. A name is a
//! slot (`slot1@host`) or a host (`host`, every slot of it); the startds
//! are found through the collector's Machine ads (`StartdIpAddr`).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use skua_daemon::context::Locator;
use skua_net::Client;
use skua_proto::{routes, DrainRequest, Query, QueryReply, SlotStates, VacateRequest};

use crate::pool_cmd::{client_for, load_config, report, runtime};

#[derive(clap::Args)]
pub struct VacateArgs {
    /// Kill the jobs at once instead of a soft vacate.
    #[arg(long)]
    fast: bool,
    /// Slots (`slot1@host`) or hosts; this machine when none.
    names: Vec<String>,
}

#[derive(clap::Args)]
pub struct DrainArgs {
    /// Cancel draining.
    #[arg(long)]
    cancel: bool,
    /// Hosts; this machine when none.
    hosts: Vec<String>,
}

const TIMEOUT: Duration = Duration::from_secs(20);

/// The startds to ask: address → the names given for it (empty: all its
/// slots). `None` as address: this machine's startd.
fn targets(
    config: &skua_config::Config,
    names: &[String],
) -> Result<BTreeMap<Option<String>, Vec<String>>> {
    let mut out: BTreeMap<Option<String>, Vec<String>> = BTreeMap::new();
    if names.is_empty() {
        out.insert(None, Vec::new());
        return Ok(out);
    }
    let collector = client_for(config, "COLLECTOR", TIMEOUT)?;
    let q = Query {
        ad_type: "Machine".into(),
        constraint: None,
        projection: vec!["Name".into(), "Machine".into(), "StartdIpAddr".into()],
    };
    let reply: QueryReply =
        runtime()?.block_on(collector.command(&routes::COLLECTOR_QUERY, Some(&q)))?;
    let mut ads = Vec::new();
    for text in &reply.ads {
        let ad = classad::parse_ad(text).context("the collector sent an ad that does not parse")?;
        let get = |n: &str| match ad.lookup(n) {
            Some(classad::Expr::Lit(v)) => v.as_string().unwrap_or_default(),
            _ => String::new(),
        };
        ads.push((get("Name"), get("Machine"), get("StartdIpAddr")));
    }
    for n in names {
        let slot = ads.iter().find(|(name, _, _)| name == n);
        if let Some((_, _, addr)) = slot {
            out.entry(Some(addr.clone())).or_default().push(n.clone());
            continue;
        }
        let hosts: Vec<&String> = ads
            .iter()
            .filter(|(_, m, _)| {
                m.eq_ignore_ascii_case(n) || m.split('.').next() == Some(n.as_str())
            })
            .map(|(_, _, a)| a)
            .collect();
        if hosts.is_empty() {
            bail!("no slot or machine named {n} in the pool");
        }
        for a in hosts {
            out.entry(Some(a.clone())).or_default();
        }
    }
    Ok(out)
}

/// A client of the startd at `addr` (this machine's through its socket).
fn startd_client(config: &skua_config::Config, addr: Option<&str>) -> Result<Client> {
    let local = Locator::new(config, "STARTD")
        .ok()
        .and_then(|l| l.network_sinful().ok());
    let is_local = |a: &str| {
        let Ok(given) = skua_daemon::address::Sinful::parse(a) else {
            return false;
        };
        local
            .as_ref()
            .is_some_and(|l| l.addr == given.addr && l.sock == given.sock)
    };
    match addr {
        None => client_for(config, "STARTD", TIMEOUT),
        Some(a) if is_local(a) => client_for(config, "STARTD", TIMEOUT),
        Some(a) => {
            let dirs = skua_daemon::security::token_dirs(
                config,
                std::env::var_os("HOME")
                    .map(std::path::PathBuf::from)
                    .as_deref(),
            )?;
            let token = skua_daemon::security::find_token(&dirs);
            let ca = match config.get("AUTH_SSL_CLIENT_CAFILE")? {
                Some(path) => Some(std::fs::read_to_string(&path).with_context(|| path.clone())?),
                None => None,
            };
            Ok(skua_daemon::context::client_at(a, token, ca, TIMEOUT)?)
        }
    }
}

fn print_states(s: &SlotStates, names: &[String]) {
    for (name, state, activity) in &s.slots {
        if names.is_empty() || names.iter().any(|n| n == name) {
            println!("{name}: {state}/{activity}");
        }
    }
}

pub fn vacate(a: VacateArgs) -> ExitCode {
    report(
        "vacate",
        (|| {
            let config = load_config()?;
            for (addr, names) in targets(&config, &a.names)? {
                let client = startd_client(&config, addr.as_deref())?;
                let req = VacateRequest {
                    slots: names.clone(),
                    fast: a.fast,
                };
                let reply: SlotStates =
                    runtime()?.block_on(client.command(&routes::STARTD_VACATE, Some(&req)))?;
                print_states(&reply, &names);
            }
            Ok(ExitCode::SUCCESS)
        })(),
    )
}

pub fn drain(a: DrainArgs) -> ExitCode {
    report(
        "drain",
        (|| {
            let config = load_config()?;
            for (addr, _) in targets(&config, &a.hosts)? {
                let client = startd_client(&config, addr.as_deref())?;
                let req = DrainRequest { cancel: a.cancel };
                let reply: SlotStates =
                    runtime()?.block_on(client.command(&routes::STARTD_DRAIN, Some(&req)))?;
                print_states(&reply, &[]);
            }
            Ok(ExitCode::SUCCESS)
        })(),
    )
}
