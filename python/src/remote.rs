//! Datasets in object storage: `lodtensor.open(URL)`, and `write_shards` and `commit` to
//! a URL (shards written locally, then uploaded and committed by conditional PUTs).

use std::collections::BTreeMap;
use std::path::PathBuf;

use lodtensor::shards::RemoteOptions;
use pyo3::prelude::*;

use crate::error::IntoPy;
use crate::shards::manifest_dict;

/// `storage_options` (object_store's keys) as remote options.
fn remote_options(storage_options: Option<BTreeMap<String, String>>) -> RemoteOptions {
    let mut options = RemoteOptions::default();
    for (key, value) in storage_options.unwrap_or_default() {
        options = options.with_storage_option(key, value);
    }
    options
}

/// Opens the sharded dataset at the URL `url` (`s3://bucket/prefix/`, `gs://`, `az://`,
/// `http(s)://`): its manifest read from the store, each shard downloaded once per node
/// into `cache_dir` when first touched. `cache_limit` is bytes or a size like `"20GB"`.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (url, storage_options=None, cache_dir=None, cache_limit=None))]
pub fn open_url(
    py: Python<'_>,
    url: String,
    storage_options: Option<BTreeMap<String, String>>,
    cache_dir: Option<PathBuf>,
    cache_limit: Option<&Bound<'_, PyAny>>,
) -> PyResult<crate::shards::ShardedDataset> {
    let mut options = remote_options(storage_options);
    if let Some(dir) = cache_dir {
        options = options.with_cache_dir(dir);
    }
    if let Some(limit) = cache_limit {
        let bytes = match limit.extract::<u64>() {
            Ok(bytes) => bytes,
            Err(_) => lodtensor::shards::parse_size(&limit.extract::<String>()?).py_err()?,
        };
        options = options.with_cache_limit(bytes);
    }
    let data = py
        .detach(|| lodtensor::shards::ShardedDataset::open_url(&url, &options))
        .py_err()?;
    crate::shards::ShardedDataset::new(data, Some(options))
}

/// Uploads the sharded dataset in the local directory `path` to `url`: a new dataset, or
/// (`append`) its shards after the dataset's there; the manifest committed by a
/// conditional PUT. Returns the manifest committed, as a dict.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, url, append, storage_options=None))]
pub fn upload_shards(
    py: Python<'_>,
    path: PathBuf,
    url: String,
    append: bool,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Bound<'_, PyAny>> {
    let options = remote_options(storage_options);
    let manifest = py
        .detach(|| lodtensor::shards::upload_shards(&path, &url, &options, append))
        .py_err()?;
    manifest_dict(py, &manifest)
}
