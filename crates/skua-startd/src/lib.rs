//! `skuad startd`: the owner's agent. Measures the machine, divides it into
//! slots (the pure core is `skua-slot`), rates its speed (`Mips`,
//! `KFlops`: `bench`), advertises one Machine ad per
//! slot, accepts matches and claims, and runs one starter per job.

pub mod bench;
pub mod cron;
pub mod daemon;
pub mod facts;
