//! Negotiation messages: the negotiator asks a schedd for its resource
//! requests and tells it the matches; a schedd (or a user) asks for a
//! cycle now.

use serde::{Deserialize, Serialize};

/// `POST /schedd/resource_requests` (NEGOTIATOR): the idle jobs of one
/// submitter, grouped into autoclusters: jobs whose values of
/// `significant_attributes` (and of their own Requirements and Rank) are
/// the same are alike for matchmaking, and travel as one request with a
/// count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRequests {
    /// `user@uiddomain`, as in the Submitter ad's `Name`.
    pub submitter: String,
    /// The job attributes that slot ads refer to (through `TARGET.` or
    /// unqualified names they do not define themselves).
    #[serde(default)]
    pub significant_attributes: Vec<String>,
}

/// One autocluster of idle jobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRequest {
    /// The autocluster id (stable while the schedd runs).
    pub autocluster: u64,
    /// A representative job ad (the first job of the autocluster in queue
    /// order), canonical new-style text.
    pub ad: String,
    /// How many idle jobs it stands for.
    pub count: u64,
}

/// The reply to [`ResourceRequests`], in the schedd's job order (the job
/// that should run first comes first).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRequestsReply {
    /// The requests.
    pub requests: Vec<ResourceRequest>,
}

/// One match for a schedd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchInfo {
    /// The autocluster it was made for.
    pub autocluster: u64,
    /// The claim id (secret).
    pub claim_id: String,
    /// The slot's `Name`.
    pub slot: String,
    /// The slot ad as the negotiator saw it, canonical new-style text.
    pub slot_ad: String,
    /// The startd's address (`<ip:port>`).
    pub startd_addr: String,
    /// The slot was claimed by someone else and is being preempted for
    /// this match: the startd answers the claim request `Unavailable`
    /// until the preempted job is gone, and the schedd retries.
    #[serde(default)]
    pub preempting: bool,
}

/// `POST /schedd/matches` (NEGOTIATOR): matches for one submitter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matches {
    /// `user@uiddomain`.
    pub submitter: String,
    /// The matches.
    pub matches: Vec<MatchInfo>,
}

/// `POST /negotiator/reschedule` (WRITE): run a negotiation cycle soon
/// (condor_reschedule; the schedd sends it when jobs become idle).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reschedule {}
