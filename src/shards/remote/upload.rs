//! Writes to a dataset in object storage: shards written locally (by a [`ShardWriter`](crate::shards::ShardWriter))
//! uploaded and committed through the one commit protocol (`store.rs`), the manifest
//! replaced by a conditional PUT.
//!
//! Each shard is created under its final name with `If-None-Match: *`, so a name another
//! writer took is a conflict, never an overwrite; then the manifest is written with
//! `If-None-Match: *` (a new dataset) or `If-Match: <the ETag read>` (an update). A writer
//! that loses either race removes the shards it created in that attempt, re-reads the
//! manifest and tries again with its shards after the ones now listed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bytes::Bytes;

use crate::error::{ArgumentError, Error, Result};
use crate::shards::manifest::{MANIFEST_NAME, Manifest, ShardEntry};
use crate::shards::remote::RemoteOptions;
use crate::shards::remote::client::{Put, Remote};
use crate::shards::remote::load_manifest_and_tag;
use crate::shards::store::{Commit, ManifestStore, ManifestVersion, Replaced, commit_with};
use crate::shards::writer::free_name;

/// A dataset's manifest in object storage, replaced by conditional PUTs.
struct RemoteStore {
    remote: Remote,
    /// The ETag of each manifest version read, for the `If-Match` of its replacement.
    tags: Mutex<Vec<(ManifestVersion, String)>>,
}

impl ManifestStore for RemoteStore {
    fn load(&self) -> Result<(Option<Manifest>, ManifestVersion)> {
        let (manifest, tag) = load_manifest_and_tag(&self.remote)?;
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
        match self.remote.put(MANIFEST_NAME, manifest, put)? {
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
/// [`ErrorKind::Io`](crate::ErrorKind::Io) `AlreadyExists` when creating where a dataset is,
/// `NotFound` when appending where none is; [`ArgumentError::SchemaMismatch`] when the
/// columns differ from the dataset's; the store's errors ([`ShardedDataset::open_url`](crate::shards::ShardedDataset::open_url)).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, ShardOptions, ShardWriter, upload_shards};
/// # let ds = lodtensor::Dataset::try_new(vec![lodtensor::Column::new("ids", lodtensor::doc_fixtures::ids())])?;
/// let local = tempfile::tempdir()?;
/// let mut writer = ShardWriter::create(local.path(), ShardOptions::default())?;
/// writer.write(&ds)?;
/// writer.finish()?;
/// let options = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
/// upload_shards(local.path(), "s3://bucket/tokens/", &options, true)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn upload_shards(
    dir: &Path,
    url: &str,
    options: &RemoteOptions,
    append: bool,
) -> Result<Manifest> {
    let local = Manifest::load(dir.join(MANIFEST_NAME))?;
    let store = RemoteStore {
        remote: Remote::new(url, options.storage_options())?,
        tags: Mutex::new(Vec::new()),
    };
    let current = store.load()?;
    let target = store.remote.url_of(MANIFEST_NAME);
    commit_with(&store, current, |current, store| {
        let mut manifest = match (current, append) {
            (Some(_), false) => {
                return Err(io_error(
                    std::io::ErrorKind::AlreadyExists,
                    "a sharded dataset is already there: append to it instead",
                    &target,
                ));
            }
            (None, true) => {
                return Err(io_error(
                    std::io::ErrorKind::NotFound,
                    "no sharded dataset to append to",
                    &target,
                ));
            }
            (Some(m), true) => m.clone(),
            (None, false) => Manifest {
                columns: local.columns.clone(),
                shards: Vec::new(),
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
        for entry in &local.shards {
            let prefix = entry.file.rsplit_once('-').map_or("part", |(p, _)| p);
            let name = free_name(&manifest, prefix, Some(&entry.file), store);
            publish.push((dir.join(&entry.file), name.clone()));
            manifest.shards.push(ShardEntry {
                file: name,
                ..entry.clone()
            });
        }
        Ok(Commit {
            manifest,
            publish,
            merged: Vec::new(),
            cleanup: Vec::<PathBuf>::new(),
        })
    })
}

/// An I/O error of `kind` naming `url`.
fn io_error(kind: std::io::ErrorKind, what: &str, url: &str) -> Error {
    Error::from(std::io::Error::new(kind, what.to_owned())).in_file(url)
}
