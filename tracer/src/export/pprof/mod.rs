//! `tracer export --format pprof`: the trace's stacks as a pprof profile
//! (profile.proto, gzip-compressed) for `go tool pprof`, speedscope and
//! other pprof readers (docs/stacks.md, "pprof export"). One sample per
//! stack (innermost frame first), valued by [`values::TYPES`]; work
//! without a stack is a sample of its own (`[no stack]`, …) so every sample
//! type sums to the trace's total. The profile's comments say what the GPU
//! figures rest on.
pub mod builder;
pub mod proto;
#[cfg(test)]
mod tests;
pub mod values;

use std::io::Write;

use prost::Message as _;

use crate::analysis::basis::IdleBasis;
use crate::analysis::model::Trace;
use crate::analysis::model::stacks;
use crate::analysis::timeline::{Source, Timeline};
use builder::{Frame, FrameKind, ProfileBuilder};
use values::{Key, TYPES, Values};

/// What [`export`] wrote.
#[derive(Debug)]
pub struct Written {
    pub samples: usize,
    pub stacks: usize,
    pub totals: values::Row,
}

fn frame(f: &stacks::Frame) -> Frame<'_> {
    Frame {
        kind: f.kind,
        function: &f.func,
        file: f.file.as_deref(),
        line: f.line,
        module: f.module.as_deref(),
        addr: f.addr,
        offset: f.offset,
    }
}

/// What the GPU figures rest on, one comment line each.
fn basis_comments(t: &Trace, tl: &Timeline) -> Vec<String> {
    let gpu_time = match tl.source {
        Source::Measured => "gpu_time: measured GPU activity (CUPTI `gpu` lines) at the stack of the call that submitted it"
            .to_string(),
        Source::Sampled => {
            "gpu_time: measured inside CUPTI's sampling windows, calibrated durations elsewhere, at the submitting call's stack"
                .to_string()
        }
        Source::Inferred => format!(
            "gpu_time: calibrated durations ({}) at the stack of the call that submitted the work",
            tl.calibrated_from.as_deref().unwrap_or("a durations file")
        ),
        Source::Bound => "gpu_time: 0 everywhere: the bound timeline has no kernel durations \
                          (record with --gpu-timestamps, or export with --durations FILE)"
            .to_string(),
    };
    let mut v = vec![
        format!("tracer {}: user stacks of {}", env!("CARGO_PKG_VERSION"), t.path),
        gpu_time,
        format!(
            "gpu_idle: every idle gap of every GPU ({} timeline, idle basis {}), as tracer report cuts it: the parts \
             the launching thread was off CPU at the switch-out's stack, its on-CPU rest at the stack of the \
             submission that ended the gap",
            tl.source.as_str(),
            IdleBasis::of(tl).as_str()
        ),
        "launches: kernel and graph launches; calls: launches, copies, sets and synchronizations; \
         off_cpu: traced threads' off-CPU time at the switch-out's stack"
            .into(),
    ];
    v.extend(sampling_comment(t));
    v
}

/// Says so when launches took their stacks sampled (the header's
/// `stacks.sampling`, the footer's `stack_sampling` counts): the launches
/// and GPU time at a stack are those of the sampled launches, the others'
/// are under `[no stack]`.
fn sampling_comment(t: &Trace) -> Option<String> {
    let s = &t.header.as_ref()?["stacks"]["sampling"];
    if s["launches"] != "sampled" {
        return None;
    }
    let n = |v: &serde_json::Value| v.as_f64().map_or("?".to_string(), |x| x.to_string());
    let counts = t.footer.as_ref().map(|f| &f["stack_sampling"]).filter(|c| c.is_object()).map_or(String::new(), |c| {
        format!(" ({} launches sampled in, {} out)", n(&c["launches_sampled_in"]), n(&c["launches_sampled_out"]))
    });
    Some(format!(
        "launch stacks are sampled: a launch takes a stack after {} µs without a launch of its thread or a switch-out, \
         else at most every {} ms per thread{counts}; launches and gpu_time at a stack are those of its sampled \
         launches, the rest is under [no stack] (tracer record --all-launch-stacks takes one at every launch)",
        n(&s["idle_us"]),
        n(&s["interval_ms"])
    ))
}

/// Builds the profile of `t`: samples per stack on timeline `tl`.
pub fn profile(t: &Trace, tl: &Timeline) -> (proto::Profile, Written) {
    let v: Values = values::of(t, tl);
    let mut b = ProfileBuilder::new(&TYPES);
    for c in basis_comments(t, tl) {
        b.comment(&c);
    }
    let mut samples = 0;
    let mut stacks = 0;
    for (k, row) in &v.by_key {
        if row.iter().all(|&x| x == 0) {
            continue;
        }
        samples += 1;
        match *k {
            Key::Stack(id) => {
                let s = t.stacks.get(id).expect("values keep defined stacks only");
                stacks += 1;
                let frames: Vec<Frame<'_>> = s.frames.iter().map(frame).collect();
                let frames = if frames.is_empty() { vec![missing("[no frames]")] } else { frames };
                b.sample(s.pid, &frames, row.to_vec(), &[("pid", i64::from(s.pid)), ("stack", id as i64)]);
            }
            Key::Missing(pid, why) => b.sample(pid, &[missing(why.frame())], row.to_vec(), &[("pid", i64::from(pid))]),
        }
    }
    let default = if v.totals[values::GPU_IDLE] > 0 { "gpu_idle" } else { "launches" };
    let span = t.span();
    let time = span.and_then(|s| wall_ns(t, s.0)).unwrap_or(0);
    let p = b.finish(default, time, span.map_or(0, |s| (s.1 - s.0) as i64));
    (p, Written { samples, stacks, totals: v.totals })
}

fn missing(name: &str) -> Frame<'_> {
    Frame { kind: FrameKind::Unknown, function: name, file: None, line: None, module: None, addr: None, offset: None }
}

/// Wall-clock ns since the epoch of CLOCK_MONOTONIC `ts` (the header's clock pair).
fn wall_ns(t: &Trace, ts: u64) -> Option<i64> {
    let c = &t.header.as_ref()?["clock"];
    let (mono, real) = (c["monotonic_ns"].as_u64()?, c["realtime_ns"].as_u64()?);
    i64::try_from(real as i128 + ts as i128 - mono as i128).ok()
}

/// Writes the profile of `t` to `w`, encoded and gzip-compressed.
pub fn export<W: Write>(t: &Trace, tl: &Timeline, w: W) -> std::io::Result<Written> {
    let (p, written) = profile(t, tl);
    write_gz(&p, w)?;
    Ok(written)
}

/// Writes `p` encoded and gzip-compressed (the on-disk form of profile.proto).
pub fn write_gz<W: Write>(p: &proto::Profile, w: W) -> std::io::Result<W> {
    let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
    gz.write_all(&p.encode_to_vec())?;
    gz.finish()
}
