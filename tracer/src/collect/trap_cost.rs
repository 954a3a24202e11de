//! The uprobe trap's cost on this machine, measured at the start of a
//! recording (header `probe_trap_ns`, `return_trap_ns`, `probe_trap`):
//! compensated pacing (tracer_format::pacing) takes it out of every host
//! gap, per probe hit, instead of a default measured on another machine.
//!
//! A stand-in function in this binary, built like libcuda's functions
//! (`push %rbp` first, which the kernel emulates instead of single-stepping),
//! is called in a loop three ways, interleaved and repeated: unprobed, with
//! an empty entry program attached the way the real programs are (one
//! uprobe_multi link), and with an empty return program as well. The
//! differences of the medians are the entry and return traps (each with an
//! empty program's run, some 50 ns; the real programs' runs are the footer's
//! `bpf_stats`). The command is still suspended: nothing else of the
//! recording runs meanwhile. A machine where this cannot be done (no
//! uprobe_multi, another architecture) gets no fields: pacing falls back to
//! its default and says so. `TRACER_TRAP_COLD` (an experiment) adds the trap
//! measured after a walk over a larger working set ([`measure_cold`]).
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{Value, json};

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".globl tracer_trap_standin",
    ".type tracer_trap_standin,@function",
    "tracer_trap_standin:",
    "push rbp",
    "mov rbp, rsp",
    "pop rbp",
    "ret",
    ".size tracer_trap_standin, .-tracer_trap_standin",
);

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn tracer_trap_standin();
}

/// Calls per timed loop, loops per way (the median is kept).
const CALLS: u32 = 2_000;
const LOOPS: usize = 7;

/// What was measured, ns per call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrapCost {
    pub unprobed_ns: f64,
    pub entry_ns: f64,
    pub entry_return_ns: f64,
}

impl TrapCost {
    /// The entry trap (with an empty program's run), ns per probe hit.
    pub fn entry_trap_ns(&self) -> f64 {
        (self.entry_ns - self.unprobed_ns).max(0.0)
    }
    /// The return probe's trap, ns per return.
    pub fn return_trap_ns(&self) -> f64 {
        (self.entry_return_ns - self.entry_ns).max(0.0)
    }
    /// The header's fields.
    pub fn header_fields(&self, header: &mut Value) {
        header["probe_trap_ns"] = json!(self.entry_trap_ns().round());
        header["return_trap_ns"] = json!(self.return_trap_ns().round());
        header["probe_trap"] = json!({
            "method": format!("stand-in with push %rbp, {CALLS} calls x {LOOPS} loops per way, medians"),
            "unprobed_ns_per_call": round2(self.unprobed_ns),
            "entry_ns_per_call": round2(self.entry_ns),
            "entry_return_ns_per_call": round2(self.entry_return_ns),
        });
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The stand-in's file and file offset (a uprobe's location).
#[cfg(target_arch = "x86_64")]
fn standin_location() -> anyhow::Result<(PathBuf, u64)> {
    use crate::collect::stacks::maps;
    use anyhow::Context;
    let addr = tracer_trap_standin as *const () as usize as u64;
    let text = std::fs::read_to_string("/proc/self/maps").context("reading /proc/self/maps")?;
    let all = maps::parse(&text);
    let m = maps::find(&all, addr).with_context(|| format!("the stand-in's address {addr:#x} is in no mapping"))?;
    let file = m.file().with_context(|| format!("the stand-in's address {addr:#x} is in no file mapping"))?;
    Ok((PathBuf::from(file), m.file_offset(addr)))
}

#[cfg(target_arch = "x86_64")]
fn time_loop() -> f64 {
    let t = Instant::now();
    for _ in 0..CALLS {
        unsafe { tracer_trap_standin() };
        std::hint::black_box(());
    }
    t.elapsed().as_nanos() as f64 / CALLS as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Measures the traps with `progs` (the bench programs `cu_empty` and
/// `cu_empty_ret`, loaded for uprobe_multi).
#[cfg(target_arch = "x86_64")]
pub fn measure(progs: &crate::collect::uprobe_multi::MultiPrograms) -> anyhow::Result<TrapCost> {
    let (path, off) = standin_location()?;
    for _ in 0..2 {
        time_loop();
    }
    let (mut base, mut entry, mut both) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..LOOPS {
        base.push(time_loop());
        let e = progs.attach("cu_empty", &path, &[off], &[0], false)?;
        entry.push(time_loop());
        let r = progs.attach("cu_empty_ret", &path, &[off], &[0], true)?;
        both.push(time_loop());
        drop(r);
        drop(e);
    }
    Ok(TrapCost { unprobed_ns: median(base), entry_ns: median(entry), entry_return_ns: median(both) })
}

/// `TRACER_TRAP_COLD=KIB[,KIB...]` (an experiment, docs/replay.md): the trap again with
/// work between the calls, a walk of [`COLD_STEPS`] dependent loads over a random cycle of
/// the cache lines of KIB KiB, as a program's own work between two driver calls would
/// evict the trap's code and data, and the trap the program's. Per size, unprobed and
/// with the entry probe, interleaved, the call and the walk timed apart: the calls'
/// difference is the trap run after that much work, the walks' difference what the trap
/// left the work (its after-effects; the walk's own spread hides them on the machines
/// measured so far).
pub const COLD_STEPS: usize = 256;
const COLD_ITERS: u32 = 300;

/// One size's figures, ns per iteration: the walk and the call timed apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColdTrap {
    pub kib: usize,
    /// The call alone (two clock reads around it), unprobed and probed.
    pub call_unprobed_ns: f64,
    pub call_entry_ns: f64,
    /// The walk after the call, unprobed and probed: the trap's after-effects on the work.
    pub walk_unprobed_ns: f64,
    pub walk_entry_ns: f64,
}

/// The sizes asked for by `TRACER_TRAP_COLD`, none when unset or unreadable.
pub fn cold_sizes() -> Vec<usize> {
    std::env::var("TRACER_TRAP_COLD")
        .map(|v| v.split(',').filter_map(|k| k.trim().parse().ok()).filter(|&k| k > 0).collect())
        .unwrap_or_default()
}

/// A random cycle over the buffer's cache lines (16 u32 a line; the first of each holds
/// the next line's index).
fn cold_buffer(kib: usize) -> Vec<u32> {
    let lines = (kib * 1024 / 64).max(2);
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut buf = vec![0u32; lines * 16];
    for w in 0..lines {
        buf[order[w] as usize * 16] = order[(w + 1) % lines];
    }
    buf
}

/// One loop: per iteration the walk, then the call, each timed; (call, walk) ns per iteration.
#[cfg(target_arch = "x86_64")]
fn cold_loop(buf: &[u32], at: &mut u32) -> (f64, f64) {
    let (mut call, mut walk) = (0u128, 0u128);
    for _ in 0..COLD_ITERS {
        let t0 = Instant::now();
        let mut i = *at;
        for _ in 0..COLD_STEPS {
            i = buf[i as usize * 16];
        }
        *at = std::hint::black_box(i);
        let t1 = Instant::now();
        unsafe { tracer_trap_standin() };
        let t2 = Instant::now();
        walk += (t1 - t0).as_nanos();
        call += (t2 - t1).as_nanos();
    }
    (call as f64 / COLD_ITERS as f64, walk as f64 / COLD_ITERS as f64)
}

/// The cold figures for `sizes` (KiB), [`COLD_STEPS`] loads between calls.
#[cfg(target_arch = "x86_64")]
pub fn measure_cold(
    progs: &crate::collect::uprobe_multi::MultiPrograms,
    sizes: &[usize],
) -> anyhow::Result<Vec<ColdTrap>> {
    let (path, off) = standin_location()?;
    let mut out = Vec::new();
    for &kib in sizes {
        let buf = cold_buffer(kib);
        let mut at = 0;
        cold_loop(&buf, &mut at);
        let (mut base, mut entry) = (Vec::new(), Vec::new());
        for _ in 0..LOOPS {
            base.push(cold_loop(&buf, &mut at));
            let e = progs.attach("cu_empty", &path, &[off], &[0], false)?;
            entry.push(cold_loop(&buf, &mut at));
            drop(e);
        }
        let m = |v: &[(f64, f64)], walk: bool| median(v.iter().map(|&(c, w)| if walk { w } else { c }).collect());
        out.push(ColdTrap {
            kib,
            call_unprobed_ns: m(&base, false),
            call_entry_ns: m(&entry, false),
            walk_unprobed_ns: m(&base, true),
            walk_entry_ns: m(&entry, true),
        });
    }
    Ok(out)
}

#[cfg(not(target_arch = "x86_64"))]
pub fn measure_cold(_: &crate::collect::uprobe_multi::MultiPrograms, _: &[usize]) -> anyhow::Result<Vec<ColdTrap>> {
    anyhow::bail!("the trap measurement's stand-in is x86-64 only")
}

/// The header's `probe_trap.cold`: per size, the iteration's time both ways and their difference.
pub fn cold_fields(cold: &[ColdTrap]) -> Value {
    Value::Array(
        cold.iter()
            .map(|c| {
                json!({
                    "kib": c.kib,
                    "steps": COLD_STEPS,
                    "call_unprobed_ns": round2(c.call_unprobed_ns),
                    "call_entry_ns": round2(c.call_entry_ns),
                    "walk_unprobed_ns": round2(c.walk_unprobed_ns),
                    "walk_entry_ns": round2(c.walk_entry_ns),
                    "entry_trap_ns": round2(c.call_entry_ns - c.call_unprobed_ns),
                    "after_effect_ns": round2(c.walk_entry_ns - c.walk_unprobed_ns),
                })
            })
            .collect(),
    )
}

#[cfg(not(target_arch = "x86_64"))]
pub fn measure(_: &crate::collect::uprobe_multi::MultiPrograms) -> anyhow::Result<TrapCost> {
    anyhow::bail!("the trap measurement's stand-in is x86-64 only")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_the_differences_of_the_medians() {
        let t = TrapCost { unprobed_ns: 5.2, entry_ns: 905.2, entry_return_ns: 2106.2 };
        let mut h = json!({});
        t.header_fields(&mut h);
        assert_eq!((h["probe_trap_ns"].clone(), h["return_trap_ns"].clone()), (json!(900.0), json!(1201.0)));
        assert_eq!(h["probe_trap"]["entry_return_ns_per_call"], 2106.2);
        // noise never makes a negative cost
        let t = TrapCost { unprobed_ns: 10.0, entry_ns: 8.0, entry_return_ns: 7.0 };
        assert_eq!((t.entry_trap_ns(), t.return_trap_ns()), (0.0, 0.0));
    }

    #[test]
    fn the_cold_buffer_is_one_cycle_over_every_line() {
        for kib in [1, 4, 64] {
            let buf = cold_buffer(kib);
            let lines = kib * 1024 / 64;
            let mut seen = vec![false; lines];
            let mut i = 0u32;
            for _ in 0..lines {
                assert!(!seen[i as usize], "{kib} KiB: line {i} twice");
                seen[i as usize] = true;
                i = buf[i as usize * 16];
            }
            assert_eq!(i, 0, "{kib} KiB: the walk is back at its start after every line");
        }
        let c = ColdTrap {
            kib: 64,
            call_unprobed_ns: 30.0,
            call_entry_ns: 1030.5,
            walk_unprobed_ns: 900.0,
            walk_entry_ns: 1150.0,
        };
        let f = cold_fields(&[c]);
        assert_eq!((f[0]["entry_trap_ns"].clone(), f[0]["after_effect_ns"].clone()), (json!(1000.5), json!(250.0)));
        assert_eq!(f[0]["steps"], COLD_STEPS);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_standin_is_in_this_binary_and_starts_with_push_rbp() {
        let (path, off) = standin_location().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // push %rbp; mov %rsp,%rbp; pop %rbp; ret
        assert_eq!(&bytes[off as usize..off as usize + 6], &[0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3]);
        assert!(time_loop() > 0.0);
    }
}
