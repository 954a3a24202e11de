"""Phase markers for tracer (docs/markers.md), shared by the examples.

`mark(op, label, **fields)` writes one line per marker, in one write(2), to
the FIFO that `tracer record` names in TRACER_MARKER_FIFO; untraced (no
variable) it does nothing. It never blocks: the FIFO is opened non-blocking
and a marker that cannot be written (tracer gone, FIFO full) is dropped.
"""
import os
import threading
import time


def _marker_writer():
    """Phase markers for tracer (docs/markers.md): one line per marker,
    written in one write(2) to the FIFO that `tracer record` names in
    TRACER_MARKER_FIFO. Untraced (no variable): a no-op. Never blocks:
    the FIFO is opened non-blocking and a marker that cannot be written
    (tracer gone, FIFO full) is dropped."""
    path = os.environ.get("TRACER_MARKER_FIFO")
    fd = None
    if path:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            fd = None

    def mark(op: str, label, **fields) -> None:
        if fd is None:
            return
        extra = "".join(f" {k}={v}" for k, v in fields.items())
        line = f"{op} {label}{extra} ts={time.monotonic_ns()} pid={os.getpid()} tid={threading.get_native_id()}\n"
        try:
            os.write(fd, line.encode())
        except OSError:
            pass

    return mark


mark = _marker_writer()
