//! Datasets in object storage: `lodtensor.open(URL)`, and `write_shards` and `commit` to
//! a URL (shards written locally, then uploaded and committed by conditional PUTs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lodtensor::shards::{Manifest, RemoteOptions};
use pyo3::prelude::*;

use crate::error::{IntoPy, invalid};
use crate::shards::manifest_dict;

/// `storage_options` (object_store's keys) as remote options.
pub fn remote_options(storage_options: Option<BTreeMap<String, String>>) -> RemoteOptions {
    let mut options = RemoteOptions::default();
    for (key, value) in storage_options.unwrap_or_default() {
        options = options.with_storage_option(key, value);
    }
    options
}

/// Uploads the sharded dataset in the local directory `path` to `url`: as `mode` says
/// (`"create"` a new dataset, `"append"` its shards after the dataset's there, committed by a
/// conditional PUT; `"pending"` the shards of the writer `prefix`, for `commit_url`).
/// Returns the manifest written (the pending one for `"pending"`), as a dict.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (path, url, mode, storage_options=None, prefix=None))]
pub fn upload_shards<'py>(
    py: Python<'py>,
    path: PathBuf,
    url: String,
    mode: &str,
    storage_options: Option<BTreeMap<String, String>>,
    prefix: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = remote_options(storage_options);
    let mode = UploadMode::parse(mode, prefix)?;
    let manifest = py.detach(|| mode.upload(&path, &url, &options)).py_err()?;
    manifest_dict(py, &manifest)
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

/// What an upload to a URL makes of the local shards.
#[derive(Clone, Debug)]
enum UploadMode {
    Create,
    Append,
    Pending(String),
}

impl UploadMode {
    /// The mode `mode` (`"create"`, `"append"`, `"pending"` of `prefix`, default `"part"`).
    fn parse(mode: &str, prefix: Option<String>) -> PyResult<Self> {
        match mode {
            "create" => Ok(UploadMode::Create),
            "append" => Ok(UploadMode::Append),
            "pending" => Ok(UploadMode::Pending(
                prefix.unwrap_or_else(|| "part".to_owned()),
            )),
            other => Err(invalid(format!(
                "mode must be \"create\", \"append\" or \"pending\", not {other:?}"
            ))),
        }
    }

    fn upload(
        &self,
        dir: &Path,
        url: &str,
        options: &RemoteOptions,
    ) -> lodtensor::Result<Manifest> {
        use lodtensor::shards::{upload_pending, upload_shards};
        match self {
            UploadMode::Create => upload_shards(dir, url, options, false),
            UploadMode::Append => upload_shards(dir, url, options, true),
            UploadMode::Pending(prefix) => upload_pending(dir, url, options, prefix),
        }
    }
}

/// A `ShardWriter` to a URL: its shards are written into a local directory of its own
/// (under the system's temporary directory, `TMPDIR`), uploaded when it finishes; the
/// directory is removed then, or when the upload is dropped.
#[derive(Debug)]
pub struct Upload {
    url: String,
    options: RemoteOptions,
    mode: UploadMode,
    local: PathBuf,
}

impl Upload {
    /// An upload to `url` as `mode` says, its local directory made; a `"create"` refused
    /// now where a dataset is, an `"append"` where none is, as in a directory.
    pub fn start(
        url: String,
        mode: &str,
        prefix: Option<String>,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let mode = UploadMode::parse(mode, prefix)?;
        let options = remote_options(storage_options);
        // A pending writer may start before the dataset exists, or after.
        let exists = match mode {
            UploadMode::Pending(_) => false,
            _ => lodtensor::shards::read_manifest_url(&url, &options)
                .py_err()?
                .is_some(),
        };
        let refusal = match (&mode, exists) {
            (UploadMode::Create, true) => Some(lodtensor::DatasetError::AlreadyThere),
            (UploadMode::Append, false) => Some(lodtensor::DatasetError::NothingToAppendTo),
            _ => None,
        };
        if let Some(refusal) = refusal {
            let err = lodtensor::Error::from(refusal);
            return Err(err.in_file(format!("{}/_lodtensor.json", url.trim_end_matches('/'))))
                .py_err();
        }
        let local = tempfile_dir().py_err()?;
        Ok(Upload {
            url,
            options,
            mode,
            local,
        })
    }

    /// Where the shards are written before the upload.
    pub fn local(&self) -> &Path {
        &self.local
    }

    /// Uploads the shards written, then removes the local directory.
    pub fn finish(self) -> lodtensor::Result<Manifest> {
        self.mode.upload(&self.local, &self.url, &self.options)
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.local);
    }
}

/// A new, empty directory of this process under the system's temporary directory.
fn tempfile_dir() -> lodtensor::Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!(
        "lodtensor-upload-{}-{n}-{nanos:08x}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).map_err(|e| lodtensor::Error::from(e).in_file(&dir))?;
    Ok(dir)
}
