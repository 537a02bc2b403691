//! `vacuum`: removes what killed or failed writers left in a sharded dataset's directory.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{DatasetError, Error, Result};
use crate::shards::manifest::{MANIFEST_NAME, Manifest};
use crate::shards::store::{LocalStore, PENDING_DIR, PENDING_PREFIX, remove_dir_if_idle};

/// Removes the files of the sharded dataset in `dir` that no manifest references and that
/// were last modified more than `grace` ago; returns their paths, sorted.
///
/// Under the dataset's lock (so no commit runs meanwhile, and a commit a killed process
/// left half done is rolled forward first), it looks at:
/// - the directory's `.arrow` files that the manifest does not list (shards of a writer of
///   an older version killed before its commit) and its hidden temporary files
///   (`.NAME.*.tmp`);
/// - the staging directories under `_pending/`, except a live writer's (it holds a lock on
///   its directory while it lives) and the shards a pending manifest lists; a staging
///   directory left empty is removed too.
///
/// Nothing else is touched: other files, symbolic links, the manifests. A directory
/// without a manifest has only its `_pending/` cleaned.
///
/// # Errors
/// [`DatasetError::NotADataset`] when `dir` holds no sharded dataset
/// (no manifest, no pending manifest, no `_pending/`); the manifests' errors; I/O errors
/// naming the file.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset, LodTensor};
/// # use lodtensor::arrow::types::Int64Type;
/// # use lodtensor::shards::{ShardOptions, ShardWriter};
/// # let dir = tempfile::tempdir()?;
/// # let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1, 3]], (0..6).collect(), vec![])?;
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # writer.finish()?;
/// use lodtensor::shards::vacuum;
/// use std::time::Duration;
/// std::fs::write(dir.path().join("part-00007.arrow"), b"left by a killed writer")?;
/// assert!(vacuum(dir.path(), Duration::from_secs(3600))?.is_empty()); // too recent
/// let removed = vacuum(dir.path(), Duration::ZERO)?;
/// assert_eq!(removed, [dir.path().join("part-00007.arrow")]);
/// assert!(dir.path().join("part-00000.arrow").exists());          // listed: kept
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn vacuum(dir: impl AsRef<Path>, grace: Duration) -> Result<Vec<PathBuf>> {
    let dir = dir.as_ref();
    let ours = |n: &String| n == MANIFEST_NAME || n == PENDING_DIR || n.starts_with(PENDING_PREFIX);
    if !entries(dir)?.iter().any(ours) {
        return Err(Error::from(DatasetError::NotADataset).in_file(dir));
    }
    let _lock = LocalStore::new(dir).lock()?;
    // Listed under the lock: the roll-forward of a killed commit may have changed them.
    let names = entries(dir)?;
    let has_manifest = names.iter().any(|n| n == MANIFEST_NAME);
    let pending: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with(PENDING_PREFIX) && n.ends_with(".json"))
        .collect();
    let cutoff = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut sweep = Sweep {
        dir,
        listed: listed(dir, &pending)?,
        cutoff,
        removed: Vec::new(),
    };
    if has_manifest {
        let leftover = |n: &str| is_shard_name(n) || (n.starts_with('.') && n.ends_with(".tmp"));
        for name in names.iter().filter(|n| leftover(n)) {
            sweep.file(Path::new(name))?;
        }
    }
    let root = dir.join(PENDING_DIR);
    if std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) {
        for name in entries(&root)? {
            let rel = Path::new(PENDING_DIR).join(&name);
            let meta = std::fs::symlink_metadata(dir.join(&rel));
            if meta.is_ok_and(|m| m.is_dir()) {
                sweep.staging(&rel)?;
            } else {
                sweep.file(&rel)?;
            }
        }
    }
    remove_dir_if_idle(&root);
    let mut removed = sweep.removed;
    removed.sort();
    Ok(removed)
}

/// Whether `name` is named as a writer names a shard: `*.arrow`, not hidden (`.`) nor
/// the dataset's own (`_`).
pub(crate) fn is_shard_name(name: &str) -> bool {
    name.ends_with(".arrow") && !name.starts_with(['.', '_'])
}

/// The paths (relative to `dir`) that a manifest lists: the dataset's, and each pending
/// one's (in the directory for an older writer, or staged under `_pending/PREFIX.pending/`).
fn listed(dir: &Path, pending: &[&String]) -> Result<HashSet<PathBuf>> {
    let mut listed: HashSet<PathBuf> = HashSet::new();
    let main = dir.join(MANIFEST_NAME);
    let manifests = main.exists().then_some(main).into_iter();
    for path in manifests.chain(pending.iter().map(|n| dir.join(n))) {
        let name = path
            .file_name()
            .expect("a file")
            .to_string_lossy()
            .into_owned();
        let staged = name
            .strip_prefix(PENDING_PREFIX)
            .and_then(|n| n.strip_suffix(".json"))
            .map(|prefix| Path::new(PENDING_DIR).join(format!("{prefix}.pending")));
        for shard in Manifest::load(&path)?.shards {
            if let Some(staged) = &staged {
                listed.insert(staged.join(&shard.file));
            }
            listed.insert(PathBuf::from(shard.file));
        }
    }
    Ok(listed)
}

/// One vacuum's rule: a regular file under `dir` that no manifest lists (`listed`) and that
/// was last modified before `cutoff` goes; `removed` collects what went.
struct Sweep<'a> {
    dir: &'a Path,
    listed: HashSet<PathBuf>,
    cutoff: SystemTime,
    removed: Vec<PathBuf>,
}

impl Sweep<'_> {
    /// Cleans the staging directory `rel` unless its writer is alive (holds its lock);
    /// removes the directory once empty and older than the grace period.
    fn staging(&mut self, rel: &Path) -> Result<()> {
        let path = self.dir.join(rel);
        let handle = File::open(&path).map_err(|e| Error::from(e).in_file(&path))?;
        match handle.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(()),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::from(e).in_file(&path)),
        }
        // Before its files go, which makes it modified now.
        let old = modified(&path)? <= self.cutoff;
        for name in entries(&path)? {
            self.file(&rel.join(name))?;
        }
        if old {
            // Fails, harmlessly, when something is left in it; we hold its lock.
            let _ = std::fs::remove_dir(&path);
        }
        Ok(())
    }

    /// Removes the regular file `rel` unless a manifest lists it or it changed after the
    /// cutoff.
    fn file(&mut self, rel: &Path) -> Result<()> {
        let path = self.dir.join(rel);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::from(e).in_file(&path)),
        };
        if !meta.is_file() || self.listed.contains(rel) || modified(&path)? > self.cutoff {
            return Ok(());
        }
        std::fs::remove_file(&path).map_err(|e| Error::from(e).in_file(&path))?;
        self.removed.push(path);
        Ok(())
    }
}

/// When the file at `path` (not followed if a link) was last modified.
fn modified(path: &Path) -> Result<SystemTime> {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| Error::from(e).in_file(path))
}

/// The names in the directory `dir`.
fn entries(dir: &Path) -> Result<Vec<String>> {
    let in_dir = |e: std::io::Error| Error::from(e).in_file(dir);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(in_dir)? {
        out.push(
            entry
                .map_err(in_dir)?
                .file_name()
                .to_string_lossy()
                .into_owned(),
        );
    }
    Ok(out)
}
