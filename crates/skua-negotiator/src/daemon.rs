//! `skuad negotiator`: every `NEGOTIATOR_INTERVAL` seconds, and soon after
//! a reschedule request (no sooner than `NEGOTIATOR_CYCLE_DELAY` after the
//! previous cycle), runs a negotiation cycle:
//!
//! 1. reads the slot (`Machine`) and `Submitter` ads from the collector;
//! 2. asks each submitter's schedd for its resource requests (autoclusters
//!    grouped by the job attributes the slots refer to);
//! 3. matches them with [`skua_negotiation::negotiate`];
//! 4. for each match makes a claim id (256 random bits), tells the startd
//!    (`/startd/match`; a refusal means the match was stale and it is
//!    dropped) and then the schedd (`/schedd/matches`), which claims the
//!    slot itself.
//!
//! A schedd or startd that does not answer delays nothing but its own part
//! of the cycle: every call is bounded by a timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use classad::{parse_ad, ClassAd};
use skua_daemon::{now_secs, Advertiser, DaemonContext};
use skua_negotiation::{negotiate, significant_attributes, CycleInput, Request, Submitter};
use skua_net::routing::post;
use skua_net::{Json, Listener, Routes, Server};
use skua_proto::{
    routes, Ack, MatchInfo, MatchNotice, Matches, Query, QueryReply, Reschedule, ResourceRequests,
    ResourceRequestsReply,
};
use tokio::sync::{watch, Notify};

/// Timeout of each call to a collector, schedd or startd.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

async fn reschedule(
    skua_net::State(wake): skua_net::State<Arc<Notify>>,
    Json(_): Json<Reschedule>,
) -> Json<Ack> {
    wake.notify_one();
    Json(Ack {})
}

/// A new claim id: 32 random bytes, hex.
fn new_claim_id() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for claim ids: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn text_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.lookup(name)? {
        classad::Expr::Lit(v) => v.as_string(),
        _ => None,
    }
}

fn number_attr(ad: &ClassAd, name: &str) -> Option<f64> {
    match ad.lookup(name)? {
        classad::Expr::Lit(v) => v.as_real(),
        _ => None,
    }
}

/// Figures of one cycle, for the log and the Negotiator ad.
#[derive(Default, Debug, Clone, Copy)]
struct CycleStats {
    slots: usize,
    submitters: usize,
    requests: usize,
    matches: usize,
    rejected: usize,
    duration: Duration,
}

async fn query(ctx: &DaemonContext, ad_type: &str) -> anyhow::Result<Vec<ClassAd>> {
    let client = ctx
        .client_for("COLLECTOR", CALL_TIMEOUT)
        .context("finding the collector")?;
    let reply: QueryReply = client
        .command(
            &routes::COLLECTOR_QUERY,
            Some(&Query {
                ad_type: ad_type.to_string(),
                constraint: None,
                projection: Vec::new(),
            }),
        )
        .await
        .with_context(|| format!("querying the collector for {ad_type} ads"))?;
    Ok(reply
        .ads
        .iter()
        .filter_map(|t| match parse_ad(t) {
            Ok(ad) => Some(ad),
            Err(e) => {
                tracing::warn!("ignoring an unreadable {ad_type} ad from the collector: {e}");
                None
            }
        })
        .collect())
}

async fn cycle(ctx: &DaemonContext) -> anyhow::Result<CycleStats> {
    let started = Instant::now();
    let slots = query(ctx, "Machine").await?;
    let submitter_ads = query(ctx, "Submitter").await?;
    let significant = significant_attributes(&slots);
    let mut stats = CycleStats {
        slots: slots.len(),
        ..CycleStats::default()
    };
    // Ask every schedd with idle jobs for its requests.
    let mut submitters = Vec::new();
    let mut schedd_of: BTreeMap<String, String> = BTreeMap::new();
    for ad in &submitter_ads {
        let (Some(name), Some(addr)) = (text_attr(ad, "Name"), text_attr(ad, "ScheddIpAddr"))
        else {
            continue;
        };
        if number_attr(ad, "IdleJobs").unwrap_or(0.0) <= 0.0 {
            continue;
        }
        let client = match ctx.client_at(&addr, CALL_TIMEOUT) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("submitter {name}: cannot reach its schedd at {addr}: {e}");
                continue;
            }
        };
        let reply: ResourceRequestsReply = match client
            .command(
                &routes::SCHEDD_RESOURCE_REQUESTS,
                Some(&ResourceRequests {
                    submitter: name.clone(),
                    significant_attributes: significant.clone(),
                }),
            )
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("submitter {name}: resource requests from {addr} failed: {e}");
                continue;
            }
        };
        let requests: Vec<Request> = reply
            .requests
            .iter()
            .filter_map(|r| {
                parse_ad(&r.ad).ok().map(|ad| Request {
                    autocluster: r.autocluster,
                    ad,
                    count: r.count,
                })
            })
            .collect();
        stats.requests += requests.len();
        schedd_of.insert(name.clone(), addr);
        submitters.push(Submitter {
            name,
            priority: 0.5,
            requests,
        });
    }
    stats.submitters = submitters.len();
    if submitters.is_empty() {
        stats.duration = started.elapsed();
        return Ok(stats);
    }
    let input = CycleInput {
        slots,
        submitters,
        ..CycleInput::default()
    };
    let mut ev = skua_negotiation::evaluator(now_secs(), skua_daemon::local_utc_offset);
    let outcome = negotiate(&input, &mut ev);
    stats.rejected = outcome.unmatched.iter().map(|u| u.count as usize).sum();

    // Tell each startd, then each schedd.
    let mut for_schedd: BTreeMap<String, Vec<MatchInfo>> = BTreeMap::new();
    for m in &outcome.matches {
        let slot_ad = &input.slots[m.slot];
        let (Some(slot), Some(startd_addr)) = (
            text_attr(slot_ad, "Name"),
            text_attr(slot_ad, "StartdIpAddr").or_else(|| text_attr(slot_ad, "MyAddress")),
        ) else {
            continue;
        };
        let Some(schedd_addr) = schedd_of.get(&m.submitter) else {
            continue;
        };
        let claim_id = new_claim_id()?;
        let notice = MatchNotice {
            slot: slot.clone(),
            claim_id: claim_id.clone(),
            submitter: m.submitter.clone(),
            schedd_addr: schedd_addr.clone(),
            preempting: false,
        };
        let told = match ctx.client_at(&startd_addr, CALL_TIMEOUT) {
            Ok(c) => c
                .command::<_, Ack>(&routes::STARTD_MATCH, Some(&notice))
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = told {
            tracing::info!("match of {slot} for {} dropped: {e}", m.submitter);
            continue;
        }
        for_schedd
            .entry(m.submitter.clone())
            .or_default()
            .push(MatchInfo {
                autocluster: m.autocluster,
                claim_id,
                slot,
                slot_ad: m.slot_ad.to_string(),
                startd_addr,
                preempting: false,
            });
    }
    for (submitter, matches) in for_schedd {
        let Some(addr) = schedd_of.get(&submitter) else {
            continue;
        };
        let n = matches.len();
        let sent = match ctx.client_at(addr, CALL_TIMEOUT) {
            Ok(c) => c
                .command::<_, Ack>(
                    &routes::SCHEDD_MATCHES,
                    Some(&Matches {
                        submitter: submitter.clone(),
                        matches,
                    }),
                )
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match sent {
            Ok(_) => stats.matches += n,
            Err(e) => tracing::warn!("{n} match(es) for {submitter} not delivered: {e}"),
        }
    }
    stats.duration = started.elapsed();
    Ok(stats)
}

fn negotiator_ad(name: &str, addr: &str, start: i64, last: &CycleStats) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_value("MyType", "Negotiator");
    ad.insert_value("Name", name);
    ad.insert_value("Machine", name.rsplit('@').next().unwrap_or(name));
    ad.insert_value("MyAddress", addr);
    ad.insert_value("NegotiatorIpAddr", addr);
    ad.insert_value("DaemonStartTime", start);
    ad.insert_value(
        "CondorVersion",
        concat!("$SkuaVersion: ", env!("CARGO_PKG_VERSION"), " $"),
    );
    ad.insert_value("LastNegotiationCycleMatches0", last.matches as i64);
    ad.insert_value("LastNegotiationCycleRejections0", last.rejected as i64);
    ad.insert_value(
        "LastNegotiationCycleActiveSubmitterCount0",
        last.submitters as i64,
    );
    ad.insert_value("LastNegotiationCycleSlotShareIter0", last.slots as i64);
    ad.insert_value("LastNegotiationCycleDuration0", last.duration.as_secs_f64());
    ad
}

/// Runs the negotiator until `shutdown` turns true.
pub async fn serve(ctx: DaemonContext, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let interval = Duration::from_secs(
        skua_daemon::context::knob_u64(&ctx.config, "NEGOTIATOR_INTERVAL", 60)?.max(1),
    );
    let delay = Duration::from_secs(skua_daemon::context::knob_u64(
        &ctx.config,
        "NEGOTIATOR_CYCLE_DELAY",
        20,
    )?);
    let wake = Arc::new(Notify::new());
    let tcp = ctx.tcp_listener(0).await.context("negotiator")?;
    let sock = ctx.socket_path()?;
    let unix = Listener::unix(&sock)
        .await
        .context("negotiator: binding its Unix socket")?;
    let routes = Routes::new()
        .command(&routes::NEGOTIATOR_RESCHEDULE, post(reschedule))
        .with_state(wake.clone());
    let server = Server::new(ctx.server_config(), routes).context("negotiator: server setup")?;
    let handle = server.spawn(vec![tcp, unix]);
    let addr = handle.local_addr().context("negotiator: no TCP address")?;
    let sinful = format!("<{addr}>");
    let addr_file = ctx.address_file()?;
    skua_daemon::write_address_file(&addr_file, addr)?;
    tracing::info!("negotiator listening on {addr} and {}", sock.display());

    let host = skua_daemon::system_config::host_facts(&skua_daemon::system_config::environment())
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".into());
    let name = ctx.knob("NEGOTIATOR_NAME")?.unwrap_or_else(|| host.clone());
    let start = now_secs();
    let adv = Advertiser::new(&ctx, "Negotiator", &name)?;
    let mut last = CycleStats::default();
    let _ = adv.send(&negotiator_ad(&name, &sinful, start, &last)).await;
    let mut advertise_tick = tokio::time::interval(ctx.update_interval);
    // The first cycle comes soon after start; then every interval, or
    // after a reschedule no sooner than the cycle delay.
    let mut next = tokio::time::Instant::now() + Duration::from_millis(500);
    let mut last_cycle: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {
                last_cycle = Some(tokio::time::Instant::now());
                match cycle(&ctx).await {
                    Ok(stats) => {
                        if stats.submitters > 0 {
                            tracing::info!(
                                "cycle: {} slot(s), {} submitter(s), {} request(s), {} match(es), {} job(s) unmatched, {:?}",
                                stats.slots, stats.submitters, stats.requests, stats.matches, stats.rejected, stats.duration
                            );
                        }
                        last = stats;
                    }
                    Err(e) => tracing::warn!("negotiation cycle failed: {e:#}"),
                }
                next = tokio::time::Instant::now() + interval;
            }
            _ = wake.notified() => {
                let earliest = last_cycle.map_or_else(tokio::time::Instant::now, |t| t + delay);
                next = next.min(earliest.max(tokio::time::Instant::now()));
            }
            _ = advertise_tick.tick() => {
                if let Err(e) = adv.send(&negotiator_ad(&name, &sinful, start, &last)).await {
                    tracing::debug!("advertising the Negotiator ad: {e}");
                }
            }
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break; }
            }
        }
    }
    tracing::info!("negotiator shutting down");
    let _ = adv.invalidate().await;
    let _ = std::fs::remove_file(&addr_file);
    handle.shutdown().await;
    Ok(())
}
