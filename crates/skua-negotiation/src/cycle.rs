//! One negotiation cycle.

use std::collections::BTreeSet;

use classad::{rank, symmetric_match, ClassAd, Evaluator, Value};

/// One autocluster of a submitter's idle jobs.
#[derive(Clone, Debug)]
pub struct Request {
    /// The schedd's autocluster id.
    pub autocluster: u64,
    /// A representative job ad.
    pub ad: ClassAd,
    /// How many idle jobs it stands for.
    pub count: u64,
}

/// A submitter (`user@uiddomain`) and its requests, in the schedd's order.
#[derive(Clone, Debug)]
pub struct Submitter {
    /// The submitter's name.
    pub name: String,
    /// Its effective user priority: lower is better (served first).
    pub priority: f64,
    /// Its requests, the one to serve first first.
    pub requests: Vec<Request>,
}

/// What a cycle works on.
#[derive(Clone, Debug, Default)]
pub struct CycleInput {
    /// Every slot ad the collector holds.
    pub slots: Vec<ClassAd>,
    /// The submitters with idle jobs.
    pub submitters: Vec<Submitter>,
}

/// One match: a job of `autocluster` goes to `slot`.
#[derive(Clone, Debug)]
pub struct Match {
    /// The submitter's name.
    pub submitter: String,
    /// The autocluster.
    pub autocluster: u64,
    /// The slot's index in [`CycleInput::slots`].
    pub slot: usize,
    /// The slot ad as matched (a partitionable slot's, with what was left
    /// of its resources before this match).
    pub slot_ad: ClassAd,
}

/// Jobs of a request for which no slot was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmatched {
    /// The submitter's name.
    pub submitter: String,
    /// The autocluster.
    pub autocluster: u64,
    /// How many of its jobs got no slot.
    pub count: u64,
}

/// The decisions of a cycle.
#[derive(Clone, Debug, Default)]
pub struct CycleOutcome {
    /// The matches, in the order they were made.
    pub matches: Vec<Match>,
    /// Requests left (partly) unserved.
    pub unmatched: Vec<Unmatched>,
}

/// Whether a slot may be offered: `State` is `"Unclaimed"` (an ad without
/// `State` counts as unclaimed).
fn is_available(ev: &mut Evaluator, slot: &ClassAd) -> bool {
    match ev.eval_attr("State", slot, None) {
        Value::Str(s) => s.eq_ignore_ascii_case(b"Unclaimed"),
        Value::Undefined => true,
        _ => false,
    }
}

fn is_true_attr(ev: &mut Evaluator, ad: &ClassAd, name: &str) -> bool {
    ev.eval_attr(name, ad, None).is_true()
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(_) | Value::Real(_) | Value::Bool(_) => v.as_real(),
        _ => None,
    }
}

/// The job's request for a resource (`RequestCpus`...), evaluated against
/// the slot; `default` when it does not evaluate to a number.
fn request(ev: &mut Evaluator, job: &ClassAd, slot: &ClassAd, name: &str, default: f64) -> f64 {
    number(&ev.eval_attr(name, job, Some(slot))).unwrap_or(default)
}

/// The resources a partitionable slot has left, and the job's requests.
struct Fit {
    cpus: f64,
    memory: f64,
    disk: f64,
}

fn requests_of(ev: &mut Evaluator, job: &ClassAd, slot: &ClassAd) -> Fit {
    Fit {
        cpus: request(ev, job, slot, "RequestCpus", 1.0),
        memory: request(ev, job, slot, "RequestMemory", 0.0),
        disk: request(ev, job, slot, "RequestDisk", 0.0),
    }
}

fn resources_of(ev: &mut Evaluator, slot: &ClassAd) -> Fit {
    let mut get = |n: &str| number(&ev.eval_attr(n, slot, None)).unwrap_or(0.0);
    Fit {
        cpus: get("Cpus"),
        memory: get("Memory"),
        disk: get("Disk"),
    }
}

/// `my`'s Rank against `target` as a number (0 when it is not one).
fn rank_of(ev: &mut Evaluator, my: &ClassAd, target: &ClassAd) -> f64 {
    number(&rank(ev, my, target)).unwrap_or(0.0)
}

/// The best slot for `job` among `slots`: both Requirements hold (and, for
/// a partitionable slot, the requests fit), then the highest job Rank, then
/// the highest slot Rank, then the first.
fn best_slot(ev: &mut Evaluator, job: &ClassAd, slots: &[Option<ClassAd>]) -> Option<usize> {
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, slot) in slots.iter().enumerate() {
        let Some(slot) = slot else { continue };
        if !symmetric_match(ev, job, slot).matched {
            continue;
        }
        if is_true_attr(ev, slot, "PartitionableSlot") {
            let want = requests_of(ev, job, slot);
            let have = resources_of(ev, slot);
            if want.cpus > have.cpus || want.memory > have.memory || want.disk > have.disk {
                continue;
            }
        }
        let job_rank = rank_of(ev, job, slot);
        let slot_rank = rank_of(ev, slot, job);
        let better = match best {
            None => true,
            Some((_, jr, sr)) => job_rank > jr || (job_rank == jr && slot_rank > sr),
        };
        if better {
            best = Some((i, job_rank, slot_rank));
        }
    }
    best.map(|(i, _, _)| i)
}

/// What is left of a partitionable slot after a job took its requests;
/// `None` when too little is left for anything (no CPU or no memory).
fn carve(ev: &mut Evaluator, slot: &ClassAd, job: &ClassAd) -> Option<ClassAd> {
    let want = requests_of(ev, job, slot);
    let have = resources_of(ev, slot);
    let left = Fit {
        cpus: have.cpus - want.cpus,
        memory: have.memory - want.memory,
        disk: have.disk - want.disk,
    };
    if left.cpus < 1.0 || left.memory <= 0.0 {
        return None;
    }
    let mut ad = slot.clone();
    ad.insert_value("Cpus", left.cpus.floor() as i64);
    ad.insert_value("Memory", left.memory.floor() as i64);
    ad.insert_value("Disk", left.disk.floor() as i64);
    Some(ad)
}

/// Runs one cycle.
///
/// Submitters are served in order of priority (lower first, then by name),
/// one job at a time in turn, so that submitters of equal standing share
/// the free slots evenly; within a submitter, requests are served in the
/// schedd's order. Only Unclaimed slots are offered. A request that finds
/// no slot is not tried again in this cycle (slots only get fewer).
pub fn negotiate(input: &CycleInput, ev: &mut Evaluator) -> CycleOutcome {
    let mut slots: Vec<Option<ClassAd>> = input
        .slots
        .iter()
        .map(|s| is_available(ev, s).then(|| s.clone()))
        .collect();
    let mut order: Vec<&Submitter> = input.submitters.iter().collect();
    order.sort_by(|a, b| {
        a.priority
            .partial_cmp(&b.priority)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.name.cmp(&b.name))
    });
    // Per submitter: (request index, jobs of it left to place).
    let mut cursors: Vec<(usize, u64)> = order
        .iter()
        .map(|s| (0, s.requests.first().map_or(0, |r| r.count)))
        .collect();
    let mut out = CycleOutcome::default();
    let mut done: BTreeSet<usize> = BTreeSet::new();
    while done.len() < order.len() {
        for (k, sub) in order.iter().enumerate() {
            if done.contains(&k) {
                continue;
            }
            let (idx, left) = &mut cursors[k];
            loop {
                let Some(req) = sub.requests.get(*idx) else {
                    done.insert(k);
                    break;
                };
                if *left == 0 {
                    *idx += 1;
                    *left = sub.requests.get(*idx).map_or(0, |r| r.count);
                    continue;
                }
                match best_slot(ev, &req.ad, &slots) {
                    Some(i) => {
                        let Some(slot_ad) = slots[i].take() else {
                            break;
                        };
                        if is_true_attr(ev, &slot_ad, "PartitionableSlot") {
                            slots[i] = carve(ev, &slot_ad, &req.ad);
                        }
                        out.matches.push(Match {
                            submitter: sub.name.clone(),
                            autocluster: req.autocluster,
                            slot: i,
                            slot_ad,
                        });
                        *left -= 1;
                        break;
                    }
                    None => {
                        out.unmatched.push(Unmatched {
                            submitter: sub.name.clone(),
                            autocluster: req.autocluster,
                            count: *left,
                        });
                        *left = 0;
                    }
                }
            }
        }
        if slots.iter().all(Option::is_none) {
            for (k, sub) in order.iter().enumerate() {
                if done.contains(&k) {
                    continue;
                }
                let (idx, left) = cursors[k];
                for (j, req) in sub.requests.iter().enumerate().skip(idx) {
                    let count = if j == idx { left } else { req.count };
                    if count > 0 {
                        out.unmatched.push(Unmatched {
                            submitter: sub.name.clone(),
                            autocluster: req.autocluster,
                            count,
                        });
                    }
                }
            }
            break;
        }
    }
    out
}

/// The job attributes that matter for matching against these slots: what
/// the slots' Requirements (START) and Rank refer to in the job (through
/// `TARGET.` or names the slot ad does not define), sorted, lower case.
pub fn significant_attributes(slots: &[ClassAd]) -> Vec<String> {
    let mut names = BTreeSet::new();
    for slot in slots {
        for attr in ["Requirements", "Rank", "Start"] {
            names.extend(classad::attribute_references(slot, attr).external);
        }
    }
    names.into_iter().collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use classad::parse_ad;

    fn ev() -> Evaluator {
        crate::evaluator(1_700_000_000, classad::time::utc_zone)
    }

    fn slot(name: &str, extra: &str) -> ClassAd {
        parse_ad(&format!(
            "[ Name = \"{name}\"; State = \"Unclaimed\"; Activity = \"Idle\"; Cpus = 1; Memory = 1024; Disk = 100000; Arch = \"X86_64\"; OpSys = \"LINUX\"; Start = true; Requirements = START; {extra} ]"
        ))
        .unwrap()
    }

    fn job(extra: &str) -> ClassAd {
        parse_ad(&format!(
            "[ Owner = \"u\"; RequestCpus = 1; RequestMemory = 100; RequestDisk = 10; Requirements = TARGET.Arch == \"X86_64\" && TARGET.Memory >= RequestMemory; {extra} ]"
        ))
        .unwrap()
    }

    fn sub(name: &str, prio: f64, reqs: Vec<(u64, ClassAd, u64)>) -> Submitter {
        Submitter {
            name: name.into(),
            priority: prio,
            requests: reqs
                .into_iter()
                .map(|(autocluster, ad, count)| Request {
                    autocluster,
                    ad,
                    count,
                })
                .collect(),
        }
    }

    fn names(input: &CycleInput, out: &CycleOutcome) -> Vec<String> {
        out.matches
            .iter()
            .map(|m| {
                let n = input.slots[m.slot].lookup("Name").unwrap().to_string();
                format!("{}:{}:{}", m.submitter, m.autocluster, n.trim_matches('"'))
            })
            .collect()
    }

    #[test]
    fn matches_as_many_jobs_as_free_slots_and_no_slot_twice() {
        let input = CycleInput {
            slots: vec![
                slot("s1", ""),
                slot("s2", ""),
                slot("s3", "State = \"Claimed\""),
            ],
            submitters: vec![sub("u@d", 0.5, vec![(1, job(""), 5)])],
        };
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:s1", "u@d:1:s2"]);
        assert_eq!(
            out.unmatched,
            vec![Unmatched {
                submitter: "u@d".into(),
                autocluster: 1,
                count: 3
            }]
        );
    }

    #[test]
    fn requirements_both_ways() {
        let input = CycleInput {
            slots: vec![
                slot("small", "Memory = 50"),
                slot("picky", "Start = TARGET.Owner == \"other\""),
                slot("ok", ""),
            ],
            submitters: vec![sub("u@d", 0.5, vec![(1, job(""), 3)])],
        };
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:ok"]);
    }

    #[test]
    fn job_rank_then_slot_rank_choose_the_slot() {
        let input = CycleInput {
            slots: vec![
                slot("a", "Kind = \"slow\""),
                slot("b", "Kind = \"fast\""),
                slot("c", "Kind = \"slow\"; Rank = 10"),
            ],
            submitters: vec![sub(
                "u@d",
                0.5,
                vec![(1, job("Rank = TARGET.Kind == \"fast\""), 3)],
            )],
        };
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:1:b", "u@d:1:c", "u@d:1:a"]);
    }

    #[test]
    fn submitters_take_turns_in_priority_order() {
        let input = CycleInput {
            slots: (1..=5).map(|i| slot(&format!("s{i}"), "")).collect(),
            submitters: vec![
                sub("bob@d", 10.0, vec![(7, job(""), 10)]),
                sub("alice@d", 0.5, vec![(3, job(""), 10)]),
            ],
        };
        let out = negotiate(&input, &mut ev());
        assert_eq!(
            names(&input, &out),
            [
                "alice@d:3:s1",
                "bob@d:7:s2",
                "alice@d:3:s3",
                "bob@d:7:s4",
                "alice@d:3:s5"
            ]
        );
    }

    #[test]
    fn a_request_that_fits_nothing_does_not_block_the_next() {
        let input = CycleInput {
            slots: vec![slot("s1", "")],
            submitters: vec![sub(
                "u@d",
                0.5,
                vec![(1, job("RequestMemory = 1000000"), 2), (2, job(""), 1)],
            )],
        };
        let out = negotiate(&input, &mut ev());
        assert_eq!(names(&input, &out), ["u@d:2:s1"]);
        assert_eq!(out.unmatched[0].autocluster, 1);
        assert_eq!(out.unmatched[0].count, 2);
    }

    #[test]
    fn partitionable_slot_is_shared_until_its_resources_run_out() {
        let p = slot(
            "p",
            "PartitionableSlot = true; Cpus = 4; Memory = 1000; Disk = 1000",
        );
        let input = CycleInput {
            slots: vec![p],
            submitters: vec![sub(
                "u@d",
                0.5,
                vec![(1, job("RequestCpus = 1; RequestMemory = 300"), 5)],
            )],
        };
        let out = negotiate(&input, &mut ev());
        assert_eq!(out.matches.len(), 3, "memory for three jobs only");
        let mem: Vec<String> = out
            .matches
            .iter()
            .map(|m| m.slot_ad.lookup("Memory").unwrap().to_string())
            .collect();
        assert_eq!(mem, ["1000", "700", "400"]);
        assert_eq!(out.unmatched[0].count, 2);
    }

    #[test]
    fn significant_attributes_come_from_slot_policy() {
        let s = slot(
            "s",
            "Start = IsLocal && TARGET.ImageSize < 10; IsLocal = Department == \"physics\"; Rank = TARGET.Prio",
        );
        assert_eq!(
            significant_attributes(&[s]),
            ["department", "imagesize", "prio"]
        );
    }
}
