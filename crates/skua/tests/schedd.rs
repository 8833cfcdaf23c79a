//! Cross-process tests of the schedd in a personal pool: durability under
//! SIGKILL, the queue tools, authorization between users, the periodic
//! policy and the user log, through the real binaries.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use skua_testkit::JobAdBuilder;

fn schedd_fast() -> Vec<(&'static str, &'static str)> {
    let mut env = fast();
    env.push(("_CONDOR_PERIODIC_EXPR_INTERVAL", "1"));
    // The queue alone: no negotiator or startd to run the jobs.
    env.push(("_CONDOR_DAEMON_LIST", "MASTER, COLLECTOR, SCHEDD"));
    env
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A client of the schedd speaking for the user of `token` (root may not
/// submit), over TCP at the schedd's current address.
fn schedd_client(pool: &Pool, token: &str) -> Option<skua_net::Client> {
    let addr = std::fs::read_to_string(pool.dir.join("spool/.schedd_address")).ok()?;
    let addr = addr.trim().trim_start_matches('<').trim_end_matches('>');
    skua_net::Client::new(
        skua_net::Endpoint::Tcp(addr.parse().ok()?),
        Some(token.to_string()),
        Duration::from_secs(10),
    )
    .ok()
}

fn wait_for_schedd(pool: &Pool) {
    wait_for("the schedd", Duration::from_secs(20), || {
        pool.skua(&["q", "-allusers", "-af", "ClusterId"])
            .status
            .success()
    });
}

/// A tiny deterministic generator (the seed is printed on failure).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const PROCS: u32 = 25;

/// A `/bin/true` job of submission `attempt`.
fn job_ad(attempt: u64, proc: u32) -> String {
    JobAdBuilder::new()
        .id(1, i64::from(proc))
        .attr("Attempt", attempt as i64)
        .text()
}

#[test]
fn acknowledged_submissions_survive_sigkill_of_the_schedd() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    eprintln!("crash test seed {seed}");
    let mut rng = Lcg(seed);
    let mut pool = Pool::new("crash", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let rt = runtime();
    let token = std::fs::read_to_string(pool.user_token("crashtest")).unwrap();

    let mut acked: BTreeMap<u64, u32> = BTreeMap::new(); // attempt -> cluster
    let mut attempts = 0u64;
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut next_kill = Instant::now() + Duration::from_millis(100 + rng.next() % 400);
    while (kills < 6 || acked.len() < 30) && Instant::now() < deadline {
        if Instant::now() >= next_kill {
            for pid in pids_of(&pool, "schedd") {
                kill(pid, "-KILL");
                kills += 1;
            }
            next_kill = Instant::now() + Duration::from_millis(150 + rng.next() % 500);
        }
        attempts += 1;
        let Some(client) = schedd_client(&pool, &token) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let reserved: Result<skua_proto::NewClusterReply, _> = rt.block_on(client.command(
            &skua_proto::routes::SCHEDD_NEW_CLUSTER,
            Some(&skua_proto::NewCluster {}),
        ));
        let Ok(reserved) = reserved else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let submit = skua_proto::Submit {
            cluster: reserved.cluster,
            jobs: (0..PROCS).map(|p| job_ad(attempts, p)).collect(),
            cluster_ad: None,
            submission_id: None,
        };
        let reply: Result<skua_proto::SubmitReply, _> =
            rt.block_on(client.command(&skua_proto::routes::SCHEDD_SUBMIT, Some(&submit)));
        if let Ok(r) = reply {
            assert_eq!(r.jobs, PROCS);
            assert_eq!(r.cluster, reserved.cluster);
            acked.insert(attempts, r.cluster);
        }
    }
    assert!(
        kills >= 3,
        "the schedd was killed only {kills} times (seed {seed})"
    );
    assert!(
        acked.len() >= 10,
        "only {} acknowledged submissions (seed {seed})\n{}",
        acked.len(),
        pool.logs()
    );
    // let the master restart it one last time, then read the queue
    wait_for_schedd(&pool);
    let out = pool.ok(&["q", "-allusers", "-af", "ClusterId", "ProcId", "Attempt"]);
    let mut clusters: BTreeMap<u32, (BTreeSet<u32>, BTreeSet<u64>)> = BTreeMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "{line}");
        let c: u32 = f[0].parse().unwrap();
        let e = clusters.entry(c).or_default();
        assert!(e.0.insert(f[1].parse().unwrap()), "job {c}.{} twice", f[1]);
        e.1.insert(f[2].parse().unwrap());
    }
    for (c, (procs, attempt)) in &clusters {
        assert_eq!(
            procs.len() as u32,
            PROCS,
            "cluster {c} is half-present (seed {seed})"
        );
        assert_eq!(attempt.len(), 1, "cluster {c} mixes submissions");
    }
    for (attempt, cluster) in &acked {
        let (_, attempts_there) = clusters.get(cluster).unwrap_or_else(|| {
            panic!("acknowledged cluster {cluster} (attempt {attempt}) is lost (seed {seed})")
        });
        assert!(attempts_there.contains(attempt));
    }
    eprintln!(
        "{} attempts, {} acknowledged, {} clusters present, {kills} kills",
        attempts,
        acked.len(),
        clusters.len()
    );
}

/// Writes `text` as a submit file in the pool's scratch space and submits
/// it from there; returns the cluster id.
fn submit(pool: &Pool, name: &str, text: &str) -> u32 {
    let dir = pool.home.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    common::user_dir(&dir);
    let out = pool.skua_user_in(&dir, &["submit", name]);
    assert!(
        out.status.success(),
        "skua submit {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = String::from_utf8_lossy(&out.stdout);
    out.lines()
        .find_map(|l| l.split("submitted to cluster ").nth(1))
        .and_then(|c| c.trim_end_matches('.').parse().ok())
        .unwrap_or_else(|| panic!("no cluster in {out:?}"))
}

fn af(pool: &Pool, args: &[&str]) -> Vec<Vec<String>> {
    let mut full = vec!["q", "-allusers"];
    full.extend_from_slice(args);
    pool.ok(&full)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn every_queue_form_through_the_cli() {
    let mut pool = Pool::new("forms", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let work = pool.home.join("work");
    std::fs::create_dir_all(work.join("data")).unwrap();
    for f in ["a.dat", "b.dat", "c.txt"] {
        std::fs::write(work.join("data").join(f), "x").unwrap();
    }
    std::fs::write(work.join("rows.txt"), "1, one\n2, two\n").unwrap();
    let base = "executable = /bin/echo\nrequest_memory = 1\n";
    let cases: &[(&str, &str, &[&str])] = &[
        ("plain", "queue", &["0:"]),
        (
            "count",
            "arguments = $(Process)\nqueue 3",
            &["0:0", "1:1", "2:2"],
        ),
        (
            "in",
            "arguments = $(Item)\nqueue Item in (red, green)",
            &["0:red", "1:green"],
        ),
        (
            "in_n",
            "arguments = $(Item)-$(Step)\nqueue 2 in (x, y)",
            &["0:x-0", "1:x-1", "2:y-0", "3:y-1"],
        ),
        (
            "from_file",
            "arguments = $(n)_$(word)\nqueue n, word from rows.txt",
            &["0:1_one", "1:2_two"],
        ),
        (
            "from_inline",
            "arguments = $(n)\nqueue n from (\n  7\n  8\n)",
            &["0:7", "1:8"],
        ),
        (
            "matching",
            "arguments = $(f)\nqueue f matching files data/*.dat",
            &["0:data/a.dat", "1:data/b.dat"],
        ),
        (
            "slice",
            "arguments = $(Item)\nqueue Item in [1:] (p, q, r)",
            &["0:q", "1:r"],
        ),
        (
            "two_queues",
            "arguments = first\nqueue\narguments = second\nqueue 2",
            &["0:first", "1:second", "2:second"],
        ),
    ];
    for (name, queue, expect) in cases {
        let c = submit(&pool, &format!("{name}.sub"), &format!("{base}{queue}\n"));
        let rows = af(&pool, &[&c.to_string(), "-af", "ProcId", "Args"]);
        let got: Vec<String> = rows
            .iter()
            .map(|r| {
                let args = r.get(1).map(|a| a.as_str()).unwrap_or("");
                let args = if args == "undefined" { "" } else { args };
                format!("{}:{}", r[0], args)
            })
            .collect();
        assert_eq!(got, *expect, "queue form {name}");
    }
    // a queue statement that selects nothing submits nothing and succeeds
    let dir = pool.home.join("work");
    std::fs::write(
        dir.join("none.sub"),
        format!("{base}queue f matching *.nothing\n"),
    )
    .unwrap();
    let out = pool.submit_in(&dir, "none.sub");
    assert!(out.contains("0 job(s)"), "{out}");
    // bad input: nothing is submitted, the message names the file and line
    let before = af(&pool, &["-af", "ClusterId"]).len();
    std::fs::write(
        dir.join("bad.sub"),
        format!("{base}requirements = Memory >\nqueue\n"),
    )
    .unwrap();
    let bad = pool.skua_user_in(&dir, &["submit", "bad.sub"]);
    assert!(!bad.status.success());
    let msg = String::from_utf8_lossy(&bad.stderr);
    assert!(
        msg.contains("bad.sub") || msg.to_lowercase().contains("requirements"),
        "{msg}"
    );
    assert_eq!(af(&pool, &["-af", "ClusterId"]).len(), before);
}

/// The event numbers of a user log, with the job ids, in order.
fn events(log: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.len() > 18 && l.as_bytes()[3] == b' ' && l.as_bytes()[4] == b'(')
        .map(|l| (l[..3].to_string(), l[5..16].to_string()))
        .collect()
}

#[test]
fn hold_release_remove_cycle_with_the_user_log() {
    let mut pool = Pool::new("cycle", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let c = submit(
        &pool,
        "cycle.sub",
        "executable = /bin/sleep\narguments = 600\nlog = cycle.log\nqueue 2\n",
    );
    let log = pool.home.join("work/cycle.log");
    let j0 = format!("{c:03}.000.000");
    let j1 = format!("{c:03}.001.000");
    assert_eq!(
        events(&log),
        [
            ("000".to_string(), j0.clone()),
            ("000".to_string(), j1.clone())
        ]
    );
    let out = pool.ok(&["hold", &format!("{c}.0"), "-reason", "waiting for data"]);
    assert!(out.contains(&format!("Job {c}.0 held")), "{out}");
    let held = pool.ok(&["q", "-hold", "-allusers"]);
    assert!(held.contains("waiting for data"), "{held}");
    // holding again is reported and changes nothing
    let again = pool.skua(&["hold", &format!("{c}.0")]);
    assert!(!again.status.success());
    pool.ok(&["release", &format!("{c}.0")]);
    let st = af(&pool, &[&format!("{c}.0"), "-af", "JobStatus"]);
    assert_eq!(st, [["1"]]);
    pool.ok(&["rm", &c.to_string()]);
    assert!(af(&pool, &[&c.to_string(), "-af", "ClusterId"]).is_empty());
    let hist = pool.ok(&["history", "-af", "ClusterId", "ProcId", "JobStatus"]);
    assert!(hist.contains(&format!("{c} 0 3")), "{hist}");
    assert!(hist.contains(&format!("{c} 1 3")), "{hist}");
    let evs: Vec<(String, String)> = events(&log);
    let expect: Vec<(String, String)> = [
        ("000", &j0),
        ("000", &j1),
        ("012", &j0),
        ("013", &j0),
        ("009", &j0),
        ("009", &j1),
    ]
    .iter()
    .map(|(e, j)| (e.to_string(), j.to_string()))
    .collect();
    assert_eq!(evs, expect);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("waiting for data"), "{text}");
    assert!(text.contains("Code 1 Subcode 0"), "{text}");
}

#[test]
fn users_act_only_on_their_own_jobs() {
    let mut pool = Pool::new("users", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let token = |who: &str| {
        let t = pool.ok(&["token", "create", "--identity", &format!("{who}@test")]);
        let path = pool.home.join(format!("{who}.token"));
        std::fs::write(&path, t.trim()).unwrap();
        path
    };
    let (alice_tok, bob_tok) = (token("alice"), token("bob"));
    let as_user = |tok: &std::path::Path, args: &[&str]| {
        let mut p = Pool {
            dir: pool.dir.clone(),
            home: pool.home.clone(),
            master_pid: None,
            extra_env: pool.extra_env.clone(),
        };
        p.extra_env
            .push(("SKUA_TOKEN_FILE".into(), tok.display().to_string()));
        let out = p.skua(args);
        std::mem::forget(p); // not the pool's owner: must not stop it
        out
    };
    let dir = pool.home.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a.sub");
    std::fs::write(&file, "executable = /bin/sleep\narguments = 600\nqueue 2\n").unwrap();
    let out = as_user(&alice_tok, &["submit", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let owners = af(&pool, &["-af", "Owner"]);
    assert_eq!(owners, [["alice"], ["alice"]]);
    let c = af(&pool, &["-af", "ClusterId"])[0][0].clone();
    // bob may not remove, hold or edit alice's jobs; nothing changes
    for args in [
        vec!["rm", c.as_str()],
        vec!["hold", c.as_str()],
        vec!["qedit", c.as_str(), "JobPrio", "9"],
    ] {
        let out = as_user(&bob_tok, &args);
        assert!(!out.status.success(), "bob {args:?} must be refused");
        let msg = String::from_utf8_lossy(&out.stderr).to_lowercase();
        assert!(msg.contains("permission") || msg.contains("not"), "{msg}");
    }
    // bob's -all touches only bob's jobs (none)
    let _ = as_user(&bob_tok, &["rm", "-all"]);
    assert_eq!(af(&pool, &["-af", "JobStatus"]), [["1"], ["1"]]);
    // alice may
    let out = as_user(&alice_tok, &["hold", c.as_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(af(&pool, &["-af", "JobStatus"]), [["5"], ["5"]]);
    // and the pool's administrator (the local owner) may too
    pool.ok(&["rm", c.as_str()]);
    assert!(af(&pool, &["-af", "JobStatus"]).is_empty());
}

#[test]
fn periodic_remove_and_hold_fire() {
    let mut pool = Pool::new("periodic", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let rm = submit(
        &pool,
        "rm.sub",
        "executable = /bin/sleep\nperiodic_remove = time() - QDate >= 2\nqueue\n",
    );
    let hold = submit(
        &pool,
        "hold.sub",
        "executable = /bin/sleep\nperiodic_hold = time() - QDate >= 1\n\
         periodic_hold_reason = \"held by policy\"\nperiodic_hold_subcode = 42\nlog = hold.log\nqueue\n",
    );
    wait_for("periodic_hold", Duration::from_secs(20), || {
        af(&pool, &[&hold.to_string(), "-af", "JobStatus"]) == [["5"]]
    });
    let why = af(
        &pool,
        &[
            &hold.to_string(),
            "-af",
            "HoldReasonCode",
            "HoldReasonSubCode",
        ],
    );
    assert_eq!(why, [["3", "42"]]);
    let held = pool.ok(&["q", "-hold", "-allusers"]);
    assert!(held.contains("held by policy"), "{held}");
    let log = pool.home.join("work/hold.log");
    assert_eq!(
        events(&log)
            .iter()
            .map(|(e, _)| e.as_str())
            .collect::<Vec<_>>(),
        ["000", "012"]
    );
    wait_for("periodic_remove", Duration::from_secs(20), || {
        af(&pool, &[&rm.to_string(), "-af", "ClusterId"]).is_empty()
    });
    let hist = pool.ok(&["history", "-af", "ClusterId", "RemoveReason"]);
    assert!(hist.contains(&format!("{rm} ")), "{hist}");
    assert!(hist.contains("PeriodicRemove"), "{hist}");
}

/// Runs `script` with python3 and HTCondor's bindings, feeding `input`;
/// `None` (with a loud notice) when they are missing and not required.
fn htcondor_python(script: &str, input: &str) -> Option<String> {
    use std::io::Write as _;
    let required = std::env::var("SKUA_REQUIRE_HTCONDOR_PY").is_ok_and(|v| v == "1");
    let have = std::process::Command::new("python3")
        .args(["-c", "import classad2, htcondor2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(!required, "python3 with HTCondor's bindings is required");
        eprintln!("SKIPPED: python3 with HTCondor's bindings (classad2) is not available");
        return None;
    }
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn long_and_json_outputs_are_read_by_htcondors_bindings() {
    let mut pool = Pool::new("bindings", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let c = submit(
        &pool,
        "b.sub",
        "executable = /bin/sleep\narguments = \"one 'two three'\"\n+Project = \"x\\\"y\"\nqueue 2\n",
    );
    let long = pool.ok(&["q", "-l", &c.to_string()]);
    let read_long = "import sys, classad2\n\
        ads = [a for a in sys.stdin.read().split('\\n\\n') if a.strip()]\n\
        for a in ads:\n\
        \x20   ad = classad2.parseOne(a, classad2.ParserType.Old)\n\
        \x20   print(ad['ClusterId'], ad['ProcId'], ad['Project'], ad.eval('RequestDisk') > 0, ad['Arguments'])\n";
    if let Some(out) = htcondor_python(read_long, &long) {
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            [
                format!("{c} 0 x\"y True one two' 'three"),
                format!("{c} 1 x\"y True one two' 'three")
            ]
        );
    }
    let json = pool.ok(&["q", "-json", &c.to_string()]);
    // the array's elements, each read as it stands (json.dumps would drop
    // the escaped slashes that mark expressions)
    let read_json = "import sys, json, classad2\n\
        text = sys.stdin.read()\n\
        json.loads(text)\n\
        for a in text.strip()[1:-1].split('\\n,\\n'):\n\
        \x20   ad = classad2.parseOne(a, classad2.ParserType.JSON)\n\
        \x20   print(ad['ProcId'], ad.eval('RequestDisk') > 0, type(ad.lookup('Requirements')).__name__)\n";
    if let Some(out) = htcondor_python(read_json, &json) {
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            ["0 True ExprTree", "1 True ExprTree"],
            "expressions must come back as expressions"
        );
    }
    pool.ok(&["rm", &c.to_string()]);
    let hist = pool.ok(&["history", "-l"]);
    let read_hist = "import sys, classad2\n\
        ads = [a for a in sys.stdin.read().split('\\n\\n') if a.strip()]\n\
        print(sorted(classad2.parseOne(a, classad2.ParserType.Old)['JobStatus'] for a in ads))\n";
    if let Some(out) = htcondor_python(read_hist, &hist) {
        assert_eq!(out.trim(), "[3, 3]");
    }
}

/// Submits `file` (in the pool's scratch work directory) as the user of
/// `token`, through the schedd at `schedd` (`ip:port`); the one place this
/// file's answer-loss tests submit.
fn submit_through(
    pool: &Pool,
    token: &std::path::Path,
    schedd: &str,
    file: &str,
) -> std::process::Output {
    let dir = pool.home.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(file),
        "executable = /bin/true\n+Marker = \"lost-answer\"\nqueue 3\n",
    )
    .unwrap();
    std::process::Command::new(SKUA)
        .current_dir(&dir)
        .args(["submit", file])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &pool.home)
        .env("SKUA_CONFIG", pool.config())
        .env("SKUA_TOKEN_FILE", token)
        .env("_CONDOR_SCHEDD_HOST", schedd)
        .output()
        .unwrap()
}

/// A TCP proxy in front of the schedd that cuts the connection carrying
/// the first `/schedd/submit` request as soon as the schedd's answer starts
/// (the submission is committed by then), and passes everything else; with
/// `refuse_after_cut`, every later connection is closed at once.
struct AnswerCutter {
    addr: std::net::SocketAddr,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl AnswerCutter {
    fn start(schedd: std::net::SocketAddr, refuse_after_cut: bool) -> AnswerCutter {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let cut2 = cut.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if refuse_after_cut && cut2.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(schedd) else {
                    continue;
                };
                let saw_submit = Arc::new(AtomicBool::new(false));
                // client -> schedd, watching for the submit request
                let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let saw = saw_submit.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        if String::from_utf8_lossy(&buf[..n]).contains("/schedd/submit") {
                            saw.store(true, Ordering::SeqCst);
                        }
                    }
                    let _ = to.shutdown(Shutdown::Write);
                });
                // schedd -> client, cutting the first submit's answer
                let (mut from, mut to) = (server, client);
                let cut = cut2.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if saw_submit.load(Ordering::SeqCst)
                            && cut
                                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok()
                        {
                            let _ = to.shutdown(Shutdown::Both);
                            let _ = from.shutdown(Shutdown::Both);
                            return;
                        }
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
        AnswerCutter { addr, cut }
    }

    fn has_cut(&self) -> bool {
        self.cut.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn schedd_tcp_address(pool: &Pool) -> std::net::SocketAddr {
    let text = std::fs::read_to_string(pool.dir.join("spool/.schedd_address")).unwrap();
    let first = text.lines().next().unwrap_or_default();
    let hp = first.trim().trim_start_matches('<');
    let hp = hp.split(['>', '?']).next().unwrap_or_default();
    hp.parse()
        .unwrap_or_else(|_| panic!("no address in {text:?}"))
}

#[test]
fn a_submission_whose_answer_is_lost_is_queued_once_or_reported_uncertain() {
    let mut pool = Pool::new("lost-answer", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    let token = pool.user_token("alice");
    let schedd = schedd_tcp_address(&pool);

    // the answer is lost after the commit; the tool tries again and gets
    // the cluster already made
    let proxy = AnswerCutter::start(schedd, false);
    let out = submit_through(&pool, &token, &proxy.addr.to_string(), "once.sub");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", pool.logs());
    assert!(proxy.has_cut(), "the proxy never cut an answer: {stderr}");
    assert!(stderr.contains("trying again"), "{stderr}");
    assert!(stdout.contains("3 job(s) submitted to cluster"), "{stdout}");
    let rows = af(&pool, &["-af", "ClusterId", "ProcId", "SubmissionId"]);
    assert_eq!(rows.len(), 3, "jobs queued: {rows:?}");
    assert!(
        rows.iter()
            .all(|r| r[0] == rows[0][0] && r[2] == rows[0][2]),
        "{rows:?}"
    );

    // the schedd cannot be reached after the answer was lost: the user is
    // told that the outcome is unknown and how to find out
    let proxy = AnswerCutter::start(schedd, true);
    let out = submit_through(&pool, &token, &proxy.addr.to_string(), "unsure.sub");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(proxy.has_cut());
    assert!(
        stderr.contains("may or may not have been queued"),
        "{stderr}"
    );
    let check = stderr
        .lines()
        .find(|l| l.contains("skua q -constraint"))
        .unwrap_or_else(|| panic!("no command to check with: {stderr}"));
    let key = check
        .split('"')
        .nth(1)
        .unwrap_or_else(|| panic!("no key in {check}"));
    // the constraint it names finds the jobs (they were committed);
    // `-allusers` because `skua q` picks "my jobs" by the local account,
    // which here is not the token's alice
    let constraint = format!("SubmissionId == \"{key}\"");
    let found = pool.skua_as(
        &token,
        &[
            "q",
            "-allusers",
            "-constraint",
            &constraint,
            "-af",
            "ProcId",
        ],
    );
    assert!(found.status.success());
    assert_eq!(String::from_utf8_lossy(&found.stdout).lines().count(), 3);
}

#[test]
fn the_queue_database_and_the_logs_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut pool = Pool::new("private-files", &schedd_fast());
    pool.start();
    wait_for_schedd(&pool);
    submit(
        &pool,
        "secret.sub",
        "executable = /bin/true\nenvironment = \"API_TOKEN=hunter2\"\nqueue\n",
    );
    let mut checked = Vec::new();
    let mut check = |p: std::path::PathBuf| {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", p.display());
        checked.push(p);
    };
    for e in std::fs::read_dir(pool.dir.join("spool")).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("job_queue.db") {
            check(e.path());
        }
    }
    for e in std::fs::read_dir(pool.dir.join("log")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".out") || name.contains("Log.") {
            check(e.path());
        }
    }
    let names: Vec<String> = checked
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for want in [
        "job_queue.db",
        "job_queue.db-wal",
        "master.out",
        "SchedLog.",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(want)),
            "{want} not among {names:?}"
        );
    }
}

#[test]
fn max_jobs_per_owner_refuses_a_whole_submission_with_the_numbers() {
    let mut env = schedd_fast();
    env.push(("_CONDOR_MAX_JOBS_PER_OWNER", "4"));
    let mut pool = Pool::new("per-owner", &env);
    pool.start();
    wait_for_schedd(&pool);
    submit(&pool, "three.sub", "executable = /bin/true\nqueue 3\n");
    let dir = pool.home.join("work");
    std::fs::write(dir.join("two.sub"), "executable = /bin/true\nqueue 2\n").unwrap();
    let out = pool.skua_user_in(&dir, &["submit", "two.sub"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    for part in ["MAX_JOBS_PER_OWNER", "has 3 jobs", "adds 2", "limit is 4"] {
        assert!(stderr.contains(part), "{part:?} missing from {stderr}");
    }
    // nothing of it was queued; one more job still fits
    assert_eq!(af(&pool, &["-af", "ProcId"]).len(), 3);
    submit(&pool, "one.sub", "executable = /bin/true\nqueue 1\n");
    assert_eq!(af(&pool, &["-af", "ProcId"]).len(), 4);
}
