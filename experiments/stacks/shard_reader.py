"""The data side of train_loader.py: shards of uint8 images on disk, read
without the page cache's help and decoded on the CPU, in the training thread."""
import os

import numpy as np


def write_shards(directory: str, shards: int, images: int, side: int) -> list[str]:
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(shards):
        p = os.path.join(directory, f"images-{i:03d}.u8")
        n = images * 3 * side * side
        if not os.path.exists(p) or os.path.getsize(p) != n:
            rng.integers(0, 256, n, dtype=np.uint8).tofile(p)
        paths.append(p)
    os.sync()
    return paths


def read_shard(path: str) -> bytes:
    """Reads one shard from disk, dropped from the page cache first."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode_images(raw: bytes, side: int) -> np.ndarray:
    """'Decodes' a shard on the CPU: to float, normalized, flipped."""
    x = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3, side, side).astype(np.float32)
    x = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / 64.0
    return np.ascontiguousarray(x[:, :, :, ::-1])
