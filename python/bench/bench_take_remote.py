"""`ds.take(rows)` over a URL (range requests, no shard downloaded) against a bare boto3
ranged GET and against Lance's `take`, on one moto S3 server on 127.0.0.1 (started here):

- single row: one opened dataset, every shard's footer and messages read first by one
  take of each shard's first row; then `--single` random rows, each `take([r])` timed
  (p50, p99). The baseline replays, with one boto3 client, exactly the ranged GETs that
  row's take sent (recorded by a proxy in a second, untimed pass), one after another:
  the same requests and bytes without lodtensor's work around them. Lance's `take([r])`
  of the same rows is timed too (its files' metadata read first the same way).
- `take` of `--takes` random rows (unsorted, as a user draws them) against
  `lance.dataset(url).take(rows)` of the same rows of the same table written with
  `lance.write_dataset` to the same server, in files of as many rows as a shard (moto
  reads a whole object for each ranged GET, so both sides' objects are the same size);
  best of `--repeat`, both datasets opened once (both warm: metadata read by the first
  run); the results checked equal.
- requests and bytes: lodtensor's from `cache_stats()`; both sides' also counted by a
  proxy in front of moto (python/tests/counting_proxy.py), untimed: the first take after
  open (metadata included) and a second one (what the timed runs cost).

Documents of int32 token ids (Zipf over a 50,257-word vocabulary), documents → sentences
of 1–16 → tokens of 4–48, one column `tokens` (large_list<large_list<int32>>).

    python python/bench/bench_take_remote.py --rows 100000 --shard-mib 4
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
from bench_take import best  # noqa: E402
from counting_proxy import CountingProxy  # noqa: E402
from s3_server import S3Server  # noqa: E402

VOCABULARY = 50257


def token_documents(rows: int, seed: int = 0) -> pa.Table:
    """`rows` documents of 1–16 sentences of 4–48 int32 token ids (Zipf-distributed)."""
    rng = np.random.default_rng(seed)
    sentences = rng.integers(1, 17, rows)
    words = rng.integers(4, 49, int(sentences.sum()))
    ids = ((rng.zipf(1.1, int(words.sum())) - 1) % VOCABULARY).astype(np.int32)
    sents = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(words)], pa.int64()), pa.array(ids))
    docs = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(sentences)], pa.int64()), sents)
    return pa.table({"tokens": docs})


def lance_options(endpoint: str) -> dict:
    return {
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": "us-east-1",
        "aws_endpoint": endpoint,
        "allow_http": "true",
    }


def stat_delta(ds, f) -> tuple[float, int, int]:
    """Seconds `f()` took, and the range requests and bytes `ds` made meanwhile."""
    before = ds.cache_stats()
    start = time.perf_counter()
    f()
    seconds = time.perf_counter() - start
    after = ds.cache_stats()
    return seconds, after["range_requests"] - before["range_requests"], after["range_bytes"] - before["range_bytes"]


def ms(values) -> str:
    p50, p99 = np.percentile(np.asarray(values) * 1e3, [50, 99])
    return f"{p50:.2f} / {p99:.2f}"


def single_rows(url, direct, proxied, proxy, server, lance_open, rows, work) -> list[str]:
    """Markdown rows of the single-row latencies: lodtensor, boto3 replaying its GETs, Lance
    (`lance_open(endpoint)` opens its dataset)."""
    ds = lt.open(url, storage_options=direct, cache_dir=work / "cache-single")
    warm = [int(o) for o in ds.shard_offsets[:-1]]
    ds.take(warm)
    ours, requests, nbytes = [], [], []
    for r in rows:
        seconds, n, b = stat_delta(ds, lambda: ds.take([int(r)]))
        ours.append(seconds)
        requests.append(n)
        nbytes.append(b)
    assert ds.cache_stats()["shards_downloaded"] == 0
    # The same rows through the proxy (a dataset of its own, warmed alike): each row's GETs.
    recorded = lt.open(url, storage_options=proxied, cache_dir=work / "cache-record")
    recorded.take(warm)
    gets = []
    for r in rows:
        proxy.reset()
        recorded.take([int(r)])
        gets.append([(path, rng) for method, path, rng in proxy.requests() if method == "GET"])
    assert [len(g) for g in gets] == requests, "the proxy saw other requests than cache_stats counts"
    client = server.client()
    theirs = []
    for row_gets in gets:
        start = time.perf_counter()
        for path, rng in row_gets:
            bucket, key = path.lstrip("/").split("/", 1)
            client.get_object(Bucket=bucket, Key=key, Range=rng)["Body"].read()
        theirs.append(time.perf_counter() - start)
    lance_ds = lance_open(server.endpoint)
    lance_ds.take(warm)
    lance_times = []
    for r in rows:
        start = time.perf_counter()
        lance_ds.take([int(r)])
        lance_times.append(time.perf_counter() - start)
    lance_counted = lance_open(proxy.endpoint)
    lance_counted.take(warm)
    lance_costs = [counted(proxy, lambda: lance_counted.take([int(r)])) for r in rows]
    p50 = lambda v: float(np.percentile(v, 50))  # noqa: E731
    p99 = lambda v: float(np.percentile(v, 99))  # noqa: E731
    return [
        f"| single row, lodtensor `take([r])` | {ms(ours)} | {np.mean(requests):.2f} | {np.mean(nbytes):,.0f} |",
        f"| single row, boto3 GETs of the same ranges | {ms(theirs)} | {np.mean(requests):.2f} | {np.mean(nbytes):,.0f} |",
        f"| single row, Lance `take([r])` | {ms(lance_times)} | proxy: {np.mean([c[0] for c in lance_costs]):.2f} "
        f"| proxy: {np.mean([c[1] for c in lance_costs]):,.0f} |",
        f"| ratio lodtensor / boto3 (p50, p99) | {p50(ours) / p50(theirs):.2f}× / {p99(ours) / p99(theirs):.2f}× | | |",
        f"| ratio lodtensor / Lance (p50, p99) | {p50(ours) / p50(lance_times):.2f}× / {p99(ours) / p99(lance_times):.2f}× | | |",
    ]


def counted(proxy: CountingProxy, f) -> tuple[int, int]:
    """Requests and body bytes the proxy saw during `f()`."""
    proxy.reset()
    f()
    return sum(proxy.counts().values()), sum(proxy.body_bytes().values())


def many_rows(url, direct, proxied, proxy, lance_url, lance_direct, lance_proxied, takes, repeat, rng, work):
    """Markdown rows of the takes of `takes` random rows: times (best of `repeat`), rows/s,
    requests and bytes (a timed run's from cache_stats; both sides' first take after open
    through the proxy, and Lance's second)."""
    import lance

    ds = lt.open(url, storage_options=direct, cache_dir=work / "cache-many")
    lance_ds = lance.dataset(lance_url, storage_options=lance_direct)
    out = []
    for n in takes:
        rows = rng.integers(0, ds.num_rows, n)
        index = pa.array(rows, pa.uint64())
        runs = []
        for _ in range(repeat):
            got = []
            runs.append(stat_delta(ds, lambda: got.append(ds.take(rows))))
        ours, requests, nbytes = min(runs)
        assert ds.cache_stats()["shards_downloaded"] == 0
        ours_table = pa.Table.from_batches([got[0].to_pyarrow()])
        theirs = best(lambda: lance_ds.take(index), repeat)
        theirs_table = lance_ds.take(index)
        assert theirs_table.cast(ours_table.schema).equals(ours_table), "lodtensor and Lance disagree"
        fresh = lt.open(url, storage_options=proxied, cache_dir=work / f"cache-count-{n}")
        ours_cold = counted(proxy, lambda: fresh.take(rows))
        lance_fresh = lance.dataset(lance_url, storage_options=lance_proxied)
        theirs_cold = counted(proxy, lambda: lance_fresh.take(index))
        theirs_warm = counted(proxy, lambda: lance_fresh.take(index))
        out += [
            f"| take {n:,}, lodtensor | {ours * 1e3:,.0f} ms ({n / ours / 1e6:.3f} M rows/s) | {requests:,} "
            f"(first take after open, proxy: {ours_cold[0]:,}) | {nbytes:,} (first take, proxy: {ours_cold[1]:,}) |",
            f"| take {n:,}, Lance | {theirs * 1e3:,.0f} ms ({n / theirs / 1e6:.3f} M rows/s) | proxy: {theirs_warm[0]:,} "
            f"(first take after open {theirs_cold[0]:,}) | proxy: {theirs_warm[1]:,} (first take {theirs_cold[1]:,}) |",
            f"| take {n:,}, lodtensor speed / Lance speed | {theirs / ours:.2f}× | | |",
        ]
        print("\n".join(out[-3:]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000, help="documents")
    parser.add_argument("--shard-mib", type=int, default=4)
    parser.add_argument("--single", type=int, default=200, help="rows of the single-row latencies")
    parser.add_argument("--takes", default="10000,100000", help="sizes of the random takes")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each take (the best kept)")
    args = parser.parse_args()
    import lance

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    work = Path(tempfile.mkdtemp(prefix="lt-take-remote-"))
    server = S3Server()
    proxy = CountingProxy(server.port)
    try:
        table = token_documents(args.rows)
        local = work / "local"
        start = time.perf_counter()
        lt.write_shards(local, table, shard_bytes=args.shard_mib << 20)
        url = server.upload_dir(local, "bench", "tokens")
        written = time.perf_counter() - start
        ds = lt.open(local)
        lance_url = "s3://bench/lance/tokens.lance"
        start = time.perf_counter()
        shard_rows = max(s["rows"] for s in ds.shards)
        lance.write_dataset(
            table, lance_url, storage_options=lance_options(server.endpoint), max_rows_per_file=shard_rows
        )
        lance_written = time.perf_counter() - start
        size = sum(s["bytes"] for s in ds.shards)
        tokens = len(table.column("tokens").combine_chunks().flatten().flatten())
        lance_ds = lance.dataset(lance_url, storage_options=lance_options(server.endpoint))
        lance_files = [f for frag in lance_ds.get_fragments() for f in frag.data_files()]
        print(
            f"{args.rows:,} documents, {tokens:,} tokens; lodtensor {size / 2**20:.1f} MiB in {ds.num_shards} shards "
            f"(written + uploaded in {written:.1f} s); Lance {len(lance_files)} data files of up to "
            f"{shard_rows:,} rows (the shards' most), format "
            f"{lance_ds.data_storage_version} (written in {lance_written:.1f} s); lodtensor {lt.__version__}, "
            f"pylance {lance.__version__}",
            flush=True,
        )
        direct, proxied = server.storage_options(), server.storage_options(proxy.endpoint)
        rng = np.random.default_rng(7)
        lines = ["| what | time | requests | bytes |", "| --- | --- | --- | --- |"]
        rows = rng.integers(0, args.rows, args.single)
        def lance_open(endpoint: str):
            return lance.dataset(lance_url, storage_options=lance_options(endpoint))

        lines += single_rows(url, direct, proxied, proxy, server, lance_open, rows, work)
        print("\n".join(lines), flush=True)
        takes = [int(n) for n in args.takes.split(",") if n]
        lines += many_rows(
            url, direct, proxied, proxy, lance_url, lance_options(server.endpoint),
            lance_options(proxy.endpoint), takes, args.repeat, rng, work,
        )
        print("\nsingle row: ms p50 / p99; requests and bytes: mean per row (cache_stats)")
        print("\n".join(lines))
    finally:
        proxy.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
