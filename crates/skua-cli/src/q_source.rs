//! Queues and histories read from files instead of the schedd: `skua q
//! -jobads FILE` and `skua history -file FILE` (ads in the long form, with
//! HTCondor's history-file banners, or as `-json` prints them), and `skua
//! q -userlog FILE` (a job event log turned into one ad per job with its
//! last status, as condor_q -userlog shows). Pure: text in, ads out; the
//! time zone comes in as an argument.

use classad::{ClassAd, Expr, Value};

/// An error naming where in the file.
fn at(line: usize, msg: impl std::fmt::Display) -> String {
    format!("line {line}: {msg}")
}

/// Ads from the text of a file of ads: `-json`'s array, or ads in the long
/// form separated by blank lines or by history-file banners (`*** ...`);
/// `#` comment lines are skipped. In file order.
pub fn parse_ads_file(text: &str) -> Result<Vec<ClassAd>, String> {
    if text.trim_start().starts_with('[') {
        return parse_json_ads(text);
    }
    let mut ads = Vec::new();
    let mut record = String::new();
    let mut first_line = 0;
    let flush = |record: &mut String, first: usize, ads: &mut Vec<ClassAd>| {
        if record.trim().is_empty() {
            record.clear();
            return Ok(());
        }
        let ad =
            classad::parse_old_ad(record).map_err(|e| at(first + e.line.max(1) as usize - 1, e))?;
        ads.push(ad);
        record.clear();
        Ok::<(), String>(())
    };
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("***") {
            flush(&mut record, first_line, &mut ads)?;
            continue;
        }
        if trimmed.starts_with('#') {
            continue;
        }
        if record.is_empty() {
            first_line = i + 1;
        }
        record.push_str(line);
        record.push('\n');
    }
    flush(&mut record, first_line, &mut ads)?;
    Ok(ads)
}

/// A JSON value as an expression: HTCondor's `/Expr(...)/` strings are
/// parsed, the rest become literals.
fn json_expr(j: &serde_json::Value) -> Result<Expr, String> {
    use serde_json::Value as J;
    Ok(match j {
        J::Null => Expr::Lit(Value::Undefined),
        J::Bool(b) => Expr::Lit(Value::Bool(*b)),
        J::Number(n) => match n.as_i64() {
            Some(i) => Expr::Lit(Value::Int(i)),
            None => Expr::Lit(Value::Real(n.as_f64().unwrap_or(0.0))),
        },
        J::String(s) => match s.strip_prefix("/Expr(").and_then(|r| r.strip_suffix(")/")) {
            Some(text) => {
                classad::parse_expr(text).map_err(|e| format!("expression {text:?}: {e}"))?
            }
            None => Expr::Lit(Value::from(s.as_str())),
        },
        J::Array(items) => Expr::List(std::sync::Arc::new(
            items.iter().map(json_expr).collect::<Result<Vec<_>, _>>()?,
        )),
        J::Object(m) => {
            let mut ad = ClassAd::new();
            for (k, v) in m {
                ad.insert(k.as_str(), json_expr(v)?);
            }
            Expr::Ad(ad)
        }
    })
}

fn parse_json_ads(text: &str) -> Result<Vec<ClassAd>, String> {
    let parsed: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let serde_json::Value::Array(items) = parsed else {
        return Err("a JSON file of ads is an array of objects".into());
    };
    let mut ads = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let serde_json::Value::Object(m) = item else {
            return Err(format!("element {i} of the JSON array is not an object"));
        };
        let mut ad = ClassAd::new();
        for (k, v) in m {
            ad.insert(
                k.as_str(),
                json_expr(v).map_err(|e| format!("ad {i}: {k}: {e}"))?,
            );
        }
        ads.push(ad);
    }
    Ok(ads)
}

/// An event being read: its number, job, time and body lines.
type PendingEvent = (u32, (i64, i64), i64, Vec<String>);

/// A job as its events leave it.
#[derive(Default)]
struct LogJob {
    cluster: i64,
    proc: i64,
    status: i64,
    qdate: Option<i64>,
    entered: i64,
    start: Option<i64>,
    wall: i64,
    starts: i64,
    host: Option<String>,
    last_host: Option<String>,
    node: Option<String>,
    hold_reason: Option<String>,
    hold_code: Option<i64>,
    hold_subcode: Option<i64>,
    completion: Option<i64>,
    exit_code: Option<i64>,
    remove_reason: Option<String>,
}

impl LogJob {
    fn set_status(&mut self, status: i64, t: i64) {
        self.status = status;
        self.entered = t;
    }

    /// The run in progress, if any, ends at `t`.
    fn end_run(&mut self, t: i64) {
        if let Some(s) = self.start.take() {
            self.wall += (t - s).max(0);
        }
        if let Some(h) = self.host.take() {
            self.last_host = Some(h);
        }
    }

    fn ad(&self) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("ClusterId", self.cluster);
        ad.insert_value("ProcId", self.proc);
        ad.insert_value("JobStatus", self.status);
        ad.insert_value("EnteredCurrentStatus", self.entered);
        if let Some(q) = self.qdate {
            ad.insert_value("QDate", q);
        }
        ad.insert_value("RemoteWallClockTime", self.wall as f64);
        ad.insert_value("NumShadowStarts", self.starts);
        if let Some(t) = self.start {
            ad.insert_value("JobCurrentStartDate", t);
        }
        let mut put = |name: &str, v: &Option<String>| {
            if let Some(v) = v {
                ad.insert_value(name, v.as_str());
            }
        };
        put("RemoteHost", &self.host);
        put("LastRemoteHost", &self.last_host);
        put("DAGNodeName", &self.node);
        put("HoldReason", &self.hold_reason);
        put("RemoveReason", &self.remove_reason);
        if let Some(c) = self.hold_code {
            ad.insert_value("HoldReasonCode", c);
        }
        if let Some(c) = self.hold_subcode {
            ad.insert_value("HoldReasonSubCode", c);
        }
        if let Some(t) = self.completion {
            ad.insert_value("CompletionDate", t);
        }
        if let Some(c) = self.exit_code {
            ad.insert_value("ExitCode", c);
        }
        ad
    }
}

/// An event's header: number, cluster, proc, time and the rest of the
/// line. Dates are HTCondor's ISO form (`YYYY-MM-DD HH:MM:SS`) or the
/// legacy `MM/DD HH:MM:SS` (of `year`), local unless they end in `Z`.
fn parse_header(line: &str, utc_offset: i64, year: i64) -> Option<(u32, i64, i64, i64, &str)> {
    let (num, rest) = line.split_once(' ')?;
    let num: u32 = num.parse().ok()?;
    let rest = rest.strip_prefix('(')?;
    let (id, rest) = rest.split_once(')')?;
    let mut parts = id.split('.');
    let cluster: i64 = parts.next()?.parse().ok()?;
    let proc: i64 = parts.next()?.parse().ok()?;
    let rest = rest.trim_start();
    let (date, rest) = rest.split_once(' ')?;
    let rest = rest.trim_start();
    let (time, text) = rest.split_once(' ').unwrap_or((rest, ""));
    let (time, utc) = match time.strip_suffix('Z') {
        Some(t) => (t, true),
        None => (time, false),
    };
    let (y, m, d) = if date.contains('-') {
        let mut it = date.split('-');
        (
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
        )
    } else {
        let mut it = date.split('/');
        let m: i64 = it.next()?.parse().ok()?;
        let d: i64 = it.next()?.parse().ok()?;
        (year, m, d)
    };
    let mut hms = time.split(':');
    let h: i64 = hms.next()?.parse().ok()?;
    let mi: i64 = hms.next()?.parse().ok()?;
    let s: i64 = hms.next().unwrap_or("0").parse().ok()?;
    let local = classad::time::days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s;
    let t = if utc { local } else { local - utc_offset };
    Some((num, cluster, proc, t, text))
}

/// `Code N Subcode M` in a Held event's body.
fn code_subcode(line: &str) -> Option<(i64, i64)> {
    let rest = line.trim().strip_prefix("Code ")?;
    let (code, rest) = rest.split_once(' ')?;
    let sub = rest.trim().strip_prefix("Subcode ")?;
    Some((code.parse().ok()?, sub.trim().parse().ok()?))
}

/// `(return value N)` of a normal termination.
fn return_value(line: &str) -> Option<i64> {
    let i = line.find("(return value ")?;
    let rest = &line[i + "(return value ".len()..];
    rest.split(')').next()?.trim().parse().ok()
}

/// The jobs of a job event log, one ad each with its last status (in
/// job-id order): `ClusterId`, `ProcId`, `JobStatus`, `QDate` (the submit
/// event), `EnteredCurrentStatus`, `JobCurrentStartDate` and `RemoteHost`
/// while it runs, `LastRemoteHost`, `NumShadowStarts`,
/// `RemoteWallClockTime`, `CompletionDate` and `ExitCode` when it ended,
/// `HoldReason`/`HoldReasonCode`/`HoldReasonSubCode` when held,
/// `DAGNodeName` for DAG nodes. `utc_offset` is the log's local time zone;
/// `year` dates the legacy `MM/DD` form. A line that is neither an event
/// header, a body line nor `...` is an error naming its line.
pub fn ads_from_userlog(text: &str, utc_offset: i64, year: i64) -> Result<Vec<ClassAd>, String> {
    use std::collections::BTreeMap;
    let mut jobs: BTreeMap<(i64, i64), LogJob> = BTreeMap::new();
    let mut current: Option<PendingEvent> = None;
    let finish = |ev: PendingEvent, jobs: &mut BTreeMap<(i64, i64), LogJob>| {
        let (num, key, t, body) = ev;
        let job = jobs.entry(key).or_insert_with(|| LogJob {
            cluster: key.0,
            proc: key.1,
            status: 1,
            entered: t,
            ..LogJob::default()
        });
        let first = body.first().map(|s| s.trim().to_string());
        match num {
            0 => {
                job.qdate = Some(t);
                job.set_status(1, t);
                for l in &body {
                    if let Some(n) = l.trim().strip_prefix("DAG Node:") {
                        job.node = Some(n.trim().to_string());
                    }
                }
            }
            1 => {
                job.starts += 1;
                job.start = Some(t);
                job.host = first.clone().filter(|h| !h.is_empty());
                job.set_status(2, t);
            }
            4 | 24 => {
                job.end_run(t);
                job.set_status(1, t);
            }
            5 => {
                job.end_run(t);
                job.completion = Some(t);
                job.exit_code = body.iter().find_map(|l| return_value(l));
                job.set_status(4, t);
            }
            9 => {
                job.end_run(t);
                job.remove_reason = body.iter().find_map(|l| {
                    l.trim()
                        .strip_prefix("Reason:")
                        .map(|r| r.trim().to_string())
                });
                job.set_status(3, t);
            }
            10 => job.set_status(7, t),
            11 => job.set_status(2, t),
            12 => {
                job.end_run(t);
                job.hold_reason = first.clone();
                if let Some((c, s)) = body.iter().find_map(|l| code_subcode(l)) {
                    job.hold_code = Some(c);
                    job.hold_subcode = Some(s);
                }
                job.set_status(5, t);
            }
            13 => job.set_status(1, t),
            _ => {}
        }
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim() == "..." {
            if let Some(ev) = current.take() {
                finish(ev, &mut jobs);
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if let Some(ev) = current.as_mut() {
            ev.3.push(line.to_string());
            continue;
        }
        let Some((num, c, p, t, text)) = parse_header(line, utc_offset, year) else {
            return Err(at(i + 1, format!("not a job event header: {line:?}")));
        };
        // the host of an Execute event is on the header line
        let mut body = Vec::new();
        if num == 1 {
            if let Some(h) = text.strip_prefix("Job executing on host:") {
                body.push(h.trim().to_string());
            }
        }
        current = Some((num, (c, p), t, body));
    }
    if let Some(ev) = current.take() {
        finish(ev, &mut jobs);
    }
    Ok(jobs.values().map(LogJob::ad).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(ad: &ClassAd, n: &str) -> Option<i64> {
        match ad.lookup(n) {
            Some(Expr::Lit(v)) => v.as_int(),
            _ => None,
        }
    }

    fn string(ad: &ClassAd, n: &str) -> Option<String> {
        match ad.lookup(n) {
            Some(Expr::Lit(v)) => v.as_string(),
            _ => None,
        }
    }

    const LOG: &str = "\
000 (012.000.000) 2025-11-21 12:00:00 Job submitted from host: <127.0.0.1:9618?sock=schedd>
...
000 (012.001.000) 2025-11-21 12:00:00 Job submitted from host: <127.0.0.1:9618?sock=schedd>
    DAG Node: B
...
000 (012.002.000) 2025-11-21 12:00:00 Job submitted from host: <127.0.0.1:9618?sock=schedd>
...
001 (012.000.000) 2025-11-21 12:00:10 Job executing on host: <10.0.0.5:9618?addrs=x>
\tSlotName: slot1@host
...
001 (012.001.000) 2025-11-21 12:00:10 Job executing on host: <10.0.0.6:9618>
...
005 (012.001.000) 2025-11-21 12:01:10 Job terminated.
\t(1) Normal termination (return value 3)
\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage
...
012 (012.002.000) 2025-11-21 12:00:30 Job was held.
\tvia skua hold
\tCode 1 Subcode 0
...
";

    #[test]
    fn a_user_log_becomes_one_ad_per_job_with_its_last_status() {
        let ads = ads_from_userlog(LOG, 3600, 2025).unwrap();
        assert_eq!(ads.len(), 3);
        let t0 = classad::time::days_from_civil(2025, 11, 21) * 86400 + 12 * 3600 - 3600;
        let a = &ads[0];
        assert_eq!((int(a, "ClusterId"), int(a, "ProcId")), (Some(12), Some(0)));
        assert_eq!(int(a, "JobStatus"), Some(2));
        assert_eq!(int(a, "QDate"), Some(t0));
        assert_eq!(int(a, "JobCurrentStartDate"), Some(t0 + 10));
        assert_eq!(
            string(a, "RemoteHost").as_deref(),
            Some("<10.0.0.5:9618?addrs=x>")
        );
        let b = &ads[1];
        assert_eq!(int(b, "JobStatus"), Some(4));
        assert_eq!(int(b, "ExitCode"), Some(3));
        assert_eq!(int(b, "CompletionDate"), Some(t0 + 70));
        assert_eq!(string(b, "DAGNodeName").as_deref(), Some("B"));
        assert_eq!(
            string(b, "LastRemoteHost").as_deref(),
            Some("<10.0.0.6:9618>")
        );
        match b.lookup("RemoteWallClockTime") {
            Some(Expr::Lit(v)) => assert_eq!(v.as_real(), Some(60.0)),
            other => panic!("{other:?}"),
        }
        let c = &ads[2];
        assert_eq!(int(c, "JobStatus"), Some(5));
        assert_eq!(string(c, "HoldReason").as_deref(), Some("via skua hold"));
        assert_eq!(int(c, "HoldReasonCode"), Some(1));
        assert_eq!(int(c, "EnteredCurrentStatus"), Some(t0 + 30));
    }

    #[test]
    fn legacy_dates_and_utc_dates() {
        let log = "000 (001.000.000) 11/21 12:00:00 Job submitted from host: <h>\n...\n\
                   000 (002.000.000) 2025-11-21 12:00:00Z Job submitted from host: <h>\n...\n";
        let ads = ads_from_userlog(log, 7200, 2025).unwrap();
        let noon = classad::time::days_from_civil(2025, 11, 21) * 86400 + 12 * 3600;
        assert_eq!(int(&ads[0], "QDate"), Some(noon - 7200));
        assert_eq!(int(&ads[1], "QDate"), Some(noon));
    }

    #[test]
    fn a_file_that_is_no_user_log_is_refused_naming_the_line() {
        let e = ads_from_userlog(
            "000 (001.000.000) 2025-11-21 12:00:00 x\n...\nhello\n",
            0,
            2025,
        )
        .unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
    }

    #[test]
    fn ads_files_in_the_long_form_with_history_banners_and_as_json() {
        let text = "ClusterId = 1\nProcId = 0\nOwner = \"ann\"\n\
                    *** ProcId = 0 ClusterId = 1 Owner = \"ann\" CompletionDate = 5\n\
                    # a comment\nClusterId = 2\nProcId = 0\n\nClusterId = 3\nProcId = 1\n";
        let ads = parse_ads_file(text).unwrap();
        assert_eq!(ads.len(), 3);
        assert_eq!(string(&ads[0], "Owner").as_deref(), Some("ann"));
        assert_eq!(int(&ads[2], "ProcId"), Some(1));
        let json =
            r#"[ {"ClusterId": 4, "Owner": "bob", "Req": "\/Expr(Memory > 10)\/", "N": null} ]"#;
        let ads = parse_ads_file(json).unwrap();
        assert_eq!(int(&ads[0], "ClusterId"), Some(4));
        assert!(matches!(ads[0].lookup("Req"), Some(Expr::Binary(..))));
        let e = parse_ads_file("ClusterId = 1\nthis is not an ad\n\nX = (\n").unwrap_err();
        assert!(e.starts_with("line 4:"), "{e}");
    }
}
