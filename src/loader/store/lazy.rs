//! Shards mapped as batches reach them ([`LazyShards`]), and the store whose plans are made
//! from the manifest's row counts (a plan that needs no sample lengths). The measured
//! store (`measured.rs`, plans from the lengths in the shards' metadata) maps its shards
//! the same way. A shard is mapped when a batch first touches it and released once the
//! epoch's plan is done with it (so a remote dataset's cache may evict it).
//!
//! ```text
//! plan (manifest rows, ──batch i──▶ its shards mapped? ──no──▶ map (download; the plan's next
//!  or measured lengths)                  │                      shards fetched ahead; checked)
//!                                        ▼
//!                  view or gather (shard-local rows), ──▶ release the shards whose last
//!                  or packed from the shards' places       batch of the plan is i
//! ```

use std::ops::Range;
use std::sync::Arc;

use super::{Opened, PlanInputs, RowStore, batch_of};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::io::MappedFile;
use crate::loader::config::{BatchSize, PlanConfig, Shuffle};
use crate::loader::gather::{ColumnInfo, Gatherer, Source};
use crate::loader::lengths::{length_column, unit_lengths};
use crate::loader::measured::read_columns;
use crate::loader::place::Lies;
use crate::loader::plan::{BatchInfo, Plan};
use crate::row_index::RowIndex;
use crate::shards::{PendingChecksum, ShardFiles, ShardedDataset};

/// Whether a loader over `data` with `config` (and quantile buckets if `quantiles`) can
/// make its plans from the manifest's row counts alone: batches of a number of samples,
/// no buckets, no packing, and where the order follows record batches (a chunk or
/// windowed shuffle) one record batch per shard, so that the shards' rows are the
/// record batches' (the manifest counts a shard's record batches, not their rows).
pub(super) fn plans_without_lengths(
    data: &ShardedDataset,
    config: &PlanConfig,
    quantiles: bool,
) -> bool {
    let by_record_batch = match config.shuffle {
        Shuffle::None | Shuffle::Samples { .. } => false,
        Shuffle::Chunks { .. } | Shuffle::Windowed { .. } => true,
    };
    matches!(config.batch, BatchSize::Samples(_))
        && config.buckets.is_empty()
        && !quantiles
        && config.packing.is_none()
        && config.balance.is_none()
        && (!by_record_batch || data.manifest().shards.iter().all(|s| s.batches <= 1))
}

/// The record-batch boundaries a lazy loader's plans use: the shards with a record batch
/// (the manifest's rows), as an eager loader finds them when every shard has at most one.
pub(super) fn record_batch_rows(data: &ShardedDataset) -> RowIndex {
    let shards = &data.manifest().shards;
    RowIndex::from_counts(shards.iter().filter(|s| s.batches > 0).map(|s| s.rows))
}

/// The store over `data` whose plans are made from the manifest's row counts (see
/// [`plans_without_lengths`]): no shard is mapped until a batch reads it. Its sample
/// lengths count 1 each (the fingerprint's too, so its positions resume on such a loader
/// only); a batch's tokens are measured when it is read.
///
/// # Errors
/// A length column or level the dataset does not have; [`PlanInputs::new`]'s.
pub(super) fn open(
    data: &ShardedDataset,
    config: &mut PlanConfig,
    length: Option<(String, usize)>,
) -> Result<Opened> {
    let columns = manifest_columns(data)?;
    let length = length_column(&columns, length)?;
    let lengths = unit_lengths(data.num_rows())?;
    let rows = (record_batch_rows(data), data.row_index().clone());
    // No packing: its plans need lengths.
    let inputs = PlanInputs::new(
        config,
        None,
        (columns, lengths),
        rows,
        |_, _| Ok(Vec::new()),
    )?;
    let store = LazyStore(LazyShards::new(data, length));
    Ok((Box::new(store), inputs, None))
}

/// What every batch of `data` shares per column, from the manifest.
pub(super) fn manifest_columns(data: &ShardedDataset) -> Result<Vec<ColumnInfo>> {
    let empty = data.columns().iter().map(|c| c.empty_column());
    empty.map(|c| c.map(|c| ColumnInfo::new(&c))).collect()
}

/// A check of a shard just mapped (its index and record batches), before a batch reads it.
pub(super) type Check<'a> = Option<&'a dyn Fn(usize, &[Dataset]) -> Result<()>>;

/// Shards mapped as batches reach them, the plans made from the manifest's row counts.
#[derive(Debug)]
struct LazyStore(LazyShards);

impl RowStore for LazyStore {
    fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        if plan.windows().is_some() {
            // `plans_without_lengths` refuses packing: its windows need the lengths.
            return Err(Error::internal(
                "a packed plan over shards without their lengths",
            ));
        }
        self.0.load(plan, index, gatherer, &inputs.columns, None)
    }

    fn is_view(&self, samples: &[usize], _inputs: &PlanInputs) -> bool {
        self.0.view_rows(samples).is_some()
    }

    fn end_epoch(&mut self) {
        self.0.release_all();
    }

    fn measure_lengths(&self) -> Option<Result<Vec<u32>>> {
        let shards = &self.0;
        let read = |column| read_columns(&shards.files, &[column]);
        Some(match shards.length {
            Some(column) => read(column).map(|mut c| c.pop().unwrap_or_default().lengths),
            None => unit_lengths(shards.shards.num_rows()),
        })
    }

    #[cfg(test)]
    fn num_open(&self) -> usize {
        self.0.num_open()
    }
}

/// The shard and shard-local row of the global row `row`.
fn locate(shards: &RowIndex, row: usize) -> Result<(usize, usize)> {
    (shards.locate(row))
        .ok_or_else(|| Error::internal(format!("row {row} of a plan is not a row of the source")))
}

/// Calls `f` with every sample (row) batch `index` of `plan` reads: its samples, or for a
/// packed plan the rows of its windows' pieces.
pub(super) fn each_row(
    plan: &Plan,
    index: usize,
    mut f: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let ids = batch_of(plan, index)?;
    match plan.windows() {
        Some(windows) => {
            let (mut pieces, mut counts) = (Vec::new(), Vec::new());
            windows.pieces_of(ids, &mut pieces, &mut counts);
            pieces.iter().try_for_each(|p| f(p.row))
        }
        None => ids.iter().try_for_each(|&s| f(s)),
    }
}

/// A shard a lazy loader has mapped.
#[derive(Debug)]
pub(super) struct OpenShard {
    pub batches: Vec<Dataset>,
    /// The file they lie in.
    pub file: Option<Arc<MappedFile>>,
    /// The shard's rows by record batch.
    rows: RowIndex,
    pub sources: Vec<Vec<Source>>,
    /// Its checksum, until a batch has read it.
    pending: Option<PendingChecksum>,
}

/// The shards of a lazy loader: those mapped, and when the current plan is done with each.
#[derive(Debug)]
pub(super) struct LazyShards {
    files: ShardFiles,
    /// The global rows of every shard.
    shards: RowIndex,
    open: Vec<Option<OpenShard>>,
    /// The epoch `last_use` and `first_touches` are of.
    epoch: Option<u64>,
    /// Per shard, the plan's last batch that reads it (`None`: none does).
    last_use: Vec<Option<usize>>,
    /// The shards in the order of the plan's first batch that reads each.
    first_touches: Vec<usize>,
    /// Per shard, its place in `first_touches`.
    touch_rank: Vec<usize>,
    /// Per shard, whether its checksum was checked (once per loader, not per mapping).
    checked: Vec<bool>,
    /// The length column and level that give a batch's tokens (`None`: the plan's).
    length: Option<(usize, usize)>,
}

impl LazyShards {
    pub(super) fn new(data: &ShardedDataset, length: Option<(usize, usize)>) -> Self {
        LazyShards {
            files: data.files().clone(),
            shards: data.row_index().clone(),
            open: (0..data.num_shards()).map(|_| None).collect(),
            epoch: None,
            last_use: Vec::new(),
            first_touches: Vec::new(),
            touch_rank: Vec::new(),
            checked: vec![false; data.num_shards()],
            length,
        }
    }

    /// How many shards are mapped now.
    #[cfg(test)]
    pub(super) fn num_open(&self) -> usize {
        self.open.iter().filter(|s| s.is_some()).count()
    }

    /// Learns when `plan` first and last reads each shard (once per epoch).
    fn follow(&mut self, plan: &Plan) -> Result<()> {
        if self.epoch == Some(plan.epoch()) {
            return Ok(());
        }
        self.epoch = Some(plan.epoch());
        self.last_use = vec![None; self.open.len()];
        self.first_touches.clear();
        self.touch_rank = vec![0; self.open.len()];
        for i in 0..plan.len() {
            each_row(plan, i, |s| {
                let (shard, _) = locate(&self.shards, s)?;
                if self.last_use[shard].is_none() {
                    self.touch_rank[shard] = self.first_touches.len();
                    self.first_touches.push(shard);
                }
                self.last_use[shard] = Some(i);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The rows `samples` (batch `index` of `plan`) of every column, their shards mapped
    /// first (and checked by `check`), and the batch's tokens and longest sample; then
    /// releases the shards the plan reads no more after batch `index`.
    pub(super) fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        gatherer: &mut Gatherer,
        columns: &[ColumnInfo],
        check: Check<'_>,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        let touched = self.map_batch(plan, index, check)?;
        let samples = batch_of(plan, index)?;
        let loaded = (|| {
            let info = self.info(plan.infos()[index], samples)?;
            Ok(match self.view_rows(samples) {
                Some((shard, b, rows)) => {
                    gatherer.stats.views += 1;
                    let open = self.shard(shard)?;
                    let lies = Lies::View(open.file.clone());
                    (open.batches[b].slice_rows(rows)?, lies, info)
                }
                None => (
                    self.gather(samples, &touched, gatherer, columns)?,
                    Lies::Gathered,
                    info,
                ),
            })
        })();
        self.release_done(&touched, index);
        loaded
    }

    /// Maps every shard batch `index` of `plan` reads (see [`LazyShards::map`]); returns
    /// them in order, each once.
    pub(super) fn map_batch(
        &mut self,
        plan: &Plan,
        index: usize,
        check: Check<'_>,
    ) -> Result<Vec<usize>> {
        self.follow(plan)?;
        let mut touched = Vec::new();
        each_row(plan, index, |s| {
            touched.push(locate(&self.shards, s)?.0);
            Ok(())
        })?;
        touched.sort_unstable();
        touched.dedup();
        for &shard in &touched {
            self.map(shard, check)?;
        }
        Ok(touched)
    }

    /// Releases the shards of `touched` that the plan reads no more after batch `index`;
    /// returns them.
    pub(super) fn release_done(&mut self, touched: &[usize], index: usize) -> Vec<usize> {
        let done: Vec<usize> = (touched.iter().copied())
            .filter(|&shard| self.last_use[shard].is_none_or(|last| last <= index))
            .collect();
        for &shard in &done {
            self.release(shard);
        }
        done
    }

    /// Maps `shard` unless mapped (a remote one downloaded, the plan's next shards fetched
    /// ahead), and checks its checksum unless checked, then (when just mapped) `check`.
    fn map(&mut self, shard: usize, check: Check<'_>) -> Result<()> {
        let mapped_now = self.open[shard].is_none();
        if mapped_now {
            let next = self.last_use[shard]
                .is_some()
                .then(|| &self.first_touches[self.touch_rank[shard] + 1..]);
            let file = self.files.open(shard, false, next)?;
            let batches = file.batches().to_vec();
            let rows = RowIndex::from_counts(batches.iter().map(Dataset::num_rows));
            let sources = batches
                .iter()
                .map(|b| b.columns().iter().map(Source::new).collect())
                .collect();
            let pending = (!self.checked[shard])
                .then(|| PendingChecksum::new(file.mapping().clone(), self.files.checksum(shard)));
            self.open[shard] = Some(OpenShard {
                file: file.mapped_file().cloned(),
                batches,
                rows,
                sources,
                pending,
            });
        }
        let Some(open) = self.open[shard].as_mut() else {
            return Err(Error::internal(format!("shard {shard} mapped and gone")));
        };
        if let Some(pending) = &open.pending {
            if let Err(e) = pending.verify() {
                self.release(shard);
                return Err(e);
            }
            open.pending = None;
            self.checked[shard] = true;
        }
        // After the checksum: a shard that changed is named as such.
        if let (true, Some(check)) = (mapped_now, check)
            && let Err(e) = check(shard, &open.batches)
        {
            self.release(shard);
            return Err(e.in_file(self.files.location(shard)));
        }
        Ok(())
    }

    /// Drops the loader's mapping of `shard`, if any, and tells the cache.
    fn release(&mut self, shard: usize) {
        if self.open[shard].take().is_some() {
            self.files.release(shard);
        }
    }

    /// Releases every shard (the epoch is over, or the loader goes).
    pub(super) fn release_all(&mut self) {
        for shard in 0..self.open.len() {
            self.release(shard);
        }
    }

    /// Shard `shard`, mapped.
    ///
    /// # Errors
    /// [`ErrorKind::Internal`](crate::error::ErrorKind::Internal) when it is not: a batch
    /// maps its shards before reading them.
    pub(super) fn shard(&self, shard: usize) -> Result<&OpenShard> {
        (self.open[shard].as_ref())
            .ok_or_else(|| Error::internal(format!("shard {shard} read before it was mapped")))
    }

    /// `planned` with the tokens and longest sample of `samples`, from the length column.
    fn info(&self, planned: BatchInfo, samples: &[usize]) -> Result<BatchInfo> {
        let Some((c, level)) = self.length else {
            return Ok(planned);
        };
        let (mut tokens, mut max_len) = (0, 0);
        for &s in samples {
            let (shard, row) = locate(&self.shards, s)?;
            let open = self.shard(shard)?;
            let (b, local) = locate(&open.rows, row)?;
            let lod = open.batches[b].columns()[c].tensor()?.lod();
            let len = lod.descend(0, local..local + 1, level + 1).len();
            tokens += len;
            max_len = max_len.max(len);
        }
        Ok(BatchInfo {
            tokens,
            max_len,
            ..planned
        })
    }

    /// (shard, record batch, its rows) when `samples` are consecutive rows of one record
    /// batch of a mapped shard.
    pub(super) fn view_rows(&self, samples: &[usize]) -> Option<(usize, usize, Range<usize>)> {
        let (&first, &last) = (samples.first()?, samples.last()?);
        let (shard, row) = self.shards.locate(first)?;
        let open = self.open[shard].as_ref()?;
        let start = first - row;
        let (b, _) = open.rows.locate(row)?;
        let part = open.rows.part_rows(b);
        let contiguous = last >= first
            && last - first + 1 == samples.len()
            && last - start < part.end
            && samples.windows(2).all(|w| w[1] == w[0] + 1);
        contiguous.then(|| (shard, b, row - part.start..last - start + 1 - part.start))
    }

    /// Gathers `samples` from the record batches of the shards `touched` (in order, each
    /// once), numbered as if those shards' rows came one after the other.
    fn gather(
        &self,
        samples: &[usize],
        touched: &[usize],
        gatherer: &mut Gatherer,
        columns: &[ColumnInfo],
    ) -> Result<Dataset> {
        let sorted = touched; // In order, without repeats.
        let mut counts = Vec::new();
        let mut sources = Vec::new();
        let mut base = Vec::with_capacity(sorted.len());
        let mut total = 0;
        for &shard in sorted {
            let open = self.shard(shard)?;
            base.push(total);
            total += open.rows.num_rows();
            counts.extend(open.batches.iter().map(Dataset::num_rows));
            sources.extend(open.sources.iter().cloned());
        }
        let rows = RowIndex::from_counts(counts);
        let local: Vec<usize> = samples
            .iter()
            .map(|&s| {
                let (shard, row) = locate(&self.shards, s)?;
                let k = sorted.binary_search(&shard).map_err(|_| {
                    Error::internal(format!(
                        "row {s} of shard {shard}, not mapped for the batch"
                    ))
                })?;
                Ok(base[k] + row)
            })
            .collect::<Result<_>>()?;
        gatherer.gather(&local, &rows, &sources, columns)
    }
}

impl Drop for LazyShards {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::Loader;
    use crate::shards::{ShardOptions, ShardWriter};

    /// A shard is mapped at the plan's first batch that reads it and released after the
    /// last: none is held after the epoch.
    #[test]
    fn shards_are_released_once_the_plan_is_done_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let t = crate::tensor::LodTensor::from_lengths::<arrow_array::types::Int64Type>(
            &[vec![2, 1, 3]],
            (0..6).collect(),
            vec![],
        )
        .unwrap();
        let ids = crate::dataset::Column::new("ids", t);
        let ds = Dataset::try_new(vec![ids]).unwrap();
        let options = ShardOptions::default().with_shard_rows(2);
        let mut writer = ShardWriter::create(dir.path(), options).unwrap();
        writer.write(&ds).unwrap();
        writer.finish().unwrap();
        let data = ShardedDataset::open(dir.path()).unwrap();
        assert_eq!(data.num_shards(), 2); // rows 0 and 1, then row 2
        let open = |l: &Loader| l.store.num_open();
        let mut loader = Loader::builder(&data).with_batch_size(1).build().unwrap();
        assert_eq!(open(&loader), 0);
        let mut held = Vec::new();
        while loader.next_batch().unwrap().is_some() {
            held.push(open(&loader));
        }
        assert_eq!(held, [1, 0, 0]); // shard 0 between its two batches
        let mut loader = Loader::builder(&data).with_batch_size(3).build().unwrap();
        loader.next_batch().unwrap().unwrap(); // both shards, done with both
        assert_eq!(open(&loader), 0);
        // An epoch left early: its shards go with the loader, or at the next epoch's end.
        let mut loader = Loader::builder(&data).with_batch_size(1).build().unwrap();
        loader.next_batch().unwrap().unwrap();
        loader.set_epoch(1);
        while loader.next_batch().unwrap().is_some() {}
        assert_eq!(open(&loader), 0);
    }
}
