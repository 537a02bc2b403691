//! Where a dataset lives, as Python gives it: a `str` is parsed by
//! `lodtensor::shards::Location` (a URL or a local path, decided there once), any other
//! path-like (`pathlib.Path`, bytes) is a local path. `lodtensor.open`, `write_shards`,
//! `commit`, `index`, `ShardWriter` and `lodtensor.ray` pass what they are given through here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lodtensor::shards::Location;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::credentials::Reopen;
use crate::error::{IntoPy, invalid};
use crate::remote::remote_options;
use crate::shards::{ShardedDataset, manifest_dict};

/// The location `path` names: a `str` parsed (`s3://…` a URL, `file://…` its path, anything
/// else a path), another path-like a path.
pub fn location_of(path: &Bound<'_, PyAny>) -> PyResult<Location> {
    if path.is_instance_of::<PyString>()
        && let Ok(text) = path.extract::<String>()
    {
        return Ok(Location::parse(&text));
    }
    Ok(Location::Path(path.extract::<PathBuf>()?))
}

/// `(True, url)` when `path` names a URL, else `(False, path)` (a `file://` URL's path, or
/// `path` itself as `os.fspath` gives it).
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn location<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
) -> PyResult<(bool, Bound<'py, PyAny>)> {
    Ok(match location_of(path)? {
        Location::Url(url) => (true, PyString::new(py, &url).into_any()),
        Location::Path(local) => (false, local.into_pyobject(py)?.into_any()),
    })
}

/// Opens the dataset at `path`: a URL's sharded dataset (its manifest read from the store,
/// each shard downloaded once per node into `cache_dir` when first touched; `cache_limit`
/// bytes or a size like `"20GB"`; byte ranges merged across `range_gap` bytes), a directory's sharded dataset, or a file (only the
/// columns `columns`, when given). Raises `ArgumentError` for `columns` given to a sharded
/// dataset and for the remote keywords given with a path.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, columns=None, storage_options=None, cache_dir=None, cache_limit=None, range_gap=None))]
pub fn open_location<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    columns: Option<Vec<String>>,
    storage_options: Option<BTreeMap<String, String>>,
    cache_dir: Option<PathBuf>,
    cache_limit: Option<&Bound<'py, PyAny>>,
    range_gap: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let location = location_of(path)?;
    let sharded = match &location {
        Location::Url(_) => "open(URL, columns=...): sharded datasets are read whole",
        Location::Path(_) => "open(DIR, columns=...): sharded datasets are read whole",
    };
    let dir = match location {
        Location::Url(url) => {
            if columns.is_some() {
                return Err(invalid(sharded));
            }
            let mut options = remote_options(storage_options);
            if let Some(dir) = cache_dir {
                options = options.with_cache_dir(dir);
            }
            if let Some(limit) = cache_limit {
                let bytes = match limit.extract::<u64>() {
                    Ok(bytes) => bytes,
                    Err(_) => {
                        lodtensor::shards::parse_size(&limit.extract::<String>()?).py_err()?
                    }
                };
                options = options.with_cache_limit(bytes);
            }
            if let Some(gap) = range_gap {
                options = options.with_range_gap(gap);
            }
            let data = py
                .detach(|| lodtensor::shards::ShardedDataset::open_with(url.as_str(), &options))
                .py_err()?;
            let reopen = Some(Reopen::new(&url, &options));
            return Ok(ShardedDataset::new(data, reopen)?
                .into_pyobject(py)?
                .into_any());
        }
        Location::Path(dir) => dir,
    };
    if storage_options.is_some()
        || cache_dir.is_some()
        || cache_limit.is_some()
        || range_gap.is_some()
    {
        return Err(invalid(
            "open(PATH, storage_options=/cache_dir=/cache_limit=/range_gap=): only for a URL",
        ));
    }
    if dir.is_dir() {
        if columns.is_some() {
            return Err(invalid(sharded));
        }
        let data = py
            .detach(|| lodtensor::shards::ShardedDataset::open(dir.as_path()))
            .py_err()?;
        return Ok(ShardedDataset::new(data, None)?
            .into_pyobject(py)?
            .into_any());
    }
    Ok(crate::dataset::open(py, dir, columns)?
        .into_pyobject(py)?
        .into_any())
}

/// Merges every pending manifest of the dataset at `path` into its manifest: a directory's
/// under its lock (their shards moved into place), a URL's by a conditional PUT (a pending
/// manifest skipped, being unparsable, of other columns or naming a shard the store lacks,
/// is left there and reported by a `UserWarning`). Idempotent. Returns the manifest as a
/// dict.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, storage_options=None))]
pub fn commit<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let location = location_of(path)?;
    if let Location::Path(_) = &location {
        no_options("commit", &storage_options)?;
    }
    let options = remote_options(storage_options);
    let report = py
        .detach(|| lodtensor::shards::commit_report(location, &options))
        .py_err()?;
    let warning = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for skipped in &report.skipped {
        let message = std::ffi::CString::new(format!("pending manifest not committed: {skipped}"))
            .unwrap_or_default();
        PyErr::warn(py, &warning, &message, 1)?;
    }
    manifest_dict(py, &report.manifest)
}

/// Adds or rebuilds the lengths index of the sharded dataset at `path` (every shard
/// measured once, a URL's downloaded through the node's cache; one index object; the
/// manifest committed). Returns the manifest as a dict.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, storage_options=None))]
pub fn index<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let manifest = match location_of(path)? {
        Location::Url(url) => {
            let options = remote_options(storage_options);
            py.detach(|| lodtensor::shards::index_with(Location::Url(url), &options))
        }
        Location::Path(dir) => {
            no_options("index", &storage_options)?;
            py.detach(|| lodtensor::shards::index(&dir))
        }
    }
    .py_err()?;
    manifest_dict(py, &manifest)
}

/// Refuses `storage_options` given to `function` with a local path.
pub fn no_options(
    function: &str,
    storage_options: &Option<BTreeMap<String, String>>,
) -> PyResult<()> {
    match storage_options {
        Some(_) => Err(invalid(format!(
            "{function}(PATH, storage_options=...): only for a URL"
        ))),
        None => Ok(()),
    }
}
