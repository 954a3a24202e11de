//! The format's words as types (docs/trace-format.md): a line's `type`
//! ([`LineType`]), the call `op`s readers classify by ([`CallOp`]), a copy's
//! `direction` ([`CopyDir`]), the `op` of a `gpu` line ([`GpuActivity`]), of
//! a `marker` line ([`MarkerOp`]) and of a `process` line ([`ProcessOp`]),
//! a stack frame's `kind` ([`FrameKind`]).
//! Each has `parse` (None for a word it does not know), `as_str` (the word
//! the writers write) and `ALL` (every word, in the documented order), so
//! that no reader spells them again.
//!
//! ```
//! use tracer_format::line::vocab::{CopyDir, LineType};
//! assert_eq!(LineType::parse("memcpy"), Some(LineType::Memcpy));
//! assert!(LineType::Memcpy.is_call() && !LineType::Gpu.is_call());
//! assert_eq!(CopyDir::parse("h2d").map(CopyDir::as_str), Some("h2d"));
//! ```

/// An enum of the format's words: `parse`, `as_str`, `ALL`.
macro_rules! words {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $v,)+
        }

        impl $name {
            /// Every word, in the documented order.
            pub const ALL: &'static [$name] = &[$($name::$v,)+];

            /// The word's variant (None for a word the format does not have).
            #[inline]
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($s => Some($name::$v),)+
                    _ => None,
                }
            }

            /// The word as the writers write it.
            #[inline]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s,)+
                }
            }
        }

        /// As its word.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

words! {
    /// A line's `type`: header and footer, the record lines, and the call
    /// types ([`LineType::is_call`]).
    LineType {
        Header = "header",
        Footer = "footer",
        /// fork, exec, exit, thread_exit ([`ProcessOp`]).
        Process = "process",
        /// `--sched`: a traced thread's time off CPU.
        Sched = "sched",
        /// An ioctl on an NVIDIA device file.
        Ioctl = "ioctl",
        /// An open, close, mmap or munmap of an NVIDIA device file.
        NvidiaFd = "nvidia_fd",
        /// A phase, iteration or mark the program wrote ([`MarkerOp`]).
        Marker = "marker",
        /// One NVML sample of one GPU.
        Power = "power",
        /// Measured GPU activity (CUPTI; [`GpuActivity`]).
        Gpu = "gpu",
        /// A window in which CUPTI's activity records were on.
        GpuWindow = "gpu_window",
        /// `--capture-data`: the bytes of an earlier device-to-host copy.
        CopyData = "copy_data",
        /// `--counts`: calls counted in the kernel, not recorded one by one.
        Count = "count",
        /// `--counts`: launches of one kernel counted in the kernel.
        KernelCount = "kernel_count",
        /// A distinct user stack of a process; lines refer to it by `stack`.
        Stack = "stack",
        /// An on-CPU sample of a traced thread's stack (`stack`).
        Sample = "sample",
        /// Kernel and copy durations from the machine's durations library
        /// for the run's GPU (just before the footer).
        Durations = "durations",
        Init = "init",
        Device = "device",
        Context = "context",
        Module = "module",
        Kernel = "kernel",
        Graph = "graph",
        Memory = "memory",
        Memcpy = "memcpy",
        Memset = "memset",
        Sync = "sync",
        Stream = "stream",
        Event = "event",
    }
}

impl LineType {
    /// A CUDA driver call line (the call types of format version 1).
    #[inline]
    pub fn is_call(self) -> bool {
        self >= LineType::Init
    }
}

words! {
    /// The `op` of a call line that readers classify by (every other call
    /// op is the function's name in snake case, and parses to None).
    CallOp {
        Launch = "launch",
        GraphLaunch = "graph_launch",
        Alloc = "alloc",
        Free = "free",
        Copy = "copy",
        Set = "set",
        StreamSynchronize = "stream_synchronize",
        CtxSynchronize = "ctx_synchronize",
        EventSynchronize = "event_synchronize",
        StreamQuery = "stream_query",
        EventQuery = "event_query",
        StreamWaitEvent = "stream_wait_event",
        EventRecord = "event_record",
        EventRecordWithFlags = "event_record_with_flags",
        StreamCreate = "stream_create",
        StreamCreateWithPriority = "stream_create_with_priority",
    }
}

words! {
    /// A copy's `direction` (call lines; `gpu` lines of copies).
    CopyDir {
        H2D = "h2d",
        D2H = "d2h",
        D2D = "d2d",
        H2H = "h2h",
        Peer = "peer",
        /// Unified addressing the decoder could not classify.
        Default = "default",
    }
}

words! {
    /// The `op` of a `gpu` line: what CUPTI measured.
    GpuActivity {
        Kernel = "kernel",
        Memcpy = "memcpy",
        Memset = "memset",
    }
}

words! {
    /// The `op` of a `marker` line.
    MarkerOp {
        /// A phase named `label` starts.
        Phase = "phase",
        /// One iteration starts.
        Iteration = "iteration",
        /// An instant.
        Mark = "mark",
    }
}

words! {
    /// The `op` of a `process` line.
    ProcessOp {
        Fork = "fork",
        Exec = "exec",
        Exit = "exit",
        ThreadExit = "thread_exit",
    }
}

words! {
    /// A stack frame's `kind` (`stack` lines).
    FrameKind {
        /// A return address in a mapped file.
        Native = "native",
        /// A CPython frame.
        Python = "python",
        /// An address in anonymous executable memory.
        Jit = "jit",
        /// An address in no mapping, or a frame that could not be read.
        Unknown = "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant's word parses back to it, and `ALL` lists each once.
    fn round_trips<T: Copy + PartialEq + std::fmt::Debug>(
        all: &[T],
        parse: fn(&str) -> Option<T>,
        word: fn(T) -> &'static str,
    ) {
        for &v in all {
            assert_eq!(parse(word(v)), Some(v), "{}", word(v));
        }
        let mut words: Vec<&str> = all.iter().map(|&v| word(v)).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), all.len());
        assert_eq!(parse("no such word"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn every_word_round_trips() {
        round_trips(LineType::ALL, LineType::parse, LineType::as_str);
        round_trips(CallOp::ALL, CallOp::parse, CallOp::as_str);
        round_trips(CopyDir::ALL, CopyDir::parse, CopyDir::as_str);
        round_trips(GpuActivity::ALL, GpuActivity::parse, GpuActivity::as_str);
        round_trips(MarkerOp::ALL, MarkerOp::parse, MarkerOp::as_str);
        round_trips(ProcessOp::ALL, ProcessOp::parse, ProcessOp::as_str);
    }

    #[test]
    fn the_call_types_are_the_documented_twelve() {
        let calls: Vec<&str> = LineType::ALL.iter().filter(|t| t.is_call()).map(|t| t.as_str()).collect();
        let twelve = [
            "init", "device", "context", "module", "kernel", "graph", "memory", "memcpy", "memset", "sync", "stream",
            "event",
        ];
        assert_eq!(calls, twelve);
        let others: Vec<&str> = LineType::ALL.iter().filter(|t| !t.is_call()).map(|t| t.as_str()).collect();
        let records = [
            "header",
            "footer",
            "process",
            "sched",
            "ioctl",
            "nvidia_fd",
            "marker",
            "power",
            "gpu",
            "gpu_window",
            "copy_data",
            "count",
            "kernel_count",
            "stack",
            "sample",
            "durations",
        ];
        assert_eq!(others, records);
    }

    /// The words docs/trace-format.md gives for each field are the
    /// vocabulary's, in its order.
    #[test]
    fn words_match_the_format_reference() {
        let doc = include_str!("../../../docs/trace-format.md");
        let row = |field: &str| -> &str {
            doc.lines().find(|l| l.starts_with(&format!("| `{field}` |"))).unwrap_or_else(|| panic!("no `{field}` row"))
        };
        let quoted = |text: &str| -> Vec<String> { text.split('`').skip(1).step_by(2).map(str::to_owned).collect() };
        // | `type` | string | `init`, ..., `event`, `process` |
        let mut words: Vec<&str> = LineType::ALL.iter().filter(|t| t.is_call()).map(|t| t.as_str()).collect();
        words.insert(0, "type");
        words.push("process");
        assert_eq!(quoted(row("type")), words);
        // | `direction` | memcpy | `h2d`, ..., or `default` when ... |
        let dirs = row("direction").split(" when").next().unwrap();
        let mut words: Vec<&str> = CopyDir::ALL.iter().map(|d| d.as_str()).collect();
        words.insert(0, "direction");
        assert_eq!(quoted(dirs), words);
        // `type: "gpu"`, `op`: `kernel`, `memcpy` or `memset`, `source: ...
        let gpu = doc.lines().find(|l| l.starts_with("`type: \"gpu\"`, `op`: ")).expect("the gpu lines' op");
        let gpu = gpu.split(", `source").next().unwrap();
        let mut words: Vec<&str> = GpuActivity::ALL.iter().map(|o| o.as_str()).collect();
        words.splice(0..0, ["type: \"gpu\"", "op"]);
        assert_eq!(quoted(gpu), words);
        // | `op` | string | `launch`, `alloc`, `free`, `copy`, `set`, ... (`stream_synchronize`,
        // `library_load_data`, …), or for processes `fork`/`exec`/`exit`/`thread_exit` |
        let ops = quoted(row("op"));
        let calls: Vec<Option<CallOp>> = ops[1..8].iter().map(|o| CallOp::parse(o)).collect();
        use CallOp::*;
        assert_eq!(
            calls,
            [Some(Launch), Some(Alloc), Some(Free), Some(Copy), Some(Set), Some(StreamSynchronize), None]
        );
        let procs: Vec<Option<ProcessOp>> = ops[8..].iter().map(|o| ProcessOp::parse(o)).collect();
        assert_eq!(procs, ProcessOp::ALL.iter().copied().map(Some).collect::<Vec<_>>());
        // | `op` | `phase`: a phase ... `iteration`: one iteration ... `mark`: an instant. |
        let marker = doc.lines().find(|l| l.starts_with("| `op` | `phase`")).expect("the marker lines' op");
        for op in MarkerOp::ALL {
            assert!(marker.contains(&format!("`{}`: ", op.as_str())), "{op:?}");
        }
        // every other line type has an example line or a `type: "…"`
        // (ioctl and nvidia_fd lines are the kprobe build's; copy_data
        // lines are in docs/recording-format.md)
        for ty in LineType::ALL.iter().filter(|t| !t.is_call()) {
            let shown = doc.contains(&format!("\"type\":\"{}\"", ty.as_str()))
                || doc.contains(&format!("type: \"{}\"", ty.as_str()));
            let elsewhere = matches!(ty, LineType::Ioctl | LineType::NvidiaFd | LineType::CopyData);
            assert!(shown != elsewhere, "{ty:?}");
        }
    }
}
