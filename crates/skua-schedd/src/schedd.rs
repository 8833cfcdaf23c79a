//! The schedd's state and its one rule: decide (the `skua-queue` core),
//! commit (the [`Store`]), then apply and tell.
//!
//! Every change goes through [`Schedd::commit`]: the core plans a
//! transaction from the in-memory queue, the transaction is applied in
//! memory, the rows it touched are written to SQLite in one transaction,
//! and only then are user-log events written and the caller answered. If
//! the store refuses, the in-memory queue is reloaded from the store, so
//! memory never runs ahead of the disk.
//!
//! Synchronous on purpose: the daemon calls it from a blocking task, and
//! tests call it directly with a temporary store and simulated time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use classad::{ClassAd, EvalOptions, Evaluator, Expr};
use skua_queue::{
    int_attr, str_attr, Action, ActionReport, Actor, JobId, JobStatus, Mutation, Queue, QueueError,
    Selector, SubmitContext, SubmitLimits, SystemPolicy, Txn,
};

use crate::store::{Changes, HistoryRow, Store, StoreError, SubmissionRow, Sync};
use crate::userlog::UserLogWriter;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheddError {
    /// The core refused (not found, permission, bad request, conflict).
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The store failed; nothing was changed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request itself is malformed.
    #[error("{0}")]
    BadRequest(String),
}

/// Settings the schedd reads from its configuration.
#[derive(Clone, Debug, Default)]
pub struct ScheddSettings {
    /// The address written in "Job submitted from host" (`<ip:port>`).
    pub submit_host: String,
    /// `SYSTEM_PERIODIC_*`.
    pub system_policy: SystemPolicy,
    /// `MAX_JOBS_SUBMITTED`, `MAX_JOBS_PER_OWNER`,
    /// `MAX_JOBS_PER_SUBMISSION`: a submission that would break one is
    /// refused as a whole.
    pub limits: SubmitLimits,
    /// `UID_DOMAIN`: each job's `User` is `Owner@UID_DOMAIN`.
    pub uid_domain: Option<String>,
    /// The schedd's name (`SCHEDD_NAME`), the first part of `GlobalJobId`.
    pub name: Option<String>,
    /// `HISTORY_MAX_JOBS` (rows kept in the history; `None`: unlimited).
    pub history_max_jobs: Option<usize>,
    /// The local time zone's offset from UTC at a given time, for the
    /// user log's time stamps.
    pub utc_offset: Option<fn(i64) -> i32>,
    /// `MAX_JOB_RUN_FAILURES`: a job whose runs failed this many times
    /// through no fault of its own is held (0: never).
    pub max_run_failures: i64,
    /// Where jobs' checkpoints are stored (`$(SPOOL)/checkpoints`): a
    /// job's are removed when it leaves the queue.
    pub checkpoint_root: Option<PathBuf>,
}

/// What a submission did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The cluster holding the jobs.
    pub cluster: u32,
    /// How many jobs it has.
    pub jobs: usize,
    /// True when the submission's key named one already made: nothing was
    /// queued now (a retry after a lost answer).
    pub repeated: bool,
}

/// The longest submission key accepted.
pub const MAX_SUBMISSION_KEY_LEN: usize = 128;

/// A submission key is 1 to 128 characters from `A-Z a-z 0-9 . _ : -`.
fn check_submission_key(key: &str) -> Result<(), ScheddError> {
    let ok = !key.is_empty()
        && key.len() <= MAX_SUBMISSION_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ScheddError::BadRequest(format!(
            "invalid submission key `{key}`: 1 to {MAX_SUBMISSION_KEY_LEN} letters, digits, \
             `.`, `-`, `_` or `:`"
        )))
    }
}

/// The schedd.
pub struct Schedd {
    queue: Queue,
    store: Store,
    ev: Evaluator,
    settings: ScheddSettings,
    userlog: UserLogWriter,
    /// Acts with a job owner's rights (removing a checkpoint destination).
    as_user: skua_daemon::account::AsUser,
    /// Autocluster ids by key, stable while the schedd runs.
    autocluster_ids: std::collections::HashMap<String, u64>,
    /// The jobs of each autocluster as last offered to the negotiator.
    autocluster_jobs: std::collections::HashMap<u64, Vec<JobId>>,
    /// Each owner's idle jobs in queue order, as last computed. Kept while
    /// no change could make a job idle or reorder the idle jobs; jobs that
    /// left the idle state are skipped (and dropped) when it is read. Claim
    /// reuse reads it for every job, so the queue is not sorted per job.
    idle_order: std::collections::HashMap<String, std::collections::VecDeque<JobId>>,
}

/// Whether applying `m` may add an idle job or change the order of the
/// idle jobs (the rule of [`Queue::idle_jobs_in_order`]).
fn may_reorder_idle(m: &Mutation) -> bool {
    const ORDER_ATTRS: [&str; 4] = ["JobStatus", "JobPrio", "QDate", "Owner"];
    match m {
        Mutation::NewCluster { .. } | Mutation::NewJob { .. } => true,
        Mutation::SetAttr { name, value, .. } => {
            if name.eq_ignore_ascii_case("JobStatus") {
                // leaving the idle state never reorders the rest
                value.trim() == "1"
            } else {
                ORDER_ATTRS.iter().any(|a| a.eq_ignore_ascii_case(name))
            }
        }
        Mutation::DeleteAttr { name, .. } => {
            ORDER_ATTRS.iter().any(|a| a.eq_ignore_ascii_case(name))
        }
        _ => false,
    }
}

impl std::fmt::Debug for Schedd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedd")
            .field("store", &self.store)
            .field("jobs", &self.queue.len())
            .finish()
    }
}

fn parse_stored(text: &str, what: &str, path: &Path) -> Result<ClassAd, StoreError> {
    classad::parse_ad(text).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        what: format!("{what}: {e}"),
    })
}

/// The ad's own attributes (not those it shows through its chain), as
/// canonical text: what a job row stores.
fn own_text(ad: &ClassAd) -> String {
    let mut own = ClassAd::new();
    for (name, expr) in ad.iter() {
        own.insert(name.clone(), expr.clone());
    }
    classad::unparse_ad(&own)
}

impl Schedd {
    /// Opens the store at `path` and recovers the queue from it.
    pub fn open(path: &Path, settings: ScheddSettings) -> Result<Schedd, ScheddError> {
        let store = Store::open(path)?;
        let queue = Self::recover(&store)?;
        let userlog = UserLogWriter::new(settings.utc_offset);
        Ok(Schedd {
            queue,
            store,
            ev: Evaluator::new(EvalOptions::default()),
            settings,
            userlog,
            as_user: skua_daemon::account::AsUser::new(),
            autocluster_ids: std::collections::HashMap::new(),
            idle_order: std::collections::HashMap::new(),
            autocluster_jobs: std::collections::HashMap::new(),
        })
    }

    fn recover(store: &Store) -> Result<Queue, StoreError> {
        let snap = store.load()?;
        let path = store.path().to_path_buf();
        let mut queue = Queue::new();
        for (c, text) in &snap.clusters {
            queue.load_cluster(*c, parse_stored(text, &format!("cluster {c}"), &path)?);
        }
        for (c, p, text) in &snap.jobs {
            queue.load_job(
                JobId::new(*c, *p),
                parse_stored(text, &format!("job {c}.{p}"), &path)?,
            );
        }
        let highest = snap.clusters.iter().map(|(c, _)| *c).max().unwrap_or(0);
        queue.set_next_cluster_id(snap.next_cluster.max(highest.saturating_add(1)));
        Ok(queue)
    }

    /// Sets the address written in "Job submitted from host".
    pub fn set_submit_host(&mut self, host: &str) {
        self.settings.submit_host = host.to_string();
    }

    /// The in-memory queue (read-only).
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// The store's file.
    pub fn store_path(&self) -> PathBuf {
        self.store.path().to_path_buf()
    }

    /// An evaluator set to `now`.
    pub fn evaluator(&mut self, now: i64) -> &mut Evaluator {
        set_now(&mut self.ev, now);
        &mut self.ev
    }

    /// Takes the evaluator out (set to `now`), to use beside `&self.queue`;
    /// give it back with `self.ev = ev`.
    fn take_evaluator(&mut self, now: i64) -> Evaluator {
        let mut ev = std::mem::replace(&mut self.ev, Evaluator::new(EvalOptions::default()));
        set_now(&mut ev, now);
        ev
    }

    /// Applies `txn` in memory and in the store, then writes its events.
    pub fn commit(&mut self, txn: Txn, now: i64) -> Result<(), ScheddError> {
        self.commit_as(txn, now, Sync::Full)
    }

    /// [`Schedd::commit`] with the store's durability `sync`.
    pub(crate) fn commit_as(&mut self, txn: Txn, now: i64, sync: Sync) -> Result<(), ScheddError> {
        self.commit_recording(txn, now, sync, None)
    }

    /// [`Schedd::commit_as`], recording a keyed submission in the same
    /// store transaction.
    fn commit_recording(
        &mut self,
        txn: Txn,
        now: i64,
        sync: Sync,
        submission: Option<SubmissionRow>,
    ) -> Result<(), ScheddError> {
        if txn.is_empty() {
            return Ok(());
        }
        let t_start = std::time::Instant::now();
        // (each log with its job's owner, whose rights write it)
        let log_paths: Vec<(JobId, Option<(String, String)>)> = txn
            .events
            .iter()
            .map(|(id, _)| (*id, self.queue.job(*id).and_then(log_and_owner)))
            .collect();
        // Apply in memory, catching each job that leaves for the history
        // in its final state (after the transaction's earlier mutations).
        let mut history = Vec::new();
        let mut leaving = Vec::new();
        let mut start = 0;
        let mut applied = Ok(());
        for (i, m) in txn.mutations.iter().enumerate() {
            if let Mutation::DestroyJob { id, history: h } = m {
                applied = self.queue.apply(&txn.mutations[start..i]);
                if applied.is_err() {
                    break;
                }
                start = i;
                if let Some(ad) = self.queue.job(*id) {
                    if *h {
                        history.push(history_row(*id, ad, now));
                    }
                    leaving.push((*id, ad.clone()));
                }
            }
        }
        if applied.is_ok() {
            applied = self.queue.apply(&txn.mutations[start..]);
        }
        if txn.mutations.iter().any(may_reorder_idle) {
            self.idle_order.clear();
        }
        if let Err(e) = applied {
            // part of the transaction may be applied: back to the store's
            // state, which nothing of this transaction has reached
            self.reload();
            return Err(e.into());
        }
        let t_applied = std::time::Instant::now();
        let mut changes = self.changes_for(&txn.mutations, history);
        changes.submission = submission;
        let t_rows = std::time::Instant::now();
        if let Err(e) = self.store.commit_as(&changes, sync) {
            tracing::error!("commit failed, reloading the queue from the store: {e}");
            self.reload();
            return Err(e.into());
        }
        let t_committed = std::time::Instant::now();
        for (id, ad) in leaving {
            self.remove_checkpoints(id, &ad);
            if let Some(spool) = crate::spool::spool_root(self.settings.checkpoint_root.as_deref())
            {
                crate::spool::remove_job_dir(&self.as_user, spool, id, &ad);
            }
        }
        // Events go to each job's log once the change is durable; a job
        // that just arrived learns its log path now.
        // Each log is appended to once per commit, its events in order.
        let mut texts: Vec<((String, String), String)> = Vec::new();
        for ((id, event), (_, before)) in txn.events.iter().zip(log_paths) {
            let log = before.or_else(|| self.queue.job(*id).and_then(log_and_owner));
            if let Some(log) = log {
                let text = self.userlog.text(*id, event, now);
                match texts.iter_mut().find(|(l, _)| *l == log) {
                    Some((_, t)) => t.push_str(&text),
                    None => texts.push((log, text)),
                }
            }
        }
        for ((path, owner), text) in texts {
            self.userlog.append(Path::new(&path), &owner, &text);
        }
        tracing::debug!(
            "commit of {} mutation(s): apply {:?}, rows {:?}, store {:?}, user logs {:?}",
            txn.mutations.len(),
            t_applied - t_start,
            t_rows - t_applied,
            t_committed - t_rows,
            t_committed.elapsed()
        );
        if let Some(max) = self.settings.history_max_jobs {
            if !changes.history.is_empty() {
                if let Err(e) = self.store.trim_history(max) {
                    tracing::warn!("trimming the history: {e}");
                }
            }
        }
        Ok(())
    }

    /// Removes the stored checkpoints of job `id` (with this final ad),
    /// which left the queue: in the background (a large store takes time),
    /// with the owner's rights for a `checkpoint_destination`.
    fn remove_checkpoints(&self, id: JobId, ad: &ClassAd) {
        let Some(spool) = self.settings.checkpoint_root.as_deref() else {
            return;
        };
        let loc = match crate::checkpoint::location(ad, spool) {
            Ok(l) => l,
            Err(_) => return,
        };
        if !loc.as_owner && !crate::checkpoint::job_dir(&loc.root, id).exists() {
            return;
        }
        let rights = if loc.as_owner {
            let owner = crate::sandbox::string_attr(ad, "Owner").unwrap_or_default();
            match self.as_user.rights_of(&owner) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("job {id}: not removing its checkpoints: {e}");
                    return;
                }
            }
        } else {
            skua_daemon::account::Rights::Daemon
        };
        let as_user = self.as_user.clone();
        let spawned = std::thread::Builder::new()
            .name("checkpoint-removal".into())
            .spawn(move || {
                match as_user.run(&rights, move || {
                    crate::checkpoint::remove_job(&loc.root, id)
                }) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!("job {id}: removing its checkpoints: {e}"),
                    Err(e) => tracing::warn!("job {id}: removing its checkpoints: {e}"),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("job {id}: removing its checkpoints: {e}");
        }
    }

    /// The job's own line in its user log (event 008, `skua chirp ulog`).
    pub fn generic_event(&mut self, id: JobId, info: &str, now: i64) -> Result<(), ScheddError> {
        let txn = self.queue.plan_generic_event(id, info)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// Every input file of spooled job `id` is in `spool_dir`: released
    /// to run from there (see [`skua_queue::spool`]).
    pub fn spool_complete(
        &mut self,
        id: JobId,
        spool_dir: &str,
        stage_in_start: i64,
        owner: &str,
        admin: bool,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn =
            self.queue
                .plan_spool_complete(id, spool_dir, stage_in_start, owner, admin, now)?;
        self.commit_then_policy(txn, now)
    }

    /// `skua transfer_data` fetched the output of job `id`: it leaves the
    /// queue.
    pub fn output_fetched(
        &mut self,
        id: JobId,
        owner: &str,
        admin: bool,
        started: i64,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self
            .queue
            .plan_output_fetched(id, owner, admin, started, now)?;
        self.commit(txn, now)
    }

    /// The upload of a checkpoint of job `id` began: logged.
    pub fn checkpoint_upload(&mut self, id: JobId, now: i64) -> Result<(), ScheddError> {
        let txn = self.queue.plan_checkpoint_upload(id)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// A step of a file transfer of job `id` (the transfer queue's):
    /// its attributes and event 040.
    pub fn transfer_step(
        &mut self,
        id: JobId,
        step: skua_queue::FileTransfer,
        host: Option<&str>,
        bytes: u64,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_transfer(id, step, host, bytes, now)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// `bytes` more of a transfer of job `id` moved.
    pub fn transfer_progress(
        &mut self,
        id: JobId,
        input: bool,
        bytes: u64,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_transfer_progress(id, input, bytes)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// Checkpoint `number` of job `id` (made by the transparent
    /// `backend`, if any) was stored: recorded in its ad.
    pub fn checkpoint_stored(
        &mut self,
        id: JobId,
        number: u64,
        backend: Option<&str>,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_checkpoint(id, number, backend, now)?;
        self.commit(txn, now)
    }

    /// Commits `txn`, then evaluates the periodic policy of the jobs it
    /// touched (a state change is a moment to check it, as the interval
    /// is), committing what that decides as a second transaction.
    fn commit_then_policy(&mut self, txn: Txn, now: i64) -> Result<(), ScheddError> {
        self.commit_then_policy_recording(txn, now, None)
    }

    /// [`Schedd::commit_then_policy`], recording a keyed submission with
    /// the change.
    fn commit_then_policy_recording(
        &mut self,
        txn: Txn,
        now: i64,
        submission: Option<SubmissionRow>,
    ) -> Result<(), ScheddError> {
        let mut touched: Vec<JobId> = txn
            .mutations
            .iter()
            .filter_map(|m| match m {
                Mutation::NewJob { id, .. }
                | Mutation::SetAttr { id, .. }
                | Mutation::DeleteAttr { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        touched.dedup();
        self.commit_recording(txn, now, Sync::Full, submission)?;
        if touched.is_empty() {
            return Ok(());
        }
        let policy = self.settings.system_policy.clone();
        let mut ev = self.take_evaluator(now);
        let follow = self
            .queue
            .plan_periodic_jobs(&mut ev, now, &policy, &touched);
        self.ev = ev;
        if let Err(e) = self.commit(follow, now) {
            // the requested change is committed; the policy runs again at
            // the next interval
            tracing::error!("periodic policy after a change: {e}");
        }
        Ok(())
    }

    /// Back to the store's state.
    fn reload(&mut self) {
        self.idle_order.clear();
        match Self::recover(&self.store) {
            Ok(q) => self.queue = q,
            Err(e) => tracing::error!("reloading the queue from the store failed: {e}"),
        }
    }

    /// The rows the mutations touched, read from the queue after applying.
    fn changes_for(&self, mutations: &[Mutation], history: Vec<HistoryRow>) -> Changes {
        let mut changes = Changes {
            history,
            ..Changes::default()
        };
        let mut jobs = BTreeSet::new();
        let mut clusters = BTreeSet::new();
        let mut gone_jobs = BTreeSet::new();
        let mut gone_clusters = BTreeSet::new();
        for m in mutations {
            match m {
                Mutation::NewCluster { cluster, .. } => {
                    clusters.insert(*cluster);
                    gone_clusters.remove(cluster);
                }
                Mutation::NewJob { id, .. }
                | Mutation::SetAttr { id, .. }
                | Mutation::DeleteAttr { id, .. } => {
                    jobs.insert(*id);
                    gone_jobs.remove(id);
                }
                Mutation::DestroyJob { id, .. } => {
                    jobs.remove(id);
                    gone_jobs.insert(*id);
                }
                Mutation::DestroyCluster { cluster } => {
                    clusters.remove(cluster);
                    gone_clusters.insert(*cluster);
                }
                Mutation::SetNextClusterId(n) => changes.next_cluster = Some(*n),
            }
        }
        for c in clusters {
            if let Some(ad) = self.queue.cluster_ad(c) {
                changes.put_clusters.push((c, classad::unparse_ad(ad)));
            }
        }
        for id in jobs {
            if let Some(ad) = self.queue.job(id) {
                changes.put_jobs.push((id.cluster, id.proc, own_text(ad)));
            }
        }
        changes.delete_jobs = gone_jobs.into_iter().map(|i| (i.cluster, i.proc)).collect();
        changes.delete_clusters = gone_clusters.into_iter().collect();
        changes
    }

    /// Reserves a cluster id for a submission.
    pub fn new_cluster(&mut self, now: i64) -> Result<u32, ScheddError> {
        let id = self.queue.next_cluster_id();
        let txn = self.queue.reserve_cluster_id();
        self.commit(txn, now)?;
        Ok(id)
    }

    /// Queues one cluster of complete job ads, all or nothing.
    pub fn submit(
        &mut self,
        owner: &str,
        cluster: u32,
        jobs: Vec<ClassAd>,
        now: i64,
    ) -> Result<usize, ScheddError> {
        Ok(self.submit_keyed(owner, cluster, jobs, None, now)?.jobs)
    }

    /// Queues one cluster of complete job ads, all or nothing, within the
    /// job-count limits. With a `key` (chosen by the submitting tool, unique
    /// per submission) the submission is idempotent: the key is recorded
    /// with the cluster in the same transaction (and as the jobs'
    /// `SubmissionId`), and a later submission by the same owner with the
    /// same key queues nothing and is answered with the cluster made the
    /// first time. A key recorded for another owner is refused.
    pub fn submit_keyed(
        &mut self,
        owner: &str,
        cluster: u32,
        jobs: Vec<ClassAd>,
        key: Option<&str>,
        now: i64,
    ) -> Result<Submitted, ScheddError> {
        if let Some(key) = key {
            check_submission_key(key)?;
            if let Some(done) = self.store.submission(key)? {
                if done.owner != owner {
                    return Err(ScheddError::Queue(QueueError::PermissionDenied(format!(
                        "submission key {key} belongs to another user"
                    ))));
                }
                return Ok(Submitted {
                    cluster: done.cluster,
                    jobs: done.jobs as usize,
                    repeated: true,
                });
            }
        }
        if jobs.is_empty() {
            return Err(ScheddError::BadRequest(
                "a submission needs at least one job".into(),
            ));
        }
        let n = jobs.len();
        let t_plan = std::time::Instant::now();
        let ctx = SubmitContext {
            owner,
            now,
            submit_host: &self.settings.submit_host,
            uid_domain: self.settings.uid_domain.as_deref(),
            schedd_name: self.settings.name.as_deref(),
            submission_id: key,
            limits: self.settings.limits,
        };
        let txn = self.queue.plan_submission(cluster, jobs, &ctx)?;
        tracing::debug!("submit of {n} job(s) planned in {:?}", t_plan.elapsed());
        let record = key.map(|key| SubmissionRow {
            key: key.to_string(),
            owner: owner.to_string(),
            cluster,
            jobs: u32::try_from(n).unwrap_or(u32::MAX),
            at: now,
        });
        self.commit_then_policy_recording(txn, now, record)?;
        Ok(Submitted {
            cluster,
            jobs: n,
            repeated: false,
        })
    }

    /// Hold, release or remove.
    pub fn act(
        &mut self,
        action: Action,
        sel: &Selector,
        who: &Actor,
        reason: Option<&str>,
        now: i64,
    ) -> Result<ActionReport, ScheddError> {
        let (txn, report) = self.queue.plan_action(action, sel, who, now, reason)?;
        self.commit_then_policy(txn, now)?;
        Ok(report)
    }

    /// `qedit`: sets an attribute in the selected jobs; returns how many.
    pub fn set_attr(
        &mut self,
        sel: &Selector,
        who: &Actor,
        name: &str,
        value: &str,
        now: i64,
    ) -> Result<usize, ScheddError> {
        let (txn, n) = self.queue.plan_set_attr(sel, who, name, value, now)?;
        self.commit_then_policy(txn, now)?;
        Ok(n)
    }

    /// Evaluates the periodic policy of every job; returns how many
    /// mutations it committed. (The daemon does the same in three steps,
    /// evaluating off the queue's thread: [`Schedd::periodic_snapshot`],
    /// [`skua_queue::periodic_decisions`], [`Schedd::apply_periodic`].)
    pub fn periodic(&mut self, now: i64) -> Result<usize, ScheddError> {
        let (jobs, policy) = self.periodic_snapshot();
        let mut ev = self.take_evaluator(now);
        let decisions = skua_queue::periodic_decisions(&mut ev, now, &policy, &jobs, || false);
        self.ev = ev;
        self.apply_periodic(&decisions, now)
    }

    /// Every job ad (shared handles) and the system policy: what the
    /// periodic policy is evaluated on.
    pub fn periodic_snapshot(&self) -> (Vec<(JobId, ClassAd)>, SystemPolicy) {
        (
            self.queue.job_snapshot(),
            self.settings.system_policy.clone(),
        )
    }

    /// Carries out periodic decisions made on a snapshot (those whose job
    /// did not change meanwhile); returns how many mutations it committed.
    pub fn apply_periodic(
        &mut self,
        decisions: &[skua_queue::PeriodicDecision],
        now: i64,
    ) -> Result<usize, ScheddError> {
        let txn = self.queue.plan_periodic_decided(decisions, now);
        let n = txn.mutations.len();
        self.commit(txn, now)?;
        Ok(n)
    }

    /// Jobs matching `filter`, projected, in job-id order.
    pub fn query(&mut self, filter: &JobFilter, projection: &[String], now: i64) -> Vec<String> {
        let mut ev = self.take_evaluator(now);
        let out = self
            .queue
            .jobs()
            .filter(|(id, ad)| filter.matches(*id, ad, &mut ev))
            .map(|(_, ad)| project(ad, projection))
            .collect();
        self.ev = ev;
        out
    }

    /// condor_q's batch view of the jobs matching `filter` (see
    /// [`Schedd::batches_of`]).
    pub fn batches(&mut self, filter: &JobFilter, now: i64) -> Vec<skua_proto::BatchRow> {
        let mut ev = self.take_evaluator(now);
        let selected: Vec<JobId> = self
            .queue
            .jobs()
            .filter(|(id, ad)| filter.matches(*id, ad, &mut ev))
            .map(|(id, _)| id)
            .collect();
        self.ev = ev;
        self.batches_of(&selected)
    }

    /// condor_q's batch view of the jobs `selected` (ids in job-id order;
    /// those no longer in the queue are skipped): one row per owner and
    /// batch (`JobBatchName`, else the cluster), in order of their first
    /// job.
    pub fn batches_of(&self, selected: &[JobId]) -> Vec<skua_proto::BatchRow> {
        batch_rows(
            selected
                .iter()
                .filter_map(|&id| self.queue.job(id).map(|ad| (id, ad))),
            |c| {
                self.queue
                    .cluster_ad(c)
                    .and_then(|a| int_attr(a, "TotalSubmitProcs"))
                    .unwrap_or(0)
            },
        )
    }

    /// Every job in the queue by `JobStatus` code (index 0..=7).
    pub fn status_counts(&self) -> Vec<u64> {
        let mut counts = vec![0u64; 8];
        for (id, _) in self.queue.jobs() {
            if let Some(st) = self.queue.status(id) {
                if let Some(c) = counts.get_mut(st.code() as usize) {
                    *c += 1;
                }
            }
        }
        counts
    }

    /// History ads, newest first, matching `filter`, at most `limit`.
    pub fn history(
        &mut self,
        filter: &JobFilter,
        projection: &[String],
        limit: Option<usize>,
        now: i64,
    ) -> Result<Vec<String>, ScheddError> {
        let mut ev = self.take_evaluator(now);
        let mut out = Vec::new();
        let limit = limit.unwrap_or(usize::MAX);
        let result = self.store.history(|row| {
            if out.len() >= limit {
                return false;
            }
            let Ok(ad) = classad::parse_ad(&row.ad) else {
                tracing::warn!("history row of {}.{} does not parse", row.cluster, row.proc);
                return true;
            };
            if !filter.matches(JobId::new(row.cluster, row.proc), &ad, &mut ev) {
                return true;
            }
            out.push(project(&ad, projection));
            out.len() < limit
        });
        self.ev = ev;
        result?;
        Ok(out)
    }
}

impl Schedd {
    /// The idle jobs of `owner` not in `busy`, grouped into autoclusters
    /// by `significant` (see [`Queue::autoclusters`]): `(id, first job's
    /// whole ad, count)` in queue order. Remembers each autocluster's jobs
    /// for [`Schedd::job_for_match`].
    pub fn resource_requests(
        &mut self,
        owner: &str,
        significant: &[String],
        busy: &std::collections::HashSet<JobId>,
        now: i64,
    ) -> Vec<(u64, ClassAd, u64)> {
        let mut ev = self.take_evaluator(now);
        let groups = self.queue.autoclusters(&mut ev, owner, significant, None);
        self.ev = ev;
        let mut out = Vec::new();
        for g in groups {
            // Parallel jobs are the dedicated scheduler's, never offered
            // as their owner's ordinary jobs.
            let jobs: Vec<JobId> = g
                .jobs
                .into_iter()
                .filter(|j| !busy.contains(j) && !self.is_parallel(*j))
                .collect();
            let Some(first) = jobs.first().and_then(|j| self.queue.job(*j)) else {
                continue;
            };
            let next = self.autocluster_ids.len() as u64 + 1;
            let id = *self.autocluster_ids.entry(g.key).or_insert(next);
            out.push((id, first.flatten(), jobs.len() as u64));
            self.autocluster_jobs.insert(id, jobs);
        }
        out
    }

    /// The job to run on a match made for `autocluster`: its first job
    /// still idle and not `busy`; failing that, the first idle job of
    /// `owner` that matches `slot_ad` (see [`Schedd::next_job_for`]).
    pub fn job_for_match(
        &mut self,
        autocluster: u64,
        owner: &str,
        slot_ad: &ClassAd,
        busy: &std::collections::HashSet<JobId>,
        now: i64,
    ) -> Option<JobId> {
        if let Some(jobs) = self.autocluster_jobs.get(&autocluster) {
            for j in jobs {
                // Autocluster ids do not tell owners apart: a match made
                // for one submitter must run one of its own jobs.
                let owned = self.queue.job(*j).is_some_and(|ad| {
                    matches!(ad.lookup("Owner"), Some(classad::Expr::Lit(v)) if v.as_string().as_deref() == Some(owner))
                });
                if owned && !busy.contains(j) && self.queue.status(*j) == Some(JobStatus::Idle) {
                    return Some(*j);
                }
            }
        }
        self.next_job_for(owner, slot_ad, busy, now)
    }

    /// Claim reuse: the first idle job of `owner` (in queue order) not in
    /// `busy` that matches `slot_ad` both ways.
    pub fn next_job_for(
        &mut self,
        owner: &str,
        slot_ad: &ClassAd,
        busy: &std::collections::HashSet<JobId>,
        now: i64,
    ) -> Option<JobId> {
        let mut ev = self.take_evaluator(now);
        let queue = &self.queue;
        let order = self
            .idle_order
            .entry(owner.to_string())
            .or_insert_with(|| queue.idle_jobs_in_order(&mut ev, Some(owner), None).into());
        // jobs no longer idle at the front go for good
        while order
            .front()
            .is_some_and(|id| queue.status(*id) != Some(JobStatus::Idle))
        {
            order.pop_front();
        }
        let mut found = None;
        let (mut skipped, mut unmatched) = (0, 0);
        for id in order.iter() {
            if busy.contains(id)
                || queue.status(*id) != Some(JobStatus::Idle)
                || queue.job(*id).is_some_and(parallel_universe)
            {
                skipped += 1;
                continue;
            }
            let Some(ad) = queue.job(*id) else {
                continue;
            };
            if classad::symmetric_match(&mut ev, ad, slot_ad).matched {
                found = Some(*id);
                break;
            }
            unmatched += 1;
        }
        tracing::debug!(
            "next job for {owner}: {found:?} ({} in order, {skipped} busy or not idle, {unmatched} not matching)",
            order.len()
        );
        self.ev = ev;
        found
    }

    /// Whether `id` is a parallel-universe job (`JobUniverse = 11`): the
    /// dedicated scheduler's to run, not an ordinary claim's.
    pub fn is_parallel(&self, id: JobId) -> bool {
        self.queue.job(id).is_some_and(parallel_universe)
    }

    /// The job's whole ad (its cluster's attributes merged in), without
    /// the schedd's private attributes (`ClaimId`): what may be shown or
    /// sent to a startd and a starter.
    pub fn job_ad(&self, id: JobId) -> Option<ClassAd> {
        self.queue.job(id).map(public_ad)
    }

    /// A shadow claimed `slot` for `id` under `claim_id` at the startd
    /// `startd_addr`: Running, with the claim recorded (in the same
    /// transaction) for a restart.
    pub fn start_run(
        &mut self,
        id: JobId,
        slot: &str,
        claim_id: &str,
        startd_addr: &str,
        now: i64,
    ) -> Result<(), ScheddError> {
        let mut txn = self.queue.plan_start(id, slot, now)?;
        txn.extend(self.queue.plan_claim(id, claim_id, startd_addr)?);
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// The idle scheduler- and local-universe jobs (whole ads), in queue
    /// order, and how many of them run now (see `local_univ.rs`).
    pub fn submit_host_jobs(
        &self,
    ) -> (
        Vec<(JobId, skua_queue::local::SubmitHostUniverse, ClassAd)>,
        skua_queue::local::SubmitHostRunning,
    ) {
        let idle = self
            .queue
            .submit_host_idle()
            .into_iter()
            .filter_map(|(id, u)| self.queue.job(id).map(|ad| (id, u, public_ad(ad))))
            .collect();
        (idle, self.queue.submit_host_running())
    }

    /// The schedd starts a scheduler- or local-universe job itself on
    /// `host` (no claim): Running from now.
    pub fn start_on_submit_host(
        &mut self,
        id: JobId,
        host: &str,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_start(id, host, now)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// The status of job `id`, if it is in the queue.
    pub fn status(&self, id: JobId) -> Option<JobStatus> {
        self.queue.status(id)
    }

    /// The job's process started: the execute event.
    pub fn executing(
        &mut self,
        id: JobId,
        host: &str,
        slot: &str,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_executing(id, host, slot, now)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// The schedd lost contact with the run of `id`: event 022.
    pub fn disconnected(
        &mut self,
        id: JobId,
        reason: &str,
        startd_name: &str,
        startd_addr: &str,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self
            .queue
            .plan_disconnected(id, reason, startd_name, startd_addr, now)?;
        self.commit(txn, now)
    }

    /// The schedd reached the run of `id` again: event 023.
    pub fn reconnected(
        &mut self,
        id: JobId,
        startd_name: &str,
        startd_addr: &str,
        now: i64,
    ) -> Result<(), ScheddError> {
        // a starter has no address of its own: it is reached through its
        // startd
        let txn = self
            .queue
            .plan_reconnected(id, startd_name, startd_addr, startd_addr, now)?;
        self.commit(txn, now)
    }

    /// The run's startd answered a keep-alive (`LastJobLeaseRenewal`).
    pub fn lease_renewed(&mut self, id: JobId, now: i64) -> Result<(), ScheddError> {
        let txn = self.queue.plan_lease_renewed(id, now)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// Usage from the starter (peaks kept).
    pub fn usage(
        &mut self,
        id: JobId,
        image_kb: i64,
        rss_kb: i64,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_usage(id, image_kb, rss_kb)?;
        self.commit_as(txn, now, Sync::Relaxed)
    }

    /// The starter suspended or continued the job.
    pub fn suspended(&mut self, id: JobId, suspended: bool, now: i64) -> Result<(), ScheddError> {
        let txn = self.queue.plan_suspended(id, suspended, now)?;
        self.commit(txn, now)
    }

    /// The run ended without the job's own exit (evicted, or failed).
    pub fn run_ended(
        &mut self,
        id: JobId,
        end: &skua_queue::RunEnd,
        usage: skua_queue::Rusage,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self
            .queue
            .plan_run_ended(id, end, usage, self.settings.max_run_failures, now)?;
        self.commit_then_policy(txn, now)
    }

    /// The job's process exited and its outputs are on their way back:
    /// TransferringOutput (JobStatus 6) until its final exit.
    pub fn transferring_output(&mut self, id: JobId, now: i64) -> Result<(), ScheddError> {
        let txn = self.queue.plan_transferring_output(id, now)?;
        self.commit_then_policy(txn, now)
    }

    /// The job's process exited: the exit policy decides.
    pub fn job_exited(
        &mut self,
        id: JobId,
        exit: &skua_queue::ExitInfo,
        now: i64,
    ) -> Result<(), ScheddError> {
        let txn = self.queue.plan_exit(id, exit, now)?;
        self.commit_then_policy(txn, now)
    }

    /// The runs interrupted by a restart whose claim is recorded: the job,
    /// its claim id, its startd's address and its (public) ad. Their old
    /// run may still go on at the startd: the job must not be matched
    /// again before that claim is released (see `lease.rs`).
    pub fn interrupted_claims(&self) -> Vec<(JobId, String, String, ClassAd)> {
        self.interrupted()
            .into_iter()
            .filter_map(|id| {
                let ad = self.queue.job(id)?;
                let (claim, startd) = Queue::claim_of(ad)?;
                Some((id, claim, startd, public_ad(ad)))
            })
            .collect()
    }

    /// Jobs still marked running from before a restart whose run holds no
    /// recorded claim go back to Idle (their shadows are gone); returns
    /// how many. Those with a claim wait for its release
    /// ([`Schedd::interrupted_claims`], [`Schedd::requeue_released`]).
    pub fn requeue_interrupted(&mut self, now: i64) -> Result<usize, ScheddError> {
        let ids: Vec<JobId> = self
            .interrupted()
            .into_iter()
            .filter(|id| {
                self.queue
                    .job(*id)
                    .is_none_or(|ad| Queue::claim_of(ad).is_none())
            })
            .collect();
        let end = skua_queue::RunEnd::Evicted {
            reason: "the schedd restarted while the job ran".into(),
        };
        for id in &ids {
            let txn =
                self.queue
                    .plan_run_ended(*id, &end, skua_queue::Rusage::default(), 0, now)?;
            self.commit(txn, now)?;
        }
        Ok(ids.len())
    }

    /// The run of `id` interrupted by a restart is over: its claim was
    /// released at the startd (or its lease surely ran out there). The job
    /// goes back to Idle (a removed one leaves the queue) unless a newer
    /// run holds another claim.
    pub fn requeue_released(
        &mut self,
        id: JobId,
        claim_id: &str,
        reason: &str,
        now: i64,
    ) -> Result<(), ScheddError> {
        let same = self
            .queue
            .job(id)
            .and_then(Queue::claim_of)
            .is_some_and(|(c, _)| c == claim_id);
        if !same {
            return Ok(());
        }
        let end = skua_queue::RunEnd::Evicted {
            reason: reason.to_string(),
        };
        let txn = self
            .queue
            .plan_run_ended(id, &end, skua_queue::Rusage::default(), 0, now)?;
        self.commit(txn, now)
    }

    /// Jobs marked running (or removed while running) in the queue.
    fn interrupted(&self) -> Vec<JobId> {
        self.queue
            .jobs()
            .filter(|(id, _)| {
                matches!(
                    self.queue.status(*id),
                    Some(JobStatus::Running | JobStatus::Suspended | JobStatus::TransferringOutput)
                ) || (self.queue.status(*id) == Some(JobStatus::Removed)
                    && self.queue.job(*id).is_some_and(|ad| {
                        ad.lookup(skua_queue::attr::JOB_CURRENT_START_DATE)
                            .is_some()
                    }))
            })
            .map(|(id, _)| id)
            .collect()
    }
}

/// The merged ad without the private attributes.
/// `JobUniverse = 11` (a literal, as submit writes it).
fn parallel_universe(ad: &ClassAd) -> bool {
    matches!(ad.lookup("JobUniverse"), Some(classad::Expr::Lit(v)) if v.as_int() == Some(11))
}

fn public_ad(ad: &ClassAd) -> ClassAd {
    let mut flat = ad.flatten();
    for name in skua_queue::attr::PRIVATE {
        flat.remove(name);
    }
    flat
}

/// Which jobs a query selects: every part given must hold; the ids,
/// clusters and owners are alternatives among themselves.
#[derive(Clone, Debug, Default)]
pub struct JobFilter {
    /// `C.P` ids and whole clusters.
    pub ids: Vec<JobId>,
    /// Whole clusters.
    pub clusters: Vec<u32>,
    /// Owners.
    pub owners: Vec<String>,
    /// A constraint evaluated in each job ad.
    pub constraint: Option<Expr>,
}

impl JobFilter {
    /// True when `ad` (job `id`) is selected by the ids, clusters and
    /// owners (the constraint aside).
    pub fn named(&self, id: JobId, ad: &ClassAd) -> bool {
        let all = self.ids.is_empty() && self.clusters.is_empty() && self.owners.is_empty();
        all || self.ids.contains(&id)
            || self.clusters.contains(&id.cluster)
            || str_attr(ad, "Owner").is_some_and(|o| self.owners.contains(&o))
    }

    /// True when `ad` (job `id`) is selected.
    pub fn matches(&self, id: JobId, ad: &ClassAd, ev: &mut Evaluator) -> bool {
        if !self.named(id, ad) {
            return false;
        }
        match &self.constraint {
            Some(c) => ev.eval(c, Some(ad), None).is_true(),
            None => true,
        }
    }
}

fn set_now(ev: &mut Evaluator, now: i64) {
    let mut opts = *ev.options();
    opts.now = now as f64;
    ev.set_options(opts);
}

fn history_row(id: JobId, ad: &ClassAd, now: i64) -> HistoryRow {
    let flat = public_ad(ad);
    HistoryRow {
        cluster: id.cluster,
        proc: id.proc,
        owner: str_attr(&flat, "Owner").unwrap_or_default(),
        completion: int_attr(&flat, "CompletionDate")
            .filter(|t| *t > 0)
            .unwrap_or(now),
        ad: classad::unparse_ad(&flat),
    }
}

/// The jobs of `jobs` whose `constraint`, evaluated in the job ad at
/// `now`, is true (all of them without one), in order. `stop` is asked
/// between jobs; `None` when it stopped the work.
pub fn select_jobs(
    jobs: Vec<(JobId, ClassAd)>,
    constraint: Option<&Expr>,
    now: i64,
    mut stop: impl FnMut() -> bool,
) -> Option<Vec<(JobId, ClassAd)>> {
    let Some(c) = constraint else {
        return Some(jobs);
    };
    let mut ev = Evaluator::new(EvalOptions::default());
    set_now(&mut ev, now);
    let mut out = Vec::new();
    for (id, ad) in jobs {
        if stop() {
            return None;
        }
        if ev.eval(c, Some(&ad), None).is_true() {
            out.push((id, ad));
        }
    }
    Some(out)
}

/// condor_q's batch view of the jobs `selected` (in job-id order): one row
/// per owner and batch (`JobBatchName`, else the cluster), in order of
/// their first job; `submitted(cluster)` is the cluster's
/// `TotalSubmitProcs`, for the jobs that left the queue.
pub fn batch_rows<'a>(
    selected: impl Iterator<Item = (JobId, &'a ClassAd)>,
    submitted: impl Fn(u32) -> i64,
) -> Vec<skua_proto::BatchRow> {
    use std::collections::HashMap;
    let mut rows: Vec<skua_proto::BatchRow> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut present: HashMap<u32, u64> = HashMap::new();
    let mut last_key: Option<((String, String), usize)> = None;
    for (id, ad) in selected {
        *present.entry(id.cluster).or_default() += 1;
        let owner = str_attr(ad, "Owner").unwrap_or_default();
        let name = str_attr(ad, "JobBatchName").unwrap_or_else(|| format!("ID: {}", id.cluster));
        let i = match &last_key {
            Some((k, i)) if k.0 == owner && k.1 == name => *i,
            _ => {
                let key = (owner.clone(), name.clone());
                let i = *index.entry(key.clone()).or_insert_with(|| {
                    rows.push(skua_proto::BatchRow {
                        owner,
                        name,
                        submitted: i64::MAX,
                        first: (id.cluster, id.proc),
                        ..skua_proto::BatchRow::default()
                    });
                    rows.len() - 1
                });
                last_key = Some((key, i));
                i
            }
        };
        let row = &mut rows[i];
        row.submitted = row.submitted.min(int_attr(ad, "QDate").unwrap_or(0));
        row.last = (id.cluster, id.proc);
        match job_status_code(ad) {
            1 => row.idle += 1,
            2 | 6 => row.running += 1,
            3 => row.removed += 1,
            4 => row.completed += 1,
            5 => row.held += 1,
            7 => row.suspended += 1,
            _ => {}
        }
    }
    // done: jobs of the batch's clusters that left the queue
    let mut counted = std::collections::HashSet::new();
    for row in &mut rows {
        for c in row.first.0..=row.last.0 {
            let Some(n) = present.get(&c) else { continue };
            if !counted.insert(c) {
                continue;
            }
            row.done += (submitted(c) - *n as i64).max(0) as u64;
        }
    }
    rows
}

/// A job's `JobStatus` code (1..=7); a missing or unknown one counts as
/// idle, as the queue reads it.
pub(crate) fn job_status_code(ad: &ClassAd) -> i64 {
    int_attr(ad, skua_queue::attr::JOB_STATUS)
        .filter(|c| (1..=7).contains(c))
        .unwrap_or(1)
}

/// The ad (merged with its cluster ad) or only the named attributes of it.
pub fn project(ad: &ClassAd, projection: &[String]) -> String {
    if projection.is_empty() {
        return classad::unparse_ad(&public_ad(ad));
    }
    let mut out = ClassAd::new();
    for name in projection {
        if skua_queue::attr::is_private(name) {
            continue;
        }
        if let Some(e) = ad.lookup(name) {
            out.insert(name.as_str(), e.clone());
        }
    }
    classad::unparse_ad(&out)
}

/// [`project`] for a queue query: with `ServerTime` (the schedd's clock, `now`) in each ad,
/// as HTCondor's schedd adds it to the ads it returns (when the projection asks for all
/// attributes or names it).
pub fn project_for_query(ad: &ClassAd, projection: &[String], now: i64) -> String {
    const SERVER_TIME: &str = "ServerTime";
    if projection.is_empty() {
        let mut flat = public_ad(ad);
        flat.insert(SERVER_TIME, Expr::int(now));
        return classad::unparse_ad(&flat);
    }
    let mut out = ClassAd::new();
    for name in projection {
        if name.eq_ignore_ascii_case(SERVER_TIME) {
            out.insert(SERVER_TIME, Expr::int(now));
            continue;
        }
        if skua_queue::attr::is_private(name) {
            continue;
        }
        if let Some(e) = ad.lookup(name) {
            out.insert(name.as_str(), e.clone());
        }
    }
    classad::unparse_ad(&out)
}

/// A job's event log and its owner.
fn log_and_owner(ad: &ClassAd) -> Option<(String, String)> {
    Some((
        str_attr(ad, "UserLog")?,
        str_attr(ad, "Owner").unwrap_or_default(),
    ))
}
