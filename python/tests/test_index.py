"""The lengths index (format-spec section 7.2) at cluster scale: ranks as processes over
several cache directories (simulated nodes) against moto's S3 server behind a request
counter. With the index, a node downloads the manifest and the index once (each rank
checks the manifest's freshness with a HEAD) and each shard once; without it, every rank
range-reads every shard's metadata.

The issue's size by default: 2,000 shards, 4 nodes of 4 ranks, a whole shuffled epoch of a
`token_budget` and of a `pack` loader; the unindexed comparison is one rank's start, since
its cost is per rank (a node of R ranks makes R times its requests).
LODTENSOR_INDEX_SHARDS, LODTENSOR_INDEX_NODES and LODTENSOR_INDEX_RANKS change the sizes.
Ranks fork from a forkserver that has imported lodtensor and torch (cluster_rank.py), nodes
run one after the other, the dataset goes into moto's backend in one request, the proxy
answers repeated GETs of a shard from memory (each node asks for most shards; moto is
asked once) and the datasets and caches are in /dev/shm, so the run costs about what the
ranks do (docs/remote.md, "Tests")."""

import contextlib
import json
import multiprocessing
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("moto")
pytest.importorskip("boto3")

import lodtensor as lt  # noqa: E402
from cluster_rank import rank, rank_with_workers  # noqa: E402
from counting_proxy import CountingProxy  # noqa: E402
from s3_server import S3Server  # noqa: E402

SHARDS = int(os.environ.get("LODTENSOR_INDEX_SHARDS", "2000"))
NODES = int(os.environ.get("LODTENSOR_INDEX_NODES", "4"))
RANKS = int(os.environ.get("LODTENSOR_INDEX_RANKS", "4"))
TORCH_SHARDS = 120  # the DataLoader workers' test: a smaller dataset, one node
WORKERS = 2  # DataLoader workers per rank, in the torch run
# A rank forks from a server that has imported these once (importing torch takes seconds
# of CPU; a module missing is skipped); test_torch_dataset.py asks for the same but ours.
multiprocessing.set_forkserver_preload(["torch", "lodtensor.torch", "cluster_rank"])


@pytest.fixture(scope="module")
def store():
    server = S3Server()
    proxy = CountingProxy(server.port, immutable=lambda name: name.startswith("part-"))
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
def memory(tmp_path_factory):
    """A directory in memory (/dev/shm) when the system has one, else a temporary one: the
    datasets written here and the nodes' caches pay no `fsync` on a disk (a shard
    written or downloaded is synced: thousands of them would take most of the run)."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="lodtensor-index-", dir=shm)) if shm.is_dir() else tmp_path_factory.mktemp("memory")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def upload(server, name: str, shards: int, memory: Path) -> tuple[str, dict]:
    """A dataset of `shards` shards of 5 documents written locally (with its index) and
    uploaded under `name`: its URL and manifest."""
    local = memory / name
    manifest = lt.write_shards(local, tokens(shards * 5, seed=1), shard_rows=5)
    assert len(manifest["index"]) == 1 and manifest["index"][0]["shards"] == shards
    return server.upload_dir(local, "cluster", name), manifest


@pytest.fixture(scope="module")
def dataset(store, memory):
    """SHARDS shards of 5 documents in the bucket, as written (with the index)."""
    return upload(store[0], "tokens", SHARDS, memory)


@contextlib.contextmanager
def without_index(server, url: str, manifest: dict):
    """The dataset at `url` as an earlier version wrote it (the manifest's index entry
    dropped) while the block runs; its manifest restored after."""
    bucket, prefix = url.removeprefix("s3://").split("/", 1)
    client = server.client()
    unindexed = {k: v for k, v in manifest.items() if k != "index"}
    client.put_object(Bucket=bucket, Key=f"{prefix}_lodtensor.json", Body=json.dumps(unindexed).encode())
    try:
        yield
    finally:
        client.put_object(Bucket=bucket, Key=f"{prefix}_lodtensor.json", Body=json.dumps(manifest).encode())


def run_cluster(store, url, cache_root, mode, target=rank, nodes=NODES, ranks=RANKS, **kwargs):
    """`nodes` nodes of `ranks` ranks (processes, each running `target`), one node after
    the other, each node's ranks at once; per node the requests the store saw, and every
    rank's result."""
    context = multiprocessing.get_context("forkserver")
    server, proxy = store
    options = server.storage_options(proxy.endpoint)
    per_node, results = [], []
    world = nodes * ranks
    for node in range(nodes):
        proxy.reset()
        queue = context.Queue()
        cache = cache_root / f"node{node}"
        processes = [
            context.Process(
                target=target,
                args=(url, options, cache, mode, node * ranks + r, world, time.time(), queue),
                kwargs=kwargs,
            )
            for r in range(ranks)
        ]
        for p in processes:
            p.start()
        results += [queue.get(timeout=300) for _ in processes]
        for p in processes:
            p.join(timeout=60)
            assert p.exitcode == 0
        per_node.append(proxy.counts())
    return per_node, results


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


def first_batch(results) -> str:
    firsts = [r[2] or 0 for r in results]
    return f"first batch {min(firsts):.1f}-{max(firsts):.1f} s after each rank's start"


MODES = [
    {"token_budget": 120, "shuffle": True, "seed": 3},
    {"batch_size": 4, "pack": 32, "shuffle": True, "seed": 5},
]


@pytest.mark.parametrize("mode", MODES, ids=["token_budget", "pack"])
def test_a_node_reads_the_manifest_and_index_once_and_each_shard_once(store, dataset, memory, mode):
    server, _ = store
    url, manifest = dataset
    caches = Path(tempfile.mkdtemp(dir=memory))
    nodes, ranks = run_cluster(store, url, caches / "indexed", mode)
    plain, plain_rank = [], []
    # Without the index (once, beside the first mode), one rank's start (open, plan, first
    # batch) in the same world: what it asks for, every rank of every node asks for again.
    if mode is MODES[0]:
        with without_index(server, url, manifest):
            plain, plain_rank = run_cluster(store, url, caches / "plain", mode, nodes=1, ranks=1, epoch=False)
    print(f"\n{SHARDS} shards, {NODES} nodes of {RANKS} ranks, {mode}")
    for n, counts in enumerate(nodes):
        print(f"node {n}, indexed: {summary(counts)}, {first_batch(ranks[n * RANKS : (n + 1) * RANKS])}")
    for counts in plain:
        print(f"one rank, unindexed: {summary(counts)}, {first_batch(plain_rank)}")
    for counts in nodes:
        s = summary(counts)
        # Metadata: the manifest and the index downloaded once per node, and one freshness
        # check (HEAD) of the manifest per rank.
        assert (s["manifest"], s["index"], s["manifest_heads"]) == (1, 1, RANKS)
        # Nothing of a shard read to plan: each shard the node's ranks read downloaded once
        # (one range request: the shards are small), none read twice.
        assert s["most_gets_of_a_shard"] == 1 and s["shard_gets"] <= SHARDS
    # Every sample read once over the epoch, across the nodes' ranks.
    if "pack" not in mode:
        assert sum(r[1] for r in ranks) == SHARDS * 5
    assert all(stats["metadata_requests"] <= 1 for _, _, _, stats in ranks)
    # The unindexed rank range-read every shard's metadata (its tail and head) to plan.
    for counts, (_, _, _, stats) in zip(plain, plain_rank):
        assert summary(counts)["shard_gets"] >= 2 * SHARDS
        assert stats["metadata_requests"] >= 2 * SHARDS


@pytest.fixture(scope="module")
def small_dataset(store, memory):
    return upload(store[0], "small", TORCH_SHARDS, memory)


def test_ranks_with_2_dataloader_workers_each_read_the_metadata_once_per_node(store, small_dataset, memory):
    pytest.importorskip("torch")
    url, _ = small_dataset
    # One node: what a node reads does not depend on the others (the test above runs several).
    nodes, ranks = run_cluster(store, url, memory / "torch", MODES[0], rank_with_workers, nodes=1, workers=WORKERS)
    print(f"\n{TORCH_SHARDS} shards, 1 node of {RANKS} ranks of {WORKERS} DataLoader workers")
    print(f"node 0: {summary(nodes[0])}, {first_batch(ranks)}")
    s = summary(nodes[0])
    # The manifest and the index downloaded once per node however many processes start;
    # a freshness check (HEAD) per process that opens the dataset: each rank's, and
    # each of its workers' (a worker reopens what the rank opened).
    assert (s["manifest"], s["index"]) == (1, 1)
    assert s["manifest_heads"] <= RANKS * (1 + WORKERS)
    assert s["most_gets_of_a_shard"] == 1 and s["shard_gets"] <= TORCH_SHARDS
    # Every sample read once over the epoch, across ranks and workers.
    assert sum(r[1] for r in ranks) == TORCH_SHARDS * 5


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


def small_state(loader, sources: int = 0) -> dict:
    """The loader's state, checked to be at most 1 KiB as JSON, plus 16 bytes a source of
    a mixture (issue 39)."""
    state = loader.state_dict()
    size = len(json.dumps(state))
    print(f"state of {size} characters: {json.dumps(state)}")
    assert size <= 1024 + 16 * sources, state
    return state


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    """50,000 documents in 10 shards: enough that a state at world 4,096 is mid-epoch."""
    local = tmp_path_factory.mktemp("state") / "s"
    lt.write_shards(local, tokens(50_000, seed=7), shard_rows=5_000)
    return local


WORLDS = [1, 64, 4096]
SCHEDULES = {
    "fixed": dict(token_budget=40),
    "batch_size_schedule": dict(batch_size=[(0, 2), (60, 5), (200, 3)]),
    "token_budget_schedule": dict(token_budget=[(0, 40), (60, 80), (200, 120)]),
}


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("options", SCHEDULES.values(), ids=SCHEDULES.keys())
def test_loader_state_stays_small_at_any_world_size(documents, world, options):
    loader = lt.open(documents).loader(**options, shuffle=True, seed=1, rank=world - 1, world_size=world)
    for _ in zip(range(2), loader):
        pass
    state = small_state(loader)
    assert state["epoch"] == 0 and state["batch"] > 0  # mid-epoch


@pytest.mark.parametrize("world", WORLDS)
def test_a_state_resumed_under_other_options_stays_small(documents, world):
    common = dict(shuffle=True, seed=1, elastic=True, rank=world - 1, world_size=world)
    first = lt.open(documents).loader(token_budget=[(0, 40), (60, 80), (200, 120)], **common)
    next(iter(first))
    # Other options from here: the first part closed, its options kept in the state.
    loader = lt.open(documents).loader(token_budget=[(0, 50), (100, 90)], **common)
    loader.load_state_dict(first.state_dict())
    next(iter(loader))
    state = small_state(loader)
    assert [p["end"] for p in state["parts"]] == [world, 2 * world]


def test_mixture_state_stays_small_with_8_sources(tmp_path):
    sources = []
    for i in range(8):
        lt.write_shards(tmp_path / f"m{i}", tokens(20, seed=i), shard_rows=5)
        sources.append(lt.open(tmp_path / f"m{i}"))
    loader = lt.mix(sources, weights=[1] * 8, seed=3).loader(token_budget=40, shuffle=True, seed=1, world_size=64)
    for _ in zip(range(3), loader):
        pass
    small_state(loader, sources=8)
