//! The sample lengths of a sharded dataset read from its shards' metadata, for a lazy
//! loader whose plan needs them (a token budget, buckets, packing, a chunk or windowed
//! shuffle over shards of several record batches): per shard its footer, each record
//! batch's message, and the offsets of the length column's levels (`io::ipc_lengths`),
//! never a value: each step read at once for [`SHARDS_AT_ONCE`] shards (range requests in
//! flight together for a remote dataset), whose footers and heads are dropped once their
//! lengths are taken, so that the memory held is the lengths plus a few MiB whatever the
//! number of shards.
//!
//! ```text
//! every shard's tail ──▶ footers ──▶ every batch's message and  ──▶ the offsets not in it ──▶ lengths
//!   (1 read each)   (a longer one:    body start (1 read each)     (a compressed batch: its
//!                    1 more)                                        shard is mapped instead)
//! ```

use std::ops::Range;

use bytes::Bytes;

use super::lengths::sample_lengths;
use crate::error::{Error, Result};
use crate::io::ipc_lengths::{FileFooter, Located};
use crate::shards::{ColumnLengths, ShardFiles, mismatch, narrow_length, read_footers};

/// How many shards' metadata are read and measured at once without the index: enough
/// for the store's range requests in flight to stay busy, few enough that the footers
/// and record-batch heads held meanwhile stay a few MiB whatever the number of shards.
const SHARDS_AT_ONCE: usize = 256;

/// Every shard's record batches' rows and samples' lengths ([`ColumnLengths`]) for each `(column, level)` of `columns` (a column's index
/// in the manifest, the level whose lengths are wanted), in that order: each shard's
/// footer and record-batch messages read once for all of them, and checked against the
/// manifest (its record batches, rows and column names); from the lengths index when the manifest
/// has one (no shard read). Lengths are kept in 32 bits: a sample of 2^32 elements or
/// more is refused.
///
/// # Errors
/// The reads' errors (the store's, naming the shard's URL); a shard whose metadata is not
/// an IPC file's or whose offsets break the rules: the error naming the shard, the column
/// and the record batch; [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch)
/// where the shard disagrees with the manifest; [`DataError::SequenceTooLong`](crate::DataError::SequenceTooLong)
/// for a sample of 2^32 elements or more, naming the shard, the column and the record batch.
pub(super) fn read_columns(
    files: &ShardFiles,
    columns: &[(usize, usize)],
) -> Result<Vec<ColumnLengths>> {
    if let Some(indexed) = indexed_lengths(files, columns)? {
        return Ok(indexed);
    }
    let names: Vec<usize> = columns.iter().map(|&(c, _)| c).collect();
    let manifest = &files.manifest;
    let mut out: Vec<ColumnLengths> = columns.iter().map(|_| ColumnLengths::default()).collect();
    // Room for every sample's length at once (no doubling): as many as the manifest says,
    // at most one per 4 bytes of the shards (a row of a column with levels has an offset).
    // Both numbers are the manifest's, unchecked until the shards are read: the room is a
    // hint, not taken when it cannot be had (the lengths then grow as they are read).
    let bytes = (manifest.shards.iter()).fold(0u64, |all, s| all.saturating_add(s.bytes));
    let rows = (manifest.shards.iter())
        .fold(0usize, |all, s| all.saturating_add(s.rows))
        .min(usize::try_from(bytes / 4).unwrap_or(usize::MAX));
    for lengths in &mut out {
        let _ = lengths.lengths.try_reserve_exact(rows);
        let _ = lengths.batches.try_reserve_exact(manifest.shards.len());
    }
    // A few hundred shards at a time: their footers and heads (a few KiB each) dropped
    // once measured, so that what a plan keeps is the lengths alone.
    for first in (0..manifest.shards.len()).step_by(SHARDS_AT_ONCE) {
        let shards = first..manifest.shards.len().min(first + SHARDS_AT_ONCE);
        let footers = read_footers(files, shards, &names)?;
        // Every batch's message and the start of its body, of every shard.
        let wanted: Vec<(usize, Range<u64>)> = (footers.iter().enumerate())
            .flat_map(|(s, f)| (f.head_ranges().into_iter()).map(move |r| (first + s, r)))
            .collect();
        let heads = files.read_ranges(&wanted)?;
        for (&(column, level), out) in columns.iter().zip(&mut out) {
            let heads = (wanted.as_slice(), heads.as_slice());
            column_lengths(files, (first, &footers), heads, (column, level), out)?;
        }
    }
    Ok(out)
}

/// The rows and lengths of level `level` of column `column` of shards `first..` (one per
/// footer), from their `footers` and the heads of their record batches (`(shard, range)`
/// read, bytes), appended to `out`.
fn column_lengths(
    files: &ShardFiles,
    (first, footers): (usize, &[FileFooter]),
    (wanted, heads): (&[(usize, Range<u64>)], &[Bytes]),
    (column, level): (usize, usize),
    out: &mut ColumnLengths,
) -> Result<()> {
    let mut located: Vec<Vec<Located>> = footers.iter().map(|_| Vec::new()).collect();
    for ((shard, _), head) in wanted.iter().zip(heads) {
        let (footer, located) = (&footers[*shard - first], &mut located[*shard - first]);
        let batch = located.len();
        let meta = footer.message_ranges()[batch].clone();
        let message = &head[..(meta.end - meta.start) as usize];
        let at = footer.locate(batch, message, column, level);
        located.push(at.map_err(|e| e.in_file(files.location(*shard)))?);
    }
    let compressed = |batches: &[Located]| batches.iter().any(|b| matches!(b, Located::Compressed));
    // Every level's offsets, of every batch of every shard not compressed: from the batch's
    // head when there, else read now.
    let mut levels: Vec<Option<Bytes>> = Vec::new();
    let mut missing: Vec<(usize, Range<u64>)> = Vec::new();
    let mut head = wanted.iter().zip(heads);
    for (s, batches) in located.iter().enumerate() {
        for batch in batches {
            let ((_, at), bytes) = head.next().expect("a head per batch");
            if compressed(batches) {
                continue;
            }
            for r in batch.ranges() {
                let inside = at.start <= r.start && r.end <= at.end;
                levels.push(inside.then(|| {
                    bytes.slice((r.start - at.start) as usize..(r.end - at.start) as usize)
                }));
                if !inside {
                    missing.push((s, r));
                }
            }
        }
    }
    let mut read = files.read_ranges(&missing)?.into_iter();
    let mut offsets = levels
        .into_iter()
        .map(|l| l.unwrap_or_else(|| read.next().expect("a read per missing range")));
    let name = &files.manifest.columns[column].name;
    for (shard, batches) in (first..).zip(&located) {
        let before = out.lengths.len();
        let in_shard = |e: Error| e.in_file(files.location(shard));
        match compressed(batches) {
            true => map_and_measure(files, shard, (column, level), out)?,
            false => {
                let mut rows = Vec::with_capacity(batches.len());
                for (b, batch) in batches.iter().enumerate() {
                    let levels: Vec<_> = offsets.by_ref().take(level + 1).collect();
                    let lengths = batch
                        .lengths(&levels)
                        .map_err(|e| in_shard(e.in_column(name, b)))?;
                    rows.push(lengths.len());
                    for (row, found) in lengths.into_iter().enumerate() {
                        let length = narrow_length(found, level, row);
                        out.lengths
                            .push(length.map_err(|e| in_shard(e.in_column(name, b)))?);
                    }
                }
                out.push_batches(rows);
            }
        }
        let rows = out.lengths.len() - before;
        mismatch("rows", files.manifest.shards[shard].rows, rows).map_err(in_shard)?;
    }
    Ok(())
}

/// Shard `shard`'s rows and lengths from its mapping (a remote shard downloaded), appended
/// to `out`: for a shard whose batches are compressed.
fn map_and_measure(
    files: &ShardFiles,
    shard: usize,
    (column, level): (usize, usize),
    out: &mut ColumnLengths,
) -> Result<()> {
    let file = files.open(shard, false, None)?;
    let rows = file.batches().iter().map(|b| b.num_rows()).sum();
    let lengths = sample_lengths(file.batches(), Some((column, level)), rows)
        .map_err(|e| e.in_file(files.location(shard)))?;
    out.push_batches(file.batches().iter().map(|b| b.num_rows()));
    out.lengths.extend(lengths);
    drop(file);
    files.release(shard);
    Ok(())
}

/// The lengths of `columns` from the dataset's lengths index, when it has one.
///
/// # Errors
/// The index's: a missing or bad object, or one that disagrees with the manifest.
fn indexed_lengths(
    files: &ShardFiles,
    columns: &[(usize, usize)],
) -> Result<Option<Vec<ColumnLengths>>> {
    let mut out = Vec::with_capacity(columns.len());
    for &(column, level) in columns {
        let Some(indexed) = files.indexed_lengths(column, level)? else {
            return Ok(None);
        };
        out.push(indexed);
    }
    Ok(Some(out))
}
