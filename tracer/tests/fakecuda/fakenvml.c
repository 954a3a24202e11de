/* A stand-in for libnvidia-ml.so.1 that, as the real one does on driver
 * 580, loads libcuda while it initialises (root_agent.rs): under --system
 * that open is the tracer's own, which its libcuda watch must not stop.
 * FAKE_LIBCUDA: the fake libcuda's path. Initialisation then fails as on a
 * machine without a driver (NVML_ERROR_DRIVER_NOT_LOADED, 9), or with
 * NVML_ERROR_UNKNOWN (999) if libcuda could not be loaded. */
#include <dlfcn.h>

int nvmlInit_v2(void)
{
    void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    return h ? 9 : 999;
}

int nvmlInit(void)
{
    return nvmlInit_v2();
}
