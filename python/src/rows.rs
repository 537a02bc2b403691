//! What `Dataset` and `ShardedDataset` share, written once: the [`Rows`] trait, whose
//! provided methods are the bodies of both classes' `row`, `__getitem__`, `sample`, `take`,
//! `offsets`, `lod` and `loader` (each class's `#[pymethods]` only forwards, with its own
//! docstring), and the helpers under them.

use std::ffi::CString;
use std::sync::atomic::AtomicBool;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::array::{Array, rebased_offsets};
use crate::deprecated;
use crate::loader::{Loader, Source};
use crate::loader_options::Options;

/// A dataset class of the binding: what differs between a file and a sharded dataset
/// (how a row is found, how rows are taken, where offsets come from); the provided
/// methods are the rest.
pub trait Rows: Sync {
    /// The Python class's name, for messages.
    const CLASS: &'static str;

    /// The number of rows.
    fn num_rows(&self) -> usize;

    /// Row `row` (in range) as a one-row `pyarrow.RecordBatch`, a view.
    fn row_at<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyAny>>;

    /// The rows `rows` (in range) of every column or of `columns`, as one batch.
    fn take_rows(
        &self,
        rows: &[usize],
        columns: Option<&[&str]>,
    ) -> lodtensor::Result<lodtensor::Batch>;

    /// The offsets of each level of `column` over every row (level 0 first).
    fn offset_levels(&self, py: Python<'_>, column: &str) -> PyResult<Vec<Vec<i64>>>;

    /// What a loader over the dataset reads.
    fn source(&self) -> Source;

    /// Whether the deprecated `sample` warned already.
    fn warned(&self) -> &AtomicBool;

    /// `row(index)`: negative counts from the end, `IndexError` past either end.
    fn row_py<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        self.row_at(py, row_index(index, self.num_rows())?)
    }

    /// The deprecated `sample(row)`: `row_at`, warning once per object.
    fn sample_py<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyAny>> {
        let class = Self::CLASS;
        let message = format!("{class}.sample(row) is deprecated: use row(row) or ds[row]");
        deprecated::warn_once(
            py,
            self.warned(),
            &CString::new(message).unwrap_or_default(),
        )?;
        self.row_at(py, row)
    }

    /// `take(rows, columns)`: one `Batch` of the rows, `IndexError` naming one out of range.
    fn take_py(
        &self,
        py: Python<'_>,
        rows: &Bound<'_, PyAny>,
        columns: Option<Vec<String>>,
    ) -> PyResult<crate::batch::Batch> {
        let len = self.num_rows();
        crate::batch::take(py, rows, columns, len, |rows, columns| {
            self.take_rows(rows, columns)
        })
    }

    /// `offsets(column, level)`: of level `level`, or of every level as a list.
    fn offsets_py<'py>(
        &self,
        py: Python<'py>,
        column: &str,
        level: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let levels = self.offset_levels(py, column)?;
        offsets_to_py(py, levels, level)
    }

    /// The deprecated `lod(column)`: `offsets(column)`, warning.
    fn lod_py<'py>(&self, py: Python<'py>, column: &str) -> PyResult<Bound<'py, PyAny>> {
        let message = format!(
            "{}.lod(column) is deprecated: use offsets(column)",
            Self::CLASS
        );
        deprecated::warn(py, &CString::new(message).unwrap_or_default())?;
        self.offsets_py(py, column, None)
    }

    /// `loader(**options)`: a `Loader` over the dataset.
    fn loader_py(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Loader> {
        let options = Options::from_kwargs(py, options)?;
        Loader::build(py, self.source(), options)
    }
}

/// The offsets of each level of `column` over `batches` (level 0 first), each batch's
/// offsets rebased to follow the previous batch's. `known`: whether the column exists, for
/// an error even without batches.
pub fn offsets_per_level<'a>(
    batches: impl Iterator<Item = &'a lodtensor::Dataset>,
    column: &str,
    known: bool,
) -> lodtensor::Result<Vec<Vec<i64>>> {
    if !known {
        return Err(lodtensor::ArgumentError::NoSuchColumn(column.to_owned()).into());
    }
    let mut levels: Vec<Vec<i64>> = Vec::new();
    for batch in batches {
        let lod = batch.column(column)?.lod();
        levels.resize_with(lod.num_levels(), || vec![0]);
        for (level, out) in levels.iter_mut().enumerate() {
            let total = *out.last().expect("starts with 0");
            out.extend(rebased_offsets(lod, level).skip(1).map(|o| o + total));
        }
    }
    Ok(levels)
}

/// Offsets per level as Python: level `level`'s as a numpy `int64` array, or every level's
/// as a list of them when `level` is `None`.
pub fn offsets_to_py(
    py: Python<'_>,
    levels: Vec<Vec<i64>>,
    level: Option<usize>,
) -> PyResult<Bound<'_, PyAny>> {
    let numpy = |py, o: Vec<i64>| {
        let n = o.len();
        Array::owned(o, vec![n]).into_numpy(py)
    };
    let Some(level) = level else {
        let arrays = (levels.into_iter().map(|o| numpy(py, o))).collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(py, arrays)?.into_any());
    };
    let count = levels.len();
    match levels.into_iter().nth(level) {
        Some(offsets) => numpy(py, offsets),
        None => {
            let e = lodtensor::ArgumentError::LevelOutOfBounds {
                level,
                levels: count,
            };
            Err(crate::error::to_py(e.into()))
        }
    }
}

/// Python's index `index` into `rows` rows (negative counts from the end); `IndexError` past
/// either end, so that `for row in ds` stops there.
pub fn row_index(index: isize, rows: usize) -> PyResult<usize> {
    let row = if index < 0 {
        rows.checked_sub(index.unsigned_abs())
    } else {
        Some(index.unsigned_abs())
    };
    match row {
        Some(row) if row < rows => Ok(row),
        _ => Err(PyIndexError::new_err(format!(
            "row {index} is out of range: the dataset has {rows} rows"
        ))),
    }
}
