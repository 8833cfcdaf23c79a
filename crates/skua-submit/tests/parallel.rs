//! The parallel universe as users write it. Every expected value here is what HTCondor
//! 25.14.1's own submit code builds for the same text (checked with the submit oracle of
//! `../shared/submit`, which drives the `htcondor2` wheel's `SubmitHash`).

use classad::{unparse, ClassAd};
use skua_submit::{
    assign_dedicated_scheduler, submit, unsupported_universe, MemoryFiles, SubmitError,
    SubmitOptions,
};

const DIR: &str = "/home/u/job";

fn opts() -> SubmitOptions {
    let mut o = SubmitOptions::new("alice", 42, 1_700_000_000, DIR);
    o.filesystem_domain = "fs.example".to_string();
    o
}

fn files() -> MemoryFiles {
    MemoryFiles::new().with(&format!("{DIR}/run.sh"), "#!/bin/sh\n")
}

fn jobs_with(text: &str, o: &SubmitOptions) -> Vec<ClassAd> {
    match submit(text, &files(), o) {
        Ok(s) => {
            assert_eq!(s.clusters.len(), 1, "one parallel job is one cluster");
            s.clusters.into_iter().flat_map(|c| c.jobs).collect()
        }
        Err(e) => panic!("rejected: {e}\n{text}"),
    }
}

fn jobs(text: &str) -> Vec<ClassAd> {
    jobs_with(text, &opts())
}

fn attr(ad: &ClassAd, name: &str) -> String {
    ad.lookup(name).map_or("<absent>".to_string(), unparse)
}

fn err(text: &str) -> SubmitError {
    match submit(text, &files(), &opts()) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e,
    }
}

const TWO_SECTIONS: &str = "universe = parallel
executable = run.sh
arguments = node $(Node) of $(Process)
output = out.$(Node)
environment = N=$(Node)
+Foo = \"x$(Node)\"
machine_count = 2
queue
machine_count = 3
requirements = Memory > 10
queue
";

#[test]
fn each_queue_statement_is_a_proc_of_one_cluster_with_its_own_node_count() {
    let ads = jobs(TWO_SECTIONS);
    assert_eq!(ads.len(), 2);
    for (i, (ad, n)) in ads.iter().zip([2, 3]).enumerate() {
        assert_eq!(attr(ad, "ClusterId"), "42");
        assert_eq!(attr(ad, "ProcId"), i.to_string());
        assert_eq!(attr(ad, "JobUniverse"), "11");
        assert_eq!(attr(ad, "MinHosts"), n.to_string());
        assert_eq!(attr(ad, "MaxHosts"), n.to_string());
        assert_eq!(attr(ad, "RequestCpus"), "1");
        assert_eq!(attr(ad, "WantIOProxy"), "true");
        assert_eq!(attr(ad, "JobRequiresSandbox"), "true");
        assert_eq!(attr(ad, "KillSig"), "\"SIGTERM\"");
        assert_eq!(attr(ad, "CurrentHosts"), "0");
        // condor_submit leaves the scheduler to the schedd: no name, no Scheduler.
        assert_eq!(attr(ad, "Scheduler"), "<absent>");
    }
    // the second section's requirements are its own
    let req0 = attr(&ads[0], "Requirements");
    let req1 = attr(&ads[1], "Requirements");
    assert!(!req0.contains("Memory > 10"), "{req0}");
    assert!(req1.starts_with("(Memory > 10) && "), "{req1}");
    // a parallel job's Disk clause is the plain one (as for every non-vanilla universe)
    assert!(req0.contains("(TARGET.Disk >= RequestDisk)"), "{req0}");
    assert!(!req0.contains("versionGE"), "{req0}");
}

#[test]
fn node_is_left_as_the_placeholder_in_every_string() {
    let ads = jobs(TWO_SECTIONS);
    assert_eq!(attr(&ads[0], "Args"), "\"node #pArAlLeLnOdE# of 0\"");
    assert_eq!(attr(&ads[1], "Args"), "\"node #pArAlLeLnOdE# of 1\"");
    assert_eq!(attr(&ads[0], "Out"), "\"out.#pArAlLeLnOdE#\"");
    assert_eq!(attr(&ads[0], "Environment"), "\"N=#pArAlLeLnOdE#\"");
    assert_eq!(attr(&ads[1], "Foo"), "\"x#pArAlLeLnOdE#\"");

    let ads = jobs(
        "universe = parallel\nmachine_count = 1\nexecutable = run.sh\n\
         log = l.$(Node)\nerror = e.$(NODE)\ntransfer_input_files = in.$(node)\n\
         arguments = $(Node:7)\nqueue\n",
    );
    assert_eq!(attr(&ads[0], "UserLog"), "\"/home/u/job/l.#pArAlLeLnOdE#\"");
    assert_eq!(attr(&ads[0], "Err"), "\"e.#pArAlLeLnOdE#\"");
    assert_eq!(attr(&ads[0], "TransferInput"), "\"in.#pArAlLeLnOdE#\"");
    assert_eq!(attr(&ads[0], "Args"), "\"#pArAlLeLnOdE#\"");
}

#[test]
fn a_files_own_node_macro_wins_and_other_universes_have_none() {
    let ads = jobs(
        "universe = parallel\nmachine_count = 1\nexecutable = run.sh\nNode = 5\narguments = $(Node)\nqueue\n",
    );
    assert_eq!(attr(&ads[0], "Args"), "\"5\"");
    let ads = jobs("executable = run.sh\narguments = a$(Node)b $(Node:7)\nqueue\n");
    assert_eq!(attr(&ads[0], "Args"), "\"ab 7\"");
    // a universe written with a macro counts, and a queue variable named Node wins
    let ads = jobs(
        "U = parallel\nuniverse = $(U)\nmachine_count = 2\nexecutable = run.sh\narguments = $(Node)\nqueue\n",
    );
    assert_eq!(attr(&ads[0], "Args"), "\"#pArAlLeLnOdE#\"");
    let ads = jobs(
        "universe = parallel\nmachine_count = 2\nexecutable = run.sh\narguments = $(Node)\nqueue Node in (a, b)\n",
    );
    assert_eq!(attr(&ads[0], "Args"), "\"a\"");
    assert_eq!(attr(&ads[1], "Args"), "\"b\"");
    // the default universe counts
    let mut o = opts();
    o.default_universe = "parallel".to_string();
    let ads = jobs_with(
        "executable = run.sh\nmachine_count = 2\narguments = $(Node)\nqueue\n",
        &o,
    );
    assert_eq!(attr(&ads[0], "JobUniverse"), "11");
    assert_eq!(attr(&ads[0], "Args"), "\"#pArAlLeLnOdE#\"");
}

#[test]
fn a_directory_named_by_node_does_not_exist_at_submit_time() {
    // HTCondor checks initialdir with the placeholder in it, and refuses.
    let e = err("universe = parallel\nmachine_count = 2\nexecutable = run.sh\ninitialdir = d$(Node)\nqueue\n");
    assert!(e.to_string().contains("#pArAlLeLnOdE#"), "{e}");
}

#[test]
fn machine_count_is_required_and_node_count_is_its_other_name() {
    let e = err("universe = parallel\nexecutable = run.sh\n\nqueue\n");
    assert!(
        matches!(e, SubmitError::MissingMachineCount { line: 4, .. }),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with("job.sub:4: No machine_count specified!"),
        "{text}"
    );
    // an empty value is no value
    let e = err("universe = parallel\nmachine_count =\nexecutable = run.sh\nqueue\n");
    assert!(
        matches!(e, SubmitError::MissingMachineCount { .. }),
        "{e:?}"
    );

    let ads = jobs("universe = parallel\nexecutable = run.sh\nnode_count = 4\nqueue\n");
    assert_eq!(attr(&ads[0], "MinHosts"), "4");
    assert_eq!(attr(&ads[0], "MaxHosts"), "4");
    // machine_count wins over node_count
    let ads = jobs(
        "universe = parallel\nexecutable = run.sh\nnode_count = 4\nmachine_count = 6\nqueue\n",
    );
    assert_eq!(attr(&ads[0], "MaxHosts"), "6");
    // a vanilla job's machine_count is ignored
    let ads = jobs("executable = run.sh\nmachine_count = 2\nqueue\n");
    assert_eq!(attr(&ads[0], "MaxHosts"), "1");
    assert_eq!(attr(&ads[0], "WantIOProxy"), "<absent>");
    assert_eq!(attr(&ads[0], "JobRequiresSandbox"), "<absent>");
}

#[test]
fn machine_count_is_read_as_condor_submit_reads_it() {
    for (value, hosts) in [
        ("3", "3"),
        ("2+1", "2"),
        ("2.7", "2"),
        ("abc", "0"),
        ("-2", "-2"),
        (" 5 ", "5"),
        ("$(n)", "8"),
    ] {
        let text = format!(
            "universe = parallel\nn = 8\nexecutable = run.sh\nmachine_count = {value}\nqueue\n"
        );
        let ads = jobs(&text);
        assert_eq!(attr(&ads[0], "MaxHosts"), hosts, "machine_count = {value}");
        assert_eq!(attr(&ads[0], "MinHosts"), hosts, "machine_count = {value}");
    }
}

#[test]
fn request_cpus_defaults_to_one_per_node() {
    let mut o = opts();
    o.default_request_cpus = "4".to_string();
    let ads = jobs_with(
        "universe = parallel\nmachine_count = 2\nexecutable = run.sh\nqueue\n",
        &o,
    );
    assert_eq!(attr(&ads[0], "RequestCpus"), "1");
    let req = attr(&ads[0], "Requirements");
    assert!(!req.contains("Cpus"), "{req}");
    let ads = jobs(
        "universe = parallel\nmachine_count = 2\nrequest_cpus = 4\nexecutable = run.sh\nqueue\n",
    );
    assert_eq!(attr(&ads[0], "RequestCpus"), "4");
    let req = attr(&ads[0], "Requirements");
    assert!(req.contains("(TARGET.Cpus >= RequestCpus)"), "{req}");
    // `queue 3` of one section: three procs of two nodes each
    let ads = jobs("universe = parallel\nmachine_count = 2\nexecutable = run.sh\nqueue 3\n");
    assert_eq!(ads.len(), 3);
    assert!(ads.iter().all(|a| attr(a, "MaxHosts") == "2"));
}

#[test]
fn a_real_submission_names_the_dedicated_scheduler_of_its_schedd() {
    let mut sub = submit(
        "universe = parallel\nmachine_count = 2\nexecutable = run.sh\nqueue\n\
         machine_count = 1\nqueue\n",
        &files(),
        &opts(),
    )
    .expect("valid");
    assign_dedicated_scheduler(&mut sub, "submit.example.org");
    for job in sub.jobs() {
        assert_eq!(
            attr(job, "Scheduler"),
            "\"DedicatedScheduler@submit.example.org\""
        );
    }
    // other universes are left alone
    let mut plain = submit("executable = run.sh\nqueue\n", &files(), &opts()).expect("valid");
    assign_dedicated_scheduler(&mut plain, "submit.example.org");
    let job = plain.jobs().next().expect("one job");
    assert_eq!(attr(job, "Scheduler"), "<absent>");
}

#[test]
fn a_real_submission_accepts_parallel_jobs() {
    let sub = submit(
        "universe = parallel\nmachine_count = 2\nexecutable = run.sh\nqueue\n",
        &files(),
        &opts(),
    )
    .expect("valid");
    assert_eq!(unsupported_universe(&sub), None);
    // another universe Skua cannot run is still refused
    let sub = submit(
        "universe = java\nexecutable = run.sh\nqueue\n",
        &files(),
        &opts(),
    )
    .expect("valid");
    assert!(unsupported_universe(&sub).is_some_and(|w| w.contains("java")));
}
