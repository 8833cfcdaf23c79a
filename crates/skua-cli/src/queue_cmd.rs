//! The queue tools: `skua q`, `skua rm`, `skua hold`, `skua release`,
//! `skua history`, `skua qedit`, `skua prio`, in the style of condor_q,
//! condor_rm, condor_hold, condor_release, condor_history, condor_qedit
//! and condor_prio.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use classad::ClassAd;
use skua_proto::{
    routes, BatchRow, JobAction, JobActionKind, JobActionReply, JobQuery, JobQueryReply,
    JobSelector, SetAttribute,
};

use crate::ad_output::{AdOutput, AdOutputArgs};
use crate::pool_cmd::{
    client_at_address, client_for, collector_client, load_config, report, runtime,
};
use crate::print_fmt::{self, AfOptions};
use crate::{q_fmt, q_source};

/// How long a queue command waits for the schedd.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The user running the tool.
pub(crate) fn current_user() -> String {
    skua_daemon::system_config::current_username(&skua_daemon::system_config::environment())
        .unwrap_or_else(|| "nobody".into())
}

/// The local time zone's offset from UTC at `t`.
pub(crate) fn utc_offset(t: i64) -> i64 {
    i64::from(skua_daemon::local_utc_offset(t))
}

fn is_job_ref(s: &str) -> bool {
    s.parse::<skua_types::JobRef>().is_ok()
}

/// Splits `C`, `C.P` and owner names.
pub(crate) fn selector_of(
    names: &[String],
    constraint: Option<String>,
    all: bool,
) -> Result<JobSelector> {
    if let Some(c) = &constraint {
        classad::parse_expr(c).with_context(|| format!("-constraint {c:?}"))?;
    }
    let mut sel = JobSelector {
        constraint,
        all,
        ..JobSelector::default()
    };
    for n in names {
        if is_job_ref(n) {
            sel.jobs.push(n.clone());
        } else if n.starts_with('-') || n.contains(char::is_whitespace) {
            bail!("`{n}` is neither a job id (C or C.P) nor a user name");
        } else {
            sel.owners.push(n.clone());
        }
    }
    Ok(sel)
}

fn parse_ads(texts: &[String]) -> Result<Vec<ClassAd>> {
    texts
        .iter()
        .map(|t| classad::parse_ad(t).context("the schedd sent an ad that does not parse"))
        .collect()
}

/// How `skua q` and `skua history` print the ads instead of their table.
#[derive(Clone, Debug)]
enum Form {
    /// `-json` or `-l`.
    Whole(AdOutput),
    /// `-af[:QUALIFIERS] ATTR...`.
    Af(Vec<String>, AfOptions),
    /// `-format FMT ATTR` pairs.
    Format(Vec<(String, String)>),
}

impl Form {
    /// The form the flags ask for, in HTCondor's order (`-json`, `-l`,
    /// then `-format` or `-af`, which do not mix here); `None` for the
    /// command's table.
    fn of(output: &AdOutputArgs, format: &[String]) -> Result<Option<Form>> {
        if let Some(form @ (AdOutput::Json | AdOutput::Long)) = output.chosen() {
            return Ok(Some(Form::Whole(form)));
        }
        if !format.is_empty() {
            if !output.af.is_empty() {
                bail!("use -format or -af, not both");
            }
            let pairs = format
                .chunks(2)
                .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
                .collect();
            return Ok(Some(Form::Format(pairs)));
        }
        if output.af.is_empty() {
            return Ok(None);
        }
        let opts = AfOptions::parse(output.af_qualifiers.as_deref().unwrap_or(""))
            .map_err(anyhow::Error::msg)?;
        Ok(Some(Form::Af(output.af.clone(), opts)))
    }

    fn render(&self, ads: &[ClassAd], now: i64) -> String {
        match self {
            Form::Whole(form) => form.render(ads, now),
            Form::Af(attrs, opts) => print_fmt::format_autoformat_with(ads, attrs, opts, now),
            Form::Format(pairs) => print_fmt::format_custom(ads, pairs, now),
        }
    }

    /// The attributes the schedd must send for this form (empty: whole
    /// ads, which an expression's attributes need).
    fn projection(&self) -> Vec<String> {
        let plain = |a: &String| {
            let mut c = a.chars();
            c.next()
                .is_some_and(|x| x.is_ascii_alphabetic() || x == '_')
                && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        };
        let mut attrs: Vec<String> = match self {
            Form::Whole(_) => return Vec::new(),
            Form::Af(attrs, _) => attrs.clone(),
            Form::Format(pairs) => pairs.iter().map(|(_, a)| a.clone()).collect(),
        };
        if !attrs.iter().all(plain) {
            return Vec::new();
        }
        attrs.push("ClusterId".into());
        attrs.push("ProcId".into());
        attrs
    }
}

// ----- skua q ---------------------------------------------------------------

#[derive(clap::Args)]
pub struct QArgs {
    /// Job ids (C or C.P) or owners; default: your own jobs.
    names: Vec<String>,
    /// Only jobs for which this ClassAd expression is true.
    #[arg(long)]
    constraint: Option<String>,
    /// One line per job instead of one per batch.
    #[arg(long)]
    nobatch: bool,
    /// Only held jobs, with their hold reasons.
    #[arg(long, alias = "held")]
    hold: bool,
    /// Jobs transferring files, with the bytes they moved (condor_q -io).
    #[arg(long)]
    io: bool,
    /// Only running jobs (also suspended or transferring output), with
    /// where they run.
    #[arg(long)]
    run: bool,
    /// Only idle jobs, with what they ask for and where they last ran.
    #[arg(long)]
    idle: bool,
    /// With -nobatch: DAG node jobs listed under their DAGMan job.
    #[arg(long)]
    dag: bool,
    /// Jobs of every user, not only yours.
    #[arg(long)]
    allusers: bool,
    #[command(flatten)]
    output: AdOutputArgs,
    /// A printf-style format for an attribute (repeatable, applied in
    /// order, with no newline but the formats' own: `-format "%d\n" ProcId`).
    #[arg(
        short = 'f',
        long = "format",
        num_args = 2,
        value_names = ["FMT", "ATTR"],
        action = clap::ArgAction::Append,
        allow_hyphen_values = true
    )]
    format: Vec<String>,
    /// Only the totals lines.
    #[arg(long)]
    totals: bool,
    /// At most this many jobs.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Do not cut the table's lines to the terminal's width.
    #[arg(long)]
    wide: bool,
    /// Read the jobs from this file of job ads (`-l` or `-json` output, or
    /// a history file) instead of asking the schedd.
    #[arg(long, value_name = "FILE", conflicts_with = "userlog")]
    jobads: Option<std::path::PathBuf>,
    /// Show the jobs of this job event log with their last status, without
    /// asking the schedd.
    #[arg(long, value_name = "FILE")]
    userlog: Option<std::path::PathBuf>,
    /// Why the jobs do or do not match: each clause of their Requirements
    /// with how many slots satisfy it, and a summary of the pool's slots.
    #[arg(long = "better-analyze", alias = "analyze")]
    better_analyze: bool,
    #[command(flatten)]
    schedd: ScheddArgs,
}

/// Which schedd a queue command talks to: this host's by default.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ScheddArgs {
    /// Every schedd of the pool, as listed by the collector
    /// (condor_q -global).
    #[arg(long, conflicts_with = "name")]
    global: bool,
    /// The schedd of this name, as listed by the collector.
    #[arg(long, value_name = "SCHEDD")]
    name: Option<String>,
    /// Ask this pool's collector, `HOST[:PORT]` (port 9618 by default).
    #[arg(long, value_name = "HOST[:PORT]")]
    pool: Option<String>,
}

/// The attributes the table views print.
const TABLE_ATTRS: &[&str] = &[
    "ClusterId",
    "ProcId",
    "Owner",
    "JobStatus",
    "QDate",
    "JobBatchName",
    "TotalSubmitProcs",
    "Cmd",
    "Args",
    "Arguments",
    "JobPrio",
    "ImageSize",
    "RemoteWallClockTime",
    "JobCurrentStartDate",
    "EnteredCurrentStatus",
    "HoldReason",
    "HoldReasonCode",
    "HoldReasonSubCode",
    "RemoteHost",
    "JobUniverse",
    "RequestCpus",
    "RequestMemory",
    "NumShadowStarts",
    "LastRemoteHost",
    "DAGManJobId",
    "DAGNodeName",
];

/// Which table `skua q` prints (condor_q's choice: `-totals`, then
/// `-hold`, then batches unless `-nobatch`/`-run`/`-idle`, then `-dag`,
/// `-run`, `-idle`, the job list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    Totals,
    Hold,
    Io,
    Batches,
    Dag,
    Run,
    Idle,
    Jobs,
}

impl View {
    fn of(a: &QArgs) -> View {
        if a.totals {
            View::Totals
        } else if a.hold {
            View::Hold
        } else if a.io {
            View::Io
        } else if !(a.nobatch || a.run || a.idle) {
            View::Batches
        } else if a.dag {
            View::Dag
        } else if a.run {
            View::Run
        } else if a.idle {
            View::Idle
        } else {
            View::Jobs
        }
    }

    /// Whether the schedd's own batch summary serves this view.
    fn uses_batches(self) -> bool {
        matches!(self, View::Totals | View::Batches)
    }
}

/// The constraint `-run`, `-hold` and `-idle` add (condor_q's), and-ed
/// with the user's own.
fn status_constraint(a: &QArgs) -> Result<Option<String>> {
    if [a.run, a.hold, a.idle].iter().filter(|x| **x).count() > 1 {
        bail!("-run and -hold/held or -idle are incompatible");
    }
    let by_status = if a.run {
        Some("JobStatus == 2 || JobStatus == 6 || JobStatus == 7")
    } else if a.hold {
        Some("JobStatus == 5")
    } else if a.idle {
        Some("JobStatus == 1")
    } else {
        None
    };
    Ok(match (&a.constraint, by_status) {
        (Some(c), Some(s)) => Some(format!("({c}) && ({s})")),
        (Some(c), None) => Some(c.clone()),
        (None, Some(s)) => Some(s.to_string()),
        (None, None) => None,
    })
}

/// The terminal's width when standard output is one (the table views are
/// cut to it unless `-wide`, as condor_q does): `COLUMNS`, else 80;
/// `None` for a pipe or file.
fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    Some(
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .filter(|w| *w > 0)
            .unwrap_or(80),
    )
}

/// A table view's text as printed: cut to the terminal's width unless
/// `-wide` (or `-hold`, which condor_q never cuts).
fn printed(text: String, a: &QArgs, view: View) -> String {
    match terminal_width() {
        Some(w) if !a.wide && view != View::Hold => q_fmt::fit_width(&text, w.saturating_sub(1)),
        _ => text,
    }
}

pub fn q(a: QArgs) -> ExitCode {
    report("q", q_inner(a))
}

fn q_inner(a: QArgs) -> Result<ExitCode> {
    let user = current_user();
    let constraint = status_constraint(&a)?;
    let mut selector = selector_of(&a.names, constraint, false)?;
    let form = Form::of(&a.output, &a.format)?;
    let view = View::of(&a);
    if a.jobads.is_some() || a.userlog.is_some() {
        return q_from_file(&a, selector, form, view, user);
    }
    let only_mine = !a.allusers && selector.jobs.is_empty() && selector.owners.is_empty();
    if only_mine {
        selector.owners.push(user.clone());
    }
    let projection: Vec<String> = match &form {
        Some(f) => f.projection(),
        None => TABLE_ATTRS.iter().map(|s| s.to_string()).collect(),
    };
    let config = load_config()?;
    let summary = form.is_none() && view.uses_batches() && a.limit.is_none();
    let query = JobQuery {
        selector,
        projection: if summary { Vec::new() } else { projection },
        limit: if summary { None } else { a.limit },
        summary,
    };
    if a.schedd.global || a.schedd.name.is_some() {
        if a.better_analyze && a.schedd.global {
            bail!("-better-analyze looks at one schedd: name it with -name");
        }
        return q_across(&a, &config, query, form, user, only_mine);
    }
    let client = client_for(&config, "SCHEDD", TIMEOUT)?.with_max_response_bytes(1 << 31);
    if a.better_analyze {
        return better_analyze(&config, &client, query.selector, &user);
    }
    let rt = runtime()?;
    let reply: JobQueryReply = rt.block_on(client.command(&routes::SCHEDD_QUERY, Some(&query)))?;
    let mut ads = parse_ads(&reply.ads)?;
    if let Some(nodes) = dag_nodes_query(&a, &query) {
        // condor_q -dag C: the jobs of DAG C as well
        let more: JobQueryReply =
            rt.block_on(client.command(&routes::SCHEDD_QUERY, Some(&nodes)))?;
        add_new_jobs(&mut ads, parse_ads(&more.ads)?);
    }
    let now = skua_daemon::now_secs();
    if let Some(form) = form {
        print!("{}", form.render(&ads, now));
        return Ok(ExitCode::SUCCESS);
    }
    let all = totals_of(&reply.status_counts);
    let (schedd_name, schedd_addr) = schedd_identity(&config, &client);
    let ctx = q_fmt::QContext {
        schedd_name,
        schedd_addr,
        now,
        utc_offset: utc_offset(now),
        user,
        only_mine,
        label: None,
    };
    let batches = schedd_batches(&reply, &ads, summary);
    let text = q_section(view, &batches, &ads, Some(&all), &ctx);
    print!("{}", printed(text, &a, view));
    Ok(ExitCode::SUCCESS)
}

/// With `-dag -nobatch` and clusters named (`skua q -dag 20`), the query
/// for the node jobs of those DAGs (`DAGManJobId` one of them), under the
/// same status constraint, as condor_q adds them.
fn dag_nodes_query(a: &QArgs, query: &JobQuery) -> Option<JobQuery> {
    if View::of(a) != View::Dag || query.summary {
        return None;
    }
    let clusters: Vec<&str> = query
        .selector
        .jobs
        .iter()
        .filter(|j| !j.contains('.'))
        .map(String::as_str)
        .collect();
    if clusters.is_empty() {
        return None;
    }
    let dags = clusters
        .iter()
        .map(|c| format!("DAGManJobId == {c}"))
        .collect::<Vec<_>>()
        .join(" || ");
    let constraint = match &query.selector.constraint {
        Some(c) => format!("({c}) && ({dags})"),
        None => dags,
    };
    Some(JobQuery {
        selector: JobSelector {
            constraint: Some(constraint),
            ..JobSelector::default()
        },
        ..query.clone()
    })
}

/// Appends the ads of `more` whose job is not in `ads` yet.
fn add_new_jobs(ads: &mut Vec<ClassAd>, more: Vec<ClassAd>) {
    let id = |ad: &ClassAd| {
        let int = |n: &str| match ad.lookup(n) {
            Some(classad::Expr::Lit(v)) => v.as_int(),
            _ => None,
        };
        (int("ClusterId"), int("ProcId"))
    };
    let have: std::collections::HashSet<_> = ads.iter().map(id).collect();
    ads.extend(more.into_iter().filter(|ad| !have.contains(&id(ad))));
}

/// The batch rows of a reply: the schedd's own summary, or made from the
/// ads when the query was not a summary (`-limit`).
fn schedd_batches(reply: &JobQueryReply, ads: &[ClassAd], summary: bool) -> Vec<BatchRow> {
    if summary {
        reply.batches.clone()
    } else {
        q_fmt::batches_of_ads(ads)
    }
}

/// Whether `ad` is one of the jobs `sel` names (ids and owners; any job
/// when it names none) and its constraint holds.
fn selected(
    sel: &JobSelector,
    constraint: Option<&classad::Expr>,
    ad: &ClassAd,
    ev: &mut classad::Evaluator,
) -> bool {
    let int = |n: &str| match ad.lookup(n) {
        Some(classad::Expr::Lit(v)) => v.as_int(),
        _ => None,
    };
    let (c, p) = (int("ClusterId"), int("ProcId"));
    let by_id = sel.jobs.iter().any(|j| match j.split_once('.') {
        Some((jc, jp)) => {
            Some(jc) == c.map(|x| x.to_string()).as_deref()
                && Some(jp) == p.map(|x| x.to_string()).as_deref()
        }
        None => Some(j.as_str()) == c.map(|x| x.to_string()).as_deref(),
    });
    let by_owner = ad_string(ad, "Owner").is_some_and(|o| sel.owners.contains(&o));
    let named = (sel.jobs.is_empty() && sel.owners.is_empty()) || by_id || by_owner;
    named && constraint.is_none_or(|e| ev.eval(e, Some(ad), None).is_true())
}

/// The ads of `ads` that `sel` selects, in order, at most `limit`.
fn select_ads(
    ads: Vec<ClassAd>,
    sel: &JobSelector,
    limit: Option<usize>,
    now: i64,
) -> Result<Vec<ClassAd>> {
    let constraint = sel
        .constraint
        .as_deref()
        .map(classad::parse_expr)
        .transpose()
        .context("-constraint")?;
    let mut ev = skua_negotiation::evaluator(now, skua_daemon::local_utc_offset);
    Ok(ads
        .into_iter()
        .filter(|ad| selected(sel, constraint.as_ref(), ad, &mut ev))
        .take(limit.unwrap_or(usize::MAX))
        .collect())
}

/// Reads a file the user named, with their own rights (the tool runs as
/// the user).
fn read_user_file(path: &std::path::Path, what: &str) -> Result<String> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read {what} {}", path.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{what} {} is not UTF-8 text", path.display()))
}

/// `skua q -jobads FILE` / `-userlog FILE`: the queue as the file has it,
/// every job of it (no "only yours"), with the same views and filters.
fn q_from_file(
    a: &QArgs,
    selector: JobSelector,
    form: Option<Form>,
    view: View,
    user: String,
) -> Result<ExitCode> {
    if a.better_analyze || a.schedd.global || a.schedd.name.is_some() {
        bail!("-jobads and -userlog read a file: -better-analyze, -global and -name do not apply");
    }
    let now = skua_daemon::now_secs();
    let offset = utc_offset(now);
    let (ads, label) = match (&a.jobads, &a.userlog) {
        (Some(path), _) => {
            let text = read_user_file(path, "the job ads file")?;
            let ads = q_source::parse_ads_file(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("{}", path.display()))?;
            (ads, format!("Jobads: {}", path.display()))
        }
        (None, Some(path)) => {
            let text = read_user_file(path, "the user log")?;
            let year = classad::time::broken_down(now, offset as i32).year;
            let ads = q_source::ads_from_userlog(&text, offset, year)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("{}", path.display()))?;
            (ads, format!("Userlog: {}", path.display()))
        }
        (None, None) => bail!("name a file with -jobads or -userlog"),
    };
    let ads = select_ads(ads, &selector, a.limit, now)?;
    if let Some(form) = form {
        print!("{}", form.render(&ads, now));
        return Ok(ExitCode::SUCCESS);
    }
    let ctx = q_fmt::QContext {
        schedd_name: String::new(),
        schedd_addr: String::new(),
        now,
        utc_offset: offset,
        user,
        only_mine: false,
        label: Some(label),
    };
    let batches = q_fmt::batches_of_ads(&ads);
    let text = q_section(view, &batches, &ads, None, &ctx);
    print!("{}", printed(text, a, view));
    Ok(ExitCode::SUCCESS)
}

/// One schedd's (or file's) section of `skua q`'s table output: the
/// header line, the table of `view`, the totals (which condor_q leaves
/// out of `-run` and `-idle`).
fn q_section(
    view: View,
    batches: &[BatchRow],
    ads: &[ClassAd],
    all: Option<&q_fmt::Totals>,
    ctx: &q_fmt::QContext,
) -> String {
    match view {
        View::Totals => {
            let mut out = q_fmt::header(ctx);
            out.push_str(&q_fmt::totals_lines(
                &q_fmt::Totals::of_batches(batches),
                all,
                ctx,
            ));
            out
        }
        View::Hold => q_fmt::format_held(ads, all, ctx),
        View::Io => q_fmt::format_io(ads, all, ctx),
        View::Batches => q_fmt::format_batches(batches, all, ctx),
        View::Dag => q_fmt::format_dag(ads, all, ctx),
        View::Run => q_fmt::format_running(ads, ctx),
        View::Idle => q_fmt::format_idle(ads, ctx),
        View::Jobs => q_fmt::format_jobs(ads, all, ctx),
    }
}

/// A schedd as the collector lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ScheddTarget {
    name: String,
    /// `MyAddress`, the sinful string it is reached at.
    address: String,
    machine: String,
}

fn ad_string(ad: &ClassAd, name: &str) -> Option<String> {
    match ad.lookup(name) {
        Some(classad::Expr::Lit(v)) => v.as_string(),
        _ => None,
    }
}

/// The schedds the collector knows (only the one named `only`, if given),
/// by name.
fn schedd_targets(
    config: &skua_config::Config,
    pool: Option<&str>,
    only: Option<&str>,
) -> Result<Vec<ScheddTarget>> {
    let collector = collector_client(config, pool, Duration::from_secs(20))?;
    let reply: skua_proto::QueryReply = runtime()?
        .block_on(collector.command(
            &routes::COLLECTOR_QUERY,
            Some(&skua_proto::Query {
                ad_type: "Scheduler".into(),
                constraint: None,
                projection: vec!["Name".into(), "MyAddress".into(), "Machine".into()],
            }),
        ))
        .context("asking the collector for the schedds")?;
    let mut targets = Vec::new();
    for text in &reply.ads {
        let ad = classad::parse_ad(text).context("the collector sent an ad that does not parse")?;
        let (Some(name), Some(address)) = (ad_string(&ad, "Name"), ad_string(&ad, "MyAddress"))
        else {
            continue;
        };
        if only.is_some_and(|n| n != name) {
            continue;
        }
        let machine = ad_string(&ad, "Machine").unwrap_or_else(|| address.clone());
        targets.push(ScheddTarget {
            name,
            address,
            machine,
        });
    }
    targets.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(targets)
}

/// This host's schedd's name: `SCHEDD_NAME`, else the host's full name.
pub(crate) fn local_schedd_name(config: &skua_config::Config) -> String {
    let host = skua_daemon::system_config::host_facts(&skua_daemon::system_config::environment())
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".into());
    config.get("SCHEDD_NAME").ok().flatten().unwrap_or(host)
}

/// A client for the schedd `t`: this host's own through its usual way in
/// (the Unix socket: the user acts as themselves), any other at its
/// address over the network (see [`client_at_address`]: the user's token
/// if they have one, else anonymous, so READ at most).
fn schedd_client(config: &skua_config::Config, t: &ScheddTarget) -> Result<skua_net::Client> {
    if t.name == local_schedd_name(config) {
        return client_for(config, "SCHEDD", TIMEOUT);
    }
    client_at_address(config, &t.address, TIMEOUT)
}

/// The one schedd named `name` in the collector (`-name`).
fn named_schedd(config: &skua_config::Config, s: &ScheddArgs, name: &str) -> Result<ScheddTarget> {
    schedd_targets(config, s.pool.as_deref(), Some(name))?
        .into_iter()
        .next()
        .with_context(|| format!("the collector has no record of a schedd named {name}"))
}

/// An address as condor_q shows it: the parameters after `?` elided.
fn shown_address(address: &str) -> String {
    match address.split_once('?') {
        Some((base, _)) => format!("{base}?...>"),
        None => address.to_string(),
    }
}

/// `skua q -global` / `skua q -name`: each schedd asked in turn, one
/// section each; a schedd that does not answer is reported on stderr and
/// the others are still shown.
fn q_across(
    a: &QArgs,
    config: &skua_config::Config,
    query: JobQuery,
    form: Option<Form>,
    user: String,
    only_mine: bool,
) -> Result<ExitCode> {
    let targets = match &a.schedd.name {
        Some(name) => vec![named_schedd(config, &a.schedd, name)?],
        None => schedd_targets(config, a.schedd.pool.as_deref(), None)?,
    };
    if targets.is_empty() {
        println!("All queues are empty");
        return Ok(ExitCode::SUCCESS);
    }
    let rt = runtime()?;
    if a.better_analyze {
        let client = schedd_client(config, &targets[0])?.with_max_response_bytes(1 << 31);
        return better_analyze(config, &client, query.selector, &user);
    }
    let mut failed = 0;
    let mut ads_of_all = Vec::new();
    for t in &targets {
        let reply: Result<JobQueryReply> = schedd_client(config, t).and_then(|c| {
            let c = c.with_max_response_bytes(1 << 31);
            Ok(rt.block_on(c.command(&routes::SCHEDD_QUERY, Some(&query)))?)
        });
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "\n-- Failed to fetch ads from: {} : {}\n{e:#}",
                    shown_address(&t.address),
                    t.machine
                );
                failed += 1;
                continue;
            }
        };
        let ads = parse_ads(&reply.ads)?;
        if form.is_some() {
            ads_of_all.extend(ads);
            continue;
        }
        let all = totals_of(&reply.status_counts);
        // as condor_q -global: a schedd with nothing to show gets no section
        if a.schedd.global && ads.is_empty() && reply.batches.is_empty() && all.jobs == 0 {
            continue;
        }
        let now = skua_daemon::now_secs();
        let ctx = q_fmt::QContext {
            schedd_name: t.name.clone(),
            schedd_addr: shown_address(&t.address),
            now,
            utc_offset: utc_offset(now),
            user: user.clone(),
            only_mine,
            label: None,
        };
        let view = View::of(a);
        let batches = schedd_batches(&reply, &ads, query.summary);
        print!(
            "{}",
            printed(q_section(view, &batches, &ads, Some(&all), &ctx), a, view)
        );
    }
    if let Some(form) = form {
        print!("{}", form.render(&ads_of_all, skua_daemon::now_secs()));
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `skua q -better-analyze`: the jobs' ads from the schedd, the slots from
/// the collector, the analysis from the negotiation core.
fn better_analyze(
    config: &skua_config::Config,
    client: &skua_net::Client,
    selector: JobSelector,
    user: &str,
) -> Result<ExitCode> {
    let query = JobQuery {
        selector,
        ..JobQuery::default()
    };
    let rt = runtime()?;
    let reply: JobQueryReply = rt.block_on(client.command(&routes::SCHEDD_QUERY, Some(&query)))?;
    let jobs = parse_ads(&reply.ads)?;
    let collector = client_for(config, "COLLECTOR", Duration::from_secs(20))?;
    let slots_reply: skua_proto::QueryReply = rt.block_on(collector.command(
        &routes::COLLECTOR_QUERY,
        Some(&skua_proto::Query {
            ad_type: "Machine".into(),
            constraint: None,
            projection: Vec::new(),
        }),
    ))?;
    let slots = slots_reply
        .ads
        .iter()
        .map(|t| classad::parse_ad(t).context("the collector sent an ad that does not parse"))
        .collect::<Result<Vec<_>>>()?;
    let now = skua_daemon::now_secs();
    let (schedd_name, schedd_addr) = schedd_identity(config, client);
    let mut ev = skua_negotiation::evaluator(now, skua_daemon::local_utc_offset);
    let mut out = String::new();
    for job in &jobs {
        let owner = match job.lookup("Owner") {
            Some(classad::Expr::Lit(v)) => v.as_string().unwrap_or_else(|| user.to_string()),
            _ => user.to_string(),
        };
        let analysis = skua_negotiation::analyze(&mut ev, job, &slots, &owner);
        out.push_str(&q_fmt::format_analysis(
            job,
            &analysis,
            &schedd_name,
            &schedd_addr,
        ));
        if q_fmt::is_parallel(job) {
            let earlier = earlier_idle_parallel(&rt, client, job)?;
            let a = skua_negotiation::dedicated::analyze_parallel(job, &slots, &earlier, &mut ev);
            out.push_str(&q_fmt::format_parallel_analysis(&a));
        }
        out.push_str(&q_fmt::format_undefined(
            &skua_negotiation::undefined_target_attrs(job, &slots),
        ));
    }
    if jobs.is_empty() {
        out.push_str("No jobs matched the selection.\n");
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// The clusters of idle parallel jobs ahead of `job` in the queue (the
/// dedicated scheduler runs them in FIFO order).
fn earlier_idle_parallel(
    rt: &tokio::runtime::Runtime,
    client: &skua_net::Client,
    job: &classad::ClassAd,
) -> Result<Vec<u32>> {
    let cluster = match job.lookup("ClusterId") {
        Some(classad::Expr::Lit(v)) => v.as_int().unwrap_or(0),
        _ => 0,
    };
    let query = JobQuery {
        selector: JobSelector {
            constraint: Some(format!(
                "JobUniverse == 11 && JobStatus == 1 && ClusterId < {cluster}"
            )),
            all: true,
            ..JobSelector::default()
        },
        projection: vec!["ClusterId".into()],
        ..JobQuery::default()
    };
    let reply: JobQueryReply = rt.block_on(client.command(&routes::SCHEDD_QUERY, Some(&query)))?;
    let mut clusters: Vec<u32> = parse_ads(&reply.ads)?
        .iter()
        .filter_map(|ad| match ad.lookup("ClusterId") {
            Some(classad::Expr::Lit(v)) => v.as_int().and_then(|c| u32::try_from(c).ok()),
            _ => None,
        })
        .collect();
    clusters.sort_unstable();
    clusters.dedup();
    Ok(clusters)
}

fn totals_of(counts: &[u64]) -> q_fmt::Totals {
    let c = |i: usize| counts.get(i).copied().unwrap_or(0);
    q_fmt::Totals {
        jobs: counts.iter().sum(),
        idle: c(1),
        running: c(2) + c(6),
        removed: c(3),
        completed: c(4),
        held: c(5),
        suspended: c(7),
    }
}

/// The schedd's name and address for the header line.
fn schedd_identity(config: &skua_config::Config, client: &skua_net::Client) -> (String, String) {
    let name = local_schedd_name(config);
    let network = skua_daemon::context::Locator::new(config, "SCHEDD")
        .and_then(|l| l.network_sinful())
        .ok();
    let addr = match (network, client.endpoint()) {
        (Some(sinful), _) => sinful.to_string(),
        (None, skua_net::Endpoint::Tcp(a) | skua_net::Endpoint::Tls(a, _)) => format!("<{a}>"),
        (None, skua_net::Endpoint::Unix(p)) => format!("<{}>", p.display()),
    };
    (name, addr)
}

// ----- skua rm / hold / release --------------------------------------------

#[derive(clap::Args)]
pub struct ActArgs {
    /// Job ids (C or C.P) or owners.
    names: Vec<String>,
    /// Jobs for which this ClassAd expression is true.
    #[arg(long)]
    constraint: Option<String>,
    /// Every job (of yours, unless you are an administrator).
    #[arg(short = 'a', long = "all")]
    all: bool,
    /// The reason recorded in the job.
    #[arg(long)]
    reason: Option<String>,
    /// `rm` only: drop jobs already in the Removed state at once.
    #[arg(long)]
    forcex: bool,
    /// `-name SCHEDD` acts at that schedd (the user's rights are checked
    /// there: without a token of theirs, a remote schedd refuses).
    #[command(flatten)]
    schedd: ScheddArgs,
}

pub fn act(kind: JobActionKind, a: ActArgs) -> ExitCode {
    let name = match kind {
        JobActionKind::Hold => "hold",
        JobActionKind::Release => "release",
        JobActionKind::Remove | JobActionKind::RemoveForce => "rm",
    };
    report(name, act_inner(kind, a))
}

fn act_inner(mut kind: JobActionKind, a: ActArgs) -> Result<ExitCode> {
    if a.forcex {
        if kind != JobActionKind::Remove {
            bail!("-forcex is an option of rm");
        }
        kind = JobActionKind::RemoveForce;
    }
    let selector = selector_of(&a.names, a.constraint.clone(), a.all)?;
    if selector == JobSelector::default() {
        bail!("name the jobs: job ids (C or C.P), user names, -constraint EXPR or -all");
    }
    if a.schedd.global {
        bail!("-global is for skua q; name one schedd with -name");
    }
    let config = load_config()?;
    let (client, at) = match &a.schedd.name {
        None => (client_for(&config, "SCHEDD", TIMEOUT)?, None),
        Some(name) => {
            let t = named_schedd(&config, &a.schedd, name)?;
            let at = format!("the schedd {} at {}", t.name, t.address);
            (schedd_client(&config, &t)?, Some(at))
        }
    };
    let body = JobAction {
        action: kind,
        selector,
        reason: a.reason,
    };
    let reply: Result<JobActionReply, _> =
        runtime()?.block_on(client.command(&routes::SCHEDD_ACT, Some(&body)));
    let reply = match at {
        Some(at) => reply.with_context(|| at)?,
        None => reply?,
    };
    for m in &reply.messages {
        println!("{m}");
    }
    Ok(if reply.all_done {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

// ----- skua history -----------------------------------------------------------

#[derive(clap::Args)]
pub struct HistoryArgs {
    /// Job ids (C or C.P) or owners.
    names: Vec<String>,
    /// Only jobs for which this ClassAd expression is true.
    #[arg(long)]
    constraint: Option<String>,
    /// At most this many jobs (newest first, or oldest with -forwards).
    #[arg(long, visible_alias = "match", value_name = "N")]
    limit: Option<usize>,
    /// Oldest first (the default is newest first).
    #[arg(long, conflicts_with = "backwards")]
    forwards: bool,
    /// Newest first (the default).
    #[arg(long)]
    backwards: bool,
    /// Stop at this job (`C` or `C.P`), or at the first job for which this
    /// ClassAd expression is true, reading newest first; that job and older
    /// ones are not shown.
    #[arg(long, value_name = "JOBID|EXPR")]
    since: Option<String>,
    /// Read this history file (HTCondor's history-file format, or ads as
    /// `-l` or `-json` print them; oldest first in the file) instead of
    /// asking the schedd.
    #[arg(long, value_name = "FILE")]
    file: Option<std::path::PathBuf>,
    #[command(flatten)]
    output: AdOutputArgs,
    /// A printf-style format for an attribute (repeatable, applied in
    /// order, with no newline but the formats' own: `-format "%d\n" ProcId`).
    #[arg(
        short = 'f',
        long = "format",
        num_args = 2,
        value_names = ["FMT", "ATTR"],
        action = clap::ArgAction::Append,
        allow_hyphen_values = true
    )]
    format: Vec<String>,
}

/// Where `skua history -since` stops.
#[derive(Clone, Debug, PartialEq)]
enum Since {
    Cluster(i64),
    Job(i64, i64),
    Expr(classad::Expr),
}

impl Since {
    fn parse(s: &str) -> Result<Since> {
        if let Ok(c) = s.parse::<i64>() {
            return Ok(Since::Cluster(c));
        }
        if let Some((c, p)) = s.split_once('.') {
            if let (Ok(c), Ok(p)) = (c.parse(), p.parse()) {
                return Ok(Since::Job(c, p));
            }
        }
        classad::parse_expr(s).map(Since::Expr).with_context(|| {
            format!("-since {s:?} is neither a job id (C or C.P) nor a ClassAd expression")
        })
    }

    fn reached(&self, ad: &ClassAd, ev: &mut classad::Evaluator) -> bool {
        let int = |n: &str| match ad.lookup(n) {
            Some(classad::Expr::Lit(v)) => v.as_int(),
            _ => None,
        };
        match self {
            Since::Cluster(c) => int("ClusterId") == Some(*c),
            Since::Job(c, p) => int("ClusterId") == Some(*c) && int("ProcId") == Some(*p),
            Since::Expr(e) => ev.eval(e, Some(ad), None).is_true(),
        }
    }
}

/// The history as shown: `newest_first` ads cut at `since`, then in the
/// order asked for, then at most `limit`.
fn history_order(
    newest_first: Vec<ClassAd>,
    since: Option<&Since>,
    forwards: bool,
    limit: Option<usize>,
    now: i64,
) -> Vec<ClassAd> {
    let mut ev = skua_negotiation::evaluator(now, skua_daemon::local_utc_offset);
    let mut ads: Vec<ClassAd> = match since {
        Some(s) => newest_first
            .into_iter()
            .take_while(|ad| !s.reached(ad, &mut ev))
            .collect(),
        None => newest_first,
    };
    if forwards {
        ads.reverse();
    }
    ads.truncate(limit.unwrap_or(usize::MAX));
    ads
}

pub fn history(a: HistoryArgs) -> ExitCode {
    report("history", history_inner(a))
}

fn history_inner(a: HistoryArgs) -> Result<ExitCode> {
    let selector = selector_of(&a.names, a.constraint.clone(), false)?;
    let form = Form::of(&a.output, &a.format)?;
    let since = a.since.as_deref().map(Since::parse).transpose()?;
    let now = skua_daemon::now_secs();
    let newest_first = match &a.file {
        Some(path) => {
            let text = read_user_file(path, "the history file")?;
            let mut ads = q_source::parse_ads_file(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("{}", path.display()))?;
            ads.reverse();
            select_ads(ads, &selector, None, now)?
        }
        None => {
            // the schedd answers newest first: it can apply the limit only
            // when nothing else decides which jobs are shown
            let whole = since.is_some() || a.forwards;
            // -since may look at any attribute
            let projection = match (&form, &since) {
                (Some(f), None) => f.projection(),
                _ => Vec::new(),
            };
            let config = load_config()?;
            let client = client_for(&config, "SCHEDD", TIMEOUT)?.with_max_response_bytes(1 << 31);
            let query = JobQuery {
                selector,
                projection,
                limit: if whole { None } else { a.limit },
                summary: false,
            };
            let reply: JobQueryReply =
                runtime()?.block_on(client.command(&routes::SCHEDD_HISTORY, Some(&query)))?;
            parse_ads(&reply.ads)?
        }
    };
    let ads = history_order(newest_first, since.as_ref(), a.forwards, a.limit, now);
    let out = match form {
        Some(form) => form.render(&ads, now),
        None => q_fmt::format_history(&ads, utc_offset(now)),
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

// ----- skua qedit / prio ------------------------------------------------------

#[derive(clap::Args)]
pub struct QeditArgs {
    /// Jobs for which this ClassAd expression is true (then every
    /// argument is an attribute/value pair).
    #[arg(long)]
    constraint: Option<String>,
    /// `JOBS ATTR VALUE [ATTR VALUE ...]`: JOBS is C, C.P or an owner.
    #[arg(required = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub fn qedit(a: QeditArgs) -> ExitCode {
    report("qedit", qedit_inner(a))
}

fn qedit_inner(a: QeditArgs) -> Result<ExitCode> {
    let (selector, pairs) = match &a.constraint {
        Some(_) => (selector_of(&[], a.constraint.clone(), false)?, &a.args[..]),
        None => {
            let (first, rest) = a.args.split_first().context("name the jobs")?;
            (selector_of(std::slice::from_ref(first), None, false)?, rest)
        }
    };
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        bail!("give attribute and value pairs: skua qedit JOBS ATTR VALUE [ATTR VALUE ...]");
    }
    let config = load_config()?;
    let client = client_for(&config, "SCHEDD", TIMEOUT)?;
    let rt = runtime()?;
    let mut ok = true;
    for pair in pairs.chunks(2) {
        classad::parse_expr(&pair[1])
            .with_context(|| format!("the value of {} is not a ClassAd expression", pair[0]))?;
        let body = SetAttribute {
            selector: selector.clone(),
            name: pair[0].clone(),
            value: pair[1].clone(),
        };
        let reply: JobActionReply =
            rt.block_on(client.command(&routes::SCHEDD_SET_ATTRIBUTE, Some(&body)))?;
        for m in &reply.messages {
            println!("{m}");
        }
        ok &= reply.all_done;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[derive(clap::Args)]
pub struct PrioArgs {
    /// The new priority (an integer; higher runs first among your jobs).
    #[arg(short = 'p', allow_negative_numbers = true)]
    priority: Option<i64>,
    /// `+N` or `-N` to change the priority relative to each job's current
    /// one, then job ids (C or C.P) or owners; `-a` for all your jobs.
    #[arg(allow_hyphen_values = true)]
    args: Vec<String>,
    /// Every job of yours.
    #[arg(short = 'a', long = "all")]
    all: bool,
}

pub fn prio(a: PrioArgs) -> ExitCode {
    report("prio", prio_inner(a))
}

fn prio_inner(a: PrioArgs) -> Result<ExitCode> {
    let mut relative = None;
    let mut names = Vec::new();
    for s in &a.args {
        if (s.starts_with('+') || s.starts_with('-')) && s[1..].parse::<i64>().is_ok() {
            relative = s.parse::<i64>().ok().or_else(|| s[1..].parse::<i64>().ok());
        } else {
            names.push(s.clone());
        }
    }
    let selector = selector_of(&names, None, a.all)?;
    if selector == JobSelector::default() {
        bail!("name the jobs: job ids (C or C.P), user names or -a");
    }
    let config = load_config()?;
    let client = client_for(&config, "SCHEDD", TIMEOUT)?;
    let rt = runtime()?;
    let updates: Vec<(JobSelector, i64)> = match (a.priority, relative) {
        (Some(p), None) => vec![(selector, p)],
        (None, Some(delta)) => {
            // each job's new value depends on its current one
            let mut query_sel = selector.clone();
            if query_sel.all {
                query_sel.all = false;
                query_sel.owners.push(current_user());
            }
            let reply: JobQueryReply = rt.block_on(client.command(
                &routes::SCHEDD_QUERY,
                Some(&JobQuery {
                    selector: query_sel,
                    projection: vec!["ClusterId".into(), "ProcId".into(), "JobPrio".into()],
                    limit: None,
                    summary: false,
                }),
            ))?;
            let mut out = Vec::new();
            for ad in parse_ads(&reply.ads)? {
                let get = |n: &str| match ad.lookup(n) {
                    Some(classad::Expr::Lit(v)) => v.as_int(),
                    _ => None,
                };
                let (Some(c), Some(p)) = (get("ClusterId"), get("ProcId")) else {
                    continue;
                };
                out.push((
                    JobSelector {
                        jobs: vec![format!("{c}.{p}")],
                        ..JobSelector::default()
                    },
                    get("JobPrio").unwrap_or(0).saturating_add(delta),
                ));
            }
            out
        }
        _ => bail!("give the priority: -p N, or +N / -N to change it"),
    };
    let mut ok = true;
    for (sel, value) in updates {
        let reply: JobActionReply = rt.block_on(client.command(
            &routes::SCHEDD_SET_ATTRIBUTE,
            Some(&SetAttribute {
                selector: sel,
                name: "JobPrio".into(),
                value: value.to_string(),
            }),
        ))?;
        ok &= reply.all_done;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_ids_and_owners() {
        let sel = selector_of(
            &["12".into(), "3.4".into(), "alice".into()],
            Some("JobPrio > 1".into()),
            false,
        )
        .unwrap();
        assert_eq!(sel.jobs, vec!["12", "3.4"]);
        assert_eq!(sel.owners, vec!["alice"]);
        assert_eq!(sel.constraint.as_deref(), Some("JobPrio > 1"));
    }

    #[test]
    fn a_bad_constraint_is_refused_before_asking_the_schedd() {
        let e = selector_of(&[], Some("JobPrio >".into()), false).unwrap_err();
        assert!(format!("{e:#}").contains("-constraint"), "{e:#}");
    }

    #[test]
    fn addresses_are_shown_without_their_parameters() {
        assert_eq!(shown_address("<10.0.0.5:9618>"), "<10.0.0.5:9618>");
        assert_eq!(
            shown_address("<10.0.0.5:9618?sock=schedd>"),
            "<10.0.0.5:9618?...>"
        );
    }

    fn hist(ids: &[(i64, i64)]) -> Vec<ClassAd> {
        ids.iter()
            .map(|(c, p)| {
                classad::parse_ad(&format!(
                    "[ ClusterId = {c}; ProcId = {p}; ExitCode = {p} ]"
                ))
                .unwrap()
            })
            .collect()
    }

    fn ids(ads: &[ClassAd]) -> Vec<String> {
        ads.iter()
            .map(|a| {
                let int = |n: &str| match a.lookup(n) {
                    Some(classad::Expr::Lit(v)) => v.as_int().unwrap_or(-1),
                    _ => -1,
                };
                format!("{}.{}", int("ClusterId"), int("ProcId"))
            })
            .collect()
    }

    #[test]
    fn history_since_forwards_and_match() {
        // newest first, as the schedd answers
        let newest = || hist(&[(4, 1), (4, 0), (3, 0), (2, 0), (1, 0)]);
        assert_eq!(
            ids(&history_order(newest(), None, false, Some(2), 0)),
            ["4.1", "4.0"]
        );
        assert_eq!(
            ids(&history_order(newest(), None, true, Some(2), 0)),
            ["1.0", "2.0"]
        );
        let since = Since::parse("3.0").unwrap();
        assert_eq!(since, Since::Job(3, 0));
        assert_eq!(
            ids(&history_order(newest(), Some(&since), false, None, 0)),
            ["4.1", "4.0"]
        );
        assert_eq!(
            ids(&history_order(newest(), Some(&since), true, None, 0)),
            ["4.0", "4.1"]
        );
        let cluster = Since::parse("4").unwrap();
        assert!(history_order(newest(), Some(&cluster), false, None, 0).is_empty());
        let expr = Since::parse("ExitCode == 0 && ClusterId < 4").unwrap();
        assert_eq!(
            ids(&history_order(newest(), Some(&expr), false, None, 0)),
            ["4.1", "4.0"]
        );
        assert!(Since::parse("3.0 +").is_err());
    }

    #[test]
    fn file_ads_are_selected_by_id_owner_and_constraint() {
        let ads = || {
            vec![
                classad::parse_ad("[ ClusterId = 1; ProcId = 0; Owner = \"ann\"; JobStatus = 1 ]")
                    .unwrap(),
                classad::parse_ad("[ ClusterId = 1; ProcId = 1; Owner = \"ann\"; JobStatus = 2 ]")
                    .unwrap(),
                classad::parse_ad("[ ClusterId = 2; ProcId = 0; Owner = \"bob\"; JobStatus = 2 ]")
                    .unwrap(),
            ]
        };
        let sel = |names: &[&str], c: Option<&str>| {
            let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            selector_of(&names, c.map(String::from), false).unwrap()
        };
        let pick = |s: JobSelector, limit| ids(&select_ads(ads(), &s, limit, 0).unwrap());
        assert_eq!(pick(sel(&[], None), None), ["1.0", "1.1", "2.0"]);
        assert_eq!(pick(sel(&["1"], None), None), ["1.0", "1.1"]);
        assert_eq!(pick(sel(&["1.1", "bob"], None), None), ["1.1", "2.0"]);
        assert_eq!(pick(sel(&[], Some("JobStatus == 2")), Some(1)), ["1.1"]);
    }

    #[test]
    fn run_hold_and_idle_are_constraints_and_exclude_each_other() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            q: QArgs,
        }
        let q = |args: &[&str]| {
            let mut v = vec!["q"];
            v.extend_from_slice(args);
            Cli::try_parse_from(v).unwrap().q
        };
        assert_eq!(
            status_constraint(&q(&["--run"])).unwrap().as_deref(),
            Some("JobStatus == 2 || JobStatus == 6 || JobStatus == 7")
        );
        assert_eq!(
            status_constraint(&q(&["--idle", "--constraint", "Owner == \"a\""]))
                .unwrap()
                .as_deref(),
            Some("(Owner == \"a\") && (JobStatus == 1)")
        );
        assert_eq!(
            status_constraint(&q(&["--held"])).unwrap().as_deref(),
            Some("JobStatus == 5")
        );
        let e = status_constraint(&q(&["--run", "--hold"])).unwrap_err();
        assert!(e.to_string().contains("incompatible"), "{e}");
        assert_eq!(View::of(&q(&["--run"])), View::Run);
        assert_eq!(View::of(&q(&["--dag"])), View::Batches);
        assert_eq!(View::of(&q(&["--dag", "--nobatch"])), View::Dag);
        assert_eq!(View::of(&q(&["--totals", "--hold"])), View::Totals);
        assert_eq!(View::of(&q(&["--idle"])), View::Idle);
        assert_eq!(View::of(&q(&["--io"])), View::Io);
    }

    #[test]
    fn job_refs() {
        assert!(is_job_ref("1"));
        assert!(is_job_ref("1.0"));
        assert!(!is_job_ref("1."));
        assert!(!is_job_ref(".1"));
        assert!(!is_job_ref("alice"));
        assert!(!is_job_ref("1.2.3"));
    }
}
