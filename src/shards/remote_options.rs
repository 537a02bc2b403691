//! How a dataset in object storage is reached and cached ([`RemoteOptions`]): what the
//! writers and readers of `shards/` take as options, with the `remote` feature, whose
//! store (`shards/remote/`) reads them.

use std::path::{Path, PathBuf};

/// How [`ShardedDataset::open_with`](crate::shards::ShardedDataset::open_with) reaches the store and where it caches shards.
///
/// # Example
/// ```
/// use lodtensor::shards::RemoteOptions;
/// let options = RemoteOptions::default()
///     .with_storage_option("aws_endpoint", "http://127.0.0.1:9000")
///     .with_storage_option("aws_allow_http", "true")
///     .with_cache_dir("/tmp/lodtensor-cache")
///     .with_cache_limit(20_000_000_000);
/// assert_eq!(options.cache_limit(), Some(20_000_000_000));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RemoteOptions {
    storage_options: Vec<(String, String)>,
    cache_dir: Option<PathBuf>,
    cache_limit: Option<u64>,
    prefetch_bytes: Option<u64>,
    range_gap: Option<u64>,
}

/// The bytes of shards downloaded ahead by default (and at most a quarter of the cache
/// limit).
pub const DEFAULT_PREFETCH_BYTES: u64 = 512 << 20;

/// The largest gap between two byte ranges of a shard read as one request by default:
/// a request's own cost on an object store (tens of milliseconds before its first byte) is
/// that of about a MiB of transfer (`object_store`'s `get_ranges` merges under the same).
pub const DEFAULT_RANGE_GAP: u64 = crate::shards::source::RANGE_GAP_BYTES;

impl RemoteOptions {
    /// Sets one of `object_store`'s configuration keys (`aws_endpoint`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `aws_region`, `aws_allow_http`,
    /// `google_service_account`, `azure_storage_account_name`, …). The environment's
    /// variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, …) apply first; these override.
    ///
    /// # Example
    /// ```
    /// let o = lodtensor::shards::RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
    /// assert_eq!(o.storage_options(), &[("aws_region".to_owned(), "eu-west-1".to_owned())]);
    /// ```
    pub fn with_storage_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.storage_options.push((key.into(), value.into()));
        self
    }

    /// The storage options set, in order.
    ///
    /// # Example
    /// ```
    /// assert!(lodtensor::shards::RemoteOptions::default().storage_options().is_empty());
    /// ```
    pub fn storage_options(&self) -> &[(String, String)] {
        &self.storage_options
    }

    /// The cache directory (default: `$LODTENSOR_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/lodtensor`, else `~/.cache/lodtensor`, else, with neither variable
    /// set, `lodtensor-cache-UID` in the temporary directory). Every process of one user on
    /// a node can share one; it is made `0700`, and refused if another user owns it or
    /// every user may write it (docs/remote.md, "Trust").
    ///
    /// # Example
    /// ```
    /// let o = lodtensor::shards::RemoteOptions::default().with_cache_dir("/scratch/cache");
    /// assert_eq!(o.cache_dir(), std::path::Path::new("/scratch/cache"));
    /// ```
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// The cache directory: the one set, or the default of [`RemoteOptions::with_cache_dir`].
    ///
    /// # Example
    /// ```
    /// assert!(lodtensor::shards::RemoteOptions::default().cache_dir().ends_with("lodtensor"));
    /// ```
    pub fn cache_dir(&self) -> PathBuf {
        if let Some(dir) = &self.cache_dir {
            return dir.clone();
        }
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = var("LODTENSOR_CACHE_DIR") {
            return dir.into();
        }
        match (var("XDG_CACHE_HOME"), var("HOME")) {
            (Some(cache), _) => Path::new(&cache).join("lodtensor"),
            (None, Some(home)) => Path::new(&home).join(".cache").join("lodtensor"),
            (None, None) => per_user_root(),
        }
    }

    /// Bounds the bytes of this dataset's shards the cache keeps (no bound by default):
    /// before a download, entries are evicted, least recently used first, to make room for
    /// it. Shards this process has mapped are never evicted (that would free nothing), so
    /// a reader that maps more than the limit (a [`Loader`](crate::Loader) maps every
    /// shard) holds more; the next open finds the cache within the limit again.
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::{RemoteOptions, parse_size};
    /// let o = RemoteOptions::default().with_cache_limit(parse_size("20GB")?);
    /// assert_eq!(o.cache_limit(), Some(20_000_000_000));
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn with_cache_limit(mut self, bytes: u64) -> Self {
        self.cache_limit = Some(bytes);
        self
    }

    /// Downloads up to `bytes` of the shards after the one being read (in the order a
    /// loader's plan first reads them, else in manifest order) on background threads, so that reading shard after shard waits for the network once
    /// (default [`DEFAULT_PREFETCH_BYTES`], at most a quarter of the cache limit; 0: none).
    ///
    /// # Example
    /// ```
    /// let o = lodtensor::shards::RemoteOptions::default().with_prefetch_bytes(0);
    /// assert_eq!(o.prefetch_bytes(), 0);
    /// ```
    pub fn with_prefetch_bytes(mut self, bytes: u64) -> Self {
        self.prefetch_bytes = Some(bytes);
        self
    }

    /// Rows read by range requests (`take`, a row, the `cache="ranges"` loader) merge two
    /// byte ranges of a shard into one request when at most `bytes` lie between them
    /// (default [`DEFAULT_RANGE_GAP`]), the bytes between them read too, as long as a
    /// request reads at most 16 times the bytes wanted in it. Fewer requests, more bytes:
    /// `0` reads the rows' own bytes alone (adjacent ranges still one request).
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::{DEFAULT_RANGE_GAP, RemoteOptions};
    /// assert_eq!(RemoteOptions::default().range_gap(), DEFAULT_RANGE_GAP);
    /// assert_eq!(RemoteOptions::default().with_range_gap(0).range_gap(), 0);
    /// ```
    pub fn with_range_gap(mut self, bytes: u64) -> Self {
        self.range_gap = Some(bytes);
        self
    }

    /// The largest gap merged between byte ranges ([`RemoteOptions::with_range_gap`]).
    ///
    /// # Example
    /// ```
    /// assert_eq!(lodtensor::shards::RemoteOptions::default().range_gap(), 1 << 20);
    /// ```
    pub fn range_gap(&self) -> u64 {
        self.range_gap.unwrap_or(DEFAULT_RANGE_GAP)
    }

    /// The prefetch budget in bytes.
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::{DEFAULT_PREFETCH_BYTES, RemoteOptions};
    /// assert_eq!(RemoteOptions::default().prefetch_bytes(), DEFAULT_PREFETCH_BYTES);
    /// ```
    pub fn prefetch_bytes(&self) -> u64 {
        self.prefetch_bytes.unwrap_or(DEFAULT_PREFETCH_BYTES)
    }

    /// The cache limit, if set.
    ///
    /// # Example
    /// ```
    /// assert_eq!(lodtensor::shards::RemoteOptions::default().cache_limit(), None);
    /// ```
    pub fn cache_limit(&self) -> Option<u64> {
        self.cache_limit
    }
}

/// The default cache's root when the user has no cache directory (neither `XDG_CACHE_HOME`
/// nor `HOME`): one of this user's own in the temporary directory, named with the user's
/// id (made `0700` and checked when used, like every cache directory).
fn per_user_root() -> PathBuf {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("lodtensor-cache-{uid}"))
}
