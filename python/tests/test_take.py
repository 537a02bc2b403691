"""`ds.take(rows, columns=None)` on a file and on shards: one `Batch` of the rows in the
order given (repeats allowed), every tensor and side column, equal to pyarrow's
`table.take(rows)` of `ds.to_pyarrow()`; rows out of range are an `IndexError` naming them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

from s3_server import s3  # noqa: F401 (the fixture)
from test_side_columns import table

ROWS = 40


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """The side-columns table as one file and as shards of 9 rows."""
    root = tmp_path_factory.mktemp("take")
    t = table().unify_dictionaries()
    lt.write(root / "t.arrow", t, batch_bytes=2048)
    lt.write_shards(root / "shards", t, shard_rows=9, batch_bytes=2048)
    return [lt.open(root / "t.arrow"), lt.open(root / "shards")]


def decoded(t: pa.Table) -> pa.Table:
    """`t` with dictionaries decoded: shards each have their own dictionary, so equal rows
    may come with their values in another order."""
    for i, field in enumerate(t.schema):
        if pa.types.is_dictionary(field.type):
            t = t.set_column(i, field.name, t[i].cast(field.type.value_type))
    return t.combine_chunks()


def expected(ds, rows, columns=None) -> pa.Table:
    t = ds.to_pyarrow()
    if columns is not None:
        t = t.select(columns)
    return decoded(t.take(pa.array(rows, pa.int64())))


def got(batch) -> pa.Table:
    return decoded(pa.Table.from_batches([batch.to_pyarrow()]))


@pytest.mark.parametrize("which", [0, 1], ids=["file", "shards"])
def test_take_equals_pyarrow_take(datasets, which):
    ds = datasets[which]
    rng = np.random.default_rng(7)
    for n in [1, 3, 17, 60]:
        rows = rng.integers(0, ROWS, n)
        batch = ds.take(rows)                               # a numpy int64 array
        assert batch.samples.tolist() == rows.tolist()
        assert got(batch).equals(expected(ds, rows.tolist()))
        as_list = ds.take([int(r) for r in rows])           # a list of ints
        assert got(as_list).equals(got(batch))
    rows32 = np.array([5, 0, 5, 39], np.int32)
    assert got(ds.take(rows32)).equals(expected(ds, [5, 0, 5, 39]))


@pytest.mark.parametrize("which", [0, 1], ids=["file", "shards"])
def test_take_projects_columns(datasets, which):
    ds = datasets[which]
    columns = ["lang", "ids", "meta"]
    batch = ds.take([12, 3, 3], columns=columns)
    assert got(batch).column_names == columns
    assert got(batch).equals(expected(ds, [12, 3, 3], columns))
    with pytest.raises(lt.ColumnNotFoundError, match="nope"):
        ds.take([0], columns=["nope"])


@pytest.mark.parametrize("which", [0, 1], ids=["file", "shards"])
def test_take_of_a_run_is_a_view_and_bad_rows_are_named(datasets, which):
    ds = datasets[which]
    assert ds.take([0, 1]).is_view
    assert not ds.take([1, 0]).is_view
    with pytest.raises(IndexError, match=r"row 40 is out of range: the dataset has 40 rows"):
        ds.take([0, 40])
    with pytest.raises(IndexError, match=r"row -1 is out of range"):
        ds.take(np.array([-1]))
    with pytest.raises(TypeError):
        ds.take(np.array([0.5]))
    with pytest.raises(TypeError):
        ds.take("12")
    empty = ds.take([])
    assert got(empty).num_rows == 0


def test_take_over_a_url_equals_the_local_take(s3, tmp_path):  # noqa: F811 (the fixture)
    """Over a URL a take reads through the node cache: the shards holding the rows are
    downloaded whole (range reads are issue 41's next step)."""
    local = tmp_path / "local"
    lt.write_shards(local, table().unify_dictionaries(), shard_rows=9, batch_bytes=2048)
    url = s3.upload_dir(local, "take", "docs")
    remote = lt.open(url, storage_options=s3.storage_options(), cache_dir=tmp_path / "cache")
    assert remote.cache_stats()["shards_downloaded"] == 0
    rows = [37, 2, 37, 20]
    assert got(remote.take(rows)).equals(got(lt.open(local).take(rows)))
    assert remote.cache_stats()["shards_downloaded"] >= 3       # shards 0, 2 and 4
    columns = ["ids", "meta"]
    assert got(remote.take(rows, columns)).equals(expected(lt.open(local), rows, columns))
