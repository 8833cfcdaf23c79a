//! A pool spread over test hosts for the cross-host tests: one [`Hosts`]
//! set, a pool directory per host under one temporary directory (its own
//! `LOG`, `LOCK`, `SPOOL`, `EXECUTE`, and `FILESYSTEM_DOMAIN` = its host
//! name, so files really travel between hosts), each host's master running
//! inside its namespace with `NETWORK_INTERFACE` = its address.
//!
//! Hosts join the pool as an administrator would ([`MultiPool::join_all`]):
//! the central manager with `skua pool start --role central-manager`, which
//! makes the pool CA and prints a join command; every other host with
//! `skua pool join CM --token T --ca-hash H --role ...` (one join token
//! each, `skua token create --join` on the central manager). The test's
//! knobs reach every daemon as `_CONDOR_<KNOB>` in the environment.
//! A host can instead be configured by hand with bad credentials
//! ([`MultiPool::configure_host`], [`Credentials`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::netns::Hosts;
use super::{scratch, submitter, user_dir, TestUser, SKUA, SKUAD};

/// What a host runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Collector and negotiator.
    CentralManager,
    /// A schedd.
    Submit,
    /// A startd.
    Execute,
}

/// The credentials a host is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credentials {
    /// No credentials: it trusts the pool's CA but has no client
    /// certificate and no signing key (its daemons call anonymously).
    Nothing,
    /// No certificate from the pool, and a signing key of its own: its
    /// tokens are forged for the pool.
    ForgedKey,
    /// A client certificate from another CA (it trusts the pool's CA).
    OtherCa,
}

/// A certificate for `host` at `ip` from `ca`, and its key (PEM).
fn issue(ca: &skua_net::pki::PoolCa, host: &str, ip: &str) -> (String, String) {
    let ip: std::net::IpAddr = ip.parse().expect("a host address");
    let issued = ca
        .issue_host(host, &[ip], None, 24 * 3600)
        .expect("a host certificate");
    (
        issued.cert_pem,
        issued.key_pem.expect("the key the CA made"),
    )
}

/// A pool spread over test hosts (see the module documentation).
pub struct MultiPool {
    /// The hosts (dropped last: every process on them is killed then).
    pub hosts: Hosts,
    /// The temporary directory holding every host's pool directory.
    pub base: PathBuf,
    _remove: RemoveOnDrop,
    roles: Vec<Vec<Role>>,
    knobs: Vec<(String, String)>,
    /// Another CA than the pool's, for hosts refused by the pool.
    other_ca: skua_net::pki::PoolCa,
}

/// Knobs that make a test pool quick: updates every second, ads expiring
/// after four, negotiation, keep-alives, starter updates and the startd's
/// policy every second, two slots per execute host, masters restarting
/// their daemons at once.
pub fn fast_knobs() -> Vec<(&'static str, &'static str)> {
    vec![
        ("UPDATE_INTERVAL", "1"),
        ("CLASSAD_LIFETIME", "4"),
        ("NEGOTIATOR_INTERVAL", "1"),
        ("NEGOTIATOR_CYCLE_DELAY", "0"),
        ("ALIVE_INTERVAL", "1"),
        ("STARTER_UPDATE_INTERVAL", "1"),
        ("POLLING_INTERVAL", "1"),
        ("NUM_CPUS", "2"),
        ("MASTER_BACKOFF_CONSTANT", "0"),
        ("MASTER_BACKOFF_FACTOR", "1.0"),
    ]
}

impl MultiPool {
    /// Makes one test host per entry of `roles` (host 1 first), with
    /// [`fast_knobs`] then `knobs` (a later knob wins), but configures and
    /// starts nothing.
    pub fn new(name: &str, roles: &[&[Role]], knobs: &[(&str, &str)]) -> MultiPool {
        let hosts = Hosts::up(roles.len());
        let base = scratch(name).into_path();
        let mut all: Vec<(String, String)> = fast_knobs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.extend(knobs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        MultiPool {
            hosts,
            _remove: RemoveOnDrop(base.clone()),
            base,
            roles: roles.iter().map(|r| r.to_vec()).collect(),
            knobs: all,
            other_ca: skua_net::pki::PoolCa::generate("Another CA").expect("another CA"),
        }
    }

    /// [`MultiPool::new`], then every host joined and started
    /// ([`MultiPool::join_all`]) and the pool ready
    /// ([`MultiPool::wait_ready`]).
    pub fn start(name: &str, roles: &[&[Role]], knobs: &[(&str, &str)]) -> MultiPool {
        let pool = MultiPool::new(name, roles, knobs);
        pool.join_all(&[]);
        pool.wait_ready();
        pool
    }

    /// Adds a knob for every host (before they start): for values that
    /// name the hosts, known once they are made.
    #[allow(dead_code)]
    pub fn add_knob(&mut self, knob: &str, value: &str) {
        self.knobs.push((knob.to_string(), value.to_string()));
    }

    /// The `--role` argument of host `i`.
    fn role_arg(&self, i: usize) -> String {
        self.roles[i - 1]
            .iter()
            .map(|r| match r {
                Role::CentralManager => "central-manager",
                Role::Submit => "submit",
                Role::Execute => "execute",
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The test's knobs as `_CONDOR_<KNOB>` on `c`.
    fn knob_env(&self, c: &mut Command) {
        for (k, v) in &self.knobs {
            c.env(format!("_CONDOR_{k}"), v);
        }
    }

    /// Starts the central manager with `skua pool start --role
    /// central-manager` and joins every other host but those of `except`
    /// with `skua pool join` (each with a join token of its own); each
    /// command starts its host's master. Returns the join command's
    /// central manager address and CA hash.
    pub fn join_all(&self, except: &[usize]) -> (String, String) {
        let cm = self.central_manager();
        let dir = self.dir(cm).display().to_string();
        let addr = self.hosts.addr(cm);
        let out = self.admin(
            cm,
            &[
                "pool",
                "start",
                "--role",
                &self.role_arg(cm),
                "--dir",
                &dir,
                "--address",
                &addr,
            ],
        );
        // `skua pool join HOST:PORT --token T --ca-hash H`
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("skua pool join "))
            .unwrap_or_else(|| panic!("no join command in {out:?}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let after = |flag: &str| -> String {
            let at = words.iter().position(|w| *w == flag).unwrap_or_else(|| {
                panic!("no {flag} in the join command {line:?}");
            });
            words[at + 1].to_string()
        };
        let target = words[3].to_string();
        let mut token = Some(after("--token"));
        let hash = after("--ca-hash");
        for i in (1..=self.roles.len()).filter(|i| *i != cm && !except.contains(i)) {
            let t = match token.take() {
                Some(t) => t,
                None => self
                    .admin(cm, &["token", "create", "--join"])
                    .trim()
                    .to_string(),
            };
            let dir = self.dir(i).display().to_string();
            self.admin(
                i,
                &[
                    "pool",
                    "join",
                    &target,
                    "--token",
                    &t,
                    "--ca-hash",
                    &hash,
                    "--role",
                    &self.role_arg(i),
                    "--dir",
                    &dir,
                ],
            );
        }
        (target, hash)
    }

    /// Runs `skua args` on host `i` as root with the test's knobs in the
    /// environment (for the pool commands, whose masters inherit it); it
    /// must succeed: its standard output.
    fn admin(&self, i: usize, args: &[&str]) -> String {
        let mut c = self.skua_command(i, &self.base, args);
        self.knob_env(&mut c);
        let out = self.hosts.run(i, c);
        assert!(
            out.status.success(),
            "skua {args:?} on host {i} failed: {}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Host `i`'s pool directory.
    pub fn dir(&self, i: usize) -> PathBuf {
        self.base.join(format!("h{i}"))
    }

    /// Host `i`'s configuration file.
    pub fn config(&self, i: usize) -> PathBuf {
        self.dir(i).join("skua_config")
    }

    /// The host running the central manager.
    pub fn central_manager(&self) -> usize {
        self.host_with(Role::CentralManager)
    }

    /// The first host with `role`.
    pub fn host_with(&self, role: Role) -> usize {
        self.roles
            .iter()
            .position(|r| r.contains(&role))
            .map(|p| p + 1)
            .unwrap_or_else(|| panic!("no host is {role:?}"))
    }

    /// The hosts with `role`.
    pub fn hosts_with(&self, role: Role) -> Vec<usize> {
        (1..=self.roles.len())
            .filter(|i| self.roles[i - 1].contains(&role))
            .collect()
    }

    /// Writes host `i`'s pool directory and configuration by hand, with
    /// bad `credentials` (see [`Credentials`]): it trusts the pool's CA
    /// (the central manager's, which must have been started) and listens
    /// with a server certificate from another CA.
    pub fn configure_host(&self, i: usize, credentials: Credentials) {
        let dir = self.dir(i);
        for sub in [
            "log",
            "spool",
            "execute",
            "lock",
            "passwords.d",
            "tokens.d",
            "certs",
        ] {
            std::fs::create_dir_all(dir.join(sub)).expect("make a pool directory");
        }
        for private in ["passwords.d", "tokens.d"] {
            set_mode(&dir.join(private), 0o700);
        }
        let name = self.hosts.name(i);
        let ip = self.hosts.addr(i);
        let sec = dir.join("certs");
        let (cert, key) = issue(&self.other_ca, &name, &ip);
        std::fs::write(sec.join("host.pem"), cert).expect("write the host certificate");
        std::fs::write(sec.join("host.key"), key).expect("write the host key");
        set_mode(&sec.join("host.key"), 0o600);
        let pool_ca = self.dir(self.central_manager()).join("certs/pool_ca.pem");
        std::fs::copy(&pool_ca, sec.join("ca.pem")).expect("copy the pool CA's certificate");
        let key_file = dir.join("passwords.d/POOL");
        if credentials == Credentials::ForgedKey {
            skua_net::SigningKey::load_or_create(&key_file).expect("make a forged key");
        }

        let roles = &self.roles[i - 1];
        let mut daemons = vec!["MASTER"];
        if roles.contains(&Role::Submit) {
            daemons.push("SCHEDD");
        }
        if roles.contains(&Role::Execute) {
            daemons.push("STARTD");
        }
        let cm = self.hosts.addr(self.central_manager());
        let mut text = format!(
            "# host {name} configured by hand: {roles:?}, {credentials:?}\n\
             LOCAL_DIR = {dir}\n\
             LOG = $(LOCAL_DIR)/log\n\
             SPOOL = $(LOCAL_DIR)/spool\n\
             EXECUTE = $(LOCAL_DIR)/execute\n\
             LOCK = $(LOCAL_DIR)/lock\n\
             MASTER_INSTANCE_LOCK = $(LOCK)/InstanceLock\n\
             CONDOR_HOST = {cm}\n\
             COLLECTOR_HOST = $(CONDOR_HOST):9618\n\
             NETWORK_INTERFACE = {ip}\n\
             BIND_ALL_INTERFACES = False\n\
             DAEMON_LIST = {daemons}\n\
             SKUAD = {skuad}\n\
             FILESYSTEM_DOMAIN = $(FULL_HOSTNAME)\n\
             SEC_PASSWORD_DIRECTORY = $(LOCAL_DIR)/passwords.d\n\
             SEC_TOKEN_SYSTEM_DIRECTORY = $(LOCAL_DIR)/tokens.d\n\
             SEC_TOKEN_DIRECTORY = $(LOCAL_DIR)/tokens.d\n\
             AUTH_SSL_SERVER_CERTFILE = $(LOCAL_DIR)/certs/host.pem\n\
             AUTH_SSL_SERVER_KEYFILE = $(LOCAL_DIR)/certs/host.key\n\
             AUTH_SSL_CLIENT_CAFILE = $(LOCAL_DIR)/certs/ca.pem\n",
            dir = dir.display(),
            daemons = daemons.join(", "),
            skuad = SKUAD,
        );
        for d in &daemons[1..] {
            text.push_str(&format!(
                "{d} = $(SKUAD)\n{d}_ARGS = {}\n",
                d.to_ascii_lowercase()
            ));
        }
        match credentials {
            // no key at all (a master would otherwise make one of its own)
            Credentials::Nothing => text.push_str("SEC_TOKEN_POOL_SIGNING_KEY_FILE =\n"),
            Credentials::ForgedKey => {
                text.push_str("SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(SEC_PASSWORD_DIRECTORY)/POOL\n")
            }
            Credentials::OtherCa => text.push_str(
                "SEC_TOKEN_POOL_SIGNING_KEY_FILE =\n\
                 AUTH_SSL_CLIENT_CERTFILE = $(AUTH_SSL_SERVER_CERTFILE)\n\
                 AUTH_SSL_CLIENT_KEYFILE = $(AUTH_SSL_SERVER_KEYFILE)\n",
            ),
        }
        for (k, v) in &self.knobs {
            text.push_str(&format!("{k} = {v}\n"));
        }
        std::fs::write(self.config(i), text).expect("write the host's configuration");
    }

    /// Starts host `i`'s master (`skuad master`) inside its namespace, with
    /// the test's knobs in its environment (a restart after a crash, or a
    /// host configured by hand).
    pub fn start_host(&self, i: usize) {
        let mut c = Command::new(SKUAD);
        c.arg("master")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.base)
            .env("SKUA_CONFIG", self.config(i));
        self.knob_env(&mut c);
        std::fs::create_dir_all(self.dir(i).join("log")).expect("make the log directory");
        self.hosts.spawn(i, c, &self.dir(i).join("log/master.out"));
    }

    fn skua_command(&self, i: usize, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(SKUA);
        c.args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.base)
            .env("SKUA_CONFIG", self.config(i));
        c
    }

    /// Runs `skua args` on host `i` as root.
    pub fn skua(&self, i: usize, args: &[&str]) -> Output {
        self.hosts.run(i, self.skua_command(i, &self.base, args))
    }

    /// `skua args` on host `i`, which must succeed; its standard output.
    pub fn ok(&self, i: usize, args: &[&str]) -> String {
        let out = self.skua(i, args);
        assert!(
            out.status.success(),
            "skua {args:?} on host {i} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `skua args` in `cwd` on host `i` as the submitting account.
    pub fn skua_user(&self, i: usize, cwd: &Path, args: &[&str]) -> Output {
        self.skua_account(i, submitter().as_ref(), cwd, args)
    }

    /// Runs `skua args` in `cwd` on host `i` as the account `user` (as
    /// root when `None`: the tests do not run as root).
    pub fn skua_account(
        &self,
        i: usize,
        user: Option<&TestUser>,
        cwd: &Path,
        args: &[&str],
    ) -> Output {
        let inner = self.skua_command(i, cwd, args);
        let c = match user {
            Some(u) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={}", u.uid))
                    .arg(format!("--regid={}", u.gid))
                    .arg("--clear-groups")
                    .arg("--")
                    .arg(inner.get_program())
                    .args(inner.get_args())
                    .current_dir(cwd)
                    .env_clear();
                for (k, v) in inner.get_envs() {
                    if let Some(v) = v {
                        c.env(k, v);
                    }
                }
                c
            }
            None => inner,
        };
        self.hosts.run(i, c)
    }

    /// A working directory `work/<name>` of the submitting account.
    pub fn work_dir(&self, name: &str) -> PathBuf {
        let dir = self.base.join("work").join(name);
        user_dir(&self.base.join("work"));
        user_dir(&dir);
        dir
    }

    /// Writes `text` to `dir/job.sub` and submits it on the submit host as
    /// the submitting account; the cluster id.
    pub fn submit(&self, dir: &Path, text: &str) -> String {
        std::fs::write(dir.join("job.sub"), text).expect("write job.sub");
        chown_to_submitter(&dir.join("job.sub"));
        let out = self.skua_user(self.host_with(Role::Submit), dir, &["submit", "job.sub"]);
        assert!(
            out.status.success(),
            "submit failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.split("cluster ")
            .nth(1)
            .and_then(|r| r.trim().strip_suffix('.'))
            .unwrap_or_else(|| panic!("no cluster in {text:?}"))
            .to_string()
    }

    /// The collector's answer to `skua status ARGS`, asked on the central
    /// manager (over the collector's Unix socket, which needs no token).
    pub fn status(&self, args: &[&str]) -> String {
        let mut all = vec!["status"];
        all.extend_from_slice(args);
        self.ok(self.central_manager(), &all)
    }

    /// The names of the slot ads in the collector; none while it does not
    /// answer.
    pub fn slots(&self) -> Vec<String> {
        let out = self.skua(self.central_manager(), &["status", "-af", "Name"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `skua q ARGS` on the submit host (every user's jobs).
    pub fn q(&self, args: &[&str]) -> String {
        let mut all = vec!["q", "-allusers"];
        all.extend_from_slice(args);
        self.ok(self.host_with(Role::Submit), &all)
    }

    /// Waits until every execute host's slots (`NUM_CPUS` each) and the
    /// schedd are in the collector.
    pub fn wait_ready(&self) {
        let cpus: usize = self
            .knobs
            .iter()
            .rev()
            .find(|(k, _)| k == "NUM_CPUS")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(1);
        let want = cpus * self.hosts_with(Role::Execute).len();
        let schedds = self.hosts_with(Role::Submit).len();
        self.wait_for("every slot and schedd in the collector", 60, || {
            let out = self.skua(self.central_manager(), &["status", "-any", "-af", "MyType"]);
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines().filter(|l| l.trim() == "Machine").count() == want
                && text.lines().filter(|l| l.trim() == "Scheduler").count() == schedds
        });
    }

    /// Waits up to `secs` seconds for `ok`; on timeout the test fails with
    /// every host's logs.
    pub fn wait_for(&self, what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !ok() {
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The text of host `i`'s logs whose name begins with `daemon`
    /// (`CollectorLog`, `StartLog`...).
    pub fn log(&self, i: usize, daemon: &str) -> String {
        let mut s = String::new();
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.dir(i).join("log"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(daemon))
            })
            .collect();
        names.sort();
        for p in names {
            s.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
        s
    }

    /// Every host's logs (the last 60 lines of each), for a failure report.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for i in 1..=self.roles.len() {
            for daemon in [
                "Master",
                "Collector",
                "Negotiator",
                "SchedLog",
                "StartLog",
                "master.out",
            ] {
                let text = if daemon == "master.out" {
                    std::fs::read_to_string(self.dir(i).join("log").join(daemon))
                        .unwrap_or_default()
                } else {
                    self.log(i, daemon)
                };
                if text.is_empty() {
                    continue;
                }
                let lines: Vec<&str> = text.lines().collect();
                let from = lines.len().saturating_sub(60);
                s.push_str(&format!(
                    "==== host {i} ({}) {daemon}\n{}\n",
                    self.hosts.name(i),
                    lines[from..].join("\n")
                ));
            }
        }
        s
    }
}

/// Removes a directory when dropped (after the hosts, declared before it,
/// have stopped every process using it).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Gives `path` to the submitting account (when the tests run as root).
pub fn chown_to_submitter(path: &Path) {
    if let Some(u) = submitter() {
        std::os::unix::fs::chown(path, Some(u.uid), Some(u.gid)).expect("chown");
    }
}
