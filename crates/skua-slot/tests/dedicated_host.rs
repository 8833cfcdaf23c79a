//! An execute host configured for the dedicated scheduler as
//! docs/parallel.md ("For administrators") tells: the slot ads advertise
//! `DedicatedScheduler`, START and RANK prefer that scheduler's jobs, and
//! ordinary jobs may still run there (backfill).

#![allow(clippy::unwrap_used)]

use classad::{parse_ad, ClassAd, EvalOptions, Evaluator, Value};
use skua_config::{Config, LoadOptions, MemoryFiles};
use skua_slot::{Machine, MachineFacts, StartdConfig};

/// The configuration of docs/parallel.md.
const DEDICATED: &str = r#"
DedicatedScheduler = "DedicatedScheduler@submit.example.org"
STARTD_ATTRS = $(STARTD_ATTRS), DedicatedScheduler
START = (Scheduler =?= $(DedicatedScheduler)) || (TARGET.JobUniverse =!= 11)
RANK = Scheduler =?= $(DedicatedScheduler)
SUSPEND = False
CONTINUE = True
PREEMPT = False
KILL = False
WANT_SUSPEND = False
WANT_VACATE = False
"#;

fn machine() -> Machine {
    let files = MemoryFiles::new().with("/etc/skua/skua_config", DEDICATED);
    let config = Config::load(
        &files,
        &LoadOptions::new().main_file("/etc/skua/skua_config"),
    )
    .expect("the documented configuration loads");
    let knob = |k: &str| config.get(k).ok().flatten();
    let facts = MachineFacts {
        cpus: 2,
        memory_mb: 2048,
        disk_kb: 100_000,
        hostname: "exec1.example.org".into(),
        ..MachineFacts::default()
    };
    let cfg = StartdConfig::from_knobs(&knob, &facts).expect("startd configuration");
    Machine::new(facts, cfg, 1000)
}

fn eval(attr: &str, my: &ClassAd, target: Option<&ClassAd>) -> Value {
    Evaluator::new(EvalOptions::default()).eval_attr(attr, my, target)
}

fn job(text: &str) -> ClassAd {
    parse_ad(&format!(
        "[ RequestCpus = 1; RequestMemory = 10; Requirements = true; {text} ]"
    ))
    .unwrap()
}

#[test]
fn the_documented_configuration_makes_a_dedicated_slot() {
    let ads = machine().ads(1000);
    let slot = &ads[0].1;
    assert_eq!(
        eval("DedicatedScheduler", slot, None)
            .as_string()
            .as_deref(),
        Some("DedicatedScheduler@submit.example.org")
    );

    let ours = job("JobUniverse = 11; Scheduler = \"DedicatedScheduler@submit.example.org\"");
    let other = job("JobUniverse = 11; Scheduler = \"DedicatedScheduler@elsewhere.org\"");
    let vanilla = job("JobUniverse = 5");
    assert!(eval("Requirements", slot, Some(&ours)).is_true());
    assert!(
        !eval("Requirements", slot, Some(&other)).is_true(),
        "another schedd's parallel jobs are refused"
    );
    assert!(
        eval("Requirements", slot, Some(&vanilla)).is_true(),
        "ordinary jobs may backfill"
    );
    // The dedicated scheduler's jobs rank above ordinary ones.
    assert!(eval("Rank", slot, Some(&ours)).is_true());
    assert!(!eval("Rank", slot, Some(&vanilla)).is_true());
}
