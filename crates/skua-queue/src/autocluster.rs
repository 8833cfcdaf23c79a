//! Autoclusters: idle jobs that are alike for matchmaking, grouped so the
//! negotiator considers each group once with a count (HTCondor's
//! autoclustering).

use std::collections::{BTreeSet, HashMap};

use classad::{Evaluator, Expr};

use crate::{JobId, Queue};

/// Job attributes always significant: the job's side of matching.
const ALWAYS: &[&str] = &[
    "Requirements",
    "Rank",
    "RequestCpus",
    "RequestMemory",
    "RequestDisk",
];

/// One group of alike idle jobs, in queue order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoCluster {
    /// The values of the significant attributes, as text: jobs with the
    /// same key are alike for matching.
    pub key: String,
    /// Its jobs, the one to run first first.
    pub jobs: Vec<JobId>,
}

impl Queue {
    /// The idle jobs of `owner` grouped into autoclusters, in the order of
    /// [`Queue::idle_jobs_in_order`] (a group comes where its first job
    /// comes). Jobs are alike when their values of `significant` (the job
    /// attributes the slots refer to), of their Requirements, Rank and
    /// resource requests, and of every job attribute those refer to, are
    /// the same expressions.
    pub fn autoclusters(
        &self,
        ev: &mut Evaluator,
        owner: &str,
        significant: &[String],
        rank_expr: Option<&Expr>,
    ) -> Vec<AutoCluster> {
        let mut out: Vec<AutoCluster> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for id in self.idle_jobs_in_order(ev, Some(owner), rank_expr) {
            let Some(ad) = self.job(id) else { continue };
            let mut names: BTreeSet<String> =
                significant.iter().map(|s| s.to_ascii_lowercase()).collect();
            for a in ALWAYS {
                let r = classad::attribute_references(ad, a);
                names.insert(a.to_ascii_lowercase());
                names.extend(r.internal);
            }
            let mut key = String::new();
            for n in &names {
                key.push_str(n);
                key.push('=');
                match ad.lookup(n) {
                    Some(e) => key.push_str(&e.to_string()),
                    None => key.push('\u{0}'),
                }
                key.push('\n');
            }
            match index.get(&key) {
                Some(&i) => out[i].jobs.push(id),
                None => {
                    index.insert(key.clone(), out.len());
                    out.push(AutoCluster {
                        key,
                        jobs: vec![id],
                    });
                }
            }
        }
        out
    }
}
