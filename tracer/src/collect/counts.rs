//! `tracer record --counts`: launches and the other calls probed
//! entry-only by default are counted in the kernel (tracer-ebpf/src/counts.rs)
//! instead of recorded one by one; every other call is recorded as usual.
//! Once the probes are detached, the counts become lines of the trace, just
//! before the footer:
//!
//! ```text
//! {"type":"count","ts":T,"pid":0,"name":"cuLaunchKernel","calls":93412}
//! {"type":"kernel_count","ts":T,"pid":812,"name":"cuLaunchKernel","handle":"0x55d1c2a0","kernel":"vectorAdd","launches":1000}
//! ```
//!
//! `ts`: when the counts were read, after the probes came off.
//! `count`: calls of a counted function, all traced processes together
//! (`pid` 0).
//! `kernel_count`: launches per process and kernel handle; `kernel` is the
//! name the recorded cuModuleGetFunction / cuLibraryGetKernel calls gave
//! that handle (null if none did).
use std::collections::BTreeMap;

use anyhow::Context as _;
use aya::Ebpf;
use aya::maps::{MapData, PerCpuArray, PerCpuHashMap};
use serde_json::{Value, json};
use tracer_common::funcs::{FUNCS, FuncId};

use crate::decode::calls::{Assembler, func_name};

/// Slots of the per-function map: one per possible FuncId.
pub const FUNC_SLOTS: u32 = (FUNCS.len() * 4) as u32;
/// Distinct (process, function, kernel handle) launches counted.
pub const KERNEL_SLOTS: u32 = 1 << 16;

pub struct CountMaps {
    calls: PerCpuArray<MapData, u64>,
    kernels: PerCpuHashMap<MapData, [u64; 2], u64>,
}

impl CountMaps {
    pub fn take(ebpf: &mut Ebpf) -> anyhow::Result<CountMaps> {
        let calls = PerCpuArray::try_from(ebpf.take_map("CALL_COUNTS").context("CALL_COUNTS map")?)?;
        let kernels = PerCpuHashMap::try_from(ebpf.take_map("KERNEL_COUNTS").context("KERNEL_COUNTS map")?)?;
        Ok(CountMaps { calls, kernels })
    }

    /// The count lines, functions by name then kernels by process and
    /// count (most launched first). `asm` names the kernel handles; `ts`:
    /// when the counts were read (CLOCK_MONOTONIC ns, after detaching).
    pub fn lines(&self, asm: &Assembler, ts: u64) -> anyhow::Result<Vec<Value>> {
        let mut funcs = BTreeMap::new();
        for id in 0..FUNC_SLOTS {
            let n: u64 = self.calls.get(&id, 0).context("reading CALL_COUNTS")?.iter().sum();
            if n > 0 {
                funcs.insert(func_name(FuncId(id as u16)), n);
            }
        }
        let mut kernels = Vec::new();
        for kv in self.kernels.iter() {
            let ([pid_func, handle], per_cpu) = kv.context("reading KERNEL_COUNTS")?;
            let n: u64 = per_cpu.iter().sum();
            kernels.push(((pid_func >> 32) as u32, FuncId(pid_func as u16), handle, n));
        }
        kernels.sort_by_key(|&(pid, _, h, n)| (pid, std::cmp::Reverse(n), h));
        let mut v: Vec<Value> = funcs
            .into_iter()
            .map(|(name, n)| json!({"type": "count", "ts": ts, "pid": 0, "name": name, "calls": n}))
            .collect();
        v.extend(kernels.into_iter().map(|(pid, f, h, n)| {
            json!({
                "type": "kernel_count",
                "ts": ts,
                "pid": pid,
                "name": func_name(f),
                "handle": format!("{h:#x}"),
                "kernel": asm.kernel_name(pid, h).map(|s| s.to_string()),
                "launches": n,
            })
        }));
        Ok(v)
    }
}
