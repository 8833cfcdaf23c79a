//! A fake starter: a shell script that keeps the startd's contract with
//! its starters (a spec per line on standard input; a `{"done":...}` line
//! on standard output when a job is over; the claim is over when standard
//! input closes) without running a real job, and leaves marks a test reads:
//! `spec.<pid>.<n>` (the n-th spec the starter got), `job.<pid>` (the pid
//! of its job's process group), `run.<pid>`, `term.<pid>` (SIGTERM came),
//! `eof.<pid>` (standard input closed).
//!
//! Configure the startd with `STARTER = <script>` to use it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// How the fake starter treats each job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StarterMode {
    /// Starts a job that runs (`sleep 300` in its own process group,
    /// recorded in `dir_<pid>.pgid` under `EXECUTE` as the real starter
    /// does) until standard input closes or a signal ends the starter.
    Hold,
    /// Reports each job done at once and waits for the next.
    ReportDone,
    /// Runs until SIGTERM, which it records (`term.<pid>`) and exits 0.
    RunUntilTerm,
}

/// A fake starter script and the directory of its marks.
#[derive(Clone, Debug)]
pub struct FakeStarter {
    /// The script, to name in `STARTER`.
    pub script: PathBuf,
    /// Where it leaves its marks.
    pub marks: PathBuf,
}

impl FakeStarter {
    /// Writes the script under `dir` (with its marks directory beside it)
    /// for a startd whose `EXECUTE` is `execute`.
    pub fn write(dir: &Path, execute: &Path, mode: StarterMode) -> std::io::Result<FakeStarter> {
        let marks = dir.join("marks");
        std::fs::create_dir_all(&marks)?;
        let script = dir.join("fake_starter.sh");
        // what the starter does before recording the spec (so a test that
        // sees the spec sees the job's directory too), and after; a spec is
        // written beside its mark and renamed into place, so a test never
        // reads a mark before its text
        let (before, after) = match mode {
            StarterMode::Hold => (
                "  mkdir -p \"$E/dir_$$\"\n  setsid sleep 300 &\n  echo $! > \"$E/dir_$$.pgid\"\n  \
                 echo $! > \"$M/job.$$\"\n",
                "  cat > /dev/null\n  break\n",
            ),
            StarterMode::ReportDone => (
                "",
                "  job=$(printf '%s' \"$spec\" | sed 's/.*\"job_id\":\"\\([^\"]*\\)\".*/\\1/')\n  \
                 echo \"{\\\"done\\\":\\\"$job\\\"}\"\n",
            ),
            StarterMode::RunUntilTerm => (
                "  mkdir -p \"$E/dir_$$\"\n  echo started > \"$M/run.$$\"\n  \
                 trap 'echo term > \"$M/term.$$\"; exit 0' TERM\n",
                "  while true; do sleep 1; done\n",
            ),
        };
        let text = format!(
            "#!/bin/sh\nM='{m}'\nE='{e}'\nn=0\nwhile IFS= read -r spec; do\n  n=$((n+1))\n{before}  \
             printf '%s\\n' \"$spec\" > \"$M/.part.$$\" && mv \"$M/.part.$$\" \"$M/spec.$$.$n\"\n{after}done\necho eof > \"$M/eof.$$\"\n",
            m = marks.display(),
            e = execute.display(),
        );
        std::fs::write(&script, text)?;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
        Ok(FakeStarter { script, marks })
    }

    /// The marks whose names start with `prefix` (`"spec."`, `"term."`),
    /// sorted by name.
    pub fn marks(&self, prefix: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.marks)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every spec received so far: the starter's pid, the spec's number
    /// for that starter (from 1) and its text, in order.
    pub fn specs(&self) -> Vec<(u32, u32, String)> {
        let mut v: Vec<(u32, u32, String)> = self
            .marks("spec.")
            .iter()
            .filter_map(|p| {
                let name = p.file_name()?.to_string_lossy().into_owned();
                let mut parts = name.split('.').skip(1);
                let pid = parts.next()?.parse().ok()?;
                let n = parts.next()?.parse().ok()?;
                let text = std::fs::read_to_string(p).ok()?;
                Some((pid, n, text.trim_end().to_string()))
            })
            .collect();
        v.sort_by_key(|(pid, n, _)| (*pid, *n));
        v
    }

    /// The pid of the job process group the starter `pid` started
    /// ([`StarterMode::Hold`]).
    pub fn job_pid(&self, pid: u32) -> Option<i32> {
        std::fs::read_to_string(self.marks.join(format!("job.{pid}")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Whether the starter `pid` saw its standard input close.
    pub fn saw_eof(&self, pid: u32) -> bool {
        self.marks.join(format!("eof.{pid}")).exists()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{BufRead, Write};
    use std::process::{Command, Stdio};

    #[test]
    fn reporting_done_it_answers_each_spec_and_records_it_then_the_end_of_input() {
        let dir = std::env::temp_dir().join(format!("skua-fake-starter-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fake = FakeStarter::write(&dir, &dir.join("execute"), StarterMode::ReportDone).unwrap();
        let mut child = Command::new(&fake.script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        for job in ["1.0", "1.1"] {
            writeln!(stdin, r#"{{"claim_id":"c","job_id":"{job}"}}"#).unwrap();
            line.clear();
            out.read_line(&mut line).unwrap();
            assert_eq!(line.trim(), format!(r#"{{"done":"{job}"}}"#));
        }
        drop(stdin);
        assert!(child.wait().unwrap().success());
        let pid = child.id();
        let specs = fake.specs();
        assert_eq!(specs.len(), 2);
        assert!(specs.iter().all(|(p, _, _)| *p == pid));
        assert!(specs[1].2.contains(r#""job_id":"1.1""#), "{specs:?}");
        assert!(fake.saw_eof(pid));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
