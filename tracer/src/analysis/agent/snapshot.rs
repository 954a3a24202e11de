//! The agent's state as metric families (docs/agent.md lists them). Every
//! per-process sample carries `pid`, `command`, `cgroup` and `gpu` (the
//! device ordinal when the trace lines carry one, else empty); label values
//! come from finite sets (function names, CUresult names, copy directions,
//! kernel families), kernel names only with the opt-in top-N.
use super::busy::GAP_BUCKETS_S;
use super::metric::{Family, Histogram, Kind};
use super::{AgentMetrics, Process};

type Labels = Vec<(&'static str, String)>;

fn proc_labels(pid: u32, p: &Process, gpu: &str, sampled: bool) -> Labels {
    let mut l = vec![
        ("pid", pid.to_string()),
        ("command", p.command.clone().unwrap_or_default()),
        ("cgroup", p.cgroup.clone().unwrap_or_default()),
        ("gpu", gpu.to_string()),
    ];
    if sampled {
        l.push(("sampled", "true".to_string()));
    }
    l
}

fn with(mut l: Labels, k: &'static str, v: &str) -> Labels {
    l.push((k, v.to_string()));
    l
}

/// Sorted (name, value) pairs of a map with string keys, for stable output.
fn sorted<V: Copy>(m: &std::collections::HashMap<Box<str>, V>) -> Vec<(&str, V)> {
    let mut v: Vec<(&str, V)> = m.iter().map(|(k, &c)| (&**k, c)).collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// Every family, in a fixed order; `now_s` is not used for values (all
/// counters come from the lines), only health gauges are read here.
pub fn families(m: &AgentMetrics) -> Vec<Family> {
    use Kind::{Counter, Gauge};
    let mut calls = Family::new("tracer_driver_calls", Counter, "CUDA driver calls, by function (api).");
    let mut launches = Family::new("tracer_kernel_launches", Counter, "Kernel launches, by launch function (api).");
    let mut kernels =
        Family::new("tracer_kernels", Counter, "Kernels launched successfully, by family (name substrings).");
    let mut by_name = Family::new(
        "tracer_kernel_launches_by_name",
        Counter,
        "Launches of the most launched kernels (opt-in --top-kernels N), by mangled name.",
    );
    let mut copies = Family::new("tracer_copies", Counter, "Memory copies, by direction.");
    let mut copy_bytes = Family::new("tracer_copy_bytes", Counter, "Bytes copied, by direction.");
    let mut allocs = Family::new("tracer_allocations", Counter, "Device memory allocations.");
    let mut alloc_bytes = Family::new("tracer_allocated_bytes", Counter, "Bytes allocated.");
    let mut frees = Family::new("tracer_frees", Counter, "Device memory frees.");
    let mut live =
        Family::new("tracer_allocated_bytes_live", Gauge, "Bytes allocated and not freed (tracked allocations).");
    let mut untracked = Family::new(
        "tracer_allocations_untracked",
        Counter,
        "Allocations whose size is not in tracer_allocated_bytes_live (null pointer, or over the cap).",
    );
    let mut syncs = Family::new("tracer_synchronizations", Counter, "Stream, context and event synchronizations.");
    let mut sync_s = Family::new("tracer_synchronization_seconds", Counter, "Time spent in synchronizations.");
    let mut errors =
        Family::new("tracer_cuda_errors", Counter, "Driver calls that returned an error, by CUresult name.");
    let mut busy = Family::new(
        "tracer_gpu_busy_seconds",
        Counter,
        "GPU busy time: measured (CUPTI) where tracer_gpu_busy_basis{basis=\"measured\"}; inferred from the \
         machine's durations library where basis=\"calibrated\"; else possibly busy time (bound timeline: from a \
         launch/copy to the call that proves it complete, or to the latest instant seen; an upper bound).",
    );
    let mut idle = Family::new(
        "tracer_gpu_idle_seconds",
        Counter,
        "GPU idle time between busy stretches: measured (CUPTI) where tracer_gpu_busy_basis{basis=\"measured\"}, \
         inferred from the durations library where basis=\"calibrated\", else certain idle time (bound timeline: a \
         lower bound).",
    );
    let mut basis = Family::new(
        "tracer_gpu_busy_basis",
        Gauge,
        "What tracer_gpu_busy_seconds and tracer_gpu_idle_seconds rest on (1 for the basis): measured (CUPTI), \
         calibrated (the launches placed on their streams with the durations library's kernel durations, 9 in 10 \
         of them timed from it), or lower_bound (busy an upper bound, idle a lower bound).",
    );
    let mut gaps = Family::new("tracer_gpu_idle_gap_seconds", Kind::Histogram, "Idle gaps between busy stretches.");
    let mut off_cpu = Family::new(
        "tracer_off_cpu_seconds",
        Counter,
        "Time the process's traced threads spent off their CPU (summed over threads), by cause: blocked_<system \
         call>, blocked_other, page_fault, runnable (waiting for a CPU), unknown (a switch event was lost); counted \
         when the thread is back on a CPU.",
    );
    for (&pid, p) in &m.processes {
        // The process's, not a GPU's; whole under --duty-cycle (the
        // scheduler tracepoints stay attached): no `gpu`, no `sampled`.
        let mut l = proc_labels(pid, p, "", false);
        l.retain(|x| x.0 != "gpu");
        for (cause, s) in p.off_cpu.seconds() {
            off_cpu.push(with(l.clone(), "cause", cause), s);
        }
        for (gpu, c) in &p.gpus {
            let l = proc_labels(pid, p, gpu, m.sampling.is_some());
            for (api, n) in sorted(&c.calls) {
                calls.push(with(l.clone(), "api", api), n as f64);
            }
            for (api, n) in sorted(&c.launches) {
                launches.push(with(l.clone(), "api", api), n as f64);
            }
            for (i, fam) in tracer_common::family::FAMILIES.iter().enumerate() {
                if c.kernels_by_family[i] > 0 {
                    kernels.push(with(l.clone(), "family", fam), c.kernels_by_family[i] as f64);
                }
            }
            for (k, n) in c.top_kernels(m.opts.top_kernels) {
                by_name.push(with(l.clone(), "kernel", k), n as f64);
            }
            for (dir, (n, b)) in sorted(&c.copies) {
                copies.push(with(l.clone(), "direction", dir), n as f64);
                copy_bytes.push(with(l.clone(), "direction", dir), b as f64);
            }
            allocs.push(l.clone(), c.allocations as f64);
            alloc_bytes.push(l.clone(), c.allocated_bytes as f64);
            frees.push(l.clone(), c.frees as f64);
            live.push(l.clone(), c.live_bytes as f64);
            untracked.push(l.clone(), c.untracked_allocations as f64);
            syncs.push(l.clone(), c.syncs as f64);
            sync_s.push(l.clone(), c.sync_ns as f64 / 1e9);
            for (e, n) in sorted(&c.errors) {
                errors.push(with(l.clone(), "error", e), n as f64);
            }
            let (b, i, g, on) = c.busy_idle();
            busy.push(l.clone(), b as f64 / 1e9);
            idle.push(l.clone(), i as f64 / 1e9);
            basis.push(with(l.clone(), "basis", on.as_str()), 1.0);
            gaps.push_histogram(l, gap_histogram(g, i));
        }
    }
    let mut v = vec![
        calls,
        launches,
        kernels,
        by_name,
        copies,
        copy_bytes,
        allocs,
        alloc_bytes,
        frees,
        live,
        untracked,
        syncs,
        sync_s,
        errors,
        busy,
        idle,
        basis,
        gaps,
        off_cpu,
    ];
    v.extend(power(m));
    v.extend(health(m));
    v.extend(sampling(m));
    v
}

/// `--duty-cycle`: the estimated rates of the last window and the state of
/// the sampling (nothing without it).
fn sampling(m: &AgentMetrics) -> Vec<Family> {
    use Kind::{Counter, Gauge};
    let Some(s) = &m.sampling else { return vec![] };
    let mut calls = Family::new(
        "tracer_driver_call_rate",
        Gauge,
        "Driver calls per second in the last sampling window (--duty-cycle): the estimated rate, by function (api).",
    );
    let mut launches = Family::new(
        "tracer_kernel_launch_rate",
        Gauge,
        "Kernel launches per second in the last sampling window (--duty-cycle): the estimated rate, by launch function (api).",
    );
    for ((pid, gpu), (c, l)) in &s.rates {
        let Some(p) = m.processes.get(pid) else { continue };
        let labels = proc_labels(*pid, p, gpu, true);
        for (api, r) in c {
            calls.push(with(labels.clone(), "api", api), *r);
        }
        for (api, r) in l {
            launches.push(with(labels.clone(), "api", api), *r);
        }
    }
    let one = |name, kind, help, v: f64| {
        let mut f = Family::new(name, kind, help);
        f.push(vec![], v);
        f
    };
    vec![
        calls,
        launches,
        one(
            "tracer_duty_cycle_ratio",
            Gauge,
            "Share of the time the probes are attached (--duty-cycle ON/PERIOD): the counters see this share of the calls.",
            s.ratio,
        ),
        one(
            "tracer_probes_attached",
            Gauge,
            "1 while the probes are attached (a sampling window).",
            s.attached as u8 as f64,
        ),
        one(
            "tracer_probes_attached_seconds",
            Counter,
            "Seconds the probes were attached, windows that ended.",
            s.attached_s,
        ),
        one("tracer_sampling_windows", Counter, "Sampling windows that ended.", s.windows as f64),
    ]
}

fn gap_histogram(counts: [u64; 8], idle_ns: u64) -> Histogram {
    let mut cum = 0;
    let mut buckets = Vec::with_capacity(GAP_BUCKETS_S.len() + 1);
    for (i, &n) in counts.iter().enumerate() {
        cum += n;
        buckets.push((GAP_BUCKETS_S.get(i).copied().unwrap_or(f64::INFINITY), cum));
    }
    Histogram { buckets, sum: idle_ns as f64 / 1e9, count: cum }
}

fn power(m: &AgentMetrics) -> Vec<Family> {
    let mut energy = Family::new(
        "tracer_gpu_energy_joules",
        Kind::Counter,
        "NVML energy counter of the GPU (since the driver loaded).",
    );
    let mut watts = Family::new("tracer_gpu_power_watts", Kind::Gauge, "NVML power draw at the last sample.");
    for (&gpu, p) in &m.power {
        let l = vec![("gpu", gpu.to_string()), ("bus_id", p.bus_id.clone())];
        if let Some(e) = p.energy_j {
            energy.push(l.clone(), e);
        }
        if let Some(w) = p.power_w {
            watts.push(l, w);
        }
    }
    vec![energy, watts]
}

fn health(m: &AgentMetrics) -> Vec<Family> {
    use Kind::{Counter, Gauge};
    let h = &m.health;
    let one = |name, kind, help, v: f64| {
        let mut f = Family::new(name, kind, help);
        f.push(vec![], v);
        f
    };
    let mut power = Family::new(
        "tracer_power_available",
        Gauge,
        "1 when NVML answers; 0 with the reason when it does not (no NVML on this machine, or it failed).",
    );
    power.push(
        vec![("reason", h.power_unavailable.clone().unwrap_or_default())],
        h.power_unavailable.is_none() as u8 as f64,
    );
    let mut paused = Family::new(
        "tracer_recording_paused",
        Gauge,
        "1 while duty-cycled recording is paused, with the reason (disk_full, write_error, size_cap); 0 otherwise.",
    );
    paused.push(
        vec![("reason", h.recording_paused.unwrap_or("").to_string())],
        h.recording_paused.is_some() as u8 as f64,
    );
    let mut libcuda_files = Family::new(
        "tracer_libcuda_file_probed_functions",
        Gauge,
        "Functions probed in each libcuda file (distinct inode; path as the process that led to it saw it).",
    );
    for (path, inode, n) in &h.libcuda_files {
        libcuda_files.push(vec![("path", path.clone()), ("inode", inode.to_string())], *n as f64);
    }
    // One series per driver function actually called (libcuda 580 has ~430 such functions).
    let mut undecoded = Family::new(
        "tracer_undecoded_driver_calls",
        Counter,
        "Calls of exported driver functions outside tracer's table, counted but not decoded (all traced processes; docs/capture.md).",
    );
    for (function, n) in &h.undecoded_calls {
        undecoded.push(vec![("function", function.clone())], *n as f64);
    }
    vec![
        one(
            "tracer_lost_records",
            Counter,
            "Records the probes numbered that never reached the agent (ring buffer full, undecodable).",
            h.lost_records as f64,
        ),
        one(
            "tracer_ring_buffer_full",
            Counter,
            "Records dropped because the ring buffer was full.",
            h.ring_buffer_full as f64,
        ),
        one("tracer_processes_seen", Counter, "Traced processes that made driver calls.", h.processes_seen as f64),
        one(
            "tracer_processes_dropped",
            Counter,
            "Processes whose series were dropped after they exited (grace period).",
            h.processes_dropped as f64,
        ),
        one(
            "tracer_processes_not_kept",
            Counter,
            "Processes not given series because the process cap was reached.",
            h.processes_not_kept as f64,
        ),
        one(
            "tracer_processes",
            Gauge,
            "Processes with series now (live and in their grace period).",
            m.processes.len() as f64,
        ),
        power,
        libcuda_files,
        undecoded,
        one(
            "tracer_libcuda_files_not_probed",
            Counter,
            "Times a libcuda file a selected process mapped or opened was not probed (failed, or past --max-libcuda-files): its calls are not seen.",
            h.libcuda_files_not_probed as f64,
        ),
        one(
            "tracer_libcuda_opens",
            Counter,
            "Opens of libcuda.so* files by selected processes (each stopped until its file was probed).",
            h.libcuda_opens as f64,
        ),
        one("tracer_recordings", Counter, "Duty-cycled trace files written.", h.recordings as f64),
        one("tracer_recorded_bytes", Counter, "Bytes of duty-cycled trace files written.", h.recorded_bytes as f64),
        paused,
        one(
            "tracer_http_connections_refused",
            Counter,
            "HTTP connections closed at accept: --web.max-connections were open, all being answered.",
            h.http_refused as f64,
        ),
        one(
            "tracer_http_connections_evicted",
            Counter,
            "HTTP connections closed to make room for a new one (the oldest not being answered, at --web.max-connections).",
            h.http_evicted as f64,
        ),
        one(
            "tracer_http_connections_timed_out",
            Counter,
            "HTTP connections closed by a timeout (request head not whole in time, no byte moved, TLS handshake).",
            h.http_timed_out as f64,
        ),
        one(
            "tracer_http_unauthorized",
            Counter,
            "HTTP requests answered 401 (basic auth of --web.config.file).",
            h.http_unauthorized as f64,
        ),
        one("tracer_agent_resident_bytes", Gauge, "Resident memory of the agent.", h.rss_bytes as f64),
        one("tracer_agent_cpu_seconds", Counter, "CPU time of the agent (user + system).", h.cpu_seconds),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::agent::Options;

    #[test]
    fn a_launch_gives_its_process_series() {
        let mut m = AgentMetrics::new(Options { top_kernels: 1, ..Default::default() });
        m.opts.caps.kernel_names = 10;
        let l = r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"flash_fwd","pid":9,"ts":1}"#;
        m.add_value(&serde_json::from_str(l).unwrap(), 0);
        m.set_info(9, Some("python3".into()), Some("/system.slice/x.service".into()), false);
        let f = families(&m);
        let get = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        let s = &get("tracer_kernel_launches").samples;
        assert_eq!(s.len(), 1);
        assert_eq!(
            s[0].labels,
            vec![
                ("pid", "9".to_string()),
                ("command", "python3".into()),
                ("cgroup", "/system.slice/x.service".into()),
                ("gpu", "".into()),
                ("api", "cuLaunchKernel".into())
            ]
        );
        assert_eq!(s[0].value, super::super::metric::Value::Number(1.0));
        assert_eq!(get("tracer_kernels").samples[0].labels[4], ("family", "attention".to_string()));
        assert_eq!(get("tracer_kernel_launches_by_name").samples[0].labels[4], ("kernel", "flash_fwd".to_string()));
        let gaps = &get("tracer_gpu_idle_gap_seconds").samples[0].value;
        match gaps {
            super::super::metric::Value::Histogram(h) => {
                assert_eq!(h.buckets.len(), 8);
                assert_eq!(h.buckets[7], (f64::INFINITY, 0));
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn each_probed_libcuda_file_is_a_sample() {
        let mut m = AgentMetrics::new(Options::default());
        m.health.libcuda_files = vec![("/usr/lib/libcuda.so.1".into(), 12, 40), ("/tmp/c/libcuda.so.1".into(), 99, 38)];
        m.health.libcuda_files_not_probed = 3;
        m.health.libcuda_opens = 5;
        m.health.undecoded_calls =
            [("cuOccupancyMaxActiveClusters".to_string(), 30), ("cuStreamGetId".to_string(), 7)].into();
        let f = families(&m);
        let get = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        let u = &get("tracer_undecoded_driver_calls").samples;
        assert_eq!(u.len(), 2);
        assert_eq!(u[1].labels, vec![("function", "cuStreamGetId".to_string())]);
        assert_eq!(u[1].value, super::super::metric::Value::Number(7.0));
        let s = &get("tracer_libcuda_file_probed_functions").samples;
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].labels, vec![("path", "/tmp/c/libcuda.so.1".to_string()), ("inode", "99".to_string())]);
        assert_eq!(s[1].value, super::super::metric::Value::Number(38.0));
        assert_eq!(get("tracer_libcuda_files_not_probed").samples[0].value, super::super::metric::Value::Number(3.0));
        assert_eq!(get("tracer_libcuda_opens").samples[0].value, super::super::metric::Value::Number(5.0));
    }
}
