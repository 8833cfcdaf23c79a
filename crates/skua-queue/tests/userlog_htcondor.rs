//! The job event log Skua writes is read by HTCondor's own reader (the
//! `htcondor2` Python module's `JobEventLog`), and reads back as written.
//!
//! Without python3 or htcondor2 the test prints a loud notice and passes,
//! unless `SKUA_REQUIRE_HTCONDOR_PY=1` (CI), where it fails.

// This test runs python3, which the crate's clippy.toml bans in the library.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::process::Command;

use classad::time::utc_zone;
use serde_json::Value as Json;
use skua_queue::userlog::{
    format_event, ExitStatus, FormatOptions, ResourceUsage, Rusage, Termination,
};
use skua_queue::{FileTransfer, JobId, UserLogEvent};

const T0: i64 = 1_795_262_400; // 2026-11-21 12:00:00 UTC

fn events() -> Vec<(JobId, UserLogEvent)> {
    let a = JobId::new(12, 0);
    let b = JobId::new(12, 1);
    let c = JobId::new(1234, 5678);
    let host = "<127.0.0.1:9618?addrs=127.0.0.1-9618>".to_string();
    vec![
        (a, UserLogEvent::Submit { host: host.clone() }),
        (b, UserLogEvent::Submit { host: host.clone() }),
        (c, UserLogEvent::Submit { host: host.clone() }),
        (
            a,
            UserLogEvent::Execute {
                host: "<127.0.0.1:40000>".into(),
                slot_name: Some("slot1@host".into()),
            },
        ),
        (
            a,
            UserLogEvent::ImageSize {
                image_size_kb: 1000,
                memory_usage_mb: Some(2),
                resident_set_size_kb: Some(1500),
                proportional_set_size_kb: None,
            },
        ),
        (a, UserLogEvent::Suspended { n: 3 }),
        (a, UserLogEvent::Unsuspended),
        (
            a,
            UserLogEvent::Checkpointed {
                run_remote: Rusage {
                    user_secs: 61,
                    sys_secs: 2,
                },
                run_local: Rusage::default(),
                sent_bytes: 4096,
            },
        ),
        (
            a,
            UserLogEvent::Evicted {
                checkpointed: false,
                requeued: None,
                run_remote: Rusage::default(),
                run_local: Rusage::default(),
                sent_bytes: 10,
                received_bytes: 20,
                reason: Some("the machine's owner came back".into()),
                code: 1001,
                subcode: 2,
            },
        ),
        (
            a,
            UserLogEvent::Evicted {
                checkpointed: false,
                requeued: Some(Termination::Normal { return_value: 3 }),
                run_remote: Rusage::default(),
                run_local: Rusage::default(),
                sent_bytes: 0,
                received_bytes: 0,
                reason: None,
                code: 0,
                subcode: 0,
            },
        ),
        (
            b,
            UserLogEvent::Held {
                reason: "via skua hold (by user alice)".into(),
                code: 1,
                subcode: 0,
            },
        ),
        (
            b,
            UserLogEvent::Released {
                reason: "via skua release (by user alice)".into(),
            },
        ),
        (
            b,
            UserLogEvent::Aborted {
                reason: Some("via skua rm (by user alice)".into()),
            },
        ),
        (
            a,
            UserLogEvent::Terminated(Box::new(ExitStatus {
                termination: Termination::Normal { return_value: 7 },
                run_remote: Rusage {
                    user_secs: 3725,
                    sys_secs: 12,
                },
                run_local: Rusage::default(),
                total_remote: Rusage {
                    user_secs: 3725,
                    sys_secs: 12,
                },
                total_local: Rusage::default(),
                sent_bytes: 23,
                received_bytes: 113,
                total_sent_bytes: 23,
                total_received_bytes: 113,
                resources: vec![
                    ResourceUsage {
                        name: "Cpus".into(),
                        usage: Some(0.25),
                        request: Some(1.0),
                        allocated: Some(1.0),
                    },
                    ResourceUsage {
                        name: "Disk".into(),
                        usage: Some(100.0),
                        request: Some(1024.0),
                        allocated: Some(2048.0),
                    },
                    ResourceUsage {
                        name: "Memory".into(),
                        usage: Some(5.0),
                        request: Some(128.0),
                        allocated: Some(128.0),
                    },
                ],
            })),
        ),
        (
            c,
            UserLogEvent::Held {
                reason: String::new(),
                code: 3,
                subcode: 42,
            },
        ),
        (
            c,
            UserLogEvent::Terminated(Box::new(ExitStatus {
                termination: Termination::Signal {
                    signal: 9,
                    core_file: Some("/tmp/core.1234".into()),
                },
                run_remote: Rusage::default(),
                run_local: Rusage::default(),
                total_remote: Rusage::default(),
                total_local: Rusage::default(),
                sent_bytes: 0,
                received_bytes: 0,
                total_sent_bytes: 0,
                total_received_bytes: 0,
                resources: vec![],
            })),
        ),
        (
            a,
            UserLogEvent::Disconnected {
                reason: "Socket between submit and execute hosts closed unexpectedly".into(),
                startd_name: "slot1@exec.example".into(),
                startd_addr: "<10.0.0.2:9618?sock=startd>".into(),
            },
        ),
        (
            a,
            UserLogEvent::Reconnected {
                startd_name: "slot1@exec.example".into(),
                startd_addr: "<10.0.0.2:9618?sock=startd>".into(),
                starter_addr: "<10.0.0.2:9618?sock=startd>".into(),
            },
        ),
        (
            b,
            UserLogEvent::ReconnectFailed {
                reason: "Job disconnected too long: JobLeaseDuration (2400 seconds) expired".into(),
                startd_name: "slot1@exec.example".into(),
            },
        ),
        (a, UserLogEvent::FileTransfer(FileTransfer::OutputStarted)),
        (a, UserLogEvent::FileTransfer(FileTransfer::OutputFinished)),
        (
            a,
            UserLogEvent::Evicted {
                checkpointed: true,
                requeued: None,
                run_remote: Rusage::default(),
                run_local: Rusage::default(),
                sent_bytes: 0,
                received_bytes: 0,
                reason: Some("vacated by the startd".into()),
                code: 0,
                subcode: 0,
            },
        ),
        (
            JobId::new(42, 0),
            UserLogEvent::node_executing(3, "<10.0.0.3:9618?sock=startd>", Some("slot2@exec3")),
        ),
        (
            JobId::new(42, 1),
            UserLogEvent::node_executing(0, "<10.0.0.1:9618>", None),
        ),
        (
            JobId::new(42, 0),
            UserLogEvent::node_terminated(
                3,
                ExitStatus {
                    termination: Termination::Normal { return_value: 4 },
                    run_remote: Rusage {
                        user_secs: 65,
                        sys_secs: 1,
                    },
                    run_local: Rusage::default(),
                    total_remote: Rusage::default(),
                    total_local: Rusage::default(),
                    sent_bytes: 11,
                    received_bytes: 22,
                    total_sent_bytes: 33,
                    total_received_bytes: 44,
                    resources: vec![ResourceUsage {
                        name: "Cpus".into(),
                        usage: Some(1.0),
                        request: Some(1.0),
                        allocated: Some(1.0),
                    }],
                },
            ),
        ),
        (
            JobId::new(42, 1),
            UserLogEvent::node_terminated(
                0,
                ExitStatus {
                    termination: Termination::Signal {
                        signal: 9,
                        core_file: None,
                    },
                    run_remote: Rusage::default(),
                    run_local: Rusage::default(),
                    total_remote: Rusage::default(),
                    total_local: Rusage::default(),
                    sent_bytes: 0,
                    received_bytes: 0,
                    total_sent_bytes: 0,
                    total_received_bytes: 0,
                    resources: vec![],
                },
            ),
        ),
        (
            a,
            transfer(FileTransfer::InputQueued, None, Some("<10.0.0.2:9618>")),
        ),
        (
            a,
            transfer(FileTransfer::InputStarted, Some(7), Some("<10.0.0.2:9618>")),
        ),
        (a, transfer(FileTransfer::InputFinished, None, None)),
        (a, transfer(FileTransfer::OutputQueued, None, None)),
        (a, transfer(FileTransfer::OutputStarted, Some(0), None)),
        (a, transfer(FileTransfer::OutputFinished, None, None)),
    ]
}

fn transfer(step: FileTransfer, seconds_in_queue: Option<i64>, host: Option<&str>) -> UserLogEvent {
    UserLogEvent::Transfer {
        step,
        seconds_in_queue,
        host: host.map(String::from),
    }
}

fn skip_or_fail(why: &str) {
    if std::env::var("SKUA_REQUIRE_HTCONDOR_PY").as_deref() == Ok("1") {
        panic!("SKUA_REQUIRE_HTCONDOR_PY=1 but {why}");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {why}; the user log format was NOT checked against HTCondor's reader (pip install htcondor==25.14.1) !!!!!!!!\n");
}

#[test]
fn htcondor_reads_the_event_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("job.log");
    let evs = events();
    {
        let mut f = std::fs::File::create(&path).expect("create log");
        for (i, (id, e)) in evs.iter().enumerate() {
            let text = format_event(e, *id, T0 + i as i64, utc_zone, &FormatOptions::default());
            f.write_all(text.as_bytes()).expect("write log");
        }
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/read_userlog.py");
    // The reader turns local times back to Unix time: run it in UTC.
    let out = match Command::new("python3")
        .arg(script)
        .arg(&path)
        .env("TZ", "UTC")
        .output()
    {
        Ok(o) => o,
        Err(e) => return skip_or_fail(&format!("python3 could not be run ({e})")),
    };
    if out.status.code() == Some(3) {
        return skip_or_fail("the htcondor2 Python module is not installed");
    }
    assert!(
        out.status.success(),
        "reader failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&path).unwrap_or_default()
    );
    let got: Vec<Json> = serde_json::from_slice(&out.stdout).expect("reader json");
    assert_eq!(
        got.len(),
        evs.len(),
        "events read: {got:#?}\nlog:\n{}",
        std::fs::read_to_string(&path).unwrap_or_default()
    );
    let types: Vec<&str> = got
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        [
            "SUBMIT",
            "SUBMIT",
            "SUBMIT",
            "EXECUTE",
            "IMAGE_SIZE",
            "JOB_SUSPENDED",
            "JOB_UNSUSPENDED",
            "CHECKPOINTED",
            "JOB_EVICTED",
            "JOB_EVICTED",
            "JOB_HELD",
            "JOB_RELEASED",
            "JOB_ABORTED",
            "JOB_TERMINATED",
            "JOB_HELD",
            "JOB_TERMINATED",
            "JOB_DISCONNECTED",
            "JOB_RECONNECTED",
            "JOB_RECONNECT_FAILED",
            "FILE_TRANSFER",
            "FILE_TRANSFER",
            "JOB_EVICTED",
            "NODE_EXECUTE",
            "NODE_EXECUTE",
            "NODE_TERMINATED",
            "NODE_TERMINATED",
            "FILE_TRANSFER",
            "FILE_TRANSFER",
            "FILE_TRANSFER",
            "FILE_TRANSFER",
            "FILE_TRANSFER",
            "FILE_TRANSFER",
        ]
    );
    for (g, (id, _)) in got.iter().zip(&evs) {
        assert_eq!(g["cluster"].as_u64(), Some(id.cluster as u64), "{g}");
        assert_eq!(g["proc"].as_u64(), Some(id.proc as u64), "{g}");
    }
    let attr = |i: usize, name: &str| got[i]["attrs"][name].clone();
    // times read back
    for (i, g) in got.iter().enumerate() {
        let t = g["attrs"]["EventTime"].as_str().unwrap_or("");
        let want = format!("2026-11-21T12:00:{:02}", i);
        assert!(
            t.starts_with(&want),
            "event {i}: EventTime {t}, want {want}"
        );
    }
    assert_eq!(
        attr(0, "SubmitHost"),
        Json::from("<127.0.0.1:9618?addrs=127.0.0.1-9618>")
    );
    assert_eq!(attr(3, "ExecuteHost"), Json::from("<127.0.0.1:40000>"));
    assert_eq!(attr(3, "SlotName"), Json::from("slot1@host"));
    assert_eq!(attr(4, "Size"), Json::from(1000));
    assert_eq!(attr(4, "MemoryUsage"), Json::from(2));
    assert_eq!(attr(4, "ResidentSetSize"), Json::from(1500));
    assert_eq!(attr(5, "NumberOfPIDs"), Json::from(3));
    assert_eq!(attr(7, "SentBytes"), Json::from(4096.0));
    assert_eq!(
        attr(7, "RunRemoteUsage"),
        Json::from("Usr 0 00:01:01, Sys 0 00:00:02")
    );
    assert_eq!(
        attr(8, "Reason"),
        Json::from("the machine's owner came back")
    );
    assert_eq!(attr(8, "ReasonCode"), Json::from(1001));
    assert_eq!(attr(8, "ReasonSubCode"), Json::from(2));
    assert_eq!(attr(8, "SentBytes"), Json::from(10.0));
    assert_eq!(attr(8, "ReceivedBytes"), Json::from(20.0));
    assert_eq!(attr(9, "TerminatedAndRequeued"), Json::from(true));
    assert_eq!(attr(9, "TerminatedNormally"), Json::from(true));
    assert_eq!(attr(9, "ReturnValue"), Json::from(3));
    assert_eq!(
        attr(10, "HoldReason"),
        Json::from("via skua hold (by user alice)")
    );
    assert_eq!(attr(10, "HoldReasonCode"), Json::from(1));
    assert_eq!(attr(10, "HoldReasonSubCode"), Json::from(0));
    assert_eq!(
        attr(11, "Reason"),
        Json::from("via skua release (by user alice)")
    );
    assert_eq!(
        attr(12, "Reason"),
        Json::from("via skua rm (by user alice)")
    );
    assert_eq!(attr(13, "TerminatedNormally"), Json::from(true));
    assert_eq!(attr(13, "ReturnValue"), Json::from(7));
    assert_eq!(
        attr(13, "RunRemoteUsage"),
        Json::from("Usr 0 01:02:05, Sys 0 00:00:12")
    );
    assert_eq!(attr(13, "TotalReceivedBytes"), Json::from(113.0));
    assert_eq!(attr(13, "RequestMemory"), Json::from(128));
    assert_eq!(attr(13, "MemoryUsage"), Json::from(5));
    assert_eq!(attr(13, "Disk"), Json::from(2048));
    assert_eq!(attr(13, "CpusUsage"), Json::from(0.25));
    assert_eq!(attr(14, "HoldReasonCode"), Json::from(3));
    assert_eq!(attr(14, "HoldReasonSubCode"), Json::from(42));
    assert_eq!(attr(14, "HoldReason"), Json::Null);
    assert_eq!(attr(15, "TerminatedNormally"), Json::from(false));
    assert_eq!(attr(15, "TerminatedBySignal"), Json::from(9));
    assert_eq!(attr(15, "CoreFile"), Json::from("/tmp/core.1234"));
    assert_eq!(
        attr(16, "DisconnectReason"),
        Json::from("Socket between submit and execute hosts closed unexpectedly")
    );
    assert_eq!(attr(16, "StartdName"), Json::from("slot1@exec.example"));
    assert_eq!(
        attr(16, "StartdAddr"),
        Json::from("<10.0.0.2:9618?sock=startd>")
    );
    assert_eq!(attr(17, "StartdName"), Json::from("slot1@exec.example"));
    assert_eq!(
        attr(17, "StartdAddr"),
        Json::from("<10.0.0.2:9618?sock=startd>")
    );
    assert_eq!(
        attr(17, "StarterAddr"),
        Json::from("<10.0.0.2:9618?sock=startd>")
    );
    assert_eq!(
        attr(18, "Reason"),
        Json::from("Job disconnected too long: JobLeaseDuration (2400 seconds) expired")
    );
    assert_eq!(attr(18, "StartdName"), Json::from("slot1@exec.example"));
    // HTCondor's FileTransferEventType: 5 output started, 6 finished
    assert_eq!(attr(19, "Type"), Json::from(5));
    assert_eq!(attr(20, "Type"), Json::from(6));
    assert_eq!(attr(21, "Checkpointed"), Json::from(true));
    assert_eq!(attr(21, "Reason"), Json::from("vacated by the startd"));
    // The parallel universe's node events: the node from the header's
    // subproc and the body, the 005 body worded "... By Node".
    assert_eq!(attr(22, "Subproc"), Json::from(3));
    assert_eq!(attr(22, "Node"), Json::from(3));
    assert_eq!(
        attr(22, "ExecuteHost"),
        Json::from("<10.0.0.3:9618?sock=startd>")
    );
    assert_eq!(attr(22, "SlotName"), Json::from("slot2@exec3"));
    assert_eq!(attr(23, "Subproc"), Json::from(0));
    assert_eq!(attr(23, "Node"), Json::from(0));
    assert_eq!(attr(23, "SlotName"), Json::Null);
    assert_eq!(attr(24, "Subproc"), Json::from(3));
    assert_eq!(attr(24, "Node"), Json::from(3));
    assert_eq!(attr(24, "TerminatedNormally"), Json::from(true));
    assert_eq!(attr(24, "ReturnValue"), Json::from(4));
    assert_eq!(
        attr(24, "RunRemoteUsage"),
        Json::from("Usr 0 00:01:05, Sys 0 00:00:01")
    );
    assert_eq!(attr(24, "SentBytes"), Json::from(11.0));
    assert_eq!(attr(24, "ReceivedBytes"), Json::from(22.0));
    assert_eq!(attr(24, "TotalSentBytes"), Json::from(33.0));
    assert_eq!(attr(24, "TotalReceivedBytes"), Json::from(44.0));
    assert_eq!(attr(24, "CpusUsage"), Json::from(1));
    assert_eq!(attr(25, "Node"), Json::from(0));
    assert_eq!(attr(25, "TerminatedNormally"), Json::from(false));
    assert_eq!(attr(25, "TerminatedBySignal"), Json::from(9));
    // the six forms, FileTransferEventType 1 to 6, with their details
    for (i, ty) in (26..32).zip(1..7) {
        assert_eq!(attr(i, "Type"), Json::from(ty), "event #{i}");
    }
    assert_eq!(attr(26, "Host"), Json::from("<10.0.0.2:9618>"));
    assert_eq!(attr(27, "QueueingDelay"), Json::from(7));
    assert_eq!(attr(27, "Host"), Json::from("<10.0.0.2:9618>"));
    assert_eq!(attr(30, "QueueingDelay"), Json::from(0));
}
