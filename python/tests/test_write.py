"""lodtensor.write: pyarrow data to a validated file, atomically."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import lodtensor as lt
from conftest import documents


def read(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def test_round_trip_of_tables_batches_and_readers(tmp_path):
    table = documents(30, seed=3)
    for i, data in enumerate(
        [table, table.to_batches(), table.to_batches()[0], pa.RecordBatchReader.from_batches(table.schema, table.to_batches())]
    ):
        path = tmp_path / f"t{i}.arrow"
        summary = lt.write(path, data)
        assert summary["rows"] == 30 and summary["bytes"] == path.stat().st_size
        ds = lt.open(path)
        assert ds.num_rows == 30
        back = ds.to_pyarrow()
        for name in table.column_names:
            assert back.column(name).to_pylist() == table.column(name).to_pylist()


def test_offset_width(tmp_path):
    table = documents(10, seed=4)
    lt.write(tmp_path / "i32.arrow", table, offset_width="i32")
    assert pa.types.is_list(read(tmp_path / "i32.arrow").schema.field("tokens").type)
    with pytest.raises(lt.LodTensorError, match="offset_width"):
        lt.write(tmp_path / "x.arrow", table, offset_width="i16")


def test_invalid_data_raises_and_leaves_the_target_alone(tmp_path):
    path = tmp_path / "keep.arrow"
    lt.write(path, documents(5, seed=5))
    before = path.read_bytes()
    # Nulls in a column declared a tensor (undeclared, it would be a side column).
    declared = pa.field("x", pa.float64(), metadata={b"lodtensor.kind": b"tensor"})
    nulls = pa.table([pa.array([1.0, None, 3.0])], schema=pa.schema([declared]))
    with pytest.raises(lt.LodTensorError, match="null"):
        lt.write(path, nulls)
    # Strings are a side column now; a union is no column a lodtensor file holds.
    union = pa.UnionArray.from_sparse(
        pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])]
    )
    with pytest.raises(lt.LodTensorError, match="side column"):
        lt.write(path, pa.table({"u": union}))
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.arrow"], "no temporary file is left"


def test_writing_over_a_mapped_file_keeps_the_readers_view(tmp_path):
    path = tmp_path / "live.arrow"
    lt.write(path, documents(20, seed=6))
    ds = lt.open(path)
    values = next(iter(ds.loader(batch_size=20))).values("tokens")
    expected = values.copy()
    lt.write(path, documents(7, seed=7))
    np.testing.assert_array_equal(values, expected)
    assert ds.num_rows == 20 and lt.open(path).num_rows == 7


def test_missing_directory_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        lt.write(tmp_path / "no" / "such.arrow", documents(2, seed=8))


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_compressed_files_round_trip_and_pyarrow_reads_them(tmp_path, codec):
    table = documents(40, seed=6)
    plain = lt.write(tmp_path / "plain.arrow", table)
    summary = lt.write(tmp_path / "c.arrow", table, compression=codec)
    assert summary["rows"] == 40 and summary["bytes"] == (tmp_path / "c.arrow").stat().st_size
    theirs = read(tmp_path / "c.arrow")
    ours = lt.open(tmp_path / "c.arrow").to_pyarrow()
    for name in table.column_names:
        assert theirs.column(name).to_pylist() == table.column(name).to_pylist()
        assert ours.column(name).to_pylist() == table.column(name).to_pylist()
    assert plain["rows"] == 40
    # pyarrow's compressed file opens too.
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.OSFile(str(tmp_path / "theirs.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema, options=options) as writer:
            writer.write_table(table)
    back = lt.open(tmp_path / "theirs.arrow").to_pyarrow()
    assert back.column("tokens").to_pylist() == table.column("tokens").to_pylist()
    # Compressed shards.
    lt.write_shards(tmp_path / "ds", table, shard_rows=15, compression=codec)
    shards = lt.open(tmp_path / "ds")
    assert shards.num_rows == 40
    with pytest.raises(lt.LodTensorError, match="none, zstd or lz4"):
        lt.write(tmp_path / "x.arrow", table, compression="snappy")
    assert not (tmp_path / "x.arrow").exists()


@pytest.mark.parametrize("zeros", [0.0, 0.9, 0.999, 1.0])
def test_what_is_written_compressed_opens_at_any_compressibility(tmp_path, zeros):
    # Very compressible data (zeros, padding, masks) would declare more than 1024 times its
    # compressed body, which the reader refuses: such a batch is written uncompressed.
    rng = np.random.default_rng(1)
    values = rng.integers(1, 1 << 30, 1 << 20).astype(np.int32)
    values[rng.random(1 << 20) < zeros] = 0
    column = pa.LargeListArray.from_arrays(pa.array(np.arange(0, (1 << 20) + 1, 1024), pa.int64()), values)
    table = pa.table({"x": column})
    for codec in ["zstd", "lz4"]:
        path = tmp_path / f"{codec}.arrow"
        lt.write(path, table, compression=codec)
        assert lt.open(path).to_pyarrow().column("x").to_pylist() == column.to_pylist()
        assert read(path).column("x").to_pylist() == column.to_pylist()
