//! Where a sharded dataset's shard files are, and how one is mapped and checked: shared by
//! [`ShardedDataset`](crate::shards::ShardedDataset) and by the loaders over it, which map
//! shards of their own and release them when done.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::ipc_reader::MappedDataset;
use crate::io::regular::check_inside;
use crate::shards::manifest::Manifest;
use crate::shards::reader::{Checksum, open_checked};

/// A dataset's manifest and the place of its shards: a directory, or a remote dataset's
/// node cache. Cheap to clone (the manifest is shared).
#[derive(Clone, Debug)]
pub(crate) struct ShardFiles {
    /// The shards' directory (for a remote dataset, the cache's).
    pub dir: PathBuf,
    pub manifest: Arc<Manifest>,
    /// The node's cache of a dataset in object storage.
    #[cfg(feature = "remote")]
    pub remote: Option<Arc<crate::shards::remote::ShardCache>>,
}

impl ShardFiles {
    /// Shard `index`'s checksum in the manifest, with the path or URL to name (for a
    /// compressed remote shard decompressed into the cache, that of the cache's entry).
    pub(crate) fn checksum(&self, index: usize) -> Checksum {
        #[cfg(feature = "remote")]
        if let Some(cache) = &self.remote {
            let (form, path) = cache.checksum_of(index);
            let crc32c = form.crc32c;
            return Checksum { path, crc32c };
        }
        let entry = &self.manifest.shards[index];
        Checksum {
            path: self.dir.join(&entry.file),
            crc32c: entry.crc32c,
        }
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
        let entry = &self.manifest.shards[index];
        let columns = &self.manifest.columns;
        #[cfg(feature = "remote")]
        if let Some(cache) = &self.remote {
            // A decompressed entry is checked against its own size and checksum.
            use crate::shards::{manifest::ShardEntry, remote::Form};
            let open = |p: &std::path::Path, form: &Form| match form.decompressed {
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
            return cache.open(index, open, next);
        }
        let _ = next; // A local shard is not downloaded.
        let path = self.dir.join(&entry.file);
        check_inside(&self.dir, &path)
            .map_err(Error::from)
            .and_then(|()| open_checked(&path, entry, columns, checksum))
            .map_err(|e| e.in_file(&path))
    }

    /// Marks a use of shard `index` by [`ShardFiles::open`] as over: a remote shard no
    /// reader of this process uses may be evicted from the cache.
    pub(crate) fn release(&self, index: usize) {
        #[cfg(feature = "remote")]
        if let Some(cache) = &self.remote {
            cache.release(index);
        }
        let _ = index;
    }
}
