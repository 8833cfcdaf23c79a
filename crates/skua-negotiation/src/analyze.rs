//! Why a job matches or not: `skua q -better-analyze`, as data.

use classad::{symmetric_match, BinOp, ClassAd, Evaluator, Expr};
use skua_types::SlotState;

/// How many slots one top-level clause of the job's Requirements accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClauseCount {
    /// The clause, canonical text without its outer parentheses.
    pub clause: String,
    /// Slots for which it is true.
    pub matched: usize,
}

/// The analysis of one job against the pool's slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The job's Requirements, canonical text (empty if it has none).
    pub requirements: String,
    /// Its top-level `&&` clauses with their slot counts.
    pub clauses: Vec<ClauseCount>,
    /// Slots considered.
    pub slots: usize,
    /// Slots the job's Requirements reject.
    pub rejected_by_job: usize,
    /// Slots whose own Requirements (START) reject the job.
    pub reject_job: usize,
    /// Matching slots already running this user's jobs.
    pub running_yours: usize,
    /// Matching slots claimed by other users.
    pub serving_others: usize,
    /// Matching slots free to run the job now.
    pub available: usize,
}

/// Splits `e` into its top-level `&&` operands, through parentheses.
fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        Expr::Paren(inner) if matches!(inner.as_ref(), Expr::Binary(BinOp::And, _, _)) => {
            conjuncts(inner, out)
        }
        other => out.push(other),
    }
}

fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(inner) => strip_parens(inner),
        other => other,
    }
}

fn text_attr(ev: &mut Evaluator, ad: &ClassAd, name: &str) -> Option<String> {
    ev.eval_attr(name, ad, None).as_string()
}

/// Analyzes `job` against `slots`. `user` is the job's submitter
/// (`Owner@UidDomain` or `Owner`), compared with a claimed slot's
/// `RemoteOwner`/`RemoteUser` to tell the user's own claims from others'.
pub fn analyze(ev: &mut Evaluator, job: &ClassAd, slots: &[ClassAd], user: &str) -> Analysis {
    let mut a = Analysis {
        slots: slots.len(),
        ..Analysis::default()
    };
    let clauses: Vec<Expr> = match job.lookup("Requirements") {
        Some(req) => {
            a.requirements = req.to_string();
            let mut parts = Vec::new();
            conjuncts(req, &mut parts);
            parts.into_iter().map(|e| strip_parens(e).clone()).collect()
        }
        None => Vec::new(),
    };
    a.clauses = clauses
        .iter()
        .map(|c| ClauseCount {
            clause: c.to_string(),
            matched: 0,
        })
        .collect();
    let short_user = user.split('@').next().unwrap_or(user);
    for slot in slots {
        for (i, c) in clauses.iter().enumerate() {
            if ev.eval(c, Some(job), Some(slot)).is_true() {
                a.clauses[i].matched += 1;
            }
        }
        let m = symmetric_match(ev, job, slot);
        if !m.job_requirements_ok {
            a.rejected_by_job += 1;
            continue;
        }
        if !m.machine_requirements_ok {
            a.reject_job += 1;
            continue;
        }
        // A slot that names no state (none, or not a string, or empty) counts as available.
        let available = text_attr(ev, slot, "State")
            .filter(|s| !s.is_empty())
            .is_none_or(|s| SlotState::from_name(&s) == Some(SlotState::Unclaimed));
        if available {
            a.available += 1;
            continue;
        }
        let remote = text_attr(ev, slot, "RemoteOwner")
            .or_else(|| text_attr(ev, slot, "RemoteUser"))
            .unwrap_or_default();
        let remote_short = remote.split('@').next().unwrap_or(&remote);
        if !remote.is_empty() && (remote == user || remote_short == short_user) {
            a.running_yours += 1;
        } else {
            // Claimed by someone else, or Owner, Matched, Preempting...: not
            // available now.
            a.serving_others += 1;
        }
    }
    a
}

impl Analysis {
    /// The clauses that no slot satisfies.
    pub fn unsatisfiable(&self) -> impl Iterator<Item = &ClauseCount> {
        self.clauses.iter().filter(|c| c.matched == 0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use classad::parse_ad;

    fn ev() -> Evaluator {
        crate::evaluator(1_700_000_000, classad::time::utc_zone)
    }

    #[test]
    fn counts_each_clause_and_the_summary() {
        let slots: Vec<ClassAd> = [
            "[ Name = \"a\"; State = \"Unclaimed\"; Memory = 2000; Arch = \"X86_64\"; Requirements = true ]",
            "[ Name = \"b\"; State = \"Claimed\"; RemoteOwner = \"u@d\"; Memory = 4000; Arch = \"X86_64\"; Requirements = true ]",
            "[ Name = \"c\"; State = \"Claimed\"; RemoteOwner = \"v@d\"; Memory = 4000; Arch = \"X86_64\"; Requirements = true ]",
            "[ Name = \"d\"; State = \"Unclaimed\"; Memory = 4000; Arch = \"X86_64\"; Requirements = TARGET.Owner == \"v\" ]",
            "[ Name = \"e\"; State = \"Unclaimed\"; Memory = 500; Arch = \"ARM\"; Requirements = true ]",
        ]
        .iter()
        .map(|t| parse_ad(t).unwrap())
        .collect();
        let job = parse_ad(
            "[ Owner = \"u\"; RequestMemory = 1000; Requirements = (TARGET.Arch == \"X86_64\") && (TARGET.Memory >= RequestMemory) && (TARGET.Memory > 3000) ]",
        )
        .unwrap();
        let a = analyze(&mut ev(), &job, &slots, "u@d");
        let got: Vec<(String, usize)> = a
            .clauses
            .iter()
            .map(|c| (c.clause.clone(), c.matched))
            .collect();
        assert_eq!(
            got,
            vec![
                ("TARGET.Arch == \"X86_64\"".to_string(), 4),
                ("TARGET.Memory >= RequestMemory".to_string(), 4),
                ("TARGET.Memory > 3000".to_string(), 3),
            ]
        );
        assert_eq!(a.slots, 5);
        assert_eq!(a.rejected_by_job, 2);
        assert_eq!(a.reject_job, 1);
        assert_eq!(a.running_yours, 1);
        assert_eq!(a.serving_others, 1);
        assert_eq!(a.available, 0);
        assert_eq!(a.unsatisfiable().count(), 0);
    }

    #[test]
    fn a_clause_no_slot_satisfies_is_named() {
        let slots =
            vec![parse_ad("[ State = \"Unclaimed\"; Memory = 10; Requirements = true ]").unwrap()];
        let job = parse_ad("[ Requirements = TARGET.Memory > 5 && TARGET.HasGpu ]").unwrap();
        let a = analyze(&mut ev(), &job, &slots, "u");
        let none: Vec<&str> = a.unsatisfiable().map(|c| c.clause.as_str()).collect();
        assert_eq!(none, ["TARGET.HasGpu"]);
        assert_eq!(a.rejected_by_job, 1);
    }
}
