//! The collector: every daemon's ad, kept by (type, name), expired when it
//! is not refreshed within its lifetime, and queried with ClassAd
//! constraints.
//!
//! [`store`] is the pure core (no I/O, no clock: `now` is an argument);
//! [`daemon`] is the thin async shell that feeds it from the network.
//! [`registry`] keeps the host credentials issued through the join route.

pub mod daemon;
pub mod join;
pub mod registry;
pub mod store;

pub use store::{
    AdStore, AdType, RemovedAd, StoreConfig, StoredAd, TypeFilter, UpdateOutcome,
    DEFAULT_CLASSAD_LIFETIME,
};
