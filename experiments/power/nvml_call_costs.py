#!/usr/bin/env python3
"""Time per NVML call on GPU 0 (what one tracer sampling round is made of):
300 calls of each, median / p90 / max in microseconds."""
import statistics
import time

import pynvml

pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
calls = {
    "nvmlDeviceGetHandleByIndex": lambda: pynvml.nvmlDeviceGetHandleByIndex(0),
    "nvmlDeviceGetTotalEnergyConsumption": lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h),
    "nvmlDeviceGetPowerUsage": lambda: pynvml.nvmlDeviceGetPowerUsage(h),
    "nvmlDeviceGetClockInfo(SM)": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
    "nvmlDeviceGetClockInfo(MEM)": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
    "nvmlDeviceGetUtilizationRates": lambda: pynvml.nvmlDeviceGetUtilizationRates(h),
    "nvmlDeviceGetTemperature": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
}
print(f"# {pynvml.nvmlDeviceGetName(h)}, driver {pynvml.nvmlSystemGetDriverVersion()}: us per call, 300 calls each (idle GPU)")
for name, f in calls.items():
    ts = []
    for _ in range(300):
        t = time.perf_counter_ns()
        f()
        ts.append((time.perf_counter_ns() - t) / 1e3)
    ts.sort()
    print(f"{name:40s} median {statistics.median(ts):8.1f}  p90 {ts[int(0.9 * len(ts))]:8.1f}  max {ts[-1]:8.1f}", flush=True)
