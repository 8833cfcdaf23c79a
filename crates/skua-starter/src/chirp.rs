//! The job's Chirp proxy: a loopback TCP listener the starter opens for a
//! job with `WantIOProxy = true`, announced in `<scratch>/.chirp.config`
//! (`<ip> <port> <cookie>`, mode 0600, the job's own file) and
//! `_CONDOR_CHIRP_CONFIG`. One request per connection: a line of JSON
//! ([`ChirpJobRequest`], the cookie beside the operation), then for `put`
//! its bytes; the reply is `data <n>` frames (for `fetch`) and a last line
//! of JSON ([`ChirpJobReply`]). Each operation is forwarded to the shadow
//! under the starter's claim (docs/protocol.md, "Chirp").

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use skua_daemon::account::Account;
use skua_daemon::context::knob_bool;
use skua_daemon::DaemonContext;
use skua_net::{Client, NetError};
use skua_proto::routes;
use skua_proto::{
    Ack, ChirpJobReply, ChirpJobRequest, ChirpOp, ShadowChirp, ShadowChirpReply, CHIRP_CONFIG_NAME,
    CHIRP_COOKIE_LEN, CHIRP_HEADER, CHIRP_LINE_LIMIT,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;

/// The `ENABLE_CHIRP*` knobs (HTCondor's defaults: all true) and the
/// rules of delayed updates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChirpSettings {
    /// `ENABLE_CHIRP`: a proxy at all.
    pub enable: bool,
    /// `ENABLE_CHIRP_IO`: file operations.
    pub io: bool,
    /// `ENABLE_CHIRP_UPDATES`: attribute changes and `ulog`.
    pub updates: bool,
    /// `ENABLE_CHIRP_DELAYED`: `set_job_attr_delayed`,
    /// `get_job_attr_delayed`.
    pub delayed: bool,
    /// `CHIRP_DELAYED_UPDATE_PREFIX` (default `Chirp*`): the names a
    /// delayed update may set, a list of patterns with `*`, matched
    /// without regard to case (as HTCondor's code does).
    pub delayed_prefix: Vec<String>,
    /// `CHIRP_DELAYED_UPDATE_MAX_ATTRS` (default 100): the most delayed
    /// attributes a job may set.
    pub delayed_max: usize,
}

/// Whether `name` matches one of `patterns` (`*` matches any run of
/// characters), without regard to case.
pub fn name_matches(patterns: &[String], name: &str) -> bool {
    fn glob(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
            Some((c, rest)) => s
                .split_first()
                .is_some_and(|(d, srest)| c.eq_ignore_ascii_case(d) && glob(rest, srest)),
        }
    }
    patterns.iter().any(|p| glob(p.as_bytes(), name.as_bytes()))
}

/// The delayed attributes a job set: name (lower case) → (name, value),
/// and those not yet sent.
#[derive(Debug, Default)]
struct Delayed {
    values: std::collections::BTreeMap<String, (String, String)>,
    pending: std::collections::BTreeSet<String>,
}

impl ChirpSettings {
    /// Reads the knobs.
    pub fn from_context(ctx: &DaemonContext) -> anyhow::Result<ChirpSettings> {
        Ok(ChirpSettings {
            enable: knob_bool(&ctx.config, "ENABLE_CHIRP", true)?,
            io: knob_bool(&ctx.config, "ENABLE_CHIRP_IO", true)?,
            updates: knob_bool(&ctx.config, "ENABLE_CHIRP_UPDATES", true)?,
            delayed: knob_bool(&ctx.config, "ENABLE_CHIRP_DELAYED", true)?,
            delayed_prefix: ctx
                .knob("CHIRP_DELAYED_UPDATE_PREFIX")?
                .unwrap_or_else(|| "Chirp*".to_string())
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect(),
            delayed_max: usize::try_from(skua_daemon::context::knob_u64(
                &ctx.config,
                "CHIRP_DELAYED_UPDATE_MAX_ATTRS",
                100,
            )?)
            .unwrap_or(usize::MAX),
        })
    }

    /// Whether a job whose ad says `want_io_proxy` gets a proxy.
    pub fn wanted(&self, want_io_proxy: bool) -> bool {
        want_io_proxy && self.enable && (self.io || self.updates)
    }
}

/// What the proxy needs to know of the job.
#[derive(Clone, Debug)]
pub struct ProxyJob {
    /// The claim the job runs under.
    pub claim_id: String,
    /// `"C.P"`.
    pub job_id: String,
    /// The job's owner (`whoami`).
    pub owner: String,
}

/// A running proxy. Dropping it stops it.
pub struct Proxy {
    served: Served,
    client: Arc<Mutex<Client>>,
    task: tokio::task::JoinHandle<()>,
    /// The `.chirp.config` file.
    pub config_path: PathBuf,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Later calls go to the shadow through `client` (after a reconnect).
    pub fn set_client(&self, client: Client) {
        *self.client.lock().unwrap_or_else(|e| e.into_inner()) = client;
    }

    /// Sends the delayed attributes set since the last time (before the
    /// starter's exit report). A change the shadow refuses is logged and
    /// dropped; one that could not be sent is kept for the next time.
    pub async fn flush_delayed(&self) {
        self.served.clone().flush_delayed().await;
    }

    /// [`Proxy::flush_delayed`] in the background (with the starter's
    /// periodic update, which it never holds up).
    pub fn flush_delayed_in_background(&self) {
        let has_pending = !self
            .served
            .delayed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pending
            .is_empty();
        if has_pending {
            tokio::spawn(self.served.clone().flush_delayed());
        }
    }
}

/// A fresh random cookie of [`CHIRP_COOKIE_LEN`] letters and digits.
pub fn new_cookie() -> Result<String, String> {
    use ring::rand::SecureRandom as _;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; CHIRP_COOKIE_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no random numbers for the chirp cookie".to_string())?;
    Ok(bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect())
}

/// Compares two cookies in time independent of where they differ.
fn same_cookie(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Opens the proxy: listens on 127.0.0.1 (an ephemeral port), writes
/// `scratch/.chirp.config` (created new, never through a link, mode
/// 0600, given to `account`), and serves until dropped.
pub fn start(
    settings: ChirpSettings,
    client: Client,
    job: ProxyJob,
    scratch: &Path,
    account: Option<&Account>,
) -> Result<Proxy, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot open the chirp proxy on 127.0.0.1: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("the chirp proxy's address: {e}"))?;
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| format!("the chirp proxy's listener: {e}"))?;
    let cookie = new_cookie()?;
    let config_path = scratch.join(CHIRP_CONFIG_NAME);
    let write = || -> std::io::Result<()> {
        // (an input file of that name gives way: the proxy's file is the
        // starter's; the link itself is removed, never its target)
        match std::fs::remove_file(&config_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&config_path)?;
        if let Some(a) = account {
            std::os::unix::fs::fchown(&f, Some(a.uid), Some(a.gid))?;
        }
        writeln!(f, "{} {} {cookie}", addr.ip(), addr.port())
    };
    write().map_err(|e| format!("cannot write {}: {e}", config_path.display()))?;
    let client = Arc::new(Mutex::new(client));
    let served = Served {
        settings: Arc::new(settings),
        client: client.clone(),
        job: Arc::new(job),
        cookie: Arc::new(cookie),
        delayed: Arc::default(),
    };
    let kept = served.clone();
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((conn, _)) => {
                    let s = served.clone();
                    tokio::spawn(async move { s.serve(conn).await });
                }
                Err(e) => {
                    tracing::warn!("the chirp proxy: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    });
    tracing::info!(%addr, "the job's chirp proxy listens");
    Ok(Proxy {
        served: kept,
        client,
        task,
        config_path,
    })
}

#[derive(Clone)]
struct Served {
    settings: Arc<ChirpSettings>,
    client: Arc<Mutex<Client>>,
    job: Arc<ProxyJob>,
    cookie: Arc<String>,
    delayed: Arc<Mutex<Delayed>>,
}

/// An error of the shadow as the job sees it: the shadow's message.
fn shadow_error(e: NetError) -> String {
    match e {
        NetError::Remote { body, .. } => body.message,
        other => format!("the shadow: {other}"),
    }
}

async fn send_reply(w: &mut OwnedWriteHalf, reply: &ChirpJobReply) {
    let mut line = serde_json::to_vec(reply).unwrap_or_else(|_| b"{\"ok\":false}".to_vec());
    line.push(b'\n');
    let _ = w.write_all(&line).await;
    let _ = w.flush().await;
}

impl Served {
    /// Sends the delayed attributes set since the last time (with the
    /// starter's update, and before its exit report). A change the shadow
    /// refuses is logged and dropped; one that could not be sent is kept
    /// for the next time.
    async fn flush_delayed(self) {
        let pending: Vec<(String, String, String)> = {
            let mut d = self.delayed.lock().unwrap_or_else(|e| e.into_inner());
            let keys = std::mem::take(&mut d.pending);
            keys.into_iter()
                .filter_map(|k| d.values.get(&k).map(|(n, v)| (k, n.clone(), v.clone())))
                .collect()
        };
        for (key, name, value) in pending {
            let body = self.forward(ChirpOp::SetJobAttr {
                name: name.clone(),
                value,
            });
            let sent: Result<ShadowChirpReply, NetError> = self
                .client()
                .command(&routes::SHADOW_CHIRP, Some(&body))
                .await;
            match sent {
                Ok(_) => {}
                Err(NetError::Remote { body, .. }) => {
                    tracing::warn!("delayed update of {name} refused: {}", body.message);
                }
                Err(e) => {
                    tracing::warn!("delayed update of {name} not sent: {e}");
                    let mut d = self.delayed.lock().unwrap_or_else(|e| e.into_inner());
                    d.pending.insert(key);
                }
            }
        }
    }

    fn client(&self) -> Client {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn forward(&self, op: ChirpOp) -> ShadowChirp {
        ShadowChirp {
            claim_id: self.job.claim_id.clone(),
            job_id: self.job.job_id.clone(),
            op,
        }
    }

    async fn serve(self, conn: tokio::net::TcpStream) {
        let (r, mut w) = conn.into_split();
        let mut reader = BufReader::new(r);
        let mut line = Vec::new();
        let limit = u64::try_from(CHIRP_LINE_LIMIT).unwrap_or(u64::MAX);
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(_) if line.last() == Some(&b'\n') => {}
            Ok(_) => {
                let why = "the request line is missing its end or is too long";
                return send_reply(&mut w, &ChirpJobReply::failed(why)).await;
            }
            Err(e) => {
                tracing::debug!("chirp request: {e}");
                return;
            }
        }
        let req: ChirpJobRequest = match serde_json::from_slice(&line) {
            Ok(r) => r,
            Err(e) => {
                let why = format!("not a chirp request: {e}");
                return send_reply(&mut w, &ChirpJobReply::failed(why)).await;
            }
        };
        if !same_cookie(&req.cookie, &self.cookie) {
            tracing::warn!(job = %self.job.job_id, "a chirp request with a wrong cookie, refused");
            return send_reply(
                &mut w,
                &ChirpJobReply::failed("authentication failed: wrong cookie"),
            )
            .await;
        }
        let allowed = match &req.op {
            ChirpOp::Whoami => true,
            ChirpOp::SetJobAttrDelayed { .. } | ChirpOp::GetJobAttrDelayed { .. } => {
                self.settings.delayed
            }
            op if op.is_io() => self.settings.io,
            _ => self.settings.updates,
        };
        if !allowed {
            let knob = if req.op.is_io() {
                "ENABLE_CHIRP_IO"
            } else if matches!(
                req.op,
                ChirpOp::SetJobAttrDelayed { .. } | ChirpOp::GetJobAttrDelayed { .. }
            ) {
                "ENABLE_CHIRP_DELAYED"
            } else {
                "ENABLE_CHIRP_UPDATES"
            };
            let why = format!("chirp {} is disabled here ({knob} is false)", req.op.name());
            return send_reply(&mut w, &ChirpJobReply::failed(why)).await;
        }
        let reply = match req.op {
            ChirpOp::Whoami => ChirpJobReply {
                ok: true,
                value: Some(self.job.owner.clone()),
                ..ChirpJobReply::default()
            },
            ChirpOp::SetJobAttrDelayed { name, value } => self.set_delayed(name, value),
            ChirpOp::GetJobAttrDelayed { name } => {
                let d = self.delayed.lock().unwrap_or_else(|e| e.into_inner());
                match d.values.get(&name.to_ascii_lowercase()) {
                    Some((_, v)) => ChirpJobReply {
                        ok: true,
                        value: Some(v.clone()),
                        ..ChirpJobReply::default()
                    },
                    None => ChirpJobReply::failed(format!("no delayed attribute {name} was set")),
                }
            }
            op @ ChirpOp::Fetch { .. } => self.fetch(op, &mut w).await,
            op @ ChirpOp::Put { .. } => self.put(op, reader).await,
            op => {
                let body = self.forward(op);
                let called: Result<ShadowChirpReply, NetError> = self
                    .client()
                    .command(&routes::SHADOW_CHIRP, Some(&body))
                    .await;
                match called {
                    Ok(r) => ChirpJobReply {
                        ok: true,
                        value: r.value,
                        stat: r.stat,
                        ..ChirpJobReply::default()
                    },
                    Err(e) => ChirpJobReply::failed(shadow_error(e)),
                }
            }
        };
        send_reply(&mut w, &reply).await;
    }

    /// Keeps a delayed attribute for the next update, if its name and
    /// value are acceptable.
    fn set_delayed(&self, name: String, value: String) -> ChirpJobReply {
        if !name_matches(&self.settings.delayed_prefix, &name) {
            tracing::warn!("Got an invalid prefix for updates: {name}");
            return ChirpJobReply::failed(format!(
                "attribute {name} does not match CHIRP_DELAYED_UPDATE_PREFIX ({})",
                self.settings.delayed_prefix.join(", ")
            ));
        }
        if let Err(e) = classad::parse_expr(&value) {
            return ChirpJobReply::failed(format!("the value of {name}: {e}"));
        }
        let key = name.to_ascii_lowercase();
        let mut d = self.delayed.lock().unwrap_or_else(|e| e.into_inner());
        if !d.values.contains_key(&key) && d.values.len() >= self.settings.delayed_max {
            return ChirpJobReply::failed(format!(
                "too many delayed attributes (CHIRP_DELAYED_UPDATE_MAX_ATTRS = {})",
                self.settings.delayed_max
            ));
        }
        d.values.insert(key.clone(), (name, value));
        d.pending.insert(key);
        ChirpJobReply {
            ok: true,
            ..ChirpJobReply::default()
        }
    }

    /// Streams the file from the shadow to the job in `data` frames.
    async fn fetch(&self, op: ChirpOp, w: &mut OwnedWriteHalf) -> ChirpJobReply {
        let body = self.forward(op);
        let client = self.client();
        let (mut tx, mut rx) = tokio::io::duplex(64 * 1024);
        let download = async move {
            let r = client
                .download(&routes::SHADOW_CHIRP_FETCH, &body, &mut tx)
                .await;
            drop(tx);
            r
        };
        let relay = async {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = rx.read(&mut buf).await?;
                if n == 0 {
                    return Ok::<(), std::io::Error>(());
                }
                w.write_all(format!("data {n}\n").as_bytes()).await?;
                w.write_all(&buf[..n]).await?;
            }
        };
        let (got, relayed) = tokio::join!(download, relay);
        match (got, relayed) {
            (Ok(n), Ok(())) => ChirpJobReply {
                ok: true,
                bytes: Some(n),
                ..ChirpJobReply::default()
            },
            (Err(e), _) => ChirpJobReply::failed(shadow_error(e)),
            (_, Err(e)) => ChirpJobReply::failed(format!("sending to the job: {e}")),
        }
    }

    /// Streams `size` bytes from the job to the shadow.
    async fn put(
        &self,
        op: ChirpOp,
        reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    ) -> ChirpJobReply {
        let ChirpOp::Put { size, .. } = &op else {
            return ChirpJobReply::failed("not a put");
        };
        let size = *size;
        let header = match serde_json::to_string(&self.forward(op)) {
            Ok(h) => h,
            Err(e) => return ChirpJobReply::failed(format!("encoding the put: {e}")),
        };
        let sent: Result<Ack, NetError> = self
            .client()
            .upload(
                &routes::SHADOW_CHIRP_PUT,
                (CHIRP_HEADER, header),
                reader.take(size),
                size,
            )
            .await;
        match sent {
            Ok(Ack {}) => ChirpJobReply {
                ok: true,
                bytes: Some(size),
                ..ChirpJobReply::default()
            },
            Err(e) => ChirpJobReply::failed(shadow_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_32_random_letters_and_digits() {
        let a = new_cookie().unwrap();
        let b = new_cookie().unwrap();
        assert_eq!(a.len(), CHIRP_COOKIE_LEN);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
        assert!(same_cookie(&a, &a.clone()));
        assert!(!same_cookie(&a, &b));
        assert!(!same_cookie(&a, &a[..31]));
    }

    #[test]
    fn a_proxy_only_for_a_job_that_wants_one_where_enabled() {
        let on = ChirpSettings {
            enable: true,
            io: true,
            updates: true,
            delayed: true,
            delayed_prefix: vec!["Chirp*".into()],
            delayed_max: 100,
        };
        assert!(on.wanted(true));
        assert!(!on.wanted(false));
        assert!(!ChirpSettings {
            enable: false,
            ..on.clone()
        }
        .wanted(true));
        assert!(!ChirpSettings {
            io: false,
            updates: false,
            ..on
        }
        .wanted(true));
    }

    #[test]
    fn delayed_names_match_the_prefix_patterns_without_regard_to_case() {
        let p = vec!["Chirp*".to_string(), "*_stage".to_string()];
        assert!(name_matches(&p, "ChirpStep"));
        assert!(name_matches(&p, "chirpstep"));
        assert!(name_matches(&p, "Chirp"));
        assert!(name_matches(&p, "my_STAGE"));
        assert!(!name_matches(&p, "Owner"));
        assert!(!name_matches(&p, "XChirp"));
        assert!(!name_matches(&[], "Chirp"));
        assert!(name_matches(&["*".to_string()], "Anything"));
    }
}
