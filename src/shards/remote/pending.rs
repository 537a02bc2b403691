//! Independent writers of a dataset in object storage: their pending manifests
//! (`_lodtensor.pending.PREFIX.TOKEN.json`, one per [`upload_pending`](super::upload_pending),
//! never changed once created)
//! merged into the dataset's manifest by a conditional PUT ([`commit_with`]), listed
//! ([`pending_prefixes`]) and dropped with their shards ([`discard_pending`]), as
//! [`commit`](fn@crate::shards::commit) does for a local directory.

use std::collections::{HashMap, HashSet};

use crate::error::{ArgumentError, Error, ErrorKind, Result};
use crate::shards::commit::{commit_dir, merge};
use crate::shards::index::IndexEntry;
use crate::shards::location::Location;
use crate::shards::manifest::{ColumnSpec, MANIFEST_NAME, Manifest, ShardEntry};
use crate::shards::names::ShardNames;
use crate::shards::parse::{cut, manifest_error};
use crate::shards::remote::load_manifest_and_tag;
use crate::shards::remote::meta::{index_merged, pending_lengths};
use crate::shards::remote::upload::RemoteStore;
use crate::shards::remote_options::RemoteOptions;
use crate::shards::store::{
    Commit, ManifestStore, PENDING_PREFIX, check_prefix, commit_with as commit_protocol,
};

/// Merges every pending manifest of the dataset at `location` into its manifest: a
/// directory's as [`commit`](fn@crate::shards::commit) (`options` unused); a URL's
/// (reached as `options` say) replaced by a conditional PUT (`If-Match` on the ETag read,
/// `If-None-Match: *` for a new dataset; a commit that loses the race re-reads and merges
/// again, so concurrent commits and appenders never lose each other's shards), then
/// removes the pending manifests merged.
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
/// twice with different contents; the store's errors ([`ShardedDataset::open_with`](crate::shards::ShardedDataset::open_with)).
///
/// A pending manifest of a URL that cannot be trusted is skipped and left in the store
/// ([`commit_report`] says which).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, commit_with};
/// let options = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
/// let manifest = commit_with("s3://bucket/tokens/", &options)?;
/// println!("{} shards", manifest.shards.len());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn commit_with(location: impl Into<Location>, options: &RemoteOptions) -> Result<Manifest> {
    commit_report(location, options).map(|report| report.manifest)
}

/// Merges every pending manifest of the dataset at the URL `url` into its manifest.
///
/// # Errors
/// [`commit_with`]'s.
///
/// # Example
/// ```no_run
/// # #![allow(deprecated)]
/// use lodtensor::shards::{RemoteOptions, commit_url, commit_with};
/// let options = RemoteOptions::default();
/// let manifest = commit_url("s3://bucket/tokens/", &options)?;
/// // becomes
/// let manifest = commit_with("s3://bucket/tokens/", &options)?;
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[deprecated(since = "0.2.0", note = "use `commit_with(url, options)`")]
pub fn commit_url(url: &str, options: &RemoteOptions) -> Result<Manifest> {
    commit_url_reporting(url, options).map(|report| report.manifest)
}

/// What [`commit_report`] did: the manifest committed, and the pending manifests it
/// skipped and left in the store.
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, commit_report};
/// let report = commit_report("s3://bucket/tokens/", &RemoteOptions::default())?;
/// for skipped in &report.skipped {
///     eprintln!("not committed: {skipped}");             // names the pending manifest
/// }
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct CommitReport {
    /// The manifest committed.
    pub manifest: Manifest,
    /// Why each pending manifest skipped was: an error naming it (its URL) and what is
    /// wrong (unparsable, other columns, a shard missing from the store or of another size
    /// there, a shard the dataset lists with other contents).
    pub skipped: Vec<Error>,
}

/// [`commit_with`], reporting the pending manifests it skipped. Of a URL: one that cannot
/// be parsed, whose columns differ from the dataset's, that lists a shard the store does
/// not hold with the size it gives (the LIST the commit makes anyway says), or one the
/// dataset (or a pending manifest merged before it) lists with other contents, is left in
/// the store and reported; the others are committed. Of a directory: as
/// [`commit`](fn@crate::shards::commit), which skips nothing (a pending manifest it cannot
/// trust is an error), so `skipped` is empty.
///
/// # Errors
/// As [`commit_with`], but for the faults of single pending manifests of a URL.
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, commit_report};
/// let report = commit_report("s3://bucket/tokens/", &RemoteOptions::default())?;
/// println!("{} shards, {} pending manifests skipped", report.manifest.shards.len(), report.skipped.len());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn commit_report(
    location: impl Into<Location>,
    options: &RemoteOptions,
) -> Result<CommitReport> {
    match location.into() {
        Location::Path(dir) => Ok(CommitReport {
            manifest: commit_dir(&dir)?,
            skipped: Vec::new(),
        }),
        Location::Url(url) => commit_url_reporting(&url, options),
    }
}

/// [`commit_report`] of the URL `url`.
///
/// # Errors
/// [`commit_report`]'s.
///
/// # Example
/// ```no_run
/// # #![allow(deprecated)]
/// use lodtensor::shards::{RemoteOptions, commit_report, commit_url_report};
/// let options = RemoteOptions::default();
/// let report = commit_url_report("s3://bucket/tokens/", &options)?;
/// // becomes
/// let report = commit_report("s3://bucket/tokens/", &options)?;
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[deprecated(since = "0.2.0", note = "use `commit_report(url, options)`")]
pub fn commit_url_report(url: &str, options: &RemoteOptions) -> Result<CommitReport> {
    commit_url_reporting(url, options)
}

/// [`commit_report`] of a URL.
fn commit_url_reporting(url: &str, options: &RemoteOptions) -> Result<CommitReport> {
    let store = RemoteStore::new(url, options, MANIFEST_NAME)?;
    let mut current = store.load()?;
    let listed: HashMap<String, u64> = store.remote.list_sized("")?.into_iter().collect();
    let mut known = Known::of(current.0.as_ref());
    let (mut parts, mut skipped): (Vec<(String, Manifest)>, _) = (Vec::new(), Vec::new());
    for name in pending_names_of(listed.keys().cloned().collect()) {
        let part = match load_manifest_and_tag(&store.remote, &name) {
            Ok((Some(part), _)) => part,
            // Gone meanwhile: committed (or dropped) by someone else.
            Ok((None, _)) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::Io(_)) => return Err(e),
            Err(e) => {
                skipped.push(e);
                continue;
            }
        };
        match known.admit(&part, &listed) {
            Ok(()) => parts.push((name, part)),
            Err(e) => skipped.push(e.in_file(store.remote.url_of(&name))),
        }
    }
    if parts.is_empty() && current.0.is_none() {
        // Another commit may have taken the pending manifests since the manifest was read:
        // it put its manifest before deleting them, so reading it again finds it.
        current = store.load()?;
    }
    if let (Some(manifest), true) = (&current.0, parts.is_empty()) {
        let manifest = manifest.clone();
        return Ok(CommitReport { manifest, skipped });
    }
    let donors = pending_lengths(&store.remote, &parts)?;
    let manifest = commit_protocol(&store, current, |current, store| {
        let mut manifest = current.cloned();
        let mut names = manifest.as_ref().map(ShardNames::of).unwrap_or_default();
        // Nothing to publish: pending shards are in place already (no staged one is found).
        let mut publish = Vec::new();
        for (name, part) in &parts {
            let prefix = prefix_of(name);
            let merged = manifest.get_or_insert_with(|| Manifest {
                columns: part.columns.clone(),
                ..Manifest::default()
            });
            merge(
                merged,
                &mut names,
                part.clone(),
                prefix,
                &|_| None,
                store,
                &mut publish,
            )
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
    Ok(CommitReport { manifest, skipped })
}

/// What a commit knows before merging: the columns and the shards of the dataset and of
/// the pending manifests admitted so far.
struct Known {
    columns: Option<Vec<ColumnSpec>>,
    shards: HashMap<String, ShardEntry>,
}

impl Known {
    fn of(manifest: Option<&Manifest>) -> Self {
        Known {
            columns: manifest.map(|m| m.columns.clone()),
            shards: (manifest.iter().flat_map(|m| &m.shards))
                .map(|s| (s.file.clone(), s.clone()))
                .collect(),
        }
    }

    /// Admits `part` if its columns are the dataset's and each of its shards is listed
    /// already with the same contents, or is in the store (`listed`: names and sizes) with
    /// its size.
    fn admit(&mut self, part: &Manifest, listed: &HashMap<String, u64>) -> Result<()> {
        if let Some(columns) = &self.columns
            && *columns != part.columns
        {
            return Err(ArgumentError::SchemaMismatch {
                batch: 0,
                reason: "the pending manifest's columns are not the dataset's".to_owned(),
            }
            .into());
        }
        for (i, shard) in part.shards.iter().enumerate() {
            let bad = |field: &str, reason: String| {
                Err(manifest_error(&format!("shards[{i}].{field}"), reason))
            };
            match (self.shards.get(&shard.file), listed.get(&shard.file)) {
                (Some(known), _) if known == shard => {}
                (Some(_), _) => {
                    return bad(
                        "file",
                        format!("{} is listed with other contents", cut(&shard.file, 60)),
                    );
                }
                (None, None) => {
                    return bad(
                        "file",
                        format!("{} is not in the store", cut(&shard.file, 60)),
                    );
                }
                (None, Some(&size)) if size != shard.bytes => {
                    return bad(
                        "bytes",
                        format!(
                            "is {}, the object in the store is {size} bytes",
                            shard.bytes
                        ),
                    );
                }
                (None, Some(_)) => {}
            }
        }
        self.columns.get_or_insert_with(|| part.columns.clone());
        (self.shards).extend(part.shards.iter().map(|s| (s.file.clone(), s.clone())));
        Ok(())
    }
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
/// [`ArgumentError::InvalidArgument`] for a bad
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
    let (mut own, mut dropped, mut objects, mut others) =
        (Vec::new(), Vec::new(), Vec::new(), HashSet::new());
    for name in pending_names(&store)? {
        let part = load_manifest_and_tag(&store.remote, &name);
        match (prefix_of(&name) == prefix, part) {
            (true, Ok((part, _))) => {
                if let Some(part) = part {
                    objects.extend(part.index);
                    dropped.extend(part.shards);
                }
                own.push(name);
            }
            // Unreadable: dropped, its shards unknown (no commit would list them).
            (true, Err(e)) if !matches!(e.kind(), ErrorKind::Io(_)) => own.push(name),
            (true, Err(e)) => return Err(e),
            (false, Ok((part, _))) => {
                others.extend(part.into_iter().flat_map(|p| p.shards).map(|s| s.file));
            }
            (false, Err(_)) => {}
        }
    }
    for name in &own {
        store.remote.delete(name)?;
    }
    let (dataset, _) = store.load()?;
    let listed = |file: &str| {
        dataset
            .iter()
            .flat_map(|m| &m.shards)
            .any(|s| s.file == file)
    };
    // Only names of the writer's own prefix, which no manifest lists.
    let own_name = |file: &str| {
        file.strip_prefix(prefix)
            .is_some_and(|r| r.starts_with('-'))
    };
    for shard in dropped
        .iter()
        .filter(|s| own_name(&s.file) && !listed(&s.file))
    {
        if !others.contains(&shard.file) {
            store.remote.delete(&shard.file)?;
        }
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
pub(super) fn prefix_of(name: &str) -> &str {
    let rest = &name[PENDING_PREFIX.len()..name.len() - ".json".len()];
    rest.split('.').next().unwrap_or(rest)
}

/// The names of the pending manifests at the store's dataset, sorted.
fn pending_names(store: &RemoteStore) -> Result<Vec<String>> {
    Ok(pending_names_of(store.remote.list(PENDING_PREFIX)?))
}

/// The names of pending manifests among `names`, sorted.
pub(super) fn pending_names_of(mut names: Vec<String>) -> Vec<String> {
    names.retain(|n| {
        n.starts_with(PENDING_PREFIX)
            && n.ends_with(".json")
            && n.len() > PENDING_PREFIX.len() + ".json".len()
    });
    names.sort();
    names
}
