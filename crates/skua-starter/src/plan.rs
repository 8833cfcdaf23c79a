//! The starter's decisions, pure: shared file system or transfer, the
//! job's command line and environment, its kill signal, the account it
//! runs as, its nice value, which files go back.
//!
//! Nothing here reads the file system, the clock or the environment: the
//! facts arrive as arguments.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use classad::args_env::{self, DoubleQuotes};
use classad::{ClassAd, Evaluator, Value};

/// A job or slot attribute as a string (literal or evaluated in the ad).
pub fn string_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match Evaluator::default().eval_attr(name, ad, None) {
        Value::Undefined | Value::Error => None,
        v => v.as_string(),
    }
}

/// An attribute as an integer.
pub fn int_attr(ad: &ClassAd, name: &str) -> Option<i64> {
    Evaluator::default().eval_attr(name, ad, None).as_int()
}

/// Whether the job runs on a shared file system instead of transferring:
/// `ShouldTransferFiles` is `NO`, or `IF_NEEDED` with the job's
/// `FileSystemDomain` equal to the slot's.
pub fn uses_shared_fs(job: &ClassAd, slot: &ClassAd) -> bool {
    let stf = string_attr(job, "ShouldTransferFiles")
        .unwrap_or_default()
        .to_ascii_uppercase();
    match stf.as_str() {
        "NO" => true,
        "IF_NEEDED" => match (
            string_attr(job, "FileSystemDomain"),
            string_attr(slot, "FileSystemDomain"),
        ) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(&b),
            _ => false,
        },
        _ => false,
    }
}

/// The job's arguments: `Arguments` (V2) if defined, else `Args` (V1).
pub fn job_arguments(job: &ClassAd) -> Result<Vec<String>, String> {
    if let Some(v2) = string_attr(job, "Arguments") {
        return args_env::v2_words(&v2, DoubleQuotes::Ordinary)
            .map_err(|e| format!("Arguments: {e}"));
    }
    Ok(string_attr(job, "Args")
        .map(|a| args_env::v1_words(&a))
        .unwrap_or_default())
}

/// Facts for the job's standard environment variables.
#[derive(Clone, Debug, Default)]
pub struct EnvFacts {
    /// The scratch directory (the job's working directory when files are
    /// transferred).
    pub scratch_dir: String,
    /// The slot's name without the host (`slot1_1`).
    pub slot_name: String,
    /// Path of `.job.ad`.
    pub job_ad_path: String,
    /// Path of `.machine.ad`.
    pub machine_ad_path: String,
    /// CPUs of the slot (`OMP_NUM_THREADS`).
    pub cpus: i64,
    /// The job's working directory as the job sees it.
    pub iwd: String,
}

/// The job's whole environment: HTCondor's standard variables, then the
/// job's own (`Environment` V2 if defined, else `Env` V1), which win.
pub fn job_environment(job: &ClassAd, facts: &EnvFacts) -> Result<Vec<(String, String)>, String> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let cpus = facts.cpus.max(1).to_string();
    for (k, v) in [
        ("_CONDOR_SCRATCH_DIR", facts.scratch_dir.as_str()),
        ("_CONDOR_SLOT", facts.slot_name.as_str()),
        ("_CONDOR_JOB_AD", facts.job_ad_path.as_str()),
        ("_CONDOR_MACHINE_AD", facts.machine_ad_path.as_str()),
        ("_CONDOR_JOB_IWD", facts.iwd.as_str()),
        ("TMPDIR", facts.scratch_dir.as_str()),
        ("TMP", facts.scratch_dir.as_str()),
        ("TEMP", facts.scratch_dir.as_str()),
        ("BATCH_SYSTEM", "HTCondor"),
        ("OMP_NUM_THREADS", cpus.as_str()),
        ("MKL_NUM_THREADS", cpus.as_str()),
        ("OPENBLAS_NUM_THREADS", cpus.as_str()),
        ("CUBACORES", cpus.as_str()),
        ("JULIA_NUM_THREADS", cpus.as_str()),
        ("PYTHON_CPU_COUNT", cpus.as_str()),
        ("ROOT_MAX_THREADS", cpus.as_str()),
        ("TF_LOOP_PARALLEL_ITERATIONS", cpus.as_str()),
        ("TF_NUM_THREADS", cpus.as_str()),
        ("GOMAXPROCS", cpus.as_str()),
        ("NUMEXPR_NUM_THREADS", cpus.as_str()),
    ] {
        env.insert(k.to_string(), v.to_string());
    }
    let own = if let Some(v2) = string_attr(job, "Environment") {
        args_env::env_v2_pairs(&v2, DoubleQuotes::Ordinary)
            .map_err(|e| format!("Environment: {e}"))?
    } else if let Some(v1) = string_attr(job, "Env") {
        args_env::env_v1_pairs(&v1).map_err(|e| format!("Env: {e}"))?
    } else {
        Vec::new()
    };
    for (k, v) in own {
        let v = scratch_dir_in(&v, &facts.scratch_dir);
        env.insert(k, v);
    }
    Ok(env.into_iter().collect())
}

/// `value` with each `$$(CondorScratchDir)` (which the schedd's match-time
/// substitution leaves in the environment for the starter, as HTCondor's
/// does) replaced by the job's scratch directory.
fn scratch_dir_in(value: &str, scratch: &str) -> String {
    const MACRO: &str = "$$(condorscratchdir)";
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.to_ascii_lowercase().find(MACRO) {
        out.push_str(&rest[..at]);
        out.push_str(scratch);
        rest = &rest[at + MACRO.len()..];
    }
    out.push_str(rest);
    out
}

/// The signal number of a `KillSig` value: a name (`SIGTERM`, `TERM`,
/// any case) or a number; `SIGTERM` (15) when absent or unknown.
pub fn kill_signal(value: Option<&str>) -> i32 {
    const SIGTERM: i32 = 15;
    value.and_then(signal_number).unwrap_or(SIGTERM)
}

/// The number of a signal written as a name (`SIGUSR2`, `usr2`) or a
/// number (1..=64); `None` when empty or unknown.
pub fn signal_number(value: &str) -> Option<i32> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    if let Ok(n) = v.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let upper = v.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    Some(match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ILL" => 4,
        "TRAP" => 5,
        "ABRT" | "IOT" => 6,
        "BUS" => 7,
        "FPE" => 8,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        "CHLD" => 17,
        "CONT" => 18,
        "STOP" => 19,
        "TSTP" => 20,
        "TTIN" => 21,
        "TTOU" => 22,
        "XCPU" => 24,
        "XFSZ" => 25,
        "VTALRM" => 26,
        "PROF" => 27,
        "WINCH" => 28,
        "IO" | "POLL" => 29,
        "PWR" => 30,
        "SYS" => 31,
        _ => return None,
    })
}

/// A signal attribute of the job (`KillSig`, `CheckpointSig`,
/// `SuccessCheckpointExitSignal`): an integer, or a string naming the
/// signal or holding its number. `None` when undefined or unknown.
pub fn signal_attr(ad: &ClassAd, name: &str) -> Option<i32> {
    match Evaluator::default().eval_attr(name, ad, None) {
        Value::Int(n) => i32::try_from(n).ok().filter(|n| (1..=64).contains(n)),
        v => v.as_string().as_deref().and_then(signal_number),
    }
}

/// Whether a job attribute evaluates to true.
pub fn bool_attr(ad: &ClassAd, name: &str) -> bool {
    matches!(
        Evaluator::default().eval_attr(name, ad, None),
        Value::Bool(true)
    )
}

/// How a job checkpoints itself, from its ad (HTCondor's
/// self-checkpointing attributes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// `SuccessCheckpointExitCode`.
    pub exit_code: Option<i32>,
    /// `SuccessCheckpointExitSignal`, when `SuccessCheckpointExitBySignal`
    /// is true.
    pub exit_signal: Option<i32>,
    /// `WantFTOnCheckpoint`: a checkpoint exit sends the checkpoint's
    /// files and restarts the job (without it the codes mean nothing).
    pub want_ft: bool,
    /// With `WantCheckpointSignal`: the signal that asks the job to
    /// checkpoint (`CheckpointSig`, else its `KillSig`, else SIGTERM, as
    /// HTCondor's starter chooses it).
    pub signal: Option<i32>,
}

/// The job's [`CheckpointPolicy`].
pub fn checkpoint_policy(job: &ClassAd) -> CheckpointPolicy {
    let exit_code = int_attr(job, "SuccessCheckpointExitCode").and_then(|c| i32::try_from(c).ok());
    let exit_signal = bool_attr(job, "SuccessCheckpointExitBySignal")
        .then(|| signal_attr(job, "SuccessCheckpointExitSignal"))
        .flatten();
    let signal = bool_attr(job, "WantCheckpointSignal").then(|| {
        signal_attr(job, "CheckpointSig")
            .or_else(|| signal_attr(job, "KillSig"))
            .unwrap_or(15)
    });
    CheckpointPolicy {
        exit_code,
        exit_signal,
        want_ft: bool_attr(job, "WantFTOnCheckpoint"),
        signal,
    }
}

impl CheckpointPolicy {
    /// Whether the job's process ending with exit `code` (or killed by
    /// `signal`) is a checkpoint exit: its files are sent and it is
    /// restarted.
    pub fn is_checkpoint_exit(&self, code: Option<i32>, signal: Option<i32>) -> bool {
        if !self.want_ft {
            return false;
        }
        match (code, signal) {
            (Some(c), _) => self.exit_code == Some(c),
            (None, Some(s)) => self.exit_signal == Some(s),
            (None, None) => false,
        }
    }

    /// The signal a vacate sends: the checkpoint signal of a job that
    /// wants one, else its kill signal.
    pub fn vacate_signal(&self, kill_sig: i32) -> i32 {
        self.signal.unwrap_or(kill_sig)
    }

    /// How often the job gets its checkpoint signal while it runs, given
    /// `CHECKPOINT_SIGNAL_INTERVAL` in seconds (0: never).
    pub fn signal_period(&self, interval_secs: u64) -> Option<std::time::Duration> {
        (self.signal.is_some() && interval_secs > 0)
            .then(|| std::time::Duration::from_secs(interval_secs))
    }

    /// Whether a vacated job's files are kept as a checkpoint (kind
    /// Evict): with `WhenToTransferOutput = ON_EXIT_OR_EVICT`, or when the
    /// job exited with its checkpoint code (or signal) within the vacate
    /// time. `exit`: how its process ended, `None` when it had to be
    /// killed.
    pub fn checkpoint_on_vacate(
        &self,
        transfer_on_evict: bool,
        exit: Option<(Option<i32>, Option<i32>)>,
    ) -> bool {
        transfer_on_evict || exit.is_some_and(|(code, sig)| self.is_checkpoint_exit(code, sig))
    }
}

/// Where a checkpoint's files come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointSource {
    /// A list of names (files or directories in the scratch directory).
    Listed {
        /// The names, as the job wrote them (trailing `/` removed).
        items: Vec<String>,
        /// The list is `TransferCheckpoint` (not the output list).
        named_for_checkpoint: bool,
    },
    /// Every top-level file created or changed since the job started, as
    /// for outputs ([`changed_outputs`]).
    Changed,
}

/// The checkpoint's files: `TransferCheckpoint` (an empty list sends
/// nothing), else `TransferOutput`, else the changed files.
pub fn checkpoint_source(job: &ClassAd) -> CheckpointSource {
    let listed = |list: String, named_for_checkpoint| CheckpointSource::Listed {
        items: split_list(&list)
            .into_iter()
            .map(|i| i.trim_end_matches('/').to_string())
            .filter(|i| !i.is_empty())
            .collect(),
        named_for_checkpoint,
    };
    if let Some(list) = string_attr(job, "TransferCheckpoint") {
        return listed(list, true);
    }
    if let Some(list) = string_attr(job, "TransferOutput") {
        return listed(list, false);
    }
    CheckpointSource::Changed
}

/// Whether a file a checkpoint's list names but the job did not write
/// holds the job (HoldReasonCode 12, subcode 2): always for a
/// checkpoint the job asked for by exiting, and for a file named in
/// `TransferCheckpoint`; a vacated job's output list (`ON_EXIT_OR_EVICT`)
/// may name results it has not written yet.
pub fn missing_checkpoint_file_holds(
    kind: skua_proto::CheckpointKind,
    named_for_checkpoint: bool,
) -> bool {
    !matches!(kind, skua_proto::CheckpointKind::Evict) || named_for_checkpoint
}

/// Whether `name` may be part of a checkpoint of the job's own files:
/// never the ad files, the job's standard streams, its executable or a
/// transparent backend's image ([`skua_proto::CRIU_IMAGE_DIR`], which
/// only that backend's checkpoints carry).
pub fn checkpointable(name: &str, executable: Option<&str>) -> bool {
    let in_image = name
        .strip_prefix(skua_proto::CRIU_IMAGE_DIR)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    !in_image
        && name != ".job.ad"
        && name != ".machine.ad"
        && name != skua_proto::CHIRP_CONFIG_NAME
        && name != skua_proto::STDOUT_NAME
        && name != skua_proto::STDERR_NAME
        && Some(name) != executable
}

/// The number of the first checkpoint a run sends, after the stored one
/// (`BeginReply.checkpoint`): `last + 1`, or 1.
pub fn first_checkpoint_number(last: Option<&skua_proto::CheckpointInfo>) -> u64 {
    last.map_or(1, |c| c.number.saturating_add(1))
}

/// The nice value from `JOB_RENICE_INCREMENT`'s evaluated value, clamped
/// to 0..=19 (0 when undefined or not a number).
pub fn renice_increment(value: &Value) -> i32 {
    let n = value
        .as_int()
        .or_else(|| value.as_real().map(|r| r as i64))
        .unwrap_or(0);
    n.clamp(0, 19) as i32
}

/// Who the job runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunAs {
    /// The starter's own account (the starter is not root).
    Myself,
    /// This account (the starter is root).
    User(String),
    /// The owner, by the ids the submit side gave, for an owner without an
    /// account here (`SOFT_UID_DOMAIN = True`).
    Ids {
        /// The owner's name (for logs).
        name: String,
        /// The uid.
        uid: u32,
        /// The gid.
        gid: u32,
    },
    /// The job cannot run here (another host may run it); why.
    Refuse(String),
    /// The job can run nowhere (it belongs to root); why.
    Never(String),
}

/// What [`choose_user`] needs besides the ads.
#[derive(Clone, Debug, Default)]
pub struct UserFacts<'a> {
    /// The starter runs as root.
    pub is_root: bool,
    /// The job's `Owner` has an account on this host.
    pub owner_exists: bool,
    /// `SLOT<N>_USER` of the slot.
    pub slot_user: Option<&'a str>,
    /// `SOFT_UID_DOMAIN`.
    pub soft_uid_domain: bool,
    /// The owner's uid and gid on the submit host.
    pub owner_ids: Option<(u32, u32)>,
}

/// Chooses the account, by HTCondor's UID domain rules. Not root →
/// [`RunAs::Myself`]. Root, the job's `UidDomain` (the submit side's
/// `UID_DOMAIN`) equal to the slot's (case-insensitive) → the job's
/// `Owner`; an owner without an account here runs under the submit side's
/// ids when `SOFT_UID_DOMAIN` is true and is refused otherwise. Another
/// domain (or none) → `SLOT<N>_USER`, else `nobody`. Never root: a job
/// owned by root is refused for good, one with no owner here.
pub fn choose_user(job: &ClassAd, slot: &ClassAd, facts: &UserFacts<'_>) -> RunAs {
    if !facts.is_root {
        return RunAs::Myself;
    }
    let owner = string_attr(job, "Owner").filter(|o| !o.is_empty());
    let job_domain = string_attr(job, "UidDomain");
    let same_domain = match (&job_domain, string_attr(slot, "UidDomain")) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(&b),
        _ => false,
    };
    if !same_domain {
        return RunAs::User(
            facts
                .slot_user
                .filter(|u| !u.trim().is_empty())
                .unwrap_or("nobody")
                .trim()
                .to_string(),
        );
    }
    let Some(owner) = owner else {
        return RunAs::Refuse("the job ad has no Owner".into());
    };
    if owner == "root" {
        return RunAs::Never("refusing to run a job owned by root".into());
    }
    if facts.owner_exists {
        return RunAs::User(owner);
    }
    match facts.owner_ids {
        Some((uid, gid)) if facts.soft_uid_domain && uid != 0 => RunAs::Ids {
            name: owner,
            uid,
            gid,
        },
        _ => RunAs::Refuse(format!(
            "the job's owner `{owner}` has no account on this host, which shares its \
             UID_DOMAIN ({}), and SOFT_UID_DOMAIN is False",
            job_domain.unwrap_or_default()
        )),
    }
}

/// The slot's number (`slot3@h` → 3, `slot1_2@h` → 1), for `SLOT<N>_USER`.
pub fn slot_number(slot_name: &str) -> Option<u32> {
    let rest = slot_name.strip_prefix("slot")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Whether `path` is relative, non-empty, and has no `..` component.
pub fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && Path::new(path)
            .components()
            .any(|c| matches!(c, Component::Normal(_)))
}

/// A file's identity for change detection: size and modification time
/// (nanoseconds).
pub type Stamp = (u64, i128);

/// The outputs when `TransferOutput` is not defined: every regular file at
/// the top of the scratch directory (`now`: name → stamp) that is new or
/// changed since the input transfer (`before`), except the ad files and
/// the executable; `_condor_stdout`/`_condor_stderr` are added by the
/// caller. Sorted by name.
pub fn changed_outputs(
    before: &BTreeMap<String, Stamp>,
    now: &BTreeMap<String, Stamp>,
    executable: Option<&str>,
) -> Vec<String> {
    now.iter()
        .filter(|(name, stamp)| before.get(*name) != Some(stamp))
        .map(|(name, _)| name.clone())
        .filter(|n| {
            n != ".job.ad"
                && n != ".machine.ad"
                && n != skua_proto::CHIRP_CONFIG_NAME
                && n != skua_proto::STDOUT_NAME
                && n != skua_proto::STDERR_NAME
                && Some(n.as_str()) != executable
        })
        .collect()
}

/// Splits `TransferOutput`: commas and white space separate.
pub fn split_list(list: &str) -> Vec<String> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether an evicted job's output goes back
/// (`WhenToTransferOutput = ON_EXIT_OR_EVICT`).
pub fn transfer_on_evict(job: &ClassAd) -> bool {
    string_attr(job, "WhenToTransferOutput")
        .is_some_and(|w| w.eq_ignore_ascii_case("ON_EXIT_OR_EVICT"))
}

/// Whether the job's `Out`/`Err` attribute asks for the stream
/// (defined and not `/dev/null`); returns the path.
pub fn stream_path(job: &ClassAd, attr: &str) -> Option<String> {
    string_attr(job, attr).filter(|p| !p.is_empty() && p != "/dev/null")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    #[test]
    fn shared_fs_or_transfer() {
        let slot = ad(r#"[ FileSystemDomain = "fs.example" ]"#);
        assert!(uses_shared_fs(
            &ad(r#"[ ShouldTransferFiles = "NO" ]"#),
            &slot
        ));
        assert!(!uses_shared_fs(
            &ad(r#"[ ShouldTransferFiles = "YES"; FileSystemDomain = "fs.example" ]"#),
            &slot
        ));
        assert!(uses_shared_fs(
            &ad(r#"[ ShouldTransferFiles = "IF_NEEDED"; FileSystemDomain = "FS.example" ]"#),
            &slot
        ));
        assert!(!uses_shared_fs(
            &ad(r#"[ ShouldTransferFiles = "IF_NEEDED"; FileSystemDomain = "other" ]"#),
            &slot
        ));
        assert!(!uses_shared_fs(&ad("[]"), &slot));
    }

    #[test]
    fn arguments_v2_then_v1() {
        let j = ad(r#"[ Arguments = "one 'two three' x''y \"q\""; Args = "ignored" ]"#);
        assert_eq!(
            job_arguments(&j).unwrap(),
            vec!["one", "two three", "xy", "\"q\""]
        );
        let j = ad(r#"[ Args = "a  b\tc" ]"#);
        assert_eq!(job_arguments(&j).unwrap(), vec!["a", "b", "c"]);
        assert!(job_arguments(&ad("[]")).unwrap().is_empty());
        assert!(job_arguments(&ad(r#"[ Arguments = "'open" ]"#)).is_err());
    }

    #[test]
    fn environment_has_standard_variables_and_the_jobs_own_win() {
        let facts = EnvFacts {
            scratch_dir: "/x/dir_1".into(),
            slot_name: "slot1_2".into(),
            job_ad_path: "/x/dir_1/.job.ad".into(),
            machine_ad_path: "/x/dir_1/.machine.ad".into(),
            cpus: 4,
            iwd: "/x/dir_1".into(),
        };
        let j = ad(r#"[ Environment = "A=1 B='two words' TMPDIR=/mine"; Env = "C=3" ]"#);
        let env: BTreeMap<_, _> = job_environment(&j, &facts).unwrap().into_iter().collect();
        assert_eq!(env["A"], "1");
        assert_eq!(env["B"], "two words");
        assert_eq!(env["TMPDIR"], "/mine");
        assert!(!env.contains_key("C"));
        assert_eq!(env["_CONDOR_SCRATCH_DIR"], "/x/dir_1");
        assert_eq!(env["_CONDOR_SLOT"], "slot1_2");
        assert_eq!(env["OMP_NUM_THREADS"], "4");
        assert_eq!(env["BATCH_SYSTEM"], "HTCondor");
        let j =
            ad(r#"[ Environment = "S=$$(CondorScratchDir)/a:$$(condorscratchdir) T=$$(Other)" ]"#);
        let env: BTreeMap<_, _> = job_environment(&j, &facts).unwrap().into_iter().collect();
        assert_eq!(env["S"], "/x/dir_1/a:/x/dir_1");
        assert_eq!(env["T"], "$$(Other)");
        let j = ad(r#"[ Env = "C=3;D=x y" ]"#);
        let env: BTreeMap<_, _> = job_environment(&j, &facts).unwrap().into_iter().collect();
        assert_eq!(env["C"], "3");
        assert_eq!(env["D"], "x y");
    }

    #[test]
    fn kill_signals_by_name_or_number() {
        assert_eq!(kill_signal(None), 15);
        assert_eq!(kill_signal(Some("SIGINT")), 2);
        assert_eq!(kill_signal(Some("usr1")), 10);
        assert_eq!(kill_signal(Some("9")), 9);
        assert_eq!(kill_signal(Some("SIGNOPE")), 15);
        assert_eq!(kill_signal(Some("999")), 15);
    }

    #[test]
    fn renice_is_clamped() {
        assert_eq!(renice_increment(&Value::Int(5)), 5);
        assert_eq!(renice_increment(&Value::Int(-3)), 0);
        assert_eq!(renice_increment(&Value::Int(40)), 19);
        assert_eq!(renice_increment(&Value::Undefined), 0);
        assert_eq!(renice_increment(&Value::Real(7.6)), 7);
    }

    #[test]
    fn run_as_owner_only_as_root_with_same_uid_domain() {
        let job = ad(r#"[ Owner = "alice"; UidDomain = "D" ]"#);
        let slot = ad(r#"[ UidDomain = "d" ]"#);
        let root = |owner_exists| UserFacts {
            is_root: true,
            owner_exists,
            ..UserFacts::default()
        };
        assert_eq!(
            choose_user(&job, &slot, &UserFacts::default()),
            RunAs::Myself
        );
        assert_eq!(
            choose_user(&job, &slot, &root(true)),
            RunAs::User("alice".into())
        );
        // another domain: the slot's user, else nobody
        let other = ad(r#"[ UidDomain = "e" ]"#);
        assert_eq!(
            choose_user(&job, &other, &root(true)),
            RunAs::User("nobody".into())
        );
        let with_slot_user = UserFacts {
            slot_user: Some("slotuser"),
            ..root(true)
        };
        assert_eq!(
            choose_user(&job, &other, &with_slot_user),
            RunAs::User("slotuser".into())
        );
        // a job without UidDomain is from another domain
        let bare = ad(r#"[ Owner = "alice" ]"#);
        assert_eq!(
            choose_user(&bare, &slot, &root(true)),
            RunAs::User("nobody".into())
        );
        assert_eq!(slot_number("slot12@h"), Some(12));
        assert_eq!(slot_number("slot1_3@h"), Some(1));
        assert_eq!(slot_number("x"), None);
    }

    #[test]
    fn an_owner_without_account_needs_soft_uid_domain_and_root_never_runs() {
        let job = ad(r#"[ Owner = "alice"; UidDomain = "d" ]"#);
        let slot = ad(r#"[ UidDomain = "d" ]"#);
        let facts = UserFacts {
            is_root: true,
            owner_ids: Some((1234, 99)),
            ..UserFacts::default()
        };
        let RunAs::Refuse(why) = choose_user(&job, &slot, &facts) else {
            panic!("an unknown owner must be refused without SOFT_UID_DOMAIN");
        };
        assert!(
            why.contains("alice") && why.contains("SOFT_UID_DOMAIN"),
            "{why}"
        );
        let soft = UserFacts {
            soft_uid_domain: true,
            ..facts.clone()
        };
        assert_eq!(
            choose_user(&job, &slot, &soft),
            RunAs::Ids {
                name: "alice".into(),
                uid: 1234,
                gid: 99
            }
        );
        // no ids from the submit side, or uid 0: refused even so
        let no_ids = UserFacts {
            owner_ids: None,
            ..soft.clone()
        };
        assert!(matches!(
            choose_user(&job, &slot, &no_ids),
            RunAs::Refuse(_)
        ));
        let zero = UserFacts {
            owner_ids: Some((0, 0)),
            ..soft
        };
        assert!(matches!(choose_user(&job, &slot, &zero), RunAs::Refuse(_)));
        // root's job, or a job without owner
        let rooted = ad(r#"[ Owner = "root"; UidDomain = "d" ]"#);
        let exists = UserFacts {
            is_root: true,
            owner_exists: true,
            ..UserFacts::default()
        };
        assert!(matches!(
            choose_user(&rooted, &slot, &exists),
            RunAs::Never(_)
        ));
        let ownerless = ad(r#"[ UidDomain = "d" ]"#);
        assert!(matches!(
            choose_user(&ownerless, &slot, &exists),
            RunAs::Refuse(_)
        ));
    }

    #[test]
    fn changed_outputs_are_new_or_modified_top_level_files() {
        let before: BTreeMap<String, Stamp> = [
            ("in.txt".to_string(), (5, 1)),
            ("touched.txt".to_string(), (5, 1)),
            ("run.sh".to_string(), (10, 1)),
            (".job.ad".to_string(), (1, 1)),
        ]
        .into();
        let mut now = before.clone();
        now.insert("touched.txt".into(), (5, 2));
        now.insert("new.dat".into(), (0, 3));
        now.insert("run.sh".into(), (11, 4));
        now.insert(".machine.ad".into(), (1, 1));
        now.insert("_condor_stdout".into(), (1, 1));
        assert_eq!(
            changed_outputs(&before, &now, Some("run.sh")),
            vec!["new.dat", "touched.txt"]
        );
    }

    #[test]
    fn safe_relative_paths() {
        assert!(is_safe_relative("a/b.txt"));
        assert!(is_safe_relative("./a"));
        for bad in ["", "/abs", "../x", "a/../../b", "."] {
            assert!(!is_safe_relative(bad), "{bad}");
        }
    }

    #[test]
    fn signals_in_ads_by_number_or_name() {
        let j = ad(r#"[ A = 12; B = "SIGUSR1"; C = "2"; D = "nope"; E = 99 ]"#);
        assert_eq!(signal_attr(&j, "A"), Some(12));
        assert_eq!(signal_attr(&j, "B"), Some(10));
        assert_eq!(signal_attr(&j, "C"), Some(2));
        assert_eq!(signal_attr(&j, "D"), None);
        assert_eq!(signal_attr(&j, "E"), None);
        assert_eq!(signal_attr(&j, "Missing"), None);
    }

    #[test]
    fn checkpoint_exits_need_want_ft_on_checkpoint() {
        let p = checkpoint_policy(&ad(
            r#"[ SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true ]"#,
        ));
        assert!(p.is_checkpoint_exit(Some(85), None));
        assert!(!p.is_checkpoint_exit(Some(0), None));
        assert!(!p.is_checkpoint_exit(None, Some(85)));
        assert_eq!(p.signal, None);
        // without WantFTOnCheckpoint the code means nothing
        let p = checkpoint_policy(&ad(r#"[ SuccessCheckpointExitCode = 85 ]"#));
        assert!(!p.is_checkpoint_exit(Some(85), None));
        // by signal, only with SuccessCheckpointExitBySignal
        let p = checkpoint_policy(&ad(
            r#"[ SuccessCheckpointExitBySignal = true; SuccessCheckpointExitSignal = "SIGUSR1";
                 WantFTOnCheckpoint = true ]"#,
        ));
        assert!(p.is_checkpoint_exit(None, Some(10)));
        assert!(!p.is_checkpoint_exit(None, Some(15)));
        assert!(!p.is_checkpoint_exit(Some(10), None));
        let p = checkpoint_policy(&ad(
            r#"[ SuccessCheckpointExitSignal = 10; WantFTOnCheckpoint = true ]"#,
        ));
        assert!(!p.is_checkpoint_exit(None, Some(10)));
    }

    #[test]
    fn the_checkpoint_signal_defaults_to_the_kill_signal() {
        let p = checkpoint_policy(&ad(
            r#"[ WantCheckpointSignal = true; CheckpointSig = "SIGUSR2"; KillSig = "SIGINT" ]"#,
        ));
        assert_eq!(p.signal, Some(12));
        assert_eq!(p.vacate_signal(2), 12);
        let p = checkpoint_policy(&ad(
            r#"[ WantCheckpointSignal = true; KillSig = "SIGINT" ]"#,
        ));
        assert_eq!(p.signal, Some(2));
        let p = checkpoint_policy(&ad(r#"[ WantCheckpointSignal = true ]"#));
        assert_eq!(p.signal, Some(15));
        // no WantCheckpointSignal: the vacate sends the kill signal, no
        // periodic signal
        let p = checkpoint_policy(&ad(r#"[ CheckpointSig = "SIGUSR2" ]"#));
        assert_eq!(p.signal, None);
        assert_eq!(p.vacate_signal(2), 2);
        assert_eq!(p.signal_period(3600), None);
        let p = checkpoint_policy(&ad(r#"[ WantCheckpointSignal = true ]"#));
        assert_eq!(
            p.signal_period(60),
            Some(std::time::Duration::from_secs(60))
        );
        assert_eq!(p.signal_period(0), None);
    }

    #[test]
    fn a_vacated_job_checkpoints_on_evict_or_with_its_checkpoint_exit() {
        let p = checkpoint_policy(&ad(
            r#"[ SuccessCheckpointExitCode = 85; WantFTOnCheckpoint = true; WantCheckpointSignal = true ]"#,
        ));
        assert!(p.checkpoint_on_vacate(false, Some((Some(85), None))));
        assert!(!p.checkpoint_on_vacate(false, Some((Some(0), None))));
        assert!(!p.checkpoint_on_vacate(false, Some((None, Some(15)))));
        assert!(!p.checkpoint_on_vacate(false, None));
        // ON_EXIT_OR_EVICT: whatever happened to the process
        let plain = CheckpointPolicy::default();
        assert!(plain.checkpoint_on_vacate(true, None));
        assert!(plain.checkpoint_on_vacate(true, Some((None, Some(9)))));
        assert!(!plain.checkpoint_on_vacate(false, Some((Some(85), None))));
    }

    #[test]
    fn checkpoint_files_come_from_the_checkpoint_list_then_the_output_list() {
        let j = ad(r#"[ TransferCheckpoint = "state.dat, ckdir/"; TransferOutput = "out" ]"#);
        assert_eq!(
            checkpoint_source(&j),
            CheckpointSource::Listed {
                items: vec!["state.dat".into(), "ckdir".into()],
                named_for_checkpoint: true
            }
        );
        let j = ad(r#"[ TransferCheckpoint = "" ]"#);
        assert_eq!(
            checkpoint_source(&j),
            CheckpointSource::Listed {
                items: vec![],
                named_for_checkpoint: true
            }
        );
        let j = ad(r#"[ TransferOutput = "a b" ]"#);
        assert_eq!(
            checkpoint_source(&j),
            CheckpointSource::Listed {
                items: vec!["a".into(), "b".into()],
                named_for_checkpoint: false
            }
        );
        assert_eq!(checkpoint_source(&ad("[]")), CheckpointSource::Changed);
        use skua_proto::CheckpointKind::{Backend, Evict, Exit};
        assert!(missing_checkpoint_file_holds(Exit, false));
        assert!(missing_checkpoint_file_holds(Exit, true));
        assert!(missing_checkpoint_file_holds(Evict, true));
        assert!(!missing_checkpoint_file_holds(Evict, false));
        assert!(missing_checkpoint_file_holds(Backend, false));
        for never in [
            ".job.ad",
            ".machine.ad",
            "_condor_stdout",
            "_condor_stderr",
            "run.sh",
        ] {
            assert!(!checkpointable(never, Some("run.sh")), "{never}");
        }
        assert!(checkpointable("state.dat", Some("run.sh")));
        assert!(!checkpointable(".skua_criu_image/pages-1.img", None));
        assert!(checkpointable(".skua_criu_image_not/x", None));
    }

    #[test]
    fn checkpoints_are_numbered_after_the_stored_one() {
        assert_eq!(first_checkpoint_number(None), 1);
        let last = skua_proto::CheckpointInfo {
            number: 7,
            backend: None,
        };
        assert_eq!(first_checkpoint_number(Some(&last)), 8);
    }
}

/// The scheme of a URL transfer item (`HTTP://x/y` → `http`), if it is one.
pub fn url_scheme(item: &str) -> Option<String> {
    let (scheme, rest) = item.split_once("://")?;
    (!scheme.is_empty()
        && !rest.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.'))
    .then(|| scheme.to_ascii_lowercase())
}

/// One `transfer_input_files` entry that a plugin fetches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlInput {
    pub url: String,
    pub scheme: String,
    /// Where it lands in the scratch directory: the URL's last path
    /// component (query and fragment left out).
    pub name: String,
}

/// The URL entries of `TransferInput`, in order. An entry whose last
/// path component is not a plain file name is an error naming it.
pub fn url_inputs(job: &ClassAd) -> Result<Vec<UrlInput>, String> {
    let mut out = Vec::new();
    for item in string_attr(job, "TransferInput")
        .map(|l| split_list(&l))
        .unwrap_or_default()
    {
        let Some(scheme) = url_scheme(&item) else {
            continue;
        };
        let rest = item.split_once("://").map_or("", |(_, r)| r);
        let path = rest.split(['?', '#']).next().unwrap_or("");
        let name = path.rsplit('/').next().unwrap_or("").to_string();
        if name.is_empty() || name == "." || name == ".." || !is_safe_relative(&name) {
            return Err(format!("the input URL {item} names no file"));
        }
        out.push(UrlInput {
            url: item,
            scheme,
            name,
        });
    }
    Ok(out)
}

/// `OutputDestination`: the URL the outputs go to instead of the submit
/// side.
pub fn output_destination(job: &ClassAd) -> Option<String> {
    string_attr(job, "OutputDestination").filter(|d| url_scheme(d).is_some())
}

/// Where output `name` goes under the destination `dest`.
pub fn destination_url(dest: &str, name: &str) -> String {
    format!("{}/{name}", dest.trim_end_matches('/'))
}

/// The job's own plugins (`TransferPlugins = "s1,s2=path;s3=path2"`), as
/// (scheme, plugin path) pairs.
pub fn job_plugins(job: &ClassAd) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in string_attr(job, "TransferPlugins")
        .unwrap_or_default()
        .split(';')
    {
        let Some((schemes, path)) = part.split_once('=') else {
            continue;
        };
        let path = path.trim();
        if path.is_empty() {
            continue;
        }
        for s in schemes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            out.push((s.to_ascii_lowercase(), path.to_string()));
        }
    }
    out
}

/// The `TransferOutputRemaps` entries whose destination is a URL
/// (`"out.dat = https://h/x/out.dat; b = c"` → `[("out.dat", "https://h/x/out.dat")]`):
/// those files go there through a plugin.
pub fn url_remaps(job: &ClassAd) -> Vec<(String, String)> {
    string_attr(job, "TransferOutputRemaps")
        .unwrap_or_default()
        .split(';')
        .filter_map(|item| {
            let (src, dst) = item.split_once('=')?;
            let (src, dst) = (src.trim(), dst.trim());
            (url_scheme(dst).is_some() && !src.is_empty())
                .then(|| (src.to_string(), dst.to_string()))
        })
        .collect()
}

/// Takes out of `names` the outputs that go to URLs: those remapped to a
/// URL, then (with an `OutputDestination`) all but the `streams`
/// (stdout and stderr, which still go back). Returns (name, URL) pairs.
pub fn outputs_to_urls(
    job: &ClassAd,
    names: &mut Vec<String>,
    streams: &[&str],
) -> Vec<(String, String)> {
    let remaps = url_remaps(job);
    let dest = output_destination(job);
    let mut out = Vec::new();
    names.retain(|n| {
        if let Some((_, url)) = remaps.iter().find(|(src, _)| src == n) {
            out.push((n.clone(), url.clone()));
            return false;
        }
        match &dest {
            Some(d) if !streams.contains(&n.as_str()) => {
                out.push((n.clone(), destination_url(d, n)));
                false
            }
            _ => true,
        }
    });
    out
}

#[cfg(test)]
mod url_tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ad(text).unwrap()
    }

    #[test]
    fn url_inputs_are_the_url_entries_named_by_their_last_component() {
        let job = ad("TransferInput = \"a.txt, http://h:8/d/data.bin?x=1, FILE:///srv/in/b\"\n");
        let urls = url_inputs(&job).unwrap();
        assert_eq!(
            urls,
            vec![
                UrlInput {
                    url: "http://h:8/d/data.bin?x=1".into(),
                    scheme: "http".into(),
                    name: "data.bin".into()
                },
                UrlInput {
                    url: "FILE:///srv/in/b".into(),
                    scheme: "file".into(),
                    name: "b".into()
                },
            ]
        );
        let e = url_inputs(&ad("TransferInput = \"http://h/dir/\"\n")).unwrap_err();
        assert!(e.contains("http://h/dir/"), "{e}");
        assert!(url_inputs(&ad("TransferInput = \"http://h/..\"\n")).is_err());
        assert!(url_inputs(&ad("X = 1\n")).unwrap().is_empty());
    }

    #[test]
    fn outputs_split_between_urls_and_the_submit_side() {
        let job = ad("TransferOutputRemaps = \"r.txt = http://h/r1\"\n");
        let mut names = vec!["r.txt".to_string(), "o.txt".into(), "_out".into()];
        assert_eq!(
            outputs_to_urls(&job, &mut names, &["_out"]),
            vec![("r.txt".to_string(), "http://h/r1".to_string())]
        );
        assert_eq!(names, vec!["o.txt", "_out"]);
        let job = ad(concat!(
            "TransferOutputRemaps = \"r.txt = http://h/r1\"\n",
            "OutputDestination = \"file:///d\"\n"
        ));
        let mut names = vec!["r.txt".to_string(), "o.txt".into(), "_out".into()];
        assert_eq!(
            outputs_to_urls(&job, &mut names, &["_out"]),
            vec![
                ("r.txt".to_string(), "http://h/r1".to_string()),
                ("o.txt".to_string(), "file:///d/o.txt".to_string())
            ]
        );
        assert_eq!(names, vec!["_out"]);
    }

    #[test]
    fn destination_and_job_plugins() {
        let job = ad(concat!(
            "OutputDestination = \"file:///out/dir/\"\n",
            "TransferPlugins = \"foo,bar=/p/fb; baz = /p/baz;junk\"\n"
        ));
        let dest = output_destination(&job).unwrap();
        assert_eq!(destination_url(&dest, "o.txt"), "file:///out/dir/o.txt");
        assert_eq!(
            job_plugins(&job),
            vec![
                ("foo".into(), "/p/fb".into()),
                ("bar".into(), "/p/fb".into()),
                ("baz".into(), "/p/baz".into())
            ]
        );
        assert_eq!(
            output_destination(&ad("OutputDestination = \"/x\"\n")),
            None
        );
        let job = ad("TransferOutputRemaps = \"a.dat = http://h/x?k=v ; b = c; d = file:///e\"\n");
        assert_eq!(
            url_remaps(&job),
            vec![
                ("a.dat".into(), "http://h/x?k=v".into()),
                ("d".into(), "file:///e".into())
            ]
        );
    }
}

/// HTCondor's HoldReasonCode FailedToCreateProcess: the job's program could not be started.
pub const HOLD_FAILED_TO_CREATE_PROCESS: i64 = 6;

/// The hold reason of a program that could not be started, as HTCondor words it:
/// `Error from <slot>: Failed to execute '<path>'[ with arguments <args>]: (errno=<n>:
/// '<strerror>')`.
pub fn exec_failure_reason(
    slot: &str,
    program: &std::path::Path,
    args: &[String],
    error: &std::io::Error,
) -> String {
    let with_args = if args.is_empty() {
        String::new()
    } else {
        format!(" with arguments {}", args.join(" "))
    };
    let errno = error.raw_os_error().unwrap_or(0);
    let text = error.to_string();
    let text = match text.find(" (os error ") {
        Some(i) => &text[..i],
        None => &text,
    };
    format!(
        "Error from {slot}: Failed to execute '{}'{with_args}: (errno={errno}: '{text}')",
        program.display()
    )
}

#[cfg(test)]
mod exec_failure_tests {
    use super::*;

    #[test]
    fn the_reason_names_the_program_its_arguments_and_the_errno() {
        let e = std::io::Error::from_raw_os_error(2);
        let r = exec_failure_reason(
            "slot1@host",
            std::path::Path::new("/no/such"),
            &["a".into(), "b".into()],
            &e,
        );
        assert_eq!(
            r,
            "Error from slot1@host: Failed to execute '/no/such' with arguments a b: \
             (errno=2: 'No such file or directory')"
        );
        let e = std::io::Error::from_raw_os_error(13);
        let r = exec_failure_reason("slot2@h", std::path::Path::new("/x"), &[], &e);
        assert_eq!(
            r,
            "Error from slot2@h: Failed to execute '/x': (errno=13: 'Permission denied')"
        );
    }
}
