//! `vacuum_with`: removes what killed or failed writers left in a sharded dataset, in a
//! directory ([`vacuum`](fn@crate::shards::vacuum)) or in object storage, where no lock
//! keeps writers out and the grace period alone tells a writer that died from one at work.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use crate::error::{DatasetError, Error, ErrorKind, Result};
use crate::shards::location::Location;
use crate::shards::manifest::MANIFEST_NAME;
use crate::shards::remote::client::Remote;
use crate::shards::remote::load_manifest_and_tag;
use crate::shards::remote::pending::{pending_names_of, prefix_of};
use crate::shards::remote_options::RemoteOptions;
use crate::shards::store::PENDING_PREFIX;
use crate::shards::vacuum::{is_shard_name, vacuum};

/// Removes the shards of the sharded dataset at `location` that no manifest lists and that
/// were last modified more than `grace` ago; returns what went (a directory's paths, a
/// store's URLs), sorted. A directory's as [`vacuum`](fn@crate::shards::vacuum) (`options`
/// unused). In object storage (reached as `options` say), what killed writers leave:
/// shards of a writer killed before it recorded them, of a writer that lost a commit's
/// race and could not remove them, and the shards an overwrite left behind. Those are the
/// objects directly under the dataset's prefix named as shards (`*.arrow`, not starting
/// with `.` or `_`) that neither the dataset's manifest nor a pending manifest lists (all
/// read after the listing, so a shard recorded before then stays; the pending manifests
/// first, as a commit writes the dataset's manifest before it removes the pending ones it
/// merged). A pending manifest that
/// cannot be parsed keeps every shard of its writer's prefix. Nothing else is touched:
/// manifests, index objects, other objects.
///
/// A store has no lock: a writer creates its shards before it records them, so `grace`
/// must be longer than any writer takes (the default of the command and of Python's
/// `lt.vacuum` is one day), as for other formats' orphan-file removal.
///
/// # Errors
/// [`DatasetError::NotADataset`] when the location holds neither a manifest nor a pending
/// manifest (nor, in a directory, `_pending/`); a manifest that cannot be read (nothing is
/// removed then); the store's errors, naming the object.
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, vacuum_with};
/// use std::time::Duration;
/// let day = Duration::from_secs(86_400);
/// for url in vacuum_with("s3://bucket/tokens/", &RemoteOptions::default(), day)? {
///     println!("removed {url}");
/// }
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn vacuum_with(
    location: impl Into<Location>,
    options: &RemoteOptions,
    grace: Duration,
) -> Result<Vec<String>> {
    match location.into() {
        Location::Path(dir) => Ok((vacuum(dir, grace)?.iter())
            .map(|p| p.to_string_lossy().into_owned())
            .collect()),
        Location::Url(url) => vacuum_url(&Remote::new(&url, options.storage_options())?, grace),
    }
}

/// [`vacuum_with`] of the dataset at `remote`.
fn vacuum_url(remote: &Remote, grace: Duration) -> Result<Vec<String>> {
    let cutoff = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let objects = remote.list_modified("")?;
    let ours = |n: &str| n == MANIFEST_NAME || n.starts_with(PENDING_PREFIX);
    if !objects.iter().any(|(name, ..)| ours(name)) {
        return Err(Error::from(DatasetError::NotADataset).in_file(remote.url_of("")));
    }
    let old: Vec<String> = (objects.into_iter())
        .filter(|(name, _, modified)| is_shard_name(name) && *modified <= cutoff)
        .map(|(name, ..)| name)
        .collect();
    if old.is_empty() {
        return Ok(Vec::new());
    }
    let kept = Kept::read(remote)?;
    let mut removed = Vec::new();
    for name in old.iter().filter(|name| !kept.keeps(name)) {
        remote.delete(name)?;
        removed.push(remote.url_of(name));
    }
    Ok(removed)
}

/// The shards a vacuum keeps: those the manifests list, and every shard of a writer whose
/// pending manifest cannot be parsed.
struct Kept {
    listed: HashSet<String>,
    prefixes: Vec<String>,
}

impl Kept {
    /// Reads the dataset's manifest and the pending manifests at `remote`.
    ///
    /// # Errors
    /// The dataset's manifest's errors; the store's errors for either.
    fn read(remote: &Remote) -> Result<Kept> {
        let mut kept = Kept {
            listed: HashSet::new(),
            prefixes: Vec::new(),
        };
        // The pending manifests first: a commit writes the dataset's manifest, then removes
        // the pending ones it merged, so a shard is in one or the other read this way.
        for name in pending_names_of(remote.list(PENDING_PREFIX)?) {
            match load_manifest_and_tag(remote, &name) {
                Ok((part, _)) => {
                    (kept.listed).extend(part.into_iter().flat_map(|m| m.shards).map(|s| s.file));
                }
                Err(e) if matches!(e.kind(), ErrorKind::Io(_)) => return Err(e),
                Err(_) => kept.prefixes.push(prefix_of(&name).to_owned()),
            }
        }
        let (dataset, _) = load_manifest_and_tag(remote, MANIFEST_NAME)?;
        (kept.listed).extend(dataset.into_iter().flat_map(|m| m.shards).map(|s| s.file));
        Ok(kept)
    }

    /// Whether the shard `name` stays.
    fn keeps(&self, name: &str) -> bool {
        let of_prefix = |p: &String| {
            name.strip_prefix(p.as_str())
                .is_some_and(|r| r.starts_with('-'))
        };
        self.listed.contains(name) || self.prefixes.iter().any(of_prefix)
    }
}
