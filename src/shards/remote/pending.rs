//! Independent writers of a dataset in object storage: their pending manifests
//! (`_lodtensor.pending.PREFIX.TOKEN.json`, one per [`upload_pending`](super::upload_pending),
//! never changed once created)
//! merged into the dataset's manifest by a conditional PUT ([`commit_url`]), listed
//! ([`pending_prefixes`]) and dropped with their shards ([`discard_pending`]), as
//! [`commit`](crate::shards::commit) does for a local directory.

use crate::error::{ArgumentError, Result};
use crate::shards::commit::merge;
use crate::shards::index::IndexEntry;
use crate::shards::manifest::{MANIFEST_NAME, Manifest};
use crate::shards::remote::RemoteOptions;
use crate::shards::remote::load_manifest_and_tag;
use crate::shards::remote::meta::{index_merged, pending_lengths};
use crate::shards::remote::upload::RemoteStore;
use crate::shards::store::{Commit, ManifestStore, PENDING_PREFIX, check_prefix, commit_with};

/// Merges every pending manifest of the dataset at `url` into its manifest, replaced by a
/// conditional PUT (`If-Match` on the ETag read, `If-None-Match: *` for a new dataset; a
/// commit that loses the race re-reads and merges again, so concurrent commits and
/// appenders never lose each other's shards), then removes the pending manifests merged.
/// Pending shards follow the dataset's in the order of the pending manifests' names; they
/// are already in the store under their final names, so nothing is copied. Idempotent: a
/// shard already listed is not listed again, and committing with nothing pending changes
/// nothing. Returns the manifest committed.
///
/// A pending manifest is never changed once created (each upload makes a new one), so the
/// commit removes only what it merged; a writer's later uploads wait for the next commit.
///
/// # Errors
/// [`ArgumentError::NoSchema`] when there is neither a dataset nor a pending manifest;
/// [`ArgumentError::SchemaMismatch`] when a pending manifest's columns differ from the
/// dataset's; [`FormatError::Manifest`](crate::FormatError::Manifest) when a shard is listed
/// twice with different contents; the store's errors ([`ShardedDataset::open_url`](crate::shards::ShardedDataset::open_url)).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, commit_url};
/// let options = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
/// let manifest = commit_url("s3://bucket/tokens/", &options)?;
/// println!("{} shards", manifest.shards.len());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn commit_url(url: &str, options: &RemoteOptions) -> Result<Manifest> {
    let store = RemoteStore::new(url, options, MANIFEST_NAME)?;
    let mut current = store.load()?;
    let mut parts: Vec<(String, Manifest)> = Vec::new();
    for name in pending_names(&store)? {
        // Gone meanwhile: committed (or dropped) by someone else.
        if let (Some(part), _) = load_manifest_and_tag(&store.remote, &name)? {
            parts.push((name, part));
        }
    }
    if parts.is_empty() && current.0.is_none() {
        // Another commit may have taken the pending manifests since the manifest was read:
        // it put its manifest before deleting them, so reading it again finds it.
        current = store.load()?;
    }
    if let (Some(manifest), true) = (&current.0, parts.is_empty()) {
        return Ok(manifest.clone());
    }
    let donors = pending_lengths(&store.remote, &parts)?;
    let manifest = commit_with(&store, current, |current, store| {
        let mut manifest = current.cloned();
        // Nothing to publish: pending shards are in place already (no staged one is found).
        let mut publish = Vec::new();
        for (name, part) in &parts {
            let prefix = prefix_of(name);
            let merged = manifest.get_or_insert_with(|| Manifest {
                columns: part.columns.clone(),
                ..Manifest::default()
            });
            merge(merged, part.clone(), prefix, &|_| None, store, &mut publish)
                .map_err(|e| e.in_file(store.remote.url_of(name)))?;
        }
        let Some(mut manifest) = manifest else {
            return Err(ArgumentError::NoSchema.into());
        };
        index_merged(current, &mut manifest, &donors, &store.remote)?;
        Ok(Commit {
            manifest,
            ..Commit::default()
        })
    })?;
    for (name, part) in &parts {
        store.remote.delete(name)?;
        // The pending manifest's index objects, unless the dataset's index names them.
        for entry in part.index.iter().filter(|e| !manifest.index.contains(e)) {
            store.remote.delete(&entry.file)?;
        }
    }
    Ok(manifest)
}

/// The prefixes of the pending writers of the dataset at `url` (those with a pending
/// manifest `_lodtensor.pending.PREFIX.TOKEN.json` there), sorted, each once.
///
/// # Errors
/// The store's errors ([`ShardedDataset::open_url`](crate::shards::ShardedDataset::open_url)).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, pending_prefixes};
/// let options = RemoteOptions::default();
/// for prefix in pending_prefixes("s3://bucket/tokens/", &options)? {
///     println!("{prefix} waits for a commit");
/// }
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn pending_prefixes(url: &str, options: &RemoteOptions) -> Result<Vec<String>> {
    let store = RemoteStore::new(url, options, MANIFEST_NAME)?;
    let mut prefixes: Vec<String> = (pending_names(&store)?.iter())
        .map(|n| prefix_of(n).to_owned())
        .collect();
    prefixes.sort();
    prefixes.dedup();
    Ok(prefixes)
}

/// Drops the pending writer `prefix` of the dataset at `url`: each of its pending manifests
/// first (so that no commit lists its shards from then on), then each shard they list that
/// the dataset's manifest does not. What a writer that failed or was retried left; not to be
/// run while a commit that may have read the pending manifest is under way.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for a bad
/// prefix; the store's errors ([`ShardedDataset::open_url`](crate::shards::ShardedDataset::open_url)).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, discard_pending};
/// discard_pending("s3://bucket/tokens/", &RemoteOptions::default(), "w3")?;
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn discard_pending(url: &str, options: &RemoteOptions, prefix: &str) -> Result<()> {
    check_prefix(prefix)?;
    let store = RemoteStore::new(url, options, MANIFEST_NAME)?;
    let (mut dropped, mut objects) = (Vec::new(), Vec::new());
    for name in pending_names(&store)?
        .iter()
        .filter(|n| prefix_of(n) == prefix)
    {
        if let (Some(part), _) = load_manifest_and_tag(&store.remote, name)? {
            store.remote.delete(name)?;
            objects.extend(part.index);
            dropped.extend(part.shards);
        }
    }
    let (dataset, _) = store.load()?;
    let listed = |file: &str| {
        dataset
            .iter()
            .flat_map(|m| &m.shards)
            .any(|s| s.file == file)
    };
    for shard in dropped.iter().filter(|s| !listed(&s.file)) {
        store.remote.delete(&shard.file)?;
    }
    // Its index objects too, unless the dataset's index names one (the same bytes).
    let indexed = |e: &IndexEntry| dataset.iter().any(|m| m.index.contains(e));
    for entry in objects.iter().filter(|e| !indexed(e)) {
        store.remote.delete(&entry.file)?;
    }
    Ok(())
}

/// The manifest of the dataset at `url`, or `None` when there is none (no dataset yet),
/// read from the store without a cache.
///
/// # Errors
/// The manifest's errors; the store's ([`ShardedDataset::open_url`](crate::shards::ShardedDataset::open_url)).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, read_manifest_url};
/// let manifest = read_manifest_url("s3://bucket/tokens/", &RemoteOptions::default())?;
/// assert!(manifest.is_none(), "nothing there yet");
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn read_manifest_url(url: &str, options: &RemoteOptions) -> Result<Option<Manifest>> {
    let store = RemoteStore::new(url, options, MANIFEST_NAME)?;
    Ok(store.load()?.0)
}

/// The writer's prefix in the name of a pending manifest (`_lodtensor.pending.PREFIX.TOKEN.json`,
/// or a directory's `_lodtensor.pending.PREFIX.json`: a prefix has no `.`).
fn prefix_of(name: &str) -> &str {
    let rest = &name[PENDING_PREFIX.len()..name.len() - ".json".len()];
    rest.split('.').next().unwrap_or(rest)
}

/// The names of the pending manifests at the store's dataset, sorted.
fn pending_names(store: &RemoteStore) -> Result<Vec<String>> {
    let mut names = store.remote.list(PENDING_PREFIX)?;
    names.retain(|n| n.ends_with(".json") && n.len() > PENDING_PREFIX.len() + ".json".len());
    Ok(names)
}
