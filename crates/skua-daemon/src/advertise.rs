//! Advertising a daemon's ad to the collector: at start, every
//! `UPDATE_INTERVAL`, on significant change, and withdrawn on clean
//! shutdown.

use std::sync::Arc;
use std::time::Duration;

use classad::ClassAd;
use skua_proto::{routes, Ack, AdUpdate, Invalidate};
use tokio::sync::{watch, Notify};

use crate::context::DaemonContext;

/// Sends one daemon's ad to the collector.
pub struct Advertiser {
    collector: crate::context::Locator,
    token: Option<String>,
    ad_type: String,
    name: String,
    lifetime: u64,
    /// The daemon's clock: the rounds are timed by it.
    clock: crate::Clock,
}

impl Advertiser {
    /// An advertiser of `ad_type`/`name`; fails if the configuration does
    /// not say where the collector is.
    pub fn new(
        ctx: &DaemonContext,
        ad_type: &str,
        name: &str,
    ) -> Result<Advertiser, crate::DaemonError> {
        Ok(Advertiser {
            collector: ctx.locator("COLLECTOR")?,
            token: ctx.daemon_token.clone(),
            ad_type: ad_type.to_string(),
            name: name.to_string(),
            lifetime: ctx.classad_lifetime,
            clock: ctx.clock.clone(),
        })
    }

    fn client(&self) -> Result<skua_net::Client, String> {
        self.collector
            .client(self.token.clone(), Duration::from_secs(10))
            .map_err(|e| e.to_string())
    }

    /// Sends the ad once.
    pub async fn send(&self, ad: &ClassAd) -> Result<(), String> {
        let update = AdUpdate {
            ad_type: self.ad_type.clone(),
            name: self.name.clone(),
            ad: classad::unparse_ad(ad),
            lifetime_secs: self.lifetime,
        };
        let _: Ack = self
            .client()?
            .command(&routes::COLLECTOR_UPDATE, Some(&update))
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Withdraws the ad.
    pub async fn invalidate(&self) -> Result<(), String> {
        let inv = Invalidate {
            ad_type: self.ad_type.clone(),
            name: self.name.clone(),
        };
        let _: Ack = self
            .client()?
            .command(&routes::COLLECTOR_INVALIDATE, Some(&inv))
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Runs until `shutdown` turns true: sends `make_ad()` now, every
    /// `interval` of the daemon's clock, and whenever `changed` is notified; withdraws the ad at
    /// the end. Failures are logged (once, and again when the reason
    /// changes) and retried at the next round (the collector may not be up
    /// yet, or may be restarting).
    pub async fn run(
        self,
        make_ad: impl Fn() -> ClassAd + Send + 'static,
        interval: Duration,
        changed: Arc<Notify>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        // the last failure, logged once (again when the reason changes:
        // a collector that comes up and refuses the daemon's credentials)
        let mut failure: Option<String> = None;
        loop {
            match self.send(&make_ad()).await {
                Ok(()) => {
                    if failure.take().is_some() {
                        tracing::info!(
                            "advertising {} {} to the collector again",
                            self.ad_type,
                            self.name
                        );
                    }
                }
                Err(e) => {
                    if failure.as_deref() != Some(e.as_str()) {
                        tracing::warn!("cannot advertise {} {}: {e}", self.ad_type, self.name);
                    }
                    failure = Some(e);
                }
            }
            // retry quickly while the collector is unreachable
            let wait = if failure.is_some() {
                interval.min(Duration::from_secs(1))
            } else {
                interval
            };
            tokio::select! {
                _ = self.clock.sleep(wait) => {}
                _ = changed.notified() => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                break;
            }
        }
        if let Err(e) = self.invalidate().await {
            tracing::debug!("withdrawing {} {}: {e}", self.ad_type, self.name);
        }
    }
}
