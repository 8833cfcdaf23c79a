//! The master's shell in-process, on a test's clock: a daemon that fails
//! is restarted after its back-off by the daemon's clock, however little
//! wall time passes.

// The test writes the child's script and reads what it recorded.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use skua_daemon::{DaemonContext, ManualClock};
use tokio::sync::watch;

fn context(dir: &Path, clock: &ManualClock) -> DaemonContext {
    let script = dir.join("fails.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho started >> {}\nexit 1\n",
            dir.join("starts").display()
        ),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // a back-off of an hour: no wall time in a test reaches it
    let text = format!(
        "LOG = {0}/log\nLOCK = {0}/lock\nSEC_TOKEN_POOL_SIGNING_KEY_FILE = {0}/key\n\
         DAEMON_LIST = MASTER, FAILS\nFAILS = {1}\n\
         MASTER_BACKOFF_CONSTANT = 3600\nMASTER_BACKOFF_CEILING = 3600\n",
        dir.display(),
        script.display()
    );
    let files = skua_config::MemoryFiles::new().with("/skua_config", &text);
    let opts = skua_config::LoadOptions::new()
        .main_file("/skua_config")
        .subsystem("MASTER");
    let config = skua_config::Config::load(&files, &opts).expect("configuration");
    let mut ctx = DaemonContext::from_config("MASTER", config).expect("context");
    ctx.clock = clock.clock();
    ctx
}

/// How many times the failing daemon has started.
fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// What the master logs (through `tracing`), for the test to wait on.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

async fn wait_for_starts(dir: &Path, n: usize, log: &Log) {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while starts(dir) < n {
        assert!(
            std::time::Instant::now() < give_up,
            "{} start(s), waiting for {n}; the master's log:\n{}",
            starts(dir),
            log.text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_for_log(log: &Log, line: &str) {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while !log.text().contains(line) {
        assert!(
            std::time::Instant::now() < give_up,
            "the master never logged {line:?}; its log:\n{}",
            log.text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// current-thread runtime: the master and its tasks run on this thread,
// under the thread-local subscriber that records its log
#[tokio::test(flavor = "current_thread")]
async fn a_failed_daemon_is_restarted_after_its_back_off_on_the_daemons_clock() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::frozen(3_000_000);
    let ctx = context(dir.path(), &clock);
    let (stop, shutdown) = watch::channel(false);
    let test = async {
        wait_for_starts(dir.path(), 1, &log).await;
        // The child has run, but its exit may not have reached the master
        // yet (on a loaded machine the script is still exiting): a jump now
        // would come before the exit, whose back-off would then start
        // after the jump. The master says when it has set the back-off.
        wait_for_log(&log, "restarting it in 3600 s").await;
        // the hour of back-off passes on the daemon's clock only
        clock.advance(Duration::from_secs(3_601));
        wait_for_starts(dir.path(), 2, &log).await;
        stop.send(true).expect("stop");
    };
    let (served, ()) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(skua_master::daemon::serve(ctx, shutdown), test)
    })
    .await
    .expect("the master stops once asked");
    served.expect("serve");
    assert!(!dir.path().join("log/.master_address").exists());
}
