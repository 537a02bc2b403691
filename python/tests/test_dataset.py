"""The mapped dataset: metadata, zero-copy arrays, pyarrow interop, errors."""

import gc
import os
import pickle
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import lodtensor as lt
from conftest import DIM, inside_mapping, mapping_of


def read_with_pyarrow(path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def test_metadata(docs_path):
    ds = lt.open(docs_path)
    assert ds.num_rows == len(ds) == 200
    assert ds.column_names == ["tokens", "label", "ids"]
    assert ds.num_batches > 1
    assert isinstance(ds.schema, pa.Schema)
    assert ds.schema == read_with_pyarrow(docs_path).schema
    assert ds.schema.metadata == read_with_pyarrow(docs_path).schema.metadata


def test_to_pyarrow_equals_what_pyarrow_reads(docs_path):
    ds = lt.open(docs_path)
    expected = read_with_pyarrow(docs_path)
    table = ds.to_pyarrow()
    assert table.equals(expected, check_metadata=True)
    assert pa.table(ds).equals(expected)
    assert pa.RecordBatchReader.from_stream(ds).read_all().equals(expected)


def test_to_pyarrow_is_zero_copy(docs_path):
    ds = lt.open(docs_path)
    pool_before = pa.total_allocated_bytes()
    table = ds.to_pyarrow()
    assert pa.total_allocated_bytes() == pool_before
    array = table.column("tokens").chunk(0).flatten().flatten().to_numpy_ndarray()
    assert array.size > 0 and inside_mapping(array, docs_path)


def test_row_is_a_view_of_one_row(docs_path):
    ds = lt.open(docs_path)
    table = read_with_pyarrow(docs_path)
    for row in [0, 1, 57, 199]:
        got = ds.row(row)
        assert isinstance(got, pa.RecordBatch)
        assert got.num_rows == 1
        assert pa.Table.from_batches([got]).equals(table.slice(row, 1).combine_chunks())
        assert ds[row].equals(got) and ds[row - 200].equals(got)
    for bad in [200, -201]:
        with pytest.raises(IndexError, match=str(bad)):
            ds.row(bad)
        with pytest.raises(IndexError, match=str(bad)):
            ds[bad]
    assert len(list(ds)) == 200  # the sequence protocol stops at the IndexError


def test_offsets_match_pyarrow_offsets(docs_path):
    ds = lt.open(docs_path)
    column = read_with_pyarrow(docs_path).column("tokens").combine_chunks()
    doc_offsets, sent_offsets = ds.offsets("tokens")
    assert doc_offsets.dtype == np.int64 and sent_offsets.dtype == np.int64
    np.testing.assert_array_equal(doc_offsets, column.offsets.to_numpy())
    np.testing.assert_array_equal(sent_offsets, column.flatten().offsets.to_numpy())
    np.testing.assert_array_equal(ds.offsets("tokens", 1), sent_offsets)
    assert ds.offsets("label") == []
    with pytest.raises(lt.LodTensorError, match="level 2"):
        ds.offsets("tokens", 2)
    with pytest.raises(lt.LodTensorError, match="nope"):
        ds.offsets("nope")


def test_old_names_warn_and_still_work(docs_path):
    ds = lt.open(docs_path)
    with pytest.warns(DeprecationWarning, match=r"Dataset.sample\(row\) is deprecated: use row"):
        old = ds.sample(57)
    assert old.equals(ds.row(57))
    with pytest.raises(lt.LodTensorError, match="200"):
        ds.sample(200)
    with warnings.catch_warnings(record=True) as caught:  # once per dataset, not every call
        warnings.simplefilter("always")
        ds.sample(1)
        lt.open(docs_path).sample(1)
    assert len(caught) == 1

    with pytest.warns(DeprecationWarning, match=r"Dataset.lod\(column\) is deprecated: use offsets"):
        old = ds.lod("tokens")
    assert len(old) == 2
    for a, b in zip(old, ds.offsets("tokens")):
        np.testing.assert_array_equal(a, b)


def test_batch_values_point_into_the_mapping_and_outlive_the_dataset(docs_path):
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=4)
    batch = next(iter(loader))
    assert batch.is_view
    values = batch.values("tokens")
    expected = values.copy()
    assert values.shape[1:] == (DIM,) and values.dtype == np.float32
    assert inside_mapping(values, docs_path)
    assert not values.flags.writeable
    del ds, loader, batch
    gc.collect()
    assert mapping_of(docs_path), "the arrays keep the mapping"
    np.testing.assert_array_equal(values, expected)
    del values
    gc.collect()
    assert not mapping_of(docs_path), "the mapping goes with the last array"


def test_pickles_by_path(docs_path):
    ds = pickle.loads(pickle.dumps(lt.open(docs_path)))
    assert ds.num_rows == 200


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.arrow"):
        lt.open(tmp_path / "missing.arrow")


def test_errors_are_value_errors():
    assert issubclass(lt.LodTensorError, ValueError)


def test_truncated_files_raise(docs_path, tmp_path):
    data = docs_path.read_bytes()
    for cut in [0, 8, len(data) // 2, len(data) - 1]:
        path = tmp_path / f"cut{cut}.arrow"
        path.write_bytes(data[:cut])
        with pytest.raises(lt.InvalidFileError, match=str(path.name)):
            lt.open(path)


def test_corrupt_offsets_raise(one_batch_path, tmp_path):
    """Overwrites the documents' last offset (the number of sentences, an int64 found in the
    body) with a huge one: the file must be refused, never read out of bounds."""
    data = bytearray(one_batch_path.read_bytes())
    table = read_with_pyarrow(one_batch_path)
    n_sentences = len(table.column("tokens").combine_chunks().flatten())
    needle = np.array([n_sentences], dtype=np.int64).tobytes()
    hits = [i for i in range(0, len(data) - 8, 8) if data[i : i + 8] == needle]
    assert hits, "the offset is in the file"
    raised = 0
    for i in hits:
        corrupt = bytearray(data)
        corrupt[i : i + 8] = np.array([2**40], dtype=np.int64).tobytes()
        path = tmp_path / "corrupt.arrow"
        path.write_bytes(bytes(corrupt))
        try:
            ds = lt.open(path)
        except (lt.InvalidFileError, lt.InvalidDataError):  # never an InternalError
            raised += 1
            continue
        # Not an offset after all (a value that happened to match): still readable.
        assert ds.num_rows == 50
    assert raised >= 1


def test_random_bytes_raise(tmp_path):
    path = tmp_path / "noise.arrow"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(lt.InvalidFileError):
        lt.open(path)
