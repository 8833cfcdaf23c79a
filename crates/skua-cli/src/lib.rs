//! The `skua` user commands and the `skuad` daemon launcher.
//!
//! Binaries are thin: `crates/skua/src/bin/*.rs` call [`main_skua`] and
//! [`main_skuad`]; argument parsing and output formats live here.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod classad_cmd;
mod config_cmd;

/// Skua: a high-throughput batch system speaking HTCondor's language.
#[derive(Parser)]
#[command(name = "skua", version, about)]
struct SkuaCli {
    #[command(subcommand)]
    command: SkuaCommand,
}

#[derive(Subcommand)]
enum SkuaCommand {
    /// Evaluate ClassAd expressions.
    #[command(subcommand)]
    Classad(classad_cmd::ClassadCommand),
    /// Query the configuration (HTCondor's configuration language).
    Config(config_cmd::ConfigArgs),
}

/// Entry point of the `skua` binary.
pub fn main_skua() -> ExitCode {
    let cli = SkuaCli::parse();
    match cli.command {
        SkuaCommand::Classad(cmd) => classad_cmd::run(cmd),
        SkuaCommand::Config(args) => config_cmd::run(args),
    }
}

/// `skuad`: runs a daemon by role.
#[derive(Parser)]
#[command(name = "skuad", version, about)]
struct SkuadCli {
    /// The daemon to run. No daemon roles exist yet in this release.
    role: String,
}

/// Entry point of the `skuad` binary.
pub fn main_skuad() -> ExitCode {
    let cli = SkuadCli::parse();
    eprintln!(
        "skuad: unknown daemon role `{}` (this release has no daemons yet)",
        cli.role
    );
    ExitCode::from(2)
}
