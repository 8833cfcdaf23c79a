//! Builders of the ads tests write by hand otherwise: a job ad as the
//! schedd queues it, a slot ad as the startd advertises it, a submit
//! description as a user writes it.
//!
//! Each starts from values that make a plain, runnable, matchable thing
//! (a vanilla job of one CPU and 1 MiB, an unclaimed slot that starts
//! anything) and changes only what the test names. `attr` sets any value,
//! `expr` any expression (ClassAd text, which must parse).

use classad::{ClassAd, Expr, Value};

/// Parses ClassAd expression text a test wrote; a typo is the test's bug.
fn parse(text: &str) -> Expr {
    match classad::parse_expr(text) {
        Ok(e) => e,
        Err(e) => panic!("test expression {text:?} does not parse: {e}"),
    }
}

/// The methods every ad builder has: any attribute as a value or as
/// expression text, the ad, and its text.
macro_rules! ad_builder_methods {
    () => {
        /// Any attribute, as a value.
        pub fn attr(mut self, name: &str, value: impl Into<Value>) -> Self {
            self.ad.insert_value(name, value);
            self
        }

        /// Any attribute, as expression text.
        pub fn expr(mut self, name: &str, text: &str) -> Self {
            self.ad.insert(name, parse(text));
            self
        }

        /// The ad.
        pub fn build(self) -> ClassAd {
            self.ad
        }

        /// The ad in new ClassAd syntax, as messages carry it.
        pub fn text(&self) -> String {
            classad::unparse_ad(&self.ad)
        }
    };
}

/// A job ad as the schedd queues it (see [`JobAdBuilder::new`] for the
/// defaults).
#[derive(Clone, Debug)]
pub struct JobAdBuilder {
    ad: ClassAd,
}

impl Default for JobAdBuilder {
    fn default() -> Self {
        JobAdBuilder::new()
    }
}

impl JobAdBuilder {
    /// Job `1.0` of `tester`: `/bin/true` in the vanilla universe, Idle,
    /// in `/tmp`, one CPU, 1 MiB of memory, 1 KiB of disk, running
    /// anywhere (`Requirements = true`), no file transfer.
    pub fn new() -> JobAdBuilder {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Job");
        ad.insert_value("ClusterId", 1i64);
        ad.insert_value("ProcId", 0i64);
        ad.insert_value("Owner", "tester");
        ad.insert_value("Cmd", "/bin/true");
        ad.insert_value("Args", "");
        ad.insert_value("JobUniverse", 5i64);
        ad.insert_value("JobStatus", 1i64);
        ad.insert_value("Iwd", "/tmp");
        ad.insert_value("RequestCpus", 1i64);
        ad.insert_value("RequestMemory", 1i64);
        ad.insert_value("RequestDisk", 1i64);
        ad.insert_value("Requirements", true);
        ad.insert_value("ShouldTransferFiles", "NO");
        JobAdBuilder { ad }
    }

    /// `ClusterId` and `ProcId`.
    pub fn id(mut self, cluster: i64, proc: i64) -> Self {
        self.ad.insert_value("ClusterId", cluster);
        self.ad.insert_value("ProcId", proc);
        self
    }

    /// `Owner`.
    pub fn owner(self, owner: &str) -> Self {
        self.attr("Owner", owner)
    }

    /// `Cmd` and `Args` (HTCondor's old argument syntax).
    pub fn command(self, cmd: &str, args: &str) -> Self {
        self.attr("Cmd", cmd).attr("Args", args)
    }

    /// `Iwd`, the job's working directory.
    pub fn iwd(self, dir: &str) -> Self {
        self.attr("Iwd", dir)
    }

    /// `JobStatus` (1 Idle, 2 Running, 4 Completed, 5 Held...).
    pub fn status(self, status: i64) -> Self {
        self.attr("JobStatus", status)
    }

    /// `RequestCpus`, `RequestMemory` (MiB) and `RequestDisk` (KiB).
    pub fn requests(self, cpus: i64, memory_mb: i64, disk_kb: i64) -> Self {
        self.attr("RequestCpus", cpus)
            .attr("RequestMemory", memory_mb)
            .attr("RequestDisk", disk_kb)
    }

    /// `Requirements` (expression text).
    pub fn requirements(self, text: &str) -> Self {
        self.expr("Requirements", text)
    }

    /// `Rank` (expression text).
    pub fn rank(self, text: &str) -> Self {
        self.expr("Rank", text)
    }

    ad_builder_methods!();
}

/// A slot ad as the startd advertises it (see [`SlotAdBuilder::new`]).
#[derive(Clone, Debug)]
pub struct SlotAdBuilder {
    ad: ClassAd,
}

impl SlotAdBuilder {
    /// `slot1@<host>`: a static slot, Unclaimed and Idle, one CPU, 1024
    /// MiB, 100 000 KiB of disk, Linux on x86_64, `Start = true`,
    /// `Requirements = START`, `Rank = 0`, at `<127.0.0.1:1>`.
    pub fn new(host: &str) -> SlotAdBuilder {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Machine");
        ad.insert_value("Name", format!("slot1@{host}"));
        ad.insert_value("Machine", host);
        ad.insert_value("SlotID", 1i64);
        ad.insert_value("SlotType", "Static");
        ad.insert_value("PartitionableSlot", false);
        ad.insert_value("State", "Unclaimed");
        ad.insert_value("Activity", "Idle");
        ad.insert_value("Cpus", 1i64);
        ad.insert_value("Memory", 1024i64);
        ad.insert_value("Disk", 100_000i64);
        ad.insert_value("TotalCpus", 1i64);
        ad.insert_value("TotalMemory", 1024i64);
        ad.insert_value("Arch", "X86_64");
        ad.insert_value("OpSys", "LINUX");
        ad.insert_value("Start", true);
        ad.insert("Requirements", parse("START"));
        ad.insert_value("Rank", 0i64);
        ad.insert_value("MyAddress", "<127.0.0.1:1>");
        ad.insert_value("UidDomain", host);
        ad.insert_value("FileSystemDomain", host);
        SlotAdBuilder { ad }
    }

    /// Slot number `id` (`SlotID`, and the `slot<id>@` of its name).
    pub fn slot_id(mut self, id: i64) -> Self {
        let host = match self.ad.lookup("Machine") {
            Some(Expr::Lit(v)) => v.as_string().unwrap_or_default(),
            _ => String::new(),
        };
        self.ad.insert_value("SlotID", id);
        self.ad.insert_value("Name", format!("slot{id}@{host}"));
        self
    }

    /// `Cpus` and `Memory` (MiB).
    pub fn resources(self, cpus: i64, memory_mb: i64) -> Self {
        self.attr("Cpus", cpus).attr("Memory", memory_mb)
    }

    /// `State` and `Activity`.
    pub fn state(self, state: &str, activity: &str) -> Self {
        self.attr("State", state).attr("Activity", activity)
    }

    /// Claimed and Busy with `user`'s job `job_id`, started at `since`.
    pub fn running(self, user: &str, job_id: &str, since: i64) -> Self {
        self.state("Claimed", "Busy")
            .attr("RemoteUser", user)
            .attr("RemoteOwner", user)
            .attr("JobId", job_id)
            .attr("JobStart", since)
            .attr("CurrentRank", 0.0)
    }

    /// A partitionable slot.
    pub fn partitionable(self) -> Self {
        self.attr("SlotType", "Partitionable")
            .attr("PartitionableSlot", true)
    }

    /// `Start` (expression text).
    pub fn start(self, text: &str) -> Self {
        self.expr("Start", text)
    }

    ad_builder_methods!();
}

/// A submit description, as a user writes it, and the job ads
/// `skua submit` makes of it.
#[derive(Clone, Debug)]
pub struct SubmitBuilder {
    lines: Vec<(String, String)>,
    queue: String,
}

impl SubmitBuilder {
    /// `executable = <executable>`, `queue` once.
    pub fn new(executable: &str) -> SubmitBuilder {
        SubmitBuilder {
            lines: vec![("executable".into(), executable.into())],
            queue: "queue".into(),
        }
    }

    /// A `name = value` line (a later one for the same name wins, as in
    /// the language).
    pub fn set(mut self, name: &str, value: &str) -> Self {
        self.lines.push((name.into(), value.into()));
        self
    }

    /// `arguments = ...`.
    pub fn arguments(self, args: &str) -> Self {
        self.set("arguments", args)
    }

    /// `request_memory`, `request_cpus`.
    pub fn requests(self, cpus: u32, memory_mb: u32) -> Self {
        self.set("request_cpus", &cpus.to_string())
            .set("request_memory", &memory_mb.to_string())
    }

    /// A job attribute of its own (`+Name = expression`).
    pub fn attr(mut self, name: &str, expression: &str) -> Self {
        self.lines.push((format!("+{name}"), expression.into()));
        self
    }

    /// The queue statement's arguments (`"3"`, `"Item in (a, b)"`...).
    pub fn queue(mut self, args: &str) -> Self {
        self.queue = format!("queue {args}");
        self
    }

    /// The description's text.
    pub fn text(&self) -> String {
        let mut text: String = self
            .lines
            .iter()
            .map(|(k, v)| format!("{k} = {v}\n"))
            .collect();
        text.push_str(&self.queue);
        text.push('\n');
        text
    }

    /// The job ads `owner` gets from it when submitting from `dir` at
    /// `now` as cluster `cluster` (no file is read: a description that
    /// reads files fails here).
    pub fn job_ads(
        &self,
        owner: &str,
        cluster: u32,
        now: i64,
        dir: &str,
    ) -> Result<Vec<ClassAd>, skua_submit::SubmitError> {
        let opts = skua_submit::SubmitOptions::new(owner, cluster, now, dir);
        let files = skua_config::MemoryFiles::new();
        let submission = skua_submit::submit(&self.text(), &files, &opts)?;
        Ok(submission.jobs().cloned().collect())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use classad::Evaluator;

    fn eval(ad: &ClassAd, attr: &str) -> Value {
        Evaluator::default().eval_attr(attr, ad, None)
    }

    #[test]
    fn a_default_job_matches_a_default_slot_and_one_too_small_does_not() {
        let job = JobAdBuilder::new()
            .requests(2, 512, 1)
            .requirements("TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory")
            .build();
        let big = SlotAdBuilder::new("exec.test").resources(4, 4096).build();
        let small = SlotAdBuilder::new("exec.test").resources(1, 4096).build();
        let mut ev = Evaluator::default();
        assert!(classad::symmetric_match(&mut ev, &job, &big).matched);
        assert!(!classad::symmetric_match(&mut ev, &job, &small).matched);
    }

    #[test]
    fn the_builders_set_what_they_name_and_their_text_parses_back() {
        let job = JobAdBuilder::new().id(7, 3).owner("alice").iwd("/work");
        let ad = classad::parse_ad(&job.text()).unwrap();
        assert_eq!(eval(&ad, "ClusterId").as_int(), Some(7));
        assert_eq!(eval(&ad, "ProcId").as_int(), Some(3));
        assert_eq!(eval(&ad, "Owner").as_string().as_deref(), Some("alice"));
        let slot = SlotAdBuilder::new("h.test")
            .slot_id(2)
            .running("bob@test", "4.0", 100)
            .build();
        assert_eq!(
            eval(&slot, "Name").as_string().as_deref(),
            Some("slot2@h.test")
        );
        assert_eq!(eval(&slot, "State").as_string().as_deref(), Some("Claimed"));
        assert_eq!(eval(&slot, "Activity").as_string().as_deref(), Some("Busy"));
        assert_eq!(
            eval(&slot, "RemoteUser").as_string().as_deref(),
            Some("bob@test")
        );
    }

    #[test]
    fn a_submit_description_makes_the_jobs_of_its_queue_statement() {
        let jobs = SubmitBuilder::new("/bin/echo")
            .arguments("$(Process)")
            .requests(1, 64)
            .attr("Tag", "\"x\"")
            .queue("3")
            .job_ads("alice", 5, 1_700_000_000, "/home/alice")
            .unwrap();
        assert_eq!(jobs.len(), 3);
        for (i, job) in jobs.iter().enumerate() {
            assert_eq!(eval(job, "ClusterId").as_int(), Some(5));
            assert_eq!(eval(job, "ProcId").as_int(), Some(i as i64));
            assert_eq!(eval(job, "Owner").as_string().as_deref(), Some("alice"));
            assert_eq!(eval(job, "Cmd").as_string().as_deref(), Some("/bin/echo"));
            assert_eq!(
                eval(job, "Args").as_string().as_deref(),
                Some(i.to_string().as_str())
            );
            assert_eq!(eval(job, "RequestMemory").as_int(), Some(64));
            assert_eq!(eval(job, "Tag").as_string().as_deref(), Some("x"));
        }
    }
}
