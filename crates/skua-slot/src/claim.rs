//! The claim protocol: match notices, preempting matches, claims (with the
//! carving of partitionable slots), activations, deactivations, releases,
//! keep-alives and claim leases; and the checks a claim must pass.

use std::collections::BTreeMap;

use classad::{ClassAd, Value};

use crate::machine::{evaluator, Machine, Slot, SlotKind};
use crate::state::{Action, Event, State, Status};

/// A job running under a claim.
#[derive(Clone, Debug)]
pub struct RunningJob {
    pub job_ad: ClassAd,
    /// `"C.P"`.
    pub job_id: String,
    pub shadow_addr: String,
    pub started: i64,
}

/// A match or a claim on a slot.
#[derive(Clone, Debug)]
pub struct Claim {
    pub id: String,
    /// `user@uiddomain`.
    pub submitter: String,
    pub schedd_addr: String,
    pub matched_at: i64,
    /// When the schedd claimed it (`None`: only matched).
    pub claimed_at: Option<i64>,
    /// The job ad of the claim or of the last activation.
    pub job_ad: Option<ClassAd>,
    pub job: Option<RunningJob>,
    /// When the claim's schedd last renewed its lease (claimed it,
    /// activated it, sent a keep-alive).
    pub renewed: i64,
    /// The keep-alive interval the schedd announced when it claimed the
    /// slot (seconds; 0: none, `ALIVE_INTERVAL` applies).
    pub alive_interval: i64,
}

impl Claim {
    /// A match the negotiator just made, not yet claimed.
    fn matched(id: &str, submitter: &str, schedd_addr: &str, now: i64) -> Claim {
        Claim {
            id: id.to_string(),
            submitter: submitter.to_string(),
            schedd_addr: schedd_addr.to_string(),
            matched_at: now,
            claimed_at: None,
            job_ad: None,
            job: None,
            renewed: now,
            alive_interval: 0,
        }
    }
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No such slot or claim id.
    NotFound(String),
    /// The slot's state or policy does not allow it (a stale match).
    Conflict(String),
    /// The request itself is malformed.
    BadRequest(String),
    /// Not yet: ask again later (a claim for a slot still being preempted).
    Unavailable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotFound(m)
            | Refusal::Conflict(m)
            | Refusal::BadRequest(m)
            | Refusal::Unavailable(m) => f.write_str(m),
        }
    }
}

/// What the daemon needs to start a starter.
#[derive(Clone, Debug)]
pub struct Launch {
    pub slot: String,
    pub slot_ad: ClassAd,
    pub max_vacate_secs: i64,
}

/// Compares two claim ids in time that does not depend on where they
/// differ.
pub fn claim_ids_equal(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A claim id the negotiator hands out has at least 16 characters.
fn check_claim_id(claim_id: &str) -> Result<(), Refusal> {
    if claim_id.len() < 16 {
        return Err(Refusal::BadRequest(
            "a claim id has at least 16 characters".into(),
        ));
    }
    Ok(())
}

/// The job's `RequestCpus`, `RequestMemory` (MB) and `RequestDisk` (KB),
/// evaluated in the job ad with the slot as TARGET, rounded up to
/// integers; a missing or non-numeric request counts as 1.
pub fn job_requests(job_ad: &ClassAd, slot_ad: &ClassAd, now: i64) -> (i64, i64, i64) {
    let mut ev = evaluator(now);
    let mut get = |name: &str| -> i64 {
        match ev.eval_attr(name, job_ad, Some(slot_ad)) {
            Value::Int(i) => i.max(1),
            Value::Real(r) if r.is_finite() => (r.ceil() as i64).max(1),
            _ => 1,
        }
    };
    (get("RequestCpus"), get("RequestMemory"), get("RequestDisk"))
}

/// Whether `slot_ad` accepts `job_ad` now: START (slot as MY, job as
/// TARGET) is true, both Requirements hold, and for a partitionable slot
/// the job's requests fit in what it has left. `Err` says why not.
pub fn check_claim(slot_ad: &ClassAd, job_ad: &ClassAd, now: i64) -> Result<(), String> {
    let mut ev = evaluator(now);
    let start = ev.eval_attr("Start", slot_ad, Some(job_ad));
    if !start.is_true() {
        return Err(format!("the slot's START is {start:?} for this job"));
    }
    let m = classad::symmetric_match(&mut ev, job_ad, slot_ad);
    if !m.job_requirements_ok {
        return Err("the job's Requirements do not hold against the slot".into());
    }
    if !m.machine_requirements_ok {
        return Err("the slot's Requirements do not hold against the job".into());
    }
    if ev.eval_attr("PartitionableSlot", slot_ad, None).is_true() {
        let (c, m, d) = job_requests(job_ad, slot_ad, now);
        let mut have = |n: &str| ev.eval_attr(n, slot_ad, None).as_int().unwrap_or(0);
        let (hc, hm, hd) = (have("Cpus"), have("Memory"), have("Disk"));
        if c > hc || m > hm || d > hd {
            return Err(format!(
                "the job asks for {c} CPUs, {m} MB, {d} KB; the slot has {hc} CPUs, {hm} MB, {hd} KB left"
            ));
        }
    }
    Ok(())
}

impl Machine {
    /// The slot holding claim `id` (claimed or matched), or the
    /// partitionable slot with a pending match of that id.
    fn find_claim(&self, id: &str) -> Option<(usize, bool)> {
        let mut found = None;
        for (i, s) in self.slots.iter().enumerate() {
            if s.claim.as_ref().is_some_and(|c| claim_ids_equal(&c.id, id)) {
                found = Some((i, false));
            }
            if s.pending.iter().any(|c| claim_ids_equal(&c.id, id)) {
                found = Some((i, true));
            }
        }
        found
    }

    /// The slot whose claim the match `id` is preempting.
    fn find_preempting(&self, id: &str) -> Option<usize> {
        self.slots.iter().position(|s| {
            s.preempting
                .as_ref()
                .is_some_and(|c| claim_ids_equal(&c.id, id))
        })
    }

    fn being_preempted() -> Refusal {
        Refusal::Unavailable("being preempted: the slot's current job is leaving; ask again".into())
    }

    /// The state of the slot holding claim `id` and the job whose starter
    /// runs under it (the schedd's keep-alive, `/startd/alive`).
    pub fn claim_status(&self, id: &str) -> Result<(String, Status, Option<String>), Refusal> {
        if self.find_claim(id).is_none() && self.find_preempting(id).is_some() {
            return Err(Self::being_preempted());
        }
        let (i, pending) = self.find_claim(id).ok_or_else(Self::not_found)?;
        let slot = &self.slots[i];
        let job = if pending {
            None
        } else {
            slot.claim
                .as_ref()
                .and_then(|c| c.job.as_ref())
                .map(|j| j.job_id.clone())
        };
        Ok((slot.name.clone(), slot.status, job))
    }

    /// The schedd's keep-alive for claim `id` (`/startd/alive`): renews
    /// the claim's lease and returns what [`Machine::claim_status`] does.
    pub fn keep_alive(
        &mut self,
        id: &str,
        now: i64,
    ) -> Result<(String, Status, Option<String>), Refusal> {
        let status = self.claim_status(id)?;
        self.renew(id, now);
        Ok(status)
    }

    /// Renews the lease of claim `id` (a claimed claim) at `now`.
    fn renew(&mut self, id: &str, now: i64) {
        if let Some((i, false)) = self.find_claim(id) {
            if let Some(c) = self.slots[i].claim.as_mut() {
                c.renewed = c.renewed.max(now);
            }
        }
    }

    /// A schedd reconnected to claim `id` (`/startd/reconnect`): the lease
    /// is renewed and the shadow's address recorded for the claim and its
    /// running job.
    pub fn reconnect(&mut self, id: &str, shadow_addr: &str, now: i64) {
        self.renew(id, now);
        if let Some((i, false)) = self.find_claim(id) {
            if let Some(c) = self.slots[i].claim.as_mut() {
                c.schedd_addr = shadow_addr.to_string();
                if let Some(j) = c.job.as_mut() {
                    j.shadow_addr = shadow_addr.to_string();
                }
            }
        }
    }

    /// Records the keep-alive interval the schedd announced for claim
    /// `id` (seconds; 0 or less: none).
    pub fn set_alive_interval(&mut self, id: &str, secs: i64) {
        if let Some((i, false)) = self.find_claim(id) {
            if let Some(c) = self.slots[i].claim.as_mut() {
                c.alive_interval = secs.max(0);
            }
        }
    }

    /// The length of the lease of slot `i`'s claim, in seconds (`None`:
    /// no claimed claim). HTCondor's rule: the running job's
    /// `JobLeaseDuration` when it is defined and positive; otherwise
    /// `MAX_CLAIM_ALIVES_MISSED` keep-alive intervals (the schedd's, or
    /// `ALIVE_INTERVAL` when it announced none).
    pub fn claim_lease(&self, i: usize, now: i64) -> Option<i64> {
        let c = self.slots.get(i)?.claim.as_ref()?;
        c.claimed_at?;
        let job_lease = c.job.as_ref().and_then(|j| {
            match evaluator(now).eval_attr("JobLeaseDuration", &j.job_ad, None) {
                Value::Int(n) if n > 0 => Some(n),
                Value::Real(r) if r.is_finite() && r >= 1.0 => Some(r as i64),
                _ => None,
            }
        });
        let interval = if c.alive_interval > 0 {
            c.alive_interval
        } else {
            self.config.alive_interval
        };
        Some(
            job_lease
                .unwrap_or_else(|| self.config.max_claim_alives_missed.saturating_mul(interval)),
        )
    }

    /// Drops the claims whose lease ran out at `now` (their jobs are
    /// killed). Each expiry is announced by [`Action::LeaseExpired`]
    /// before the actions carrying it out.
    pub(crate) fn expire_leases(&mut self, now: i64) -> Vec<(String, Action)> {
        let mut out = Vec::new();
        let names: Vec<String> = self.slots.iter().map(|s| s.name.clone()).collect();
        for name in names {
            let Some(i) = self.index(&name) else { continue };
            let Some(lease) = self.claim_lease(i, now) else {
                continue;
            };
            let s = &self.slots[i];
            let expired = s.claim.as_ref().is_some_and(|c| now - c.renewed >= lease);
            let killing = s.status.state == State::Preempting && s.status.starter_killed;
            if !expired || killing {
                continue;
            }
            let before = s.status;
            let Ok(actions) = self.apply(i, Event::LeaseExpired, now) else {
                continue;
            };
            if self.slots.get(i).is_some_and(|s| s.status == before) && actions.is_empty() {
                continue;
            }
            out.push((name.clone(), Action::LeaseExpired { lease_secs: lease }));
            out.extend(self.settle(i, actions, now));
        }
        out
    }

    fn not_found() -> Refusal {
        Refusal::NotFound("no such claim".into())
    }

    /// The negotiator matched `slot` under `claim_id`.
    pub fn match_notice(
        &mut self,
        slot: &str,
        claim_id: &str,
        submitter: &str,
        schedd_addr: &str,
        now: i64,
    ) -> Result<(), Refusal> {
        check_claim_id(claim_id)?;
        let i = self
            .index(slot)
            .ok_or_else(|| Refusal::NotFound(format!("no slot {slot}")))?;
        if self.find_claim(claim_id).is_some() || self.find_preempting(claim_id).is_some() {
            return Err(Refusal::Conflict("this claim id is already in use".into()));
        }
        let claim = Claim::matched(claim_id, submitter, schedd_addr, now);
        match self.slots[i].kind {
            SlotKind::Partitionable => {
                let s = &self.slots[i];
                if s.status.state != State::Unclaimed {
                    return Err(Refusal::Conflict(format!(
                        "stale match: {} is {}",
                        s.name,
                        s.status.state.as_str()
                    )));
                }
                self.slots[i].pending.push(claim);
            }
            SlotKind::Static => {
                self.apply(i, Event::Match, now)
                    .map_err(|r| Refusal::Conflict(format!("stale match: {r}")))?;
                self.slots[i].claim = Some(claim);
            }
            SlotKind::Dynamic => {
                return Err(Refusal::Conflict(format!(
                    "{slot} is a dynamic slot: match its partitionable slot"
                )))
            }
        }
        Ok(())
    }

    /// The negotiator matched the Claimed `slot` under `claim_id`,
    /// preempting its claim (rank or priority preemption): the running
    /// job retires (MaxJobRetirementTime), is vacated, the old claim is
    /// dropped and the slot becomes Matched to `claim_id`. Refused when
    /// the slot is already being preempted. A slot that became Unclaimed
    /// meanwhile takes it as an ordinary match.
    pub fn preempting_match(
        &mut self,
        slot: &str,
        claim_id: &str,
        submitter: &str,
        schedd_addr: &str,
        now: i64,
    ) -> Result<Vec<(String, Action)>, Refusal> {
        let i = self
            .index(slot)
            .ok_or_else(|| Refusal::NotFound(format!("no slot {slot}")))?;
        if self.slots[i].status.state != State::Claimed
            || self.slots[i].kind == SlotKind::Partitionable
        {
            return self
                .match_notice(slot, claim_id, submitter, schedd_addr, now)
                .map(|()| Vec::new());
        }
        check_claim_id(claim_id)?;
        if self.find_claim(claim_id).is_some() || self.find_preempting(claim_id).is_some() {
            return Err(Refusal::Conflict("this claim id is already in use".into()));
        }
        let actions = self.apply(i, Event::PreemptClaim, now)?;
        self.slots[i].preempting = Some(Claim::matched(claim_id, submitter, schedd_addr, now));
        let mut out = self.settle(i, actions, now);
        out.extend(self.evaluate_slot_named(slot, now));
        Ok(out)
    }

    /// The schedd claims the slot matched under `claim_id` for `job_ad`.
    /// Returns the claimed slot's name and ad (a dynamic slot carved from
    /// a partitionable one).
    pub fn claim(
        &mut self,
        claim_id: &str,
        job_ad: &ClassAd,
        schedd_addr: &str,
        now: i64,
    ) -> Result<(String, ClassAd), Refusal> {
        if self.find_claim(claim_id).is_none() && self.find_preempting(claim_id).is_some() {
            return Err(Self::being_preempted());
        }
        let (i, pending) = self.find_claim(claim_id).ok_or_else(Self::not_found)?;
        let ad = self.slot_ad(i, now);
        check_claim(&ad, job_ad, now)
            .map_err(|why| Refusal::Conflict(format!("stale match: {why}")))?;
        if !pending {
            self.apply(i, Event::Claim, now)
                .map_err(|r| Refusal::Conflict(format!("stale match: {r}")))?;
            let s = &mut self.slots[i];
            if let Some(c) = s.claim.as_mut() {
                c.claimed_at = Some(now);
                c.renewed = now;
                c.job_ad = Some(job_ad.clone());
                if !schedd_addr.is_empty() {
                    c.schedd_addr = schedd_addr.to_string();
                }
            }
            return Ok((s.name.clone(), self.slot_ad(i, now)));
        }
        // carve a dynamic slot
        let (c, m, d) = job_requests(job_ad, &ad, now);
        let p = &mut self.slots[i];
        let pos = p
            .pending
            .iter()
            .position(|c| claim_ids_equal(&c.id, claim_id))
            .ok_or_else(Self::not_found)?;
        let mut claim = p.pending.remove(pos);
        claim.claimed_at = Some(now);
        claim.renewed = now;
        claim.job_ad = Some(job_ad.clone());
        if !schedd_addr.is_empty() {
            claim.schedd_addr = schedd_addr.to_string();
        }
        p.cpus -= c;
        p.memory_mb -= m;
        p.disk_kb -= d;
        let sub = p.next_child;
        p.next_child += 1;
        let mut status = Status::new(now);
        status.state = State::Claimed;
        let child = Slot {
            name: format!("slot{}_{}@{}", p.id, sub, self.facts.hostname),
            id: p.id,
            sub_id: Some(sub),
            type_id: p.type_id,
            kind: SlotKind::Dynamic,
            cpus: c,
            memory_mb: m,
            disk_kb: d,
            total: (c, m, d),
            status,
            claim: Some(claim),
            pending: Vec::new(),
            preempting: None,
            latches: BTreeMap::new(),
            next_child: 1,
        };
        let name = child.name.clone();
        // dynamic slots follow their partitionable slot and its earlier children
        let mut at = i + 1;
        while at < self.slots.len() && self.slots[at].kind == SlotKind::Dynamic {
            at += 1;
        }
        self.slots.insert(at, child);
        Ok((name, self.slot_ad(at, now)))
    }

    /// Runs a job under a claim: the slot becomes Claimed/Busy and the
    /// daemon starts a starter with the returned [`Launch`].
    pub fn activate(
        &mut self,
        claim_id: &str,
        job_ad: &ClassAd,
        job_id: &str,
        shadow_addr: &str,
        now: i64,
    ) -> Result<Launch, Refusal> {
        let (i, pending) = self.find_claim(claim_id).ok_or_else(Self::not_found)?;
        if pending {
            return Err(Refusal::Conflict("the match has not been claimed".into()));
        }
        let claimed_at = self.slots[i]
            .claim
            .as_ref()
            .and_then(|c| c.claimed_at)
            .ok_or_else(|| Refusal::Conflict("the match has not been claimed".into()))?;
        if self.config.claim_worklife >= 0 && now - claimed_at > self.config.claim_worklife {
            return Err(Refusal::Conflict(format!(
                "the claim is older than CLAIM_WORKLIFE ({} s)",
                self.config.claim_worklife
            )));
        }
        // The previous job's starter has not reported yet: not now, but
        // soon (the schedd asks again).
        if self.slots[i]
            .claim
            .as_ref()
            .is_some_and(|c| c.job.is_some())
        {
            return Err(Refusal::Unavailable(
                "the claim's previous job is still running".into(),
            ));
        }
        let ad = self.slot_ad(i, now);
        check_claim(&ad, job_ad, now).map_err(Refusal::Conflict)?;
        self.apply(i, Event::Activate, now)?;
        if let Some(c) = self.slots[i].claim.as_mut() {
            c.renewed = c.renewed.max(now);
            c.job_ad = Some(job_ad.clone());
            c.job = Some(RunningJob {
                job_ad: job_ad.clone(),
                job_id: job_id.to_string(),
                shadow_addr: shadow_addr.to_string(),
                started: now,
            });
        }
        Ok(Launch {
            slot: self.slots[i].name.clone(),
            slot_ad: self.slot_ad(i, now),
            max_vacate_secs: self.policy(i, now).max_vacate_time,
        })
    }

    fn claimed(&self, claim_id: &str) -> Result<usize, Refusal> {
        match self.find_claim(claim_id) {
            Some((i, false)) => Ok(i),
            _ => Err(Self::not_found()),
        }
    }

    /// Stops the claim's job, keeping the claim.
    pub fn deactivate(
        &mut self,
        claim_id: &str,
        graceful: bool,
        now: i64,
    ) -> Result<Vec<(String, Action)>, Refusal> {
        let i = self.claimed(claim_id)?;
        self.renew(claim_id, now);
        let actions = self.apply(i, Event::Deactivate { graceful }, now)?;
        Ok(self.settle(i, actions, now))
    }

    /// Gives the claim up (a match, a claim, a pending match of a
    /// partitionable slot).
    pub fn release(&mut self, claim_id: &str, now: i64) -> Result<Vec<(String, Action)>, Refusal> {
        match self.find_claim(claim_id) {
            None => Err(Self::not_found()),
            Some((i, true)) => {
                self.slots[i]
                    .pending
                    .retain(|c| !claim_ids_equal(&c.id, claim_id));
                Ok(Vec::new())
            }
            Some((i, false)) => {
                let actions = self.apply(i, Event::Release, now)?;
                Ok(self.settle(i, actions, now))
            }
        }
    }
}
