//! The accountant: user priorities from resource usage.
//!
//! Every submitter (`user@uiddomain`) has a *real user priority* (RUP),
//! a smoothed count of the slot-weighted resources it uses. At each update
//! (once per negotiation cycle), over the `dt` seconds since the previous
//! one:
//!
//! ```text
//! beta = 0.5 ^ (dt / PRIORITY_HALFLIFE)
//! RUP  = max(0.5, beta * RUP + (1 - beta) * in_use)
//! ```
//!
//! where `in_use` is the user's weighted resources in use (the sum of the
//! `SlotWeight`, by default `Cpus`, of the slots it has claimed), counted
//! from the claimed slot ads at the update. A new user starts at 0.5 (the
//! minimum), and a user who keeps using `n` resources settles at `n`.
//! The *effective user priority* is `EUP = RUP * factor`, with the
//! user's priority factor (`DEFAULT_PRIO_FACTOR` unless an administrator
//! set one). Lower is better.
//!
//! Usage is also accumulated, in plain and slot-weighted seconds
//! (`AccumulatedUsage`, `WeightedAccumulatedUsage`), which do not decay;
//! an administrator may reset them.
//!
//! Pure: time and usage are arguments; the state is serializable and the
//! daemon persists it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The lowest (best) real priority.
pub const MIN_PRIORITY: f64 = 0.5;

/// What one user has in use now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InUse {
    /// Slots claimed.
    pub slots: f64,
    /// Their total slot weight.
    pub weighted: f64,
}

/// The accountant's record of one submitter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Customer {
    /// Real user priority (never below [`MIN_PRIORITY`]).
    pub real_priority: f64,
    /// The priority factor an administrator set (`None`: the default).
    #[serde(default)]
    pub factor: Option<f64>,
    /// Seconds of slot use, unweighted.
    #[serde(default)]
    pub accumulated_usage: f64,
    /// Seconds of slot use, each slot counted by its weight.
    #[serde(default)]
    pub weighted_accumulated_usage: f64,
    /// Slots in use at the last update.
    #[serde(default)]
    pub resources_used: f64,
    /// Their weight.
    #[serde(default)]
    pub weighted_resources_used: f64,
    /// When the user first used resources (or usage was last reset).
    #[serde(default)]
    pub begin_usage_time: Option<i64>,
    /// When the user last had resources in use.
    #[serde(default)]
    pub last_usage_time: Option<i64>,
}

impl Default for Customer {
    fn default() -> Self {
        Customer {
            real_priority: MIN_PRIORITY,
            factor: None,
            accumulated_usage: 0.0,
            weighted_accumulated_usage: 0.0,
            resources_used: 0.0,
            weighted_resources_used: 0.0,
            begin_usage_time: None,
            last_usage_time: None,
        }
    }
}

/// A refused administrative change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccountantError {
    /// A priority factor must be a finite number of at least 1.
    #[error("priority factor {0} is invalid: it must be a number >= 1")]
    BadFactor(String),
    /// A priority must be a finite positive number.
    #[error("priority {0} is invalid: it must be a positive number")]
    BadPriority(String),
    /// A user name must look like `user@domain`.
    #[error("user name {0:?} is invalid: expected user@domain")]
    BadUser(String),
}

/// One user's figures, as `skua userprio` shows them.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// `user@uiddomain`.
    pub name: String,
    /// Effective priority (real x factor).
    pub effective_priority: f64,
    /// Real priority.
    pub real_priority: f64,
    /// Priority factor.
    pub factor: f64,
    /// Slots in use.
    pub resources_used: f64,
    /// Their weight.
    pub weighted_resources_used: f64,
    /// Weighted accumulated usage, seconds.
    pub weighted_accumulated_usage: f64,
    /// Accumulated usage, seconds.
    pub accumulated_usage: f64,
    /// First usage (or last reset).
    pub begin_usage_time: Option<i64>,
    /// Last time resources were in use.
    pub last_usage_time: Option<i64>,
}

/// All submitters' records and the time of the last update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accountant {
    /// Records by submitter name.
    #[serde(default)]
    pub customers: BTreeMap<String, Customer>,
    /// When [`Accountant::update`] last ran (seconds since the epoch).
    #[serde(default)]
    pub last_update: Option<i64>,
}

/// The decay factor `0.5 ^ (dt / halflife)` (1 when no time passed; 0 for
/// a zero half-life: no memory).
pub fn decay(dt: f64, halflife: f64) -> f64 {
    if dt <= 0.0 {
        1.0
    } else if halflife <= 0.0 {
        0.0
    } else {
        0.5f64.powf(dt / halflife)
    }
}

impl Accountant {
    /// An empty accountant.
    pub fn new() -> Accountant {
        Accountant::default()
    }

    /// Ages every record to `now`: the real priorities decay toward what
    /// each user has `in_use` now, usage accumulates for the time passed,
    /// and `in_use` becomes the users' resources in use. Users absent from
    /// `in_use` use nothing. Time that runs backwards (or the first
    /// update) charges nothing. Records that carry nothing any more (best
    /// priority, nothing in use, no factor set) are forgotten.
    pub fn update(&mut self, now: i64, in_use: &BTreeMap<String, InUse>, halflife: f64) {
        let dt = match self.last_update {
            Some(last) if now > last => (now - last) as f64,
            _ => 0.0,
        };
        let beta = decay(dt, halflife);
        for name in in_use.keys() {
            if !self.customers.contains_key(name) {
                self.customers.insert(name.clone(), Customer::default());
            }
        }
        for (name, c) in &mut self.customers {
            let u = in_use.get(name).copied().unwrap_or_default();
            if dt > 0.0 {
                c.real_priority = beta * c.real_priority + (1.0 - beta) * u.weighted;
                c.accumulated_usage += u.slots * dt;
                c.weighted_accumulated_usage += u.weighted * dt;
            }
            if c.real_priority < MIN_PRIORITY || !c.real_priority.is_finite() {
                c.real_priority = MIN_PRIORITY;
            }
            c.resources_used = u.slots;
            c.weighted_resources_used = u.weighted;
            if u.slots > 0.0 {
                c.begin_usage_time.get_or_insert(now);
                c.last_usage_time = Some(now);
            }
        }
        self.customers.retain(|_, c| {
            c.real_priority > MIN_PRIORITY + 1e-9 || c.resources_used > 0.0 || c.factor.is_some()
        });
        if self.last_update.is_none_or(|last| now > last) {
            self.last_update = Some(now);
        }
    }

    /// The user's real priority (0.5 for an unknown user).
    pub fn real_priority(&self, user: &str) -> f64 {
        self.customers
            .get(user)
            .map_or(MIN_PRIORITY, |c| c.real_priority.max(MIN_PRIORITY))
    }

    /// The user's priority factor.
    pub fn factor(&self, user: &str, default_factor: f64) -> f64 {
        self.customers
            .get(user)
            .and_then(|c| c.factor)
            .unwrap_or(default_factor)
    }

    /// The user's effective priority: real priority x factor.
    pub fn effective_priority(&self, user: &str, default_factor: f64) -> f64 {
        self.real_priority(user) * self.factor(user, default_factor)
    }

    /// The user's weighted resources in use at the last update.
    pub fn weighted_in_use(&self, user: &str) -> f64 {
        self.customers
            .get(user)
            .map_or(0.0, |c| c.weighted_resources_used)
    }

    /// Sets the user's priority factor (at least 1).
    pub fn set_factor(&mut self, user: &str, factor: f64) -> Result<(), AccountantError> {
        check_user(user)?;
        if !factor.is_finite() || factor < 1.0 {
            return Err(AccountantError::BadFactor(factor.to_string()));
        }
        self.customers.entry(user.to_string()).or_default().factor = Some(factor);
        Ok(())
    }

    /// Sets the user's real priority (0.5 at least).
    pub fn set_priority(&mut self, user: &str, priority: f64) -> Result<(), AccountantError> {
        check_user(user)?;
        if !priority.is_finite() || priority <= 0.0 {
            return Err(AccountantError::BadPriority(priority.to_string()));
        }
        self.customers
            .entry(user.to_string())
            .or_default()
            .real_priority = priority.max(MIN_PRIORITY);
        Ok(())
    }

    /// Resets the user's accumulated usage (and its start time to `now`).
    pub fn reset_usage(&mut self, user: &str, now: i64) -> Result<(), AccountantError> {
        check_user(user)?;
        let c = self.customers.entry(user.to_string()).or_default();
        c.accumulated_usage = 0.0;
        c.weighted_accumulated_usage = 0.0;
        c.begin_usage_time = Some(now);
        Ok(())
    }

    /// Every known user's figures, best effective priority first.
    pub fn standings(&self, default_factor: f64) -> Vec<Standing> {
        let mut out: Vec<Standing> = self
            .customers
            .iter()
            .map(|(name, c)| {
                let factor = c.factor.unwrap_or(default_factor);
                let real = c.real_priority.max(MIN_PRIORITY);
                Standing {
                    name: name.clone(),
                    effective_priority: real * factor,
                    real_priority: real,
                    factor,
                    resources_used: c.resources_used,
                    weighted_resources_used: c.weighted_resources_used,
                    weighted_accumulated_usage: c.weighted_accumulated_usage,
                    accumulated_usage: c.accumulated_usage,
                    begin_usage_time: c.begin_usage_time,
                    last_usage_time: c.last_usage_time,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            a.effective_priority
                .total_cmp(&b.effective_priority)
                .then_with(|| a.name.cmp(&b.name))
        });
        out
    }
}

fn check_user(user: &str) -> Result<(), AccountantError> {
    let ok = user
        .split_once('@')
        .is_some_and(|(u, d)| !u.is_empty() && !d.is_empty())
        && !user.contains(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(AccountantError::BadUser(user.to_string()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const DAY: f64 = 86400.0;

    fn uses(list: &[(&str, f64)]) -> BTreeMap<String, InUse> {
        list.iter()
            .map(|(n, w)| {
                (
                    n.to_string(),
                    InUse {
                        slots: *w,
                        weighted: *w,
                    },
                )
            })
            .collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn a_new_user_starts_at_one_half_and_the_factor_multiplies() {
        let a = Accountant::new();
        close(a.real_priority("u@d"), 0.5);
        close(a.effective_priority("u@d", 1000.0), 500.0);
    }

    #[test]
    fn priority_halves_in_a_halflife_without_usage() {
        // RUP 10, nothing running: 5 after a day, 2.5 after two.
        let mut a = Accountant::new();
        a.set_priority("u@d", 10.0).unwrap();
        a.update(0, &uses(&[]), DAY);
        a.update(86400, &uses(&[]), DAY);
        close(a.real_priority("u@d"), 5.0);
        a.update(2 * 86400, &uses(&[]), DAY);
        close(a.real_priority("u@d"), 2.5);
    }

    #[test]
    fn decay_toward_usage_by_hand() {
        // From 0.5 with 10 slots in use for half a half-life:
        // beta = 0.5^0.5 = 0.70710678...; RUP = 0.7071*0.5 + 0.2929*10.
        let mut a = Accountant::new();
        a.update(1000, &uses(&[("u@d", 10.0)]), DAY);
        close(a.real_priority("u@d"), 0.5);
        a.update(1000 + 43200, &uses(&[("u@d", 10.0)]), DAY);
        let beta = std::f64::consts::FRAC_1_SQRT_2;
        close(a.real_priority("u@d"), beta * 0.5 + (1.0 - beta) * 10.0);
        close(a.real_priority("u@d"), 3.2824855787277984);
        // Usage accumulated: 10 slots for 43200 s.
        close(a.customers["u@d"].weighted_accumulated_usage, 432000.0);
    }

    #[test]
    fn non_uniform_intervals_give_the_same_priority() {
        let mut one = Accountant::new();
        one.update(0, &uses(&[("u@d", 4.0)]), 3600.0);
        one.update(7200, &uses(&[("u@d", 4.0)]), 3600.0);
        let mut many = Accountant::new();
        many.update(0, &uses(&[("u@d", 4.0)]), 3600.0);
        for t in [100, 1000, 1001, 5000, 7200] {
            many.update(t, &uses(&[("u@d", 4.0)]), 3600.0);
        }
        close(one.real_priority("u@d"), many.real_priority("u@d"));
        // 2 half-lives: 0.25*0.5 + 0.75*4.
        close(one.real_priority("u@d"), 3.125);
    }

    #[test]
    fn steady_usage_settles_at_the_resources_used() {
        let mut a = Accountant::new();
        // Two weeks of 5-minute cycles: 14 half-lives.
        for k in 0..=4032 {
            a.update(k * 300, &uses(&[("u@d", 10.0)]), DAY);
        }
        assert!((a.real_priority("u@d") - 10.0).abs() < 0.01);
    }

    #[test]
    fn priority_never_goes_below_one_half_and_time_backwards_charges_nothing() {
        let mut a = Accountant::new();
        a.set_priority("u@d", 3.0).unwrap();
        a.update(100, &uses(&[("u@d", 0.0), ("v@d", 1.0)]), 10.0);
        a.update(100_000, &uses(&[("v@d", 1.0)]), 10.0);
        close(a.real_priority("u@d"), 0.5);
        let before = a.clone();
        a.update(50, &uses(&[("v@d", 1.0)]), 10.0);
        close(a.real_priority("v@d"), before.real_priority("v@d"));
        assert_eq!(a.last_update, Some(100_000));
    }

    #[test]
    fn administrators_set_factor_priority_and_reset_usage() {
        let mut a = Accountant::new();
        a.set_factor("u@d", 2000.0).unwrap();
        close(a.effective_priority("u@d", 1000.0), 1000.0);
        assert!(a.set_factor("u@d", 0.5).is_err());
        assert!(a.set_factor("nodomain", 10.0).is_err());
        a.set_priority("u@d", 7.0).unwrap();
        close(a.effective_priority("u@d", 1000.0), 14000.0);
        a.update(0, &uses(&[("u@d", 2.0)]), DAY);
        a.update(100, &uses(&[("u@d", 2.0)]), DAY);
        close(a.customers["u@d"].accumulated_usage, 200.0);
        a.reset_usage("u@d", 100).unwrap();
        close(a.customers["u@d"].accumulated_usage, 0.0);
        assert_eq!(a.customers["u@d"].begin_usage_time, Some(100));
    }

    #[test]
    fn idle_records_are_forgotten_but_factors_are_kept() {
        let mut a = Accountant::new();
        a.set_factor("f@d", 5.0).unwrap();
        a.update(0, &uses(&[("u@d", 1.0)]), 1.0);
        a.update(1000, &uses(&[]), 1.0);
        assert!(!a.customers.contains_key("u@d"));
        assert!(a.customers.contains_key("f@d"));
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut a = Accountant::new();
        a.set_factor("u@d", 3.0).unwrap();
        a.update(10, &uses(&[("u@d", 2.0)]), DAY);
        a.update(20, &uses(&[("u@d", 2.0)]), DAY);
        let text = serde_json::to_string(&a).unwrap();
        let back: Accountant = serde_json::from_str(&text).unwrap();
        assert_eq!(a, back);
    }

    #[test]
    fn standings_are_sorted_best_first() {
        let mut a = Accountant::new();
        a.set_priority("b@d", 4.0).unwrap();
        a.set_priority("a@d", 2.0).unwrap();
        a.set_factor("a@d", 10.0).unwrap();
        let s = a.standings(1.0);
        assert_eq!(s[0].name, "b@d");
        close(s[0].effective_priority, 4.0);
        close(s[1].effective_priority, 20.0);
    }
}
