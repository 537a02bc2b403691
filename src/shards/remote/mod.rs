//! Sharded datasets in object storage (S3 and S3-compatible stores, GCS, Azure, HTTP):
//! [`ShardedDataset::open_with`] of a URL reads the manifest from the store and each shard through a
//! cache on the local disk (`docs/remote.md`), so that a shard is downloaded once per node
//! and then mapped and read as a local shard.

mod cache;
mod client;
mod connector;
mod lock;
mod meta;
mod pending;
mod private;
mod ranges;
mod sidecar;
mod source;
mod staged;
mod upload;
mod vacuum;

use std::path::PathBuf;
use std::sync::Arc;

use source::CachedShards;

use cache::ShardCache;
pub(crate) use client::Remote;
// Tokenize's inputs in object storage name their store errors as the shards' do.
#[cfg(feature = "tokenize")]
pub(crate) use client::store_error;
pub(crate) use meta::index_remote;
#[allow(deprecated)]
pub use meta::{index_url, index_with};
#[allow(deprecated)]
pub use pending::{
    CommitReport, commit_report, commit_url, commit_url_report, commit_with, discard_pending,
    pending_prefixes, read_manifest_url,
};
pub(crate) use staged::stage;
#[allow(deprecated)]
pub use upload::{upload_pending, upload_shards};
pub use vacuum::vacuum_with;

use crate::error::{DatasetError, Error, FileFormat, Result};
use crate::shards::location::Location;
use crate::shards::manifest::{MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest};
use crate::shards::reader::ShardedDataset;
use crate::shards::remote_options::RemoteOptions;

/// A size in bytes from `"20GB"`, `"512MiB"`, `"1.5 TB"` or `"1000"` (decimal units `kB`,
/// `MB`, `GB`, `TB`; binary `KiB`, `MiB`, `GiB`, `TiB`; case ignored).
///
/// # Errors
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) naming the text.
///
/// # Example
/// ```
/// use lodtensor::shards::parse_size;
/// assert_eq!(parse_size("20GB")?, 20_000_000_000);
/// assert_eq!(parse_size("512MiB")?, 512 << 20);
/// assert_eq!(parse_size("1000")?, 1000);
/// assert!(parse_size("lots").is_err());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = || Error::invalid_argument("parse_size", "size", text, "bytes, or a size like 20GB");
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim().to_ascii_lowercase());
    let scale: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

impl ShardedDataset {
    /// Opens the sharded dataset at `location`: a directory as [`ShardedDataset::open`]
    /// (`options` unused), or a URL (`s3://bucket/prefix/`, `gs://…`, `az://…`,
    /// `http(s)://…`) reached as `options` say, its manifest read from the store. Each
    /// shard is downloaded into the node's cache (`options.cache_dir()`) the first time it
    /// is touched, unless a process downloaded it before, its size and CRC-32C checked
    /// against the manifest; from then on it is mapped and read exactly as a local shard
    /// (`docs/remote.md`).
    ///
    /// # Errors
    /// [`DatasetError::NoManifestAtUrl`] naming the manifest's URL when there is none;
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming the URL: `NotFound` for a missing
    /// bucket, `PermissionDenied` for a refused or unauthenticated request,
    /// `TimedOut` or `Other` when retries did not help; [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument)
    /// for a URL of another scheme or an unknown storage option; the manifest's errors.
    ///
    /// # Example
    /// ```no_run
    /// use lodtensor::shards::{RemoteOptions, ShardedDataset};
    /// let options = RemoteOptions::default()
    ///     .with_storage_option("aws_endpoint", "http://127.0.0.1:9000")
    ///     .with_storage_option("aws_allow_http", "true")
    ///     .with_cache_dir("/tmp/lodtensor-cache");
    /// let data = ShardedDataset::open_with("s3://bucket/tokens/", &options)?;
    /// let first = data.sample(0)?;              // shard 0 downloaded, then mapped
    /// assert_eq!(data.cache_stats().unwrap().shards_downloaded, 1);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn open_with(location: impl Into<Location>, options: &RemoteOptions) -> Result<Self> {
        match location.into() {
            Location::Path(dir) => Self::open_dir(&dir),
            Location::Url(url) => open_remote(&url, options),
        }
    }

    /// Opens the sharded dataset at the URL `url`.
    ///
    /// # Errors
    /// [`ShardedDataset::open_with`]'s; a string that is no URL fails as a URL of no scheme.
    ///
    /// # Example
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use lodtensor::shards::{RemoteOptions, ShardedDataset};
    /// let data = ShardedDataset::open_url("s3://bucket/tokens/", &RemoteOptions::default())?;
    /// // becomes
    /// let data = ShardedDataset::open_with("s3://bucket/tokens/", &RemoteOptions::default())?;
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `ShardedDataset::open_with(url, options)`"
    )]
    pub fn open_url(url: &str, options: &RemoteOptions) -> Result<Self> {
        open_remote(url, options)
    }
}

/// The dataset at the URL `url`, reached as `options` say.
pub(crate) fn open_remote(url: &str, options: &RemoteOptions) -> Result<ShardedDataset> {
    let remote = Remote::new(url, options.storage_options())?;
    let root = options.cache_dir();
    let dir = root.join(url_key(remote.url()));
    private::make_private(&root, &dir)?;
    let manifest = match meta::cached_manifest(&remote, &dir)? {
        Some(manifest) => manifest,
        None => load_manifest(&remote)?,
    };
    let cache = ShardCache::new(
        remote,
        dir.clone(),
        manifest.shards.clone(),
        options.cache_limit(),
        options.prefetch_bytes(),
    )?;
    let source = Arc::new(CachedShards::new(cache, options.range_gap()));
    Ok(ShardedDataset::from_parts(dir, manifest, source))
}

/// The manifest of the dataset at `remote`.
fn load_manifest(remote: &Remote) -> Result<Manifest> {
    match load_manifest_and_tag(remote, MANIFEST_NAME)? {
        (Some(manifest), _) => Ok(manifest),
        (None, _) => {
            Err(Error::from(DatasetError::NoManifestAtUrl).in_file(remote.url_of(MANIFEST_NAME)))
        }
    }
}

/// The manifest `name` (the dataset's, or a pending one) at `remote` (`None` if there is
/// none) and its ETag.
fn load_manifest_and_tag(
    remote: &Remote,
    name: &str,
) -> Result<(Option<Manifest>, Option<String>)> {
    let url = remote.url_of(name);
    let Some((bytes, tag)) = remote.get(name, MAX_MANIFEST_BYTES)? else {
        return Ok((None, None));
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| Error::invalid(FileFormat::Manifest, e.to_string()).in_file(&url))?;
    let manifest = Manifest::parse(text).map_err(|e| e.in_file(&url))?;
    Ok((Some(manifest), tag))
}

/// The cache's directory of the dataset at `url`: `scheme/host/path`, each part made of
/// safe characters only.
fn url_key(url: &str) -> PathBuf {
    let mut key: PathBuf = url
        .split(['/', ':'])
        .filter(|part| !part.is_empty() && *part != "." && *part != "..")
        .map(|part| {
            part.chars()
                .map(|c| match c.is_ascii_alphanumeric() || "._-=".contains(c) {
                    true => c,
                    false => '_',
                })
                .collect::<String>()
        })
        .collect();
    // The readable path is not one-to-one (`a b` and `a_b`, `h:9000` and `h/9000`; and a
    // dataset `p/_meta/` would land in `p`'s metadata): the last name carries the URL's
    // SHA-256, so two URLs never share a directory and none nests in another's.
    let digest = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
    let hex: String = (digest.as_ref()[..12].iter())
        .map(|b| format!("{b:02x}"))
        .collect();
    let last = match key.file_name() {
        Some(name) => format!("{}@{hex}", name.to_string_lossy()),
        None => format!("@{hex}"),
    };
    key.set_file_name(last);
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_url_key_stays_inside_the_cache() {
        let readable = |url: &str| {
            let key = url_key(url);
            let name = key.file_name().unwrap().to_string_lossy().into_owned();
            let (last, hex) = name.split_once('@').unwrap();
            assert_eq!(hex.len(), 24);
            key.with_file_name(last)
        };
        assert_eq!(readable("s3://b/p/q/"), Path::new("s3/b/p/q"));
        assert_eq!(readable("http://h:9000/../x"), Path::new("http/h/9000/x"));
        assert_eq!(readable("s3://b/a b?"), Path::new("s3/b/a_b_"));
        for part in url_key("http://h:9000/../x").components() {
            assert!(matches!(part, std::path::Component::Normal(_)), "{part:?}");
        }
    }

    #[test]
    fn two_datasets_never_share_a_cache_directory() {
        // Each pair mapped to one directory (or one inside the other's metadata) before.
        let pairs = [
            ("s3://b/a b/", "s3://b/a_b/"),
            ("http://h:9000/x/", "http://h/9000/x/"),
            ("s3://b/a?/", "s3://b/a*/"),
        ];
        for (a, b) in pairs {
            assert_ne!(url_key(a), url_key(b), "{a} {b}");
        }
        let (outer, inner) = (url_key("s3://b/p/"), url_key("s3://b/p/_meta/"));
        assert!(!inner.starts_with(&outer), "{inner:?} in {outer:?}");
        assert_eq!(url_key("s3://b/p/"), url_key("s3://b/p/"));
    }
}
