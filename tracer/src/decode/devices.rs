//! Which GPU each call ran on, from the context calls already probed: no
//! extra work in the kernel. A context's device comes from the call that
//! made it (`cuDevicePrimaryCtxRetain`, `cuCtxCreate*`: the device argument
//! and the CUcontext written through the out-pointer, read by their return
//! probes); each thread's context stack follows `cuCtxSetCurrent`,
//! `cuCtxPushCurrent`, `cuCtxPopCurrent`, `cuCtxCreate*` (pushes) and
//! `cuCtxGetCurrent` (when probed, `--all-functions`: it tells the truth);
//! a stream belongs to the context current on the thread that created it.
//! A call's device is its stream's (a created stream), else its thread's
//! current context's. A thread that never set a context inherits nothing:
//! its device is unknown (`null`), as are contexts made before tracing
//! began (`-p`) or through functions tracer does not probe.
use std::collections::HashMap;

use tracer_common::funcs::FuncSpec;

/// Where a call ran: its device, and for peer copies both ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineDevice {
    pub device: Option<u32>,
    /// `cuMemcpyPeer*`: (dst_device, src_device), from the contexts passed.
    pub peer: Option<(Option<u32>, Option<u32>)>,
}

impl LineDevice {
    /// The general path's fields: `device` (`null`: unknown), and for peer
    /// copies `dst_device` and `src_device`.
    pub fn insert_fields(&self, m: &mut serde_json::Map<String, serde_json::Value>) {
        m.insert("device".into(), self.device.into());
        if let Some((dst, src)) = self.peer {
            m.insert("dst_device".into(), dst.into());
            m.insert("src_device".into(), src.into());
        }
    }
}

#[derive(Default)]
pub struct Devices {
    /// (pid, CUcontext) -> device ordinal.
    ctx_device: HashMap<(u32, u64), u32>,
    /// tid -> context stack, the current context last (0: none bound).
    stacks: HashMap<u32, Vec<u64>>,
    /// (pid, CUstream) -> the CUcontext it was created in.
    stream_ctx: HashMap<(u32, u64), u64>,
}

fn param(spec: &FuncSpec, name: &str) -> Option<usize> {
    spec.params.iter().position(|p| p.name == name)
}

impl Devices {
    /// Learns from one completed call: `ok` when it returned CUDA_SUCCESS
    /// (calls that failed or never returned change nothing), `out0` the
    /// first out-parameter's value when it was read.
    pub fn observe(&mut self, spec: &FuncSpec, pid: u32, tid: u32, args: &[u64], out0: Option<u64>, ok: bool) {
        if !ok {
            return;
        }
        let arg = |n: &str| param(spec, n).map(|i| args[i]);
        match spec.name {
            "cuDevicePrimaryCtxRetain" => {
                if let (Some(ctx), Some(dev)) = (out0, arg("dev")) {
                    self.ctx_device.insert((pid, ctx), dev as u32);
                }
            }
            "cuCtxCreate_v2" | "cuCtxCreate_v3" | "cuCtxCreate_v4" => {
                if let (Some(ctx), Some(dev)) = (out0, arg("dev")) {
                    self.ctx_device.insert((pid, ctx), dev as u32);
                    self.stacks.entry(tid).or_default().push(ctx);
                }
            }
            "cuCtxSetCurrent" => self.set_current(tid, args[0]),
            "cuCtxGetCurrent" => {
                if let Some(ctx) = out0 {
                    self.set_current(tid, ctx);
                }
            }
            "cuCtxPushCurrent_v2" => self.stacks.entry(tid).or_default().push(args[0]),
            "cuCtxPopCurrent_v2" => {
                if let Some(s) = self.stacks.get_mut(&tid) {
                    s.pop();
                }
            }
            // A context destroyed while current on the calling thread is popped.
            "cuCtxDestroy_v2" => {
                if let Some(s) = self.stacks.get_mut(&tid)
                    && s.last() == Some(&args[0])
                {
                    s.pop();
                }
            }
            "cuStreamCreate" | "cuStreamCreateWithPriority" => {
                if let (Some(stream), Some(ctx)) = (out0, self.current(tid)) {
                    self.stream_ctx.insert((pid, stream), ctx);
                }
            }
            "cuStreamDestroy_v2" => {
                self.stream_ctx.remove(&(pid, args[0]));
            }
            _ => {}
        }
    }

    fn set_current(&mut self, tid: u32, ctx: u64) {
        let s = self.stacks.entry(tid).or_default();
        match s.last_mut() {
            Some(top) => *top = ctx,
            None => s.push(ctx),
        }
    }

    /// The thread's current context, if one was seen bound (not NULL).
    fn current(&self, tid: u32) -> Option<u64> {
        self.stacks.get(&tid).and_then(|s| s.last()).copied().filter(|&c| c != 0)
    }

    fn of_ctx(&self, pid: u32, ctx: u64) -> Option<u32> {
        self.ctx_device.get(&(pid, ctx)).copied()
    }

    /// The device of a call made by `tid` on `stream` (None: no stream
    /// argument, or a stream tracer did not see created: the legacy or
    /// per-thread default stream).
    pub fn device(&self, pid: u32, tid: u32, stream: Option<u64>) -> Option<u32> {
        if let Some(ctx) = stream.and_then(|s| self.stream_ctx.get(&(pid, s))) {
            return self.of_ctx(pid, *ctx);
        }
        self.of_ctx(pid, self.current(tid)?)
    }

    /// The device of a call, and for `cuMemcpyPeer*` both ends.
    pub fn line_device(&self, spec: &FuncSpec, pid: u32, tid: u32, args: &[u64], stream: Option<u64>) -> LineDevice {
        let peer = spec.name.starts_with("cuMemcpyPeer").then(|| {
            let end = |n: &str| param(spec, n).and_then(|i| self.of_ctx(pid, args[i]));
            (end("dstContext"), end("srcContext"))
        });
        LineDevice { device: self.device(pid, tid, stream), peer }
    }

    /// A thread ended: its context stack is gone.
    pub fn forget_thread(&mut self, tid: u32) {
        self.stacks.remove(&tid);
    }

    /// A process ended or ran exec: its contexts and streams are gone.
    pub fn forget_process(&mut self, pid: u32) {
        self.ctx_device.retain(|(p, _), _| *p != pid);
        self.stream_ctx.retain(|(p, _), _| *p != pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::funcs::lookup;

    fn spec(name: &str) -> &'static FuncSpec {
        lookup(name).and_then(|id| id.spec()).unwrap_or_else(|| panic!("{name}"))
    }

    fn pad(args: &[u64]) -> [u64; tracer_common::event::MAX_ARGS] {
        let mut a = [0u64; tracer_common::event::MAX_ARGS];
        a[..args.len()].copy_from_slice(args);
        a
    }

    fn call(d: &mut Devices, name: &str, tid: u32, args: &[u64], out0: Option<u64>) {
        d.observe(spec(name), 7, tid, &pad(args), out0, true);
    }

    #[test]
    fn contexts_streams_and_stacks() {
        let mut d = Devices::default();
        assert_eq!(d.device(7, 1, None), None, "a thread that set nothing");
        call(&mut d, "cuDevicePrimaryCtxRetain", 1, &[0, 1], Some(0xc71));
        assert_eq!(d.device(7, 1, None), None, "retaining does not make it current");
        call(&mut d, "cuCtxSetCurrent", 1, &[0xc71], None);
        assert_eq!(d.device(7, 1, None), Some(1));
        call(&mut d, "cuStreamCreate", 1, &[0, 0], Some(0xb0));
        call(&mut d, "cuCtxCreate_v2", 1, &[0, 0, 0], Some(0xc20));
        assert_eq!(d.device(7, 1, None), Some(0), "cuCtxCreate pushes");
        assert_eq!(d.device(7, 1, Some(0xb0)), Some(1), "a stream keeps its context's device");
        assert_eq!(d.device(7, 1, Some(0x2)), Some(0), "per-thread default stream: the thread's context");
        call(&mut d, "cuCtxPopCurrent_v2", 1, &[0], Some(0xc20));
        assert_eq!(d.device(7, 1, None), Some(1));
        call(&mut d, "cuCtxPushCurrent_v2", 2, &[0xc20], None);
        assert_eq!(d.device(7, 2, None), Some(0), "another thread");
        assert_eq!(d.device(8, 2, None), None, "another process's handles");
        call(&mut d, "cuCtxSetCurrent", 1, &[0], None);
        assert_eq!(d.device(7, 1, None), None, "unbound");
        // A failed call changes nothing.
        d.observe(spec("cuCtxSetCurrent"), 7, 2, &pad(&[0xc71]), None, false);
        assert_eq!(d.device(7, 2, None), Some(0));
        let peer = d.line_device(spec("cuMemcpyPeer"), 7, 2, &pad(&[0x10, 0xc20, 0x20, 0xc71, 8]), None);
        assert_eq!(peer, LineDevice { device: Some(0), peer: Some((Some(0), Some(1))) });
        d.forget_thread(2);
        assert_eq!(d.device(7, 2, None), None);
    }

    /// The CUDA runtime's order in the committed H100 recordings (torch,
    /// traces/transformer_inference.jsonl.gz): cuCtxSetCurrent(ctx) first,
    /// then cuDevicePrimaryCtxRetain answering that ctx. The thread keeps
    /// the handle, resolved when asked: calls after the retain have a device.
    #[test]
    fn context_bound_before_its_retain_is_seen() {
        let mut d = Devices::default();
        call(&mut d, "cuCtxSetCurrent", 1, &[0x46252230], None);
        assert_eq!(d.device(7, 1, None), None);
        call(&mut d, "cuStreamCreate", 1, &[0, 1], Some(0x3fe86510));
        call(&mut d, "cuDevicePrimaryCtxRetain", 1, &[0, 0], Some(0x46252230));
        assert_eq!(d.device(7, 1, None), Some(0));
        assert_eq!(d.device(7, 1, Some(0x3fe86510)), Some(0), "the stream made before the retain too");
    }
}
