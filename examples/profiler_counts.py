"""What torch.profiler saw, counted the way tracer counts: GPU kernels (NCCL
kernels also apart), copies and sets, and the runtime's launch calls. Shared
by the example workloads' --profile-kernels options."""
from collections import Counter

LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel", "cudaGraphLaunch")


def report_profile(prof, tag: str = "") -> None:
    """Prints `[tag ][torch.profiler] kind=count, ...` for the profiler's events."""
    kinds = Counter()
    for e in prof.events():
        dev = str(getattr(e, "device_type", ""))
        name = e.name
        if dev.endswith("CUDA"):
            if "Memcpy" in name:
                kinds["gpu_memcpy"] += 1
            elif "Memset" in name:
                kinds["gpu_memset"] += 1
            else:
                kinds["gpu_kernel"] += 1
                if name.startswith("nccl"):
                    kinds["gpu_kernel_nccl"] += 1
        elif name in LAUNCH_CALLS:
            kinds["runtime_" + name] += 1
    prefix = f"{tag} " if tag else ""
    print(prefix + "[torch.profiler] " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())), flush=True)
