//! The startd's pure core: the machine's slots and what happens to them.
//!
//! - [`layout`]: dividing CPUs, memory and disk into slots from HTCondor's
//!   knobs (`NUM_CPUS`, `MEMORY`, `NUM_SLOTS`, `NUM_SLOTS_TYPE_<N>`,
//!   `SLOT_TYPE_<N>`, `SLOT_TYPE_<N>_PARTITIONABLE`).
//! - [`state`]: the per-slot state machine, `(status, policy, event, now)
//!   -> (status, actions)`: HTCondor's states, activities and transitions
//!   driven by the owner's policy (see `docs/policy.md`).
//! - [`Machine`]: the slots, their claims and their ads: match notices,
//!   claims (with the carving of partitionable slots), activations,
//!   deactivations, releases and timeouts; [`check_claim`].
//!
//! No I/O, no clock: the measured facts ([`MachineFacts`]), the
//! configuration (a knob lookup function) and the time are arguments.

mod claim;
mod config;
pub mod layout;
mod machine;
mod policy;
mod slot_ad;
pub mod state;

pub use claim::{check_claim, claim_ids_equal, job_requests, Claim, Launch, Refusal, RunningJob};
pub use config::{PolicyExprs, StartdConfig, POLICY_KNOBS};
pub use layout::{layout, layout_config, parse_slot_type, LayoutConfig, Share, SlotDef};
pub use machine::{Machine, Slot, SlotKind};
pub use state::{
    Action, Activity, After, Event, HoldRequest, Policy, Retire, State, Status, Timeouts,
    HOLD_CODE_STARTD,
};

/// A configuration error, naming the knob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    #[error("{knob}: {message}")]
    Config { knob: String, message: String },
}

/// What the daemon measured about the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineFacts {
    /// Detected CPUs.
    pub cpus: i64,
    /// Detected memory, MB.
    pub memory_mb: i64,
    /// Free disk of the `EXECUTE` directory, KB.
    pub disk_kb: i64,
    /// `X86_64`, `AARCH64`, ...
    pub arch: String,
    /// `LINUX`.
    pub opsys: String,
    /// `OpSysAndVer`, e.g. `Ubuntu22`.
    pub opsys_and_ver: String,
    /// `OpSysName`, e.g. `Ubuntu`.
    pub opsys_name: String,
    /// `OpSysMajorVer`, e.g. 22.
    pub opsys_major_ver: i64,
    /// `OpSysLongName`, e.g. `Ubuntu 22.04.4 LTS`.
    pub opsys_long_name: String,
    /// The 1-minute load average of the whole machine.
    pub load_avg: f64,
    /// Seconds since the last keyboard or mouse activity.
    pub keyboard_idle: i64,
    /// Seconds since the last console activity.
    pub console_idle: i64,
    /// The full host name.
    pub hostname: String,
    pub filesystem_domain: String,
    pub uid_domain: String,
    pub mips: Option<i64>,
    pub kflops: Option<i64>,
    /// When the startd started (`DaemonStartTime`).
    pub start_time: i64,
    /// The slot ads' `CondorVersion` (the startd gives Skua's one version
    /// string, `skua_proto::CONDOR_VERSION`).
    pub condor_version: String,
    /// The transparent checkpoint backends that passed their check at
    /// start-up (`CheckpointBackends`; none: the slot does not offer any).
    pub checkpoint_backends: Vec<String>,
    /// Their platform (`CheckpointPlatform`).
    pub checkpoint_platform: String,
    /// The URL schemes the file-transfer plugins serve
    /// (`HasFileTransferPluginMethods`; none: not advertised).
    pub transfer_plugin_methods: Vec<String>,
}

impl Default for MachineFacts {
    fn default() -> Self {
        MachineFacts {
            cpus: 1,
            memory_mb: 1024,
            disk_kb: 1024 * 1024,
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            opsys_and_ver: "LINUX".into(),
            opsys_name: "LINUX".into(),
            opsys_major_ver: 0,
            opsys_long_name: "LINUX".into(),
            load_avg: 0.0,
            keyboard_idle: 0,
            console_idle: 0,
            hostname: "localhost".into(),
            filesystem_domain: "localhost".into(),
            uid_domain: "localhost".into(),
            mips: None,
            kflops: None,
            start_time: 0,
            condor_version: String::new(),
            checkpoint_backends: Vec::new(),
            checkpoint_platform: String::new(),
            transfer_plugin_methods: Vec::new(),
        }
    }
}
