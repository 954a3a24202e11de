//! `tracer image FILE` / `tracer image --pid PID --addr ADDR`: decode a CUDA
//! code image (see docs/cuda-images.md).
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use crate::collect::procmem::ProcMem;
use crate::decode::cudaimage::{capture, layouts, report};

#[derive(Args, Debug, Clone)]
pub struct ImageArgs {
    /// Image file.
    #[arg(required_unless_present = "pid", conflicts_with = "pid")]
    pub file: Option<PathBuf>,
    /// Read the image from this process's memory (at --addr).
    #[arg(long, value_name = "PID", requires = "addr")]
    pub pid: Option<u32>,
    /// Address of the image (or of its fatbin wrapper) in that process, e.g.
    /// the `code`/`image` argument of a recorded cuLibraryLoadData/cuModuleLoadData.
    #[arg(long, value_name = "ADDR", value_parser = addr_arg, requires = "pid")]
    pub addr: Option<u64>,
    /// Also write the image bytes read from the process to this file.
    #[arg(long, value_name = "FILE", requires = "pid")]
    pub save: Option<PathBuf>,
    /// Print only each kernel's parameter layout (`NAME size=N offset:size ...`),
    /// from the entry the driver would load on --arch.
    #[arg(long)]
    pub layouts: bool,
    /// SM version of the GPU for --layouts (90 for H100; default: newest cubin).
    #[arg(long, value_name = "SM", requires = "layouts")]
    pub arch: Option<u32>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--addr`: decimal or 0x-hex (tracer_format::hex::parse_addr).
fn addr_arg(s: &str) -> Result<u64, String> {
    tracer_format::hex::parse_addr(s).ok_or_else(|| format!("`{s}` is not an address (decimal or 0x-hex)"))
}

pub fn run(a: &ImageArgs) -> anyhow::Result<()> {
    let (bytes, name) = match (&a.file, a.pid, a.addr) {
        (Some(path), _, _) => (read_file(path)?, path.display().to_string()),
        (None, Some(pid), Some(addr)) => {
            let mut mem = ProcMem::open(pid).with_context(|| format!("opening /proc/{pid}/mem"))?;
            let c = capture::capture(&mut mem, addr).with_context(|| format!("process {pid}"))?;
            let name = match c.wrapper {
                Some(_) => format!("pid {pid} wrapper {addr:#x} -> {:#x}", c.addr),
                None => format!("pid {pid} {addr:#x}"),
            };
            if let Some(out) = &a.save {
                std::fs::write(out, &c.bytes).with_context(|| format!("writing {}", out.display()))?;
            }
            (c.bytes, name)
        }
        _ => anyhow::bail!(crate::error::UsageError("give an image FILE, or --pid and --addr".into())),
    };
    if a.layouts {
        let l = layouts::kernel_layouts(&bytes, a.arch).with_context(|| name.clone())?;
        let text = if a.json { serde_json::to_string_pretty(&l)? + "\n" } else { layouts_text(&l) };
        return write_out(&text);
    }
    let r = report::inspect(&bytes).with_context(|| name.clone())?;
    let text = if a.json { serde_json::to_string_pretty(&r)? + "\n" } else { report::render_text(&r, &name) };
    write_out(&text)?;
    // Partial results were printed; the exit code still says the image is damaged.
    let failed = r.errors.len() + r.totals.failed_entries;
    if failed > 0 {
        anyhow::bail!(
            "{name}: {failed} part(s) could not be decoded ({} container errors, {} entries), see above",
            r.errors.len(),
            r.totals.failed_entries
        );
    }
    Ok(())
}

/// The image file's bytes: a regular file only, within an image's bound
/// (tracer_format::open: a device such as /dev/zero or a FIFO is refused at
/// the open, without waiting on a writer).
fn read_file(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use tracer_format::open::Kind;
    let o = tracer_format::open::open(path, Kind::Image).map_err(|e| {
        let m = format!("{e:#}");
        match m.strip_suffix(&format!(": {} must be a regular file", Kind::Image.what())) {
            Some(head) => anyhow::anyhow!(
                "{head}: give an image file (fatbin, cubin, PTX, or a library with a .nv_fatbin section)"
            ),
            None => e,
        }
    })?;
    let mut bytes = Vec::with_capacity(usize::try_from(o.len).unwrap_or(0));
    std::io::Read::read_to_end(&mut std::io::Read::take(o.file, o.len), &mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(bytes)
}

fn write_out(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        // `tracer image lib.so | head` is fine.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// One line per kernel: `NAME size=N [offset:size ...] (source)`.
fn layouts_text(l: &layouts::Layouts) -> String {
    let mut out = String::new();
    for (name, k) in &l.kernels {
        let slots: Vec<String> = k.params.iter().map(|p| format!("{}:{}", p.offset, p.size)).collect();
        out += &format!("{name} size={} [{}] ({})\n", k.size, slots.join(" "), k.source);
    }
    for c in &l.conflicts {
        out += &format!("conflict: {c}\n");
    }
    out
}
