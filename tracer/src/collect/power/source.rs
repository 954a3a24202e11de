//! What the sampler needs from NVML, behind a trait so that the sampling loop
//! and the lines it writes are tested with a fake source.

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuInfo {
    /// NVML index (the `gpu` field of power lines).
    pub index: u32,
    pub name: Option<String>,
    /// PCI bus id, e.g. "00000000:19:00.0".
    pub bus_id: Option<String>,
    pub uuid: Option<String>,
    /// Minor number of its /dev/nvidiaN device file.
    pub minor: Option<u32>,
}

/// One reading of one GPU; `None` where NVML could not give the value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// Total energy since the driver was loaded, mJ.
    pub energy_mj: Option<u64>,
    pub power_mw: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub util_gpu_pct: Option<u32>,
    pub util_mem_pct: Option<u32>,
    pub temp_c: Option<u32>,
    /// (field, error) for each value NVML refused.
    pub errors: Vec<(&'static str, String)>,
    /// (field, ns) for each query made: how long NVML took for it.
    pub query_ns: Vec<(&'static str, u64)>,
}

/// A source of GPU readings. Calls may block (NVML talks to the driver), so
/// the sampler runs on its own thread.
pub trait GpuSource: Send {
    fn gpus(&self) -> &[GpuInfo];
    /// Reads GPU number `slot` of [`gpus`](GpuSource::gpus), the energy
    /// counter first when `energy` (else `energy_mj` stays None). The
    /// sample's timestamp is the middle of this call, whose time the energy
    /// query dominates (~3 ms on an H100, the other queries a few µs).
    fn read(&mut self, slot: usize, energy: bool) -> Reading;
}
