"""pyarrow on the storage benchmark's file: open (memory_map + open_file + read_all), random
sentence views, a full scan. Prints `name value` lines for benches/storage.rs.

usage: storage_pyarrow.py FILE.arrow
"""
import statistics
import sys
import time

import numpy as np
import pyarrow as pa


def median_ms(f, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main(path):
    def open_read_all():
        with pa.memory_map(path) as source:
            return pa.ipc.open_file(source).read_all()

    print("open_read_all_ms", median_ms(open_read_all, 51))
    table = open_read_all()
    chunks = table.column("tokens").chunks
    views = []
    for chunk in chunks:
        sentences = chunk.values
        offsets = sentences.offsets.to_numpy()
        floats = sentences.values.storage.values.to_numpy() if hasattr(sentences.values, "storage") else sentences.values.values.to_numpy()
        views.append((offsets, floats))
    rng = np.random.default_rng(7)
    picks = [(b, int(rng.integers(0, len(views[b][0]) - 1))) for b in rng.integers(0, len(views), 4096)]

    def random_views():
        for b, j in picks:
            offsets, floats = views[b]
            floats[offsets[j] * 64 : offsets[j + 1] * 64]

    print("random_sentence_view_ns", median_ms(random_views, 21) * 1e6 / len(picks))

    def full_scan():
        return sum(float(f.sum(dtype=np.float32)) for _, f in views)

    ms = median_ms(full_scan, 5)
    gb = sum(f.nbytes for _, f in views) / 1e9
    print("full_scan_ms", ms, "GB/s", gb / (ms / 1e3))


if __name__ == "__main__":
    main(sys.argv[1])
