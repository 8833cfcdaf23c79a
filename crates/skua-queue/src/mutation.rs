//! Mutations: the unit of change of the queue, and what the store persists.

use classad::ClassAd;
use serde::{Deserialize, Serialize};

use crate::userlog::UserLogEvent;
use crate::JobId;

/// One change to the queue. Transactions are lists of mutations; applying
/// them in order (on commit, and again on recovery) rebuilds the same
/// queue. Ads are serialized as their canonical ClassAd text
/// (`[ a = 1; b = "x" ]`) and expressions as expression text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Mutation {
    /// A new cluster with the attributes its jobs share.
    NewCluster {
        cluster: u32,
        #[serde(with = "ad_text")]
        ad: ClassAd,
    },
    /// A new job; `ad` holds its own (proc) attributes only, it is chained
    /// to its cluster's ad, which must exist.
    NewJob {
        id: JobId,
        #[serde(with = "ad_text")]
        ad: ClassAd,
    },
    /// Sets a proc attribute to an expression (text), shadowing any
    /// cluster value.
    SetAttr {
        id: JobId,
        name: String,
        value: String,
    },
    /// Deletes a proc's own attribute (a cluster value shows through again).
    DeleteAttr { id: JobId, name: String },
    /// The job leaves the queue; with `history`, its final merged ad
    /// ([`crate::Queue::job`] flattened, read before this mutation is
    /// applied) goes to the history.
    DestroyJob { id: JobId, history: bool },
    /// The cluster leaves the queue (its last job has left).
    DestroyCluster { cluster: u32 },
    /// The next cluster id to hand out.
    SetNextClusterId(u32),
}

/// What a `plan_*` call decided: the mutations to commit (in one store
/// transaction, then [`crate::Queue::apply`]), and the events to write to
/// the jobs' user logs after the commit, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Txn {
    pub mutations: Vec<Mutation>,
    pub events: Vec<(JobId, UserLogEvent)>,
}

impl Txn {
    pub fn is_empty(&self) -> bool {
        self.mutations.is_empty() && self.events.is_empty()
    }

    /// Appends another transaction's mutations and events.
    pub fn extend(&mut self, other: Txn) {
        self.mutations.extend(other.mutations);
        self.events.extend(other.events);
    }

    /// The jobs this transaction destroys with `history: true`, in order:
    /// the store copies their merged ads to the history before applying.
    pub fn history_jobs(&self) -> impl Iterator<Item = JobId> + '_ {
        self.mutations.iter().filter_map(|m| match m {
            Mutation::DestroyJob { id, history: true } => Some(*id),
            _ => None,
        })
    }
}

/// Serde helpers: a [`ClassAd`] as its canonical text (new syntax). The
/// text of a chained ad is its merged view.
pub mod ad_text {
    use classad::ClassAd;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ad: &ClassAd, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&classad::unparse_ad(ad))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ClassAd, D::Error> {
        let text = String::deserialize(d)?;
        classad::parse_ad(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_round_trip_through_json() {
        let ad = classad::parse_ad(
            "[Cmd = \"/bin/echo \\\"hi\\\"\"; RequestMemory = 2048; Requirements = TARGET.Cpus >= 1 && OpSys == \"LINUX\"; L = {1, 2.5, \"x\"}]",
        )
        .unwrap();
        let all = vec![
            Mutation::NewCluster {
                cluster: 7,
                ad: ad.clone(),
            },
            Mutation::NewJob {
                id: JobId::new(7, 0),
                ad: classad::parse_ad("[ProcId = 0; JobStatus = 1]").unwrap(),
            },
            Mutation::SetAttr {
                id: JobId::new(7, 0),
                name: "Foo".into(),
                value: "\"bar\"".into(),
            },
            Mutation::DeleteAttr {
                id: JobId::new(7, 0),
                name: "Foo".into(),
            },
            Mutation::DestroyJob {
                id: JobId::new(7, 0),
                history: true,
            },
            Mutation::DestroyCluster { cluster: 7 },
            Mutation::SetNextClusterId(8),
        ];
        let text = serde_json::to_string(&all).unwrap();
        let back: Vec<Mutation> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, all);
        // a broken ad text is a deserialization error, not a panic
        let bad = r#"[{"NewCluster":{"cluster":1,"ad":"[ a = ]"}}]"#;
        assert!(serde_json::from_str::<Vec<Mutation>>(bad).is_err());
    }
}
