//! tracer: records every CUDA driver call of a process tree with eBPF uprobes
//! on libcuda, to JSONL. See docs/trace-format.md; the code's layers are in
//! docs/architecture.md.

fn main() {
    tracer::cli::main();
}
