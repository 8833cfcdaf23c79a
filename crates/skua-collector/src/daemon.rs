//! `skuad collector`: the store behind the network.
//!
//! Listens on its Unix socket (`$(LOCK)/collector.sock`, callers identified
//! by the kernel) and on TCP at `COLLECTOR_HOST`'s port on
//! `NETWORK_INTERFACE` (port 0: chosen by the OS and published in
//! `COLLECTOR_ADDRESS_FILE`). Updates and invalidations need DAEMON;
//! queries need READ. Ads live in memory only: after a restart the daemons
//! re-advertise within one update interval.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use classad::ClassAd;
use skua_daemon::{now_secs, DaemonContext};
use skua_net::routing::post;
use skua_net::{
    json_array_response, ApiError, Caller, Json, JsonStream, Listener, Routes, Server, State,
};
use skua_proto::{routes, Ack, AdUpdate, Invalidate, Query, QueryReply};
use tokio::sync::watch;

use crate::store::{select_ads, AdStore, AdType, StoreConfig, TypeFilter};

type Shared = Arc<Mutex<AdStore>>;

fn lock(store: &Shared) -> std::sync::MutexGuard<'_, AdStore> {
    store.lock().unwrap_or_else(|e| e.into_inner())
}

async fn update(
    State(store): State<Shared>,
    caller: Caller,
    Json(u): Json<AdUpdate>,
) -> Result<Json<Ack>, ApiError> {
    let ad = classad::parse_ad(&u.ad)
        .or_else(|_| classad::parse_old_ad(&u.ad))
        .map_err(|e| ApiError::bad_request(format!("ad of {} {}: {e}", u.ad_type, u.name)))?;
    if u.name.is_empty() {
        return Err(ApiError::bad_request("an ad needs a name"));
    }
    let lifetime = (u.lifetime_secs > 0).then_some(u.lifetime_secs);
    let outcome = lock(&store).update(&AdType::new(&u.ad_type), &u.name, ad, lifetime, now_secs());
    if outcome.inserted {
        tracing::info!("new {} ad {} from {}", u.ad_type, u.name, caller.identity);
    }
    Ok(Json(Ack {}))
}

async fn invalidate(
    State(store): State<Shared>,
    caller: Caller,
    Json(i): Json<Invalidate>,
) -> Json<Ack> {
    if lock(&store)
        .invalidate(&AdType::new(&i.ad_type), &i.name)
        .is_some()
    {
        tracing::info!(
            "{} ad {} withdrawn by {}",
            i.ad_type,
            i.name,
            caller.identity
        );
    }
    Json(Ack {})
}

async fn query(
    State(store): State<Shared>,
    Json(q): Json<Query>,
) -> Result<JsonStream<QueryReply>, ApiError> {
    let constraint = q
        .constraint
        .as_deref()
        .filter(|c| !c.trim().is_empty())
        .map(classad::parse_expr)
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("constraint: {e}")))?;
    let filter = TypeFilter::parse(&q.ad_type);
    // Under the lock only the shared handles of the candidate ads; the
    // constraint (any user expression) is evaluated outside it, on a
    // blocking thread, and stops if the request is given up.
    let (candidates, opts) = {
        let s = lock(&store);
        (s.candidates(&filter), s.eval_options(now_secs()))
    };
    let projection = q.projection;
    let ads = skua_daemon::work::off_thread(move |cancel| {
        select_ads(&candidates, constraint.as_ref(), &projection, opts, || {
            cancel.is_cancelled()
        })
    })
    .await
    .map_err(|e| ApiError::internal(format!("{e:#}")))?
    .ok_or_else(|| ApiError::internal("the query was cancelled"))?;
    // a `QueryReply`, each ad unparsed as the connection takes it: the
    // reply is never built whole in memory
    Ok(JsonStream::new(json_array_response(
        "ads",
        ads.into_iter().map(|ad| classad::unparse_ad(&ad)),
    )))
}

/// The collector's own ad.
fn collector_ad(
    ctx: &DaemonContext,
    name: &str,
    addr: &str,
    start: i64,
    store: &Shared,
) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_value("MyType", "Collector");
    ad.insert_value("Name", name);
    ad.insert_value("Machine", name.rsplit('@').next().unwrap_or(name));
    ad.insert_value("MyAddress", format!("<{addr}>"));
    ad.insert_value("DaemonStartTime", start);
    ad.insert_value("UidDomain", ctx.uid_domain.as_str());
    ad.insert_value(
        "CondorVersion",
        concat!("$SkuaVersion: ", env!("CARGO_PKG_VERSION"), " $"),
    );
    let (machines, total) = {
        let s = lock(store);
        (s.len_of(&AdType::machine()) as i64, s.len() as i64)
    };
    ad.insert_value("HostsTotal", machines);
    ad.insert_value("AdsTotal", total);
    ad
}

/// Runs the collector until `shutdown` turns true.
pub async fn serve(ctx: DaemonContext, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let store: Shared = Arc::new(Mutex::new(AdStore::new(StoreConfig {
        default_lifetime: ctx.classad_lifetime,
        ..StoreConfig::default()
    })));
    let port = ctx
        .knob("COLLECTOR_HOST")?
        .and_then(|h| {
            h.rsplit_once(':')
                .and_then(|(_, p)| p.trim().parse::<u16>().ok())
        })
        .unwrap_or(skua_daemon::context::DEFAULT_COLLECTOR_PORT);
    let tcp = ctx.tcp_listener(port).await.context("collector")?;
    let sock = ctx.socket_path()?;
    let unix = Listener::unix(&sock)
        .await
        .context("collector: binding its Unix socket")?;
    let routes = Routes::new()
        .command(&routes::COLLECTOR_UPDATE, post(update))
        .command(&routes::COLLECTOR_INVALIDATE, post(invalidate))
        .command(&routes::COLLECTOR_QUERY, post(query))
        .with_state(store.clone());
    let server = Server::new(ctx.server_config(), routes).context("collector: server setup")?;
    let handle = server.spawn(vec![tcp, unix]);
    let addr = handle.local_addr().context("collector: no TCP address")?;
    let addr_file = ctx.address_file()?;
    skua_daemon::write_address_file(&addr_file, addr)?;
    tracing::info!("collector listening on {addr} and {}", sock.display());

    let host = skua_daemon::system_config::host_facts(&skua_daemon::system_config::environment())
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".into());
    let name = format!("collector@{host}");
    let start = now_secs();
    let interval = ctx.update_interval;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut interval = interval;
    let mut next_self_ad = 0i64;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let now = now_secs();
                for gone in lock(&store).expire(now) {
                    tracing::info!("{} ad {} expired", gone.ad_type, gone.name);
                }
                if now >= next_self_ad {
                    let ad = collector_ad(&ctx, &name, &addr.to_string(), start, &store);
                    lock(&store).update(&AdType::new("Collector"), &name, ad, None, now);
                    next_self_ad = now + interval.as_secs() as i64;
                }
            }
            _ = hup.recv() => {
                // reconfig: re-read the configuration; a broken file is
                // reported and the running configuration kept
                match DaemonContext::load("COLLECTOR") {
                    Ok(new) => {
                        interval = new.update_interval;
                        lock(&store).set_default_lifetime(new.classad_lifetime);
                        tracing::info!("reconfig: configuration re-read (security settings and ports apply at the next start)");
                    }
                    Err(e) => tracing::error!("reconfig: configuration error, keeping the running configuration: {e}"),
                }
            }
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break; }
            }
        }
    }
    tracing::info!("collector shutting down");
    let _ = std::fs::remove_file(&addr_file);
    handle.shutdown().await;
    Ok(())
}
