//! The cache directory as a security boundary: whoever may write in it may make a reader
//! map what they wrote, or, through a link planted under a name the cache opens, make it
//! truncate or write a file elsewhere. So the directories are made `0700`, and one owned by
//! another user or writable by others is refused; every file in them is opened without
//! following a link (`O_NOFOLLOW`), a new one created exclusively (`O_CREAT|O_EXCL`), and an
//! entry that is not a regular file is not served.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Component, Path};

use crate::error::{Error, Result};

/// How [`open`] opens a file of the cache.
#[derive(Clone, Copy, Debug)]
pub(super) enum How {
    /// To read, if it is there.
    Read,
    /// To lock: read and write, created if missing, never truncated.
    Lock,
    /// A new file to write: refused if the name exists.
    New,
}

/// Opens `path`, a file in the cache's directory, without following a link (a link there is
/// an error of kind `PermissionDenied` saying so) and without blocking on a FIFO; a file that is
/// not regular is refused.
///
/// # Errors
/// The open's I/O error; [`io::ErrorKind::InvalidInput`] naming the file's type.
pub(super) fn open(path: &Path, how: How) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    options.mode(0o600);
    match how {
        How::Read => options.read(true),
        How::Lock => options.read(true).write(true).create(true),
        How::New => options.write(true).create_new(true),
    };
    let file = options.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            "is a symbolic link: the cache opens no link",
        ),
        _ => e,
    })?;
    crate::io::regular::check_regular(&file.metadata()?)?;
    Ok(file)
}

/// Makes the cache's directory `dir` under the cache's root `root` (each missing directory
/// made `0700`), then checks `root` (after links: a root linked elsewhere is the user's
/// choice) and every directory from it down to `dir` (none a link): owned by this user and
/// writable by no other (a sticky root, as `/tmp`, excepted).
///
/// # Errors
/// The I/O errors of making them; [`io::ErrorKind::PermissionDenied`] naming the
/// directory refused, and why.
pub(super) fn make_private(root: &Path, dir: &Path) -> Result<()> {
    let in_dir = |path: &Path| {
        let path = path.to_path_buf();
        move |e: io::Error| Error::from(e).in_file(&path)
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(in_dir(dir))?;
    // The root may be a sticky directory every user writes (`/tmp`, a tmpfs): no other
    // user can then remove or rename what is in it, and what is below is checked.
    let root_meta = std::fs::metadata(root).map_err(in_dir(root))?;
    check_private(root, root_meta, true)?;
    let below = dir.strip_prefix(root).unwrap_or(Path::new(""));
    let mut path = root.to_path_buf();
    for part in below.components() {
        if let Component::Normal(name) = part {
            path.push(name);
            let meta = std::fs::symlink_metadata(&path).map_err(in_dir(&path))?;
            check_private(&path, meta, false)?;
        }
    }
    Ok(())
}

/// An error unless `meta`, the metadata of the cache's directory `path`, is a directory
/// owned by this user that no other user may write (but for a sticky one, if `sticky_ok`).
fn check_private(path: &Path, meta: std::fs::Metadata, sticky_ok: bool) -> Result<()> {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let refused = if !meta.is_dir() {
        Some("is not a directory (a link, or a file): the cache's directories are its own".into())
    } else if sticky_ok && meta.mode() & 0o1000 != 0 {
        None
    } else if meta.uid() != me {
        Some(format!(
            "is owned by user {}, not this user ({me}): a cache is shared only by one user's \
             processes (use a cache directory of your own)",
            meta.uid()
        ))
    } else if meta.mode() & 0o002 != 0 {
        Some(format!(
            "is writable by every user (mode {:o}): make it private (chmod 700)",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    match refused {
        Some(reason) => {
            Err(Error::from(io::Error::new(io::ErrorKind::PermissionDenied, reason)).in_file(path))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_directory_writable_by_others_or_a_link_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s3/bucket");
        make_private(root.path(), &dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = make_private(root.path(), &dir).unwrap_err();
        assert!(err.to_string().contains("writable by every user"), "{err}");
        assert_eq!(err.path(), Some(dir.as_path()));
        std::fs::remove_dir(&dir).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
        let err = make_private(root.path(), &dir).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn no_file_is_opened_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        for (name, how) in [("a.lock", How::Lock), ("b.tmp", How::New), ("c", How::Read)] {
            let link = dir.path().join(name);
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let err = open(&link, how).unwrap_err();
            assert!(
                matches!(
                    err.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::AlreadyExists
                ),
                "{name}: {err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
