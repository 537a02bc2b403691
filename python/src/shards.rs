//! `lodtensor.open(DIR)` and `ShardedDataset`: a directory of lodtensor files (shards) and
//! its manifest, `_lodtensor.json`, handed to pyarrow shard by shard without a copy.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use lodtensor::shards::{ColumnSpec, Manifest};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyDict, PyList, PyTuple};

use crate::credentials::Reopen;
use crate::error::{IntoPy, invalid};
use crate::ffi;
use crate::loader::{Loader, Source};
use crate::rows::{Rows, offsets_per_level};

/// Opens the sharded dataset in the directory `path`, reading its manifest only (no shard
/// is mapped until it is touched). Raises `FileNotFoundError` when there is no manifest and
/// `LodTensorError` for an invalid one.
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn open_shards(py: Python<'_>, path: PathBuf) -> PyResult<ShardedDataset> {
    let data = py
        .detach(|| lodtensor::shards::ShardedDataset::open(&path))
        .py_err()?;
    ShardedDataset::new(data, None)
}

/// A sharded dataset, open: made by `lodtensor.open(DIR)`.
///
/// Opening reads the manifest only; a shard is mapped and checked against the manifest
/// (size, CRC-32C, rows, batches, columns, counts) the first time it is touched. Rows are
/// numbered across shards in manifest order. Every array it hands out is a view into a
/// shard's mapping and keeps that mapping alive.
#[pyclass(frozen, module = "lodtensor")]
pub struct ShardedDataset {
    pub(crate) data: Arc<lodtensor::shards::ShardedDataset>,
    /// The schema every shard's batches are handed out with, made from the manifest.
    schema: SchemaRef,
    /// Each shard's record batches as `pyarrow.RecordBatch`es, imported on first use.
    pyarrow_shards: Vec<PyOnceLock<Py<PyList>>>,
    /// How a dataset in object storage was opened (to open it again when unpickled),
    /// without its credentials (`credentials.rs`).
    remote: Option<Reopen>,
    /// Whether the deprecated `sample` warned already.
    warned: std::sync::atomic::AtomicBool,
}

impl ShardedDataset {
    /// The Python object of `data`, opened as `remote` says if in object storage.
    pub(crate) fn new(
        data: lodtensor::shards::ShardedDataset,
        remote: Option<Reopen>,
    ) -> PyResult<Self> {
        let schema = manifest_schema(&data.manifest().columns).py_err()?;
        let pyarrow_shards = (0..data.num_shards()).map(|_| PyOnceLock::new()).collect();
        Ok(ShardedDataset {
            data: Arc::new(data),
            schema,
            pyarrow_shards,
            remote,
            warned: Default::default(),
        })
    }

    /// A C stream of the record batches of `shards`, in order.
    fn stream<'py>(&self, py: Python<'py>, shards: Vec<usize>) -> PyResult<Bound<'py, PyCapsule>> {
        if let Some(bad) = shards.iter().find(|&&s| s >= self.data.num_shards()) {
            return Err(invalid(format!(
                "shard {bad} is out of range: the dataset has {} shards",
                self.data.num_shards()
            )));
        }
        let reader = ShardStream {
            data: self.data.clone(),
            schema: self.schema.clone(),
            shards: shards.into_iter(),
            current: None,
        };
        ffi::reader_capsule(py, Box::new(reader))
    }

    /// The `pyarrow.RecordBatchReader` of `shards`.
    fn pyarrow_reader<'py>(
        &self,
        py: Python<'py>,
        shards: Vec<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        ffi::to_pyarrow_reader(py, self.stream(py, shards)?)
    }

    /// Shard `shard`'s record batches as a list of `pyarrow.RecordBatch`es (imported once).
    fn pyarrow_shard<'py>(&self, py: Python<'py>, shard: usize) -> PyResult<&Bound<'py, PyList>> {
        let list = self.pyarrow_shards[shard].get_or_try_init(py, || {
            let batches = self
                .pyarrow_reader(py, vec![shard])?
                .call_method0("read_all")?
                .call_method0("to_batches")?;
            Ok::<_, PyErr>(batches.cast_into::<PyList>()?.unbind())
        })?;
        Ok(list.bind(py))
    }
}

impl Rows for ShardedDataset {
    const CLASS: &'static str = "ShardedDataset";

    fn num_rows(&self) -> usize {
        self.data.num_rows()
    }

    fn row_at<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyAny>> {
        let (shard, local) = self.data.locate_row(row).py_err()?;
        let data = self.data.clone();
        if data.url().is_some() && !data.is_shard_at_hand(shard) {
            // Not in the node's cache: the row's bytes alone, by ranges (`sample`).
            let rb = py.detach(|| data.sample(row)).py_err()?.to_record_batch();
            let options = RecordBatchOptions::new().with_row_count(Some(rb.num_rows()));
            let rb = RecordBatch::try_new_with_options(
                self.schema.clone(),
                rb.columns().to_vec(),
                &options,
            )
            .map_err(|e| invalid(e.to_string()))?;
            return ffi::to_pyarrow_batch(py, rb, &ffi::to_pyarrow_schema(py, &self.schema)?);
        }
        let (batch, local) = py
            .detach(|| data.shard(shard)?.locate_row(local))
            .py_err()?;
        self.pyarrow_shard(py, shard)?
            .get_item(batch)?
            .call_method1(pyo3::intern!(py, "slice"), (local, 1))
    }

    fn take_rows(
        &self,
        rows: &[usize],
        columns: Option<&[&str]>,
    ) -> lodtensor::Result<lodtensor::Batch> {
        match columns {
            Some(columns) => self.data.take_columns(rows, columns),
            None => self.data.take(rows),
        }
    }

    fn offset_levels(&self, py: Python<'_>, column: &str) -> PyResult<Vec<Vec<i64>>> {
        let data = &self.data;
        let known = data.columns().iter().any(|c| c.name == column);
        py.detach(|| {
            let mut batches = Vec::new();
            for s in 0..data.num_shards() {
                batches.extend(data.shard(s)?.batches());
            }
            offsets_per_level(batches.into_iter(), column, known)
        })
        .py_err()
    }

    fn source(&self) -> Source {
        Source::Shards(self.data.clone())
    }

    fn warned(&self) -> &std::sync::atomic::AtomicBool {
        &self.warned
    }
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl ShardedDataset {
    /// The number of rows over all shards (from the manifest).
    #[getter]
    fn num_rows(&self) -> usize {
        self.data.num_rows()
    }

    /// The number of rows.
    fn __len__(&self) -> usize {
        self.data.num_rows()
    }

    /// The column names, in schema order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.data.columns().iter().map(|c| c.name.clone()).collect()
    }

    /// The number of shards.
    #[getter]
    fn num_shards(&self) -> usize {
        self.data.num_shards()
    }

    /// The dataset directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.data.dir().to_path_buf()
    }

    /// The schema, a `pyarrow.Schema` made from the manifest (what lodtensor writes).
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ffi::to_pyarrow_schema(py, &self.schema)
    }

    /// The manifest as a dict (`format-spec.md` §7.1): `columns` and `shards`.
    #[getter]
    fn manifest<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        manifest_dict(py, self.data.manifest())
    }

    /// The manifest's shards: one dict per shard (`file`, `rows`, `batches`, `bytes`,
    /// `crc32c`, `columns`), in row order.
    #[getter]
    fn shards<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.manifest(py)?.get_item("shards")
    }

    /// The global rows of every shard: `num_shards + 1` numpy `int64` offsets (shard `s`
    /// holds rows `offsets[s]..offsets[s + 1]`).
    #[getter]
    fn shard_offsets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut offsets = Vec::with_capacity(self.data.num_shards() + 1);
        offsets.push(0i64);
        for shard in &self.data.manifest().shards {
            offsets.push(offsets[offsets.len() - 1] + shard.rows as i64);
        }
        let n = offsets.len();
        crate::array::Array::owned(offsets, vec![n]).into_numpy(py)
    }

    /// Maps and checks every shard not touched yet. Raises the first shard's error
    /// (`LodTensorError` naming the shard and the field, or `FileNotFoundError`).
    fn validate(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.data.validate()).py_err()
    }

    /// The offsets of `column` over every shard, as `Dataset.offsets`: of level `level`, or
    /// of every level as a list. Touches every shard.
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
    /// view into its shard's mapping. Over a URL, a row whose shard is not in the node's
    /// cache is read by range requests, its bytes alone (no shard downloaded).
    /// `IndexError` past either end.
    fn row<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        self.row_py(py, index)
    }

    /// The rows `rows` (ints from 0, a sequence or a numpy integer array; repeats allowed)
    /// in the order given, of every column or of `columns`, as one `Batch`: a view of the
    /// mapping when they are consecutive rows of one record batch, else copied once. Over a
    /// URL, the rows of a shard not in the cache are read by range requests (their bytes
    /// only, no shard downloaded; `cache_stats()["range_bytes"]`). `IndexError` naming a
    /// row out of range.
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

    /// A `pyarrow.RecordBatchReader` over the record batches of `shards` (every shard by
    /// default), in order; each shard is mapped and checked when the reader reaches it, and
    /// every batch is a view into its mapping.
    #[pyo3(signature = (shards = None))]
    fn reader<'py>(
        &self,
        py: Python<'py>,
        shards: Option<Vec<usize>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let shards = shards.unwrap_or_else(|| (0..self.data.num_shards()).collect());
        self.pyarrow_reader(py, shards)
    }

    /// Every shard as one `pyarrow.Table`, zero-copy (touches every shard).
    fn to_pyarrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.reader(py, None)?.call_method0("read_all")
    }

    /// Every shard as a HuggingFace `datasets.Dataset` over the same values (see
    /// `Dataset.to_huggingface`; touches every shard).
    fn to_huggingface<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let mut table = slf.call_method0("to_pyarrow")?;
        // The features `from_huggingface` kept are in each shard's schema metadata.
        let data = &slf.get().data;
        if data.num_shards() > 0 {
            let first = py.detach(|| data.shard(0)).py_err()?;
            let metadata: std::collections::HashMap<String, String> = (first.schema().metadata())
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect();
            if !metadata.is_empty() {
                table = table.call_method1("replace_schema_metadata", (metadata,))?;
            }
        }
        py.import("lodtensor._hf")?
            .getattr("to_dataset")?
            .call1((table,))
    }

    /// The Arrow PyCapsule protocol: the schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        ffi::schema_capsule(py, &self.schema)
    }

    /// The Arrow PyCapsule protocol: every shard's record batches as one C stream, each
    /// shard mapped and checked when the stream reaches it.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        ffi::refuse_requested_schema(requested_schema)?;
        self.stream(py, (0..self.data.num_shards()).collect())
    }

    /// A `Loader` of training batches over the shards, one after the other (rows numbered
    /// across shards); the options are `Dataset.loader`'s (`help(lodtensor.Loader)`). In
    /// `batch_size` mode without buckets or packing a shard is mapped (downloaded, by URL)
    /// when a batch first reads it and released after the epoch's last batch that reads it;
    /// otherwise every shard is mapped and checked against the manifest when the loader is
    /// made. A shard's checksum is checked when a batch first reads it; a batch inside one
    /// record batch of a shard is a view of that shard's mapping.
    #[pyo3(signature = (**options))]
    fn loader(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Loader> {
        self.loader_py(py, options)
    }

    fn __repr__(&self) -> String {
        format!(
            "lodtensor.ShardedDataset({:?}, num_rows={}, num_shards={}, columns={:?})",
            self.data
                .url()
                .map_or_else(|| self.data.dir().display().to_string(), str::to_owned),
            self.data.num_rows(),
            self.data.num_shards(),
            self.data
                .columns()
                .iter()
                .map(|c| &c.name)
                .collect::<Vec<_>>()
        )
    }

    /// What the cache of a dataset opened by URL did since it was opened: a dict with
    /// `bytes_downloaded`, `shards_downloaded`, `shards_cached` (found in the cache),
    /// `shards_evicted`, and `metadata_bytes` / `metadata_requests` (the shards' footers,
    /// messages and offsets read by loaders whose plans need sample lengths and by `take`,
    /// not counted in `bytes_downloaded`), `range_bytes` / `range_requests` (the rows a
    /// `take` read by range requests from shards not in the cache); all 0 for a local
    /// dataset.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.data.cache_stats().unwrap_or_default();
        let dict = PyDict::new(py);
        dict.set_item("bytes_downloaded", stats.bytes_downloaded)?;
        dict.set_item("shards_downloaded", stats.shards_downloaded)?;
        dict.set_item("shards_cached", stats.shards_cached)?;
        dict.set_item("shards_evicted", stats.shards_evicted)?;
        dict.set_item("metadata_bytes", stats.metadata_bytes)?;
        dict.set_item("metadata_requests", stats.metadata_requests)?;
        dict.set_item("range_bytes", stats.range_bytes)?;
        dict.set_item("range_requests", stats.range_requests)?;
        Ok(dict)
    }

    /// The URL of a dataset opened by URL (ending in `/`), else `None`.
    #[getter]
    fn url(&self) -> Option<String> {
        self.data.url().map(str::to_owned)
    }

    /// Pickled as what opens it again: its directory; by URL, the URL and the options
    /// that hold no credential (`credentials.rs`, docs/remote.md).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        if let Some(remote) = &self.remote {
            return remote.reduce(py);
        }
        let open = py.import("lodtensor")?.getattr("open")?;
        Ok((open, PyTuple::new(py, [self.path()?])?))
    }
}

/// The manifest as a Python dict (its JSON, parsed by Python's `json`).
pub fn manifest_dict<'py>(py: Python<'py>, manifest: &Manifest) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?
        .call_method1("loads", (manifest.to_json(),))
}

/// The Arrow schema of a dataset with `columns`: the schema lodtensor writes for them.
fn manifest_schema(columns: &[ColumnSpec]) -> lodtensor::Result<SchemaRef> {
    let columns = columns
        .iter()
        .map(ColumnSpec::empty_column)
        .collect::<lodtensor::Result<Vec<_>>>()?;
    Ok(lodtensor::Dataset::try_new(columns)?.schema())
}

/// The record batches of some shards, in order, each shard mapped and checked when the
/// stream reaches it: the `RecordBatchReader` behind the C stream of a sharded dataset.
struct ShardStream {
    data: Arc<lodtensor::shards::ShardedDataset>,
    schema: SchemaRef,
    shards: std::vec::IntoIter<usize>,
    /// The shard being read and its next record batch.
    current: Option<(usize, usize)>,
}

impl Iterator for ShardStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (shard, batch) = match self.current {
                Some(at) => at,
                None => (self.shards.next()?, 0),
            };
            let file = match self.data.shard(shard) {
                Ok(file) => file,
                Err(e) => {
                    // The stream ends with the error.
                    self.shards = Vec::new().into_iter();
                    self.current = None;
                    return Some(Err(ArrowError::ExternalError(Box::new(e))));
                }
            };
            let Some(dataset) = file.batches().get(batch) else {
                self.current = None;
                continue;
            };
            self.current = Some((shard, batch + 1));
            // The shard's columns equal the manifest's (checked on touch), so its batches
            // take the manifest's schema.
            let rb = dataset.to_record_batch();
            let options = RecordBatchOptions::new().with_row_count(Some(rb.num_rows()));
            return Some(RecordBatch::try_new_with_options(
                self.schema.clone(),
                rb.columns().to_vec(),
                &options,
            ));
        }
    }
}

impl RecordBatchReader for ShardStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
