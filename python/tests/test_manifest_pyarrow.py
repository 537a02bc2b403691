"""format-spec.md §7.1: pyarrow, json and a CRC-32C package alone write a sharded dataset
that lodtensor opens and validates."""

import json

import crc32c
import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt


def lod_column(level_offsets: list, values: np.ndarray) -> pa.Array:
    """A LoD tensor column as format-spec.md §9 builds it (from the storage, so that a shard
    may be empty)."""
    storage = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])
    tensor_type = pa.fixed_shape_tensor(pa.float32(), list(values.shape[1:]))
    column = pa.ExtensionArray.from_storage(tensor_type, storage)
    for offsets in reversed(level_offsets):
        column = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), column)
    return column


def shard_table(rng: np.random.Generator, rows: int) -> pa.Table:
    sentences = rng.integers(0, 4, rows)
    words = rng.integers(0, 6, int(sentences.sum()))
    values = rng.standard_normal((int(words.sum()), 2), dtype=np.float32)
    words_column = lod_column([np.r_[0, np.cumsum(sentences)], np.r_[0, np.cumsum(words)]], values)
    fields = [
        pa.field("words", words_column.type, metadata={
            "lodtensor.lod_levels": "2",
            "lodtensor.level_names": '["articles","sentences"]',
            "lodtensor.dtype": "float32",
            "lodtensor.element_shape": "[2]",
        }),
        pa.field("label", pa.int64(), metadata={
            "lodtensor.lod_levels": "0",
            "lodtensor.dtype": "int64",
            "lodtensor.element_shape": "[]",
        }),
    ]
    schema = pa.schema(fields, metadata={"lodtensor.format_version": "1"})
    return pa.table([words_column, pa.array(rng.integers(0, 9, rows))], schema=schema)


def write_shard(path, table: pa.Table, batch_rows: int) -> dict:
    """Writes `table` as one shard and returns its manifest entry, from the file alone."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)
    data = path.read_bytes()
    batches = pa.ipc.open_file(pa.BufferReader(data)).num_record_batches
    words = table.column("words").combine_chunks()
    return {
        "file": path.name,
        "rows": len(table),
        "batches": batches,
        "bytes": len(data),
        "crc32c": crc32c.crc32c(data),
        "columns": [
            {"sequences": [len(words), len(words.flatten())], "elements": len(words.flatten().flatten())},
            {"sequences": [], "elements": len(table)},
        ],
    }


COLUMNS = [
    {"name": "words", "dtype": "float32", "element_shape": [2],
     "offsets": ["int64", "int64"], "level_names": ["articles", "sentences"]},
    {"name": "label", "dtype": "int64", "element_shape": [], "offsets": [], "level_names": []},
]


@pytest.fixture
def pyarrow_dataset(tmp_path):
    rng = np.random.default_rng(5)
    tables = [shard_table(rng, rows) for rows in [17, 0, 40, 3]]
    shards = [write_shard(tmp_path / f"part-{i:05d}.arrow", t, 8) for i, t in enumerate(tables)]
    manifest = {"format": "lodtensor.shards", "version": 1, "columns": COLUMNS, "shards": shards}
    (tmp_path / "_lodtensor.json").write_text(json.dumps(manifest))
    return tmp_path, pa.concat_tables(tables)


def test_lodtensor_opens_and_validates_what_pyarrow_wrote(pyarrow_dataset):
    path, expected = pyarrow_dataset
    ds = lt.open(path)
    ds.validate()
    assert ds.num_rows == 60 and ds.num_shards == 4
    table = ds.to_pyarrow()
    for name in ["words", "label"]:
        assert table.column(name).to_pylist() == expected.column(name).to_pylist()
    offsets = ds.offsets("words")
    np.testing.assert_array_equal(offsets[0], expected.column("words").combine_chunks().offsets)
    assert ds.row(59).column("label").to_pylist() == expected.column("label")[59:].to_pylist()


def test_a_wrong_count_in_a_pyarrow_manifest_is_named(pyarrow_dataset):
    path, _ = pyarrow_dataset
    manifest = json.loads((path / "_lodtensor.json").read_text())
    manifest["shards"][2]["columns"][0]["elements"] += 1
    (path / "_lodtensor.json").write_text(json.dumps(manifest))
    with pytest.raises(lt.LodTensorError, match=r"part-00002\.arrow.*columns\[0\]\.elements"):
        lt.open(path).validate()
