//! Kernel duration calibration files (`tracer calibrate`, lines.md #5) and
//! the duration model the timeline inference uses.
//!
//! The file's form is durations_file.rs' ([`DurationsFile`]).
use std::collections::{BTreeMap, HashMap};

use anyhow::{Context as _, bail};

use super::model::{Dir, Geom, GpuOpKind, Trace};
use super::stats::nearest_rank;

pub use super::durations_file::{CopyEntry, DurationsFile, FORMAT, KernelEntry};

/// How a calibration is named where none was given ("calibrated from …").
pub const UNNAMED_CALIBRATION: &str = "an unnamed calibration";

/// Copy model used when a calibration gives none: 2 µs + size / bandwidth
/// (h2d/d2h 20 GB/s, d2d 1.3 TB/s, memset 2.5 TB/s: H100-class figures).
pub fn default_copy(kind: &str) -> CopyEntry {
    let ns_per_byte = match kind {
        "h2d" | "d2h" | "h2h" | "default" => 0.05,
        "d2d" | "peer" => 1.0 / 1300.0,
        _ => 1.0 / 2500.0,
    };
    CopyEntry { kind: kind.into(), count: 0, base_ns: 2000, ns_per_byte }
}

/// Lookup structure built from a file.
#[derive(Debug, Clone, Default)]
pub struct Durations {
    pub file: Option<DurationsFile>,
    /// Where the durations came from, for labels ("calibrated from …"):
    /// the file's path, or what the caller says ([`Durations::with_origin`]).
    pub origin: Option<String>,
    by_name: HashMap<String, (Vec<(Geom, u64)>, u64)>,
    copies: HashMap<String, CopyEntry>,
    /// Durations for what these do not know ([`Durations::with_supplement`]).
    pub supplement: Option<Box<Durations>>,
}

/// How a duration was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Same kernel, same grid/block/shared memory.
    Exact,
    /// Same kernel name, other geometry (median over its geometries).
    ByName,
    /// Copy/set size model from the calibration.
    CopyModel,
    /// Built-in copy model (no calibration for it).
    Default,
    /// From the supplement ([`Durations::with_supplement`]): same kernel
    /// and geometry, same kernel name, copy model.
    SupplementExact,
    SupplementByName,
    SupplementCopyModel,
}

impl Found {
    /// The kernel's own geometry was calibrated.
    pub fn exact(self) -> bool {
        matches!(self, Found::Exact | Found::SupplementExact)
    }
    /// Another geometry of the kernel was.
    pub fn by_name(self) -> bool {
        matches!(self, Found::ByName | Found::SupplementByName)
    }
    pub fn from_supplement(self) -> bool {
        matches!(self, Found::SupplementExact | Found::SupplementByName | Found::SupplementCopyModel)
    }
}

impl Durations {
    pub fn new(f: DurationsFile) -> Self {
        let mut by_name: HashMap<String, (Vec<(Geom, u64)>, u64)> = HashMap::new();
        let mut all: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
        for k in &f.kernels {
            let g = Geom { grid: k.grid, block: k.block, shared_mem: k.shared_mem };
            by_name.entry(k.kernel.clone()).or_default().0.push((g, k.median_ns));
            all.entry(k.kernel.clone()).or_default().push((k.median_ns, k.count.max(1)));
        }
        for (name, mut v) in all {
            // count-weighted median of the geometries' medians
            v.sort();
            let total: u64 = v.iter().map(|x| x.1).sum();
            let mut acc = 0;
            let mut med = v[0].0;
            for (m, n) in v {
                acc += n;
                if acc * 2 >= total {
                    med = m;
                    break;
                }
            }
            by_name.get_mut(&name).unwrap().1 = med;
        }
        let copies = f.copies.iter().map(|c| (c.kind.clone(), c.clone())).collect();
        Durations { file: Some(f), origin: None, by_name, copies, supplement: None }
    }

    /// These durations, and `other` for the kernels and copy kinds these do
    /// not know: a kernel is looked up by geometry in both, then by name in
    /// both (durations measured elsewhere for its geometry beat this run's
    /// for another geometry).
    pub fn with_supplement(mut self, other: Durations) -> Self {
        self.supplement = Some(Box::new(other));
        self
    }

    /// The same durations, named `origin` in labels.
    pub fn with_origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// The name of the calibration in labels.
    pub fn origin(&self) -> &str {
        self.origin.as_deref().unwrap_or(UNNAMED_CALIBRATION)
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let f: DurationsFile = serde_json::from_str(text).context("not a kernel-durations file")?;
        if f.format != FORMAT {
            bail!("format is {:?}, expected {FORMAT:?}", f.format);
        }
        if f.version != 1 {
            bail!("version {} not supported (expected 1)", f.version);
        }
        Ok(Self::new(f))
    }

    pub fn kernel(&self, name: &str, g: Option<&Geom>) -> Option<(u64, Found)> {
        let sup = self.supplement.as_deref();
        if let Some(d) = self.exact(name, g) {
            return Some((d, Found::Exact));
        }
        if let Some(d) = sup.and_then(|s| s.exact(name, g)) {
            return Some((d, Found::SupplementExact));
        }
        if let Some((_, med)) = self.by_name.get(name) {
            return Some((*med, Found::ByName));
        }
        let (_, med) = sup?.by_name.get(name)?;
        Some((*med, Found::SupplementByName))
    }

    /// The duration calibrated for `name` at geometry `g` (not by name, not the supplement's).
    pub fn exact(&self, name: &str, g: Option<&Geom>) -> Option<u64> {
        let (geoms, _) = self.by_name.get(name)?;
        let g = g?;
        geoms.iter().find(|(x, _)| x == g).map(|(_, d)| *d)
    }

    /// Duration of a copy (`dir`) or set (`None`) of `size` bytes.
    pub fn copy(&self, dir: Option<Dir>, size: u64) -> (u64, Found) {
        let kind = dir.map_or("memset", Dir::as_str);
        let sup = self.supplement.as_deref().and_then(|s| s.copies.get(kind));
        let (c, found) = match (self.copies.get(kind), sup) {
            (Some(c), _) => (c.clone(), Found::CopyModel),
            (None, Some(c)) => (c.clone(), Found::SupplementCopyModel),
            (None, None) => (default_copy(kind), Found::Default),
        };
        (c.base_ns + (c.ns_per_byte * size as f64).round() as u64, found)
    }
}

/// Derives a calibration from the measured (`gpu`) lines of a trace.
pub fn calibrate(t: &Trace) -> anyhow::Result<DurationsFile> {
    if t.gpu.is_empty() {
        bail!("{}: no measured GPU activity (record with `tracer --gpu-timestamps`)", t.path);
    }
    let mut groups: BTreeMap<Config, Vec<u64>> = BTreeMap::new();
    let mut copies: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for g in &t.gpu {
        let d = g.end - g.start;
        match g.kind {
            GpuOpKind::Kernel => {
                let geom = t.geom(g.geom).copied().unwrap_or_default();
                groups.entry((t.name(g.name).to_string(), geom.grid, geom.block, geom.shared_mem)).or_default().push(d);
            }
            GpuOpKind::Memcpy => copies.entry(g.dir.as_str().to_string()).or_default().push((g.size, d)),
            GpuOpKind::Memset => copies.entry("memset".into()).or_default().push((g.size, d)),
        }
    }
    Ok(from_samples(groups, copies, t.gpu_model(0)))
}

/// A kernel's calibration key: name, grid, block, shared memory.
pub type Config = (String, [u32; 3], [u32; 3], u32);

/// A calibration from measured durations: per kernel configuration, its
/// durations (ns); per copy kind (`h2d`, …, `memset`), (bytes, ns) pairs.
/// Kernels: median, p10, p90 (nearest rank); copies: the median of small
/// ones (≤ 64 KiB) as the base, the median extra time per byte of those over
/// 1 MiB.
pub fn from_samples(
    groups: BTreeMap<Config, Vec<u64>>,
    copies: BTreeMap<String, Vec<(u64, u64)>>,
    gpu: Option<String>,
) -> DurationsFile {
    let kernels = groups
        .into_iter()
        .map(|((kernel, grid, block, shared_mem), mut v)| {
            v.sort_unstable();
            KernelEntry {
                kernel,
                grid,
                block,
                shared_mem,
                count: v.len() as u64,
                median_ns: nearest_rank(&v, 50.0),
                p10_ns: nearest_rank(&v, 10.0),
                p90_ns: nearest_rank(&v, 90.0),
            }
        })
        .collect();
    let copies = copies
        .into_iter()
        .map(|(kind, v)| {
            let def = default_copy(&kind);
            let mut small: Vec<u64> = v.iter().filter(|x| x.0 <= 64 << 10).map(|x| x.1).collect();
            small.sort_unstable();
            let base_ns = if small.is_empty() { def.base_ns } else { nearest_rank(&small, 50.0) };
            let mut per: Vec<f64> =
                v.iter().filter(|x| x.0 > 1 << 20).map(|x| (x.1.saturating_sub(base_ns)) as f64 / x.0 as f64).collect();
            per.sort_by(f64::total_cmp);
            let ns_per_byte = if per.is_empty() { def.ns_per_byte } else { per[(per.len() - 1) / 2] };
            CopyEntry { kind, count: v.len() as u64, base_ns, ns_per_byte }
        })
        .collect();
    DurationsFile { format: FORMAT.into(), version: 1, source: "cupti".into(), gpu, kernels, copies }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    fn gpu(ts: u64, end: u64, name: &str, grid: u32) -> String {
        format!(
            r#"{{"ts":{ts},"end_ts":{end},"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"{name}","device":0,"stream_id":7,"grid":[{grid},1,1],"block":[64,1,1],"shared_mem":0}}"#
        )
    }

    #[test]
    fn calibrate_and_lookup() {
        let mut l = vec![r#"{"type":"header","gpus":[{"model":"NVIDIA H100 80GB HBM3"}]}"#.to_string()];
        for (i, d) in [10u64, 30, 20, 40, 50].iter().enumerate() {
            l.push(gpu(1000 * i as u64, 1000 * i as u64 + d, "kA", 1));
        }
        l.push(gpu(9000, 9100, "kA", 2));
        l.push(r#"{"ts":10000,"end_ts":12000,"pid":1,"type":"gpu","op":"memcpy","name":"memcpy_htod","size":100,"direction":"h2d"}"#.into());
        l.push(r#"{"ts":20000,"end_ts":72000,"pid":1,"type":"gpu","op":"memcpy","name":"memcpy_htod","size":2000000,"direction":"h2d"}"#.into());
        let t = parse_str("c", &l.join("\n")).unwrap();
        let f = calibrate(&t).unwrap();
        assert_eq!(f.gpu.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(f.kernels.len(), 2);
        let a = &f.kernels[0];
        assert_eq!((a.grid, a.count, a.median_ns, a.p10_ns, a.p90_ns), ([1, 1, 1], 5, 30, 10, 50));
        assert_eq!(f.copies, vec![CopyEntry { kind: "h2d".into(), count: 2, base_ns: 2000, ns_per_byte: 0.025 }]);
        let text = serde_json::to_string(&f).unwrap();
        let d = Durations::parse(&text).unwrap();
        let g1 = Geom { grid: [1, 1, 1], block: [64, 1, 1], shared_mem: 0 };
        let g3 = Geom { grid: [3, 1, 1], ..g1 };
        assert_eq!(d.kernel("kA", Some(&g1)), Some((30, Found::Exact)));
        // by name: count-weighted median of {30 x5, 100 x1} = 30
        assert_eq!(d.kernel("kA", Some(&g3)), Some((30, Found::ByName)));
        assert_eq!(d.kernel("other", None), None);
        assert_eq!(d.copy(Some(Dir::H2D), 4000), (2100, Found::CopyModel));
        assert_eq!(d.copy(Some(Dir::D2H), 1000), (2050, Found::Default));
        assert!(
            Durations::parse(r#"{"format":"x","version":1,"source":"s","gpu":null,"kernels":[]}"#)
                .unwrap_err()
                .to_string()
                .contains("expected \"tracer-kernel-durations\"")
        );
        assert!(calibrate(&parse_str("e", "").unwrap()).unwrap_err().to_string().contains("no measured GPU activity"));
    }
}
