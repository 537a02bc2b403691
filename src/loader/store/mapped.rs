//! The store of a source whose every record batch is mapped when the loader is built: a
//! file, a mixture, or shards mapped and checked against the manifest (eagerly).

use std::ops::Range;

use super::{Opened, PlanInputs, RowStore, batch_of};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::loader::builder::{LoaderSource, Sourced};
use crate::loader::config::PlanConfig;
use crate::loader::gather::{Gatherer, Source};
use crate::loader::lengths::{length_column, sample_lengths};
use crate::loader::packed::packed_columns;
use crate::loader::place::{Lies, MappedFiles};
use crate::loader::plan::{BatchInfo, Plan};
use crate::row_index::RowIndex;
use crate::shards::PendingChecksum;

/// The record batches a loader reads, each in its place among the source's (numbered as
/// [`PlanInputs::rows`] numbers them), and the checksums of shards not read yet.
#[derive(Debug)]
pub(in crate::loader) struct Places {
    pub batches: Vec<Dataset>,
    /// Each record batch's columns, as the gathering reads them.
    pub sources: Vec<Vec<Source>>,
    /// Every shard whose checksum is still to check before a batch reads it, by shard
    /// (empty once none is left).
    pub unchecked: Vec<Option<PendingChecksum>>,
}

impl Places {
    /// `batches` in their places, the shards `unchecked` still to check.
    pub(in crate::loader) fn new(
        batches: Vec<Dataset>,
        unchecked: Vec<Option<PendingChecksum>>,
    ) -> Self {
        let sources = (batches.iter())
            .map(|b| b.columns().iter().map(Source::new).collect())
            .collect();
        Places {
            batches,
            sources,
            unchecked,
        }
    }

    /// Checks the checksum of every shard (of `shards`) `samples` read that has not been
    /// checked yet.
    pub(in crate::loader) fn check_shards(
        &mut self,
        samples: &[usize],
        shards: &RowIndex,
    ) -> Result<()> {
        if self.unchecked.is_empty() {
            return Ok(());
        }
        for &s in samples {
            let Some((shard, _)) = shards.locate(s) else {
                continue; // Not a row of the source: the gathering names it.
            };
            if let Some(pending) = &self.unchecked[shard] {
                pending.verify()?;
                self.unchecked[shard] = None;
                if self.unchecked.iter().all(Option::is_none) {
                    self.unchecked.clear(); // Nothing left to check.
                    break;
                }
            }
        }
        Ok(())
    }

    /// The rows `samples` of every column: a view when they are consecutive rows of one
    /// record batch, else gathered.
    fn load(
        &mut self,
        samples: &[usize],
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, bool)> {
        self.check_shards(samples, &inputs.shards)?;
        if let Some((b, rows)) = view_rows(samples, &inputs.rows) {
            gatherer.stats.views += 1;
            return Ok((self.batches[b].slice_rows(rows)?, true));
        }
        let data = gatherer.gather(samples, &inputs.rows, &self.sources, &inputs.columns)?;
        Ok((data, false))
    }
}

/// (record batch, its rows) when `samples` are consecutive rows of one record batch of
/// `rows`.
pub(in crate::loader) fn view_rows(
    samples: &[usize],
    rows: &RowIndex,
) -> Option<(usize, Range<usize>)> {
    let (&first, &last) = (samples.first()?, samples.last()?);
    let (b, _) = rows.locate(first)?;
    let part = rows.part_rows(b);
    let contiguous = last >= first
        && last - first + 1 == samples.len()
        && last < part.end
        && samples.windows(2).all(|w| w[1] == w[0] + 1);
    contiguous.then(|| (b, first - part.start..last + 1 - part.start))
}

/// Every record batch of a source, mapped.
#[derive(Debug)]
struct MappedStore {
    places: Places,
    /// The files they lie in.
    files: MappedFiles,
}

impl RowStore for MappedStore {
    fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)> {
        let ids = batch_of(plan, index)?;
        let (data, view) = match plan.windows() {
            Some(windows) => self.places.load_packed(inputs, gatherer, windows, ids)?,
            None => self.places.load(ids, inputs, gatherer)?,
        };
        let lies = Lies::of(view, &data, &self.files);
        Ok((data, lies, plan.infos()[index]))
    }

    fn is_view(&self, samples: &[usize], inputs: &PlanInputs) -> bool {
        view_rows(samples, &inputs.rows).is_some()
    }
}

/// The store of `source` with every record batch mapped (every shard mapped and checked
/// against the manifest), and its plans' inputs.
///
/// # Errors
/// Mapping the shards; a length column or level the source does not have;
/// [`PlanInputs::new`]'s; a mixture's sources that differ.
pub(super) fn open(
    source: LoaderSource<'_>,
    config: &mut PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
) -> Result<Opened> {
    let Sourced {
        batches,
        files,
        shards,
        unchecked,
        columns,
        blend,
    } = source.read()?;
    let rows = RowIndex::from_counts(batches.iter().map(Dataset::num_rows));
    let length = length_column(&columns, length)?;
    let lengths = sample_lengths(&batches, length, rows.num_rows())?;
    let inputs = PlanInputs::new(
        config,
        quantiles,
        (columns, lengths),
        (rows, shards),
        |columns, lengths| packed_columns(&batches, columns, length, lengths),
    )?;
    let store = MappedStore {
        places: Places::new(batches, unchecked),
        files: MappedFiles::new(&files),
    };
    Ok((Box::new(store), inputs, blend))
}
