"""Reading a sharded dataset from object storage: moto's S3 server on 127.0.0.1 (started
here), a dataset of float32[64] tokens in shards, read by the loader cold (empty cache),
warm (every shard cached) and from the local directory; tokens/s, time to first batch and
bytes downloaded per epoch. With `--batch-size N` the loader reads batches of N documents
in order (its plan needs no lengths: a shard is downloaded when a batch first reads it), and a
last run has a cache limit of a quarter of the dataset.

    .venv/bin/python python/bench/bench_remote.py --mib 512 --shard-mib 64
    .venv/bin/python python/bench/bench_remote.py --mib 512 --shard-mib 64 --batch-size 64
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import lodtensor as lt  # noqa: E402
from s3_server import S3Server  # noqa: E402

DIM = 64


def documents(mib: int, seed: int = 0) -> pa.Table:
    """Documents of 64–1024 tokens of float32[64], `mib` MiB of values in all."""
    rng = np.random.default_rng(seed)
    tokens = mib * (1 << 20) // (DIM * 4)
    lengths = []
    while sum(lengths) < tokens:
        lengths.append(int(rng.integers(64, 1024)))
    lengths[-1] -= sum(lengths) - tokens
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = pa.array(rng.standard_normal(tokens * DIM, dtype=np.float32))
    element = pa.FixedSizeListArray.from_arrays(values, DIM)
    return pa.table({"tokens": pa.LargeListArray.from_arrays(pa.array(offsets), element)})


def epoch(ds, options: dict) -> tuple[float, float, int]:
    """Seconds to the first batch, seconds for the epoch (the loader's build included),
    tokens."""
    start = time.perf_counter()
    first, tokens = None, 0
    for batch in ds.loader(**options):
        first = first or time.perf_counter() - start
        tokens += batch.tokens
    return first or 0.0, time.perf_counter() - start, tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=512, help="MiB of token values")
    parser.add_argument("--shard-mib", type=int, default=64)
    parser.add_argument("--budget", type=int, default=65536, help="tokens per batch")
    parser.add_argument("--batch-size", type=int, help="documents per batch, in order")
    args = parser.parse_args()
    if args.batch_size:
        loader = {"batch_size": args.batch_size}
    else:
        loader = {"token_budget": args.budget, "shuffle": True, "seed": 1}
    work = Path(tempfile.mkdtemp(prefix="lt-remote-bench-"))
    server = S3Server()
    try:
        local = work / "local"
        lt.write_shards(local, documents(args.mib), shard_bytes=args.shard_mib << 20)
        url = server.upload_dir(local, "bench", "tokens")
        options = server.storage_options()
        size = sum(s["bytes"] for s in lt.open(local).shards)
        print(f"dataset: {size / 2**20:.0f} MiB in {lt.open(local).num_shards} shards")
        rows = []
        first, seconds, tokens = epoch(lt.open(local), loader)
        rows.append(("local directory", first, seconds, tokens, 0))
        runs = [("remote, cold cache", "cache", None), ("remote, warm cache", "cache", None)]
        if args.batch_size:
            runs.append(("remote, limit 1/4", "limited", size // 4))
        for name, cache, limit in runs:
            ds = lt.open(url, storage_options=options, cache_dir=work / cache, cache_limit=limit)
            first, seconds, tokens = epoch(ds, loader)
            rows.append((name, first, seconds, tokens, ds.cache_stats()["bytes_downloaded"]))
        print(f"{'':22} {'first batch':>12} {'epoch':>8} {'M tokens/s':>11} {'downloaded':>11}")
        for name, first, seconds, tokens, downloaded in rows:
            print(
                f"{name:22} {first:11.2f}s {seconds:7.2f}s {tokens / seconds / 1e6:11.2f}"
                f" {downloaded / size:10.2f}x"
            )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
