//! The collector's fast path for the other frequent lines: 1-D copies
//! (`cuMemcpy*` without a CUDA_MEMCPY2D/3D struct), sets (`cuMemset*`) and
//! `cuLaunchKernelEx`, written straight to bytes like the `cuLaunchKernel`
//! lines of fastline.rs (the general path built a `serde_json::Value` per
//! line: ~3.5 µs of collector CPU per copy line).
//!
//! The general path (calls.rs `call_line`) stays the reference: a line is
//! only taken here in the plain cases (entry seen; returned with
//! CUDA_SUCCESS or probed entry-only; every parameter a scalar or, for
//! cuLaunchKernelEx, the launch config), and the tests check that both paths
//! write the same bytes and give the same summary, on hand-built records and
//! on the records of every committed recording (fastcall_tests.rs).
use tracer_common::event::Header;
use tracer_common::funcs::{Arg, Class, FuncSpec, VARIANTS};
use tracer_format::hex::push_addr;

use crate::decode::args::LaunchConfig;

/// What the return probe adds to a line (successful calls only).
#[derive(Clone, Copy, Debug)]
pub struct Returned {
    pub exit_ts: u64,
    pub exit_cpu: u32,
    pub exit_seq: u64,
}

/// What the line adds for its class (the general path's `normalize`).
pub enum Norm<'a> {
    Copy {
        size: u64,
        direction: &'static str,
        dst: u64,
        src: u64,
    },
    Set {
        size: u64,
        dst: u64,
    },
    /// `cfg`: the captured CUlaunchConfig, if it was read and parsed.
    LaunchEx {
        f: u64,
        kernel: Option<&'a str>,
        cfg: Option<LaunchConfig>,
        config_arg: ConfigArg,
    },
}

/// The `config` parameter's value in `args` when there is no parsed config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigArg {
    /// Parsed (written from `cfg`).
    Parsed,
    /// Captured but not parseable: `null`.
    Null,
    /// Not captured: `null` for a null pointer, else `{"unreadable": ptr}`.
    NotRead(u64),
}

/// A copy, set or cuLaunchKernelEx line.
pub struct CallLine<'a> {
    pub hdr: Header,
    pub spec: &'static FuncSpec,
    /// 0: the symbol itself, 1: `_ptsz`, 2: `_ptds`.
    pub variant: usize,
    pub args: [u64; tracer_common::event::MAX_ARGS],
    /// None: probed entry-only.
    pub returned: Option<Returned>,
    pub norm: Norm<'a>,
    /// The device it ran on; peer copies: both ends (decode/devices.rs).
    pub device: crate::decode::devices::LineDevice,
    /// The id of the stack taken at its entry (decode/stacks.rs).
    pub stack: Option<u64>,
}

/// Whether every parameter is one the fast path writes (scalars; the
/// launch config of cuLaunchKernelEx).
pub fn eligible(spec: &FuncSpec) -> bool {
    let scalar = |k: Arg| {
        matches!(
            k,
            Arg::Handle
                | Arg::Ptr
                | Arg::DevPtr
                | Arg::Flags64
                | Arg::Flags
                | Arg::U32
                | Arg::I32
                | Arg::Device
                | Arg::U64
                | Arg::Size
        )
    };
    match spec.class {
        Class::Copy | Class::Set => spec.params.iter().all(|p| scalar(p.kind)),
        Class::Launch => {
            spec.name == "cuLaunchKernelEx" && spec.params.iter().all(|p| scalar(p.kind) || p.kind == Arg::LaunchConfig)
        }
        _ => false,
    }
}

/// A number, or `null` (the `device` fields).
pub(crate) fn opt_num(b: &mut Vec<u8>, v: Option<u32>) {
    match v {
        Some(v) => num(b, u64::from(v)),
        None => b.extend_from_slice(b"null"),
    }
}

/// Writes a JSON object's members in order; in debug builds, checks that
/// the keys come sorted (serde_json's map order, which the general path's
/// lines have).
struct Obj<'b> {
    b: &'b mut Vec<u8>,
    first: bool,
    #[cfg(debug_assertions)]
    last: Vec<u8>,
}

impl<'b> Obj<'b> {
    fn new(b: &'b mut Vec<u8>) -> Self {
        b.push(b'{');
        Obj {
            b,
            first: true,
            #[cfg(debug_assertions)]
            last: Vec::new(),
        }
    }
    /// Starts member `k` (a plain identifier: no escaping needed).
    fn key(&mut self, k: &str) -> &mut Vec<u8> {
        #[cfg(debug_assertions)]
        {
            assert!(self.first || self.last.as_slice() < k.as_bytes(), "key {k} after {:?}", self.last);
            self.last = k.as_bytes().to_vec();
        }
        if !self.first {
            self.b.push(b',');
        }
        self.first = false;
        self.b.push(b'"');
        self.b.extend_from_slice(k.as_bytes());
        self.b.extend_from_slice(b"\":");
        self.b
    }
    fn num(&mut self, k: &str, v: u64) {
        num(self.key(k), v);
    }
    fn addr(&mut self, k: &str, v: u64) {
        push_addr(self.key(k), v);
    }
    fn str(&mut self, k: &str, v: &str) {
        str(self.key(k), v);
    }
    fn end(self) {
        self.b.push(b'}');
    }
}

fn num(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn int(b: &mut Vec<u8>, v: i64) {
    b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn str(b: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *b, s).expect("writing to a Vec");
}

fn dim3(b: &mut Vec<u8>, v: [u32; 3]) {
    b.push(b'[');
    num(b, u64::from(v[0]));
    b.push(b',');
    num(b, u64::from(v[1]));
    b.push(b',');
    num(b, u64::from(v[2]));
    b.push(b']');
}

fn u32s(b: &mut Vec<u8>, v: &[u32]) {
    b.push(b'[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        num(b, u64::from(*x));
    }
    b.push(b']');
}

/// `args.config`: LaunchConfig::to_json, written directly.
fn config(b: &mut Vec<u8>, cfg: &LaunchConfig) {
    let mut o = Obj::new(b);
    let a = o.key("attrs");
    a.push(b'[');
    for (i, at) in cfg.attrs.iter().enumerate() {
        if i > 0 {
            a.push(b',');
        }
        let mut e = Obj::new(a);
        e.num("id", u64::from(at.id));
        e.str("name", crate::decode::cuda_names::launch_attr(at.id));
        let v = e.key("value");
        match at.id {
            4 | 11 => u32s(v, &at.words[..3]),
            2 | 8 | 10 | 6 | 14 => int(v, i64::from(at.words[0] as i32)),
            _ => u32s(v, &at.words),
        }
        e.end();
    }
    a.push(b']');
    dim3(o.key("blockDim"), cfg.block);
    dim3(o.key("gridDim"), cfg.grid);
    o.addr("hStream", cfg.stream);
    o.num("numAttrs", u64::from(cfg.num_attrs));
    o.num("sharedMemBytes", u64::from(cfg.shared_mem));
    o.end();
}

impl CallLine<'_> {
    pub fn duration_us(&self) -> Option<f64> {
        self.returned.map(|r| r.exit_ts.saturating_sub(self.hdr.ts) as f64 / 1000.0)
    }

    /// `type` and `op` (the general path's `type_op` for these classes).
    pub fn type_op(&self) -> (&'static str, &'static str) {
        match self.norm {
            Norm::Copy { .. } => ("memcpy", "copy"),
            Norm::Set { .. } => ("memset", "set"),
            Norm::LaunchEx { .. } => ("kernel", "launch"),
        }
    }

    /// The symbol called, variant suffix included, written as a JSON string.
    fn write_name(&self, b: &mut Vec<u8>) {
        b.push(b'"');
        b.extend_from_slice(self.spec.name.as_bytes());
        b.extend_from_slice(VARIANTS[self.variant].as_bytes());
        b.push(b'"');
    }

    /// The name as a String (summary, tests).
    pub fn name(&self) -> String {
        format!("{}{}", self.spec.name, VARIANTS[self.variant])
    }

    pub fn size(&self) -> Option<u64> {
        match self.norm {
            Norm::Copy { size, .. } | Norm::Set { size, .. } => Some(size),
            Norm::LaunchEx { .. } => None,
        }
    }

    pub fn direction(&self) -> Option<&'static str> {
        match self.norm {
            Norm::Copy { direction, .. } => Some(direction),
            _ => None,
        }
    }

    pub fn kernel(&self) -> Option<&str> {
        match self.norm {
            Norm::LaunchEx { kernel, .. } => kernel,
            _ => None,
        }
    }

    /// The hEvent parameter of an event call.
    pub fn event(&self) -> Option<u64> {
        self.spec.params.iter().position(|p| p.name == "hEvent").map(|i| self.args[i])
    }

    /// The stream field: the hStream parameter, or a parsed config's.
    pub fn stream(&self) -> Option<u64> {
        if let Norm::LaunchEx { cfg: Some(c), .. } = &self.norm {
            return Some(c.stream);
        }
        self.spec.params.iter().position(|p| p.name == "hStream").map(|i| self.args[i])
    }

    /// The `args` object: every parameter by its name, sorted.
    fn write_args(&self, b: &mut Vec<u8>) {
        let mut order: [usize; tracer_common::event::MAX_ARGS] = std::array::from_fn(|i| i);
        let n = self.spec.params.len().min(order.len());
        let key = |i: usize| self.spec.params[i].name.trim_end_matches('_');
        order[..n].sort_unstable_by(|&x, &y| key(x).cmp(key(y)));
        let mut o = Obj::new(b);
        for &i in &order[..n] {
            let raw = self.args[i];
            let v = o.key(key(i));
            match self.spec.params[i].kind {
                Arg::Handle | Arg::Ptr | Arg::DevPtr | Arg::Flags64 => push_addr(v, raw),
                Arg::Flags => push_addr(v, u64::from(raw as u32)),
                Arg::U32 => num(v, u64::from(raw as u32)),
                Arg::I32 | Arg::Device => int(v, i64::from(raw as u32 as i32)),
                Arg::U64 | Arg::Size => num(v, raw),
                Arg::LaunchConfig => match &self.norm {
                    Norm::LaunchEx { cfg: Some(c), .. } => config(v, c),
                    Norm::LaunchEx { config_arg: ConfigArg::NotRead(p), .. } if *p != 0 => {
                        v.extend_from_slice(b"{\"unreadable\":");
                        push_addr(v, *p);
                        v.push(b'}');
                    }
                    _ => v.extend_from_slice(b"null"),
                },
                // Not eligible (see `eligible`): never built.
                _ => v.extend_from_slice(b"null"),
            }
        }
        o.end();
    }

    /// Appends the line (no newline), keys sorted as serde_json writes the
    /// general path's map.
    pub fn write(&self, b: &mut Vec<u8>) {
        let (ty, op) = self.type_op();
        let mut o = Obj::new(b);
        self.write_args(o.key("args"));
        let cfg = match &self.norm {
            Norm::LaunchEx { cfg, .. } => cfg.as_ref(),
            _ => None,
        };
        if let Some(c) = cfg {
            dim3(o.key("block"), c.block);
        }
        o.num("cpu", u64::from(self.hdr.cpu));
        opt_num(o.key("device"), self.device.device);
        if let Norm::Copy { direction, dst, .. } = self.norm {
            o.str("direction", direction);
            o.addr("dst", dst);
        }
        if let Some((dst, _)) = self.device.peer {
            opt_num(o.key("dst_device"), dst);
        }
        if let Norm::Set { dst, .. } = self.norm {
            o.addr("dst", dst);
        }
        if let Some(r) = self.returned {
            let dur = self.duration_us().unwrap_or(0.0);
            serde_json::to_writer(&mut *o.key("duration_us"), &dur).expect("writing to a Vec");
            o.num("exit_cpu", u64::from(r.exit_cpu));
            o.num("exit_seq", r.exit_seq);
        }
        if let Norm::LaunchEx { f, kernel, .. } = self.norm {
            o.addr("func", f);
            if let Some(c) = cfg {
                dim3(o.key("grid"), c.grid);
            }
            match kernel {
                Some(k) => o.str("kernel", k),
                None => o.key("kernel").extend_from_slice(b"null"),
            }
        }
        self.write_name(o.key("name"));
        o.str("op", op);
        o.num("pid", u64::from(self.hdr.pid));
        if self.returned.is_some() {
            o.num("ret", 0);
        }
        o.num("seq", self.hdr.seq);
        if let Some(c) = cfg {
            o.num("shared_mem", u64::from(c.shared_mem));
        }
        if let Some(size) = self.size() {
            o.num("size", size);
        }
        if let Norm::Copy { src, .. } = self.norm {
            o.addr("src", src);
        }
        if let Some((_, src)) = self.device.peer {
            opt_num(o.key("src_device"), src);
        }
        if let Some(id) = self.stack {
            o.num("stack", id);
        }
        if let Some(s) = self.stream() {
            o.addr("stream", s);
        }
        o.num("tid", u64::from(self.hdr.tid));
        o.num("ts", self.hdr.ts);
        o.str("type", ty);
        o.end();
    }
}
