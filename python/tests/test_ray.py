"""lodtensor.ray on a local Ray cluster: read_lodtensor and write_lodtensor."""

import collections
import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lodtensor as lt
from conftest import inside_mapping, ray_init
from s3_server import s3  # noqa: F401 (the fixture)

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")
lray = pytest.importorskip("lodtensor.ray")


@pytest.fixture(scope="module")
def cluster():
    ray_init()
    yield
    ray.shutdown()


def collect(dataset) -> pa.Table:
    """Every row of a Ray dataset, in label order."""
    tables = list(dataset.iter_batches(batch_size=None, batch_format="pyarrow"))
    return pa.concat_tables(tables).sort_by("label")


def test_read_gives_every_row_with_its_types(cluster, shards_dir):
    expected = lt.open(shards_dir).to_pyarrow()
    dataset = lray.read_lodtensor(shards_dir)
    assert dataset.count() == 200
    table = collect(dataset)
    assert table.schema == expected.schema
    assert isinstance(table.schema.field("tokens").type.value_type.value_type, pa.FixedShapeTensorType)
    assert table.equals(expected)


def test_read_keeps_the_columns_asked_for(cluster, shards_dir):
    table = collect(lray.read_lodtensor(shards_dir, columns=["label", "tokens"]))
    assert table.column_names == ["label", "tokens"]
    assert table.equals(lt.open(shards_dir).to_pyarrow().select(["label", "tokens"]))
    with pytest.raises(lt.LodTensorError, match="nope"):
        lray.read_lodtensor(shards_dir, columns=["nope"])


def test_read_tasks_cover_the_shards_in_order(shards_dir):
    source = lray.LodTensorDatasource(shards_dir)
    for parallelism in [1, 3, 7, 50]:
        tasks = source.get_read_tasks(parallelism)
        assert len(tasks) == min(parallelism, 7)
        files = [f for t in tasks for f in t.metadata.input_files]
        assert files == [str(shards_dir / s["file"]) for s in lt.open(shards_dir).shards]
        assert sum(t.metadata.num_rows for t in tasks) == 200


def test_a_read_task_hands_ray_views_of_the_shards_mapping(shards_dir):
    path = shards_dir / lt.open(shards_dir).shards[4]["file"]
    pool_before = pa.total_allocated_bytes()
    tables = list(lray._read_shards(str(shards_dir), [4]))
    assert pa.total_allocated_bytes() == pool_before
    assert sum(t.num_rows for t in tables) == 30 and len(tables) > 1
    for table in tables:
        values = table.column("tokens").chunk(0).flatten().flatten().to_numpy_ndarray()
        assert values.size == 0 or inside_mapping(values, path)


def test_groups_are_consecutive_runs_of_about_equal_size():
    rng = np.random.default_rng(0)
    for _ in range(200):
        sizes = [int(x) for x in rng.integers(0, 100, rng.integers(1, 40))]
        count = int(rng.integers(1, 50))
        groups = lray._groups(sizes, count)
        assert [i for g in groups for i in g] == list(range(len(sizes)))
        assert len(groups) == min(count, len(sizes)) and all(groups)
        if sum(sizes) and len(groups) > 1:
            largest = max(sum(sizes[i] for i in g) for g in groups)
            assert largest <= sum(sizes) / len(groups) + max(sizes)


def test_streaming_split_feeds_two_consumers_every_row_once(cluster, shards_dir):
    dataset = lray.read_lodtensor(shards_dir)
    left, right = dataset.streaming_split(2)
    seen = {0: [], 1: []}

    def consume(i, iterator):
        for batch in iterator.iter_batches(batch_size=16, batch_format="pyarrow"):
            seen[i].extend(batch.column("label").to_pylist())

    threads = [threading.Thread(target=consume, args=(i, it)) for i, it in enumerate([left, right])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = collections.Counter(seen[0] + seen[1])
    assert sorted(counts) == list(range(0, 2000, 10))
    assert set(counts.values()) == {1}
    assert seen[0] and seen[1]


def test_a_map_batches_pipeline_writes_a_valid_dataset(cluster, shards_dir, tmp_path):
    def shift(batch: pa.Table) -> pa.Table:
        return batch.set_column(1, "label", pc.add(batch.column("label"), 1))

    out = tmp_path / "shifted"
    pipeline = lray.read_lodtensor(shards_dir).map_batches(shift, batch_format="pyarrow")
    manifest = lray.write_lodtensor(pipeline, out, shard_rows=40)
    written = lt.open(out)
    written.validate()
    assert written.num_rows == 200 and manifest == written.manifest
    assert all(s["rows"] <= 40 for s in manifest["shards"])
    assert sum(e["shards"] for e in manifest["index"]) == len(manifest["shards"])  # indexed
    listed = {s["file"] for s in manifest["shards"]}
    visible = {n for n in os.listdir(out) if not n.startswith("_")}
    assert visible == listed, "nothing else left behind"
    assert not (out / "_pending").exists(), "no staged shard left behind"
    source = lt.open(shards_dir).to_pyarrow()
    expected = source.set_column(1, "label", pc.add(source.column("label"), 1))
    assert written.to_pyarrow().sort_by("label").equals(expected)
    assert collect(lray.read_lodtensor(out)).equals(expected)


def test_create_refuses_a_dataset_and_append_adds_to_it(cluster, shards_dir, tmp_path):
    out = tmp_path / "out"
    lray.write_lodtensor(lray.read_lodtensor(shards_dir), out)
    with pytest.raises(Exception, match="already there"):
        lray.write_lodtensor(lray.read_lodtensor(shards_dir), out)
    lray.write_lodtensor(lray.read_lodtensor(shards_dir), out, mode="append")
    ds = lt.open(out)
    ds.validate()
    labels = ds.to_pyarrow().column("label").to_pylist()
    assert sorted(labels) == sorted(list(range(0, 2000, 10)) * 2)


def test_a_failed_attempt_leaves_nothing_behind(shards_dir, tmp_path):
    """A task that wrote its shards and was then retried: only the attempt that returned is
    committed, and the other's files are removed."""
    out = tmp_path / "out"
    sink = lray.LodTensorDatasink(out, shard_rows=20)
    table = lt.open(shards_dir).to_pyarrow()
    sink.on_write_start(table.schema)
    task = SimpleNamespace(task_idx=0)
    sink.write([table.slice(0, 50)], task)                      # lost attempt
    kept = sink.write([table.slice(0, 50)], task)                # its retry
    other = sink.write([table.slice(50, 150)], SimpleNamespace(task_idx=1))
    nothing = sink.write([table.slice(0, 0)], SimpleNamespace(task_idx=2))
    assert nothing is None
    sink.on_write_complete(SimpleNamespace(write_returns=[kept, other, nothing]))
    ds = lt.open(out)
    ds.validate()
    assert ds.to_pyarrow().equals(table)
    visible = {n for n in os.listdir(out) if not n.startswith("_")}
    assert visible == {s["file"] for s in ds.shards}
    assert not (out / "_pending").exists(), "a failed attempt's shards are removed"
    assert not [n for n in os.listdir(out) if n.startswith("_lodtensor.pending.")]


def test_an_empty_write_makes_an_empty_dataset(shards_dir, tmp_path):
    sink = lray.LodTensorDatasink(tmp_path / "empty")
    sink.on_write_start(lt.open(shards_dir).schema)
    sink.on_write_complete(SimpleNamespace(write_returns=[None]))
    ds = lt.open(tmp_path / "empty")
    assert ds.num_rows == 0 and ds.schema == lt.open(shards_dir).schema


def test_side_columns_and_nullable_lists_go_through_ray(cluster, tmp_path):
    from test_inputs import nullable

    table = nullable().append_column("id", pa.array([f"u{r}" for r in range(30)]))
    lray.write_lodtensor(ray.data.from_arrow(table), tmp_path / "out")
    got = collect(lray.read_lodtensor(tmp_path / "out"))
    for name in table.column_names:
        assert got[name].to_pylist() == table[name].to_pylist(), name


def bucket(s3, name: str) -> tuple[str, dict]:
    """A new bucket `name`: the URL of a dataset in it and the storage options."""
    s3.client().create_bucket(Bucket=name)
    return f"s3://{name}/out/", s3.storage_options()


def objects(s3, name: str) -> set[str]:
    """The names of the objects of the dataset `out/` in the bucket `name`."""
    listed = s3.client().list_objects_v2(Bucket=name, Prefix="out/").get("Contents", [])
    return {o["Key"][len("out/"):] for o in listed}


def test_ray_data_writes_a_bucket_as_it_writes_a_directory(cluster, s3, shards_dir, tmp_path):
    url, options = bucket(s3, "written")
    source = lt.open(shards_dir).to_pyarrow().sort_by("label")
    manifest = lray.write_lodtensor(
        lray.read_lodtensor(shards_dir), url, shard_rows=40, storage_options=options
    )
    written = lt.open(url, storage_options=options, cache_dir=tmp_path / "cache")
    written.validate()
    assert written.manifest == manifest and written.num_rows == 200
    assert all(s["rows"] <= 40 for s in manifest["shards"])
    assert written.to_pyarrow().sort_by("label").equals(source)
    assert collect(lray.read_lodtensor(url, storage_options=options, cache_dir=tmp_path)).equals(source)
    indexed = [e["file"] for e in manifest["index"]]  # the lengths index, for every shard
    assert sum(e["shards"] for e in manifest["index"]) == len(manifest["shards"])
    assert objects(s3, "written") == {s["file"] for s in manifest["shards"]} | {"_lodtensor.json", *indexed}
    # As for a directory: create refuses a dataset, append adds to it.
    with pytest.raises(Exception, match="already there"):
        lray.write_lodtensor(lray.read_lodtensor(shards_dir), url, storage_options=options)
    assert lt.open(url, storage_options=options, cache_dir=tmp_path).manifest == manifest
    lray.write_lodtensor(lray.read_lodtensor(shards_dir), url, mode="append", storage_options=options)
    again = lt.open(url, storage_options=options, cache_dir=tmp_path / "cache2")
    again.validate()
    labels = again.to_pyarrow().column("label").to_pylist()
    assert sorted(labels) == sorted(list(range(0, 2000, 10)) * 2)
    with pytest.raises(FileNotFoundError, match="nothing to append"):
        lray.write_lodtensor(
            lray.read_lodtensor(shards_dir), "s3://written/none/", mode="append",
            storage_options=options,
        )


def test_a_retried_task_and_a_failed_job_leave_a_bucket_as_it_was(s3, shards_dir, tmp_path):
    url, options = bucket(s3, "retried")
    table = lt.open(shards_dir).to_pyarrow()
    sink = lray.LodTensorDatasink(url, shard_rows=20, storage_options=options)
    sink.on_write_start(table.schema)
    task = SimpleNamespace(task_idx=0)
    sink.write([table.slice(0, 50)], task)                      # lost attempt
    kept = sink.write([table.slice(0, 50)], task)                # its retry
    other = sink.write([table.slice(50, 150)], SimpleNamespace(task_idx=1))
    assert sink.write([table.slice(0, 0)], SimpleNamespace(task_idx=2)) is None
    with pytest.raises(FileNotFoundError):
        lt.open(url, storage_options=options, cache_dir=tmp_path)  # nothing visible yet
    sink.on_write_complete(SimpleNamespace(write_returns=[kept, other, None]))
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    ds.validate()
    assert ds.to_pyarrow().equals(table) and sink.manifest == ds.manifest
    before = objects(s3, "retried")
    index = {entry["file"] for entry in ds.manifest["index"]}
    assert len(index) == 1
    assert before == {s["file"] for s in ds.shards} | index | {"_lodtensor.json"}
    # A job that fails after its tasks uploaded: the dataset and the bucket as they were.
    failed = lray.LodTensorDatasink(url, mode="append", storage_options=options)
    failed.on_write_start(table.schema)
    failed.write([table.slice(0, 80)], SimpleNamespace(task_idx=0))
    assert objects(s3, "retried") != before
    failed.on_write_failed(RuntimeError("a task failed"))
    assert objects(s3, "retried") == before
    assert lt.commit(url, storage_options=options) == ds.manifest


def test_two_jobs_writing_one_bucket_at_once_keep_both(s3, shards_dir, tmp_path):
    url, options = bucket(s3, "both")
    table = lt.open(shards_dir).to_pyarrow()
    jobs = [lray.LodTensorDatasink(url, storage_options=options) for _ in range(2)]
    for job in jobs:
        job.on_write_start(table.schema)                     # neither sees a dataset
    returns = [[job.write([table.slice(100 * j, 100)], SimpleNamespace(task_idx=0))]
               for j, job in enumerate(jobs)]
    for job, written in zip(jobs, returns):
        job.on_write_complete(SimpleNamespace(write_returns=written))
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    ds.validate()
    assert ds.to_pyarrow().sort_by("label").equals(table.sort_by("label"))


def test_a_failed_job_leaves_a_directory_as_it_was(shards_dir, tmp_path):
    out = tmp_path / "out"
    table = lt.open(shards_dir).to_pyarrow()
    lt.write_shards(out, table.slice(0, 20))
    before = sorted(os.listdir(out))
    sink = lray.LodTensorDatasink(out, mode="append")
    sink.on_write_start(table.schema)
    sink.write([table.slice(20, 80)], SimpleNamespace(task_idx=0))
    sink.on_write_failed(RuntimeError("a task failed"))
    assert sorted(n for n in os.listdir(out) if n != "_pending") == before
    assert lt.commit(out)["shards"] == lt.open(out).shards and lt.open(out).num_rows == 20


def test_tokenize_deals_units_to_tasks_and_equals_lt_tokenize(cluster, s3, tmp_path, monkeypatch):
    tok = str(Path(__file__).resolve().parents[2] / "tests" / "data" / "tokenize" / "tokenizer.json")
    docs = [f"Document {i}: " + "the LoD tensor, mapped. " * (i % 7 + 1) for i in range(70)]
    client = s3.client()
    client.create_bucket(Bucket="raytok")
    for i in range(5):  # 5 units of JSON lines, then one of 10 text objects
        lines = "".join(json.dumps({"text": d}) + "\n" for d in docs[i * 10 : (i + 1) * 10])
        client.put_object(Bucket="raytok", Key=f"c/part-{i}.jsonl", Body=lines.encode())
    for i, doc in enumerate(docs[50:60]):
        client.put_object(Bucket="raytok", Key=f"c/texts/doc-{i:02d}.txt", Body=doc.encode())
    local = tmp_path / "local"
    local.mkdir()
    for i, doc in enumerate(docs[60:]):
        (local / f"doc-{i:02d}.txt").write_text(doc)
    monkeypatch.chdir(tmp_path)  # a relative glob: the tasks run elsewhere
    inputs = ["s3://raytok/c/", "local/*.txt"]
    options = s3.storage_options()
    url = "s3://raytok/tokens/"
    ds = lray.tokenize(inputs, url, tokenizer=tok, storage_options=options, num_tasks=3, shard_rows=4)
    want = lt.tokenize(inputs, tmp_path / "want", tokenizer=tok, storage_options=options, shard_rows=4)
    assert ds.url == url and ds.num_rows == len(docs)
    assert ds.to_pyarrow().column("tokens").to_pylist() == want.to_pyarrow().column("tokens").to_pylist()
    # To a local directory the tasks share.
    local_out = lray.tokenize(inputs, "out", tokenizer=tok, storage_options=options, num_tasks=2, shard_rows=4)
    assert local_out.to_pyarrow().column("tokens").to_pylist() == ds.to_pyarrow().column("tokens").to_pylist()
    # Started again: every unit is committed, nothing written twice.
    again = lray.tokenize(inputs, url, tokenizer=tok, storage_options=options, num_tasks=2, shard_rows=4)
    assert again.num_rows == len(docs) and again.num_shards == ds.num_shards
    with pytest.raises(TypeError, match="lodtensor.tokenize"):
        lray.tokenize([pa.table({"text": ["x"]})], url, tokenizer=tok, storage_options=options)
