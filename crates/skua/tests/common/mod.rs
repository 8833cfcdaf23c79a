//! The harness of the cross-process tests: a personal pool in a temporary
//! directory, driven through the real binaries, every process stopped by
//! PID at the end.

#![allow(dead_code)]

pub mod cgroup;
pub mod multihost;
pub mod netns;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const SKUA: &str = env!("CARGO_BIN_EXE_skua");
pub const SKUAD: &str = env!("CARGO_BIN_EXE_skuad");

pub struct Pool {
    pub dir: PathBuf,
    pub home: PathBuf,
    pub master_pid: Option<i32>,
    pub extra_env: Vec<(String, String)>,
}

/// A local account the tests act as: root may not submit jobs, and a
/// root pool runs each job as its owner.
#[derive(Clone, Debug)]
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

fn is_root() -> bool {
    String::from_utf8_lossy(&Command::new("id").arg("-u").output().expect("id").stdout).trim()
        == "0"
}

/// The account `name` (created when missing, as a system account with no
/// home and no login shell, and kept for later runs; creation is
/// serialized across test processes by a lock file). `None` when the
/// tests do not run as root: they then act as themselves.
pub fn test_user(name: &str) -> Option<TestUser> {
    if !is_root() {
        return None;
    }
    let script = format!(
        "id -u {name} >/dev/null 2>&1 || useradd --system --no-create-home \
         --home-dir /nonexistent --shell /usr/sbin/nologin --user-group {name}"
    );
    let out = Command::new("flock")
        .args(["/tmp/.skua-test-users.lock", "sh", "-c", &script])
        .output()
        .expect("run flock and useradd");
    assert!(
        out.status.success(),
        "cannot create the test account {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, name]).output().expect("id");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("no {flag} for {name}"))
    };
    Some(TestUser {
        name: name.to_string(),
        uid: id("-u"),
        gid: id("-g"),
    })
}

/// The account the tests submit their jobs as.
pub fn submitter() -> Option<TestUser> {
    static SUBMITTER: std::sync::OnceLock<Option<TestUser>> = std::sync::OnceLock::new();
    SUBMITTER.get_or_init(|| test_user("skuatest")).clone()
}

/// Makes `dir` (and its parents) and gives it to the submitting account,
/// as a user's own working directory.
pub fn user_dir(dir: &Path) {
    std::fs::create_dir_all(dir).expect("make the directory");
    if let Some(u) = submitter() {
        std::os::unix::fs::chown(dir, Some(u.uid), Some(u.gid)).expect("chown the directory");
    }
}

/// A test's scratch directory, removed when dropped (also when the test
/// fails).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Scratch {
    /// The path, for a caller that removes the directory itself.
    pub fn into_path(self) -> PathBuf {
        let path = self.0.clone();
        std::mem::forget(self);
        path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("skua-pool-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    Scratch(d)
}

pub fn kill(pid: i32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).output();
}

pub fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

pub fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Pool {
    pub fn new(name: &str, env: &[(&str, &str)]) -> Pool {
        let base = scratch(name).into_path();
        Pool {
            dir: base.join("pool"),
            home: base,
            master_pid: None,
            extra_env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.join("skua_config")
    }

    /// Runs `skua` in `cwd` as the submitting account (as root when the
    /// tests are not root: themselves).
    pub fn skua_user_in(&self, cwd: &Path, args: &[&str]) -> Output {
        match submitter() {
            Some(u) => self.skua_account_in(&u, cwd, args),
            None => self.skua_in(cwd, args),
        }
    }

    /// Runs `skua` in `cwd` as the submitting account with `input` on its
    /// standard input.
    pub fn skua_user_stdin(&self, cwd: &Path, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        use std::os::unix::process::CommandExt;
        let mut c = self.skua_command(cwd, args);
        if let Some(u) = submitter() {
            c.uid(u.uid).gid(u.gid);
        }
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("run skua");
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .expect("write skua's input");
        }
        child.wait_with_output().expect("wait for skua")
    }

    /// Runs `skua` in `cwd` as the account `user`.
    pub fn skua_account_in(&self, user: &TestUser, cwd: &Path, args: &[&str]) -> Output {
        use std::os::unix::process::CommandExt;
        let mut c = self.skua_command(cwd, args);
        c.uid(user.uid).gid(user.gid);
        c.output().expect("run skua")
    }

    /// Submits the file `file` (relative to `cwd`) as the submitting
    /// account; the output of a successful `skua submit`.
    pub fn submit_in(&self, cwd: &Path, file: &str) -> String {
        let out = self.skua_user_in(cwd, &["submit", file]);
        assert!(
            out.status.success(),
            "skua submit {file} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes `text` to `dir/job.sub` and submits it from `dir` (made the
    /// submitting account's) as that account; the cluster id.
    pub fn submit_job(&self, dir: &Path, text: &str) -> String {
        user_dir(dir);
        std::fs::write(dir.join("job.sub"), text).expect("write job.sub");
        let out = self.skua_user_in(dir, &["submit", "job.sub"]);
        assert!(
            out.status.success(),
            "submit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split("cluster ")
            .nth(1)
            .and_then(|r| r.trim().strip_suffix('.'))
            .unwrap_or_else(|| panic!("no cluster in {text:?}"))
            .to_string()
    }

    pub fn skua(&self, args: &[&str]) -> Output {
        self.skua_in(&std::env::temp_dir(), args)
    }

    /// Runs `skua` in the directory `cwd` (as a user in their work dir).
    pub fn skua_in(&self, cwd: &Path, args: &[&str]) -> Output {
        self.skua_command(cwd, args).output().expect("run skua")
    }

    fn skua_command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(SKUA);
        c.current_dir(cwd);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("SKUA_CONFIG", self.config());
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        c
    }

    /// A token for `who@test` made by the pool's administrator, written to
    /// a file in the pool's home.
    pub fn user_token(&self, who: &str) -> PathBuf {
        let t = self.ok(&["token", "create", "--identity", &format!("{who}@test")]);
        let path = self.home.join(format!("{who}.token"));
        std::fs::write(&path, t.trim()).expect("write the token");
        path
    }

    /// Writes `text` to `work/<name>` and submits it as the user of the
    /// token in `token`.
    pub fn submit_as(&self, token: &Path, name: &str, text: &str) {
        let dir = self.home.join("work");
        std::fs::create_dir_all(&dir).expect("work dir");
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write the submit file");
        let out = self.skua_as(token, &["submit", &file.display().to_string()]);
        assert!(
            out.status.success(),
            "submit as another user failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `skua` as the user of the token in `token` (over TCP).
    pub fn skua_as(&self, token: &Path, args: &[&str]) -> Output {
        self.skua_command(&std::env::temp_dir(), args)
            .env("SKUA_TOKEN_FILE", token)
            .output()
            .expect("run skua")
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.skua(args);
        assert!(
            out.status.success(),
            "skua {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        if let Ok(entries) = std::fs::read_dir(self.dir.join("log")) {
            for e in entries.flatten() {
                if let Ok(t) = std::fs::read_to_string(e.path()) {
                    s.push_str(&format!("==== {}\n{}\n", e.path().display(), t));
                }
            }
        }
        s
    }

    pub fn start(&mut self) {
        let dir = self.dir.to_string_lossy().into_owned();
        let out = self.ok(&["pool", "start", "--dir", &dir]);
        let pid = out
            .split("master pid ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no master pid in {out:?}"));
        self.master_pid = Some(pid);
    }

    pub fn collector_pid(&self) -> Option<i32> {
        let out = self.skua(&["status", "-master", "-af", "COLLECTOR_PID"]);
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }

    pub fn types(&self) -> String {
        String::from_utf8_lossy(&self.skua(&["status", "-any", "-af", "MyType"]).stdout)
            .into_owned()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let dir = self.dir.to_string_lossy().into_owned();
        let collector = self.collector_pid();
        let _ = self.skua(&["pool", "stop", "--dir", &dir]);
        for pid in [self.master_pid, collector].into_iter().flatten() {
            if alive(pid) {
                kill(pid, "-KILL");
            }
        }
        // any other process of this pool (e.g. when a failed test left the
        // configuration unreadable): found by the SKUA_CONFIG it runs with
        let marker = format!("SKUA_CONFIG={}", self.config().display());
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for e in entries.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                    continue;
                };
                let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
                if environ.split(|b| *b == 0).any(|v| v == marker.as_bytes()) && alive(pid) {
                    kill(pid, "-KILL");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// The startd in another UID domain than the schedd: every job runs as
/// `nobody` there (HTCondor's rule), as the jobs of the tests' invented
/// users (alice@test...) must, having no account on this host.
pub const EXECUTE_IN_OTHER_UID_DOMAIN: (&str, &str) = ("_CONDOR_STARTD.UID_DOMAIN", "execute.test");

pub fn fast() -> Vec<(&'static str, &'static str)> {
    vec![
        ("_CONDOR_UPDATE_INTERVAL", "1"),
        ("_CONDOR_CLASSAD_LIFETIME", "3"),
        ("_CONDOR_MASTER_BACKOFF_CONSTANT", "0"),
        ("_CONDOR_MASTER_BACKOFF_FACTOR", "1.0"),
    ]
}

/// The environment of a job test's pool with `cpus` slots: [`fast`] plus
/// keep-alives, negotiation and starter updates every second, then `extra`
/// (a later entry wins).
pub fn job_env<'a>(cpus: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = fast();
    env.extend_from_slice(&[
        ("_CONDOR_NUM_CPUS", cpus),
        ("_CONDOR_ALIVE_INTERVAL", "1"),
        ("_CONDOR_NEGOTIATOR_INTERVAL", "1"),
        ("_CONDOR_NEGOTIATOR_CYCLE_DELAY", "0"),
        ("_CONDOR_STARTER_UPDATE_INTERVAL", "1"),
    ]);
    env.extend_from_slice(extra);
    env
}

/// A pool of [`job_env`], started and advertising its `cpus` slots.
pub fn job_pool(name: &str, cpus: &str, extra: &[(&str, &str)]) -> Pool {
    let mut pool = Pool::new(name, &job_env(cpus, extra));
    pool.start();
    let want: usize = cpus.parse().unwrap_or(1);
    wait_for("the slots", Duration::from_secs(30), || {
        pool.ok(&["status", "-af", "Name"]).lines().count() == want
    });
    // `skua submit` finds the schedd by its address file, which may come
    // after the startd's ads
    wait_for("the schedd's address file", Duration::from_secs(30), || {
        pool.dir.join("spool/.schedd_address").exists()
    });
    pool
}

/// The PIDs of this pool's `skuad ROLE` processes, found by their command
/// line and the SKUA_CONFIG they run with.
pub fn pids_of(pool: &Pool, role: &str) -> Vec<i32> {
    let marker = format!("SKUA_CONFIG={}", pool.config().display());
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_role = args.first().is_some_and(|a| a.ends_with(b"skuad"))
            && args.get(1).is_some_and(|a| *a == role.as_bytes());
        if !is_role || !alive(pid) {
            continue;
        }
        let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == marker.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// What the negotiator's ad says of its last cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// `LastNegotiationCycleEnd0`: when it ended (Unix seconds).
    pub end: i64,
    /// `LastNegotiationCycleNumIdleJobs0`: the idle jobs it saw.
    pub idle_jobs: i64,
    /// `LastNegotiationCycleRejections0`: the jobs it found no slot for.
    pub rejections: i64,
    /// `LastNegotiationCycleMatches0`: the matches it made.
    pub matches: i64,
    /// `LastNegotiationCyclePreemptions0`: the running jobs it preempted.
    pub preemptions: i64,
}

impl Pool {
    /// The negotiator's last cycle as its ad in the collector tells it,
    /// `None` before the first.
    pub fn last_cycle(&self) -> Option<Cycle> {
        let out = self.ok(&[
            "status",
            "-negotiator",
            "-af",
            "LastNegotiationCycleEnd0",
            "LastNegotiationCycleNumIdleJobs0",
            "LastNegotiationCycleRejections0",
            "LastNegotiationCycleMatches0",
            "LastNegotiationCyclePreemptions0",
        ]);
        let n: Vec<i64> = out
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        match n.as_slice() {
            [end, idle_jobs, rejections, matches, preemptions] => Some(Cycle {
                end: *end,
                idle_jobs: *idle_jobs,
                rejections: *rejections,
                matches: *matches,
                preemptions: *preemptions,
            }),
            _ => None,
        }
    }

    /// Waits for `n` negotiation cycles that each began after this call
    /// and for which `counts` holds, and returns them. A cycle is known by
    /// its end time (whole seconds) in the negotiator's ad: the first
    /// cycle seen ending after this call may have begun before it, so it
    /// is not counted; every later one began after that one ended (a
    /// negotiator runs one cycle at a time). Use it where a test shows that
    /// "nothing happens": the negotiator had its chances (and, with
    /// `counts`, saw the jobs in question) and did nothing.
    pub fn wait_for_cycles(
        &self,
        what: &str,
        n: usize,
        timeout: Duration,
        counts: impl Fn(&Cycle) -> bool,
    ) -> Vec<Cycle> {
        // a cycle ending in this second or later ended after this call
        let after_call = unix_now() + 1;
        // the end of the newest cycle seen ending after the call
        let mut newest: Option<i64> = None;
        let mut seen: Vec<Cycle> = Vec::new();
        wait_for(what, timeout, || {
            if let Some(c) = self.last_cycle().filter(|c| c.end >= after_call) {
                match newest {
                    // the first: it may have begun before the call
                    None => newest = Some(c.end),
                    Some(end) if c.end > end => {
                        newest = Some(c.end);
                        if counts(&c) {
                            seen.push(c);
                        }
                    }
                    Some(_) => {}
                }
            }
            seen.len() >= n
        });
        seen
    }

    /// Waits until the startd's own ad of a slot, built at `until` (Unix
    /// seconds) or later, still shows the slot Suspended. The startd
    /// rebuilds its slot ads at every evaluation of its policy (each
    /// `POLLING_INTERVAL`) with `MyCurrentTime` its time then: such an ad
    /// shows that the policy, evaluated again at `until` or later, still
    /// kept the slot suspended.
    pub fn wait_suspended_until(&self, until: i64, timeout: Duration) {
        wait_for("the slot still suspended later", timeout, || {
            self.ok(&[
                "status",
                "-constraint",
                "Activity == \"Suspended\"",
                "-af",
                "MyCurrentTime",
            ])
            .lines()
            .filter_map(|l| l.trim().parse::<i64>().ok())
            .any(|t| t >= until)
        });
    }
}

/// The time now, in Unix seconds (the daemons' clock on this host).
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
