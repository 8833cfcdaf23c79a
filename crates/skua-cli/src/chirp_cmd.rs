//! `skua chirp`: a running job's remote I/O, like `condor_chirp`. It
//! talks to the starter's Chirp proxy named in `_CONDOR_CHIRP_CONFIG`
//! (else `./.chirp.config`) with the line protocol of docs/protocol.md
//! ("Chirp"); the starter forwards to the shadow on the submit side.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use skua_proto::{ChirpJobReply, ChirpJobRequest, ChirpOp, CHIRP_CONFIG_ENV, CHIRP_CONFIG_NAME};

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct ChirpArgs {
    /// `fetch REMOTE LOCAL`, `put [-mode wtacx] [-perm OCTAL] LOCAL|- REMOTE`,
    /// `remove REMOTE`, `stat REMOTE`, `get_job_attr NAME`,
    /// `set_job_attr NAME EXPR`, `get_job_attr_delayed NAME`,
    /// `set_job_attr_delayed NAME EXPR`, `ulog MESSAGE`, `whoami`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<String>,
}

/// A `skua chirp` command line, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `fetch REMOTE LOCAL`.
    Fetch { remote: String, local: String },
    /// `put [-mode M] [-perm P] LOCAL|- REMOTE` (`local` `-`: standard input).
    Put {
        local: String,
        remote: String,
        mode: String,
        perm: Option<u32>,
    },
    /// `remove REMOTE`.
    Remove { remote: String },
    /// `stat REMOTE`.
    Stat { remote: String },
    /// `get_job_attr NAME`.
    GetJobAttr { name: String },
    /// `set_job_attr NAME EXPR`.
    SetJobAttr { name: String, value: String },
    /// `ulog MESSAGE`.
    Ulog { message: String },
    /// `whoami`.
    Whoami,
    /// `set_job_attr_delayed NAME EXPR`.
    SetJobAttrDelayed { name: String, value: String },
    /// `get_job_attr_delayed NAME`.
    GetJobAttrDelayed { name: String },
}

const USAGE: &str =
    "usage: skua chirp fetch REMOTE LOCAL | put [-mode wtacx] [-perm OCTAL] LOCAL|- REMOTE | \
remove REMOTE | stat REMOTE | get_job_attr NAME | set_job_attr NAME EXPR | \
get_job_attr_delayed NAME | set_job_attr_delayed NAME EXPR | ulog MESSAGE | whoami";

/// Parses `condor_chirp`'s command forms.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let (cmd, rest) = args.split_first().ok_or_else(|| USAGE.to_string())?;
    let exact = |n: usize| -> Result<&[String], String> {
        if rest.len() == n {
            Ok(rest)
        } else {
            Err(format!(
                "chirp {cmd} takes {n} argument{}\n{USAGE}",
                if n == 1 { "" } else { "s" }
            ))
        }
    };
    Ok(match cmd.as_str() {
        "fetch" => {
            let a = exact(2)?;
            Command::Fetch {
                remote: a[0].clone(),
                local: a[1].clone(),
            }
        }
        "put" => {
            let (mut mode, mut perm) = (String::new(), None);
            let mut i = 0;
            while i < rest.len() && rest[i].len() > 1 && rest[i].starts_with('-') {
                let value = rest
                    .get(i + 1)
                    .ok_or_else(|| format!("chirp put: {} needs a value", rest[i]))?;
                match rest[i].as_str() {
                    "-mode" | "--mode" => mode = value.clone(),
                    "-perm" | "--perm" => {
                        perm = Some(u32::from_str_radix(value, 8).map_err(|_| {
                            format!("chirp put: -perm {value} is not an octal number")
                        })?)
                    }
                    other => return Err(format!("chirp put: unknown option {other}\n{USAGE}")),
                }
                i += 2;
            }
            if let Some(bad) = mode.chars().find(|c| !"wtacx".contains(*c)) {
                return Err(format!(
                    "chirp put: unknown mode letter `{bad}` (w, t, a, c, x)"
                ));
            }
            if rest.len() - i != 2 {
                return Err(format!("chirp put takes LOCAL|- and REMOTE\n{USAGE}"));
            }
            Command::Put {
                local: rest[i].clone(),
                remote: rest[i + 1].clone(),
                mode,
                perm,
            }
        }
        "remove" => Command::Remove {
            remote: exact(1)?[0].clone(),
        },
        "stat" => Command::Stat {
            remote: exact(1)?[0].clone(),
        },
        "get_job_attr" => Command::GetJobAttr {
            name: exact(1)?[0].clone(),
        },
        "set_job_attr" => {
            let a = exact(2)?;
            Command::SetJobAttr {
                name: a[0].clone(),
                value: a[1].clone(),
            }
        }
        "get_job_attr_delayed" => Command::GetJobAttrDelayed {
            name: exact(1)?[0].clone(),
        },
        "set_job_attr_delayed" => {
            let a = exact(2)?;
            Command::SetJobAttrDelayed {
                name: a[0].clone(),
                value: a[1].clone(),
            }
        }
        "ulog" => {
            if rest.is_empty() {
                return Err(format!("chirp ulog takes a message\n{USAGE}"));
            }
            Command::Ulog {
                message: rest.join(" "),
            }
        }
        "whoami" => {
            exact(0)?;
            Command::Whoami
        }
        other => return Err(format!("unknown chirp command `{other}`\n{USAGE}")),
    })
}

/// Where the proxy is: `<ip> <port> <cookie>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyConfig {
    /// `ip:port`.
    pub addr: String,
    /// The cookie.
    pub cookie: String,
}

/// Parses the one line of `.chirp.config`.
pub fn parse_config(text: &str) -> Result<ProxyConfig, String> {
    let mut words = text.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some(ip), Some(port), Some(cookie)) => {
            let ip: std::net::IpAddr = ip
                .parse()
                .map_err(|_| format!("`{ip}` is not an IP address"))?;
            let port: u16 = port
                .parse()
                .map_err(|_| format!("`{port}` is not a port"))?;
            Ok(ProxyConfig {
                addr: std::net::SocketAddr::new(ip, port).to_string(),
                cookie: cookie.to_string(),
            })
        }
        _ => Err("expected one line `<ip> <port> <cookie>`".into()),
    }
}

fn config_path() -> PathBuf {
    match std::env::var_os(CHIRP_CONFIG_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(CHIRP_CONFIG_NAME),
    }
}

fn load_config() -> Result<ProxyConfig> {
    let path = config_path();
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read the chirp configuration {} (is this a job with want_io_proxy = true?)",
            path.display()
        )
    })?;
    parse_config(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn run(a: ChirpArgs) -> ExitCode {
    if matches!(
        a.args.first().map(String::as_str),
        Some("--help" | "-help" | "-h")
    ) {
        println!("Inside a job: remote I/O on the submit side, like condor_chirp.\n\n{USAGE}");
        return ExitCode::SUCCESS;
    }
    let cmd = match parse(&a.args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skua chirp: {e}");
            return ExitCode::from(2);
        }
    };
    match execute(&cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skua chirp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Sends `op` (and `body`'s `len` bytes for a put); relays `data` frames
/// into `sink`; gives the final reply.
fn exchange(
    config: &ProxyConfig,
    op: ChirpOp,
    body: Option<&mut dyn Read>,
    sink: Option<&mut dyn Write>,
) -> Result<ChirpJobReply> {
    let mut conn = TcpStream::connect(&config.addr)
        .with_context(|| format!("cannot reach the chirp proxy at {}", config.addr))?;
    let mut line = serde_json::to_vec(&ChirpJobRequest {
        cookie: config.cookie.clone(),
        op,
    })?;
    line.push(b'\n');
    conn.write_all(&line).context("sending the request")?;
    if let Some(body) = body {
        std::io::copy(body, &mut conn).context("sending the file")?;
    }
    conn.flush()?;
    let mut reader = BufReader::new(conn);
    let mut sink = sink;
    loop {
        let mut head = String::new();
        if reader.read_line(&mut head).context("reading the reply")? == 0 {
            bail!("the chirp proxy closed the connection without a reply");
        }
        if let Some(n) = head.strip_prefix("data ") {
            let n: u64 = n.trim().parse().context("a bad data frame")?;
            let mut chunk = (&mut reader).take(n);
            match sink.as_deref_mut() {
                Some(s) => {
                    let got = std::io::copy(&mut chunk, s).context("writing the fetched file")?;
                    if got != n {
                        bail!("the reply broke off");
                    }
                }
                None => bail!("unexpected data in the reply"),
            }
            continue;
        }
        let reply: ChirpJobReply =
            serde_json::from_str(head.trim_end()).context("a bad reply from the chirp proxy")?;
        if !reply.ok {
            bail!("{}", reply.error.unwrap_or_else(|| "failed".into()));
        }
        return Ok(reply);
    }
}

/// Standard input spooled to an anonymous temporary file (its length must
/// be known before it is sent, and it is never held whole in memory).
fn spool_stdin() -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(&dir)
        .with_context(|| format!("a temporary file in {}", dir.display()))?;
    let n =
        std::io::copy(&mut std::io::stdin().lock(), &mut f).context("reading standard input")?;
    f.rewind()?;
    Ok((f, n))
}

fn execute(cmd: &Command) -> Result<()> {
    let config = load_config()?;
    match cmd {
        Command::Fetch { remote, local } => {
            let path = Path::new(local);
            let mut file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let op = ChirpOp::Fetch {
                path: remote.clone(),
            };
            if let Err(e) = exchange(&config, op, None, Some(&mut file)) {
                drop(file);
                let _ = std::fs::remove_file(path);
                return Err(e.context(format!("fetch {remote}")));
            }
            file.sync_all().ok();
        }
        Command::Put {
            local,
            remote,
            mode,
            perm,
        } => {
            let (mut file, size) = if local == "-" {
                spool_stdin()?
            } else {
                let f =
                    std::fs::File::open(local).with_context(|| format!("cannot read {local}"))?;
                let n = f.metadata()?.len();
                (f, n)
            };
            let op = ChirpOp::Put {
                path: remote.clone(),
                mode: mode.clone(),
                perm: *perm,
                size,
            };
            let mut body = (&mut file).take(size);
            exchange(&config, op, Some(&mut body), None)
                .with_context(|| format!("put {remote}"))?;
        }
        Command::Remove { remote } => {
            let op = ChirpOp::Remove {
                path: remote.clone(),
            };
            exchange(&config, op, None, None).with_context(|| format!("remove {remote}"))?;
        }
        Command::Stat { remote } => {
            let op = ChirpOp::Stat {
                path: remote.clone(),
            };
            let reply =
                exchange(&config, op, None, None).with_context(|| format!("stat {remote}"))?;
            if let Some(s) = reply.stat {
                println!("size: {}", s.size);
                println!("mode: {:o}", s.mode);
                println!("is_dir: {}", s.is_dir);
                println!("mtime: {}", s.mtime);
            }
        }
        Command::GetJobAttr { name } => {
            let op = ChirpOp::GetJobAttr { name: name.clone() };
            let reply = exchange(&config, op, None, None)?;
            println!("{}", reply.value.unwrap_or_default());
        }
        Command::SetJobAttr { name, value } => {
            classad::parse_expr(value).map_err(|e| {
                anyhow::anyhow!("the value of {name} is not a ClassAd expression: {e}")
            })?;
            let op = ChirpOp::SetJobAttr {
                name: name.clone(),
                value: value.clone(),
            };
            exchange(&config, op, None, None).with_context(|| format!("set_job_attr {name}"))?;
        }
        Command::Ulog { message } => {
            let op = ChirpOp::Ulog {
                message: message.clone(),
            };
            exchange(&config, op, None, None).context("ulog")?;
        }
        Command::Whoami => {
            let reply = exchange(&config, ChirpOp::Whoami, None, None)?;
            println!("{}", reply.value.unwrap_or_default());
        }
        Command::SetJobAttrDelayed { name, value } => {
            let op = ChirpOp::SetJobAttrDelayed {
                name: name.clone(),
                value: value.clone(),
            };
            exchange(&config, op, None, None)
                .with_context(|| format!("set_job_attr_delayed {name}"))?;
        }
        Command::GetJobAttrDelayed { name } => {
            let op = ChirpOp::GetJobAttrDelayed { name: name.clone() };
            let reply = exchange(&config, op, None, None)?;
            println!("{}", reply.value.unwrap_or_default());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, String> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn condor_chirp_forms_parse() {
        assert_eq!(
            p(&["fetch", "in.txt", "local.txt"]).unwrap(),
            Command::Fetch {
                remote: "in.txt".into(),
                local: "local.txt".into()
            }
        );
        assert_eq!(
            p(&["put", "-mode", "wa", "-perm", "640", "-", "log.txt"]).unwrap(),
            Command::Put {
                local: "-".into(),
                remote: "log.txt".into(),
                mode: "wa".into(),
                perm: Some(0o640)
            }
        );
        assert_eq!(
            p(&["put", "a", "b"]).unwrap(),
            Command::Put {
                local: "a".into(),
                remote: "b".into(),
                mode: String::new(),
                perm: None
            }
        );
        assert_eq!(
            p(&["set_job_attr", "Stage", "\"three\""]).unwrap(),
            Command::SetJobAttr {
                name: "Stage".into(),
                value: "\"three\"".into()
            }
        );
        assert_eq!(
            p(&["ulog", "step", "2"]).unwrap(),
            Command::Ulog {
                message: "step 2".into()
            }
        );
        assert_eq!(p(&["whoami"]).unwrap(), Command::Whoami);
        assert_eq!(
            p(&["set_job_attr_delayed", "ChirpX", "1"]).unwrap(),
            Command::SetJobAttrDelayed {
                name: "ChirpX".into(),
                value: "1".into()
            }
        );
        assert_eq!(
            p(&["get_job_attr_delayed", "ChirpX"]).unwrap(),
            Command::GetJobAttrDelayed {
                name: "ChirpX".into()
            }
        );
        assert_eq!(
            p(&["stat", "x"]).unwrap(),
            Command::Stat { remote: "x".into() }
        );
    }

    #[test]
    fn bad_command_lines_are_refused_with_the_reason() {
        assert!(p(&[]).unwrap_err().contains("usage"));
        assert!(p(&["fetch", "a"])
            .unwrap_err()
            .contains("takes 2 arguments"));
        assert!(p(&["put", "-mode", "wq", "a", "b"])
            .unwrap_err()
            .contains("`q`"));
        assert!(p(&["put", "-perm", "9", "a", "b"])
            .unwrap_err()
            .contains("octal"));
        assert!(p(&["put", "-mode"]).unwrap_err().contains("needs a value"));
        assert!(p(&["put", "-size", "1", "a", "b"])
            .unwrap_err()
            .contains("unknown option"));
        assert!(p(&["chmod", "a"])
            .unwrap_err()
            .contains("unknown chirp command"));
        assert!(p(&["whoami", "x"]).is_err());
    }

    #[test]
    fn the_config_line() {
        assert_eq!(
            parse_config("127.0.0.1 4032 abcdef\n").unwrap(),
            ProxyConfig {
                addr: "127.0.0.1:4032".into(),
                cookie: "abcdef".into()
            }
        );
        assert!(parse_config("127.0.0.1 port c")
            .unwrap_err()
            .contains("port"));
        assert!(parse_config("host 1 c").unwrap_err().contains("IP address"));
        assert!(parse_config("127.0.0.1 1").is_err());
    }
}
