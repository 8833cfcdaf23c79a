//! `skuad negotiator`: every `NEGOTIATOR_INTERVAL` seconds, and soon after
//! a reschedule request (no sooner than `NEGOTIATOR_CYCLE_DELAY` after the
//! previous cycle), runs a negotiation cycle:
//!
//! 1. reads the slot (`Machine`) and `Submitter` ads from the collector;
//! 2. asks each submitter's schedd for its resource requests (autoclusters
//!    grouped by the job attributes the slots refer to);
//! 3. ages the accountant's user priorities with the resources each user
//!    has in use (counted from the claimed slot ads) and saves them
//!    (`$(SPOOL)/Accountant.json`, written to a temporary file and renamed);
//! 4. matches the requests with [`skua_negotiation::negotiate`] (fair share,
//!    rank and priority preemption under the policy knobs);
//! 5. for each match makes a claim id (256 random bits), tells the startd
//!    (`/startd/match`, `preempting` when the slot is claimed; a refusal
//!    means the match was stale and it is dropped) and then the schedd
//!    (`/schedd/matches`), which claims the slot itself.
//!
//! It also answers `/negotiator/userprio` (READ) and
//! `/negotiator/userprio_edit` (ADMINISTRATOR) for `skua userprio`.
//!
//! A schedd or startd that does not answer delays nothing but its own part
//! of the cycle: every call is bounded by a timeout.
//!
//! The shell's loop owns the accountant and the cycle's timing; request
//! handlers send it an [`Event`] (with a reply where they need an answer).
//! A cycle runs beside the loop's events (a future the loop polls with
//! them, as it borrows the daemon's context): its calls to the collector,
//! schedds and startds are awaited, its evaluation over the slots
//! (resources in use, matchmaking) runs on blocking threads, and it asks
//! the loop once, by an event, to age the accountant; its figures are what
//! the future returns. So `skua userprio` is answered while a cycle runs. The accountant is
//! written by a saver task, in the order the loop hands it copies. Times
//! (the interval, the ad's times, the accountant's) are the daemon's clock.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use classad::{parse_ad, ClassAd};
use skua_daemon::{Advertiser, DaemonContext, Listening};
use skua_negotiation::{
    negotiate, significant_attributes, usage_from_slots, Accountant, CycleInput, InUse, Policy,
    Request, Submitter,
};
use skua_net::routing::post;
use skua_net::{ApiError, Json, Routes};
use skua_proto::{
    routes, Ack, MatchInfo, MatchNotice, Matches, Query, QueryReply, Reschedule, ResourceRequests,
    ResourceRequestsReply, UserPrioChange, UserPrioEdit, UserPrioQuery, UserPrioRecord,
    UserPrioReply,
};
use tokio::sync::{mpsc, oneshot, watch, Notify};

/// Timeout of each call to a collector, schedd or startd.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// The accountant and how it is kept.
struct Books {
    accountant: Accountant,
    /// Where it is saved (`None`: nowhere, SPOOL is not defined).
    file: Option<PathBuf>,
    /// `DEFAULT_PRIO_FACTOR`.
    default_factor: f64,
    /// `PRIORITY_HALFLIFE`, seconds.
    halflife: f64,
}

impl Books {
    /// Hands a copy of the accountant to the saver; the receiver resolves
    /// once it is written (or the attempt failed and was logged).
    fn save(&self, saver: &mpsc::UnboundedSender<Save>) -> oneshot::Receiver<()> {
        let (done, saved) = oneshot::channel();
        if let Some(file) = &self.file {
            let _ = saver.send(Save {
                file: file.clone(),
                accountant: self.accountant.clone(),
                done,
            });
        }
        saved
    }
}

/// A copy of the accountant to write.
struct Save {
    file: PathBuf,
    accountant: Accountant,
    done: oneshot::Sender<()>,
}

/// Writes the accountant copies in the order they come, off the loop, until
/// every sender is gone.
async fn saver(mut saves: mpsc::UnboundedReceiver<Save>) {
    while let Some(save) = saves.recv().await {
        let Save {
            file,
            accountant,
            done,
        } = save;
        let written =
            tokio::task::spawn_blocking(move || (save_accountant(&file, &accountant), file)).await;
        match written {
            Ok((Ok(()), _)) => {}
            Ok((Err(e), file)) => {
                tracing::warn!("saving the accountant to {}: {e:#}", file.display())
            }
            Err(e) => tracing::warn!("saving the accountant: {e}"),
        }
        let _ = done.send(());
    }
}

fn save_accountant(file: &Path, acct: &Accountant) -> anyhow::Result<()> {
    let text = serde_json::to_vec_pretty(acct)?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    {
        use std::io::Write as _;
        let mut f =
            std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(&text)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, file).with_context(|| format!("renaming {}", tmp.display()))?;
    Ok(())
}

/// Reads the saved accountant; a missing file is a fresh start, an
/// unreadable one is set aside (`.corrupt`) with a warning.
fn load_accountant(file: &Path) -> Accountant {
    match std::fs::read(file) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(a) => a,
            Err(e) => {
                let aside = file.with_extension("corrupt");
                tracing::warn!(
                    "{} is unreadable ({e}); starting with empty priorities, the file is kept as {}",
                    file.display(),
                    aside.display()
                );
                let _ = std::fs::rename(file, &aside);
                Accountant::new()
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Accountant::new(),
        Err(e) => {
            tracing::warn!(
                "reading {}: {e}; starting with empty priorities",
                file.display()
            );
            Accountant::new()
        }
    }
}

/// What the loop is told or asked; every question carries its reply.
enum Event {
    /// `skua reschedule`: a cycle soon (no sooner than the cycle delay
    /// after the previous one).
    Reschedule,
    /// `skua userprio`.
    UserPrio {
        query: UserPrioQuery,
        reply: oneshot::Sender<UserPrioReply>,
    },
    /// `skua userprio -setfactor|-setprio|-resetusage`; the reply comes once
    /// the change is applied, with a receiver that resolves when it is saved.
    UserPrioEdit {
        edit: UserPrioEdit,
        reply: oneshot::Sender<Result<oneshot::Receiver<()>, String>>,
    },
    /// The running cycle's accountant phase: age the priorities to `now`
    /// with what is in use, save them, and answer every user's effective
    /// priority and the default factor.
    Age {
        now: i64,
        in_use: BTreeMap<String, InUse>,
        reply: oneshot::Sender<(BTreeMap<String, f64>, f64)>,
    },
}

/// What the handlers hold: the way to the loop.
#[derive(Clone)]
struct Loop {
    events: mpsc::Sender<Event>,
}

impl Loop {
    /// Sends `make(reply)` to the loop and waits for its answer.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Event) -> Result<T, ApiError> {
        let gone = || ApiError::unavailable("the negotiator is shutting down");
        let (tx, rx) = oneshot::channel();
        self.events.send(make(tx)).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

async fn reschedule(
    skua_net::State(shell): skua_net::State<Loop>,
    Json(_): Json<Reschedule>,
) -> Result<Json<Ack>, ApiError> {
    shell
        .events
        .send(Event::Reschedule)
        .await
        .map_err(|_| ApiError::unavailable("the negotiator is shutting down"))?;
    Ok(Json(Ack {}))
}

async fn userprio(
    skua_net::State(shell): skua_net::State<Loop>,
    Json(query): Json<UserPrioQuery>,
) -> Result<Json<UserPrioReply>, ApiError> {
    Ok(Json(
        shell.ask(|reply| Event::UserPrio { query, reply }).await?,
    ))
}

/// The reply of `skua userprio`.
fn userprio_reply(books: &Books, q: &UserPrioQuery) -> UserPrioReply {
    let users = books
        .accountant
        .standings(books.default_factor)
        .into_iter()
        .filter(|s| {
            q.all || s.resources_used > 0.0 || s.real_priority > skua_negotiation::MIN_PRIORITY
        })
        .map(|s| UserPrioRecord {
            name: s.name,
            effective_priority: s.effective_priority,
            real_priority: s.real_priority,
            factor: s.factor,
            resources_used: s.resources_used,
            weighted_resources_used: s.weighted_resources_used,
            accumulated_usage: s.accumulated_usage,
            weighted_accumulated_usage: s.weighted_accumulated_usage,
            begin_usage_time: s.begin_usage_time,
            last_usage_time: s.last_usage_time,
        })
        .collect();
    UserPrioReply {
        users,
        default_factor: books.default_factor,
        halflife: books.halflife,
        last_update: books.accountant.last_update,
    }
}

async fn userprio_edit(
    skua_net::State(shell): skua_net::State<Loop>,
    caller: skua_net::Caller,
    Json(e): Json<UserPrioEdit>,
) -> Result<Json<Ack>, ApiError> {
    let (user, change) = (e.user.clone(), e.change.clone());
    let saved = shell
        .ask(|reply| Event::UserPrioEdit { edit: e, reply })
        .await?
        .map_err(ApiError::bad_request)?;
    tracing::info!(
        "{} changed the record of {}: {:?}",
        caller.identity,
        user,
        change
    );
    // answered once the change is on disk, as it is kept across restarts
    let _ = saved.await;
    Ok(Json(Ack {}))
}

/// Applies an administrator's change to the books at `now`.
fn edit_books(books: &mut Books, e: &UserPrioEdit, now: i64) -> Result<(), String> {
    match e.change {
        UserPrioChange::SetFactor { factor } => books.accountant.set_factor(&e.user, factor),
        UserPrioChange::SetPriority { priority } => {
            books.accountant.set_priority(&e.user, priority)
        }
        UserPrioChange::ResetUsage => books.accountant.reset_usage(&e.user, now),
    }
    .map_err(|err| err.to_string())
}

/// Ages the books to `now` with what is in use; every user's effective
/// priority and the default factor.
fn age_books(
    books: &mut Books,
    now: i64,
    in_use: &BTreeMap<String, InUse>,
) -> (BTreeMap<String, f64>, f64) {
    let halflife = books.halflife;
    books.accountant.update(now, in_use, halflife);
    let f = books.default_factor;
    let prios = books
        .accountant
        .customers
        .keys()
        .map(|u| (u.clone(), books.accountant.effective_priority(u, f)))
        .collect();
    (prios, f)
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
    candidate_slots: usize,
    submitters: usize,
    requests: usize,
    idle_jobs: u64,
    matches: usize,
    preemptions: usize,
    rejected: usize,
    spins: u32,
    end: i64,
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

/// The policy knobs, read at each cycle.
fn policy(ctx: &DaemonContext) -> anyhow::Result<Policy> {
    let mut bad = None;
    let p = Policy::from_knobs(|name| match ctx.knob(name) {
        Ok(v) => v,
        Err(e) => {
            bad = Some(e);
            None
        }
    })?;
    if let Some(e) = bad {
        return Err(e.into());
    }
    Ok(p)
}

/// One negotiation cycle, outside the loop: `events` reaches the loop for
/// the accountant's phase.
async fn cycle(ctx: &DaemonContext, events: &mpsc::Sender<Event>) -> anyhow::Result<CycleStats> {
    let started = Instant::now();
    let policy = policy(ctx)?;
    let slots = query(ctx, "Machine").await?;
    let submitter_ads = query(ctx, "Submitter").await?;
    let significant = significant_attributes(&slots);
    let mut stats = CycleStats {
        slots: slots.len(),
        ..CycleStats::default()
    };
    // Phase 2: the accountant, aged to now with what is in use.
    // (what is in use is evaluated over every slot: on a blocking thread)
    let now = ctx.clock.now_secs();
    let (slots, policy, mut ev, in_use) = tokio::task::spawn_blocking(move || {
        let mut ev = skua_negotiation::evaluator(now, skua_daemon::local_utc_offset);
        let in_use = usage_from_slots(&mut ev, &slots, &policy);
        (slots, policy, ev, in_use)
    })
    .await
    .context("the usage task failed")?;
    let (reply, answer) = oneshot::channel();
    events
        .send(Event::Age { now, in_use, reply })
        .await
        .map_err(|_| anyhow::anyhow!("the negotiator is shutting down"))?;
    let (priorities, default_factor) = answer
        .await
        .map_err(|_| anyhow::anyhow!("the negotiator is shutting down"))?;
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
        stats.idle_jobs += requests.iter().map(|r| r.count).sum::<u64>();
        schedd_of.insert(name.clone(), addr);
        let priority = priorities
            .get(&name)
            .copied()
            .unwrap_or(skua_negotiation::MIN_PRIORITY * default_factor);
        submitters.push(Submitter {
            name,
            priority,
            requests,
        });
    }
    stats.submitters = submitters.len();
    if submitters.is_empty() {
        stats.end = ctx.clock.now_secs();
        stats.duration = started.elapsed();
        return Ok(stats);
    }
    let input = CycleInput {
        slots,
        submitters,
        policy,
        priorities,
    };
    // Matchmaking evaluates user expressions (requirements and ranks of
    // jobs and slots): on a blocking thread, so the daemon's other work
    // (requests, timers) goes on meanwhile.
    let (input, outcome) = tokio::task::spawn_blocking(move || {
        let outcome = negotiate(&input, &mut ev);
        (input, outcome)
    })
    .await
    .context("the matchmaking task failed")?;
    stats.rejected = outcome.unmatched.iter().map(|u| u.count as usize).sum();
    stats.spins = outcome.spins;
    stats.candidate_slots = outcome.candidate_slots;
    for f in &outcome.submitters {
        tracing::debug!(
            "submitter {}: priority {:.2}, share {:.3}, slice {:.2}, in use {:.2}, given {:.2} ({} match(es))",
            f.name, f.priority, f.share, f.limit, f.in_use, f.matched_weight, f.matches
        );
    }

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
            preempting: m.preempting(),
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
        if let Some(p) = &m.preemption {
            stats.preemptions += 1;
            tracing::info!(
                "{} preempts {} (job {}) on {slot} by {:?} preemption",
                m.submitter,
                p.remote_user,
                p.job.as_deref().unwrap_or("?"),
                p.kind
            );
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
                preempting: m.preempting(),
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
    stats.end = ctx.clock.now_secs();
    stats.duration = started.elapsed();
    Ok(stats)
}

fn negotiator_ad(up: &Listening, name: &str, last: &CycleStats) -> ClassAd {
    let mut ad = up.ad_header("Negotiator", name);
    ad.insert_value("NegotiatorIpAddr", up.sinful.as_str());
    ad.insert_value("LastNegotiationCycleMatches0", last.matches as i64);
    ad.insert_value("LastNegotiationCycleRejections0", last.rejected as i64);
    ad.insert_value(
        "LastNegotiationCycleActiveSubmitterCount0",
        last.submitters as i64,
    );
    ad.insert_value("LastNegotiationCycleTotalSlots0", last.slots as i64);
    ad.insert_value(
        "LastNegotiationCycleCandidateSlots0",
        last.candidate_slots as i64,
    );
    ad.insert_value(
        "LastNegotiationCycleTrimmedSlots0",
        last.slots.saturating_sub(last.candidate_slots) as i64,
    );
    ad.insert_value("LastNegotiationCycleNumIdleJobs0", last.idle_jobs as i64);
    ad.insert_value(
        "LastNegotiationCycleNumJobsConsidered0",
        last.requests as i64,
    );
    ad.insert_value("LastNegotiationCyclePreemptions0", last.preemptions as i64);
    ad.insert_value("LastNegotiationCycleSlotShareIter0", i64::from(last.spins));
    ad.insert_value("LastNegotiationCycleDuration0", last.duration.as_secs_f64());
    if last.end > 0 {
        ad.insert_value("LastNegotiationCycleEnd0", last.end);
    }
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
    let halflife = match ctx.knob("PRIORITY_HALFLIFE")? {
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|h| h.is_finite() && *h >= 0.0)
            .with_context(|| format!("PRIORITY_HALFLIFE = {v:?} is not a number of seconds"))?,
        None => 86400.0,
    };
    let default_factor = match ctx.knob("DEFAULT_PRIO_FACTOR")? {
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f > 0.0)
            .with_context(|| format!("DEFAULT_PRIO_FACTOR = {v:?} is not a positive number"))?,
        None => 1000.0,
    };
    policy(&ctx).context("negotiator policy")?;
    let file = match ctx.knob("SPOOL")? {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating SPOOL {}", dir.display()))?;
            Some(dir.join("Accountant.json"))
        }
        None => {
            tracing::warn!("SPOOL is not defined: user priorities will not survive a restart");
            None
        }
    };
    let accountant = file.as_deref().map(load_accountant).unwrap_or_default();
    let mut books = Books {
        accountant,
        file,
        default_factor,
        halflife,
    };
    let (events_tx, mut events) = mpsc::channel::<Event>(256);
    let routes = Routes::new()
        .command(&routes::NEGOTIATOR_RESCHEDULE, post(reschedule))
        .command(&routes::NEGOTIATOR_USERPRIO, post(userprio))
        .command(&routes::NEGOTIATOR_USERPRIO_EDIT, post(userprio_edit))
        .with_state(Loop {
            events: events_tx.clone(),
        });
    // the first cycle comes soon after the start, read before the daemon
    // can be reached: whoever sees it up moves a test's clock after this
    let clock = ctx.clock.clone();
    let first_cycle = clock.now() + Duration::from_millis(500);
    let up = skua_daemon::bring_up(&ctx, 0, routes)
        .await
        .context("negotiator")?;
    let (save_tx, saves) = mpsc::unbounded_channel();
    let saver = tokio::spawn(saver(saves));

    let name = ctx
        .knob("NEGOTIATOR_NAME")?
        .unwrap_or_else(|| up.host.clone());
    let mut last = CycleStats::default();
    let (ad_tx, ad_rx) = watch::channel(negotiator_ad(&up, &name, &last));
    let advertiser = tokio::spawn(Advertiser::new(&ctx, "Negotiator", &name)?.run(
        move || ad_rx.borrow().clone(),
        ctx.update_interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
    ));
    // The first cycle comes soon after start; then every interval, or
    // after a reschedule no sooner than the cycle delay.
    let mut next = first_cycle;
    let mut last_cycle: Option<SystemTime> = None;
    let mut running: Option<Pin<Box<dyn Future<Output = anyhow::Result<CycleStats>> + '_>>> = None;
    // a reschedule asked for while a cycle runs: applied when it ends
    let mut wake_pending = false;
    let wake = |next: SystemTime, last_cycle: Option<SystemTime>, now: SystemTime| {
        let earliest = last_cycle.map_or(now, |t| t + delay);
        next.min(earliest.max(now))
    };
    loop {
        tokio::select! {
            _ = clock.sleep_until(next), if running.is_none() => {
                last_cycle = Some(clock.now());
                running = Some(Box::pin(cycle(&ctx, &events_tx)));
            }
            outcome = async {
                match running.as_mut() {
                    Some(cycle) => cycle.await,
                    None => std::future::pending().await,
                }
            }, if running.is_some() => {
                running = None;
                match outcome {
                    Ok(stats) => {
                        if stats.submitters > 0 {
                            tracing::info!(
                                "cycle: {} slot(s), {} submitter(s), {} request(s), {} match(es) ({} preempting), {} job(s) unmatched, {} spin(s), {:?}",
                                stats.slots, stats.submitters, stats.requests, stats.matches, stats.preemptions, stats.rejected, stats.spins, stats.duration
                            );
                        }
                        last = stats;
                        // sent at the advertiser's next round
                        ad_tx.send_replace(negotiator_ad(&up, &name, &last));
                    }
                    Err(e) => tracing::warn!("negotiation cycle failed: {e:#}"),
                }
                let now = clock.now();
                next = now + interval;
                if std::mem::take(&mut wake_pending) {
                    next = wake(next, last_cycle, now);
                }
            }
            Some(event) = events.recv() => match event {
                Event::Reschedule => {
                    if running.is_some() {
                        wake_pending = true;
                    } else {
                        next = wake(next, last_cycle, clock.now());
                    }
                }
                Event::UserPrio { query, reply } => {
                    let _ = reply.send(userprio_reply(&books, &query));
                }
                Event::UserPrioEdit { edit, reply } => {
                    let done = edit_books(&mut books, &edit, clock.now_secs())
                        .map(|()| books.save(&save_tx));
                    let _ = reply.send(done);
                }
                Event::Age { now, in_use, reply } => {
                    let answer = age_books(&mut books, now, &in_use);
                    // the cycle goes on while the saver writes
                    drop(books.save(&save_tx));
                    let _ = reply.send(answer);
                }
            },
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break; }
            }
        }
    }
    tracing::info!("negotiator shutting down");
    // the loop is gone: requests still waiting for it (or queued to it)
    // are answered `unavailable` at once, so the server's graceful stop
    // does not wait out its grace for them
    drop(events);
    // a cycle still running is given up
    drop(running);
    // every change handed to the saver is written before the exit
    drop(save_tx);
    let _ = saver.await;
    let _ = advertiser.await;
    up.shut_down().await;
    Ok(())
}
