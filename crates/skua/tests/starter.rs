//! `skuad starter` against an in-test shadow: input files and
//! directories arrive, the job runs with HTCondor's arguments and
//! environment, outputs come back, exits and signals are reported, vacate
//! and kill work, and nothing of the job survives it.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::{alive, kill, scratch, wait_for, SKUAD};
use skua_net::proto::{
    CheckpointCommit, CheckpointInfo, CheckpointKind, JobExit, RunOutcome, StarterSpec, UpdateKind,
};
use skua_net::SigningKey;
use skua_testkit::{FakeShadow, ShadowRecord};

const CLAIM: &str = "claim-secret-0123456789";

/// One test's world: a pool configuration, a fake shadow, a job directory.
struct World {
    dir: PathBuf,
    job_dir: PathBuf,
    execute: PathBuf,
    out_dir: PathBuf,
    rt: tokio::runtime::Runtime,
    shadow: Option<FakeShadow>,
    addr: String,
    rec: Arc<Mutex<ShadowRecord>>,
    job_ad: String,
    /// The running starter's standard output lines.
    lines: Mutex<Option<mpsc::Receiver<String>>>,
}

impl World {
    fn new(name: &str, job: &str) -> World {
        let dir = scratch(&format!("starter-{name}")).into_path(); // removed by World's drop
        let job_dir = dir.join("job");
        let execute = dir.join("execute");
        let out_dir = dir.join("returned");
        for d in [&job_dir, &execute, &out_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        let key_file = dir.join("pool.key");
        let key = SigningKey::load_or_create(&key_file).unwrap();
        std::fs::write(
            dir.join("skua_config"),
            format!(
                "LOG = {d}/log\nLOCK = {d}/lock\nUID_DOMAIN = test.domain\n\
                 SEC_TOKEN_POOL_SIGNING_KEY_FILE = {k}\nSTARTER_UPDATE_INTERVAL = 1\n\
                 STARTER_DEBUG = debug\n",
                d = dir.display(),
                k = key_file.display()
            ),
        )
        .unwrap();
        let job_ad = format!("[ Iwd = \"{}\"; {job} ]", job_dir.display());
        World {
            dir,
            job_dir,
            execute,
            out_dir,
            rt: tokio::runtime::Runtime::new().unwrap(),
            shadow: None,
            addr: String::new(),
            rec: Arc::default(),
            job_ad,
            lines: Mutex::new(None),
        }
        .serve(key)
    }

    /// Starts the fake shadow of the world's job.
    fn serve(mut self, key: SigningKey) -> World {
        let job_ad = classad::parse_ad(&self.job_ad).unwrap();
        let shadow = self
            .rt
            .block_on(FakeShadow::start(
                CLAIM,
                job_ad,
                self.out_dir.clone(),
                key,
                "test.domain",
            ))
            .unwrap();
        self.addr = shadow.addr.clone();
        self.rec = shadow.record.clone();
        self.shadow = Some(shadow);
        self
    }

    fn script(&self, name: &str, body: &str) {
        let p = self.job_dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Appends `lines` to the starter's configuration.
    fn configure(&self, lines: &str) {
        let path = self.dir.join("skua_config");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(lines);
        std::fs::write(path, text).unwrap();
    }

    fn spec(&self, job_id: &str, max_vacate_secs: u64) -> String {
        let spec = StarterSpec {
            claim_id: CLAIM.into(),
            job_id: job_id.into(),
            job_ad: self.job_ad.clone(),
            slot_ad: r#"[ Name = "slot1_1@exec.test"; Cpus = 2; FileSystemDomain = "exec.test"; UidDomain = "test.domain" ]"#.into(),
            shadow_addr: self.addr.clone(),
            execute_dir: self.execute.display().to_string(),
            max_vacate_secs,
            owner_ids: None,
        };
        serde_json::to_string(&spec).unwrap() + "\n"
    }

    /// Starts a starter with job 1.0, as the startd does; its standard
    /// output (the done lines) goes to a thread that sends each line.
    fn start_with_lines(&self, max_vacate_secs: u64) -> (Child, mpsc::Receiver<String>) {
        let mut child = Command::new(SKUAD)
            .arg("starter")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("SKUA_CONFIG", self.dir.join("skua_config"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(self.spec("1.0", max_vacate_secs).as_bytes())
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }

    /// Starts a starter with one job; [`World::wait`] ends its claim once
    /// the job is done.
    fn start(&self, max_vacate_secs: u64) -> Child {
        let (child, lines) = self.start_with_lines(max_vacate_secs);
        *self.lines.lock().unwrap() = Some(lines);
        child
    }

    /// Waits for the starter to exit; returns its exit code. Like the
    /// startd, it closes the starter's standard input (the claim is over)
    /// when the starter reports its job done.
    fn wait(&self, child: &mut Child) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        let lines = self.lines.lock().unwrap().take();
        loop {
            if let Some(lines) = &lines {
                while let Ok(line) = lines.try_recv() {
                    if line.contains("\"done\"") {
                        drop(child.stdin.take());
                    }
                }
            }
            if let Some(status) = child.try_wait().unwrap() {
                if !status.success() {
                    let mut err = String::new();
                    use std::io::Read;
                    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                    eprintln!("starter stderr: {err}");
                    for e in std::fs::read_dir(self.dir.join("log")).unwrap().flatten() {
                        eprintln!("{}", std::fs::read_to_string(e.path()).unwrap_or_default());
                    }
                }
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                kill(child.id() as i32, "-KILL");
                panic!("the starter did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn exit(&self) -> JobExit {
        self.rec.lock().unwrap().exit.clone().expect("a JobExit")
    }

    fn outputs(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .rec
            .lock()
            .unwrap()
            .outputs
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v
    }

    fn commits(&self) -> Vec<CheckpointCommit> {
        self.rec.lock().unwrap().commits.clone()
    }

    /// A file of checkpoint `number` as the shadow received it.
    fn checkpointed(&self, number: u64, name: &str) -> Vec<u8> {
        std::fs::read(
            self.out_dir
                .join(".checkpoints")
                .join(number.to_string())
                .join(name),
        )
        .unwrap()
    }

    fn returned(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.out_dir.join(name)).unwrap()
    }

    fn wait_executing(&self) {
        wait_for("the job to execute", Duration::from_secs(20), || {
            self.rec
                .lock()
                .unwrap()
                .updates
                .contains(&UpdateKind::Executing)
        });
    }

    /// The job's scratch directory, while the starter `pid` runs.
    fn scratch_of(&self, pid: u32) -> PathBuf {
        self.execute.join(format!("dir_{pid}"))
    }

    fn execute_is_empty(&self) -> bool {
        std::fs::read_dir(&self.execute).unwrap().next().is_none()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        drop(self.shadow.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn blob() -> Vec<u8> {
    (0..4096u32).map(|i| (i * 7 % 256) as u8).collect()
}

fn pid_in(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn inputs_arrive_the_job_runs_and_outputs_come_back() {
    let w = World::new(
        "roundtrip",
        r#"Cmd = "run.sh"; In = "stdin.txt"; Out = "job.out"; Err = "job.err";
           TransferInput = "blob.bin, data, flat/";
           Arguments = "one 'two words' \"quoted\" ''";
           Environment = "FOO=bar BAZ='x y'";
           ShouldTransferFiles = "YES""#,
    );
    std::fs::write(w.job_dir.join("blob.bin"), blob()).unwrap();
    std::fs::write(w.job_dir.join("stdin.txt"), "line from stdin\n").unwrap();
    std::fs::create_dir_all(w.job_dir.join("data/sub")).unwrap();
    std::fs::write(w.job_dir.join("data/sub/deep.txt"), "deep").unwrap();
    std::fs::create_dir_all(w.job_dir.join("flat")).unwrap();
    std::fs::write(w.job_dir.join("flat/top.txt"), "top").unwrap();
    w.script(
        "run.sh",
        r#"for a in "$@"; do echo "[$a]"; done
read line; echo "stdin: $line"
echo "FOO=$FOO BAZ=$BAZ"
[ "$_CONDOR_SCRATCH_DIR" = "$(pwd)" ] && echo scratch-ok
[ "$TMPDIR" = "$(pwd)" ] && echo tmpdir-ok
echo "slot=$_CONDOR_SLOT threads=$OMP_NUM_THREADS batch=$BATCH_SYSTEM"
grep -q 'Iwd' "$_CONDOR_JOB_AD" && grep -q 'Cpus = 2' "$_CONDOR_MACHINE_AD" && echo ads-ok
cat data/sub/deep.txt top.txt > seen.txt
cp blob.bin blob_copy.bin
echo to-stderr >&2
exit 3"#,
    );
    let mut child = w.start(5);
    let code = w.wait(&mut child);
    assert_eq!(code, 0, "the shadow acknowledged the exit");
    let exit = w.exit();
    assert_eq!(exit.outcome, RunOutcome::Exited { code: 3 });
    assert!(exit.usage.wall_secs > 0.0);
    let stdout = String::from_utf8(w.returned("_condor_stdout")).unwrap();
    assert_eq!(
        stdout,
        "[one]\n[two words]\n[\"quoted\"]\n[]\nstdin: line from stdin\nFOO=bar BAZ=x y\n\
         scratch-ok\ntmpdir-ok\nslot=slot1_1 threads=2 batch=HTCondor\nads-ok\n"
    );
    assert_eq!(w.returned("_condor_stderr"), b"to-stderr\n");
    assert_eq!(w.returned("seen.txt"), b"deeptop");
    assert_eq!(w.returned("blob_copy.bin"), blob());
    // only new files and the streams come back
    assert_eq!(
        w.outputs(),
        vec![
            "_condor_stderr",
            "_condor_stdout",
            "blob_copy.bin",
            "seen.txt"
        ]
    );
    let rec = w.rec.lock().unwrap();
    assert!(rec.begin.as_ref().unwrap().transfer);
    assert_eq!(rec.begin.as_ref().unwrap().slot, "slot1_1@exec.test");
    // the execution is reported once: by an update, or (a job this short)
    // with the exit
    let updates = rec.updates.clone();
    drop(rec);
    assert_ne!(
        updates.first() == Some(&UpdateKind::Executing),
        w.exit().executed,
        "{updates:?}"
    );
    assert!(
        w.execute_is_empty(),
        "scratch directory and pgid file removed"
    );
}

#[test]
fn transfer_output_list_and_signaled_jobs() {
    let w = World::new(
        "outlist",
        r#"Cmd = "run.sh"; Out = "o"; TransferOutput = "only.txt, outdir""#,
    );
    w.script(
        "run.sh",
        r#"echo a > only.txt; echo b > other.txt; mkdir -p outdir/in; echo c > outdir/in/f
echo bye
kill -USR1 $$"#,
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(
        w.exit().outcome,
        RunOutcome::Signaled {
            signal: 10,
            core_dumped: false
        }
    );
    assert_eq!(
        w.outputs(),
        vec!["_condor_stdout", "only.txt", "outdir/in/f"]
    );
    assert_eq!(w.returned("outdir/in/f"), b"c\n");
    assert!(w.execute_is_empty());
}

#[test]
fn vacate_sends_the_kill_signal_keeps_the_files_as_a_checkpoint_and_reports_evicted() {
    let w = World::new(
        "vacate",
        r#"Cmd = "run.sh"; WhenToTransferOutput = "ON_EXIT_OR_EVICT"; KillSig = "SIGUSR2""#,
    );
    w.script(
        "run.sh",
        r#"trap 'echo checkpoint > ckpt.txt; exit 0' USR2
echo started > started.txt
while :; do sleep 0.1; done"#,
    );
    let mut child = w.start(10);
    w.wait_executing();
    // usage updates arrive every second
    wait_for("a usage update", Duration::from_secs(10), || {
        w.rec.lock().unwrap().updates.contains(&UpdateKind::Usage)
    });
    kill(child.id() as i32, "-USR1");
    wait_for("suspension", Duration::from_secs(10), || {
        w.rec
            .lock()
            .unwrap()
            .updates
            .contains(&UpdateKind::Suspended)
    });
    kill(child.id() as i32, "-USR2");
    wait_for("continuation", Duration::from_secs(10), || {
        w.rec
            .lock()
            .unwrap()
            .updates
            .contains(&UpdateKind::Unsuspended)
    });
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    assert!(matches!(w.exit().outcome, RunOutcome::Evicted { .. }));
    // ON_EXIT_OR_EVICT: the changed files are kept as a checkpoint (kind
    // evict) for the job's next start, not returned as outputs
    assert!(w.outputs().is_empty(), "{:?}", w.outputs());
    let commits = w.commits();
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0].number, 1);
    assert_eq!(commits[0].kind, CheckpointKind::Evict);
    assert_eq!(commits[0].files, vec!["ckpt.txt", "started.txt"]);
    assert_eq!(w.checkpointed(1, "ckpt.txt"), b"checkpoint\n");
    assert!(w.execute_is_empty());
}

#[test]
fn no_process_of_the_job_survives_it() {
    let w = World::new("background", r#"Cmd = "run.sh""#);
    // (as root the job runs as `nobody`: give it a place to write)
    let open_dir = w.dir.join("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let pidfile = open_dir.join("bg.pid");
    w.script(
        "run.sh",
        &format!("sleep 300 &\necho $! > {}\nexit 0", pidfile.display()),
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    let bg = pid_in(&pidfile);
    wait_for(
        "the background child to die",
        Duration::from_secs(5),
        || !alive(bg),
    );
    assert!(w.execute_is_empty());
}

#[test]
fn closing_stdin_kills_the_job() {
    let w = World::new("eof", r#"Cmd = "run.sh""#);
    w.script("run.sh", "echo $$ > job.pid\nsleep 300");
    let mut child = w.start(5);
    w.wait_executing();
    let pidfile = w.scratch_of(child.id()).join("job.pid");
    wait_for("the job's pid", Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let job_pid = pid_in(&pidfile);
    assert!(alive(job_pid));
    drop(child.stdin.take()); // the startd goes away
    assert_eq!(w.wait(&mut child), 0);
    assert!(!alive(job_pid));
    assert!(matches!(w.exit().outcome, RunOutcome::Evicted { .. }));
    assert!(w.execute_is_empty());
}

#[test]
fn hard_kill_and_missing_executable() {
    let w = World::new(
        "quit",
        r#"Cmd = "run.sh"; WhenToTransferOutput = "ON_EXIT_OR_EVICT""#,
    );
    w.script("run.sh", "echo x > made.txt\nsleep 300");
    let mut child = w.start(60);
    w.wait_executing();
    kill(child.id() as i32, "-QUIT");
    assert_eq!(w.wait(&mut child), 0);
    assert!(matches!(w.exit().outcome, RunOutcome::Evicted { .. }));
    assert!(w.outputs().is_empty(), "no output after a hard kill");

    // a job whose executable is not runnable is held: HTCondor's
    // FailedToCreateProcess (6), the errno as subcode
    let w = World::new(
        "noexec",
        r#"Cmd = "/nonexistent/prog"; TransferExecutable = false"#,
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    match w.exit().outcome {
        RunOutcome::Held {
            reason,
            code,
            subcode,
        } => {
            assert!(
                reason.contains("Failed to execute '/nonexistent/prog'"),
                "{reason}"
            );
            assert_eq!((code, subcode), (6, 2), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(w.execute_is_empty());
}

#[test]
fn shared_file_system_runs_in_iwd_without_transfer() {
    let w = World::new(
        "shared",
        r#"Cmd = "run.sh"; ShouldTransferFiles = "NO"; Out = "out.txt"; In = "in.txt""#,
    );
    std::fs::write(w.job_dir.join("in.txt"), "from iwd\n").unwrap();
    // (as root the job runs as `nobody`: it must be able to write in Iwd)
    std::fs::set_permissions(&w.job_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    w.script("run.sh", "cat; pwd; echo made > made.txt");
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    assert!(!w.rec.lock().unwrap().begin.as_ref().unwrap().transfer);
    let out = std::fs::read_to_string(w.job_dir.join("out.txt")).unwrap();
    assert_eq!(out, format!("from iwd\n{}\n", w.job_dir.display()));
    assert!(w.job_dir.join("made.txt").exists());
    assert!(w.outputs().is_empty());
}

#[test]
fn a_root_starter_never_runs_a_job_as_root() {
    let uid = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return; // a personal starter runs jobs as its own user
    }
    let w = World::new(
        "root",
        r#"Cmd = "run.sh"; Owner = "root"; UidDomain = "test.domain""#,
    );
    w.script("run.sh", "exit 0");
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    match w.exit().outcome {
        RunOutcome::Failed { reason, permanent } => {
            assert!(reason.contains("root"), "{reason}");
            assert!(permanent);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn one_starter_runs_the_claims_jobs_one_after_another() {
    let w = World::new("reuse", r#"Cmd = "run.sh"; Out = "job.out""#);
    w.script("run.sh", "echo ran $$");
    let (mut child, lines) = w.start_with_lines(5);
    let pid = child.id();
    let next_line = || lines.recv_timeout(Duration::from_secs(20)).unwrap();
    // The first job's run is over: the starter says so, reports the exit
    // and waits with its scratch directory gone.
    assert_eq!(next_line(), r#"{"done":"1.0"}"#);
    wait_for("the first exit", Duration::from_secs(10), || {
        w.rec.lock().unwrap().exits == 1
    });
    assert!(!w.scratch_of(pid).exists());
    assert!(child.try_wait().unwrap().is_none(), "the starter waits");
    // The claim's next job goes to the same process.
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(w.spec("1.1", 5).as_bytes()).unwrap();
    stdin.flush().unwrap();
    assert_eq!(next_line(), r#"{"done":"1.1"}"#);
    wait_for("the second exit", Duration::from_secs(10), || {
        w.rec.lock().unwrap().exits == 2
    });
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    // a job this short has its execution reported with its exit
    assert!(w.exit().executed);
    assert!(!w
        .rec
        .lock()
        .unwrap()
        .updates
        .contains(&UpdateKind::Executing));
    // The claim is over: standard input closes and the starter ends.
    drop(child.stdin.take());
    assert_eq!(w.wait(&mut child), 0);
    assert!(w.execute_is_empty());
}

#[test]
fn a_missing_output_file_the_job_names_holds_it_with_code_12() {
    let w = World::new(
        "missing",
        r#"Cmd = "run.sh"; Out = "o"; TransferOutput = "made.txt, missing.txt""#,
    );
    w.script("run.sh", "echo a > made.txt\necho bye");
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    match w.exit().outcome {
        RunOutcome::Held {
            reason,
            code,
            subcode,
        } => {
            assert_eq!((code, subcode), (12, 2));
            assert!(reason.contains("missing.txt"), "{reason}");
            assert!(reason.contains("No such file or directory"), "{reason}");
        }
        other => panic!("held expected, got {other:?}"),
    }
    // what exists still comes back
    assert_eq!(w.outputs(), vec!["_condor_stdout", "made.txt"]);
    assert!(w.execute_is_empty());
}

/// The starter's log, all of it.
fn starter_log(w: &World) -> String {
    let mut all = String::new();
    if let Ok(rd) = std::fs::read_dir(w.dir.join("log")) {
        for e in rd.flatten() {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}

#[test]
fn a_starter_keeps_its_results_while_the_shadow_is_away_and_sends_them_to_its_new_address() {
    let mut w = World::new(
        "reconnect",
        r#"Cmd = "run.sh"; Out = "job.out"; ShouldTransferFiles = "YES"; JobLeaseDuration = 60"#,
    );
    let go = w.dir.join("go");
    w.script(
        "run.sh",
        &format!(
            "while [ ! -e {go} ]; do sleep 0.05; done\nprintf 'result\\n' > result.txt\necho out\nexit 6",
            go = go.display()
        ),
    );
    let mut child = w.start(5);
    w.wait_executing();
    // the shadow goes away; the job ends meanwhile
    w.shadow.as_mut().unwrap().stop();
    std::fs::write(&go, "").unwrap();
    wait_for("the starter to notice", Duration::from_secs(20), || {
        starter_log(&w).contains("Lost connection to shadow")
    });
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id();
    assert!(
        w.scratch_of(pid).join("result.txt").exists(),
        "the results wait in the scratch directory"
    );
    assert!(child.try_wait().unwrap().is_none(), "the starter waits");
    // the shadow is back at another address, passed on by the startd
    let key = SigningKey::load_or_create(&w.dir.join("pool.key")).unwrap();
    let job_ad = classad::parse_ad(&w.job_ad).unwrap();
    let back =
        w.rt.block_on(FakeShadow::start(
            CLAIM,
            job_ad,
            w.out_dir.clone(),
            key,
            "test.domain",
        ))
        .unwrap();
    let moved = format!(
        "{{\"shadow\":{{\"claim_id\":\"{CLAIM}\",\"job_id\":\"1.0\",\"shadow_addr\":\"{}\"}}}}\n",
        back.addr
    );
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(moved.as_bytes())
        .unwrap();
    assert_eq!(
        w.wait(&mut child),
        0,
        "the new shadow acknowledged the exit"
    );
    let rec = back.record();
    assert_eq!(rec.exits, 1, "the exit is sent once");
    assert_eq!(
        rec.exit.as_ref().unwrap().outcome,
        RunOutcome::Exited { code: 6 }
    );
    assert_eq!(rec.exit.as_ref().unwrap().job_id.as_deref(), Some("1.0"));
    drop(rec);
    assert_eq!(w.returned("result.txt"), b"result\n");
    assert_eq!(w.returned("_condor_stdout"), b"out\n");
    assert!(w.execute_is_empty());
    assert!(starter_log(&w).contains("Recovered connection to shadow after"));
}

#[test]
fn a_starter_whose_shadow_stays_away_for_the_lease_kills_the_job_and_exits_4() {
    let mut w = World::new(
        "lost-shadow",
        r#"Cmd = "run.sh"; ShouldTransferFiles = "YES"; JobLeaseDuration = 3"#,
    );
    w.script("run.sh", "echo $$ > job.pid\nsleep 300");
    let mut child = w.start(5);
    w.wait_executing();
    let pidfile = w.scratch_of(child.id()).join("job.pid");
    wait_for("the job's pid", Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let job = pid_in(&pidfile);
    w.shadow.as_mut().unwrap().stop();
    let stopped = Instant::now();
    let code = w.wait(&mut child);
    assert_eq!(code, skua_net::proto::STARTER_EXIT_LOST_SHADOW);
    assert!(
        stopped.elapsed() >= Duration::from_secs(1),
        "given up before the lease ran out"
    );
    assert!(!alive(job), "the job was killed");
    assert!(w.execute_is_empty(), "the scratch directory is removed");
    assert!(starter_log(&w).contains("No reconnect from shadow for"));
}

/// A self-checkpointing job: it counts its runs in `count` and exits 85
/// (its checkpoint code) until the third.
const COUNTER: &str = r#"n=$(cat count 2>/dev/null || echo 0)
n=$((n+1))
echo $n > count
echo "run $n in $(pwd) with $*"
[ "$n" -lt 3 ] && exit 85
exit 0"#;

#[test]
fn a_checkpoint_exit_sends_the_checkpoint_and_restarts_the_job_in_the_same_directory() {
    let w = World::new(
        "selfckpt",
        r#"Cmd = "run.sh"; Out = "job.out"; Arguments = "a 'b c'";
           SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           ShouldTransferFiles = "YES""#,
    );
    w.script("run.sh", COUNTER);
    // the job starts from a stored checkpoint (number 4) with a file it
    // never touches
    let state = w.dir.join("stored-state");
    std::fs::write(&state, "kept").unwrap();
    {
        let mut rec = w.rec.lock().unwrap();
        rec.last_checkpoint = Some(CheckpointInfo {
            number: 4,
            backend: None,
        });
        rec.checkpoint_inputs = vec![("state.txt".into(), state)];
    }
    let mut child = w.start(5);
    let scratch = w.scratch_of(child.id());
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    let commits = w.commits();
    assert_eq!(
        commits.iter().map(|c| c.number).collect::<Vec<_>>(),
        vec![5, 6],
        "numbered after the stored checkpoint"
    );
    for c in &commits {
        assert_eq!(c.kind, CheckpointKind::Exit);
        assert_eq!(c.backend, None);
        // the changed file, and the restored one still there; never the
        // executable, the ads or the streams
        assert_eq!(c.files, vec!["count", "state.txt"]);
        assert_eq!(c.bytes, 2 + 4);
    }
    assert!(commits[1].usage.wall_secs >= commits[0].usage.wall_secs);
    assert_eq!(w.checkpointed(5, "count"), b"1\n");
    assert_eq!(w.checkpointed(6, "count"), b"2\n");
    assert_eq!(w.checkpointed(6, "state.txt"), b"kept");
    // restarted in the same directory with the same arguments; the
    // standard output accumulates over the restarts
    let out = String::from_utf8(w.returned("_condor_stdout")).unwrap();
    let d = scratch.display();
    assert_eq!(
        out,
        format!("run 1 in {d} with a b c\nrun 2 in {d} with a b c\nrun 3 in {d} with a b c\n")
    );
    // the restored checkpoint file the job did not change is no output
    assert_eq!(w.outputs(), vec!["_condor_stdout", "count"]);
    assert_eq!(w.returned("count"), b"3\n");
    // the execution is reported once
    let updates = w.rec.lock().unwrap().updates.clone();
    let executing = updates
        .iter()
        .filter(|u| **u == UpdateKind::Executing)
        .count();
    assert_eq!(executing + usize::from(w.exit().executed), 1, "{updates:?}");
    assert!(w.execute_is_empty());
}

#[test]
fn a_checkpoint_the_shadow_cannot_store_holds_the_job_with_code_36() {
    let w = World::new(
        "refused",
        r#"Cmd = "run.sh"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           TransferCheckpoint = "count""#,
    );
    w.script("run.sh", COUNTER);
    w.rec.lock().unwrap().refuse_checkpoints = Some("disk full".into());
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    match w.exit().outcome {
        RunOutcome::Held { reason, code, .. } => {
            assert_eq!(code, 36);
            assert!(
                reason.contains("count") && reason.contains("disk full"),
                "{reason}"
            );
        }
        other => panic!("held expected, got {other:?}"),
    }
    assert!(w.commits().is_empty());
    assert!(w.outputs().is_empty(), "a held job sends no output");
    assert!(w.execute_is_empty());
}

#[test]
fn a_missing_checkpoint_file_the_job_names_holds_it_with_code_12() {
    let w = World::new(
        "ckpt-missing",
        r#"Cmd = "run.sh"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           TransferCheckpoint = "count, state.bin""#,
    );
    w.script("run.sh", COUNTER);
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    match w.exit().outcome {
        RunOutcome::Held {
            reason,
            code,
            subcode,
        } => {
            assert_eq!((code, subcode), (12, 2));
            assert!(reason.contains("state.bin"), "{reason}");
        }
        other => panic!("held expected, got {other:?}"),
    }
    let rec = w.rec.lock().unwrap();
    assert!(rec.commits.is_empty() && rec.checkpoint_files.is_empty());
    drop(rec);
    assert!(w.execute_is_empty());
}

#[test]
fn the_checkpoint_signal_comes_every_checkpoint_signal_interval() {
    let w = World::new(
        "ckptsig-periodic",
        r#"Cmd = "run.sh"; WantCheckpointSignal = true; CheckpointSig = "SIGUSR1""#,
    );
    w.configure("CHECKPOINT_SIGNAL_INTERVAL = 1\n");
    // the job ends after its second checkpoint signal
    w.script(
        "run.sh",
        r#"n=0
trap 'n=$((n+1))' USR1
while [ "$n" -lt 2 ]; do sleep 0.05; done
exit 0"#,
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    assert!(w.commits().is_empty(), "a signal alone stores nothing");
}

#[test]
fn a_vacate_sends_the_checkpoint_signal_and_stores_the_checkpoint_the_job_exits_with() {
    let w = World::new(
        "ckptsig",
        r#"Cmd = "run.sh"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           WantCheckpointSignal = true; CheckpointSig = "SIGUSR1"; KillSig = "SIGINT";
           TransferCheckpoint = "state.txt"; ShouldTransferFiles = "YES""#,
    );
    w.configure("CHECKPOINT_SIGNAL_INTERVAL = 0\n");
    w.script(
        "run.sh",
        r#"trap 'echo saved > state.txt; exit 85' USR1
trap 'exit 3' INT
echo ready > ready
while :; do sleep 0.05; done"#,
    );
    let mut child = w.start(10);
    w.wait_executing();
    let scratch = w.scratch_of(child.id());
    wait_for("the job to get ready", Duration::from_secs(10), || {
        scratch.join("ready").exists()
    });
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    assert!(matches!(w.exit().outcome, RunOutcome::Evicted { .. }));
    let commits = w.commits();
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0].kind, CheckpointKind::Evict);
    assert_eq!(commits[0].files, vec!["state.txt"]);
    assert_eq!(w.checkpointed(1, "state.txt"), b"saved\n");
    assert!(w.outputs().is_empty());
    assert!(w.execute_is_empty());
}

#[test]
fn no_periodic_checkpoint_signal_when_the_interval_is_zero() {
    let w = World::new(
        "ckptsig-off",
        r#"Cmd = "run.sh"; WantCheckpointSignal = true; CheckpointSig = 10"#,
    );
    w.configure("CHECKPOINT_SIGNAL_INTERVAL = 0\n");
    let open_dir = w.dir.join("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mark = open_dir.join("signalled");
    w.script(
        "run.sh",
        &format!("trap 'touch {}' USR1\nsleep 2.5\nexit 0", mark.display()),
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    assert!(!mark.exists(), "the job got a checkpoint signal");
}

#[test]
fn a_vacate_during_a_checkpoint_transfer_ends_the_run_without_storing_it() {
    let w = World::new(
        "ckpt-vacate",
        r#"Cmd = "run.sh"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           TransferCheckpoint = "count""#,
    );
    w.script("run.sh", COUNTER);
    w.rec.lock().unwrap().stall_checkpoints = true;
    let mut child = w.start(5);
    wait_for("the checkpoint transfer", Duration::from_secs(20), || {
        starter_log(&w).contains("sending a checkpoint")
    });
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    match w.exit().outcome {
        RunOutcome::Evicted { reason } => assert!(reason.contains("checkpoint"), "{reason}"),
        other => panic!("evicted expected, got {other:?}"),
    }
    assert!(w.commits().is_empty(), "nothing committed");
    assert!(w.outputs().is_empty());
    assert!(w.execute_is_empty());
}

#[test]
fn a_checkpoint_waits_for_a_lost_shadow_within_the_lease_and_goes_to_its_new_address() {
    let mut w = World::new(
        "ckpt-reconnect",
        r#"Cmd = "run.sh"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           TransferCheckpoint = "count"; JobLeaseDuration = 60"#,
    );
    let go = w.dir.join("go");
    w.script(
        "run.sh",
        &format!(
            "while [ ! -e {go} ]; do sleep 0.05; done\n{COUNTER}",
            go = go.display()
        ),
    );
    let mut child = w.start(5);
    w.wait_executing();
    // the shadow goes away; the job exits to checkpoint meanwhile
    w.shadow.as_mut().unwrap().stop();
    std::fs::write(&go, "").unwrap();
    wait_for("the starter to notice", Duration::from_secs(20), || {
        starter_log(&w).contains("Lost connection to shadow")
    });
    // the startd suspends the job meanwhile: its next process starts
    // suspended
    kill(child.id() as i32, "-USR1");
    wait_for(
        "the suspension to be noted",
        Duration::from_secs(20),
        || starter_log(&w).contains("suspended between two processes"),
    );
    let key = SigningKey::load_or_create(&w.dir.join("pool.key")).unwrap();
    let job_ad = classad::parse_ad(&w.job_ad).unwrap();
    let back =
        w.rt.block_on(FakeShadow::start(
            CLAIM,
            job_ad,
            w.out_dir.clone(),
            key,
            "test.domain",
        ))
        .unwrap();
    let moved = format!(
        "{{\"shadow\":{{\"claim_id\":\"{CLAIM}\",\"job_id\":\"1.0\",\"shadow_addr\":\"{}\"}}}}\n",
        back.addr
    );
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(moved.as_bytes())
        .unwrap();
    wait_for(
        "the restarted job's suspension",
        Duration::from_secs(20),
        || back.record().updates.contains(&UpdateKind::Suspended),
    );
    assert_eq!(
        back.record().commits.len(),
        1,
        "suspended after checkpoint 1"
    );
    kill(child.id() as i32, "-USR2");
    assert_eq!(w.wait(&mut child), 0);
    let rec = back.record();
    assert_eq!(
        rec.exit.as_ref().unwrap().outcome,
        RunOutcome::Exited { code: 0 }
    );
    // the first checkpoint went to the new shadow, then the second
    assert_eq!(
        rec.commits.iter().map(|c| c.number).collect::<Vec<_>>(),
        vec![1, 2]
    );
    drop(rec);
    assert_eq!(w.checkpointed(1, "count"), b"1\n");
    assert!(w.execute_is_empty());
}

#[test]
fn a_job_that_dies_by_its_checkpoint_signal_is_checkpointed_and_restarted() {
    let w = World::new(
        "ckpt-bysignal",
        r#"Cmd = "run.sh"; SuccessCheckpointExitBySignal = true;
           SuccessCheckpointExitSignal = "SIGUSR1"; WantFTOnCheckpoint = true"#,
    );
    w.script(
        "run.sh",
        r#"if [ -e state ]; then exit 4; fi
echo one > state
kill -USR1 $$"#,
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 4 });
    let commits = w.commits();
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0].kind, CheckpointKind::Exit);
    assert_eq!(commits[0].files, vec!["state"]);
    assert_eq!(w.checkpointed(1, "state"), b"one\n");
    assert_eq!(w.outputs(), vec!["state"]);
    assert!(w.execute_is_empty());
}

#[test]
fn a_checkpoint_cut_by_an_unreachable_shadow_goes_on_from_the_file_it_had_not_sent() {
    let w = World::new(
        "ckpt-resume",
        r#"Cmd = "run.sh"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true;
           TransferCheckpoint = "a, b"; JobLeaseDuration = 60"#,
    );
    w.script(
        "run.sh",
        "if [ -e a ]; then exit 0; fi\necho A > a\necho B > b\nexit 85",
    );
    w.rec.lock().unwrap().unavailable_once = Some("b".into());
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    let rec = w.rec.lock().unwrap();
    let sent: Vec<&str> = rec
        .checkpoint_files
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(sent, vec!["a", "b"], "`a` is not sent again");
    assert_eq!(rec.commits.len(), 1);
    assert_eq!(rec.commits[0].files, vec!["a", "b"]);
    assert_eq!(rec.commits[0].bytes, 4);
    drop(rec);
    assert_eq!(w.checkpointed(1, "b"), b"B\n");
    assert!(w.execute_is_empty());
}

// ---- the transparent checkpoint backend (CRIU), with a stand-in `criu` ----

/// A stand-in for `criu`: `dump` writes the job's `count` file as its
/// image and ends the job's process group; `restore` (in the scratch
/// directory) writes the pid file criu writes once it restored the job,
/// then "runs" the job: records what the image held and exits 7 (or the
/// code the job left in `restore-exit`).
const FAKE_CRIU: &str = r#"#!/bin/sh
action=$1; shift
dir=; tree=; pidfile=
while [ $# -gt 0 ]; do
  case "$1" in
    --images-dir) dir=$2; shift ;;
    --tree) tree=$2; shift ;;
    --pidfile) pidfile=$2; shift ;;
  esac
  shift
done
case "$action" in
  dump)
    cat "/proc/$tree/cwd/count" > "$dir/pages.img" || exit 1
    kill -9 "-$tree"
    exit 0 ;;
  restore)
    [ -f "$dir/pages.img" ] || { echo 'Error (criu/cr-restore.c:1): no image' > "$dir/restore.log"; exit 1; }
    echo 1 > "$dir/$pidfile"
    echo "restored $(cat "$dir/pages.img")" > restored.txt
    exit "$(cat restore-exit 2>/dev/null || echo 7)" ;;
esac
exit 3
"#;

const CRIU_SLOT: &str = r#"[ Name = "slot1_1@exec.test"; Cpus = 2; FileSystemDomain = "exec.test"; UidDomain = "test.domain"; HasCheckpointBackend = true; CheckpointBackends = "criu" ]"#;

impl World {
    /// A world whose starters use the stand-in `criu`.
    fn with_fake_criu(name: &str, job: &str) -> World {
        let w = World::new(name, job);
        let criu = w.dir.join("criu");
        std::fs::write(&criu, FAKE_CRIU).unwrap();
        std::fs::set_permissions(&criu, std::fs::Permissions::from_mode(0o755)).unwrap();
        w.configure(&format!("SKUA_CRIU = {}\n", criu.display()));
        w
    }

    /// Starts a starter with job 1.0 on a slot whose ad is `slot_ad`.
    fn start_on(&self, slot_ad: &str, max_vacate_secs: u64) -> Child {
        let mut child = Command::new(SKUAD)
            .arg("starter")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("SKUA_CONFIG", self.dir.join("skua_config"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut spec: StarterSpec =
            serde_json::from_str(self.spec("1.0", max_vacate_secs).trim()).unwrap();
        spec.slot_ad = slot_ad.to_string();
        let line = serde_json::to_string(&spec).unwrap() + "\n";
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        *self.lines.lock().unwrap() = Some(rx);
        child
    }

    /// The next run begins from stored checkpoint 1 (made by `backend`),
    /// whose files are those the shadow received.
    fn begin_from_checkpoint_1(&self, backend: Option<&str>) {
        let mut rec = self.rec.lock().unwrap();
        let files = rec.commits[0].files.clone();
        rec.last_checkpoint = Some(CheckpointInfo {
            number: 1,
            backend: backend.map(str::to_string),
        });
        rec.checkpoint_inputs = files
            .iter()
            .map(|f| {
                let path = self.out_dir.join(".checkpoints").join("1").join(f);
                (f.clone(), path)
            })
            .collect();
        rec.exit = None;
        rec.commits.clear();
    }
}

/// Vacated, a `+SkuaCheckpoint = "criu"` job on a slot offering the backend
/// is dumped (not signalled): its sealed image and changed files are one
/// checkpoint of kind Backend; the next run restores it from that image
/// (criu's exit status is the job's) instead of starting the executable.
#[test]
fn a_criu_job_is_dumped_at_vacate_and_restored_at_its_next_start() {
    let w = World::with_fake_criu(
        "criu-dump",
        r#"Cmd = "run.sh"; SkuaCheckpoint = "criu"; KillSig = "SIGUSR2""#,
    );
    // the kill signal would leave a trace: a dumped job never gets it
    w.script(
        "run.sh",
        r#"trap 'echo signalled > signalled.txt; exit 0' USR2
echo 41 > count
while :; do sleep 0.1; done"#,
    );
    let mut child = w.start_on(CRIU_SLOT, 10);
    w.wait_executing();
    wait_for("the job's count", Duration::from_secs(10), || {
        std::fs::read_dir(&w.execute)
            .unwrap()
            .flatten()
            .any(|e| e.path().join("count").exists())
    });
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    assert!(matches!(w.exit().outcome, RunOutcome::Evicted { .. }));
    let commits = w.commits();
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0].kind, CheckpointKind::Backend);
    assert_eq!(commits[0].backend.as_deref(), Some("criu"));
    for f in [
        "count",
        ".skua_criu_image/pages.img",
        ".skua_criu_image/skua-pid",
        ".skua_criu_image/skua-scratch",
        ".skua_criu_image/skua-seal",
    ] {
        assert!(commits[0].files.iter().any(|c| c == f), "{f}: {commits:?}");
    }
    assert!(!commits[0].files.iter().any(|c| c == "signalled.txt"));
    assert_eq!(w.checkpointed(1, ".skua_criu_image/pages.img"), b"41\n");
    assert!(w.execute_is_empty());

    // the next start restores it
    w.begin_from_checkpoint_1(Some("criu"));
    let mut child = w.start_on(CRIU_SLOT, 10);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 7 });
    assert_eq!(w.returned("restored.txt"), b"restored 41\n");
    // the earlier scratch directory's link and the image copy are gone
    assert!(w.execute_is_empty());
}

/// An image changed after the dump (it passes through the owner's hands)
/// is never restored: the seal does not match, the run fails.
#[test]
fn a_changed_criu_image_is_not_restored() {
    let w = World::with_fake_criu("criu-tamper", r#"Cmd = "run.sh"; SkuaCheckpoint = "criu""#);
    w.script("run.sh", "echo 41 > count\nwhile :; do sleep 0.1; done");
    let mut child = w.start_on(CRIU_SLOT, 10);
    w.wait_executing();
    wait_for("the job's count", Duration::from_secs(10), || {
        std::fs::read_dir(&w.execute)
            .unwrap()
            .flatten()
            .any(|e| e.path().join("count").exists())
    });
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.commits().len(), 1);
    std::fs::write(
        w.out_dir.join(".checkpoints/1/.skua_criu_image/pages.img"),
        "0\n",
    )
    .unwrap();
    w.begin_from_checkpoint_1(Some("criu"));
    let mut child = w.start_on(CRIU_SLOT, 10);
    w.wait(&mut child);
    match w.exit().outcome {
        RunOutcome::Failed { reason, .. } => {
            assert!(reason.contains("seal does not match"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!w.out_dir.join("restored.txt").exists());
    assert!(w.execute_is_empty());
}

/// A checkpoint made by a backend this slot does not offer cannot be
/// restored: the run fails and says why; without the backend a vacated
/// job gets its kill signal as usual.
#[test]
fn a_criu_checkpoint_on_a_slot_without_criu_fails_the_run_with_the_reason() {
    let w = World::with_fake_criu(
        "criu-absent",
        r#"Cmd = "run.sh"; SkuaCheckpoint = "criu"; WhenToTransferOutput = "ON_EXIT_OR_EVICT""#,
    );
    w.script(
        "run.sh",
        "trap 'echo signalled > signalled.txt; exit 0' TERM\nwhile :; do sleep 0.1; done",
    );
    // a plain slot (the startd found no working criu): vacated as usual
    let mut child = w.start(10);
    w.wait_executing();
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    let commits = w.commits();
    assert_eq!(commits[0].kind, CheckpointKind::Evict);
    assert_eq!(commits[0].files, vec!["signalled.txt"]);
    // a checkpoint from criu cannot start here
    w.begin_from_checkpoint_1(Some("criu"));
    let mut child = w.start(10);
    w.wait(&mut child);
    match w.exit().outcome {
        RunOutcome::Failed { reason, permanent } => {
            assert!(
                reason.contains("criu checkpoint backend, which this machine does not offer"),
                "{reason}"
            );
            assert!(permanent);
        }
        other => panic!("{other:?}"),
    }
    assert!(w.execute_is_empty());
}

/// A restored job that exits with its checkpoint code is restarted from
/// its executable, like any self-checkpointing job (it is restored once).
#[test]
fn a_restored_job_that_exits_to_checkpoint_is_restarted_not_restored_again() {
    let w = World::with_fake_criu(
        "criu-restart",
        r#"Cmd = "run.sh"; SkuaCheckpoint = "criu"; SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true"#,
    );
    w.script(
        "run.sh",
        r#"if [ -f count ]; then echo fresh > fresh.txt; exit 0; fi
echo 85 > restore-exit
echo 41 > count
while :; do sleep 0.1; done"#,
    );
    let mut child = w.start_on(CRIU_SLOT, 10);
    w.wait_executing();
    wait_for("the job's count", Duration::from_secs(10), || {
        std::fs::read_dir(&w.execute)
            .unwrap()
            .flatten()
            .any(|e| e.path().join("count").exists())
    });
    kill(child.id() as i32, "-TERM");
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.commits()[0].kind, CheckpointKind::Backend);

    w.begin_from_checkpoint_1(Some("criu"));
    let mut child = w.start_on(CRIU_SLOT, 10);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    let commits = w.commits();
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0].kind, CheckpointKind::Exit);
    assert_eq!(commits[0].number, 2);
    // the job's own checkpoint: its files, not the used-up image
    assert!(commits[0].files.iter().any(|f| f == "count"), "{commits:?}");
    assert!(
        !commits[0]
            .files
            .iter()
            .any(|f| f.starts_with(".skua_criu_image")),
        "{commits:?}"
    );
    assert_eq!(w.returned("restored.txt"), b"restored 41\n");
    assert_eq!(w.returned("fresh.txt"), b"fresh\n");
    assert!(w.execute_is_empty());
}

/// A parallel job's node: its number, the node count, the shared spool
/// directory and the hosts in its environment, Skua's binaries (so
/// `skua chirp`) first in its PATH, before the job's own, and the starter's
/// configuration file for Skua's tools.
#[test]
fn a_parallel_node_knows_its_place_and_finds_skua() {
    let w = World::new(
        "parallel-node",
        r#"Cmd = "run.sh"; Out = "job.out"; JobUniverse = 11; ShouldTransferFiles = "YES";
           ParallelNode = 2; CurrentHosts = 3; RemoteSpoolDir = "/var/spool/skua/9/parallel";
           ParallelHosts = "exec1,exec2,exec2"; Environment = "PATH=/usr/bin:/bin _CONDOR_PROCNO=7""#,
    );
    w.script(
        "run.sh",
        r#"echo "$_CONDOR_PROCNO $_CONDOR_NPROCS $_CONDOR_REMOTE_SPOOL_DIR $SKUA_PARALLEL_HOSTS"
echo "$PATH"
command -v skua
echo "$SKUA_CONFIG""#,
    );
    let mut child = w.start(5);
    assert_eq!(w.wait(&mut child), 0);
    assert_eq!(w.exit().outcome, RunOutcome::Exited { code: 0 });
    let bin = Path::new(common::SKUA)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let stdout = String::from_utf8(w.returned("_condor_stdout")).unwrap();
    assert_eq!(
        stdout,
        format!(
            "2 3 /var/spool/skua/9/parallel exec1,exec2,exec2\n{bin}:/usr/bin:/bin\n{}\n{}\n",
            common::SKUA,
            w.dir.join("skua_config").display()
        )
    );
}
