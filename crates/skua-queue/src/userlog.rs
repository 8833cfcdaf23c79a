//! The job event log ("user log"): HTCondor's text format, exactly, so that
//! HTCondor's own readers (`condor_wait`, DAGMan, the Python
//! `JobEventLog`) read Skua's logs.
//!
//! An event is a header line `NNN (CCC.PPP.SSS) DATE TIME <text>` (event
//! number, cluster, proc and subproc zero-padded to at least three digits),
//! body lines starting with a TAB, and a line `...`. Free text (reasons,
//! hosts) is kept on one line: newlines become `|` and carriage returns
//! spaces, as HTCondor does. Pure: the time and the time zone are inputs.

use std::fmt::Write as _;

use classad::time::{broken_down, TzFn};

use crate::JobId;

/// CPU time of a process, in whole seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rusage {
    pub user_secs: i64,
    pub sys_secs: i64,
}

/// How a process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Termination {
    Normal {
        return_value: i64,
    },
    Signal {
        signal: i64,
        core_file: Option<String>,
    },
}

/// One row of the resource table of a Terminated event (`Cpus`, `Disk`
/// in KB, `Memory` in MB, ...). Values with a fractional part print with
/// two decimals.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceUsage {
    pub name: String,
    pub usage: Option<f64>,
    pub request: Option<f64>,
    pub allocated: Option<f64>,
}

/// The body of a Terminated event.
#[derive(Clone, Debug, PartialEq)]
pub struct ExitStatus {
    pub termination: Termination,
    pub run_remote: Rusage,
    pub run_local: Rusage,
    pub total_remote: Rusage,
    pub total_local: Rusage,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    pub total_sent_bytes: u64,
    pub total_received_bytes: u64,
    pub resources: Vec<ResourceUsage>,
}

/// The events Skua writes (HTCondor's event numbers in brackets).
#[derive(Clone, Debug, PartialEq)]
pub enum UserLogEvent {
    /// (000) `host` is the submitting schedd's address, `<127.0.0.1:port>`.
    Submit { host: String },
    /// (001)
    Execute {
        host: String,
        slot_name: Option<String>,
    },
    /// (003)
    Checkpointed {
        run_remote: Rusage,
        run_local: Rusage,
        sent_bytes: u64,
    },
    /// (004) `requeued`: the job exited and `on_exit_remove` put it back
    /// in the queue ("terminated and requeued").
    Evicted {
        checkpointed: bool,
        requeued: Option<Termination>,
        run_remote: Rusage,
        run_local: Rusage,
        sent_bytes: u64,
        received_bytes: u64,
        reason: Option<String>,
        code: i64,
        subcode: i64,
    },
    /// (005)
    Terminated(Box<ExitStatus>),
    /// (006) sizes in KB, memory usage in MB.
    ImageSize {
        image_size_kb: i64,
        memory_usage_mb: Option<i64>,
        resident_set_size_kb: Option<i64>,
        proportional_set_size_kb: Option<i64>,
    },
    /// (008) a line of the job's own (`skua chirp ulog`), at most
    /// [`GENERIC_INFO_LIMIT`] bytes kept.
    Generic { info: String },
    /// (009)
    Aborted { reason: Option<String> },
    /// (010)
    Suspended { n: i64 },
    /// (011)
    Unsuspended,
    /// (012)
    Held {
        reason: String,
        code: i64,
        subcode: i64,
    },
    /// (013)
    Released { reason: String },
    /// (022) the schedd lost contact with the run's startd and tries to
    /// reconnect (`startd_name` is the slot's name, `startd_addr` the
    /// startd's sinful string).
    Disconnected {
        reason: String,
        startd_name: String,
        startd_addr: String,
    },
    /// (023) the schedd reached the run again.
    Reconnected {
        startd_name: String,
        startd_addr: String,
        starter_addr: String,
    },
    /// (024) reconnection failed: the job is rescheduled.
    ReconnectFailed { reason: String, startd_name: String },
    /// (040) a step of a file transfer (Skua writes the output pair
    /// around each checkpoint upload it stores).
    FileTransfer(FileTransfer),
    /// (014) node `node` of a parallel job started; `host` is the startd's
    /// sinful string. The header's subproc field is the node.
    NodeExecuting {
        node: u32,
        host: String,
        slot_name: Option<String>,
    },
    /// (015) node `node` of a parallel job exited by itself: the body of a
    /// Terminated event, its byte lines worded `... By Node`. The header's
    /// subproc field is the node.
    NodeTerminated { node: u32, status: Box<ExitStatus> },
    /// (040) a step of a file transfer with its detail lines, as the
    /// transfer queue writes them: the seconds the transfer waited in the
    /// queue (a `Started` step after a `Queued` one) and the host the
    /// input goes to.
    Transfer {
        step: FileTransfer,
        seconds_in_queue: Option<i64>,
        host: Option<String>,
    },
}

/// Which step of a file transfer an event 040 reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileTransfer {
    /// `Entered queue to transfer input files`.
    InputQueued,
    /// `Started transferring input files`.
    InputStarted,
    /// `Finished transferring input files`.
    InputFinished,
    /// `Entered queue to transfer output files`.
    OutputQueued,
    /// `Started transferring output files`.
    OutputStarted,
    /// `Finished transferring output files`.
    OutputFinished,
}

impl FileTransfer {
    /// The event's text.
    pub fn text(self) -> &'static str {
        match self {
            FileTransfer::InputQueued => "Entered queue to transfer input files",
            FileTransfer::InputStarted => "Started transferring input files",
            FileTransfer::InputFinished => "Finished transferring input files",
            FileTransfer::OutputQueued => "Entered queue to transfer output files",
            FileTransfer::OutputStarted => "Started transferring output files",
            FileTransfer::OutputFinished => "Finished transferring output files",
        }
    }
}

impl UserLogEvent {
    /// HTCondor's event number.
    pub fn number(&self) -> u32 {
        match self {
            UserLogEvent::Submit { .. } => 0,
            UserLogEvent::Execute { .. } => 1,
            UserLogEvent::Checkpointed { .. } => 3,
            UserLogEvent::Evicted { .. } => 4,
            UserLogEvent::Terminated(_) => 5,
            UserLogEvent::ImageSize { .. } => 6,
            UserLogEvent::Generic { .. } => 8,
            UserLogEvent::Aborted { .. } => 9,
            UserLogEvent::Suspended { .. } => 10,
            UserLogEvent::Unsuspended => 11,
            UserLogEvent::Held { .. } => 12,
            UserLogEvent::Released { .. } => 13,
            UserLogEvent::Disconnected { .. } => 22,
            UserLogEvent::Reconnected { .. } => 23,
            UserLogEvent::ReconnectFailed { .. } => 24,
            UserLogEvent::FileTransfer(_) | UserLogEvent::Transfer { .. } => 40,
            UserLogEvent::NodeExecuting { .. } => 14,
            UserLogEvent::NodeTerminated { .. } => 15,
        }
    }

    /// The header's subproc field: the node of a parallel job's node
    /// events, 0 otherwise.
    pub fn subproc(&self) -> u32 {
        match self {
            UserLogEvent::NodeExecuting { node, .. }
            | UserLogEvent::NodeTerminated { node, .. } => *node,
            _ => 0,
        }
    }

    /// Event 014 for node `node` of a parallel job, started on the startd
    /// at `host` (its sinful string), in slot `slot_name` when known.
    /// HTCondor writes every node event of a parallel job under the job's
    /// proc 0 (`format_event` with `JobId::new(cluster, 0)`), whichever
    /// proc the node belongs to; the node goes in the subproc field.
    pub fn node_executing(node: u32, host: &str, slot_name: Option<&str>) -> UserLogEvent {
        UserLogEvent::NodeExecuting {
            node,
            host: host.to_string(),
            slot_name: slot_name.map(str::to_string),
        }
    }

    /// Event 015 for node `node` of a parallel job that exited by itself
    /// (not for the nodes killed when the job ends), written like 014 under
    /// the job's proc 0. HTCondor reports the bytes from the job's side:
    /// what the shadow sent is the node's received bytes.
    pub fn node_terminated(node: u32, status: ExitStatus) -> UserLogEvent {
        UserLogEvent::NodeTerminated {
            node,
            status: Box::new(status),
        }
    }
}

/// HTCondor's `DEFAULT_USERLOG_FORMAT_OPTIONS` for the text format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatOptions {
    /// `ISO_DATE` (the default): `YYYY-MM-DD HH:MM:SS`; otherwise the
    /// legacy `MM/DD HH:MM:SS`.
    pub iso_date: bool,
    /// `UTC`: times in UTC with a `Z` suffix instead of local time.
    pub utc: bool,
}

impl Default for FormatOptions {
    fn default() -> FormatOptions {
        FormatOptions {
            iso_date: true,
            utc: false,
        }
    }
}

/// One line of free text: newlines become `|`, carriage returns spaces.
fn line(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' => '|',
            '\r' => ' ',
            c => c,
        })
        .collect()
}

fn rusage(out: &mut String, r: Rusage) {
    let split = |s: i64| {
        let s = s.max(0);
        (s / 86400, (s % 86400) / 3600, (s % 3600) / 60, s % 60)
    };
    let (ud, uh, um, us) = split(r.user_secs);
    let (sd, sh, sm, ss) = split(r.sys_secs);
    let _ = write!(
        out,
        "\tUsr {ud} {uh:02}:{um:02}:{us:02}, Sys {sd} {sh:02}:{sm:02}:{ss:02}"
    );
}

fn termination_lines(out: &mut String, t: &Termination, normal_code: u8) {
    match t {
        Termination::Normal { return_value } => {
            let _ = writeln!(
                out,
                "\t({normal_code}) Normal termination (return value {return_value})"
            );
        }
        Termination::Signal { signal, core_file } => {
            let _ = writeln!(out, "\t(0) Abnormal termination (signal {signal})");
            match core_file {
                Some(f) => {
                    let _ = writeln!(out, "\t(1) Corefile in: {}", line(f));
                }
                None => out.push_str("\t(0) No core file\n"),
            }
        }
    }
}

/// A resource table value: two decimals when it has a fractional part.
fn res_value(v: Option<f64>) -> (String, bool) {
    match v {
        None => (String::new(), false),
        Some(x) if x.fract() > 0.0 => (format!("{x:.2}"), true),
        Some(x) => (format!("{}", x.trunc() as i64), false),
    }
}

fn resource_table(out: &mut String, rows: &[ResourceUsage]) {
    if rows.is_empty() {
        return;
    }
    let mut rows: Vec<(&str, [(String, bool); 3])> = rows
        .iter()
        .filter(|r| !r.name.is_empty())
        .map(|r| {
            (
                r.name.as_str(),
                [
                    res_value(r.usage),
                    res_value(r.request),
                    res_value(r.allocated),
                ],
            )
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    rows.sort_by(|a, b| {
        a.0.bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.0.bytes().map(|c| c.to_ascii_lowercase()))
    });
    // Columns with a fractional value pad their integers to line up.
    let mut frac = [false; 3];
    for (_, cols) in &rows {
        for (k, (_, f)) in cols.iter().enumerate() {
            frac[k] |= *f;
        }
    }
    let bare_int = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut res_w = "Memory (MB)".len() + 1;
    let (mut use_w, mut req_w, mut alloc_w) = (8, 8, 0);
    let mut cells: Vec<(String, [String; 3])> = Vec::new();
    for (name, cols) in rows {
        let mut c: [String; 3] = [cols[0].0.clone(), cols[1].0.clone(), cols[2].0.clone()];
        for k in 0..3 {
            if frac[k] && bare_int(&c[k]) {
                c[k].push_str("   ");
            }
        }
        res_w = res_w.max(name.len());
        use_w = use_w.max(c[0].len());
        req_w = req_w.max(c[1].len());
        alloc_w = alloc_w.max(c[2].len());
        let label = match name {
            "Memory" => "Memory (MB)".to_string(),
            "Disk" => "Disk (KB)".to_string(),
            "Gpus" => "Gpus (Average)".to_string(),
            "GpusMemory" => "GpusMemory (MB)".to_string(),
            "TimeExecute" | "TimeSlotBusy" => format!("{name} (s)"),
            other => other.to_string(),
        };
        cells.push((label, c));
    }
    let alloc_col = alloc_w.max(9);
    let _ = writeln!(
        out,
        "\tPartitionable Resources : {:>use_w$} {:>req_w$} {:>alloc_col$} ",
        "Usage",
        "Request",
        if alloc_w > 0 { "Allocated" } else { "" }
    );
    let label_w = res_w + 8;
    for (label, c) in cells {
        let _ = writeln!(
            out,
            "\t   {label:<label_w$} : {:>use_w$} {:>req_w$} {:>alloc_col$} ",
            c[0], c[1], c[2]
        );
    }
}

/// The text of one event, header to the closing `...` line. `time` is the
/// event time (Unix seconds); `tz` gives the local UTC offset for a time
/// (as in `classad::EvalOptions`), used unless `opts.utc`.
pub fn format_event(
    event: &UserLogEvent,
    id: JobId,
    time: i64,
    tz: TzFn,
    opts: &FormatOptions,
) -> String {
    let mut out = String::with_capacity(256);
    let offset = if opts.utc { 0 } else { tz(time) };
    let tm = broken_down(time, offset);
    let _ = write!(
        out,
        "{:03} ({:03}.{:03}.{:03}) ",
        event.number(),
        id.cluster,
        id.proc,
        event.subproc()
    );
    if opts.iso_date {
        let _ = write!(
            out,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            tm.year,
            tm.mon + 1,
            tm.mday,
            tm.hour,
            tm.min,
            tm.sec
        );
    } else {
        let _ = write!(
            out,
            "{:02}/{:02} {:02}:{:02}:{:02}",
            tm.mon + 1,
            tm.mday,
            tm.hour,
            tm.min,
            tm.sec
        );
    }
    if opts.utc {
        out.push('Z');
    }
    out.push(' ');
    body(&mut out, event);
    out.push_str("...\n");
    out
}

fn body(out: &mut String, event: &UserLogEvent) {
    match event {
        UserLogEvent::Submit { host } => {
            let _ = writeln!(out, "Job submitted from host: {}", line(host));
        }
        UserLogEvent::Execute { host, slot_name } => {
            let _ = writeln!(out, "Job executing on host: {}", line(host));
            if let Some(s) = slot_name.as_deref().filter(|s| !s.is_empty()) {
                let _ = writeln!(out, "\tSlotName: {}", line(s));
            }
        }
        UserLogEvent::Checkpointed {
            run_remote,
            run_local,
            sent_bytes,
        } => {
            out.push_str("Job was checkpointed.\n");
            rusage(out, *run_remote);
            out.push_str("  -  Run Remote Usage\n");
            rusage(out, *run_local);
            out.push_str("  -  Run Local Usage\n");
            let _ = writeln!(
                out,
                "\t{sent_bytes}  -  Run Bytes Sent By Job For Checkpoint"
            );
        }
        UserLogEvent::Evicted {
            checkpointed,
            requeued,
            run_remote,
            run_local,
            sent_bytes,
            received_bytes,
            reason,
            code,
            subcode,
        } => {
            if *code != 0 {
                let _ = write!(out, "Job was evicted. Code {code} Subcode {subcode}\n\t");
            } else {
                out.push_str("Job was evicted.\n\t");
            }
            if requeued.is_some() {
                out.push_str("(0) Job terminated and was requeued\n\t");
            } else if *checkpointed {
                out.push_str("(1) Job was checkpointed.\n\t");
            } else {
                out.push_str("(0) CPU times\n\t");
            }
            rusage(out, *run_remote);
            out.push_str("  -  Run Remote Usage\n\t");
            rusage(out, *run_local);
            out.push_str("  -  Run Local Usage\n");
            let _ = writeln!(out, "\t{sent_bytes}  -  Run Bytes Sent By Job");
            let _ = writeln!(out, "\t{received_bytes}  -  Run Bytes Received By Job");
            if let Some(t) = requeued {
                termination_lines(out, t, 1);
            }
            if let Some(r) = reason.as_deref().filter(|r| !r.is_empty()) {
                if requeued.is_some() {
                    let _ = writeln!(out, "\t{}", line(r));
                } else {
                    let _ = writeln!(out, "\tReason: {}", line(r));
                }
            }
        }
        UserLogEvent::Terminated(t) => {
            out.push_str("Job terminated.\n");
            terminated_body(out, t, "Job");
        }
        UserLogEvent::ImageSize {
            image_size_kb,
            memory_usage_mb,
            resident_set_size_kb,
            proportional_set_size_kb,
        } => {
            let _ = writeln!(out, "Image size of job updated: {image_size_kb}");
            if let Some(m) = memory_usage_mb {
                let _ = writeln!(out, "\t{m}  -  MemoryUsage of job (MB)");
            }
            if let Some(r) = resident_set_size_kb {
                let _ = writeln!(out, "\t{r}  -  ResidentSetSize of job (KB)");
            }
            if let Some(p) = proportional_set_size_kb {
                let _ = writeln!(out, "\t{p}  -  ProportionalSetSize of job (KB)");
            }
        }
        UserLogEvent::Aborted { reason } => {
            out.push_str("Job was aborted.\n");
            if let Some(r) = reason.as_deref().filter(|r| !r.is_empty()) {
                let _ = writeln!(out, "\t{}", line(r));
            }
        }
        UserLogEvent::Suspended { n } => {
            let _ = writeln!(
                out,
                "Job was suspended.\n\tNumber of processes actually suspended: {n}"
            );
        }
        UserLogEvent::Unsuspended => out.push_str("Job was unsuspended.\n"),
        UserLogEvent::Held {
            reason,
            code,
            subcode,
        } => {
            out.push_str("Job was held.\n");
            if reason.is_empty() {
                out.push_str("\tReason unspecified\n");
            } else {
                let _ = writeln!(out, "\t{}", line(reason));
            }
            let _ = writeln!(out, "\tCode {code} Subcode {subcode}");
        }
        UserLogEvent::Released { reason } => {
            out.push_str("Job was released.\n");
            if !reason.is_empty() {
                let _ = writeln!(out, "\t{}", line(reason));
            }
        }
        // HTCondor indents the bodies of these three with four spaces
        UserLogEvent::Disconnected {
            reason,
            startd_name,
            startd_addr,
        } => {
            out.push_str("Job disconnected, attempting to reconnect\n");
            let _ = writeln!(out, "    {}", line(reason));
            let _ = writeln!(
                out,
                "    Trying to reconnect to {} {}",
                line(startd_name),
                line(startd_addr)
            );
        }
        UserLogEvent::Reconnected {
            startd_name,
            startd_addr,
            starter_addr,
        } => {
            let _ = writeln!(out, "Job reconnected to {}", line(startd_name));
            let _ = writeln!(out, "    startd address: {}", line(startd_addr));
            let _ = writeln!(out, "    starter address: {}", line(starter_addr));
        }
        UserLogEvent::ReconnectFailed {
            reason,
            startd_name,
        } => {
            out.push_str("Job reconnection failed\n");
            let _ = writeln!(out, "    {}", line(reason));
            let _ = writeln!(
                out,
                "    Can not reconnect to {}, rescheduling job",
                line(startd_name)
            );
        }
        UserLogEvent::FileTransfer(step) => {
            let _ = writeln!(out, "{}", step.text());
        }
        UserLogEvent::Generic { info } => {
            let _ = writeln!(out, "{}", line(generic_info(info)));
        }
        UserLogEvent::NodeExecuting {
            node,
            host,
            slot_name,
        } => {
            let _ = writeln!(out, "Node {node} executing on host: {}", line(host));
            if let Some(s) = slot_name.as_deref().filter(|s| !s.is_empty()) {
                let _ = writeln!(out, "\tSlotName: {}", line(s));
            }
        }
        UserLogEvent::NodeTerminated { node, status } => {
            let _ = writeln!(out, "Node {node} terminated.");
            terminated_body(out, status, "Node");
        }
        UserLogEvent::Transfer {
            step,
            seconds_in_queue,
            host,
        } => {
            let _ = writeln!(out, "{}", step.text());
            if let Some(n) = seconds_in_queue {
                let _ = writeln!(out, "\tSeconds spent in queue: {n}");
            }
            if let Some(h) = host.as_deref().filter(|h| !h.is_empty()) {
                let _ = writeln!(out, "\tTransferring to host: {}", line(h));
            }
        }
    }
}

/// The most bytes of a generic event's text kept (HTCondor's).
pub const GENERIC_INFO_LIMIT: usize = 128;

/// `info` cut to [`GENERIC_INFO_LIMIT`] bytes (at a character boundary).
fn generic_info(info: &str) -> &str {
    let mut end = info.len().min(GENERIC_INFO_LIMIT);
    while !info.is_char_boundary(end) {
        end -= 1;
    }
    &info[..end]
}

/// The body shared by events 005 and 015: how it ended, the four usage
/// lines, the four byte lines (`... By Job` or `... By Node`) and the
/// resource table.
fn terminated_body(out: &mut String, t: &ExitStatus, who: &str) {
    termination_lines(out, &t.termination, 1);
    out.push('\t');
    rusage(out, t.run_remote);
    out.push_str("  -  Run Remote Usage\n\t");
    rusage(out, t.run_local);
    out.push_str("  -  Run Local Usage\n\t");
    rusage(out, t.total_remote);
    out.push_str("  -  Total Remote Usage\n\t");
    rusage(out, t.total_local);
    out.push_str("  -  Total Local Usage\n");
    let _ = writeln!(out, "\t{}  -  Run Bytes Sent By {who}", t.sent_bytes);
    let _ = writeln!(
        out,
        "\t{}  -  Run Bytes Received By {who}",
        t.received_bytes
    );
    let _ = writeln!(
        out,
        "\t{}  -  Total Bytes Sent By {who}",
        t.total_sent_bytes
    );
    let _ = writeln!(
        out,
        "\t{}  -  Total Bytes Received By {who}",
        t.total_received_bytes
    );
    resource_table(out, &t.resources);
}

#[cfg(test)]
mod tests {
    use super::*;
    use classad::time::utc_zone;

    const T: i64 = 1_795_262_400; // 2026-11-21 12:00:00 UTC

    fn fmt(e: &UserLogEvent) -> String {
        format_event(e, JobId::new(1, 0), T, utc_zone, &FormatOptions::default())
    }

    #[test]
    fn a_generic_event_keeps_128_bytes_on_one_line() {
        let e = UserLogEvent::Generic {
            info: "stage 2\ndone".into(),
        };
        assert_eq!(
            fmt(&e),
            "008 (001.000.000) 2026-11-21 12:00:00 stage 2|done\n...\n"
        );
        let long = "é".repeat(100);
        let text = fmt(&UserLogEvent::Generic { info: long });
        let body = text.lines().next().unwrap().splitn(5, ' ').nth(4).unwrap();
        assert_eq!(body.len(), 128);
    }

    #[test]
    fn transfer_steps_carry_their_detail_lines() {
        let e = UserLogEvent::Transfer {
            step: FileTransfer::InputStarted,
            seconds_in_queue: Some(12),
            host: Some("<10.0.0.2:9618>".into()),
        };
        assert_eq!(
            fmt(&e),
            "040 (001.000.000) 2026-11-21 12:00:00 Started transferring input files\n\
             \tSeconds spent in queue: 12\n\tTransferring to host: <10.0.0.2:9618>\n...\n"
        );
        let e = UserLogEvent::Transfer {
            step: FileTransfer::OutputQueued,
            seconds_in_queue: None,
            host: None,
        };
        assert_eq!(
            fmt(&e),
            "040 (001.000.000) 2026-11-21 12:00:00 Entered queue to transfer output files\n...\n"
        );
    }

    #[test]
    fn header_and_time_formats() {
        let e = UserLogEvent::Submit {
            host: "<127.0.0.1:9618>".into(),
        };
        assert_eq!(
            format_event(&e, JobId::new(12, 3), T, utc_zone, &FormatOptions::default()),
            "000 (012.003.000) 2026-11-21 12:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        );
        let east: TzFn = |_| 3600;
        let s = format_event(
            &e,
            JobId::new(1234, 5678),
            T,
            east,
            &FormatOptions::default(),
        );
        assert!(
            s.starts_with("000 (1234.5678.000) 2026-11-21 13:00:00 Job"),
            "{s}"
        );
        let utc = FormatOptions {
            iso_date: true,
            utc: true,
        };
        let s = format_event(&e, JobId::new(1, 0), T, east, &utc);
        assert!(
            s.starts_with("000 (001.000.000) 2026-11-21 12:00:00Z Job"),
            "{s}"
        );
        let legacy = FormatOptions {
            iso_date: false,
            utc: false,
        };
        let s = format_event(&e, JobId::new(1, 0), T, utc_zone, &legacy);
        assert!(s.starts_with("000 (001.000.000) 11/21 12:00:00 Job"), "{s}");
    }

    #[test]
    fn node_events_of_a_parallel_job() {
        let id = JobId::new(42, 0);
        let ex = UserLogEvent::node_executing(3, "<10.0.0.3:9618>", Some("slot1@exec3"));
        assert_eq!(
            format_event(&ex, id, T, utc_zone, &FormatOptions::default()),
            "014 (042.000.003) 2026-11-21 12:00:00 Node 3 executing on host: <10.0.0.3:9618>\n\
             \tSlotName: slot1@exec3\n...\n"
        );
        let bare = UserLogEvent::node_executing(0, "<10.0.0.3:9618>", None);
        assert_eq!(
            format_event(&bare, id, T, utc_zone, &FormatOptions::default()),
            "014 (042.000.000) 2026-11-21 12:00:00 Node 0 executing on host: <10.0.0.3:9618>\n...\n"
        );
        let status = ExitStatus {
            termination: Termination::Signal {
                signal: 15,
                core_file: None,
            },
            run_remote: Rusage {
                user_secs: 1,
                sys_secs: 2,
            },
            run_local: Rusage::default(),
            total_remote: Rusage::default(),
            total_local: Rusage::default(),
            sent_bytes: 5,
            received_bytes: 6,
            total_sent_bytes: 7,
            total_received_bytes: 8,
            resources: vec![],
        };
        let t = UserLogEvent::node_terminated(12, status);
        assert_eq!(t.number(), 15);
        assert_eq!(
            format_event(&t, JobId::new(7, 1), T, utc_zone, &FormatOptions::default()),
            "015 (007.001.012) 2026-11-21 12:00:00 Node 12 terminated.\n\
             \t(0) Abnormal termination (signal 15)\n\
             \t(0) No core file\n\
             \t\tUsr 0 00:00:01, Sys 0 00:00:02  -  Run Remote Usage\n\
             \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n\
             \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage\n\
             \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n\
             \t5  -  Run Bytes Sent By Node\n\
             \t6  -  Run Bytes Received By Node\n\
             \t7  -  Total Bytes Sent By Node\n\
             \t8  -  Total Bytes Received By Node\n\
             ...\n"
        );
        // Other events keep subproc 0.
        assert_eq!(UserLogEvent::Unsuspended.subproc(), 0);
    }

    #[test]
    fn reconnect_events() {
        let d = UserLogEvent::Disconnected {
            reason: "Socket between submit and execute hosts closed unexpectedly".into(),
            startd_name: "slot1@exec".into(),
            startd_addr: "<10.0.0.2:9618>".into(),
        };
        assert_eq!(
            fmt(&d),
            "022 (001.000.000) 2026-11-21 12:00:00 Job disconnected, attempting to reconnect\n    \
             Socket between submit and execute hosts closed unexpectedly\n    \
             Trying to reconnect to slot1@exec <10.0.0.2:9618>\n...\n"
        );
        let r = UserLogEvent::Reconnected {
            startd_name: "slot1@exec".into(),
            startd_addr: "<10.0.0.2:9618>".into(),
            starter_addr: "<10.0.0.2:9618>".into(),
        };
        assert_eq!(
            fmt(&r),
            "023 (001.000.000) 2026-11-21 12:00:00 Job reconnected to slot1@exec\n    \
             startd address: <10.0.0.2:9618>\n    starter address: <10.0.0.2:9618>\n...\n"
        );
        let f = UserLogEvent::ReconnectFailed {
            reason: "Claim not found at execution machine".into(),
            startd_name: "slot1@exec".into(),
        };
        assert_eq!(
            fmt(&f),
            "024 (001.000.000) 2026-11-21 12:00:00 Job reconnection failed\n    \
             Claim not found at execution machine\n    \
             Can not reconnect to slot1@exec, rescheduling job\n...\n"
        );
    }

    #[test]
    fn bodies() {
        let held = UserLogEvent::Held {
            reason: "via skua hold (by user alice)\nsecond line".into(),
            code: 1,
            subcode: 0,
        };
        assert_eq!(
            fmt(&held),
            "012 (001.000.000) 2026-11-21 12:00:00 Job was held.\n\tvia skua hold (by user alice)|second line\n\tCode 1 Subcode 0\n...\n"
        );
        let unspecified = UserLogEvent::Held {
            reason: String::new(),
            code: 3,
            subcode: 7,
        };
        assert!(
            fmt(&unspecified).contains("Job was held.\n\tReason unspecified\n\tCode 3 Subcode 7\n")
        );
        assert!(fmt(&UserLogEvent::Released { reason: "r".into() })
            .ends_with("Job was released.\n\tr\n...\n"));
        assert!(fmt(&UserLogEvent::Aborted { reason: None }).ends_with("Job was aborted.\n...\n"));
        assert!(fmt(&UserLogEvent::Suspended { n: 2 })
            .ends_with("Job was suspended.\n\tNumber of processes actually suspended: 2\n...\n"));
        let t = UserLogEvent::Terminated(Box::new(ExitStatus {
            termination: Termination::Normal { return_value: 0 },
            run_remote: Rusage {
                user_secs: 90061,
                sys_secs: 5,
            },
            run_local: Rusage::default(),
            total_remote: Rusage::default(),
            total_local: Rusage::default(),
            sent_bytes: 23,
            received_bytes: 113,
            total_sent_bytes: 23,
            total_received_bytes: 113,
            resources: vec![
                ResourceUsage {
                    name: "Memory".into(),
                    usage: Some(0.0),
                    request: Some(98.0),
                    allocated: Some(2001.0),
                },
                ResourceUsage {
                    name: "Cpus".into(),
                    usage: None,
                    request: Some(1.0),
                    allocated: Some(1.0),
                },
                ResourceUsage {
                    name: "Disk".into(),
                    usage: Some(100000.0),
                    request: Some(100000.0),
                    allocated: Some(2033496.0),
                },
            ],
        }));
        assert_eq!(
            fmt(&t),
            "005 (001.000.000) 2026-11-21 12:00:00 Job terminated.\n\
             \t(1) Normal termination (return value 0)\n\
             \t\tUsr 1 01:01:01, Sys 0 00:00:05  -  Run Remote Usage\n\
             \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n\
             \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage\n\
             \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n\
             \t23  -  Run Bytes Sent By Job\n\
             \t113  -  Run Bytes Received By Job\n\
             \t23  -  Total Bytes Sent By Job\n\
             \t113  -  Total Bytes Received By Job\n\
             \tPartitionable Resources :    Usage  Request Allocated \n\
             \t   Cpus                 :                 1         1 \n\
             \t   Disk (KB)            :   100000   100000   2033496 \n\
             \t   Memory (MB)          :        0       98      2001 \n\
             ...\n"
        );
        let sig = UserLogEvent::Evicted {
            checkpointed: false,
            requeued: Some(Termination::Signal {
                signal: 9,
                core_file: None,
            }),
            run_remote: Rusage::default(),
            run_local: Rusage::default(),
            sent_bytes: 0,
            received_bytes: 0,
            reason: None,
            code: 0,
            subcode: 0,
        };
        assert!(fmt(&sig).contains(
            "Job was evicted.\n\t(0) Job terminated and was requeued\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
        ));
        assert!(fmt(&sig).ends_with(
            "\t0  -  Run Bytes Received By Job\n\t(0) Abnormal termination (signal 9)\n\t(0) No core file\n...\n"
        ));
    }

    #[test]
    fn fractional_resources_line_up() {
        let mut out = String::new();
        resource_table(
            &mut out,
            &[ResourceUsage {
                name: "Cpus".into(),
                usage: Some(0.5),
                request: Some(1.0),
                allocated: Some(1.0),
            }],
        );
        assert_eq!(
            out,
            "\tPartitionable Resources :    Usage  Request Allocated \n\t   Cpus                 :     0.50        1         1 \n"
        );
    }
}
