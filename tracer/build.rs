//! Builds the eBPF object (tracer-ebpf) with the nightly toolchain and
//! bpf-linker, the aya-template way; loader.rs embeds it with include_bytes_aligned!.
fn main() -> anyhow::Result<()> {
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracer-ebpf",
            root_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../tracer-ebpf"),
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
}
