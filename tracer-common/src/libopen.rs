//! A traced process opened a file named `libcuda.so*` (the dynamic loader
//! does, before it maps the library). The kernel side stops the process
//! (SIGSTOP) and reports the open on its own small ring buffer
//! (`LIBOPENS`); userspace attaches the probes to that file if its inode is
//! new, then continues the process (SIGCONT). So a libcuda that only exists
//! in the process's mount namespace (a container's) is probed before the
//! process can call into it.

/// Unconsumed bytes of the `LIBOPENS` ring buffer (a few hundred opens).
pub const LIBOPENS_BYTES: u32 = 16 * 1024;

/// The file name prefix the kernel side watches for.
pub const LIBCUDA_PREFIX: &[u8; 10] = b"libcuda.so";

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LibOpen {
    /// `bpf_ktime_get_ns()`.
    pub ts: u64,
    /// Thread-group id and thread id of the opener.
    pub pid: u32,
    pub tid: u32,
    /// The file descriptor openat returned (the file is
    /// `/proc/PID/fd/FD` until the loader closes it, and the process is
    /// stopped until userspace continues it).
    pub fd: u32,
    /// Non-zero when the kernel side sent SIGSTOP (userspace must send
    /// SIGCONT).
    pub stopped: u32,
}

const _: () = assert!(core::mem::size_of::<LibOpen>() == 24);

#[cfg(feature = "user")]
impl LibOpen {
    /// Reads a record from the ring buffer's bytes (None when too short).
    pub fn from_bytes(b: &[u8]) -> Option<LibOpen> {
        if b.len() < core::mem::size_of::<LibOpen>() {
            return None;
        }
        // SAFETY: LibOpen is plain old data of that size; read_unaligned
        // accepts any alignment.
        Some(unsafe { core::ptr::read_unaligned(b.as_ptr() as *const LibOpen) })
    }
}

/// The selection modes of `tracer-ebpf/src/select.rs` (`SELECT_MODE`).
pub mod mode {
    /// The traced set (the command's process tree, or `-p`).
    pub const TRACED: u32 = 0;
    /// Every process on the machine (`--system`).
    pub const ALL: u32 = 1;
    /// Processes in one cgroup v2 subtree (`--cgroup`).
    pub const CGROUP: u32 = 2;
}
