//! Every daemon but the collector keeps its server's revocation set
//! ([`skua_net::Revocations`], shared with [`DaemonContext::revocations`])
//! in step with the collector's credential registry: it fetches the
//! revoked credential ids (`/collector/revocations`) at start and every
//! `UPDATE_INTERVAL` of its clock, with its advertising. A failed fetch
//! keeps the set it had (a revocation is never forgotten because the
//! collector is unreachable for a while).

use std::time::Duration;

use skua_proto::{routes, RevocationList, RevocationQuery};
use tokio::task::JoinHandle;

use crate::context::{DaemonContext, Locator};

/// Starts the refresher of `ctx`'s revocation set; `None` for the
/// collector (its own registry fills its set), for a daemon that trusts no
/// pool CA (`AUTH_SSL_SERVER_CAFILE` or `AUTH_SSL_CLIENT_CAFILE`: without
/// one it verifies no host certificate, so there is nothing to revoke, as
/// in a personal pool), or when the configuration does not say where the
/// collector is.
pub(crate) fn spawn_refresher(ctx: &DaemonContext) -> Option<JoinHandle<()>> {
    if ctx.subsystem.eq_ignore_ascii_case("COLLECTOR") {
        return None;
    }
    let trusts_a_ca = ["AUTH_SSL_SERVER_CAFILE", "AUTH_SSL_CLIENT_CAFILE"]
        .iter()
        .any(|k| ctx.knob(k).ok().flatten().is_some());
    if !trusts_a_ca {
        return None;
    }
    let locator = ctx.locator("COLLECTOR").ok()?;
    let token = ctx.daemon_token.clone();
    let revocations = ctx.revocations.clone();
    let clock = ctx.clock.clone();
    let interval = ctx.update_interval;
    Some(tokio::spawn(async move {
        let mut failing = false;
        loop {
            match fetch(&locator, token.clone()).await {
                Ok(ids) => {
                    let added = ids.iter().filter(|id| !revocations.contains(id)).count();
                    if added > 0 {
                        tracing::info!("{added} more credential(s) revoked by the collector: refused from now on");
                    }
                    revocations.replace(ids);
                    failing = false;
                }
                Err(e) => {
                    if !failing {
                        tracing::debug!("cannot fetch the revoked credentials: {e}");
                    }
                    failing = true;
                }
            }
            clock.sleep(interval).await;
        }
    }))
}

async fn fetch(locator: &Locator, token: Option<String>) -> Result<Vec<String>, String> {
    let client = locator
        .client(token, Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let list: RevocationList = client
        .command(&routes::COLLECTOR_REVOCATIONS, Some(&RevocationQuery {}))
        .await
        .map_err(|e| e.to_string())?;
    Ok(list.revoked)
}
