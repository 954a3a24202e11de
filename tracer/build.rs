//! Builds the eBPF object (tracer-ebpf) with the nightly toolchain and
//! bpf-linker, the aya-template way; loader.rs embeds it with include_bytes_aligned!.
//! Also captures the git commit the binary is built from (`TRACER_GIT_COMMIT`:
//! `tracer --version` and the trace header's `tracer_commit`).
use std::process::Command;

/// `git` in the crate's directory; None if git or the repository is missing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit HEAD is at (12 hex digits), or "unknown" outside a git checkout.
fn commit() -> String {
    // Rebuild when HEAD moves: HEAD itself, the branch it points to, packed refs.
    for p in ["HEAD", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", p]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(&["rev-parse", "--git-path", &r])
    {
        println!("cargo:rerun-if-changed={path}");
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
}

fn main() -> anyhow::Result<()> {
    println!("cargo:rustc-env=TRACER_GIT_COMMIT={}", commit());
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracer-ebpf",
            root_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../tracer-ebpf"),
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
}
