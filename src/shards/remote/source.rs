//! The node's cache of a dataset in object storage as the dataset's
//! [`ShardSource`]: a shard downloaded into the cache (or found there) and then mapped and
//! checked as a local shard, its byte ranges read from the cache or by range requests, an
//! index object through the cache's metadata directory.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::io::ipc_reader::MappedDataset;
use crate::shards::index::IndexEntry;
use crate::shards::manifest::{Manifest, ShardEntry};
use crate::shards::reader::{Checksum, open_checked};
use crate::shards::remote::cache::{Form, ShardCache};
use crate::shards::remote::meta::{fetch_object, keep_layout, kept_layout};
use crate::shards::source::{CacheStats, Reading, ShardSource};

/// The shards of a remote dataset, read through the node's cache.
#[derive(Debug)]
pub(crate) struct CachedShards {
    cache: Arc<ShardCache>,
    /// The largest gap merged between byte ranges.
    range_gap: u64,
}

impl CachedShards {
    /// The shards that `cache` holds or downloads, byte ranges merged across `range_gap`.
    pub(crate) fn new(cache: ShardCache, range_gap: u64) -> Self {
        CachedShards {
            cache: Arc::new(cache),
            range_gap,
        }
    }
}

impl ShardSource for CachedShards {
    fn checksum(&self, _manifest: &Manifest, index: usize) -> Checksum {
        let (form, path) = self.cache.checksum_of(index);
        let crc32c = form.crc32c;
        Checksum { path, crc32c }
    }

    fn location(&self, manifest: &Manifest, index: usize) -> PathBuf {
        PathBuf::from(self.cache.remote().url_of(&manifest.shards[index].file))
    }

    fn open(
        &self,
        manifest: &Manifest,
        index: usize,
        checksum: bool,
        next: Option<&[usize]>,
    ) -> Result<MappedDataset> {
        let entry = &manifest.shards[index];
        let columns = &manifest.columns;
        // A decompressed entry is checked against its own size and checksum.
        let open = |p: &Path, form: &Form| match form.decompressed {
            false => open_checked(p, entry, columns, checksum),
            true => {
                let (bytes, crc32c) = (form.bytes, form.crc32c);
                let entry = ShardEntry {
                    bytes,
                    crc32c,
                    ..entry.clone()
                };
                open_checked(p, &entry, columns, checksum)
            }
        };
        self.cache.open(index, open, next)
    }

    fn read_ranges(
        &self,
        _manifest: &Manifest,
        wanted: &[(usize, Range<u64>)],
        reading: Reading,
    ) -> Result<Vec<Bytes>> {
        self.cache.read_ranges(wanted, reading)
    }

    fn at_hand(&self, _manifest: &Manifest, index: usize) -> bool {
        self.cache.holds(index)
    }

    fn release(&self, index: usize) {
        self.cache.release(index);
    }

    fn range_gap(&self) -> u64 {
        self.range_gap
    }

    fn index_object(&self, entry: &IndexEntry) -> Result<Bytes> {
        fetch_object(&self.cache, self.cache.dir(), entry)
    }

    fn kept_layout(&self, manifest: &Manifest, index: usize) -> Option<Bytes> {
        kept_layout(self.cache.dir(), &manifest.shards[index])
    }

    fn keep_layout(&self, manifest: &Manifest, index: usize, bytes: &[u8]) -> Result<()> {
        keep_layout(self.cache.dir(), &manifest.shards[index], bytes)
    }

    fn cache_stats(&self) -> Option<CacheStats> {
        Some(self.cache.stats())
    }

    fn url(&self) -> Option<&str> {
        Some(self.cache.remote().url())
    }
}
