//! The batch plan of one epoch: which samples, in which order, in which batches.
//!
//! A plan is a pure function of the per-sample lengths, the file's record-batch boundaries,
//! the options and the epoch, so it is the same on every machine and every run:
//!
//! ```text
//! 0..n ──order──▶ shuffled (samples, runs, windowed) ──shard──▶ rank's part ──batch──▶ batches
//!                 seed + epoch → SplitMix64                n·r/w .. n·(r+1)/w   per length bucket
//! ```
//!
//! With `drop_last` the parts are of batches, not of samples, so that every rank takes the
//! same number of steps and no more than `world - 1` batches are left out beyond the
//! incomplete ones a single rank would drop:
//!
//! ```text
//! 0..n ──order──▶ shuffled ──batch──▶ the epoch's batches ──deal──▶ rank's len/world batches
//!                                      (len % world left out)        k·r .. k·(r+1)
//! ```
//!
//! With elastic sharding (`Ranks::Turns`) there is no per-rank part: every rank makes
//! the batches of the whole order, and takes its turns among them.

use std::sync::Arc;

use crate::row_index::RowIndex;

use super::config::{PlanConfig, Ranks, cost};
use super::order::{Slot, epoch_order, fits_u32};
use super::pack::{Windows, packed_plan};
use super::parts::Parts;
use batched::Batched;

/// What each item of an order (a sample, or a packed window) costs ([`super::Balance`]).
pub(crate) enum Costs<'a> {
    /// `n + w·n²` of the item's length `n`, `w` this weight.
    Lengths(f64),
    /// A packed epoch's windows' costs, by window number.
    Table(&'a [f64]),
    /// The same cost for every item (windows without an attention weight: their length).
    Each(f64),
}

impl Costs<'_> {
    /// The cost of item `item`, of length `len`.
    pub(crate) fn of(&self, item: usize, len: usize) -> f64 {
        match self {
            Costs::Lengths(w) => cost(len, *w),
            Costs::Table(costs) => costs[item],
            Costs::Each(cost) => *cost,
        }
    }
}

/// One batch of a plan.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let plan = Loader::builder(&file).with_batch_size(2).build()?.plan(0);
/// let info = plan.infos()[1];                               // samples 2 and 3
/// assert_eq!((info.start, info.end, info.tokens, info.max_len, info.oversize), (2, 4, 7, 4, false));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchInfo {
    /// Where the batch's samples start in [`Plan::samples`].
    pub start: usize,
    /// Where they end.
    pub end: usize,
    /// The sum of the samples' lengths.
    pub tokens: usize,
    /// The longest sample's length.
    pub max_len: usize,
    /// A single sample over the token budget, alone in its batch.
    pub oversize: bool,
}

impl BatchInfo {
    /// The number of samples.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let plan = Loader::builder(&file).with_batch_size(2).build()?.plan(0);
    /// assert_eq!(plan.infos().iter().map(|i| i.len()).collect::<Vec<_>>(), [2, 2, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the batch has no samples (never, in a plan).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let plan = Loader::builder(&file).with_token_budget(3).build()?.plan(0);
    /// assert!(plan.infos().iter().all(|i| !i.is_empty()));      // a plan has no empty batch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The share of a padded `[samples, max_len]` batch that would be padding, in `0..=1`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let plan = Loader::builder(&file).with_batch_size(5).build()?.plan(0);
    /// assert_eq!(plan.infos()[0].padding_ratio(), 1.0 - 15.0 / 25.0);   // 15 tokens, 5 × 5 places
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn padding_ratio(&self) -> f64 {
        let padded = self.len() * self.max_len;
        if padded == 0 {
            0.0
        } else {
            1.0 - self.tokens as f64 / padded as f64
        }
    }
}

/// The batches of one epoch for one rank (for every rank when they take turns).
///
/// # Example
/// ```
/// use lodtensor::loader::{Loader, Plan};
/// # use lodtensor::{Column, Dataset, LodTensor};
/// # use lodtensor::io::{ipc_reader::MappedDataset, ipc_writer::{DatasetWriter, WriteOptions}};
/// # use arrow_array::types::Float32Type;
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("d.arrow");
/// # let t = LodTensor::from_lengths::<Float32Type>(&[vec![1, 2, 3, 4, 5]], vec![0.0; 15], vec![])?;
/// # let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
/// # w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
/// # w.finish()?;
/// let file = MappedDataset::open(&path)?;
/// let loader = Loader::builder(&file).with_batch_size(2).build()?;
/// let plan: std::sync::Arc<Plan> = loader.plan(0);
/// assert_eq!(plan.batches().collect::<Vec<_>>(), vec![&[0, 1][..], &[2, 3], &[4]]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub(super) epoch: u64,
    pub(super) samples: Vec<usize>,
    pub(super) infos: Vec<BatchInfo>,
    /// Each batch's cost, as the planner counted it.
    pub(super) costs: Vec<f64>,
    pub(super) dropped: usize,
    /// A packed epoch's windows (then `samples` are window numbers).
    pub(super) windows: Option<Arc<Windows>>,
    /// The options each part of the epoch was planned under (a loader's plan; none for a
    /// take's).
    pub(super) parts: Parts,
}

impl Plan {
    /// Makes the plan of `epoch`. `lengths` has one entry per sample of the file;
    /// `batches` says where every record batch starts, `shards` where every shard does
    /// (one shard for a single file). The epoch's order is kept in 32-bit sample numbers
    /// when they fit (the plan is the same in 64 bits, [`Slot`]).
    pub(crate) fn build(
        config: &PlanConfig,
        lengths: &[u32],
        batches: &RowIndex,
        shards: &RowIndex,
        epoch: u64,
    ) -> Plan {
        match fits_u32(lengths.len()) {
            true => Plan::build_in::<u32>(config, lengths, (batches, shards), epoch),
            false => Plan::build_in::<usize>(config, lengths, (batches, shards), epoch),
        }
    }

    /// The plan of one batch of the rows `samples` (a take), described by `info`.
    pub(super) fn of_rows(samples: Vec<usize>, info: BatchInfo) -> Plan {
        Plan {
            epoch: 0,
            samples,
            infos: vec![info],
            costs: vec![info.tokens as f64],
            dropped: 0,
            windows: None,
            parts: Parts::default(),
        }
    }

    /// A plan of `epoch` without batches.
    pub(super) fn empty(epoch: u64) -> Plan {
        Plan {
            epoch,
            samples: Vec::new(),
            infos: Vec::new(),
            costs: Vec::new(),
            dropped: 0,
            windows: None,
            parts: Parts::default(),
        }
    }

    /// [`Plan::build`] with the epoch's order in `S`.
    fn build_in<S: Slot>(
        config: &PlanConfig,
        lengths: &[u32],
        (batches, shards): (&RowIndex, &RowIndex),
        epoch: u64,
    ) -> Plan {
        let order = epoch_order::<S>(config.shuffle, lengths.len(), batches, shards, epoch);
        if let Some(packing) = &config.packing {
            return packed_plan(config, packing, lengths, S::rows(order), epoch);
        }
        let costs = Costs::Lengths(config.weight());
        Plan::of_ranks(config, (lengths, &costs), &order, epoch)
    }

    /// The plan of `order` (samples, or a packed epoch's windows) of lengths `lengths` and
    /// costs `costs`, shared among ranks as the options say.
    pub(super) fn of_ranks<L: Slot, S: Slot>(
        config: &PlanConfig,
        items: (&[L], &Costs<'_>),
        order: &[S],
        epoch: u64,
    ) -> Plan {
        if config.balance.is_some() {
            return balanced::plan(config, items, order, epoch);
        }
        let n = order.len();
        let Ranks::Parts { rank, world } = config.ranks else {
            return Batched::<usize>::of_order(config, items, order).into_plan(epoch);
        };
        if config.drop_last {
            // The whole epoch's batches, in `S` until this rank's are dealt.
            return Batched::<S>::of_order(config, items, order).deal(rank, world, epoch);
        }
        let part = &order[n * rank / world..n * (rank + 1) / world];
        Batched::<usize>::of_order(config, items, part).into_plan(epoch)
    }

    /// The plan with the packed epoch's `windows` attached: every window is as long as
    /// the longest of its batch, so that padding ratios count the windows' padding.
    pub(super) fn with_windows(mut self, windows: Arc<Windows>) -> Plan {
        for info in &mut self.infos {
            info.max_len = windows.longest_of(&self.samples[info.start..info.end]);
        }
        self.windows = Some(windows);
        self
    }

    /// A packed epoch's windows ([`LoaderBuilder::with_packing`](super::LoaderBuilder::with_packing)),
    /// in the order packing made them; the plan's samples are then numbers of these
    /// windows. `None` when the loader does not pack.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let packed = Loader::builder(&file).with_batch_size(2).with_packing(Packing::new(4)).build()?;
    /// assert_eq!(packed.plan(0).batches().collect::<Vec<_>>(), [&[0, 1][..], &[2]]);   // windows
    /// assert!(Loader::builder(&file).build()?.plan(0).windows().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn windows(&self) -> Option<&Windows> {
        self.windows.as_deref()
    }

    /// The epoch this plan is for.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_shuffle(1).build()?;
    /// assert_eq!(loader.plan(7).epoch(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The number of batches.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert_eq!(loader.plan(0).len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether the plan has no batches.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(8).with_drop_last(true).build()?;
    /// assert!(loader.plan(0).is_empty());                       // 5 samples: no full batch of 8
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// Every sample of every batch, batch after batch (global row numbers of the file).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).with_shuffle(4).build()?;
    /// let mut samples = loader.plan(0).samples().to_vec();
    /// samples.sort();
    /// assert_eq!(samples, [0, 1, 2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn samples(&self) -> &[usize] {
        &self.samples
    }

    /// The samples of batch `index`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert_eq!(loader.plan(0).batch(2), Some(&[4][..]));
    /// assert_eq!(loader.plan(0).batch(3), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn batch(&self, index: usize) -> Option<&[usize]> {
        self.infos.get(index).map(|i| &self.samples[i.start..i.end])
    }

    /// The samples of each batch, in order.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_token_budget(5).build()?;
    /// assert_eq!(loader.plan(0).batches().collect::<Vec<_>>(), [&[0, 1][..], &[2], &[3], &[4]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn batches(&self) -> impl Iterator<Item = &[usize]> + '_ {
        self.infos.iter().map(|i| &self.samples[i.start..i.end])
    }

    /// Sizes, tokens and padding of each batch.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// let tokens: Vec<usize> = loader.plan(0).infos().iter().map(|i| i.tokens).collect();
    /// assert_eq!(tokens, [3, 7, 5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn infos(&self) -> &[BatchInfo] {
        &self.infos
    }

    /// Each batch's cost as the planner counted it: the sum over its samples of `n + w·n²`
    /// for a sample of `n` tokens (a packed window: over its documents' pieces, its padding
    /// counting its length), `w` the [`Balance`](super::Balance)'s weight, 0 without
    /// balance (the tokens, then).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Balance, Loader};
    /// let plain = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert_eq!(plain.plan(0).costs(), [3.0, 7.0, 5.0]);       // tokens
    /// let weighted = Loader::builder(&file).with_batch_size(5)
    ///     .with_balance(Balance::Attention { weight: 0.5 }).build()?;
    /// assert_eq!(weighted.plan(0).costs(), [15.0 + 0.5 * 55.0]);   // 1² + 2² + … + 5² = 55
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn costs(&self) -> &[f64] {
        &self.costs
    }

    /// Samples left out by `drop_last` (0 without it): those of each bucket's incomplete
    /// last batch. With [`LoaderBuilder::shard`](super::LoaderBuilder::shard) the ranks
    /// share the batches of the whole epoch, as many each, and up to `world_size - 1` batches
    /// that do not divide evenly are left out too (never an oversize sample while another
    /// batch can go instead); the last rank counts all of them, the others 0.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).with_drop_last(true).build()?;
    /// assert_eq!((loader.plan(0).len(), loader.plan(0).dropped()), (2, 1));
    /// // Two ranks: 5 batches of 1, 2 each; the last rank counts the fifth as dropped.
    /// let rank = |r| Loader::builder(&file).with_batch_size(1).with_drop_last(true).shard(r, 2).build();
    /// assert_eq!((rank(0)?.plan(0).samples(), rank(1)?.plan(0).samples()), (&[0, 1][..], &[2, 3][..]));
    /// assert_eq!((rank(0)?.plan(0).dropped(), rank(1)?.plan(0).dropped()), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Batches that are a single sample over the token budget.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_token_budget(3).build()?;
    /// assert_eq!(loader.plan(0).oversize(), 2);                 // samples of 4 and 5 tokens
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn oversize(&self) -> usize {
        self.infos.iter().filter(|i| i.oversize).count()
    }

    /// The share of padding over all batches, were each padded to its longest sample.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(1).build()?;
    /// assert_eq!(loader.plan(0).padding_ratio(), 0.0);          // one sample per batch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn padding_ratio(&self) -> f64 {
        let (tokens, padded) = self.infos.iter().fold((0usize, 0usize), |(t, p), i| {
            (t + i.tokens, p + i.len() * i.max_len)
        });
        if padded == 0 {
            0.0
        } else {
            1.0 - tokens as f64 / padded as f64
        }
    }

    /// The plan as JSON: `{"epoch": e, "batches": [[row, …], …]}`, for other languages
    /// reading the same file.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert_eq!(loader.plan(0).to_json(), r#"{"batches":[[0,1],[2,3],[4]],"epoch":0}"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "epoch": self.epoch,
            "batches": self.batches().collect::<Vec<_>>(),
        })
        .to_string()
    }
}

mod balanced;
mod batched;
#[cfg(test)]
mod tests;
