//! `skua classad eval` (for people) and `skua classad eval-batch` (the
//! JSON-lines adapter protocol of the conformance corpus).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use classad::{ClassAd, EvalOptions, Evaluator, ParseOptions, Value};
use serde_json::{json, Value as Json};

#[derive(clap::Subcommand)]
pub enum ClassadCommand {
    /// Evaluate an expression and print its value.
    Eval(EvalArgs),
    /// Answer conformance cases: JSON lines on stdin, one answer per line
    /// on stdout.
    EvalBatch,
}

#[derive(clap::Args)]
pub struct EvalArgs {
    /// The expression, in ClassAd syntax.
    expr: String,
    /// The MY ad: new-style text (`[a = 1]`), old-style text, or a file.
    #[arg(long)]
    my: Option<String>,
    /// The TARGET ad (needs --my).
    #[arg(long)]
    target: Option<String>,
    /// STRICT_CLASSAD_EVALUATION semantics instead of HTCondor's default.
    #[arg(long)]
    strict: bool,
    /// Print the value's type before it.
    #[arg(long = "type")]
    show_type: bool,
}

pub fn run(cmd: ClassadCommand) -> ExitCode {
    let r = match cmd {
        ClassadCommand::Eval(a) => eval_cmd(a),
        ClassadCommand::EvalBatch => batch(),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skua classad: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The system's local time zone, as the evaluator's time-zone function.
pub fn local_zone(t: i64) -> i32 {
    skua_daemon::local_utc_offset(t)
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn options(strict: bool) -> (ParseOptions, EvalOptions) {
    let now = now();
    (
        ParseOptions {
            strict,
            tz: local_zone,
        },
        EvalOptions {
            strict,
            now,
            tz: local_zone,
            seed: now.to_bits(),
        },
    )
}

/// Reads an ad given on the command line: new-style text, old-style text,
/// or the name of a file holding either.
fn load_ad(arg: &str, popts: ParseOptions) -> Result<ClassAd> {
    let text = if std::path::Path::new(arg).is_file() {
        std::fs::read_to_string(arg).with_context(|| format!("reading ad file {arg}"))?
    } else {
        arg.to_string()
    };
    if text.trim_start().starts_with('[') {
        classad::parse_ad_with(text.trim(), popts).with_context(|| format!("parsing ad {arg:?}"))
    } else {
        classad::parse_old_ad_with(&text, popts).with_context(|| format!("parsing ad {arg:?}"))
    }
}

fn eval_cmd(a: EvalArgs) -> Result<ExitCode> {
    let (popts, eopts) = options(a.strict);
    let expr = classad::parse_expr_with(&a.expr, popts).context("parsing the expression")?;
    let my = a.my.as_deref().map(|s| load_ad(s, popts)).transpose()?;
    let target = a.target.as_deref().map(|s| load_ad(s, popts)).transpose()?;
    if target.is_some() && my.is_none() {
        bail!("--target needs --my");
    }
    let v = Evaluator::new(eopts).eval(&expr, my.as_ref(), target.as_ref());
    if a.show_type {
        println!("{}: {}", v.value_type().as_str(), v);
    } else {
        println!("{v}");
    }
    Ok(ExitCode::SUCCESS)
}

fn batch() -> Result<ExitCode> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (_, base) = options(false);
    let mut condor = Evaluator::new(base);
    let mut strict = Evaluator::new(EvalOptions {
        strict: true,
        ..base
    });
    for line in stdin.lock().lines() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Json>(&line) {
            Ok(case) => {
                let is_strict = case.get("mode").and_then(Json::as_str) == Some("strict");
                let ev = if is_strict { &mut strict } else { &mut condor };
                answer(&case, ev)
            }
            Err(e) => json!({"id": null, "type": "bad_input", "value": e.to_string()}),
        };
        serde_json::to_writer(&mut out, &answer).context("writing stdout")?;
        out.write_all(b"\n").context("writing stdout")?;
        out.flush().context("writing stdout")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn typed(v: &Value) -> Json {
    json!({"type": v.value_type().as_str(), "value": v.to_string()})
}

fn answer(case: &Json, ev: &mut Evaluator) -> Json {
    let id = case.get("id").cloned().unwrap_or(Json::Null);
    let popts = ParseOptions {
        strict: ev.options().strict,
        tz: ev.options().tz,
    };
    let s = |k: &str| case.get(k).and_then(Json::as_str);
    let parse_ad = |k: &str| -> Option<Result<ClassAd, classad::ParseError>> {
        s(k).map(|t| classad::parse_ad_with(t, popts))
    };
    let mut body = match s("kind") {
        Some("unparse") => match classad::parse_expr_with(s("expr").unwrap_or(""), popts) {
            Ok(e) => json!({"type": "expr", "value": classad::unparse(&e)}),
            Err(_) => json!({"type": "parse_error", "value": null}),
        },
        Some("parse_old") => match classad::parse_old_ad_with(s("text").unwrap_or(""), popts) {
            Ok(ad) => match s("attr") {
                Some(name) => match ad.lookup(name) {
                    Some(e) => json!({"type": "expr", "value": classad::unparse(e)}),
                    None => json!({"type": "missing", "value": null}),
                },
                None => json!({"type": "classad", "value": classad::unparse_ad(&ad)}),
            },
            Err(_) => json!({"type": "parse_error", "value": null}),
        },
        Some("match") => match (parse_ad("job"), parse_ad("machine")) {
            (Some(Ok(job)), Some(Ok(machine))) => {
                let m = classad::symmetric_match(ev, &job, &machine);
                let jr = classad::rank(ev, &job, &machine);
                let mr = classad::rank(ev, &machine, &job);
                json!({"match": m.matched, "job_rank": jr.to_string(), "machine_rank": mr.to_string()})
            }
            _ => json!({"match": false, "job_rank": "error", "machine_rank": "error"}),
        },
        _ => {
            let my = match parse_ad("my") {
                Some(Ok(ad)) => Some(ad),
                Some(Err(e)) => {
                    return json!({"id": id, "type": "bad_input", "value": e.to_string()})
                }
                None => None,
            };
            let target = match parse_ad("target") {
                Some(Ok(ad)) => Some(ad),
                Some(Err(e)) => {
                    return json!({"id": id, "type": "bad_input", "value": e.to_string()})
                }
                None => None,
            };
            match classad::parse_expr_with(s("expr").unwrap_or(""), popts) {
                Ok(e) => typed(&ev.eval(&e, my.as_ref(), target.as_ref())),
                Err(_) => json!({"type": "parse_error", "value": null}),
            }
        }
    };
    if let Json::Object(m) = &mut body {
        m.insert("id".into(), id);
    }
    body
}
