//! The daemons' clock, passed in their [`DaemonContext`](crate::DaemonContext)
//! instead of read from the system where a decision depends on it: leases,
//! keep-alives, policy timers, ad lifetimes, the times written into ads.
//!
//! [`Clock::system`] is the real clock. [`ManualClock`] is a test's clock: it
//! stands still (or runs with real time, see [`ManualClock::flowing`]) and
//! jumps when the test says so, waking every [`Clock::sleep`] whose deadline
//! it passed, so a test drives a 300-second lease in milliseconds.
//!
//! Durations that only measure work (how long a cycle took) stay on
//! `std::time::Instant`: they decide nothing.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// A clock: the real one, or a test's [`ManualClock`]. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    manual: Option<Arc<Manual>>,
}

#[derive(Debug)]
struct Manual {
    /// The time at `started` (real) when the clock was made.
    start: SystemTime,
    started: Instant,
    /// Whether real time moves the clock too.
    flowing: bool,
    /// How far the test has moved the clock.
    offset: Mutex<Duration>,
    /// Bumped at every move, to wake sleepers.
    moved: watch::Sender<u64>,
}

impl Manual {
    fn now(&self) -> SystemTime {
        let offset = *self.offset.lock().unwrap_or_else(PoisonError::into_inner);
        let real = if self.flowing {
            self.started.elapsed()
        } else {
            Duration::ZERO
        };
        self.start + real + offset
    }
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// Whether this is a test's clock.
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }

    /// The current time.
    pub fn now(&self) -> SystemTime {
        match &self.manual {
            None => SystemTime::now(),
            Some(m) => m.now(),
        }
    }

    /// Seconds since the Unix epoch (the unit of ClassAd times).
    pub fn now_secs(&self) -> i64 {
        self.now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    /// Waits until this clock has advanced by `d` from the moment the
    /// returned future is first polled. A loop that has read the clock to
    /// work out how long to wait should use [`Clock::sleep_until`] with the
    /// instant it worked out instead: a jump of a test's clock between the
    /// reading and the first poll would otherwise push the wake-up back by
    /// the jump.
    pub async fn sleep(&self, d: Duration) {
        let Some(m) = &self.manual else {
            tokio::time::sleep(d).await;
            return;
        };
        let deadline = m.now() + d;
        self.sleep_until(deadline).await;
    }

    /// Waits until the clock reads `at` or later; at once if it already
    /// does, however far a test's clock jumped before the first poll.
    pub async fn sleep_until(&self, at: SystemTime) {
        let Some(m) = &self.manual else {
            let left = at.duration_since(SystemTime::now()).unwrap_or_default();
            tokio::time::sleep(left).await;
            return;
        };
        let mut moved = m.moved.subscribe();
        loop {
            let now = m.now();
            let Ok(left) = at.duration_since(now) else {
                return;
            };
            if left.is_zero() {
                return;
            }
            if m.flowing {
                tokio::select! {
                    _ = tokio::time::sleep(left) => {}
                    r = moved.changed() => if r.is_err() { return },
                }
            } else if moved.changed().await.is_err() {
                // the clock is gone with its test: nothing will move it again
                std::future::pending::<()>().await;
            }
        }
    }

    /// Waits until the clock reads `at` (Unix seconds) or later.
    pub async fn sleep_until_secs(&self, at: i64) {
        let Ok(at) = u64::try_from(at) else {
            return;
        };
        self.sleep_until(UNIX_EPOCH + Duration::from_secs(at)).await;
    }

    /// A ticker firing every `period` of this clock; the first tick is at
    /// once, as with `tokio::time::interval`. Missed ticks are not made up.
    pub fn ticker(&self, period: Duration) -> Ticker {
        Ticker {
            clock: self.clone(),
            period: period.max(Duration::from_millis(1)),
            next: None,
        }
    }
}

/// See [`Clock::ticker`].
#[derive(Debug)]
pub struct Ticker {
    clock: Clock,
    period: Duration,
    next: Option<SystemTime>,
}

impl Ticker {
    /// Waits for the next tick.
    pub async fn tick(&mut self) {
        let Some(next) = self.next else {
            self.next = Some(self.clock.now() + self.period);
            return;
        };
        self.clock.sleep_until(next).await;
        let after = self.clock.now();
        // skip ticks missed while away (the daemon was busy, or the clock jumped)
        let mut due = next + self.period;
        while due <= after {
            due += self.period;
        }
        self.next = Some(due);
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}

/// A test's clock: stands still at a given time (or flows with real time)
/// until [`ManualClock::advance`] moves it.
#[derive(Clone, Debug)]
pub struct ManualClock {
    clock: Clock,
}

impl ManualClock {
    /// A clock standing still at `start_secs` (Unix seconds).
    pub fn frozen(start_secs: i64) -> ManualClock {
        ManualClock::make(start_secs, false)
    }

    /// A clock starting at the real time and running with it; `advance`
    /// jumps it ahead.
    pub fn flowing() -> ManualClock {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        ManualClock::make(now, true)
    }

    fn make(start_secs: i64, flowing: bool) -> ManualClock {
        let start = UNIX_EPOCH + Duration::from_secs(start_secs.max(0) as u64);
        let (moved, _) = watch::channel(0);
        ManualClock {
            clock: Clock {
                manual: Some(Arc::new(Manual {
                    start,
                    started: Instant::now(),
                    flowing,
                    offset: Mutex::new(Duration::ZERO),
                    moved,
                })),
            },
        }
    }

    /// The clock to hand to daemons.
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Moves the clock ahead by `d`, waking every sleeper whose deadline
    /// is now past.
    pub fn advance(&self, d: Duration) {
        if let Some(m) = &self.clock.manual {
            *m.offset.lock().unwrap_or_else(PoisonError::into_inner) += d;
            m.moved.send_modify(|n| *n += 1);
        }
    }

    /// The current time, Unix seconds.
    pub fn now_secs(&self) -> i64 {
        self.clock.now_secs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_frozen_clock_moves_only_when_advanced() {
        let manual = ManualClock::frozen(1_000);
        let clock = manual.clock();
        assert_eq!(clock.now_secs(), 1_000);
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep(Duration::from_secs(300)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished(), "woke before the clock moved");
        manual.advance(Duration::from_secs(299));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished(), "woke a second early");
        manual.advance(Duration::from_secs(1));
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("the sleeper woke once its deadline passed")
            .expect("sleeper task");
        assert_eq!(clock.now_secs(), 1_300);
    }

    #[tokio::test]
    async fn a_jump_before_a_sleep_until_is_polled_is_not_lost() {
        let manual = ManualClock::frozen(1_000);
        let clock = manual.clock();
        // a loop reads the clock, works out its deadline, and is overtaken
        // by the test's jump before its sleep first runs
        let deadline = clock.now() + Duration::from_secs(60);
        let sleep = clock.sleep_until(deadline);
        manual.advance(Duration::from_secs(61));
        tokio::time::timeout(Duration::from_secs(5), sleep)
            .await
            .expect("the sleep ends: its deadline had passed");
        // and one not yet due waits for the clock (a frozen clock: one
        // poll shows it waiting)
        let mut later = std::pin::pin!(clock.sleep_until_secs(1_100));
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(later.as_mut(), cx))
        })
        .await;
        assert!(first.is_pending(), "woke before 1100");
        manual.advance(Duration::from_secs(39));
        tokio::time::timeout(Duration::from_secs(5), later)
            .await
            .expect("woke at 1100");
    }

    #[tokio::test]
    async fn a_ticker_skips_what_a_jump_passed_over() {
        let manual = ManualClock::frozen(0);
        let mut ticker = manual.clock().ticker(Duration::from_secs(10));
        ticker.tick().await; // at once
        manual.advance(Duration::from_secs(35));
        ticker.tick().await; // the one due at 10, late
                             // the next is due at 40, not at 20 or 30
        let next = tokio::spawn(async move {
            ticker.tick().await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!next.is_finished());
        manual.advance(Duration::from_secs(5));
        tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("tick at 40")
            .expect("ticker task");
    }

    #[tokio::test]
    async fn a_flowing_clock_runs_with_real_time_and_jumps() {
        let manual = ManualClock::flowing();
        let clock = manual.clock();
        let before = clock.now_secs();
        manual.advance(Duration::from_secs(3_600));
        assert!(clock.now_secs() >= before + 3_600);
        tokio::time::timeout(
            Duration::from_secs(5),
            clock.sleep(Duration::from_millis(10)),
        )
        .await
        .expect("a short sleep ends with real time");
    }

    #[test]
    fn the_system_clock_reads_the_system_time() {
        let clock = Clock::system();
        assert!(!clock.is_manual());
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_secs() as i64;
        assert!((clock.now_secs() - real).abs() <= 1);
    }
}
