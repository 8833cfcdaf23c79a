//! `skua openmpi`: Open MPI across a parallel job's nodes without ssh keys,
//! in the manner of HTCondor's `openmpiscript`.
//!
//! Every node of a `universe = parallel` job runs `skua openmpi PROGRAM
//! ARGS...`. Node 0 writes a hostfile whose host names are the node numbers
//! (`0 slots=S` ... `N-1 slots=S`), names `skua openmpi agent` as Open MPI's
//! launcher agent (`plm_rsh_agent`) and runs `mpirun`. For each node `k`
//! mpirun calls the agent as `agent k ORTED-COMMAND...`; the agent puts the
//! command into the job's spool directory on the submit host
//! (`$_CONDOR_REMOTE_SPOOL_DIR/orted_cmd.k`, through chirp); node `k` (node 0
//! too, in a thread) polls for that file, removes it and runs the command
//! (without `--daemonize`). The orteds then start the ranks, which talk to
//! each other directly over the network. When mpirun ends, node 0 puts
//! `mpirun_done` there, so that nodes never handed an orted end too.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct OpenMpiArgs {
    /// `PROGRAM ARGS...` (the wrapper, on every node) or
    /// `agent HOST COMMAND...` (mpirun's launcher agent).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<String>,
}

/// The marker node 0 leaves when mpirun has ended.
const DONE: &str = "mpirun_done";
/// The last line of a complete orted command file (a put seen half-way is
/// read again).
const END: &str = "#skua-openmpi-end";
/// How often a node looks for its orted command.
const POLL: Duration = Duration::from_millis(250);

/// Where the orted commands travel: the job's spool directory on the
/// submit host.
pub trait Spool: Send {
    /// Writes `name` with `data`.
    fn put(&self, name: &str, data: &[u8]) -> Result<()>;
    /// Whether `name` exists.
    fn exists(&self, name: &str) -> Result<bool>;
    /// Reads `name`.
    fn fetch(&self, name: &str) -> Result<Vec<u8>>;
    /// Removes `name`.
    fn remove(&self, name: &str) -> Result<()>;
}

/// The spool through `skua chirp` (the job's I/O proxy).
struct ChirpSpool {
    skua: PathBuf,
    dir: String,
}

impl ChirpSpool {
    fn remote(&self, name: &str) -> String {
        format!("{}/{name}", self.dir.trim_end_matches('/'))
    }
    fn chirp(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<std::process::Output> {
        let mut cmd = Command::new(&self.skua);
        cmd.arg("chirp").args(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("running {} chirp", self.skua.display()))?;
        if let (Some(data), Some(mut input)) = (stdin, child.stdin.take()) {
            input.write_all(data).context("writing to skua chirp")?;
        }
        child.wait_with_output().context("waiting for skua chirp")
    }
    fn checked(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>> {
        let out = self.chirp(args, stdin)?;
        if !out.status.success() {
            bail!(
                "skua chirp {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    }
}

impl Spool for ChirpSpool {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        self.checked(
            &["put", "-perm", "600", "-", &self.remote(name)],
            Some(data),
        )
        .map(drop)
    }
    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self
            .chirp(&["stat", &self.remote(name)], None)?
            .status
            .success())
    }
    fn fetch(&self, name: &str) -> Result<Vec<u8>> {
        let tmp = std::env::temp_dir().join(format!("skua-openmpi-{}-{name}", std::process::id()));
        let tmp_s = tmp.display().to_string();
        let got = self.checked(&["fetch", &self.remote(name), &tmp_s], None);
        let data = got.and_then(|_| std::fs::read(&tmp).context("reading the fetched file"));
        let _ = std::fs::remove_file(&tmp);
        data
    }
    fn remove(&self, name: &str) -> Result<()> {
        self.checked(&["remove", &self.remote(name)], None)
            .map(drop)
    }
}

/// The spool as a directory every node reaches (one host, or a shared file
/// system): `SKUA_OPENMPI_SPOOL=local`.
struct DirSpool(PathBuf);

impl Spool for DirSpool {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let tmp = self.0.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, data).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, self.0.join(name)).context("renaming into place")
    }
    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.0.join(name).exists())
    }
    fn fetch(&self, name: &str) -> Result<Vec<u8>> {
        let p = self.0.join(name);
        std::fs::read(&p).with_context(|| format!("reading {}", p.display()))
    }
    fn remove(&self, name: &str) -> Result<()> {
        let p = self.0.join(name);
        std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))
    }
}

fn env(name: &str) -> Result<String> {
    std::env::var(name).with_context(|| {
        format!("{name} is not set (skua openmpi runs as a universe = parallel job's executable)")
    })
}

fn spool() -> Result<Box<dyn Spool>> {
    let dir = env("_CONDOR_REMOTE_SPOOL_DIR")?;
    match std::env::var("SKUA_OPENMPI_SPOOL").as_deref() {
        Ok("local") => Ok(Box::new(DirSpool(PathBuf::from(dir)))),
        Ok("chirp") | Err(_) => Ok(Box::new(ChirpSpool {
            skua: std::env::current_exe().context("finding the skua binary")?,
            dir,
        })),
        Ok(other) => bail!("SKUA_OPENMPI_SPOOL must be chirp or local, not {other:?}"),
    }
}

/// The name of node `k`'s orted command file.
pub fn orted_file(k: usize) -> String {
    format!("orted_cmd.{k}")
}

/// The launcher agent's arguments (`[ssh-style options] HOST COMMAND...`)
/// as the node number and the command file's text; `--daemonize` is
/// dropped, since the node runs the orted in the foreground.
pub fn agent_request(args: &[String]) -> Result<(usize, String)> {
    let mut rest = args.iter().skip_while(|a| a.starts_with('-'));
    let host = rest
        .next()
        .context("usage: skua openmpi agent HOST COMMAND...")?;
    let node: usize = host
        .parse()
        .with_context(|| format!("the host {host:?} is not a node number of this job"))?;
    let words: Vec<&str> = rest
        .map(String::as_str)
        .filter(|w| *w != "--daemonize")
        .collect();
    if words.is_empty() {
        bail!("no command for node {node}");
    }
    Ok((node, format!("{}\n{END}\n", words.join(" "))))
}

/// The command in a command file, or None while the file is incomplete.
pub fn complete_command(text: &str) -> Option<&str> {
    let body = text.strip_suffix(&format!("{END}\n"))?;
    Some(body.trim_end())
}

/// The hostfile: node numbers as host names, `slots` each.
pub fn hostfile(nodes: usize, slots: u32) -> String {
    (0..nodes).map(|k| format!("{k} slots={slots}\n")).collect()
}

/// A job ad's `RequestCpus` (a literal integer), else 1.
pub fn request_cpus(ad_text: &str) -> u32 {
    ad_text
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("RequestCpus"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1)
}

/// Waits for node `node`'s orted command and runs it; ends early (0) once
/// mpirun is done.
fn serve_node(spool: &dyn Spool, node: usize) -> Result<i32> {
    let name = orted_file(node);
    loop {
        if spool.exists(&name)? {
            let text = String::from_utf8(spool.fetch(&name)?).context("the orted command")?;
            if let Some(cmd) = complete_command(&text) {
                spool.remove(&name)?;
                tracing::info!(node, "running the orted command");
                let status = Command::new("/bin/sh")
                    .arg("-c")
                    .arg(cmd)
                    .stdin(Stdio::null())
                    .status()
                    .context("running the orted command")?;
                return Ok(status.code().unwrap_or(1));
            }
        } else if spool.exists(DONE)? {
            return Ok(0);
        }
        std::thread::sleep(POLL);
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Open MPI's settings for a job's mpirun and orteds (as environment).
fn mca_environment(skua: &str) -> Vec<(String, String)> {
    let exclude = std::env::var("SKUA_OPENMPI_EXCLUDE_INTERFACES")
        .unwrap_or_else(|_| "docker0,virbr0".into());
    let exclude = if exclude.is_empty() {
        "lo".to_string()
    } else {
        format!("lo,{exclude}")
    };
    let mut env = vec![
        ("OMPI_MCA_plm_rsh_agent", format!("{skua} openmpi agent")),
        ("OMPI_MCA_plm_rsh_no_tree_spawn", "1".into()),
        ("OMPI_MCA_orte_hetero_nodes", "1".into()),
        ("OMPI_MCA_hwloc_base_binding_policy", "none".into()),
        ("OMPI_MCA_btl_tcp_if_exclude", exclude.clone()),
        ("OMPI_MCA_oob_tcp_if_exclude", exclude),
    ];
    if is_root() {
        env.push(("OMPI_ALLOW_RUN_AS_ROOT", "1".into()));
        env.push(("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1".into()));
    }
    env.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn wrapper(program: &[String]) -> Result<i32> {
    if program.is_empty() {
        bail!("usage: skua openmpi PROGRAM [ARGS...] | skua openmpi agent HOST COMMAND...");
    }
    let node: usize = env("_CONDOR_PROCNO")?
        .parse()
        .context("_CONDOR_PROCNO is not a number")?;
    let nodes: usize = env("_CONDOR_NPROCS")?
        .parse()
        .context("_CONDOR_NPROCS is not a number")?;
    let store = spool()?;
    if node != 0 {
        return serve_node(store.as_ref(), node);
    }
    let skua = std::env::current_exe().context("finding the skua binary")?;
    let skua_s = skua.display().to_string();
    for (k, v) in mca_environment(&skua_s) {
        std::env::set_var(k, v);
    }
    let slots = std::env::var("_CONDOR_JOB_AD")
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| request_cpus(&t))
        .unwrap_or(1);
    let hosts = std::env::current_dir()
        .context("the working directory")?
        .join("skua_mpi_hostfile");
    std::fs::write(&hosts, hostfile(nodes, slots))
        .with_context(|| format!("writing {}", hosts.display()))?;
    // Node 0's own orted comes through the spool like every other node's.
    let own = std::thread::spawn(move || -> Result<i32> { serve_node(store.as_ref(), 0) });
    let mut mpirun = Command::new(std::env::var("SKUA_MPIRUN").unwrap_or_else(|_| "mpirun".into()));
    if is_root() {
        mpirun.arg("--allow-run-as-root");
    }
    mpirun
        .arg("-hostfile")
        .arg(&hosts)
        .arg("-n")
        .arg((nodes as u64 * u64::from(slots)).to_string())
        .args(program);
    tracing::info!(nodes, slots, "starting mpirun");
    let status = mpirun.status().context("running mpirun")?;
    spool()?.put(DONE, b"done\n")?;
    match own.join() {
        Ok(Err(e)) => tracing::warn!("node 0's orted: {e:#}"),
        Err(_) => tracing::warn!("node 0's orted thread failed"),
        Ok(Ok(_)) => {}
    }
    Ok(status.code().unwrap_or(1))
}

fn agent(args: &[String]) -> Result<i32> {
    let (node, text) = agent_request(args)?;
    spool()?.put(&orted_file(node), text.as_bytes())?;
    Ok(0)
}

pub fn run(a: OpenMpiArgs) -> ExitCode {
    let got = match a.args.split_first() {
        Some((first, rest)) if first == "agent" => agent(rest),
        _ => wrapper(&a.args),
    };
    match got {
        Ok(0) => ExitCode::SUCCESS,
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("skua openmpi: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_agent_names_the_node_and_drops_daemonize() {
        let (node, text) =
            agent_request(&s(&["2", "orted", "--daemonize", "-mca", "ess", "\"env\""])).unwrap();
        assert_eq!(node, 2);
        assert_eq!(complete_command(&text), Some("orted -mca ess \"env\""));
        // ssh-style options before the host are passed over.
        assert_eq!(agent_request(&s(&["-x", "1", "orted"])).unwrap().0, 1);
        assert!(agent_request(&s(&["node-a", "orted"])).is_err());
        assert!(agent_request(&s(&["3"])).is_err());
    }

    #[test]
    fn a_half_written_command_file_is_not_run() {
        assert_eq!(complete_command("orted -mca x"), None);
        assert_eq!(complete_command(&format!("orted\n{END}")), None);
    }

    #[test]
    fn the_hostfile_and_slots() {
        assert_eq!(hostfile(3, 2), "0 slots=2\n1 slots=2\n2 slots=2\n");
        assert_eq!(request_cpus("Owner = \"u\"\nRequestCpus = 2\n"), 2);
        assert_eq!(request_cpus("RequestCpus = 0\n"), 1);
        assert_eq!(request_cpus("RequestCpus = (2 * 3)\n"), 1);
        assert_eq!(request_cpus(""), 1);
    }
}
