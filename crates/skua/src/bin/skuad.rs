//! `skuad`: runs a Skua daemon by role. All logic lives in `skua-cli`.
fn main() -> std::process::ExitCode {
    skua_cli::main_skuad()
}
