//! The CRIU checkpoint backend end to end, on the real `criu`: a counting
//! process is dumped (which ends it), its image sealed, copied and
//! verified as the starter does, restored, and seen counting on from
//! where it was. Runs only where `criu check` passes (the startd offers
//! the backend only there); elsewhere it says so and why, and returns.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use skua_starter::backend::{self, Availability, CheckpointBackend, Criu};

/// Kills the process group `pid` (and reaps nothing: its parent does) when
/// the test ends, also when it fails.
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .output();
    }
}

fn count(dir: &Path) -> Option<u64> {
    std::fs::read_to_string(dir.join("count"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test]
async fn a_dumped_process_is_restored_and_counts_on() {
    let criu = Criu::new(std::env::var("SKUA_CRIU").unwrap_or_else(|_| "criu".into()));
    if let Availability::Unavailable { reason } = criu.check() {
        let reason = reason
            .split_once("fails: ")
            .map_or(reason.as_str(), |(_, r)| r);
        println!("not run: criu check fails on this host: {reason}");
        return;
    }
    let scratch = common::scratch("criu");
    let dir = scratch.join("dir_1");
    std::fs::create_dir_all(&dir).unwrap();

    // the job: counts in a file, in its own process group
    let mut job = std::process::Command::new("sh");
    job.args([
        "-c",
        "i=0; while :; do i=$((i+1)); echo $i > count.tmp; mv count.tmp count; done",
    ])
    .current_dir(&dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut job, 0);
    let mut child = job.spawn().unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let _job = GroupGuard(pid);
    common::wait_for("the job to count", Duration::from_secs(60), || {
        count(&dir).is_some_and(|c| c > 100)
    });

    let images = scratch.join("dir_1.criu");
    backend::dump(&criu, pid, &images, &dir).await.unwrap();
    // dumping ended it
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    let at_dump = count(&dir).unwrap();

    // sealed, copied out of reach, verified: as the starter does
    let key = b"test pool key";
    backend::seal(key, &images).unwrap();
    let copy = scratch.join("restore.criu");
    backend::copy_in(&images, &copy).unwrap();
    backend::verify_seal(key, &copy).unwrap();
    let info = backend::image_info(&copy).unwrap();
    assert_eq!(info.pid, pid);
    assert_eq!(info.scratch, dir);

    let mut restorer = backend::restore(&criu, &copy, &dir).unwrap();
    let _restored = GroupGuard(pid);
    common::wait_for(
        "the restored job to count on",
        Duration::from_secs(60),
        || count(&dir).is_some_and(|c| c > at_dump + 100),
    );
    // it went on from where it was (a fresh start would count from 1)
    assert!(count(&dir).unwrap() > at_dump);
    assert!(common::alive(pid), "the restored job keeps its process id");

    // criu stays its parent: the job's end is criu's exit status
    let _ = Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .output();
    let status = tokio::time::timeout(Duration::from_secs(60), restorer.wait())
        .await
        .expect("criu restore ends with the job")
        .unwrap();
    assert!(!status.success(), "{status:?}");
}
