//! `replay`: re-execute a replayable recording (docs/replay.md).

mod cli;
mod options;
mod run;
mod together_run;

/// Exit status: 0 done (outputs match); 1 a run-time failure (a bad
/// recording, a CUDA error, an output check that found different bytes);
/// 2 a misuse of the command line.
fn main() -> std::process::ExitCode {
    match cli::main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("replay: error: {e:#}");
            let misuse = e.downcast_ref::<replay::Misuse>().is_some();
            std::process::ExitCode::from(if misuse { 2 } else { 1 })
        }
    }
}
