//! The hot path of the collector: `cuLaunchKernel` lines (most lines of a
//! launch-bound program) written straight to bytes, without building a
//! `serde_json::Value` (a BTreeMap with an allocated key per field, which
//! cost ~4 µs per line and capped the collector at ~250k lines/s).
//!
//! The general path in calls.rs stays the reference: a launch line is only
//! taken here in the plain cases (entry seen; returned with CUDA_SUCCESS or
//! probed entry-only), and the tests check that both paths give the same
//! line, field for field, and the same summary.
use crate::decode::fastcall::Returned;
use serde_json::Value;
use tracer_common::event::Header;
use tracer_format::hex::push_addr;

/// One line: a JSON value (every other kind), or a fast launch line.
pub enum Line<'a> {
    Value(Value),
    Launch(LaunchLine<'a>),
    /// A copy, set or cuLaunchKernelEx line (fastcall.rs).
    Call(crate::decode::fastcall::CallLine<'a>),
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
            Line::Call(l) => {
                let mut b = Vec::new();
                l.write(&mut b);
                serde_json::from_slice(&b).expect("a fast call line is valid JSON")
            }
        }
    }
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
    /// `--replayable`: the parameter bytes.
    pub params: Option<&'a crate::decode::params::CapturedParams>,
    /// The device of the launch's stream or thread context (decode/devices.rs).
    pub device: Option<u32>,
    /// The id of the stack taken at its entry (decode/stacks.rs).
    pub stack: Option<u64>,
}

impl LaunchLine<'_> {
    pub fn duration_us(&self) -> Option<f64> {
        self.returned.map(|r| r.exit_ts.saturating_sub(self.hdr.ts) as f64 / 1000.0)
    }

    /// Appends the line (no newline), keys in the order serde_json's map
    /// gives the general path's lines (sorted).
    pub fn write(&self, b: &mut Vec<u8>) {
        let a = &self.args;
        let d = |v: u64| v as u32 as u64;
        b.extend_from_slice(b"{\"args\":{\"blockDimX\":");
        num(b, d(a[4]));
        b.extend_from_slice(b",\"blockDimY\":");
        num(b, d(a[5]));
        b.extend_from_slice(b",\"blockDimZ\":");
        num(b, d(a[6]));
        b.extend_from_slice(b",\"extra\":");
        push_addr(b, a[10]);
        b.extend_from_slice(b",\"f\":");
        push_addr(b, a[0]);
        b.extend_from_slice(b",\"gridDimX\":");
        num(b, d(a[1]));
        b.extend_from_slice(b",\"gridDimY\":");
        num(b, d(a[2]));
        b.extend_from_slice(b",\"gridDimZ\":");
        num(b, d(a[3]));
        b.extend_from_slice(b",\"hStream\":");
        push_addr(b, a[8]);
        b.extend_from_slice(b",\"kernelParams\":");
        push_addr(b, a[9]);
        b.extend_from_slice(b",\"sharedMemBytes\":");
        num(b, d(a[7]));
        b.extend_from_slice(b"},\"block\":");
        dim3(b, d(a[4]), d(a[5]), d(a[6]));
        b.extend_from_slice(b",\"cpu\":");
        num(b, self.hdr.cpu as u64);
        b.extend_from_slice(b",\"device\":");
        crate::decode::fastcall::opt_num(b, self.device);
        if let Some(r) = self.returned {
            b.extend_from_slice(b",\"duration_us\":");
            let dur = self.duration_us().unwrap_or(0.0);
            serde_json::to_writer(&mut *b, &dur).expect("writing to a Vec");
            b.extend_from_slice(b",\"exit_cpu\":");
            num(b, r.exit_cpu as u64);
            b.extend_from_slice(b",\"exit_seq\":");
            num(b, r.exit_seq);
        }
        b.extend_from_slice(b",\"func\":");
        push_addr(b, a[0]);
        b.extend_from_slice(b",\"grid\":");
        dim3(b, d(a[1]), d(a[2]), d(a[3]));
        b.extend_from_slice(b",\"kernel\":");
        match self.kernel {
            Some(k) => serde_json::to_writer(&mut *b, k).expect("writing to a Vec"),
            None => b.extend_from_slice(b"null"),
        }
        b.extend_from_slice(b",\"name\":");
        serde_json::to_writer(&mut *b, self.name).expect("writing to a Vec");
        b.extend_from_slice(b",\"op\":\"launch\"");
        if let Some(p) = self.params {
            p.write_fields(b);
        }
        b.extend_from_slice(b",\"pid\":");
        num(b, self.hdr.pid as u64);
        if self.returned.is_some() {
            b.extend_from_slice(b",\"ret\":0");
        }
        b.extend_from_slice(b",\"seq\":");
        num(b, self.hdr.seq);
        b.extend_from_slice(b",\"shared_mem\":");
        num(b, d(a[7]));
        if let Some(id) = self.stack {
            b.extend_from_slice(b",\"stack\":");
            num(b, id);
        }
        b.extend_from_slice(b",\"stream\":");
        push_addr(b, a[8]);
        b.extend_from_slice(b",\"tid\":");
        num(b, self.hdr.tid as u64);
        b.extend_from_slice(b",\"ts\":");
        num(b, self.hdr.ts);
        b.extend_from_slice(b",\"type\":\"kernel\"}");
    }
}

fn num(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn dim3(b: &mut Vec<u8>, x: u64, y: u64, z: u64) {
    b.push(b'[');
    num(b, x);
    b.push(b',');
    num(b, y);
    b.push(b',');
    num(b, z);
    b.push(b']');
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_as_the_general_path_writes_them() {
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 1 << 63] {
            let mut b = Vec::new();
            super::num(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
        }
    }
}
