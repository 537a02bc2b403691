//! One batch of a [`Loader`](super::Loader): its columns and where it stands in its epoch.

use std::ops::Range;
use std::sync::Arc;

#[cfg(doc)]
use super::Loader;
use super::{BatchInfo, Fingerprint, Plan, Position};
#[cfg(doc)]
use crate::ArgumentError;
use crate::dataset::Dataset;
use crate::error::Result;
use crate::ops::{Padded, to_padded};
use crate::values::{DType, Values};

/// One batch: a dataset of every column for the batch's samples, and where it stands.
#[derive(Clone, Debug)]
pub struct Batch {
    pub(super) data: Dataset,
    pub(super) view: bool,
    pub(super) plan: Arc<Plan>,
    /// The batch's index in the plan.
    pub(super) index: usize,
    /// The step the batch was read in, and the next one (`index..index + 1` unless ranks
    /// take turns).
    pub(super) steps: Range<usize>,
    pub(super) fingerprint: Fingerprint,
}

impl Batch {
    /// The batch's columns.
    pub fn data(&self) -> &Dataset {
        &self.data
    }

    /// The dataset, dropping the rest.
    pub fn into_dataset(self) -> Dataset {
        self.data
    }

    /// Whether the batch is a view into the mapping (else it was gathered, copied once).
    pub fn is_view(&self) -> bool {
        self.view
    }

    /// The samples (global row numbers of the file), in batch order.
    pub fn samples(&self) -> &[usize] {
        self.plan
            .batch(self.index)
            .expect("the batch is in its plan")
    }

    fn info(&self) -> &BatchInfo {
        &self.plan.infos()[self.index]
    }

    /// The sum of the samples' lengths.
    pub fn tokens(&self) -> usize {
        self.info().tokens
    }

    /// The longest sample's length.
    pub fn max_len(&self) -> usize {
        self.info().max_len
    }

    /// Whether this is a single sample longer than the token budget.
    pub fn is_oversize(&self) -> bool {
        self.info().oversize
    }

    /// The share of padding were the samples padded to the longest, in `0..=1`.
    pub fn padding_ratio(&self) -> f64 {
        self.info().padding_ratio()
    }

    /// This batch's position (when ranks take turns: that of the step it was read in).
    pub fn position(&self) -> Position {
        Position {
            epoch: self.plan.epoch(),
            batch: self.steps.start,
            fingerprint: self.fingerprint,
        }
    }

    /// The position after this batch: save it once the batch is trained on, restore it with
    /// [`Loader::seek`] to continue with the next batch (when ranks take turns: with the
    /// next step, the same position on every rank).
    pub fn next_position(&self) -> Position {
        Position {
            batch: self.steps.end,
            ..self.position()
        }
    }

    /// The batch's index in its epoch's [`Plan`].
    pub fn index(&self) -> usize {
        self.index
    }

    /// A zero-padded copy of level `level` of column `column`: the sequences of that level
    /// as rows `[rows, max_len, D…]`, with lengths and mask ([`crate::ops::to_padded`]).
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`]; as [`crate::ops::to_padded`] ([`ArgumentError::LevelOutOfBounds`]
    /// for a 0-level column, which is dense already).
    pub fn to_padded(&self, column: &str, level: usize) -> Result<Padded> {
        let tensor = self.data.column(column)?;
        to_padded(tensor, level, &zero(tensor.dtype())?, None)
    }
}

/// One zero item (`false` for booleans) of `dtype`.
pub(super) fn zero(dtype: DType) -> Result<Values> {
    let data = arrow_data::ArrayData::builder(dtype.arrow_type())
        .len(1)
        .add_buffer(arrow_buffer::Buffer::from_vec(vec![0u64]))
        .build()?;
    Values::try_new(arrow_array::make_array(data), vec![])
}
