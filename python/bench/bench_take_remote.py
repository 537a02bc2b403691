"""`ds.take(rows)` over a URL (range requests, no shard downloaded) against a bare boto3
ranged GET and against Lance's `take`, on one moto S3 server on 127.0.0.1 (started here):

- single row: one opened dataset, every shard's footer and messages read first by one
  take of each shard's first row; then `--single` random rows, each `take([r])` timed
  (p50, p99). The baselines replay exactly the ranged GETs that row's take sent (recorded
  by a proxy in an untimed pass first), one after another: by boto3's `get_object` (one
  client), and by urllib3 over presigned URLs (one pool; the bare HTTP request). Lance's
  `take([r])` of the same rows is timed too (its files' metadata read first the same
  way). The four are timed row by row, one after another.
- `take` of `--takes` random rows (unsorted, as a user draws them) against
  `lance.dataset(url).take(rows)` of the same rows of the same table written with
  `lance.write_dataset` to the same server, in files of as many rows as a shard (moto
  reads a whole object for each ranged GET, so both sides' objects are the same size);
  best of `--repeat`, both datasets opened once and warm (an untimed take first reads
  the metadata); the results checked equal.
- requests and bytes: lodtensor's from `cache_stats()` (a timed run's), and its first
  take after open (metadata included) counted by a proxy in front of moto
  (python/tests/counting_proxy.py); Lance's by the proxy, its first take after open and
  a second one (what its timed runs cost); untimed.
- CPU a take, mean over the timed runs: this process's (`getrusage`, user + system: the
  client and the kernel's receiving) and moto's (its `/proc/PID/stat`, Linux only).

Documents of int32 token ids (Zipf over a 50,257-word vocabulary), documents → sentences
of 1–16 → tokens of 4–48, one column `tokens` (large_list<large_list<int32>>).

    python python/bench/bench_take_remote.py --rows 100000 --shard-mib 4
    python python/bench/bench_take_remote.py --rows 100000 --shard-mib 4 --compression zstd --single 0

(a python with moto, boto3, urllib3, pylance and this lodtensor built in release;
`--no-lance` leaves Lance out, for a python without pylance).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import lodtensor as lt  # noqa: E402
from counting_proxy import CountingProxy  # noqa: E402
from s3_server import S3Server  # noqa: E402

VOCABULARY = 50257


def token_documents(rows: int, seed: int = 0, dtype: str = "int32") -> pa.Table:
    """`rows` documents of 1–16 sentences of 4–48 token ids of `dtype` (Zipf-distributed)."""
    rng = np.random.default_rng(seed)
    sentences = rng.integers(1, 17, rows)
    words = rng.integers(4, 49, int(sentences.sum()))
    ids = ((rng.zipf(1.1, int(words.sum())) - 1) % VOCABULARY).astype(dtype)
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


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) used so far by this process and by the process `pid`
    (moto; 0 where `/proc` is missing)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        other = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        other = 0.0
    return own.ru_utime + own.ru_stime, other


def cpu_per_run(pid: int, f, runs: int) -> tuple[list, float, float]:
    """`f()`'s results over `runs` runs, and the mean CPU milliseconds a run of this
    process and of `pid`."""
    before = cpu_seconds(pid)
    results = [f() for _ in range(runs)]
    after = cpu_seconds(pid)
    own, other = ((a - b) * 1e3 / runs for a, b in zip(after, before))
    return results, own, other


def stat_delta(ds, f) -> tuple[float, int, int]:
    """Seconds `f()` took, and the range requests and bytes `ds` made meanwhile."""
    before = ds.cache_stats()
    seconds = timed(f)
    after = ds.cache_stats()
    return seconds, after["range_requests"] - before["range_requests"], after["range_bytes"] - before["range_bytes"]


def ms(values) -> str:
    p50, p99 = np.percentile(np.asarray(values) * 1e3, [50, 99])
    return f"{p50:.2f} / {p99:.2f}"


def recorded_gets(url, proxied, proxy, warm, rows, work) -> list[list[tuple[str, str]]]:
    """The ranged GETs (path, Range) a take of each row of `rows` sends, seen by the proxy
    (a dataset of its own, its shards' metadata read first by a take of `warm`)."""
    recorded = lt.open(url, storage_options=proxied, cache_dir=work / "cache-record")
    recorded.take(warm)
    gets = []
    for r in rows:
        proxy.reset()
        recorded.take([int(r)])
        gets.append([(path, rng) for method, path, rng in proxy.requests() if method == "GET"])
    return gets


def replay(server: S3Server):
    """Functions that send a row's recorded GETs one after another and read the bodies: by
    boto3 (`get_object`, one client), and by urllib3 (one pool) over presigned URLs (the
    bare HTTP request, no per-call work of botocore)."""
    import urllib3

    client, pool, signed = server.client(), urllib3.PoolManager(), {}

    def by_boto3(gets) -> None:
        for path, rng in gets:
            bucket, key = path.lstrip("/").split("/", 1)
            client.get_object(Bucket=bucket, Key=key, Range=rng)["Body"].read()

    def by_urllib3(gets) -> None:
        for path, rng in gets:
            assert pool.request("GET", signed[path], headers={"Range": rng}).status == 206

    def presign(paths) -> None:
        for path in paths:
            bucket, key = path.lstrip("/").split("/", 1)
            params = {"Bucket": bucket, "Key": key}
            signed[path] = client.generate_presigned_url("get_object", Params=params, ExpiresIn=3600)

    return by_boto3, by_urllib3, presign


def single_rows(url, direct, proxied, proxy, server, lance_open, rows, work) -> list[str]:
    """Markdown rows of the single-row latencies: lodtensor, its GETs replayed by boto3 and
    by urllib3, Lance (`lance_open(endpoint)` opens its dataset); each row's four timed one
    after another, so that the machine's load weighs on all alike."""
    ds = lt.open(url, storage_options=direct, cache_dir=work / "cache-single")
    warm = [int(o) for o in ds.shard_offsets[:-1]]
    gets = recorded_gets(url, proxied, proxy, warm, rows, work)
    by_boto3, by_urllib3, presign = replay(server)
    presign({path for g in gets for path, _ in g})
    lance_ds = lance_open(server.endpoint) if lance_open else None
    ds.take(warm)
    if lance_ds is not None:
        lance_ds.take(warm)
    times: dict[str, list[float]] = {"ours": [], "boto3": [], "urllib3": [], "lance": []}
    requests, nbytes = [], []
    for r, row_gets in zip(rows, gets):
        seconds, n, b = stat_delta(ds, lambda: ds.take([int(r)]))
        times["ours"].append(seconds)
        requests.append(n)
        nbytes.append(b)
        times["boto3"].append(timed(lambda: by_boto3(row_gets)))
        times["urllib3"].append(timed(lambda: by_urllib3(row_gets)))
        if lance_ds is not None:
            times["lance"].append(timed(lambda: lance_ds.take([int(r)])))
    assert ds.cache_stats()["shards_downloaded"] == 0
    assert [len(g) for g in gets] == requests, "the proxy saw other requests than cache_stats counts"
    same = f"{np.mean(requests):.2f} | {np.mean(nbytes):,.0f} |"
    out = [
        f"| single row, lodtensor `take([r])` | {ms(times['ours'])} | {same}",
        f"| single row, boto3 `get_object` of the same ranges | {ms(times['boto3'])} | {same}",
        f"| single row, urllib3 GETs of the same ranges (presigned) | {ms(times['urllib3'])} | {same}",
    ]
    if lance_open:
        lance_counted = lance_open(proxy.endpoint)
        lance_counted.take(warm)
        lance_costs = [counted(proxy, lambda: lance_counted.take([int(r)])) for r in rows]
        out.append(
            f"| single row, Lance `take([r])` | {ms(times['lance'])} | proxy: {np.mean([c[0] for c in lance_costs]):.2f} "
            f"| proxy: {np.mean([c[1] for c in lance_costs]):,.0f} |"
        )
    for name in ("boto3", "urllib3", "lance")[: 3 if lance_open else 2]:
        p50, p99 = (np.percentile(times["ours"], q) / np.percentile(times[name], q) for q in (50, 99))
        out.append(f"| ratio lodtensor / {name} (p50 / p99) | {p50:.2f}× / {p99:.2f}× | | |")
    return out


def counted(proxy: CountingProxy, f) -> tuple[int, int]:
    """Requests and body bytes the proxy saw during `f()`."""
    proxy.reset()
    f()
    return sum(proxy.counts().values()), sum(proxy.body_bytes().values())


def many_rows(url, direct, proxied, proxy, lance_url, lance_direct, lance_proxied, takes, repeat, rng, work, moto):
    """Markdown rows of the takes of `takes` random rows: times (best of `repeat`), rows/s,
    requests and bytes (a timed run's from cache_stats; both sides' first take after open
    through the proxy, and Lance's second; `lance_url` None: lodtensor alone), CPU a take
    of this process and of moto (pid `moto`). Compressed
    shards too are read by ranges (each record batch holding a row read whole, into
    memory; nothing downloaded): the dataset is opened once either way."""
    ds = lt.open(url, storage_options=direct, cache_dir=work / "cache-many")
    if lance_url is not None:
        import lance

        lance_ds = lance.dataset(lance_url, storage_options=lance_direct)
    out = []
    for n in takes:
        rows = rng.integers(0, ds.num_rows, n)
        index = pa.array(rows, pa.uint64())
        first = ds.take(rows)  # the shards' metadata read before the timed runs
        runs, own_cpu, moto_cpu = cpu_per_run(moto, lambda: stat_delta(ds, lambda: ds.take(rows)), repeat)
        ours, requests, nbytes = min(runs)
        assert ds.cache_stats()["shards_downloaded"] == 0
        fresh = lt.open(url, storage_options=proxied, cache_dir=work / f"cache-count-{n}")
        ours_cold = counted(proxy, lambda: fresh.take(rows))
        out.append(
            f"| take {n:,}, lodtensor | {ours * 1e3:,.0f} ms ({n / ours / 1e3:,.1f} k rows/s) | {requests:,} "
            f"(first take after open, proxy: {ours_cold[0]:,}) | {nbytes:,} (first take, proxy: {ours_cold[1]:,}) "
            f"| {own_cpu:.0f} / {moto_cpu:.0f} ms |"
        )
        if lance_url is None:
            print(out[-1], flush=True)
            continue
        ours_table = pa.Table.from_batches([first.to_pyarrow()])
        theirs_table = lance_ds.take(index)
        times, their_cpu, their_moto = cpu_per_run(moto, lambda: timed(lambda: lance_ds.take(index)), repeat)
        theirs = min(times)
        assert theirs_table.cast(ours_table.schema).equals(ours_table), "lodtensor and Lance disagree"
        lance_fresh = lance.dataset(lance_url, storage_options=lance_proxied)
        theirs_cold = counted(proxy, lambda: lance_fresh.take(index))
        theirs_warm = counted(proxy, lambda: lance_fresh.take(index))
        out += [
            f"| take {n:,}, Lance | {theirs * 1e3:,.0f} ms ({n / theirs / 1e3:,.1f} k rows/s) | proxy: {theirs_warm[0]:,} "
            f"(first take after open {theirs_cold[0]:,}) | proxy: {theirs_warm[1]:,} (first take {theirs_cold[1]:,}) "
            f"| {their_cpu:.0f} / {their_moto:.0f} ms |",
            f"| take {n:,}, lodtensor time / Lance time | {ours / theirs:.2f}× | | | |",
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
    parser.add_argument(
        "--dtype",
        choices=["int32", "uint16"],
        default="int32",
        help="the ids' type (uint16: as `lt.tokenize` writes ids of a vocabulary under 65,536)",
    )
    parser.add_argument("--no-lance", action="store_true", help="lodtensor and the bare GETs alone")
    parser.add_argument(
        "--compression",
        choices=["zstd", "lz4"],
        help="shards' record batches compressed: a take downloads their shards (requests: shards, bytes: downloaded)",
    )
    args = parser.parse_args()
    if not args.no_lance:
        import lance

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    work = Path(tempfile.mkdtemp(prefix="lt-take-remote-"))
    server = S3Server()
    proxy = CountingProxy(server.port)
    try:
        table = token_documents(args.rows, dtype=args.dtype)
        local = work / "local"
        start = time.perf_counter()
        lt.write_shards(local, table, shard_bytes=args.shard_mib << 20, compression=args.compression)
        url = server.upload_dir(local, "bench", "tokens")
        written = time.perf_counter() - start
        ds = lt.open(local)
        size = sum(s["bytes"] for s in ds.shards)
        tokens = len(table.column("tokens").combine_chunks().flatten().flatten())
        print(
            f"{args.rows:,} documents, {tokens:,} tokens; lodtensor {size / 2**20:.1f} MiB in {ds.num_shards} shards "
            f"(written + uploaded in {written:.1f} s, compression {args.compression}); lodtensor {lt.__version__}",
            flush=True,
        )
        lance_url = None if args.no_lance else "s3://bench/lance/tokens.lance"
        if lance_url is not None:
            start = time.perf_counter()
            shard_rows = max(s["rows"] for s in ds.shards)
            lance.write_dataset(
                table, lance_url, storage_options=lance_options(server.endpoint), max_rows_per_file=shard_rows
            )
            lance_written = time.perf_counter() - start
            lance_ds = lance.dataset(lance_url, storage_options=lance_options(server.endpoint))
            lance_files = [f for frag in lance_ds.get_fragments() for f in frag.data_files()]
            print(
                f"Lance {len(lance_files)} data files of up to {shard_rows:,} rows (the shards' most), format "
                f"{lance_ds.data_storage_version} (written in {lance_written:.1f} s); pylance {lance.__version__}",
                flush=True,
            )
        direct, proxied = server.storage_options(), server.storage_options(proxy.endpoint)
        rng = np.random.default_rng(7)
        lines = ["| what | time | requests | bytes | CPU a take: this process / moto |", "| --- | --- | --- | --- | --- |"]
        rows = rng.integers(0, args.rows, args.single)

        def lance_open(endpoint: str):
            return lance.dataset(lance_url, storage_options=lance_options(endpoint))

        if args.single:
            lines += single_rows(
                url, direct, proxied, proxy, server, None if lance_url is None else lance_open, rows, work
            )
        print("\n".join(lines), flush=True)
        takes = [int(n) for n in args.takes.split(",") if n]
        lines += many_rows(
            url, direct, proxied, proxy, lance_url, lance_options(server.endpoint),
            lance_options(proxy.endpoint), takes, args.repeat, rng, work, server.process.pid,
        )
        print("\nsingle row: ms p50 / p99; requests and bytes: mean per row (cache_stats)")
        print("\n".join(lines))
    finally:
        proxy.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
