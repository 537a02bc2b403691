//! `ShardWriter`, `commit` and `vacuum`: sharded datasets written from Python, by one
//! process or by many at once (appending, or each writing pending shards under its own
//! prefix), and what killed writers left removed.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::{RecordBatch, RecordBatchReader};
use lodtensor::Dataset;
use lodtensor::shards::{Location, ShardOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::deprecated;
use crate::error::{IntoPy, invalid, size_option};
use crate::ffi::{import_stream, write_options};
use crate::location::{location_of, no_options};
use crate::remote::remote_options;
use crate::shards::manifest_dict;

/// Writes a sharded dataset: a directory of lodtensor files (`PREFIX-00000.arrow`, …) and
/// its manifest. Each shard is written atomically and closed at `shard_rows` rows or
/// `shard_bytes` bytes; `finish()` replaces the manifest atomically, last.
///
/// `mode`: `"create"` a new dataset (refused where a manifest exists), `"append"` shards to
/// an existing one (any number of writers at once: each commits its shards after those
/// listed then), or `"pending"`: one of many independent writers, each with its own
/// `prefix`, recording its shards in `_lodtensor.pending.PREFIX.json` until
/// `lodtensor.commit(path)` merges them, or `"overwrite"`: the dataset there (if any) replaced
/// by this writer's rows, atomically (its old shards stay until `vacuum`). Shards wait under `_pending/` (which dataset
/// discovery ignores) until committed. `schema_metadata` (`str` → `str`) is written into
/// every shard's file beside lodtensor's own keys (`write_shards` passes its input's, such as
/// HuggingFace's features, which `ShardedDataset.to_huggingface()` reads back).
///
/// `path` may be a URL (`s3://bucket/prefix/`, `gs://`, `az://`; `storage_options` as for
/// `open`): the shards are written into a local temporary directory (`TMPDIR`), then
/// uploaded by `finish()` (created under their final names, the manifest committed by a
/// conditional PUT; with `"pending"`, recorded in a new pending manifest of `prefix` in
/// the store for `lodtensor.commit(url)`).
#[pyclass(frozen, module = "lodtensor")]
pub struct ShardWriter {
    /// `None` once finished.
    writer: Mutex<Option<lodtensor::shards::ShardWriter>>,
    dir: PathBuf,
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl ShardWriter {
    #[new]
    #[pyo3(signature = (path = None, *, mode = "create", shard_rows = None, shard_bytes = None,
        prefix = None, offset_width = "i64", batch_bytes = None, dir = None,
        schema_metadata = None, compression = None, storage_options = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: Option<&Bound<'_, PyAny>>,
        mode: &str,
        shard_rows: Option<&Bound<'_, PyAny>>,
        shard_bytes: Option<&Bound<'_, PyAny>>,
        prefix: Option<String>,
        offset_width: &str,
        batch_bytes: Option<&Bound<'_, PyAny>>,
        dir: Option<&Bound<'_, PyAny>>,
        schema_metadata: Option<HashMap<String, String>>,
        compression: Option<&str>,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let dir = match (path, dir) {
            (Some(path), None) => path,
            (None, Some(dir)) => {
                let message = c"ShardWriter(dir=...) is deprecated: use ShardWriter(path=...)";
                deprecated::warn(py, message)?;
                dir
            }
            (None, None) => {
                return Err(PyTypeError::new_err(
                    "ShardWriter() missing required argument: 'path'",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(PyTypeError::new_err(
                    "ShardWriter() got both 'path' and its deprecated name 'dir'",
                ));
            }
        };
        // Each shard's file keeps the schema metadata given (HuggingFace's features, pandas').
        let write = write_options(offset_width, batch_bytes, compression)?
            .with_schema_metadata(schema_metadata.unwrap_or_default());
        let mut options = ShardOptions::default().with_write_options(write);
        if let Some(rows) = size_option("shard_rows", shard_rows)? {
            options = options.with_shard_rows(rows);
        }
        if let Some(bytes) = size_option("shard_bytes", shard_bytes)? {
            options = options.with_shard_bytes(bytes);
        }
        if let Some(prefix) = &prefix {
            options = options.with_prefix(prefix);
        }
        let location = crate::location::location_of(dir)?;
        let dir = match &location {
            Location::Path(dir) => {
                crate::location::no_options("ShardWriter", &storage_options)?;
                dir.clone()
            }
            Location::Url(url) => {
                options = options.with_remote_options(remote_options(storage_options));
                PathBuf::from(url)
            }
        };
        let open = match mode {
            "create" => lodtensor::shards::ShardWriter::create,
            "append" => lodtensor::shards::ShardWriter::append,
            "pending" => lodtensor::shards::ShardWriter::pending,
            "overwrite" => lodtensor::shards::ShardWriter::overwrite,
            other => {
                return Err(invalid(format!(
                    "mode must be \"create\", \"append\", \"pending\" or \"overwrite\", not {other:?}"
                )));
            }
        };
        let writer = py.detach(|| open(location, options)).py_err()?;
        Ok(ShardWriter {
            writer: Mutex::new(Some(writer)),
            dir,
        })
    }

    /// The dataset directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.dir.clone()
    }

    /// Deprecated: `path`.
    #[getter]
    fn dir(&self, py: Python<'_>) -> PyResult<PathBuf> {
        deprecated::warn(py, c"ShardWriter.dir is deprecated: use ShardWriter.path")?;
        Ok(self.dir.clone())
    }

    /// Appends the rows of `data` (a `pyarrow.Table` or anything with
    /// `__arrow_c_stream__`), closing shards at the budget. The first data of a new dataset
    /// fix its columns (also when it has no rows); later data must match them.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let reader = import_stream(py, data)?;
        py.detach(|| -> lodtensor::Result<()> {
            let mut guard = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            let writer = guard.as_mut().ok_or_else(finished)?;
            // No batch at all still gives the columns (pyarrow streams skip empty batches).
            let empty = RecordBatch::new_empty(reader.schema());
            let mut rows = 0;
            for batch in reader {
                let batch = batch.map_err(crate::ffi::stream_fault)?;
                rows += batch.num_rows();
                writer.write(&Dataset::try_from_record_batch(&batch)?)?;
            }
            if rows == 0 {
                writer.write(&Dataset::try_from_record_batch(&empty)?)?;
            }
            Ok(())
        })
        .py_err()
    }

    /// Closes the open shard and writes the manifest (or the pending manifest) atomically;
    /// for a URL, uploads the shards and commits them (or records them as pending).
    /// Returns what it wrote, as a dict (`format-spec.md` §7.1).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let manifest = py
            .detach(|| {
                let mut guard = self.writer.lock().unwrap_or_else(|e| e.into_inner());
                guard.take().ok_or_else(finished)?.finish()
            })
            .py_err()?;
        manifest_dict(py, &manifest)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Finishes when the block ended without an exception; otherwise leaves the manifest as
    /// it was and removes the shards this writer wrote.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc_value: Option<Bound<'_, PyAny>>,
        _traceback: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let failed = exc_type.is_some_and(|t| !t.is_none());
        // A `write` on another thread may hold the lock: wait with the GIL released.
        let open = py.detach(|| {
            let mut guard = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            if failed {
                // A URL's local shards go with it; nothing was uploaded.
                guard.take();
            }
            guard.is_some()
        });
        if open {
            self.finish(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("lodtensor.ShardWriter({:?})", self.dir)
    }
}

/// Removes the shards of the sharded dataset at `path` (a directory or a URL) that no
/// manifest references (what killed or failed writers left) and that were last modified
/// more than `grace` seconds ago; never a live writer's in a directory. Returns the removed
/// paths (URLs for a URL).
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, *, grace = 86_400.0, storage_options = None))]
pub fn vacuum(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    grace: f64,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Vec<String>> {
    let grace = std::time::Duration::try_from_secs_f64(grace).map_err(|_| {
        invalid(format!(
            "grace must be a number of seconds >= 0, not {grace}"
        ))
    })?;
    let location = location_of(path)?;
    if let Location::Path(_) = &location {
        no_options("vacuum", &storage_options)?;
    }
    let options = remote_options(storage_options);
    py.detach(|| lodtensor::shards::vacuum_with(location, &options, grace))
        .py_err()
}

/// The error of a call on a finished writer.
fn finished() -> lodtensor::Error {
    lodtensor::Error::invalid_argument(
        "ShardWriter",
        "state",
        "finished",
        "a writer not finished yet",
    )
}
