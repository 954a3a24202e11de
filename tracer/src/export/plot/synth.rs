//! Synthetic figure inputs of any size, for tests and the render-time
//! measurement (deterministic: a fixed linear congruential generator).
use super::bins::idle_gaps;
use super::input::*;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// About `events` slices in all: one launching thread (launches every 10 µs,
/// a synchronize every 50), `threads - 1` quieter threads, two GPU streams
/// (one measured, one inferred), three phases, iteration marks, 10 ms power
/// samples. Returns the timeline and its GPU idle gaps.
pub fn timeline(events: usize, threads: usize) -> (Timeline, Gaps) {
    let mut r = Lcg(42);
    let t0 = 1_000_000_000u64;
    let per_thread_main = events * 4 / 10;
    let per_gpu = events * 4 / 10;
    let rest = events - per_thread_main - per_gpu;
    let mut main = Vec::with_capacity(per_thread_main);
    let mut t = t0 + 50_000;
    for i in 0..per_thread_main {
        let (len, kind) = if i % 50 == 49 {
            (20_000 + r.next() % 30_000, Kind::Sync)
        } else {
            (3_000 + r.next() % 2_000, Kind::Launch)
        };
        main.push(Slice { start_ns: t, end_ns: t + len, kind });
        t += len + 5_000 + r.next() % 5_000;
    }
    let end = t + 100_000;
    let mut others = Vec::new();
    let n_other = threads.saturating_sub(1);
    // Worker k gets a share of `rest` proportional to n_other - k; worker 0 the remainder.
    let weight_sum = n_other * (n_other + 1) / 2;
    let counts: Vec<usize> = (0..n_other).map(|k| rest * (n_other - k) / weight_sum).collect();
    let assigned: usize = counts.iter().sum();
    for (k, &count) in counts.iter().enumerate() {
        let n = count + if k == 0 { rest - assigned } else { 0 };
        let mut v = Vec::with_capacity(n);
        let step = (end - t0) / n.max(1) as u64;
        for i in 0..n as u64 {
            let a = t0 + i * step + r.next() % step.max(2) / 2;
            let kind = [Kind::Memory, Kind::Copy, Kind::OtherCall][(i % 3) as usize];
            v.push(Slice { start_ns: a, end_ns: a + 1_000 + r.next() % 4_000, kind });
        }
        others.push(Track { label: format!("tid {} · worker {k}", 2000 + k), slices: v });
    }
    let mut gpu_measured = Vec::with_capacity(per_gpu / 2);
    let mut gpu_inferred = Vec::with_capacity(per_gpu / 2);
    let mut g = t0 + 60_000;
    for i in 0..per_gpu {
        let len = 2_000 + r.next() % 20_000;
        let gap = if i % 200 == 199 { 500_000 } else { r.next() % 8_000 };
        let s = Slice {
            start_ns: g,
            end_ns: g + len,
            kind: if i % 2 == 0 { Kind::GpuMeasured } else { Kind::GpuInferred },
        };
        if i % 2 == 0 {
            gpu_measured.push(s)
        } else {
            gpu_inferred.push(s)
        }
        g += len + gap;
    }
    let t1 = end.max(g);
    let mut threads_v = vec![Track { label: "tid 1000 (main) · launcher".into(), slices: main }];
    threads_v.extend(others);
    let third = (t1 - t0) / 3;
    let phases = vec![
        Phase { label: "load".into(), start_ns: t0, end_ns: t0 + third / 4 },
        Phase { label: "warm-up".into(), start_ns: t0 + third / 4, end_ns: t0 + third },
        Phase { label: "generate".into(), start_ns: t0 + third, end_ns: t1 },
    ];
    let marks: Vec<Mark> = (0..20u64)
        .map(|i| Mark { ts_ns: t0 + third + i * (t1 - t0 - third) / 20, label: i.to_string(), iteration: true })
        .chain([Mark { ts_ns: t0 + third / 2, label: "checkpoint".into(), iteration: false }])
        .collect();
    let power = (t0..t1)
        .step_by(10_000_000)
        .map(|ts| (ts, 90.0 + 200.0 * (((ts - t0) / 10_000_000) % 7) as f64 / 7.0))
        .collect::<Vec<_>>();
    let mut iv: Vec<(u64, u64)> =
        gpu_measured.iter().chain(gpu_inferred.iter()).map(|s| (s.start_ns, s.end_ns)).collect();
    let gaps = idle_gaps(&mut iv);
    let tl = Timeline {
        title: format!("Timeline — synthetic, {events} events"),
        origin_ns: t0,
        t0_ns: t0,
        t1_ns: t1,
        threads: threads_v,
        gpu: vec![
            Track { label: "GPU 0 · stream 7".into(), slices: gpu_measured },
            Track { label: "GPU 0 · stream 8".into(), slices: gpu_inferred },
        ],
        phases,
        marks,
        power: vec![PowerSeries { label: "GPU 0 (synthetic)".into(), samples: power }],
        notes: vec!["synthetic input".into()],
        ..Default::default()
    };
    (tl, Gaps { title: "GPU idle gaps — synthetic".into(), notes: vec![], gaps_ns: gaps, compare: None })
}

pub fn slice_count(tl: &Timeline) -> usize {
    tl.threads.iter().chain(tl.gpu.iter()).map(|t| t.slices.len()).sum()
}
