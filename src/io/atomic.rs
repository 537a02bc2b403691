//! Files that appear whole or not at all.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

/// A file written under a temporary name in the target's directory, synced, then renamed
/// over the target by [`AtomicFile::commit`].
///
/// Dropped without `commit` (an error, a panic), the temporary file is removed; a process
/// killed at any moment leaves at most a hidden `.NAME.*.tmp` file beside the target. The
/// target path only ever holds the previous complete file or the new complete file, and a
/// file that a reader has mapped is never truncated or rewritten in place.
///
/// [`DatasetWriter`](crate::DatasetWriter), the Parquet and Paddle file writers and the
/// command-line tool write through it; it is public for other files that must appear whole.
///
/// # Example
/// ```
/// use std::io::Write;
/// use lodtensor::io::AtomicFile;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("notes.txt");
/// let mut file = AtomicFile::create(&path)?;
/// file.write_all(b"all or nothing")?;
/// assert!(!path.exists(), "nothing at the target before the commit");
/// file.commit()?;
/// assert_eq!(std::fs::read(&path)?, b"all or nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct AtomicFile {
    temp: NamedTempFile,
    target: PathBuf,
    /// Bytes written through [`io::Write`], and how many of them were handed to the disk.
    written: u64,
    handed: u64,
}

/// Written bytes handed to the disk while writing goes on (Linux: `sync_file_range`), so
/// that the commit's sync waits only for the last of them, not for the whole file.
const WRITEBACK_BYTES: u64 = 16 << 20;

impl AtomicFile {
    /// Starts writing `target`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) (wrapped with the path) when the temporary file cannot be created.
    ///
    /// # Example
    /// ```
    /// use lodtensor::io::AtomicFile;
    /// let dir = tempfile::tempdir()?;
    /// let file = AtomicFile::create(dir.path().join("x.bin"))?;
    /// drop(file);                                                // no commit: nothing is left
    /// assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            // The mode a plain `File::create` gives (0666 less the umask), not 0600.
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder
            .tempfile_in(&dir)
            .map_err(|e| Error::from(e).in_file(&target))?;
        Ok(AtomicFile {
            temp,
            target,
            written: 0,
            handed: 0,
        })
    }

    /// The file to write into.
    ///
    /// # Example
    /// ```
    /// use std::io::Write;
    /// use lodtensor::io::AtomicFile;
    /// let dir = tempfile::tempdir()?;
    /// let atomic = AtomicFile::create(dir.path().join("x.bin"))?;
    /// (&mut &*atomic.file()).write_all(b"abc")?;
    /// atomic.commit()?;
    /// assert_eq!(std::fs::read(dir.path().join("x.bin"))?, b"abc");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// The target path.
    ///
    /// # Example
    /// ```
    /// use lodtensor::io::AtomicFile;
    /// let dir = tempfile::tempdir()?;
    /// let atomic = AtomicFile::create(dir.path().join("x.bin"))?;
    /// assert_eq!(atomic.target(), dir.path().join("x.bin"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the data, renames it over the target and syncs the directory.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) (wrapped with the path); the target is untouched unless the rename
    /// happened.
    ///
    /// # Example
    /// ```
    /// use lodtensor::io::AtomicFile;
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("x.bin");
    /// std::fs::write(&path, b"old")?;
    /// AtomicFile::create(&path)?.commit()?;                      // an empty file replaces it whole
    /// assert_eq!(std::fs::read(&path)?, b"");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let fail = |e: io::Error| Error::from(e).in_file(&target);
        self.temp.as_file().sync_all().map_err(fail)?;
        self.temp.persist(&target).map_err(|e| fail(e.error))?;
        if let Some(dir) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).map_err(fail)?;
        }
        Ok(())
    }
}

/// Writes `target` atomically: `write` fills a buffered writer over an [`AtomicFile`], which
/// replaces the target only when `write` and the flush succeed. On any error the target is
/// untouched and the temporary file removed; the error carries the path.
pub(crate) fn write_atomically(
    target: &Path,
    write: impl FnOnce(&mut dyn io::Write) -> Result<()>,
) -> Result<()> {
    let run = || -> Result<()> {
        let mut out = io::BufWriter::new(AtomicFile::create(target)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| Error::from(e.into_error()))?;
        file.commit()
    };
    run().map_err(|e| e.in_file(target))
}

/// Writes go to the temporary file; every 16 MiB written are handed to the disk.
impl io::Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.temp.write(buf)?;
        self.written += n as u64;
        if self.written - self.handed >= WRITEBACK_BYTES {
            start_writeback(self.temp.as_file(), self.handed, self.written - self.handed);
            self.handed = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.temp.flush()
    }
}

/// Starts writing `len` bytes of `file` from `offset` to the disk, without waiting: a hint
/// (a failure only leaves the work to the commit's sync).
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: sync_file_range reads only its integer arguments; `file` keeps the descriptor
    // open for the duration of the call.
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::io::Write;

    #[test]
    fn large_writes_are_handed_to_the_disk_and_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("big.bin");
        let mut file = AtomicFile::create(&target).unwrap();
        let piece: Vec<u8> = (0..(1 << 20) + 7).map(|i| (i % 251) as u8).collect();
        for _ in 0..40 {
            file.write_all(&piece).unwrap();
        }
        assert!(file.handed > 0 && file.handed <= file.written);
        assert_eq!(file.written, 40 * piece.len() as u64);
        file.commit().unwrap();
        let back = std::fs::read(&target).unwrap();
        assert_eq!(back.len(), 40 * piece.len());
        assert!(back.chunks(piece.len()).all(|c| c == piece.as_slice()));
    }

    #[test]
    fn commit_replaces_drop_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x.bin");
        std::fs::write(&target, b"old").unwrap();
        {
            let f = AtomicFile::create(&target).unwrap();
            f.file().write_all(b"half").unwrap();
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let f = AtomicFile::create(&target).unwrap();
        f.file().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // An error in the middle of a write leaves the previous file and no temporary file.
        let err = write_atomically(&target, |out| {
            out.write_all(b"half of a ")?;
            Err(io::Error::other("injected").into())
        })
        .unwrap_err();
        assert_eq!(err.path(), Some(target.as_path()));
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write_atomically(&target, |out| Ok(out.write_all(b"newer")?)).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"newer");
        assert!(matches!(
            AtomicFile::create(dir.path().join("missing/x.bin"))
                .unwrap_err()
                .kind(),
            ErrorKind::Io(_)
        ));
    }
}
