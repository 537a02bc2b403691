//! The commit protocol of sharded datasets, written once: how staged shards become part of
//! the dataset while other writers commit too.
//!
//! A writer stages its shards where dataset discovery does not look (`_pending/`), builds
//! the manifest it wants from the one it read, and asks the store to replace the manifest
//! **only if it is still the version the writer read** (a compare-and-swap,
//! [`ManifestStore::replace`]). When another writer committed in between, the answer is
//! [`Replaced::Conflict`]: the writer re-reads the manifest, merges (its shards after the
//! current ones) and tries again ([`commit_with`]). The version is a token, not a file
//! time: here the CRC-32C and length of the manifest's text.
//!
//! [`LocalStore`] does the step on a local file system, under an exclusive `flock` on
//! `_lodtensor.lock`: it compares the versions, writes a commit journal
//! (`_lodtensor.commit.json`: the new manifest and the renames), renames the staged shards
//! to their final names, replaces the manifest (temporary file, fsync, rename, fsync of the
//! directory) and removes the journal. A process killed inside that step leaves the journal;
//! the next holder of the lock (a commit, a writer's pending manifest, `vacuum`) rolls it
//! forward first. An object store would do the same step as a conditional PUT of the
//! manifest (`If-Match` on its ETag) after creating each shard's final name with
//! `If-None-Match: *`, so that a name another writer took is a conflict too.

use std::fs::File;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use crate::error::{Error, FileFormat, Result};
use crate::io::atomic::{AtomicFile, write_atomically};
use crate::shards::manifest::{MANIFEST_NAME, Manifest, is_shard_name};

/// The dataset's lock file: commits, pending manifests and `vacuum` hold it exclusively.
pub(crate) const LOCK_NAME: &str = "_lodtensor.lock";
/// The commit journal, present only while (or because) a commit is under way.
pub(crate) const JOURNAL_NAME: &str = "_lodtensor.commit.json";
/// The directory of staged shards, ignored by dataset discovery (the leading `_`).
pub(crate) const PENDING_DIR: &str = "_pending";

/// What a manifest was when read: equal tokens, equal manifests. `None` when there was none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManifestVersion(Option<(usize, u32)>);

impl ManifestVersion {
    /// The version of `manifest` (of no manifest, for `None`).
    pub(crate) fn of(manifest: Option<&Manifest>) -> Self {
        ManifestVersion(manifest.map(|m| {
            let text = m.to_json();
            (text.len(), crc32c::crc32c(text.as_bytes()))
        }))
    }

    fn to_json(&self) -> Value {
        match self.0 {
            Some((len, crc)) => json!([len, crc]),
            None => Value::Null,
        }
    }

    fn from_json(value: &Value) -> Option<Self> {
        match value {
            Value::Null => Some(ManifestVersion(None)),
            Value::Array(a) if a.len() == 2 => Some(ManifestVersion(Some((
                usize::try_from(a[0].as_u64()?).ok()?,
                u32::try_from(a[1].as_u64()?).ok()?,
            )))),
            _ => None,
        }
    }
}

/// One commit: the manifest after it, the staged shards that take their final names, and
/// the pending manifests it merges (removed after, if still the version read).
#[derive(Clone, Debug, Default)]
pub(crate) struct Commit {
    /// The manifest after the commit.
    pub manifest: Manifest,
    /// Each staged shard (relative to the dataset directory, under `_pending/`) and its
    /// final name.
    pub publish: Vec<(PathBuf, String)>,
    /// Pending manifests merged by the commit, with the version read.
    pub merged: Vec<(PathBuf, ManifestVersion)>,
    /// Staging directories to remove once empty.
    pub cleanup: Vec<PathBuf>,
}

/// The answer of [`ManifestStore::replace`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Replaced {
    /// The commit is done: the manifest is the new one.
    Done,
    /// The manifest (or a merged pending manifest, or a final name) changed since it was
    /// read: nothing was done.
    Conflict,
}

/// Where a sharded dataset's manifest lives: read it with its version, replace it only if
/// it is still a given version.
pub(crate) trait ManifestStore {
    /// The manifest (`None` when there is no dataset yet) and its version.
    fn load(&self) -> Result<(Option<Manifest>, ManifestVersion)>;
    /// Publishes `commit`'s shards and replaces the manifest by `commit.manifest`, if the
    /// manifest is still `expected` and no final name is taken; else does nothing.
    fn replace(&self, expected: &ManifestVersion, commit: &Commit) -> Result<Replaced>;
    /// Whether `name` is taken in the dataset (listed or not), so no commit gives it again.
    fn name_taken(&self, name: &str) -> bool;
    /// [`ManifestStore::load`] once no commit is under way (a local store waits for its
    /// lock): what a failed build compares its manifest with.
    fn load_settled(&self) -> Result<(Option<Manifest>, ManifestVersion)> {
        self.load()
    }
}

/// The commit loop: builds the commit from the manifest `current` (read by the caller) and
/// replaces; on a conflict re-reads and builds again, until done or `build` fails. A build
/// that fails while another commit changed the manifest (it moved the staged shards or
/// removed the pending manifests being read) starts over from that commit's manifest; the
/// error stands when the manifest is unchanged.
pub(crate) fn commit_with<S: ManifestStore>(
    store: &S,
    mut current: (Option<Manifest>, ManifestVersion),
    mut build: impl FnMut(Option<&Manifest>, &S) -> Result<Commit>,
) -> Result<Manifest> {
    loop {
        let commit = match build(current.0.as_ref(), store) {
            Ok(commit) => commit,
            Err(e) => {
                let now = store.load_settled()?;
                if now.1 == current.1 {
                    return Err(e);
                }
                current = now;
                continue;
            }
        };
        match store.replace(&current.1, &commit)? {
            Replaced::Done => return Ok(commit.manifest),
            Replaced::Conflict => current = store.load()?,
        }
    }
}

/// A sharded dataset in a local directory.
#[derive(Clone, Debug)]
pub(crate) struct LocalStore {
    dir: PathBuf,
}

/// The dataset's lock, held until dropped.
#[derive(Debug)]
pub(crate) struct DatasetLock {
    _file: File,
}

impl LocalStore {
    /// The store of the dataset in `dir`.
    pub(crate) fn new(dir: &Path) -> Self {
        LocalStore {
            dir: dir.to_path_buf(),
        }
    }

    /// Takes the dataset's lock (waiting for its holder), then rolls forward a commit that a
    /// killed process left half done.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming the lock file or the journal; a
    /// journal that is not one.
    pub(crate) fn lock(&self) -> Result<DatasetLock> {
        let path = self.dir.join(LOCK_NAME);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .and_then(|f| f.lock().map(|()| f))
            .map_err(|e| Error::from(e).in_file(&path))?;
        let lock = DatasetLock { _file: file };
        self.recover()?;
        Ok(lock)
    }

    /// The manifest and its version, read under the lock after rolling forward a commit a
    /// killed process left half done: what a writer starts from.
    ///
    /// # Errors
    /// The errors of [`LocalStore::lock`] and of [`Manifest::load`].
    pub(crate) fn load_current(&self) -> Result<(Option<Manifest>, ManifestVersion)> {
        let _lock = self.lock()?;
        self.load()
    }

    /// Rolls the journal forward, if there is one: the renames not done yet, the manifest
    /// (if it is still the version the journal started from), the cleanup.
    fn recover(&self) -> Result<()> {
        let path = self.dir.join(JOURNAL_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::from(e).in_file(&path)),
        };
        let (base, commit) = parse_journal(&text).map_err(|e| e.in_file(&path))?;
        let (_, now) = self.load()?;
        if now == base || now == ManifestVersion::of(Some(&commit.manifest)) {
            self.apply(&commit)?;
        }
        remove_file(&path)?;
        sync_dir(&self.dir)
    }

    /// The renames, the manifest, the cleanup: each step idempotent.
    fn apply(&self, commit: &Commit) -> Result<()> {
        self.publish(commit)?;
        self.clean(commit)
    }

    /// Renames the staged shards to their final names, then replaces the manifest. The
    /// manifest's temporary file is written and synced first, so that the window in which
    /// the shards are in place and the manifest is not is a few renames long.
    fn publish(&self, commit: &Commit) -> Result<()> {
        let path = self.dir.join(MANIFEST_NAME);
        let mut manifest = AtomicFile::create(&path)?;
        manifest
            .write_all(commit.manifest.to_json().as_bytes())
            .and_then(|()| manifest.file().sync_all())
            .map_err(|e| Error::from(e).in_file(&path))?;
        for (staged, name) in &commit.publish {
            let (from, to) = (self.dir.join(staged), self.dir.join(name));
            match std::fs::rename(&from, &to) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && to.exists() => {}
                Err(e) => return Err(Error::from(e).in_file(from)),
            }
        }
        // The rename, then a sync of the directory that makes the shards' renames durable
        // too; a crash before it is rolled forward from the journal.
        manifest.commit()
    }

    /// Undoes the renames of a [`LocalStore::publish`] that failed before the manifest was
    /// replaced (a full disk): the shards go back where their writer removes them.
    fn unpublish(&self, commit: &Commit) {
        for (staged, name) in &commit.publish {
            let _ = std::fs::rename(self.dir.join(name), self.dir.join(staged));
        }
    }

    /// Removes the merged pending manifests and the emptied staging directories.
    fn clean(&self, commit: &Commit) -> Result<()> {
        for (pending, _) in &commit.merged {
            remove_file(&self.dir.join(pending))?;
        }
        for dir in commit.cleanup.iter().chain([&PathBuf::from(PENDING_DIR)]) {
            remove_dir_if_idle(&self.dir.join(dir));
        }
        Ok(())
    }
}

impl ManifestStore for LocalStore {
    fn load_settled(&self) -> Result<(Option<Manifest>, ManifestVersion)> {
        self.load_current()
    }

    fn load(&self) -> Result<(Option<Manifest>, ManifestVersion)> {
        let path = self.dir.join(MANIFEST_NAME);
        let manifest = match path.exists() {
            true => Some(Manifest::load(&path)?),
            false => None,
        };
        let version = ManifestVersion::of(manifest.as_ref());
        Ok((manifest, version))
    }

    fn replace(&self, expected: &ManifestVersion, commit: &Commit) -> Result<Replaced> {
        let _lock = self.lock()?;
        let unchanged = |(path, version): &(PathBuf, ManifestVersion)| -> Result<bool> {
            let path = self.dir.join(path);
            Ok(path.exists() && ManifestVersion::of(Some(&Manifest::load(&path)?)) == *version)
        };
        let mut fresh = self.load()?.1 == *expected;
        for merged in &commit.merged {
            fresh = fresh && unchanged(merged)?;
        }
        if !fresh || commit.publish.iter().any(|(_, name)| self.name_taken(name)) {
            return Ok(Replaced::Conflict);
        }
        let journal = self.dir.join(JOURNAL_NAME);
        write_atomically(&journal, |out| {
            Ok(out.write_all(journal_json(expected, commit).as_bytes())?)
        })?;
        if let Err(e) = self.publish(commit) {
            let new = ManifestVersion::of(Some(&commit.manifest));
            if !self.load().is_ok_and(|(_, now)| now == new) {
                self.unpublish(commit);
                let _ = remove_file(&journal);
                return Err(e);
            }
        }
        self.clean(commit)?;
        remove_file(&journal)?;
        sync_dir(&self.dir)?;
        Ok(Replaced::Done)
    }

    fn name_taken(&self, name: &str) -> bool {
        std::fs::symlink_metadata(self.dir.join(name)).is_ok()
    }
}

/// The journal of `commit`, replacing the manifest of version `base`.
fn journal_json(base: &ManifestVersion, commit: &Commit) -> String {
    let strings = |paths: &mut dyn Iterator<Item = &PathBuf>| -> Vec<String> {
        paths.map(|p| p.to_string_lossy().into_owned()).collect()
    };
    let publish: Vec<Value> = commit
        .publish
        .iter()
        .map(|(staged, name)| json!([staged.to_string_lossy(), name]))
        .collect();
    let merged: Vec<Value> = commit
        .merged
        .iter()
        .map(|(path, version)| json!([path.to_string_lossy(), version.to_json()]))
        .collect();
    json!({
        "base": base.to_json(),
        "manifest": commit.manifest.to_json(),
        "publish": publish,
        "merged": merged,
        "cleanup": strings(&mut commit.cleanup.iter()),
    })
    .to_string()
}

/// The base version and the commit of a journal. Every path must stay inside the dataset
/// directory: a staged shard and a directory to clean under `_pending/`, a merged pending
/// manifest named as one, a final name a shard's name.
fn parse_journal(text: &str) -> Result<(ManifestVersion, Commit)> {
    let bad = |what: &str| Error::invalid(FileFormat::Manifest, format!("commit journal: {what}"));
    let root: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let base = ManifestVersion::from_json(&root["base"]).ok_or_else(|| bad("base"))?;
    let manifest = Manifest::parse(root["manifest"].as_str().ok_or_else(|| bad("manifest"))?)?;
    let list = |key: &str| root[key].as_array().cloned().ok_or_else(|| bad(key));
    let pending = |v: &Value| -> Option<PathBuf> {
        let p = PathBuf::from(v.as_str()?);
        let mut parts = p.components();
        let inside = parts.next() == Some(Component::Normal(PENDING_DIR.as_ref()))
            && parts.all(|c| matches!(c, Component::Normal(_)));
        inside.then_some(p)
    };
    let mut commit = Commit {
        manifest,
        ..Commit::default()
    };
    for item in list("publish")? {
        let staged = pending(&item[0]).ok_or_else(|| bad("publish: a staged shard"))?;
        let name = item[1].as_str().filter(|n| is_shard_name(n));
        commit
            .publish
            .push((staged, name.ok_or_else(|| bad("publish: a name"))?.into()));
    }
    for item in list("merged")? {
        let name = item[0]
            .as_str()
            .filter(|n| n.starts_with(PENDING_PREFIX) && !n.contains(['/', '\\']));
        let version = ManifestVersion::from_json(&item[1]);
        match (name, version) {
            (Some(n), Some(v)) => commit.merged.push((n.into(), v)),
            _ => return Err(bad("merged")),
        }
    }
    for item in list("cleanup")? {
        commit
            .cleanup
            .push(pending(&item).ok_or_else(|| bad("cleanup"))?);
    }
    Ok((base, commit))
}

/// The start of a pending manifest's name, `_lodtensor.pending.PREFIX.json`.
pub(crate) const PENDING_PREFIX: &str = "_lodtensor.pending.";

/// Checks that `prefix` may begin a writer's shard names (`PREFIX-00000.arrow`): a plain
/// name not starting with `.` or `_`, without `/` or `.`.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) naming it.
pub(crate) fn check_prefix(prefix: &str) -> Result<()> {
    let probe = format!("{prefix}-00000.arrow");
    if prefix.is_empty() || !is_shard_name(&probe) || prefix.contains('.') {
        return Err(Error::invalid_argument(
            "ShardWriter",
            "prefix",
            format!("{prefix:?}"),
            "a plain name not starting with `.` or `_`, without `/` or `.`",
        ));
    }
    Ok(())
}

/// Removes the file at `path`, if there.
pub(crate) fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::from(e).in_file(path)),
        _ => Ok(()),
    }
}

/// Removes the directory at `path` if it is empty and no writer holds its lock (a staging
/// directory a writer just made is empty and its own).
pub(crate) fn remove_dir_if_idle(path: &Path) {
    if File::open(path).is_ok_and(|d| d.try_lock().is_ok()) {
        let _ = std::fs::remove_dir(path);
    }
}

/// Makes the directory's entries (renames, removals) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::from(e).in_file(dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::manifest::ShardEntry;

    fn manifest(files: &[&str]) -> Manifest {
        Manifest {
            columns: Vec::new(),
            shards: files
                .iter()
                .map(|f| ShardEntry {
                    file: (*f).into(),
                    rows: 0,
                    batches: 0,
                    bytes: 0,
                    crc32c: 0,
                    columns: Vec::new(),
                })
                .collect(),
            index: Vec::new(),
        }
    }

    #[test]
    fn a_stale_version_is_a_conflict_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        let (none, v0) = store.load().unwrap();
        assert!(none.is_none());
        let first = Commit {
            manifest: manifest(&[]),
            ..Commit::default()
        };
        assert_eq!(store.replace(&v0, &first).unwrap(), Replaced::Done);
        let later = Commit {
            manifest: manifest(&["a.arrow"]),
            ..Commit::default()
        };
        assert_eq!(store.replace(&v0, &later).unwrap(), Replaced::Conflict);
        assert_eq!(store.load().unwrap().0.unwrap(), manifest(&[]));
        assert!(!dir.path().join(JOURNAL_NAME).exists());
    }

    #[test]
    fn a_build_failing_under_another_commit_starts_over_from_it() {
        // Another commit moved the staged shards this build was reading: the build's error
        // (NotFound) gives way to a build from that commit's manifest. Before, the error
        // reached the caller (tests/it/concurrency.rs under load).
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        manifest(&[]).write(dir.path().join(MANIFEST_NAME)).unwrap();
        let mut builds = 0;
        let done = commit_with(&store, store.load().unwrap(), |current, _| {
            builds += 1;
            if builds == 1 {
                manifest(&["other.arrow"]).write(dir.path().join(MANIFEST_NAME))?;
                return Err(std::io::Error::from(std::io::ErrorKind::NotFound).into());
            }
            let mut next = current.cloned().unwrap();
            next.shards.extend(manifest(&["mine.arrow"]).shards);
            Ok(Commit {
                manifest: next,
                ..Commit::default()
            })
        })
        .unwrap();
        assert_eq!(builds, 2);
        assert_eq!(done, manifest(&["other.arrow", "mine.arrow"]));
        // Nothing changed: the error stands, after one build.
        let mut builds = 0;
        let failed = commit_with(&store, store.load().unwrap(), |_, _| {
            builds += 1;
            Err(std::io::Error::from(std::io::ErrorKind::NotFound).into())
        });
        assert!(failed.is_err());
        assert_eq!(builds, 1);
    }

    #[test]
    fn a_journal_left_by_a_killed_commit_is_rolled_forward() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        manifest(&[]).write(dir.path().join(MANIFEST_NAME)).unwrap();
        let base = store.load().unwrap().1;
        std::fs::create_dir_all(dir.path().join("_pending/w")).unwrap();
        std::fs::write(dir.path().join("_pending/w/x.arrow"), b"x").unwrap();
        std::fs::write(dir.path().join("b.arrow"), b"b").unwrap(); // renamed already
        let commit = Commit {
            manifest: manifest(&["a.arrow", "b.arrow"]),
            publish: vec![
                ("_pending/w/x.arrow".into(), "a.arrow".into()),
                ("_pending/w/y.arrow".into(), "b.arrow".into()),
            ],
            merged: Vec::new(),
            cleanup: vec!["_pending/w".into()],
        };
        let journal = journal_json(&base, &commit);
        std::fs::write(dir.path().join(JOURNAL_NAME), &journal).unwrap();
        drop(store.lock().unwrap());
        assert_eq!(store.load().unwrap().0.unwrap(), commit.manifest);
        assert!(dir.path().join("a.arrow").exists());
        assert!(!dir.path().join("_pending/w").exists());
        assert!(!dir.path().join(JOURNAL_NAME).exists());
        // A journal that names a path outside the dataset is refused, and nothing moves.
        let outside = journal.replace("_pending/w/x.arrow", "../x.arrow");
        std::fs::write(dir.path().join(JOURNAL_NAME), outside).unwrap();
        assert!(store.lock().is_err());
        // A stale journal (the manifest moved on) is dropped without touching anything.
        manifest(&["c.arrow"])
            .write(dir.path().join(MANIFEST_NAME))
            .unwrap();
        std::fs::write(dir.path().join(JOURNAL_NAME), &journal).unwrap();
        drop(store.lock().unwrap());
        assert_eq!(store.load().unwrap().0.unwrap(), manifest(&["c.arrow"]));
    }
}
