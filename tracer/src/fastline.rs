//! The hot path of the collector: `cuLaunchKernel` lines (most lines of a
//! launch-bound program) written straight to bytes, without building a
//! `serde_json::Value` (a BTreeMap with an allocated key per field, which
//! cost ~4 µs per line and capped the collector at ~250k lines/s).
//!
//! The general path in calls.rs stays the reference: a launch line is only
//! taken here in the plain cases (entry seen; returned with CUDA_SUCCESS or
//! probed entry-only), and the tests check that both paths give the same
//! line, field for field, and the same summary.
use std::io::Write as _;

use serde_json::Value;
use tracer_common::event::Header;

/// One line: a JSON value (every other kind), or a fast launch line.
pub enum Line<'a> {
    Value(Value),
    Launch(LaunchLine<'a>),
}

impl Line<'_> {
    /// The line as a JSON value (tests compare the two paths with it).
    #[cfg(test)]
    pub fn into_value(self) -> Value {
        match self {
            Line::Value(v) => v,
            Line::Launch(l) => {
                let mut b = Vec::new();
                l.write(&mut b);
                serde_json::from_slice(&b).expect("a launch line is valid JSON")
            }
        }
    }
}

/// What the return probe adds to a line (successful calls only).
#[derive(Clone, Copy, Debug)]
pub struct Returned {
    pub exit_ts: u64,
    pub exit_cpu: u32,
    pub exit_seq: u64,
}

/// A `cuLaunchKernel` (or `_ptsz`/`_ptds`) line.
pub struct LaunchLine<'a> {
    pub hdr: Header,
    /// The symbol called, variant suffix included.
    pub name: &'a str,
    /// f, gridDimX..Z, blockDimX..Z, sharedMemBytes, hStream, kernelParams, extra.
    pub args: [u64; 11],
    pub kernel: Option<&'a str>,
    /// None: probed entry-only.
    pub returned: Option<Returned>,
}

impl LaunchLine<'_> {
    pub fn duration_us(&self) -> Option<f64> {
        self.returned.map(|r| r.exit_ts.saturating_sub(self.hdr.ts) as f64 / 1000.0)
    }

    /// Appends the line (no newline), keys in the order serde_json's map
    /// gives the general path's lines (sorted).
    pub fn write(&self, b: &mut Vec<u8>) {
        let a = &self.args;
        let d = |v: u64| v as u32;
        let _ = write!(
            b,
            "{{\"args\":{{\"blockDimX\":{},\"blockDimY\":{},\"blockDimZ\":{},\"extra\":\"{:#x}\",\"f\":\"{:#x}\",\
             \"gridDimX\":{},\"gridDimY\":{},\"gridDimZ\":{},\"hStream\":\"{:#x}\",\"kernelParams\":\"{:#x}\",\
             \"sharedMemBytes\":{}}},\"block\":[{},{},{}],\"cpu\":{}",
            d(a[4]),
            d(a[5]),
            d(a[6]),
            a[10],
            a[0],
            d(a[1]),
            d(a[2]),
            d(a[3]),
            a[8],
            a[9],
            d(a[7]),
            d(a[4]),
            d(a[5]),
            d(a[6]),
            self.hdr.cpu
        );
        if let Some(r) = self.returned {
            b.extend_from_slice(b",\"duration_us\":");
            let dur = self.duration_us().unwrap_or(0.0);
            serde_json::to_writer(&mut *b, &dur).expect("writing to a Vec");
            let _ = write!(b, ",\"exit_cpu\":{},\"exit_seq\":{}", r.exit_cpu, r.exit_seq);
        }
        let _ = write!(b, ",\"func\":\"{:#x}\",\"grid\":[{},{},{}],\"kernel\":", a[0], d(a[1]), d(a[2]), d(a[3]));
        match self.kernel {
            Some(k) => serde_json::to_writer(&mut *b, k).expect("writing to a Vec"),
            None => b.extend_from_slice(b"null"),
        }
        b.extend_from_slice(b",\"name\":");
        serde_json::to_writer(&mut *b, self.name).expect("writing to a Vec");
        let _ = write!(b, ",\"op\":\"launch\",\"pid\":{}", self.hdr.pid);
        if self.returned.is_some() {
            b.extend_from_slice(b",\"ret\":0");
        }
        let _ = write!(
            b,
            ",\"seq\":{},\"shared_mem\":{},\"stream\":\"{:#x}\",\"tid\":{},\"ts\":{},\"type\":\"kernel\"}}",
            self.hdr.seq,
            d(a[7]),
            a[8],
            self.hdr.tid,
            self.hdr.ts
        );
    }
}
