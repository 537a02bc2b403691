//! Where a sharded dataset's shard files are, and how one is mapped and checked: shared by
//! [`ShardedDataset`](crate::shards::ShardedDataset) and by the loaders over it, which map
//! shards of their own and release them when done.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::ipc_reader::MappedDataset;
use crate::io::regular::open_regular;
use crate::shards::index::IndexEntry;
use crate::shards::layouts::Layouts;
use crate::shards::manifest::Manifest;
use crate::shards::reader::{Checksum, mismatch};
use crate::shards::source::{CacheStats, Reading, ShardSource};

/// A dataset's manifest and the place of its shards: a directory, or a remote dataset's
/// node cache, behind one [`ShardSource`]. Cheap to clone (the manifest and the source are
/// shared).
#[derive(Clone, Debug)]
pub(crate) struct ShardFiles {
    /// The shards' directory (for a remote dataset, the cache's).
    pub dir: PathBuf,
    pub manifest: Arc<Manifest>,
    /// Where the shards are read from.
    pub source: Arc<dyn ShardSource>,
    /// The shards' record-batch layouts read so far (rows read by ranges).
    pub layouts: Arc<Layouts>,
}

impl ShardFiles {
    /// Shard `index`'s checksum in the manifest, with the path or URL to name (for a
    /// compressed remote shard decompressed into the cache, that of the cache's entry).
    pub(crate) fn checksum(&self, index: usize) -> Checksum {
        self.source.checksum(&self.manifest, index)
    }

    /// Shard `index`'s path, or its URL for a remote dataset: what errors name.
    pub(crate) fn location(&self, index: usize) -> PathBuf {
        self.source.location(&self.manifest, index)
    }

    /// Maps shard `index` and checks it against the manifest, its checksum only if
    /// `checksum`. A remote shard is downloaded first unless cached, then the shards read
    /// next are downloaded ahead: `next` in that order, else those after `index`; it stays
    /// in use until [`ShardFiles::release`].
    pub(crate) fn open(
        &self,
        index: usize,
        checksum: bool,
        next: Option<&[usize]>,
    ) -> Result<MappedDataset> {
        self.source.open(&self.manifest, index, checksum, next)
    }

    /// The bytes of each `(shard, range)` of `wanted`, in order, without mapping or
    /// downloading a shard: a local shard's read from its file, a remote shard's from its
    /// cache entry if there, else by range requests.
    ///
    /// # Errors
    /// I/O errors naming the file; for a remote dataset, the store's errors naming the
    /// shard's URL; [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch)
    /// (`bytes`) for a shard shorter than the manifest says.
    pub(crate) fn read_ranges(&self, wanted: &[(usize, Range<u64>)]) -> Result<Vec<Bytes>> {
        (self.source).read_ranges(&self.manifest, wanted, Reading::Metadata)
    }

    /// [`ShardFiles::read_ranges`] of rows' bytes (counted apart from metadata).
    pub(crate) fn read_row_ranges(&self, wanted: &[(usize, Range<u64>)]) -> Result<Vec<Bytes>> {
        (self.source).read_ranges(&self.manifest, wanted, Reading::Rows)
    }

    /// The largest gap between two byte ranges of a shard read as one request.
    pub(crate) fn range_gap(&self) -> u64 {
        self.source.range_gap()
    }

    /// Whether shard `index` is at hand: a local file, or a remote shard in the node's
    /// cache (mapped without a download).
    pub(crate) fn at_hand(&self, index: usize) -> bool {
        self.source.at_hand(&self.manifest, index)
    }

    /// Marks a use of shard `index` by [`ShardFiles::open`] as over: a remote shard no
    /// reader of this process uses may be evicted from the cache.
    pub(crate) fn release(&self, index: usize) {
        self.source.release(index);
    }

    /// The bytes of the index object `entry`: a local dataset's file, a remote one's
    /// through the node's cache.
    pub(crate) fn index_object(&self, entry: &IndexEntry) -> Result<Bytes> {
        self.source.index_object(entry)
    }

    /// What the node's cache did since the dataset was opened; `None` for a local dataset.
    pub(crate) fn cache_stats(&self) -> Option<CacheStats> {
        self.source.cache_stats()
    }

    /// The dataset's URL; `None` for a local dataset.
    pub(crate) fn url(&self) -> Option<&str> {
        self.source.url()
    }
}

/// Bytes `range` of the regular file at `path`, which must have `file_len` bytes (its size
/// in the manifest).
///
/// # Errors
/// I/O errors naming the file; [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch)
/// (`bytes`) for a file of another size, or a range past its end.
pub(crate) fn read_range(path: &Path, range: Range<u64>, file_len: u64) -> Result<Bytes> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let in_file = |e: std::io::Error| Error::from(e).in_file(path);
    let (mut file, meta) = open_regular(path).map_err(in_file)?;
    mismatch("bytes", file_len, meta.len()).map_err(|e| e.in_file(path))?;
    mismatch("bytes", file_len, range.end.max(file_len)).map_err(|e| e.in_file(path))?;
    let len = usize::try_from(range.end.saturating_sub(range.start))
        .map_err(|e| in_file(std::io::Error::other(e)))?;
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(range.start)).map_err(in_file)?;
    file.read_exact(&mut bytes).map_err(in_file)?;
    Ok(Bytes::from(bytes))
}
