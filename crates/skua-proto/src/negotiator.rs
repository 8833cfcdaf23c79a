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

/// `POST /negotiator/userprio` (READ): the accountant's records
/// (condor_userprio).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserPrioQuery {
    /// Every known user; otherwise only users with resources in use or a
    /// priority above the minimum (HTCondor's default listing).
    #[serde(default)]
    pub all: bool,
}

/// One user's record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserPrioRecord {
    /// `user@uiddomain`.
    pub name: String,
    /// Effective priority: real priority x factor (lower is better).
    pub effective_priority: f64,
    /// Real priority (0.5 at best).
    pub real_priority: f64,
    /// Priority factor.
    pub factor: f64,
    /// Slots in use at the last update.
    pub resources_used: f64,
    /// Their total slot weight.
    pub weighted_resources_used: f64,
    /// Seconds of slot use since usage began (or was reset).
    pub accumulated_usage: f64,
    /// The same, each slot counted by its weight.
    pub weighted_accumulated_usage: f64,
    /// When usage began (or was reset), seconds since the epoch.
    #[serde(default)]
    pub begin_usage_time: Option<i64>,
    /// When the user last had resources in use.
    #[serde(default)]
    pub last_usage_time: Option<i64>,
}

/// The reply to [`UserPrioQuery`], best effective priority first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserPrioReply {
    /// The users.
    pub users: Vec<UserPrioRecord>,
    /// `DEFAULT_PRIO_FACTOR`.
    pub default_factor: f64,
    /// `PRIORITY_HALFLIFE`, seconds.
    pub halflife: f64,
    /// When priorities were last updated (seconds since the epoch).
    #[serde(default)]
    pub last_update: Option<i64>,
}

/// An administrator's change to one user's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum UserPrioChange {
    /// `condor_userprio -setfactor`: the priority factor (>= 1).
    SetFactor {
        /// The factor.
        factor: f64,
    },
    /// `condor_userprio -setprio`: the real priority.
    SetPriority {
        /// The priority.
        priority: f64,
    },
    /// `condor_userprio -resetusage`: accumulated usage back to zero.
    ResetUsage,
}

/// `POST /negotiator/userprio_edit` (ADMINISTRATOR): change a user's
/// record; answered `BadRequest` for an invalid value or user name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserPrioEdit {
    /// `user@uiddomain`.
    pub user: String,
    /// The change.
    pub change: UserPrioChange,
}
