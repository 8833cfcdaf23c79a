//! Collector messages: advertising, invalidating and querying ads.

use serde::{Deserialize, Serialize};

/// The `ad_type` of a [`Query`] that matches ads of every type.
pub const ANY_AD_TYPE: &str = "Any";

/// `POST /collector/update`: store (or replace) one ad.
///
/// An ad is identified by `(ad_type, name)`; a later update with the same
/// pair replaces the earlier one. The collector drops the ad when
/// `lifetime_secs` pass without a new update.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdUpdate {
    /// The ad's type, HTCondor's `MyType`: `"Machine"`, `"Scheduler"`,
    /// `"Negotiator"`, `"DaemonMaster"`, `"Collector"`, ...
    pub ad_type: String,
    /// The ad's `Name`, unique within its type.
    pub name: String,
    /// The ad in canonical new-style ClassAd text (`[ a = 1; b = "x" ]`).
    pub ad: String,
    /// Seconds the ad stays without a new update.
    pub lifetime_secs: u64,
}

/// `POST /collector/invalidate`: remove one ad now (a daemon shutting down).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invalidate {
    /// The ad's type.
    pub ad_type: String,
    /// The ad's `Name`.
    pub name: String,
}

/// `POST /collector/query`: the ads of one type (or [`ANY_AD_TYPE`]) for
/// which `constraint` evaluates to true.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// The ad type to search, or [`ANY_AD_TYPE`].
    pub ad_type: String,
    /// A ClassAd expression evaluated in each ad; `None` selects every ad.
    #[serde(default)]
    pub constraint: Option<String>,
    /// Attribute names to return; empty returns whole ads.
    #[serde(default)]
    pub projection: Vec<String>,
}

/// The reply to a [`Query`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryReply {
    /// The matching ads, each in canonical new-style ClassAd text.
    pub ads: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_defaults() {
        let q: Query = serde_json::from_str(r#"{"ad_type":"Any"}"#).unwrap();
        assert_eq!(q.ad_type, ANY_AD_TYPE);
        assert_eq!(q.constraint, None);
        assert!(q.projection.is_empty());
    }

    #[test]
    fn update_round_trips() {
        let u = AdUpdate {
            ad_type: "Machine".into(),
            name: "slot1@host".into(),
            ad: "[ Cpus = 4 ]".into(),
            lifetime_secs: 900,
        };
        let text = serde_json::to_string(&u).unwrap();
        assert_eq!(serde_json::from_str::<AdUpdate>(&text).unwrap(), u);
    }
}
