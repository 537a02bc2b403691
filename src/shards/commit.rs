//! The commit step of independent writers: their pending manifests merged into the
//! dataset's manifest.

use std::path::{Path, PathBuf};

use crate::error::ArgumentError;
use crate::error::{Error, Result};
use crate::shards::manifest::{MANIFEST_NAME, Manifest};

/// Merges every pending manifest (`_lodtensor.pending.*.json`, written by
/// [`ShardWriter::pending`](super::ShardWriter::pending) writers) in `dir` into the
/// dataset's manifest, replaced atomically, then removes the pending manifests. Pending
/// shards follow the dataset's in the order of the pending manifests' names.
///
/// Idempotent: a commit interrupted after the manifest was replaced finds the shards
/// already listed and only removes the pending manifests.
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
/// # Errors
/// [`ArgumentError::SchemaMismatch`] when a pending manifest's columns differ from the
/// dataset's; [`FormatError::Manifest`](crate::FormatError::Manifest) when a shard is listed
/// twice with different contents; the manifests' errors.
pub fn commit(dir: impl AsRef<Path>) -> Result<Manifest> {
    let dir = dir.as_ref();
    let main = dir.join(MANIFEST_NAME);
    let mut manifest = match main.exists() {
        true => Some(Manifest::load(&main)?),
        false => None,
    };
    let pending = pending_manifests(dir)?;
    for path in &pending {
        let part = Manifest::load(path)?;
        let merged = manifest.get_or_insert_with(|| Manifest {
            columns: part.columns.clone(),
            shards: Vec::new(),
        });
        merge(merged, part).map_err(|e| e.in_file(path))?;
    }
    let Some(manifest) = manifest else {
        return Err(ArgumentError::NoSchema.into());
    };
    manifest.write(&main)?;
    for path in &pending {
        std::fs::remove_file(path).map_err(|e| Error::from(e).in_file(path))?;
    }
    Ok(manifest)
}

/// The pending manifests in `dir`, sorted by name.
fn pending_manifests(dir: &Path) -> Result<Vec<PathBuf>> {
    let in_dir = |e: std::io::Error| Error::from(e).in_file(dir);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(in_dir)? {
        let name = entry.map_err(in_dir)?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("_lodtensor.pending.") && name.ends_with(".json") {
            out.push(dir.join(&*name));
        }
    }
    out.sort();
    Ok(out)
}

/// Appends the shards of `part` that `into` does not list yet.
fn merge(into: &mut Manifest, part: Manifest) -> Result<()> {
    if part.columns != into.columns {
        return Err(ArgumentError::SchemaMismatch {
            batch: 0,
            reason: format!(
                "pending columns {:?}, the dataset's {:?}",
                part.columns, into.columns
            ),
        }
        .into());
    }
    for shard in part.shards {
        match into.shards.iter().find(|s| s.file == shard.file) {
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
            None => into.shards.push(shard),
        }
    }
    Ok(())
}
