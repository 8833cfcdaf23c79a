//! `skua userprio`, in the style of condor_userprio: the negotiator's user
//! priorities, and an administrator's changes to them.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use skua_proto::{
    routes, Ack, ErrorCode, UserPrioChange, UserPrioEdit, UserPrioQuery, UserPrioRecord,
    UserPrioReply,
};

use crate::pool_cmd::{client_for, load_config, report, runtime};

const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(clap::Args)]
pub struct UserprioArgs {
    /// Every user the negotiator knows, with real priority and usage
    /// times (otherwise: users with priority above the minimum or
    /// resources in use).
    #[arg(long)]
    all: bool,
    /// Set a user's priority factor (administrators).
    #[arg(long, num_args = 2, value_names = ["USER", "FACTOR"])]
    setfactor: Option<Vec<String>>,
    /// Set a user's real priority (administrators).
    #[arg(long, num_args = 2, value_names = ["USER", "PRIORITY"])]
    setprio: Option<Vec<String>>,
    /// Reset a user's accumulated usage (administrators).
    #[arg(long, value_name = "USER")]
    resetusage: Option<String>,
}

pub fn run(a: UserprioArgs) -> ExitCode {
    report("userprio", inner(a))
}

fn number(what: &str, s: &str) -> Result<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .with_context(|| format!("{what} {s:?} is not a number"))
}

fn inner(a: UserprioArgs) -> Result<ExitCode> {
    let edit = match (&a.setfactor, &a.setprio, &a.resetusage) {
        (Some(v), None, None) => Some(UserPrioEdit {
            user: v[0].clone(),
            change: UserPrioChange::SetFactor {
                factor: number("factor", &v[1])?,
            },
        }),
        (None, Some(v), None) => Some(UserPrioEdit {
            user: v[0].clone(),
            change: UserPrioChange::SetPriority {
                priority: number("priority", &v[1])?,
            },
        }),
        (None, None, Some(u)) => Some(UserPrioEdit {
            user: u.clone(),
            change: UserPrioChange::ResetUsage,
        }),
        (None, None, None) => None,
        _ => bail!("give one of -setfactor, -setprio, -resetusage at a time"),
    };
    let config = load_config()?;
    let client = client_for(&config, "NEGOTIATOR", TIMEOUT)?;
    let rt = runtime()?;
    if let Some(e) = edit {
        let what = match &e.change {
            UserPrioChange::SetFactor { factor } => {
                format!("The priority factor of {} was set to {factor:.6}", e.user)
            }
            UserPrioChange::SetPriority { priority } => {
                format!("The priority of {} was set to {priority:.6}", e.user)
            }
            UserPrioChange::ResetUsage => {
                format!("The accumulated usage of {} was reset", e.user)
            }
        };
        let r: std::result::Result<Ack, skua_net::NetError> =
            rt.block_on(client.command(&routes::NEGOTIATOR_USERPRIO_EDIT, Some(&e)));
        match r {
            Ok(_) => {
                println!("{what}");
                return Ok(ExitCode::SUCCESS);
            }
            Err(err) if err.code() == ErrorCode::PermissionDenied => bail!(
                "permission denied: changing user priorities needs ADMINISTRATOR authorization at the negotiator"
            ),
            Err(err) => return Err(err.into()),
        }
    }
    let reply: UserPrioReply = rt.block_on(client.command(
        &routes::NEGOTIATOR_USERPRIO,
        Some(&UserPrioQuery { all: a.all }),
    ))?;
    let now = skua_daemon::now_secs();
    print!("{}", format_table(&reply, a.all, now));
    Ok(ExitCode::SUCCESS)
}

fn hours(secs: f64) -> String {
    format!("{:.2}", secs / 3600.0)
}

/// `d+hh:mm` since `t`, or `<now>`.
fn since(now: i64, t: Option<i64>) -> String {
    match t {
        None => "<never>".into(),
        Some(t) if now - t < 60 => "<now>".into(),
        Some(t) => {
            let s = (now - t).max(0);
            format!(
                "{}+{:02}:{:02}",
                s / 86400,
                (s % 86400) / 3600,
                (s % 3600) / 60
            )
        }
    }
}

fn utc(t: Option<i64>) -> String {
    let Some(t) = t else {
        return "<never>".into();
    };
    let days = t.div_euclid(86400);
    let secs = t.rem_euclid(86400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{m}/{d} {:02}:{:02}", secs / 3600, (secs % 3600) / 60)
}

/// The table condor_userprio prints (`all`: with real priority, usage
/// start and last usage columns).
pub(crate) fn format_table(r: &UserPrioReply, all: bool, now: i64) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Last Priority Update: {}\n",
        match r.last_update {
            Some(t) => format!("{} UTC", utc(Some(t))),
            None => "<never>".into(),
        }
    ));
    let users: &[UserPrioRecord] = &r.users;
    if all {
        out.push_str(&format!(
            "{:<30} {:>12} {:>10} {:>10} {:>6} {:>12} {:>11} {:>11}\n",
            "", "Effective", "Real", "Priority", "Res", "Accumulated", "Usage", "Last"
        ));
        out.push_str(&format!(
            "{:<30} {:>12} {:>10} {:>10} {:>6} {:>12} {:>11} {:>11}\n",
            "User Name",
            "Priority",
            "Priority",
            "Factor",
            "Used",
            "Usage (hrs)",
            "Start Time",
            "Usage Time"
        ));
        out.push_str(&format!(
            "{} {} {} {} {} {} {} {}\n",
            "-".repeat(30),
            "-".repeat(12),
            "-".repeat(10),
            "-".repeat(10),
            "-".repeat(6),
            "-".repeat(12),
            "-".repeat(11),
            "-".repeat(11)
        ));
        for u in users {
            out.push_str(&format!(
                "{:<30} {:>12.2} {:>10.2} {:>10.2} {:>6} {:>12} {:>11} {:>11}\n",
                u.name,
                u.effective_priority,
                u.real_priority,
                u.factor,
                u.weighted_resources_used.round() as i64,
                hours(u.weighted_accumulated_usage),
                utc(u.begin_usage_time),
                utc(u.last_usage_time),
            ));
        }
    } else {
        out.push_str(&format!(
            "{:<30} {:>12} {:>10} {:>6} {:>12} {:>10}\n",
            "", "Effective", "Priority", "Res", "Total Usage", "Time Since"
        ));
        out.push_str(&format!(
            "{:<30} {:>12} {:>10} {:>6} {:>12} {:>10}\n",
            "User Name", "Priority", "Factor", "In Use", "(wghted-hrs)", "Last Usage"
        ));
        out.push_str(&format!(
            "{} {} {} {} {} {}\n",
            "-".repeat(30),
            "-".repeat(12),
            "-".repeat(10),
            "-".repeat(6),
            "-".repeat(12),
            "-".repeat(10)
        ));
        for u in users {
            let last = if u.resources_used > 0.0 {
                "<now>".to_string()
            } else {
                since(now, u.last_usage_time)
            };
            out.push_str(&format!(
                "{:<30} {:>12.2} {:>10.2} {:>6} {:>12} {:>10}\n",
                u.name,
                u.effective_priority,
                u.factor,
                u.weighted_resources_used.round() as i64,
                hours(u.weighted_accumulated_usage),
                last
            ));
        }
    }
    let in_use: f64 = users.iter().map(|u| u.weighted_resources_used).sum();
    let usage: f64 = users.iter().map(|u| u.weighted_accumulated_usage).sum();
    out.push_str(&format!(
        "Number of users: {:<23} {:>6} {:>12}\n",
        users.len(),
        in_use.round() as i64,
        hours(usage)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, eff: f64, real: f64, factor: f64, used: f64, usage: f64) -> UserPrioRecord {
        UserPrioRecord {
            name: name.into(),
            effective_priority: eff,
            real_priority: real,
            factor,
            resources_used: used,
            weighted_resources_used: used,
            accumulated_usage: usage,
            weighted_accumulated_usage: usage,
            begin_usage_time: Some(1_700_000_000),
            last_usage_time: Some(1_700_000_000),
        }
    }

    #[test]
    fn table_has_condor_userprio_columns() {
        let r = UserPrioReply {
            users: vec![
                rec("alice@example.org", 500.0, 0.5, 1000.0, 2.0, 7200.0),
                rec("bob@example.org", 3000.0, 1.5, 2000.0, 0.0, 3600.0),
            ],
            default_factor: 1000.0,
            halflife: 86400.0,
            last_update: Some(1_700_000_000),
        };
        let t = format_table(&r, false, 1_700_007_200);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Last Priority Update: 11/14 22:13 UTC");
        assert!(lines[2].starts_with("User Name"));
        assert!(lines[2].contains("Priority") && lines[2].contains("Factor"));
        let alice: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(
            alice,
            [
                "alice@example.org",
                "500.00",
                "1000.00",
                "2",
                "2.00",
                "<now>"
            ]
        );
        let bob: Vec<&str> = lines[5].split_whitespace().collect();
        assert_eq!(
            bob,
            [
                "bob@example.org",
                "3000.00",
                "2000.00",
                "0",
                "1.00",
                "0+02:00"
            ]
        );
        assert!(lines[6].starts_with("Number of users: 2"));
        let all = format_table(&r, true, 1_700_007_200);
        let bob: Vec<&str> = all
            .lines()
            .nth(5)
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert_eq!(
            bob[..5],
            ["bob@example.org", "3000.00", "1.50", "2000.00", "0"]
        );
    }
}
