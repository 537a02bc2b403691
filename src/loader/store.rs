//! Where a loader's rows come from: one [`RowStore`] per kind of storage, chosen once when
//! the loader is built, and the [`PlanInputs`] its plans are made from, computed once.
//!
//! ```text
//! LoaderSource ──open──▶ store                            plan inputs (once)
//!   a file, a mixture,    mapped.rs    every record batch  lengths, record-batch rows,
//!   shards (eager)                     mapped now          shard rows, packed columns
//!   shards, plan needs    lazy.rs      each shard mapped   lengths 1, the manifest's rows
//!   no lengths                         when a batch reads it
//!   shards, plan needs    measured.rs  as lazy, packed     the lengths index, else the
//!   lengths                            from their places   shards' metadata (`measured.rs`)
//! ```
//!
//! The plan (`plan.rs`, `pack.rs`, `order.rs`) knows nothing of stores; a store loads the
//! batches of a plan: a view of a mapping, or gathered (`gather.rs`), or packed
//! (`packed.rs`), from the record batches in their places ([`Places`]).

use std::fmt::Debug;

use super::builder::LoaderSource;
use super::config::PlanConfig;
use super::gather::{ColumnInfo, Gatherer};
use super::lengths::quantile_bounds;
use super::mix::Blend;
use super::packed::check_pad_last;
use super::place::Lies;
use super::plan::{BatchInfo, Plan};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::row_index::RowIndex;

mod ahead;
mod lazy;
mod mapped;
mod measured;
mod ranged;

pub(super) use mapped::{Places, view_rows};

/// A loader's storage: it loads the batches of the loader's plans.
pub(super) trait RowStore: Debug + Send {
    /// Batch `index` of `plan` (made from `inputs`): its columns, whether it is a view of
    /// a mapping (and of which file), and its tokens and longest sample.
    fn load(
        &mut self,
        plan: &Plan,
        index: usize,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
    ) -> Result<(Dataset, Lies, BatchInfo)>;

    /// Whether the rows `samples` (a batch of a plan without windows) would load as a view
    /// with no work but slicing.
    fn is_view(&self, samples: &[usize], inputs: &PlanInputs) -> bool;

    /// The epoch is over: what the store holds for it goes.
    fn end_epoch(&mut self) {}

    /// The loader reads every `step`-th batch of its plans (ranks taking turns): a store
    /// reading ahead reads the rows of those alone.
    fn take_turns(&mut self, _step: usize) {}

    /// Every sample's length, read now, for a store whose plans count each sample as 1
    /// (`None` for the others: their plans have the lengths).
    fn measure_lengths(&self) -> Option<Result<Vec<u32>>> {
        None
    }

    /// How many shards the store has mapped now.
    #[cfg(test)]
    fn num_open(&self) -> usize {
        0
    }
}

/// What a loader's plans are made from, computed once when it is built.
#[derive(Debug)]
pub(super) struct PlanInputs {
    /// What every batch shares per column.
    pub columns: Vec<ColumnInfo>,
    /// Every sample's length (1 each for a store whose plans need none).
    pub lengths: Vec<u32>,
    /// The rows of every record batch, in order.
    pub rows: RowIndex,
    /// The rows of every shard (a file is one shard; a mixture's sources' shards follow
    /// each other).
    pub shards: RowIndex,
    /// The columns a packed batch holds (empty unless packing).
    pub packed: Vec<usize>,
}

impl PlanInputs {
    /// The inputs of plans over samples of `lengths` in record batches of `rows`: the
    /// quantile buckets set (`quantiles`), `config` checked, and with packing the columns
    /// `packed` finds.
    ///
    /// # Errors
    /// [`PlanConfig::validate`]'s; `quantile_bounds`' and `packed`'s.
    pub(super) fn new(
        config: &mut PlanConfig,
        quantiles: Option<usize>,
        (columns, lengths): (Vec<ColumnInfo>, Vec<u32>),
        (rows, shards): (RowIndex, RowIndex),
        packed: impl FnOnce(&[ColumnInfo], &[u32]) -> Result<Vec<usize>>,
    ) -> Result<Self> {
        if let Some(n) = quantiles {
            config.buckets = quantile_bounds(&lengths, n)?;
        }
        config.validate()?;
        let packed = match &config.packing {
            Some(packing) => {
                check_pad_last(packing, &lengths)?;
                packed(&columns, &lengths)?
            }
            None => Vec::new(),
        };
        Ok(PlanInputs {
            columns,
            lengths,
            rows,
            shards,
            packed,
        })
    }
}

/// A store opened, with its plans' inputs and a mixture's blend.
pub(super) type Opened = (Box<dyn RowStore>, PlanInputs, Option<Blend>);

/// The store of `source`, decided once: over shards with `ranges`, a store that reads
/// each batch's rows by range requests; with `lazy`, a store that maps each shard when a
/// batch reads it where the plans can be made without mapping them (from the manifest, or
/// from the lengths index or the shards' metadata); else every record batch mapped now.
///
/// # Errors
/// The source's (mapping and checking shards, reading their metadata); a length column
/// or level it does not have; [`PlanInputs::new`]'s; [`ArgumentError::LoaderConfig`]
/// (`range_reads`) for range reads of a source that is not sharded, or of shards mapped
/// eagerly.
///
/// [`ArgumentError::LoaderConfig`]: crate::ArgumentError::LoaderConfig
pub(super) fn open(
    source: LoaderSource<'_>,
    config: &mut PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
    (lazy, ranges): (bool, bool),
) -> Result<Opened> {
    if ranges {
        return match source {
            LoaderSource::Shards(data) if lazy => ranged::open(data, config, length, quantiles),
            _ => Err(crate::error::ArgumentError::LoaderConfig {
                option: "range_reads",
                reason: "reads the shards of a sharded dataset, lazily (not a file, a mixture \
                         or shards mapped when the loader is built)"
                    .into(),
            }
            .into()),
        };
    }
    if let LoaderSource::Shards(data) = source
        && lazy
    {
        if lazy::plans_without_lengths(data, config, quantiles.is_some()) {
            return lazy::open(data, config, length);
        }
        if let Some(opened) = measured::open(data, config, length.clone(), quantiles)? {
            return Ok(opened);
        }
    }
    mapped::open(source, config, length, quantiles)
}

/// The rows of batch `index` of `plan`.
///
/// # Errors
/// [`ErrorKind::Internal`](crate::error::ErrorKind::Internal) for a batch the plan has
/// not: a loader asks for its plan's batches only.
pub(super) fn batch_of(plan: &Plan, index: usize) -> Result<&[usize]> {
    plan.batch(index).ok_or_else(|| {
        Error::internal(format!("batch {index} of a plan of {} batches", plan.len()))
    })
}
