//! The Bologna Batch System policy (../shared/design/bologna-policy.md)
//! against a personal pool, with its configuration as its administrators
//! wrote it for HTCondor; only times are scaled down (BB_SHORT_LIMIT) and
//! the owner's activity is played in through `STARTD_ATTRIBUTE_FILE`.
//! Scenarios 1, 4, 5, 6, 7 and 8 in one pool, 2 and 3 (rank and priority
//! preemption in the negotiator) in another.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{fast, wait_for, Pool};

/// The server's local configuration, as written in bologna-policy.md.
const BOLOGNA: &str = r#"
BolognaBatchServer = True
STARTD_ATTRS = $(STARTD_ATTRS) BolognaBatchServer
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) BolognaBatchJob LongRunningJob

# 2: a BB job is one from our own domain
IsBBJob    = (TARGET.BolognaBatchJob =?= True && TARGET.SUBMIT_SITE_DOMAIN == "$(SUBMIT_SITE_DOMAIN)")
IsNotBBJob = (($(IsBBJob)) =!= True)

# 3: the site's default suspend/preempt policy applies to outside jobs only
WANT_SUSPEND = ($(IsNotBBJob) && ($(WANT_SUSPEND)))

# 4: prefer BB jobs; outside jobs only on an idle machine
RANK = $(IsBBJob)
INFN_START = ((LoadAvg - CondorLoadAvg) < 0.3 && KeyboardIdle > (15 * 60) && TotalCondorLoadAvg < 1.0)

# 5
IsLongBBJob  = ($(IsBBJob) && TARGET.LongRunningJob =?= True)
IsShortBBJob = ($(IsBBJob) && TARGET.LongRunningJob =!= True)

# 6: four slots on two CPUs; slots 1-2 short, 3-4 long
NUM_CPUS = 4
NUM_SHORT_RUNNING_SLOTS = 2
IsShortRunningSlot = (SlotID <= $(NUM_SHORT_RUNNING_SLOTS))
IsLongRunningSlot  = (SlotID > $(NUM_SHORT_RUNNING_SLOTS))
BB_SHORT_LIMIT = (60 * 60)
SHORT_RUNNING_SLOT_START = (($(IsShortBBJob) && (TARGET.RemoteWallClockTime < $(BB_SHORT_LIMIT)) =!= False) || ($(IsNotBBJob) && ($(INFN_START))))
LONG_RUNNING_SLOT_START  = $(IsLongBBJob)
START = (($(IsShortRunningSlot) && $(SHORT_RUNNING_SLOT_START)) || ($(IsLongRunningSlot) && $(LONG_RUNNING_SLOT_START)))

# 7: 5 for short BB jobs, 15 for long BB jobs and for outside jobs
JOB_RENICE_INCREMENT = (5 + (10 * (TARGET.LongRunningJob =?= True || TARGET.BolognaBatchJob =!= True)))

# 3 and 8: never preempt BB jobs for the site policy; preempt short BB jobs after the limit
PREEMPT = (($(IsNotBBJob) && ($(PREEMPT))) || ($(IsShortBBJob) && (ActivityTimer > $(BB_SHORT_LIMIT))))

# 9: priority preemption never evicts a BB job, and a BB job may always evict an outside job
INFN_PREEMPTION_REQUIREMENTS = (StateTimer > (2 * (60 * 60)) && RemoteUserPrio > SubmittorPrio * 1.2)
"#;

/// The central manager's and the submit machine's parts. On this one
/// machine the startd reads its own domain (bare, as the server's
/// IsBBJob quotes it) and the submit tool stamps the quoted one.
const CENTRAL_AND_SUBMIT: &str = r#"
PREEMPTION_REQUIREMENTS = ((BolognaBatchServer =!= True && ($(INFN_PREEMPTION_REQUIREMENTS))) || (BolognaBatchServer =?= True && BolognaBatchJob =!= True && (TARGET.BolognaBatchJob =?= True || ($(INFN_PREEMPTION_REQUIREMENTS)))))
SUBMIT_SITE_DOMAIN = "$(UID_DOMAIN)"
SUBMIT_ATTRS = $(SUBMIT_ATTRS) SUBMIT_SITE_DOMAIN
STARTD.SUBMIT_SITE_DOMAIN = $(UID_DOMAIN)
"#;

/// BB_SHORT_LIMIT in the scenarios of the short limit (seconds).
const LIMIT: u64 = 5;

fn bologna_pool(name: &str, limit: u64) -> (Pool, PathBuf) {
    let mut env: Vec<(&str, String)> = fast()
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
    env.push(("_CONDOR_ALIVE_INTERVAL", "1".into()));
    env.push(("_CONDOR_NEGOTIATOR_INTERVAL", "1".into()));
    env.push(("_CONDOR_NEGOTIATOR_CYCLE_DELAY", "0".into()));
    env.push(("_CONDOR_STARTER_UPDATE_INTERVAL", "1".into()));
    env.push(("_CONDOR_POLLING_INTERVAL", "1".into()));
    env.push(("_CONDOR_PERIODIC_EXPR_INTERVAL", "1".into()));
    let refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut pool = Pool::new(name, &refs);
    let owner = pool.home.join("owner");
    set_owner(&owner, 0);
    pool.start();
    let dir = pool.dir.to_string_lossy().into_owned();
    pool.ok(&["pool", "stop", "--dir", &dir]);
    let mut text = std::fs::read_to_string(pool.config()).unwrap();
    text.push_str(BOLOGNA);
    text.push_str(CENTRAL_AND_SUBMIT);
    text.push_str(&format!(
        "\n# scaled down for the test\nBB_SHORT_LIMIT = {limit}\nSTARTD_ATTRIBUTE_FILE = {}\n",
        owner.display()
    ));
    std::fs::write(pool.config(), text).unwrap();
    pool.start();
    wait_for("four slots", Duration::from_secs(30), || {
        pool.ok(&["status", "-af", "Name"]).lines().count() == 4
    });
    (pool, owner)
}

/// The owner at the keyboard (`idle` seconds idle); no other load.
fn set_owner(file: &Path, idle: i64) {
    let tmp = file.with_extension("tmp");
    std::fs::write(
        &tmp,
        format!(
            "KeyboardIdle = {idle}\nLoadAvg = 0.0\nCondorLoadAvg = 0.0\nTotalCondorLoadAvg = 0.0\n"
        ),
    )
    .unwrap();
    std::fs::rename(tmp, file).unwrap();
}

/// What the users' wrappers add (`bbs_submit_short`, `bbs_submit_long`),
/// with the site's BB_SHORT_LIMIT.
fn wrapper(kind: &str, limit: &str) -> Vec<String> {
    let mut a = Vec::new();
    if kind != "outside" {
        a.push("+BolognaBatchJob = True".to_string());
        a.push(format!(
            "periodic_remove = (LongRunningJob =!= True && RemoteWallClockTime > {limit})"
        ));
    }
    if kind == "long" {
        a.push("+LongRunningJob = True".to_string());
    }
    a
}

/// Submits one job named `name` of `kind` (short, long, outside) that
/// writes its pid to `<work>/<name>.pid` and runs `secs` seconds; returns
/// its job id.
fn submit(
    pool: &mut Pool,
    work: &Path,
    name: &str,
    kind: &str,
    secs: u32,
    domain: Option<&str>,
) -> String {
    let req = if kind == "outside" {
        "true"
    } else {
        "(BolognaBatchServer =?= True)"
    };
    std::fs::write(
        work.join(format!("{name}.sub")),
        format!(
            "executable = job.sh\narguments = {name} {secs}\nshould_transfer_files = NO\n\
             requirements = {req}\nrequest_disk = 1024\nrequest_memory = 10\nqueue\n"
        ),
    )
    .unwrap();
    let mut args = vec!["submit".to_string(), format!("{name}.sub")];
    let limit = pool.ok(&["config", "get", "BB_SHORT_LIMIT"]);
    for a in wrapper(kind, limit.trim()) {
        args.push("-a".into());
        args.push(a);
    }
    if let Some(d) = domain {
        pool.extra_env
            .push(("_CONDOR_SUBMIT_SITE_DOMAIN".into(), format!("\"{d}\"")));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    common::user_dir(work);
    let out = pool.skua_user_in(work, &refs);
    if domain.is_some() {
        pool.extra_env.pop();
    }
    assert!(
        out.status.success(),
        "submit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cluster = text
        .split("cluster ")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('.'))
        .unwrap()
        .to_string();
    format!("{cluster}.0")
}

/// `JobStatus` and `RemoteHost` of a job (`None` once it left the queue).
fn job(pool: &Pool, id: &str) -> Option<(i64, String)> {
    let out = pool.ok(&["q", "-allusers", id, "-af", "JobStatus", "RemoteHost"]);
    let line = out.lines().next()?;
    let mut w = line.split_whitespace();
    Some((w.next()?.parse().ok()?, w.next().unwrap_or("").to_string()))
}

fn slot_number(remote_host: &str) -> u32 {
    remote_host
        .strip_prefix("slot")
        .and_then(|r| r.split('@').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn running_on(pool: &Pool, id: &str) -> Option<u32> {
    match job(pool, id) {
        Some((2, host)) => Some(slot_number(&host)),
        _ => None,
    }
}

fn nice_of(work: &Path, name: &str) -> Option<i64> {
    let pid: i32 = std::fs::read_to_string(work.join(format!("{name}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    // after the command: state is field 3, nice field 19
    fields.get(16)?.parse().ok()
}

/// The work directory with the job script, open to the job's user.
fn work_dir(pool: &Pool) -> PathBuf {
    let work = pool.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for d in [&work, &pool.home] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let script = work.join("job.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho $$ > $1.pid\ni=0\nwhile [ $i -lt $2 ]; do sleep 1; i=$((i+1)); done\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    work
}

#[test]
fn bologna_batch_system_policy() {
    let (mut pool, owner) = bologna_pool("bologna", LIMIT);
    let work = work_dir(&pool);

    // the owner is at the keyboard
    // 8 and 1: two long BB jobs take the long slots
    let long1 = submit(&mut pool, &work, "long1", "long", 300, None);
    let long2 = submit(&mut pool, &work, "long2", "long", 300, None);
    // 4 and 7: an outside job and a BB job from another domain do not start
    let outside = submit(&mut pool, &work, "outside", "outside", 300, None);
    let foreign = submit(
        &mut pool,
        &work,
        "foreign",
        "short",
        300,
        Some("elsewhere.example"),
    );
    wait_for(
        "the long jobs on slots 3 and 4",
        Duration::from_secs(20),
        || {
            let mut s = [running_on(&pool, &long1), running_on(&pool, &long2)];
            s.sort();
            s == [Some(3), Some(4)]
        },
    );
    // 1 and 4: a short BB job starts at once on a short slot, keyboard or not
    let short = submit(&mut pool, &work, "short", "short", 300, None);
    wait_for(
        "the short job on slot 1 or 2",
        Duration::from_secs(15),
        || matches!(running_on(&pool, &short), Some(1 | 2)),
    );
    // 6: renice values
    wait_for(
        "the short and long jobs' nice values",
        Duration::from_secs(10),
        || {
            nice_of(&work, "short") == Some(5)
                && nice_of(&work, "long1") == Some(15)
                && nice_of(&work, "long2") == Some(15)
        },
    );
    assert_eq!(
        job(&pool, &outside).map(|j| j.0),
        Some(1),
        "4: keyboard busy"
    );
    assert_eq!(
        job(&pool, &foreign).map(|j| j.0),
        Some(1),
        "7: treated as outside"
    );
    // the long jobs' slots carry the running job's attributes (once the
    // collector has their coalesced update)
    wait_for(
        "the job attributes in the slot ads",
        Duration::from_secs(5),
        || {
            pool.ok(&[
                "status",
                "-constraint",
                "SlotID > 2",
                "-af",
                "BolognaBatchJob",
                "LongRunningJob",
            ])
            .trim()
                == "true true\ntrue true"
        },
    );

    // 5: the short BB job runs past BB_SHORT_LIMIT: evicted and removed
    wait_for("the short job removed", Duration::from_secs(30), || {
        job(&pool, &short).is_none()
    });
    let h = pool.ok(&["history", "-af", "ClusterId", "JobStatus"]);
    let short_cluster = short.split('.').next().unwrap();
    assert!(h.lines().any(|l| l == format!("{short_cluster} 3")), "{h}");
    // ... the long ones, running as long, are not
    assert!(running_on(&pool, &long1).is_some() && running_on(&pool, &long2).is_some());
    pool.ok(&["rm", &long1]);
    pool.ok(&["rm", &long2]);

    // the owner leaves: outside jobs start, on short slots only (8), at nice 15 (6, 7)
    set_owner(&owner, 100_000);
    let outside2 = submit(&mut pool, &work, "outside2", "outside", 300, None);
    wait_for(
        "two outside jobs on the short slots",
        Duration::from_secs(20),
        || {
            let running: Vec<u32> = [&outside, &foreign, &outside2]
                .iter()
                .filter_map(|id| running_on(&pool, id))
                .collect();
            running.len() == 2 && running.iter().all(|s| *s <= 2)
        },
    );
    // the third outside job, idle, is considered by cycles begun after
    // that, and matched nowhere
    let cycles = pool.wait_for_cycles(
        "two cycles seeing the idle outside job",
        2,
        Duration::from_secs(30),
        |c| c.idle_jobs >= 1,
    );
    assert!(cycles.iter().all(|c| c.matches == 0), "{cycles:?}");
    let running: Vec<u32> = [&outside, &foreign, &outside2]
        .iter()
        .filter_map(|id| running_on(&pool, id))
        .collect();
    assert_eq!(running.len(), 2, "8: the long slots stay empty");
    let states = pool.ok(&["status", "-constraint", "SlotID > 2", "-af", "State"]);
    assert_eq!(states.trim(), "Unclaimed\nUnclaimed");
    for (name, id) in [
        ("outside", &outside),
        ("foreign", &foreign),
        ("outside2", &outside2),
    ] {
        if running_on(&pool, id).is_some() {
            wait_for(
                "an outside job's nice value",
                Duration::from_secs(10),
                || nice_of(&work, name) == Some(15),
            );
        }
    }
    pool.ok(&["rm", "-all"]);
}

/// `NumJobStarts` of a job still in the queue.
fn starts(pool: &Pool, id: &str) -> i64 {
    pool.ok(&["q", "-allusers", id, "-af", "NumJobStarts"])
        .trim()
        .parse()
        .unwrap_or(-1)
}

/// Scenarios 2 and 3: local (BB) jobs preempt outside jobs through the
/// server's RANK even when the outside user has the better priority, and
/// an outside user, however good its priority, never preempts a BB job
/// (PREEMPTION_REQUIREMENTS on a Bologna server).
#[test]
fn bologna_jobs_preempt_outside_jobs_and_never_the_reverse() {
    // a short limit long enough for the whole scenario
    let (mut pool, owner) = bologna_pool("bologna-preempt", 600);
    let work = work_dir(&pool);
    set_owner(&owner, 100_000);
    let domain = pool.ok(&["config", "get", "UID_DOMAIN"]).trim().to_string();
    // the outside user submits through a token of its own (an account of
    // its own too, when a root pool runs jobs as their owners)
    let outside_name = common::test_user("skuatest-out")
        .map(|u| u.name)
        .unwrap_or_else(|| "outsider".into());
    let token_file = pool.user_token(&outside_name);
    pool.extra_env
        .push(("SKUA_TOKEN_FILE".into(), token_file.display().to_string()));
    let out1 = submit(&mut pool, &work, "out1", "outside", 600, None);
    let out2 = submit(&mut pool, &work, "out2", "outside", 600, None);
    let out3 = submit(&mut pool, &work, "out3", "outside", 600, None);
    pool.extra_env.pop();
    let owner_of = |pool: &Pool, id: &str| {
        let o = pool.ok(&["q", "-allusers", id, "-af", "Owner"]);
        format!("{}@{domain}", o.trim())
    };
    let outsider = owner_of(&pool, &out1);
    assert!(
        outsider.starts_with(&format!("{outside_name}@")),
        "{outsider}"
    );
    wait_for(
        "two outside jobs on the short slots",
        Duration::from_secs(30),
        || {
            let mut s: Vec<u32> = [&out1, &out2, &out3]
                .iter()
                .filter_map(|id| running_on(&pool, id))
                .collect();
            s.sort();
            s == [1, 2]
        },
    );
    // 2: a short BB job arrives: one outside job is preempted for it,
    // though the outside user has by far the better priority
    let local = match common::submitter() {
        Some(u) => format!("{}@{domain}", u.name),
        None => format!(
            "{}@{domain}",
            pool.ok(&["config", "get", "USERNAME"]).trim()
        ),
    };
    // the accountant has seen the outside jobs run (a user at the best
    // priority with nothing in use is not kept)
    wait_for(
        "the outside user in the accountant",
        Duration::from_secs(30),
        || pool.ok(&["userprio", "-all"]).contains(&outsider),
    );
    pool.ok(&["userprio", "-setprio", &outsider, "0.5"]);
    pool.ok(&["userprio", "-setprio", &local, "1000"]);
    let short = submit(&mut pool, &work, "short", "short", 600, None);
    assert_eq!(owner_of(&pool, &short), local);
    let prios = pool.ok(&["userprio", "-all"]);
    assert!(
        prios.contains(&local) && prios.contains(&outsider),
        "{prios}"
    );
    wait_for(
        "the short BB job in an outside job's place",
        Duration::from_secs(60),
        || matches!(running_on(&pool, &short), Some(1 | 2)),
    );
    let outside_running = [&out1, &out2, &out3]
        .iter()
        .filter(|id| running_on(&pool, id).is_some())
        .count();
    assert_eq!(outside_running, 1, "one outside job keeps its slot");
    let requeued = [&out1, &out2]
        .iter()
        .filter(|id| job(&pool, id).map(|j| j.0) == Some(1) && starts(&pool, id) == 1)
        .count();
    assert_eq!(requeued, 1, "the preempted outside job is Idle again");

    // 3: the outside user's better priority never evicts the BB job; its
    // idle jobs are considered cycle after cycle (NEGOTIATOR_INTERVAL = 1)
    let cycles = pool.wait_for_cycles(
        "five cycles seeing the idle outside jobs",
        5,
        Duration::from_secs(30),
        |c| c.idle_jobs >= 1,
    );
    assert!(cycles.iter().all(|c| c.preemptions == 0), "{cycles:?}");
    assert!(matches!(running_on(&pool, &short), Some(1 | 2)));
    assert_eq!(starts(&pool, &short), 1, "the BB job was never evicted");
    pool.ok(&["rm", "-all"]);
}
