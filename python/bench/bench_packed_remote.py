"""A shuffled packed epoch over a URL: `cache="ranges"` (rows read by range requests, nothing
written to disk) against the whole-shard cache, cold, on one moto S3 server on 127.0.0.1
(started here), the requests and bytes of each from `cache_stats()`.

Data: documents of uint16 token ids (what `lt.tokenize` writes for a vocabulary under
65,536) whose lengths are uniform in [mean / 2, 3 × mean / 2), `--mib` MiB of ids in shards
of `--shard-mib` MiB. Each epoch: `ds.loader(batch_size=8, pack=--pack, shuffle=True,
seed=1, ...)` in this process, every batch's ids summed, the global shuffle and the
windowed one (`chunk_rows=4, window=64`); a document longer than a window's room is split
between windows that the shuffle puts in batches far apart.

    python python/bench/bench_packed_remote.py --doc-tokens 1000
    python python/bench/bench_packed_remote.py --doc-tokens 20000

(a python with moto, boto3 and this lodtensor built in release).
"""

from __future__ import annotations

import argparse
import os
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


def documents(mib: int, mean: int, seed: int = 0) -> pa.Table:
    """Documents of about `mean` uint16 ids (`mib` MiB of ids in all)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(mean // 2, mean * 3 // 2, max(1, (mib << 20) // 2 // mean))
    ids = pa.array(rng.integers(0, 50_000, int(lengths.sum())).astype(np.uint16))
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    return pa.table({"ids": pa.LargeListArray.from_arrays(offsets, ids)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=16, help="MiB of token ids")
    parser.add_argument("--shard-mib", type=int, default=4)
    parser.add_argument("--doc-tokens", type=int, default=1000, help="the documents' mean length")
    parser.add_argument("--pack", type=int, default=2048, help="tokens a window")
    args = parser.parse_args()
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    work = Path(tempfile.mkdtemp(prefix="lt-packed-remote-"))
    server = S3Server()
    try:
        lt.write_shards(work / "local", documents(args.mib, args.doc_tokens), shard_bytes=args.shard_mib << 20)
        local = lt.open(work / "local")
        stored = sum(s["bytes"] for s in local.shards)
        url = server.upload_dir(work / "local", "bench", "packed")
        print(
            f"{local.num_rows:,} documents of {args.doc_tokens // 2}–{args.doc_tokens * 3 // 2 - 1} ids, "
            f"{stored / 2**20:.1f} MiB in {local.num_shards} shards; windows of {args.pack}; lodtensor {lt.__version__}"
        )
        print("| epoch | time | batches | requests | MiB received |\n| --- | --- | --- | --- | --- |")
        shuffles = {"global": {}, "windowed": {"chunk_rows": 4, "window": 64}}
        for name, shuffle in shuffles.items():
            for cache in ("ranges", "whole shards, cold"):
                cache_dir = work / f"cache-{name}-{cache[:6]}"
                ds = lt.open(url, storage_options=server.storage_options(), cache_dir=cache_dir)
                options = {"batch_size": 8, "pack": args.pack, "shuffle": True, "seed": 1, **shuffle}
                if cache == "ranges":
                    options["cache"] = "ranges"
                start = time.perf_counter()
                batches = sum(1 for b in ds.loader(**options) if int(np.sum(b.values("ids"))) >= 0)
                seconds = time.perf_counter() - start
                stats = ds.cache_stats()
                requests = stats["range_requests"] + stats["shards_downloaded"]
                received = stats["range_bytes"] + stats["bytes_downloaded"]
                print(
                    f"| {name} shuffle, {cache} | {seconds:.2f} s | {batches:,} | {requests:,} "
                    f"| {received / 2**20:.1f} ({received / stored:.2f}× stored) |",
                    flush=True,
                )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
