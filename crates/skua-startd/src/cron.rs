//! STARTD_CRON: scripts run periodically whose output (`Name = value`
//! lines) becomes attributes of every slot ad.
//!
//! Knobs (HTCondor's): `STARTD_CRON_JOBLIST` (names),
//! `STARTD_CRON_<name>_EXECUTABLE`, `_ARGS`, `_PERIOD` (seconds, or with an
//! `s`/`m`/`h` suffix), `_PREFIX` (put before each attribute name) and
//! `_MODE` (`Periodic`, the default, or `OneShot`). A script runs in a task
//! of its own ([`spawn`]); its output reaches the loop as an [`Event::Cron`].

use std::collections::BTreeMap;
use std::time::Duration;

use classad::Expr;
use skua_daemon::Clock;
use tokio::sync::mpsc;

use crate::event::Event;

/// One configured cron job.
#[derive(Clone, Debug, PartialEq)]
pub struct CronJob {
    pub name: String,
    pub executable: String,
    pub args: Vec<String>,
    pub period: Duration,
    pub prefix: String,
    pub one_shot: bool,
}

/// Parses a period: `60`, `60s`, `5m`, `1h`.
pub fn parse_period(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        's' | 'S' => (&t[..t.len() - 1], 1),
        'm' | 'M' => (&t[..t.len() - 1], 60),
        'h' | 'H' => (&t[..t.len() - 1], 3600),
        _ => (t, 1),
    };
    let n: u64 = num.trim().parse().ok()?;
    Some(Duration::from_secs(n * mult))
}

/// Reads the cron jobs through `knob`. A job without an executable or
/// with a bad period is an error naming the knob.
pub fn jobs(knob: &dyn Fn(&str) -> Option<String>) -> Result<Vec<CronJob>, String> {
    let Some(list) = knob("STARTD_CRON_JOBLIST") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for name in list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
    {
        let k = |suffix: &str| knob(&format!("STARTD_CRON_{name}_{suffix}"));
        let executable = k("EXECUTABLE")
            .filter(|e| !e.trim().is_empty())
            .ok_or_else(|| format!("STARTD_CRON_{name}_EXECUTABLE is not defined"))?;
        let mode = k("MODE").unwrap_or_else(|| "Periodic".into());
        let one_shot = mode.trim().eq_ignore_ascii_case("oneshot");
        let period = match k("PERIOD") {
            Some(p) => parse_period(&p)
                .ok_or_else(|| format!("STARTD_CRON_{name}_PERIOD = {p}: not a period"))?,
            None if one_shot => Duration::ZERO,
            None => return Err(format!("STARTD_CRON_{name}_PERIOD is not defined")),
        };
        out.push(CronJob {
            name: name.to_string(),
            executable: executable.trim().to_string(),
            args: k("ARGS")
                .map(|a| a.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            period: period.max(Duration::from_secs(1)),
            prefix: k("PREFIX").unwrap_or_default().trim().to_string(),
            one_shot,
        });
    }
    Ok(out)
}

/// The attributes of a script's output: `Name = value` lines up to a line
/// starting with `-` or the end; lines that are not assignments of a
/// valid expression are skipped (and reported in the second result).
pub fn parse_output(text: &str, prefix: &str) -> (BTreeMap<String, Expr>, Vec<String>) {
    let mut attrs = BTreeMap::new();
    let mut bad = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('-') {
            break;
        }
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((name, value)) = l.split_once('=') else {
            bad.push(line.to_string());
            continue;
        };
        let name = name.trim();
        let valid_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match (valid_name, classad::parse_expr(value.trim())) {
            (true, Ok(e)) => {
                attrs.insert(format!("{prefix}{name}"), e);
            }
            _ => bad.push(line.to_string()),
        }
    }
    (attrs, bad)
}

/// Runs `job` once; its attributes, or why not.
pub async fn run_once(job: &CronJob) -> Result<BTreeMap<String, Expr>, String> {
    let mut cmd = tokio::process::Command::new(&job.executable);
    cmd.args(&job.args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let limit = job.period.max(Duration::from_secs(10));
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .map_err(|_| format!("still running after {limit:?}"))?
        .map_err(|e| format!("{}: {e}", job.executable))?;
    let (attrs, bad) = parse_output(&String::from_utf8_lossy(&out.stdout), &job.prefix);
    for line in bad {
        tracing::warn!("STARTD_CRON {}: ignoring output line {line:?}", job.name);
    }
    Ok(attrs)
}

/// Runs `job` in the background: at once, then every period of `clock`
/// (once for a `OneShot` job), each result sent to the loop as an
/// [`Event::Cron`]. Ends when the loop is gone.
pub fn spawn(
    job: CronJob,
    clock: Clock,
    events: mpsc::Sender<Event>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let outcome = run_once(&job).await;
            // the next run is a period after this one ended, by the clock:
            // an instant, so a jump of a test's clock while the result is
            // handed over is not lost
            let next = clock.now() + job.period;
            match outcome {
                Ok(attrs) => {
                    let ev = Event::Cron {
                        job: job.name.clone(),
                        attrs,
                    };
                    if events.send(ev).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!("STARTD_CRON {}: {e}", job.name),
            }
            if job.one_shot {
                return;
            }
            tokio::select! {
                _ = clock.sleep_until(next) => {}
                _ = events.closed() => return,
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn output_sets_end_at_a_dash() {
        let (a, bad) = parse_output(
            "Temp = 42\nSite = \"lab\"\nnot an assignment\n- \nLater = 1\n",
            "Cron_",
        );
        assert_eq!(a.keys().collect::<Vec<_>>(), vec!["Cron_Site", "Cron_Temp"]);
        assert_eq!(classad::unparse(&a["Cron_Temp"]), "42");
        assert_eq!(bad, vec!["not an assignment".to_string()]);
    }

    #[test]
    fn jobs_are_read_from_the_knobs() {
        let knobs: BTreeMap<&str, &str> = [
            ("STARTD_CRON_JOBLIST", "temp, other"),
            ("STARTD_CRON_temp_EXECUTABLE", "/bin/t"),
            ("STARTD_CRON_temp_PERIOD", "5m"),
            ("STARTD_CRON_temp_ARGS", "-a b"),
            ("STARTD_CRON_other_EXECUTABLE", "/bin/o"),
            ("STARTD_CRON_other_MODE", "OneShot"),
        ]
        .into_iter()
        .collect();
        let lookup = |k: &str| knobs.get(k).map(|v| v.to_string());
        let j = jobs(&lookup).unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j[0].period, Duration::from_secs(300));
        assert_eq!(j[0].args, vec!["-a", "b"]);
        assert!(j[1].one_shot);
        let lookup = |k: &str| (k == "STARTD_CRON_JOBLIST").then(|| "x".to_string());
        assert!(jobs(&lookup)
            .unwrap_err()
            .contains("STARTD_CRON_x_EXECUTABLE"));
    }

    #[tokio::test]
    async fn a_periodic_job_runs_at_once_then_every_period_of_the_daemons_clock() {
        let job = CronJob {
            name: "temp".into(),
            executable: "/bin/sh".into(),
            args: vec!["-c".into(), "echo Temp = 42".into()],
            // an hour: only the test's clock gets there
            period: Duration::from_secs(3600),
            prefix: "Cron_".into(),
            one_shot: false,
        };
        let manual = skua_daemon::ManualClock::frozen(1_000_000);
        let (events, mut results) = mpsc::channel(4);
        let running = spawn(job, manual.clock(), events);
        for round in 0..2 {
            if round > 0 {
                manual.advance(Duration::from_secs(3600));
            }
            let got = tokio::time::timeout(Duration::from_secs(10), results.recv())
                .await
                .expect("the job's output")
                .expect("the job runs");
            let Event::Cron { job, attrs } = got else {
                panic!("not a cron result: {got:?}");
            };
            assert_eq!(job, "temp");
            assert_eq!(classad::unparse(&attrs["Cron_Temp"]), "42");
        }
        // the loop gone, the job ends without waiting for the clock
        drop(results);
        tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("the job ends with the loop")
            .unwrap();
    }
}
