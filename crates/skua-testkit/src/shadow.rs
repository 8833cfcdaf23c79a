//! A fake shadow: the routes a starter calls on the schedd while it runs a
//! job (begin, input files, checkpoints, output files, updates, exit),
//! served for one claim and one job ad, recording everything the starter
//! says.
//!
//! Inputs are planned as the schedd plans them
//! ([`skua_schedd::sandbox::plan_inputs`]) when the starter asks for a
//! transfer, followed by the files of [`ShadowRecord::checkpoint_inputs`]
//! (a stored checkpoint, flagged as such); outputs land in the shadow's
//! output directory, checkpoint files in its `.checkpoints/<N>/`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use skua_net::proto::{
    routes, Ack, BeginReply, CheckpointCommit, CheckpointFileMeta, CheckpointInfo, EntryKind,
    InputEntry, InputFileRequest, JobExit, JobUpdate, OutputFileMeta, ShadowBegin, UpdateKind,
    TRANSFER_HEADER,
};
use skua_net::routing::post;
use skua_net::{
    file_response, receive_file, ApiError, AuthLevel, Body, HeaderMap, Json, Listener, Response,
    Routes, SecurityPolicy, Server, ServerConfig, ServerHandle, SigningKey, State,
};
use skua_schedd::sandbox::{plan_inputs, InputPlan};

/// What the starter told the shadow.
#[derive(Debug, Default)]
pub struct ShadowRecord {
    /// The last begin request.
    pub begin: Option<ShadowBegin>,
    /// The inputs planned at begin.
    pub plan: InputPlan,
    /// Every update's kind, in order.
    pub updates: Vec<UpdateKind>,
    /// Every output file received: name and mode.
    pub outputs: Vec<(String, u32)>,
    /// The last exit report.
    pub exit: Option<JobExit>,
    /// How many exit reports came.
    pub exits: usize,
    /// Set by a test: the stored checkpoint the begin reply names.
    pub last_checkpoint: Option<CheckpointInfo>,
    /// Set by a test: files of the stored checkpoint (name in the scratch
    /// directory, source file), sent after the inputs flagged `checkpoint`.
    pub checkpoint_inputs: Vec<(String, PathBuf)>,
    /// Set by a test: refuse every checkpoint file and commit with
    /// `Conflict` and this message (a shadow that cannot store it).
    pub refuse_checkpoints: Option<String>,
    /// Set by a test: a checkpoint file is not answered (for a minute):
    /// a transfer that hangs.
    pub stall_checkpoints: bool,
    /// Set by a test: the checkpoint file of this name is answered
    /// `Unavailable` (503) once, as a shadow that is briefly away.
    pub unavailable_once: Option<String>,
    /// Every checkpoint file received, in order.
    pub checkpoint_files: Vec<CheckpointFileMeta>,
    /// Every checkpoint commit received, in order.
    pub commits: Vec<CheckpointCommit>,
}

#[derive(Clone)]
struct Served {
    claim: String,
    job_ad: classad::ClassAd,
    out_dir: PathBuf,
    rec: Arc<Mutex<ShadowRecord>>,
}

impl Served {
    fn check_claim(&self, claim: &str) -> Result<(), ApiError> {
        if claim == self.claim {
            Ok(())
        } else {
            Err(ApiError::not_found("no such claim"))
        }
    }

    fn rec(&self) -> MutexGuard<'_, ShadowRecord> {
        self.rec.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn begin(
    State(s): State<Served>,
    Json(b): Json<ShadowBegin>,
) -> Result<Json<BeginReply>, ApiError> {
    s.check_claim(&b.claim_id)?;
    let plan = if b.transfer {
        plan_inputs(&s.job_ad).map_err(|e| ApiError::bad_request(e.to_string()))?
    } else {
        InputPlan::default()
    };
    let mut plan = plan;
    let mut rec = s.rec();
    if b.transfer {
        for (name, source) in rec.checkpoint_inputs.clone() {
            let size = std::fs::metadata(&source).map(|m| m.len()).unwrap_or(0);
            plan.entries.push(InputEntry {
                path: name,
                kind: EntryKind::File,
                size,
                mode: 0o644,
                executable: false,
                stdin: false,
                checkpoint: true,
            });
            plan.sources.push(Some(source));
        }
    }
    let inputs = plan.entries.clone();
    let checkpoint = rec.last_checkpoint.clone();
    rec.begin = Some(b);
    rec.plan = plan;
    Ok(Json(BeginReply { inputs, checkpoint }))
}

async fn input_file(
    State(s): State<Served>,
    Json(r): Json<InputFileRequest>,
) -> Result<Response, ApiError> {
    s.check_claim(&r.claim_id)?;
    let source = s.rec().plan.sources.get(r.index).cloned();
    let Some(Some(path)) = source else {
        return Err(ApiError::not_found("no such input file"));
    };
    file_response(&path).await
}

async fn output_file(
    State(s): State<Served>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta: OutputFileMeta = headers
        .get(TRANSFER_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| serde_json::from_str(v).ok())
        .ok_or_else(|| ApiError::bad_request("no transfer header"))?;
    s.check_claim(&meta.claim_id)?;
    let dest = s.out_dir.join(&meta.name);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ApiError::internal(format!("{}: {e}", parent.display())))?;
    }
    receive_file(body, &dest).await?;
    s.rec().outputs.push((meta.name, meta.mode));
    Ok(Json(Ack {}))
}

fn safe_name(name: &str) -> bool {
    let p = std::path::Path::new(name);
    !name.is_empty()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

async fn checkpoint_file(
    State(s): State<Served>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Ack>, ApiError> {
    let meta: CheckpointFileMeta = headers
        .get(TRANSFER_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| serde_json::from_str(v).ok())
        .ok_or_else(|| ApiError::bad_request("no transfer header"))?;
    s.check_claim(&meta.claim_id)?;
    if !safe_name(&meta.name) {
        return Err(ApiError::bad_request(format!("bad name `{}`", meta.name)));
    }
    if let Some(why) = s.rec().refuse_checkpoints.clone() {
        return Err(ApiError::conflict(format!("{}: {why}", meta.name)));
    }
    {
        let mut rec = s.rec();
        if rec.unavailable_once.as_deref() == Some(meta.name.as_str()) {
            rec.unavailable_once = None;
            return Err(ApiError::unavailable("briefly away"));
        }
    }
    let stall = s.rec().stall_checkpoints;
    if stall {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        return Err(ApiError::conflict("stalled"));
    }
    let dest = s
        .out_dir
        .join(".checkpoints")
        .join(meta.number.to_string())
        .join(&meta.name);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ApiError::internal(format!("{}: {e}", parent.display())))?;
    }
    match &meta.local {
        // a starter on this host names the file instead of sending it:
        // taken from where it is, as the schedd's shadow does
        Some(src) => {
            let copied = std::fs::copy(&src.path, &dest)
                .map_err(|e| ApiError::bad_request(format!("local copy of {}: {e}", src.path)))?;
            if copied != src.len {
                return Err(ApiError::bad_request(format!(
                    "local copy of {}: {copied} bytes, {} named",
                    src.path, src.len
                )));
            }
        }
        None => {
            receive_file(body, &dest).await?;
        }
    }
    s.rec().checkpoint_files.push(meta);
    Ok(Json(Ack {}))
}

async fn checkpoint_commit(
    State(s): State<Served>,
    Json(c): Json<CheckpointCommit>,
) -> Result<Json<Ack>, ApiError> {
    s.check_claim(&c.claim_id)?;
    let mut rec = s.rec();
    if let Some(why) = rec.refuse_checkpoints.clone() {
        return Err(ApiError::conflict(format!(
            "checkpoint {}: {why}",
            c.number
        )));
    }
    rec.commits.push(c);
    Ok(Json(Ack {}))
}

async fn update(State(s): State<Served>, Json(u): Json<JobUpdate>) -> Result<Json<Ack>, ApiError> {
    s.check_claim(&u.claim_id)?;
    s.rec().updates.push(u.kind);
    Ok(Json(Ack {}))
}

async fn exit(State(s): State<Served>, Json(e): Json<JobExit>) -> Result<Json<Ack>, ApiError> {
    s.check_claim(&e.claim_id)?;
    let mut rec = s.rec();
    rec.exit = Some(e);
    rec.exits += 1;
    Ok(Json(Ack {}))
}

/// A running fake shadow.
pub struct FakeShadow {
    handle: Option<ServerHandle>,
    /// Its address, `<127.0.0.1:port>`, as a starter spec names it.
    pub addr: String,
    /// What the starter told it.
    pub record: Arc<Mutex<ShadowRecord>>,
}

impl FakeShadow {
    /// Serves the shadow routes for `claim` and `job_ad` on a loopback
    /// port, to daemons with a token of `key` (`condor@*` at DAEMON level)
    /// in `uid_domain`; outputs are written under `out_dir`.
    pub async fn start(
        claim: &str,
        job_ad: classad::ClassAd,
        out_dir: PathBuf,
        key: SigningKey,
        uid_domain: &str,
    ) -> anyhow::Result<FakeShadow> {
        let record = Arc::new(Mutex::new(ShadowRecord::default()));
        let served = Served {
            claim: claim.to_string(),
            job_ad,
            out_dir,
            rec: record.clone(),
        };
        let routes = Routes::new()
            .command(&routes::SHADOW_BEGIN, post(begin))
            .command(&routes::SHADOW_INPUT_FILE, post(input_file))
            .command(&routes::SHADOW_OUTPUT_FILE, post(output_file))
            .command(&routes::SHADOW_CHECKPOINT_FILE, post(checkpoint_file))
            .command(&routes::SHADOW_CHECKPOINT_COMMIT, post(checkpoint_commit))
            .command(&routes::SHADOW_UPDATE, post(update))
            .command(&routes::SHADOW_EXIT, post(exit))
            .with_state(served);
        let policy = SecurityPolicy::default().allowing(AuthLevel::Daemon, ["condor@*"]);
        let config = ServerConfig::new(policy, Some(key), uid_domain);
        let listener = Listener::tcp(([127, 0, 0, 1], 0).into()).await?;
        let handle = Server::new(config, routes)?.spawn(vec![listener]);
        let addr = handle
            .local_addr()
            .ok_or_else(|| anyhow::anyhow!("the fake shadow has no TCP address"))?;
        let addr = format!("<{addr}>");
        Ok(FakeShadow {
            handle: Some(handle),
            addr,
            record,
        })
    }

    /// The record, locked.
    pub fn record(&self) -> MutexGuard<'_, ShadowRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops serving (the starter then finds no shadow).
    pub fn stop(&mut self) {
        drop(self.handle.take());
    }
}
