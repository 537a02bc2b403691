"""Exceptions by what the caller does: every class is a LodTensorError (a ValueError) and
also the builtin a Python user would catch; I/O faults are the builtin OSError family; a
Rust panic is an InternalError, never pyo3's PanicException."""

import errno

import pyarrow as pa
import pytest

import lodtensor as lt
from lodtensor import _native

CLASSES = {
    "InvalidFileError": (ValueError,),
    "InvalidDataError": (ValueError,),
    "ArgumentError": (ValueError,),
    "OutOfRangeError": (ValueError, IndexError),
    "ColumnNotFoundError": (ValueError, KeyError),
    "UnsupportedError": (ValueError,),
    "UnusableError": (ValueError, RuntimeError),
    "InternalError": (ValueError, RuntimeError),
    "DatasetExistsError": (ValueError, FileExistsError),
    "DatasetNotFoundError": (ValueError, FileNotFoundError),
}


@pytest.mark.parametrize("name", CLASSES)
def test_every_class_is_exported_under_lodtensor_error(name):
    cls = getattr(lt, name)
    assert name in lt.__all__
    assert cls.__module__ == "lodtensor"
    assert cls.__doc__
    assert issubclass(cls, lt.LodTensorError)
    for builtin in CLASSES[name]:
        assert issubclass(cls, builtin), (name, builtin)


def test_invalid_file(tmp_path):
    path = tmp_path / "text.arrow"
    path.write_bytes(b"not an arrow file, only some text")
    with pytest.raises(lt.InvalidFileError) as caught:
        lt.open(path)
    assert isinstance(caught.value, lt.LodTensorError)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith(f"{path}: invalid Arrow IPC file: ")


def test_invalid_data(tmp_path):
    nulls = pa.array([[1.0, 2.0], None], pa.large_list(pa.float32()))
    declared = pa.schema([pa.field("x", nulls.type, metadata={b"lodtensor.lod_levels": b"1"})])
    with pytest.raises(lt.InvalidDataError) as caught:
        lt.write(tmp_path / "x.arrow", pa.table([nulls], schema=declared))
    assert isinstance(caught.value, lt.LodTensorError)
    assert isinstance(caught.value, ValueError)
    assert "null" in str(caught.value)


def test_argument(tmp_path, docs_path):
    with pytest.raises(lt.ArgumentError) as caught:
        lt.open(tmp_path, columns=["x"])
    assert isinstance(caught.value, lt.LodTensorError)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(lt.ArgumentError, match="batch"):
        lt.open(docs_path).loader(batch_size=0)


def test_out_of_range(docs_path):
    ds = lt.open(docs_path)
    with pytest.raises(lt.OutOfRangeError) as caught:
        ds.sample(ds.num_rows)
    assert isinstance(caught.value, lt.ArgumentError)
    assert isinstance(caught.value, lt.LodTensorError)
    assert isinstance(caught.value, IndexError)
    assert str(ds.num_rows) in str(caught.value)


def test_column_not_found(docs_path):
    with pytest.raises(lt.ColumnNotFoundError) as caught:
        lt.open(docs_path).lod("nope")
    assert isinstance(caught.value, lt.LodTensorError)
    assert isinstance(caught.value, KeyError)
    # The message reads plain, not quoted as KeyError's repr of a key would be.
    assert str(caught.value) == 'no column named "nope"'


def test_unsupported(tmp_path):
    union = pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1]), pa.array(["a"])])
    with pytest.raises(lt.UnsupportedError) as caught:
        lt.write_shards(tmp_path / "shards", pa.table({"u": union}))
    assert isinstance(caught.value, lt.LodTensorError)
    assert isinstance(caught.value, ValueError)
    assert "side column" in str(caught.value)


def test_io_errors_stay_the_builtin_os_errors_with_errno(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        lt.open(tmp_path / "missing.arrow")
    assert caught.value.errno == errno.ENOENT
    assert not isinstance(caught.value, lt.LodTensorError)
    assert "missing.arrow" in str(caught.value)


def test_a_rust_panic_is_an_internal_error():
    with pytest.raises(lt.InternalError) as caught:
        _native._panic("an invariant broke")
    assert isinstance(caught.value, RuntimeError)
    assert isinstance(caught.value, lt.LodTensorError)
    assert "Rust code panicked: an invariant broke" in str(caught.value)
    assert "please report" in str(caught.value)
    # `except Exception` catches it (pyo3's PanicException is a BaseException).
    try:
        _native._panic("again")
    except Exception as e:  # noqa: BLE001
        assert type(e) is lt.InternalError


def test_a_failing_stream_of_the_callers_is_an_argument_error(tmp_path):
    schema = pa.schema([("x", pa.large_list(pa.float32()))])

    def batches():
        yield pa.record_batch([pa.array([[1.0]], schema.field("x").type)], schema=schema)
        raise RuntimeError("the source broke")

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    with pytest.raises(lt.ArgumentError, match="a stream that failed"):
        lt.write(tmp_path / "x.arrow", reader)
    assert not (tmp_path / "x.arrow").exists()


def test_a_plain_http_endpoint_without_allow_http_names_the_option(tmp_path):
    # Refused before any request (it said "failed after retries").
    options = {"aws_endpoint": "http://127.0.0.1:9", "aws_access_key_id": "k", "aws_secret_access_key": "s"}
    with pytest.raises(lt.ArgumentError, match="aws_allow_http"):
        lt.open("s3://bucket/data/", storage_options={**options, "aws_region": "us-east-1"}, cache_dir=tmp_path)


def test_a_missing_object_in_a_bucket_is_enoent_not_errno_zero(tmp_path):
    pytest.importorskip("moto")
    from s3_server import S3Server

    server = S3Server()
    try:
        server.client().create_bucket(Bucket="empty")
        with pytest.raises(FileNotFoundError) as raised:
            lt.open("s3://empty/none/", storage_options=server.storage_options(), cache_dir=tmp_path)
    finally:
        server.stop()
    assert raised.value.errno in (None, errno.ENOENT) and "Errno 0" not in str(raised.value)


def test_a_dataset_there_or_missing_is_a_dataset_error_not_io(tmp_path):
    table = pa.table({"x": pa.array([[1.0], [2.0, 3.0]], pa.large_list(pa.float32()))})
    lt.write_shards(tmp_path / "ds", table)
    with pytest.raises(lt.DatasetExistsError, match="already there") as caught:
        lt.write_shards(tmp_path / "ds", table)
    assert isinstance(caught.value, FileExistsError)
    assert "_lodtensor.json" in str(caught.value)
    with pytest.raises(lt.DatasetNotFoundError, match="no sharded dataset to append to") as missing:
        lt.write_shards(tmp_path / "none", table, mode="append")
    assert isinstance(missing.value, FileNotFoundError)
    (tmp_path / "plain").mkdir()
    with pytest.raises(lt.DatasetNotFoundError, match="not a sharded dataset"):
        lt.vacuum(tmp_path / "plain")
