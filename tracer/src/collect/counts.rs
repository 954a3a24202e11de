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

/// Slots of the per-function map for the table's functions: one per possible FuncId.
pub const TABLE_SLOTS: u32 = (FUNCS.len() * 4) as u32;
/// Slots after the table's for exported `cu*` functions tracer does not decode: each is
/// counted (`cu_count`) so that a call of one is never silently missed (entry_points.rs).
pub const UNRECORDED_SLOTS: u32 = 2048;
/// Slots of the per-function map.
pub const FUNC_SLOTS: u32 = TABLE_SLOTS + UNRECORDED_SLOTS;

/// The counting ids of exported functions tracer does not decode, by name: the same name
/// gets the same id in every libcuda file probed during one run.
static UNRECORDED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The counting id of an undecoded exported function; None once every slot is taken.
pub fn unrecorded_id(name: &str) -> Option<FuncId> {
    let mut names = UNRECORDED.lock().unwrap_or_else(|e| e.into_inner());
    let i = match names.iter().position(|n| n == name) {
        Some(i) => i,
        None if names.len() < UNRECORDED_SLOTS as usize => {
            names.push(name.to_string());
            names.len() - 1
        }
        None => return None,
    };
    Some(FuncId((TABLE_SLOTS as usize + i) as u16))
}

/// Every name given an id by [`unrecorded_id`] (the functions with a counting probe).
pub fn unrecorded_names() -> Vec<String> {
    UNRECORDED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The name behind an id of [`unrecorded_id`].
pub fn unrecorded_name(id: u32) -> Option<String> {
    let i = id.checked_sub(TABLE_SLOTS)? as usize;
    UNRECORDED.lock().unwrap_or_else(|e| e.into_inner()).get(i).cloned()
}
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

    /// Calls of the exported functions tracer counts without decoding them, by name
    /// (those called at least once).
    pub fn unrecorded_calls(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        let mut m = BTreeMap::new();
        for id in TABLE_SLOTS..FUNC_SLOTS {
            let Some(name) = unrecorded_name(id) else { break };
            let n: u64 = self.calls.get(&id, 0).context("reading CALL_COUNTS")?.iter().sum();
            if n > 0 {
                m.insert(name, n);
            }
        }
        Ok(m)
    }

    /// The count lines, functions by name then kernels by process and
    /// count (most launched first). `asm` names the kernel handles; `ts`:
    /// when the counts were read (CLOCK_MONOTONIC ns, after detaching).
    pub fn lines(&self, asm: &Assembler, ts: u64) -> anyhow::Result<Vec<Value>> {
        let mut funcs = BTreeMap::new();
        for id in 0..TABLE_SLOTS {
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
