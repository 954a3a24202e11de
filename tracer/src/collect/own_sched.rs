//! The recorder's own threads give way to the traced program on a CPU.
//!
//! A sleeping thread that wakes has little virtual runtime used, so the
//! scheduler lets it preempt the thread running on the CPU it wakes on: when
//! that is a traced thread, the recorder takes CPU time from the program it
//! measures (the `sched` lines' `held_by`: in a training recording on the
//! H200 the power sampler held a traced thread's CPU for 59 ms, the
//! collector for 54 ms). So, after the command is spawned:
//! - the collector's thread (and the marker and Python layout readers) run
//!   under `SCHED_BATCH`: a fair share of the CPU as before, but a wake-up
//!   does not preempt the running task; they wait for the tick or move to an
//!   idle CPU;
//! - the power sampler runs under `SCHED_IDLE`: it runs on CPUs nothing else
//!   wants (its reads are timed by their own clock; a late tick is counted
//!   as missed).
//!
//! Both policies are inherited by the threads and processes a thread starts
//! (`SCHED_RESET_ON_FORK` resets only real-time policies): the command is
//! spawned before, and its child sets the normal policy before it execs
//! anyway (collect/spawn.rs). `TRACER_RECORDER_SCHED=normal` leaves every
//! thread under the normal policy (for comparisons). What was done is the
//! footer's `collector.sched` ([`summary`]). The cost that remains (CPU time
//! the recorder still takes from a traced thread) is the footer's
//! `sched.held_by_recorder`, and compensated pacing takes it out of the gaps.
use std::sync::Mutex;

/// The environment variable that turns the policies off (`normal`).
pub const ENV: &str = "TRACER_RECORDER_SCHED";

/// What a thread of the recorder does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Keeps up with the traced program (the collector, the marker and layout readers): SCHED_BATCH.
    Keeps,
    /// Background sampling (the power sampler): SCHED_IDLE.
    Background,
}

impl Role {
    fn policy(self) -> (libc::c_int, &'static str) {
        match self {
            Role::Keeps => (libc::SCHED_BATCH, "batch"),
            Role::Background => (libc::SCHED_IDLE, "idle"),
        }
    }
}

/// The threads set so far: (thread name, policy or the error).
static APPLIED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Whether the policies are on (`TRACER_RECORDER_SCHED` is not `normal`).
pub fn enabled() -> bool {
    std::env::var(ENV).map_or(true, |v| v.trim() != "normal")
}

/// Sets the calling thread's policy for `role` (nothing with `TRACER_RECORDER_SCHED=normal`).
/// A refusal is kept for the footer, never fatal: the thread runs as before.
pub fn apply(role: Role) {
    if !enabled() {
        return;
    }
    let (policy, name) = role.policy();
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; a valid sched_param.
    let r = unsafe { libc::sched_setscheduler(0, policy, &param) };
    let what = match r {
        0 => name.to_string(),
        _ => format!("{name} refused: {}", std::io::Error::last_os_error()),
    };
    // the kernel's name of the thread (the `comm` of `held_by`)
    let thread = std::fs::read_to_string("/proc/thread-self/comm")
        .map_or_else(|_| std::thread::current().name().unwrap_or("tracer").to_string(), |c| c.trim_end().to_string());
    let mut a = APPLIED.lock().unwrap_or_else(|e| e.into_inner());
    if !a.iter().any(|(t, _)| *t == thread) {
        a.push((thread, what));
    }
}

/// The footer's `collector.sched`: each thread's policy, or `"normal"` when turned off.
pub fn summary() -> serde_json::Value {
    if !enabled() {
        return serde_json::json!(format!("normal ({ENV}=normal)"));
    }
    let a = APPLIED.lock().unwrap_or_else(|e| e.into_inner());
    serde_json::Value::Object(a.iter().map(|(t, p)| (t.clone(), serde_json::json!(p))).collect())
}

/// The policy of the calling thread.
#[cfg(test)]
fn current_policy() -> libc::c_int {
    // SAFETY: pid 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each role's policy on the thread itself (inherited by the threads it starts); the summary names it.
    #[test]
    fn roles_set_their_policy_which_the_threads_they_start_inherit() {
        let t = std::thread::Builder::new()
            .name("own-sched-test".into())
            .spawn(|| {
                apply(Role::Keeps);
                let batch = current_policy();
                let child = std::thread::spawn(current_policy).join().unwrap();
                apply(Role::Background);
                (batch, child, current_policy())
            })
            .unwrap();
        let (batch, child, idle) = t.join().unwrap();
        assert_eq!((batch, child, idle), (libc::SCHED_BATCH, libc::SCHED_BATCH, libc::SCHED_IDLE));
        // the first policy a thread got is the one listed
        assert_eq!(summary()["own-sched-test"], "batch");
    }
}
