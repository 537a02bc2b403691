//! `lodtensor.open` and `Dataset`: a validated, memory-mapped dataset file.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use lodtensor::MappedDataset;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyDict, PyList};

use crate::error::IntoPy;
use crate::ffi;
use crate::loader::{Loader, Source};
use crate::rows::{Rows, offsets_per_level};

/// Maps and validates the dataset file at `path` (every offset of every level is checked;
/// no value is read): only the columns `columns`, in that order, when given (the others
/// are not decoded or validated). Raises `FileNotFoundError` for a missing file and
/// `LodTensorError` for an invalid one or a column it has not.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, columns = None))]
pub fn open(py: Python<'_>, path: PathBuf, columns: Option<Vec<String>>) -> PyResult<Dataset> {
    let file = py
        .detach(|| match &columns {
            None => MappedDataset::open(&path),
            Some(names) => {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                MappedDataset::open_columns(&path, &names)
            }
        })
        .py_err()?;
    Ok(Dataset::new(file, columns))
}

/// A dataset file, memory-mapped and validated; made by `lodtensor.open(path)`.
///
/// Every array it hands out (numpy or pyarrow) is a view into the mapping and keeps it
/// alive: arrays stay valid after the dataset is gone.
#[pyclass(frozen, module = "lodtensor")]
pub struct Dataset {
    pub(crate) file: Arc<MappedDataset>,
    names: Vec<String>,
    /// The columns it was opened with (`open(path, columns)`), for its pickle.
    projection: Option<Vec<String>>,
    /// The record batches as `pyarrow.RecordBatch`es, imported once on first use.
    pyarrow_batches: PyOnceLock<Py<PyList>>,
    /// When `row` looks at the file again (`check_unchanged`, a `statx`).
    lease: Lease,
    /// Whether the deprecated `sample` warned already.
    warned: AtomicBool,
}

/// A file checked by `row` at most once per [`Lease::CALLS`] calls or [`Lease::NANOS`] of
/// time: a random row costs no system call, and a file changed in place is still noticed.
#[derive(Debug, Default)]
pub struct Lease {
    /// Calls since the file was opened.
    calls: AtomicU64,
    /// When the file was last checked, in nanoseconds after [`Lease::epoch`].
    checked: AtomicU64,
}

impl Lease {
    /// Calls a check lasts.
    const CALLS: u64 = 64;
    /// Time a check lasts: 10 ms.
    const NANOS: u64 = 10_000_000;

    /// The process's clock origin (`Instant::now` reads the vDSO clock: no system call).
    fn now() -> u64 {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        let elapsed = EPOCH.get_or_init(Instant::now).elapsed().as_nanos();
        u64::try_from(elapsed).unwrap_or(u64::MAX)
    }

    /// Whether this call checks the file: the first after [`Lease::CALLS`] calls or
    /// [`Lease::NANOS`] since the last check (and the very first call).
    pub fn due(&self) -> bool {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let now = Self::now();
        let last = self.checked.load(Ordering::Relaxed);
        if n.is_multiple_of(Self::CALLS) || now.saturating_sub(last) >= Self::NANOS {
            self.checked.store(now, Ordering::Relaxed);
            return true;
        }
        false
    }
}

impl Dataset {
    fn new(file: MappedDataset, projection: Option<Vec<String>>) -> Self {
        let names = file
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        Dataset {
            file: Arc::new(file),
            names,
            projection,
            pyarrow_batches: PyOnceLock::new(),
            lease: Lease::default(),
            warned: AtomicBool::new(false),
        }
    }

    fn pyarrow_batches<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyList>> {
        // A file written in place since opening: an error, not a SIGBUS on the next read.
        self.file.check_unchanged().py_err()?;
        self.imported_batches(py)
    }

    /// The record batches as `pyarrow.RecordBatch`es, the file not checked.
    fn imported_batches<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyList>> {
        let list = self.pyarrow_batches.get_or_try_init(py, || {
            let reader = ffi::to_pyarrow_reader(py, self.stream(py)?)?;
            let batches = reader
                .call_method0("read_all")?
                .call_method0("to_batches")?;
            Ok::<_, PyErr>(batches.cast_into::<PyList>()?.unbind())
        })?;
        Ok(list.bind(py))
    }

    fn stream<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        self.file.check_unchanged().py_err()?;
        let batches = self
            .file
            .batches()
            .iter()
            .map(|b| b.to_record_batch())
            .collect();
        ffi::stream_capsule(py, batches, self.file.schema().clone())
    }
}

impl Rows for Dataset {
    const CLASS: &'static str = "Dataset";

    fn num_rows(&self) -> usize {
        self.file.num_rows()
    }

    fn row_at<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyAny>> {
        let (batch, local) = self.file.locate_row(row).py_err()?;
        if self.lease.due() {
            self.file.check_unchanged().py_err()?;
        }
        self.imported_batches(py)?
            .get_item(batch)?
            .call_method1(pyo3::intern!(py, "slice"), (local, 1))
    }

    fn take_rows(
        &self,
        rows: &[usize],
        columns: Option<&[&str]>,
    ) -> lodtensor::Result<lodtensor::Batch> {
        if self.lease.due() {
            self.file.check_unchanged()?;
        }
        match columns {
            Some(columns) => self.file.take_columns(rows, columns),
            None => self.file.take(rows),
        }
    }

    fn offset_levels(&self, py: Python<'_>, column: &str) -> PyResult<Vec<Vec<i64>>> {
        let known = self.names.iter().any(|n| n == column);
        py.detach(|| offsets_per_level(self.file.batches().iter(), column, known))
            .py_err()
    }

    fn source(&self) -> Source {
        Source::File(self.file.clone())
    }

    fn warned(&self) -> &AtomicBool {
        &self.warned
    }
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl Dataset {
    /// The number of rows (samples) over all record batches.
    #[getter]
    fn num_rows(&self) -> usize {
        self.file.num_rows()
    }

    /// The number of rows.
    fn __len__(&self) -> usize {
        self.file.num_rows()
    }

    /// The column names, in file order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The number of record batches in the file.
    #[getter]
    fn num_batches(&self) -> usize {
        self.file.batches().len()
    }

    /// The path the file was opened from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    /// The schema, a `pyarrow.Schema` (with the file's metadata).
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ffi::to_pyarrow_schema(py, self.file.schema())
    }

    /// The offsets of `column` over the whole file, as numpy `int64`: of level `level`, or
    /// of every level as a list (level 0 first) when `level` is `None`. Level `l`'s offsets
    /// index the sequences of level `l + 1`, the last level's the elements of the values.
    #[pyo3(signature = (column, level = None))]
    fn offsets<'py>(
        &self,
        py: Python<'py>,
        column: &str,
        level: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.offsets_py(py, column, level)
    }

    /// Deprecated: `offsets(column)`.
    fn lod<'py>(&self, py: Python<'py>, column: &str) -> PyResult<Bound<'py, PyAny>> {
        self.lod_py(py, column)
    }

    /// Row `index` (negative counts from the end) as a one-row `pyarrow.RecordBatch`, a
    /// view into the mapping. `IndexError` past either end.
    fn row<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        self.row_py(py, index)
    }

    /// The rows `rows` (ints from 0, a sequence or a numpy integer array; repeats allowed)
    /// in the order given, of every column or of `columns`, as one `Batch`: a view of the
    /// mapping when they are consecutive rows of one record batch, else copied once.
    /// `IndexError` naming a row out of range.
    #[pyo3(signature = (rows, columns = None))]
    fn take(
        &self,
        py: Python<'_>,
        rows: &Bound<'_, PyAny>,
        columns: Option<Vec<String>>,
    ) -> PyResult<crate::batch::Batch> {
        self.take_py(py, rows, columns)
    }

    /// `ds[i]`: `ds.row(i)`.
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        self.row(py, index)
    }

    /// Deprecated: `row(row)`.
    fn sample<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyAny>> {
        self.sample_py(py, row)
    }

    /// The whole file as a `pyarrow.Table`, zero-copy: one record batch per batch of the file.
    fn to_pyarrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batches = self.pyarrow_batches(py)?;
        py.import("pyarrow")?
            .getattr("Table")?
            .call_method1("from_batches", (batches, self.schema(py)?))
    }

    /// The file as a HuggingFace `datasets.Dataset` over the same values: the features of
    /// its `huggingface` schema metadata (what `lodtensor.from_huggingface` kept), else
    /// inferred, tensor elements as fixed-length lists (`lodtensor._hf.to_dataset`).
    fn to_huggingface<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let table = slf.call_method0("to_pyarrow")?;
        py.import("lodtensor._hf")?
            .getattr("to_dataset")?
            .call1((table,))
    }

    /// The Arrow PyCapsule protocol: the schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        ffi::schema_capsule(py, self.file.schema())
    }

    /// The Arrow PyCapsule protocol: every record batch as a C stream (`pyarrow.table(ds)`,
    /// polars, DuckDB, ... read the file through it without a copy).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        ffi::refuse_requested_schema(requested_schema)?;
        self.stream(py)
    }

    /// A `Loader` of training batches over this file; the options (keywords only) are
    /// listed in `help(lodtensor.Loader)`.
    #[pyo3(signature = (**options))]
    fn loader(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Loader> {
        self.loader_py(py, options)
    }

    fn __repr__(&self) -> String {
        format!(
            "lodtensor.Dataset({:?}, num_rows={}, columns={:?})",
            self.file.path(),
            self.file.num_rows(),
            self.names
        )
    }

    /// Pickles as `open(path, columns)`: another process maps the file itself.
    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (PathBuf, Option<Vec<String>>))> {
        let open = py.import("lodtensor")?.getattr("open")?;
        Ok((open, (self.path()?, self.projection.clone())))
    }
}
