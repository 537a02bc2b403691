//! The store of a loader that reads its batches by range requests
//! ([`LoaderBuilder::with_range_reads`](crate::loader::LoaderBuilder::with_range_reads)):
//! the plans of the lazy or measured store (the manifest's rows, or the lengths index, or
//! the shards' metadata), each batch's rows then taken as `take` takes them — a shard at
//! hand mapped, any other's rows read by ranges, their bytes alone, nothing written to the
//! node's cache.

use super::lazy::{self, manifest_columns, plans_without_lengths};
use super::{Opened, PlanInputs, RowStore, batch_of, measured};
use crate::dataset::Dataset;
use crate::error::{ArgumentError, Result};
use crate::loader::config::PlanConfig;
use crate::loader::gather::Gatherer;
use crate::loader::lengths::{length_column, sample_lengths};
use crate::loader::place::Lies;
use crate::loader::plan::{BatchInfo, Plan};
use crate::shards::ShardedDataset;

/// The store over `data` whose batches are read by ranges, its plans made as the lazy
/// store's or the measured store's are.
///
/// # Errors
/// [`ArgumentError::LoaderConfig`] (`range_reads`) with packing; the plans' inputs' errors.
pub(super) fn open(
    data: &ShardedDataset,
    config: &mut PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
) -> Result<Opened> {
    if config.packing.is_some() {
        return Err(ArgumentError::LoaderConfig {
            option: "range_reads",
            reason: "packed batches are read from whole shards (not by ranges yet)".into(),
        }
        .into());
    }
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
        data: data.sharing(),
        measure,
    };
    Ok((Box::new(store), inputs, blend))
}

/// Batches taken from the shards, by ranges where a shard is not at hand.
#[derive(Debug)]
struct RangedStore {
    /// The dataset, its shards mapped by this store alone.
    data: ShardedDataset,
    /// The length column and level a batch's tokens are counted in.
    measure: Option<(usize, usize)>,
}

impl RowStore for RangedStore {
    fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        _inputs: &PlanInputs,
        _gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        let samples = batch_of(plan, index)?;
        let batch = self.data.take(samples)?;
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
}
