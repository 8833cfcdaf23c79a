//! The tools users watch their jobs with (issue 16): `skua tail`,
//! `skua ssh_to_job`, `skua wait` and `skua watch_q`, through a whole
//! personal pool.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{job_pool, submitter, user_dir, wait_for, Pool, SKUA};

fn script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// [`spawn_user`] with a pipe to its standard input.
fn spawn_user_stdin(pool: &Pool, dir: &Path, args: &[&str]) -> Reap {
    Reap(Some(spawn_with(pool, dir, args, Stdio::piped())))
}

/// `skua ARGS` in `dir` as the submitting account, not waited for.
fn spawn_user(pool: &Pool, dir: &Path, args: &[&str]) -> std::process::Child {
    spawn_with(pool, dir, args, Stdio::null())
}

fn spawn_with(pool: &Pool, dir: &Path, args: &[&str], stdin: Stdio) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(SKUA);
    c.current_dir(dir)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &pool.home)
        .env("SKUA_CONFIG", pool.config())
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &pool.extra_env {
        c.env(k, v);
    }
    if let Some(u) = submitter() {
        c.uid(u.uid).gid(u.gid);
    }
    c.spawn().unwrap()
}

/// Kills a spawned tool if the test fails before it ends.
struct Reap(Option<std::process::Child>);

impl Reap {
    fn wait(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn tail_follows_a_running_job_and_ssh_to_job_runs_in_its_sandbox() {
    let pool = job_pool("watch-tail", "1", &[]);
    let dir = pool.home.join("work");
    user_dir(&dir);
    std::fs::write(dir.join("input"), "hello input\n").unwrap();
    // prints numbered lines until `release` appears in its sandbox
    script(
        &dir,
        "talk.sh",
        "#!/bin/sh\ni=0\nwhile [ ! -e release ]; do i=$((i+1)); echo line $i; \
         echo progress $i > progress.txt; echo err $i >&2; sleep 0.2; done\n",
    );
    let cluster = pool.submit_job(
        &dir,
        "executable = talk.sh\nshould_transfer_files = YES\n\
         transfer_input_files = input\ntransfer_output_files = progress.txt\n\
         output = out.txt\nerror = err.txt\nlog = job.log\nqueue\n",
    );
    let job = format!("{cluster}.0");
    wait_for("the job to run", Duration::from_secs(60), || {
        pool.skua(&["q", &job, "-af", "JobStatus"]).stdout == b"2\n"
    });

    // the last bytes of the output, then (-f) every new line until the
    // job ends
    let tail = Reap(Some(spawn_user(
        &pool,
        &dir,
        &["tail", "-f", "-interval", "0.2", "-auto-retry", &job],
    )));
    wait_for("more output", Duration::from_secs(60), || {
        let o = pool.skua_user_in(&dir, &["tail", &job]);
        text(&o.stdout).lines().count() >= 5
    });

    // a command in the sandbox, as the job's user, with its input file
    let o = pool.skua_user_in(
        &dir,
        &[
            "ssh_to_job",
            &job,
            "--",
            "sh",
            "-c",
            "pwd; id -un; cat input; echo $_CONDOR_JOB_PIDS",
        ],
    );
    assert!(
        o.status.success(),
        "ssh_to_job: {}\n{}",
        text(&o.stderr),
        pool.logs()
    );
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[0].starts_with(&pool.dir.display().to_string()),
        "{out}"
    );
    assert!(lines[0].contains("/dir_"), "not the sandbox: {out}");
    if let Some(u) = submitter() {
        assert_eq!(lines[1], u.name);
    }
    assert_eq!(lines[2], "hello input");
    assert!(lines[3].parse::<u32>().is_ok(), "{out}");
    // without a command, the job's shell reads its commands from stdin
    let mut shell = spawn_user_stdin(&pool, &dir, &["ssh_to_job", &job]);
    {
        use std::io::Write;
        let mut stdin = shell.0.as_mut().unwrap().stdin.take().unwrap();
        stdin.write_all(b"cat input\nexit 3\n").unwrap();
    }
    let o = shell.wait();
    assert_eq!(text(&o.stdout), "hello input\n", "{}", text(&o.stderr));
    assert_eq!(o.status.code(), Some(3));
    // the command's exit status comes back
    let o = pool.skua_user_in(&dir, &["ssh_to_job", &job, "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7));

    // stderr and a named output file; a file the job does not send back
    // is refused
    let o = pool.skua_user_in(&dir, &["tail", "-no-stdout", "-stderr", &job]);
    assert!(text(&o.stdout).starts_with("err "), "{}", text(&o.stdout));
    let o = pool.skua_user_in(&dir, &["tail", "-no-stdout", &job, "progress.txt"]);
    assert!(
        text(&o.stdout).starts_with("progress "),
        "{}",
        text(&o.stderr)
    );
    let o = pool.skua_user_in(&dir, &["tail", &job, "input"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not in the transfer_output_files"),
        "{}",
        text(&o.stderr)
    );

    // another user may neither enter nor read the job
    let token = pool.user_token("mallory");
    let o = pool.skua_as(&token, &["ssh_to_job", &job, "--", "true"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("belongs to"),
        "{}",
        text(&o.stderr)
    );
    let o = pool.skua_as(&token, &["tail", &job]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("belongs to"),
        "{}",
        text(&o.stderr)
    );

    // let the job end (through the same path): tail -f stops by itself
    let o = pool.skua_user_in(&dir, &["ssh_to_job", &job, "--", "touch", "release"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let tailed = tail.wait();
    assert!(tailed.status.success(), "tail -f: {}", text(&tailed.stderr));
    let got = text(&tailed.stdout);
    let numbers: Vec<u32> = got
        .lines()
        .map(|l| l.strip_prefix("line ").unwrap().parse().unwrap())
        .collect();
    // consecutive lines from the first, more than the first read saw
    assert_eq!(numbers, (1..=numbers.len() as u32).collect::<Vec<_>>());
    assert!(numbers.len() >= 5, "{got}");
    // the job completed: its output came back whole, and tail has nothing
    // left to read
    wait_for(
        "the job to leave the queue",
        Duration::from_secs(60),
        || {
            pool.skua(&["q", &job, "-af", "JobStatus"])
                .stdout
                .is_empty()
        },
    );
    let all = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    assert!(all.starts_with(&got), "tail showed what the job wrote");
    let o = pool.skua_user_in(&dir, &["tail", &job]);
    assert!(!o.status.success());
}

#[test]
fn wait_and_watch_q_follow_the_event_log_until_the_jobs_are_done() {
    let pool = job_pool("watch-wait", "2", &[]);
    let dir = pool.home.join("work");
    user_dir(&dir);
    script(&dir, "short.sh", "#!/bin/sh\necho done\n");
    // held at submission, so that watch_q finds them in the queue
    let cluster = pool.submit_job(
        &dir,
        "executable = short.sh\nhold = true\nlog = job.log\nbatch_name = pair\nqueue 2\n",
    );
    let watch = Reap(Some(spawn_user(
        &pool,
        &dir,
        &["watch_q", "-exit", "all,done", "-interval", "0.2"],
    )));
    let waiter = Reap(Some(spawn_user(
        &pool,
        &dir,
        &["wait", "-status", "job.log"],
    )));
    // nothing ends while the jobs are held: wait gives up after -wait
    let o = pool.skua_user_in(&dir, &["wait", "-wait", "0.5", "job.log"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout).trim(), "Time expired.");

    let o = pool.skua_user_in(&dir, &["release", &cluster]);
    assert!(o.status.success(), "{}", text(&o.stderr));

    let w = waiter.wait();
    assert!(w.status.success(), "wait: {}", text(&w.stderr));
    let out = text(&w.stdout);
    assert!(out.ends_with("All jobs done.\n"), "{out}");
    assert!(out.contains(&format!("{cluster}.1.0 completed")), "{out}");

    let q = watch.wait();
    assert!(q.status.success(), "watch_q: {}", text(&q.stderr));
    let out = text(&q.stdout);
    // the last table: both jobs done
    let last: Vec<&str> = out.lines().rev().take(2).collect();
    assert_eq!(last[1], "BATCH  IDLE   RUN  DONE  TOTAL  JOB_IDS", "{out}");
    assert_eq!(
        last[0],
        format!("pair      -     -     2      2  {cluster}.0-1"),
        "{out}"
    );
    // the first table showed them idle (held at submission)
    assert_eq!(
        out.lines().nth(1).unwrap(),
        format!("pair      2     -     -      2  {cluster}.0-1"),
        "{out}"
    );

    // a job that is not in the log yet: wait waits (and gives up)
    let o = pool.skua_user_in(&dir, &["wait", "-wait", "0.3", "job.log", "999"]);
    assert_eq!(o.status.code(), Some(1));
    // a finished job: at once
    let o = pool.skua_user_in(&dir, &["wait", "job.log", &format!("{cluster}.1")]);
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), "All jobs done.\n");
}

#[test]
fn the_knobs_refuse_ssh_to_job_and_tail_never_follows_a_link_out_of_the_sandbox() {
    let pool = job_pool(
        "watch-refuse",
        "2",
        &[
            ("_CONDOR_SCHEDD_ENABLE_SSH_TO_JOB", "ProcId != 1"),
            ("_CONDOR_ENABLE_SSH_TO_JOB", "TARGET.ProcId != 0"),
        ],
    );
    let dir = pool.home.join("work");
    user_dir(&dir);
    // a job that points its output file at a file outside its sandbox
    script(
        &dir,
        "link.sh",
        "#!/bin/sh\nln -s /etc/passwd secret.txt\necho ready\nexec sleep 600\n",
    );
    let cluster = pool.submit_job(
        &dir,
        "executable = link.sh\nshould_transfer_files = YES\n\
         transfer_output_files = secret.txt\noutput = out.$(Process)\nqueue 2\n",
    );
    for p in 0..2 {
        let job = format!("{cluster}.{p}");
        wait_for("the jobs to run", Duration::from_secs(60), || {
            text(&pool.skua_user_in(&dir, &["tail", &job]).stdout) == "ready\n"
        });
    }
    let o = pool.skua_user_in(&dir, &["ssh_to_job", &format!("{cluster}.1"), "--", "true"]);
    assert_eq!(o.status.code(), Some(255));
    assert!(
        text(&o.stderr).contains(&format!(
            "Job {cluster}.1 is denied by SCHEDD_ENABLE_SSH_TO_JOB."
        )),
        "{}",
        text(&o.stderr)
    );
    let o = pool.skua_user_in(&dir, &["ssh_to_job", &format!("{cluster}.0"), "--", "true"]);
    assert_eq!(o.status.code(), Some(255));
    assert!(
        text(&o.stderr).contains("Rejecting request, because ENABLE_SSH_TO_JOB=false"),
        "{}",
        text(&o.stderr)
    );
    // the link is not followed (even to a file the job user may read)
    let o = pool.skua_user_in(
        &dir,
        &["tail", "-no-stdout", &format!("{cluster}.0"), "secret.txt"],
    );
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("secret.txt"),
        "{}",
        text(&o.stderr)
    );
    let o = pool.skua_user_in(&dir, &["rm", &cluster]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    wait_for("the jobs to leave", Duration::from_secs(60), || {
        pool.skua(&["q", &cluster, "-af", "JobStatus"])
            .stdout
            .is_empty()
    });
}
