//! Jobs that run on the submit host under the schedd: the scheduler
//! universe (`JobUniverse = 7`) and the local universe (`JobUniverse = 12`).
//!
//! The negotiator never sees them (they are left out of
//! [`Queue::idle_jobs_in_order`], hence out of every resource request).
//! The schedd starts them itself, each `SCHEDD_INTERVAL`, when its start
//! test passes ([`may_start`]): first `START_SCHEDULER_UNIVERSE` (HTCondor's
//! default `TotalSchedulerJobsRunning < 500`) or `START_LOCAL_UNIVERSE`
//! (`TotalLocalJobsRunning < 200`) evaluated in the schedd's own ad with
//! the running counts, then the job's `Requirements` against that ad
//! (the Scheduler ad as TARGET; anything but `true` means no start).
//! They do not count towards `MAX_JOBS_RUNNING` and are never preempted.

use classad::{ClassAd, Evaluator, Expr, Value};

use crate::queue::{int_attr, status_of};
use crate::{JobId, JobStatus, Queue};

/// HTCondor's `JobUniverse` of the scheduler universe.
pub const SCHEDULER_UNIVERSE: i64 = 7;
/// HTCondor's `JobUniverse` of the local universe.
pub const LOCAL_UNIVERSE: i64 = 12;

/// The Scheduler-ad attribute that counts running scheduler-universe jobs.
pub const TOTAL_SCHEDULER_JOBS_RUNNING: &str = "TotalSchedulerJobsRunning";
/// The Scheduler-ad attribute that counts running local-universe jobs.
pub const TOTAL_LOCAL_JOBS_RUNNING: &str = "TotalLocalJobsRunning";
/// HTCondor's default `START_SCHEDULER_UNIVERSE`.
pub const DEFAULT_START_SCHEDULER_UNIVERSE: &str = "TotalSchedulerJobsRunning < 500";
/// HTCondor's default `START_LOCAL_UNIVERSE`.
pub const DEFAULT_START_LOCAL_UNIVERSE: &str = "TotalLocalJobsRunning < 200";

/// Which of the two submit-host universes a job belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubmitHostUniverse {
    /// `universe = scheduler`: the schedd runs the program directly.
    Scheduler,
    /// `universe = local`.
    Local,
}

impl SubmitHostUniverse {
    /// The universe's name as a submit file spells it.
    pub fn name(self) -> &'static str {
        match self {
            SubmitHostUniverse::Scheduler => "scheduler",
            SubmitHostUniverse::Local => "local",
        }
    }
}

/// The submit-host universe of `ad`, or `None` for a job the negotiator
/// matches.
pub fn submit_host_universe(ad: &ClassAd) -> Option<SubmitHostUniverse> {
    match int_attr(ad, "JobUniverse") {
        Some(SCHEDULER_UNIVERSE) => Some(SubmitHostUniverse::Scheduler),
        Some(LOCAL_UNIVERSE) => Some(SubmitHostUniverse::Local),
        _ => None,
    }
}

/// Whether `ad` runs on the submit host (never matched by the negotiator).
pub fn runs_on_submit_host(ad: &ClassAd) -> bool {
    submit_host_universe(ad).is_some()
}

/// How many submit-host jobs run now, by universe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubmitHostRunning {
    /// `TotalSchedulerJobsRunning`.
    pub scheduler: u64,
    /// `TotalLocalJobsRunning`.
    pub local: u64,
}

impl SubmitHostRunning {
    /// Puts the counts in `ad` (the Scheduler ad) under HTCondor's names.
    pub fn insert_into(&self, ad: &mut ClassAd) {
        ad.insert_value(TOTAL_SCHEDULER_JOBS_RUNNING, self.scheduler as i64);
        ad.insert_value(TOTAL_LOCAL_JOBS_RUNNING, self.local as i64);
    }
}

impl Queue {
    /// The idle scheduler- and local-universe jobs, in queue order
    /// (cluster, then proc).
    pub fn submit_host_idle(&self) -> Vec<(JobId, SubmitHostUniverse)> {
        self.jobs()
            .filter(|(_, ad)| status_of(ad) == JobStatus::Idle)
            .filter_map(|(id, ad)| submit_host_universe(ad).map(|u| (id, u)))
            .collect()
    }

    /// How many scheduler- and local-universe jobs are running.
    pub fn submit_host_running(&self) -> SubmitHostRunning {
        let mut n = SubmitHostRunning::default();
        for (_, ad) in self.jobs() {
            if !status_of(ad).is_active() {
                continue;
            }
            match submit_host_universe(ad) {
                Some(SubmitHostUniverse::Scheduler) => n.scheduler += 1,
                Some(SubmitHostUniverse::Local) => n.local += 1,
                None => {}
            }
        }
        n
    }
}

/// The start test of one submit-host job: `start` (the universe's
/// `START_*_UNIVERSE` expression) evaluated in `schedd_ad` (which carries
/// the running counts, see [`SubmitHostRunning::insert_into`]) must be
/// `true`, then the job's `Requirements` with the job as MY and
/// `schedd_ad` as TARGET must be `true` too (undefined or an error means
/// no start, as in HTCondor).
pub fn may_start(ev: &mut Evaluator, start: &Expr, schedd_ad: &ClassAd, job: &ClassAd) -> bool {
    if !matches!(
        ev.eval(start, Some(schedd_ad), Some(job)),
        Value::Bool(true)
    ) {
        return false;
    }
    matches!(
        ev.eval_attr("Requirements", job, Some(schedd_ad)),
        Value::Bool(true)
    )
}
