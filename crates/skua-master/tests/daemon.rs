//! The master's shell in-process, on a test's clock: a daemon that fails
//! is restarted after its back-off by the daemon's clock, however little
//! wall time passes.

// The test writes the child's script and reads what it recorded.
#![allow(clippy::disallowed_methods)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
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

async fn wait_for_starts(dir: &Path, n: usize) {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while starts(dir) < n {
        assert!(
            std::time::Instant::now() < give_up,
            "{} start(s), waiting for {n}",
            starts(dir)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_failed_daemon_is_restarted_after_its_back_off_on_the_daemons_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::frozen(3_000_000);
    let ctx = context(dir.path(), &clock);
    let (stop, shutdown) = watch::channel(false);
    let test = async {
        wait_for_starts(dir.path(), 1).await;
        // the hour of back-off passes on the daemon's clock only
        clock.advance(Duration::from_secs(3_601));
        wait_for_starts(dir.path(), 2).await;
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
