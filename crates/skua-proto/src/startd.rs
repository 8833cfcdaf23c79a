//! Startd messages: the negotiator's match notice, and the schedd claiming,
//! activating, deactivating and releasing a slot; the starter's spec.
//!
//! A claim id is a secret: the negotiator makes it (at least 128 random
//! bits, URL-safe text) and gives it to the startd ([`MatchNotice`]) and to
//! the schedd, and nobody else. Every later request names the claim by it;
//! a wrong id is refused with `NotFound` and changes nothing.

use serde::{Deserialize, Serialize};

/// `POST /startd/match` (NEGOTIATOR): the negotiator matched `slot` to a
/// job of `submitter`. The startd puts the slot in the Matched state bound
/// to `claim_id`; it goes back to Unclaimed if no claim arrives within
/// `MATCH_TIMEOUT` seconds. Refused with `Conflict` when the slot is not
/// Unclaimed (the match is stale).
///
/// With `preempting` the slot is Claimed and the new match preempts its
/// claim (rank or priority preemption). The startd accepts it unless the
/// slot is already being preempted (`Conflict`), keeps `claim_id` pending,
/// and ends the current claim through its policy: the running job may
/// retire for up to `MaxJobRetirementTime`, is then vacated (its kill
/// signal, `MachineMaxVacateTime` seconds, then a hard kill), the old
/// claim is gone (its schedd sees the run end as evicted), and the slot
/// becomes Matched to `claim_id`, `MATCH_TIMEOUT` counted from then. A
/// [`ClaimRequest`] for the pending claim before that is answered
/// `Unavailable` ("being preempted"): the schedd retries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchNotice {
    /// The slot's `Name` (`slot1@host`; a partitionable slot's own name).
    pub slot: String,
    /// The new claim id.
    pub claim_id: String,
    /// The submitter (`user@uiddomain`) the slot was matched for.
    pub submitter: String,
    /// The schedd's address (`<ip:port>`).
    pub schedd_addr: String,
    /// The slot is Claimed and this match preempts its current claim.
    #[serde(default)]
    pub preempting: bool,
}

/// `POST /startd/claim` (DAEMON): the schedd claims the slot matched under
/// `claim_id` for a job. The startd evaluates START with the slot ad as MY
/// and the job ad as TARGET and both Requirements against its current state
/// (the match may be stale) and refuses with `Conflict` ("stale match: ...")
/// if they do not hold. A partitionable slot carves a dynamic slot sized by
/// the job's RequestCpus, RequestMemory and RequestDisk; the claim then
/// belongs to the dynamic slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRequest {
    /// The claim id from the match.
    pub claim_id: String,
    /// The job ad (canonical new-style text).
    pub job_ad: String,
    /// The schedd's address (`<ip:port>`).
    pub schedd_addr: String,
    /// How often (seconds) the schedd will send keep-alives for this
    /// claim (HTCondor's alive interval). Without a running job's
    /// `JobLeaseDuration`, the claim's lease is `MAX_CLAIM_ALIVES_MISSED`
    /// times this; 0: the startd's own `ALIVE_INTERVAL`.
    #[serde(default)]
    pub alive_interval_secs: u64,
}

/// The reply to [`ClaimRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimReply {
    /// The claimed slot's `Name` (a dynamic slot's: `slot1_1@host`).
    pub slot: String,
    /// The claimed slot's ad, canonical new-style text.
    pub slot_ad: String,
}

/// `POST /startd/activate` (DAEMON): run a job on a claimed, idle slot.
/// The startd spawns a starter and answers once it runs; the slot is then
/// Claimed/Busy. The same claim may be activated again after the job ends
/// (claim reuse) for another job of the same submitter, as long as the
/// startd's policy still accepts it (START and both Requirements hold;
/// `Conflict` otherwise).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivateRequest {
    /// The claim.
    pub claim_id: String,
    /// The job ad (canonical new-style text).
    pub job_ad: String,
    /// `"C.P"`.
    pub job_id: String,
    /// The address (`<ip:port>`) of the schedd whose shadow serves the job.
    pub shadow_addr: String,
    /// The job owner's uid and gid on the submit host, for an execute host
    /// in the same UID domain that has no account of that name and
    /// `SOFT_UID_DOMAIN = True`.
    #[serde(default)]
    pub owner_ids: Option<(u32, u32)>,
}

/// `POST /startd/deactivate` (DAEMON): stop the job running under the claim
/// and keep the claim. `graceful`: send the job its kill signal and give it
/// `MachineMaxVacateTime` seconds (its files are kept as a checkpoint when
/// the job asked `ON_EXIT_OR_EVICT`); otherwise kill it at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeactivateRequest {
    /// The claim.
    pub claim_id: String,
    /// Soft vacate instead of hard kill.
    #[serde(default)]
    pub graceful: bool,
}

/// `POST /startd/release` (DAEMON): give the claim up. A job still running
/// under it is killed; the slot becomes Unclaimed (a dynamic slot is
/// removed and its resources return to its partitionable slot).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseRequest {
    /// The claim.
    pub claim_id: String,
}

/// `POST /startd/alive` (DAEMON): the schedd's periodic keep-alive for a
/// claim it holds (HTCondor's `ALIVE_INTERVAL`); it renews the claim's
/// lease, and the startd answers with the claim's state, so the schedd
/// learns when a starter died under a job. `NotFound`: the startd does not
/// know the claim (it restarted, released it, or dropped it when its lease
/// ran out).
///
/// The claim's lease: the running job's `JobLeaseDuration` when defined,
/// else `MAX_CLAIM_ALIVES_MISSED` alive intervals. Every request naming
/// the claim (claim, activate, deactivate, alive) renews it; a lease that
/// runs out makes the startd kill the job and drop the claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimAlive {
    /// The claim.
    pub claim_id: String,
}

/// The reply to [`ClaimAlive`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimStatus {
    /// The claimed slot's `Name`.
    pub slot: String,
    /// The slot's `State` (`Claimed`, `Preempting`...).
    pub state: String,
    /// The slot's `Activity` (`Idle`, `Busy`...).
    pub activity: String,
    /// The job whose starter runs under the claim, if one does.
    #[serde(default)]
    pub job_id: Option<String>,
}

/// `POST /startd/reconnect` (DAEMON): a schedd that restarted (or lost
/// contact) asks whether the startd still has `claim_id` with `job_id`
/// active (its starter running the job, or holding its results), and
/// names the shadow's current address. The startd renews the claim's
/// lease, records the address and passes it to the starter
/// ([`StarterMessage::Shadow`]). `NotFound` when the claim is unknown
/// ("Claim not found at execution machine") or runs no such job ("Job not
/// found at execution machine"). The reply is the claim's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconnectRequest {
    /// The claim of the run.
    pub claim_id: String,
    /// `"C.P"` of the job the schedd believes runs under it.
    pub job_id: String,
    /// The shadow's (schedd's) address now.
    pub shadow_addr: String,
}

/// One line on a starter's standard input: a job to run, or the shadow's
/// new address for the job it runs (after a schedd's reconnect). A job is
/// the bare [`StarterSpec`] document, as before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StarterMessage {
    /// The claim's next job.
    Job(StarterSpec),
    /// `{"shadow": {...}}`: where the shadow of the running job is now.
    Shadow {
        /// The new address.
        shadow: ShadowMoved,
    },
}

/// The shadow of `job_id` (under `claim_id`) is now at `shadow_addr`: the
/// starter sends its further calls there, and retries at once a call that
/// failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowMoved {
    pub claim_id: String,
    pub job_id: String,
    pub shadow_addr: String,
}

/// The starter's exit status when it gave its job up because its shadow
/// stayed unreachable for the job's whole lease (HTCondor's
/// `STARTER_EXIT_LOST_SHADOW_CONNECTION`): the job was killed and its
/// scratch directory removed; the startd frees the slot.
pub const STARTER_EXIT_LOST_SHADOW: i32 = 4;

/// What the startd hands a starter (`skuad starter`) on its standard input,
/// as one JSON document per job. A starter serves one claim: after the
/// first job it reports [`StarterDone`] and waits for the next document
/// (the claim's next activation); the end of standard input ends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterSpec {
    /// The claim (the starter presents it to the shadow).
    pub claim_id: String,
    /// `"C.P"`.
    pub job_id: String,
    /// The job ad, canonical new-style text.
    pub job_ad: String,
    /// The slot ad, canonical new-style text.
    pub slot_ad: String,
    /// The shadow's (schedd's) address, `<ip:port>`.
    pub shadow_addr: String,
    /// The directory in which the starter makes the job's own scratch
    /// directory (`$(EXECUTE)`).
    pub execute_dir: String,
    /// The job's kill signal grace period on a soft vacate, in seconds
    /// (the slot's `MachineMaxVacateTime`).
    #[serde(default)]
    pub max_vacate_secs: u64,
    /// The owner's uid and gid on the submit host
    /// ([`ActivateRequest::owner_ids`]).
    #[serde(default)]
    pub owner_ids: Option<(u32, u32)>,
}

/// What a starter writes on its standard output, one JSON line, when a
/// job's run is over (outputs sent, scratch directory removed) and it is
/// ready for the claim's next job. It writes it before it reports the
/// exit to the shadow, so the slot is idle by the time the shadow
/// activates the claim again. A starter whose job was vacated or killed
/// writes nothing and exits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterDone {
    /// `"C.P"` of the job whose run is over.
    pub done: String,
}

/// `POST /startd/vacate` (ADMINISTRATOR): the owner wants the machine back
/// (`skua vacate`). The jobs of the named slots are evicted (their kill
/// signal and `MachineMaxVacateTime`, or killed at once with `fast`), their
/// claims end, and the slots go to the Owner state (then Unclaimed again
/// unless IS_OWNER holds). The jobs go back to Idle in their queues.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VacateRequest {
    /// Slot names (`slot1@host` or `slot1`) or the host name; empty: every
    /// slot.
    #[serde(default)]
    pub slots: Vec<String>,
    /// Hard-kill instead of a soft vacate (`skua vacate -fast`).
    #[serde(default)]
    pub fast: bool,
}

/// `POST /startd/drain` (ADMINISTRATOR): `skua drain`. Unclaimed and Owner
/// slots become Drained/Retiring at once; running jobs retire (up to
/// `MaxJobRetirementTime`) and their slots follow; when no job is left
/// every slot is Drained/Idle. `cancel` ends draining: Drained slots go to
/// Owner (then Unclaimed), retiring jobs go on running.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainRequest {
    /// Cancel draining instead.
    #[serde(default)]
    pub cancel: bool,
}

/// The reply to [`VacateRequest`] and [`DrainRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotStates {
    /// Every slot's name, `State` and `Activity` after the request.
    #[serde(default)]
    pub slots: Vec<(String, String, String)>,
}

/// Written by the startd as `dir_<starter pid>.hold` (JSON) in the
/// execute directory before it stops a job its WANT_HOLD holds: the
/// starter then reports [`crate::RunOutcome::Held`] instead of an
/// eviction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterHold {
    /// `WANT_HOLD_REASON`.
    pub reason: String,
    /// HTCondor's HoldReasonCode (21: the startd's policy held the job).
    pub code: i64,
    /// `WANT_HOLD_SUBCODE`.
    #[serde(default)]
    pub subcode: i64,
}
