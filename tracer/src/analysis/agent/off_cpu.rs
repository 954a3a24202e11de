//! `tracer_off_cpu_seconds_total{cause}`: the time a process's traced
//! threads spent off their CPU (the `sched` off_cpu lines), by a bounded set
//! of causes: `blocked_<call>` for the common blocking system calls
//! ([`BLOCKED`], variants of one call folded: `recvfrom`, `recvmsg` →
//! `blocked_recv`), `blocked_other` for any other call or one not read,
//! `page_fault`, `runnable` (waiting for a CPU: preempted, or woken and not
//! yet running) and `unknown` (a switch event was lost). A blocked
//! interval's time is split at its wake-up: until then its call's cause,
//! after it `runnable`. Counted when the interval ends (the thread is back
//! on a CPU), summed over the process's threads.
use serde_json::Value;

/// System call → its cause label (every label a `&'static str`: the
/// series of one process are at most `CAUSES.len()`).
pub const BLOCKED: &[(&str, &str)] = &[
    ("futex", "blocked_futex"),
    ("futex_waitv", "blocked_futex"),
    ("read", "blocked_read"),
    ("readv", "blocked_read"),
    ("pread64", "blocked_read"),
    ("preadv", "blocked_read"),
    ("preadv2", "blocked_read"),
    ("write", "blocked_write"),
    ("writev", "blocked_write"),
    ("pwrite64", "blocked_write"),
    ("pwritev", "blocked_write"),
    ("pwritev2", "blocked_write"),
    ("recvfrom", "blocked_recv"),
    ("recvmsg", "blocked_recv"),
    ("recvmmsg", "blocked_recv"),
    ("sendto", "blocked_send"),
    ("sendmsg", "blocked_send"),
    ("sendmmsg", "blocked_send"),
    ("accept", "blocked_accept"),
    ("accept4", "blocked_accept"),
    ("connect", "blocked_connect"),
    ("epoll_wait", "blocked_epoll_wait"),
    ("epoll_pwait", "blocked_epoll_wait"),
    ("epoll_pwait2", "blocked_epoll_wait"),
    ("poll", "blocked_poll"),
    ("ppoll", "blocked_poll"),
    ("select", "blocked_select"),
    ("pselect6", "blocked_select"),
    ("nanosleep", "blocked_nanosleep"),
    ("clock_nanosleep", "blocked_clock_nanosleep"),
    ("ioctl", "blocked_ioctl"),
    ("sched_yield", "blocked_sched_yield"),
    ("open", "blocked_open"),
    ("openat", "blocked_open"),
    ("wait4", "blocked_wait"),
    ("waitid", "blocked_wait"),
    ("fsync", "blocked_fsync"),
    ("fdatasync", "blocked_fsync"),
    ("mmap", "blocked_mmap"),
    ("munmap", "blocked_mmap"),
    ("io_uring_enter", "blocked_io_uring_enter"),
];

/// Every cause label, in the order /metrics lists them.
pub const CAUSES: &[&str] = &[
    "blocked_futex",
    "blocked_read",
    "blocked_write",
    "blocked_recv",
    "blocked_send",
    "blocked_accept",
    "blocked_connect",
    "blocked_epoll_wait",
    "blocked_poll",
    "blocked_select",
    "blocked_nanosleep",
    "blocked_clock_nanosleep",
    "blocked_ioctl",
    "blocked_sched_yield",
    "blocked_open",
    "blocked_wait",
    "blocked_fsync",
    "blocked_mmap",
    "blocked_io_uring_enter",
    "blocked_other",
    "page_fault",
    "runnable",
    "unknown",
];

/// Nanoseconds off CPU per cause (index into [`CAUSES`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OffCpu {
    pub ns: [u64; CAUSES.len()],
}

fn index(label: &str) -> usize {
    CAUSES.iter().position(|&c| c == label).expect("a label of CAUSES")
}

/// The cause label of a blocked interval's call (`name` of the line).
pub fn blocked_cause(call: &str) -> &'static str {
    match call {
        "page_fault" => "page_fault",
        _ => BLOCKED.iter().find(|(s, _)| *s == call).map_or("blocked_other", |(_, l)| l),
    }
}

impl OffCpu {
    /// One `sched` `off_cpu` line (other ops count nothing).
    pub fn add(&mut self, v: &Value) {
        if v["op"] != "off_cpu" {
            return;
        }
        let n = |k: &str| v[k].as_u64();
        let (Some(start), Some(end)) = (n("ts"), n("end_ts")) else { return };
        let total = end.saturating_sub(start);
        match v["state"].as_str() {
            Some("blocked") => {
                // Runnable from the wake-up; an open interval's is not known (all blocked).
                let runnable = n("runnable_ns").unwrap_or(0).min(total);
                self.ns[index(blocked_cause(v["name"].as_str().unwrap_or("")))] += total - runnable;
                self.ns[index("runnable")] += runnable;
            }
            Some("runnable") => self.ns[index("runnable")] += total,
            _ => self.ns[index("unknown")] += total,
        }
    }

    /// (cause, seconds) of the causes with time.
    pub fn seconds(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        CAUSES.iter().zip(self.ns).filter(|(_, ns)| *ns > 0).map(|(&c, ns)| (c, ns as f64 / 1e9))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_is_a_cause_and_bounded() {
        for (_, l) in BLOCKED {
            assert!(CAUSES.contains(l), "{l}");
        }
        assert_eq!(CAUSES.len(), 23);
        assert_eq!(blocked_cause("recvmsg"), "blocked_recv");
        assert_eq!(blocked_cause("clock_nanosleep"), "blocked_clock_nanosleep");
        assert_eq!(blocked_cause("membarrier"), "blocked_other");
        assert_eq!(blocked_cause("blocked"), "blocked_other");
        assert_eq!(blocked_cause("syscall_999"), "blocked_other");
        assert_eq!(blocked_cause("page_fault"), "page_fault");
    }
}
