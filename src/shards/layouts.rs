//! Shards' footers and record-batch layouts read by range requests (no shard mapped or
//! downloaded): the footers for a plan's lengths (`loader/measured.rs`), the layouts for
//! rows read by ranges (`loader/take_ranges.rs`), these kept for the dataset's life so that
//! a shard's metadata is read once by a process.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_schema::SchemaRef;

use crate::error::{Error, FileFormat, Result};
use crate::io::ipc_lengths::{FileFooter, Tail, read_tail, tail_range};
use crate::io::ipc_rows::BatchLayout;
use crate::shards::files::ShardFiles;
use crate::shards::reader::mismatch;

/// The most shards whose layouts a dataset keeps (a few hundred bytes each per record
/// batch); past it, the kept ones are dropped and read again when asked for.
const KEPT_SHARDS: usize = 4096;

/// Where a shard's record batches' buffers lie: its schema and each batch's layout, or
/// `None` when a batch cannot be read by rows (compressed, or a type not cut by rows).
#[derive(Debug)]
pub(crate) struct ShardLayout {
    pub schema: SchemaRef,
    pub batches: Option<Vec<BatchLayout>>,
}

/// The layouts read so far, by shard.
#[derive(Debug, Default)]
pub(crate) struct Layouts(Mutex<HashMap<usize, Arc<ShardLayout>>>);

impl ShardFiles {
    /// The layouts of shards `shards`, in order: those read before kept, the others read
    /// now (their footers, then every record batch's message, each step one round of range
    /// requests) and checked against the manifest (record batches, rows, column names).
    ///
    /// # Errors
    /// The reads' errors naming the shard; a footer or message that breaks the rules;
    /// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) where the shard
    /// disagrees with the manifest.
    pub(crate) fn layouts(&self, shards: &[usize]) -> Result<Vec<Arc<ShardLayout>>> {
        let kept = |s: usize| self.layouts.0.lock().ok().and_then(|m| m.get(&s).cloned());
        let missing: Vec<usize> = shards
            .iter()
            .copied()
            .filter(|&s| kept(s).is_none())
            .collect();
        let columns: Vec<usize> = (0..self.manifest.columns.len()).collect();
        let mut footers = Vec::with_capacity(missing.len());
        for &shard in &missing {
            footers.extend(read_footers(self, shard..shard + 1, &columns)?);
        }
        let messages: Vec<(usize, Range<u64>)> = (missing.iter().zip(&footers))
            .flat_map(|(s, f)| f.message_ranges().into_iter().map(|r| (*s, r)))
            .collect();
        let mut read = self.read_ranges(&messages)?.into_iter();
        for (&shard, footer) in missing.iter().zip(&footers) {
            let in_shard = |e: Error| e.in_file(self.location(shard));
            let mut batches = Some(Vec::with_capacity(footer.num_batches()));
            for b in 0..footer.num_batches() {
                let message = read.next().expect("a message per batch");
                let layout = footer.layout(b, &message).map_err(in_shard)?;
                batches = batches.zip(layout).map(|(mut all, l)| {
                    all.push(l);
                    all
                });
            }
            if let Some(batches) = &batches {
                let rows = batches.iter().map(|b| b.rows).sum::<usize>();
                mismatch("rows", self.manifest.shards[shard].rows, rows).map_err(in_shard)?;
            }
            let schema = Arc::new(footer.schema().clone());
            let layout = Arc::new(ShardLayout { schema, batches });
            if let Ok(mut map) = self.layouts.0.lock() {
                if map.len() >= KEPT_SHARDS {
                    map.clear();
                }
                map.insert(shard, layout);
            }
        }
        shards
            .iter()
            .map(|&s| kept(s).ok_or_else(|| Error::internal(format!("shard {s}'s layout"))))
            .collect()
    }
}

/// The footer of each shard of `range`, checked against the manifest: its record batches,
/// and the names of its columns `columns`.
pub(crate) fn read_footers(
    files: &ShardFiles,
    range: Range<usize>,
    columns: &[usize],
) -> Result<Vec<FileFooter>> {
    let shards = &files.manifest.shards;
    let first = range.start;
    let wanted: Vec<(usize, Range<u64>)> =
        range.map(|s| (s, tail_range(shards[s].bytes))).collect();
    let tails = files.read_ranges(&wanted)?;
    let mut footers: Vec<Option<FileFooter>> = Vec::with_capacity(wanted.len());
    let mut longer = Vec::new();
    for (&(s, _), tail) in wanted.iter().zip(&tails) {
        match read_tail(shards[s].bytes, tail).map_err(|e| e.in_file(files.location(s)))? {
            Tail::Footer(footer) => footers.push(Some(footer)),
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
            Tail::Footer(footer) => footers[*s - first] = Some(footer),
            // The object changed between the two reads.
            Tail::Longer(_) => {
                return Err(in_file(Error::invalid(FileFormat::Ipc, "the footer moved")));
            }
        }
    }
    let footers: Vec<FileFooter> = ((first..).zip(footers))
        .map(|(s, f)| {
            let moved = || Error::invalid(FileFormat::Ipc, "the footer was not read");
            f.ok_or_else(|| moved().in_file(files.location(s)))
        })
        .collect::<Result<_>>()?;
    for (s, footer) in (first..).zip(&footers) {
        let in_file = |e: Error| e.in_file(files.location(s));
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
    }
    Ok(footers)
}
