//! Credentials kept out of pickles.
//!
//! A dataset opened by URL pickles as what opens it again: its URL, cache directory and
//! limit, and the `storage_options` that say where the store is (endpoint, region, …,
//! [`is_public`]). Every other option (access and secret keys, session and SAS tokens,
//! service-account JSON, bearer tokens, and any key not known to be harmless) stays in this
//! process, in a registry keyed by a token; the pickle holds the token only.
//!
//! ```text
//! pickle.dumps(ds)                 url, public options, token            (no secret)
//! while a child is being spawned   url, public options, token, secrets   (the pipe to it)
//! pickle.loads(...)                the token's secrets of this process (or those sent),
//!                                  else none: the environment and the provider chain
//! ```
//!
//! A `spawn` or `forkserver` child (a DataLoader worker) is sent the secrets with the
//! dataset while `multiprocessing` spawns it (`get_spawning_popen()` is set then), and
//! registers them under the same token; a `fork` child has the registry already. Bytes
//! unpickled in another process (a checkpoint loaded later) open the dataset with the
//! public options and whatever credentials the environment gives.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lodtensor::shards::RemoteOptions;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::error::IntoPy;

/// The options of this process's datasets that no pickle holds, by token.
static SECRETS: Mutex<Option<HashMap<String, Options>>> = Mutex::new(None);

/// `storage_options`, as `(key, value)` pairs in the order given.
type Options = Vec<(String, String)>;

/// Whether the `storage_options` key `key` says only where and how to reach the store,
/// never who the caller is: the keys that pickle. Every other key (credentials, and keys
/// this list does not know) stays in the process.
///
/// `object_store`'s prefixes (`aws_`, `google_`, `azure_storage_`, `azure_`) are ignored.
pub fn is_public(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let bare = ["aws_", "google_", "azure_storage_", "azure_"]
        .iter()
        .find_map(|p| key.strip_prefix(p))
        .unwrap_or(&key);
    matches!(
        bare,
        "endpoint"
            | "endpoint_url"
            | "region"
            | "default_region"
            | "bucket"
            | "bucket_name"
            | "allow_http"
            | "virtual_hosted_style_request"
            | "unsigned_payload"
            | "skip_signature"
            | "checksum_algorithm"
            | "s3_express"
            | "imdsv1_fallback"
            | "metadata_endpoint"
            | "request_payer"
            | "account_name"
            | "account"
            | "container_name"
            | "use_emulator"
            | "use_fabric_endpoint"
            | "use_azure_cli"
            | "disable_tagging"
            | "timeout"
            | "connect_timeout"
            | "user_agent"
            | "http1_only"
            | "http2_only"
            | "allow_invalid_certificates"
    )
}

/// How a dataset in object storage was opened, without its secrets: what its pickle holds.
#[derive(Clone, Debug)]
pub struct Reopen {
    url: String,
    /// The options that pickle ([`is_public`]).
    public: Options,
    /// The registry's key of the other options; `None` when there are none.
    token: Option<String>,
    cache_dir: PathBuf,
    cache_limit: Option<u64>,
    range_gap: u64,
}

impl Reopen {
    /// The dataset at `url` opened with `options`: its secrets registered in this process.
    pub fn new(url: &str, options: &RemoteOptions) -> Self {
        let (public, secret): (Options, Options) =
            (options.storage_options().iter().cloned()).partition(|(key, _)| is_public(key));
        Reopen {
            url: url.to_owned(),
            public,
            token: (!secret.is_empty()).then(|| register(None, secret)),
            cache_dir: options.cache_dir(),
            cache_limit: options.cache_limit(),
            range_gap: options.range_gap(),
        }
    }

    /// `(lodtensor._native.reopen_url, args)`: the pickle of the dataset. The secrets are
    /// in `args` only while this process spawns a child (the bytes go down its pipe).
    pub fn reduce<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let reopen = py.import("lodtensor._native")?.getattr("reopen_url")?;
        let spawning = !(py.import("multiprocessing.context")?)
            .getattr("get_spawning_popen")?
            .call0()?
            .is_none();
        let secrets = match (&self.token, spawning) {
            (Some(token), true) => lookup(token).map(|s| pairs(py, &s)).transpose()?,
            _ => None,
        };
        let cache = (self.cache_dir.clone(), self.cache_limit, self.range_gap);
        let args = (
            self.url.clone(),
            pairs(py, &self.public)?,
            self.token.clone(),
            secrets,
            cache,
        );
        Ok((reopen, args.into_pyobject(py)?))
    }
}

/// `options` as a dict.
fn pairs<'py>(py: Python<'py>, options: &Options) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in options {
        dict.set_item(key, value)?;
    }
    Ok(dict)
}

/// Keeps `secret` under `token` (a new token when `None`); returns the token.
fn register(token: Option<String>, secret: Options) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut registry = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    let registry = registry.get_or_insert_with(HashMap::new);
    if token.is_none()
        && let Some((known, _)) = registry.iter().find(|(_, s)| **s == secret)
    {
        return known.clone();
    }
    let token = token.unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        format!("{:x}-{n:x}-{nanos:x}", std::process::id())
    });
    registry.insert(token.clone(), secret);
    token
}

/// The secrets kept under `token` in this process.
fn lookup(token: &str) -> Option<Options> {
    let registry = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    registry.as_ref()?.get(token).cloned()
}

/// The dataset a pickle of [`Reopen::reduce`] names, opened again: with the secrets sent
/// (registered under `token`, for this process's own pickles of it), else those this
/// process keeps under `token`, else none (the environment's and the provider chain's);
/// `cache`: the cache directory, its limit and the range gap.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (url, public, token, secrets, cache))]
pub fn reopen_url(
    py: Python<'_>,
    url: String,
    public: BTreeMap<String, String>,
    token: Option<String>,
    secrets: Option<BTreeMap<String, String>>,
    cache: (PathBuf, Option<u64>, u64),
) -> PyResult<crate::shards::ShardedDataset> {
    let (cache_dir, cache_limit, range_gap) = cache;
    let secret = match (token, secrets) {
        (Some(token), Some(sent)) => {
            let sent: Options = sent.into_iter().collect();
            register(Some(token), sent.clone());
            sent
        }
        (Some(token), None) => lookup(&token).unwrap_or_default(),
        (None, _) => Vec::new(),
    };
    let mut options = RemoteOptions::default()
        .with_cache_dir(cache_dir)
        .with_range_gap(range_gap);
    for (key, value) in public.into_iter().chain(secret) {
        options = options.with_storage_option(key, value);
    }
    if let Some(limit) = cache_limit {
        options = options.with_cache_limit(limit);
    }
    let data = py
        .detach(|| {
            let url = lodtensor::shards::Location::Url(url.clone());
            lodtensor::shards::ShardedDataset::open_with(url, &options)
        })
        .py_err()?;
    crate::shards::ShardedDataset::new(data, Some(Reopen::new(&url, &options)))
}
