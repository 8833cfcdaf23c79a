//! `$$()` match-time substitution where the schedd starts a job on a slot
//! (the expansion itself is `skua_queue::matchsubst`, pure).
//!
//! The queue's job ad keeps its `$$(...)` text and gains the `MATCH_*`
//! records (and `LastMatchName*`); the ad the run works with (sent to the
//! startd and starter, and the shadow's copy for the job's files) has the
//! expanded values. An unresolvable `$$()` holds the job before it starts
//! (HTCondor's `Cannot expand $$ expression (<name>).`, code 0): it never
//! runs with the literal text, and the claim goes on to another job.

use classad::ClassAd;
use skua_queue::{expand_match, JobId, JobStatus, MatchExpansion};

use crate::store::Sync;
use crate::{Schedd, ScheddError};

impl Schedd {
    /// [`Schedd::start_run`] for a job matched to the slot `machine` (its
    /// ad; `None` if unknown): the ad to run with, `$$()` expanded, or
    /// `None` if the job is gone or was held because a `$$()` of it cannot
    /// be expanded.
    pub fn start_matched_run(
        &mut self,
        id: JobId,
        slot: &str,
        claim_id: &str,
        startd_addr: &str,
        machine: Option<&ClassAd>,
        now: i64,
    ) -> Result<Option<ClassAd>, ScheddError> {
        let Some(ad) = self.job_ad(id) else {
            return Ok(None);
        };
        let expansion = match expand_match(&ad, machine, now) {
            Ok(x) => x,
            Err(e) if self.queue().status(id) == Some(JobStatus::Idle) => {
                tracing::info!("job {id} held on {slot}: {e}");
                let txn = self.queue().plan_match_hold(id, &e, now)?;
                self.commit(txn, now)?;
                return Ok(None);
            }
            // not idle: `start_run` refuses it
            Err(_) => MatchExpansion::default(),
        };
        self.start_run(id, slot, claim_id, startd_addr, now)?;
        if !expansion.record.is_empty() {
            let txn = self.queue().plan_match_record(id, &expansion)?;
            self.commit_as(txn, now, Sync::Relaxed)?;
        }
        Ok(self.job_ad(id).map(|mut ad| {
            expansion.apply_to(&mut ad);
            ad
        }))
    }
}

/// The ad of a run found again after a restart (no machine ad): `$$()`
/// expanded from the values recorded at the match (`MATCH_EXP_*`,
/// `MATCH_*`); the queue's ad as it is if they do not suffice.
pub(crate) fn recorded_expansion(ad: &ClassAd, now: i64) -> ClassAd {
    match expand_match(ad, None, now) {
        Ok(x) => {
            let mut ad = ad.clone();
            x.apply_to(&mut ad);
            ad
        }
        Err(e) => {
            tracing::warn!("a reconnected run's job ad: {e}");
            ad.clone()
        }
    }
}
