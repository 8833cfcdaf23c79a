//! `skuad negotiator`: the matchmaker's shell around `skua-negotiation`.

pub mod daemon;
