//! What every Skua daemon shares: the configuration read from the real
//! system, directories, logging, the security setup (pool signing key,
//! daemon token, ALLOW/DENY policy), address files, bringing a daemon up
//! (`bringup`: listeners, server, address file, its ads' common header), the
//! clock, and the loop that advertises a daemon's ad to the collector; jobs' cgroups (`cgroup`,
//! shared by the starter and the startd).
//!
//! This is the edge where the file system, the environment and the clock are
//! read; the decisions are made by the pure cores (`skua-config`,
//! `classad`, the daemons' own cores).

pub mod account;
pub mod address;
pub mod advertise;
pub mod bringup;
pub mod cgroup;
pub mod clock;
pub mod context;
pub mod logging;
mod revocation;
pub mod security;
pub mod system_config;
pub mod work;

pub use address::{
    collector_host_uses_address_file, format_address_file, parse_address_file, read_address_file,
    write_address_file, AddressError,
};
pub use advertise::Advertiser;
pub use bringup::{bind, bring_up, host_name, Bound, Listening};
pub use clock::{Clock, ManualClock};
pub use context::{DaemonContext, DaemonError};

/// The host's local time zone: its offset from UTC (seconds east) at `t`,
/// the time-zone input of the ClassAd evaluator and the job event log.
pub fn local_utc_offset(t: i64) -> i32 {
    use chrono::{Offset, TimeZone};
    match chrono::Local.timestamp_opt(t, 0) {
        chrono::LocalResult::Single(dt) | chrono::LocalResult::Ambiguous(dt, _) => {
            dt.offset().fix().local_minus_utc()
        }
        chrono::LocalResult::None => 0,
    }
}

/// Seconds since the Unix epoch, from the system clock (daemons only: the
/// cores take time as an argument).
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
