"""Packed batches from Python against the unpacked loader on the same file, in the same run.

    python python/bench/bench_packing.py [--mib 200] [--dir /tmp] [--repeat 3]

The file: log-normal document lengths (median 300 tokens, sigma 1), int32 token ids,
written with lodtensor.write. Each training step is given the batch's tokens and their
boundaries, and sums the tokens (numpy): unpacked, batches of at most 16384 tokens,
`values("tokens")` and `offsets("tokens", 0)`; packed, `pack=2048, batch_size=8`,
`values("tokens")` and `cu_seqlens("tokens")`; and packed again with `position_ids("tokens")`
as well (16384 int64 a batch, which the unpacked step has no counterpart of). In file order
and shuffled (seed 1, the same shuffle of the documents). Epoch 0 is read `--repeat` times,
each by a new loader; a step's time is its best over the repeats, and tokens/s is the
epoch's tokens over the sum of those times (a whole epoch's time moves with whatever else
the machine runs, a step's best much less). The first batch, which makes the epoch's plan,
is left out. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time

# numpy's BLAS threads spin beside the loop on a small machine; the loop needs none.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import lodtensor as lt  # noqa: E402


def write(path: str, mib: int) -> int:
    rng = np.random.default_rng(1)
    n_docs = mib * (1 << 20) // 4 // 490
    lengths = np.maximum(rng.lognormal(np.log(300), 1.0, n_docs).astype(np.int64), 1)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    ids = pa.array((np.arange(int(lengths.sum())) % 50_000).astype(np.int32))
    lt.write(path, pa.table({"tokens": pa.LargeListArray.from_arrays(offsets, ids)}))
    return int(lengths.sum())


def unpacked_step(batch) -> int:
    values = batch.values("tokens")
    batch.offsets("tokens", 0)
    values.sum(dtype=np.int64)
    return len(values)


def packed_step(batch) -> int:
    values = batch.values("tokens")
    batch.cu_seqlens("tokens")
    values.sum(dtype=np.int64)
    return len(values)


def packed_positions_step(batch) -> int:
    batch.position_ids("tokens")
    return packed_step(batch)


def rate(make, step, repeat: int) -> float:
    best: list[float] = []
    tokens = 0
    for _ in range(repeat):
        batches = iter(make())
        next(batches)
        tokens = 0
        for k in itertools.count():
            start = time.perf_counter()
            batch = next(batches, None)
            if batch is None:
                break
            tokens += step(batch)
            del batch
            took = time.perf_counter() - start
            if k == len(best):
                best.append(took)
            else:
                best[k] = min(best[k], took)
    return tokens / sum(best)


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
        print(
            "| order | unpacked (16384-token budget) | packed (8 × 2048) | packed / unpacked "
            "| packed + position_ids | / unpacked |"
        )
        print("|---|---|---|---|---|---|")
        for shuffle in (False, True):

            def plain():
                return ds.loader(token_budget=16384, shuffle=shuffle, seed=1)

            def packed():
                return ds.loader(pack=2048, batch_size=8, shuffle=shuffle, seed=1)

            base = rate(plain, unpacked_step, args.repeat)
            windows = rate(packed, packed_step, args.repeat)
            positions = rate(packed, packed_positions_step, args.repeat)
            order = "shuffled" if shuffle else "file order"
            print(
                f"| {order} | {base / 1e6:.1f} M/s | {windows / 1e6:.1f} M/s "
                f"| {100 * windows / base:.0f} % | {positions / 1e6:.1f} M/s "
                f"| {100 * positions / base:.0f} % |"
            )


if __name__ == "__main__":
    main()
