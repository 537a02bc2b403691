//! The node's shard cache: each shard of a remote dataset downloaded once into the cache
//! directory, then mapped as a local shard.
//!
//! ```text
//! CACHE_DIR/s3/bucket/prefix/            one directory per dataset URL
//!     1f2e3d4c-part-00000.arrow          a shard, complete: its CRC-32C, then its name
//!     1f2e3d4c-part-00000.arrow.lock     held while a process downloads that shard
//!     1f2e3d4c-part-00000.arrow.tmp-…    a download under way (or killed: never trusted)
//!     1f2e3d4c-part-00001.arrow          a compressed shard, decompressed once
//!     1f2e3d4c-part-00001.arrow.sum      its size and CRC-32C, written before it appears
//! ```
//!
//! A shard is downloaded under its lock to a temporary name, in parallel range requests
//! whose bodies are written into the file as they arrive (no copy of the whole shard in
//! memory), its size and CRC-32C checked against the manifest in the same pass, synced, then
//! renamed to its entry name: an entry exists only complete and checked. A process that
//! finds the entry uses it; one that finds the lock held waits for the holder, then finds
//! the entry. The holder of a lock removes the temporary files a killed download left.
//! The checksum is part of the entry's name, so a shard rewritten in the store under the
//! same name is a new entry.
//!
//! A compressed shard (Arrow IPC body compression) is checked as downloaded (size and
//! CRC-32C of the compressed object, the manifest's), then decompressed once into an
//! uncompressed file of the same record batches, which becomes the entry: every later open
//! maps it without a copy. The manifest's checksum is not that file's, so its own size and
//! CRC-32C go into the sidecar `ENTRY.sum` before the entry is renamed into place; opens
//! check the entry against those.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures_util::StreamExt as _;

use crate::error::{Error, Result};
use crate::io::ipc_decode::has_compressed_batches;
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::write_uncompressed;
use crate::shards::manifest::ShardEntry;
use crate::shards::reader::mismatch;
use crate::shards::remote::client::Remote;
use crate::shards::remote::lock::ShardLock;
use crate::shards::remote::private::{self, How};
use crate::shards::remote::ranges::stream_range;
use crate::shards::remote::sidecar::{Crc32cWriter, crc32c_of, read_sum, write_sum};
use crate::shards::source::CacheStats;
use crate::shards::store::sync_dir;

/// The size of one range request of a download.
const CHUNK_BYTES: u64 = 16 << 20;
/// How many range requests of one download run at once.
const PARALLEL_RANGES: usize = 4;
/// The most shards downloaded ahead at once (small shards: a thread each). Sixteen rather
/// than eight: with 8 MiB shards the first epoch from moto took a median 0.42 s against
/// 0.47 s (docs/performance.md); the bytes ahead stay within the prefetch budget.
const MAX_PREFETCH_SHARDS: usize = 16;

/// The cache of one remote dataset on this node.
#[derive(Debug)]
pub(crate) struct ShardCache {
    remote: Remote,
    /// This dataset's directory in the cache.
    dir: PathBuf,
    /// The manifest's shards, in order.
    shards: Vec<ShardEntry>,
    /// The most bytes of complete entries the directory keeps, if bounded.
    limit: Option<u64>,
    /// The most bytes of shards downloaded ahead of the one asked for.
    prefetch_bytes: u64,
    /// The entries this process uses (mapped: removing them would free nothing), with how
    /// many of its readers use each, and the shards being downloaded ahead.
    in_use: Mutex<HashMap<String, usize>>,
    prefetching: Mutex<HashSet<usize>>,
    bytes_downloaded: AtomicU64,
    shards_downloaded: AtomicU64,
    shards_cached: AtomicU64,
    shards_evicted: AtomicU64,
    pub(super) metadata_bytes: AtomicU64,
    pub(super) metadata_requests: AtomicU64,
    pub(super) range_bytes: AtomicU64,
    pub(super) range_requests: AtomicU64,
    /// The form of each shard's entry this process opened last: its checksum to verify.
    forms: Mutex<HashMap<usize, Form>>,
    /// The entries whose bytes this process downloaded or checked (others' may have gone
    /// bad since they were written: a disk, or a hand).
    checked: Mutex<HashSet<String>>,
    /// The bytes this process's downloads under way will occupy (their temporary files and
    /// decompressed forms, which the directory's scan does not count), room made for them.
    reserved: Mutex<u64>,
    /// The largest ratio of a decompressed entry's size to its shard's, in 1/1024ths (1024
    /// until a compressed shard is seen): what a shard not downloaded yet is expected to
    /// occupy, for the prefetch budget.
    expansion: AtomicU64,
    /// The temporary files of downloads (`NAME.tmp-PID`) in the directory when this process
    /// first downloaded, by entry name: killed downloads' once their entry's lock is held.
    /// Listed once, not at every download (a directory of 100,000 entries).
    temporaries: Mutex<Option<HashMap<String, Vec<PathBuf>>>>,
}

/// Room made in the cache for bytes about to be written, counted until dropped.
struct Reservation<'c> {
    reserved: &'c Mutex<u64>,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut reserved = self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        *reserved = reserved.saturating_sub(self.bytes);
    }
}

/// What a cache entry's bytes must be: the manifest's size and CRC-32C, or, for a
/// compressed shard decompressed into the cache, those of the uncompressed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Form {
    /// The entry's size in bytes.
    pub bytes: u64,
    /// The entry's CRC-32C.
    pub crc32c: u32,
    /// Whether it is a compressed shard's decompressed form.
    pub decompressed: bool,
}

impl Form {
    /// The form of `entry` as the store holds it.
    fn stored(entry: &ShardEntry) -> Self {
        Form {
            bytes: entry.bytes,
            crc32c: entry.crc32c,
            decompressed: false,
        }
    }
}

impl ShardCache {
    /// The cache of the dataset at `remote` with `shards`, in `dir` (created if missing),
    /// keeping at most `limit` bytes there and downloading up to `prefetch_bytes` ahead.
    pub(crate) fn new(
        remote: Remote,
        dir: PathBuf,
        shards: Vec<ShardEntry>,
        limit: Option<u64>,
        prefetch_bytes: u64,
    ) -> Result<Self> {
        std::fs::create_dir_all(&dir).map_err(|e| Error::from(e).in_file(&dir))?;
        Ok(ShardCache {
            remote,
            dir,
            shards,
            limit,
            prefetch_bytes,
            in_use: Mutex::new(HashMap::new()),
            prefetching: Mutex::new(HashSet::new()),
            bytes_downloaded: AtomicU64::new(0),
            shards_downloaded: AtomicU64::new(0),
            shards_cached: AtomicU64::new(0),
            shards_evicted: AtomicU64::new(0),
            metadata_bytes: AtomicU64::new(0),
            metadata_requests: AtomicU64::new(0),
            range_bytes: AtomicU64::new(0),
            range_requests: AtomicU64::new(0),
            forms: Mutex::new(HashMap::new()),
            checked: Mutex::new(HashSet::new()),
            reserved: Mutex::new(0),
            expansion: AtomicU64::new(1024),
            temporaries: Mutex::new(None),
        })
    }

    /// Opens shard `index`'s entry with `open` (downloaded first unless there; given the
    /// path and the form its bytes must have), then starts
    /// downloading the shards read next: `next` in that order (a loader's plan), else the
    /// shards after `index`. An entry another process evicted between the two steps is
    /// downloaded again. The entry counts as in use until [`ShardCache::release`].
    ///
    /// # Errors
    /// [`ShardCache::fetch`]'s errors; `open`'s.
    pub(crate) fn open<T>(
        self: &Arc<Self>,
        index: usize,
        open: impl Fn(&Path, &Form) -> Result<T>,
        next: Option<&[usize]>,
    ) -> Result<T> {
        let entry = &self.shards[index];
        let name = entry_name(entry);
        *self.lock(&self.in_use).entry(name).or_insert(0) += 1;
        let mut attempt = 0;
        let opened = loop {
            let (path, form) = match self.fetch(entry) {
                Ok(found) => found,
                Err(e) => break Err(e),
            };
            self.lock(&self.forms).insert(index, form);
            match open(&path, &form) {
                Err(e) if attempt == 0 && is_not_found(&e) => attempt += 1,
                opened => break opened.map_err(|e| e.in_file(&path)),
            }
        };
        if opened.is_err() {
            self.release(index); // Not in use: a failed open maps nothing.
            return opened;
        }
        match next {
            Some(next) => self.prefetch(next.iter().copied()),
            None => self.prefetch(index + 1..self.shards.len()),
        }
        opened
    }

    /// Marks one use of shard `index`'s entry (by [`ShardCache::open`]) as over: once no
    /// reader of this process uses it, it may be evicted.
    pub(crate) fn release(&self, index: usize) {
        let name = entry_name(&self.shards[index]);
        let mut in_use = self.lock(&self.in_use);
        if let Some(count) = in_use.get_mut(&name) {
            *count -= 1;
            if *count == 0 {
                in_use.remove(&name);
            }
        }
    }

    /// Downloads, on threads of their own, the shards `order` names, in that order, that
    /// are not in the cache yet, up to the prefetch budget (counted in the bytes the
    /// entries occupy: a compressed shard's decompressed form, as expected from the ones
    /// seen).
    fn prefetch(self: &Arc<Self>, order: impl Iterator<Item = usize>) {
        let mut budget = match self.limit {
            Some(limit) => self.prefetch_bytes.min(limit / 4),
            None => self.prefetch_bytes,
        };
        for next in order {
            let Some(entry) = self.shards.get(next) else {
                return;
            };
            let found = on_disk(&self.dir.join(entry_name(entry)), entry);
            let bytes = found.map_or_else(|| self.expected_bytes(entry), |form| form.bytes);
            if bytes > budget {
                return;
            }
            budget -= bytes;
            if found.is_some() {
                continue;
            }
            let mut prefetching = self.lock(&self.prefetching);
            if prefetching.len() >= MAX_PREFETCH_SHARDS {
                return;
            }
            if !prefetching.insert(next) {
                continue;
            }
            drop(prefetching);
            let cache = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("lodtensor-prefetch".into())
                .spawn(move || {
                    // A failure is met again, and reported, when the shard is asked for.
                    let _ = cache.fetch(&cache.shards[next]);
                    cache.lock(&cache.prefetching).remove(&next);
                });
            if spawned.is_err() {
                self.lock(&self.prefetching).remove(&next);
            }
        }
    }

    /// The bytes `entry`'s cache entry is expected to occupy before it is downloaded: its
    /// size times the largest expansion of a compressed shard seen.
    fn expected_bytes(&self, entry: &ShardEntry) -> u64 {
        let ratio = u128::from(self.expansion.load(Ordering::Relaxed));
        u64::try_from(u128::from(entry.bytes) * ratio / 1024).unwrap_or(u64::MAX)
    }

    /// Notes the size of `entry`'s form `form` for [`ShardCache::expected_bytes`].
    fn learn(&self, entry: &ShardEntry, form: &Form) {
        if form.decompressed && entry.bytes > 0 {
            let ratio = u128::from(form.bytes) * 1024 / u128::from(entry.bytes);
            let ratio = u64::try_from(ratio).unwrap_or(u64::MAX);
            self.expansion.fetch_max(ratio, Ordering::Relaxed);
        }
    }

    /// `mutex` locked (a panic elsewhere does not poison these sets' meaning).
    fn lock<'m, T>(&self, mutex: &'m Mutex<T>) -> std::sync::MutexGuard<'m, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The form of shard `index`'s entry as this process last opened it (the manifest's
    /// before it is opened), and the path or URL to name when its bytes are not that.
    pub(crate) fn checksum_of(&self, index: usize) -> (Form, PathBuf) {
        let entry = &self.shards[index];
        let form = self.lock(&self.forms).get(&index).copied();
        // The bytes checked are the cache entry's: its path is named, not the store's.
        let path = self.dir.join(entry_name(entry));
        (form.unwrap_or_else(|| Form::stored(entry)), path)
    }

    /// The dataset's place in the store.
    pub(crate) fn remote(&self) -> &Remote {
        &self.remote
    }

    /// This dataset's directory in the cache.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Shard `index`'s manifest entry and the path of its cache entry (which may not be
    /// there).
    pub(super) fn entry(&self, index: usize) -> (&ShardEntry, PathBuf) {
        let entry = &self.shards[index];
        (entry, self.dir.join(entry_name(entry)))
    }

    /// Whether shard `index`'s complete entry is in the cache.
    pub(super) fn holds(&self, index: usize) -> bool {
        let (entry, path) = self.entry(index);
        on_disk(&path, entry).is_some()
    }

    /// What the cache did so far.
    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            bytes_downloaded: self.bytes_downloaded.load(Ordering::Relaxed),
            shards_downloaded: self.shards_downloaded.load(Ordering::Relaxed),
            shards_cached: self.shards_cached.load(Ordering::Relaxed),
            shards_evicted: self.shards_evicted.load(Ordering::Relaxed),
            metadata_bytes: self.metadata_bytes.load(Ordering::Relaxed),
            metadata_requests: self.metadata_requests.load(Ordering::Relaxed),
            range_bytes: self.range_bytes.load(Ordering::Relaxed),
            range_requests: self.range_requests.load(Ordering::Relaxed),
        }
    }

    /// The path of `entry`'s cache entry, complete, and its form: downloaded now unless
    /// there already (a compressed shard decompressed then).
    ///
    /// # Errors
    /// The store's errors naming the shard's URL;
    /// [`FormatError::ShardMismatch`](crate::error::FormatError::ShardMismatch) naming the
    /// shard's URL when its bytes are not the manifest's (size or CRC-32C); a compressed
    /// shard's decoding errors naming its URL; the cache disk's I/O errors (a full disk)
    /// naming the file.
    fn fetch(&self, entry: &ShardEntry) -> Result<(PathBuf, Form)> {
        let name = entry_name(entry);
        let path = self.dir.join(&name);
        if let Some(form) = self.good_entry(&path, entry) {
            self.shards_cached.fetch_add(1, Ordering::Relaxed);
            // Its time of use, for the eviction order.
            let _ = private::open(&path, How::Read).and_then(|f| f.set_modified(SystemTime::now()));
            return Ok((path, form));
        }
        let lock_path = suffixed(&path, ".lock");
        let _lock =
            ShardLock::acquire(&lock_path).map_err(|e| Error::from(e).in_file(&lock_path))?;
        if let Some(form) = self.good_entry(&path, entry) {
            self.shards_cached.fetch_add(1, Ordering::Relaxed);
            return Ok((path, form));
        }
        // Not there, or bad (its bytes, its size or its sidecar; a link): downloaded again.
        for bad in [suffixed(&path, ".sum"), path.clone()] {
            match std::fs::remove_file(&bad) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::from(e).in_file(&bad));
                }
                _ => {}
            }
        }
        self.remove_stale_downloads(&path)?;
        // Held until the entry is in place: its download counts meanwhile.
        let _room = self.make_room(entry.bytes)?;
        let tmp = suffixed(&path, &format!(".tmp-{}", std::process::id()));
        let result = self.download(entry, &tmp).and_then(|()| {
            // Counted before the entry appears, so that a reader that finds it finds it
            // counted.
            self.bytes_downloaded
                .fetch_add(entry.bytes, Ordering::Relaxed);
            self.shards_downloaded.fetch_add(1, Ordering::Relaxed);
            let (form, _decompressed_room) = self.decompress(entry, &tmp, &path)?;
            self.learn(entry, &form);
            std::fs::rename(&tmp, &path).map_err(|e| Error::from(e).in_file(&path))?;
            self.lock(&self.checked).insert(name);
            sync_dir(&self.dir).map(|()| form)
        });
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map(|form| (path, form))
    }

    /// The form of `entry`'s complete entry `path` if it is there and good: a regular file
    /// of its form's size, and, unless this process downloaded or checked it before, of its
    /// form's CRC-32C (read whole once per process).
    fn good_entry(&self, path: &Path, entry: &ShardEntry) -> Option<Form> {
        let form = on_disk(path, entry)?;
        let name = path.file_name()?.to_string_lossy().into_owned();
        if self.lock(&self.checked).contains(&name) {
            return Some(form);
        }
        let good = crc32c_of(path).is_ok_and(|found| found == (form.bytes, form.crc32c));
        if good {
            self.learn(entry, &form);
            self.lock(&self.checked).insert(name);
        }
        good.then_some(form)
    }

    /// Replaces the downloaded shard `tmp` (checked) by its decompressed form if it is
    /// compressed, writing the form's size and CRC-32C beside the entry `path` first;
    /// syncs what `tmp` then holds and returns its form, with the room made for the
    /// decompressed form (made before it is written: its size is measured first, without
    /// writing, and both forms are on disk until the compressed one goes).
    fn decompress(
        &self,
        entry: &ShardEntry,
        tmp: &Path,
        path: &Path,
    ) -> Result<(Form, Option<Reservation<'_>>)> {
        let in_tmp = |e: std::io::Error| Error::from(e).in_file(tmp);
        if !is_compressed(tmp).map_err(in_tmp)? {
            File::open(tmp).and_then(|f| f.sync_all()).map_err(in_tmp)?;
            return Ok((Form::stored(entry), None));
        }
        let url = self.remote.url_of(&entry.file);
        let shard = MappedDataset::open(tmp).map_err(|e| e.in_file(&url))?;
        let mut measure = Crc32cWriter::new(std::io::sink());
        write_uncompressed(&shard, &mut measure).map_err(|e| e.in_file(&url))?;
        let room = self.make_room(measure.bytes())?;
        let plain = suffixed(tmp, "-plain");
        let written = private::open(&plain, How::New)
            .map_err(Error::from)
            .and_then(|file| {
                let mut out = Crc32cWriter::new(std::io::BufWriter::with_capacity(1 << 20, file));
                write_uncompressed(&shard, &mut out)?;
                let (file, bytes, crc32c) = out.finish()?;
                file.sync_all()?;
                Ok(Form {
                    bytes,
                    crc32c,
                    decompressed: true,
                })
            })
            .map_err(|e| e.in_file(&plain));
        drop(shard);
        let form = written.and_then(|form| {
            std::fs::rename(&plain, tmp).map_err(|e| Error::from(e).in_file(tmp))?;
            write_sum(path, &form)?;
            Ok(form)
        });
        if form.is_err() {
            let _ = std::fs::remove_file(&plain);
        }
        form.map(|form| (form, Some(room)))
    }

    /// Removes entries, least recently used first, until `bytes` more fit within the
    /// limit beside the complete entries and the bytes this process's other downloads
    /// reserved: none this process uses (mapped, so removing it frees nothing) and none
    /// whose download lock is held. Removing an entry another process has mapped is safe:
    /// its mapping stays valid and the space is freed when it is unmapped. The room is
    /// reserved until the returned guard is dropped.
    fn make_room(&self, bytes: u64) -> Result<Reservation<'_>> {
        let Some(limit) = self.limit else {
            return Ok(Reservation {
                reserved: &self.reserved,
                bytes: 0,
            });
        };
        // One at a time: two downloads making room at once would count the same space.
        let mut reserved = self.lock(&self.reserved);
        let in_dir = |e: std::io::Error| Error::from(e).in_file(&self.dir);
        let mut entries = Vec::new();
        let mut used = 0;
        for item in std::fs::read_dir(&self.dir).map_err(in_dir)? {
            let item = item.map_err(in_dir)?;
            let name = item.file_name().to_string_lossy().into_owned();
            let Ok(meta) = item.metadata() else { continue };
            let aside = [".lock", ".sum"].iter().any(|s| name.ends_with(s));
            if !meta.is_file() || aside || name.contains(".tmp-") {
                continue;
            }
            used += meta.len();
            let when = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            entries.push((when, name, meta.len()));
        }
        entries.sort();
        let in_use = self.lock(&self.in_use).clone();
        for (_, name, len) in entries {
            if used.saturating_add(*reserved).saturating_add(bytes) <= limit {
                break;
            }
            if in_use.contains_key(&name) {
                continue;
            }
            let path = self.dir.join(&name);
            // Held until the entry is gone: none downloads it meanwhile.
            if let Ok(Some(_held)) = ShardLock::try_acquire(&suffixed(&path, ".lock"))
                && std::fs::remove_file(&path).is_ok()
            {
                let _ = std::fs::remove_file(suffixed(&path, ".sum"));
                used -= len;
                self.shards_evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        *reserved = reserved.saturating_add(bytes);
        Ok(Reservation {
            reserved: &self.reserved,
            bytes,
        })
    }

    /// Removes the temporary files of killed downloads of the entry at `path` (called
    /// with the entry's lock held: no live download has one), as the directory held them
    /// when this process first asked (a download killed later is cleaned by the next).
    fn remove_stale_downloads(&self, path: &Path) -> Result<()> {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return Ok(());
        };
        let mut temporaries = self.lock(&self.temporaries);
        if temporaries.is_none() {
            *temporaries = Some(self.list_temporaries()?);
        }
        let stale = temporaries.as_mut().and_then(|t| t.remove(name));
        drop(temporaries);
        for tmp in stale.into_iter().flatten() {
            let _ = std::fs::remove_file(tmp);
        }
        Ok(())
    }

    /// The directory's temporary files of downloads, by the name of their entry.
    fn list_temporaries(&self) -> Result<HashMap<String, Vec<PathBuf>>> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|e| Error::from(e).in_file(&self.dir))?;
        let mut found: HashMap<String, Vec<PathBuf>> = HashMap::new();
        for item in entries.flatten() {
            let file_name = item.file_name();
            let Some((name, _pid)) = file_name.to_str().and_then(|n| n.split_once(".tmp-")) else {
                continue;
            };
            found.entry(name.to_owned()).or_default().push(item.path());
        }
        Ok(found)
    }

    /// Downloads `entry` into the new file `tmp`, checking its size and CRC-32C (not synced:
    /// [`ShardCache::decompress`] syncs what becomes the entry). Each range's body is
    /// written at its place in the file as it arrives, its CRC-32C computed in the same
    /// pass; the ranges' checksums are combined in order.
    fn download(&self, entry: &ShardEntry, tmp: &Path) -> Result<()> {
        let url = self.remote.url_of(&entry.file);
        let file = private::open(tmp, How::New).map_err(|e| Error::from(e).in_file(tmp))?;
        let (url_ref, file_ref) = (&url, &file);
        let crc = self
            .remote
            .with_object(&entry.file, |store, location| async move {
                let mut parts = futures_util::stream::iter(chunks(entry.bytes))
                    .map(|range| {
                        let len = range.end - range.start;
                        let range = (range, entry.bytes);
                        let written = stream_range(store.as_ref(), &location, range, file_ref);
                        async move { written.await.map(|crc| (crc, len)) }
                    })
                    .buffered(PARALLEL_RANGES);
                let mut crc = 0;
                while let Some(part) = parts.next().await {
                    let (part_crc, len) =
                        part.map_err(|e| e.into_error(entry.bytes, url_ref, tmp))?;
                    crc = crc32c::crc32c_combine(crc, part_crc, len as usize);
                }
                Ok(crc)
            })?;
        mismatch("crc32c", entry.crc32c, crc).map_err(|e| e.in_file(url))
    }
}

/// The ranges of the requests that download `bytes` bytes, made as they are asked for
/// (the size is the manifest's, untrusted until the first response confirms it).
fn chunks(bytes: u64) -> impl Iterator<Item = Range<u64>> {
    (0..bytes.div_ceil(CHUNK_BYTES))
        .map(move |i| i * CHUNK_BYTES..((i + 1) * CHUNK_BYTES).min(bytes))
}

/// The name of `entry`'s cache entry: its CRC-32C, then its file name.
fn entry_name(entry: &ShardEntry) -> String {
    format!("{:08x}-{}", entry.crc32c, entry.file)
}

/// Whether `e` is an I/O error of kind `NotFound`.
fn is_not_found(e: &Error) -> bool {
    matches!(e.kind(), crate::error::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

/// The form of `entry`'s complete entry `path`, if it is there: a regular file of the
/// size its sidecar `.sum` gives (a decompressed form), else of the manifest's size (a
/// temporary file is never renamed before it is complete and checked).
fn on_disk(path: &Path, entry: &ShardEntry) -> Option<Form> {
    // A link is no entry.
    let len = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())?
        .len();
    match read_sum(path) {
        Some(form) if form.bytes == len => Some(form),
        _ => (len == entry.bytes).then(|| Form::stored(entry)),
    }
}

/// Whether the complete entry `path` holds `entry`'s bytes as the store does (not a
/// compressed shard's decompressed form), so that a range of the stored object can be read
/// from it.
pub(super) fn holds_stored_bytes(path: &Path, entry: &ShardEntry) -> bool {
    on_disk(path, entry).is_some_and(|form| !form.decompressed)
}

/// Whether the downloaded Arrow IPC file `path` has a compressed record batch (its
/// messages' headers read, nothing decoded).
fn is_compressed(path: &Path) -> std::io::Result<bool> {
    let file = File::open(path)?;
    // SAFETY: `path` is this process's own download, written under the shard's lock, so no
    // one else writes it; the read-only map is dropped before the file is renamed.
    let map = unsafe { memmap2::Mmap::map(&file) }?;
    Ok(has_compressed_batches(&map))
}

/// `path` with `suffix` appended to its name.
pub(super) fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_object_once() {
        assert_eq!(chunks(0).count(), 0);
        assert_eq!(chunks(5).collect::<Vec<_>>(), vec![0..5]);
        let c: Vec<_> = chunks(2 * CHUNK_BYTES + 1).collect();
        assert_eq!(c.len(), 3);
        assert_eq!(c[2], 2 * CHUNK_BYTES..2 * CHUNK_BYTES + 1);
    }
}
