"""The lengths index (format-spec section 7.2) at cluster scale: ranks as processes over
several cache directories (simulated nodes) against moto's S3 server behind a request
counter. With the index, a node downloads the manifest and the index once (each rank
checks the manifest's freshness with a HEAD) and each shard once; without it, every rank
range-reads every shard's metadata.

LODTENSOR_INDEX_SHARDS, LODTENSOR_INDEX_NODES and LODTENSOR_INDEX_RANKS set the shard,
node and ranks-per-node counts (default 120, 2 and 2, to keep the test short on two
cores; `LODTENSOR_INDEX_SHARDS=2000 pytest -s -k reads_the_manifest` is the large run)."""

import json
import multiprocessing
import os
import shutil
import time

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("moto")
pytest.importorskip("boto3")

import lodtensor as lt  # noqa: E402
from counting_proxy import CountingProxy  # noqa: E402
from s3_server import S3Server  # noqa: E402

SHARDS = int(os.environ.get("LODTENSOR_INDEX_SHARDS", "120"))
NODES = int(os.environ.get("LODTENSOR_INDEX_NODES", "2"))
RANKS = int(os.environ.get("LODTENSOR_INDEX_RANKS", "2"))
WORKERS = 2  # DataLoader workers per rank, in the torch run


@pytest.fixture(scope="module")
def store():
    server = S3Server()
    proxy = CountingProxy(server.port)
    yield server, proxy
    proxy.close()
    server.stop()


def tokens(rows: int, seed: int) -> pa.Table:
    """Documents of 1-40 token ids in sentences of 1-4."""
    rng = np.random.default_rng(seed)
    sentences = rng.integers(1, 5, rows)
    words = rng.integers(1, 11, int(sentences.sum()))
    ids = pa.array(rng.integers(0, 50_000, int(words.sum())), pa.int32())
    sents = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(words)], pa.int64()), ids)
    docs = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(sentences)], pa.int64()), sents)
    return pa.table({"tokens": docs})


@pytest.fixture(scope="module")
def datasets(store, tmp_path_factory):
    """One local dataset of SHARDS shards of 5 documents, uploaded twice: as written (with
    its index) and with the manifest's index dropped (as an earlier version wrote it)."""
    server, _ = store
    local = tmp_path_factory.mktemp("index") / "tokens"
    manifest = lt.write_shards(local, tokens(SHARDS * 5, seed=1), shard_rows=5)
    assert len(manifest["index"]) == 1 and manifest["index"][0]["shards"] == SHARDS
    indexed = server.upload_dir(local, "cluster", "indexed")
    (local / "_lodtensor.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "index"}))
    plain = server.upload_dir(local, "cluster", "plain")
    return indexed, plain


def _rank(url, options, cache_dir, mode, rank, world, queue):
    start = time.monotonic()
    ds = lt.open(url, storage_options=options, cache_dir=cache_dir)
    loader = ds.loader(**mode, rank=rank, world_size=world)
    first = None
    samples = 0
    for batch in loader:
        first = first or time.monotonic() - start
        samples += len(batch.samples)
    queue.put((rank, samples, first, ds.cache_stats()))


def _rank_with_workers(url, options, cache_dir, mode, rank, world, queue):
    """A rank whose batches come from a torch DataLoader of 2 workers (each worker a rank
    of the loader, as `lodtensor.torch.BatchDataset` splits the epoch)."""
    from torch.utils.data import DataLoader

    from lodtensor.torch import BatchDataset

    start = time.monotonic()
    ds = BatchDataset(url, storage_options=options, cache_dir=cache_dir, rank=rank, world_size=world, **mode)
    first = None
    samples = 0
    for item in DataLoader(ds, batch_size=None, num_workers=WORKERS):
        first = first or time.monotonic() - start
        samples += len(item["samples"])
    queue.put((rank, samples, first, None))


def run_cluster(url, options, cache_root, mode, rank=_rank, nodes=NODES):
    """`nodes` nodes of RANKS ranks (processes, each running `rank`), one after the other;
    per node the requests the store saw, and every rank's result."""
    context = multiprocessing.get_context("spawn")
    _, proxy = STORE
    per_node, ranks = [], []
    world = nodes * RANKS
    for node in range(nodes):
        proxy.reset()
        queue = context.Queue()
        cache = cache_root / f"node{node}"
        processes = [
            context.Process(target=rank, args=(url, options, cache, mode, node * RANKS + r, world, queue))
            for r in range(RANKS)
        ]
        for p in processes:
            p.start()
        ranks += [queue.get(timeout=300) for _ in processes]
        for p in processes:
            p.join(timeout=60)
            assert p.exitcode == 0
        per_node.append(proxy.counts())
    return per_node, ranks


def summary(counts):
    get = lambda pred: sum(n for (m, name, ranged), n in counts.items() if m == "GET" and pred(name, ranged))  # noqa: E731
    return {
        "manifest": get(lambda n, r: n == "_lodtensor.json"),
        "manifest_heads": counts[("HEAD", "_lodtensor.json", False)],
        "index": get(lambda n, r: n.startswith("_lodtensor.index.")),
        "shard_gets": get(lambda n, r: n.endswith(".arrow") and not n.startswith("_")),
        "most_gets_of_a_shard": max(
            (n for (m, name, _), n in counts.items() if m == "GET" and name.startswith("part-")), default=0
        ),
        "requests": sum(counts.values()),
    }


MODES = [
    {"token_budget": 120, "shuffle": True, "seed": 3},
    {"batch_size": 4, "pack": 32, "shuffle": True, "seed": 5},
]


@pytest.mark.parametrize("mode", MODES, ids=["token_budget", "pack"])
def test_a_node_reads_the_manifest_and_index_once_and_each_shard_once(store, datasets, tmp_path, mode):
    global STORE
    STORE = store
    server, proxy = store
    options = server.storage_options(proxy.endpoint)
    indexed, plain = datasets
    nodes, ranks = run_cluster(indexed, options, tmp_path / "indexed", mode)
    for n, counts in enumerate(nodes):
        firsts = [r[2] for r in ranks[n * RANKS : (n + 1) * RANKS]]
        print(f"\nnode {n} indexed: {summary(counts)}, first batch after {max(f or 0 for f in firsts):.1f} s")
    before = []
    # The unindexed run once, beside the first mode (LODTENSOR_INDEX_PLAIN=0: not at all).
    if mode is MODES[0] and os.environ.get("LODTENSOR_INDEX_PLAIN") != "0":
        before, _ = run_cluster(plain, options, tmp_path / "plain", mode)
    print(f"\n{SHARDS} shards, {NODES} nodes of {RANKS} ranks, {mode}")
    for n, with_index in enumerate(nodes):
        without = summary(before[n]) if before else "not run"
        print(f"node {n}: indexed {summary(with_index)}; unindexed {without}")
    for counts in nodes:
        s = summary(counts)
        # Metadata: the manifest and the index downloaded once per node, and one freshness
        # check (HEAD) of the manifest per rank.
        assert (s["manifest"], s["index"], s["manifest_heads"]) == (1, 1, RANKS)
        # Nothing of a shard read to plan: each shard the node's ranks read downloaded once
        # (one range request: the shards are small), none read twice.
        assert s["most_gets_of_a_shard"] == 1 and s["shard_gets"] <= SHARDS
    # The unindexed run range-read every shard's metadata (tail, head), on every rank.
    assert all(summary(c)["shard_gets"] >= 2 * RANKS * SHARDS for c in before)
    assert sum(r[1] for r in ranks) > 0
    for _, _, _, stats in ranks:
        assert stats["metadata_requests"] <= 1


def test_ranks_with_2_dataloader_workers_each_read_the_metadata_once_per_node(store, datasets, tmp_path):
    pytest.importorskip("torch")
    global STORE
    STORE = store
    server, proxy = store
    options = server.storage_options(proxy.endpoint)
    indexed, _ = datasets
    # One node: what a node reads does not depend on the others (the test above runs several).
    nodes, ranks = run_cluster(indexed, options, tmp_path / "torch", MODES[0], rank=_rank_with_workers, nodes=1)
    print(f"\n{SHARDS} shards, 1 node of {RANKS} ranks of {WORKERS} DataLoader workers")
    for n, counts in enumerate(nodes):
        firsts = [r[2] for r in ranks[n * RANKS : (n + 1) * RANKS]]
        print(f"node {n}: {summary(counts)}, first batch after {max(f or 0 for f in firsts):.1f} s")
    for counts in nodes:
        s = summary(counts)
        # The manifest and the index downloaded once per node however many processes start;
        # a freshness check (HEAD) per process that opens the dataset: each rank's, and
        # each of its workers' (a worker reopens what the rank opened).
        assert (s["manifest"], s["index"]) == (1, 1)
        assert s["manifest_heads"] <= RANKS * (1 + WORKERS)
        assert s["most_gets_of_a_shard"] == 1 and s["shard_gets"] <= SHARDS
    # Every sample read once over the epoch, across ranks and workers.
    assert sum(r[1] for r in ranks) == SHARDS * 5


def test_a_compressed_dataset_plans_without_a_download(store, tmp_path):
    server, proxy = store
    server.client().create_bucket(Bucket="packed")
    url, options = "s3://packed/zstd/", server.storage_options(proxy.endpoint)
    lt.write_shards(url, tokens(60, seed=2), shard_rows=10, compression="zstd", storage_options=options)
    proxy.reset()
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    loader = ds.loader(token_budget=100, shuffle=True, seed=1)
    assert ds.cache_stats()["shards_downloaded"] == 0
    assert summary(proxy.counts())["shard_gets"] == 0  # planned from the index alone
    assert sum(len(b.samples) for b in loader) == 60


def test_an_old_dataset_plans_as_before_and_index_makes_it_indexed(store, tmp_path):
    server, proxy = store
    local = tmp_path / "old"
    lt.write_shards(local, tokens(40, seed=4), shard_rows=10)
    manifest = json.loads((local / "_lodtensor.json").read_text())
    manifest.pop("index")
    (local / "_lodtensor.json").write_text(json.dumps(manifest))
    url = server.upload_dir(local, "old", "tokens")
    options = server.storage_options(proxy.endpoint)
    mode = {"token_budget": 80, "shuffle": True, "seed": 2}
    expected = [b.samples.tolist() for b in lt.open(local).loader(**mode)]
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path / "a")
    assert [b.samples.tolist() for b in ds.loader(**mode)] == expected
    assert ds.cache_stats()["metadata_requests"] >= 4  # measured from the shards
    indexed = lt.index(url, storage_options=options)
    assert indexed["index"][0]["shards"] == 4
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path / "b")
    assert [b.samples.tolist() for b in ds.loader(**mode)] == expected
    assert ds.cache_stats()["metadata_requests"] == 1  # the index object
    # The same locally, and a commit then appends to the index.
    assert len(lt.index(local)["index"]) == 1
    appended = lt.write_shards(local, tokens(10, seed=5), shard_rows=10, mode="append")
    assert [e["shards"] for e in appended["index"]] == [4, 1]


def test_pending_writers_to_a_url_commit_an_index(store, tmp_path):
    server, proxy = store
    server.client().create_bucket(Bucket="pending")
    url, options = "s3://pending/tokens/", server.storage_options(proxy.endpoint)
    for i, prefix in enumerate(["w0", "w1"]):
        lt.write_shards(url, tokens(20, seed=i), shard_rows=10, mode="pending", prefix=prefix, storage_options=options)
    manifest = lt.commit(url, storage_options=options)
    assert [e["shards"] for e in manifest["index"]] == [4]
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    local = [b.samples.tolist() for b in ds.loader(token_budget=50)]
    assert sum(map(len, local)) == 40
    assert ds.cache_stats()["metadata_requests"] == 1


def test_a_lying_index_is_refused_naming_the_shard(store, tmp_path):
    server, proxy = store
    local = tmp_path / "lying"
    lt.write_shards(local, tokens(30, seed=6), shard_rows=10)
    manifest = json.loads((local / "_lodtensor.json").read_text())
    manifest["shards"][1]["columns"][0]["elements"] += 1  # the index now disagrees
    shutil.copy(local / "_lodtensor.json", tmp_path / "kept.json")
    (local / "_lodtensor.json").write_text(json.dumps(manifest))
    url = server.upload_dir(local, "lying", "tokens")
    ds = lt.open(url, storage_options=server.storage_options(proxy.endpoint), cache_dir=tmp_path / "c")
    with pytest.raises(lt.LodTensorError, match="part-00001.arrow"):
        ds.loader(token_budget=40)


@pytest.mark.parametrize("world", [1, 64, 4096])
def test_loader_state_stays_small_at_any_world_size(tmp_path, world):
    local = tmp_path / "s"
    lt.write_shards(local, tokens(50, seed=7), shard_rows=5)
    ds = lt.open(local)
    loader = ds.loader(token_budget=40, shuffle=True, seed=1, rank=world - 1, world_size=world, drop_last=False)
    for _ in zip(range(2), loader):
        pass
    assert len(json.dumps(loader.state_dict())) <= 1024


def test_mixture_state_stays_small_with_8_sources(tmp_path):
    sources = []
    for i in range(8):
        lt.write_shards(tmp_path / f"m{i}", tokens(20, seed=i), shard_rows=5)
        sources.append(lt.open(tmp_path / f"m{i}"))
    loader = lt.mix(sources, weights=[1] * 8, seed=3).loader(token_budget=40, shuffle=True, seed=1, world_size=64)
    for _ in zip(range(3), loader):
        pass
    assert len(json.dumps(loader.state_dict())) <= 1024 + 16 * 8
