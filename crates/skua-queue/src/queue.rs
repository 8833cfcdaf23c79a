//! The in-memory queue: cluster ads, chained proc ads, the next cluster id.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use classad::{ClassAd, Evaluator, Expr, Value};

use crate::attr;
use crate::mutation::{Mutation, Txn};
use crate::{JobId, JobStatus, QueueError};

/// The job queue. See the crate documentation for its invariants.
#[derive(Clone, Debug)]
pub struct Queue {
    pub(crate) clusters: BTreeMap<u32, ClassAd>,
    /// Proc ads, each chained to its cluster's ad.
    pub(crate) jobs: BTreeMap<JobId, ClassAd>,
    pub(crate) next_cluster: u32,
}

impl Default for Queue {
    fn default() -> Queue {
        Queue::new()
    }
}

/// Equal clusters, equal jobs (merged views, each chained to its own
/// cluster's ad), equal next cluster id.
impl PartialEq for Queue {
    fn eq(&self, other: &Queue) -> bool {
        self.next_cluster == other.next_cluster
            && self.clusters == other.clusters
            && self.jobs.len() == other.jobs.len()
            && self
                .jobs
                .iter()
                .zip(other.jobs.iter())
                .all(|((a, x), (b, y))| {
                    a == b
                        && x.iter().count() == y.iter().count()
                        && x.iter().all(|(n, e)| y.lookup_own_sym(n.sym()) == Some(e))
                        && x.parent_ad() == y.parent_ad()
                })
    }
}

/// Jobs of one owner by state, as a submitter ad advertises them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubmitterCounts {
    pub idle: u64,
    pub running: u64,
    pub held: u64,
    pub suspended: u64,
    pub transferring_output: u64,
    pub removed: u64,
    pub completed: u64,
}

impl SubmitterCounts {
    pub fn total(&self) -> u64 {
        self.idle
            + self.running
            + self.held
            + self.suspended
            + self.transferring_output
            + self.removed
            + self.completed
    }
}

/// Saved state of what a transaction touched, to undo it on failure.
#[derive(Default)]
struct Undo {
    clusters: HashMap<u32, Option<ClassAd>>,
    jobs: HashMap<JobId, Option<ClassAd>>,
    next_cluster: Option<u32>,
}

/// A literal integer attribute (through the chain).
pub fn int_attr(ad: &ClassAd, name: &str) -> Option<i64> {
    match ad.lookup(name)? {
        Expr::Lit(v) => v.as_int(),
        _ => None,
    }
}

/// A literal string attribute (through the chain).
pub fn str_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.lookup(name)? {
        Expr::Lit(v) => v.as_string(),
        _ => None,
    }
}

/// A job's status; a missing or unknown `JobStatus` reads as Idle.
pub(crate) fn status_of(ad: &ClassAd) -> JobStatus {
    int_attr(ad, attr::JOB_STATUS)
        .and_then(JobStatus::from_code)
        .unwrap_or(JobStatus::Idle)
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(_) | Value::Real(_) | Value::Bool(_) => v.as_real(),
        _ => None,
    }
}

impl Queue {
    pub fn new() -> Queue {
        Queue {
            clusters: BTreeMap::new(),
            jobs: BTreeMap::new(),
            next_cluster: 1,
        }
    }

    // ----- reading ------------------------------------------------------

    /// A job's ad (chained to its cluster ad).
    pub fn job(&self, id: JobId) -> Option<&ClassAd> {
        self.jobs.get(&id)
    }

    /// All jobs in id order.
    pub fn jobs(&self) -> impl Iterator<Item = (JobId, &ClassAd)> {
        self.jobs.iter().map(|(id, ad)| (*id, ad))
    }

    /// The jobs of one cluster in proc order.
    pub fn cluster_jobs(&self, cluster: u32) -> impl Iterator<Item = (JobId, &ClassAd)> {
        self.jobs
            .range(JobId::new(cluster, 0)..=JobId::new(cluster, u32::MAX))
            .map(|(id, ad)| (*id, ad))
    }

    pub fn cluster_ad(&self, cluster: u32) -> Option<&ClassAd> {
        self.clusters.get(&cluster)
    }

    /// The cluster ids in use.
    pub fn clusters(&self) -> impl Iterator<Item = u32> + '_ {
        self.clusters.keys().copied()
    }

    /// Number of jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// A job's status (None if the job is not in the queue).
    pub fn status(&self, id: JobId) -> Option<JobStatus> {
        self.jobs.get(&id).map(status_of)
    }

    /// The jobs for which `constraint` evaluates to true (all jobs without
    /// one), in id order.
    pub fn query<'a>(
        &'a self,
        ev: &mut Evaluator,
        constraint: Option<&Expr>,
    ) -> Vec<(JobId, &'a ClassAd)> {
        self.jobs
            .iter()
            .filter(|(_, ad)| constraint.is_none_or(|c| ev.eval(c, Some(ad), None).is_true()))
            .map(|(id, ad)| (*id, ad))
            .collect()
    }

    /// The order in which the schedd offers its idle jobs (of `owner`, if
    /// given): `JobPrio` descending (missing = 0), then `rank_expr`
    /// (evaluated with the job as MY; higher first, a non-number after every
    /// number), then `QDate`, `ClusterId`, `ProcId` ascending.
    pub fn idle_jobs_in_order(
        &self,
        ev: &mut Evaluator,
        owner: Option<&str>,
        rank_expr: Option<&Expr>,
    ) -> Vec<JobId> {
        let mut rows: Vec<(i64, Option<f64>, i64, JobId)> = self
            .jobs
            .iter()
            .filter(|(_, ad)| status_of(ad) == JobStatus::Idle)
            // the schedd runs these itself: never matched
            .filter(|(_, ad)| !crate::local::runs_on_submit_host(ad))
            .filter(|(_, ad)| owner.is_none_or(|o| str_attr(ad, attr::OWNER).as_deref() == Some(o)))
            .map(|(id, ad)| {
                let prio = match ev.eval_attr(attr::JOB_PRIO, ad, None) {
                    Value::Int(i) => i,
                    Value::Real(r) => r as i64,
                    _ => 0,
                };
                let rank = rank_expr
                    .and_then(|e| number(&ev.eval(e, Some(ad), None)))
                    .filter(|r| !r.is_nan());
                let qdate = int_attr(ad, attr::Q_DATE).unwrap_or(0);
                (prio, rank, qdate, *id)
            })
            .collect();
        rows.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| match (a.1, b.1) {
                    (Some(x), Some(y)) => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                })
                .then(a.2.cmp(&b.2))
                .then(a.3.cmp(&b.3))
        });
        rows.into_iter().map(|r| r.3).collect()
    }

    /// The number of jobs of `owner` in the queue, whatever their state.
    pub fn owner_job_count(&self, owner: &str) -> usize {
        self.jobs
            .values()
            .filter(|ad| match ad.lookup(attr::OWNER) {
                Some(Expr::Lit(Value::Str(s))) => s.as_ref() == owner.as_bytes(),
                _ => false,
            })
            .count()
    }

    /// Job counts by owner and state.
    pub fn submitter_counts(&self) -> BTreeMap<String, SubmitterCounts> {
        let mut out: BTreeMap<String, SubmitterCounts> = BTreeMap::new();
        for ad in self.jobs.values() {
            let owner = str_attr(ad, attr::OWNER).unwrap_or_default();
            let c = out.entry(owner).or_default();
            match status_of(ad) {
                JobStatus::Idle => c.idle += 1,
                JobStatus::Running => c.running += 1,
                JobStatus::Held => c.held += 1,
                JobStatus::Suspended => c.suspended += 1,
                JobStatus::TransferringOutput => c.transferring_output += 1,
                JobStatus::Removed => c.removed += 1,
                JobStatus::Completed => c.completed += 1,
            }
        }
        out
    }

    // ----- cluster ids --------------------------------------------------

    /// The id the next reservation hands out.
    pub fn next_cluster_id(&self) -> u32 {
        self.next_cluster
    }

    /// Reserves the id [`Queue::next_cluster_id`] for a submission: commit
    /// the returned transaction, then submit with that id.
    pub fn reserve_cluster_id(&self) -> Txn {
        Txn {
            mutations: vec![Mutation::SetNextClusterId(
                self.next_cluster.saturating_add(1),
            )],
            events: Vec::new(),
        }
    }

    // ----- recovery fast path -------------------------------------------

    /// Loads a stored cluster ad (recovery); jobs already loaded for it are
    /// chained to it.
    pub fn load_cluster(&mut self, cluster: u32, ad: ClassAd) {
        for (_, job) in self
            .jobs
            .range_mut(JobId::new(cluster, 0)..=JobId::new(cluster, u32::MAX))
        {
            job.chain_to(ad.clone());
        }
        self.clusters.insert(cluster, ad);
    }

    /// Loads a stored proc ad (recovery), chained to its cluster's ad if
    /// that is loaded already (else when it is).
    pub fn load_job(&mut self, id: JobId, mut ad: ClassAd) {
        match self.clusters.get(&id.cluster) {
            Some(c) => ad.chain_to(c.clone()),
            None => ad.unchain(),
        }
        self.jobs.insert(id, ad);
    }

    pub fn set_next_cluster_id(&mut self, n: u32) {
        self.next_cluster = n;
    }

    // ----- applying -----------------------------------------------------

    /// Applies a transaction's mutations in order, wholly or not at all:
    /// on an error the queue is left as it was.
    pub fn apply(&mut self, mutations: &[Mutation]) -> Result<(), QueueError> {
        let mut undo = Undo::default();
        for m in mutations {
            if let Err(e) = self.apply_one(m, &mut undo) {
                self.rollback(undo);
                return Err(e);
            }
        }
        Ok(())
    }

    fn rollback(&mut self, undo: Undo) {
        for (c, old) in undo.clusters {
            match old {
                Some(ad) => self.clusters.insert(c, ad),
                None => self.clusters.remove(&c),
            };
        }
        for (id, old) in undo.jobs {
            match old {
                Some(ad) => self.jobs.insert(id, ad),
                None => self.jobs.remove(&id),
            };
        }
        if let Some(n) = undo.next_cluster {
            self.next_cluster = n;
        }
    }

    fn save_job(&self, undo: &mut Undo, id: JobId) {
        undo.jobs
            .entry(id)
            .or_insert_with(|| self.jobs.get(&id).cloned());
    }

    fn save_cluster(&self, undo: &mut Undo, c: u32) {
        undo.clusters
            .entry(c)
            .or_insert_with(|| self.clusters.get(&c).cloned());
    }

    fn job_mut(&mut self, id: JobId) -> Result<&mut ClassAd, QueueError> {
        self.jobs
            .get_mut(&id)
            .ok_or_else(|| QueueError::NotFound(format!("job {id}")))
    }

    fn apply_one(&mut self, m: &Mutation, undo: &mut Undo) -> Result<(), QueueError> {
        match m {
            Mutation::NewCluster { cluster, ad } => {
                if self.clusters.contains_key(cluster) {
                    return Err(QueueError::Conflict(format!(
                        "cluster {cluster} already exists"
                    )));
                }
                self.save_cluster(undo, *cluster);
                let mut ad = ad.clone();
                ad.unchain();
                self.clusters.insert(*cluster, ad);
            }
            Mutation::NewJob { id, ad } => {
                if self.jobs.contains_key(id) {
                    return Err(QueueError::Conflict(format!("job {id} already exists")));
                }
                let cluster = self
                    .clusters
                    .get(&id.cluster)
                    .ok_or_else(|| QueueError::NotFound(format!("cluster {}", id.cluster)))?
                    .clone();
                self.save_job(undo, *id);
                let mut ad = ad.clone();
                ad.chain_to(cluster);
                self.jobs.insert(*id, ad);
            }
            Mutation::SetAttr { id, name, value } => {
                let expr = classad::parse_expr(value).map_err(|e| {
                    QueueError::BadRequest(format!("attribute {name}: invalid expression: {e}"))
                })?;
                check_name(name)?;
                self.save_job(undo, *id);
                self.job_mut(*id)?.insert(name.as_str(), expr);
            }
            Mutation::DeleteAttr { id, name } => {
                self.save_job(undo, *id);
                self.job_mut(*id)?.remove(name);
            }
            Mutation::DestroyJob { id, .. } => {
                if !self.jobs.contains_key(id) {
                    return Err(QueueError::NotFound(format!("job {id}")));
                }
                self.save_job(undo, *id);
                self.jobs.remove(id);
            }
            Mutation::DestroyCluster { cluster } => {
                if !self.clusters.contains_key(cluster) {
                    return Err(QueueError::NotFound(format!("cluster {cluster}")));
                }
                if self.cluster_jobs(*cluster).next().is_some() {
                    return Err(QueueError::Conflict(format!(
                        "cluster {cluster} still has jobs"
                    )));
                }
                self.save_cluster(undo, *cluster);
                self.clusters.remove(cluster);
            }
            Mutation::SetNextClusterId(n) => {
                undo.next_cluster.get_or_insert(self.next_cluster);
                self.next_cluster = *n;
            }
        }
        Ok(())
    }
}

/// Attribute names: an identifier (letters, digits, `_`, not starting with
/// a digit), as the store and the old ClassAd syntax need.
pub(crate) fn check_name(name: &str) -> Result<(), QueueError> {
    let ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(QueueError::BadRequest(format!(
            "invalid attribute name `{name}`"
        )))
    }
}
