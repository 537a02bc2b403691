//! `take`: the rows asked for, in the order asked, as one [`Batch`], read the way the
//! loader reads a batch (a view when they are one run of one record batch, else gathered).

use std::collections::HashMap;
use std::sync::Arc;

use super::batch::Batch;
use super::gather::{ColumnInfo, Gatherer, Source};
use super::lengths::{length_column, sample_lengths};
use super::place::MappedFiles;
use super::plan::{BatchInfo, Plan};
use super::position::Fingerprint;
use super::store::view_rows;
use super::take_ranges::{Runs, read_by_ranges};
use crate::dataset::{Column, Dataset};
use crate::error::{Error, Result};
use crate::io::MappedFile;
use crate::io::ipc_reader::MappedDataset;
use crate::row_index::RowIndex;
use crate::shards::ShardedDataset;

impl MappedDataset {
    /// Rows `rows` (repeats allowed) of every column, in the order asked, as one batch:
    /// a view of the mapping when they are consecutive rows of one record batch, else
    /// copied into one buffer as the loader gathers a shuffled batch. Equal to the rows'
    /// [`sample`](Self::sample)s one after the other.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`](crate::ArgumentError::RowsOutOfBounds) naming the first row past the last, and the
    /// file's row count; gathering's errors (an offset past the column's width).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = MappedDataset::open(&path)?;
    /// let batch = file.take(&[2, 0, 2])?;
    /// assert_eq!((batch.samples(), batch.is_view()), (&[2, 0, 2][..], false));
    /// assert_eq!(batch.data().column("x")?.elements().len(), 3 + 1 + 3);
    /// assert!(file.take(&[1, 2])?.is_view());                   // one run: a view
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&self, rows: &[usize]) -> Result<Batch> {
        take_rows(self.batches(), self.mapped_file().cloned(), rows, None)
    }

    /// [`take`](Self::take) of the columns `columns` only, in that order.
    ///
    /// # Errors
    /// [`take`](Self::take)'s; a column the file does not have.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = MappedDataset::open(&path)?;
    /// let batch = file.take_columns(&[4, 1], &["x"])?;
    /// assert_eq!(batch.data().columns().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_columns(&self, rows: &[usize], columns: &[&str]) -> Result<Batch> {
        let file = self.mapped_file().cloned();
        take_rows(self.batches(), file, rows, Some(columns))
    }
}

impl ShardedDataset {
    /// Rows `rows` (global, repeats allowed) of every column, in the order asked, as one
    /// batch. Only the shards holding them are mapped (and checked against the manifest);
    /// see [`MappedDataset::take`] for when the batch is a view and when a copy. Over a
    /// URL, the rows of a shard not in the node's cache are read by range requests instead,
    /// their bytes alone (`CacheStats::range_bytes`); a compressed record batch is read
    /// whole, into memory (docs/remote.md, "Random access").
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`](crate::ArgumentError::RowsOutOfBounds) naming the first row past the last, and the
    /// dataset's row count; the shards' errors on first touch; gathering's.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// let data = ShardedDataset::open(dir.path())?;
    /// let batch = data.take(&[2, 0])?;                          // across two shards
    /// assert_eq!(batch.samples(), &[2, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(&self, rows: &[usize]) -> Result<Batch> {
        self.take_projected(rows, None)
    }

    /// [`take`](Self::take) of the columns `columns` only, in that order.
    ///
    /// # Errors
    /// [`take`](Self::take)'s; a column the dataset does not have.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.take_columns(&[1], &["ids"])?.data().num_rows(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take_columns(&self, rows: &[usize], columns: &[&str]) -> Result<Batch> {
        self.take_projected(rows, Some(columns))
    }

    /// The rows of the shards they lie in, renumbered over what is read of those shards:
    /// a shard at hand mapped whole, a shard not at hand (remote, not in the node's cache)
    /// read by ranges, its runs of rows asked for alone ([`read_by_ranges`]).
    fn take_projected(&self, rows: &[usize], columns: Option<&[&str]>) -> Result<Batch> {
        self.take_with(rows, columns, |located| {
            self.rows_by_ranges(located, columns, true)
        })
    }

    /// Rows `rows` of `columns`: those of the shards `read` gives runs for (given every
    /// `(shard, row)` asked) taken from the runs, which must hold every row asked of such a
    /// shard; the other shards mapped whole.
    pub(super) fn take_with(
        &self,
        rows: &[usize],
        columns: Option<&[&str]>,
        read: impl FnOnce(&[(usize, usize)]) -> Result<HashMap<usize, Runs>>,
    ) -> Result<Batch> {
        let located = (rows.iter())
            .map(|&r| self.row_index().try_locate(r))
            .collect::<Result<Vec<_>>>()?;
        let mut ranged = read(&located)?;
        let mut touched: Vec<usize> = located.iter().map(|&(s, _)| s).collect();
        touched.sort_unstable();
        touched.dedup();
        // What is read, in order, and where each shard's rows are in it: (shard, its first
        // row read, rows read, place in what is read).
        let (mut batches, mut files, mut pieces) = (Vec::new(), Vec::new(), Vec::new());
        let mut at = 0;
        for &shard in &touched {
            match ranged.remove(&shard) {
                Some(runs) => {
                    for (run, dataset) in runs {
                        pieces.push((shard, run.start, run.len(), at));
                        at += dataset.num_rows();
                        batches.push(dataset);
                    }
                }
                None => {
                    let file = self.shard(shard)?;
                    pieces.push((shard, 0, file.num_rows(), at));
                    at += file.num_rows();
                    batches.extend_from_slice(file.batches());
                    files.extend(file.mapped_file().cloned());
                }
            }
        }
        let local = (located.iter())
            .map(|&(shard, row)| {
                let i = pieces.partition_point(|&(s, first, ..)| (s, first) <= (shard, row));
                match i.checked_sub(1).map(|i| pieces[i]) {
                    Some((s, first, len, start)) if s == shard && row - first < len => {
                        Ok(start + row - first)
                    }
                    _ => Err(Error::internal(format!(
                        "row {row} of shard {shard} not read"
                    ))),
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        let mut batch = take_in(&batches, &files, &local, columns, || {
            self.columns().iter().map(|c| c.empty_column()).collect()
        })?;
        batch.plan = Arc::new(Plan::of_rows(rows.to_vec(), batch.info));
        Ok(batch)
    }

    /// The rows `located` (shard, row) of shards that are not at hand, read by ranges:
    /// each such shard's runs, unless it must be mapped (no entry then); with `join`,
    /// neighbouring runs read as one where the bytes between are read anyway
    /// ([`read_by_ranges`]).
    pub(super) fn rows_by_ranges(
        &self,
        located: &[(usize, usize)],
        columns: Option<&[&str]>,
        join: bool,
    ) -> Result<HashMap<usize, Runs>> {
        let files = self.files();
        // Every (shard, row) once, sorted: each far shard's rows are one run of it.
        let mut sorted = located.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let far: Vec<(usize, Vec<usize>)> = (sorted.chunk_by(|a, b| a.0 == b.0))
            .filter(|rows| !files.at_hand(rows[0].0))
            .map(|rows| (rows[0].0, rows.iter().map(|&(_, r)| r).collect()))
            .collect();
        if far.is_empty() {
            return Ok(HashMap::new());
        }
        let all: Vec<Column> = (self.columns().iter())
            .map(|c| c.empty_column())
            .collect::<Result<_>>()?;
        let template = Dataset::try_new(all)?;
        let indices: Vec<usize> = match columns {
            None => (0..self.columns().len()).collect(),
            Some(names) => (names.iter())
                .map(|n| {
                    template.column_by_name(n)?;
                    Ok(self
                        .columns()
                        .iter()
                        .position(|c| c.name == *n)
                        .expect("found"))
                })
                .collect::<Result<_>>()?,
        };
        let template = Dataset::try_new(
            (indices.iter())
                .map(|&i| template.columns()[i].clone())
                .collect(),
        )?;
        let read = read_by_ranges(files, &far, (&indices, &template), join)?;
        Ok((far.iter().zip(read))
            .filter_map(|((s, _), runs)| runs.map(|r| (*s, r)))
            .collect())
    }
}

/// A file's take: its record batches `batches`, in `file`.
fn take_rows(
    batches: &[Dataset],
    file: Option<Arc<MappedFile>>,
    rows: &[usize],
    columns: Option<&[&str]>,
) -> Result<Batch> {
    let schema = batches.first().map(Dataset::schema);
    take_in(
        batches,
        &Vec::from_iter(file),
        rows,
        columns,
        || match schema {
            Some(s) => super::builder::empty_columns(&s),
            None => Ok(Vec::new()),
        },
    )
}

/// The parts of `index` that `rows` touch, in order, and `rows` renumbered over those parts
/// alone.
fn touched_parts(index: &RowIndex, rows: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
    let located = (rows.iter())
        .map(|&r| index.try_locate(r))
        .collect::<Result<Vec<_>>>()?;
    let mut parts: Vec<usize> = located.iter().map(|&(p, _)| p).collect();
    parts.sort_unstable();
    parts.dedup();
    let mut starts = Vec::with_capacity(parts.len());
    let mut at = 0;
    for &p in &parts {
        starts.push(at);
        at += index.part_rows(p).len();
    }
    let local = (located.iter())
        .map(|&(p, row)| starts[parts.partition_point(|&q| q < p)] + row)
        .collect();
    Ok((parts, local))
}

/// Rows `rows` (checked to be rows of `batches`) of `batches` (lying in `files`), of
/// `columns` when given: only the record batches holding a row are read. `empty` gives the
/// columns when there is no record batch.
fn take_in(
    batches: &[Dataset],
    files: &[Arc<MappedFile>],
    rows: &[usize],
    columns: Option<&[&str]>,
    empty: impl FnOnce() -> Result<Vec<Column>>,
) -> Result<Batch> {
    let all = RowIndex::from_counts(batches.iter().map(Dataset::num_rows));
    let (touched, rows_in) = touched_parts(&all, rows)?;
    let read = |b: &Dataset| match columns {
        Some(names) => project(b, names),
        None => Ok(b.clone()),
    };
    let batches_in = (touched.iter())
        .map(|&b| read(&batches[b]))
        .collect::<Result<Vec<_>>>()?;
    let index = RowIndex::from_counts(batches_in.iter().map(Dataset::num_rows));
    let (data, view) = match view_rows(&rows_in, &index) {
        Some((b, local)) => (batches_in[b].slice_rows(local)?, true),
        None if rows.is_empty() => match batches.first() {
            Some(b) => (read(b)?.slice_rows(0..0)?, true),
            None => (read(&Dataset::try_new(empty()?)?)?, false),
        },
        None => {
            let sources: Vec<Vec<Source>> = (batches_in.iter())
                .map(|b| b.columns().iter().map(Source::new).collect())
                .collect();
            let infos: Vec<ColumnInfo> = (batches_in[0].columns().iter())
                .map(ColumnInfo::new)
                .collect();
            let mut gatherer = Gatherer::new(false);
            (gatherer.gather(&rows_in, &index, &sources, &infos)?, false)
        }
    };
    let infos: Vec<ColumnInfo> = data.columns().iter().map(ColumnInfo::new).collect();
    let lengths = sample_lengths(
        std::slice::from_ref(&data),
        length_column(&infos, None)?,
        rows.len(),
    )?;
    let info = BatchInfo {
        start: 0,
        end: rows.len(),
        tokens: lengths.iter().map(|&l| l as usize).sum(),
        max_len: lengths.iter().copied().max().unwrap_or(0) as usize,
        oversize: false,
    };
    let file = match view {
        true => MappedFiles::new(files).holding(&data),
        false => None,
    };
    Ok(Batch {
        data,
        view,
        file,
        shared: None,
        plan: Arc::new(Plan::of_rows(rows.to_vec(), info)),
        index: 0,
        info,
        steps: 0..1,
        fingerprint: Fingerprint {
            options: 0,
            lengths: 0,
            record_batches: 0,
        },
        blend: None,
    })
}

/// Columns `names` of `batch`, in that order.
fn project(batch: &Dataset, names: &[&str]) -> Result<Dataset> {
    let columns = (names.iter())
        .map(|n| batch.column_by_name(n).cloned())
        .collect::<Result<Vec<Column>>>()?;
    Dataset::try_new(columns)
}
