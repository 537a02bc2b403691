//! Which file a mapping is of: its identity (device, inode, size, modification time) as it
//! was when [`MappedDataset`](super::ipc_reader::MappedDataset) opened it, so that another
//! process can map the same file by its path and know it is still that file.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

use arrow_buffer::Buffer;

/// A file as `fstat` saw it: device, inode, size and modification time (nanoseconds since
/// the Unix epoch). Two files with the same identity are the same unchanged file.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// use lodtensor::io::FileIdentity;
/// let file = MappedDataset::open(&path)?;
/// let now = FileIdentity::of(&std::fs::metadata(&path)?);
/// assert_eq!(file.mapped_file().map(|f| *f.identity()), Some(now));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// The device the file is on (`st_dev`).
    pub dev: u64,
    /// The inode (`st_ino`).
    pub ino: u64,
    /// The size in bytes (`st_size`).
    pub size: u64,
    /// The modification time in nanoseconds since the Unix epoch (`st_mtime_ns`).
    pub mtime_ns: i128,
}

impl FileIdentity {
    /// The identity of the file `meta` describes (on a platform without device and inode
    /// numbers, those are 0).
    ///
    /// # Example
    /// ```
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// use lodtensor::io::FileIdentity;
    /// let meta = std::fs::metadata(&path)?;
    /// assert_eq!(FileIdentity::of(&meta).size, meta.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of(meta: &Metadata) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            FileIdentity {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = (meta.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            FileIdentity {
                dev: 0,
                ino: 0,
                size: meta.len(),
                mtime_ns,
            }
        }
    }
}

/// A file mapped by [`MappedDataset`](super::ipc_reader::MappedDataset): its path, its
/// identity when it was opened, and the mapping (kept alive as long as this is), so that
/// the place of a view of it can be told as an offset into the file.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// let file = MappedDataset::open(&path)?;
/// let mapped = file.mapped_file().expect("a file, not bytes in memory");
/// assert_eq!(mapped.path(), path);
/// let bytes = file.as_bytes();
/// let at = bytes[8..].as_ptr() as usize;
/// assert_eq!(mapped.offset_of(at, 16), Some(8));
/// assert_eq!(mapped.offset_of(at, bytes.len()), None);     // runs past the end
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MappedFile {
    path: PathBuf,
    identity: FileIdentity,
    mapping: Buffer,
}

impl MappedFile {
    /// The file at `path` (made absolute: another process finds it whatever its working
    /// directory) of identity `identity`, mapped as `mapping` (the whole file).
    pub(crate) fn new(path: &Path, identity: FileIdentity, mapping: Buffer) -> Self {
        MappedFile {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            identity,
            mapping,
        }
    }

    /// The path the file was opened from.
    ///
    /// # Example
    /// ```
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = lodtensor::MappedDataset::open(&path)?;
    /// assert_eq!(file.mapped_file().map(|f| f.path()), Some(path.as_path()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's identity when it was opened.
    ///
    /// # Example
    /// ```
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = lodtensor::MappedDataset::open(&path)?;
    /// let size = std::fs::metadata(&path)?.len();
    /// assert_eq!(file.mapped_file().map(|f| f.identity().size), Some(size));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn identity(&self) -> &FileIdentity {
        &self.identity
    }

    /// The address of the mapping's first byte in this process.
    pub(crate) fn start(&self) -> usize {
        self.mapping.as_ptr() as usize
    }

    /// The offset in the file of the `len` bytes at `address` of this process, if they lie
    /// wholly in the mapping (else `None`).
    ///
    /// # Example
    /// ```
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = lodtensor::MappedDataset::open(&path)?;
    /// let mapped = file.mapped_file().expect("a file");
    /// assert_eq!(mapped.offset_of(file.as_bytes().as_ptr() as usize, 6), Some(0));   // ARROW1
    /// assert_eq!(mapped.offset_of(0, 1), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn offset_of(&self, address: usize, len: usize) -> Option<usize> {
        offset_in(self.start(), self.mapping.len(), address, len)
    }
}

/// The offset of `len` bytes at `address` in `size` bytes from `start`, if they lie wholly
/// inside.
pub(crate) fn offset_in(start: usize, size: usize, address: usize, len: usize) -> Option<usize> {
    let offset = address.checked_sub(start)?;
    (offset.checked_add(len)? <= size).then_some(offset)
}
