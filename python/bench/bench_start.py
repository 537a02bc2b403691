"""Start-up at scale, on local disk: a dataset of `--shards` shards of `--rows` documents of
int32 token ids (1–64 ids each, Zipf-distributed over a 50,257-word vocabulary), written by
`lt.write_shards` (which writes the lengths index at commit). Each figure comes from a fresh
process: `lt.open` of the directory (the manifest parsed), a shuffled `token_budget` loader
built for one rank of `--world-size` (its epoch's plan made), and its first batch; time of each
step and the process's peak RSS (`VmHWM`) above its baseline after `import lodtensor`, after
the plan and after the first batch (whose shards' pages, mapped from `/dev/shm`, count in the
RSS as shared memory, `RssShmem`: on a disk they are the page cache's). The same
is measured with the manifest's index entry removed (the lengths read from every shard's
metadata, the path of a dataset written before the index existed), then restored.

    .venv/bin/python python/bench/bench_start.py --shards 100000 --rows 100 --dir /dev/shm/lt-start
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

VOCABULARY = 50257


def status_kib(key: str = "VmHWM") -> int:
    """A size from /proc/self/status, KiB: by default the peak resident set size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/self/status")


def documents(n: int, seed: int) -> pa.Table:
    """`n` documents of 1–64 token ids and a document id."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 65, n)
    ids = (rng.zipf(1.2, int(lengths.sum())) % VOCABULARY).astype(np.int32)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    tokens = pa.LargeListArray.from_arrays(offsets, pa.array(ids))
    return pa.table({"tokens": tokens, "doc": pa.array(np.arange(n, dtype=np.int64))})


def batches(shards: int, rows: int):
    """The documents of the benchmark's dataset, about a million at a time."""
    per = max(1, 1_000_000 // rows) * rows
    for first in range(0, shards * rows, per):
        yield from documents(min(per, shards * rows - first), seed=first).to_batches()


def write(path: Path, shards: int, rows: int) -> None:
    import lodtensor as lt

    table = documents(1, 0)
    start = time.perf_counter()
    lt.write_shards(path, pa.RecordBatchReader.from_batches(table.schema, batches(shards, rows)), shard_rows=rows)
    print(f"wrote {shards:,} shards of {rows} documents in {time.perf_counter() - start:.1f} s", flush=True)


def child(path: str, budget: int, world_size: int) -> None:
    """One rank's start, printed as JSON."""
    import lodtensor as lt

    base = status_kib()
    t0 = time.perf_counter()
    ds = lt.open(path)
    t1 = time.perf_counter()
    opened = status_kib()
    loader = ds.loader(token_budget=budget, shuffle=True, seed=1, rank=world_size - 1, world_size=world_size)
    t2 = time.perf_counter()
    planned = status_kib()
    shmem = status_kib("RssShmem")
    batch = next(iter(loader))
    t3 = time.perf_counter()
    print(json.dumps({
        "open_s": t1 - t0, "plan_s": t2 - t1, "first_batch_s": t3 - t2,
        "open_mib": (opened - base) / 1024, "plan_mib": (planned - base) / 1024,
        "peak_mib": (status_kib() - base) / 1024,
        "batch_shmem_mib": (status_kib("RssShmem") - shmem) / 1024,
        "samples": ds.num_rows, "batches": len(loader), "first_batch_samples": len(batch.samples),
    }))


def measure(path: Path, budget: int, world_size: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--budget", str(budget), "--world-size", str(world_size)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--budget", type=int, default=65536)
    parser.add_argument("--world-size", type=int, default=64)
    parser.add_argument("--dir", type=Path, default=Path("/dev/shm/lodtensor-start"))
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.budget, args.world_size)
        return
    path = args.dir
    manifest_path = path / "_lodtensor.json"
    if not manifest_path.exists():
        write(path, args.shards, args.rows)
    manifest_text = manifest_path.read_text()
    manifest = json.loads(manifest_text)
    print(f"{len(manifest['shards']):,} shards, manifest {len(manifest_text) / 2**20:.1f} MiB; "
          f"token_budget={args.budget}, shuffled, rank {args.world_size - 1} of {args.world_size}")
    rows = {"indexed": measure(path, args.budget, args.world_size)}
    unindexed = {k: v for k, v in manifest.items() if k != "index"}
    tmp = path / "_lodtensor.json.bench"
    tmp.write_text(json.dumps(unindexed))
    os.replace(tmp, manifest_path)
    try:
        rows["without the index"] = measure(path, args.budget, args.world_size)
    finally:
        tmp.write_text(manifest_text)
        os.replace(tmp, manifest_path)
    print("| start of one rank | open | plan | first batch | RSS after open | peak RSS after the plan "
          "| peak RSS | of it, shard pages the first batch mapped |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['open_s']:.2f} s | {r['plan_s']:.2f} s | {r['first_batch_s'] * 1e3:.1f} ms "
              f"| +{r['open_mib']:.0f} MiB | +{r['plan_mib']:.0f} MiB | +{r['peak_mib']:.0f} MiB "
              f"| {r['batch_shmem_mib']:.0f} MiB |")
    print(f"{rows['indexed']['samples']:,} samples, {rows['indexed']['batches']:,} batches on the rank")


if __name__ == "__main__":
    main()
