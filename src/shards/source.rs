//! What a shard store does for the readers of a sharded dataset: where a shard's bytes are,
//! how one is mapped and checked, its byte ranges read unmapped, an index object fetched.
//! [`ShardSource`] is the one interface; a local directory ([`LocalShards`], here) and a
//! node's cache of a dataset in object storage (`remote/source.rs`, with the `remote`
//! feature) implement it, so that the reader and the loaders never ask which one they have.
//!
//! ```text
//! ShardedDataset ─┐                        ┌─ LocalShards   (a directory)
//! loader stores  ─┴─ ShardFiles ─ dyn ShardSource ─┤
//!                                          └─ the node cache (shards/remote/, a URL)
//! ```

use std::fmt::Debug;
use std::ops::Range;
use std::path::PathBuf;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::ipc_reader::MappedDataset;
use crate::io::regular::{check_inside, open_regular};
use crate::shards::files::read_range;
use crate::shards::index::IndexEntry;
use crate::shards::manifest::Manifest;
use crate::shards::reader::{Checksum, open_checked};

/// The largest gap between two byte ranges of a shard read as one request, unless set
/// otherwise: a request's own cost on an object store (tens of milliseconds before its
/// first byte) is that of about a MiB of transfer (`object_store`'s `get_ranges` merges
/// under the same).
pub(crate) const RANGE_GAP_BYTES: u64 = 1 << 20;

/// What a dataset's cache did since the dataset was opened.
///
/// # Example
/// ```
/// let stats = lodtensor::shards::CacheStats::default();
/// assert_eq!((stats.bytes_downloaded, stats.shards_downloaded), (0, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Bytes downloaded by this process.
    pub bytes_downloaded: u64,
    /// Shards downloaded by this process.
    pub shards_downloaded: u64,
    /// Shards found in the cache (downloaded before, or by another process).
    pub shards_cached: u64,
    /// Shards removed from the cache to keep it within its limit.
    pub shards_evicted: u64,
    /// Bytes of shards' metadata read by range requests (footers, record-batch messages,
    /// the length column's offsets), for loaders whose plans need sample lengths; not
    /// counted in `bytes_downloaded`.
    pub metadata_bytes: u64,
    /// The range requests that read them.
    pub metadata_requests: u64,
    /// Bytes of rows read by range requests (a `take` of rows whose shard is not in the
    /// cache), not counted in `bytes_downloaded`.
    pub range_bytes: u64,
    /// The range requests that read them.
    pub range_requests: u64,
}

/// What a range read is for, for the cache's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Shards' footers, record-batch messages, a length column's offsets.
    Metadata,
    /// Rows asked for.
    Rows,
}

/// Where the shards of one dataset are read from. A method about shards takes the
/// dataset's `manifest` (the one the source was opened with) and positions in it.
pub(crate) trait ShardSource: Debug + Send + Sync {
    /// Shard `index`'s checksum, with the path to name when its bytes are not that (for a
    /// compressed remote shard decompressed into the cache, the cache entry's).
    fn checksum(&self, manifest: &Manifest, index: usize) -> Checksum;

    /// Shard `index`'s path, or its URL: what errors about the shard name.
    fn location(&self, manifest: &Manifest, index: usize) -> PathBuf;

    /// Maps shard `index` and checks it against the manifest, its checksum only if
    /// `checksum`; the shards read next are `next`, in that order, when known (a store
    /// that downloads reads them ahead). The shard stays in use until
    /// [`ShardSource::release`].
    fn open(
        &self,
        manifest: &Manifest,
        index: usize,
        checksum: bool,
        next: Option<&[usize]>,
    ) -> Result<MappedDataset>;

    /// The bytes of each `(shard, range)` of `wanted`, in order, without mapping or
    /// downloading a shard, counted as `reading`.
    fn read_ranges(
        &self,
        manifest: &Manifest,
        wanted: &[(usize, Range<u64>)],
        reading: Reading,
    ) -> Result<Vec<Bytes>>;

    /// Whether shard `index` is at hand (a local file, or a remote shard's entry in the
    /// node's cache), so that mapping it costs no download.
    fn at_hand(&self, manifest: &Manifest, index: usize) -> bool;

    /// Marks a use of shard `index` by [`ShardSource::open`] as over.
    fn release(&self, index: usize);

    /// The bytes of the index object `entry`, at most one more than `entry.bytes` read (the
    /// object's check against the manifest refuses any size but `entry.bytes`).
    fn index_object(&self, entry: &IndexEntry) -> Result<Bytes>;

    /// The largest gap between two byte ranges of a shard read as one request
    /// (`RemoteOptions::with_range_gap`).
    fn range_gap(&self) -> u64 {
        RANGE_GAP_BYTES
    }

    /// The bytes a node's cache keeps of shard `index`'s metadata (its footer and
    /// record-batch messages, as [`ShardSource::keep_layout`] kept them), if any: untrusted,
    /// checked as bytes from the store are. `None` for a store without a cache.
    fn kept_layout(&self, _manifest: &Manifest, _index: usize) -> Option<Bytes> {
        None
    }

    /// Keeps `bytes`, shard `index`'s metadata, in the node's cache for the other processes
    /// of the node; nothing for a store without a cache.
    ///
    /// # Errors
    /// The cache disk's errors.
    fn keep_layout(&self, _manifest: &Manifest, _index: usize, _bytes: &[u8]) -> Result<()> {
        Ok(())
    }

    /// What a cache did since the dataset was opened; `None` for a store with no cache.
    fn cache_stats(&self) -> Option<CacheStats>;

    /// The dataset's URL, ending in `/`; `None` for a local directory.
    fn url(&self) -> Option<&str>;
}

/// The shards of a dataset in a local directory.
#[derive(Debug)]
pub(crate) struct LocalShards {
    /// The dataset's directory.
    pub dir: PathBuf,
}

impl ShardSource for LocalShards {
    fn checksum(&self, manifest: &Manifest, index: usize) -> Checksum {
        let entry = &manifest.shards[index];
        Checksum {
            path: self.dir.join(&entry.file),
            crc32c: entry.crc32c,
        }
    }

    fn location(&self, manifest: &Manifest, index: usize) -> PathBuf {
        self.dir.join(&manifest.shards[index].file)
    }

    fn open(
        &self,
        manifest: &Manifest,
        index: usize,
        checksum: bool,
        _next: Option<&[usize]>, // A local shard is not downloaded.
    ) -> Result<MappedDataset> {
        let entry = &manifest.shards[index];
        let path = self.dir.join(&entry.file);
        check_inside(&self.dir, &path)
            .map_err(Error::from)
            .and_then(|()| open_checked(&path, entry, &manifest.columns, checksum))
            .map_err(|e| e.in_file(&path))
    }

    fn read_ranges(
        &self,
        manifest: &Manifest,
        wanted: &[(usize, Range<u64>)],
        _reading: Reading, // A local read is counted nowhere.
    ) -> Result<Vec<Bytes>> {
        wanted
            .iter()
            .map(|(shard, range)| {
                let entry = &manifest.shards[*shard];
                let path = self.dir.join(&entry.file);
                check_inside(&self.dir, &path).map_err(|e| Error::from(e).in_file(&path))?;
                read_range(&path, range.clone(), entry.bytes)
            })
            .collect()
    }

    fn at_hand(&self, _manifest: &Manifest, _index: usize) -> bool {
        true
    }

    fn release(&self, _index: usize) {}

    fn index_object(&self, entry: &IndexEntry) -> Result<Bytes> {
        let path = self.dir.join(&entry.file);
        let read = || -> Result<Bytes> {
            check_inside(&self.dir, &path)?;
            let (file, _) = open_regular(&path)?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(file, entry.bytes + 1),
                &mut bytes,
            )?;
            Ok(bytes.into())
        };
        read().map_err(|e| e.in_file(&path))
    }

    fn cache_stats(&self) -> Option<CacheStats> {
        None
    }

    fn url(&self) -> Option<&str> {
        None
    }
}
