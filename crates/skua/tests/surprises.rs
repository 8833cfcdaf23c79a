//! No silent surprises (issue 20, item 4), through the real daemons: the
//! executable is checked at submit time with condor_submit's messages (and
//! the input files when `skip_filechecks = false`); a program that cannot
//! be started on the execute side holds its job with HTCondor's code 6 and
//! the errno; a missing input with code 13 and the errno.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{job_pool, kill, pids_of, scratch, user_dir, wait_for, Pool};

fn submit_file(pool: &Pool, dir: &Path, name: &str, text: &str, extra: &[&str]) -> Output {
    std::fs::write(dir.join(name), text).unwrap();
    let mut args = vec!["submit"];
    args.extend_from_slice(extra);
    args.push(name);
    pool.skua_user_in(dir, &args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits until the job is held; its `HoldReasonCode HoldReasonSubCode
/// HoldReason`.
fn held(pool: &Pool, id: &str) -> (i64, i64, String) {
    wait_for(&format!("job {id} held"), Duration::from_secs(60), || {
        pool.ok(&["q", id, "-af", "JobStatus"]).trim() == "5"
    });
    let out = pool.ok(&[
        "q",
        id,
        "-af",
        "HoldReasonCode",
        "HoldReasonSubCode",
        "HoldReason",
    ]);
    let mut w = out.trim().splitn(3, ' ');
    (
        w.next().unwrap().parse().unwrap(),
        w.next().unwrap().parse().unwrap(),
        w.next().unwrap_or("").to_string(),
    )
}

#[test]
fn files_are_checked_at_submit_and_failures_to_start_hold_with_htcondors_codes() {
    let pool = job_pool("surprises", "1", &[]);
    let work = scratch("surprises-work");
    user_dir(&work);
    let dir: &Path = &work;
    std::fs::write(dir.join("empty.sh"), "").unwrap();
    std::fs::write(dir.join("dos.sh"), "#!/bin/sh\r\nexit 0\r\n").unwrap();
    std::fs::write(dir.join("ok.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::write(dir.join("plain.txt"), "not a program\n").unwrap();
    std::fs::set_permissions(dir.join("ok.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();

    // the executable: missing, empty, a DOS script
    let out = submit_file(&pool, dir, "a.sub", "executable = nothere.sh\nqueue\n", &[]);
    assert!(!out.status.success());
    let want = format!(
        "ERROR: Can't access executable file {}/nothere.sh: No such file or directory",
        dir.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let out = submit_file(&pool, dir, "b.sub", "executable = empty.sh\nqueue\n", &[]);
    assert!(!out.status.success());
    let want = format!(
        "ERROR: Executable file {}/empty.sh has zero length",
        dir.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let out = submit_file(&pool, dir, "c.sub", "executable = dos.sh\nqueue\n", &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("ERROR: Executable file")
            && stderr(&out).contains("is a script with CRLF (DOS/Windows) line endings."),
        "{}",
        stderr(&out)
    );
    // ... which -allow-crlf-script lets through with a warning
    let out = submit_file(
        &pool,
        dir,
        "c.sub",
        "executable = dos.sh\nhold = true\nqueue\n",
        &["-allow-crlf-script"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("WARNING: Executable file"),
        "{}",
        stderr(&out)
    );
    // skip_filechecks = warn: the missing executable is only a warning
    let out = submit_file(
        &pool,
        dir,
        "d.sub",
        "executable = nothere.sh\nskip_filechecks = warn\nhold = true\nqueue\n",
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("WARNING: Can't access executable file"),
        "{}",
        stderr(&out)
    );
    let out = submit_file(
        &pool,
        dir,
        "e.sub",
        "executable = ok.sh\nskip_filechecks = sometimes\nqueue\n",
        &[],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "ERROR: SUBMIT_CMD_skip_filechecks=sometimes is invalid, must be 'warn' or a boolean"
        ),
        "{}",
        stderr(&out)
    );
    // input files: only with the checks asked for (SUBMIT_SKIP_FILECHECKS
    // is true by default)
    let input = "executable = ok.sh\nshould_transfer_files = YES\n\
                 transfer_input_files = gone.txt\nrequest_disk = 1024\n";
    let out = submit_file(
        &pool,
        dir,
        "f.sub",
        &format!("{input}skip_filechecks = false\nqueue\n"),
        &[],
    );
    assert!(!out.status.success());
    let want = format!(
        "ERROR: Can't open \"{}/gone.txt\"  with flags 00 (No such file or directory)",
        dir.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));

    // unchecked, the missing input holds the job at run time: code 13, ENOENT
    let id = pool.submit_job(dir, &format!("{input}queue\n"));
    let (code, sub, reason) = held(&pool, &format!("{id}.0"));
    assert_eq!((code, sub), (13, 2), "{reason}");
    assert!(reason.contains("gone.txt"), "{reason}");
    pool.ok(&["rm", &id]);

    // a program that cannot be started: FailedToCreateProcess, the errno
    let id = pool.submit_job(
        dir,
        "executable = /nonexistent/prog\ntransfer_executable = false\n\
         arguments = x y\nqueue\n",
    );
    let (code, sub, reason) = held(&pool, &format!("{id}.0"));
    assert_eq!((code, sub), (6, 2), "{reason}");
    assert!(reason.starts_with("Error from slot"), "{reason}");
    assert!(
        reason.contains(
            "Failed to execute '/nonexistent/prog' with arguments x y: \
             (errno=2: 'No such file or directory')"
        ),
        "{reason}"
    );
    pool.ok(&["rm", &id]);
    let plain = dir.join("plain.txt").display().to_string();
    let id = pool.submit_job(
        dir,
        &format!("executable = {plain}\ntransfer_executable = false\nqueue\n"),
    );
    let (code, sub, reason) = held(&pool, &format!("{id}.0"));
    assert_eq!((code, sub), (6, 13), "{reason}");
    assert!(
        reason.contains(&format!(
            "Failed to execute '{plain}': (errno=13: 'Permission denied')"
        )),
        "{reason}"
    );
}

#[test]
fn an_attribute_no_slot_defines_is_named_at_submit_and_in_better_analyze() {
    let pool = job_pool("surprises-undef", "1", &[]);
    let work = scratch("surprises-undef-work");
    user_dir(&work);
    let dir: &Path = &work;
    // an ordinary job: HTCondor's default Requirements draw no warning
    let out = submit_file(
        &pool,
        dir,
        "plain.sub",
        "executable = /bin/true\nhold = true\nqueue\n",
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("WARNING"), "{}", stderr(&out));
    // a misspelt machine attribute: a warning naming it, and the job is queued
    let out = submit_file(
        &pool,
        dir,
        "typo.sub",
        "executable = /bin/true\nrequirements = TARGET.Memroy >= 1\nhold = true\nqueue\n",
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "WARNING: The Requirements refer to Memroy, which no slot in the pool defines"
        ) && err.contains("(did you mean Memory?)"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cluster = text
        .split("cluster ")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('.'))
        .unwrap()
        .to_string();
    // the schedd's clock comes with each ad, as HTCondor's ServerTime
    let before = common::unix_now();
    let st: i64 = pool
        .ok(&["q", &cluster, "-af", "ServerTime"])
        .trim()
        .parse()
        .unwrap();
    assert!(st >= before - 1 && st <= common::unix_now() + 1, "{st}");
    assert!(pool.ok(&["q", &cluster, "-l"]).contains("ServerTime = "));
    let analysis = pool.ok(&["q", "-better-analyze", &format!("{cluster}.0")]);
    assert!(
        analysis.contains(
            "The Requirements refer to Memroy, which no slot in the pool defines: \
             a clause that needs it never matches (did you mean Memory?)"
        ),
        "{analysis}"
    );
}

/// Sends SIGCONT to a stopped process when dropped (also when the test fails).
struct Continue(i32);

impl Drop for Continue {
    fn drop(&mut self) {
        kill(self.0, "-CONT");
    }
}

#[test]
fn a_schedd_that_does_not_answer_is_given_up_on_after_tool_timeout() {
    let pool = job_pool("surprises-timeout", "1", &[("_CONDOR_TOOL_TIMEOUT", "1")]);
    let schedd = pids_of(&pool, "schedd");
    assert_eq!(schedd.len(), 1, "{schedd:?}");
    kill(schedd[0], "-STOP");
    let stopped = Continue(schedd[0]);
    let out = pool.skua(&["q"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("the schedd at ") && err.contains("did not answer within 1s"),
        "{err}"
    );
    drop(stopped);
    // answering again, it is asked again
    pool.ok(&["q"]);
}

#[test]
fn a_finished_job_keeps_its_last_runs_start_date() {
    let pool = job_pool("surprises-start", "1", &[]);
    let work = scratch("surprises-start-work");
    user_dir(&work);
    let id = pool.submit_job(&work, "executable = /bin/true\nqueue\n");
    wait_for("the job's end", Duration::from_secs(60), || {
        !pool
            .ok(&["history", &id, "-af", "ExitCode"])
            .trim()
            .is_empty()
    });
    let row = pool.ok(&[
        "history",
        &id,
        "-af",
        "JobCurrentStartDate",
        "JobStartDate",
        "CompletionDate",
        "GlobalJobId",
        "User",
    ]);
    let f: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(f.len(), 5, "{row}");
    let (current, first, done): (i64, i64, i64) = (
        f[0].parse().unwrap(),
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
    );
    assert!(current >= first && current <= done, "{row}");
    assert!(f[3].contains(&format!("#{id}.0#")), "{row}");
    assert!(f[4].contains('@'), "{row}");
}
