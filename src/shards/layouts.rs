//! Shards' footers and record-batch layouts read by range requests (no shard mapped or
//! downloaded): the footers for a plan's lengths (`loader/measured.rs`), the layouts for
//! rows read by ranges (`loader/take_ranges.rs`). A process keeps the layouts it read (at
//! most [`KEPT_SHARDS`] shards), and the node's cache keeps each shard's footer and
//! messages (`kept.rs`) so that the other processes of the node (ranks, data-loader
//! workers) read them from disk, not from the store: a shard's metadata is read once a
//! node.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_ipc::MetadataVersion;
use arrow_schema::SchemaRef;
use bytes::Bytes;

use crate::error::{Error, FileFormat, Result};
use crate::io::ipc_lengths::{FileFooter, Tail, footer_suffix, read_tail, tail_range};
use crate::io::ipc_rows::{BatchLayout, WholeBatch};
use crate::shards::files::ShardFiles;
use crate::shards::index::IndexObject;
use crate::shards::reader::mismatch;

mod kept;

/// The most shards whose layouts a dataset keeps (a few hundred bytes each per record
/// batch); past it, the kept ones are dropped and read again when asked for.
const KEPT_SHARDS: usize = 4096;

/// Where a shard's record batches' buffers lie: its schema and each batch's layout, or
/// `None` when a batch cannot be read by rows (compressed, or a type not cut by rows);
/// each batch as a whole; the file's metadata version.
#[derive(Debug)]
pub(crate) struct ShardLayout {
    pub schema: SchemaRef,
    pub batches: Option<Vec<BatchLayout>>,
    pub whole: Vec<WholeBatch>,
    pub version: MetadataVersion,
}

/// The layouts read so far, by shard, and the lengths index's objects read so far, by
/// their position in the manifest's `index` (for rows read by ranges in one round).
#[derive(Debug, Default)]
pub(crate) struct Layouts {
    shards: Mutex<HashMap<usize, Arc<ShardLayout>>>,
    index: Mutex<HashMap<usize, Arc<IndexObject>>>,
    /// The shards whose layouts a thread is reading from the store, with the id of its
    /// process (in a forked child, its parent's are no one's), so that threads asking for
    /// a shard at once (a loader's rounds read ahead) read it once.
    reading: Mutex<HashMap<usize, u32>>,
    /// Told when a thread is done reading.
    read: Condvar,
}

/// Shards whose layouts this thread reads from the store, claimed until dropped.
struct Claimed<'a> {
    layouts: &'a Layouts,
    shards: Vec<usize>,
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        let mut reading = self.layouts.reading();
        for shard in &self.shards {
            reading.remove(shard);
        }
        self.layouts.read.notify_all();
    }
}

impl Layouts {
    /// The shards being read (a panic elsewhere does not poison what the map means).
    fn reading(&self) -> MutexGuard<'_, HashMap<usize, u32>> {
        self.reading.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Of `shards`, those this thread is to read from the store, claimed: each one another
    /// thread of this process is reading waited for, then left out if `kept` has it.
    /// Claimed in shard order, so that two threads never wait for each other.
    fn claim(&self, shards: &[usize], kept: impl Fn(usize) -> bool) -> Claimed<'_> {
        let (mut sorted, pid) = (shards.to_vec(), std::process::id());
        sorted.sort_unstable();
        sorted.dedup();
        let (mut reading, mut mine) = (self.reading(), Vec::new());
        for shard in sorted {
            while reading.get(&shard) == Some(&pid) {
                reading = self.read.wait(reading).unwrap_or_else(|e| e.into_inner());
            }
            if !kept(shard) {
                reading.insert(shard, pid);
                mine.push(shard);
            }
        }
        Claimed {
            layouts: self,
            shards: mine,
        }
    }

    /// The index object at `position` in the manifest's `index`: kept, or `read` now and
    /// kept for the dataset's life (the index is a few bytes a row).
    ///
    /// # Errors
    /// `read`'s errors.
    pub(crate) fn index_object(
        &self,
        position: usize,
        read: impl FnOnce() -> Result<Arc<IndexObject>>,
    ) -> Result<Arc<IndexObject>> {
        let kept = self
            .index
            .lock()
            .ok()
            .and_then(|m| m.get(&position).cloned());
        if let Some(object) = kept {
            return Ok(object);
        }
        let object = read()?;
        if let Ok(mut map) = self.index.lock() {
            map.insert(position, object.clone());
        }
        Ok(object)
    }
}

impl ShardFiles {
    /// The layouts of shards `shards`, in order: those read before kept, the others read
    /// now — from the node's cache where another process kept them and they pass every
    /// check, else from the store (their footers, then every record batch's message, each
    /// step one round of range requests) and kept in the node's cache — and checked
    /// against the manifest (record batches, rows, column names).
    ///
    /// # Errors
    /// The reads' errors naming the shard; a footer or message that breaks the rules;
    /// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) where the shard
    /// disagrees with the manifest.
    pub(crate) fn layouts(&self, shards: &[usize]) -> Result<Vec<Arc<ShardLayout>>> {
        let kept = |s: usize| {
            let map = self.layouts.shards.lock().ok();
            map.and_then(|m| m.get(&s).cloned())
        };
        let mut missing = Vec::new();
        for &shard in shards.iter().filter(|&&s| kept(s).is_none()) {
            // A kept entry is untrusted: whole (its checksum) and checked as the store's.
            let entry = self.source.kept_layout(&self.manifest, shard);
            let layout = (entry.as_ref().and_then(kept::decode))
                .and_then(|(footer, messages)| self.kept_layout(shard, &footer, &messages));
            match layout {
                Some(layout) => self.keep(shard, layout),
                None => missing.push(shard),
            }
        }
        let claimed = self.layouts.claim(&missing, |s| kept(s).is_some());
        let missing = &claimed.shards;
        let columns: Vec<usize> = (0..self.manifest.columns.len()).collect();
        let mut footers = Vec::with_capacity(missing.len());
        for &shard in missing {
            footers.extend(read_footer_tails(self, shard..shard + 1, &columns)?);
        }
        let messages: Vec<(usize, Range<u64>)> = (missing.iter().zip(&footers))
            .flat_map(|(s, (f, _))| f.message_ranges().into_iter().map(|r| (*s, r)))
            .collect();
        let mut read = self.read_ranges(&messages)?.into_iter();
        for (&shard, (footer, tail)) in missing.iter().zip(&footers) {
            let own: Vec<Bytes> = read.by_ref().take(footer.num_batches()).collect();
            let layout = self.shard_layout(shard, footer, &own)?;
            // A cache that cannot be written leaves the next process to read the store.
            let _ = (self.source).keep_layout(&self.manifest, shard, &kept::encode(tail, &own));
            self.keep(shard, layout);
        }
        shards
            .iter()
            .map(|&s| kept(s).ok_or_else(|| Error::internal(format!("shard {s}'s layout"))))
            .collect()
    }

    /// Keeps `layout` as shard `shard`'s for the dataset's life (at most [`KEPT_SHARDS`]).
    fn keep(&self, shard: usize, layout: ShardLayout) {
        if let Ok(mut map) = self.layouts.shards.lock() {
            if map.len() >= KEPT_SHARDS {
                map.clear();
            }
            map.insert(shard, Arc::new(layout));
        }
    }

    /// Shard `shard`'s layout from its `footer` and record batches' `messages`, checked
    /// against the manifest (its rows).
    fn shard_layout(
        &self,
        shard: usize,
        footer: &FileFooter,
        messages: &[Bytes],
    ) -> Result<ShardLayout> {
        let in_shard = |e: Error| e.in_file(self.location(shard));
        if messages.len() != footer.num_batches() {
            return Err(in_shard(Error::internal("a message per batch")));
        }
        let mut batches = Some(Vec::with_capacity(footer.num_batches()));
        let mut whole = Vec::with_capacity(footer.num_batches());
        for (b, message) in messages.iter().enumerate() {
            whole.push(footer.whole(b, message).map_err(in_shard)?);
            let layout = footer.layout(b, message).map_err(in_shard)?;
            batches = batches.zip(layout).map(|(mut all, l)| {
                all.push(l);
                all
            });
        }
        let rows = whole.iter().map(|b| b.rows).sum::<usize>();
        mismatch("rows", self.manifest.shards[shard].rows, rows).map_err(in_shard)?;
        let schema = Arc::new(footer.schema().clone());
        let version = footer.version();
        Ok(ShardLayout {
            schema,
            batches,
            whole,
            version,
        })
    }

    /// Shard `shard`'s layout from a kept entry's `footer` (the shard's end from its footer
    /// on) and `messages`, if they pass every check the store's bytes pass (the messages'
    /// sizes the footer's too); `None` otherwise (to be read from the store).
    fn kept_layout(&self, shard: usize, footer: &[u8], messages: &[Bytes]) -> Option<ShardLayout> {
        let Tail::Footer(footer) = read_tail(self.manifest.shards[shard].bytes, footer).ok()?
        else {
            return None;
        };
        let columns: Vec<usize> = (0..self.manifest.columns.len()).collect();
        check_footer(self, shard, &footer, &columns).ok()?;
        let sizes = footer.message_ranges().into_iter().map(|r| r.end - r.start);
        let fit = sizes.eq(messages.iter().map(|m| m.len() as u64));
        fit.then(|| self.shard_layout(shard, &footer, messages).ok())?
    }
}

/// The footer of each shard of `range`, checked against the manifest: its record batches,
/// and the names of its columns `columns`.
pub(crate) fn read_footers(
    files: &ShardFiles,
    range: Range<usize>,
    columns: &[usize],
) -> Result<Vec<FileFooter>> {
    let footers = read_footer_tails(files, range, columns)?;
    Ok(footers.into_iter().map(|(f, _)| f).collect())
}

/// [`read_footers`], each with the shard's bytes from its footer on (its footer's bytes,
/// length and magic).
fn read_footer_tails(
    files: &ShardFiles,
    range: Range<usize>,
    columns: &[usize],
) -> Result<Vec<(FileFooter, Bytes)>> {
    let shards = &files.manifest.shards;
    let first = range.start;
    let wanted: Vec<(usize, Range<u64>)> =
        range.map(|s| (s, tail_range(shards[s].bytes))).collect();
    let tails = files.read_ranges(&wanted)?;
    let mut footers: Vec<Option<(FileFooter, Bytes)>> = Vec::with_capacity(wanted.len());
    let mut longer = Vec::new();
    for (&(s, _), tail) in wanted.iter().zip(&tails) {
        match read_tail(shards[s].bytes, tail).map_err(|e| e.in_file(files.location(s)))? {
            Tail::Footer(footer) => footers.push(Some((footer, footer_suffix(tail)))),
            Tail::Longer(range) => {
                footers.push(None);
                longer.push((s, range));
            }
        }
    }
    drop(tails);
    for ((s, _), tail) in longer.iter().zip(files.read_ranges(&longer)?) {
        let in_file = |e: Error| e.in_file(files.location(*s));
        match read_tail(shards[*s].bytes, &tail).map_err(in_file)? {
            Tail::Footer(footer) => footers[*s - first] = Some((footer, footer_suffix(&tail))),
            // The object changed between the two reads.
            Tail::Longer(_) => {
                return Err(in_file(Error::invalid(FileFormat::Ipc, "the footer moved")));
            }
        }
    }
    let footers: Vec<(FileFooter, Bytes)> = ((first..).zip(footers))
        .map(|(s, f)| {
            let moved = || Error::invalid(FileFormat::Ipc, "the footer was not read");
            f.ok_or_else(|| moved().in_file(files.location(s)))
        })
        .collect::<Result<_>>()?;
    for (s, (footer, _)) in (first..).zip(&footers) {
        check_footer(files, s, footer, columns)?;
    }
    Ok(footers)
}

/// Shard `s`'s `footer` checked against the manifest: its record batches, and the names
/// of its columns `columns`.
fn check_footer(
    files: &ShardFiles,
    s: usize,
    footer: &FileFooter,
    columns: &[usize],
) -> Result<()> {
    let in_file = |e: Error| e.in_file(files.location(s));
    let shards = &files.manifest.shards;
    mismatch("batches", shards[s].batches, footer.num_batches()).map_err(in_file)?;
    for &column in columns {
        let expected = &files.manifest.columns[column].name;
        let found = footer
            .schema()
            .fields()
            .get(column)
            .map(|f| f.name().as_str());
        mismatch(
            &format!("columns[{column}].name"),
            expected.as_str(),
            found.unwrap_or(""),
        )
        .map_err(in_file)?;
    }
    Ok(())
}
