//! Ring-buffer records. Every record starts with [`Header`]; `Header::kind`
//! says which struct follows. Sizes are asserted at compile time so the eBPF
//! and user sides can never disagree silently.

/// Record type ids. Stable: they appear in no file, but both sides must agree.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// [`CallEnter`]: a probed driver function was entered.
    CallEnter = 1,
    /// [`CallEnterStr`]: entered, with one string argument captured.
    CallEnterStr = 2,
    /// [`CallEnterBlob`]: entered, with one struct argument captured.
    CallEnterBlob = 3,
    /// [`CallExit`]: a probed function returned.
    CallExit = 4,
    /// [`ProcFork`]: a traced task created a task (process or thread).
    ProcFork = 5,
    /// [`ProcExec`]: a traced process called execve successfully.
    ProcExec = 6,
    /// [`ProcExit`]: a traced task exited.
    ProcExit = 7,
    /// [`CallExitStr`]: returned, carrying the string argument that could
    /// not be read at entry (its page was not resident yet).
    CallExitStr = 8,
    /// [`IoctlEnter`]: ioctl on an NVIDIA device file, parameters at entry.
    IoctlEnter = 9,
    /// [`IoctlExit`]: that ioctl returned; parameters re-read.
    IoctlExit = 10,
    /// [`NvFileOp`]: open/close/mmap/munmap of an NVIDIA device file.
    NvFileOp = 11,
    /// [`crate::params::LaunchParams`]: a launch with its parameter bytes
    /// (`--replayable`), variable length.
    LaunchParams = 12,
    /// [`SchedSwitch`]: a CPU switched from or to a traced thread.
    SchedSwitch = 13,
    /// [`SchedWaking`]: something woke a traced thread.
    SchedWaking = 14,
    /// [`crate::stack::StackRec`]: the stack of the thread's next record
    /// (a call's entry, a switch-out), variable length.
    Stack = 15,
}

impl EventKind {
    pub const fn from_u16(v: u16) -> Option<Self> {
        Some(match v {
            1 => Self::CallEnter,
            2 => Self::CallEnterStr,
            3 => Self::CallEnterBlob,
            4 => Self::CallExit,
            5 => Self::ProcFork,
            6 => Self::ProcExec,
            7 => Self::ProcExit,
            8 => Self::CallExitStr,
            9 => Self::IoctlEnter,
            10 => Self::IoctlExit,
            11 => Self::NvFileOp,
            12 => Self::LaunchParams,
            13 => Self::SchedSwitch,
            14 => Self::SchedWaking,
            15 => Self::Stack,
            _ => return None,
        })
    }
}

/// Common prefix of every record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// [`EventKind`] as u16.
    pub kind: u16,
    /// Function id ([`crate::funcs::FuncId`]) for call records, 0 otherwise.
    pub func: u16,
    /// CPU the record was produced on; `seq` counts per CPU.
    pub cpu: u32,
    /// Per-CPU sequence number, incremented for every record the kernel side
    /// tried to emit, whether or not ring-buffer space could be reserved. The
    /// final per-CPU counters minus the records received give the exact loss.
    pub seq: u64,
    /// `bpf_ktime_get_ns()` (CLOCK_MONOTONIC, ns).
    pub ts: u64,
    /// Thread-group id (the process id users see).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
}

/// Number of integer arguments captured per call: the 6 register arguments
/// of the x86-64 SysV ABI plus up to 5 from the stack (cuLaunchKernel has 11).
pub const MAX_ARGS: usize = 11;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallEnter {
    pub hdr: Header,
    pub args: [u64; MAX_ARGS],
}

/// Bytes of a captured string argument (kernel names, file names), NUL
/// included; longer strings are cut and flagged (`len == STR_CAP`).
pub const STR_CAP: usize = 1024;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallEnterStr {
    pub hdr: Header,
    pub args: [u64; MAX_ARGS],
    /// Bytes written by bpf_probe_read_user_str, NUL included; 0 if the read
    /// failed (pointer not readable).
    pub len: u32,
    pub _pad: u32,
    pub data: [u8; STR_CAP],
}

/// Bytes of a captured struct argument: CUlaunchConfig (56) plus up to
/// [`MAX_LAUNCH_ATTRS`] CUlaunchAttribute (72 each) is the largest.
pub const BLOB_CAP: usize = 56 + MAX_LAUNCH_ATTRS * 72;
pub const MAX_LAUNCH_ATTRS: usize = 4;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallEnterBlob {
    pub hdr: Header,
    pub args: [u64; MAX_ARGS],
    /// Bytes captured (0 if the pointer could not be read).
    pub len: u32,
    /// For launch configs: attributes captured after the config.
    pub nattrs: u32,
    pub data: [u8; BLOB_CAP],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallExit {
    pub hdr: Header,
    /// rax: CUresult for driver calls.
    pub ret: u64,
    /// Values read through the out-parameter pointers saved at entry.
    pub out: [u64; 2],
    /// Bit i set: out[i] was read successfully.
    pub out_ok: u32,
    /// [`EXIT_STOPPED`]: the return probe stopped the thread (`--capture-data`).
    pub flags: u32,
}

/// [`CallExit::flags`]: the return probe stopped the thread (SIGSTOP) before
/// submitting the record; userspace resumes it once it has read what it must.
pub const EXIT_STOPPED: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallExitStr {
    pub exit: CallExit,
    pub len: u32,
    pub _pad: u32,
    pub data: [u8; STR_CAP],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcFork {
    pub hdr: Header,
    /// The new task's id (a pid for a process, a tid for a thread).
    pub child: u32,
    pub _pad: u32,
}

pub const PATH_CAP: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ProcExec {
    pub hdr: Header,
    pub len: u32,
    pub _pad: u32,
    pub filename: [u8; PATH_CAP],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcExit {
    pub hdr: Header,
    /// 1 when the whole thread group is gone (last thread exited).
    pub group_dead: u32,
    pub _pad: u32,
}

/// Bytes of an ioctl parameter struct captured (RM structs are 16-184 bytes;
/// CARD_INFO and the dma-buf export are larger and are cut, flagged by
/// `len < size`).
pub const IOCTL_CAP: usize = 512;
/// The head of a struct is captured into `data[..IOCTL_HEAD_CAP]`; a second
/// window (the trailing fields and rmStatus of UVM structs larger than that)
/// goes to `data[IOCTL_HEAD_CAP..]`.
pub const IOCTL_HEAD_CAP: usize = 448;
pub const IOCTL_TAIL_CAP: usize = IOCTL_CAP - IOCTL_HEAD_CAP;

/// Value of the UVM_SIZES map: how to capture one UVM command's struct.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UvmCapture {
    pub size: u32,
    pub tail_off: u32,
    pub tail_len: u32,
    pub _pad: u32,
}

/// NVIDIA device kinds, as tracked per file descriptor.
pub mod nvdev {
    pub const NONE: u32 = 0;
    /// /dev/nvidiactl
    pub const CTL: u32 = 1;
    /// /dev/nvidia-uvm
    pub const UVM: u32 = 2;
    /// /dev/nvidia-uvm-tools
    pub const UVM_TOOLS: u32 = 3;
    /// /dev/nvidiactl or /dev/nvidiaN, seen from the kprobe path (the
    /// driver's ioctl entry does not tell which file).
    pub const FRONTEND: u32 = 4;
    /// /dev/nvidiaN is GPU + N
    pub const GPU: u32 = 0x100;

    /// Key of the kernel's (process, fd) -> device map, NVFDS.
    #[inline(always)]
    pub const fn fd_key(tgid: u32, fd: u32) -> u64 {
        ((tgid as u64) << 32) | fd as u64
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IoctlEnter {
    pub hdr: Header,
    pub fd: u32,
    /// [`nvdev`] kind of the fd.
    pub dev: u32,
    pub request: u64,
    pub arg: u64,
    /// Bytes the request says the struct has (for XFER_CMD: the inner size).
    pub size: u32,
    /// Bytes captured in `data` (0 if the pointer was not readable).
    pub len: u32,
    /// XFER_CMD: the inner escape number and pointer (0 otherwise); `data`
    /// then holds the 16-byte xfer struct followed by the inner struct.
    pub inner_nr: u32,
    /// Bytes of the tail window captured at `data[IOCTL_HEAD_CAP..]`.
    pub tail_len: u32,
    pub inner_ptr: u64,
    pub data: [u8; IOCTL_CAP],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IoctlExit {
    pub hdr: Header,
    /// Syscall return value (-errno on failure).
    pub ret: i64,
    pub len: u32,
    pub tail_len: u32,
    /// The same struct re-read after the driver wrote its outputs.
    pub data: [u8; IOCTL_CAP],
}

/// What happened to an NVIDIA device file.
pub mod nvop {
    pub const OPEN: u32 = 1;
    pub const CLOSE: u32 = 2;
    pub const MMAP: u32 = 3;
    pub const MUNMAP: u32 = 4;
}

pub const NVPATH_CAP: usize = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NvFileOp {
    pub hdr: Header,
    /// [`nvop`].
    pub op: u32,
    pub fd: i32,
    pub dev: u32,
    pub prot: u32,
    /// Return value: fd for open, address for mmap, 0/-errno otherwise.
    pub ret: i64,
    pub addr: u64,
    pub length: u64,
    pub flags: u64,
    pub offset: u64,
    /// The path opened (open only).
    pub path: [u8; NVPATH_CAP],
}

/// Bytes of a task's name (`TASK_COMM_LEN`).
pub const COMM_CAP: usize = 16;

/// `sched_switch` where the thread switched out (`hdr.pid/tid`, the
/// current task) or the one switched in (`next_*`) is traced: one record
/// per switch, from the CPU that switched (`hdr.cpu`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedSwitch {
    pub hdr: Header,
    /// The tracepoint's `prev_state`: 0 runnable, `0x100` (TASK_REPORT_MAX)
    /// set when preempted; else S=1, D=2, … (blocked).
    pub prev_state: u64,
    /// [`sched_flags`].
    pub flags: u32,
    /// The switched-in thread's id; its process (0 when not traced).
    pub next_tid: u32,
    pub next_tgid: u32,
    pub _pad: u32,
    /// A blocked, traced thread switched out: the system call it is blocked
    /// in (`orig_ax` of its user registers; -1 when not in a system call,
    /// e.g. waiting for a page fault's I/O) and its first argument.
    pub syscall: i64,
    pub arg0: u64,
    /// The switched-out task's name (the current one).
    pub prev_comm: [u8; COMM_CAP],
    pub next_comm: [u8; COMM_CAP],
}

pub mod sched_flags {
    /// The switched-out thread is traced.
    pub const PREV_TRACED: u32 = 1;
    /// The switched-in thread is traced.
    pub const NEXT_TRACED: u32 = 2;
    /// `syscall`/`arg0` were read.
    pub const REGS_READ: u32 = 4;
}

/// `sched_waking` of a traced thread, from the waker's context (`hdr`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedWaking {
    pub hdr: Header,
    pub tid: u32,
    pub tgid: u32,
    pub target_cpu: u32,
    pub _pad: u32,
    /// The waker's name.
    pub comm: [u8; COMM_CAP],
}

/// Indexes into the per-CPU `COUNTERS` array map.
pub mod counter {
    /// Next sequence number (= records attempted on this CPU).
    pub const SEQ: u32 = 0;
    /// Ring-buffer reservations that failed (buffer full).
    pub const RB_FULL: u32 = 1;
    /// Out-parameter pointer saves that failed (per-thread map full).
    pub const SAVE_FAILED: u32 = 2;
    /// `--counts`: launches whose kernel found no room in KERNEL_COUNTS
    /// (still counted per function).
    pub const KERNEL_COUNT_FULL: u32 = 3;
    pub const COUNT: u32 = 4;
}

// Layout guards: change a record and these tell you to look at the other side.
const _: () = assert!(core::mem::size_of::<Header>() == 32);
const _: () = assert!(core::mem::size_of::<CallEnter>() == 32 + 88);
const _: () = assert!(core::mem::size_of::<CallEnterStr>() == 32 + 88 + 8 + STR_CAP);
const _: () = assert!(core::mem::size_of::<CallEnterBlob>() == 32 + 88 + 8 + BLOB_CAP);
const _: () = assert!(core::mem::size_of::<CallExit>() == 32 + 32);
const _: () = assert!(core::mem::size_of::<CallExitStr>() == 64 + 8 + STR_CAP);
const _: () = assert!(core::mem::size_of::<ProcFork>() == 40);
const _: () = assert!(core::mem::size_of::<ProcExec>() == 40 + PATH_CAP);
const _: () = assert!(core::mem::size_of::<ProcExit>() == 40);
const _: () = assert!(core::mem::size_of::<SchedSwitch>() == 32 + 40 + 2 * COMM_CAP);
const _: () = assert!(core::mem::size_of::<SchedWaking>() == 32 + 16 + COMM_CAP);
const _: () = assert!(BLOB_CAP.is_multiple_of(8));
// The attach cookie holds struct sizes in 11 bits.
const _: () = assert!(BLOB_CAP < 2048);
