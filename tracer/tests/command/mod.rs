//! Running the tracer binary from the analysis tests, and the launch line
//! their hand-built traces share.
#![allow(dead_code, reason = "each test binary uses what it needs")]

use std::process::Command;

/// `tracer ARGS`: exit code, stdout, stderr.
pub fn tracer(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).output().expect("run tracer");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A 1 µs cuLaunchKernel of `kernel` (grid 4, block 128) by pid 1 on the legacy default stream.
pub fn launch(ts: u64, kernel: &str) -> String {
    format!(
        r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"{kernel}","grid":[4,1,1],"block":[128,1,1],"shared_mem":0,"stream":"0x0","duration_us":1.0,"ret":0}}"#
    )
}
