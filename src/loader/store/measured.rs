//! The store of shards (local or by URL) whose plans need sample lengths (a token budget,
//! buckets, packing, a chunk or windowed shuffle over shards of several record batches):
//! the lengths and record-batch rows read from the dataset's lengths index, or else from
//! the shards' metadata (`loader/measured.rs`), without mapping or downloading a shard, so
//! the same plans, batches and fingerprint as a loader that maps every shard; each shard
//! mapped when a batch reads it (as the lazy store does) and checked against what the plans
//! were made from; a packed batch loaded from the shards' record batches put in their
//! places among the source's.

use super::lazy::{LazyShards, manifest_columns};
use super::mapped::Places;
use super::{Opened, PlanInputs, RowStore, batch_of};
use crate::dataset::Dataset;
use crate::error::{Error, FileFormat, Result};
use crate::loader::config::PlanConfig;
use crate::loader::gather::Gatherer;
use crate::loader::lengths::{length_column, sample_lengths};
use crate::loader::measured::read_columns;
use crate::loader::packed::packed_columns;
use crate::loader::place::{Lies, MappedFiles};
use crate::loader::plan::{BatchInfo, Plan};
use crate::row_index::RowIndex;
use crate::shards::ShardedDataset;

/// The store over `data` whose plans' lengths are read from the shards' metadata.
/// `None` when no column has levels (every length is 1: nothing to read).
///
/// # Errors
/// The reads' (`read_columns`); a length column or level the dataset does not have;
/// [`PlanInputs::new`]'s.
pub(super) fn open(
    data: &ShardedDataset,
    config: &mut PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
) -> Result<Option<Opened>> {
    let columns = manifest_columns(data)?;
    let Some(length) = length_column(&columns, length)? else {
        return Ok(None);
    };
    // The length column's, then those of the columns a packed batch may hold: every
    // shard's footer and messages read once for all.
    let mut read = vec![length];
    if config.packing.is_some() {
        let candidates = packed_columns(&[], &columns, Some(length), &[])?;
        let last_level = |c: usize| columns[c].widths.len().saturating_sub(1);
        read.extend(
            (candidates.into_iter())
                .filter(|&c| c != length.0)
                .map(|c| (c, last_level(c))),
        );
    }
    let mut read_all = read_columns(data.files(), &read)?.into_iter();
    let shards = read_all.next().unwrap_or_default();
    let others: Vec<(usize, Vec<u32>)> = (read[1..].iter().zip(read_all))
        .map(|(&(c, _), shards)| (c, shards.lengths))
        .collect();
    let mut first_batch = Vec::with_capacity(shards.batches.len() + 1);
    first_batch.push(0);
    for &n in &shards.batches {
        first_batch.push(first_batch[first_batch.len() - 1] + n);
    }
    let rows = RowIndex::from_counts(shards.batch_rows);
    let lengths = shards.lengths;
    let inputs = PlanInputs::new(
        config,
        quantiles,
        (columns, lengths),
        (rows, data.row_index().clone()),
        |_, lengths| {
            // The length column, and every column with as many elements under each row.
            let aligned = others.iter().filter(|(_, elements)| elements == lengths);
            let mut packed: Vec<usize> = aligned.map(|&(c, _)| c).collect();
            packed.push(length.0);
            packed.sort_unstable(); // In column order, as `packed_columns` gives them.
            Ok(packed)
        },
    )?;
    let empty = Dataset::try_new(
        data.columns()
            .iter()
            .map(|c| c.empty_column())
            .collect::<Result<_>>()?,
    )?;
    // Packed batches are loaded from the record batches in their places; the others
    // from the shards mapped.
    let n = match inputs.packed.is_empty() {
        true => 0,
        false => inputs.rows.num_parts(),
    };
    let places = Places {
        batches: vec![empty.clone(); n],
        sources: vec![Vec::new(); n],
        unchecked: Vec::new(),
    };
    let store = MeasuredStore {
        // The plan's tokens are the samples' own: nothing to measure per batch.
        shards: LazyShards::new(data, None),
        measured: Measured {
            length,
            first_batch,
        },
        empty,
        places,
    };
    Ok(Some((Box::new(store), inputs, None)))
}

/// Shards mapped as batches reach them, the plans made from their metadata.
#[derive(Debug)]
struct MeasuredStore {
    shards: LazyShards,
    /// What the plans were made from, to check each shard against when mapped.
    measured: Measured,
    /// A record batch of no rows, in the place of those of shards not mapped (packing).
    empty: Dataset,
    /// Every record batch in its place, those of the shards not mapped empty (packing
    /// only: else none).
    places: Places,
}

/// What a measured store's plans were made from, besides the plan inputs.
#[derive(Debug)]
struct Measured {
    /// The length column and level.
    length: (usize, usize),
    /// Per shard, the index of its first record batch (then the total).
    first_batch: Vec<usize>,
}

impl Measured {
    /// Checks that shard `shard`'s record batches `batches`, just mapped, have the rows
    /// and sample lengths the plans were made from (`inputs`): the shard did not change
    /// since its metadata was read.
    fn check(&self, shard: usize, batches: &[Dataset], inputs: &PlanInputs) -> Result<()> {
        let found: Vec<usize> = batches.iter().map(Dataset::num_rows).collect();
        let then: Vec<usize> = (self.first_batch[shard]..self.first_batch[shard + 1])
            .map(|b| inputs.rows.part_rows(b).len())
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
        let global = inputs.shards.part_rows(shard);
        let found = sample_lengths(batches, Some(self.length), global.len())?;
        let lengths = &inputs.lengths;
        if let Some(i) = (0..found.len()).find(|&i| found[i] != lengths[global.start + i]) {
            let then = lengths[global.start + i];
            return changed(format!("row {i} has length {}, {then} then", found[i]));
        }
        Ok(())
    }
}

impl MeasuredStore {
    /// Packed batch `index` of `plan`: the shards its windows read are mapped and their
    /// record batches put in their places (the others stand empty), the batch is loaded
    /// as a store that maps every shard loads it, and the shards the plan is done with are
    /// released.
    fn load_packed(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies)> {
        let measured = &self.measured;
        let check = |shard: usize, batches: &[Dataset]| measured.check(shard, batches, inputs);
        let touched = self.shards.map_batch(plan, index, Some(&check))?;
        for &shard in &touched {
            let open = self.shards.shard(shard)?;
            let first = measured.first_batch[shard];
            let slots = first..first + open.batches.len();
            self.places.batches[slots.clone()].clone_from_slice(&open.batches);
            self.places.sources[slots].clone_from_slice(&open.sources);
        }
        let ids = batch_of(plan, index)?;
        let loaded = match plan.windows() {
            Some(windows) => self.places.load_packed(inputs, gatherer, windows, ids),
            None => Err(Error::internal("a packed load of a plan without windows")),
        };
        let loaded = loaded.map(|(data, view)| {
            let open = touched.iter().filter_map(|&s| self.shards.shard(s).ok());
            let files = MappedFiles::new(open.filter_map(|o| o.file.as_ref()));
            let lies = Lies::of(view, &data, &files);
            (data, lies)
        });
        for shard in self.shards.release_done(&touched, index) {
            let first = &self.measured.first_batch;
            let batches = first[shard]..first[shard + 1];
            self.empty_places(batches);
        }
        loaded
    }

    /// Empties the places of record batches `batches` (their shard released), so that
    /// the store holds no mapping of it.
    fn empty_places(&mut self, batches: std::ops::Range<usize>) {
        let places = &mut self.places;
        let n = places.batches.len();
        for b in batches.filter(|&b| b < n) {
            places.batches[b] = self.empty.clone();
            places.sources[b].clear();
        }
    }
}

impl RowStore for MeasuredStore {
    fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        if plan.windows().is_some() {
            let (data, lies) = self.load_packed(plan, index, inputs, gatherer)?;
            return Ok((data, lies, plan.infos()[index]));
        }
        let measured = &self.measured;
        let check = |shard: usize, batches: &[Dataset]| measured.check(shard, batches, inputs);
        (self.shards).load(plan, index, gatherer, &inputs.columns, Some(&check))
    }

    fn is_view(&self, samples: &[usize], _inputs: &PlanInputs) -> bool {
        self.shards.view_rows(samples).is_some()
    }

    fn end_epoch(&mut self) {
        self.shards.release_all();
        self.empty_places(0..self.places.batches.len());
    }

    #[cfg(test)]
    fn num_open(&self) -> usize {
        self.shards.num_open()
    }
}
