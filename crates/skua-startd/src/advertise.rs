//! The coalescing advertiser: sends the slot ads the loop publishes (on a
//! watch channel) to the collector.
//!
//! The ads that changed, apart from their clock attributes, are sent at
//! every change, coalesced to one round per [`MIN_UPDATE_GAP`]; every ad
//! every `UPDATE_INTERVAL` (of the daemon's clock); the ads of slots that
//! are gone are withdrawn, and all of them at a clean shutdown. While the
//! collector does not answer, everything is sent again every second (of
//! the clock) until it does.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use classad::ClassAd;
use skua_daemon::Clock;
use skua_proto::{routes, Ack, AdUpdate, Invalidate};
use tokio::sync::watch;

use crate::peers::Peers;

/// Attributes that follow the clock rather than the slot's state: a change
/// in them alone does not make an ad worth sending before the next
/// periodic update. (`KeyboardIdle` and `ConsoleIdle` are not among them:
/// they change only when the owner's activity is measured, and START
/// often depends on them, so the matchmaker must see them.)
const CLOCK_ATTRS: &[&str] = &[
    "MyCurrentTime",
    "StateTimer",
    "ActivityTimer",
    "TotalJobRunTime",
    "TotalJobSuspendTime",
    "JobRunTimeNotSuspended",
    "TotalClaimRunTime",
    "TotalTimeClaimedBusy",
    "TotalTimeClaimedIdle",
];

/// What decides whether a slot ad changed: its text without the clock
/// attributes.
fn ad_signature(ad: &ClassAd) -> String {
    let mut ad = ad.clone();
    for a in CLOCK_ATTRS {
        ad.remove(a);
    }
    classad::unparse_ad(&ad)
}

/// The shortest gap between two rounds of updates: changes that come
/// faster (a job ending and the next starting on a reused claim) are
/// coalesced into one update. A limit on the work done, not a decision:
/// it runs on real time, so ads flow even when a test's clock stands still.
pub const MIN_UPDATE_GAP: Duration = Duration::from_millis(100);

/// What the advertiser needs.
pub struct Advertiser {
    pub peers: Peers,
    pub clock: Clock,
    /// `CLASSAD_LIFETIME`, seconds.
    pub lifetime: u64,
    /// `UPDATE_INTERVAL`.
    pub interval: Duration,
}

impl Advertiser {
    /// Runs until `shutdown` turns true (or the loop drops the ads'
    /// sender), then withdraws every ad it sent.
    pub async fn run(
        self,
        mut ads: watch::Receiver<Vec<(String, ClassAd)>>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let Advertiser {
            peers,
            clock,
            lifetime,
            interval,
        } = self;
        let client = || peers.collector(Duration::from_secs(10));
        // what the collector last accepted, by slot name
        let mut advertised: BTreeMap<String, String> = BTreeMap::new();
        // the last failure, logged once (again when the reason changes: a
        // collector that comes up and refuses this host's credentials)
        let mut failure: Option<String> = None;
        let mut last_full = clock.now();
        let mut full = true;
        loop {
            let current = ads.borrow_and_update().clone();
            let mut ok = true;
            match client() {
                Ok(c) => {
                    for (name, ad) in &current {
                        let sig = ad_signature(ad);
                        if !full && advertised.get(name) == Some(&sig) {
                            continue;
                        }
                        let update = AdUpdate {
                            ad_type: "Machine".into(),
                            name: name.clone(),
                            ad: classad::unparse_ad(ad),
                            lifetime_secs: lifetime,
                        };
                        let r: Result<Ack, _> =
                            c.command(&routes::COLLECTOR_UPDATE, Some(&update)).await;
                        if let Err(e) = r {
                            let e = e.to_string();
                            if failure.as_deref() != Some(e.as_str()) {
                                tracing::warn!("cannot advertise {name}: {e}");
                            }
                            failure = Some(e);
                            ok = false;
                            break;
                        }
                        advertised.insert(name.clone(), sig);
                    }
                    let names: BTreeSet<&String> = current.iter().map(|(n, _)| n).collect();
                    let gone: Vec<String> = advertised
                        .keys()
                        .filter(|n| !names.contains(n))
                        .cloned()
                        .collect();
                    for name in gone {
                        let inv = Invalidate {
                            ad_type: "Machine".into(),
                            name: name.clone(),
                        };
                        let _: Result<Ack, _> =
                            c.command(&routes::COLLECTOR_INVALIDATE, Some(&inv)).await;
                        advertised.remove(&name);
                    }
                }
                Err(e) => {
                    let e = e.to_string();
                    if failure.as_deref() != Some(e.as_str()) {
                        tracing::warn!("cannot reach the collector: {e}");
                    }
                    failure = Some(e);
                    ok = false;
                }
            }
            if ok && full {
                last_full = clock.now();
            }
            if !ok {
                // send everything again once the collector answers
                advertised.clear();
            }
            if ok {
                failure = None;
            }
            let next_full: SystemTime = if failure.is_some() {
                clock.now() + interval.min(Duration::from_secs(1))
            } else {
                last_full + interval
            };
            tokio::time::sleep(MIN_UPDATE_GAP).await;
            full = tokio::select! {
                _ = clock.sleep_until(next_full) => true,
                r = ads.changed() => {
                    if r.is_err() { break; }
                    false
                }
                _ = shutdown.changed() => false,
            };
            if *shutdown.borrow() {
                break;
            }
        }
        if let Ok(c) = client() {
            for name in advertised.keys() {
                let inv = Invalidate {
                    ad_type: "Machine".into(),
                    name: name.clone(),
                };
                let _: Result<Ack, _> = c.command(&routes::COLLECTOR_INVALIDATE, Some(&inv)).await;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_attributes_alone_do_not_change_an_ad() {
        let ad = |now: i64, state: &str| {
            classad::parse_ad(&format!(
                "[ Name = \"slot1@h\"; State = \"{state}\"; MyCurrentTime = {now}; \
                 StateTimer = {now} - 100; KeyboardIdle = 7 ]"
            ))
            .unwrap()
        };
        assert_eq!(
            ad_signature(&ad(1_000, "Unclaimed")),
            ad_signature(&ad(1_060, "Unclaimed"))
        );
        assert_ne!(
            ad_signature(&ad(1_000, "Unclaimed")),
            ad_signature(&ad(1_000, "Claimed"))
        );
        let mut idle = ad(1_000, "Unclaimed");
        idle.insert("KeyboardIdle", classad::parse_expr("8").unwrap());
        assert_ne!(ad_signature(&ad(1_000, "Unclaimed")), ad_signature(&idle));
    }
}
