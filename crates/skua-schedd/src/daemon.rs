//! `skuad schedd`: the queue behind the network.
//!
//! Listens on its Unix socket (`$(LOCK)/schedd.sock`, local users known by
//! the kernel) and on TCP (port chosen by the OS, published in
//! `SCHEDD_ADDRESS_FILE`). The queue is in `$(SPOOL)/job_queue.db`
//! (`JOB_QUEUE_DB`). Every request that changes the queue is committed to
//! disk before it is answered. Advertises a `Scheduler` ad and one
//! `Submitter` ad per user with jobs to the collector; evaluates the
//! periodic policy every `PERIODIC_EXPR_INTERVAL` seconds.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use classad::{ClassAd, Expr};
use skua_daemon::{Advertiser, DaemonContext};
use skua_net::routing::post;
use skua_net::{ApiError, AuthLevel, Caller, Json, Routes, State};
use skua_proto::{
    routes, JobAction, JobActionKind, JobActionReply, JobOutcome, JobQuery, JobQueryReply,
    JobSelector, NewCluster, NewClusterReply, SetAttribute, Submit, SubmitReply,
};
use skua_queue::{Action, Actor, JobRef, Selector, SubmitLimits, SystemPolicy};
use tokio::sync::{watch, Notify};

use crate::negotiator;
use crate::runs::{Dialer, Shadows};
use crate::schedd::{JobFilter, Schedd, ScheddSettings};
use crate::shadow;
use crate::shared::{with_schedd, QueueOwner, Shared};

/// One pass of the periodic policy: the job ads are taken on the queue's
/// thread, their expressions evaluated off it (other requests go on
/// meanwhile), and the decisions carried out on it again.
async fn periodic_policy(st: &Shared) -> Result<usize, ApiError> {
    let (jobs, policy) = with_schedd(st, |s| Ok(s.periodic_snapshot())).await?;
    let now = st.clock.now_secs();
    let decisions = skua_daemon::work::off_thread(move |cancel| {
        let mut ev = classad::Evaluator::default();
        skua_queue::periodic_decisions(&mut ev, now, &policy, &jobs, || cancel.is_cancelled())
    })
    .await
    .map_err(|e| ApiError::internal(format!("{e:#}")))?;
    with_schedd(st, move |s| s.apply_periodic(&decisions, now)).await
}

fn actor(caller: &Caller) -> Actor {
    Actor {
        name: caller.identity.user.clone(),
        admin: caller.has(AuthLevel::Administrator),
    }
}

fn parse_constraint(text: Option<&str>) -> Result<Option<Expr>, ApiError> {
    text.filter(|c| !c.trim().is_empty())
        .map(classad::parse_expr)
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("constraint: {e}")))
}

/// `"12"` is a cluster, `"12.3"` a job.
fn parse_job_ref(text: &str) -> Result<JobRef, ApiError> {
    text.parse()
        .map_err(|_| ApiError::bad_request(format!("`{text}` is not a job id (C or C.P)")))
}

/// A command's selector: the named ids, clusters and owners, the
/// constraint and `all` are alternatives (their union).
fn action_selector(sel: &JobSelector) -> Result<Selector, ApiError> {
    let mut parts = Vec::new();
    let mut jobs = Vec::new();
    for j in &sel.jobs {
        match parse_job_ref(j)? {
            JobRef::Cluster(c) => parts.push(Selector::Cluster(c)),
            JobRef::Job(id) => jobs.push(id),
        }
    }
    if !jobs.is_empty() {
        parts.insert(0, Selector::Jobs(jobs));
    }
    for o in &sel.owners {
        parts.push(Selector::Owner(o.clone()));
    }
    if let Some(c) = parse_constraint(sel.constraint.as_deref())? {
        parts.push(Selector::Constraint(c));
    }
    if sel.all {
        parts.push(Selector::All);
    }
    match parts.len() {
        0 => Err(ApiError::bad_request(
            "no jobs named: give job ids, owners, a constraint or all",
        )),
        1 => Ok(parts.remove(0)),
        _ => Ok(Selector::Union(parts)),
    }
}

/// A query's filter: the named ids, clusters and owners are alternatives,
/// and the constraint must hold as well.
fn query_filter(sel: &JobSelector) -> Result<JobFilter, ApiError> {
    let mut f = JobFilter::default();
    for j in &sel.jobs {
        match parse_job_ref(j)? {
            JobRef::Cluster(c) => f.clusters.push(c),
            JobRef::Job(id) => f.ids.push(id),
        }
    }
    f.owners = sel.owners.clone();
    f.constraint = parse_constraint(sel.constraint.as_deref())?;
    Ok(f)
}

async fn new_cluster(
    State(st): State<Shared>,
    Json(_): Json<NewCluster>,
) -> Result<Json<NewClusterReply>, ApiError> {
    let now = st.clock.now_secs();
    let cluster = with_schedd(&st, move |s| s.new_cluster(now)).await?;
    Ok(Json(NewClusterReply { cluster }))
}

async fn submit(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<Submit>,
) -> Result<Json<SubmitReply>, ApiError> {
    let t0 = std::time::Instant::now();
    let common = req
        .cluster_ad
        .as_deref()
        .map(classad::parse_ad)
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("cluster ad: {e}")))?;
    let mut jobs = Vec::with_capacity(req.jobs.len());
    for (i, text) in req.jobs.iter().enumerate() {
        let mut ad = classad::parse_ad(text)
            .map_err(|e| ApiError::bad_request(format!("job ad {i}: {e}")))?;
        if let Some(c) = &common {
            ad.chain_to(c.clone());
        }
        jobs.push(ad);
    }
    let parsed = t0.elapsed();
    let owner = caller.identity.user.clone();
    // As in HTCondor: no job runs as root, so none is queued as root.
    if owner == "root" {
        return Err(ApiError::new(
            skua_proto::ErrorCode::PermissionDenied,
            "submitting jobs as root is not allowed: submit as the user the jobs run as",
        ));
    }
    let cluster = req.cluster;
    let key = req.submission_id.clone();
    let now = st.clock.now_secs();
    let done = with_schedd(&st, move |s| {
        s.submit_keyed(&owner, cluster, jobs, key.as_deref(), now)
    })
    .await;
    let done = match done {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!("submission by {} refused: {}", caller.identity, e.0.message);
            return Err(e);
        }
    };
    if done.repeated {
        tracing::info!(
            "{} sent submission {} again: answered with cluster {} made before",
            caller.identity,
            req.submission_id.as_deref().unwrap_or_default(),
            done.cluster
        );
    } else {
        tracing::info!(
            "{} submitted {} job(s) in cluster {} (ads parsed in {parsed:?}, queued in {:?})",
            caller.identity,
            done.jobs,
            done.cluster,
            t0.elapsed() - parsed
        );
        st.changed.notify_one();
        st.reschedule.notify_one();
        st.shadows.dedicated.wake.notify_one();
    }
    Ok(Json(SubmitReply {
        cluster: done.cluster,
        jobs: u32::try_from(done.jobs).unwrap_or(u32::MAX),
        repeated: done.repeated,
    }))
}

async fn query(
    State(st): State<Shared>,
    Json(q): Json<JobQuery>,
) -> Result<Json<JobQueryReply>, ApiError> {
    let mut filter = query_filter(&q.selector)?;
    let constraint = filter.constraint.take();
    // The queue's thread only hands over a snapshot (shared handles to the
    // ads, see snapshot.rs); everything else, and the constraint, which may
    // be any user expression, runs off it and stops if the request is
    // given up.
    let snap = crate::shared::snapshot(&st).await?;
    let now = st.clock.now_secs();
    let reply = skua_daemon::work::off_thread(move |cancel| {
        let jobs = snap.candidates(&filter);
        let selected =
            crate::schedd::select_jobs(jobs, constraint.as_ref(), now, || cancel.is_cancelled())?;
        let mut reply = JobQueryReply {
            status_counts: snap.status_counts(),
            ..JobQueryReply::default()
        };
        if q.summary {
            reply.batches = snap.batches_of(&selected);
        } else {
            let limit = q.limit.unwrap_or(usize::MAX);
            reply.ads = selected
                .iter()
                .take(limit)
                .map(|(_, ad)| crate::schedd::project_for_query(ad, &q.projection, now))
                .collect();
        }
        Some(reply)
    })
    .await
    .map_err(|e| ApiError::internal(format!("{e:#}")))?
    .ok_or_else(|| ApiError::internal("the query was cancelled"))?;
    Ok(Json(reply))
}

async fn history(
    State(st): State<Shared>,
    Json(q): Json<JobQuery>,
) -> Result<Json<JobQueryReply>, ApiError> {
    let filter = query_filter(&q.selector)?;
    let now = st.clock.now_secs();
    let ads = with_schedd(&st, move |s| {
        s.history(&filter, &q.projection, q.limit, now)
    })
    .await?;
    Ok(Json(JobQueryReply {
        ads,
        ..JobQueryReply::default()
    }))
}

async fn act(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<JobAction>,
) -> Result<Json<JobActionReply>, ApiError> {
    let sel = action_selector(&req.selector)?;
    let who = actor(&caller);
    let action = match req.action {
        JobActionKind::Hold => Action::Hold,
        JobActionKind::Release => Action::Release,
        JobActionKind::Remove => Action::Remove,
        JobActionKind::RemoveForce => Action::RemoveForce,
    };
    let reason = req.reason.clone();
    let now = st.clock.now_secs();
    let report = with_schedd(&st, move |s| {
        s.act(action, &sel, &who, reason.as_deref(), now)
    })
    .await;
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(
                "{:?} by {} refused: {}",
                req.action,
                caller.identity,
                e.0.message
            );
            return Err(e);
        }
    };
    let done = report.done();
    if !done.is_empty() {
        tracing::info!(
            "{:?} of {} job(s) by {}",
            req.action,
            done.len(),
            caller.identity
        );
        st.changed.notify_one();
        match req.action {
            JobActionKind::Release => st.reschedule.notify_one(),
            _ => {
                st.shadows.vacate(&done);
                st.local.kill(&done);
            }
        }
    }
    Ok(Json(JobActionReply {
        outcomes: done
            .iter()
            .map(|id| JobOutcome {
                job: id.to_string(),
                done: true,
                message: None,
            })
            .collect(),
        messages: report.lines(),
        all_done: report.all_done(),
    }))
}

async fn set_attribute(
    State(st): State<Shared>,
    caller: Caller,
    Json(req): Json<SetAttribute>,
) -> Result<Json<JobActionReply>, ApiError> {
    let sel = action_selector(&req.selector)?;
    let who = actor(&caller);
    let (name, value) = (req.name.clone(), req.value.clone());
    let now = st.clock.now_secs();
    let n = with_schedd(&st, move |s| s.set_attr(&sel, &who, &name, &value, now)).await?;
    tracing::info!("{} set {} in {n} job(s)", caller.identity, req.name);
    Ok(Json(JobActionReply {
        outcomes: Vec::new(),
        messages: vec![format!("Set attribute \"{}\" for {n} job(s).", req.name)],
        all_done: n > 0,
    }))
}

fn expr_knob(ctx: &DaemonContext, name: &str) -> anyhow::Result<Option<Expr>> {
    match ctx.knob(name)? {
        None => Ok(None),
        Some(text) if text.trim().is_empty() => Ok(None),
        Some(text) => classad::parse_expr(&text)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{name} = {text}: not a ClassAd expression: {e}")),
    }
}

fn system_policy(ctx: &DaemonContext) -> anyhow::Result<SystemPolicy> {
    Ok(SystemPolicy {
        periodic_hold: expr_knob(ctx, "SYSTEM_PERIODIC_HOLD")?,
        periodic_hold_reason: expr_knob(ctx, "SYSTEM_PERIODIC_HOLD_REASON")?,
        periodic_hold_subcode: expr_knob(ctx, "SYSTEM_PERIODIC_HOLD_SUBCODE")?,
        periodic_release: expr_knob(ctx, "SYSTEM_PERIODIC_RELEASE")?,
        periodic_release_reason: expr_knob(ctx, "SYSTEM_PERIODIC_RELEASE_REASON")?,
        periodic_remove: expr_knob(ctx, "SYSTEM_PERIODIC_REMOVE")?,
        periodic_remove_reason: expr_knob(ctx, "SYSTEM_PERIODIC_REMOVE_REASON")?,
    })
}

/// A job-count limit knob: a whole number (HTCondor's defaults come from
/// the built-in table: `MAX_JOBS_SUBMITTED` 2147483647, `MAX_JOBS_PER_OWNER`
/// 100000, `MAX_JOBS_PER_SUBMISSION` 20000).
fn limit_knob(ctx: &DaemonContext, name: &str) -> anyhow::Result<Option<u64>> {
    match ctx.knob(name)? {
        None => Ok(None),
        Some(t) => {
            t.trim().parse::<u64>().map(Some).map_err(|_| {
                anyhow::anyhow!("{name} = {t}: not a whole number of jobs (0 or more)")
            })
        }
    }
}

/// The job-count limits of the configuration.
pub fn submit_limits(ctx: &DaemonContext) -> anyhow::Result<SubmitLimits> {
    Ok(SubmitLimits {
        max_jobs_submitted: limit_knob(ctx, "MAX_JOBS_SUBMITTED")?,
        max_jobs_per_owner: limit_knob(ctx, "MAX_JOBS_PER_OWNER")?,
        max_jobs_per_submission: limit_knob(ctx, "MAX_JOBS_PER_SUBMISSION")?,
    })
}

fn usize_knob(ctx: &DaemonContext, name: &str) -> anyhow::Result<Option<usize>> {
    match ctx.knob(name)? {
        None => Ok(None),
        Some(t) => t
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{name} = {t}: not a whole number")),
    }
}

/// Where the queue is kept.
pub fn queue_path(ctx: &DaemonContext) -> anyhow::Result<PathBuf> {
    if let Some(p) = ctx.knob("JOB_QUEUE_DB")? {
        return Ok(PathBuf::from(p));
    }
    let spool = ctx
        .knob("SPOOL")?
        .context("SPOOL is not defined: the schedd keeps its queue there")?;
    Ok(PathBuf::from(spool).join("job_queue.db"))
}

/// The Scheduler ad (on `header`, the common daemon header) and one
/// Submitter ad per submitter.
fn counts_ads(
    schedd: &Schedd,
    header: ClassAd,
    name: &str,
    uid_domain: &str,
    addr: &str,
) -> (ClassAd, BTreeMap<String, ClassAd>) {
    let counts = schedd.queue().submitter_counts();
    let mut ad = header;
    ad.insert_value("ScheddIpAddr", addr);
    ad.insert_value("UidDomain", uid_domain);
    let total = |f: fn(&skua_queue::SubmitterCounts) -> u64| -> i64 {
        counts.values().map(f).sum::<u64>() as i64
    };
    ad.insert_value("TotalIdleJobs", total(|c| c.idle));
    ad.insert_value("TotalRunningJobs", total(|c| c.running));
    ad.insert_value("TotalHeldJobs", total(|c| c.held));
    ad.insert_value("TotalRemovedJobs", total(|c| c.removed));
    ad.insert_value("TotalJobAds", schedd.queue().len() as i64);
    schedd.queue().submit_host_running().insert_into(&mut ad);
    ad.insert_value("NumUsers", counts.len() as i64);
    let mut submitters = BTreeMap::new();
    for (owner, c) in &counts {
        if owner.is_empty() {
            continue;
        }
        let sub_name = format!("{owner}@{uid_domain}");
        let mut s = ClassAd::new();
        s.insert_value("MyType", "Submitter");
        s.insert_value("Name", sub_name.as_str());
        s.insert_value("Owner", owner.as_str());
        s.insert_value("ScheddName", name);
        s.insert_value("Machine", name.rsplit('@').next().unwrap_or(name));
        s.insert_value("MyAddress", addr);
        s.insert_value("ScheddIpAddr", addr);
        s.insert_value("IdleJobs", c.idle as i64);
        s.insert_value("RunningJobs", c.running as i64);
        s.insert_value("HeldJobs", c.held as i64);
        s.insert_value("SuspendedJobs", c.suspended as i64);
        s.insert_value("WeightedIdleJobs", c.idle as i64);
        s.insert_value("WeightedRunningJobs", c.running as i64);
        submitters.insert(sub_name, s);
    }
    (ad, submitters)
}

/// Asks the negotiator for a cycle (condor_reschedule); best effort.
async fn ask_for_cycle(dialer: Dialer) {
    let client = match dialer.negotiator(Duration::from_secs(10)).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!("no negotiator to ask for a cycle: {e}");
            return;
        }
    };
    if let Err(e) = client
        .command::<_, skua_proto::Ack>(
            &routes::NEGOTIATOR_RESCHEDULE,
            Some(&skua_proto::Reschedule {}),
        )
        .await
    {
        tracing::debug!("asking the negotiator for a cycle: {e}");
    }
}

/// Runs the schedd until `shutdown` turns true.
pub async fn serve(ctx: DaemonContext, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    let path = queue_path(&ctx)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let bound = skua_daemon::bind(&ctx, 0).await.context("schedd")?;

    let host = skua_daemon::host_name();
    let name = ctx.knob("SCHEDD_NAME")?.unwrap_or_else(|| host.clone());
    let mut settings = ScheddSettings {
        system_policy: system_policy(&ctx)?,
        limits: submit_limits(&ctx)?,
        uid_domain: Some(ctx.uid_domain.clone()),
        name: Some(name.clone()),
        history_max_jobs: usize_knob(&ctx, "HISTORY_MAX_JOBS")?,
        max_run_failures: usize_knob(&ctx, "MAX_JOB_RUN_FAILURES")?.unwrap_or(5) as i64,
        checkpoint_root: ctx
            .knob("SPOOL")?
            .map(|spool| PathBuf::from(spool).join("checkpoints")),
        ..ScheddSettings::default()
    };
    let started = std::time::Instant::now();
    // The address is known once the listener is up; the schedd is opened
    // first so that a broken queue stops the daemon before it listens.
    let schedd = tokio::task::spawn_blocking({
        let path = path.clone();
        let settings = settings.clone();
        move || Schedd::open(&path, settings)
    })
    .await
    .context("schedd: recovery task")?
    .with_context(|| format!("schedd: recovering the job queue from {}", path.display()))?;
    tracing::info!(
        "job queue recovered from {}: {} job(s) in {:?}",
        path.display(),
        schedd.queue().len(),
        started.elapsed()
    );
    let mut schedd = schedd;
    // runs that hold a recorded claim wait for its release (below)
    match schedd.requeue_interrupted(ctx.clock.now_secs()) {
        Ok(0) => {}
        Ok(n) => tracing::info!("{n} job(s) that ran before the restart are idle again"),
        Err(e) => tracing::error!("requeueing interrupted jobs: {e}"),
    }
    let alive = crate::lease::AliveConfig {
        interval: Duration::from_secs(
            skua_daemon::context::knob_u64(&ctx.config, "ALIVE_INTERVAL", 300)?.max(1),
        ),
        max_missed: u32::try_from(
            skua_daemon::context::knob_u64(&ctx.config, "MAX_CLAIM_ALIVES_MISSED", 6)?.max(1),
        )
        .unwrap_or(u32::MAX),
    };
    let dialer = Dialer::from_context(&ctx)?;
    let mut shadows = Shadows::new(dialer.clone(), alive, ctx.clock.clone());
    shadows.uid_domain = ctx.knob("UID_DOMAIN")?.unwrap_or_default();
    shadows.claim_timeout = Duration::from_secs(skua_daemon::context::knob_u64(
        &ctx.config,
        "REQUEST_CLAIM_TIMEOUT",
        crate::runs::DEFAULT_CLAIM_TIMEOUT.as_secs(),
    )?);
    shadows.reconnect_ceiling = Duration::from_secs(skua_daemon::context::knob_u64(
        &ctx.config,
        "RECONNECT_BACKOFF_CEILING",
        300,
    )?);
    shadows.checkpoint_root = settings.checkpoint_root.clone();
    shadows.ssh_to_job = expr_knob(&ctx, "SCHEDD_ENABLE_SSH_TO_JOB")?;
    shadows.transfers = crate::xferq::Transfers::new(crate::xferq::limits_from(&ctx)?);
    crate::dedicated::configure(&ctx, &shadows.dedicated, &name)?;
    let shadows = Arc::new(shadows);
    // the runs to reconnect to are known before the starters can call
    let (reconnects, releases) = crate::lease::split_interrupted(&schedd, &shadows);
    let shared = Shared {
        queue: QueueOwner::start(schedd).context("schedd: starting the queue's thread")?,
        changed: Arc::new(Notify::new()),
        shadows: shadows.clone(),
        reschedule: Arc::new(Notify::new()),
        clock: ctx.clock.clone(),
        local: Arc::new(crate::local_univ::LocalRuns::new(
            ctx.clock.clone(),
            PathBuf::from(ctx.knob("SPOOL")?.unwrap_or_else(|| "/tmp".into())),
        )),
    };
    // scheduler/local jobs of a previous schedd: killed (the queue put
    // them back to Idle above)
    match shared.local.kill_leftovers() {
        0 => {}
        n => tracing::info!(
            "{n} scheduler/local universe job process(es) from before the restart killed"
        ),
    }
    let routes = Routes::new()
        .command(&routes::SCHEDD_NEW_CLUSTER, post(new_cluster))
        .command(&routes::SCHEDD_SUBMIT, post(submit))
        .command(&routes::SCHEDD_QUERY, post(query))
        .command(&routes::SCHEDD_HISTORY, post(history))
        .command(&routes::SCHEDD_ACT, post(act))
        .command(&routes::SCHEDD_SET_ATTRIBUTE, post(set_attribute))
        .command(
            &routes::SCHEDD_RESOURCE_REQUESTS,
            post(negotiator::resource_requests),
        )
        .command(&routes::SCHEDD_MATCHES, post(negotiator::matches))
        .command(&routes::SHADOW_BEGIN, post(shadow::begin))
        .command(&routes::SHADOW_INPUT_FILE, post(shadow::input_file))
        .command(&routes::SHADOW_OUTPUT_FILE, post(shadow::output_file))
        .command(&routes::SHADOW_UPDATE, post(shadow::update))
        .command(&routes::SHADOW_EXIT, post(shadow::exit))
        .command(
            &routes::SHADOW_TRANSFERRING,
            post(crate::async_output::transferring),
        )
        .command(&routes::SHADOW_STARTER_GONE, post(shadow::starter_gone))
        .command(&routes::SHADOW_CHIRP, post(crate::chirp::call))
        .command(&routes::SHADOW_CHIRP_FETCH, post(crate::chirp::fetch))
        .command(&routes::SHADOW_CHIRP_PUT, post(crate::chirp::put))
        .command(
            &routes::SHADOW_TRANSFER_QUEUE,
            post(crate::xferq::transfer_queue),
        )
        .command(&routes::SCHEDD_SPOOL_FILE, post(crate::spool::spool_file))
        .command(
            &routes::SCHEDD_SPOOL_COMMIT,
            post(crate::spool::spool_commit),
        )
        .command(
            &routes::SCHEDD_SPOOLED_OUTPUT,
            post(crate::spool::spooled_output),
        )
        .command(
            &routes::SCHEDD_SPOOLED_FILE,
            post(crate::spool::spooled_file),
        )
        .command(
            &routes::SCHEDD_OUTPUT_FETCHED,
            post(crate::spool::output_fetched),
        )
        .command(
            &routes::SCHEDD_EVICTED_FILES,
            post(crate::evicted::evicted_files),
        )
        .command(
            &routes::SCHEDD_EVICTED_FILE,
            post(crate::evicted::evicted_file),
        )
        .command(
            &routes::SCHEDD_JOB_SANDBOX_READ,
            post(crate::job_access::sandbox_read),
        )
        .command(
            &routes::SCHEDD_SSH_TO_JOB,
            post(crate::job_access::ssh_to_job),
        )
        .command(
            &routes::SHADOW_CHECKPOINT_FILE,
            post(shadow::checkpoint_file),
        )
        .command(
            &routes::SHADOW_CHECKPOINT_COMMIT,
            post(shadow::checkpoint_commit),
        )
        .with_state(shared.clone());
    let up = bound.serve(&ctx, routes).await.context("schedd")?;
    let sinful = up.sinful.clone();
    let _ = shadows.addr.set(sinful.clone());
    settings.submit_host = sinful.clone();
    let submit_host = sinful.clone();
    shared
        .queue
        .send(move |q| q.schedd.set_submit_host(&submit_host));
    crate::lease::start_reconnects(&shared, reconnects);
    crate::lease::release_interrupted(&shared, releases).await;
    tokio::spawn(crate::dedicated::run(shared.clone()));

    let periodic = Duration::from_secs(skua_daemon::context::knob_u64(
        &ctx.config,
        "PERIODIC_EXPR_INTERVAL",
        60,
    )?);
    let mut periodic_tick = ctx.clock.ticker(periodic.max(Duration::from_secs(1)));
    let mut advertise_tick = ctx.clock.ticker(ctx.update_interval);
    // scheduler/local universe jobs: a start pass each SCHEDD_INTERVAL and
    // whenever the queue changed
    let start_knobs = crate::local_univ::StartKnobs::from_context(&ctx)?;
    let schedd_interval = Duration::from_secs(
        skua_daemon::context::knob_u64(&ctx.config, "SCHEDD_INTERVAL", 300)?.max(1),
    );
    let mut schedd_tick = ctx.clock.ticker(schedd_interval);
    let mut advertised: BTreeMap<String, ()> = BTreeMap::new();
    let scheduler_adv = Advertiser::new(&ctx, "Scheduler", &name)?;
    loop {
        let mut advertise_now = false;
        let mut ask = false;
        tokio::select! {
            _ = periodic_tick.tick(), if !periodic.is_zero() => {
                match periodic_policy(&shared).await {
                    Ok(0) => {}
                    Ok(n) => {
                        tracing::info!("periodic policy: {n} change(s)");
                        advertise_now = true;
                    }
                    Err(e) => tracing::error!("periodic policy: {}", e.0.message),
                }
            }
            _ = advertise_tick.tick() => advertise_now = true,
            _ = schedd_tick.tick() => advertise_now = true,
            _ = shared.reschedule.notified() => {
                advertise_now = true;
                ask = true;
            }
            _ = shared.changed.notified() => advertise_now = true,
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break; }
            }
        }
        if advertise_now {
            let header = up.ad_header("Scheduler", &name);
            let (n, u, a) = (name.clone(), ctx.uid_domain.clone(), sinful.clone());
            let counted =
                with_schedd(&shared, move |s| Ok(counts_ads(s, header, &n, &u, &a))).await;
            let (ad, mut submitters) = match counted {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("counting jobs for the ads: {}", e.0.message);
                    continue;
                }
            };
            crate::local_univ::start_due(&shared, &start_knobs, ad.clone(), &sinful).await;
            if let Some((n, s)) =
                crate::dedicated::submitter_ad(&shared, &name, &ctx.uid_domain, &sinful)
            {
                submitters.insert(n, s);
            }
            if let Err(e) = scheduler_adv.send(&ad).await {
                tracing::debug!("advertising the Scheduler ad: {e}");
            }
            for (sub_name, sub_ad) in &submitters {
                if let Ok(adv) = Advertiser::new(&ctx, "Submitter", sub_name) {
                    if let Err(e) = adv.send(sub_ad).await {
                        tracing::debug!("advertising Submitter {sub_name}: {e}");
                    }
                }
            }
            for gone in advertised.keys().filter(|n| !submitters.contains_key(*n)) {
                if let Ok(adv) = Advertiser::new(&ctx, "Submitter", gone) {
                    let _ = adv.invalidate().await;
                }
            }
            advertised = submitters.into_keys().map(|k| (k, ())).collect();
        }
        if ask {
            // After the Submitter ads are updated, so the cycle sees the
            // new idle jobs.
            tokio::spawn(ask_for_cycle(dialer.clone()));
        }
    }
    tracing::info!("schedd shutting down");
    shared.local.kill_all().await;
    let _ = scheduler_adv.invalidate().await;
    for gone in advertised.keys() {
        if let Ok(adv) = Advertiser::new(&ctx, "Submitter", gone) {
            let _ = adv.invalidate().await;
        }
    }
    up.shut_down().await;
    Ok(())
}
