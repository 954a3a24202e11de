//! `replay`: re-execute a replayable recording (docs/replay.md).

mod cli;
mod options;
mod run;

fn main() -> std::process::ExitCode {
    match cli::main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("replay: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
