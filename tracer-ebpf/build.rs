// Rebuild the eBPF object when bpf-linker changes (aya-template's approach).
fn main() {
    if let Ok(path) = which::which("bpf-linker") {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
