//! The commit step of independent writers: their pending manifests merged into the
//! dataset's manifest, through the one commit protocol (`store.rs`).

use std::path::{Path, PathBuf};

use crate::error::{ArgumentError, Elided};
use crate::error::{Error, Result};
use crate::shards::index::{index_files, put_local};
use crate::shards::location::{Location, commit_url_default};
use crate::shards::manifest::{Manifest, ShardEntry};
use crate::shards::names::ShardNames;
use crate::shards::store::{
    Commit, LocalStore, ManifestStore, ManifestVersion, PENDING_DIR, PENDING_PREFIX, commit_with,
};

/// Merges every pending manifest (`_lodtensor.pending.*.json`, written by
/// [`ShardWriter::pending`](super::ShardWriter::pending) writers) at `location` into the
/// dataset's manifest: under the dataset's lock, their shards move from `_pending/` to
/// their final names and the manifest is replaced atomically; then the pending manifests
/// are removed. Pending shards follow the dataset's in the order of the pending manifests'
/// names. Writers appending meanwhile are merged too, never lost (`docs/shards.md`).
///
/// Idempotent: a commit killed halfway is rolled forward by the next commit (or writer, or
/// [`vacuum`](fn@super::vacuum)), and committing again with nothing pending changes
/// nothing.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset, commit};
/// use arrow_array::types::Int32Type;
/// let dir = tempfile::tempdir()?;
/// for worker in ["w0", "w1"] {
///     let t = LodTensor::from_lengths::<Int32Type>(&[vec![2, 1]], vec![1, 2, 3], vec![])?;
///     let mut writer = ShardWriter::pending(dir.path(), ShardOptions::default().with_prefix(worker))?;
///     writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
///     writer.finish()?;
/// }
/// let manifest = commit(dir.path())?;
/// assert_eq!(manifest.shards.len(), 2);
/// assert_eq!(ShardedDataset::open(dir.path())?.num_rows(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `location` is a directory (a [`Path`], or a string that is not a URL) or, with the
/// `remote` feature, a URL, committed with the environment's credentials as
/// `commit_with(location, &RemoteOptions::default())` does.
///
/// # Errors
/// [`ArgumentError::SchemaMismatch`] when a pending manifest's columns differ from the
/// dataset's; [`FormatError::Manifest`](crate::FormatError::Manifest) when a shard is listed
/// twice with different contents; the manifests' errors; a URL without the `remote`
/// feature: [`ArgumentError::InvalidArgument`] naming it.
pub fn commit(location: impl Into<Location>) -> Result<Manifest> {
    match location.into() {
        Location::Path(dir) => commit_dir(&dir),
        Location::Url(url) => commit_url_default(&url),
    }
}

/// [`commit`] of the directory `dir`.
pub(crate) fn commit_dir(dir: &Path) -> Result<Manifest> {
    let store = LocalStore::new(dir);
    let current = store.load_current()?;
    if let Some(manifest) = &current.0
        && pending_manifests(dir)?.is_empty()
    {
        return Ok(manifest.clone());
    }
    commit_with(&store, current, |current, store| build(dir, current, store))
}

/// The commit of every pending manifest in `dir` after the shards of `current`.
fn build(dir: &Path, current: Option<&Manifest>, store: &LocalStore) -> Result<Commit> {
    let mut manifest = current.cloned();
    let mut names = manifest.as_ref().map(ShardNames::of).unwrap_or_default();
    let mut commit = Commit::default();
    for name in pending_manifests(dir)? {
        let path = dir.join(&name);
        let part = Manifest::load(&path)?;
        let version = ManifestVersion::of(Some(&part));
        let prefix = &name[PENDING_PREFIX.len()..name.len() - ".json".len()];
        let staged = Path::new(PENDING_DIR).join(format!("{prefix}.pending"));
        let merged = manifest.get_or_insert_with(|| Manifest {
            columns: part.columns.clone(),
            ..Manifest::default()
        });
        let staged_in = |file: &str| Some(staged.join(file)).filter(|s| dir.join(s).exists());
        let publish = &mut commit.publish;
        merge(merged, &mut names, part, prefix, &staged_in, store, publish)
            .map_err(|e| e.in_file(&path))?;
        commit.merged.push((name.into(), version));
        commit.cleanup.push(staged);
    }
    let Some(manifest) = manifest else {
        return Err(ArgumentError::NoSchema.into());
    };
    commit.manifest = manifest;
    let put = &mut put_local(dir);
    index_files(current, &mut commit.manifest, dir, &commit.publish, put)?;
    Ok(commit)
}

/// The names of the pending manifests in `dir`, sorted.
fn pending_manifests(dir: &Path) -> Result<Vec<String>> {
    let in_dir = |e: std::io::Error| Error::from(e).in_file(dir);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(in_dir)? {
        let name = entry.map_err(in_dir)?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(PENDING_PREFIX) && name.ends_with(".json") {
            out.push(name.into_owned());
        }
    }
    out.sort();
    Ok(out)
}

/// Appends the shards of `part` that `into` does not list yet: a staged one (`staged_in`
/// finds it under `_pending/`) under its own name if free, else the next free name of
/// `prefix`, added to `publish`; one already in place (in a directory, written by a version
/// of this crate that staged nothing; in a store, where every pending shard is) as it is.
/// `names` are `into`'s, kept up to date.
pub(super) fn merge(
    into: &mut Manifest,
    names: &mut ShardNames,
    part: Manifest,
    prefix: &str,
    staged_in: &dyn Fn(&str) -> Option<PathBuf>,
    store: &impl ManifestStore,
    publish: &mut Vec<(PathBuf, String)>,
) -> Result<()> {
    if part.columns != into.columns {
        return Err(ArgumentError::SchemaMismatch {
            batch: 0,
            reason: format!(
                "pending columns {}, the dataset's {}",
                Elided(format_args!("{:?}", part.columns)),
                Elided(format_args!("{:?}", into.columns))
            ),
        }
        .into());
    }
    for shard in part.shards {
        if let Some(staged) = staged_in(&shard.file) {
            let name = names.free(prefix, Some(&shard.file), store);
            publish.push((staged, name.clone()));
            let entry = ShardEntry {
                file: name,
                ..shard
            };
            names.push(into, entry);
            continue;
        }
        match names.position(&shard.file).map(|i| &into.shards[i]) {
            Some(listed) if *listed == shard => {}
            Some(_) => {
                return Err(crate::error::FormatError::Manifest {
                    field: "shards".to_owned(),
                    reason: format!(
                        "{:?} is listed by the dataset with other contents",
                        shard.file
                    ),
                }
                .into());
            }
            None => names.push(into, shard),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_fifty_thousand_pending_shards_costs_linear_time() {
        // Each shard's name was found by scanning the manifest (twice, and parsing every
        // name): 50,000 pending shards took 31-45 s in a release build, minutes here.
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        let shard = |file: String| ShardEntry {
            file,
            rows: 1,
            batches: 1,
            bytes: 8,
            crc32c: 0,
            columns: Vec::new(),
        };
        let mut into = Manifest::default();
        for i in 0..25_000 {
            into.shards.push(shard(format!("w1-{i:05}.arrow")));
        }
        let mut part = Manifest::default();
        for i in 0..50_000 {
            part.shards
                .push(shard(format!("w1-{:05}.arrow", i / 2 + 20_000)));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut names = ShardNames::of(&into);
            let (mut publish, staged) = (Vec::new(), |f: &str| Some(PathBuf::from(f)));
            merge(
                &mut into,
                &mut names,
                part,
                "w1",
                &staged,
                &store,
                &mut publish,
            )
            .unwrap();
            tx.send(into).unwrap();
        });
        let merged = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("hung in quadratic work");
        assert_eq!(merged.shards.len(), 75_000);
        let unique: std::collections::HashSet<&str> =
            merged.shards.iter().map(|s| s.file.as_str()).collect();
        assert_eq!(unique.len(), 75_000);
        assert_eq!(merged.shards[25_000].file, "w1-25000.arrow");
        assert_eq!(merged.shards[74_999].file, "w1-74999.arrow");
    }
}
