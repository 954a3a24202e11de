//! The trace footer: counts, exact loss per CPU, exit status, the
//! collector's own cost.
use std::time::Duration;

use serde_json::{Value, json};

use crate::collect::collector::Collector;
use crate::collect::loader::KernelCounters;
use crate::collect::spawn;

/// Exact loss per CPU: records the kernel side numbered minus records received.
pub fn loss_by_cpu(
    attempted: &[u64],
    received: &std::collections::BTreeMap<u32, u64>,
) -> std::collections::BTreeMap<u32, u64> {
    let mut m = std::collections::BTreeMap::new();
    for (cpu, &a) in attempted.iter().enumerate() {
        let got = received.get(&(cpu as u32)).copied().unwrap_or(0);
        if a > got {
            m.insert(cpu as u32, a - got);
        }
    }
    m
}

pub fn footer(col: &Collector, k: &KernelCounters, exit: Option<&spawn::ExitInfo>, elapsed: Duration) -> Value {
    let st = &col.asm.stats;
    let received: u64 = st.records_by_cpu.values().sum();
    let lost = loss_by_cpu(&k.attempted, &st.records_by_cpu);
    let lost_total: u64 = lost.values().sum();
    let mut by_type = serde_json::Map::new();
    for (name, f) in &col.summary.funcs {
        by_type.insert(name.clone(), json!(f.calls));
    }
    json!({
        "type": "footer",
        "calls": st.calls,
        "calls_by_function": by_type,
        "incomplete_calls": st.incomplete,
        "entry_lost_calls": st.entry_lost,
        "records_after_detach": st.after_detach,
        "records": received,
        "records_attempted": k.attempted.iter().sum::<u64>(),
        "lost": {
            "total": lost_total,
            "ring_buffer_full": k.ring_full,
            "out_param_saves_failed": k.save_failed,
            "undecodable": st.bad_records,
            "by_cpu": lost,
        },
        "lines_not_written": col.writer.dropped,
        // Scheduler records (switches and wake-ups of the traced threads, and
        // while a preempted one waits, of its CPU) become off-CPU intervals,
        // not one line each: how many there were, and what they gave.
        "sched": {
            "records": col.asm.sched.records,
            "off_cpu_lines": col.asm.sched.off_cpu_lines,
            "unknown_lines": col.asm.sched.unknown_lines,
            "lost_windows": col.asm.sched.lost_windows,
            // the traced threads' runnable time while the recorder's own threads held
            // their CPU, ns by the recorder's thread name (its cost in CPU time taken)
            "held_by_recorder": col.asm.sched.held_by_recorder,
        },
        // Stack records (they become `stack` lines, one per distinct stack,
        // and `stack` fields): received, attached, orphans, what resolved.
        "stacks": col.asm.stacks.stats.json(&col.asm.stacks.resolver_errors()),
        // --counts: launches counted per function whose kernel found no
        // room in the per-kernel map (0 otherwise).
        "kernel_counts_without_room": k.kernel_counts_full,
        "duration_s": elapsed.as_secs_f64(),
        "exit": exit.map(|e| json!({ "code": e.code, "signal": e.signal })),
        "collector": collector_usage(col.cpu_before_command),
        "bpf_stats": bpf_stats(&k.programs),
    })
}

/// Per-program cost measured by the kernel (with --bpf-stats; null without).
pub fn bpf_stats(p: &std::collections::BTreeMap<String, crate::collect::uprobe_multi::ProgStats>) -> Value {
    if p.is_empty() {
        return Value::Null;
    }
    let m: serde_json::Map<String, Value> = p
        .iter()
        .map(|(name, s)| {
            (
                name.clone(),
                json!({
                    "runs": s.run_cnt,
                    "run_time_ns": s.run_time_ns,
                    "ns_per_run": s.run_time_ns as f64 / s.run_cnt as f64,
                    "verified_insns": s.verified_insns,
                }),
            )
        })
        .collect();
    Value::Object(m)
}

/// tracer's own CPU time so far (user, system; s).
pub fn cpu_times() -> Option<(f64, f64)> {
    // SAFETY: getrusage writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((secs(ru.ru_utime), secs(ru.ru_stime)))
}

/// CPU time and peak memory of tracer itself (the collector), for the
/// footer: what tracing cost besides the probes in the traced threads;
/// with `before_command` (the CPU time when the command was let go), the part
/// of it spent before the program ran (loading and verifying the programs).
pub fn collector_usage(before_command: Option<(f64, f64)>) -> Value {
    let Some((user, system)) = cpu_times() else { return Value::Null };
    // VmHWM, not ru_maxrss: the latter survives execve, so it would report
    // the peak of whatever process started tracer.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    let mut v = json!({
        "cpu_user_s": user,
        "cpu_system_s": system,
        "max_rss_kib": kib("VmHWM:"),
        "rss_anon_kib": kib("RssAnon:"),
        // the scheduling policy of each of the recorder's threads (collect/own_sched.rs)
        "sched": crate::collect::own_sched::summary(),
    });
    if let Some((u, s)) = before_command {
        v["before_command"] = json!({ "cpu_user_s": u, "cpu_system_s": s });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_exact_per_cpu() {
        let received = [(0u32, 10u64), (1, 5)].into_iter().collect();
        let lost = loss_by_cpu(&[10, 8, 2], &received);
        assert_eq!(lost.into_iter().collect::<Vec<_>>(), vec![(1, 3), (2, 2)]);
    }
}
