"""Sharded datasets in object storage: lt.open("s3://…") against moto's S3 server on
127.0.0.1, read through the node's shard cache exactly as the local dataset."""

import json
import multiprocessing
import os
import pickle
import shutil
import time

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("moto")
pytest.importorskip("boto3")

import lodtensor as lt  # noqa: E402
from conftest import documents, inside_mapping, ray_init  # noqa: E402
from counting_proxy import CountingProxy  # noqa: E402
from s3_server import FaultProxy, S3Server, s3  # noqa: E402, F401 (s3: the fixture)
from script_run import run_json  # noqa: E402

LOADER_MODES = [
    {"batch_size": 7},
    {"token_budget": 60, "shuffle": True, "seed": 3},
    {"batch_size": 5, "shuffle": True, "seed": 7, "chunk_rows": 8, "window": 16},
    {"batch_size": 4, "buckets": [5, 20], "shuffle": True, "seed": 1, "rank": 1, "world_size": 3},
]


@pytest.fixture(scope="module")
def remote(s3, shards_dir):
    """The 7-shard dataset of `shards_dir`, uploaded: (url, storage options)."""
    return s3.upload_dir(shards_dir, "data", "docs"), s3.storage_options()


def open_remote(remote, cache_dir, **kwargs):
    url, options = remote
    return lt.open(url, storage_options=options, cache_dir=cache_dir, **kwargs)


def batches(ds, options):
    return [(b.samples.tolist(), b.to_pyarrow()) for b in ds.loader(**options)]


def test_the_remote_dataset_reads_as_the_local_one(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    ds = open_remote(remote, tmp_path)
    assert isinstance(ds, lt.ShardedDataset)
    assert ds.url == remote[0]
    assert (ds.num_rows, ds.num_shards, ds.column_names) == (200, 7, local.column_names)
    assert ds.cache_stats()["bytes_downloaded"] == 0  # opening reads the manifest only
    assert ds.row(95).equals(local.row(95))
    assert ds.cache_stats()["shards_downloaded"] == 0  # the row's bytes alone, by ranges
    assert ds.cache_stats()["range_requests"] >= 1
    assert ds.to_pyarrow().equals(local.to_pyarrow())
    stats = ds.cache_stats()
    assert stats["shards_downloaded"] == 7
    assert stats["bytes_downloaded"] == sum(s["bytes"] for s in local.shards)
    for options in LOADER_MODES:
        assert batches(ds, options) == batches(local, options), options


def test_a_batch_size_loader_downloads_a_shard_when_a_batch_reads_it(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    total = sum(s["bytes"] for s in local.shards)
    # A cache of a quarter of the dataset: no room to download ahead.
    ds = open_remote(remote, tmp_path, cache_limit=total // 4)
    loader = ds.loader(batch_size=5)
    assert ds.cache_stats()["shards_downloaded"] == 0  # building read the manifest only
    expected = local.loader(batch_size=5)
    seen = [next(iter(loader)).to_pyarrow()]
    assert ds.cache_stats()["shards_downloaded"] == 1  # the first batch: the first shard
    seen += [b.to_pyarrow() for b in loader]
    assert seen == [b.to_pyarrow() for b in expected]
    stats = ds.cache_stats()
    assert stats["shards_downloaded"] == 7
    assert stats["bytes_downloaded"] <= total * 1.05


def test_take_reads_rows_by_range_requests_without_downloading_a_shard(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    ds = open_remote(remote, tmp_path)
    rows = np.random.default_rng(2).integers(0, 200, 25)
    taken = ds.take(rows)
    assert taken.samples.tolist() == rows.tolist()
    assert taken.to_pyarrow().equals(local.take(rows).to_pyarrow())
    stats = ds.cache_stats()
    assert (stats["shards_downloaded"], stats["bytes_downloaded"]) == (0, 0)
    assert stats["range_requests"] > 0 and stats["range_bytes"] > 0
    name = local.column_names[-1]
    assert ds.take([5, 3], columns=[name]).to_pyarrow().equals(local.take([5, 3], columns=[name]).to_pyarrow())


def test_range_gap_zero_reads_the_rows_own_bytes_alone_and_pickles(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    rows = np.random.default_rng(5).integers(0, 200, 40)
    merged = open_remote(remote, tmp_path / "merged")
    exact = open_remote(remote, tmp_path / "exact", range_gap=0)
    assert exact.take(rows).to_pyarrow().equals(local.take(rows).to_pyarrow())
    assert merged.take(rows).to_pyarrow().equals(local.take(rows).to_pyarrow())
    own, gapped = exact.cache_stats(), merged.cache_stats()
    # Merging across gaps: fewer requests, more bytes; none: about the rows' bytes.
    assert gapped["range_requests"] < own["range_requests"], (gapped, own)
    assert gapped["range_bytes"] > own["range_bytes"], (gapped, own)
    again = pickle.loads(pickle.dumps(exact))
    again.take(rows)
    assert again.cache_stats()["range_bytes"] == own["range_bytes"]
    with pytest.raises(lt.ArgumentError, match="range_gap"):
        lt.open(shards_dir, range_gap=0)


def test_a_row_over_a_url_is_one_range_request_and_the_next_process_reads_no_metadata(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    ds = open_remote(remote, tmp_path)
    rows = [2, 40, 95, 130, 199]  # one a shard: far apart
    for row in rows:
        assert ds.row(row).equals(local.row(row))
    stats = ds.cache_stats()
    # Every level of every column in one round, from the lengths index.
    assert stats["range_requests"] == len(rows), stats
    assert (stats["shards_downloaded"], stats["bytes_downloaded"]) == (0, 0)
    assert ds[-1].equals(local[199]) and ds.cache_stats()["range_requests"] == len(rows) + 1
    # Another process on the node finds the footers, messages and index in the cache.
    again = open_remote(remote, tmp_path)
    for row in rows:
        assert again[row].equals(local[row])
    stats = again.cache_stats()
    assert (stats["metadata_requests"], stats["range_requests"]) == (0, len(rows)), stats


def test_a_loader_reading_by_ranges_gives_the_default_loader_s_batches(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    ds = open_remote(remote, tmp_path)
    # (The Rust tests compare more modes: tests/it/remote/take.rs.)
    # Few, large batches: each is a round of range requests per level on moto.
    modes = [{"token_budget": 600, "shuffle": True, "seed": 3}, {"batch_size": 40, "pack": 16, "shuffle": True, "seed": 2}]
    for options in modes:
        ranged = [(b.samples.tolist(), b.to_pyarrow()) for b in ds.loader(cache="ranges", **options)]
        assert ranged == batches(local, options), options
    stats = ds.cache_stats()
    assert (stats["shards_downloaded"], stats["bytes_downloaded"]) == (0, 0)
    assert stats["range_bytes"] > 0
    with pytest.raises(lt.ArgumentError, match="cache"):
        ds.loader(cache="disk")


def test_a_packed_shuffled_epoch_by_ranges_keeps_a_split_document_for_its_second_window(s3, tmp_path):
    # 3,000 documents of 100-299 token ids in windows of 256: most documents are split
    # between two windows, which the shuffle puts in batches far apart (1,182 batches).
    rng = np.random.default_rng(0)
    lengths = rng.integers(100, 300, 3000)
    ids = pa.array(rng.integers(0, 50_000, int(lengths.sum())).astype(np.uint16))
    docs = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(lengths)], pa.int64()), ids)
    lt.write_shards(tmp_path / "local", pa.table({"ids": docs}), shard_rows=500)
    url = s3.upload_dir(tmp_path / "local", "split", "docs")
    ds = lt.open(url, storage_options=s3.storage_options(), cache_dir=tmp_path / "cache")
    options = {"batch_size": 2, "pack": 256, "shuffle": True, "seed": 1}
    ranged = [b.to_pyarrow() for b in ds.loader(cache="ranges", **options)]
    assert ranged == [b.to_pyarrow() for b in lt.open(tmp_path / "local").loader(**options)]
    # A document read for its first window is held for its second when that comes within
    # the rounds read ahead: 99 requests; 503 when it was read again (one a batch or so).
    assert ds.cache_stats()["range_requests"] < len(ranged) / 4, (ds.cache_stats(), len(ranged))


def test_vacuum_of_a_url_removes_what_an_overwrite_left_once_older_than_the_grace(s3, tmp_path):
    options = s3.storage_options()
    s3.client().create_bucket(Bucket="swept")
    url = "s3://swept/docs/"
    old = lt.write_shards(url, documents(40, seed=1), shard_rows=10, storage_options=options)
    new = lt.write_shards(url, documents(20, seed=2), shard_rows=10, mode="overwrite", storage_options=options)
    left = sorted(url + s["file"] for s in old["shards"] if s["file"] not in {n["file"] for n in new["shards"]})
    assert left
    assert lt.vacuum(url, storage_options=options) == []  # younger than a day
    assert sorted(lt.vacuum(url, grace=0, storage_options=options)) == left
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    assert ds.num_rows == 20
    ds.validate()  # every shard of the new manifest downloaded and checked
    with pytest.raises(lt.ArgumentError, match="storage_options"):
        lt.vacuum(tmp_path, storage_options=options)


# A child process reading through a proxy of its own (Python threads, in that process) whose
# every GET waits a while: its first batch taken, the loader is dropped while the prefetch
# thread still waits for the proxy's answers.
DROP_WHILE_PREFETCHING = """
import json, sys, time
sys.path.insert(0, sys.argv[5])
import lodtensor as lt
import counting_proxy

url, options, cache, port = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
forward = counting_proxy._Handler._forward

def slowly(handler):
    time.sleep(0.05)
    forward(handler)

counting_proxy._Handler.do_GET = slowly
proxy = counting_proxy.CountingProxy(port)
ds = lt.open(url, storage_options={**options, "aws_endpoint": proxy.endpoint}, cache_dir=cache)
loader = ds.loader(batch_size=1, prefetch=4, cache="ranges")
it = iter(loader)
first = next(it).samples.tolist()
del it, loader
print(json.dumps({"first": first, "requests": sum(proxy.counts().values())}))
"""


def test_a_loader_dropped_while_its_thread_waits_for_this_process_lets_it_finish(s3, remote, tmp_path):
    # Dropping a prefetching loader joins its thread, whose requests wait for the proxy's
    # threads: joined with the GIL held, neither would end (the child's timeout fails this).
    script = tmp_path / "drop.py"
    script.write_text(DROP_WHILE_PREFETCHING)
    url, options = remote
    tests = os.path.dirname(os.path.abspath(__file__))
    got = run_json(script, url, json.dumps(options), tmp_path / "cache", s3.port, tests, timeout=60)
    assert got["first"] == [0]
    assert got["requests"] > 1, got  # the thread read ahead


def test_a_second_open_downloads_nothing(remote, tmp_path):
    first = open_remote(remote, tmp_path)
    first.to_pyarrow()
    again = open_remote(remote, tmp_path)
    for _ in again.loader(batch_size=16, shuffle=True, seed=1):
        pass
    stats = again.cache_stats()
    assert stats["bytes_downloaded"] == 0 and stats["shards_downloaded"] == 0
    assert stats["shards_cached"] == 7


def test_a_pickled_remote_dataset_opens_the_url_again(remote, tmp_path):
    ds = open_remote(remote, tmp_path, cache_limit="1GB")
    back = pickle.loads(pickle.dumps(ds))
    assert back.url == ds.url and back.num_rows == 200
    assert back.row(3).equals(ds.row(3))


def _read_all(url, options, cache_dir, queue):
    ds = lt.open(url, storage_options=options, cache_dir=cache_dir)
    ds.to_pyarrow()
    queue.put(ds.cache_stats()["shards_downloaded"])


def test_four_processes_sharing_a_cache_download_each_shard_once(remote, tmp_path):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [
        context.Process(target=_read_all, args=(*remote, tmp_path, queue)) for _ in range(4)
    ]
    for p in processes:
        p.start()
    downloads = [queue.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(downloads) == 7, downloads


def _shard_in_child(ds, shard, queue):
    queue.put(ds.reader([shard]).read_all().num_rows)


def test_a_child_forked_while_shards_download_ahead_reads_them(s3, tmp_path):
    # A DataLoader worker forked while the parent's threads download the next shards: the
    # child must not inherit their download locks (it would wait on them forever).
    s3.client().create_bucket(Bucket="forked")
    url, options = "s3://forked/docs/", s3.storage_options()
    lt.write_shards(url, documents(100, seed=5), shard_rows=10, storage_options=options)
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    ds.reader([0]).read_all()  # starts downloading shards 1.. ahead
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_shard_in_child, args=(ds, 5, queue))
    child.start()
    assert queue.get(timeout=60) == 10
    child.join(timeout=30)
    assert child.exitcode == 0


def test_a_killed_download_leaves_nothing_trusted(remote, tmp_path):
    ds = open_remote(remote, tmp_path)
    first = ds.reader([0]).read_all()  # (`row` would read by ranges: no download)
    (entry,) = [p for p in tmp_path.rglob("*part-00000.arrow")]
    # A download killed half way: a temporary file of half the bytes, no entry.
    size = entry.stat().st_size
    half = entry.read_bytes()[: size // 2]
    entry.unlink()
    stale = entry.with_name(entry.name + ".tmp-999999")
    stale.write_bytes(half)
    again = open_remote(remote, tmp_path)
    assert again.reader([0]).read_all().equals(first)
    assert again.cache_stats()["shards_downloaded"] >= 1
    assert entry.stat().st_size == size
    assert not stale.exists()
    # A truncated entry (not one this cache wrote) is not trusted either.
    entry.unlink()  # (not truncated in place: `again` maps it)
    entry.write_bytes(half)
    third = open_remote(remote, tmp_path)
    assert third.reader([0]).read_all().equals(first)
    assert third.cache_stats()["shards_downloaded"] >= 1


def flip_middle_byte(path):
    """Flips one bit of the byte in the middle of the file `path`."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_a_remote_shard_is_refused_naming_it(s3, shards_dir, tmp_path):
    local = tmp_path / "local"
    shutil.copytree(shards_dir, local)
    shard = local / "part-00002.arrow"
    flip_middle_byte(shard)
    url = s3.upload_dir(local, "data", "flipped")
    ds = lt.open(url, storage_options=s3.storage_options(), cache_dir=tmp_path / "cache")
    ds.reader([0]).read_all()
    # A download is checked whole (`row` reads by ranges: the CRC covers the whole object).
    with pytest.raises(lt.InvalidFileError, match=r"flipped/part-00002\.arrow.*crc32c"):
        ds.validate()
    # Downloads ahead (of the other shards, and of this one again) finish by themselves.
    deadline = time.monotonic() + 60
    while list((tmp_path / "cache").rglob("*.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not list((tmp_path / "cache").rglob("*.tmp-*"))
    assert not list((tmp_path / "cache").rglob("*part-00002.arrow"))  # no entry


def test_a_remote_shard_shorter_than_the_manifest_says_is_refused_naming_it(s3, shards_dir, tmp_path):
    # The download streams the body into the cache's file: an object that ends early is
    # requested again from where it stopped, then refused by its size, not trusted.
    local = tmp_path / "local"
    shutil.copytree(shards_dir, local)
    shard = local / "part-00001.arrow"
    shard.write_bytes(shard.read_bytes()[:-1000])
    url = s3.upload_dir(local, "data", "short")
    ds = lt.open(url, storage_options=s3.storage_options(), cache_dir=tmp_path / "cache")
    with pytest.raises(lt.InvalidFileError, match=r"short/part-00001\.arrow.*bytes"):
        list(ds.loader(batch_size=1000))
    assert not list((tmp_path / "cache").rglob("*part-00001.arrow"))  # no entry


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_a_compressed_remote_shard_is_decompressed_once_then_mapped(s3, tmp_path, compression):
    local = tmp_path / "local"
    lt.write_shards(local, documents(60, seed=3), shard_rows=20, compression=compression)
    url = s3.upload_dir(local, "data", f"compressed-{compression}")
    options, cache = s3.storage_options(), tmp_path / "cache"
    first = lt.open(url, storage_options=options, cache_dir=cache)
    assert first.to_pyarrow().equals(lt.open(local).to_pyarrow())
    compressed = sum(s["bytes"] for s in first.shards)
    assert first.cache_stats()["bytes_downloaded"] == compressed
    del first
    again = lt.open(url, storage_options=options, cache_dir=cache)
    for i, shard in enumerate(again.shards):
        entry = next(cache.rglob(f"*-{shard['file']}"))
        assert entry.stat().st_size > shard["bytes"]  # held decompressed
        for batch in again.reader([i]):
            values = batch.column("tokens").flatten().flatten().to_numpy_ndarray()
            assert values.size == 0 or inside_mapping(values, entry), shard["file"]  # zero-copy
    assert again.cache_stats()["bytes_downloaded"] == 0
    assert again.cache_stats()["shards_downloaded"] == 0


def test_rows_of_a_compressed_remote_shard_read_their_record_batch_whole_into_memory(s3, tmp_path):
    local = tmp_path / "local"
    lt.write_shards(local, documents(60, seed=3), shard_rows=20, batch_bytes=4096, compression="zstd")
    url = s3.upload_dir(local, "data", "take-zstd")
    ds = lt.open(url, storage_options=s3.storage_options(), cache_dir=tmp_path / "cache")
    rows = [45, 3, 21, 3]
    assert ds.take(rows).to_pyarrow().equals(lt.open(local).take(rows).to_pyarrow())
    stats = ds.cache_stats()
    assert (stats["shards_downloaded"], stats["bytes_downloaded"]) == (0, 0), stats
    assert 0 < stats["range_bytes"] < sum(s["bytes"] for s in ds.shards), stats
    assert not list((tmp_path / "cache").rglob("*.arrow"))  # nothing written


def test_a_flipped_byte_in_a_compressed_remote_shard_is_refused_naming_it(s3, tmp_path):
    local = tmp_path / "local"
    lt.write_shards(local, documents(60, seed=3), shard_rows=20, compression="zstd")
    shard = local / "part-00001.arrow"
    flip_middle_byte(shard)
    url = s3.upload_dir(local, "data", "flipped-zstd")
    ds = lt.open(url, storage_options=s3.storage_options(), cache_dir=tmp_path / "cache")
    # Read through the cache (a row is read by ranges: checked for its structure only).
    with pytest.raises(lt.InvalidFileError, match=r"flipped-zstd/part-00001\.arrow.*crc32c"):
        list(ds.loader(batch_size=1000))
    assert not list((tmp_path / "cache").rglob("*part-00001.arrow*.sum"))


def test_errors_name_the_fault(s3, remote, tmp_path):
    url, options = remote
    with pytest.raises(FileNotFoundError, match="s3://no-such-bucket/x/_lodtensor.json"):
        lt.open("s3://no-such-bucket/x/", storage_options=options, cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="no manifest"):
        lt.open(url + "nothing/", storage_options=options, cache_dir=tmp_path)
    with pytest.raises(lt.ArgumentError, match="storage_options"):
        lt.open(url, storage_options={**options, "no_such_key": "1"}, cache_dir=tmp_path)
    with pytest.raises(lt.ArgumentError, match="size"):
        lt.open(url, storage_options=options, cache_dir=tmp_path, cache_limit="lots")
    with pytest.raises(lt.ArgumentError, match="url"):
        lt.open("ftp://host/x/", cache_dir=tmp_path)
    with pytest.raises(lt.ArgumentError, match="only for a URL"):
        lt.open(tmp_path, cache_dir=tmp_path)


def test_an_https_store_is_read_over_tls_and_its_certificate_checked(s3, remote, shards_dir, tmp_path):
    proxy = CountingProxy(s3.port, tls=True)
    try:
        url, options = remote
        options = {**options, "aws_endpoint": proxy.endpoint}
        # A self-signed certificate is refused unless the options accept it.
        with pytest.raises(OSError, match=r"_lodtensor\.json.*(certificate|UnknownIssuer)"):
            lt.open(url, storage_options=options, cache_dir=tmp_path / "refused")
        ds = lt.open(url, storage_options={**options, "allow_invalid_certificates": "true"}, cache_dir=tmp_path / "ok")
        assert ds.to_pyarrow().equals(lt.open(shards_dir).to_pyarrow())
        assert proxy.counts()[("GET", "_lodtensor.json", False)] >= 1
    finally:
        proxy.close()


def test_refused_credentials_are_a_permission_error():
    # moto checks credentials against its IAM once told to: these keys are unknown there.
    server = S3Server(env={"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        with pytest.raises(PermissionError, match=r"s3://data/x/_lodtensor\.json: (access denied|not authenticated)"):
            lt.open("s3://data/x/", storage_options=server.storage_options(), cache_dir="/tmp")
    finally:
        server.stop()


def test_dropped_connections_cost_retries_not_data(s3, remote, shards_dir, tmp_path):
    proxy = FaultProxy(s3.port, every=5)
    try:
        url, _ = remote
        ds = lt.open(url, storage_options=s3.storage_options(proxy.endpoint), cache_dir=tmp_path)
        assert ds.to_pyarrow().equals(lt.open(shards_dir).to_pyarrow())
        assert proxy.dropped > 0, proxy.accepted
    finally:
        proxy.close()


def _append(url, options, seed, rounds):
    for r in range(rounds):
        lt.write_shards(url, documents(20, seed=seed * 10 + r), mode="append", shard_rows=10,
                        storage_options=options)


def test_write_shards_to_a_url_and_concurrent_appenders_keep_every_shard(s3, tmp_path):
    s3.client().create_bucket(Bucket="written")
    url, options = "s3://written/docs/", s3.storage_options()
    manifest = lt.write_shards(url, documents(30, seed=4), shard_rows=10, storage_options=options)
    assert [s["file"] for s in manifest["shards"]] == ["part-00000.arrow", "part-00001.arrow", "part-00002.arrow"]
    with pytest.raises(FileExistsError, match="already there"):
        lt.write_shards(url, documents(5, seed=4), storage_options=options)
    assert lt.commit(url, storage_options=options) == manifest
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_append, args=(url, options, w, 3)) for w in (1, 2)]
    for p in writers:
        p.start()
    for p in writers:
        p.join(timeout=120)
        assert p.exitcode == 0
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    assert ds.num_rows == 30 + 2 * 3 * 20
    assert ds.num_shards == 3 + 2 * 3 * 2
    assert len({s["file"] for s in ds.shards}) == ds.num_shards
    ds.to_pyarrow()  # every shard there, its checksum right


def test_an_overwrite_of_a_url_replaces_its_manifest_and_keeps_the_old_objects(s3, tmp_path):
    options = s3.storage_options()
    url = "s3://data/overwritten/"
    lt.write_shards(url, documents(9, seed=2), shard_rows=4, storage_options=options)
    old = lt.open(url, storage_options=options, cache_dir=tmp_path / "old")
    newer = pa.table({"id": pa.array(range(5), pa.int64())})
    manifest = lt.write_shards(url, newer, mode="overwrite", shard_rows=2, storage_options=options)
    assert [s["rows"] for s in manifest["shards"]] == [2, 2, 1]
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path / "new")
    assert ds.to_pyarrow().column("id").to_pylist() == list(range(5))
    assert old.num_rows == 9 and old.to_pyarrow().num_rows == 9  # its shards are still there


def _write_pending(url, options, prefix, seed):
    remote = {} if options is None else {"storage_options": options}
    with lt.ShardWriter(url, mode="pending", prefix=prefix, shard_rows=10, **remote) as writer:
        writer.write(documents(25, seed=seed))


def test_pending_writers_to_a_url_are_committed_together(s3, tmp_path):
    s3.client().create_bucket(Bucket="pending")
    url, options = "s3://pending/docs/", s3.storage_options()
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_pending, args=(url, options, f"w{w}", w))
               for w in range(3)]
    for p in writers:
        p.start()
    for p in writers:
        p.join(timeout=120)
        assert p.exitcode == 0
    lt.write_shards(url, documents(5, seed=9), mode="pending", prefix="w1", storage_options=options)
    with pytest.raises(FileNotFoundError):
        lt.open(url, storage_options=options, cache_dir=tmp_path)  # nothing committed yet
    manifest = lt.commit(url, storage_options=options)
    assert lt.commit(url, storage_options=options) == manifest  # idempotent
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path / "cache")
    # The same writers into a directory, committed: the same dataset.
    local = tmp_path / "local"
    for w in range(3):
        _write_pending(str(local), None, f"w{w}", w)
    lt.write_shards(local, documents(5, seed=9), mode="pending", prefix="w1")
    lt.commit(local)
    assert ds.to_pyarrow().equals(lt.open(local).to_pyarrow())
    assert [s["file"] for s in ds.shards] == [s["file"] for s in lt.open(local).shards]
    assert [s["file"] for s in ds.shards][3:7] == [f"w1-0000{i}.arrow" for i in range(4)]
    listed = {o["Key"] for o in s3.client().list_objects_v2(Bucket="pending")["Contents"]}
    objects = [s["file"] for s in ds.shards] + [e["file"] for e in ds.manifest["index"]]
    assert listed == {f"docs/{name}" for name in objects} | {"docs/_lodtensor.json"}


def test_a_failed_writer_to_a_url_uploads_nothing(s3, tmp_path):
    s3.client().create_bucket(Bucket="failed")
    url, options = "s3://failed/docs/", s3.storage_options()
    with pytest.raises(RuntimeError, match="boom"):
        with lt.ShardWriter(url, shard_rows=10, storage_options=options) as writer:
            writer.write(documents(25, seed=0))
            raise RuntimeError("boom")
    assert "Contents" not in s3.client().list_objects_v2(Bucket="failed")
    with pytest.raises(FileNotFoundError, match="nothing to append|no sharded dataset"):
        lt.ShardWriter(url, mode="append", storage_options=options)


@pytest.mark.ray
def test_ray_data_reads_the_bucket(remote, shards_dir, tmp_path):
    ray = pytest.importorskip("ray")
    lray = pytest.importorskip("lodtensor.ray")
    ray_init()
    try:
        url, options = remote
        ds = lray.read_lodtensor(url, storage_options=options, cache_dir=tmp_path, columns=["tokens", "label"])
        tables = list(ds.iter_batches(batch_size=None, batch_format="pyarrow"))
        got = pa.concat_tables(tables).sort_by("label")
        expected = lt.open(shards_dir).to_pyarrow().select(["tokens", "label"]).sort_by("label")
        assert got.equals(expected)
    finally:
        ray.shutdown()


LENGTH_MODES = [
    {"token_budget": 60},
    {"token_budget": 50, "shuffle": True, "seed": 3, "chunk_rows": 8},
    {"token_budget": 40, "shuffle": True, "seed": 5, "chunk_rows": 8, "window": 16, "rank": 1, "world_size": 2},
    {"batch_size": 4, "buckets": [5, 20], "shuffle": True, "seed": 1},
    {"batch_size": 4, "buckets": 3, "elastic": True, "rank": 0, "world_size": 2, "drop_last": True},
    {"batch_size": 5, "shuffle": True, "seed": 7, "chunk_rows": 8},
    {"batch_size": 2, "pack": 16},
    {"batch_size": 3, "pack": 12, "pack_split": False, "shuffle": True, "seed": 2},
]


def test_a_length_needing_loader_reads_metadata_then_the_shards_its_batches_read(remote, shards_dir, tmp_path):
    local = lt.open(shards_dir)
    total = sum(s["bytes"] for s in local.shards)
    ds = open_remote(remote, tmp_path)
    for options in LENGTH_MODES:
        assert batches(ds, options) == batches(local, options), options
        # A state saved by the eager loader over the local dataset resumes on the lazy one.
        eager = local.loader(**options)
        it = iter(eager)
        next(it)
        state = eager.state_dict()
        lazy = ds.loader(**options)
        lazy.load_state_dict(state)
        assert [b.to_pyarrow() for b in lazy] == [b.to_pyarrow() for b in it], options


def test_building_a_token_budget_loader_downloads_metadata_only(s3, tmp_path):
    # 200 documents of 16-128 tokens of float32[32] in 4 shards of about 450 kB.
    rng = np.random.default_rng(0)
    lengths = rng.integers(16, 128, 200)
    values = pa.array(rng.standard_normal(int(lengths.sum()) * 32, dtype=np.float32))
    tokens = pa.LargeListArray.from_arrays(
        pa.array(np.r_[0, np.cumsum(lengths)], pa.int64()), pa.FixedSizeListArray.from_arrays(values, 32)
    )
    s3.client().create_bucket(Bucket="budget")
    url, options = "s3://budget/docs/", s3.storage_options()
    manifest = lt.write_shards(url, pa.table({"tokens": tokens}), shard_rows=50, storage_options=options)
    total = sum(s["bytes"] for s in manifest["shards"])
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    loader = ds.loader(token_budget=1000, shuffle=True, seed=3, chunk_rows=10, window=16)
    stats = ds.cache_stats()
    assert stats["bytes_downloaded"] == 0 and stats["shards_downloaded"] == 0
    assert 0 < stats["metadata_bytes"] <= total * 0.05, (stats, total)
    first = next(iter(loader))
    # The first batch's shard, and the next ones downloaded ahead.
    assert ds.cache_stats()["shards_downloaded"] >= 1
    assert first.tokens <= 1000 or first.is_oversize
