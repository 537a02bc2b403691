//! The shards of a lazy loader: the plan is made from the manifest's row counts (a plan
//! that needs no sample lengths) or, over a dataset opened by URL, from the lengths read
//! from the shards' metadata (`measured.rs`: the eager loader's plans); a shard is mapped
//! when a batch first touches it and released once the epoch's plan is done with it (so a
//! remote dataset's cache may evict it).
//!
//! ```text
//! plan (manifest rows, ──batch i──▶ its shards mapped? ──no──▶ map (download; the plan's next
//!  or measured lengths)                  │                      shards fetched ahead; checked)
//!                                        ▼
//!                  view or gather (shard-local rows), ──▶ release the shards whose last
//!                  or packed from the shards' places       batch of the plan is i
//! ```

use std::ops::Range;

use super::Loader;
use super::config::{BatchSize, PlanConfig, Shuffle};
use super::gather::{ColumnInfo, Gatherer, Source};
use super::lengths::{length_column, quantile_bounds, sample_lengths, unit_lengths};
use super::measured::read_lengths;
use super::pack::Packing;
use super::packed::packed_columns;
use super::plan::{BatchInfo, Plan};
use crate::dataset::Dataset;
use crate::error::{Error, FileFormat, Result};
use crate::row_index::RowIndex;
use crate::shards::{PendingChecksum, ShardFiles, ShardedDataset};

/// The lazy loader over `data`, where its plans can be made without mapping the shards:
/// from the manifest's row counts, or (over a URL) from the lengths in the shards' metadata.
pub(super) fn build_lazy(
    data: &ShardedDataset,
    config: &PlanConfig,
    length: &Option<(String, usize)>,
    quantiles: Option<usize>,
) -> Result<Option<Loader>> {
    if plans_without_lengths(data, config, quantiles.is_some()) {
        return build(data, config.clone(), length.clone()).map(Some);
    }
    if data.files().is_remote() {
        return build_measured(data, config.clone(), length.clone(), quantiles);
    }
    Ok(None)
}

/// Whether a loader over `data` with `config` (and quantile buckets if `quantiles`) can
/// make its plans from the manifest's row counts alone: batches of a number of samples,
/// no buckets, no packing, and where the order follows record batches (a chunk or
/// windowed shuffle) one record batch per shard, so that the shards' rows are the
/// record batches' (the manifest counts a shard's record batches, not their rows).
fn plans_without_lengths(data: &ShardedDataset, config: &PlanConfig, quantiles: bool) -> bool {
    let by_record_batch = match config.shuffle {
        Shuffle::None | Shuffle::Samples { .. } => false,
        Shuffle::Chunks { .. } | Shuffle::Windowed { .. } => true,
    };
    matches!(config.batch, BatchSize::Samples(_))
        && config.buckets.is_empty()
        && !quantiles
        && config.packing.is_none()
        && (!by_record_batch || data.manifest().shards.iter().all(|s| s.batches <= 1))
}

/// The record-batch boundaries a lazy loader's plans use: the shards with a record batch
/// (the manifest's rows), as an eager loader finds them when every shard has at most one.
pub(super) fn record_batch_rows(data: &ShardedDataset) -> RowIndex {
    let shards = &data.manifest().shards;
    RowIndex::from_counts(shards.iter().filter(|s| s.batches > 0).map(|s| s.rows))
}

/// The loader over `data` whose plans are made from the manifest's row counts (see
/// [`plans_without_lengths`]): no shard is mapped until a batch reads it. Its sample
/// lengths count 1 each (the fingerprint's too, so its positions resume on such a loader
/// only); a batch's tokens are measured when it is read.
pub(super) fn build(
    data: &ShardedDataset,
    config: PlanConfig,
    length: Option<(String, usize)>,
) -> Result<Loader> {
    let columns = manifest_columns(data)?;
    let length = length_column(&columns, length)?;
    config.validate()?;
    let lengths = unit_lengths(data.num_rows())?;
    let rows = record_batch_rows(data);
    Ok(lazy_loader(
        data,
        config,
        columns,
        (lengths, rows),
        LazyShards::new(data, length),
    ))
}

/// The loader over `data` whose plans need sample lengths, read from the shards' metadata
/// (`measured.rs`) without mapping (downloading) a shard: the same lengths, record-batch
/// boundaries, plans and fingerprint as a loader that maps every shard, so the same
/// batches and positions. `None` when no column has levels (every length is 1: nothing
/// to read).
fn build_measured(
    data: &ShardedDataset,
    mut config: PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
) -> Result<Option<Loader>> {
    let columns = manifest_columns(data)?;
    let Some(length) = length_column(&columns, length)? else {
        return Ok(None);
    };
    let shards = read_lengths(data, length.0, length.1)?;
    let mut first_batch = vec![0];
    for s in &shards {
        first_batch.push(first_batch.last().expect("from 0") + s.batch_rows.len());
    }
    let rows = RowIndex::from_counts(shards.iter().flat_map(|s| s.batch_rows.iter().copied()));
    let lengths: Vec<usize> = shards.into_iter().flat_map(|s| s.lengths).collect();
    if let Some(n) = quantiles {
        config.buckets = quantile_bounds(&lengths, n)?;
    }
    config.validate()?;
    let packed = match &config.packing {
        Some(packing) => measured_packed(data, &columns, length, &lengths, packing)?,
        None => Vec::new(),
    };
    let empty = Dataset::try_new(
        data.columns()
            .iter()
            .map(|c| c.empty_column())
            .collect::<Result<_>>()?,
    )?;
    let batches = rows.num_parts();
    // The plan's tokens are the samples' own: nothing to measure per batch.
    let mut lazy = LazyShards::new(data, None);
    lazy.measured = Some(Measured {
        length,
        first_batch,
        empty: empty.clone(),
    });
    let mut loader = lazy_loader(data, config, columns, (lengths, rows), lazy);
    if !packed.is_empty() {
        // Packed batches are loaded from the loader's record batches, in their places.
        (loader.packed, loader.batches) = (packed, vec![empty; batches]);
        loader.sources = vec![Vec::new(); batches];
    }
    Ok(Some(loader))
}

/// The columns a packed batch holds (see `packed_columns`): the length column, and every
/// tensor column whose elements under each row, read from the shards' metadata, are as
/// many as its.
fn measured_packed(
    data: &ShardedDataset,
    columns: &[ColumnInfo],
    length: (usize, usize),
    lengths: &[usize],
    packing: &Packing,
) -> Result<Vec<usize>> {
    // Without batches every column counts as aligned: the length column's level is checked.
    let candidates = packed_columns(&[], columns, Some(length), lengths, packing)?;
    let mut packed = Vec::with_capacity(candidates.len());
    for c in candidates {
        let elements = |c: usize| -> Result<Vec<usize>> {
            let shards = read_lengths(data, c, columns[c].widths.len() - 1)?;
            Ok(shards.into_iter().flat_map(|s| s.lengths).collect())
        };
        if c == length.0 || elements(c)? == lengths {
            packed.push(c);
        }
    }
    Ok(packed)
}

/// What every batch of `data` shares per column, from the manifest.
fn manifest_columns(data: &ShardedDataset) -> Result<Vec<ColumnInfo>> {
    let empty = data.columns().iter().map(|c| c.empty_column());
    empty.map(|c| c.map(|c| ColumnInfo::new(&c))).collect()
}

/// A lazy loader over `data` with sample lengths and record-batch rows `(lengths, rows)`.
fn lazy_loader(
    data: &ShardedDataset,
    config: PlanConfig,
    columns: Vec<ColumnInfo>,
    (lengths, rows): (Vec<usize>, RowIndex),
    lazy: LazyShards,
) -> Loader {
    let shards = data.row_index().clone();
    let fingerprint = config.fingerprint(&lengths, rows.starts(), shards.starts());
    Loader {
        batches: Vec::new(),
        rows,
        shards,
        unchecked: Vec::new(),
        sources: Vec::new(),
        columns,
        lengths,
        packed: Vec::new(),
        blend: None,
        lazy: Some(lazy),
        config,
        fingerprint,
        plan: None,
        position: (0, 0),
        gatherer: Gatherer::default(),
    }
}

/// A measured loader's record of what its plans were made from, to check each shard
/// against when mapped.
#[derive(Debug)]
struct Measured {
    /// The length column and level.
    length: (usize, usize),
    /// Per shard, the index of its first record batch (then the total).
    first_batch: Vec<usize>,
    /// A record batch of no rows, in the place of those of shards not mapped (packing).
    empty: Dataset,
}

/// Calls `f` with every sample (row) batch `index` of `plan` reads: its samples, or for a
/// packed plan the rows of its windows' pieces.
fn each_row(plan: &Plan, index: usize, mut f: impl FnMut(usize)) {
    let ids = plan.batch(index).expect("a batch of the plan");
    match plan.windows() {
        Some(windows) => {
            let (mut pieces, mut counts) = (Vec::new(), Vec::new());
            windows.pieces_of(ids, &mut pieces, &mut counts);
            pieces.iter().for_each(|p| f(p.row));
        }
        None => ids.iter().for_each(|&s| f(s)),
    }
}

impl Loader {
    /// Packed batch `index` of `plan` over a measured loader's shards: the shards its
    /// windows read are mapped and their record batches put in their places among the
    /// loader's (the others stand empty), the batch is loaded as a loader that maps every
    /// shard loads it, and the shards the plan is done with are released.
    pub(super) fn load_packed_lazily(
        &mut self,
        plan: &Plan,
        index: usize,
    ) -> Result<(Dataset, bool)> {
        let lazy = self.lazy.as_mut().expect("a lazy loader");
        let touched = lazy.map_batch(plan, index, (&self.lengths, &self.rows))?;
        let m = lazy
            .measured
            .as_ref()
            .expect("packing over shards is measured");
        for &shard in &touched {
            let open = lazy.open[shard].as_ref().expect("mapped above");
            let first = m.first_batch[shard];
            let slots = first..first + open.batches.len();
            self.batches[slots.clone()].clone_from_slice(&open.batches);
            self.sources[slots].clone_from_slice(&open.sources);
        }
        let windows = plan.windows().expect("a packed plan");
        let ids = plan.batch(index).expect("a batch of the plan");
        let loaded = self.load_packed(windows, ids);
        let lazy = self.lazy.as_mut().expect("a lazy loader");
        let done = lazy.release_done(&touched, index);
        let m = lazy
            .measured
            .as_ref()
            .expect("packing over shards is measured");
        for shard in done {
            for b in m.first_batch[shard]..m.first_batch[shard + 1] {
                self.batches[b] = m.empty.clone();
                self.sources[b] = Vec::new();
            }
        }
        loaded
    }
}

impl Loader {
    /// Empties the record-batch places of a measured packing loader (its epoch is over and
    /// its shards released), so that it holds no mapping.
    pub(super) fn empty_places(&mut self) {
        let Some(m) = self.lazy.as_ref().and_then(|l| l.measured.as_ref()) else {
            return;
        };
        for (batch, sources) in self.batches.iter_mut().zip(&mut self.sources) {
            *batch = m.empty.clone();
            sources.clear();
        }
    }
}

/// A loader's sample lengths and record-batch rows, which a measured loader's plans were
/// made from.
pub(super) type Planned<'a> = (&'a [usize], &'a RowIndex);

/// A shard a lazy loader has mapped.
#[derive(Debug)]
struct OpenShard {
    batches: Vec<Dataset>,
    /// The shard's rows by record batch.
    rows: RowIndex,
    sources: Vec<Vec<Source>>,
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
    /// The length column and level that give a batch's tokens.
    length: Option<(usize, usize)>,
    /// For plans made from lengths read from the shards' metadata, what to check a shard
    /// against when it is mapped.
    measured: Option<Measured>,
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
            measured: None,
        }
    }

    /// How many shards are mapped now.
    #[cfg(test)]
    pub(super) fn num_open(&self) -> usize {
        self.open.iter().filter(|s| s.is_some()).count()
    }

    /// Learns when `plan` first and last reads each shard (once per epoch).
    fn follow(&mut self, plan: &Plan) {
        if self.epoch == Some(plan.epoch()) {
            return;
        }
        self.epoch = Some(plan.epoch());
        self.last_use = vec![None; self.open.len()];
        self.first_touches.clear();
        self.touch_rank = vec![0; self.open.len()];
        for i in 0..plan.len() {
            each_row(plan, i, |s| {
                let (shard, _) = self
                    .shards
                    .locate(s)
                    .expect("plans hold rows of the source");
                if self.last_use[shard].is_none() {
                    self.touch_rank[shard] = self.first_touches.len();
                    self.first_touches.push(shard);
                }
                self.last_use[shard] = Some(i);
            });
        }
    }

    /// The rows `samples` (batch `index` of `plan`) of every column, their shards mapped
    /// first (and, for a measured loader, checked against `planned`: the loader's sample
    /// lengths and record-batch rows), and the batch's tokens and longest sample; then
    /// releases the shards the plan reads no more after batch `index`.
    pub(super) fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        gatherer: &mut Gatherer,
        (columns, planned): (&[ColumnInfo], Planned<'_>),
    ) -> Result<(Dataset, bool, BatchInfo)> {
        let touched = self.map_batch(plan, index, planned)?;
        let samples = plan
            .batch(index)
            .expect("the loader asks for batches of the plan");
        let info = self.info(plan.infos()[index], samples);
        let loaded = match self.view_rows(samples) {
            Some((shard, b, rows)) => {
                gatherer.stats.views += 1;
                (self.shard(shard).batches[b].slice_rows(rows)?, true)
            }
            None => (self.gather(samples, &touched, gatherer, columns)?, false),
        };
        self.release_done(&touched, index);
        Ok((loaded.0, loaded.1, info))
    }

    /// Maps every shard batch `index` of `plan` reads (see [`LazyShards::map`]); returns
    /// them in order, each once.
    fn map_batch(&mut self, plan: &Plan, index: usize, planned: Planned<'_>) -> Result<Vec<usize>> {
        self.follow(plan);
        let mut touched = Vec::new();
        each_row(plan, index, |s| {
            let (shard, _) = self
                .shards
                .locate(s)
                .expect("plans hold rows of the source");
            touched.push(shard);
        });
        touched.sort_unstable();
        touched.dedup();
        for &shard in &touched {
            self.map(shard, planned)?;
        }
        Ok(touched)
    }

    /// Releases the shards of `touched` that the plan reads no more after batch `index`;
    /// returns them.
    fn release_done(&mut self, touched: &[usize], index: usize) -> Vec<usize> {
        let done: Vec<usize> = (touched.iter().copied())
            .filter(|&shard| self.last_use[shard].is_none_or(|last| last <= index))
            .collect();
        for &shard in &done {
            self.release(shard);
        }
        done
    }

    /// Maps `shard` unless mapped (a remote one downloaded, the plan's next shards fetched
    /// ahead), and checks its checksum unless checked.
    fn map(&mut self, shard: usize, planned: Planned<'_>) -> Result<()> {
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
                batches,
                rows,
                sources,
                pending,
            });
        }
        let open = self.open[shard].as_mut().expect("mapped above");
        if let Some(pending) = &open.pending {
            if let Err(e) = pending.verify() {
                self.release(shard);
                return Err(e);
            }
            open.pending = None;
            self.checked[shard] = true;
        }
        // After the checksum: a shard that changed is named as such.
        if mapped_now && let Err(e) = self.check_measured(shard, planned) {
            self.release(shard);
            return Err(e.in_file(self.files.location(shard)));
        }
        Ok(())
    }

    /// For a measured loader, checks that the mapped shard's record batches have the rows and sample lengths the plans were made from (the shard did not change since
    /// its metadata was read).
    fn check_measured(&self, shard: usize, planned: Planned<'_>) -> Result<()> {
        let Some(m) = &self.measured else {
            return Ok(());
        };
        let batches = &self.shard(shard).batches;
        let (lengths, rows) = planned;
        let found: Vec<usize> = batches.iter().map(Dataset::num_rows).collect();
        let then: Vec<usize> = (m.first_batch[shard]..m.first_batch[shard + 1])
            .map(|b| rows.part_rows(b).len())
            .collect();
        let changed = |what: String| {
            Err(Error::invalid(
                FileFormat::Ipc,
                format!("changed since the loader read its metadata: {what}"),
            ))
        };
        if found != then {
            return changed(format!("record batches of {found:?} rows, {then:?} then"));
        }
        let global = self.shards.part_rows(shard);
        let found = sample_lengths(batches, Some(m.length), global.len());
        if let Some(i) = (0..found.len()).find(|&i| found[i] != lengths[global.start + i]) {
            let then = lengths[global.start + i];
            return changed(format!("row {i} has length {}, {then} then", found[i]));
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

    fn shard(&self, shard: usize) -> &OpenShard {
        self.open[shard]
            .as_ref()
            .expect("the batch's shards are mapped")
    }

    /// `planned` with the tokens and longest sample of `samples`, from the length column.
    fn info(&self, planned: BatchInfo, samples: &[usize]) -> BatchInfo {
        let Some((c, level)) = self.length else {
            return planned;
        };
        let (mut tokens, mut max_len) = (0, 0);
        for &s in samples {
            let (shard, row) = self
                .shards
                .locate(s)
                .expect("plans hold rows of the source");
            let open = self.shard(shard);
            let (b, local) = open.rows.locate(row).expect("a shard holds its rows");
            let lod = open.batches[b].columns()[c]
                .as_tensor()
                .expect("the length column is a tensor")
                .lod();
            let len = lod.descend(0, local..local + 1, level + 1).len();
            tokens += len;
            max_len = max_len.max(len);
        }
        BatchInfo {
            tokens,
            max_len,
            ..planned
        }
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
            let open = self.shard(shard);
            base.push(total);
            total += open.rows.num_rows();
            counts.extend(open.batches.iter().map(Dataset::num_rows));
            sources.extend(open.sources.iter().cloned());
        }
        let rows = RowIndex::from_counts(counts);
        let local: Vec<usize> = samples
            .iter()
            .map(|&s| {
                let (shard, row) = self
                    .shards
                    .locate(s)
                    .expect("plans hold rows of the source");
                let k = sorted.binary_search(&shard).expect("a touched shard");
                base[k] + row
            })
            .collect();
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
        let open = |l: &Loader| l.lazy.as_ref().expect("a lazy loader").num_open();
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
