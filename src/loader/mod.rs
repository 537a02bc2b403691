//! Mini-batches for a training loop, streamed from a memory-mapped dataset file or from
//! the shards of a sharded dataset.
//!
//! A [`Loader`] turns the samples (rows) of a [`MappedDataset`] or a
//! [`ShardedDataset`](crate::shards::ShardedDataset) into batches, each a [`Dataset`](crate::dataset::Dataset) of
//! every column, following a [`Plan`] made per epoch. Over shards, the rows are those of
//! the shards one after the other (global row numbers, as `ShardedDataset::sample` counts
//! them), and a shard's record batches are record batches like a file's: a batch inside
//! one of them is a view of that shard's mapping, and runs of a chunk or windowed shuffle
//! never cross a shard. When the plan needs no sample lengths (batches of a number of
//! samples, no buckets, no packing: [`LoaderBuilder::with_lazy_shards`]) it is made from
//! the manifest's row counts, and a shard is mapped when a batch first reads it and
//! released after the plan's last batch that reads it; so it is over a dataset opened by
//! URL when the plan needs lengths, the lengths read from the shards'
//! metadata (footers, record-batch messages, offsets) without downloading a shard;
//! otherwise every shard is mapped and checked against the manifest when the loader is
//! built. A shard's checksum is checked
//! when a batch first takes a sample of it, so a rank reads the values of the shards it
//! reads only.
//!
//! - batches of a fixed number of samples, or of at most a token budget (the sum of one
//!   column's level lengths per sample; a longer sample is a batch of its own and flagged,
//!   never dropped as incomplete: only evening out the steps of ranks with `drop_last` can
//!   leave one out, and with `shard` only when no batch within the budget can go instead),
//!   optionally dropping each bucket's last incomplete batch;
//! - length buckets, so that samples of similar length share batches (the padding a padded
//!   batch would carry is reported per batch and per plan);
//! - a seeded shuffle per epoch, of samples, of contiguous chunks of samples, or windowed
//!   (the shards in a seeded order, the chunks within each shard, then a bounded window of
//!   samples mixing them: [`Shuffle::Windowed`]), computed with the crate's fixed
//!   SplitMix64 so that a seed and an epoch give the same order on every machine;
//! - `shard(rank, world_size)` for data-parallel training: contiguous, disjoint parts of
//!   each epoch's order whose sizes differ by at most one sample, or with `drop_last`
//!   contiguous runs of the epoch's batches, as many on every rank (at most
//!   `world_size - 1` batches left out beyond each bucket's incomplete last one); or
//!   `elastic_shard(rank, world_size)`: the ranks take turns over the batches of the whole
//!   epoch, so that a position saved on 8 ranks resumes on 6 or 1
//!   ([`LoaderBuilder::elastic_shard`]);
//! - a [`Position`] (epoch, batch) to save and restore, continuing with the exact next
//!   batch; its [`Fingerprint`] covers everything that decides the order (options, sample
//!   lengths, and the record-batch boundaries where a chunk shuffle follows them), so a
//!   position from another plan is refused with what differs named.
//!
//! A plan's working arrays are narrow: sample lengths in 32 bits (a sample of 2^32
//! elements or more is refused when the loader is built, naming the shard, column, record
//! batch and row), the epoch's order in 32-bit sample numbers below 2^32 samples (64 bits
//! beyond, the same plans), so a rank planning 10 M samples holds about 80 MB at the peak,
//! the lengths and the order, then keeps the lengths and its own batches.
//!
//! Exactly when a batch copies: a batch whose samples are consecutive rows of one record
//! batch of the file is a view into the mapping (no copy, [`Batch::is_view`]); any other
//! batch is gathered, copied once into a buffer taken from a small pool and reused once the
//! batch it held has been dropped. So in file order (no shuffle, one bucket) every batch is
//! a view except those that straddle two record batches, oversize samples included (the
//! batch being filled is closed before an oversize sample, keeping the order); with a chunk
//! shuffle, batches that fall inside one run are views; with a sample shuffle or several
//! buckets, batches are gathered unless their samples happen to be consecutive.
//!
//! Options that decide the same thing are alternatives, and giving two of them is an error
//! of [`LoaderBuilder::build`] that names both. A [`Loader`] is also an [`Iterator`] over
//! the batches of the current epoch.
//!
//! # Example
//! ```
//! use lodtensor::loader::Loader;
//! use lodtensor::io::ipc_reader::MappedDataset;
//! use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
//! use lodtensor::{rng::SplitMix64, synthetic::Documents};
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("docs.arrow");
//! let docs = Documents { dim: 4, ..Documents::default() }.generate(&mut SplitMix64::new(1), 20)?;
//! let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
//! writer.write(&docs)?;
//! writer.finish()?;
//!
//! let file = MappedDataset::open(&path)?;
//! let mut loader = Loader::builder(&file)
//!     .with_token_budget(4096)          // tokens: elements of the "tokens" column
//!     .with_shuffle(7)
//!     .shard(0, 2)
//!     .build()?;
//! let mut seen = 0;
//! while let Some(batch) = loader.next_batch()? {
//!     assert!(batch.tokens() <= 4096 || batch.is_oversize());
//!     seen += batch.data().num_rows();
//!     let saved = batch.next_position();   // store this to resume after the batch
//!     let _ = saved.to_json();
//! }
//! assert_eq!(seen, 10);                    // half of the 20 documents
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
mod builder;
mod config;
mod gather;
mod lengths;
mod measured;
mod mix;
mod order;
mod pack;
mod packed;
mod parts;
mod place;
mod plan;
mod position;
mod prefetch;
mod remix;
mod resume;
mod schedule;
mod shared;
mod state;
mod store;
mod take;
mod take_ranges;

use std::sync::Arc;

use crate::error::ArgumentError;
use crate::error::Result;
#[cfg(doc)]
use crate::io::ipc_reader::MappedDataset;

pub use batch::Batch;
pub use builder::{LoaderBuilder, LoaderSource};
pub use config::{ATTENTION_WEIGHT, BALANCE_LOOKAHEAD, Balance, BatchSize, Shuffle};
pub use gather::GatherStats;
pub use mix::Mixture;
pub use pack::{Overlong, PackMode, Packing, Piece, Windows};
pub use place::Place;
pub use plan::{BatchInfo, Plan};
pub use position::{Fingerprint, Position};
pub use prefetch::Prefetch;
pub use schedule::Schedule;
pub use shared::{RegionPool, SharedMemory};
pub use state::LoaderState;

use config::PlanConfig;
use gather::Gatherer;
use mix::Blend;
use place::Lies;
use resume::Resumed;
use schedule::Schedules;
use store::{PlanInputs, RowStore};

/// Streams the batches of a [`MappedDataset`]; see the [module docs](self).
///
/// A loader holds views of the file's record batches (not the file itself), so it owns
/// everything it needs, is `Send`, and can run on a prefetch thread ([`Loader::prefetch`]).
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
/// let sizes: Vec<usize> = loader.by_ref().map(|b| Ok(b?.data().num_rows())).collect::<lodtensor::Result<_>>()?;
/// assert_eq!(sizes, [2, 2, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Loader {
    /// Where the rows come from: every record batch mapped, or shards mapped as batches
    /// reach them (`store.rs`).
    store: Box<dyn RowStore>,
    /// What the plans are made from: lengths, record-batch and shard rows, columns.
    inputs: PlanInputs,
    /// A mixture's sources.
    blend: Option<Arc<Blend>>,
    config: PlanConfig,
    fingerprint: Fingerprint,
    plan: Option<Arc<Plan>>,
    /// (epoch, step) of the next batch: the plan's batch `step` (plus the rank's turn when
    /// ranks take turns).
    position: (u64, usize),
    gatherer: Gatherer,
    /// The batch size, token budget or pack length over training.
    schedules: Schedules,
    /// An epoch resumed from a state saved under other options: the parts read then, and
    /// a mixture's stream.
    resumed: Option<Resumed>,
    /// (epoch, global tokens read before it), when known.
    tokens: Option<(u64, u64)>,
    /// (epoch, global tokens read before it): a packed mixture's blend holds the packings
    /// of its stream before that epoch (`remix.rs`).
    packs_through: (u64, u64),
}

impl Loader {
    /// Options for a loader over `source` (a `&MappedDataset` or a `&ShardedDataset`, see
    /// [`LoaderSource`]): batches of 32 samples in file order, one rank.
    ///
    /// # Errors
    /// None here; [`LoaderBuilder::build`] maps and checks the shards of a sharded dataset
    /// when its plan needs sample lengths.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::io::{ipc_reader::MappedDataset, ipc_writer::{DatasetWriter, WriteOptions}};
    /// # use arrow_array::types::Float32Type;
    /// use lodtensor::loader::Loader;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = MappedDataset::open(&path)?;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// let first = loader.next_batch()?.expect("three batches");
    /// assert!(first.is_view());                       // rows 0..2: no copy
    /// assert_eq!(first.to_padded("x", 0)?.shape, vec![2, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder<'a>(source: impl Into<LoaderSource<'a>>) -> LoaderBuilder<'a> {
        LoaderBuilder::new(source.into())
    }

    /// The plan of `epoch` (cached for the epoch being read, else computed in O(samples)).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).with_shuffle(3).build()?;
    /// assert_eq!(loader.plan(4), loader.plan(4));               // the same seed and epoch
    /// assert_eq!(loader.plan(4).samples().len(), 5);            // every sample once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan(&self, epoch: u64) -> Arc<Plan> {
        match &self.plan {
            Some(p) if p.epoch() == epoch => p.clone(),
            _ => Arc::new(self.build_plan(epoch)),
        }
    }

    /// Makes the plan of `epoch`.
    fn build_plan(&self, epoch: u64) -> Plan {
        self.plan_after(epoch, self.tokens_before(epoch))
    }

    /// The number of batches this rank reads in `epoch`: the plan's, or this rank's turns
    /// among them when ranks take turns ([`LoaderBuilder::elastic_shard`]); with
    /// [`LoaderBuilder::with_drop_last`] the same on every rank then (the last step is read
    /// only when it has a batch for each).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let whole = Loader::builder(&file).with_batch_size(1).build()?;
    /// assert_eq!(whole.num_batches(0), 5);
    /// let rank_1_of_2 = Loader::builder(&file).with_batch_size(1).elastic_shard(1, 2).build()?;
    /// assert_eq!(rank_1_of_2.num_batches(0), 2);                // batches 1 and 3
    /// let even = Loader::builder(&file).with_batch_size(1).with_drop_last(true);
    /// assert_eq!(even.elastic_shard(0, 2).build()?.num_batches(0), 2);   // not batch 4
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_batches(&self, epoch: u64) -> usize {
        let (rank, world) = self.config.ranks.turn();
        let plan = self.plan(epoch);
        // A resumed epoch's batches before this loader's own were read before.
        let batches = plan.len() - plan.parts.own;
        if self.config.drop_last {
            // The steps whose part for this rank's group the plan holds whole.
            batches
                .checked_sub(self.config.ranks.group_end())
                .map_or(0, |rest| rest / world + 1)
        } else {
            batches.saturating_sub(rank).div_ceil(world)
        }
    }

    fn current_plan(&mut self) -> Arc<Plan> {
        let epoch = self.position.0;
        match &self.plan {
            Some(p) if p.epoch() == epoch => p.clone(),
            _ => {
                self.packs_to(epoch);
                let p = Arc::new(self.build_plan(epoch));
                self.plan = Some(p.clone());
                p
            }
        }
    }

    /// The length of each sample of the file, as used for budgets and buckets (1 each for
    /// a loader over shards whose plan needs no lengths: [`LoaderBuilder::with_lazy_shards`]),
    /// in 32 bits: a sample of 2^32 elements or more is refused when the loader is built.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).build()?;
    /// assert_eq!(loader.sample_lengths(), &[1, 2, 3, 4, 5]);    // elements per sample
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample_lengths(&self) -> &[u32] {
        &self.inputs.lengths
    }

    /// The length of each sample, widened to `usize` (a copy): [`Loader::sample_lengths`]
    /// without one.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).build()?;
    /// #[allow(deprecated)]
    /// let lengths = loader.lengths();
    /// assert_eq!(lengths, [1, 2, 3, 4, 5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "the lengths are kept in 32 bits: use `Loader::sample_lengths`")]
    pub fn lengths(&self) -> Vec<usize> {
        self.inputs.lengths.iter().map(|&l| l as usize).collect()
    }

    /// The length bucket bounds in use.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_buckets(vec![2, 4]).build()?;
    /// assert_eq!(loader.buckets(), &[2, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn buckets(&self) -> &[usize] {
        &self.config.buckets
    }

    /// Portable hashes of everything that decides the plans: the options, the sample
    /// lengths and (with a chunk shuffle) the record-batch boundaries.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let a = Loader::builder(&file).with_shuffle(1).build()?;
    /// let b = Loader::builder(&file).with_shuffle(2).build()?;
    /// assert_ne!(a.fingerprint().options, b.fingerprint().options);
    /// assert_eq!(a.fingerprint().lengths, b.fingerprint().lengths);   // the same data
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fingerprint(&self) -> Fingerprint {
        let mut fingerprint = self.fingerprint;
        // A mixture's stream taken over from a state draws otherwise than its own weights.
        if let Some(taken) = self.blend.as_ref().and_then(|b| b.taken()) {
            let mut options = position::Hasher::new();
            options.add(&[fingerprint.options, taken]);
            fingerprint.options = options.finish();
        }
        fingerprint
    }

    /// The position of the next batch: save it, restore it with [`Loader::seek`] to continue
    /// from there (as [`Batch::next_position`] does for the batch just handed out).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// loader.next_batch()?;
    /// assert_eq!((loader.next_position().epoch, loader.next_position().batch), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_position(&self) -> Position {
        Position {
            epoch: self.position.0,
            batch: self.position.1,
            fingerprint: self.fingerprint(),
        }
    }

    /// The position of the next batch.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).build()?;
    /// #[allow(deprecated)]
    /// let old = Loader::position(&loader);
    /// assert_eq!(old, loader.next_position());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `next_position`: through a `&mut Loader`, `.position()` names `Iterator::position`"
    )]
    pub fn position(&self) -> Position {
        self.next_position()
    }

    /// Continues from `position`: the next batch is batch `position.batch` of epoch
    /// `position.epoch`.
    ///
    /// # Errors
    /// [`ArgumentError::PositionMismatch`] when the position was saved by a loader that makes
    /// other plans (other options, data or record-batch boundaries), saying what differs;
    /// [`ArgumentError::BatchOutOfRange`] when the epoch has fewer batches.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::{Loader, Position};
    /// let mut first = Loader::builder(&file).with_batch_size(2).with_shuffle(9).build()?;
    /// let saved = first.next_batch()?.expect("a batch").next_position().to_json();
    /// let mut second = Loader::builder(&file).with_batch_size(2).with_shuffle(9).build()?;
    /// second.seek(Position::from_json(&saved)?)?;
    /// assert_eq!(second.next_batch()?.expect("b").samples(), first.next_batch()?.expect("b").samples());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seek(&mut self, position: Position) -> Result<()> {
        let differences = self.fingerprint().differences(&position.fingerprint);
        if !differences.is_empty() {
            return Err(ArgumentError::PositionMismatch {
                differs: differences.join("; "),
            }
            .into());
        }
        self.go_to(position)
    }

    /// [`Loader::seek`] to a position of this loader's plans (checked by the caller).
    fn go_to(&mut self, position: Position) -> Result<()> {
        let old = self.position;
        self.position = (position.epoch, 0);
        let batches = self.current_plan().len();
        if position.batch > batches {
            self.position = old;
            return Err(ArgumentError::BatchOutOfRange {
                epoch: position.epoch,
                batch: position.batch,
                batches,
            }
            .into());
        }
        self.position = (position.epoch, position.batch);
        Ok(())
    }

    /// Starts epoch `epoch` from its first batch.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_shuffle(5).build()?;
    /// loader.set_epoch(3);
    /// let batch = loader.next_batch()?.expect("a batch");
    /// assert_eq!(batch.samples(), loader.plan(3).batch(0).expect("batch 0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_epoch(&mut self, epoch: u64) {
        self.position = (epoch, 0);
        if !self.schedules.is_empty() {
            // Counted once here (planning the epochs before), not again for every plan.
            self.tokens = self.tokens_before(epoch).map(|t| (epoch, t));
        }
    }

    /// The next batch of the current epoch; `None` at its end, after which the loader is at
    /// the start of the next epoch.
    ///
    /// # Errors
    /// [`DataError::OffsetOverflow`](crate::DataError::OffsetOverflow) when a gathered batch's offsets do not fit the column's
    /// offset width; Arrow errors building the gathered arrays.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(4).build()?;
    /// assert_eq!(loader.next_batch()?.expect("first").samples(), &[0, 1, 2, 3]);
    /// assert_eq!(loader.next_batch()?.expect("second").samples(), &[4]);
    /// assert!(loader.next_batch()?.is_none());                  // the end of epoch 0
    /// assert_eq!(loader.next_position().epoch, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let plan = self.current_plan();
        let (epoch, step) = self.position;
        let index = self.next_index();
        // With `drop_last`, elastic ranks leave out a last step without a batch for each
        // (for each rank of this rank's group).
        let whole_step =
            !self.config.drop_last || step + self.config.ranks.group_end() <= plan.len();
        if plan.batch(index).filter(|_| whole_step).is_none() {
            // The last epoch has no next: an error, not a wrap to epoch 0.
            let next = epoch
                .checked_add(1)
                .ok_or_else(|| ArgumentError::LoaderConfig {
                    option: "epoch",
                    reason: format!("epoch {epoch} is the last: there is no next"),
                })?;
            self.position = (next, 0);
            if let Some(t) = plan.parts.tokens_before {
                let read = parts::read_tokens(&plan, &self.config);
                self.tokens = Some((next, t.saturating_add(read)));
            }
            self.packs_past(&plan);
            self.store.end_epoch();
            return Ok(None);
        }
        let (data, lies, info) =
            (self.store).load(&plan, index, &self.inputs, &mut self.gatherer)?;
        let (view, file) = match lies {
            Lies::View(file) => (true, file),
            Lies::Gathered => (false, None),
        };
        let next = (step + self.config.ranks.turn().1).min(plan.len());
        self.position = (epoch, next);
        Ok(Some(Batch {
            data,
            view,
            file,
            shared: if view {
                None
            } else {
                self.gatherer.region.take()
            },
            plan,
            index,
            info,
            steps: step..next,
            fingerprint: self.fingerprint(),
            blend: self.blend.clone(),
        }))
    }

    /// The plan's index of the next batch: the step, plus this rank's turn in it.
    fn next_index(&self) -> usize {
        self.position.1 + self.config.ranks.turn().0
    }

    /// Whether [`next_batch`](Self::next_batch) would now return a view with no work but
    /// slicing (the epoch's plan is made and the next batch's rows are consecutive rows of
    /// one record batch): a caller may then skip handing the step to another thread.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert!(!loader.next_is_view());                          // no plan made yet
    /// loader.next_batch()?;
    /// assert!(loader.next_is_view());                           // rows 2..4 of one record batch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_is_view(&self) -> bool {
        match &self.plan {
            Some(p) if p.epoch() == self.position.0 && p.windows().is_none() => {
                (p.batch(self.next_index())).is_some_and(|s| self.store.is_view(s, &self.inputs))
            }
            _ => false,
        }
    }

    /// Counters of views, gathers, buffer allocations and bytes copied so far.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(5).with_shuffle(1).build()?;
    /// loader.next_batch()?;
    /// assert_eq!((loader.stats().views, loader.stats().gathered), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> GatherStats {
        self.gatherer.stats
    }

    /// Moves the loader to a thread that reads the rest of the current epoch ahead, at most
    /// `depth` batches ahead (a bounded queue); see [`Prefetch`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// let batches: Vec<_> = loader.prefetch(2).collect::<lodtensor::Result<_>>()?;
    /// assert_eq!(batches.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefetch(self, depth: usize) -> Prefetch {
        Prefetch::start(self, depth)
    }
}

/// The batches of the current epoch, as [`Loader::next_batch`] gives them: the iteration
/// ends with the epoch, and iterating again gives the next epoch. After an error the
/// position has not moved, so the same error comes again: stop at the first one (`?`, or
/// collecting into a `Result`).
///
/// # Example
/// ```
/// # use lodtensor::io::{ipc_reader::MappedDataset, ipc_writer::{DatasetWriter, WriteOptions}};
/// # use arrow_array::types::Float32Type;
/// use lodtensor::loader::Loader;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// let file = MappedDataset::open(&path)?;
/// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
/// let mut rows = 0;
/// for batch in &mut loader {
///     rows += batch?.data().num_rows();
/// }
/// assert_eq!(rows, 5);
/// assert_eq!(loader.next_position().epoch, 1);     // the next `for` reads epoch 1
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl Iterator for Loader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        self.next_batch().transpose()
    }
}

#[cfg(test)]
mod tests;
