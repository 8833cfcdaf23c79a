//! HTCondor's shared vocabulary, defined once for every Skua crate: job ids
//! (`12.3`), `JobStatus` codes, and the startd's slot states and activities.
//!
//! The text and numbers are HTCondor's (they appear in ads and on the
//! wire); the types only give them names. Parsing is case-insensitive, as
//! ClassAd string comparison is; printing gives HTCondor's spelling.
//! Pure: no dependency on other Skua crates.

mod job;
mod slot;

pub use job::{BadJobId, JobId, JobRef, JobStatus};
pub use slot::{Activity, SlotState};
