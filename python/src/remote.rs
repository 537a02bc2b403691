//! Datasets in object storage: `storage_options` as the crate's `RemoteOptions`, and what
//! `lodtensor.ray` asks a URL (its manifest, its pending writers).

use std::collections::BTreeMap;

use lodtensor::shards::RemoteOptions;
use pyo3::prelude::*;

use crate::error::IntoPy;
use crate::shards::manifest_dict;

/// `storage_options` (object_store's keys) as remote options.
pub fn remote_options(storage_options: Option<BTreeMap<String, String>>) -> RemoteOptions {
    let mut options = RemoteOptions::default();
    for (key, value) in storage_options.unwrap_or_default() {
        options = options.with_storage_option(key, value);
    }
    options
}

/// The manifest of the dataset at `url` as a dict, or `None` when there is none.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (url, storage_options=None))]
pub fn read_manifest_url(
    py: Python<'_>,
    url: String,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Option<Bound<'_, PyAny>>> {
    let options = remote_options(storage_options);
    let manifest = py
        .detach(|| lodtensor::shards::read_manifest_url(&url, &options))
        .py_err()?;
    manifest.map(|m| manifest_dict(py, &m)).transpose()
}

/// The prefixes of the pending writers at `url`, sorted.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (url, storage_options=None))]
pub fn pending_prefixes(
    py: Python<'_>,
    url: String,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Vec<String>> {
    let options = remote_options(storage_options);
    py.detach(|| lodtensor::shards::pending_prefixes(&url, &options))
        .py_err()
}

/// Drops the pending writer `prefix` at `url`: its pending manifest, then its shards.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (url, prefix, storage_options=None))]
pub fn discard_pending(
    py: Python<'_>,
    url: String,
    prefix: String,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<()> {
    let options = remote_options(storage_options);
    py.detach(|| lodtensor::shards::discard_pending(&url, &options, &prefix))
        .py_err()
}
