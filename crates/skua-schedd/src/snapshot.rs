//! Read-only views of the job queue for the queue tools (`skua q`).
//!
//! A query never runs on the queue's owner thread (`shared.rs`) beyond
//! handing in its request: the owner answers with an immutable
//! [`Snapshot`] (shared handles to the job ads, which are copy-on-write,
//! and the clusters' submitted counts), built at most once per batch of
//! operations and only when some query asked for it. Everything a query
//! does with it (the constraint, the projection, the batch rows, the
//! status counts) runs on a blocking thread. A snapshot is taken between
//! two operations, so a query sees every change acknowledged before it
//! was asked and never half of one (a job is never both idle and
//! completed, the counts add up).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use classad::ClassAd;
use skua_queue::{int_attr, JobId};

use crate::schedd::{batch_rows, job_status_code, JobFilter, Schedd};

/// The queue as it was between two operations.
#[derive(Debug)]
pub(crate) struct Snapshot {
    /// Every job, in job-id order.
    jobs: Vec<(JobId, ClassAd)>,
    /// `TotalSubmitProcs` of each cluster with a job in the queue.
    submitted: HashMap<u32, i64>,
    /// The jobs by `JobStatus` code, counted by the first query that asks.
    counts: OnceLock<Vec<u64>>,
}

impl Snapshot {
    /// The snapshot of `schedd`'s queue now (on the owner: handles only).
    pub(crate) fn of(schedd: &Schedd) -> Snapshot {
        let queue = schedd.queue();
        let jobs: Vec<(JobId, ClassAd)> = queue.jobs().map(|(id, ad)| (id, ad.clone())).collect();
        let mut submitted = HashMap::new();
        let mut last = None;
        for (id, _) in &jobs {
            if last == Some(id.cluster) {
                continue;
            }
            last = Some(id.cluster);
            let total = queue
                .cluster_ad(id.cluster)
                .and_then(|a| int_attr(a, "TotalSubmitProcs"))
                .unwrap_or(0);
            submitted.insert(id.cluster, total);
        }
        Snapshot {
            jobs,
            submitted,
            counts: OnceLock::new(),
        }
    }

    /// The number of jobs.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    /// The jobs of one cluster (a range of the id-ordered jobs).
    fn cluster(&self, cluster: u32) -> &[(JobId, ClassAd)] {
        let lo = self.jobs.partition_point(|(id, _)| id.cluster < cluster);
        let hi = self.jobs.partition_point(|(id, _)| id.cluster <= cluster);
        &self.jobs[lo..hi]
    }

    /// The jobs the named parts of `filter` (ids, clusters, owners)
    /// select, as shared handles, in job-id order; its constraint is not
    /// evaluated. Ids and clusters alone are found by search, so the cost
    /// is that of what they name.
    pub(crate) fn candidates(&self, filter: &JobFilter) -> Vec<(JobId, ClassAd)> {
        if filter.owners.is_empty() && !(filter.ids.is_empty() && filter.clusters.is_empty()) {
            let mut out: Vec<(JobId, ClassAd)> = Vec::new();
            for &c in &filter.clusters {
                out.extend(self.cluster(c).iter().cloned());
            }
            for &id in &filter.ids {
                if let Ok(i) = self.jobs.binary_search_by_key(&id, |(j, _)| *j) {
                    out.push(self.jobs[i].clone());
                }
            }
            out.sort_by_key(|(id, _)| *id);
            out.dedup_by_key(|(id, _)| *id);
            return out;
        }
        self.jobs
            .iter()
            .filter(|(id, ad)| filter.named(*id, ad))
            .cloned()
            .collect()
    }

    /// Every job by `JobStatus` code (index 0..=7).
    pub(crate) fn status_counts(&self) -> Vec<u64> {
        self.counts
            .get_or_init(|| {
                let mut counts = vec![0u64; 8];
                for (_, ad) in &self.jobs {
                    if let Some(c) = usize::try_from(job_status_code(ad))
                        .ok()
                        .and_then(|i| counts.get_mut(i))
                    {
                        *c += 1;
                    }
                }
                counts
            })
            .clone()
    }

    /// condor_q's batch rows of the jobs `selected` (taken from this
    /// snapshot, in job-id order).
    pub(crate) fn batches_of(&self, selected: &[(JobId, ClassAd)]) -> Vec<skua_proto::BatchRow> {
        batch_rows(selected.iter().map(|(id, ad)| (*id, ad)), |c| {
            self.submitted.get(&c).copied().unwrap_or(0)
        })
    }
}

/// What the owner keeps for the snapshots: the latest one while no
/// operation ran since it was taken, and the queries waiting for one.
#[derive(Default)]
pub(crate) struct Snapshots {
    /// Dropped by the next operation, so that the owner does not copy the
    /// ads it changes because a stale snapshot still shares them.
    latest: Option<Arc<Snapshot>>,
    /// Queries waiting for the snapshot at the end of this batch.
    waiting: Vec<tokio::sync::oneshot::Sender<Arc<Snapshot>>>,
}

impl Snapshots {
    /// An operation other than a snapshot request ran.
    pub(crate) fn touched(&mut self) {
        self.latest = None;
    }

    /// A query asks: answered now when nothing changed since the latest
    /// snapshot, else at the end of the batch ([`Snapshots::publish`]).
    pub(crate) fn ask(&mut self, reply: tokio::sync::oneshot::Sender<Arc<Snapshot>>) {
        match &self.latest {
            Some(s) => {
                let _ = reply.send(s.clone());
            }
            None => self.waiting.push(reply),
        }
    }

    /// True when a query waits for a snapshot.
    pub(crate) fn wanted(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Takes one snapshot of `schedd` for every query waiting.
    pub(crate) fn publish(&mut self, schedd: &Schedd) {
        if self.waiting.is_empty() {
            return;
        }
        let snap = Arc::new(Snapshot::of(schedd));
        self.latest = Some(snap.clone());
        for w in self.waiting.drain(..) {
            let _ = w.send(snap.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use skua_queue::{Action, Actor, JobId, Selector};

    use super::*;
    use crate::schedd::{Schedd, ScheddSettings};
    use crate::shared::QueueOwner;

    const JOBS: u32 = 60;

    fn owner_with_jobs(dir: &std::path::Path) -> (QueueOwner, u32) {
        let settings = ScheddSettings {
            submit_host: "<127.0.0.1:9618>".into(),
            ..ScheddSettings::default()
        };
        let mut schedd = Schedd::open(&dir.join("job_queue.db"), settings).expect("schedd");
        let c = schedd.new_cluster(1).expect("cluster");
        let ads = (0..JOBS)
            .map(|p| {
                classad::parse_ad(&format!(
                    "[ Cmd = \"/bin/true\"; JobStatus = 1; ProcId = {p}; JobUniverse = 5; \
                       Iwd = \"/tmp\" ]"
                ))
                .expect("ad")
            })
            .collect();
        schedd.submit("ann", c, ads, 1).expect("submitted");
        (QueueOwner::start(schedd).expect("owner"), c)
    }

    /// Runs `action` on job `id` on the owner and waits for its answer.
    fn act(owner: &QueueOwner, action: Action, id: JobId) {
        let (tx, rx) = std::sync::mpsc::channel();
        owner.send(move |q| {
            let r = q.schedd.act(
                action,
                &Selector::Jobs(vec![id]),
                &Actor::user("ann"),
                None,
                2,
            );
            let _ = tx.send(r.map(|_| ()));
        });
        rx.recv().expect("answer").expect("acted");
    }

    fn take(owner: &QueueOwner) -> Arc<Snapshot> {
        owner
            .ask_snapshot()
            .expect("asked")
            .blocking_recv()
            .expect("snapshot")
    }

    /// Each job's status code in `snap`.
    fn statuses(snap: &Snapshot) -> HashMap<JobId, i64> {
        snap.jobs
            .iter()
            .map(|(id, ad)| (*id, job_status_code(ad)))
            .collect()
    }

    #[test]
    fn a_snapshot_taken_during_a_burst_of_changes_is_one_consistent_view() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (owner, c) = owner_with_jobs(dir.path());
        // every job is held, then removed (it leaves the queue), one
        // operation each, while snapshots are asked for all along
        let burst = {
            let owner = owner.clone();
            std::thread::spawn(move || {
                for p in 0..JOBS {
                    act(&owner, Action::Hold, JobId::new(c, p));
                    act(&owner, Action::Remove, JobId::new(c, p));
                }
            })
        };
        let mut views = Vec::new();
        while !burst.is_finished() {
            views.push(take(&owner));
        }
        burst.join().expect("burst");
        views.push(take(&owner));
        assert!(views.len() >= 2, "some snapshots were taken");
        let mut left: Option<u32> = None;
        for snap in &views {
            let st = statuses(snap);
            // the counts add up, and agree with the jobs the view holds
            let counts = snap.status_counts();
            assert_eq!(counts.iter().sum::<u64>() as usize, snap.len());
            for code in 1..=7 {
                let n = st.values().filter(|s| **s == code).count() as u64;
                assert_eq!(counts[code as usize], n, "status {code}");
            }
            // the batch rows count each job once, by the same status
            let all = snap.candidates(&JobFilter::default());
            let rows = snap.batches_of(&all);
            let in_rows: u64 = rows
                .iter()
                .map(|r| r.idle + r.running + r.held + r.removed + r.completed + r.suspended)
                .sum();
            assert_eq!(in_rows as usize, snap.len());
            // jobs leave in order: the jobs still here are a suffix, the
            // first of them possibly held, every later one idle
            let procs: Vec<u32> = snap.jobs.iter().map(|(id, _)| id.proc).collect();
            let first = procs.first().copied().unwrap_or(JOBS);
            assert_eq!(procs, (first..JOBS).collect::<Vec<_>>());
            for (id, s) in &st {
                let expect_idle = id.proc > first;
                assert!(
                    if expect_idle {
                        *s == 1
                    } else {
                        *s == 1 || *s == 5
                    },
                    "job {id:?} has status {s} in a view starting at proc {first}"
                );
            }
            // a later view never brings back a job that left
            if let Some(l) = left {
                assert!(first >= l, "a job came back: {first} after {l}");
            }
            left = Some(first);
            // the cluster filter finds the same jobs by search
            let by_cluster = snap.candidates(&JobFilter {
                clusters: vec![c],
                ..JobFilter::default()
            });
            assert_eq!(by_cluster.len(), snap.len());
        }
        assert_eq!(views.last().map(|s| s.len()), Some(0), "every job left");
    }

    #[test]
    fn a_snapshot_shows_every_change_acknowledged_before_it_was_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (owner, c) = owner_with_jobs(dir.path());
        let before = take(&owner);
        act(&owner, Action::Hold, JobId::new(c, 3));
        let after = take(&owner);
        assert_eq!(statuses(&before)[&JobId::new(c, 3)], 1);
        assert_eq!(statuses(&after)[&JobId::new(c, 3)], 5);
        // with no operation in between, the same snapshot is shared
        let again = take(&owner);
        assert!(Arc::ptr_eq(&after, &again));
        // a named job is found by search; a missing one is not invented
        let named = after.candidates(&JobFilter {
            ids: vec![JobId::new(c, 3), JobId::new(c, JOBS + 5)],
            ..JobFilter::default()
        });
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].0, JobId::new(c, 3));
    }
}
