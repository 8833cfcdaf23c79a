//! Separate test hosts on this machine: Linux network namespaces joined by
//! a bridge, made and unmade by the shared script `../shared/netns/hosts.sh`
//! (relative to the workspace root; `SKUA_SHARED` names another shared
//! directory, as in `.ci/run`).
//!
//! Each [`Hosts`] has its own prefix and subnet (`n<k>h`, `10.78.<k>`; `k`
//! held by a lock on a file in `/tmp/skua-netns`, so tests running at the
//! same time, in one process or several, never share a set), starts from a
//! clean slate (a number whose links are still there, left by a killed test
//! or still being torn down, is cleaned and skipped) and, when dropped,
//! even by a failing test, kills every process it started and removes its
//! namespaces and bridge.
//!
//! These tests need root (CAP_NET_ADMIN), iproute2's `ip` and util-linux's
//! `unshare`. A test that cannot make its hosts fails: CI runs as root and
//! must run them.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;

/// Where allocated set numbers are recorded (one file per number, holding
/// the owning process's id).
const LOCK_DIR: &str = "/tmp/skua-netns";

/// The shared script, from the workspace root.
pub fn hosts_script() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shared = std::env::var("SKUA_SHARED").unwrap_or_else(|_| "../shared".to_string());
    let shared = Path::new(&shared);
    let shared = if shared.is_absolute() {
        shared.to_path_buf()
    } else {
        root.join(shared)
    };
    shared.join("netns/hosts.sh")
}

/// A set of test hosts (see the module documentation).
pub struct Hosts {
    /// `HOSTS_PREFIX`: namespaces `<prefix>1`.., also each host's name.
    pub prefix: String,
    /// `HOSTS_NET`: the /24 (`10.78.<k>`); host `i` is `<net>.<10+i>`.
    pub net: String,
    /// How many hosts are up.
    pub count: usize,
    script: PathBuf,
    /// Holds the set number (its `flock`) until the hosts are gone.
    _lock: std::fs::File,
    children: Mutex<Vec<Child>>,
}

/// Takes a free set number (1..=250): the first whose lock file this
/// process can lock (`flock`, released by the kernel when its holder ends,
/// however it ends). The files stay; only their locks come and go.
fn allocate() -> (u32, std::fs::File) {
    std::fs::create_dir_all(LOCK_DIR).expect("make /tmp/skua-netns");
    let me = std::process::id();
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let offset = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for attempt in 0..250u32 {
        let k = (me
            .wrapping_mul(7)
            .wrapping_add(offset * 13)
            .wrapping_add(attempt))
            % 250
            + 1;
        let path = Path::new(LOCK_DIR).join(k.to_string());
        let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        else {
            continue;
        };
        if f.try_lock().is_ok() {
            let _ = f.set_len(0);
            let _ = write!(f, "{me}");
            return (k, f);
        }
    }
    panic!("no free test-host set number in {LOCK_DIR}");
}

impl Hosts {
    /// Makes `n` hosts, named `<prefix>1` .. `<prefix>n`. Panics (the test
    /// fails) when the namespaces cannot be made.
    pub fn up(n: usize) -> Hosts {
        let script = hosts_script();
        assert!(
            script.exists(),
            "the test-host script {} is missing (the shared directory beside the workspace)",
            script.display()
        );
        // One set is made at a time, whoever makes it.
        std::fs::create_dir_all(LOCK_DIR).expect("make /tmp/skua-netns");
        let serial = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(Path::new(LOCK_DIR).join("up.lock"))
            .expect("open /tmp/skua-netns/up.lock");
        serial.lock().expect("lock /tmp/skua-netns/up.lock");
        let mut failures = Vec::new();
        for _ in 0..5 {
            let (k, lock) = allocate();
            let hosts = Hosts {
                prefix: format!("n{k}h"),
                net: format!("10.78.{k}"),
                count: n,
                script: script.clone(),
                _lock: lock,
                children: Mutex::new(Vec::new()),
            };
            // Links of this prefix still there: a set left by a test that
            // was killed, or one still being torn down (a namespace, with
            // its end of a link, lives on until its last process has died,
            // which can take seconds). Removed (dropping `hosts` runs
            // `down`), and another number taken.
            if hosts.links_left() {
                continue;
            }
            let out = hosts.script_output(&["up", &n.to_string()]);
            if !out.status.success() {
                failures.push(format!(
                    "{}: {}",
                    hosts.prefix,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                continue;
            }
            // each namespace must exist: `up` ignores some errors
            let unusable: Vec<String> = (1..=n)
                .filter_map(|i| {
                    let out = hosts.run(i, Command::new("true"));
                    (!out.status.success()).then(|| {
                        format!(
                            "{}: {}",
                            hosts.name(i),
                            String::from_utf8_lossy(&out.stderr).trim()
                        )
                    })
                })
                .collect();
            if !unusable.is_empty() {
                failures.extend(unusable);
                continue;
            }
            drop(serial);
            return hosts;
        }
        panic!(
            "cannot make {n} test hosts with network namespaces (these tests need root, \
             iproute2's `ip` and `unshare`): {}",
            failures.join("; ")
        );
    }

    /// Whether a link of this set's prefix (a host's link or the bridge)
    /// exists in this namespace.
    fn links_left(&self) -> bool {
        let bridge = format!("{}br", self.prefix);
        let veth = format!("{}v", self.prefix);
        let out = Command::new("ip")
            .args(["-o", "link", "show"])
            .output()
            .expect("run ip link show");
        String::from_utf8_lossy(&out.stdout).lines().any(|l| {
            l.split(':').nth(1).is_some_and(|name| {
                let name = name.trim();
                let name = name.split('@').next().unwrap_or(name);
                name == bridge
                    || name
                        .strip_prefix(&veth)
                        .is_some_and(|i| i.parse::<u32>().is_ok())
            })
        })
    }

    fn script_command(&self) -> Command {
        let mut c = Command::new("bash");
        c.arg(&self.script)
            .env("HOSTS_PREFIX", &self.prefix)
            .env("HOSTS_NET", &self.net)
            .stdin(Stdio::null());
        c
    }

    fn script_output(&self, args: &[&str]) -> Output {
        self.script_command()
            .args(args)
            .output()
            .expect("run the test-host script")
    }

    fn checked(&self, args: &[&str]) {
        let out = self.script_output(args);
        assert!(
            out.status.success(),
            "hosts.sh {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Host `i`'s name (and host name inside it): `<prefix><i>`.
    pub fn name(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    /// Host `i`'s address.
    pub fn addr(&self, i: usize) -> String {
        format!("{}.{}", self.net, 10 + i)
    }

    /// Which host has the address `ip`, if any.
    pub fn host_of(&self, ip: &str) -> Option<usize> {
        (1..=self.count).find(|i| self.addr(*i) == ip)
    }

    /// `cmd` (program, arguments, environment, working directory) made to
    /// run on host `i`: in its namespace, with its host name.
    pub fn command(&self, i: usize, cmd: Command) -> Command {
        let mut c = self.script_command();
        c.args(["run", &i.to_string()]);
        c.arg(cmd.get_program()).args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            c.current_dir(dir);
        }
        c
    }

    /// Runs `cmd` on host `i` to its end.
    pub fn run(&self, i: usize, cmd: Command) -> Output {
        self.command(i, cmd)
            .output()
            .expect("run a command on a test host")
    }

    /// Starts `cmd` on host `i` in the background, its output appended to
    /// `log`; it is killed when the hosts are dropped. Its process id.
    pub fn spawn(&self, i: usize, cmd: Command, log: &Path) -> u32 {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the process's log");
        let err = out.try_clone().expect("clone the log handle");
        let child = self
            .command(i, cmd)
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("start a process on a test host");
        let pid = child.id();
        self.children.lock().expect("children").push(child);
        pid
    }

    /// The processes running on host `i`.
    pub fn pids(&self, i: usize) -> Vec<u32> {
        let out = self.script_output(&["pids", &i.to_string()]);
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Cuts host `i` off: its link goes down, packets vanish silently.
    pub fn cut(&self, i: usize) {
        self.checked(&["cut", &i.to_string()]);
    }

    /// Brings host `i`'s link back.
    pub fn heal(&self, i: usize) {
        self.checked(&["heal", &i.to_string()]);
    }

    /// Kills every process on host `i` at once (SIGKILL), as a machine
    /// that dies.
    pub fn crash(&self, i: usize) {
        self.checked(&["crash", &i.to_string()]);
        // reap the ones this set started there
        let mut children = self.children.lock().expect("children");
        for c in children.iter_mut() {
            let _ = c.try_wait();
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        if let Ok(mut children) = self.children.lock() {
            for c in children.iter_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        // every process still in a namespace is killed by `down`
        let _ = self.script_output(&["down"]);
    }
}
