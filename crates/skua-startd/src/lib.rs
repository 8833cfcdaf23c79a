//! `skuad startd`: the owner's agent. Measures the machine, divides it into
//! slots (the pure core is `skua-slot`), rates its speed (`Mips`,
//! `KFlops`: `bench`), advertises one Machine ad per
//! slot, accepts matches and claims, and runs one starter per job.
//!
//! The shell (`daemon::serve`) is one loop (`shell`) over one closed
//! `event::Event` enum; see `daemon` for the modules.

pub mod advertise;
pub mod bench;
pub mod cron;
pub mod daemon;
pub mod event;
pub mod facts;
pub mod job_access;
pub mod peers;
pub mod poll;
pub mod routes;
pub mod shell;
pub mod starters;
