"""Side columns (any Arrow type beside the tensors) and `lt.open(path, columns=...)`: the
table comes back equal, loader batches carry the side columns row for row (numpy views for
primitives without nulls, pyarrow arrays otherwise), and projection reads only the columns
asked for."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

from conftest import documents

ROWS = 40


def table() -> pa.Table:
    t = documents(ROWS, seed=5)
    null = [r % 4 == 1 for r in range(ROWS)]
    meta = pa.array(
        [None if n else {"source": f"s{r % 3}"} for r, n in enumerate(null)],
        pa.struct([("source", pa.string())]),
    )
    return (
        t.append_column("id", pa.array([f"doc-{r}" for r in range(ROWS)], pa.string()))
        .append_column("text", pa.array([None if n else "w " * r for r, n in enumerate(null)], pa.large_string()))
        .append_column("lang", pa.array([["en", "fr"][r % 2] for r in range(ROWS)]).dictionary_encode())
        .append_column("meta", meta)
        .append_column(
            pa.field("weight", pa.float64(), metadata={b"lodtensor.kind": b"side"}),
            pa.array(np.linspace(0, 1, ROWS)),
        )
    )


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    path = tmp_path_factory.mktemp("side") / "side.arrow"
    lt.write(path, table().unify_dictionaries(), batch_bytes=2048)
    return path


def pyarrows(path) -> pa.Table:
    """The file as pyarrow reads it (the tensors' elements tagged fixed_shape_tensor)."""
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def test_side_columns_round_trip(path):
    ds = lt.open(path)
    assert ds.num_batches > 1
    got = ds.to_pyarrow()
    assert got.equals(pyarrows(path))
    written = table()
    for name in ["label", "ids", "id", "text", "lang", "meta", "weight"]:
        assert got[name].equals(written[name]), name
    assert ds.schema.metadata[b"lodtensor.format_version"] == b"2"


def test_projection_reads_the_chosen_columns_in_order(path):
    ds = lt.open(path, columns=["meta", "tokens"])
    assert ds.column_names == ["meta", "tokens"]
    assert ds.to_pyarrow().equals(pyarrows(path).select(["meta", "tokens"]))
    with pytest.raises(lt.LodTensorError, match="nope"):
        lt.open(path, columns=["nope"])


def test_loader_batches_carry_side_columns(path):
    expected = pyarrows(path)
    ds = lt.open(path)
    for shuffle in (False, True):
        loader = ds.loader(batch_size=6, shuffle=shuffle, seed=3)
        for batch in loader:
            rows = pa.array(batch.samples)
            want = expected.take(rows)
            assert batch.to_pyarrow().equals(pa.RecordBatch.from_pydict(
                {n: want[n].combine_chunks() for n in want.column_names}, schema=want.schema
            ))
            ids = batch.values("id")
            assert isinstance(ids, pa.Array) and ids.to_pylist() == want["id"].to_pylist()
            weight = batch.values("weight")  # float64 without nulls: numpy
            assert isinstance(weight, np.ndarray)
            np.testing.assert_array_equal(weight, want["weight"].to_numpy())
            assert batch.values("meta").null_count == want["meta"].null_count
            with pytest.raises(lt.LodTensorError, match="side column"):
                batch.offsets("id", 0)
