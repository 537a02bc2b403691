#!/usr/bin/env python3
"""take of random rows: lodtensor ds.take(rows) against pyarrow's table.take on the same file."""
import sys, time, tempfile, pathlib
import numpy as np, pyarrow as pa
sys.path.insert(0, "python/tests")
import lodtensor as lt
from conftest import documents

root = pathlib.Path(tempfile.mkdtemp())
t = documents(200_000, seed=1)
lt.write(root / "d.arrow", t)
lt.write_shards(root / "s", t, shard_rows=20_000)
ds, sds = lt.open(root / "d.arrow"), lt.open(root / "s")
table = ds.to_pyarrow()
rng = np.random.default_rng(0)
print("rows", t.num_rows, "batches", ds.num_batches, "bytes", (root / "d.arrow").stat().st_size)

def best(f, n=5):
    times = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)
    return min(times)

for n in [10_000, 100_000]:
    rows = rng.integers(0, t.num_rows, n)
    idx = pa.array(rows)
    assert pa.Table.from_batches([ds.take(rows).to_pyarrow()]).equals(table.take(idx).combine_chunks())
    a = best(lambda: ds.take(rows))
    s = best(lambda: sds.take(rows))
    b = best(lambda: table.take(idx))
    print(f"take {n}: file {a*1e3:.1f} ms ({n/a/1e6:.2f} M rows/s), shards {s*1e3:.1f} ms, pyarrow table.take {b*1e3:.1f} ms ({n/b/1e6:.2f} M rows/s)")
