//! Job ids and job status codes.

use std::fmt;
use std::str::FromStr;

/// A job's id: cluster and proc (`12.3`). Ordered by cluster, then proc.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct JobId {
    pub cluster: u32,
    pub proc: u32,
}

impl JobId {
    pub fn new(cluster: u32, proc: u32) -> JobId {
        JobId { cluster, proc }
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster, self.proc)
    }
}

/// Text that is not a job id (`CLUSTER.PROC`) or job reference (`CLUSTER`
/// or `CLUSTER.PROC`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid job id `{text}` (expected {expected})")]
pub struct BadJobId {
    /// The text given.
    pub text: String,
    /// What was expected (`CLUSTER.PROC`, or `CLUSTER or CLUSTER.PROC`).
    pub expected: &'static str,
}

/// A run of ASCII digits (no sign, not empty) as a `u32`.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl FromStr for JobId {
    type Err = BadJobId;
    fn from_str(s: &str) -> Result<JobId, BadJobId> {
        let parsed = s
            .split_once('.')
            .and_then(|(c, p)| Some(JobId::new(number(c)?, number(p)?)));
        parsed.ok_or_else(|| BadJobId {
            text: s.to_string(),
            expected: "CLUSTER.PROC",
        })
    }
}

/// What a user names on a command line: a whole cluster (`12`) or one job
/// (`12.3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobRef {
    Cluster(u32),
    Job(JobId),
}

impl FromStr for JobRef {
    type Err = BadJobId;
    fn from_str(s: &str) -> Result<JobRef, BadJobId> {
        let parsed = match s.split_once('.') {
            Some(_) => s.parse().ok().map(JobRef::Job),
            None => number(s).map(JobRef::Cluster),
        };
        parsed.ok_or_else(|| BadJobId {
            text: s.to_string(),
            expected: "CLUSTER or CLUSTER.PROC",
        })
    }
}

impl fmt::Display for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobRef::Cluster(c) => write!(f, "{c}"),
            JobRef::Job(id) => id.fmt(f),
        }
    }
}

/// HTCondor's `JobStatus` codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobStatus {
    Idle = 1,
    Running = 2,
    Removed = 3,
    Completed = 4,
    Held = 5,
    TransferringOutput = 6,
    Suspended = 7,
}

impl JobStatus {
    pub const ALL: [JobStatus; 7] = [
        JobStatus::Idle,
        JobStatus::Running,
        JobStatus::Removed,
        JobStatus::Completed,
        JobStatus::Held,
        JobStatus::TransferringOutput,
        JobStatus::Suspended,
    ];

    /// The `JobStatus` attribute value.
    pub fn code(self) -> i64 {
        self as i64
    }

    pub fn from_code(code: i64) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The letter `condor_q` prints.
    pub fn letter(self) -> char {
        match self {
            JobStatus::Idle => 'I',
            JobStatus::Running => 'R',
            JobStatus::Removed => 'X',
            JobStatus::Completed => 'C',
            JobStatus::Held => 'H',
            JobStatus::TransferringOutput => '>',
            JobStatus::Suspended => 'S',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Idle => "Idle",
            JobStatus::Running => "Running",
            JobStatus::Removed => "Removed",
            JobStatus::Completed => "Completed",
            JobStatus::Held => "Held",
            JobStatus::TransferringOutput => "TransferringOutput",
            JobStatus::Suspended => "Suspended",
        }
    }

    /// The job has a process somewhere (running, suspended or sending its
    /// output back): leaving the queue waits for that process to end.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            JobStatus::Running | JobStatus::Suspended | JobStatus::TransferringOutput
        )
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_print_and_parse_as_cluster_dot_proc() {
        assert_eq!("12.3".parse::<JobId>(), Ok(JobId::new(12, 3)));
        assert_eq!(JobId::new(12, 3).to_string(), "12.3");
        for bad in [
            "12",
            "12.",
            ".3",
            "1.2.3",
            "a.b",
            "-1.0",
            "+1.0",
            "4294967296.0",
            "",
        ] {
            let err = bad.parse::<JobId>().unwrap_err();
            assert_eq!(err.text, bad);
        }
        assert_eq!(
            "x".parse::<JobId>().unwrap_err().to_string(),
            "invalid job id `x` (expected CLUSTER.PROC)"
        );
        assert!(JobId::new(1, 9) < JobId::new(2, 0));
        assert!(JobId::new(2, 0) < JobId::new(2, 1));
    }

    #[test]
    fn job_refs_name_a_cluster_or_a_job() {
        assert_eq!("12".parse::<JobRef>(), Ok(JobRef::Cluster(12)));
        assert_eq!("12.3".parse::<JobRef>(), Ok(JobRef::Job(JobId::new(12, 3))));
        for bad in ["", "12.", "a", "-3", "12.3.4", "99999999999"] {
            assert!(bad.parse::<JobRef>().is_err(), "{bad}");
        }
        assert_eq!(JobRef::Cluster(7).to_string(), "7");
        assert_eq!(JobRef::Job(JobId::new(7, 1)).to_string(), "7.1");
    }

    #[test]
    fn job_status_codes_and_letters_are_htcondors() {
        let table: Vec<(i64, char)> = JobStatus::ALL
            .iter()
            .map(|s| (s.code(), s.letter()))
            .collect();
        assert_eq!(
            table,
            [
                (1, 'I'),
                (2, 'R'),
                (3, 'X'),
                (4, 'C'),
                (5, 'H'),
                (6, '>'),
                (7, 'S')
            ]
        );
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::from_code(s.code()), Some(s));
        }
        assert_eq!(JobStatus::from_code(0), None);
        assert_eq!(JobStatus::from_code(8), None);
        assert_eq!(
            JobStatus::TransferringOutput.to_string(),
            "TransferringOutput"
        );
        assert!(JobStatus::Suspended.is_active());
        assert!(!JobStatus::Held.is_active());
    }
}
