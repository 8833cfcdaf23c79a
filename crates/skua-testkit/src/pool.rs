//! An in-process pool: the collector, negotiator, schedd and startd, each
//! started through its own `serve(ctx, shutdown)` on loopback port 0 in
//! the test's process (a multi-threaded tokio runtime), in a scratch
//! directory removed when the pool is dropped.
//!
//! Every daemon gets a context from
//! [`DaemonContext::for_test`](skua_daemon::DaemonContext::for_test) (the
//! pool's configuration as its subsystem reads it, the test process's
//! account, nothing from the environment), the pool's one
//! [`ManualClock`] and its one [`FaultFilter`], so a test can cut daemons
//! apart, drop or delay their calls, and heal, and move time.
//!
//! The configuration is also written to `<dir>/skua_config`, so a real
//! starter (`skuad starter`, see [`PoolBuilder::real_starter`]) spawned by
//! the in-process startd reads the same pool.
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! let pool = skua_testkit::PoolBuilder::new("doc").start().await?;
//! let collector = pool.address("COLLECTOR");
//! pool.faults.cut("SCHEDD", "STARTD");
//! pool.faults.heal();
//! pool.advance(std::time::Duration::from_secs(300));
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use skua_config::{Config, LoadOptions, MemoryFiles};
use skua_daemon::{DaemonContext, ManualClock};
use skua_net::{AuthLevel, Client, Endpoint, FaultFilter, SigningKey};
use tokio::sync::{oneshot, watch};

use crate::starter::{FakeStarter, StarterMode};

/// The daemons of an in-process pool, in start order.
pub const DAEMONS: [&str; 4] = ["COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD"];

/// The UID domain of the pool's submit side.
pub const UID_DOMAIN: &str = "test.domain";

/// The startd's UID domain: another than the schedd's, so every job runs
/// as `nobody` there (HTCondor's rule) whatever its owner.
pub const EXECUTE_UID_DOMAIN: &str = "execute.test";

/// How long [`InProcessPool`] waits for a daemon to come up.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How a pool is made.
#[derive(Clone, Debug)]
pub struct PoolBuilder {
    name: String,
    knobs: Vec<(String, String)>,
    starter: Option<String>,
    fake_starter: Option<StarterMode>,
    daemons: Vec<&'static str>,
}

impl PoolBuilder {
    /// A pool named `name` (its scratch directory's name) of all four
    /// daemons, with intervals of a second (updates, negotiation,
    /// keep-alives, starter updates), one CPU, and no starter (see
    /// [`PoolBuilder::starter`]).
    pub fn new(name: &str) -> PoolBuilder {
        let knobs = [
            ("UPDATE_INTERVAL", "1"),
            ("CLASSAD_LIFETIME", "30"),
            ("NEGOTIATOR_INTERVAL", "1"),
            ("NEGOTIATOR_CYCLE_DELAY", "0"),
            ("ALIVE_INTERVAL", "1"),
            ("STARTER_UPDATE_INTERVAL", "1"),
            ("POLLING_INTERVAL", "1"),
            ("NUM_CPUS", "1"),
            ("MEMORY", "1024"),
        ];
        PoolBuilder {
            name: name.to_string(),
            knobs: knobs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            starter: None,
            fake_starter: None,
            daemons: DAEMONS.to_vec(),
        }
    }

    /// Sets a knob (a later setting wins).
    pub fn knob(mut self, name: &str, value: &str) -> Self {
        self.knobs.push((name.to_string(), value.to_string()));
        self
    }

    /// The startd's starter program (`STARTER`), e.g. a
    /// [`FakeStarter`](crate::FakeStarter)'s script.
    pub fn starter(mut self, program: &Path) -> Self {
        self.starter = Some(program.display().to_string());
        self
    }

    /// The real starter: `skuad` (the path of the binary, e.g.
    /// `env!("CARGO_BIN_EXE_skuad")` in the `skua` crate's tests) run as
    /// `skuad starter` with the pool's configuration file.
    pub fn real_starter(mut self, skuad: &Path) -> Self {
        self.starter = Some(format!("real:{}", skuad.display()));
        self
    }

    /// A [`FakeStarter`] in `mode`, written in the pool's directory
    /// ([`InProcessPool::fake_starter`]), as the startd's starter.
    pub fn fake_starter(mut self, mode: StarterMode) -> Self {
        self.fake_starter = Some(mode);
        self
    }

    /// Only these daemons (in this order); the others are not started.
    pub fn only(mut self, daemons: &[&'static str]) -> Self {
        self.daemons = daemons.to_vec();
        self
    }

    /// Writes the pool's files and starts its daemons; returns once each
    /// has published its address.
    pub async fn start(self) -> anyhow::Result<InProcessPool> {
        let dir = std::env::temp_dir().join(format!(
            "skua-inprocess-{}-{}",
            std::process::id(),
            self.name
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut text = format!(
            "LOCAL_DIR = {d}\nLOG = $(LOCAL_DIR)/log\nSPOOL = $(LOCAL_DIR)/spool\n\
             EXECUTE = $(LOCAL_DIR)/execute\nLOCK = $(LOCAL_DIR)/lock\n\
             CONDOR_HOST = 127.0.0.1\nNETWORK_INTERFACE = 127.0.0.1\n\
             COLLECTOR_HOST = $(CONDOR_HOST):0\n\
             UID_DOMAIN = {UID_DOMAIN}\nFILESYSTEM_DOMAIN = {UID_DOMAIN}\n\
             STARTD.UID_DOMAIN = {EXECUTE_UID_DOMAIN}\n\
             SEC_TOKEN_POOL_SIGNING_KEY_FILE = $(LOCAL_DIR)/passwords.d/POOL\n\
             SEC_TOKEN_DIRECTORY = $(LOCAL_DIR)/tokens.d\n",
            d = dir.display()
        );
        let fake_starter = match self.fake_starter {
            None => None,
            Some(mode) => {
                let fake =
                    FakeStarter::write(&dir.join("fake-starter"), &dir.join("execute"), mode)?;
                text.push_str(&format!("STARTER = {}\n", fake.script.display()));
                Some(fake)
            }
        };
        match &self.starter {
            None => {}
            Some(s) => {
                let program = match s.strip_prefix("real:") {
                    Some(skuad) => {
                        let wrapper = dir.join("starter.sh");
                        std::fs::write(
                            &wrapper,
                            format!(
                                "#!/bin/sh\nSKUA_CONFIG='{}' exec '{skuad}' starter\n",
                                dir.join("skua_config").display()
                            ),
                        )?;
                        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
                        wrapper.display().to_string()
                    }
                    None => s.clone(),
                };
                text.push_str(&format!("STARTER = {program}\n"));
            }
        }
        for (k, v) in &self.knobs {
            text.push_str(&format!("{k} = {v}\n"));
        }
        std::fs::write(dir.join("skua_config"), &text)?;
        let clock = ManualClock::flowing();
        let faults = FaultFilter::new();
        let owner = account_of(&dir)?;
        let mut pool = InProcessPool {
            dir,
            text,
            owner,
            clock,
            faults,
            fake_starter,
            running: BTreeMap::new(),
            addresses: BTreeMap::new(),
            key: None,
        };
        for d in &self.daemons {
            pool.start_daemon(d).await?;
        }
        Ok(pool)
    }
}

/// The name of the account running the test (the owner of a file it
/// makes), which the daemons count as running as.
fn account_of(dir: &Path) -> anyhow::Result<String> {
    let probe = dir.join(".owner");
    std::fs::write(&probe, b"")?;
    let uid = std::fs::metadata(&probe)?.uid();
    skua_net::local_user_name(uid).ok_or_else(|| anyhow!("uid {uid} has no account name"))
}

/// A daemon running on a thread of its own, in its own runtime, as
/// `skuad ROLE` runs it in a process of its own.
struct Running {
    shutdown: watch::Sender<bool>,
    /// Dropping the daemon's future at once, as a crash would.
    kill: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Running {
    fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Waits for the thread (blocking): the daemon's result.
    fn join(&mut self) -> anyhow::Result<()> {
        match self.thread.take() {
            None => Ok(()),
            Some(t) => match t.join() {
                Ok(r) => r,
                Err(_) => Err(anyhow!("the daemon panicked")),
            },
        }
    }
}

/// Runs `serve` for `sub` until it returns or `kill` fires.
fn run_daemon(
    sub: String,
    ctx: DaemonContext,
    shutdown: watch::Receiver<bool>,
    kill: oneshot::Receiver<()>,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(format!("inprocess-{}", sub.to_ascii_lowercase()))
        .enable_all()
        .build()?;
    let result = rt.block_on(async move {
        let serve = async move {
            match sub.as_str() {
                "COLLECTOR" => skua_collector::daemon::serve(ctx, shutdown).await,
                "NEGOTIATOR" => skua_negotiator::daemon::serve(ctx, shutdown).await,
                "SCHEDD" => skua_schedd::daemon::serve(ctx, shutdown).await,
                "STARTD" => skua_startd::daemon::serve(ctx, shutdown).await,
                other => Err(anyhow!("no in-process {other}")),
            }
        };
        tokio::select! {
            r = serve => r,
            _ = kill => Err(anyhow!("killed")),
        }
    });
    // the daemon's tasks end with its runtime, as with its process
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// A running in-process pool; see the module documentation.
pub struct InProcessPool {
    /// Its scratch directory (`LOCAL_DIR`).
    pub dir: PathBuf,
    text: String,
    owner: String,
    /// The daemons' clock: it runs with real time, and jumps when the test
    /// says so ([`InProcessPool::advance`]).
    pub clock: ManualClock,
    /// The fault filter on every client the daemons make.
    pub faults: FaultFilter,
    /// The startd's fake starter, if [`PoolBuilder::fake_starter`] asked
    /// for one.
    pub fake_starter: Option<FakeStarter>,
    running: BTreeMap<String, Running>,
    addresses: BTreeMap<String, SocketAddr>,
    key: Option<SigningKey>,
}

impl InProcessPool {
    /// The account the daemons count as running as (the test's).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The pool's configuration as `subsystem` reads it.
    pub fn config(&self, subsystem: &str) -> anyhow::Result<Config> {
        let main = "/inprocess/skua_config";
        let files = MemoryFiles::new().with(main, &self.text);
        let opts = LoadOptions::new().main_file(main).subsystem(subsystem);
        Config::load(&files, &opts).map_err(|e| anyhow!("the pool's configuration: {e}"))
    }

    /// A context for `subsystem` as the pool gives its daemons.
    pub fn context(&self, subsystem: &str) -> anyhow::Result<DaemonContext> {
        let ctx = DaemonContext::for_test(
            subsystem,
            self.config(subsystem)?,
            &self.owner,
            self.clock.clock(),
        )?;
        Ok(ctx.with_faults(self.faults.clone()))
    }

    /// Starts `subsystem` (again, after [`InProcessPool::stop`]) and waits
    /// for its address.
    pub async fn start_daemon(&mut self, subsystem: &str) -> anyhow::Result<SocketAddr> {
        let sub = subsystem.to_ascii_uppercase();
        if self.running.contains_key(&sub) {
            bail!("the {sub} is running already");
        }
        let ctx = self.context(&sub)?;
        if self.key.is_none() {
            self.key = ctx.signing_key.clone();
        }
        let address_file = skua_daemon::context::address_file(&ctx.config, &sub)?;
        let _ = std::fs::remove_file(&address_file);
        if !DAEMONS.contains(&sub.as_str()) {
            bail!("no in-process {sub}");
        }
        let (shutdown, rx) = watch::channel(false);
        let (kill, kill_rx) = oneshot::channel();
        let name = sub.clone();
        let thread = std::thread::Builder::new()
            .name(format!("inprocess-{}", sub.to_ascii_lowercase()))
            .spawn(move || run_daemon(name, ctx, rx, kill_rx))?;
        let mut running = Running {
            shutdown,
            kill: Some(kill),
            thread: Some(thread),
        };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let addr = loop {
            if let Ok(a) = skua_daemon::read_address_file(&address_file) {
                break a;
            }
            if running.is_finished() {
                let r = running.join();
                bail!("the {sub} stopped as it started: {r:?}");
            }
            if tokio::time::Instant::now() > deadline {
                bail!("the {sub} published no address in {START_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        self.faults.name_address(addr, &sub);
        self.addresses.insert(sub.clone(), addr);
        self.running.insert(sub, running);
        Ok(addr)
    }

    /// Stops `subsystem` as a clean shutdown would, and waits for it:
    /// its result (`Err` if it failed or was not running).
    pub async fn stop(&mut self, subsystem: &str) -> anyhow::Result<()> {
        let sub = subsystem.to_ascii_uppercase();
        let mut r = self
            .running
            .remove(&sub)
            .ok_or_else(|| anyhow!("the {sub} is not running"))?;
        let _ = r.shutdown.send(true);
        let join = tokio::task::spawn_blocking(move || r.join());
        match tokio::time::timeout(START_TIMEOUT, join).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => Err(anyhow!("waiting for the {sub}: {e}")),
            Err(_) => Err(anyhow!("the {sub} did not stop in {START_TIMEOUT:?}")),
        }
    }

    /// Stops `subsystem` at once, as a crash would: its future and every
    /// task of its runtime are dropped, nothing is withdrawn or cleaned up
    /// (its child processes are left running). Waits until it is gone.
    pub async fn kill(&mut self, subsystem: &str) {
        if let Some(mut r) = self.running.remove(&subsystem.to_ascii_uppercase()) {
            if let Some(k) = r.kill.take() {
                let _ = k.send(());
            }
            let _ = tokio::task::spawn_blocking(move || r.join()).await;
        }
    }

    /// Whether `subsystem` runs (it may have stopped on an error).
    pub fn is_running(&self, subsystem: &str) -> bool {
        self.running
            .get(&subsystem.to_ascii_uppercase())
            .is_some_and(|r| !r.is_finished())
    }

    /// The TCP address `subsystem` last published.
    ///
    /// Panics if it never started: the test named a daemon it did not run.
    pub fn address(&self, subsystem: &str) -> SocketAddr {
        match self.addresses.get(&subsystem.to_ascii_uppercase()) {
            Some(a) => *a,
            None => panic!("no {subsystem} in this pool"),
        }
    }

    /// A client of `subsystem` speaking as the pool's daemons (over TCP,
    /// with their token; outside the fault filter).
    pub fn daemon_client(&self, subsystem: &str) -> anyhow::Result<Client> {
        let key = self.key.as_ref().ok_or_else(|| anyhow!("no pool key"))?;
        let token = skua_daemon::security::daemon_token(key, UID_DOMAIN)?;
        Ok(Client::new(
            Endpoint::Tcp(self.address(subsystem)),
            Some(token),
            Duration::from_secs(10),
        )?)
    }

    /// A client of `subsystem` speaking as the user `user` (a token of
    /// `user@test.domain` at READ and WRITE).
    pub fn user_client(&self, subsystem: &str, user: &str) -> anyhow::Result<Client> {
        let key = self.key.as_ref().ok_or_else(|| anyhow!("no pool key"))?;
        let token = skua_net::issue_token(
            key,
            &format!("{user}@{UID_DOMAIN}"),
            &[AuthLevel::Read, AuthLevel::Write],
            Some(Duration::from_secs(3600)),
        )?;
        Ok(Client::new(
            Endpoint::Tcp(self.address(subsystem)),
            Some(token),
            Duration::from_secs(10),
        )?)
    }

    /// Moves the daemons' clock forward by `d`, waking every timer it
    /// passes.
    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    /// Submits `jobs` (proc ads; `ClusterId` and `ProcId` are the
    /// schedd's) as `user`; returns the cluster.
    pub async fn submit(&self, user: &str, jobs: &[classad::ClassAd]) -> anyhow::Result<u32> {
        use skua_proto::{routes, NewCluster, NewClusterReply, Submit, SubmitReply};
        let client = self.user_client("SCHEDD", user)?;
        let reserved: NewClusterReply = client
            .command(&routes::SCHEDD_NEW_CLUSTER, Some(&NewCluster {}))
            .await?;
        let submit = Submit {
            cluster: reserved.cluster,
            jobs: jobs.iter().map(classad::unparse_ad).collect(),
            cluster_ad: None,
            submission_id: None,
        };
        let reply: SubmitReply = client
            .command(&routes::SCHEDD_SUBMIT, Some(&submit))
            .await?;
        Ok(reply.cluster)
    }

    /// The schedd's queue (every job's ad), as `user` sees it.
    pub async fn queue(&self, user: &str) -> anyhow::Result<Vec<classad::ClassAd>> {
        self.jobs(user, &skua_proto::routes::SCHEDD_QUERY).await
    }

    /// The schedd's history (jobs that left the queue), newest first.
    pub async fn history(&self, user: &str) -> anyhow::Result<Vec<classad::ClassAd>> {
        self.jobs(user, &skua_proto::routes::SCHEDD_HISTORY).await
    }

    async fn jobs(
        &self,
        user: &str,
        route: &skua_proto::Route<skua_proto::JobQuery, skua_proto::JobQueryReply>,
    ) -> anyhow::Result<Vec<classad::ClassAd>> {
        let client = self.user_client("SCHEDD", user)?;
        let reply: skua_proto::JobQueryReply = client
            .command(route, Some(&skua_proto::JobQuery::default()))
            .await?;
        reply
            .ads
            .iter()
            .map(|a| classad::parse_ad(a).map_err(|e| anyhow!("a job ad from the schedd: {e}")))
            .collect()
    }

    /// The collector's ads of `ad_type` (`Machine`, `Scheduler`...).
    pub async fn ads(&self, ad_type: &str) -> anyhow::Result<Vec<classad::ClassAd>> {
        use skua_proto::{routes, Query, QueryReply};
        let client = self.daemon_client("COLLECTOR")?;
        let query = Query {
            ad_type: ad_type.to_string(),
            constraint: None,
            projection: Vec::new(),
        };
        let reply: QueryReply = client
            .command(&routes::COLLECTOR_QUERY, Some(&query))
            .await?;
        reply
            .ads
            .iter()
            .map(|a| classad::parse_ad(a).map_err(|e| anyhow!("an ad from the collector: {e}")))
            .collect()
    }

    /// Waits (polling every 10 ms of real time, up to `timeout`) until
    /// `check` returns something; fails naming `what`.
    pub async fn wait_for<T, F, Fut>(
        &self,
        what: &str,
        timeout: Duration,
        mut check: F,
    ) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(v) = check().await {
                return Ok(v);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("timed out after {timeout:?} waiting for {what}");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops every daemon cleanly, the startd first (it ends its
    /// starters), then the others in the reverse of their start order.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        let mut first_error = None;
        for d in DAEMONS.iter().rev() {
            if self.running.contains_key(*d) {
                if let Err(e) = self.stop(d).await {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for InProcessPool {
    fn drop(&mut self) {
        for r in self.running.values_mut() {
            let _ = r.shutdown.send(true);
            if let Some(k) = r.kill.take() {
                let _ = k.send(());
            }
            let _ = r.join();
        }
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
