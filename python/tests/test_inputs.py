"""What lt.write and lt.write_shards take, and the side-column rule of format-spec.md §2.2
on tables as pyarrow, Polars, DuckDB and pandas make them: a column of a tensor's type
that holds nulls, in a table that does not declare it a tensor, is a side column (written
and read back as it is); only a column declared a tensor is refused for its nulls."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

from conftest import documents

ROWS = 30


def nullable() -> pa.Table:
    """`tokens` (a LoD tensor) beside nullable `flags` (list<bool>), `counts`
    (list<int64>) and `frames` (list<list<float>>), each with null rows and null items,
    their nulls only past row 10 (so not in every record batch)."""
    t = documents(ROWS, seed=9).select(["tokens", "label"])
    flags = [None if r % 7 == 3 else [r % 2 == 0, None if r % 5 == 1 else True] for r in range(ROWS)]
    counts = [None if r == 20 else [r, None] if r == 25 else list(range(r % 4)) for r in range(ROWS)]
    frames = [
        None if r % 6 == 5 else [[float(r), None if r % 4 == 2 else 0.5] for _ in range(r % 3)]
        for r in range(ROWS)
    ]
    return (
        t.append_column("flags", pa.array(flags, pa.list_(pa.bool_())))
        .append_column("counts", pa.array(counts, pa.list_(pa.int64())))
        .append_column("frames", pa.array(frames, pa.list_(pa.list_(pa.float32()))))
    )


def pyarrows(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def assert_columns_equal(got: pa.Table, expected: pa.Table) -> None:
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        assert got[name].to_pylist() == expected[name].to_pylist(), name


def test_nullable_lists_are_side_columns_whoever_wrote_the_file(tmp_path):
    expected = nullable()
    theirs = tmp_path / "theirs.arrow"
    with pa.OSFile(str(theirs), "wb") as sink, pa.ipc.new_file(sink, expected.schema) as w:
        w.write_table(expected, max_chunksize=8)  # the first batch has no null in `counts`
    ds = lt.open(theirs)
    assert ds.num_batches == 4
    assert pa.table(ds).equals(expected)
    ours = tmp_path / "ours.arrow"
    lt.write(ours, expected.to_batches(max_chunksize=8), batch_bytes=512)
    back = lt.open(ours)
    assert back.num_batches > 1
    written = pyarrows(ours)
    assert_columns_equal(written, expected)
    for name in ["flags", "counts", "frames"]:
        assert written.schema.field(name).metadata[b"lodtensor.kind"] == b"side"
        assert written[name].equals(expected[name]), name
    for shuffle in (False, True):
        for batch in back.loader(batch_size=7, shuffle=shuffle, seed=2):
            want = expected.take(pa.array(batch.samples))
            for name in ["flags", "counts", "frames"]:
                assert batch.values(name).to_pylist() == want[name].to_pylist(), name
            assert batch.offsets("tokens", 0)[-1] == sum(
                len(d) for d in want["tokens"].to_pylist()
            )


def test_a_column_declared_a_tensor_is_refused_for_its_nulls(tmp_path):
    t = nullable()
    field = t.schema.field("counts").with_metadata({b"lodtensor.kind": b"tensor"})
    declared = t.set_column(t.column_names.index("counts"), field, t["counts"])
    with pytest.raises(lt.InvalidDataError, match="counts"):
        lt.write(tmp_path / "x.arrow", declared)
    assert not (tmp_path / "x.arrow").exists()


def test_write_takes_polars_duckdb_and_pandas(tmp_path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    expected = nullable().select(["label", "flags", "counts"])
    frame = pl.from_arrow(expected)
    lt.write(tmp_path / "polars.arrow", frame)
    assert pyarrows(tmp_path / "polars.arrow").to_pylist() == expected.to_pylist()
    relation = duckdb.sql("SELECT range AS label, [range, range * 2] AS pair FROM range(5)")
    lt.write(tmp_path / "duckdb.arrow", relation)
    got = lt.open(tmp_path / "duckdb.arrow")
    assert pa.table(got).column("pair").to_pylist() == [[i, 2 * i] for i in range(5)]
    pd = pytest.importorskip("pandas")
    lt.write(tmp_path / "pandas.arrow", pd.DataFrame({"label": np.arange(4), "name": list("abcd")}))
    assert pyarrows(tmp_path / "pandas.arrow")["name"].to_pylist() == list("abcd")
    lt.write_shards(tmp_path / "shards", frame.select(["label"]), shard_rows=10)
    assert lt.open(tmp_path / "shards").num_rows == ROWS


@pytest.mark.parametrize("bad", [{"a": [1, 2]}, np.arange(3), "x", 7])
def test_write_names_what_it_takes(tmp_path, bad):
    with pytest.raises(TypeError, match="__arrow_c_stream__.*datasets.Dataset"):
        lt.write(tmp_path / "x.arrow", bad)
    with pytest.raises(TypeError, match="write_shards"):
        lt.write_shards(tmp_path / "s", bad)


def test_shards_carry_side_columns_and_pyarrow_alone_reads_their_types(tmp_path):
    import base64
    import json

    expected = nullable().append_column("id", pa.array([f"u{r}" if r % 4 else None for r in range(ROWS)]))
    manifest = lt.write_shards(tmp_path / "s", expected, shard_rows=7)
    assert manifest["version"] == 2
    data = lt.open(tmp_path / "s")
    data.validate()
    assert data.num_shards == 5
    got = data.to_pyarrow()
    for name in ["flags", "counts", "frames", "id"]:
        assert got[name].to_pylist() == expected[name].to_pylist(), name
    # The manifest alone gives each side column's Arrow type, with pyarrow.
    with open(tmp_path / "s" / "_lodtensor.json") as f:
        columns = json.load(f)["columns"]
    sides = {
        c["name"]: pa.ipc.read_schema(pa.py_buffer(base64.b64decode(c["arrow_schema"]))).field(0)
        for c in columns
        if c.get("kind") == "side"
    }
    assert {n: f.type for n, f in sides.items()} == {
        n: expected.schema.field(n).type for n in ["flags", "counts", "frames", "id"]
    }
    seen = 0
    for batch in data.loader(batch_size=4, shuffle=True, seed=1):
        want = expected.take(pa.array(batch.samples))
        assert batch.values("id").to_pylist() == want["id"].to_pylist()
        assert batch.values("frames").to_pylist() == want["frames"].to_pylist()
        seen += len(batch)
    assert seen == ROWS
