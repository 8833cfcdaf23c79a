//! Skua's test kit (a dev-dependency only; nothing in a daemon or a
//! binary depends on it).
//!
//! - [`ads`]: builders of job ads, slot ads and submit descriptions with
//!   the attributes the daemons read ([`JobAdBuilder`], [`SlotAdBuilder`],
//!   [`SubmitBuilder`]).
//! - [`shadow`]: a fake shadow, the schedd's side of a running job (the
//!   routes a starter calls), recording what the starter tells it.
//! - [`starter`]: a fake starter, a script that keeps the startd's contract
//!   with its starters without running anything.
//! - [`pool`]: an in-process pool: the collector, negotiator, schedd and
//!   startd started through their `serve(ctx, shutdown)` on loopback port
//!   0 in one test process, with contexts from
//!   [`DaemonContext::for_test`](skua_daemon::DaemonContext::for_test), one
//!   shared [`ManualClock`](skua_daemon::ManualClock) and one
//!   [`FaultFilter`](skua_net::FaultFilter) on every client the daemons
//!   make.

pub mod ads;
pub mod pool;
pub mod shadow;
pub mod starter;

pub use ads::{JobAdBuilder, SlotAdBuilder, SubmitBuilder};
pub use pool::{InProcessPool, PoolBuilder};
pub use shadow::{FakeShadow, ShadowRecord};
pub use starter::FakeStarter;
