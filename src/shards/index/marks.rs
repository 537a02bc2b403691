//! Where the rows asked for lie at every level of a shard's LoD tensor columns, from the
//! lengths index alone: the prefix sums of each `lengths.C.L` over a record batch's rows
//! ([`Marks`]), so that rows read by ranges read every level in one round
//! (`io::ipc_rows`), the offsets then checked against them.
//!
//! ```text
//! lengths.0.0 of a batch   2  0  3  1          (sentences per document)
//! prefix sums            0  2  2  5  6         rows 1..3 → sentences 2..5, marks [2, 2, 5]
//! ```

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;

use super::{IndexObject, Uints, is_complete, length_fields};
use crate::error::Result;
use crate::io::ipc_rows::Marks;
use crate::shards::files::ShardFiles;
use crate::shards::reader::mismatch;

/// Per run, per column asked for, the marks of its rows (`None` for a column without
/// levels).
pub(crate) type RunMarks = Vec<Vec<Option<Marks>>>;

impl IndexObject {
    /// The values of the object's list column `column` (1: `batch_rows`, 2 + f: the
    /// `lengths` field f) for the shard at row `row` of the object.
    fn shard_values(&self, column: usize, mut row: usize) -> Option<(Uints<'_>, Range<usize>)> {
        for batch in &self.batches {
            if row < batch.num_rows() {
                let list = batch.column(column).as_list_opt::<i64>()?;
                let o = list.value_offsets();
                let range = usize::try_from(o[row]).ok()?..usize::try_from(o[row + 1]).ok()?;
                return Some((Uints::of(list.values().as_ref())?, range));
            }
            row -= batch.num_rows();
        }
        None
    }

    /// The marks of `runs` (record batch, rows in it; batches in order) of the shard at
    /// row `row` of the object, whose record batches have `batch_rows` rows, for columns
    /// whose levels' `lengths` fields are `fields` (positions in [`length_fields`]; empty
    /// for a column without levels).
    ///
    /// # Errors
    /// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) when the index's
    /// record batches' rows are not the shard's.
    fn marks(
        &self,
        row: usize,
        batch_rows: &[usize],
        runs: &[(usize, Range<usize>)],
        fields: &[Vec<usize>],
    ) -> Result<RunMarks> {
        let bad = || crate::error::Error::internal("an index row past the object");
        let (rows, range) = self.shard_values(1, row).ok_or_else(bad)?;
        let indexed: Vec<u64> = range.map(|i| rows.get(i)).collect();
        let found: Vec<u64> = batch_rows.iter().map(|&r| r as u64).collect();
        if indexed != found {
            mismatch(
                "index batch_rows",
                format!("{indexed:?}"),
                format!("{found:?}"),
            )?;
        }
        let starts: Vec<usize> = (batch_rows.iter())
            .scan(0, |at, &n| {
                *at += n;
                Some(*at - n)
            })
            .collect();
        let mut out: RunMarks = vec![Vec::with_capacity(fields.len()); runs.len()];
        for levels in fields {
            if levels.is_empty() {
                out.iter_mut().for_each(|run| run.push(None));
                continue;
            }
            let mut per_run: Vec<Marks> = (runs.iter())
                .map(|(b, rows)| Marks {
                    at: vec![rows.clone().chain([rows.end]).collect()],
                    totals: vec![batch_rows[*b]],
                })
                .collect();
            for &f in levels {
                let (values, range) = self.shard_values(f + 2, row).ok_or_else(bad)?;
                let mut prefix: Option<(usize, Vec<usize>)> = None;
                for ((b, rows), marks) in runs.iter().zip(&mut per_run) {
                    if prefix.as_ref().is_none_or(|(at, _)| at != b) {
                        let first = range.start + starts[*b];
                        let end = (first + batch_rows[*b]).min(range.end);
                        let sums = (first..end).scan(0usize, |sum, i| {
                            let length = usize::try_from(values.get(i)).unwrap_or(usize::MAX);
                            *sum = sum.saturating_add(length);
                            Some(*sum)
                        });
                        prefix = Some((*b, [0].into_iter().chain(sums).collect()));
                    }
                    let (_, sums) = prefix.as_ref().expect("made above");
                    let at = |r: usize| sums.get(r).copied().unwrap_or(usize::MAX);
                    marks.at.push((rows.start..=rows.end).map(at).collect());
                    marks.totals.push(at(batch_rows[*b]));
                }
            }
            for (run, marks) in out.iter_mut().zip(per_run) {
                run.push(Some(marks));
            }
        }
        Ok(out)
    }
}

impl ShardFiles {
    /// The marks of `runs` (record batch, rows in it; batches in order) of shard `shard`,
    /// whose record batches have `batch_rows` rows, for the columns `columns` (positions
    /// in the manifest), from the lengths index (its object read once a process); `None`
    /// when the manifest has no complete index.
    ///
    /// # Errors
    /// The index object's read and check errors (naming it); an index whose record
    /// batches' rows are not the shard's, naming the shard.
    pub(crate) fn index_marks(
        &self,
        shard: usize,
        batch_rows: &[usize],
        runs: &[(usize, Range<usize>)],
        columns: &[usize],
    ) -> Result<Option<RunMarks>> {
        let manifest = &self.manifest;
        if manifest.index.is_empty() || !is_complete(manifest) {
            return Ok(None);
        }
        let mut first = 0;
        let Some((position, entry)) = (manifest.index.iter().enumerate()).find(|(_, e)| {
            first += e.shards;
            shard < first
        }) else {
            return Ok(None);
        };
        first -= entry.shards;
        let object = self.layouts.index_object(position, || {
            let bytes = self.index_object(entry)?;
            let shards = &manifest.shards[first..first + entry.shards];
            let location = |i: usize| self.location(first + i);
            let read =
                super::IndexObject::read(&bytes, entry, shards, &manifest.columns, &location);
            read.map(Arc::new)
                .map_err(|e| e.in_file(self.dir.join(&entry.file)))
        })?;
        let all = length_fields(&manifest.columns);
        let fields: Vec<Vec<usize>> = (columns.iter())
            .map(|&c| (0..all.len()).filter(|&f| all[f].0 == c).collect())
            .collect();
        let marks = object.marks(shard - first, batch_rows, runs, &fields);
        marks.map(Some).map_err(|e| e.in_file(self.location(shard)))
    }
}
