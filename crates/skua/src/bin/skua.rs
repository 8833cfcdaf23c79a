//! `skua`: the user's command-line tool. All logic lives in `skua-cli`.
fn main() -> std::process::ExitCode {
    skua_cli::main_skua()
}
