//! `demo`: the documents of `lodtensor demo`, written by the same library calls.

use std::path::PathBuf;

use lodtensor::synthetic::demo_chunks;
use lodtensor::{DatasetWriter, WriteOptions};
use pyo3::prelude::*;

use crate::error::IntoPy;

/// Writes `docs` synthetic documents from `seed` to the file `path` as `lodtensor demo`
/// writes its `documents.arrow` (`lodtensor::synthetic::demo_chunks`, the default write
/// options): the same bytes for the same arguments. Returns `{"rows", "batches", "bytes"}`.
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn demo_documents<'py>(
    py: Python<'py>,
    path: PathBuf,
    docs: usize,
    seed: u64,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let summary = py
        .detach(move || -> lodtensor::Result<_> {
            let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
            for chunk in demo_chunks(docs, seed) {
                writer.write(&chunk?)?;
            }
            writer.finish()
        })
        .py_err()?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("rows", summary.rows)?;
    d.set_item("batches", summary.batches)?;
    d.set_item("bytes", summary.bytes)?;
    Ok(d)
}
