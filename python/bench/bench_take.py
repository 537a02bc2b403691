"""`ds.take(rows)` of random rows against pyarrow's `table.take` of the same file's table,
on 200,000 synthetic documents (python/tests/conftest.py's `documents`), as one file and
as 10 shards; best of 5 each.

    python python/bench/bench_take.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import lodtensor as lt  # noqa: E402
from conftest import documents  # noqa: E402


def best(f, n: int = 5) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench_take_"))
    try:
        table = documents(200_000, seed=1)
        lt.write(root / "d.arrow", table)
        lt.write_shards(root / "s", table, shard_rows=20_000)
        ds, sharded = lt.open(root / "d.arrow"), lt.open(root / "s")
        whole = ds.to_pyarrow()
        rng = np.random.default_rng(0)
        print(f"rows {table.num_rows}, record batches {ds.num_batches}, bytes {(root / 'd.arrow').stat().st_size}")
        for n in (10_000, 100_000):
            rows = rng.integers(0, table.num_rows, n)
            index = pa.array(rows)
            taken = pa.Table.from_batches([ds.take(rows).to_pyarrow()])
            assert taken.equals(whole.take(index).combine_chunks())
            ours, shards = best(lambda: ds.take(rows)), best(lambda: sharded.take(rows))
            theirs = best(lambda: whole.take(index))
            print(
                f"take {n}: file {ours * 1e3:.1f} ms ({n / ours / 1e6:.2f} M rows/s), shards {shards * 1e3:.1f} ms, "
                f"pyarrow table.take {theirs * 1e3:.1f} ms ({n / theirs / 1e6:.2f} M rows/s)"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
