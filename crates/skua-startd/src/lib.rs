//! `skuad startd`: the owner's agent. Measures the machine, divides it into
//! slots (the pure core is `skua-slot`), advertises one Machine ad per
//! slot, accepts matches and claims, and runs one starter per job.

pub mod cron;
pub mod daemon;
pub mod facts;
