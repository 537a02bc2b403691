"""numpy baselines for benches/ops.rs over the same sequence offsets: numpy.add.reduceat
(pooling), a segment softmax (one standard normal float32 per element, the maximum
subtracted as a careful user would) and sequence_enumerate as a sliding-window gather
(int64 ids, windows of 4, pad 0).

Usage: python benches/ops_numpy.py --offsets target/ops_bench_offsets.bin --dim 64

The offsets file holds n + 1 little-endian u64 element positions (written by the Rust
bench). The values are random float32 of shape [offsets[-1], dim]. Note that reduceat
returns the element at the index, not 0, for an empty sequence; that does not change the
time.
"""

import argparse
import time

import numpy as np


def best_of(fn, runs):
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--offsets", required=True)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    offsets = np.fromfile(args.offsets, dtype="<u8").astype(np.int64)
    n_elements = int(offsets[-1])
    values = np.random.default_rng(0).random((n_elements, args.dim), dtype=np.float32)
    starts = offsets[:-1]
    # reduceat needs indices < len(values): sequences starting at the end are empty.
    starts = np.minimum(starts, n_elements - 1)
    nbytes = values.nbytes

    def reduceat():
        return np.add.reduceat(values, starts, axis=0)

    def reduceat_mean():
        sums = np.add.reduceat(values, starts, axis=0)
        lengths = np.maximum(np.diff(offsets), 1).astype(np.float32)
        return sums / lengths[:, None]

    for name, fn in [("sum", reduceat), ("average", reduceat_mean)]:
        seconds = best_of(fn, args.runs)
        print(
            f"numpy add.reduceat {name}: {seconds * 1e3:.2f} ms, "
            f"{nbytes / seconds / 2**30:.2f} GiB/s "
            f"({len(starts)} sequences, {n_elements} x {args.dim} float32, best of {args.runs})"
        )
    del values
    scalar_ops(offsets, starts, args.runs)


def scalar_ops(offsets, starts, runs):
    """Segment softmax and sliding windows over one scalar per element."""
    n = int(offsets[-1])
    lengths = np.diff(offsets)
    rng = np.random.default_rng(1)
    scores = rng.standard_normal(n, dtype=np.float32)
    ids = rng.integers(0, 30000, n, dtype=np.int64)

    def softmax():
        maxima = np.maximum.reduceat(scores, starts)
        e = np.exp(scores - np.repeat(maxima, lengths))
        sums = np.add.reduceat(e, starts)
        return e / np.repeat(sums, lengths)

    win = 4
    ends = np.repeat(offsets[1:], lengths)

    def enumerate_():
        index = np.arange(n)[:, None] + np.arange(win)[None, :]
        gathered = ids[np.minimum(index, n - 1)]
        return np.where(index < ends[:, None], gathered, 0)

    for name, fn, nbytes in [
        ("segment softmax (float32)", softmax, scores.nbytes),
        ("sliding-window enumerate (int64, win 4)", enumerate_, ids.nbytes),
    ]:
        seconds = best_of(fn, runs)
        print(
            f"numpy {name}: {seconds * 1e3:.2f} ms, {nbytes / seconds / 2**30:.2f} GiB/s "
            f"({len(starts)} sequences, {n} elements, best of {runs})"
        )


if __name__ == "__main__":
    main()
