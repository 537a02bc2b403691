//! Datasets in object storage on the command line: a URL (`s3://bucket/prefix/`, `gs://`,
//! `az://`, `http(s)://`) wherever a command takes a sharded dataset's directory, with the
//! store's credentials and endpoint from the environment (`AWS_ENDPOINT_URL`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, …) and the
//! shard cache of `--cache-dir` and `--cache-limit` (`docs/remote.md`).

use std::path::Path;

use lodtensor::shards::{Location, ShardedDataset};

use crate::input::ReadArgs;
use crate::{Result, usage};

/// Whether `path` is a URL (`scheme://…`) rather than a local path, as
/// [`lodtensor::shards::Location`] decides.
pub fn is_url(path: &Path) -> bool {
    lodtensor::shards::Location::from(path.as_os_str()).is_url()
}

/// Opens the sharded dataset at the URL `url`, its shards cached as `read` says.
///
/// # Errors
/// A usage error for a bad `--cache-limit`; [`ShardedDataset::open_with`]'s errors.
#[cfg(feature = "remote")]
pub fn open(url: &Path, read: &ReadArgs) -> Result<ShardedDataset> {
    let mut options = lodtensor::shards::RemoteOptions::default();
    if let Some(dir) = &read.cache_dir {
        options = options.with_cache_dir(dir);
    }
    if let Some(limit) = &read.cache_limit {
        match lodtensor::shards::parse_size(limit) {
            Ok(bytes) => options = options.with_cache_limit(bytes),
            Err(_) => return usage(format!("--cache-limit {limit}: bytes, or a size like 20GB")),
        }
    }
    Ok(ShardedDataset::open_with(url.as_os_str(), &options)?)
}

/// The URL `url` as a location a [`lodtensor::shards::ShardWriter`] writes to (its shards
/// staged locally, uploaded and committed by a conditional PUT at `finish`) or
/// [`lodtensor::shards::index`] indexes, the store reached with the environment's
/// credentials.
///
/// # Errors
/// None with the `remote` feature.
#[cfg(feature = "remote")]
pub fn url_location(url: &Path) -> Result<Location> {
    Ok(Location::from(url.as_os_str()))
}

/// Removes the shards of the dataset at the URL `url` that no manifest lists, older than
/// `grace` (`lodtensor::shards::vacuum_with`, credentials from the environment); their URLs.
///
/// # Errors
/// `vacuum_with`'s.
#[cfg(feature = "remote")]
pub fn vacuum(url: &Path, grace: std::time::Duration) -> Result<Vec<String>> {
    let options = lodtensor::shards::RemoteOptions::default();
    Ok(lodtensor::shards::vacuum_with(
        url.as_os_str(),
        &options,
        grace,
    )?)
}

/// Without the `remote` feature: a usage error saying so.
#[cfg(not(feature = "remote"))]
pub fn vacuum(url: &Path, _grace: std::time::Duration) -> Result<Vec<String>> {
    usage(format!(
        "{}: this lodtensor was built without the `remote` feature (URLs)",
        url.display()
    ))
}

/// Without the `remote` feature: a usage error saying so.
#[cfg(not(feature = "remote"))]
pub fn open(url: &Path, _read: &ReadArgs) -> Result<ShardedDataset> {
    usage(format!(
        "{}: this lodtensor was built without the `remote` feature (URLs)",
        url.display()
    ))
}

/// Without the `remote` feature: a usage error saying so.
#[cfg(not(feature = "remote"))]
pub fn url_location(url: &Path) -> Result<Location> {
    usage(format!(
        "{}: this lodtensor was built without the `remote` feature (URLs)",
        url.display()
    ))
}
