"""Packed batches from Python against the unpacked loader on the same file, in the same run.

    python python/bench/bench_packing.py [--mib 200] [--dir /tmp] [--repeat 3]

The file: log-normal document lengths (median 300 tokens, sigma 1), int32 token ids,
written with lodtensor.write. Unpacked: batches of at most 16384 tokens, the training step
given `values("tokens")` and the document offsets. Packed: `pack=2048, batch_size=8`, the
step given `values("tokens")`, `cu_seqlens("tokens")` and `position_ids("tokens")`. Each
batch's tokens are summed (numpy). In file order and shuffled (seed 1). Prints a Markdown
table of tokens/s, the best of `--repeat` epochs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pyarrow as pa

import lodtensor as lt


def write(path: str, mib: int) -> int:
    rng = np.random.default_rng(1)
    n_docs = mib * (1 << 20) // 4 // 490
    lengths = np.maximum(rng.lognormal(np.log(300), 1.0, n_docs).astype(np.int64), 1)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    ids = pa.array((np.arange(int(lengths.sum())) % 50_000).astype(np.int32))
    lt.write(path, pa.table({"tokens": pa.LargeListArray.from_arrays(offsets, ids)}))
    return int(lengths.sum())


def epoch(loader, packed: bool) -> int:
    tokens = 0
    for batch in loader:
        values = batch.values("tokens")
        if packed:
            batch.cu_seqlens("tokens")
            batch.position_ids("tokens")
        else:
            batch.offsets("tokens", 0)
        values.sum(dtype=np.int64)
        tokens += len(values)
    return tokens


def best(make, packed: bool, repeat: int) -> float:
    rates = []
    for _ in range(repeat):
        loader = make()
        start = time.perf_counter()
        tokens = epoch(loader, packed)
        rates.append(tokens / (time.perf_counter() - start))
    return max(rates)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = os.path.join(folder, "tokens.arrow")
        tokens = write(path, args.mib)
        ds = lt.open(path)
        print(f"{ds.num_rows} documents, {tokens} int32 tokens")
        print("| order | unpacked (16384-token budget) | packed (8 × 2048) | packed / unpacked |")
        print("|---|---|---|---|")
        for shuffle in (False, True):
            plain = best(lambda: ds.loader(token_budget=16384, shuffle=shuffle, seed=1), False, args.repeat)
            packed = best(lambda: ds.loader(pack=2048, batch_size=8, shuffle=shuffle, seed=1), True, args.repeat)
            order = "shuffled" if shuffle else "file order"
            print(f"| {order} | {plain / 1e6:.1f} M/s | {packed / 1e6:.1f} M/s | {100 * packed / plain:.0f} % |")


if __name__ == "__main__":
    main()
