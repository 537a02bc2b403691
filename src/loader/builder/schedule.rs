//! Options over training ([`Schedule`]): a batch size, token budget or pack length that
//! changes at points in global tokens read.

use super::{BATCHING, LoaderBuilder};
use crate::loader::config::BatchSize;
use crate::loader::schedule::Schedule;

impl LoaderBuilder<'_> {
    /// Batches of a number of samples (or packed windows) that changes over training: each
    /// value from the first global step at or past its point. Ranks take turns in global
    /// steps (as [`LoaderBuilder::elastic_shard`]) whichever way they were sharded. Not with
    /// [`LoaderBuilder::with_batch_size`] or a token budget.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Schedule};
    /// // Samples of 1..=5 tokens: a batch of 1, then (3 tokens read) batches of 2.
    /// let ramp = Schedule::new(vec![(0, 1), (3, 2)])?;
    /// let loader = Loader::builder(&file).with_batch_size_schedule(ramp).build()?;
    /// assert_eq!(loader.plan(0).batches().collect::<Vec<_>>(), [&[0][..], &[1], &[2, 3], &[4]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_batch_size_schedule(mut self, schedule: Schedule<usize>) -> Self {
        self.choose(BATCHING, "batch_size");
        self.schedules.batch = Some(schedule.map(BatchSize::Samples));
        self
    }

    /// A token budget that changes over training, as
    /// [`LoaderBuilder::with_batch_size_schedule`] does the batch size.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Schedule};
    /// let budgets = Schedule::new(vec![(0, 3), (3, 9)])?;
    /// let loader = Loader::builder(&file).with_token_budget_schedule(budgets).build()?;
    /// assert_eq!(loader.plan(0).batches().collect::<Vec<_>>(), [&[0, 1][..], &[2, 3], &[4]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_token_budget_schedule(mut self, schedule: Schedule<usize>) -> Self {
        self.choose(BATCHING, "token_budget");
        self.schedules.batch = Some(schedule.map(BatchSize::Tokens));
        self
    }

    /// A pack length (`seq_len` of [`LoaderBuilder::with_packing`], which gives the other
    /// packing options) that changes over training: sequence-length warm-up. From each
    /// point on, the tokens no window has read are packed to the new length; a
    /// [`Mixture`](crate::loader::Mixture)'s, each source's that no window drawn from it
    /// holds (weights that change over training switch at the tokens drawn, each window
    /// counted at its own length).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing, Schedule};
    /// let warm_up = Schedule::new(vec![(0, 2), (4, 4)])?;
    /// let loader = Loader::builder(&file).with_batch_size(1)
    ///     .with_packing(Packing::new(2)).with_pack_schedule(warm_up).build()?;
    /// let plan = loader.plan(0);
    /// let windows = plan.windows().expect("packed");
    /// let lens: Vec<usize> = (0..windows.len()).map(|w| windows.pieces(w).iter().map(|p| p.n_tokens).sum()).collect();
    /// assert_eq!(lens, [2, 2, 4, 4]);      // 15 tokens: two windows of 2, then of 4
    /// assert_eq!(windows.dropped_tokens(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_pack_schedule(mut self, schedule: Schedule<usize>) -> Self {
        self.schedules.pack = Some(schedule);
        self
    }
}
