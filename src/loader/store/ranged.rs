//! The store of a loader that reads its batches by range requests
//! ([`LoaderBuilder::with_range_reads`](crate::loader::LoaderBuilder::with_range_reads)):
//! the plans of the lazy or measured store (the manifest's rows, or the lengths index, or
//! the shards' metadata), each batch's rows then taken as `take` takes them — a shard at
//! hand mapped, any other's rows read by ranges, their bytes alone, nothing written to the
//! node's cache; the rows of the coming batches read with them and held
//! ([`ReadAhead`]). A packed batch takes the rows its windows' pieces read and packs them
//! as the other stores do, over those rows alone.

use std::iter::StepBy;
use std::ops::Range;
use std::sync::Arc;

use super::ahead::{Asked, Coming, Read, ReadAhead};
use super::lazy::{self, each_row, manifest_columns, plans_without_lengths};
use super::mapped::Places;
use super::{Opened, PlanInputs, RowStore, batch_of, measured};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::loader::batch::Batch;
use crate::loader::config::PlanConfig;
use crate::loader::gather::Gatherer;
use crate::loader::lengths::{length_column, sample_lengths};
use crate::loader::place::Lies;
use crate::loader::plan::{BatchInfo, Plan};
use crate::row_index::RowIndex;
use crate::shards::ShardedDataset;

/// The store over `data` whose batches are read by ranges, its plans made as the lazy
/// store's or the measured store's are.
///
/// # Errors
/// The plans' inputs' errors.
pub(super) fn open(
    data: &ShardedDataset,
    config: &mut PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
) -> Result<Opened> {
    let measure = length_column(&manifest_columns(data)?, length.clone())?;
    let plans = match plans_without_lengths(data, config, quantiles.is_some()) {
        true => Some(lazy::open(data, config, length.clone())?),
        false => measured::open(data, config, length, quantiles)?,
    };
    let (_, inputs, blend) = match plans {
        Some(opened) => opened,
        // No column with levels: every length is 1, as the lazy store counts them.
        None => lazy::open(data, config, None)?,
    };
    let store = RangedStore {
        data: Arc::new(data.sharing()),
        measure,
        ahead: ReadAhead::new(mean_row_bytes(data), 1),
    };
    Ok((Box::new(store), inputs, blend))
}

/// The bytes of `data`'s shards over its rows (at least 1).
fn mean_row_bytes(data: &ShardedDataset) -> u64 {
    let shards = &data.manifest().shards;
    let bytes: u64 = shards.iter().map(|s| s.bytes).sum();
    bytes / (data.num_rows() as u64).max(1)
}

/// Batches taken from the shards, by ranges where a shard is not at hand.
#[derive(Debug)]
struct RangedStore {
    /// The dataset, its shards mapped by this store alone (and read by ranges on the
    /// threads reading ahead).
    data: Arc<ShardedDataset>,
    /// The length column and level a batch's tokens are counted in.
    measure: Option<(usize, usize)>,
    /// The rows read for the coming batches.
    ahead: ReadAhead,
}

impl RowStore for RangedStore {
    fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        if plan.windows().is_some() {
            return self.load_packed(plan, index, inputs, gatherer);
        }
        let samples = batch_of(plan, index)?;
        let batch = self.take(plan, index, samples)?;
        let lengths = sample_lengths(
            std::slice::from_ref(batch.data()),
            self.measure,
            samples.len(),
        )?;
        let info = BatchInfo {
            tokens: lengths.iter().map(|&l| l as usize).sum(),
            max_len: lengths.iter().copied().max().unwrap_or(0) as usize,
            ..plan.infos()[index]
        };
        let lies = match batch.is_view() {
            true => Lies::View(batch.file.clone()),
            false => Lies::Gathered,
        };
        Ok((batch.data().clone(), lies, info))
    }

    fn is_view(&self, _samples: &[usize], _inputs: &PlanInputs) -> bool {
        false
    }

    fn end_epoch(&mut self) {
        self.ahead.end_epoch();
    }

    fn take_turns(&mut self, step: usize) {
        self.ahead.set_step(step);
    }
}

impl RangedStore {
    /// Rows `rows` of batch `index` of `plan`, those of shards not at hand from the rows
    /// read ahead ([`ReadAhead`]).
    fn take(&mut self, plan: &Plan, index: usize, rows: &[usize]) -> Result<Batch> {
        let (data, ahead) = (&self.data, &mut self.ahead);
        let read: Read = {
            let data = Arc::clone(data);
            Arc::new(move |wanted: &[(usize, usize)]| data.rows_by_ranges(wanted, None, false))
        };
        data.take_with(rows, None, |located| {
            ahead.runs_for(index, located, &PlanRows { plan, data }, &read)
        })
    }

    /// Packed batch `index` of `plan`: the rows its windows' pieces read, taken in row
    /// order, then packed as a store holding those rows alone would pack them.
    fn load_packed(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        let (ids, windows) = (batch_of(plan, index)?, plan.windows());
        let windows = windows.ok_or_else(|| Error::internal("a packed load without windows"))?;
        let mut rows = Vec::new();
        each_row(plan, index, |row| {
            rows.push(row);
            Ok(())
        })?;
        rows.sort_unstable();
        rows.dedup();
        let taken = self.take(plan, index, &rows)?;
        let at = |row: usize| rows.partition_point(|&r| r < row);
        let local = windows.subset(ids, at);
        let one = RowIndex::from_counts([rows.len()]);
        let own = PlanInputs {
            columns: inputs.columns.clone(),
            lengths: rows.iter().map(|&r| inputs.lengths[r]).collect(),
            rows: one.clone(),
            shards: one,
            packed: inputs.packed.clone(),
        };
        let mut places = Places::new(vec![taken.data().clone()], Vec::new());
        let all: Vec<usize> = (0..ids.len()).collect();
        let (data, view) = places.load_packed(&own, gatherer, &local, &all)?;
        let lies = match view {
            true => Lies::View(None),
            false => Lies::Gathered,
        };
        Ok((data, lies, plan.infos()[index]))
    }
}

/// A plan's rows in the dataset's shards, for the read-ahead.
struct PlanRows<'a> {
    plan: &'a Plan,
    data: &'a ShardedDataset,
}

impl Coming for PlanRows<'_> {
    fn batches(&self) -> usize {
        self.plan.len()
    }

    fn rows(&self, batches: StepBy<Range<usize>>) -> Result<Vec<Asked>> {
        let mut located = Vec::new();
        for batch in batches.take_while(|&b| b < self.plan.len()) {
            each_row(self.plan, batch, |row| {
                let (shard, row) = self.data.row_index().try_locate(row)?;
                located.push((shard, row, batch));
                Ok(())
            })?;
        }
        Ok(located)
    }

    fn at_hand(&self, shard: usize) -> bool {
        self.data.files().at_hand(shard)
    }
}
