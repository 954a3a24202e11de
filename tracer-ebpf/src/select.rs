//! Which processes the libcuda probes record: the traced set (the command's
//! tree, `-p`), every process (`--system`) or the processes of one cgroup v2
//! subtree (`--cgroup`). Userspace sets the mode at load time; the globals
//! are read-only, so the verifier drops the branches of the other modes and
//! the default mode costs what it cost before.
//!
//! Under `--system` and `--cgroup` a process that calls a probed function
//! joins the traced set (once: the per-CPU verdict cache makes the check an
//! array read), so the sched tracepoints follow its children and exit
//! without recording other processes of the machine.
use aya_ebpf::{
    helpers::{
        bpf_get_current_comm,
        generated::{bpf_get_current_ancestor_cgroup_id, bpf_get_current_cgroup_id},
    },
    macros::map,
    maps::LruHashMap,
};
use tracer_common::libopen::mode;

use crate::maps::{TRACED, is_traced, traced_changed};

#[unsafe(no_mangle)]
static SELECT_MODE: u32 = 0;
/// `--cgroup`: the cgroup's id (its directory's inode number in cgroupfs)
/// and its level (0 for the root).
#[unsafe(no_mangle)]
static SELECT_CGROUP_ID: u64 = 0;
#[unsafe(no_mangle)]
static SELECT_CGROUP_LEVEL: u32 = 0;
/// The tracer's own tgid: never selected by `--system` / `--cgroup`. Its
/// NVML thread loads libcuda (driver 580's libnvidia-ml does): watched,
/// the open would stop the tracer itself, which is the one that continues
/// stopped processes; wanted, it would trace its own power sampling.
#[unsafe(no_mangle)]
static SELECT_SELF_TGID: u32 = 0;

/// `--system` / `--cgroup`: tgid -> the cgroup id it had when it joined the
/// traced set (its first probed call), for the lines' `cgroup` field: read
/// here, it is known even for a process that has exited by the time its
/// records are drained.
#[map]
pub static PID_CGROUP: LruHashMap<u32, u64> = LruHashMap::with_max_entries(65536, 0);

/// `--system` / `--cgroup`: tgid -> the task name (comm: the executable's
/// file name, at most 15 bytes) at its first probed call, for `tracer
/// agent`'s `command` label of a process gone before userspace looks.
#[map]
pub static PID_COMM: LruHashMap<u32, [u8; 16]> = LruHashMap::with_max_entries(65536, 0);

#[inline(always)]
fn selection_mode() -> u32 {
    unsafe { core::ptr::read_volatile(&SELECT_MODE) }
}

#[inline(always)]
fn is_self(pid: u32) -> bool {
    pid == unsafe { core::ptr::read_volatile(&SELECT_SELF_TGID) }
}

/// Whether the current task is in the selected cgroup or below it: one
/// helper call (the ancestor at the selected level) and a compare.
#[inline(always)]
fn in_cgroup() -> bool {
    let level = unsafe { core::ptr::read_volatile(&SELECT_CGROUP_LEVEL) };
    let id = unsafe { core::ptr::read_volatile(&SELECT_CGROUP_ID) };
    let ancestor = unsafe { bpf_get_current_ancestor_cgroup_id(level as i32) };
    ancestor == id
}

/// Puts a selected process into the traced set (sched events follow it)
/// and notes its cgroup.
#[inline(always)]
fn adopt(pid: u32) {
    if !is_traced(pid) {
        let _ = PID_CGROUP.insert(&pid, &unsafe { bpf_get_current_cgroup_id() }, 0);
        if let Ok(comm) = bpf_get_current_comm() {
            let _ = PID_COMM.insert(&pid, &comm, 0);
        }
        if TRACED.insert(&pid, &1, 0).is_ok() {
            traced_changed();
        }
    }
}

/// Whether a libcuda call of process `pid` (the current task's tgid) is
/// recorded.
#[inline(always)]
pub fn wanted(pid: u32) -> bool {
    match selection_mode() {
        mode::TRACED => is_traced(pid),
        mode::ALL => {
            if is_self(pid) {
                return false;
            }
            adopt(pid);
            true
        }
        _ => {
            if in_cgroup() && !is_self(pid) {
                adopt(pid);
                true
            } else {
                false
            }
        }
    }
}

/// Whether an open of a `libcuda.so*` file by process `pid` is watched
/// (libwatch.rs).
#[inline(always)]
pub fn watched(pid: u32) -> bool {
    match selection_mode() {
        mode::TRACED => is_traced(pid),
        mode::ALL => !is_self(pid),
        _ => in_cgroup() && !is_self(pid),
    }
}
