//! Planning user requests: submit, hold/release/remove, qedit.

use std::collections::{BTreeMap, BTreeSet};

use classad::{ClassAd, EvalOptions, Evaluator, Expr, Value};

use crate::attr::{self, hold_code};
use crate::mutation::{Mutation, Txn};
use crate::queue::{check_name, int_attr, status_of, str_attr, Queue};
use crate::userlog::UserLogEvent;
use crate::{JobId, JobStatus, QueueError};

/// `JobUniverse` of a parallel-universe job.
const PARALLEL_UNIVERSE: i64 = 11;

/// A user action on jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `condor_hold`: Idle, Running or Suspended jobs become Held.
    Hold,
    /// `condor_release`: Held jobs become Idle.
    Release,
    /// `condor_rm`: jobs become Removed; those without a running process
    /// leave the queue at once (to the history), running ones when their
    /// process has ended.
    Remove,
    /// `condor_rm -forcex`: as `Remove`, but every selected job leaves the
    /// queue at once, including jobs already Removed and waiting for their
    /// process (the daemon stops any process left).
    RemoveForce,
}

impl Action {
    fn past(self) -> &'static str {
        match self {
            Action::Hold => "held",
            Action::Release => "released",
            Action::Remove => "marked for removal",
            Action::RemoveForce => "removed",
        }
    }
    fn verb(self) -> &'static str {
        match self {
            Action::Hold => "hold",
            Action::Release => "release",
            Action::Remove | Action::RemoveForce => "remove",
        }
    }
}

/// Which jobs a request names.
#[derive(Clone, Debug, PartialEq)]
pub enum Selector {
    /// Explicit job ids.
    Jobs(Vec<JobId>),
    /// Every job of a cluster.
    Cluster(u32),
    /// Every job of an owner.
    Owner(String),
    /// Every job for which the expression is true (a non-admin's own jobs
    /// only).
    Constraint(Expr),
    /// Every job (a non-admin's own jobs only).
    All,
    /// Several selectors at once (`condor_rm 1.0 2 alice`).
    Union(Vec<Selector>),
}

/// Who asks: the authenticated owner name, and whether they are a queue
/// administrator (HTCondor's queue super user).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub admin: bool,
}

impl Actor {
    pub fn user(name: &str) -> Actor {
        Actor {
            name: name.into(),
            admin: false,
        }
    }
    pub fn admin(name: &str) -> Actor {
        Actor {
            name: name.into(),
            admin: true,
        }
    }
}

/// One named target of a request, for reporting.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Job(JobId),
    Cluster(u32),
    Owner(String),
    /// The constraint's canonical text.
    Constraint(String),
    All,
}

/// What happened to one selected job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The action was taken.
    Done,
    /// The job's state does not allow the action (e.g. releasing a job that
    /// is not held, holding one that already is).
    WrongState(JobStatus),
}

/// One target with the jobs it selected; no jobs means none was found.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportEntry {
    pub target: Target,
    pub jobs: Vec<(JobId, Outcome)>,
}

/// Per-target, per-job outcome of [`Queue::plan_action`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActionReport {
    pub action: Action,
    pub entries: Vec<ReportEntry>,
}

impl ActionReport {
    /// The jobs the action was taken on (each once).
    pub fn done(&self) -> Vec<JobId> {
        let set: BTreeSet<JobId> = self
            .entries
            .iter()
            .flat_map(|e| e.jobs.iter())
            .filter(|(_, o)| *o == Outcome::Done)
            .map(|(id, _)| *id)
            .collect();
        set.into_iter().collect()
    }

    /// Every target was found and every selected job acted on.
    pub fn all_done(&self) -> bool {
        self.entries
            .iter()
            .all(|e| !e.jobs.is_empty() && e.jobs.iter().all(|(_, o)| *o == Outcome::Done))
    }

    /// The messages a command line tool prints, one per line.
    pub fn lines(&self) -> Vec<String> {
        let past = self.action.past();
        let mut out = Vec::new();
        for e in &self.entries {
            let failures: Vec<String> = e
                .jobs
                .iter()
                .filter_map(|(id, o)| match o {
                    Outcome::Done => None,
                    Outcome::WrongState(s) => Some(self.wrong_state(*id, *s)),
                })
                .collect();
            let all = !e.jobs.is_empty() && failures.is_empty();
            match &e.target {
                Target::Job(id) => match e.jobs.first() {
                    None => out.push(format!("Job {id} not found")),
                    Some((_, Outcome::Done)) => out.push(format!("Job {id} {past}")),
                    Some(_) => out.extend(failures),
                },
                other => {
                    let what = match other {
                        Target::Cluster(c) => format!("jobs in cluster {c}"),
                        Target::Owner(o) => format!("jobs of user {o}"),
                        Target::Constraint(c) => format!("jobs matching constraint ({c})"),
                        _ => "jobs".to_string(),
                    };
                    if e.jobs.is_empty() {
                        out.push(format!("No {what} found"));
                    } else if all {
                        out.push(format!("All {what} have been {past}"));
                    } else {
                        out.extend(failures);
                        out.push(format!(
                            "Could not {} all {what} ({} of {} {past})",
                            self.action.verb(),
                            e.jobs.len() - out_failures(e),
                            e.jobs.len()
                        ));
                    }
                }
            }
        }
        out
    }

    fn wrong_state(&self, id: JobId, s: JobStatus) -> String {
        match (self.action, s) {
            (Action::Hold, JobStatus::Held) => format!("Job {id} is already held"),
            (Action::Release, _) => format!("Job {id} is not held"),
            (Action::Remove, JobStatus::Removed) => {
                format!("Job {id} is already marked for removal")
            }
            _ => format!(
                "Job {id} cannot be {}: it is {}",
                self.action.past(),
                s.name().to_ascii_lowercase()
            ),
        }
    }
}

fn out_failures(e: &ReportEntry) -> usize {
    e.jobs.iter().filter(|(_, o)| *o != Outcome::Done).count()
}

/// Builds one transaction: state changes as attribute mutations and
/// events, jobs leaving, clusters emptied.
pub(crate) struct Planner<'q> {
    q: &'q Queue,
    pub(crate) txn: Txn,
    destroyed: BTreeSet<JobId>,
}

impl<'q> Planner<'q> {
    pub(crate) fn new(q: &'q Queue) -> Planner<'q> {
        Planner {
            q,
            txn: Txn::default(),
            destroyed: BTreeSet::new(),
        }
    }

    pub(crate) fn set(&mut self, id: JobId, name: &str, e: &Expr) {
        self.txn.mutations.push(Mutation::SetAttr {
            id,
            name: name.into(),
            value: classad::unparse(e),
        });
    }

    pub(crate) fn set_int(&mut self, id: JobId, name: &str, v: i64) {
        self.set(id, name, &Expr::int(v));
    }

    pub(crate) fn set_str(&mut self, id: JobId, name: &str, v: &str) {
        self.set(id, name, &Expr::string(v));
    }

    /// Deletes a proc attribute if the proc ad has it.
    pub(crate) fn delete(&mut self, id: JobId, ad: &ClassAd, name: &str) {
        if ad.lookup_own_sym(classad::intern(name)).is_some() {
            self.txn.mutations.push(Mutation::DeleteAttr {
                id,
                name: name.into(),
            });
        }
    }

    pub(crate) fn event(&mut self, id: JobId, e: UserLogEvent) {
        self.txn.events.push((id, e));
    }

    pub(crate) fn new_status(&mut self, id: JobId, ad: &ClassAd, to: JobStatus, now: i64) {
        self.set_int(id, attr::LAST_JOB_STATUS, status_of(ad).code());
        self.set_int(id, attr::JOB_STATUS, to.code());
        self.set_int(id, attr::ENTERED_CURRENT_STATUS, now);
        if status_of(ad) == JobStatus::TransferringOutput && to != JobStatus::TransferringOutput {
            self.set(id, crate::run::TRANSFERRING_OUTPUT, &Expr::boolean(false));
        }
    }

    /// Puts a job on hold.
    pub(crate) fn hold(
        &mut self,
        id: JobId,
        ad: &ClassAd,
        code: i64,
        subcode: i64,
        reason: &str,
        now: i64,
    ) {
        self.new_status(id, ad, JobStatus::Held, now);
        self.set_str(id, attr::HOLD_REASON, reason);
        self.set_int(id, attr::HOLD_REASON_CODE, code);
        self.set_int(id, attr::HOLD_REASON_SUBCODE, subcode);
        let n = int_attr(ad, attr::NUM_HOLDS).unwrap_or(0);
        self.set_int(id, attr::NUM_HOLDS, n.saturating_add(1));
        let mut by = match ad.lookup(attr::NUM_HOLDS_BY_REASON) {
            Some(Expr::Ad(a)) => a.flatten(),
            _ => ClassAd::new(),
        };
        let label = hold_code::label(code);
        let k = int_attr(&by, label).unwrap_or(0);
        by.insert_value(label, k.saturating_add(1));
        self.set(id, attr::NUM_HOLDS_BY_REASON, &Expr::Ad(by));
        self.event(
            id,
            UserLogEvent::Held {
                reason: reason.into(),
                code,
                subcode,
            },
        );
    }

    /// Releases a held job back to Idle.
    pub(crate) fn release(&mut self, id: JobId, ad: &ClassAd, reason: &str, now: i64) {
        self.new_status(id, ad, JobStatus::Idle, now);
        self.set_str(id, attr::RELEASE_REASON, reason);
        if let Some(r) = str_attr(ad, attr::HOLD_REASON) {
            self.set_str(id, attr::LAST_HOLD_REASON, &r);
        }
        if let Some(c) = int_attr(ad, attr::HOLD_REASON_CODE) {
            self.set_int(id, attr::LAST_HOLD_REASON_CODE, c);
        }
        if let Some(c) = int_attr(ad, attr::HOLD_REASON_SUBCODE) {
            self.set_int(id, attr::LAST_HOLD_REASON_SUBCODE, c);
        }
        for a in [
            attr::HOLD_REASON,
            attr::HOLD_REASON_CODE,
            attr::HOLD_REASON_SUBCODE,
        ] {
            self.delete(id, ad, a);
        }
        self.event(
            id,
            UserLogEvent::Released {
                reason: reason.into(),
            },
        );
    }

    /// Marks a job removed; it leaves the queue now unless its process
    /// is still running (and `force` is off).
    pub(crate) fn remove(&mut self, id: JobId, ad: &ClassAd, reason: &str, now: i64, force: bool) {
        let old = status_of(ad);
        if old != JobStatus::Removed {
            self.new_status(id, ad, JobStatus::Removed, now);
            self.set_str(id, attr::REMOVE_REASON, reason);
            self.event(
                id,
                UserLogEvent::Aborted {
                    reason: Some(reason.into()),
                },
            );
        }
        if force || !old.is_active() {
            self.destroy(id, true);
        }
    }

    pub(crate) fn destroy(&mut self, id: JobId, history: bool) {
        if self.destroyed.insert(id) {
            self.txn
                .mutations
                .push(Mutation::DestroyJob { id, history });
        }
    }

    /// The transaction, with the clusters whose last job left destroyed.
    pub(crate) fn finish(mut self) -> Txn {
        let clusters: BTreeSet<u32> = self.destroyed.iter().map(|id| id.cluster).collect();
        for c in clusters {
            if self
                .q
                .cluster_jobs(c)
                .all(|(id, _)| self.destroyed.contains(&id))
            {
                self.txn
                    .mutations
                    .push(Mutation::DestroyCluster { cluster: c });
            }
        }
        self.txn
    }
}

/// HTCondor's job-count limits on submissions (`None`: no limit). Every
/// job in the queue counts, whatever its state, as HTCondor counts them;
/// a submission that would break a limit is refused as a whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubmitLimits {
    /// `MAX_JOBS_SUBMITTED`: jobs in the whole queue.
    pub max_jobs_submitted: Option<u64>,
    /// `MAX_JOBS_PER_OWNER`: jobs of one owner in the queue.
    pub max_jobs_per_owner: Option<u64>,
    /// `MAX_JOBS_PER_SUBMISSION`: jobs in one submission.
    pub max_jobs_per_submission: Option<u64>,
}

/// Who submits, and the names and limits the schedd applies
/// ([`Queue::plan_submission`]).
#[derive(Clone, Debug, Default)]
pub struct SubmitContext<'a> {
    /// The authenticated owner.
    pub owner: &'a str,
    /// The submission time (Unix seconds).
    pub now: i64,
    /// The address the Submit event names.
    pub submit_host: &'a str,
    /// `UID_DOMAIN`: `User` is `owner@uid_domain`.
    pub uid_domain: Option<&'a str>,
    /// The schedd's name, the first part of `GlobalJobId`.
    pub schedd_name: Option<&'a str>,
    /// The submission's key, recorded as `SubmissionId`.
    pub submission_id: Option<&'a str>,
    /// The job-count limits.
    pub limits: SubmitLimits,
}

impl Queue {
    /// Refuses a submission of `n` jobs by `owner` that would break a
    /// limit, naming the limit and the numbers.
    fn check_limits(&self, n: usize, owner: &str, limits: &SubmitLimits) -> Result<(), QueueError> {
        let n = n as u64;
        if let Some(max) = limits.max_jobs_per_submission {
            if n > max {
                return Err(QueueError::LimitExceeded(format!(
                    "Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION: \
                     {n} jobs in one submission, the limit is {max}"
                )));
            }
        }
        if let Some(max) = limits.max_jobs_per_owner {
            let have = self.owner_job_count(owner) as u64;
            if have + n > max {
                return Err(QueueError::LimitExceeded(format!(
                    "Number of submitted jobs would exceed MAX_JOBS_PER_OWNER: \
                     {owner} has {have} jobs in the queue, this submission adds {n}, \
                     the limit is {max}"
                )));
            }
        }
        if let Some(max) = limits.max_jobs_submitted {
            let have = self.jobs.len() as u64;
            if have + n > max {
                return Err(QueueError::LimitExceeded(format!(
                    "Number of submitted jobs would exceed MAX_JOBS_SUBMITTED: \
                     the queue has {have} jobs, this submission adds {n}, the limit is {max}"
                )));
            }
        }
        Ok(())
    }

    /// Plans the submission of a cluster with no limits and no names beyond
    /// the owner: [`Queue::plan_submission`] with a default
    /// [`SubmitContext`].
    pub fn plan_submit(
        &self,
        cluster: u32,
        jobs: Vec<ClassAd>,
        owner: &str,
        now: i64,
        submit_host: &str,
    ) -> Result<Txn, QueueError> {
        let ctx = SubmitContext {
            owner,
            now,
            submit_host,
            ..SubmitContext::default()
        };
        self.plan_submission(cluster, jobs, &ctx)
    }

    /// Plans the submission of a cluster: `jobs` are the complete ads the
    /// submit language produced, in ProcId order. The cluster id must have
    /// been reserved ([`Queue::reserve_cluster_id`]) and not be in use.
    ///
    /// The whole submission is refused, nothing planned, when it would break
    /// one of `ctx.limits` (see [`SubmitLimits`]).
    ///
    /// The attributes the schedd owns ([`attr::SCHEDD_OWNED`]) are dropped
    /// from the submitted ads, whatever they said; then every job gets
    /// `ClusterId`, `ProcId`, `Owner` (the authenticated owner), `User`
    /// (`owner@uid_domain`, when the context has a UID domain), `GlobalJobId`
    /// (`schedd#cluster.proc#now`, when it has a schedd name),
    /// `SubmissionId` (when given), `MyType`, `TotalSubmitProcs`, `QDate` and
    /// `EnteredCurrentStatus` (`now`), and `JobStatus` Idle, or Held when
    /// the ad asks for Held (then `HoldReasonCode` 15, `HoldReasonSubCode` 0
    /// and a `HoldReason` unless given). Attributes identical in every job
    /// (except [`attr::PROC_ONLY`]) go to the cluster ad, the rest to the
    /// proc ads.
    ///
    /// Events: a Submit event per job, as HTCondor writes; a job submitted
    /// on hold gets no Held event (HTCondor writes none either).
    pub fn plan_submission(
        &self,
        cluster: u32,
        jobs: Vec<ClassAd>,
        ctx: &SubmitContext<'_>,
    ) -> Result<Txn, QueueError> {
        let (owner, now) = (ctx.owner, ctx.now);
        if cluster == 0 || cluster >= self.next_cluster {
            return Err(QueueError::Conflict(format!(
                "cluster id {cluster} was not reserved"
            )));
        }
        if self.clusters.contains_key(&cluster) {
            return Err(QueueError::Conflict(format!(
                "cluster id {cluster} is in use"
            )));
        }
        if jobs.is_empty() {
            return Err(QueueError::BadRequest("no jobs to submit".into()));
        }
        if owner.is_empty() {
            return Err(QueueError::BadRequest("empty owner".into()));
        }
        self.check_limits(jobs.len(), owner, &ctx.limits)?;
        let n = u32::try_from(jobs.len())
            .map_err(|_| QueueError::BadRequest("too many jobs".into()))?;
        let user = ctx.uid_domain.map(|d| format!("{owner}@{d}"));
        // Names are checked once per distinct parent and per own part; a
        // parent carrying attributes the schedd owns is replaced, once, by a
        // copy without them.
        let mut checked_parent: Option<(ClassAd, Option<ClassAd>)> = None;
        let mut full: Vec<ClassAd> = Vec::with_capacity(jobs.len());
        for (proc, mut ad) in (0..n).zip(jobs) {
            let held = int_attr(&ad, attr::JOB_STATUS) == Some(JobStatus::Held.code());
            if let Some(p) = ad.parent_ad() {
                if !checked_parent.as_ref().is_some_and(|(c, _)| c.same_ad(p)) {
                    for (name, _) in p.iter_chained() {
                        check_name(name.as_str())?;
                    }
                    let owned = p
                        .iter_chained()
                        .any(|(name, _)| attr::is_in(attr::SCHEDD_OWNED, name.as_str()));
                    let cleaned = owned.then(|| {
                        let mut c = p.flatten();
                        for name in attr::SCHEDD_OWNED {
                            c.remove(name);
                        }
                        c
                    });
                    checked_parent = Some((p.clone(), cleaned));
                }
                if let Some((_, Some(cleaned))) = &checked_parent {
                    ad.chain_to(cleaned.clone());
                }
            }
            for (name, _) in ad.iter() {
                check_name(name.as_str())?;
            }
            let owned: Vec<classad::Name> = ad
                .iter()
                .filter(|(name, _)| attr::is_in(attr::SCHEDD_OWNED, name.as_str()))
                .map(|(name, _)| name.clone())
                .collect();
            for name in owned {
                ad.remove(name.as_str());
            }
            ad.insert_value(attr::MY_TYPE, "Job");
            ad.insert_value(attr::CLUSTER_ID, cluster as i64);
            ad.insert_value(attr::PROC_ID, proc as i64);
            ad.insert_value(attr::OWNER, owner);
            if let Some(user) = &user {
                ad.insert_value(attr::USER, user.as_str());
            }
            if let Some(name) = ctx.schedd_name {
                ad.insert_value(
                    attr::GLOBAL_JOB_ID,
                    format!("{name}#{cluster}.{proc}#{now}").as_str(),
                );
            }
            if let Some(id) = ctx.submission_id {
                ad.insert_value(attr::SUBMISSION_ID, id);
            }
            ad.insert_value(attr::TOTAL_SUBMIT_PROCS, n as i64);
            ad.insert_value(attr::Q_DATE, now);
            ad.insert_value(attr::ENTERED_CURRENT_STATUS, now);
            if held {
                ad.insert_value(attr::JOB_STATUS, JobStatus::Held.code());
                if int_attr(&ad, attr::HOLD_REASON_CODE).is_none() {
                    ad.insert_value(attr::HOLD_REASON_CODE, hold_code::SUBMITTED_ON_HOLD);
                }
                if int_attr(&ad, attr::HOLD_REASON_SUBCODE).is_none() {
                    ad.insert_value(attr::HOLD_REASON_SUBCODE, 0i64);
                }
                if str_attr(&ad, attr::HOLD_REASON).is_none() {
                    ad.insert_value(attr::HOLD_REASON, "submitted on hold at user's request");
                }
            } else {
                ad.insert_value(attr::JOB_STATUS, JobStatus::Idle.code());
            }
            full.push(ad);
        }
        // Factor: the attributes equal in every job go to the cluster ad,
        // except those that belong to each job by nature.
        let (mut cluster_ad, mut owns) = ClassAd::factor_common(&full);
        // A parallel-universe cluster is one job: one submit event, for its
        // first proc (as condor_submit writes it).
        let one_event: Vec<bool> = full
            .iter()
            .map(|ad| int_attr(ad, "JobUniverse") == Some(PARALLEL_UNIVERSE))
            .collect();
        drop(full);
        let proc_only: Vec<(classad::Name, Expr)> = cluster_ad
            .iter()
            .filter(|(name, _)| attr::is_in(attr::PROC_ONLY, name.as_str()))
            .map(|(n, e)| (n.clone(), e.clone()))
            .collect();
        for (name, e) in &proc_only {
            cluster_ad.remove(name.as_str());
            for own in &mut owns {
                own.insert(name.clone(), e.clone());
            }
        }
        let mut txn = Txn::default();
        txn.mutations.push(Mutation::NewCluster {
            cluster,
            ad: cluster_ad.clone(),
        });
        for ((proc, own), parallel) in (0..n).zip(owns).zip(one_event) {
            let id = JobId::new(cluster, proc);
            txn.mutations.push(Mutation::NewJob { id, ad: own });
            if parallel && proc > 0 {
                continue;
            }
            txn.events.push((
                id,
                UserLogEvent::Submit {
                    host: ctx.submit_host.into(),
                },
            ));
        }
        Ok(txn)
    }

    /// Resolves a selection into report entries (jobs not yet judged),
    /// enforcing authorization: a non-admin naming another user's job,
    /// cluster or name is refused as a whole; their constraints and `All`
    /// only reach their own jobs.
    fn select(
        &self,
        sel: &Selector,
        who: &Actor,
        ev: &mut Evaluator,
        out: &mut Vec<(Target, Vec<JobId>)>,
    ) -> Result<(), QueueError> {
        let mine =
            |ad: &ClassAd| who.admin || str_attr(ad, attr::OWNER).as_deref() == Some(&who.name);
        let deny = |id: JobId, ad: &ClassAd| {
            QueueError::PermissionDenied(format!(
                "job {id} belongs to {}, not {}",
                str_attr(ad, attr::OWNER).unwrap_or_default(),
                who.name
            ))
        };
        match sel {
            Selector::Jobs(ids) => {
                for id in ids {
                    match self.jobs.get(id) {
                        Some(ad) if !mine(ad) => return Err(deny(*id, ad)),
                        Some(_) => out.push((Target::Job(*id), vec![*id])),
                        None => out.push((Target::Job(*id), vec![])),
                    }
                }
            }
            Selector::Cluster(c) => {
                let mut ids = Vec::new();
                for (id, ad) in self.cluster_jobs(*c) {
                    if !mine(ad) {
                        return Err(deny(id, ad));
                    }
                    ids.push(id);
                }
                out.push((Target::Cluster(*c), ids));
            }
            Selector::Owner(o) => {
                if !who.admin && *o != who.name {
                    return Err(QueueError::PermissionDenied(format!(
                        "{} may not act on the jobs of {o}",
                        who.name
                    )));
                }
                let ids = self
                    .jobs
                    .iter()
                    .filter(|(_, ad)| str_attr(ad, attr::OWNER).as_deref() == Some(o.as_str()))
                    .map(|(id, _)| *id)
                    .collect();
                out.push((Target::Owner(o.clone()), ids));
            }
            Selector::Constraint(e) => {
                let ids = self
                    .jobs
                    .iter()
                    .filter(|(_, ad)| mine(ad) && ev.eval(e, Some(ad), None).is_true())
                    .map(|(id, _)| *id)
                    .collect();
                out.push((Target::Constraint(classad::unparse(e)), ids));
            }
            Selector::All => {
                let ids = self
                    .jobs
                    .iter()
                    .filter(|(_, ad)| mine(ad))
                    .map(|(id, _)| *id)
                    .collect();
                out.push((Target::All, ids));
            }
            Selector::Union(v) => {
                for s in v {
                    self.select(s, who, ev, out)?;
                }
            }
        }
        Ok(())
    }

    /// Plans `condor_hold`, `condor_release` or `condor_rm` on the selected
    /// jobs. Authorization is all-or-nothing (see [`Selector`]); per-job
    /// state problems are reported, not errors.
    ///
    /// - Hold: Idle, Running, Suspended or TransferringOutput jobs become
    ///   Held with `HoldReasonCode` 1, subcode 0, and `HoldReason`
    ///   "`reason` (by user X)" or "via skua hold (by user X)"; a Held event.
    /// - Release: Held jobs become Idle; `ReleaseReason`, `LastHoldReason*`
    ///   kept, `HoldReason*` deleted; a Released event.
    /// - Remove: jobs not Removed or Completed become Removed with
    ///   `RemoveReason` and an Aborted event; those without a running
    ///   process leave the queue to the history. `RemoveForce` also makes
    ///   running and already Removed jobs leave at once.
    pub fn plan_action(
        &self,
        action: Action,
        sel: &Selector,
        who: &Actor,
        now: i64,
        reason: Option<&str>,
    ) -> Result<(Txn, ActionReport), QueueError> {
        let mut ev = evaluator(now);
        let mut targets = Vec::new();
        self.select(sel, who, &mut ev, &mut targets)?;
        let tool = match action {
            Action::Hold => "skua hold",
            Action::Release => "skua release",
            Action::Remove | Action::RemoveForce => "skua rm",
        };
        let text = match reason {
            Some(r) if !r.is_empty() => format!("{r} (by user {})", who.name),
            _ => format!("via {tool} (by user {})", who.name),
        };
        let mut p = Planner::new(self);
        let mut judged: BTreeMap<JobId, Outcome> = BTreeMap::new();
        let mut entries = Vec::new();
        for (target, ids) in targets {
            let mut jobs = Vec::new();
            for id in ids {
                let outcome = match judged.get(&id) {
                    Some(o) => *o,
                    None => {
                        let Some(ad) = self.jobs.get(&id) else {
                            continue;
                        };
                        let o = self.act(&mut p, action, id, ad, &text, now);
                        judged.insert(id, o);
                        o
                    }
                };
                jobs.push((id, outcome));
            }
            entries.push(ReportEntry { target, jobs });
        }
        Ok((p.finish(), ActionReport { action, entries }))
    }

    fn act(
        &self,
        p: &mut Planner<'_>,
        action: Action,
        id: JobId,
        ad: &ClassAd,
        reason: &str,
        now: i64,
    ) -> Outcome {
        let s = status_of(ad);
        match action {
            Action::Hold => match s {
                JobStatus::Idle
                | JobStatus::Running
                | JobStatus::Suspended
                | JobStatus::TransferringOutput => {
                    p.hold(id, ad, hold_code::USER_REQUEST, 0, reason, now);
                    Outcome::Done
                }
                _ => Outcome::WrongState(s),
            },
            Action::Release => {
                if s == JobStatus::Held {
                    p.release(id, ad, reason, now);
                    Outcome::Done
                } else {
                    Outcome::WrongState(s)
                }
            }
            Action::Remove => match s {
                JobStatus::Removed => Outcome::WrongState(s),
                // a completed job kept by LeaveJobInQueue just leaves
                JobStatus::Completed => {
                    p.destroy(id, true);
                    Outcome::Done
                }
                _ => {
                    p.remove(id, ad, reason, now, false);
                    Outcome::Done
                }
            },
            Action::RemoveForce => match s {
                JobStatus::Completed => {
                    p.destroy(id, true);
                    Outcome::Done
                }
                _ => {
                    p.remove(id, ad, reason, now, true);
                    Outcome::Done
                }
            },
        }
    }

    /// Plans `condor_qedit`: sets attribute `name` to the expression
    /// `value_expr_text` in every selected job; returns the transaction and
    /// the number of jobs changed. Attributes in [`attr::IMMUTABLE`] are
    /// refused for everyone, those in [`attr::PROTECTED`] for non-admins;
    /// a job id that is not in the queue is an error.
    pub fn plan_set_attr(
        &self,
        sel: &Selector,
        who: &Actor,
        name: &str,
        value_expr_text: &str,
        now: i64,
    ) -> Result<(Txn, usize), QueueError> {
        check_name(name)?;
        if attr::is_in(attr::IMMUTABLE, name) {
            return Err(QueueError::PermissionDenied(format!(
                "attribute {name} cannot be changed"
            )));
        }
        if !who.admin && attr::is_in(attr::PROTECTED, name) {
            return Err(QueueError::PermissionDenied(format!(
                "attribute {name} may only be changed by an administrator"
            )));
        }
        let expr = classad::parse_expr(value_expr_text)
            .map_err(|e| QueueError::BadRequest(format!("invalid expression: {e}")))?;
        let mut ev = evaluator(now);
        let mut targets = Vec::new();
        self.select(sel, who, &mut ev, &mut targets)?;
        let mut p = Planner::new(self);
        let mut done = BTreeSet::new();
        for (target, ids) in targets {
            if let (Target::Job(id), true) = (&target, ids.is_empty()) {
                return Err(QueueError::NotFound(format!("job {id}")));
            }
            for id in ids {
                if done.insert(id) {
                    p.set(id, name, &expr);
                }
            }
        }
        Ok((p.finish(), done.len()))
    }
}

/// An evaluator whose clock is `now` (UTC, default mode).
pub(crate) fn evaluator(now: i64) -> Evaluator {
    Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    })
}

/// A value as a number, if it is one (booleans count, as in HTCondor's
/// policy evaluation).
pub(crate) fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(_) | Value::Real(_) | Value::Bool(_) => v.as_real(),
        _ => None,
    }
}
