//! `skua config` (being written).
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ConfigArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

pub fn run(_args: ConfigArgs) -> ExitCode {
    eprintln!("skua config: not available yet");
    ExitCode::from(2)
}
