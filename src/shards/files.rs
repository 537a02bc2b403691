//! Where a sharded dataset's shard files are, and how one is mapped and checked: shared by
//! [`ShardedDataset`](crate::shards::ShardedDataset) and by the loaders over it, which map
//! shards of their own and release them when done.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::ipc_reader::MappedDataset;
use crate::io::regular::{check_inside, open_regular};
use crate::shards::manifest::Manifest;
use crate::shards::reader::{Checksum, mismatch, open_checked};

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

    /// Shard `index`'s path, or its URL for a remote dataset: what errors name.
    pub(crate) fn location(&self, index: usize) -> PathBuf {
        let file = &self.manifest.shards[index].file;
        #[cfg(feature = "remote")]
        if let Some(cache) = &self.remote {
            return PathBuf::from(cache.remote().url_of(file));
        }
        self.dir.join(file)
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

    /// The bytes of each `(shard, range)` of `wanted`, in order, without mapping or
    /// downloading a shard: a local shard's read from its file, a remote shard's from its
    /// cache entry if there, else by range requests ([`ShardCache::read_ranges`](crate::shards::remote::ShardCache)).
    ///
    /// # Errors
    /// I/O errors naming the file; for a remote dataset, the store's errors naming the
    /// shard's URL; [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch)
    /// (`bytes`) for a shard shorter than the manifest says.
    pub(crate) fn read_ranges(&self, wanted: &[(usize, Range<u64>)]) -> Result<Vec<Bytes>> {
        #[cfg(feature = "remote")]
        if let Some(cache) = &self.remote {
            return cache.read_ranges(wanted);
        }
        wanted
            .iter()
            .map(|(shard, range)| {
                let entry = &self.manifest.shards[*shard];
                let path = self.dir.join(&entry.file);
                check_inside(&self.dir, &path).map_err(|e| Error::from(e).in_file(&path))?;
                read_range(&path, range.clone(), entry.bytes)
            })
            .collect()
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
