//! `skuad collector`: the store behind the network.
//!
//! Listens on its Unix socket (`$(LOCK)/collector.sock`, callers identified
//! by the kernel) and on TCP at `COLLECTOR_HOST`'s port on
//! `NETWORK_INTERFACE` (port 0: chosen by the OS and published in
//! `COLLECTOR_ADDRESS_FILE`). Updates and invalidations need DAEMON;
//! queries need READ. Ads live in memory only: after a restart the daemons
//! re-advertise within one update interval.
//!
//! The shell's loop owns the [`AdStore`]; request handlers send it an
//! [`Event`] and wait for its answer. An update is parsed by its handler
//! and stored by the loop before it is acknowledged, so a query that
//! follows sees it. A query takes from the loop only the shared handles of
//! the candidate ads (cheap: reference counts) and evaluates its constraint
//! outside the loop, on a blocking thread, streaming the reply; the loop
//! never evaluates a user's expression. Expiry (every second) and the
//! collector's own ad (every `UPDATE_INTERVAL`) run on the daemon's clock.

use std::time::Duration;

use anyhow::Context as _;
use classad::{ClassAd, EvalOptions};
use skua_daemon::{DaemonContext, Listening};
use skua_net::routing::post;
use skua_net::{json_array_response, ApiError, Caller, FromRef, Json, JsonStream, Routes, State};
use skua_proto::{routes, Ack, AdUpdate, Invalidate, Query, QueryReply};
use tokio::sync::{mpsc, oneshot, watch};

use crate::join::{self, JoinState, RegistryEvent, RegistryShell};
use crate::store::{select_ads, AdStore, AdType, StoreConfig, TypeFilter};

/// What the loop is asked to do; every request carries its reply.
enum Event {
    /// Store an ad (parsed by the handler); the reply says whether it is
    /// new.
    Update {
        ad_type: AdType,
        name: String,
        ad: ClassAd,
        lifetime: Option<u64>,
        reply: oneshot::Sender<bool>,
    },
    /// Withdraw an ad; the reply says whether there was one.
    Invalidate {
        ad_type: AdType,
        name: String,
        reply: oneshot::Sender<bool>,
    },
    /// The candidate ads of a query (shared handles) and the evaluation
    /// options of the moment.
    Candidates {
        filter: TypeFilter,
        reply: oneshot::Sender<(Vec<ClassAd>, EvalOptions)>,
    },
    /// About the credential registry (joins, listing, revocation).
    Registry(RegistryEvent),
}

/// What the handlers hold: the way to the loop.
#[derive(Clone)]
struct Loop {
    events: mpsc::Sender<Event>,
    /// The join and registry handlers' part.
    join: JoinState,
}

impl FromRef<Loop> for JoinState {
    fn from_ref(shell: &Loop) -> JoinState {
        shell.join.clone()
    }
}

impl Loop {
    /// Sends `make(reply)` to the loop and waits for its answer.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Event) -> Result<T, ApiError> {
        let gone = || ApiError::unavailable("the collector is shutting down");
        let (tx, rx) = oneshot::channel();
        self.events.send(make(tx)).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

async fn update(
    State(shell): State<Loop>,
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
    let inserted = shell
        .ask(|reply| Event::Update {
            ad_type: AdType::new(&u.ad_type),
            name: u.name.clone(),
            ad,
            lifetime,
            reply,
        })
        .await?;
    if inserted {
        tracing::info!("new {} ad {} from {}", u.ad_type, u.name, caller.identity);
    }
    Ok(Json(Ack {}))
}

async fn invalidate(
    State(shell): State<Loop>,
    caller: Caller,
    Json(i): Json<Invalidate>,
) -> Result<Json<Ack>, ApiError> {
    let removed = shell
        .ask(|reply| Event::Invalidate {
            ad_type: AdType::new(&i.ad_type),
            name: i.name.clone(),
            reply,
        })
        .await?;
    if removed {
        tracing::info!(
            "{} ad {} withdrawn by {}",
            i.ad_type,
            i.name,
            caller.identity
        );
    }
    Ok(Json(Ack {}))
}

async fn query(
    State(shell): State<Loop>,
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
    // From the loop only the shared handles of the candidate ads; the
    // constraint (any user expression) is evaluated outside it, on a
    // blocking thread, and stops if the request is given up.
    let (candidates, opts) = shell
        .ask(|reply| Event::Candidates { filter, reply })
        .await?;
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
fn collector_ad(ctx: &DaemonContext, up: &Listening, name: &str, store: &AdStore) -> ClassAd {
    let mut ad = up.ad_header("Collector", name);
    ad.insert_value("UidDomain", ctx.uid_domain.as_str());
    ad.insert_value("HostsTotal", store.len_of(&AdType::machine()) as i64);
    ad.insert_value("AdsTotal", store.len() as i64);
    ad
}

/// Carries out one event on the store (or the registry) at `now`.
fn handle(store: &mut AdStore, registry: &mut RegistryShell, event: Event, now: i64) {
    match event {
        Event::Registry(event) => registry.handle(event, u64::try_from(now).unwrap_or(0)),
        Event::Update {
            ad_type,
            name,
            ad,
            lifetime,
            reply,
        } => {
            let outcome = store.update(&ad_type, &name, ad, lifetime, now);
            let _ = reply.send(outcome.inserted);
        }
        Event::Invalidate {
            ad_type,
            name,
            reply,
        } => {
            let _ = reply.send(store.invalidate(&ad_type, &name).is_some());
        }
        Event::Candidates { filter, reply } => {
            let _ = reply.send((store.candidates(&filter), store.eval_options(now)));
        }
    }
}

/// Runs the collector until `shutdown` turns true.
pub async fn serve(ctx: DaemonContext, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let mut store = AdStore::new(StoreConfig {
        default_lifetime: ctx.classad_lifetime,
        ..StoreConfig::default()
    });
    let port = ctx
        .knob("COLLECTOR_HOST")?
        .and_then(|h| {
            h.rsplit_once(':')
                .and_then(|(_, p)| p.trim().parse::<u16>().ok())
        })
        .unwrap_or(skua_daemon::context::DEFAULT_COLLECTOR_PORT);
    let (events_tx, mut events) = mpsc::channel::<Event>(1024);
    // the registry's revoked ids go into the server's own revocation set:
    // a revoked credential is refused here at once
    let mut registry = RegistryShell::load(&ctx, ctx.revocations.clone())?;
    let (registry_tx, mut registry_events) = mpsc::channel::<RegistryEvent>(64);
    let routes = Routes::new()
        .command(&routes::COLLECTOR_JOIN, post(join::join))
        .command(&routes::COLLECTOR_CREDENTIALS, post(join::credentials))
        .command(&routes::COLLECTOR_REVOKE, post(join::revoke))
        .command(&routes::COLLECTOR_REVOCATIONS, post(join::revocations))
        .command(&routes::COLLECTOR_UPDATE, post(update))
        .command(&routes::COLLECTOR_INVALIDATE, post(invalidate))
        .command(&routes::COLLECTOR_QUERY, post(query))
        .with_state(Loop {
            events: events_tx,
            join: JoinState::new(&ctx, registry_tx)?,
        });
    let up = skua_daemon::bring_up(&ctx, port, routes)
        .await
        .context("collector")?;

    let name = format!("collector@{}", up.host);
    let clock = ctx.clock.clone();
    let mut tick = clock.ticker(Duration::from_secs(1));
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut interval = ctx.update_interval;
    let mut next_self_ad = 0i64;
    loop {
        tokio::select! {
            Some(event) = events.recv() => handle(&mut store, &mut registry, event, clock.now_secs()),
            Some(event) = registry_events.recv() => {
                handle(&mut store, &mut registry, Event::Registry(event), clock.now_secs());
            }
            _ = tick.tick() => {
                let now = clock.now_secs();
                for gone in store.expire(now) {
                    tracing::info!("{} ad {} expired", gone.ad_type, gone.name);
                }
                if now >= next_self_ad {
                    let ad = collector_ad(&ctx, &up, &name, &store);
                    store.update(&AdType::new("Collector"), &name, ad, None, now);
                    next_self_ad = now + interval.as_secs() as i64;
                }
            }
            _ = hup.recv() => {
                // reconfig: re-read the configuration; a broken file is
                // reported and the running configuration kept
                match DaemonContext::load("COLLECTOR") {
                    Ok(new) => {
                        interval = new.update_interval;
                        store.set_default_lifetime(new.classad_lifetime);
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
    // the loop is gone: requests still waiting for it (or queued to it)
    // are answered `unavailable` at once, so the server's graceful stop
    // does not wait out its grace for them
    drop(events);
    drop(registry_events);
    up.shut_down().await;
    Ok(())
}
