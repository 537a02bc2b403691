"""Reading a sharded dataset from object storage: moto's S3 server on 127.0.0.1 (started
here), a dataset of float32[64] tokens in shards, read by the loader cold (empty cache),
warm (every shard cached) and from the local directory; tokens/s, time to first batch and
bytes downloaded per epoch. The loader reads batches of `--budget` tokens, shuffled
(`--order shuffle`: the first batch reads every shard), windowed-shuffled (`windowed`) or in
file order (`file`); with a token budget, building reads the shards' metadata only (the KiB
and requests are printed). With `--batch-size N` the loader reads batches of N documents
in order (its plan needs no lengths: a shard is downloaded when a batch first reads it), and a
last run has a cache limit of a quarter of the dataset.

With `--compression none,zstd,lz4` the same documents are written once per codec (Arrow IPC
body compression, `write_shards(..., compression=...)`), each uploaded under a prefix of its
own and read by URL with an empty cache, then again with every shard cached (held
decompressed in the cache): the bytes fetched and the epochs' speed per codec. `--data
token-ids` makes the documents int32 token ids (Zipf-distributed over a 50,257-word
vocabulary, as a tokenizer's output is) instead of float32[64] features.

With `--peers` the same documents are also written as MosaicML Streaming shards (`MDSWriter`)
and LitData chunks (`optimize`), uploaded to the same server, and read by each peer's
`StreamingDataset` from the bucket in a DataLoader with 2 workers (batches of `--batch-size`
documents, in order), cache fitting and a quarter-size cache, two epochs each. Every
contender reads through a proxy that counts the bytes the server sends (remote_peers.py).

With `--shuffled-epoch` (issue 41): one shuffled epoch of each contender over the same
documents (`--data token-ids` for realistic ones), every one through one HTTP proxy in front
of moto that counts requests (by method, ranged or not) and body bytes
(python/tests/counting_proxy.py), batches of `--batch-size` documents (64 unless told),
seed 1, every value of a batch read once (`sum`):
- lodtensor `cache="ranges"`: `Loader(batch_size, shuffle=True, seed=1, cache="ranges",
  prefetch=2)` in this process (its `cache_stats()` printed), then the same options through
  `lodtensor.torch.BatchDataset` in `DataLoader(batch_size=None, num_workers=--workers)`
  (each worker a rank of the epoch); an empty cache directory each;
- lodtensor whole-shard cache (the default `cache="shards"`), the same `BatchDataset` and
  DataLoader: cold (empty cache directory), then warm (every shard in it);
- with `--range-gap N`, the `cache="ranges"` epochs open the dataset with `range_gap=N`
  (0: each row's bytes alone; default 1 MiB);
- all of lodtensor's again with the windowed shuffle (`chunk_rows=--chunk-rows`,
  `window=--window`: runs of 64 documents through a window of 1,024 unless told), the
  shuffle of the kind the peers' are (shards in a seeded order, samples shuffled within
  a span of them);
- MosaicML Streaming `StreamingDataset(remote, local, batch_size, shuffle=True,
  shuffle_seed=1)` (MDS shards of `--shard-mib`; shuffle_algo py1e and the rest its defaults)
  and LitData `StreamingDataset(remote, shuffle=True, seed=1)` (chunks of `--shard-mib`) in
  a DataLoader (`StreamingDataLoader`) of `--workers` workers, `batch_size` documents
  joined by `torch.cat`; cold (empty cache directory), cache that fits.
Time to the first batch, the epoch's time, documents, documents/s, the proxy's requests and
MiB of bodies, moto's CPU seconds meanwhile (its process's, from /proc), and each epoch's
time over the `cache="ranges"` DataLoader's. With
`--from-memory` the proxy answers the GETs of objects from a copy it fetched whole once
(moto reads the whole object for every ranged GET).

    .venv/bin/python python/bench/bench_remote.py --mib 512 --shard-mib 64
    .venv/bin/python python/bench/bench_remote.py --mib 512 --shard-mib 64 --batch-size 64
    .venv/bin/python python/bench/bench_remote.py --mib 2048 --shard-mib 64 --order windowed
    .venv-bench/bin/python python/bench/bench_remote.py --mib 256 --shard-mib 32 --batch-size 64 --peers
    .venv/bin/python python/bench/bench_remote.py --mib 256 --shard-mib 32 --batch-size 64 \
        --compression none,zstd,lz4 --data token-ids
    .venv-bench/bin/python python/bench/bench_remote.py --mib 64 --shard-mib 8 --data token-ids \
        --shuffled-epoch [--from-memory]
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
from remote_peers import CountingProxy  # noqa: E402

DIM = 64


VOCABULARY = 50257


def documents(mib: int, seed: int = 0, data: str = "features") -> pa.Table:
    """Documents of 64–1024 tokens, `mib` MiB of values in all: float32[64] features, or
    (`data="token-ids"`) int32 token ids, Zipf-distributed over the vocabulary."""
    rng = np.random.default_rng(seed)
    width = DIM * 4 if data == "features" else 4
    tokens = mib * (1 << 20) // width
    lengths = []
    while sum(lengths) < tokens:
        lengths.append(int(rng.integers(64, 1024)))
    lengths[-1] -= sum(lengths) - tokens
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    if data == "features":
        values = pa.array(rng.standard_normal(tokens * DIM, dtype=np.float32))
        element = pa.FixedSizeListArray.from_arrays(values, DIM)
        return pa.table({"tokens": pa.LargeListArray.from_arrays(offsets, element)})
    ids = ((rng.zipf(1.1, tokens) - 1) % VOCABULARY).astype(np.int32)
    return pa.table({"tokens": pa.LargeListArray.from_arrays(offsets, pa.array(ids))})


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
    parser.add_argument(
        "--order",
        choices=["shuffle", "windowed", "file"],
        default="shuffle",
        help="with a token budget: samples shuffled (every shard read from the first batch on), "
        "windowed shuffle (shards one after another), or file order",
    )
    parser.add_argument("--peers", action="store_true", help="MosaicML Streaming and LitData too")
    parser.add_argument("--compression", help="codecs to compare, such as none,zstd,lz4")
    parser.add_argument("--data", choices=["features", "token-ids"], default="features")
    parser.add_argument("--shuffled-epoch", action="store_true", help="issue 41's shuffled epochs, peers included")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers of --shuffled-epoch")
    parser.add_argument("--chunk-rows", type=int, default=64, help="--shuffled-epoch: the windowed shuffle's runs")
    parser.add_argument("--window", type=int, default=1024, help="--shuffled-epoch: the windowed shuffle's window")
    parser.add_argument("--range-gap", type=int, help="--shuffled-epoch: lt.open's range_gap for the ranges epochs")
    parser.add_argument("--from-memory", action="store_true",
                        help="--shuffled-epoch: objects served by the proxy from its copy (moto asked once each)")
    args = parser.parse_args()
    if args.batch_size:
        loader = {"batch_size": args.batch_size}
    else:
        loader = {"token_budget": args.budget}
        if args.order != "file":
            loader.update(shuffle=True, seed=1)
        if args.order == "windowed":
            loader.update(chunk_rows=64, window=256)
    work = Path(tempfile.mkdtemp(prefix="lt-remote-bench-"))
    server = S3Server()
    proxy = CountingProxy(("127.0.0.1", server.port))
    try:
        if args.compression:
            return compressed(args, loader, server, proxy, work)
        if args.shuffled_epoch:
            return shuffled_epochs(args, server, work)
        local = work / "local"
        lt.write_shards(local, documents(args.mib, data=args.data), shard_bytes=args.shard_mib << 20)
        url = server.upload_dir(local, "bench", "tokens")
        options = server.storage_options(proxy.endpoint)
        size = sum(s["bytes"] for s in lt.open(local).shards)
        print(f"dataset: {size / 2**20:.0f} MiB in {lt.open(local).num_shards} shards")
        rows = []
        first, seconds, tokens = epoch(lt.open(local), loader)
        rows.append(("lodtensor, local directory", first, seconds, tokens, 0, size))
        runs = [("cold cache", "cache", None), ("warm cache", "cache", None)]
        if args.batch_size:
            runs += [("limit 1/4, epoch 1", "limited", size // 4), ("limit 1/4, epoch 2", "limited", size // 4)]
        for name, cache, limit in runs:
            ds = lt.open(url, storage_options=options, cache_dir=work / cache, cache_limit=limit)
            proxy.take()
            first, seconds, tokens = epoch(ds, loader)
            rows.append((f"lodtensor, {name}", first, seconds, tokens, proxy.take(), size))
            stats = ds.cache_stats()
            print(f"{name}: metadata read at build {stats['metadata_bytes'] / 2**10:.0f} KiB"
                  f" in {stats['metadata_requests']} requests")
        if args.peers:
            rows += peers(args, server, proxy, local, work)
        print(f"{'':34} {'first batch':>12} {'epoch':>8} {'M tokens/s':>11} {'fetched':>9}")
        for name, first, seconds, tokens, fetched, stored in rows:
            print(
                f"{name:34} {first:11.2f}s {seconds:7.2f}s {tokens / seconds / 1e6:11.2f}"
                f" {fetched / stored:8.2f}x"
            )
    finally:
        proxy.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def compressed(args, loader: dict, server: S3Server, proxy: CountingProxy, work: Path) -> None:
    """One dataset per codec of `--compression`, read by URL cold and warm: stored and
    fetched bytes, the epochs' times."""
    table = documents(args.mib, data=args.data)
    options = server.storage_options(proxy.endpoint)
    print(f"{args.mib} MiB of {args.data}, loader {loader}")
    print(f"{'codec':6} {'stored MiB':>10} {'fetched MiB':>12} {'cold first':>11} {'cold epoch':>11}"
          f" {'M tok/s':>8} {'warm epoch':>11} {'M tok/s':>8} {'cache MiB':>10}")
    for codec in args.compression.split(","):
        local = work / f"local-{codec}"
        lt.write_shards(local, table, shard_bytes=args.shard_mib << 20,
                        compression=None if codec == "none" else codec)
        stored = sum(s["bytes"] for s in lt.open(local).shards)
        url = server.upload_dir(local, "bench", f"tokens-{codec}")
        cache = work / f"cache-{codec}"
        times = []
        for _ in ("cold", "warm"):
            ds = lt.open(url, storage_options=options, cache_dir=cache)
            proxy.take()
            first, seconds, tokens = epoch(ds, loader)
            times.append((first, seconds, tokens, proxy.take()))
        held = sum(p.stat().st_size for p in cache.rglob("*.arrow"))
        (first, cold, tokens, fetched), (_, warm, _, _) = times
        print(f"{codec:6} {stored / 2**20:10.1f} {fetched / 2**20:12.1f} {first:10.2f}s {cold:10.2f}s"
              f" {tokens / cold / 1e6:8.2f} {warm:10.2f}s {tokens / warm / 1e6:8.2f} {held / 2**20:10.1f}")


def uploaded_peers(args, server: S3Server, local: Path, work: Path):
    """Each installed peer (MosaicML Streaming, LitData): its name, the documents of `local`
    in its format in the bucket (URL), their bytes, and its epochs' function (remote_peers)."""
    import multiprocessing

    import remote_peers as rp

    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true",
    )
    client = server.client()
    for name, write, run in (
        ("MosaicML Streaming", rp.write_mds, rp.mosaic_epochs),
        ("LitData", rp.write_litdata, rp.litdata_epochs),
    ):
        formatted = work / name.split()[0].lower()
        try:
            write(local, formatted, args.shard_mib)
        except ImportError:
            continue
        multiprocessing.set_start_method("fork", force=True)  # LitData's optimize sets spawn
        stored = sum(p.stat().st_size for p in formatted.rglob("*") if p.is_file())
        yield name, rp.upload_tree(client, formatted, "bench", formatted.name), stored, run


def peers(args, server: S3Server, proxy: CountingProxy, local: Path, work: Path) -> list[tuple]:
    """MosaicML Streaming and LitData from the same bucket: two epochs with a cache that fits,
    two with a quarter-size cache; rows as main's, fetched relative to the peer's own bytes."""
    batch = args.batch_size or 64
    out = []
    for name, remote, stored, run in uploaded_peers(args, server, local, work):
        cache = work / f"{name.split()[0].lower()}-cache"
        for label, limit in (("cache fits", None), ("limit 1/4", stored // 4)):
            try:
                epochs = run(remote, cache, limit, batch, proxy, 2)
            except Exception as e:  # a peer that cannot read the bucket: say so, go on
                print(f"{name}, {label}: {type(e).__name__}: {e}")
                continue
            for i, (first, seconds, _, tokens, fetched) in enumerate(epochs):
                out.append((f"{name}, {label}, epoch {i + 1}", first, seconds, tokens, fetched, stored))
    return out


class Requests:
    """counting_proxy's proxy (python/tests) in front of `server`, as
    remote_peers.timed_epochs reads a proxy: `take()` gives the requests, body bytes,
    requests by kind and the server's CPU seconds since the last take."""

    def __init__(self, server: S3Server, from_memory: bool) -> None:
        from counting_proxy import CountingProxy as HttpProxy

        # Every object with a dot in its name (shards, chunks, indexes; not a bucket's
        # listing) is immutable here: with `from_memory`, served from the proxy's copy.
        self.proxy = HttpProxy(server.port, immutable=(lambda name: "." in name) if from_memory else None)
        self.endpoint = self.proxy.endpoint
        self.stat = Path(f"/proc/{server.process.pid}/stat")
        self.cpu = self.server_cpu()

    def server_cpu(self) -> float:
        """The server process's CPU seconds so far (user and system; Linux)."""
        fields = self.stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def take(self) -> tuple[int, int, dict, float]:
        counts, sent = self.proxy.counts(), self.proxy.body_bytes()
        self.proxy.reset()
        cpu, self.cpu = self.cpu, self.server_cpu()
        kinds: dict = {}
        for (method, _, ranged), n in counts.items():
            kind = f"{method}{' ranged' if ranged else ''}"
            kinds[kind] = kinds.get(kind, 0) + n
        return sum(counts.values()), sum(sent.values()), kinds, self.cpu - cpu


def count_items(item: dict) -> tuple[int, int]:
    """Documents and tokens of a `BatchDataset` item, every value read once (`sum`)."""
    values = item["tokens"]["values"]
    values.sum()
    return len(item["samples"]), int(values.shape[0])


def shuffled_epochs(args, server: S3Server, work: Path) -> None:
    """Issue 41's shuffled epochs (module docstring): one epoch of each contender through
    one proxy counting requests and bytes; prints a Markdown table."""
    import remote_peers as rp
    from torch.utils.data import DataLoader
    from lodtensor.torch import BatchDataset

    local = work / "local"
    lt.write_shards(local, documents(args.mib, data=args.data), shard_bytes=args.shard_mib << 20)
    url = server.upload_dir(local, "bench", "tokens")
    data = lt.open(local)
    size = sum(s["bytes"] for s in data.shards)
    print(f"{args.data}: {data.num_rows:,} documents, {size / 2**20:.1f} MiB in {data.num_shards} shards; "
          f"lodtensor {lt.__version__}", flush=True)
    proxy = Requests(server, args.from_memory)
    options = server.storage_options(proxy.endpoint)
    batch, workers = args.batch_size or 64, args.workers
    shuffles = {
        "`shuffle=True`": {"shuffle": True},
        f"windowed (`chunk_rows={args.chunk_rows}, window={args.window}`)": {
            "shuffle": True, "chunk_rows": args.chunk_rows, "window": args.window},
    }
    rows = []
    for kind, shuffle in shuffles.items():
        loader = {"batch_size": batch, "seed": 1, "prefetch": 2, **shuffle}
        ds = lt.open(url, storage_options=options, cache_dir=work / f"cache-in-process-{len(rows)}",
                     range_gap=args.range_gap)
        proxy.take()
        first, seconds, tokens = epoch(ds, {**loader, "cache": "ranges"})
        name = f'lodtensor `cache="ranges"`, {kind}, Loader in this process'
        rows.append((name, first, seconds, ds.num_rows, tokens, proxy.take()))
        stats = ds.cache_stats()
        print(f"in process, cache_stats: {stats['range_requests']:,} range requests, {stats['range_bytes']:,} bytes; "
              f"metadata {stats['metadata_requests']:,} requests, {stats['metadata_bytes']:,} bytes; "
              f"{stats['shards_downloaded']} shards downloaded", flush=True)
        shards = f"cache-{len(rows)}"
        for name, cache, extra in (
            ('`cache="ranges"`', f"cache-ranges-{len(rows)}", {"cache": "ranges", "range_gap": args.range_gap}),
            ("whole-shard cache, cold", shards, {}),
            ("whole-shard cache, warm", shards, {}),
        ):
            dataset = BatchDataset(url, storage_options=options, cache_dir=work / cache, **loader, **extra)
            (row,) = rp.timed_epochs(DataLoader(dataset, batch_size=None, num_workers=workers), 1, proxy, count_items)
            rows.append((f"lodtensor {name}, {kind}", *row))
            print(rows[-1], flush=True)
    for name, remote, stored, run in uploaded_peers(args, server, local, work):
        cache = work / f"{name.split()[0].lower()}-cache"
        (row,) = run(remote, cache, None, batch, proxy, 1, shuffle=True, workers=workers)
        rows.append((f"{name} `shuffle=True`, cold ({stored / 2**20:.1f} MiB stored)", *row))
        print(rows[-1], flush=True)
    reference = rows[1][2]  # the global shuffle's `cache="ranges"` DataLoader
    print("\n| epoch | first batch | epoch | samples | samples/s | requests | MiB received | moto CPU "
          "| epoch ÷ ranges' |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, first, seconds, samples, _, (requests, received, kinds, cpu) in rows:
        kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(kinds.items()))
        print(f"| {name} | {first:.2f} s | {seconds:.2f} s | {samples:,} | {samples / seconds:,.0f} | {requests:,} "
              f"({kinds}) | {received / 2**20:,.1f} | {cpu:.1f} s | {seconds / reference:.2f}× |")


if __name__ == "__main__":
    main()
