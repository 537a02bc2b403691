"""Start-up at scale in object storage: bench_start.py's dataset (`--shards` shards of `--rows`
documents of 1–64 `int32` ids) written locally by `lt.write_shards` (with its lengths index)
and loaded into moto's S3 server on 127.0.0.1 (python/tests/s3_server.py),
beside the same documents written by MosaicML Streaming's `MDSWriter` into as many shards
(`flush_shard()` every `--rows` documents, so its `index.json` lists the same number). Every
request goes through the counting HTTP proxy of the tests (python/tests/counting_proxy.py).

Every rank of `--nodes` nodes of `--ranks` ranks starts at once, as a process, each node
with a cache directory of its own and its own counting proxy; each rank opens the dataset, builds its shuffled loader (the epoch's
plan) and takes its first batch, then exits. Per node: the requests the store answered and
their bytes, metadata (manifest, index, `index.json`, shards' range reads to plan) apart
from shard downloads; per rank: the steps' times, the time from the process's start to its
first batch, the peak RSS of the whole process (`VmHWM`) and above its baseline after import.

Rows: lodtensor with the index (a `token_budget` loader and a `pack` loader); without it (the
manifest's index entry removed in the bucket, as a dataset written before the index: every
rank range-reads every shard's metadata; `--plain-nodes` nodes of `--plain-ranks` ranks, since
its cost is per rank); Streaming's `StreamingDataset` (shuffled, `batch_size` the budget's
mean number of documents), run by `--streaming-python` (an interpreter with
mosaicml-streaming; skipped when it has none).

    nice -n 10 .venv/bin/python python/bench/bench_start_remote.py --shards 20000 --rows 20 \\
        --streaming-python /path/to/python-with-streaming
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_start import batches, status_kib, write  # noqa: E402
from s3_server import free_port  # noqa: E402

BUCKET = "start"
MEAN_DOCUMENT = 32.5  # ids a document, on average (1–64, uniform)
MODES = {
    "token_budget": {"token_budget": 65536, "shuffle": True, "seed": 1},
    "pack": {"batch_size": 32, "pack": 2048, "shuffle": True, "seed": 1},
}


def lodtensor_rank(spec: dict) -> dict:
    """One lodtensor rank's start (in a child process)."""
    import lodtensor as lt

    base = status_kib()
    t0 = time.time()
    ds = lt.open(spec["url"], storage_options=spec["options"], cache_dir=spec["cache"])
    t1 = time.time()
    loader = ds.loader(**spec["mode"], rank=spec["rank"], world_size=spec["world"])
    t2 = time.time()
    batch = next(iter(loader))
    t3 = time.time()
    stats = ds.cache_stats()
    return {
        "open_s": t1 - t0, "plan_s": t2 - t1, "first_batch_s": t3 - t2, "from_start_s": t3 - spec["started"],
        "peak_mib": status_kib() / 1024, "above_import_mib": (status_kib() - base) / 1024,
        "downloads": stats["shards_downloaded"], "download_bytes": stats["bytes_downloaded"],
        "samples": len(batch.samples),
    }


def streaming_rank(spec: dict) -> dict:
    """One Streaming rank's start (in a child process whose environment names the rank)."""
    import streaming

    base = status_kib()
    t0 = time.time()
    ds = streaming.StreamingDataset(
        remote=spec["url"], local=spec["cache"], shuffle=True, shuffle_seed=1, batch_size=spec["batch"]
    )
    t1 = time.time()
    batch = list(itertools.islice(iter(ds), spec["batch"]))
    t3 = time.time()
    return {
        "open_s": t1 - t0, "plan_s": 0.0, "first_batch_s": t3 - t1, "from_start_s": t3 - spec["started"],
        "peak_mib": status_kib() / 1024, "above_import_mib": (status_kib() - base) / 1024,
        "samples": len(batch),
    }


def upload(server, local: Path, prefix: str) -> None:
    """Every file under `local` into the bucket under `prefix`, a manifest last, straight
    into moto's backend (`S3Server.load`: one request; 20,000 PUTs through boto3 took
    8–9 minutes, moto's Python per request on a loaded machine)."""
    files = sorted(p for p in local.rglob("*") if p.is_file() and not p.name.startswith("_lodtensor.lock"))
    files.sort(key=lambda p: p.name in ("_lodtensor.json", "index.json"))
    server.load(BUCKET, [(f"{prefix}/{p.relative_to(local).as_posix()}", p) for p in files])


def write_mds(out: Path, ids_file: Path, rows: int) -> None:
    """The documents of `ids_file` (offsets, ids) as MDS shards of `rows` documents each."""
    from streaming import MDSWriter

    data = np.load(ids_file)
    offsets, ids = data["offsets"], data["ids"]
    with MDSWriter(out=str(out), columns={"tokens": "ndarray:int32"}, size_limit=1 << 30) as w:
        for i in range(len(offsets) - 1):
            w.write({"tokens": ids[offsets[i] : offsets[i + 1]]})
            if (i + 1) % rows == 0 and i + 2 < len(offsets):
                w.flush_shard()  # then a new shard, as `write` does at its size limit
                w._reset_cache()


def prepare(args, server) -> tuple[dict, bool]:
    """The datasets written (once, kept under `--dir`) and uploaded: lodtensor's manifest
    and whether Streaming's copy is in the bucket."""
    local = args.dir / "lodtensor"
    if not (local / "_lodtensor.json").exists():
        write(local, args.shards, args.rows)
    start = time.perf_counter()
    upload(server, local, "lt")
    print(f"uploaded {args.shards:,} shards in {time.perf_counter() - start:.0f} s", flush=True)
    mds = args.dir / "mds"
    if args.streaming_python and not (mds / "index.json").exists():
        ids_file = args.dir / "documents.npz"
        parts = [b.column(0) for b in batches(args.shards, args.rows)]
        lengths = np.concatenate([pc.list_value_length(c).to_numpy() for c in parts])
        ids = np.concatenate([c.flatten().to_numpy() for c in parts])
        np.savez(ids_file, offsets=np.r_[0, np.cumsum(lengths)], ids=ids)
        child = [args.streaming_python, __file__, "--write-mds", str(mds), "--ids", str(ids_file), "--rows", str(args.rows)]
        subprocess.run(child, check=True)
        ids_file.unlink()
    if args.streaming_python:
        start = time.perf_counter()
        upload(server, mds, "mds")
        print(f"uploaded Streaming's copy in {time.perf_counter() - start:.0f} s", flush=True)
    return json.loads((local / "_lodtensor.json").read_text()), bool(args.streaming_python)


def run_nodes(proxies, python: str, specs: list[list[tuple[dict, dict]]]) -> list[tuple[list[dict], dict]]:
    """Every rank of every node (`(spec, environment)` each, a node's list each) started at
    once, node `n`'s through `proxies[n]`; per node its ranks' results and the requests and
    bytes the store answered it, by kind of object."""
    for proxy in proxies:
        proxy.reset()
    processes = []
    for node in specs:
        for spec, env in node:
            spec = {**spec, "started": time.time()}
            child = [python, __file__, "--rank-child", json.dumps(spec)]
            processes.append(subprocess.Popen(child, stdout=subprocess.PIPE, text=True, env={**os.environ, **env}))
    results = []
    for p in processes:
        out, _ = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"a rank failed ({p.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    out = []
    for n, proxy in enumerate(proxies):
        counts, sent = proxy.counts(), proxy.body_bytes()
        kinds: dict = {}
        for key, count in counts.items():
            method, name, _ = key
            kind = f"shard {method}" if name.startswith(("part-", "shard.")) else "metadata"
            requests, nbytes = kinds.get(kind, (0, 0))
            kinds[kind] = (requests + count, nbytes + sent[key])
        ranks = len(specs[n])
        out.append((results[n * ranks : (n + 1) * ranks], kinds))
    return out


def row(name: str, ranks: int, results: list[list[dict]], nodes: list[dict]) -> str:
    """A table row: per node (the largest of the nodes), per rank (the slowest, the largest)."""
    flat = [r for node in results for r in node]
    worst = lambda key: max(r[key] for r in flat)  # noqa: E731
    meta_req, meta_bytes, downloads, download_bytes = [], [], [], []
    for node, kinds in zip(results, nodes):
        requests, nbytes = kinds.get("metadata", (0, 0))
        shard_requests, shard_bytes = kinds.get("shard GET", (0, 0))
        # lodtensor reads a shard's metadata by range requests, counted apart by the rank
        # from its downloads (one request each: the shards are under 16 MiB); Streaming
        # reads none (its every GET of a shard is a download; HEADs are left out).
        down = sum(r.get("downloads", 0) for r in node) if "downloads" in node[0] else shard_requests
        down_bytes = sum(r.get("download_bytes", 0) for r in node) if "downloads" in node[0] else shard_bytes
        meta_req.append(requests + shard_requests - down)
        meta_bytes.append(nbytes + shard_bytes - down_bytes)
        downloads.append(down)
        download_bytes.append(down_bytes)
    return (
        f"| {name} | {ranks} | {max(meta_req):,} | {max(meta_bytes) / 2**20:.2f} MiB | {max(downloads):,} "
        f"({max(download_bytes) / 2**20:.1f} MiB) | {worst('open_s'):.2f} s | {worst('plan_s'):.2f} s "
        f"| {worst('first_batch_s'):.2f} s | {worst('from_start_s'):.1f} s | {worst('peak_mib'):.0f} MiB "
        f"(+{worst('above_import_mib'):.0f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--ranks", type=int, default=4, help="rank processes per node")
    parser.add_argument("--plain-nodes", type=int, default=1)
    parser.add_argument("--plain-ranks", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path("/dev/shm/lodtensor-start-remote"))
    parser.add_argument("--streaming-python", default=None)
    parser.add_argument("--rank-child")
    parser.add_argument("--write-mds", type=Path)
    parser.add_argument("--ids", type=Path)
    args = parser.parse_args()
    if args.rank_child:
        spec = json.loads(args.rank_child)
        run = streaming_rank if spec.get("streaming") else lodtensor_rank
        print(json.dumps(run(spec)))
        return
    if args.write_mds:
        write_mds(args.write_mds, args.ids, args.rows)
        return
    from counting_proxy import CountingProxy
    from s3_server import S3Server

    server = S3Server()
    # A proxy per node: what each node asks the store for, counted apart.
    proxies = [CountingProxy(server.port) for _ in range(max(args.nodes, args.plain_nodes))]
    try:
        bench(args, server, proxies)
    finally:
        for proxy in proxies:
            proxy.close()
        server.stop()


def bench(args, server, proxies) -> None:
    """Each contender's start, its table printed."""
    manifest, streaming = prepare(args, server)
    work = Path(tempfile.mkdtemp(prefix="lt-start-remote-"))
    world = args.nodes * args.ranks
    table = []

    def contender(name, nodes, ranks, make, python=sys.executable, together=True):
        """`nodes` nodes of `ranks` ranks, `make(cache, node, local rank, nodes, ranks)` the
        spec and environment of each; every node at once, or (`together=False`) one after
        the other."""
        specs = []
        for node in range(nodes):
            cache = work / f"{name}-node{node}".replace(" ", "_").replace("`", "")
            specs.append([make(cache, node, r, nodes, ranks) for r in range(ranks)])
        if together:
            runs = run_nodes(proxies[:nodes], python, specs)
        else:
            runs = [run_nodes([proxies[n]], python, [specs[n]])[0] for n in range(nodes)]
        results, kinds = [], []
        for node, (got, counted) in enumerate(runs):
            results.append(got)
            kinds.append(counted)
            print(f"{name}, node {node}: {counted}; {got}", flush=True)
        table.append(row(name, ranks, results, kinds))

    def lodtensor(mode):
        def make(cache, node, local, nodes, ranks):
            options = server.storage_options(proxies[node].endpoint)
            spec = {"url": f"s3://{BUCKET}/lt/", "options": options, "cache": str(cache), "mode": MODES[mode],
                    "rank": node * ranks + local, "world": nodes * ranks}
            return spec, {}
        return make

    for mode in MODES:
        contender(f"lodtensor, indexed, `{mode}`", args.nodes, args.ranks, lodtensor(mode))
    if streaming:
        access = server.storage_options()

        # Streaming's ranks of a node share memory under names a node's leader chooses: two
        # nodes on one machine collide. So its nodes start one after the other, each a
        # world of its own (a node's reads at start do not depend on the other nodes).
        masters: dict = {}

        def make(cache, node, local, nodes, ranks):
            master = masters.setdefault(node, free_port())
            batch = int(MODES["token_budget"]["token_budget"] / MEAN_DOCUMENT)
            spec = {"streaming": True, "url": f"s3://{BUCKET}/mds", "cache": str(cache), "batch": batch}
            env = {"S3_ENDPOINT_URL": proxies[node].endpoint, "AWS_ACCESS_KEY_ID": access["aws_access_key_id"],
                   "AWS_SECRET_ACCESS_KEY": access["aws_secret_access_key"], "AWS_DEFAULT_REGION": "us-east-1",
                   "RANK": str(local), "WORLD_SIZE": str(ranks), "LOCAL_RANK": str(local),
                   "LOCAL_WORLD_SIZE": str(ranks), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master)}
            return spec, env

        contender("Streaming `StreamingDataset`, shuffled", args.nodes, args.ranks, make, args.streaming_python, False)
    client = server.client()
    unindexed = {k: v for k, v in manifest.items() if k != "index"}
    client.put_object(Bucket=BUCKET, Key="lt/_lodtensor.json", Body=json.dumps(unindexed).encode())
    try:
        contender("lodtensor, no index, `token_budget`", args.plain_nodes, args.plain_ranks, lodtensor("token_budget"))
    finally:
        client.put_object(Bucket=BUCKET, Key="lt/_lodtensor.json", Body=json.dumps(manifest).encode())
    print(f"\n{args.shards:,} shards of {args.rows} documents, {manifest_size(args)} manifest; "
          f"{args.nodes} nodes of {args.ranks} ranks (world {world})")
    print("| start | ranks a node | metadata requests a node | metadata bytes a node | shard downloads a node "
          "| open | plan | first batch | process start to first batch | peak RSS (above import) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for line in table:
        print(line)


def manifest_size(args) -> str:
    return f"{(args.dir / 'lodtensor' / '_lodtensor.json').stat().st_size / 2**20:.1f} MiB"


if __name__ == "__main__":
    main()
