//! A take's rows from shards that are not at hand (a remote shard not in the node's cache),
//! read by byte ranges instead of downloading the shards: each shard's footer and record
//! batches' messages (once a node, `shards/layouts.rs`), then the rows' bytes of every
//! column asked for (`io::ipc_rows`), the ranges close together read as one request. With
//! a complete lengths index, the index says where the rows lie at every level of the LoD
//! tensor columns (`shards/index/marks.rs`): one round of requests for them all; without
//! it, one round per level. A compressed record batch is read whole (one range) and
//! decoded as a mapped file's; a shard whose columns' types cannot be cut by rows is left
//! to be mapped.
//!
//! ```text
//! footers ──▶ messages (rows, buffers) ──▶ runs of rows (+ the index's marks) ──▶ rounds of ranges ──▶ one dataset a run
//! ```

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::{RecordBatch, RecordBatchOptions, make_array};
use arrow_buffer::Buffer;
use bytes::Bytes;
use std::sync::Arc;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::io::ipc_decode::decode_block;
use crate::io::ipc_rows::{Run, by_rows, read_rows};
use crate::row_index::RowIndex;
use crate::shards::ShardFiles;
use crate::shards::ShardLayout;

/// The most bytes read between ranges merged, as a multiple of the bytes wanted.
const WASTE: u64 = 16;
/// Gaps this small are merged whatever the bytes wanted: a page's worth, nothing next to a
/// request's cost, so that a small row's columns (one record batch's buffers, side by
/// side) come in one request.
const SMALL_GAP: u64 = 4 << 10;
/// The most bytes one merged request reads.
const REQUEST_BYTES: u64 = 8 << 20;
/// The most requests of whole (compressed) record batches read at once, each on a thread
/// that decodes its batches as soon as they arrive (as many as range requests run at once).
const READERS: usize = 16;

/// Rows read from a shard by ranges: the runs of its rows (in the shard's rows) and a
/// dataset of each.
pub(super) type Runs = Vec<(Range<usize>, Dataset)>;

/// For each `(shard, rows)` of `wanted` (rows of the shard, sorted, no repeats), the runs of
/// those rows read by ranges, of the columns `columns` (indices in the manifest) with
/// `template`'s kinds; `None` for a shard to map instead (compressed, or a type that cannot
/// be cut by rows). With `join`, neighbouring runs of a record batch are read as one where
/// the bytes between them are read anyway ([`widened`]: a take); without, each run alone
/// (the loader's read-ahead fills such gaps with its later batches' rows itself).
///
/// # Errors
/// The reads' errors (naming the shard's URL); a footer, message or offsets that break the
/// rules, naming the shard, column and record batch;
/// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) where the shard
/// disagrees with the manifest (record batches, rows, column names).
pub(super) fn read_by_ranges(
    files: &ShardFiles,
    wanted: &[(usize, Vec<usize>)],
    (columns, template): (&[usize], &Dataset),
    join: bool,
) -> Result<Vec<Option<Runs>>> {
    let shards: Vec<usize> = wanted.iter().map(|(s, _)| *s).collect();
    let layouts = files.layouts(&shards)?;
    let mut runs: Vec<Run<'_>> = Vec::new();
    let mut shard_runs: Vec<Vec<(Range<usize>, usize)>> = Vec::new();
    for ((shard, rows), layout) in wanted.iter().zip(&layouts) {
        let mut own = Vec::new();
        if let Some(batches) = &layout.batches {
            let batch_rows: Vec<usize> = batches.iter().map(|b| b.rows).collect();
            let index = RowIndex::from_counts(batch_rows.iter().copied());
            let pieces: Vec<_> = (runs_of(rows).into_iter())
                .flat_map(|run| split_by_batch(&index, run))
                .collect();
            let row_bytes = |b: usize| batches[b].bytes(columns) / batches[b].rows.max(1) as u64;
            let pieces = match join {
                true => widened(pieces, row_bytes, files.range_gap()),
                false => (pieces.into_iter())
                    .map(|(batch, rows)| (batch, rows.clone(), rows.len()))
                    .collect(),
            };
            let (local, asked): (Vec<_>, Vec<usize>) = (pieces.into_iter())
                .map(|(batch, rows, asked)| ((batch, rows), asked))
                .unzip();
            for (batch, rows) in &local {
                let start = index.part_rows(*batch).start + rows.start;
                own.push((start..start + rows.len(), runs.len() + own.len()));
            }
            let marks = files.index_marks(*shard, &batch_rows, &local, columns)?;
            let mut marks = marks.map(Vec::into_iter);
            for ((batch, rows), wanted) in local.into_iter().zip(asked) {
                runs.push(Run {
                    file: *shard,
                    layout: &batches[batch],
                    rows,
                    wanted,
                    marks: marks.as_mut().and_then(Iterator::next).unwrap_or_default(),
                });
            }
        }
        shard_runs.push(own);
    }
    let mut fetch = |ranges: &[(usize, Range<u64>, u64)]| coalesced(files, ranges);
    let in_file = |shard: usize, e: Error| e.in_file(files.location(shard));
    let arrays = read_rows(&runs, columns, &mut fetch, &in_file)?;
    let mut whole = read_whole(files, wanted, &layouts, columns, template)?.into_iter();
    let mut out = Vec::with_capacity(wanted.len());
    for (((shard, _), layout), own) in wanted.iter().zip(&layouts).zip(shard_runs) {
        if layout.batches.is_none() {
            out.push(whole.next().flatten());
            continue;
        }
        let in_shard = |e: Error| e.in_file(files.location(*shard));
        let schema = Arc::new(layout.schema.project(columns).map_err(Error::from)?);
        let mut datasets = Vec::with_capacity(own.len());
        for (rows, run) in own {
            let columns = arrays[run].iter().map(|a| make_array(a.clone())).collect();
            let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
            let batch = RecordBatch::try_new_with_options(schema.clone(), columns, &options)
                .map_err(|e| in_shard(Error::from(e)))?;
            let dataset = template
                .try_from_record_batch_like(&batch, 0)
                .map_err(in_shard)?;
            datasets.push((rows, dataset));
        }
        out.push(Some(datasets));
    }
    Ok(out)
}

/// For each `(shard, rows)` of `wanted` whose record batches cannot be read by rows (in
/// `layouts`' order, one answer for each such shard): the record batches holding those rows
/// read whole by range (compressed ones decompressed into memory), checked and decoded as
/// a mapped file's are, each a run of its rows; `None` for a shard with a column of a type
/// not read here (dictionaries, views, unions, maps, run ends), to be mapped.
fn read_whole(
    files: &ShardFiles,
    wanted: &[(usize, Vec<usize>)],
    layouts: &[Arc<ShardLayout>],
    columns: &[usize],
    template: &Dataset,
) -> Result<Vec<Option<Runs>>> {
    // Each block to read: the shard's place in `wanted`, its batch, the batch's first row.
    let mut blocks: Vec<(usize, usize, usize)> = Vec::new();
    let mut readable = Vec::new();
    for (i, ((_, rows), layout)) in wanted.iter().zip(layouts).enumerate() {
        if layout.batches.is_some() {
            continue;
        }
        let can = (layout.schema.fields().iter()).all(|f| by_rows(f.data_type()));
        readable.push((i, can));
        if can {
            let index = RowIndex::from_counts(layout.whole.iter().map(|b| b.rows));
            let mut touched: Vec<usize> = (rows.iter())
                .filter_map(|&r| index.locate(r).map(|(b, _)| b))
                .collect();
            touched.dedup();
            blocks.extend(
                touched
                    .into_iter()
                    .map(|b| (i, b, index.part_rows(b).start)),
            );
        }
    }
    let ranges: Vec<(usize, Range<u64>, u64)> = (blocks.iter())
        .map(|&(i, b, _)| {
            let block = layouts[i].whole[b].block.clone();
            (wanted[i].0, block.clone(), block.end - block.start)
        })
        .collect();
    let (requests, within) = merged(files, &ranges);
    let decode = |&(i, b, first): &(usize, usize, usize), bytes: Bytes| {
        let (shard, layout) = (wanted[i].0, &layouts[i]);
        let in_shard = |e: Error| e.in_file(files.location(shard));
        let names: Vec<&str> = (columns.iter())
            .map(|&c| layout.schema.field(c).name().as_str())
            .collect();
        let (batch, file) = (&layout.whole[b], (layout.schema.as_ref(), layout.version));
        let block = Buffer::from(bytes);
        let decoded =
            decode_block(&block, batch.meta as usize, file, Some(&names), b).map_err(in_shard)?;
        let dataset = (template.try_from_record_batch_like(&decoded, b)).map_err(in_shard)?;
        Ok((i, (first..first + dataset.num_rows(), dataset)))
    };
    // Each request's blocks decoded as soon as it is read, each request on a thread of
    // its own (up to READERS): while some decode, the others' requests are in flight.
    let read_and_decode = |n: &usize| {
        let got = files.read_row_ranges(std::slice::from_ref(&requests[*n]))?;
        let got = got.into_iter().next().unwrap_or_default();
        (blocks.iter().zip(&within))
            .filter(|(_, (m, _))| m == n)
            .map(|(block, (_, r))| decode(block, got.slice(r.start as usize..r.end as usize)))
            .collect::<Result<Vec<_>>>()
    };
    let numbers: Vec<usize> = (0..requests.len()).collect();
    let mut runs: Vec<Runs> = wanted.iter().map(|_| Vec::new()).collect();
    for (i, run) in on_threads(&numbers, READERS, read_and_decode)?
        .into_iter()
        .flatten()
    {
        runs[i].push(run);
    }
    Ok((readable.into_iter())
        .map(|(i, can)| can.then(|| std::mem::take(&mut runs[i])))
        .collect())
}

/// `f` of each of `items`, in order, on up to `threads` threads, each taking the next item
/// when it is free (a compressed batch's read, decompression and validation are the work);
/// the first error in order.
fn on_threads<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut out: Vec<(usize, Result<R>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
        let joined = handles.into_iter().map(|h| h.join());
        joined.collect::<std::result::Result<Vec<_>, _>>()
    })
    .map_err(|_| Error::internal("a decoding thread panicked"))?
    .into_iter()
    .flatten()
    .collect();
    out.sort_unstable_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// The runs of consecutive rows of `rows` (sorted, no repeats).
fn runs_of(rows: &[usize]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for &r in rows {
        match runs.last_mut() {
            Some(run) if run.end == r => run.end += 1,
            _ => runs.push(r..r + 1),
        }
    }
    runs
}

/// `run` (rows of a shard whose record batches `index` gives) cut at the batches' edges:
/// each piece's batch and rows within it.
fn split_by_batch(index: &RowIndex, run: Range<usize>) -> Vec<(usize, Range<usize>)> {
    let mut out = Vec::new();
    let mut at = run.start;
    while at < run.end {
        let Some((batch, local)) = index.locate(at) else {
            break;
        };
        let batch_rows = index.part_rows(batch);
        let end = run.end.min(batch_rows.end);
        out.push((batch, local..local + (end - at)));
        at = end;
    }
    out
}

/// `pieces` (a shard's runs of rows cut at its record batches: each one's batch and rows
/// in it, in order) with neighbours in one batch made one piece, the rows between them
/// read too, where the requests would read the bytes between them anyway ([`joins`], each
/// row taken as its batch's `row_bytes`): the same bytes as fewer runs to check and
/// decode (one for a batch of which a take wants a row in ten, not one a row). Each with
/// the rows asked for in it.
fn widened(
    pieces: Vec<(usize, Range<usize>)>,
    row_bytes: impl Fn(usize) -> u64,
    most: u64,
) -> Vec<(usize, Range<usize>, usize)> {
    // Each piece, the rows asked for in it and their bytes.
    let mut out: Vec<(usize, Range<usize>, usize, u64)> = Vec::new();
    for (batch, rows) in pieces {
        let bytes = row_bytes(batch);
        let wanted = rows.len() as u64 * bytes;
        let last = out.last_mut().filter(|(b, r, _, useful)| {
            // Rows of one batch, in order: `r` ends before `rows` start.
            let gap = || (rows.start - r.end) as u64 * bytes;
            let span = || (rows.end - r.start) as u64 * bytes;
            *b == batch && joins(gap(), (*useful, wanted), span(), most)
        });
        match last {
            Some((_, r, asked, useful)) => {
                r.end = rows.end;
                *asked += rows.len();
                *useful += wanted;
            }
            None => out.push((batch, rows.clone(), rows.len(), wanted)),
        }
    }
    (out.into_iter())
        .map(|(b, r, asked, _)| (b, r, asked))
        .collect()
}

/// Whether a range `gap` bytes past a request holding `useful` bytes wanted joins it
/// (`wanted` bytes more wanted, the request then `span` bytes; `most` the dataset's
/// range gap): see [`coalesced`].
fn joins(gap: u64, (useful, wanted): (u64, u64), span: u64, most: u64) -> bool {
    gap <= most.min((WASTE * (useful + wanted)).max(SMALL_GAP)) && span <= REQUEST_BYTES
}

/// The bytes of each `(shard, range, bytes wanted in it)` of `ranges`, in order: ranges
/// of a shard at most the dataset's range gap apart (`RemoteOptions::with_range_gap`,
/// 1 MiB unless set) read as one request of at most [`REQUEST_BYTES`], unless the gap is
/// over [`WASTE`] times the bytes wanted in the request and over [`SMALL_GAP`] (so that
/// two buffers' few bytes are not read with all that lies between them); each range's
/// bytes a slice of its request's (no copy).
fn coalesced(files: &ShardFiles, ranges: &[(usize, Range<u64>, u64)]) -> Result<Vec<Bytes>> {
    let (requests, within) = merged(files, ranges);
    let got = files.read_row_ranges(&requests)?;
    Ok((within.into_iter())
        .map(|(n, r)| got[n].slice(r.start as usize..r.end as usize))
        .collect())
}

/// The requests [`coalesced`] sends for `ranges`, and where each range lies: its request
/// and its bytes within it.
type Merged = (Vec<(usize, Range<u64>)>, Vec<(usize, Range<u64>)>);

/// The requests that read `ranges` (see [`coalesced`]) and each range's request and bytes
/// within it.
fn merged(files: &ShardFiles, ranges: &[(usize, Range<u64>, u64)]) -> Merged {
    let most = files.range_gap();
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].0, ranges[i].1.start));
    // Each request: its shard, its range, and the bytes wanted in it.
    let mut requests: Vec<(usize, Range<u64>, u64)> = Vec::new();
    let mut within = vec![(0, 0..0); ranges.len()];
    for i in order {
        let (shard, range, wanted) = (&ranges[i].0, &ranges[i].1, ranges[i].2);
        let last = requests.last_mut().filter(|(s, r, useful)| {
            let gap = range.start.saturating_sub(r.end);
            let span = range.end.max(r.end) - r.start;
            s == shard && joins(gap, (*useful, wanted), span, most)
        });
        match last {
            Some((_, r, useful)) => {
                r.end = r.end.max(range.end);
                *useful += wanted;
            }
            None => requests.push((*shard, range.clone(), wanted)),
        }
        let (n, r) = (requests.len() - 1, &requests[requests.len() - 1].1);
        within[i] = (n, range.start - r.start..range.end - r.start);
    }
    let requests = requests.into_iter().map(|(s, r, ..)| (s, r)).collect();
    (requests, within)
}

#[cfg(test)]
mod tests {
    use super::{on_threads, runs_of, widened};
    use crate::error::Error;
    use proptest::prelude::*;

    #[test]
    fn neighbouring_pieces_of_a_batch_are_one_where_the_bytes_between_are_read_anyway() {
        // Rows of 100 bytes: 900 bytes between the first three, under 4 KiB (and 16 times
        // what is wanted); 499,900 before the last, over both.
        let pieces = vec![
            (0, 0..1),
            (0, 10..11),
            (0, 20..21),
            (1, 0..1),
            (1, 5000..5001),
        ];
        let pieces = widened(pieces, |_| 100, 1 << 20);
        assert_eq!(pieces, [(0, 0..21, 3), (1, 0..1, 1), (1, 5000..5001, 1)]);
        // With a range gap of 800 bytes the first two stay apart too.
        let apart = widened(vec![(0, 0..1), (0, 10..11)], |_| 100, 800);
        assert_eq!(apart, [(0, 0..1, 1), (0, 10..11, 1)]);
    }

    proptest! {
        #[test]
        fn widened_pieces_hold_every_row_asked_once_within_its_batch(
            mut rows in proptest::collection::vec(0usize..3000, 0..200),
            batch_rows in 1usize..700,
            row_bytes in 0u64..5000,
            most in 0u64..(2 << 20),
        ) {
            rows.sort_unstable();
            rows.dedup();
            // Runs cut at batches of `batch_rows` rows, in each batch's rows.
            let pieces: Vec<(usize, std::ops::Range<usize>)> = (runs_of(&rows).into_iter())
                .flat_map(|run| {
                    let mut cut = Vec::new();
                    let mut at = run.start;
                    while at < run.end {
                        let (b, local) = (at / batch_rows, at % batch_rows);
                        let end = run.end.min((b + 1) * batch_rows);
                        cut.push((b, local..local + (end - at)));
                        at = end;
                    }
                    cut
                })
                .collect();
            let out = widened(pieces.clone(), |_| row_bytes, most);
            prop_assert!(out.len() <= pieces.len());
            let asked: usize = out.iter().map(|(.., n)| n).sum();
            prop_assert_eq!(asked, rows.len());
            for w in out.windows(2) {
                prop_assert!((w[0].0, w[0].1.end) <= (w[1].0, w[1].1.start), "{out:?}");
            }
            for &r in &rows {
                let (b, local) = (r / batch_rows, r % batch_rows);
                let holding = out.iter().filter(|(ob, or, _)| *ob == b && or.contains(&local));
                prop_assert_eq!(holding.count(), 1, "row {}", r);
            }
            for (b, r, _) in &out {
                prop_assert!(r.end <= batch_rows && *b <= 3000 / batch_rows, "{out:?}");
            }
        }
    }

    #[test]
    fn items_done_on_threads_come_back_in_order_with_the_first_error() {
        let items: Vec<usize> = (0..50).collect();
        for threads in [0, 1, 3, 16, 100] {
            let doubled = on_threads(&items, threads, |&i| Ok(2 * i)).unwrap();
            assert_eq!(doubled, items.iter().map(|i| 2 * i).collect::<Vec<_>>());
            let failing = on_threads(&items, threads, |&i| match i % 20 {
                7 => Err(Error::internal(format!("item {i}"))),
                _ => Ok(i),
            });
            assert!(
                failing.unwrap_err().to_string().contains("item 7"),
                "{threads}"
            );
        }
        assert!(
            on_threads(&[] as &[usize], 4, |&i| Ok(i))
                .unwrap()
                .is_empty()
        );
    }
}
