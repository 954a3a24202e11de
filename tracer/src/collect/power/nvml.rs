//! The real [`GpuSource`]: NVML through nvml-wrapper, which loads
//! libnvidia-ml.so.1 at run time (no link-time dependency: tracer runs on
//! machines without the NVIDIA driver and says so in the header).
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};

use super::source::{GpuInfo, GpuSource, Reading};

pub struct NvmlSource {
    /// Device handles, looked up once. They borrow the library, which is
    /// leaked for that: one per tracer run, and NVML's shutdown at exit
    /// is not needed.
    devices: Vec<Device<'static>>,
    gpus: Vec<GpuInfo>,
    /// The library that was loaded.
    pub library: String,
}

/// Where libnvidia-ml.so.1 is looked for, in order: the dynamic loader's own
/// search (LD_LIBRARY_PATH, ld.so.cache), then beside the libcuda being
/// probed (containers often mount the driver's libraries in one directory
/// that is not in the cache), then the usual driver directories.
pub fn library_candidates(libcuda: Option<&Path>) -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("libnvidia-ml.so.1")];
    if let Some(dir) = libcuda.and_then(Path::parent) {
        v.push(dir.join("libnvidia-ml.so.1"));
    }
    for d in ["/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"] {
        let p = Path::new(d).join("libnvidia-ml.so.1");
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

impl NvmlSource {
    /// Loads NVML (first candidate that loads) and lists the GPUs. The error
    /// says why power cannot be sampled, for the header.
    pub fn open(candidates: &[PathBuf]) -> Result<Self, String> {
        let mut errors = Vec::new();
        for c in candidates {
            // Absolute paths that do not exist: no need to try.
            if c.is_absolute() && !c.exists() {
                continue;
            }
            match Nvml::builder().lib_path(OsStr::new(c.as_os_str())).init() {
                Ok(nvml) => return Self::with(nvml, c.display().to_string()),
                Err(e) => errors.push(format!("{}: {e}", c.display())),
            }
        }
        Err(if errors.len() == 1 && errors[0].contains("cannot open shared object") {
            format!("no NVIDIA driver: libnvidia-ml.so.1 not found ({})", errors[0])
        } else {
            format!("NVML unavailable: {}", errors.join("; "))
        })
    }

    fn with(nvml: Nvml, library: String) -> Result<Self, String> {
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let n = nvml.device_count().map_err(|e| format!("NVML device count: {e}"))?;
        if n == 0 {
            return Err("NVML reports no GPU".into());
        }
        let mut gpus = Vec::new();
        let mut devices = Vec::new();
        for index in 0..n {
            let d = nvml.device_by_index(index).map_err(|e| format!("NVML device {index}: {e}"))?;
            gpus.push(GpuInfo {
                index,
                name: d.name().ok(),
                bus_id: d.pci_info().ok().map(|p| p.bus_id),
                uuid: d.uuid().ok(),
                minor: d.minor_number().ok(),
            });
            devices.push(d);
        }
        Ok(NvmlSource { devices, gpus, library })
    }
}

/// `f()`, its time (ns) noted under `field`.
fn timed<T>(ns: &mut Vec<(&'static str, u64)>, field: &'static str, f: impl FnOnce() -> T) -> T {
    let t = std::time::Instant::now();
    let v = f();
    ns.push((field, t.elapsed().as_nanos() as u64));
    v
}

fn keep<T>(errors: &mut Vec<(&'static str, String)>, field: &'static str, r: Result<T, impl ToString>) -> Option<T> {
    r.map_err(|e| errors.push((field, e.to_string()))).ok()
}

impl GpuSource for NvmlSource {
    fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    fn read(&mut self, slot: usize, energy: bool) -> Reading {
        let mut r = Reading::default();
        let d = &self.devices[slot];
        let (e, ns) = (&mut r.errors, &mut r.query_ns);
        if energy {
            r.energy_mj = keep(e, "energy_mj", timed(ns, "energy_mj", || d.total_energy_consumption()));
        }
        r.power_mw = keep(e, "power_mw", timed(ns, "power_mw", || d.power_usage()));
        r.sm_clock_mhz = keep(e, "sm_clock_mhz", timed(ns, "sm_clock_mhz", || d.clock_info(Clock::SM)));
        r.mem_clock_mhz = keep(e, "mem_clock_mhz", timed(ns, "mem_clock_mhz", || d.clock_info(Clock::Memory)));
        if let Some(u) = keep(e, "util_gpu_pct", timed(ns, "util_gpu_pct", || d.utilization_rates())) {
            r.util_gpu_pct = Some(u.gpu);
            r.util_mem_pct = Some(u.memory);
        }
        r.temp_c = keep(e, "temp_c", timed(ns, "temp_c", || d.temperature(TemperatureSensor::Gpu)));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_in_order_without_duplicates() {
        let v = library_candidates(Some(Path::new("/usr/local/nvidia/lib64/libcuda.so.1")));
        let v: Vec<String> = v.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            v,
            [
                "libnvidia-ml.so.1",
                "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
                "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                "/usr/lib64/libnvidia-ml.so.1",
                "/usr/lib/wsl/lib/libnvidia-ml.so.1"
            ]
        );
    }

    /// On a machine without the driver (ours), opening fails with a reason
    /// that names the library.
    #[test]
    fn no_driver_reason() {
        if Path::new("/proc/driver/nvidia/version").exists() {
            return;
        }
        let Err(reason) = NvmlSource::open(&library_candidates(None)) else { panic!("NVML opened without a driver") };
        assert!(reason.contains("libnvidia-ml.so.1"), "{reason}");
    }
}
