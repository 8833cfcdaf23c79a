//! How the startd reaches other daemons: every client it opens is made
//! here, by a [`Peers`] built once from the [`DaemonContext`] (which
//! cannot be shared between tasks), with what the context's own
//! `client_for` and `client_at` use: the collector's locator, this
//! daemon's token and the CA that TLS trusts. What the context says
//! about reaching peers (a test's faults, say) is carried over in
//! [`Peers::new`] and applies to every client.

use std::time::Duration;

use skua_daemon::context::Locator;
use skua_daemon::{DaemonContext, DaemonError};
use skua_net::Client;
use skua_proto::{routes, Ack, StarterGone};

/// What the startd needs to call the collector and shadows (schedds).
#[derive(Clone, Debug)]
pub struct Peers {
    collector: Locator,
    token: Option<String>,
    dialer: skua_daemon::context::Dialer,
}

impl Peers {
    /// Reads where the collector is and the CA (`AUTH_SSL_CLIENT_CAFILE`)
    /// once (`ctx.locator`, `ctx.dialer`).
    pub fn new(ctx: &DaemonContext) -> Result<Peers, DaemonError> {
        Ok(Peers {
            collector: ctx.locator("COLLECTOR")?,
            token: ctx.daemon_token.clone(),
            dialer: ctx.dialer()?,
        })
    }

    /// A client of the collector, as `ctx.client_for("COLLECTOR", ..)`:
    /// its Unix socket if on this host, else TCP with this daemon's token.
    pub fn collector(&self, timeout: Duration) -> Result<Client, DaemonError> {
        self.collector.client(self.token.clone(), timeout)
    }

    /// A client of the daemon at `address` (`<ip:port>`), as
    /// `ctx.client_at(address, ..)`.
    pub fn at(&self, address: &str, timeout: Duration) -> Result<Client, DaemonError> {
        self.dialer.client_at(address, timeout)
    }

    /// Tells the shadow at `shadow_addr` that the starter of a job is gone
    /// without a report (in the background; a schedd that does not answer
    /// learns it from its keep-alives).
    pub fn starter_gone(&self, shadow_addr: &str, gone: StarterGone) {
        let client = self.at(shadow_addr, Duration::from_secs(10));
        let addr = shadow_addr.to_string();
        tokio::spawn(async move {
            let r = match client {
                Ok(c) => c
                    .command::<_, Ack>(&routes::SHADOW_STARTER_GONE, Some(&gone))
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match r {
                Ok(()) => tracing::info!(
                    "told the shadow at {addr} that job {}'s starter is gone",
                    gone.job_id
                ),
                Err(e) => tracing::debug!(
                    "telling the shadow at {addr} that job {}'s starter is gone: {e}",
                    gone.job_id
                ),
            }
        });
    }
}

#[cfg(test)]
impl Peers {
    /// Peers for tests that dial nobody: the collector's socket and
    /// address file do not exist.
    pub(crate) fn nowhere() -> Peers {
        let files = skua_config::MemoryFiles::new().with(
            "/skua.conf",
            "LOCK = /nonexistent/lock\nLOG = /nonexistent/log\n",
        );
        let opts = skua_config::LoadOptions::new()
            .main_file("/skua.conf")
            .subsystem("STARTD");
        let config = skua_config::Config::load(&files, &opts).expect("a valid configuration");
        Peers {
            collector: Locator::new(&config, "COLLECTOR").expect("a collector locator"),
            token: None,
            dialer: skua_daemon::context::Dialer::default(),
        }
    }
}
