//! The Arrow C data and C stream interfaces, as PyCapsules (`__arrow_c_schema__`,
//! `__arrow_c_array__`, `__arrow_c_stream__`), and `write`, which reads a C stream.
//!
//! Exported arrays share the crate's buffers: pyarrow's arrays point into the mapping, and
//! the exported structure's release callback holds the buffers (and so the mapping) until
//! pyarrow lets go of them.

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array as _, RecordBatch, RecordBatchIterator, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, Schema};
use lodtensor::Dataset;
use lodtensor::OffsetWidth;
use lodtensor::{DatasetWriter, IpcCompression, WriteOptions};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use crate::error::{IntoPy, invalid, size_option, to_py};

const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";
const STREAM: &CStr = c"arrow_array_stream";

/// `schema` as an `arrow_schema` capsule.
pub fn schema_capsule<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema).map_err(|e| to_py(e.into()))?;
    PyCapsule::new_with_value(py, ffi, SCHEMA)
}

/// `schema` as a `pyarrow.Schema` (through the C data interface).
pub fn to_pyarrow_schema<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyAny>> {
    py.import(pyo3::intern!(py, "pyarrow"))?
        .getattr(pyo3::intern!(py, "Schema"))?
        .call_method1("_import_from_c_capsule", (schema_capsule(py, schema)?,))
}

/// An `arrow_array_stream` capsule as a `pyarrow.RecordBatchReader`.
pub fn to_pyarrow_reader<'py>(
    py: Python<'py>,
    stream: Bound<'py, PyCapsule>,
) -> PyResult<Bound<'py, PyAny>> {
    py.import(pyo3::intern!(py, "pyarrow"))?
        .getattr(pyo3::intern!(py, "RecordBatchReader"))?
        .call_method1("_import_from_c_capsule", (stream,))
}

/// Refuses a `requested_schema` of `__arrow_c_stream__` (`None` is no request): the data
/// has one schema.
pub fn refuse_requested_schema(requested: Option<Bound<'_, PyAny>>) -> PyResult<()> {
    match requested {
        Some(s) if !s.is_none() => Err(invalid(
            "a requested schema is not supported: the data has one schema",
        )),
        _ => Ok(()),
    }
}

/// `batch` as a pair of `arrow_schema` and `arrow_array` capsules (a struct array of its
/// columns), sharing every buffer.
pub fn array_capsules<'py>(
    py: Python<'py>,
    batch: RecordBatch,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let schema = schema_capsule(py, batch.schema_ref())?;
    let array = FFI_ArrowArray::new(&StructArray::from(batch).to_data());
    Ok((schema, PyCapsule::new_with_value(py, array, ARRAY)?))
}

/// `batch` imported into pyarrow as a `pyarrow.RecordBatch` of `schema` (a `pyarrow.Schema`
/// made once, so that pyarrow does not parse a schema per batch).
pub fn to_pyarrow_batch<'py>(
    py: Python<'py>,
    batch: RecordBatch,
    schema: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let array = Box::new(FFI_ArrowArray::new(&StructArray::from(batch).to_data()));
    let address = &*array as *const FFI_ArrowArray as usize;
    let rb = py
        .import(pyo3::intern!(py, "pyarrow"))?
        .getattr(pyo3::intern!(py, "RecordBatch"))?;
    // pyarrow moves the structure out (leaving it released); on failure, dropping the box
    // releases it here.
    let out = rb.call_method1(pyo3::intern!(py, "_import_from_c"), (address, schema));
    drop(array);
    out
}

/// `batches` of `schema` as an `arrow_array_stream` capsule.
pub fn stream_capsule(
    py: Python<'_>,
    batches: Vec<RecordBatch>,
    schema: arrow_schema::SchemaRef,
) -> PyResult<Bound<'_, PyCapsule>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok::<_, ArrowError>), schema);
    reader_capsule(py, Box::new(reader))
}

/// `reader` as an `arrow_array_stream` capsule: the consumer pulls its batches.
pub fn reader_capsule(
    py: Python<'_>,
    reader: Box<dyn RecordBatchReader + Send>,
) -> PyResult<Bound<'_, PyCapsule>> {
    let guarded = Guarded(reader);
    PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(Box::new(guarded)), STREAM)
}

/// A reader whose panics are errors: the consumer pulls batches through a C callback, which
/// would abort the process on a panic (no `#[guard]` reaches it).
struct Guarded(Box<dyn RecordBatchReader + Send>);

impl Iterator for Guarded {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.0.next()));
        next.unwrap_or_else(|panic| {
            let what = crate::error::panic_message(panic.as_ref());
            Some(Err(ArrowError::ExternalError(what.into())))
        })
    }
}

impl RecordBatchReader for Guarded {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.0.schema()
    }
}

/// The options of a file written from Python: `offset_width` is `"i64"` (`LargeList`) or
/// `"i32"` (`List`), `batch_bytes` the target size of a record batch, `compression` `None`,
/// `"none"`, `"zstd"` or `"lz4"` (Arrow IPC body compression).
pub fn write_options(
    offset_width: &str,
    batch_bytes: Option<&Bound<'_, PyAny>>,
    compression: Option<&str>,
) -> PyResult<WriteOptions> {
    let batch_bytes = size_option("batch_bytes", batch_bytes)?;
    let width = match offset_width {
        "i64" => OffsetWidth::I64,
        "i32" => OffsetWidth::I32,
        other => {
            return Err(invalid(format!(
                "offset_width must be \"i32\" or \"i64\", not {other:?}"
            )));
        }
    };
    let compression: IpcCompression = compression.unwrap_or("none").parse().py_err()?;
    let options = WriteOptions::default()
        .with_offset_width(width)
        .with_compression(compression);
    Ok(match batch_bytes {
        Some(bytes) => options.with_batch_bytes(bytes),
        None => options,
    })
}

/// The record batches of `data`, any object with `__arrow_c_stream__` (a `pyarrow.Table`,
/// a `RecordBatchReader`), as a Rust reader that can be read without the GIL.
pub fn import_stream(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = data
        .call_method0(pyo3::intern!(py, "__arrow_c_stream__"))?
        .cast_into::<PyCapsule>()?;
    let pointer = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule is named `arrow_array_stream`, so by the PyCapsule protocol it
    // points to a valid `ArrowArrayStream`; `from_raw` moves it out and marks the original
    // released, so the capsule's destructor does not release it again.
    unsafe { RecordBatchStreamReader::from_raw(pointer.as_ptr().cast()) }
        .map_err(|e| invalid(format!("data: its Arrow C stream cannot be read: {e}")))
}

/// A failure of the caller's stream of record batches ([`import_stream`]): the caller's data,
/// an `ArgumentError` (an I/O fault stays one).
pub fn stream_fault(e: ArrowError) -> lodtensor::Error {
    if let ArrowError::IoError(..) = e {
        return e.into();
    }
    let failed = format!("a stream that failed ({e})");
    lodtensor::Error::invalid_argument("write", "data", failed, "a stream of record batches")
}

/// Writes `data` (any object with `__arrow_c_stream__`: a `pyarrow.Table`, a
/// `RecordBatchReader`) to `path` as a validated lodtensor file, atomically: under a
/// temporary name, renamed over `path` only once complete. Returns
/// `{"rows", "batches", "bytes"}`.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, data, offset_width = "i64", batch_bytes = None, compression = None))]
pub fn write<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    data: &Bound<'py, PyAny>,
    offset_width: &str,
    batch_bytes: Option<&Bound<'py, PyAny>>,
    compression: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let reader = import_stream(py, data)?;
    // The input's own schema metadata (HuggingFace's features, pandas') is kept.
    let options = write_options(offset_width, batch_bytes, compression)?
        .with_schema_metadata(reader.schema().metadata().clone());
    let summary = py
        .detach(move || -> lodtensor::Result<_> {
            let mut writer = DatasetWriter::create(&path, options)?;
            for batch in reader {
                let batch = batch.map_err(stream_fault)?;
                writer.write(&Dataset::try_from_record_batch(&batch)?)?;
            }
            writer.finish()
        })
        .py_err()?;
    let d = PyDict::new(py);
    d.set_item("rows", summary.rows)?;
    d.set_item("batches", summary.batches)?;
    d.set_item("bytes", summary.bytes)?;
    Ok(d)
}

/// The schema of `data` (any object with `__arrow_c_stream__`, read whole: a table in
/// memory) as a `pyarrow.Schema`, with each column of a tensor's type that holds a null in
/// some batch, and that its field does not declare a tensor, marked `lodtensor.kind =
/// "side"` (format-spec §2.2): written batch by batch, the column is then a side column in
/// every batch, not only in those with nulls.
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn side_schema<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let reader = import_stream(py, data)?;
    let schema = reader.schema();
    let marked = py
        .detach(move || -> lodtensor::Result<Schema> {
            let batches = reader
                .collect::<Result<Vec<_>, _>>()
                .map_err(stream_fault)?;
            let datasets = Dataset::try_from_record_batches(&batches)?;
            let Some(first) = datasets.first() else {
                return Ok(schema.as_ref().clone());
            };
            let fields: Vec<arrow_schema::Field> = (schema.fields().iter().zip(first.columns()))
                .map(|(field, column)| match column.is_side() {
                    true => column.arrow_field(),
                    false => field.as_ref().clone(),
                })
                .collect();
            Ok(Schema::new_with_metadata(fields, schema.metadata().clone()))
        })
        .py_err()?;
    to_pyarrow_schema(py, &marked)
}
