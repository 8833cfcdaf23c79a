//! A deterministic simulation of fair share: the pure cycle and the
//! accountant, simulated time, no daemons.
//!
//! 1,000 one-CPU slots; a negotiation cycle every 5 simulated minutes;
//! jobs run 30 to 120 minutes (a fixed pseudo-random sequence); a
//! preempted job goes back to its user's queue. Users:
//!
//! - `a` and `b` always have more jobs than the pool, priority factors 1
//!   and 4;
//! - `c` never has more than 100 jobs at once (factor 1);
//! - `d` (factor 1) arrives late, in the last phase.
//!
//! HTCondor's rule gives each submitter a slice of the pool inversely
//! proportional to its effective priority (real priority x factor) among
//! the submitters with idle jobs, less what it uses, and the real priority
//! settles at the resources used. `c`'s demand is met (it is rarely a
//! submitter); `a`, served first, takes freed slots until its slice is
//! used up: `used_a = 1000 * (1/(used_a*1)) / (1/(used_a*1) + 1/(used_b*4))`
//! with `used_b = 900 - used_a`, i.e. `3 a^2 - 7600 a + 3,600,000 = 0`:
//! `a = 630.7`, `b = 269.3` (where equal factors would give 450 each).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use classad::{parse_ad, parse_expr, ClassAd};
use skua_negotiation::{
    evaluator, negotiate, usage_from_slots, Accountant, CycleInput, Policy, Request, Submitter,
};

const SLOTS: usize = 1000;
const CYCLE: i64 = 300;
const HALFLIFE: f64 = 3.0 * 3600.0;
const DEFAULT_FACTOR: f64 = 1.0;
const START: i64 = 1_700_000_000;

/// A fixed pseudo-random sequence (64-bit LCG).
#[derive(Clone)]
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// A run time between 30 and 120 minutes.
    fn runtime(&mut self) -> i64 {
        1800 + (self.next() % 5400) as i64
    }
}

#[derive(Clone)]
struct Running {
    user: String,
    ends: i64,
    started: i64,
}

#[derive(Clone)]
struct Sim {
    now: i64,
    base: Vec<ClassAd>,
    ads: Vec<ClassAd>,
    running: Vec<Option<Running>>,
    /// Idle jobs per user.
    queued: BTreeMap<String, u64>,
    /// Most jobs a user keeps in the system (running + idle).
    demand: BTreeMap<String, u64>,
    accountant: Accountant,
    policy: Policy,
    rng: Lcg,
    preemptions: usize,
    jobs: BTreeMap<String, ClassAd>,
}

fn user(u: &str) -> String {
    format!("{u}@sim")
}

impl Sim {
    fn new(users: &[(&str, f64, u64)]) -> Sim {
        let base: Vec<ClassAd> = (0..SLOTS)
            .map(|i| {
                parse_ad(&format!(
                    "[ Name = \"slot{}@node{}\"; SlotID = {}; Cpus = 1; Memory = 2048; Disk = 1000000; Arch = \"X86_64\"; OpSys = \"LINUX\"; KFlops = 1000; Start = true; Requirements = START; Rank = 0; CurrentRank = 0.0; State = \"Unclaimed\"; Activity = \"Idle\" ]",
                    i % 8 + 1,
                    i / 8,
                    i % 8 + 1
                ))
                .unwrap()
            })
            .collect();
        let mut accountant = Accountant::new();
        let mut demand = BTreeMap::new();
        let mut jobs = BTreeMap::new();
        for (u, factor, d) in users {
            accountant.set_factor(&user(u), *factor).unwrap();
            demand.insert(user(u), *d);
            jobs.insert(
                user(u),
                parse_ad(&format!(
                    "[ Owner = \"{u}\"; RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000; Requirements = TARGET.Arch == \"X86_64\" && TARGET.Memory >= RequestMemory ]"
                ))
                .unwrap(),
            );
        }
        Sim {
            now: START,
            ads: base.clone(),
            base,
            running: vec![None; SLOTS],
            queued: BTreeMap::new(),
            demand,
            accountant,
            policy: Policy::default(),
            rng: Lcg(42),
            preemptions: 0,
            jobs,
        }
    }

    fn add_user(&mut self, u: &str, factor: f64, demand: u64) {
        self.accountant.set_factor(&user(u), factor).unwrap();
        self.demand.insert(user(u), demand);
        self.jobs.insert(
            user(u),
            parse_ad(&format!(
                "[ Owner = \"{u}\"; RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000; Requirements = TARGET.Arch == \"X86_64\" && TARGET.Memory >= RequestMemory ]"
            ))
            .unwrap(),
        );
    }

    fn set_slot(&mut self, i: usize, run: Option<Running>) {
        let mut ad = self.base[i].clone();
        if let Some(r) = &run {
            ad.insert_value("State", "Claimed");
            ad.insert_value("Activity", "Busy");
            ad.insert_value("RemoteUser", r.user.as_str());
            ad.insert_value("RemoteOwner", r.user.as_str());
            ad.insert_value("JobStart", r.started);
        }
        self.ads[i] = ad;
        self.running[i] = run;
    }

    fn in_use(&self, u: &str) -> usize {
        self.running
            .iter()
            .flatten()
            .filter(|r| r.user == user(u))
            .count()
    }

    /// One cycle: finished jobs leave, users top up their queues, the
    /// accountant is updated, the negotiator matches, matches start.
    fn step(&mut self) -> usize {
        self.now += CYCLE;
        for i in 0..SLOTS {
            if self.running[i].as_ref().is_some_and(|r| r.ends <= self.now) {
                self.set_slot(i, None);
            }
        }
        let demand = self.demand.clone();
        for (u, d) in &demand {
            let short = u.split('@').next().unwrap_or("");
            let have = self.in_use(short) as u64;
            let q = self.queued.entry(u.clone()).or_insert(0);
            *q = d.saturating_sub(have);
        }
        let mut ev = evaluator(self.now, classad::time::utc_zone);
        let usage = usage_from_slots(&mut ev, &self.ads, &self.policy);
        self.accountant.update(self.now, &usage, HALFLIFE);
        let priorities: BTreeMap<String, f64> = self
            .accountant
            .customers
            .keys()
            .chain(self.demand.keys())
            .map(|u| {
                (
                    u.clone(),
                    self.accountant.effective_priority(u, DEFAULT_FACTOR),
                )
            })
            .collect();
        let submitters = self
            .queued
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(u, n)| Submitter {
                name: u.clone(),
                priority: priorities[u],
                requests: vec![Request {
                    autocluster: 1,
                    ad: self.jobs[u].clone(),
                    count: *n,
                }],
            })
            .collect();
        let input = CycleInput {
            slots: self.ads.clone(),
            submitters,
            policy: self.policy.clone(),
            priorities,
        };
        let out = negotiate(&input, &mut ev);
        let mut given = std::collections::BTreeSet::new();
        for m in &out.matches {
            assert!(
                given.insert(m.slot),
                "slot {} given twice in a cycle",
                m.slot
            );
            match (&self.running[m.slot], &m.preemption) {
                (None, None) => {}
                (Some(old), Some(p)) => {
                    assert_eq!(old.user, p.remote_user);
                    assert_ne!(old.user, m.submitter);
                    self.preemptions += 1;
                    *self.queued.entry(old.user.clone()).or_insert(0) += 1;
                }
                (Some(_), None) => panic!("slot {} given while running a job", m.slot),
                (None, Some(_)) => panic!("preempting an idle slot {}", m.slot),
            }
            let q = self.queued.get_mut(&m.submitter).unwrap();
            assert!(*q > 0, "{} got more slots than it had jobs", m.submitter);
            *q -= 1;
            let ends = self.now + self.rng.runtime();
            self.set_slot(
                m.slot,
                Some(Running {
                    user: m.submitter.clone(),
                    ends,
                    started: self.now,
                }),
            );
        }
        out.matches.len()
    }
}

fn assert_near(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= want * tolerance,
        "{what}: {got:.1}, expected {want:.1} within {:.0} %",
        tolerance * 100.0
    );
}

/// Runs the first two simulated days and returns the pool in its settled
/// state.
fn settled() -> Sim {
    let mut sim = Sim::new(&[("a", 1.0, 5000), ("b", 4.0, 5000), ("c", 1.0, 100)]);
    // One simulated day (8 half-lives of 3 hours).
    for _ in 0..(86400 / CYCLE) {
        sim.step();
    }
    sim
}

#[test]
fn shares_converge_priority_preemption_helps_a_late_user_and_no_slot_is_given_twice() {
    let mut sim = settled();
    // The pool is full, and the shares are HTCondor's fixed point.
    // Averaged over the last simulated hours.
    let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
    let samples = 24;
    for _ in 0..samples {
        sim.step();
        a += sim.in_use("a") as f64 / samples as f64;
        b += sim.in_use("b") as f64 / samples as f64;
        c += sim.in_use("c") as f64 / samples as f64;
    }
    assert!(a + b + c > 0.97 * SLOTS as f64, "the pool stays busy");
    assert_near("c (asks for 100)", c, 100.0, 0.05);
    let fixed_a = (7600.0 - (7600.0f64 * 7600.0 - 12.0 * 3_600_000.0).sqrt()) / 6.0;
    assert_near("a (factor 1)", a, fixed_a, 0.03);
    assert_near("b (factor 4)", b, 900.0 - fixed_a, 0.03);
    // Real priorities follow what each user uses (trailing it: the
    // shares themselves settle as the priorities do).
    assert_near(
        "a's real priority",
        sim.accountant.real_priority("a@sim"),
        a,
        0.10,
    );
    assert_eq!(sim.preemptions, 0, "PREEMPTION_REQUIREMENTS is False");

    // A late user d (factor 1, real priority 0.5): with priority
    // preemption allowed it gets at least a third of the pool within a
    // few cycles (its priority is far better than anyone's: its slice is
    // most of the pool, as in HTCondor).
    let mut with = sim.clone();
    with.policy.preemption_requirements =
        parse_expr("RemoteUserPrio > SubmitterUserPrio * 1.2").unwrap();
    with.add_user("d", 1.0, 5000);
    for _ in 0..3 {
        with.step();
    }
    assert!(
        with.in_use("d") >= 333,
        "d has {} slots after 3 cycles",
        with.in_use("d")
    );
    assert!(with.preemptions > 0);

    // Without: never a preemption; d waits for jobs to end.
    let mut without = sim.clone();
    without.add_user("d", 1.0, 5000);
    for _ in 0..12 {
        without.step();
    }
    assert_eq!(without.preemptions, 0);
    assert!(without.in_use("d") > 0, "d gets slots as jobs end");
}
