//! condor_submit's command-line habits through the real daemons: the
//! description from standard input (`-` or no file), `-batch-name`, and
//! `-queue` on the command line.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{job_pool, scratch, user_dir};

fn cluster_of(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout).into_owned();
    text.split("cluster ")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('.'))
        .unwrap_or_else(|| panic!("no cluster in {text:?}"))
        .to_string()
}

#[test]
fn the_description_comes_from_stdin_with_batch_name_and_queue_options() {
    let pool = job_pool("submit-options", "1", &[]);
    let work = scratch("submit-options-work");
    user_dir(&work);
    let dir: &Path = &work;
    // standard input, `-`, with -queue's statement and a batch name
    let out = pool.skua_user_stdin(
        dir,
        &[
            "submit",
            "-batch-name",
            "nightly",
            "-",
            "-queue",
            "in",
            "a,",
            "b,",
            "c",
        ],
        "executable = /bin/echo\narguments = $(Item)\nhold = true\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 job(s) submitted to cluster"));
    let id = cluster_of(&out.stdout);
    let rows = pool.ok(&["q", &id, "-af", "ProcId", "JobBatchName", "Args"]);
    assert_eq!(rows, "0 nightly a\n1 nightly b\n2 nightly c\n", "{rows}");
    // no file at all: standard input too
    let out = pool.skua_user_stdin(
        dir,
        &["submit"],
        "executable = /bin/true\nhold = true\nqueue 2\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 job(s) submitted to cluster"));
    // -queue with a description that queues by itself is refused
    let out = pool.skua_user_stdin(
        dir,
        &["submit", "-", "-queue", "2"],
        "executable = /bin/true\nqueue\n",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the -queue option cannot be used"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
