//! The submit language, construct by construct: the job ads built, the errors raised, and a
//! property test that no text makes the reader panic.

use classad::{unparse, ClassAd};
use proptest::prelude::*;
use skua_submit::{submit, unsupported_universe, MemoryFiles, SubmitError, SubmitOptions};

const DIR: &str = "/home/u/job";

fn opts() -> SubmitOptions {
    let mut o = SubmitOptions::new("alice", 42, 1_700_000_000, DIR);
    o.filesystem_domain = "fs.example".to_string();
    o.env.insert("HOME".to_string(), "/home/u".to_string());
    o.env.insert("TZ".to_string(), "UTC".to_string());
    o.env.insert("SKUA_X".to_string(), "y".to_string());
    o
}

fn files() -> MemoryFiles {
    MemoryFiles::new()
        .with(&format!("{DIR}/items.txt"), "a 1\nb 2\n\nc 3\n")
        .with(&format!("{DIR}/x.dat"), "")
        .with(&format!("{DIR}/y.dat"), "")
        .with(&format!("{DIR}/d1/f"), "")
        .with(&format!("{DIR}/sub/"), "")
        .with(&format!("{DIR}/inc.sub"), "arguments = included\n")
}

fn jobs(text: &str) -> Vec<ClassAd> {
    match submit(text, &files(), &opts()) {
        Ok(s) => s.clusters.into_iter().flat_map(|c| c.jobs).collect(),
        Err(e) => panic!("rejected: {e}\n{text}"),
    }
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

/// (submit text, attribute, expected unparsed value of job 0)
const CASES: &[(&str, &str, &str)] = &[
    // executable, iwd, standard attributes
    ("executable = /bin/sleep\nqueue\n", "Cmd", "\"/bin/sleep\""),
    ("executable = run.sh\nqueue\n", "Cmd", "\"/home/u/job/run.sh\""),
    ("executable = ./run.sh\nqueue\n", "Cmd", "\"/home/u/job/./run.sh\""),
    ("executable = /bin/sleep\nqueue\n", "Iwd", "\"/home/u/job\""),
    // chirp: want_io_proxy asks for the starter's I/O proxy
    ("executable = /bin/sleep\nwant_io_proxy = true\nqueue\n", "WantIOProxy", "true"),
    ("executable = /bin/sleep\nwant_io_proxy = false\nqueue\n", "WantIOProxy", "<absent>"),
    ("executable = /bin/sleep\ninitialdir = sub\nqueue\n", "Iwd", "\"/home/u/job/sub\""),
    ("executable = /bin/sleep\nqueue\n", "JobStatus", "1"),
    ("executable = /bin/sleep\nqueue\n", "QDate", "1700000000"),
    ("executable = /bin/sleep\nqueue\n", "Owner", "\"alice\""),
    ("executable = /bin/sleep\nqueue\n", "ClusterId", "42"),
    ("executable = /bin/sleep\nqueue\n", "NumJobStarts", "0"),
    ("executable = /bin/sleep\nqueue\n", "JobUniverse", "5"),
    // the job lease: condor_submit's default, the user's value, 0 = none
    ("executable = /bin/sleep\nqueue\n", "JobLeaseDuration", "2400"),
    ("executable = /bin/sleep\njob_lease_duration = 5\nqueue\n", "JobLeaseDuration", "5"),
    ("executable = /bin/sleep\njob_lease_duration = 0\nqueue\n", "JobLeaseDuration", "<absent>"),
    ("executable = /bin/sleep\nqueue\n", "In", "\"/dev/null\""),
    ("executable = /bin/sleep\nqueue\n", "FileSystemDomain", "\"fs.example\""),
    // arguments
    ("executable = /bin/sleep\nqueue\n", "Arguments", "\"\""),
    ("executable = /bin/sleep\narguments = a  b\nqueue\n", "Args", "\"a b\""),
    ("executable = /bin/sleep\nargs = one \\\"two\\\"\nqueue\n", "Args", "\"one \\\"two\\\"\""),
    ("executable = /bin/sleep\narguments = \"one 'two three'\"\nqueue\n", "Arguments", "\"one two' 'three\""),
    ("executable = /bin/sleep\narguments = \"say \"\"hi\"\"\"\nqueue\n", "Arguments", "\"say \\\"hi\\\"\""),
    // environment and getenv
    ("executable = /bin/sleep\nenvironment = A=1;B=two\nqueue\n", "Environment", "\"A=1 B=two\""),
    ("executable = /bin/sleep\nenvironment = \"A=1 B='x y'\"\nqueue\n", "Environment", "\"A=1 B=x' 'y\""),
    ("executable = /bin/sleep\ngetenv = true\nqueue\n", "Environment", "\"HOME=/home/u SKUA_X=y TZ=UTC\""),
    ("executable = /bin/sleep\ngetenv = skua*\nenvironment = A=1\nqueue\n", "Environment", "\"A=1 SKUA_X=y\""),
    // files
    ("executable = /bin/sleep\noutput = o.txt\nqueue\n", "Out", "\"o.txt\""),
    ("executable = /bin/sleep\noutput = o.txt\nqueue\n", "StreamOut", "false"),
    ("executable = /bin/sleep\nlog = j.log\nqueue\n", "UserLog", "\"/home/u/job/j.log\""),
    ("executable = /bin/sleep\ntransfer_input_files = a , b,c\nqueue\n", "TransferInput", "\"a,b,c\""),
    ("executable = /bin/sleep\ntransfer_output_remaps = \"a = b\"\nqueue\n", "TransferOutputRemaps", "\"a = b\""),
    ("executable = /bin/sleep\nshould_transfer_files = yes\nqueue\n", "ShouldTransferFiles", "\"YES\""),
    ("executable = /bin/sleep\nwhen_to_transfer_output = ON_EXIT_OR_EVICT\nqueue\n", "ShouldTransferFiles", "\"YES\""),
    ("executable = /bin/sleep\ntransfer_executable = false\nqueue\n", "TransferExecutable", "false"),
    // requests
    ("executable = /bin/sleep\nqueue\n", "RequestMemory", "128"),
    ("executable = /bin/sleep\nrequest_memory = 2048K\nqueue\n", "RequestMemory", "2"),
    ("executable = /bin/sleep\nrequest_memory = 1.5 GB\nqueue\n", "RequestMemory", "1536"),
    ("executable = /bin/sleep\nrequest_disk = 2GB\nqueue\n", "RequestDisk", "2097152"),
    ("executable = /bin/sleep\nrequest_cpus = 4\nqueue\n", "RequestCpus", "4"),
    ("executable = /bin/sleep\nrequest_gpus = 2\nqueue\n", "RequestGPUs", "2"),
    ("executable = /bin/sleep\nrequest_foo = 3\nqueue\n", "Requestfoo", "3"),
    // policy
    ("executable = /bin/sleep\nperiodic_hold = JobStatus == 2\nqueue\n", "PeriodicHold", "JobStatus == 2"),
    ("executable = /bin/sleep\nperiodic_hold_subcode = 7\nqueue\n", "PeriodicHoldSubCode", "7"),
    ("executable = /bin/sleep\non_exit_remove = ExitCode == 0\nqueue\n", "OnExitRemove", "ExitCode == 0"),
    ("executable = /bin/sleep\nmax_retries = 3\nqueue\n", "JobMaxRetries", "3"),
    ("executable = /bin/sleep\nmax_retries = 3\nqueue\n", "OnExitRemove", "NumJobCompletions > JobMaxRetries || ExitCode is 0"),
    ("executable = /bin/sleep\nsuccess_exit_code = 2\nqueue\n", "JobSuccessExitCode", "2"),
    ("executable = /bin/sleep\nkill_sig = SIGKILL\nqueue\n", "KillSig", "\"SIGKILL\""),
    // scheduling and status
    ("executable = /bin/sleep\npriority = -5\nqueue\n", "JobPrio", "-5"),
    ("executable = /bin/sleep\nhold = true\nqueue\n", "JobStatus", "5"),
    ("executable = /bin/sleep\nhold = true\nqueue\n", "HoldReasonCode", "15"),
    ("executable = /bin/sleep\nnotification = Always\nqueue\n", "JobNotification", "1"),
    ("executable = /bin/sleep\nbatch_name = b-$(Cluster)\nqueue\n", "JobBatchName", "\"b-42\""),
    ("executable = /bin/sleep\naccounting_group = g\nqueue\n", "AccountingGroup", "\"g.alice\""),
    ("executable = /bin/sleep\nconcurrency_limits = B, a\nqueue\n", "ConcurrencyLimits", "\"a,b\""),
    ("universe = local\nexecutable = /bin/sleep\nqueue\n", "JobUniverse", "12"),
    ("universe = scheduler\nexecutable = /bin/sleep\nqueue\n", "KillSig", "\"SIGTERM\""),
    // custom attributes
    ("executable = /bin/sleep\n+Project = \"p-$(Process)\"\nqueue\n", "Project", "\"p-0\""),
    ("executable = /bin/sleep\nMY.List = {1, 2}\nqueue\n", "List", "{ 1,2 }"),
    ("executable = /bin/sleep\n+JobPrio = 9\nqueue\n", "JobPrio", "9"),
    // macros
    ("a = x\nb = $(a)y\nexecutable = /bin/sleep\narguments = $(b)\nqueue\n", "Args", "\"xy\""),
    ("executable = /bin/sleep\narguments = $(v)\nv = late\nqueue\n", "Args", "\"late\""),
    ("executable = /bin/sleep\narguments = $(nope:dflt)\nqueue\n", "Args", "\"dflt\""),
    ("executable = /bin/sleep\narguments = $ENV(SKUA_X)\nqueue\n", "Args", "\"y\""),
    ("executable = /bin/sleep\nb = 10\narguments = $INT(b)\nqueue\n", "Args", "\"10\""),
    ("executable = /bin/sleep\narguments = $CHOICE(1, a, b)\nqueue\n", "Args", "\"b\""),
    ("executable = /bin/sleep\narguments = $RANDOM_INTEGER(5,5)\nqueue\n", "Args", "\"5\""),
    ("executable = /bin/sleep\np = /a/b.txt\narguments = $Fn(p)\nqueue\n", "Args", "\"b\""),
    ("executable = /bin/sleep\narguments = $$(Memory)\nqueue\n", "Args", "\"$$(Memory)\""),
    // `$$()` is the schedd's business at match time: kept as written
    ("executable = $$(OpSys)/run\nqueue\n", "Cmd", "\"/home/u/job/$$(OpSys)/run\""),
    ("executable = /bin/sleep\nenvironment = \"X=$$(Memory:0)\"\nqueue\n", "Environment", "\"X=$$(Memory:0)\""),
    ("executable = /bin/sleep\ntransfer_input_files = in.$$(Arch)\nqueue\n", "TransferInput", "\"in.$$(Arch)\""),
    ("executable = /bin/sleep\ninput = in.$$(Arch)\nqueue\n", "In", "\"in.$$(Arch)\""),
    ("executable = /bin/sleep\nmatch_list_length = 2+1\nqueue\n", "LastMatchListLength", "3"),
    ("x = 1\nexecutable = /bin/sleep\nif defined x\narguments = yes\nelse\narguments = no\nendif\nqueue\n", "Args", "\"yes\""),
    ("executable = /bin/sleep\nif version >= 9.0\narguments = new\nendif\nqueue\n", "Args", "\"new\""),
    ("executable = /bin/sleep\narguments @=end\n a\n@end\nqueue\n", "Args", "\"a\""),
    ("executable = /bin/sleep\ninclude : inc.sub\nqueue\n", "Args", "\"included\""),
    ("executable = /bin/sleep\narguments = x # not a comment\nqueue\n", "Args", "\"x # not a comment\""),
    ("EXECUTABLE = /bin/sleep\nArGs = $(PROCESS)\nQUEUE\n", "Args", "\"0\""),
];

#[test]
fn constructs() {
    for (text, name, want) in CASES {
        let ads = jobs(text);
        assert_eq!(&attr(&ads[0], name), want, "{name} in:\n{text}");
    }
}

/// (submit text, expected job count, attribute, expected values per job)
const QUEUE_CASES: &[(&str, &str, &[&str])] = &[
    ("queue 3", "Args", &["0", "1", "2"]),
    (
        "queue 2 in (a b)",
        "Args",
        &["a-0-0", "a-0-1", "b-1-2", "b-1-3"],
    ),
    ("queue x in [1:3] p, q, r, s", "Args", &["q-1-0", "r-2-0"]),
    ("queue in [::2] p q r", "Args", &["p-0-0", "r-2-1"]),
    (
        "queue f, n from items.txt",
        "Args",
        &["a-1", "b-2", "-", "c-3"],
    ),
    (
        "queue f, n from (\n  u 1\n  # skipped\n  v 2\n)",
        "Args",
        &["u-1", "v-2"],
    ),
    ("queue matching *.dat", "Args", &["x.dat-0-0", "y.dat-1-1"]),
    ("queue matching dirs d*", "Args", &["d1/-0-0"]),
    ("queue matching *.none", "Args", &[]),
];

#[test]
fn queue_forms() {
    for (q, name, want) in QUEUE_CASES {
        let args = if q.contains("f, n") {
            "$(f)-$(n)"
        } else if *q == "queue 3" {
            "$(Process)"
        } else if q.contains("queue x") {
            "$(x)-$(ItemIndex)-$(Step)"
        } else {
            "$(Item)-$(ItemIndex)-$(Process)"
        };
        let text = format!("executable = /bin/sleep\narguments = {args}\n{q}\n");
        let ads = jobs(&text);
        let got: Vec<String> = ads
            .iter()
            .map(|a| attr(a, name).trim_matches('"').to_string())
            .collect();
        assert_eq!(got, want.to_vec(), "{text}");
        for (i, ad) in ads.iter().enumerate() {
            assert_eq!(attr(ad, "ProcId"), i.to_string());
        }
    }
}

#[test]
fn several_queue_statements_continue_proc_ids() {
    let ads = jobs("executable = /bin/sleep\nv = one\narguments = $(v)\nqueue 2\nv = two\nqueue\n");
    let args: Vec<String> = ads.iter().map(|a| attr(a, "Args")).collect();
    assert_eq!(args, vec!["\"one\"", "\"one\"", "\"two\""]);
    assert_eq!(attr(&ads[2], "ProcId"), "2");
}

#[test]
fn default_requirements() {
    let ads = jobs("executable = /bin/sleep\nrequirements = Memory > 4\nrequest_gpus = 1\nqueue\n");
    let req = attr(&ads[0], "Requirements");
    assert!(req.starts_with("(Memory > 4) && "), "{req}");
    assert!(req.contains("TARGET.Arch == \"X86_64\""), "{req}");
    assert!(req.contains("TARGET.GPUs >= RequestGPUs"), "{req}");
    assert!(!req.contains("TARGET.Memory >= RequestMemory"), "{req}");
    let ads = jobs("executable = /bin/sleep\nshould_transfer_files = NO\nqueue\n");
    let req = attr(&ads[0], "Requirements");
    assert!(
        req.contains("TARGET.FileSystemDomain == MY.FileSystemDomain"),
        "{req}"
    );
    assert!(!req.contains("HasFileTransfer"), "{req}");
}

/// Checkpointing commands give HTCondor's attributes and clauses (checked against HTCondor
/// 25.14's own submit code through the htcondor2 wheel).
#[test]
fn checkpoint_commands() {
    let ads = jobs("executable = /bin/sleep\ncheckpoint_exit_code = 85\nqueue\n");
    assert_eq!(attr(&ads[0], "SuccessCheckpointExitCode"), "85");
    assert_eq!(attr(&ads[0], "WantFTOnCheckpoint"), "true");
    assert_eq!(attr(&ads[0], "CheckpointExitCode"), "<absent>");
    let req = attr(&ads[0], "Requirements");
    assert!(
        req.ends_with(" && TARGET.HasSelfCheckpointTransfers"),
        "{req}"
    );
    assert!(!req.contains("8.9.7"), "{req}");
    // The code is an integer expression.
    let ads = jobs("executable = /bin/sleep\ncheckpoint_exit_code = 80+5\nqueue\n");
    assert_eq!(attr(&ads[0], "SuccessCheckpointExitCode"), "85");
    let e = err("executable = /bin/sleep\ncheckpoint_exit_code = abc\nqueue\n");
    assert!(e.to_string().contains("checkpoint_exit_code"), "{e}");

    let ads = jobs(concat!(
        "executable = /bin/sleep\n",
        "transfer_checkpoint_files = state.txt, more\n",
        "checkpoint_destination = file:///ckpt/store\n",
        "when_to_transfer_output = ON_EXIT_OR_EVICT\n",
        "queue\n"
    ));
    assert_eq!(attr(&ads[0], "TransferCheckpoint"), "\"state.txt, more\"");
    assert_eq!(
        attr(&ads[0], "CheckpointDestination"),
        "\"file:///ckpt/store\""
    );
    assert_eq!(
        attr(&ads[0], "WhenToTransferOutput"),
        "\"ON_EXIT_OR_EVICT\""
    );
    assert_eq!(attr(&ads[0], "ShouldTransferFiles"), "\"YES\"");
    assert_eq!(attr(&ads[0], "WantFTOnCheckpoint"), "<absent>");
    let req = attr(&ads[0], "Requirements");
    assert!(
        req.contains("TARGET.HasFileTransfer && versioncmp("),
        "{req}"
    );
    assert!(!req.contains("HasSelfCheckpointTransfers"), "{req}");

    // A job without these commands has none of their attributes or clauses.
    let ads = jobs("executable = /bin/sleep\nqueue\n");
    for name in [
        "SuccessCheckpointExitCode",
        "WantFTOnCheckpoint",
        "TransferCheckpoint",
    ] {
        assert_eq!(attr(&ads[0], name), "<absent>", "{name}");
    }
    let req = attr(&ads[0], "Requirements");
    assert!(!req.contains("Checkpoint"), "{req}");
}

/// `+SkuaCheckpoint = "criu"` asks for a slot that offers that transparent backend.
#[test]
fn skua_checkpoint_backend_requirement() {
    use classad::{Evaluator, Value};
    let ads = jobs("executable = /bin/sleep\n+SkuaCheckpoint = \"criu\"\nqueue\n");
    let job = &ads[0];
    assert_eq!(attr(job, "SkuaCheckpoint"), "\"criu\"");
    let req = attr(job, "Requirements");
    assert!(
        req.ends_with(" && stringListIMember(MY.SkuaCheckpoint,TARGET.CheckpointBackends)"),
        "{req}"
    );
    // The clause alone, evaluated with the job as MY and a machine as TARGET.
    let clause =
        classad::parse_expr("stringListIMember(MY.SkuaCheckpoint, TARGET.CheckpointBackends)")
            .expect("clause parses");
    let eval = |machine: &str| {
        let m = classad::parse_old_ad(machine).expect("machine ad parses");
        matches!(
            Evaluator::default().eval(&clause, Some(job), Some(&m)),
            Value::Bool(true)
        )
    };
    assert!(eval("CheckpointBackends = \"criu\""));
    assert!(eval("CheckpointBackends = \"dmtcp, CRIU\""));
    assert!(!eval("CheckpointBackends = \"dmtcp\""));
    assert!(!eval("Cpus = 1"));
}

#[test]
fn universes_skua_cannot_run_are_flagged() {
    for runs in ["vanilla", "local", "scheduler"] {
        let text = format!("universe = {runs}\nexecutable = /bin/sleep\nqueue\n");
        let sub = submit(&text, &files(), &opts()).unwrap();
        assert_eq!(unsupported_universe(&sub), None, "{runs}");
    }
    for (name, refused) in [
        ("docker", "docker"),
        ("java", "java"),
        ("vm", "vm"),
        ("grid", "grid"),
    ] {
        let mut text = format!("universe = {name}\nexecutable = /bin/sleep\n");
        match name {
            "docker" => text.push_str("docker_image = debian\n"),
            "grid" => text.push_str("grid_resource = batch slurm\n"),
            "vm" => text.push_str("vm_type = kvm\nvm_memory = 64\nvm_disk = a.img:hda:w\n"),
            _ => {}
        }
        text.push_str("queue\n");
        let Ok(sub) = submit(&text, &files(), &opts()) else {
            // refused by the reader already: also not run
            continue;
        };
        let message = unsupported_universe(&sub);
        assert!(
            message.as_deref().is_some_and(|m| m.contains(refused)),
            "{name}: {message:?}"
        );
    }
}

#[test]
fn scheduler_and_local_jobs_carry_htcondors_universe_numbers() {
    for (name, number) in [("scheduler", 7), ("local", 12)] {
        let text = format!("universe = {name}\nexecutable = /bin/sleep\nqueue\n");
        let sub = submit(&text, &files(), &opts()).unwrap();
        let job = sub.jobs().next().unwrap();
        assert_eq!(
            job.lookup("JobUniverse").map(|e| e.to_string()),
            Some(number.to_string()),
            "{name}"
        );
    }
}

/// (submit text, line the error names, a word the message contains)
const ERRORS: &[(&str, usize, &str)] = &[
    (
        "executable = /bin/sleep\nmatch_list_length = abc\nqueue\n",
        2,
        "match_list_length",
    ),
    ("arguments = x\nqueue\n", 2, "executable"),
    ("executable = /bin/sleep\n", 0, "queue"),
    (
        "executable = /bin/sleep\nerror : stop here\nqueue\n",
        2,
        "stop here",
    ),
    (
        "executable = /bin/sleep\nuniverse = banana\nqueue\n",
        2,
        "banana",
    ),
    (
        "executable = /bin/sleep\nrequirements = Memory >\nqueue\n",
        2,
        "requirements",
    ),
    (
        "executable = /bin/sleep\nrequirements = Memory > $$(M:1)\nqueue\n",
        2,
        "requirements",
    ),
    ("executable = /bin/sleep\n+Foo = (1 +\nqueue\n", 2, "Foo"),
    (
        "executable = /bin/sleep\nqueue x from missing.txt\n",
        2,
        "missing.txt",
    ),
    ("executable = /bin/sleep\nqueue 2 x on (a b)\n", 2, "queue"),
    (
        "executable = /bin/sleep\nif defined x\narguments = 1\nqueue\n",
        4,
        "endif",
    ),
    (
        "executable = /bin/sleep\nhold = perhaps\nqueue\n",
        2,
        "boolean",
    ),
    (
        "executable = /bin/sleep\npriority = high\nqueue\n",
        2,
        "integer",
    ),
    (
        "executable = /bin/sleep\nrequest_memory = 5 XB\nqueue\n",
        2,
        "5 XB",
    ),
    (
        "executable = /bin/sleep\nshould_transfer_files = MAYBE\nqueue\n",
        2,
        "MAYBE",
    ),
    (
        "executable = /bin/sleep\nenvironment = \"A=1 'open\"\nqueue\n",
        2,
        "quote",
    ),
    (
        "executable = /bin/sleep\narguments = a \"b\nqueue\n",
        2,
        "double quote",
    ),
    (
        "executable = /bin/sleep\ninitialdir = nowhere\nqueue\n",
        2,
        "No such directory",
    ),
    (
        "executable = /bin/sleep\njust words here\nqueue\n",
        2,
        "not a valid",
    ),
];

#[test]
fn errors_name_file_and_line() {
    for (text, line, word) in ERRORS {
        let e = err(text);
        assert_eq!(e.line(), *line, "{e} for:\n{text}");
        let msg = e.to_string();
        assert!(msg.starts_with("job.sub"), "{msg}");
        assert!(msg.contains(word), "'{msg}' lacks '{word}'");
    }
}

#[test]
fn job_limit() {
    let mut o = opts();
    o.max_jobs_per_submission = Some(5);
    let e = submit("executable = /bin/sleep\nqueue 6\n", &files(), &o).unwrap_err();
    assert!(
        matches!(
            e,
            SubmitError::TooManyJobs {
                line: 2,
                limit: 5,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn overrides_appended_lines_and_submit_attrs() {
    let mut o = opts();
    o.overrides.push(("E".to_string(), "99".to_string()));
    o.appended_lines.push("request_cpus = 3".to_string());
    o.submit_attrs
        .push(("Site".to_string(), "\"here\"".to_string()));
    let s = submit(
        "executable = /bin/sleep\narguments = $(E)\nqueue\n",
        &files(),
        &o,
    )
    .unwrap();
    let ad = &s.clusters[0].jobs[0];
    assert_eq!(attr(ad, "Args"), "\"99\"");
    assert_eq!(attr(ad, "RequestCpus"), "3");
    assert_eq!(attr(ad, "Site"), "\"here\"");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = submit(&text, &files(), &opts());
        let _ = skua_submit::parse_queue_args(&text);
    }

    #[test]
    fn structured_text_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("executable = /bin/sleep".to_string()),
                Just("queue".to_string()),
                Just("if defined a".to_string()),
                Just("else".to_string()),
                Just("endif".to_string()),
                Just(")".to_string()),
                "queue [0-9]{0,2} ?[a-z,]{0,4} (in|from|matching)? ?\\[?[-0-9:]{0,5}\\]? ?\\(?[a-z .,*$()]{0,12}",
                "[a-z+]{1,6} ?(=|@=|:) ?[a-z$(){}\"' :,\\\\]{0,16}",
                "\\$[A-Z]{0,8}\\([a-z0-9,:%]{0,8}\\)",
            ],
            0..12,
        )
    ) {
        let mut o = opts();
        o.max_jobs_per_submission = Some(500);
        let _ = submit(&lines.join("\n"), &files(), &o);
    }
}

#[test]
fn job_default_lease_duration_sets_the_lease_of_jobs_that_name_none() {
    let lease = |default: i64, text: &str| {
        let mut o = opts();
        o.default_lease_duration = default;
        let s = submit(text, &files(), &o).unwrap();
        attr(&s.clusters[0].jobs[0], "JobLeaseDuration")
    };
    assert_eq!(lease(600, "executable = /bin/sleep\nqueue\n"), "600");
    assert_eq!(lease(0, "executable = /bin/sleep\nqueue\n"), "<absent>");
    assert_eq!(
        lease(
            0,
            "executable = /bin/sleep\njob_lease_duration = 20\nqueue\n"
        ),
        "20"
    );
}

/// URL transfers: each URL scheme the job uses (inputs and
/// `output_destination`) needs a slot whose plugins serve it, unless the
/// job brings its own plugin for it (`transfer_plugins`).
#[test]
fn url_schemes_require_slot_plugins() {
    let ads = jobs(concat!(
        "executable = /bin/true\nshould_transfer_files = YES\n",
        "transfer_input_files = http://h/a, foo://h/b\n",
        "output_destination = file:///srv/out\n",
        "transfer_plugins = foo=/p/foo_plugin\nqueue\n"
    ));
    let req = attr(&ads[0], "Requirements");
    assert!(
        req.contains("stringListIMember(\"http\",TARGET.HasFileTransferPluginMethods)"),
        "{req}"
    );
    assert!(
        req.contains("stringListIMember(\"file\",TARGET.HasFileTransferPluginMethods)"),
        "{req}"
    );
    assert!(!req.contains("\"foo\""), "{req}");
    assert_eq!(attr(&ads[0], "OutputDestination"), "\"file:///srv/out\"");
    assert_eq!(attr(&ads[0], "TransferPlugins"), "\"foo=/p/foo_plugin\"");
}

#[test]
fn queue_option_queues_a_description_without_a_queue_statement() {
    let mut o = opts();
    o.queue_args = Some("in (a, b)".to_string());
    o.appended_lines = vec!["batch_name = b1".to_string()];
    let sub = submit(
        "executable = /bin/echo\narguments = $(Item)\n",
        &files(),
        &o,
    )
    .expect("queued by -queue");
    let ads: Vec<String> = sub
        .jobs()
        .map(|j| {
            format!(
                "{} {}",
                unparse(j.lookup("Args").expect("Args")),
                unparse(j.lookup("JobBatchName").expect("JobBatchName"))
            )
        })
        .collect();
    assert_eq!(ads, vec!["\"a\" \"b1\"", "\"b\" \"b1\""]);
    let err = submit("executable = /bin/echo\nqueue\n", &files(), &o).unwrap_err();
    assert!(
        err.to_string().contains("-queue option cannot be used"),
        "{err}"
    );
    assert!(skip_filechecks_of("skip_filechecks = warn\n").as_deref() == Some("warn"));
    assert!(skip_filechecks_of("").is_none());
}

fn skip_filechecks_of(extra: &str) -> Option<String> {
    submit(
        &format!("executable = /bin/echo\n{extra}queue\n"),
        &files(),
        &opts(),
    )
    .expect("valid")
    .skip_filechecks
}
