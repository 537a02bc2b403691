"""The concurrency contract from Python (docs/shards.md): writers appending at once lose no
row, staged shards stay invisible to pyarrow.dataset until committed, and lt.vacuum removes
what killed writers left, never a live writer's files."""

import os
import threading

import pyarrow as pa
import pyarrow.dataset as pds
import pytest

import lodtensor as lt
from conftest import documents


def labelled(first: int, n: int) -> pa.Table:
    table = documents(n, seed=first)
    return table.set_column(1, "label", pa.array(range(first, first + n), pa.int64()))


def discovered_rows(path) -> int:
    return pds.dataset(path, format="ipc").count_rows()


def test_threads_appending_at_once_lose_no_row(tmp_path):
    path = tmp_path / "ds"
    lt.write_shards(path, labelled(0, 0))
    for rnd in range(5):
        barrier = threading.Barrier(4)

        def work(w, rnd=rnd, barrier=barrier):
            writer = lt.ShardWriter(path, mode="append", shard_rows=3)
            writer.write(labelled((rnd * 4 + w) * 7, 7))
            barrier.wait()
            writer.finish()

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    ds = lt.open(path)
    ds.validate()
    assert sorted(ds.to_pyarrow().column("label").to_pylist()) == list(range(140))
    assert discovered_rows(path) == 140


def test_staged_shards_are_invisible_until_the_commit(tmp_path):
    path = tmp_path / "ds"
    lt.write_shards(path, labelled(0, 10), shard_rows=5)
    writer = lt.ShardWriter(path, mode="append", shard_rows=2)
    writer.write(labelled(10, 9))  # four shards closed and staged, one open
    assert discovered_rows(path) == lt.open(path).num_rows == 10
    writer.finish()
    assert discovered_rows(path) == lt.open(path).num_rows == 19
    lt.write_shards(path, labelled(19, 4), mode="pending", prefix="w0")
    assert discovered_rows(path) == 19
    lt.commit(path)
    assert discovered_rows(path) == 23


def test_vacuum_removes_what_no_manifest_references(tmp_path):
    path = tmp_path / "ds"
    lt.write_shards(path, labelled(0, 6), shard_rows=3)
    live = lt.ShardWriter(path, mode="append", shard_rows=1)
    live.write(labelled(6, 2))
    dead = path / "_pending" / "part-dead"
    dead.mkdir()
    (dead / "part-00000.arrow").write_bytes(b"left by a killed writer")
    (path / "part-00042.arrow").write_bytes(b"left by an older writer")
    assert lt.vacuum(path) == [], "younger than the grace period"
    removed = lt.vacuum(path, grace=0)
    assert sorted(removed) == sorted(
        [str(dead / "part-00000.arrow"), str(path / "part-00042.arrow")]
    )
    assert all(isinstance(p, str) for p in removed)
    live.finish()  # its staged shards were left alone
    ds = lt.open(path)
    ds.validate()
    assert ds.to_pyarrow().column("label").to_pylist() == list(range(8))
    with pytest.raises(lt.LodTensorError, match="grace"):
        lt.vacuum(path, grace=-1)
    with pytest.raises(FileNotFoundError, match="not a sharded dataset"):
        lt.vacuum(tmp_path)
    assert os.path.exists(path / "_lodtensor.json")
    assert not (path / "_pending").exists(), "emptied, it goes too"
