//! A remote dataset's lengths index (format-spec §7.2): its objects read through the node's
//! cache (one download per node, whatever the processes), the index of shards merged from
//! pending manifests taken from those manifests' own objects, and [`index_url`].
//!
//! ```text
//! CACHE_DIR/s3/bucket/prefix/
//!   _meta/_lodtensor.json.1f2e3d4c.52311                       a manifest version (ETag's CRC, size)
//!   _meta/5c7e1a2b-_lodtensor.index.00000000.5c7e1a2b.ipc    an index object, checked
//!   _meta/5c7e1a2b-_lodtensor.index.00000000.5c7e1a2b.lock     held while a process downloads it
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::shards::index::{
    IndexEntry, IndexObject, ShardLengths, index_appended, index_dir, rebuild,
};
use crate::shards::location::Location;
use crate::shards::manifest::{MANIFEST_NAME, Manifest, ShardEntry};
use crate::shards::reader::mismatch;
use crate::shards::remote::cache::ShardCache;
use crate::shards::remote::client::Remote;
use crate::shards::remote::lock::ShardLock;
use crate::shards::remote::private::How;
use crate::shards::remote::upload::{RemoteStore, put_object};
use crate::shards::remote_options::RemoteOptions;
use crate::shards::store::{Commit, ManifestStore, commit_with};

/// The directory of a dataset's cache that holds its metadata (manifest versions, index
/// objects): apart from the shards' entries, so that the cache limit neither counts nor
/// evicts them.
const META_DIR: &str = "_meta";

/// The index object `entry`'s bytes, from the node's cache in `dir` if there (and of its
/// size and CRC-32C), else downloaded once, checked and kept there (under a lock, so that
/// the processes of a node download it once).
///
/// # Errors
/// The store's errors naming the object's URL; [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch)
/// naming it when its bytes are not the manifest's; the cache disk's errors.
pub(crate) fn fetch_object(cache: &ShardCache, dir: &Path, entry: &IndexEntry) -> Result<Bytes> {
    let (parent, dir) = (dir, &dir.join(META_DIR));
    super::private::make_private(parent, dir)?;
    let path = dir.join(format!("{:08x}-{}", entry.crc32c, entry.file));
    if let Some(bytes) = cached(&path, entry) {
        return Ok(bytes);
    }
    let lock_path = path.with_extension("lock");
    let _lock = ShardLock::acquire(&lock_path).map_err(|e| Error::from(e).in_file(&lock_path))?;
    if let Some(bytes) = cached(&path, entry) {
        return Ok(bytes);
    }
    let remote = cache.remote();
    let url = remote.url_of(&entry.file);
    let Some((bytes, _)) = remote.get(&entry.file, entry.bytes)? else {
        let e = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the manifest's index object is missing",
        );
        return Err(Error::from(e).in_file(url));
    };
    cache.metadata_requests.fetch_add(1, Ordering::Relaxed);
    cache
        .metadata_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    mismatch("bytes", entry.bytes, bytes.len() as u64)
        .and_then(|()| mismatch("crc32c", entry.crc32c, crc32c::crc32c(&bytes)))
        .map_err(|e| e.in_file(&url))?;
    crate::io::atomic::write_atomically(&path, |out| Ok(out.write_all(&bytes)?))?;
    Ok(bytes)
}

/// The cache entry at `path` if it holds `entry`'s bytes.
fn cached(path: &Path, entry: &IndexEntry) -> Option<Bytes> {
    let mut file = super::private::open(path, How::Read).ok()?;
    if file.metadata().ok()?.len() != entry.bytes {
        return None;
    }
    let mut bytes = Vec::with_capacity(entry.bytes as usize);
    std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
    (crc32c::crc32c(&bytes) == entry.crc32c).then(|| Bytes::from(bytes))
}

/// The lengths of the shards of the pending manifests `parts` (name, manifest), from their
/// own index objects (those whose index is complete), by shard name.
///
/// # Errors
/// The store's errors; an object that disagrees with its pending manifest, naming it.
pub(super) fn pending_lengths(
    remote: &Remote,
    parts: &[(String, Manifest)],
) -> Result<HashMap<String, ShardLengths>> {
    let mut out = HashMap::new();
    for (_, part) in parts {
        if !crate::shards::index::is_complete(part) {
            continue;
        }
        let mut first = 0;
        for entry in &part.index {
            let url = remote.url_of(&entry.file);
            let Some((bytes, _)) = remote.get(&entry.file, entry.bytes)? else {
                break;
            };
            let shards = &part.shards[first..first + entry.shards];
            let location = |i: usize| remote.url_of(&shards[i].file).into();
            let object = IndexObject::read(&bytes, entry, shards, &part.columns, &location)
                .map_err(|e| e.in_file(&url))?;
            object.each_shard(|name, row| {
                out.insert(name.to_owned(), row);
            });
            first += entry.shards;
        }
    }
    Ok(out)
}

/// [`index_appended`] for a commit of pending shards: their lengths from `donors`
/// ([`pending_lengths`]), the object written to the store.
pub(super) fn index_merged(
    base: Option<&Manifest>,
    manifest: &mut Manifest,
    donors: &HashMap<String, ShardLengths>,
    remote: &Remote,
) -> Result<()> {
    let mut find = |entry: &ShardEntry| Ok(donors.get(&entry.file).cloned());
    index_appended(base, manifest, &mut find, &mut put_object(remote))
}

/// Adds or rebuilds the lengths index of the sharded dataset at `location`: a directory as
/// [`index`](fn@crate::shards::index) (`options` unused), or a URL reached as `options`
/// say, every shard downloaded through the node's cache (checked against the manifest) and
/// measured, one index object put, then the manifest replaced by a conditional PUT.
/// Returns the manifest committed.
///
/// # Errors
/// [`index`](fn@crate::shards::index)'s for a directory; for a URL, the store's errors; a
/// shard that disagrees with the manifest, naming it; a manifest that changed meanwhile to
/// list shards the dataset opened did not (`ErrorKind::Io` `Interrupted`: run it again).
///
/// # Example
/// ```no_run
/// use lodtensor::shards::{RemoteOptions, index_with};
/// let manifest = index_with("s3://bucket/tokens/", &RemoteOptions::default())?;
/// assert_eq!(manifest.index.iter().map(|e| e.shards).sum::<usize>(), manifest.shards.len());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn index_with(location: impl Into<Location>, options: &RemoteOptions) -> Result<Manifest> {
    match location.into() {
        Location::Path(dir) => index_dir(&dir),
        Location::Url(url) => index_remote(&url, options),
    }
}

/// Adds or rebuilds the lengths index of the sharded dataset at the URL `url`.
///
/// # Errors
/// [`index_with`]'s.
///
/// # Example
/// ```no_run
/// # #![allow(deprecated)]
/// use lodtensor::shards::{RemoteOptions, index_url, index_with};
/// let manifest = index_url("s3://bucket/tokens/", &RemoteOptions::default())?;
/// // becomes
/// let manifest = index_with("s3://bucket/tokens/", &RemoteOptions::default())?;
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[deprecated(since = "0.2.0", note = "use `shards::index_with(url, options)`")]
pub fn index_url(url: &str, options: &RemoteOptions) -> Result<Manifest> {
    index_remote(url, options)
}

/// The lengths index of the dataset at the URL `url` added or rebuilt, the store reached as
/// `options` say.
pub(crate) fn index_remote(url: &str, options: &RemoteOptions) -> Result<Manifest> {
    let data = super::open_remote(url, options)?;
    let store = RemoteStore::new(url, options, MANIFEST_NAME)?;
    let current = store.load()?;
    let files = data.files();
    let position: HashMap<(&str, u32), usize> = (files.manifest.shards.iter().enumerate())
        .map(|(i, s)| ((s.file.as_str(), s.crc32c), i))
        .collect();
    let columns = files.manifest.columns.clone();
    let mut measured: HashMap<usize, ShardLengths> = HashMap::new();
    commit_with(&store, current, |current, store| {
        let Some(manifest) = current else {
            let e = std::io::Error::new(std::io::ErrorKind::NotFound, "no sharded dataset");
            return Err(Error::from(e).in_file(url));
        };
        let mut measure = |_: usize, entry: &ShardEntry| {
            let Some(&i) = position.get(&(entry.file.as_str(), entry.crc32c)) else {
                let e = std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the manifest changed while indexing: run it again",
                );
                return Err(Error::from(e).in_file(url));
            };
            if let Some(row) = measured.get(&i) {
                return Ok(row.clone());
            }
            let file = files.open(i, true, None)?;
            let row = crate::shards::index::measure(&file, &columns);
            drop(file);
            files.release(i);
            let row = row.map_err(|e| e.in_file(files.location(i)))?;
            measured.insert(i, row.clone());
            Ok(row)
        };
        let manifest = rebuild(manifest, &mut measure, &mut put_object(&store.remote))?;
        Ok(Commit {
            manifest,
            ..Commit::default()
        })
    })
}

/// The dataset's manifest through the node's cache in `dir`: a HEAD request gives its
/// ETag and size (the freshness check); the copy of that version in the cache, if there,
/// is read; else the manifest is downloaded once (under a lock, so that the processes of
/// a node download it once) and kept under its version's name. `None` when the store
/// gives no ETag (the caller reads the manifest itself).
///
/// ```text
/// CACHE_DIR/s3/bucket/prefix/_meta/_lodtensor.json.ETAGCRC.SIZE   one version of the manifest
/// ```
///
/// # Errors
/// The store's errors naming the manifest's URL; the manifest's; the cache disk's.
pub(super) fn cached_manifest(remote: &Remote, dir: &Path) -> Result<Option<Manifest>> {
    let (parent, dir) = (dir, &dir.join(META_DIR));
    let url = remote.url_of(MANIFEST_NAME);
    let Some((size, Some(tag))) = remote.head(MANIFEST_NAME)? else {
        return Ok(None);
    };
    let name = |size: u64, tag: &str| {
        let crc = crc32c::crc32c(tag.as_bytes());
        dir.join(format!("{MANIFEST_NAME}.{crc:08x}.{size}"))
    };
    let path = name(size, &tag);
    let read = |path: &Path| -> Option<Manifest> {
        let mut text = String::new();
        let mut file = super::private::open(path, How::Read).ok()?;
        std::io::Read::read_to_string(&mut file, &mut text).ok()?;
        (text.len() as u64 == size).then(|| Manifest::parse(&text).ok())?
    };
    if let Some(manifest) = read(&path) {
        return Ok(Some(manifest));
    }
    super::private::make_private(parent, dir)?;
    let lock_path = dir.join(format!("{MANIFEST_NAME}.lock"));
    let _lock = ShardLock::acquire(&lock_path).map_err(|e| Error::from(e).in_file(&lock_path))?;
    if let Some(manifest) = read(&path) {
        return Ok(Some(manifest));
    }
    let limit = crate::shards::manifest::MAX_MANIFEST_BYTES;
    let Some((bytes, tag)) = remote.get(MANIFEST_NAME, limit)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        Error::invalid(crate::error::FileFormat::Manifest, e.to_string()).in_file(&url)
    })?;
    let manifest = Manifest::parse(text).map_err(|e| e.in_file(&url))?;
    // Kept under the version downloaded (which may be newer than the one the HEAD saw).
    if let Some(tag) = tag {
        let path = name(bytes.len() as u64, &tag);
        crate::io::atomic::write_atomically(&path, |out| Ok(out.write_all(&bytes)?))?;
    }
    Ok(Some(manifest))
}

/// Where a shard's kept metadata (footer and record-batch messages) is in the node's cache
/// in `dir`: named by the shard's size and CRC-32C in the manifest as well as its name, so
/// that a shard rewritten under the same name never reads another's.
fn layout_path(dir: &Path, entry: &ShardEntry) -> std::path::PathBuf {
    let name = format!("{:08x}-{}-{}.layout", entry.crc32c, entry.bytes, entry.file);
    dir.join(META_DIR).join(name)
}

/// The bytes kept for shard `entry`'s metadata in the cache in `dir`, if any and of at
/// most `entry.bytes` bytes: untrusted (the caller checks them as bytes from the store).
pub(crate) fn kept_layout(dir: &Path, entry: &ShardEntry) -> Option<Bytes> {
    use std::io::Read as _;
    let file = super::private::open(&layout_path(dir, entry), How::Read).ok()?;
    let mut bytes = Vec::new();
    file.take(entry.bytes).read_to_end(&mut bytes).ok()?;
    Some(Bytes::from(bytes))
}

/// Keeps `bytes` as shard `entry`'s metadata in the cache in `dir`, atomically (another
/// process reads the whole entry or none).
///
/// # Errors
/// The cache disk's errors.
pub(crate) fn keep_layout(dir: &Path, entry: &ShardEntry, bytes: &[u8]) -> Result<()> {
    super::private::make_private(dir, &dir.join(META_DIR))?;
    let path = layout_path(dir, entry);
    crate::io::atomic::write_atomically(&path, |out| Ok(out.write_all(bytes)?))
}
