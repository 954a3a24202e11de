# The binaries a GPU script of experiments/replay runs, sourced from the repo root:
# .device-bin/{tracer,replay,libtracer_cupti.so}, or .device-bin/bins.tar.xz holding them
# (the tree and the binaries together exceed what travels uncompressed), extracted here.
# Sets T (tracer) and R (replay). Build them with `cargo xtask build --release` (tracer, the
# injection library and replay).
# shellcheck shell=bash
if [ ! -x .device-bin/tracer ] && [ -f .device-bin/bins.tar.xz ]; then
    tar -C .device-bin -xJf .device-bin/bins.tar.xz
fi
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
