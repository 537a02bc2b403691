//! Opening input files by file type: only regular files are read.
//!
//! A FIFO blocks `open(2)` until a writer comes, and a read blocks until it writes; a device
//! such as `/dev/zero` never ends; a directory cannot be read. Every path this crate reads
//! from (a mapped Arrow file, a shard, a manifest, a Paddle or Parquet file) is opened here:
//! without blocking (`O_NONBLOCK`, which changes nothing for a regular file), then refused
//! by the type `fstat` gives unless it is a regular file, so the check and the read are of
//! the same file.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// Opens `path` for reading if it is a regular file (after following symbolic links),
/// with its metadata.
///
/// # Errors
/// The open's I/O error; an I/O error of kind [`io::ErrorKind::InvalidInput`] naming
/// the file's type for a directory, FIFO, socket or device.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    check_regular(&meta)?;
    Ok((file, meta))
}

/// An error unless `meta` is a regular file's, naming what it is.
///
/// # Errors
/// An I/O error of kind [`io::ErrorKind::InvalidInput`].
pub(crate) fn check_regular(meta: &Metadata) -> io::Result<()> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        file_type_name(&kind)
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {what}, not a regular file"),
    ))
}

/// An error if `path`, a file in the directory `dir`, is a symbolic link that leads out of
/// `dir` (after resolving every link, of `dir` too). A sharded dataset's reader reads only
/// files inside its directory: a shard or manifest linked from elsewhere is refused, before
/// anything about the file it points to (its size, its bytes) is read.
///
/// # Errors
/// An I/O error of kind [`io::ErrorKind::PermissionDenied`]; the I/O error of resolving
/// the paths.
pub(crate) fn check_inside(dir: &Path, path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {}
        _ => return Ok(()),
    }
    let target = std::fs::canonicalize(path)?;
    if target.starts_with(std::fs::canonicalize(dir)?) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        "is a symbolic link leading out of the dataset directory: a sharded dataset reads \
         only files inside its directory (copy the file in, or link within the directory)",
    ))
}

#[cfg(unix)]
fn file_type_name(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a file"
    }
}

#[cfg(not(unix))]
fn file_type_name(_: &std::fs::FileType) -> &'static str {
    "not a file"
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_no_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid, NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (path, what) in [
            (fifo.as_path(), "FIFO"),
            (dir.path(), "directory"),
            (Path::new("/dev/zero"), "device"),
        ] {
            let err = open_regular(path).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(what), "{err}");
        }
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(open_regular(&file).unwrap().1.len(), 1);
    }
}
