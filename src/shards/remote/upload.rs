//! Writes to a dataset in object storage: shards written locally (by a [`ShardWriter`](crate::shards::ShardWriter))
//! uploaded and committed through the one commit protocol (`store.rs`), the manifest
//! replaced by a conditional PUT.
//!
//! Each shard is created under its final name with `If-None-Match: *`, so a name another
//! writer took is a conflict, never an overwrite; then the manifest is written with
//! `If-None-Match: *` (a new dataset) or `If-Match: <the ETag read>` (an update). A writer
//! that loses either race removes the shards it created in that attempt, re-reads the
//! manifest and tries again with its shards after the ones now listed.
//!
//! A pending writer ([`ShardWriter::pending`](crate::shards::ShardWriter::pending) to a
//! URL) does the same with a new pending manifest of its
//! own (`_lodtensor.pending.PREFIX.TOKEN.json`, created once, never changed) in place of
//! the dataset's: its shards take their final names at once (a store has no rename, and a
//! copy would move every byte again), and are part of the dataset once
//! [`commit_with`](super::commit_with) lists them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bytes::Bytes;

use crate::error::{ArgumentError, DatasetError, Error, Result};
use crate::shards::index::index_files;
use crate::shards::manifest::{MANIFEST_NAME, Manifest, ShardEntry};
use crate::shards::names::ShardNames;
use crate::shards::remote::client::{Put, Remote};
use crate::shards::remote::load_manifest_and_tag;
use crate::shards::remote_options::RemoteOptions;
use crate::shards::store::{
    Commit, ManifestStore, ManifestVersion, PENDING_PREFIX, Replaced, check_prefix, commit_with,
};
use crate::shards::writer::next_index;

/// A dataset's manifest in object storage, replaced by conditional PUTs.
pub(super) struct RemoteStore {
    pub(super) remote: Remote,
    /// The manifest this store replaces: the dataset's, or a pending writer's.
    manifest_name: String,
    /// The ETag of each manifest version read, for the `If-Match` of its replacement.
    tags: Mutex<Vec<(ManifestVersion, String)>>,
}

impl ManifestStore for RemoteStore {
    fn load(&self) -> Result<(Option<Manifest>, ManifestVersion)> {
        let (manifest, tag) = load_manifest_and_tag(&self.remote, &self.manifest_name)?;
        let version = ManifestVersion::of(manifest.as_ref());
        if let Some(tag) = tag {
            let mut tags = self.tags.lock().unwrap_or_else(|e| e.into_inner());
            tags.push((version.clone(), tag));
        }
        Ok((manifest, version))
    }

    fn replace(&self, expected: &ManifestVersion, commit: &Commit) -> Result<Replaced> {
        let put = match expected == &ManifestVersion::of(None) {
            true => Put::Create,
            false => {
                let tags = self.tags.lock().unwrap_or_else(|e| e.into_inner());
                match tags.iter().rev().find(|(v, _)| v == expected) {
                    Some((_, tag)) => Put::Update(tag.clone()),
                    None => return Ok(Replaced::Conflict),
                }
            }
        };
        let mut created = Vec::new();
        let result = self.publish(commit, put, &mut created);
        if !matches!(result, Ok(Replaced::Done)) {
            for name in created {
                let _ = self.remote.delete(&name);
            }
        }
        result
    }

    fn name_taken(&self, name: &str) -> bool {
        // An error (the store unreachable) counts as taken: the conditional PUT decides.
        self.remote.exists(name).unwrap_or(true)
    }
}

impl RemoteStore {
    /// The store of the manifest `manifest_name` of the dataset at `url`.
    pub(super) fn new(url: &str, options: &RemoteOptions, manifest_name: &str) -> Result<Self> {
        Ok(RemoteStore {
            remote: Remote::new(url, options.storage_options())?,
            manifest_name: manifest_name.to_owned(),
            tags: Mutex::new(Vec::new()),
        })
    }

    /// Creates each shard under its final name, then replaces the manifest; `created` gets
    /// the shards created, for the caller to remove if the commit does not happen.
    fn publish(&self, commit: &Commit, put: Put, created: &mut Vec<String>) -> Result<Replaced> {
        for (local, name) in &commit.publish {
            let bytes = std::fs::read(local).map_err(|e| Error::from(e).in_file(local))?;
            if !self.remote.put(name, Bytes::from(bytes), Put::Create)? {
                return Ok(Replaced::Conflict);
            }
            created.push(name.clone());
        }
        let manifest = Bytes::from(commit.manifest.to_json());
        match self.remote.put(&self.manifest_name, manifest, put)? {
            true => Ok(Replaced::Done),
            false => Ok(Replaced::Conflict),
        }
    }
}

/// Uploads the sharded dataset in the local directory `dir` (written by a
/// [`ShardWriter`](crate::shards::ShardWriter)) to the dataset at `url`: a new dataset
/// there, or, if `append`, its shards after those of the dataset there. Shards keep their
/// names where free (else the next free `PREFIX-NNNNN.arrow`); the manifest is committed by
/// a conditional PUT, so concurrent writers to one URL never lose each other's shards
/// (`docs/remote.md`). Returns the manifest committed.
///
/// # Errors
/// [`DatasetError::AlreadyThere`] when creating where a dataset is,
/// [`DatasetError::NothingToAppendTo`] when appending where none is; [`ArgumentError::SchemaMismatch`] when the
/// columns differ from the dataset's; the store's errors ([`ShardedDataset::open_with`](crate::shards::ShardedDataset::open_with)).
///
/// # Example
/// ```no_run
/// # #![allow(deprecated)]
/// use lodtensor::shards::{RemoteOptions, ShardOptions, ShardWriter, upload_shards};
/// # let ds = lodtensor::Dataset::try_new(vec![lodtensor::Column::new("ids", lodtensor::doc_fixtures::ids())])?;
/// let options = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
/// let local = tempfile::tempdir()?;
/// let mut writer = ShardWriter::create(local.path(), ShardOptions::default())?;
/// writer.write(&ds)?;
/// writer.finish()?;
/// upload_shards(local.path(), "s3://bucket/tokens/", &options, true)?;
/// // becomes: the writer stages the shards itself, `finish` uploads and commits them
/// let shards = ShardOptions::default().with_remote_options(options.clone());
/// let mut writer = ShardWriter::append("s3://bucket/tokens/", shards)?;
/// writer.write(&ds)?;
/// writer.finish()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[deprecated(
    since = "0.2.0",
    note = "write to the URL: `ShardWriter::create(url, options)` or `ShardWriter::append(url, options)` \
            (`ShardOptions::with_remote_options`), whose `finish` uploads"
)]
pub fn upload_shards(
    dir: &Path,
    url: &str,
    options: &RemoteOptions,
    append: bool,
) -> Result<Manifest> {
    let target = match append {
        true => UploadAs::Append,
        false => UploadAs::Create,
    };
    upload(dir, url, options, target)
}

/// Uploads the sharded dataset in the local directory `dir` (written by a
/// [`ShardWriter`](crate::shards::ShardWriter) whose prefix is `prefix`) as the pending
/// shards of the writer `prefix` of the dataset at `url`, as
/// [`ShardWriter::pending`](crate::shards::ShardWriter::pending) does in a directory: each
/// shard created under a name of its own (`PREFIX-NNNNN.arrow`, after the prefix's names
/// in the store) that no manifest lists yet, then recorded in a new pending manifest
/// `_lodtensor.pending.PREFIX.TOKEN.json` (`TOKEN` unique to the upload; created once and
/// never changed, so a commit can remove it once merged). [`commit_with`](super::commit_with)
/// then lists them in the dataset's manifest. Returns the pending manifest.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`] for a bad
/// prefix; [`ArgumentError::SchemaMismatch`] when the columns differ from the pending
/// manifest's; the store's errors ([`ShardedDataset::open_with`](crate::shards::ShardedDataset::open_with)).
///
/// # Example
/// ```no_run
/// # #![allow(deprecated)]
/// use lodtensor::shards::{RemoteOptions, ShardOptions, ShardWriter, commit_with, upload_pending};
/// # let ds = lodtensor::Dataset::try_new(vec![lodtensor::Column::new("ids", lodtensor::doc_fixtures::ids())])?;
/// let options = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
/// for worker in ["w0", "w1"] {
///     let local = tempfile::tempdir()?;
///     let mut writer = ShardWriter::create(local.path(), ShardOptions::default().with_prefix(worker))?;
///     writer.write(&ds)?;
///     writer.finish()?;
///     upload_pending(local.path(), "s3://bucket/tokens/", &options, worker)?;
/// }
/// // becomes: each worker's pending writer to the URL uploads its shards at `finish`
/// for worker in ["w2", "w3"] {
///     let shards = ShardOptions::default().with_prefix(worker).with_remote_options(options.clone());
///     let mut writer = ShardWriter::pending("s3://bucket/tokens/", shards)?;
///     writer.write(&ds)?;
///     writer.finish()?;
/// }
/// assert_eq!(commit_with("s3://bucket/tokens/", &options)?.shards.len(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[deprecated(
    since = "0.2.0",
    note = "write to the URL: `ShardWriter::pending(url, options.with_prefix(prefix))` \
            (`ShardOptions::with_remote_options`), whose `finish` uploads"
)]
pub fn upload_pending(
    dir: &Path,
    url: &str,
    options: &RemoteOptions,
    prefix: &str,
) -> Result<Manifest> {
    upload(dir, url, options, UploadAs::Pending(prefix))
}

/// What an upload makes of the local dataset's shards.
#[derive(Clone, Copy)]
pub(super) enum UploadAs<'a> {
    /// A new dataset.
    Create,
    /// Shards after the dataset's.
    Append,
    /// Pending shards of the writer of this prefix.
    Pending(&'a str),
    /// A dataset replacing the one there (if any): its shards keep their objects.
    Overwrite,
}

/// Uploads the dataset in the local directory `dir` (written by a
/// [`ShardWriter`](crate::shards::ShardWriter)) to `url` as `target` says: what a
/// [`ShardWriter`](crate::shards::ShardWriter) to a URL does at `finish`, and the
/// deprecated [`upload_shards`] and [`upload_pending`].
///
/// # Errors
/// [`upload_shards`]'s and [`upload_pending`]'s.
pub(super) fn upload(
    dir: &Path,
    url: &str,
    options: &RemoteOptions,
    target: UploadAs,
) -> Result<Manifest> {
    if let UploadAs::Pending(prefix) = target {
        check_prefix(prefix)?;
    }
    let local = Manifest::load(dir.join(MANIFEST_NAME))?;
    let name = match target {
        UploadAs::Pending(prefix) => format!("{PENDING_PREFIX}{prefix}.{}.json", unique_token()),
        _ => MANIFEST_NAME.to_owned(),
    };
    let store = RemoteStore::new(url, options, &name)?;
    let current = store.load()?;
    // A pending writer's names follow those of its prefix in the store (one listing).
    let start = match target {
        UploadAs::Pending(prefix) => {
            let names = store.remote.list(&format!("{prefix}-"))?;
            next_index(names.iter().map(String::as_str), prefix)
        }
        _ => 0,
    };
    let target_url = store.remote.url_of(&name);
    commit_with(&store, current, |current, store| {
        let mut manifest = match (current, target) {
            (Some(_), UploadAs::Create) => {
                return Err(Error::from(DatasetError::AlreadyThere).in_file(&target_url));
            }
            (None, UploadAs::Append) => {
                return Err(Error::from(DatasetError::NothingToAppendTo).in_file(&target_url));
            }
            (Some(m), UploadAs::Append | UploadAs::Pending(_)) => m.clone(),
            (_, _) => Manifest {
                columns: local.columns.clone(),
                ..Manifest::default()
            },
        };
        if manifest.columns != local.columns {
            return Err(ArgumentError::SchemaMismatch {
                batch: 0,
                reason: format!("the dataset's columns are {:?}", manifest.columns),
            }
            .into());
        }
        let mut publish = Vec::with_capacity(local.shards.len());
        let mut names = ShardNames::of(&manifest);
        for (i, entry) in local.shards.iter().enumerate() {
            let (prefix, wanted) = match target {
                UploadAs::Pending(prefix) => (prefix, format!("{prefix}-{:05}.arrow", start + i)),
                _ => {
                    let prefix = entry.file.rsplit_once('-').map_or("part", |(p, _)| p);
                    (prefix, entry.file.clone())
                }
            };
            let name = names.free(prefix, Some(&wanted), store);
            publish.push((dir.join(&entry.file), name.clone()));
            let entry = ShardEntry {
                file: name,
                ..entry.clone()
            };
            names.push(&mut manifest, entry);
        }
        let put = &mut put_object(&store.remote);
        let extended = current.filter(|_| !matches!(target, UploadAs::Overwrite));
        index_files(extended, &mut manifest, Path::new(""), &publish, put)?;
        Ok(Commit {
            manifest,
            publish,
            merged: Vec::new(),
            cleanup: Vec::<PathBuf>::new(),
        })
    })
}

/// Writes an index object into the store (`If-None-Match: *`: an object of that name has
/// the same bytes, its name holding their CRC-32C).
pub(super) fn put_object(remote: &Remote) -> impl FnMut(&str, Vec<u8>) -> Result<()> + '_ {
    move |name, bytes| remote.put(name, Bytes::from(bytes), Put::Create).map(drop)
}

/// A token no other upload of any process uses: the time, the process id and a count.
fn unique_token() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}-{count}", std::process::id())
}
