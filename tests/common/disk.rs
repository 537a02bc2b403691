//! Files on disk for the tests of writers: every file under a directory, and a small tmpfs
//! to fill.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file under `dir`, in no particular order (none when `dir` is missing).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => out.extend(files_under(&path)),
            false => out.push(path),
        }
    }
    out
}

/// A small tmpfs, unmounted when dropped.
pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// A tmpfs of `bytes`, or `None` (said on stderr) when it cannot be mounted (not root,
    /// no `mount`).
    pub fn mount(bytes: usize) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs(dir)),
            _ => {
                eprintln!("skipped: cannot mount a tmpfs (needs root) to fill a disk");
                None
            }
        }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}
