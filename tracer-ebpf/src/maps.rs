//! Maps shared by the programs, and the record-emitting helpers.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns},
    macros::map,
    maps::{HashMap, PerCpuArray, RingBuf},
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

/// Bytes of the largest record: a submit that leaves between WAKEUP_BYTES
/// and WAKEUP_BYTES + this much unconsumed data is (one of the few records)
/// crossing the threshold.
const WAKEUP_WINDOW: u64 = 2048;

/// Flags for `submit`: wake the reader once when data piles up past the
/// threshold, never per record. Above it, the collector is busy or asleep
/// until its next timed poll anyway; forcing a wakeup on every record there
/// (as an earlier version did) cost each traced call an irq_work, ~5 µs in a
/// VM, exactly when the collector was already behind.
#[inline(always)]
pub fn submit_flags() -> u64 {
    let threshold = unsafe { core::ptr::read_volatile(&WAKEUP_BYTES) };
    if threshold == 0 {
        return 0;
    }
    let avail = EVENTS.query(BPF_RB_AVAIL_DATA);
    if avail >= threshold && avail < threshold + WAKEUP_WINDOW { BPF_RB_FORCE_WAKEUP } else { BPF_RB_NO_WAKEUP }
}

#[inline(always)]
pub fn current() -> (u32, u32) {
    let id = bpf_get_current_pid_tgid();
    ((id >> 32) as u32, id as u32)
}

#[inline(always)]
pub fn is_traced(tgid: u32) -> bool {
    unsafe { TRACED.get(&tgid).is_some() }
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
