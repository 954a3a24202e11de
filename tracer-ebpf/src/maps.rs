//! Maps shared by the programs, and the record-emitting helpers.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, HashMap, PerCpuArray, RingBuf},
};
use tracer_common::event::{Header, counter};

/// All records. Size set by userspace at load time.
#[map]
pub static EVENTS: RingBuf = RingBuf::with_byte_size(16 * 1024 * 1024, 0);

/// Traced task ids (tgids and, transiently, tids of their threads).
#[map]
pub static TRACED: HashMap<u32, u8> = HashMap::with_max_entries(65536, 0);

/// Pointers saved at entry for the return probe, keyed by (tid << 16 | func
/// id): the two out-parameters, and a string argument the entry probe could
/// not read (0 otherwise).
#[map]
pub static OUTPTRS: HashMap<u64, [u64; 3]> = HashMap::with_max_entries(65536, 0);

/// Per-CPU counters, indexed by [`tracer_common::event::counter`].
#[map]
pub static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(counter::COUNT, 0);

#[inline(always)]
pub fn bump(idx: u32) -> u64 {
    match COUNTERS.get_ptr_mut(idx) {
        // Programs attached to uprobes and tracepoints run with preemption
        // disabled, so a plain per-CPU increment cannot race.
        Some(p) => unsafe {
            let v = *p;
            *p = v + 1;
            v
        },
        None => 0,
    }
}

/// Unconsumed bytes above which a submit wakes the collector. Below it,
/// records are submitted without a wakeup and the collector finds them on
/// its next timed poll: a wakeup per record costs the producing thread an
/// irq_work (a self-IPI, i.e. a VM exit under virtualization) for nothing
/// while the collector keeps up. 0 = wake on every record.
#[unsafe(no_mangle)]
static WAKEUP_BYTES: u64 = 0;

const BPF_RB_NO_WAKEUP: u64 = 1;
const BPF_RB_FORCE_WAKEUP: u64 = 2;
const BPF_RB_AVAIL_DATA: u64 = 0;

/// Records a CPU submits between two looks at the ring's fill level (a
/// power of two). The look (`bpf_ringbuf_query`) reads the consumer
/// position, a cache line the collector writes from another CPU: on every
/// record it cost ~50 ns of a launch's ~570 ns program (`--bpf-stats`,
/// docs/overhead.md). The collector drains on its timed poll (10 ms) whether
/// woken or not; the wakeup only shortens that sleep when data piles up.
const WAKEUP_CHECK_EVERY: u64 = 16;

/// Records are at most 2 KiB: between two looks a CPU adds at most
/// `WAKEUP_CHECK_EVERY` of them, so a look that finds between WAKEUP_BYTES
/// and WAKEUP_BYTES + this much unconsumed data is (one of the few looks)
/// crossing the threshold. Should other CPUs carry the fill level past the
/// window between two looks, the timed poll still drains it.
const WAKEUP_WINDOW: u64 = WAKEUP_CHECK_EVERY * 2048;

/// Flags for `submit`: wake the reader once when data piles up past the
/// threshold, never per record. Above it, the collector is busy or asleep
/// until its next timed poll anyway; forcing a wakeup on every record there
/// (as an earlier version did) cost each traced call an irq_work, ~5 µs in a
/// VM, exactly when the collector was already behind. The fill level is
/// looked at on one record in `WAKEUP_CHECK_EVERY` of each CPU (the CPU's
/// sequence counter, which the record's header just advanced).
#[inline(always)]
pub fn submit_flags() -> u64 {
    let threshold = unsafe { core::ptr::read_volatile(&WAKEUP_BYTES) };
    if threshold == 0 {
        return 0;
    }
    let seq = match COUNTERS.get_ptr_mut(counter::SEQ) {
        Some(p) => unsafe { *p },
        None => 0,
    };
    if seq % WAKEUP_CHECK_EVERY != 0 {
        return BPF_RB_NO_WAKEUP;
    }
    let avail = EVENTS.query(BPF_RB_AVAIL_DATA);
    if avail >= threshold && avail < threshold + WAKEUP_WINDOW { BPF_RB_FORCE_WAKEUP } else { BPF_RB_NO_WAKEUP }
}

#[inline(always)]
pub fn current() -> (u32, u32) {
    let id = bpf_get_current_pid_tgid();
    ((id >> 32) as u32, id as u32)
}

/// Generation of TRACED: [0] changes when the sched programs change it,
/// [1] when userspace does. Readers only compare it for equality.
#[map]
pub static TRACED_GEN: Array<u64> = Array::with_max_entries(2, 0);

/// Per CPU: the last tgid looked up in TRACED, its verdict and the
/// generation it was read at: `[tgid | traced << 32 | valid << 33, gen]`.
#[map]
static TRACED_CACHE: PerCpuArray<[u64; 2]> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn traced_generation() -> u64 {
    let a = TRACED_GEN.get(0).copied().unwrap_or(0);
    let b = TRACED_GEN.get(1).copied().unwrap_or(0);
    a ^ b.rotate_left(32)
}

/// Records a change of TRACED (sched programs), after the change. The new
/// generation is a value no writer wrote before (time and CPU), not an
/// increment, which BPF cannot do atomically from Rust here: whatever the
/// order in which concurrent writers store, a reader that saw a generation
/// then looked TRACED up sees every change whose generation was stored
/// before the one it saw, and any later store changes the value.
#[inline(always)]
pub fn traced_changed() {
    if let Some(p) = TRACED_GEN.get_ptr_mut(0) {
        let v = unsafe { bpf_ktime_get_ns() } ^ ((unsafe { bpf_get_smp_processor_id() } as u64) << 52) ^ 1;
        unsafe { core::ptr::write_volatile(p, v) };
    }
}

/// Whether the process is traced. Every probe hit asks, traced or not: the
/// answer is cached per CPU for the last process asked about (consecutive
/// hits on a CPU are nearly always the same process) and stays valid while
/// TRACED does not change (its generation): an array read instead of a hash
/// lookup (~40 ns less per call).
#[inline(always)]
pub fn is_traced(tgid: u32) -> bool {
    let generation = traced_generation();
    let cache = TRACED_CACHE.get_ptr_mut(0);
    if let Some(c) = cache {
        let [key, g] = unsafe { *c };
        if g == generation && key as u32 == tgid && key >> 33 == 1 {
            return (key >> 32) & 1 == 1;
        }
    }
    let traced = unsafe { TRACED.get(&tgid).is_some() };
    if let Some(c) = cache {
        // Bit 33 marks the entry valid (a zeroed cache says nothing).
        unsafe { *c = [tgid as u64 | (traced as u64) << 32 | 1 << 33, generation] };
    }
    traced
}

/// Fills a header, consuming one sequence number.
#[inline(always)]
pub fn header(kind: u16, func: u16, pid: u32, tid: u32) -> Header {
    Header {
        kind,
        func,
        cpu: unsafe { bpf_get_smp_processor_id() },
        seq: bump(counter::SEQ),
        ts: unsafe { bpf_ktime_get_ns() },
        pid,
        tid,
    }
}
