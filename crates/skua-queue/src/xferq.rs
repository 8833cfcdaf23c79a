//! The submit side's transfer queue (HTCondor's transfer queue manager),
//! pure: which file transfers between the schedd and its starters may
//! run now. A starter asks for its turn before it fetches a job's input
//! (an *upload* from the submit side) and before it sends the job's
//! output (a *download* to the submit side); the queue grants at once or
//! keeps the request waiting, and a finished transfer releases its turn.
//!
//! The rules, as HTCondor's:
//! - `MAX_CONCURRENT_UPLOADS` / `MAX_CONCURRENT_DOWNLOADS` active
//!   transfers of each direction (0: unlimited), and the same per user
//!   (`MAX_CONCURRENT_UPLOADS_PER_USER`-style, 0: unlimited);
//! - a transfer smaller than `BYTES_REQUIRED_TO_QUEUE_FOR_TRANSFER` does
//!   not queue and counts against no limit;
//! - fair between users: among the waiting requests of a direction, the
//!   user with the fewest active transfers goes first, a tie to the user
//!   served least recently, then the oldest request;
//! - `FILE_TRANSFER_DISK_LOAD_THROTTLE`: Skua's disk load is the number of
//!   GiB of queued transfers in flight (the declared sizes of the active
//!   transfers that went through the queue, both directions). At or above
//!   the high mark nothing new starts; between the low and the high mark
//!   a new transfer starts only in place of one that just finished; below
//!   the low mark the other limits alone decide. One transfer always
//!   runs when none does, however large.
//!
//! No clock: the caller passes the time; a waiting request that its
//! starter has not asked about again for [`Limits::forget_after`] seconds
//! is dropped ([`TransferQueue::expire`]).

use std::collections::{BTreeMap, HashMap};

/// A GiB, the unit of the disk load.
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The direction of a transfer, from the submit side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// The job's input, submit side to execute side.
    Upload,
    /// The job's output, execute side to submit side.
    Download,
}

/// The disk-load throttle: marks in GiB in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throttle {
    pub low: f64,
    pub high: f64,
}

impl Throttle {
    /// Parses HTCondor's forms: `H` (the low mark is 90 % of it) or
    /// `L to H`.
    pub fn parse(text: &str) -> Result<Throttle, String> {
        let num = |s: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| format!("`{}` is not a positive number", s.trim()))
        };
        let lower = text.to_ascii_lowercase();
        let t = match lower.split_once(" to ") {
            Some((l, h)) => Throttle {
                low: num(l)?,
                high: num(h)?,
            },
            None => {
                let high = num(&lower)?;
                Throttle {
                    low: high * 0.9,
                    high,
                }
            }
        };
        if t.low > t.high {
            return Err(format!(
                "the low mark {} is above the high mark {}",
                t.low, t.high
            ));
        }
        Ok(t)
    }
}

/// The queue's limits (configuration knobs).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// `MAX_CONCURRENT_UPLOADS` (0: unlimited).
    pub max_uploads: u32,
    /// `MAX_CONCURRENT_DOWNLOADS` (0: unlimited).
    pub max_downloads: u32,
    /// `MAX_CONCURRENT_UPLOADS_PER_USER` (0: unlimited).
    pub max_uploads_per_user: u32,
    /// `MAX_CONCURRENT_DOWNLOADS_PER_USER` (0: unlimited).
    pub max_downloads_per_user: u32,
    /// `BYTES_REQUIRED_TO_QUEUE_FOR_TRANSFER`.
    pub bytes_required: u64,
    /// `FILE_TRANSFER_DISK_LOAD_THROTTLE` (none: no throttle).
    pub throttle: Option<Throttle>,
    /// Seconds after which a waiting request not asked about again is
    /// forgotten.
    pub forget_after: i64,
}

impl Default for Limits {
    /// HTCondor's defaults: 100 and 100, no per-user limit, 100 MB to
    /// queue, no throttle.
    fn default() -> Limits {
        Limits {
            max_uploads: 100,
            max_downloads: 100,
            max_uploads_per_user: 0,
            max_downloads_per_user: 0,
            bytes_required: 100_000_000,
            throttle: None,
            forget_after: 60,
        }
    }
}

/// One transfer's identity (the caller's: e.g. the run's claim id).
pub type Ticket = String;

/// The queue's answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Go; `queued` when it went through the queue (counts against the
    /// limits and must be released), false when it bypassed it.
    Granted { queued: bool },
    /// Wait and ask again.
    Waiting,
}

#[derive(Clone, Debug)]
struct Active {
    user: String,
    direction: Direction,
    bytes: u64,
}

#[derive(Clone, Debug)]
struct Waiting {
    user: String,
    direction: Direction,
    bytes: u64,
    /// Arrival order.
    seq: u64,
    last_asked: i64,
}

/// The transfer queue.
#[derive(Debug, Default)]
pub struct TransferQueue {
    limits: Limits,
    active: HashMap<Ticket, Active>,
    waiting: BTreeMap<Ticket, Waiting>,
    /// Tickets granted since they last asked (the answer they get next).
    granted: HashMap<Ticket, bool>,
    /// When each user was last served (a grant counter).
    served: HashMap<String, u64>,
    seq: u64,
    /// Transfers released since the last grant pass (the replacements
    /// the throttle allows between its marks).
    freed: u32,
}

impl TransferQueue {
    pub fn new(limits: Limits) -> TransferQueue {
        TransferQueue {
            limits,
            ..TransferQueue::default()
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `ticket` of `user` asks to move `bytes` in `direction` at `now`
    /// (again, while it waits). A ticket already active is granted.
    pub fn request(
        &mut self,
        ticket: &str,
        user: &str,
        direction: Direction,
        bytes: u64,
        now: i64,
    ) -> Turn {
        if self.active.contains_key(ticket) {
            self.granted.remove(ticket);
            return Turn::Granted { queued: true };
        }
        if let Some(queued) = self.granted.remove(ticket) {
            return Turn::Granted { queued };
        }
        if bytes < self.limits.bytes_required {
            return Turn::Granted { queued: false };
        }
        match self.waiting.get_mut(ticket) {
            Some(w) => w.last_asked = now,
            None => {
                self.seq += 1;
                self.waiting.insert(
                    ticket.to_string(),
                    Waiting {
                        user: user.to_string(),
                        direction,
                        bytes,
                        seq: self.seq,
                        last_asked: now,
                    },
                );
            }
        }
        self.grant();
        if self.active.contains_key(ticket) {
            self.granted.remove(ticket);
            Turn::Granted { queued: true }
        } else {
            Turn::Waiting
        }
    }

    /// The transfer of `ticket` finished (or its run ended): its turn is
    /// free, and the waiting requests it lets start are granted (they
    /// learn it when they ask again). Whether it held a turn or waited.
    pub fn release(&mut self, ticket: &str) -> bool {
        self.granted.remove(ticket);
        if self.waiting.remove(ticket).is_some() {
            return true;
        }
        if self.active.remove(ticket).is_some() {
            self.freed += 1;
            self.grant();
            return true;
        }
        false
    }

    /// Forgets the waiting requests not asked about since
    /// `now - forget_after`; gives their tickets.
    pub fn expire(&mut self, now: i64) -> Vec<Ticket> {
        let limit = now - self.limits.forget_after;
        let gone: Vec<Ticket> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.last_asked < limit)
            .map(|(t, _)| t.clone())
            .collect();
        for t in &gone {
            self.waiting.remove(t);
        }
        if !gone.is_empty() {
            self.grant();
        }
        gone
    }

    /// Whether `ticket` waits for its turn.
    pub fn is_waiting(&self, ticket: &str) -> bool {
        self.waiting.contains_key(ticket)
    }

    /// Whether `ticket` holds a turn.
    pub fn is_active(&self, ticket: &str) -> bool {
        self.active.contains_key(ticket)
    }

    /// The number of active queued transfers in `direction`.
    pub fn active_count(&self, direction: Direction) -> usize {
        self.active
            .values()
            .filter(|a| a.direction == direction)
            .count()
    }

    /// The disk load: GiB of queued transfers in flight.
    pub fn disk_load(&self) -> f64 {
        self.active.values().map(|a| a.bytes as f64).sum::<f64>() / GIB
    }

    fn user_active(&self, user: &str, direction: Direction) -> u32 {
        self.active
            .values()
            .filter(|a| a.direction == direction && a.user == user)
            .count() as u32
    }

    fn room(&self, direction: Direction, user: &str) -> bool {
        let (max, per_user) = match direction {
            Direction::Upload => (self.limits.max_uploads, self.limits.max_uploads_per_user),
            Direction::Download => (
                self.limits.max_downloads,
                self.limits.max_downloads_per_user,
            ),
        };
        (max == 0 || (self.active_count(direction) as u32) < max)
            && (per_user == 0 || self.user_active(user, direction) < per_user)
    }

    /// Whether the throttle lets one more transfer start now.
    fn throttle_allows(&self) -> bool {
        let Some(t) = self.limits.throttle else {
            return true;
        };
        if self.active.is_empty() {
            return true;
        }
        let load = self.disk_load();
        load < t.low || (load < t.high && self.freed > 0)
    }

    /// Grants what the limits allow, fairest first.
    fn grant(&mut self) {
        loop {
            if !self.throttle_allows() {
                break;
            }
            // the fairest waiting request that has room
            let pick = self
                .waiting
                .iter()
                .filter(|(_, w)| self.room(w.direction, &w.user))
                .min_by_key(|(_, w)| {
                    (
                        self.user_active(&w.user, w.direction),
                        self.served.get(&w.user).copied().unwrap_or(0),
                        w.seq,
                    )
                })
                .map(|(t, _)| t.clone());
            let Some(ticket) = pick else {
                break;
            };
            let Some(w) = self.waiting.remove(&ticket) else {
                break;
            };
            let replacing = self
                .limits
                .throttle
                .is_some_and(|t| !self.active.is_empty() && self.disk_load() >= t.low);
            if replacing {
                self.freed = self.freed.saturating_sub(1);
            }
            self.seq += 1;
            self.served.insert(w.user.clone(), self.seq);
            self.active.insert(
                ticket.clone(),
                Active {
                    user: w.user,
                    direction: w.direction,
                    bytes: w.bytes,
                },
            );
            self.granted.insert(ticket, true);
        }
        self.freed = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{Download, Upload};

    fn q(f: impl FnOnce(&mut Limits)) -> TransferQueue {
        let mut l = Limits {
            bytes_required: 0,
            ..Limits::default()
        };
        f(&mut l);
        TransferQueue::new(l)
    }

    const G: Turn = Turn::Granted { queued: true };
    const W: Turn = Turn::Waiting;

    #[test]
    fn the_limit_of_a_direction_holds_and_a_release_lets_the_next_go() {
        let mut t = q(|l| l.max_downloads = 1);
        assert_eq!(t.request("a", "u", Download, 10, 0), G);
        assert_eq!(t.request("b", "u", Download, 10, 0), W);
        // the other direction has its own limit
        assert_eq!(t.request("c", "u", Upload, 10, 0), G);
        assert_eq!(t.request("b", "u", Download, 10, 1), W);
        assert!(t.release("a"));
        assert!(t.is_active("b"));
        assert_eq!(t.request("b", "u", Download, 10, 2), G);
        assert_eq!(t.active_count(Download), 1);
        assert!(!t.release("a"), "a second release of a turn frees nothing");
    }

    #[test]
    fn zero_means_unlimited() {
        let mut t = q(|l| l.max_uploads = 0);
        for i in 0..500 {
            assert_eq!(t.request(&i.to_string(), "u", Upload, 10, 0), G);
        }
    }

    #[test]
    fn small_transfers_bypass_the_queue_and_count_against_nothing() {
        let mut t = q(|l| {
            l.max_uploads = 1;
            l.bytes_required = 1000;
        });
        assert_eq!(t.request("big", "u", Upload, 1000, 0), G);
        assert_eq!(
            t.request("small", "u", Upload, 999, 0),
            Turn::Granted { queued: false }
        );
        assert_eq!(t.active_count(Upload), 1);
        assert_eq!(t.request("big2", "u", Upload, 5000, 0), W);
    }

    #[test]
    fn the_user_with_fewest_active_transfers_goes_first() {
        let mut t = q(|l| l.max_downloads = 2);
        assert_eq!(t.request("a1", "alice", Download, 1, 0), G);
        assert_eq!(t.request("a2", "alice", Download, 1, 0), G);
        // alice asks first, bob later: bob has none running
        assert_eq!(t.request("a3", "alice", Download, 1, 1), W);
        assert_eq!(t.request("b1", "bob", Download, 1, 2), W);
        t.release("a1");
        assert!(t.is_active("b1"));
        assert!(t.is_waiting("a3"));
    }

    #[test]
    fn a_tie_goes_to_the_user_served_least_recently() {
        let mut t = q(|l| l.max_downloads = 1);
        assert_eq!(t.request("b0", "bob", Download, 1, 0), G);
        t.release("b0");
        assert_eq!(t.request("a0", "alice", Download, 1, 0), G);
        // both have none running now once a0 ends; bob was served
        // before alice, and asks after her
        assert_eq!(t.request("a1", "alice", Download, 1, 1), W);
        assert_eq!(t.request("b1", "bob", Download, 1, 2), W);
        t.release("a0");
        assert!(t.is_active("b1"));
        t.release("b1");
        assert!(t.is_active("a1"));
    }

    #[test]
    fn the_per_user_limit_leaves_room_for_others() {
        let mut t = q(|l| {
            l.max_uploads = 10;
            l.max_uploads_per_user = 1;
        });
        assert_eq!(t.request("a1", "alice", Upload, 1, 0), G);
        assert_eq!(t.request("a2", "alice", Upload, 1, 0), W);
        assert_eq!(t.request("b1", "bob", Upload, 1, 0), G);
    }

    #[test]
    fn the_throttle_stops_new_transfers_above_its_high_mark() {
        let gib = 1u64 << 30;
        let mut t = q(|l| {
            l.throttle = Some(Throttle {
                low: 1.0,
                high: 2.0,
            })
        });
        // one always runs, however large
        assert_eq!(t.request("a", "u", Upload, 3 * gib, 0), G);
        assert_eq!(t.request("b", "u", Upload, 1, 0), W);
        t.release("a");
        assert!(t.is_active("b"));
        // below the low mark (1 GiB): new transfers start
        let tenth = gib / 10;
        t.release("b");
        assert_eq!(t.request("y", "u", Download, tenth, 0), G);
        assert_eq!(t.request("z", "u", Download, tenth, 0), G);
        assert_eq!(t.request("x", "u", Download, 12 * tenth, 0), G);
        // at 1.4 GiB (between the marks): only a replacement starts
        assert_eq!(t.request("w", "u", Download, tenth, 0), W);
        assert_eq!(t.request("v", "u", Download, tenth, 0), W);
        t.release("y");
        assert!(t.is_active("w"), "w replaces y");
        assert!(t.is_waiting("v"), "one finished, one started");
        assert!(t.disk_load() > 1.0 && t.disk_load() < 2.0);
    }

    #[test]
    fn throttle_forms_parse_as_htcondors() {
        assert_eq!(
            Throttle::parse("2.0"),
            Ok(Throttle {
                low: 1.8,
                high: 2.0
            })
        );
        assert_eq!(
            Throttle::parse("1 to 3"),
            Ok(Throttle {
                low: 1.0,
                high: 3.0
            })
        );
        assert!(Throttle::parse("3 to 1").is_err());
        assert!(Throttle::parse("fast").is_err());
        assert!(Throttle::parse("-1").is_err());
    }

    #[test]
    fn a_waiting_request_not_asked_about_is_forgotten() {
        let mut t = q(|l| {
            l.max_uploads = 1;
            l.forget_after = 10;
        });
        assert_eq!(t.request("a", "u", Upload, 1, 0), G);
        assert_eq!(t.request("b", "u", Upload, 1, 0), W);
        assert_eq!(t.request("c", "u", Upload, 1, 0), W);
        assert_eq!(t.request("c", "u", Upload, 1, 8), W);
        assert_eq!(t.expire(15), vec!["b".to_string()]);
        t.release("a");
        assert!(t.is_active("c"));
    }
}
