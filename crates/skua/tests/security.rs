//! A root pool used by several local users: every file a job or a user
//! names is opened with that user's rights, never root's; jobs run as their
//! owners; root may not submit. Each test plants root-owned decoys (never
//! real system files) and checks they stay untouched and unread.
//!
//! The tests need root (they create two accounts, `skuatest` and
//! `skuatest-b`); run as another user they return at once.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{job_pool, submitter, test_user, wait_for, Pool, TestUser};

const DECOY: &str = "root's decoy: never read, never written\n";

/// Root-owned decoys in the pool's home: `secret` in a directory only
/// root may enter, and `public` readable by all but writable by root only.
struct Decoys {
    private_dir: PathBuf,
    secret: PathBuf,
    public: PathBuf,
}

impl Decoys {
    fn plant(home: &Path) -> Decoys {
        let private_dir = home.join("root-only");
        std::fs::create_dir_all(&private_dir).unwrap();
        std::fs::set_permissions(&private_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let secret = private_dir.join("secret");
        std::fs::write(&secret, DECOY).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let public = home.join("public");
        std::fs::write(&public, DECOY).unwrap();
        std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o755)).unwrap();
        Decoys {
            private_dir,
            secret,
            public,
        }
    }

    /// Every decoy is as planted: same bytes, root's, no new file beside
    /// the secret.
    fn assert_untouched(&self) {
        for f in [&self.secret, &self.public] {
            assert_eq!(
                std::fs::read_to_string(f).unwrap(),
                DECOY,
                "{}",
                f.display()
            );
            let m = std::fs::metadata(f).unwrap();
            assert_eq!((m.uid(), m.gid()), (0, 0), "{}", f.display());
        }
        let names: Vec<String> = std::fs::read_dir(&self.private_dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["secret"], "nothing may appear in root's directory");
    }
}

/// A working directory owned by `user` (mode 0755).
fn home_of(pool: &Pool, user: &TestUser) -> PathBuf {
    let dir = pool.home.join(&user.name);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(user.uid), Some(user.gid)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Submits `text` as `user` from `dir`; the job id (`C.0`).
fn submit(pool: &Pool, user: &TestUser, dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    let out = pool.skua_account_in(user, dir, &["submit", name]);
    assert!(
        out.status.success(),
        "submit as {}: {}",
        user.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cluster = text
        .split("cluster ")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('.'))
        .unwrap_or_else(|| panic!("no cluster in {text:?}"))
        .to_string();
    format!("{cluster}.0")
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

/// Waits until the job left the queue having completed; its exit code.
fn completed(pool: &Pool, id: &str) -> i64 {
    wait_for(
        &format!("job {id} completed"),
        Duration::from_secs(60),
        || {
            !pool
                .ok(&["history", id, "-af", "ExitCode"])
                .trim()
                .is_empty()
        },
    );
    pool.ok(&["history", id, "-af", "ExitCode"])
        .trim()
        .parse()
        .unwrap()
}

fn users() -> Option<(TestUser, TestUser)> {
    Some((submitter()?, test_user("skuatest-b")?))
}

/// EACCES, the subcode of a refused open.
const EACCES: i64 = 13;

#[test]
fn shared_file_system_streams_are_opened_as_the_owner() {
    let Some((alice, _)) = users() else { return };
    let pool = job_pool("sec-streams", "2", &[]);
    let decoys = Decoys::plant(&pool.home);
    let work = home_of(&pool, &alice);
    let base = "should_transfer_files = NO\nrequest_disk = 1024\n";
    // output onto a root-owned file
    let out_decoy = submit(
        &pool,
        &alice,
        &work,
        "a.sub",
        &format!(
            "executable = /bin/echo\narguments = overwritten\n{base}output = {}\nqueue\n",
            decoys.public.display()
        ),
    );
    // a link in the user's own directory, named like the output, to root's file
    std::os::unix::fs::symlink(&decoys.public, work.join("linked.out")).unwrap();
    let out_link = submit(
        &pool,
        &alice,
        &work,
        "b.sub",
        &format!(
            "executable = /bin/echo\narguments = overwritten\n{base}output = linked.out\nqueue\n"
        ),
    );
    // root's secret as standard input of cat
    let in_secret = submit(
        &pool,
        &alice,
        &work,
        "c.sub",
        &format!(
            "executable = /bin/cat\n{base}input = {}\noutput = stolen.txt\nqueue\n",
            decoys.secret.display()
        ),
    );
    for id in [&out_decoy, &out_link] {
        let (code, sub, reason) = held(&pool, id);
        assert_eq!((code, sub), (7, EACCES), "{reason}");
        assert!(reason.contains("standard output"), "{reason}");
    }
    let (code, sub, reason) = held(&pool, &in_secret);
    assert_eq!((code, sub), (8, EACCES), "{reason}");
    assert!(
        reason.contains(&decoys.secret.display().to_string()),
        "{reason}"
    );
    let stolen = std::fs::read_to_string(work.join("stolen.txt")).unwrap_or_default();
    assert!(!stolen.contains("decoy"), "{stolen}");
    decoys.assert_untouched();
}

#[test]
fn jobs_run_as_their_owners_who_cannot_touch_each_others_files() {
    let Some((alice, bob)) = users() else { return };
    let pool = job_pool("sec-owners", "2", &[]);
    let decoys = Decoys::plant(&pool.home);
    let a_work = home_of(&pool, &alice);
    let b_work = home_of(&pool, &bob);
    let base = "should_transfer_files = NO\nrequest_disk = 1024\nlog = job.log\n";
    let a = submit(
        &pool,
        &alice,
        &a_work,
        "id.sub",
        &format!("executable = /usr/bin/id\narguments = -u\n{base}output = id.out\nqueue\n"),
    );
    let b = submit(
        &pool,
        &bob,
        &b_work,
        "id.sub",
        &format!("executable = /usr/bin/id\narguments = -u\n{base}output = id.out\nqueue\n"),
    );
    assert_eq!(completed(&pool, &a), 0);
    assert_eq!(completed(&pool, &b), 0);
    for (user, dir) in [(&alice, &a_work), (&bob, &b_work)] {
        let out = dir.join("id.out");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap().trim(),
            user.uid.to_string(),
            "{}'s job runs as {}",
            user.name,
            user.name
        );
        for f in [out, dir.join("job.log")] {
            assert_eq!(
                std::fs::metadata(&f).unwrap().uid(),
                user.uid,
                "{}",
                f.display()
            );
        }
    }
    // bob names alice's output as his own: refused, her file unchanged
    let before = std::fs::read_to_string(a_work.join("id.out")).unwrap();
    let b2 = submit(
        &pool,
        &bob,
        &b_work,
        "steal.sub",
        &format!(
            "executable = /bin/echo\narguments = bob was here\n{base}output = {}\nqueue\n",
            a_work.join("id.out").display()
        ),
    );
    let (code, sub, reason) = held(&pool, &b2);
    assert_eq!((code, sub), (7, EACCES), "{reason}");
    assert_eq!(
        std::fs::read_to_string(a_work.join("id.out")).unwrap(),
        before
    );
    // nor does his job log land in root's directory
    let b3 = submit(
        &pool,
        &bob,
        &b_work,
        "log.sub",
        &format!(
            "executable = /bin/true\nshould_transfer_files = NO\nrequest_disk = 1024\nlog = {}\nqueue\n",
            decoys.private_dir.join("bob.log").display()
        ),
    );
    assert_eq!(completed(&pool, &b3), 0);
    decoys.assert_untouched();
    // root may not submit at all
    std::fs::write(a_work.join("root.sub"), "executable = /bin/true\nqueue\n").unwrap();
    let out = pool.skua_in(&a_work, &["submit", "root.sub"]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("root"), "{msg}");
}

#[test]
fn transferred_files_are_read_and_written_as_the_owner() {
    let Some((alice, bob)) = users() else { return };
    let pool = job_pool("sec-transfer", "2", &[]);
    let decoys = Decoys::plant(&pool.home);
    let work = home_of(&pool, &alice);
    let b_work = home_of(&pool, &bob);
    std::fs::set_permissions(&b_work, std::fs::Permissions::from_mode(0o700)).unwrap();
    let base =
        "should_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\nrequest_disk = 1024\n";
    // root's secret as an input file
    let input = submit(
        &pool,
        &alice,
        &work,
        "in.sub",
        &format!(
            "executable = /bin/true\n{base}transfer_input_files = {}\nqueue\n",
            decoys.secret.display()
        ),
    );
    let (code, sub, reason) = held(&pool, &input);
    assert_eq!((code, sub), (13, EACCES), "{reason}");
    // a set-user-id copy of a program comes back as the owner's plain file
    std::fs::write(
        work.join("suid.sh"),
        "#!/bin/sh\ncp /bin/true suid\nchmod 4755 suid\necho made > made.txt\n",
    )
    .unwrap();
    std::fs::set_permissions(work.join("suid.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let suid = submit(
        &pool,
        &alice,
        &work,
        "suid.sub",
        &format!("executable = suid.sh\n{base}transfer_output_files = suid, made.txt\nqueue\n"),
    );
    assert_eq!(completed(&pool, &suid), 0);
    let m = std::fs::metadata(work.join("suid")).unwrap();
    assert_eq!(m.uid(), alice.uid);
    assert_eq!(
        m.mode() & 0o7777,
        0o755,
        "no set-user-id bit: {:o}",
        m.mode()
    );
    // outputs remapped into root's directory, or into bob's private one
    for (name, dest) in [
        ("remap.sub", decoys.private_dir.join("x")),
        ("bob.sub", b_work.join("x")),
    ] {
        let id = submit(
            &pool,
            &alice,
            &work,
            name,
            &format!(
                "executable = suid.sh\n{base}transfer_output_files = made.txt\n\
                 transfer_output_remaps = \"made.txt = {}\"\nqueue\n",
                dest.display()
            ),
        );
        let (code, sub, reason) = held(&pool, &id);
        assert_eq!((code, sub), (12, EACCES), "{reason}");
        assert!(!dest.exists(), "{}", dest.display());
    }
    // an output named by absolute path in root's directory
    let abs = submit(
        &pool,
        &alice,
        &work,
        "abs.sub",
        &format!(
            "executable = /bin/echo\narguments = hi\n{base}output = {}\nqueue\n",
            decoys.private_dir.join("out").display()
        ),
    );
    let (code, _, reason) = held(&pool, &abs);
    assert_eq!(code, 12, "{reason}");
    // initialdir in bob's private directory: refused at submission, or
    // held; either way nothing is made there
    let sub = format!(
        "executable = /bin/echo\narguments = hi\n{base}initialdir = {}\noutput = out\n\
         log = job.log\nqueue\n",
        b_work.display()
    );
    std::fs::write(work.join("iwd.sub"), &sub).unwrap();
    let out = pool.skua_account_in(&alice, &work, &["submit", "iwd.sub"]);
    if out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let cluster = text
            .split("cluster ")
            .nth(1)
            .and_then(|r| r.trim().strip_suffix('.'));
        let (code, _, reason) = held(&pool, &format!("{}.0", cluster.unwrap()));
        assert_eq!(code, 12, "{reason}");
    }
    let in_bob: Vec<_> = std::fs::read_dir(&b_work).unwrap().flatten().collect();
    assert!(in_bob.is_empty(), "{in_bob:?}");
    decoys.assert_untouched();
}
