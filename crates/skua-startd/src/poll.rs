//! The `POLLING_INTERVAL` timer: at each tick of the daemon's clock the
//! owner's activity (keyboard and console idle times) and the load are
//! measured, and `STARTD_ATTRIBUTE_FILE` read, off the loop; the loop
//! gets them in an [`Event::Poll`] and evaluates every slot's policy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use classad::Expr;
use skua_daemon::Clock;
use tokio::sync::mpsc;

use crate::event::{Event, Measured};
use crate::facts::{self, FactSources};

/// `STARTD_ATTRIBUTE_FILE`: `Name = expression` lines (old ClassAd
/// syntax, `#` comments) that override the slot ads' measured and cron
/// attributes, e.g. `KeyboardIdle = 0` to play an owner at the keyboard.
/// A missing or unreadable file overrides nothing; a bad line is skipped.
pub fn read_attribute_file(path: &Path) -> BTreeMap<String, Expr> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        match classad::parse_expr(value.trim()) {
            Ok(e) => {
                out.insert(name.to_string(), e);
            }
            Err(e) => tracing::warn!("{}: {name}: {e}", path.display()),
        }
    }
    out
}

/// What a poll measures, and how often.
pub struct Poller {
    pub sources: FactSources,
    /// `STARTD_ATTRIBUTE_FILE`, when set.
    pub attribute_file: Option<PathBuf>,
    /// `POLLING_INTERVAL`.
    pub period: Duration,
    pub clock: Clock,
}

impl Poller {
    /// Measures now.
    fn measure(sources: &FactSources, attribute_file: Option<&Path>) -> Measured {
        let f = facts::measure(sources);
        Measured {
            load_avg: f.load_avg,
            keyboard_idle: f.keyboard_idle,
            console_idle: f.console_idle,
            overrides: attribute_file.map(read_attribute_file),
            pending_outputs: crate::starters::pending_outputs(&sources.execute),
        }
    }

    /// Polls in the background, the first time at once, until the loop
    /// is gone.
    pub fn spawn(self, events: mpsc::Sender<Event>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let Poller {
                sources,
                attribute_file,
                period,
                clock,
            } = self;
            let mut ticker = clock.ticker(period);
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    // the loop is gone: no sleeping on a clock that may never move
                    _ = events.closed() => return,
                }
                let (sources, file) = (sources.clone(), attribute_file.clone());
                let measured = match tokio::task::spawn_blocking(move || {
                    Poller::measure(&sources, file.as_deref())
                })
                .await
                {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!("measuring the owner's activity: {e}");
                        continue;
                    }
                };
                if events.send(Event::Poll(measured)).await.is_err() {
                    return;
                }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_attribute_file_overrides_with_its_valid_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("attrs");
        std::fs::write(
            &file,
            "# the owner is back\nKeyboardIdle = 0\n\nSite = \"lab\"\nbad name = 1\nBroken = (\nno assignment\n",
        )
        .unwrap();
        let attrs = read_attribute_file(&file);
        assert_eq!(
            attrs.keys().collect::<Vec<_>>(),
            vec!["KeyboardIdle", "Site"]
        );
        assert_eq!(classad::unparse(&attrs["Site"]), "\"lab\"");
        assert!(read_attribute_file(&dir.path().join("missing")).is_empty());
    }

    async fn next_poll(polls: &mut mpsc::Receiver<Event>) -> Measured {
        let got = tokio::time::timeout(Duration::from_secs(10), polls.recv())
            .await
            .expect("a poll")
            .expect("the poller runs");
        match got {
            Event::Poll(m) => m,
            other => panic!("not a poll: {other:?}"),
        }
    }

    #[tokio::test]
    async fn polls_at_once_then_every_period_of_the_daemons_clock() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("attrs");
        std::fs::write(&file, "KeyboardIdle = 0\n").unwrap();
        let manual = skua_daemon::ManualClock::frozen(1_000_000);
        let (events, mut polls) = mpsc::channel(4);
        let poller = Poller {
            sources: FactSources {
                execute: dir.path().to_path_buf(),
                console_devices: Vec::new(),
                hostname: "h".into(),
                filesystem_domain: "h".into(),
                uid_domain: "h".into(),
                start_time: 0,
                checkpoint: Default::default(),
                transfer_plugin_methods: Vec::new(),
            },
            attribute_file: Some(file),
            // an hour: only the test's clock gets there
            period: Duration::from_secs(3600),
            clock: manual.clock(),
        }
        .spawn(events);
        let first = next_poll(&mut polls).await;
        let overrides = first.overrides.expect("the attribute file is read");
        assert_eq!(classad::unparse(&overrides["KeyboardIdle"]), "0");
        manual.advance(Duration::from_secs(3600));
        next_poll(&mut polls).await;
        // the loop gone, the poller ends without waiting for the clock
        drop(polls);
        tokio::time::timeout(Duration::from_secs(10), poller)
            .await
            .expect("the poller ends with the loop")
            .unwrap();
    }
}
