//! `tracer export TRACE --format pprof [-o FILE]`: the trace's user stacks
//! as a gzip-compressed pprof profile (`crate::export::pprof`,
//! docs/stacks.md "pprof export").
use std::path::Path;

use anyhow::Context as _;

use crate::analysis::model::Trace;
use crate::analysis::timeline::Timeline;
use crate::cli::output::OutFile;
use crate::export::pprof;

/// Writes the profile of `t` on timeline `tl` to `out` ("-": stdout) and says what it wrote.
pub fn run(t: &Trace, tl: &Timeline, out: &Path, force: bool) -> anyhow::Result<()> {
    if out.as_os_str() == "-" {
        pprof::export(t, tl, std::io::stdout().lock())?;
        return Ok(());
    }
    let mut f = OutFile::create_uncompressed(out, force)?;
    let w = pprof::export(t, tl, &mut f).with_context(|| format!("writing {}", out.display()))?;
    f.finish(out)?;
    let v = &w.totals;
    eprintln!(
        "wrote {} ({} samples, {} stacks; {} launches, {} calls, gpu_time {} ns, gpu_idle {} ns, off_cpu {} ns; \
         GPU timeline: {}); open it with `go tool pprof -http : {}`",
        out.display(),
        w.samples,
        w.stacks,
        v[pprof::values::LAUNCHES],
        v[pprof::values::CALLS],
        v[pprof::values::GPU_TIME],
        v[pprof::values::GPU_IDLE],
        v[pprof::values::OFF_CPU],
        tl.source.as_str(),
        out.display()
    );
    if t.stacks.is_empty() {
        eprintln!(
            "tracer: {} has no stack lines (recorded with --no-stacks, or before stacks): every sample is [no stack]",
            t.path
        );
    }
    Ok(())
}
