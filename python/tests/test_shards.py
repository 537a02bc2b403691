"""Sharded datasets from Python: lt.open(DIR), its views and streams, the writers, commit."""

import json
import os
import pickle
import threading

import crc32c
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pds
import pytest

import lodtensor as lt
from conftest import documents, inside_mapping, mapping_of


def shard_paths(path) -> list:
    return [path / s["file"] for s in lt.open(path).shards]


def test_metadata_comes_from_the_manifest(shards_dir, docs_path):
    ds = lt.open(shards_dir)
    assert isinstance(ds, lt.ShardedDataset)
    assert ds.num_rows == len(ds) == 200
    assert ds.num_shards == 7
    assert ds.column_names == ["tokens", "label", "ids"]
    assert ds.schema == lt.open(docs_path).schema
    assert ds.schema.metadata == lt.open(docs_path).schema.metadata
    np.testing.assert_array_equal(ds.shard_offsets, [0, 30, 60, 90, 120, 150, 180, 200])
    assert ds.manifest["format"] == "lodtensor.shards"
    for shard, path in zip(ds.shards, shard_paths(shards_dir)):
        data = path.read_bytes()
        assert shard["bytes"] == len(data)
        assert shard["crc32c"] == crc32c.crc32c(data)
        assert shard["columns"][0]["sequences"][0] == shard["rows"]


def test_opening_maps_no_shard_and_a_reader_maps_what_it_reaches(tmp_path):
    # A directory of its own: the session's `shards_dir` may still be mapped by a dataset
    # another test left to the garbage collector.
    path = tmp_path / "docs"
    lt.write_shards(path, documents(200, seed=1), shard_rows=30, batch_bytes=4096)
    ds = lt.open(path)
    paths = shard_paths(path)
    assert not any(mapping_of(p) for p in paths)
    reader = ds.reader([3])
    batch = reader.read_next_batch()
    assert batch.num_rows > 0
    assert mapping_of(paths[3])
    assert not any(mapping_of(p) for i, p in enumerate(paths) if i != 3)


@pytest.mark.parametrize("options", [{"token_budget": 300}, {"pack": 64, "batch_size": 2}])
def test_a_loader_by_lengths_plans_from_the_index_and_maps_what_it_reaches(tmp_path, options):
    path = tmp_path / "docs"
    lt.write_shards(path, documents(200, seed=1), shard_rows=30, batch_bytes=4096)
    ds = lt.open(path)
    paths = shard_paths(path)
    loader = ds.loader(**options, prefetch=0)
    assert not any(mapping_of(p) for p in paths)
    first = next(iter(loader))
    assert first.samples.max() < 30  # in shard 0
    assert [p for p in paths if mapping_of(p)] == paths[:1]
    eager = ds.loader(**options, prefetch=0, lazy_shards=False)
    assert first.samples.tolist() == next(iter(eager)).samples.tolist()


def test_to_pyarrow_equals_the_single_file_and_pyarrows_own_dataset(shards_dir, docs_path):
    ds = lt.open(shards_dir)
    expected = lt.open(docs_path).to_pyarrow()
    table = ds.to_pyarrow()
    assert table.schema == expected.schema
    assert table.equals(expected)
    assert pa.table(ds).equals(expected)
    assert pa.RecordBatchReader.from_stream(ds).read_all().equals(expected)
    # The manifest's leading `_` keeps pyarrow's discovery off it.
    discovered = pds.dataset(shards_dir, format="ipc").to_table()
    assert discovered.num_rows == 200
    assert discovered.equals(expected)


def test_reader_takes_the_shards_given_in_order(shards_dir, docs_path):
    ds = lt.open(shards_dir)
    expected = lt.open(docs_path).to_pyarrow()
    part = ds.reader([5, 1]).read_all()
    assert part.equals(pa.concat_tables([expected.slice(150, 30), expected.slice(30, 30)]))
    with pytest.raises(lt.LodTensorError, match="shard 7"):
        ds.reader([7])


def test_to_pyarrow_is_zero_copy(shards_dir):
    ds = lt.open(shards_dir)
    pool_before = pa.total_allocated_bytes()
    table = ds.to_pyarrow()
    assert pa.total_allocated_bytes() == pool_before
    paths = shard_paths(shards_dir)
    for chunk in table.column("tokens").chunks:
        values = chunk.flatten().flatten().to_numpy_ndarray()
        if values.size:
            assert any(inside_mapping(values, p) for p in paths)


def test_row_crosses_shard_boundaries(shards_dir, docs_path):
    ds = lt.open(shards_dir)
    expected = lt.open(docs_path).to_pyarrow()
    for row in [0, 29, 30, 31, 119, 199]:
        got = ds.row(row)
        assert isinstance(got, pa.RecordBatch) and got.num_rows == 1
        assert pa.Table.from_batches([got]).equals(expected.slice(row, 1))
        assert ds[row].equals(got) and ds[row - 200].equals(got)
    with pytest.raises(IndexError, match="200"):
        ds.row(200)
    with pytest.raises(IndexError, match="-201"):
        ds[-201]
    with pytest.warns(DeprecationWarning, match=r"ShardedDataset.sample\(row\) is deprecated"):
        assert ds.sample(31).equals(ds.row(31))


def test_offsets_over_shards_equal_the_single_files(shards_dir, docs_path):
    ds, file = lt.open(shards_dir), lt.open(docs_path)
    for column in ["tokens", "ids", "label"]:
        got, expected = ds.offsets(column), file.offsets(column)
        assert len(got) == len(expected)
        for level, (g, e) in enumerate(zip(got, expected)):
            np.testing.assert_array_equal(g, e)
            np.testing.assert_array_equal(ds.offsets(column, level), e)
    with pytest.raises(lt.LodTensorError, match="nope"):
        ds.offsets("nope")
    with pytest.warns(DeprecationWarning, match=r"ShardedDataset.lod\(column\) is deprecated"):
        assert len(ds.lod("tokens")) == 2


def test_pickles_by_path(shards_dir):
    ds = pickle.loads(pickle.dumps(lt.open(shards_dir)))
    assert isinstance(ds, lt.ShardedDataset) and ds.num_rows == 200


def copy_of(src, dst):
    dst.mkdir()
    for name in os.listdir(src):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def test_a_changed_shard_is_named_and_the_others_still_read(shards_dir, tmp_path):
    path = copy_of(shards_dir, tmp_path / "bad")
    victim = shard_paths(path)[2]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    ds = lt.open(path)  # the manifest alone: still fine
    with pytest.raises(lt.LodTensorError, match=rf"{victim.name}.*crc32c"):
        ds.validate()
    with pytest.raises(lt.LodTensorError, match=victim.name):
        ds.row(65)
    with pytest.raises(Exception, match=victim.name):
        ds.to_pyarrow()
    assert ds.row(10).num_rows == 1
    assert ds.reader([0, 1, 3]).read_all().num_rows == 90


def test_missing_shard_and_missing_manifest(shards_dir, tmp_path):
    path = copy_of(shards_dir, tmp_path / "gone")
    os.remove(shard_paths(path)[6])
    with pytest.raises(FileNotFoundError, match="part-00006.arrow"):
        lt.open(path).validate()
    os.remove(path / "_lodtensor.json")
    with pytest.raises(FileNotFoundError, match="_lodtensor.json"):
        lt.open(path)


def test_an_invalid_manifest_is_refused(tmp_path):
    (tmp_path / "_lodtensor.json").write_text('{"format": "something else"}')
    with pytest.raises(lt.LodTensorError, match="format"):
        lt.open(tmp_path)


def test_create_append_and_atomic_failure(tmp_path):
    table = documents(40, seed=9)
    path = tmp_path / "ds"
    manifest = lt.write_shards(path, table.slice(0, 25), shard_rows=10)
    assert [s["rows"] for s in manifest["shards"]] == [10, 10, 5]
    with pytest.raises(FileExistsError):
        lt.write_shards(path, table, shard_rows=10)
    lt.write_shards(path, table.slice(25), mode="append", shard_rows=10)
    ds = lt.open(path)
    assert ds.num_shards == 5 and ds.num_rows == 40
    assert ds.to_pyarrow().equals(lt.open(path).to_pyarrow())
    for name in table.column_names:
        assert ds.to_pyarrow().column(name).to_pylist() == table.column(name).to_pylist()
    before = (path / "_lodtensor.json").read_bytes()
    with pytest.raises(RuntimeError, match="stop"):
        with lt.ShardWriter(path, mode="append", shard_rows=10) as writer:
            writer.write(table)
            raise RuntimeError("stop")
    assert (path / "_lodtensor.json").read_bytes() == before
    lt.open(path).validate()


def test_an_overwrite_replaces_the_dataset_whatever_its_columns(tmp_path):
    path = tmp_path / "ds"
    lt.write_shards(path, documents(25, seed=1), shard_rows=10)
    old = lt.open(path)
    newer = pa.table({"id": pa.array(range(7), pa.int64())})
    manifest = lt.write_shards(path, newer, mode="overwrite", shard_rows=5)
    assert [s["rows"] for s in manifest["shards"]] == [5, 2]
    ds = lt.open(path)
    assert ds.to_pyarrow().column("id").to_pylist() == list(range(7))
    assert old.to_pyarrow().equals(documents(25, seed=1).cast(old.to_pyarrow().schema))  # read on
    assert len(lt.vacuum(path, grace=0)) == 3  # the old shards, once no reader needs them
    assert lt.open(path).num_rows == 7
    # Where no dataset is, an overwrite creates one.
    assert lt.write_shards(tmp_path / "new", newer, mode="overwrite")["shards"][0]["rows"] == 7


def test_writes_that_do_not_fit_are_refused(tmp_path):
    path = tmp_path / "ds"
    lt.write_shards(path, documents(5, seed=1))
    with pytest.raises(lt.LodTensorError, match="columns"):
        lt.write_shards(path, pa.table({"x": pa.array([1.0, 2.0])}), mode="append")
    with pytest.raises(lt.LodTensorError, match="mode"):
        lt.ShardWriter(tmp_path / "other", mode="replace")
    with pytest.raises(lt.LodTensorError, match="prefix"):
        lt.ShardWriter(tmp_path / "other", mode="pending", prefix="_hidden")
    writer = lt.ShardWriter(tmp_path / "third")
    assert writer.path == tmp_path / "third"
    writer.write(documents(3, seed=2))
    writer.finish()
    with pytest.raises(lt.LodTensorError, match="finished"):
        writer.write(documents(3, seed=2))


def test_shard_writer_takes_path_and_warns_for_dir(tmp_path):
    with pytest.warns(DeprecationWarning, match=r"ShardWriter\(dir=\.\.\.\) is deprecated"):
        writer = lt.ShardWriter(dir=tmp_path / "old")
    with pytest.warns(DeprecationWarning, match=r"ShardWriter.dir is deprecated: use ShardWriter.path"):
        assert writer.dir == writer.path == tmp_path / "old"
    with writer:
        writer.write(documents(3, seed=2))
    assert lt.open(tmp_path / "old").num_rows == 3
    with lt.ShardWriter(path=tmp_path / "new") as writer:
        writer.write(documents(3, seed=2))
    assert lt.open(tmp_path / "new").num_rows == 3
    with pytest.raises(TypeError, match="path"):
        lt.ShardWriter()
    with pytest.raises(TypeError, match="both"):
        lt.ShardWriter(tmp_path / "a", dir=tmp_path / "b")


def test_independent_writers_then_commit(tmp_path):
    path = tmp_path / "ds"
    parts = [documents(30, seed=10 + w) for w in range(4)]

    def work(w):
        with lt.ShardWriter(path, mode="pending", prefix=f"w{w}", shard_rows=8) as writer:
            writer.write(parts[w])

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not (path / "_lodtensor.json").exists()
    assert len([n for n in os.listdir(path) if n.startswith("_lodtensor.pending.")]) == 4
    manifest = lt.commit(path)
    assert len(manifest["shards"]) == 16
    assert lt.commit(path) == manifest, "a commit is idempotent"
    assert not [n for n in os.listdir(path) if n.startswith("_lodtensor.pending.")]
    ds = lt.open(path)
    ds.validate()
    expected = pa.concat_tables(parts)  # pending manifests merge in name order
    assert ds.to_pyarrow().column("label").to_pylist() == expected.column("label").to_pylist()
    assert ds.to_pyarrow().column("tokens").to_pylist() == expected.column("tokens").to_pylist()


def test_commit_of_nothing_is_refused(tmp_path):
    with pytest.raises(lt.LodTensorError):
        lt.commit(tmp_path)


def test_an_empty_table_makes_an_empty_dataset_with_its_columns(tmp_path):
    empty = documents(0, seed=1)
    manifest = lt.write_shards(tmp_path / "empty", empty)
    assert manifest["shards"] == [] and len(manifest["columns"]) == 3
    ds = lt.open(tmp_path / "empty")
    assert ds.num_rows == 0 and ds.column_names == ["tokens", "label", "ids"]
    assert ds.to_pyarrow().num_rows == 0
    lt.write_shards(tmp_path / "empty", documents(4, seed=2), mode="append")
    assert lt.open(tmp_path / "empty").num_rows == 4


@pytest.mark.parametrize(
    "options",
    [
        dict(batch_size=7),
        dict(token_budget=300, shuffle=True, seed=3),
        dict(batch_size=5, buckets=3, shuffle=True, seed=1, drop_last=True),
        dict(batch_size=4, rank=1, world_size=3, prefetch=2),
        dict(batch_size=3, rank=2, world_size=3, elastic=True, prefetch=1),
    ],
)
def test_loader_over_shards_gives_the_files_batches(shards_dir, docs_path, options):
    shards, file = lt.open(shards_dir), lt.open(docs_path)
    ours, theirs = shards.loader(**options), file.loader(**options)
    for epoch in range(2):
        a, b = list(ours), list(theirs)
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            assert x.samples.tolist() == y.samples.tolist()
            assert x.to_pyarrow().equals(y.to_pyarrow())


def test_loader_over_shards_views_the_shard_and_covers_every_sample(shards_dir):
    data = lt.open(shards_dir)
    first = next(iter(data.loader(batch_size=3)))
    assert first.is_view
    shard0 = shards_dir / data.shards[0]["file"]
    assert inside_mapping(first.values("tokens"), shard0)
    seen = []
    for rank in range(3):
        for batch in data.loader(batch_size=8, shuffle=True, chunk_rows=5, seed=9, rank=rank, world_size=3):
            seen.extend(batch.samples.tolist())
    assert sorted(seen) == list(range(data.num_rows))


def test_elastic_loaders_resume_on_another_number_of_ranks(shards_dir):
    data = lt.open(shards_dir)
    options = dict(batch_size=4, shuffle=True, seed=5, chunk_rows=3, window=8, elastic=True)
    plan = [b.samples.tolist() for b in data.loader(**options)]
    # Three ranks take two steps, each saving the state after its batch: one state for all.
    ranks = [iter(data.loader(**options, rank=r, world_size=3)) for r in range(3)]
    read = []
    for _ in range(2):
        states = set()
        for it in ranks:
            batch = next(it)
            read.append((batch.index, batch.samples.tolist()))
            states.add(json.dumps(batch.next_state_dict(), sort_keys=True))
        assert len(states) == 1
    state = json.loads(states.pop())
    assert state["batch"] == 6
    # Two ranks resume from it (one with a prefetch thread) and finish the epoch.
    for r in range(2):
        loader = data.loader(**options, rank=r, world_size=2, prefetch=r)
        loader.load_state_dict(state)
        assert len(loader) == len(range(r, len(plan), 2))
        read.extend((b.index, b.samples.tolist()) for b in loader)
    assert sorted(read) == list(enumerate(plan))
    with pytest.raises(lt.LodTensorError, match="options"):
        data.loader(batch_size=4, shuffle=True, seed=5, chunk_rows=3, window=8).load_state_dict(state)
    with pytest.raises(ValueError, match="loader option window: needs chunk_rows"):
        data.loader(shuffle=True, window=8)


def test_elastic_ranks_with_drop_last_take_equal_steps(shards_dir):
    data = lt.open(shards_dir)
    options = dict(batch_size=3, shuffle=True, seed=2, elastic=True, drop_last=True)
    plan = [b.samples.tolist() for b in data.loader(**options)]
    assert len(plan) % 4 != 0  # so that the last step would leave some ranks without a batch
    ranks = [data.loader(**options, rank=r, world_size=4, prefetch=r % 2) for r in range(4)]
    assert {len(loader) for loader in ranks} == {len(plan) // 4}
    # A data-parallel loop: every rank takes every step, and all stop together.
    read = []
    for step in zip(*ranks, strict=True):
        read.extend((b.index, b.samples.tolist()) for b in step)
    assert sorted(read) == list(enumerate(plan))[: len(plan) // 4 * 4]
    # Contiguous parts: the batches of the whole epoch, as many on every rank, the at most
    # 3 that do not divide evenly left out.
    options = dict(token_budget=300, shuffle=True, seed=2, drop_last=True)
    ranks = [data.loader(**options, rank=r, world_size=4) for r in range(4)]
    assert len({len(loader) for loader in ranks}) == 1
    steps = list(zip(*ranks, strict=True))
    assert len(steps) == len(ranks[0])
    whole = [b.samples.tolist() for b in data.loader(**options)]
    dealt = [
        b.samples.tolist()
        for r in range(4)
        for b in data.loader(**options, rank=r, world_size=4)
    ]
    assert len(dealt) == len(whole) // 4 * 4
    assert all(batch in whole for batch in dealt)


def test_lazy_shards_false_maps_every_shard_and_makes_the_same_batches(shards_dir):
    ds = lt.open(shards_dir)
    lazy = ds.loader(batch_size=3, shuffle=True, seed=2)
    eager = ds.loader(batch_size=3, shuffle=True, seed=2, lazy_shards=False)
    assert [b.samples.tolist() for b in lazy] == [b.samples.tolist() for b in eager]
    # The fingerprints differ (the lazy loader counts every sample as 1), yet a state saved
    # by one goes on in the other: the lazy loader reads the lengths to check them.
    eager = ds.loader(batch_size=3, shuffle=True, seed=2, lazy_shards=False)
    it = iter(eager)
    next(it)
    lazy = ds.loader(batch_size=3, shuffle=True, seed=2)
    lazy.load_state_dict(eager.state_dict())
    assert [b.samples.tolist() for b in lazy] == [b.samples.tolist() for b in it]


def test_a_location_is_decided_once_by_the_crate(tmp_path):
    # A directory whose name has a ':' (a path, never a URL), reached as a str, a
    # pathlib.Path and a file:// URL; commit and index take the same strings.
    directory = tmp_path / "data:v1"
    lt.write_shards(str(directory), documents(20, 3), shard_rows=5, mode="pending", prefix="w0")
    url = "file://" + str(directory).replace(" ", "%20")
    assert len(lt.commit(url)["shards"]) == 4
    assert len(lt.index("file://localhost" + str(directory))["shards"]) == 4
    expected = lt.open(directory).manifest
    for place in (str(directory), directory, url):
        assert lt.open(place).manifest == expected
    with lt.ShardWriter(url, mode="append") as writer:
        writer.write(documents(5, 4))
        assert len(writer.finish()["shards"]) == 5
    # What Python asks the crate: a URL or a path (a pathlib.Path is never parsed).
    from lodtensor import _native

    assert _native.location("s3://bucket/x/") == (True, "s3://bucket/x/")
    assert _native.location(url)[0] is False
    assert os.fspath(_native.location(url)[1]) == str(directory)
    assert _native.location("C:\\data")[0] is False
    assert _native.location(directory)[0] is False
    # A string of another scheme is a URL, refused by the stores, not a missing directory.
    with pytest.raises(lt.ArgumentError, match="memory://bucket/x/"):
        lt.open("memory://bucket/x/")
    with pytest.raises(lt.ArgumentError, match="only for a URL"):
        lt.commit(url, storage_options={})
