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
//! its default and says so.
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
