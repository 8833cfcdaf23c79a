//! Small everyday commands in the form of HTCondor's tools: `skua ping`
//! (condor_ping), `skua who` (condor_who), `skua version`
//! (condor_version) and `skua reschedule` (condor_reschedule).
//!
//! The text they print is made by pure functions here (tested below); the
//! commands fetch what they show from the daemons.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use classad::{ClassAd, EvalOptions, Evaluator};
use skua_net::{AuthLevel, Endpoint};
use skua_proto::{routes, AuthMethod, Query, QueryReply, WhoAmI};

use crate::pool_cmd::{client_at_address, client_for, load_config, report, runtime};

// ----- skua version ----------------------------------------------------------

#[derive(clap::Args)]
pub struct VersionArgs {
    /// Only the architecture, as the ads' `Arch` (`X86_64`).
    #[arg(long)]
    arch: bool,
    /// Only the operating system, as the ads' `OpSys` (`LINUX`).
    #[arg(long)]
    opsys: bool,
}

/// `Arch` and `OpSys` of this build, as the ads spell them.
fn arch_opsys() -> (String, String) {
    let arch = match std::env::consts::ARCH {
        "x86" => "INTEL".to_string(),
        other => other.to_ascii_uppercase(),
    };
    let opsys = match std::env::consts::OS {
        "macos" => "OSX".to_string(),
        other => other.to_ascii_uppercase(),
    };
    (arch, opsys)
}

/// condor_version's two lines: `$CondorVersion: ... $` and
/// `$CondorPlatform: ... $`.
pub(crate) fn version_text() -> String {
    format!(
        "{}\n{}\n",
        skua_proto::CONDOR_VERSION,
        skua_proto::condor_platform()
    )
}

pub fn version(a: VersionArgs) -> ExitCode {
    let (arch, opsys) = arch_opsys();
    if a.arch {
        println!("{arch}");
    }
    if a.opsys {
        println!("{opsys}");
    }
    if !a.arch && !a.opsys {
        print!("{}", version_text());
    }
    ExitCode::SUCCESS
}

// ----- skua reschedule -------------------------------------------------------

#[derive(clap::Args)]
pub struct RescheduleArgs {}

/// Asks the negotiator for a cycle now (Skua's schedd asks it by itself
/// when jobs become idle; this is condor_reschedule's nudge).
pub fn reschedule(_a: RescheduleArgs) -> ExitCode {
    report(
        "reschedule",
        (|| {
            let config = load_config()?;
            let client = client_for(&config, "NEGOTIATOR", Duration::from_secs(20))?;
            let _: skua_proto::Ack = runtime()?
                .block_on(client.command(
                    &routes::NEGOTIATOR_RESCHEDULE,
                    Some(&skua_proto::Reschedule {}),
                ))
                .context("asking the negotiator for a negotiation cycle")?;
            println!("Sent \"Reschedule\" command to the negotiator");
            Ok(ExitCode::SUCCESS)
        })(),
    )
}

// ----- skua ping -------------------------------------------------------------

/// The daemons `skua ping` can reach by type.
const PING_TYPES: &[&str] = &["SCHEDD", "COLLECTOR", "NEGOTIATOR", "STARTD", "MASTER"];

#[derive(clap::Args)]
pub struct PingArgs {
    /// The authorization levels to test (READ, WRITE, ADMINISTRATOR,
    /// DAEMON, NEGOTIATOR, or ALL); none: just authenticate.
    tokens: Vec<String>,
    /// The daemon to contact: SCHEDD (default), COLLECTOR, NEGOTIATOR,
    /// STARTD or MASTER of this pool.
    #[arg(long = "type", value_name = "SUBSYSTEM")]
    daemon_type: Option<String>,
    /// The daemon at this address (a sinful string, `<ip:port>`).
    #[arg(long, value_name = "SINFUL")]
    address: Option<String>,
    /// No output: the exit status says whether every level is granted.
    #[arg(long, conflicts_with_all = ["table", "verbose"])]
    quiet: bool,
    /// One line per level.
    #[arg(long, conflicts_with = "verbose")]
    table: bool,
    /// Everything known about the session.
    #[arg(long)]
    verbose: bool,
}

/// How a session was secured, in condor_ping's words.
struct Session {
    encryption: &'static str,
    integrity: &'static str,
    method: Option<&'static str>,
}

fn session(endpoint: &Endpoint, who: &WhoAmI) -> Session {
    let tls = matches!(endpoint, Endpoint::Tls(..));
    Session {
        encryption: if tls { "TLS" } else { "none" },
        integrity: if tls { "TLS" } else { "none" },
        method: match who.method {
            AuthMethod::Token => Some("IDTOKENS"),
            AuthMethod::Local => Some("FS"),
            AuthMethod::Ssl => Some("SSL"),
            AuthMethod::Anonymous => None,
        },
    }
}

/// The levels a ping token names (`ALL`: every level), upper case.
fn ping_levels(tokens: &[String]) -> Result<Vec<(String, AuthLevel)>> {
    let all = [
        AuthLevel::Read,
        AuthLevel::Write,
        AuthLevel::Negotiator,
        AuthLevel::Administrator,
        AuthLevel::Daemon,
    ];
    let mut out = Vec::new();
    for t in tokens {
        if t.eq_ignore_ascii_case("ALL") {
            for l in all {
                out.push((level_name(l), l));
            }
            continue;
        }
        let l: AuthLevel = t
            .parse()
            .map_err(|_| anyhow::anyhow!("ERROR: Could not understand TOKEN \"{t}\"."))?;
        out.push((t.to_ascii_uppercase(), l));
    }
    Ok(out)
}

fn level_name(l: AuthLevel) -> String {
    l.as_str().to_ascii_uppercase()
}

/// condor_ping's line for one level:
/// `WRITE command using (none, none, and FS) succeeded as alice@test to schedd.`
fn ping_line(name: &str, s: &Session, who: &WhoAmI, granted: bool, daemon: &str) -> String {
    let enc = if s.encryption == "none" {
        "no encryption"
    } else {
        s.encryption
    };
    let integ = if s.integrity == "none" {
        "no integrity"
    } else {
        s.integrity
    };
    let auth = s.method.unwrap_or("no authentication");
    format!(
        "{name} command using ({enc}, {integ}, and {auth}) {} as {} to {daemon}.\n",
        if granted { "succeeded" } else { "failed" },
        who.identity
    )
}

/// `-table`: condor_ping's header and one row per level.
fn ping_table(levels: &[(String, bool)], s: &Session, who: &WhoAmI) -> String {
    let mut out = format!(
        "{:>20}{:>15}{:>11}{:>10} {:>8} {}\n",
        "Instruction", "Authentication", "Encryption", "Integrity", "Decision", "Identity"
    );
    for (name, granted) in levels {
        out.push_str(&format!(
            "{name:>20}{:>15}{:>11}{:>10}    {} {}\n",
            s.method.unwrap_or("none"),
            s.encryption,
            s.integrity,
            if *granted { "ALLOW" } else { " DENY" },
            who.identity
        ));
    }
    out
}

/// `-verbose`: condor_ping's block for one level.
fn ping_verbose(name: &str, s: &Session, who: &WhoAmI, granted: bool) -> String {
    let mut out = format!(
        "Local  Version:              {}\n",
        skua_proto::CONDOR_VERSION
    );
    out.push_str(&format!("Instruction:                 {name}\n"));
    out.push_str(&format!("Encryption:                  {}\n", s.encryption));
    out.push_str(&format!("Integrity:                   {}\n", s.integrity));
    match s.method {
        Some(m) => out.push_str(&format!("Authenticated using:         {m}\n")),
        None => out.push_str("Authentication:              none\n"),
    }
    out.push_str(&format!("Remote Mapping:              {}\n", who.identity));
    out.push_str(&format!(
        "Authorized:                  {}\n\n",
        if granted { "TRUE" } else { "FALSE" }
    ));
    out
}

pub fn ping(a: PingArgs) -> ExitCode {
    report("ping", ping_inner(&a))
}

fn ping_inner(a: &PingArgs) -> Result<ExitCode> {
    let mut levels = ping_levels(&a.tokens)?;
    if levels.is_empty() {
        if !a.quiet {
            eprintln!(
                "WARNING: Missing <authz-level> argument, testing authentication and READ only"
            );
        }
        levels.push(("READ".into(), AuthLevel::Read));
    }
    let config = load_config()?;
    let timeout = Duration::from_secs(20);
    let (client, daemon) = match &a.address {
        Some(addr) => (client_at_address(&config, addr, timeout)?, addr.clone()),
        None => {
            let t = a
                .daemon_type
                .as_deref()
                .unwrap_or("SCHEDD")
                .to_ascii_uppercase();
            if !PING_TYPES.contains(&t.as_str()) {
                bail!(
                    "ERROR: unrecognized daemon type: {t} (known: {})",
                    PING_TYPES.join(", ")
                );
            }
            (client_for(&config, &t, timeout)?, t.to_ascii_lowercase())
        }
    };
    let who = match runtime()?.block_on(client.hello()) {
        Ok(w) => w,
        Err(e) => {
            if !a.quiet {
                for (name, _) in &levels {
                    println!("{name} command failed!  Use -verbose for more information.");
                }
                if a.verbose {
                    println!("{e}");
                }
            }
            return Ok(ExitCode::from(1));
        }
    };
    let s = session(client.endpoint(), &who);
    let results: Vec<(String, bool)> = levels
        .iter()
        .map(|(n, l)| (n.clone(), who.levels.contains(l)))
        .collect();
    let out = if a.quiet {
        String::new()
    } else if a.table {
        ping_table(&results, &s, &who)
    } else if a.verbose {
        results
            .iter()
            .map(|(n, g)| ping_verbose(n, &s, &who, *g))
            .collect()
    } else {
        results
            .iter()
            .map(|(n, g)| ping_line(n, &s, &who, *g, &daemon))
            .collect()
    };
    print!("{out}");
    Ok(if results.iter().all(|(_, g)| *g) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

// ----- skua who --------------------------------------------------------------

#[derive(clap::Args)]
pub struct WhoArgs {
    /// Another machine's slots (its name as the slots' `Machine`).
    #[arg(long = "machine", value_name = "HOST")]
    machine: Option<String>,
}

/// condor_who's table of the jobs running on a machine: OWNER, CLIENT,
/// SLOT (the slot's number, `1` or `1_2`), JOB, RUNTIME; one row per
/// claimed slot running a job, in slot order.
pub(crate) fn format_who(ads: &[ClassAd], now: i64) -> String {
    use crate::table::{col, duration, Align, Table};
    let mut ev = Evaluator::new(EvalOptions {
        now: now as f64,
        ..EvalOptions::default()
    });
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for ad in ads {
        let Some(job) = ev.eval_attr("JobId", ad, None).as_string() else {
            continue;
        };
        let name = ev
            .eval_attr("Name", ad, None)
            .as_string()
            .unwrap_or_default();
        let slot = name
            .split('@')
            .next()
            .unwrap_or("")
            .trim_start_matches("slot")
            .to_string();
        let owner = ev
            .eval_attr("RemoteUser", ad, None)
            .as_string()
            .unwrap_or_else(|| "??".into());
        let client = ev
            .eval_attr("ClientMachine", ad, None)
            .as_string()
            .unwrap_or_else(|| "??".into());
        let runtime = match ev.eval_attr("JobStart", ad, None).as_int() {
            Some(t) => duration(now.saturating_sub(t)),
            None => "??".into(),
        };
        rows.push((name, vec![owner, client, slot, job, runtime]));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut table = Table::new([
        col("OWNER", 24, Align::Left),
        col("CLIENT", 16, Align::Left),
        col("SLOT", 4, Align::Left),
        col("JOB", 6, Align::Left),
        col("RUNTIME", 10, Align::Right),
    ]);
    for (_, r) in rows {
        table.row(r);
    }
    table.to_text()
}

pub fn who(a: WhoArgs) -> ExitCode {
    report(
        "who",
        (|| {
            let config = load_config()?;
            let host = a.machine.clone().unwrap_or_else(skua_daemon::host_name);
            let client = client_for(&config, "COLLECTOR", Duration::from_secs(20))?;
            let q = Query {
                ad_type: "Machine".into(),
                constraint: Some(format!(
                    "Machine =?= {} && JobId isnt undefined",
                    classad::unparse_value(&classad::Value::from(host.as_str()))
                )),
                projection: Vec::new(),
            };
            let reply: QueryReply = runtime()?
                .block_on(client.command(&routes::COLLECTOR_QUERY, Some(&q)))
                .context("asking the collector for this machine's slots")?;
            let mut ads = Vec::new();
            for text in &reply.ads {
                ads.push(
                    classad::parse_ad(text)
                        .context("the collector sent an ad that does not parse")?,
                );
            }
            print!("{}", format_who(&ads, skua_daemon::now_secs()));
            Ok(ExitCode::SUCCESS)
        })(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who_am(method: AuthMethod, levels: &[AuthLevel]) -> WhoAmI {
        WhoAmI {
            identity: "alice@test".into(),
            method,
            levels: levels.to_vec(),
        }
    }

    #[test]
    fn version_is_condor_versions_two_lines() {
        let text = version_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("$CondorVersion: 25.14.1 "), "{text}");
        assert!(lines[0].ends_with(" $"), "{text}");
        assert!(lines[1].starts_with("$CondorPlatform: "), "{text}");
        assert!(lines[1].ends_with(" $"), "{text}");
    }

    #[test]
    fn arch_and_opsys_are_spelled_as_in_the_ads() {
        if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            assert_eq!(arch_opsys(), ("X86_64".to_string(), "LINUX".to_string()));
        }
    }

    #[test]
    fn htcondors_version_tests_in_requirements_pass_against_skuas_ads() {
        // condor_submit's default Requirements (Skua's submit writes the
        // same clause) and other version comparisons users write
        let mut slot = ClassAd::new();
        slot.insert_value("CondorVersion", skua_proto::CONDOR_VERSION);
        slot.insert_value("Disk", 10_i64);
        let mut job = ClassAd::new();
        job.insert_value("RequestDisk", 1_000_000_i64);
        let mut ev = Evaluator::default();
        for (text, want) in [
            (
                "versionGE(split(TARGET.CondorVersion)[1], \"25.12.0\") || (TARGET.Disk >= RequestDisk)",
                true,
            ),
            ("versioncmp(split(TARGET.CondorVersion)[1], \"8.9.0\") > 0", true),
            ("versionLT(split(TARGET.CondorVersion)[1], \"26.0.0\")", true),
            ("split(TARGET.CondorVersion)[1] != \"\"", true),
        ] {
            let e = classad::parse_expr(text).expect("parses");
            let v = ev.eval(&e, Some(&job), Some(&slot));
            assert!(matches!(v, classad::Value::Bool(b) if b == want), "{text}");
        }
    }

    #[test]
    fn ping_line_names_level_security_identity_and_decision() {
        let s = Session {
            encryption: "none",
            integrity: "none",
            method: Some("FS"),
        };
        let who = who_am(AuthMethod::Local, &[AuthLevel::Read, AuthLevel::Write]);
        assert_eq!(
            ping_line("WRITE", &s, &who, true, "schedd"),
            "WRITE command using (no encryption, no integrity, and FS) succeeded as alice@test to schedd.\n"
        );
        let tls = Session {
            encryption: "TLS",
            integrity: "TLS",
            method: Some("IDTOKENS"),
        };
        assert_eq!(
            ping_line("ADMINISTRATOR", &tls, &who, false, "collector"),
            "ADMINISTRATOR command using (TLS, TLS, and IDTOKENS) failed as alice@test to collector.\n"
        );
    }

    #[test]
    fn ping_levels_parse_names_and_all() {
        let l = ping_levels(&["read".into(), "ALL".into()]).expect("valid");
        let names: Vec<&str> = l.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "READ",
                "READ",
                "WRITE",
                "NEGOTIATOR",
                "ADMINISTRATOR",
                "DAEMON"
            ]
        );
        let err = ping_levels(&["SOUP".into()]).unwrap_err().to_string();
        assert!(err.contains("\"SOUP\""), "{err}");
    }

    #[test]
    fn ping_table_and_verbose() {
        let s = Session {
            encryption: "none",
            integrity: "none",
            method: Some("FS"),
        };
        let who = who_am(AuthMethod::Local, &[AuthLevel::Read]);
        let t = ping_table(&[("READ".into(), true), ("WRITE".into(), false)], &s, &who);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "         Instruction Authentication Encryption Integrity Decision Identity"
        );
        assert_eq!(
            lines[1],
            "                READ             FS       none      none    ALLOW alice@test"
        );
        assert_eq!(
            lines[2],
            "               WRITE             FS       none      none     DENY alice@test"
        );
        let v = ping_verbose("WRITE", &s, &who, false);
        assert!(v.contains("Instruction:                 WRITE\n"), "{v}");
        assert!(v.contains("Authenticated using:         FS\n"), "{v}");
        assert!(
            v.contains("Remote Mapping:              alice@test\n"),
            "{v}"
        );
        assert!(v.ends_with("Authorized:                  FALSE\n\n"), "{v}");
    }

    #[test]
    fn who_lists_running_jobs_by_slot() {
        let ad = |name: &str, job: Option<&str>| {
            let mut a = ClassAd::new();
            a.insert_value("Name", name);
            a.insert_value("RemoteUser", "alice@test");
            a.insert_value("ClientMachine", "submit.test");
            if let Some(j) = job {
                a.insert_value("JobId", j);
                a.insert_value("JobStart", 1000_i64);
            }
            a
        };
        let out = format_who(
            &[
                ad("slot2@h", Some("7.1")),
                ad("slot1_1@h", Some("7.0")),
                ad("slot3@h", None),
            ],
            1000 + 3661,
        );
        assert_eq!(
            out,
            "\
OWNER                    CLIENT           SLOT JOB    RUNTIME

alice@test               submit.test      1_1  7.0    0+01:01:01
alice@test               submit.test      2    7.1    0+01:01:01
"
        );
    }
}
