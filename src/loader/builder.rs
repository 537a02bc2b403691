//! The options of a [`Loader`], checked together when it is built.

use arrow_schema::Schema;

use super::Loader;
use super::config::{BALANCE_LOOKAHEAD, BatchSize, PlanConfig, Ranks, Shuffle};
use super::gather::{ColumnInfo, Gatherer};
use super::mix::{Blend, Mixture, read_mixture};
use super::pack::Packing;
use super::position::Hasher;
use super::schedule::Schedules;
use super::store;
use crate::dataset::{Column, Dataset};
use crate::error::ArgumentError;
use crate::error::Result;
use crate::io::MappedFile;
use crate::io::ipc_reader::MappedDataset;
use crate::row_index::RowIndex;
use crate::shards::{PendingChecksum, ShardedDataset};
use std::sync::Arc;

/// What a [`Loader`] reads: the record batches of one mapped file, or of every shard of a
/// sharded dataset, one after the other (`Loader::builder` takes either).
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::loader::{Loader, LoaderSource};
/// let loader = Loader::builder(LoaderSource::File(&file)).build()?;
/// assert_eq!(loader.sample_lengths().len(), file.num_rows());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum LoaderSource<'a> {
    /// One file.
    File(&'a MappedDataset),
    /// The shards of a sharded dataset, in the manifest's order. When the plan needs no
    /// sample lengths ([`LoaderBuilder::with_lazy_shards`]) a shard is mapped when a batch
    /// first reads it and released after the plan's last batch that does; else each is
    /// mapped and checked against the manifest when the loader is built. Either way its
    /// checksum is checked when the loader first reads a sample of it (so a rank reads the
    /// values of its own shards only).
    Shards(&'a ShardedDataset),
    /// Several sources drawn from at set proportions ([`Mixture`]).
    Mixture(&'a Mixture<'a>),
}

impl<'a> From<&'a MappedDataset> for LoaderSource<'a> {
    fn from(file: &'a MappedDataset) -> Self {
        LoaderSource::File(file)
    }
}

impl<'a> From<&'a Mixture<'a>> for LoaderSource<'a> {
    fn from(mixture: &'a Mixture<'a>) -> Self {
        LoaderSource::Mixture(mixture)
    }
}

impl<'a> From<&'a ShardedDataset> for LoaderSource<'a> {
    fn from(shards: &'a ShardedDataset) -> Self {
        LoaderSource::Shards(shards)
    }
}

/// What a loader reads, gathered from its source.
pub(super) struct Sourced {
    /// The record batches, in order.
    pub batches: Vec<Dataset>,
    /// The files they lie in (a file read from memory has none).
    pub files: Vec<Arc<MappedFile>>,
    /// The rows of every shard (a file is one shard).
    pub shards: RowIndex,
    /// Every shard whose checksum is still to check, by shard (empty: none).
    pub unchecked: Vec<Option<PendingChecksum>>,
    /// What every batch shares per column.
    pub columns: Vec<ColumnInfo>,
    /// A mixture's sources.
    pub blend: Option<Blend>,
}

impl LoaderSource<'_> {
    /// The record batches and shards, and what every batch shares per column (from the
    /// first batch, else from the schema: a source without rows).
    pub(super) fn read(self) -> Result<Sourced> {
        let mut files = Vec::new();
        let (batches, shards, unchecked, empty) = match self {
            LoaderSource::Mixture(mixture) => return read_mixture(mixture),
            LoaderSource::File(file) => {
                let rows = RowIndex::from_counts([file.num_rows()]);
                let empty = empty_columns(file.schema());
                files.extend(file.mapped_file().cloned());
                (file.batches().to_vec(), rows, Vec::new(), empty)
            }
            LoaderSource::Shards(data) => {
                let mut batches = Vec::new();
                let mut counts = Vec::with_capacity(data.num_shards());
                let mut unchecked = Vec::with_capacity(data.num_shards());
                for shard in 0..data.num_shards() {
                    let (file, pending) = data.shard_for_reading(shard)?;
                    batches.extend_from_slice(file.batches());
                    files.extend(file.mapped_file().cloned());
                    counts.push(file.num_rows());
                    unchecked.push(pending);
                }
                if unchecked.iter().all(Option::is_none) {
                    unchecked.clear();
                }
                let empty = data.columns().iter().map(|c| c.empty_column()).collect();
                (batches, RowIndex::from_counts(counts), unchecked, empty)
            }
        };
        let columns = match batches.first() {
            Some(b) => b.columns().iter().map(ColumnInfo::new).collect(),
            None => empty?.iter().map(ColumnInfo::new).collect(),
        };
        Ok(Sourced {
            batches,
            files,
            shards,
            unchecked,
            columns,
            blend: None,
        })
    }
}

/// Options of a [`Loader`]; see [`Loader::builder`].
///
/// Options that decide the same thing (`with_batch_size` and `with_token_budget`,
/// `with_shuffle` and `with_chunk_shuffle`, `with_buckets` and `with_quantile_buckets`,
/// `shard` and `elastic_shard`) are alternatives: giving both is refused by [`LoaderBuilder::build`], naming both.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::{ErrorKind, Loader};
/// let refused = Loader::builder(&file).with_batch_size(2).with_token_budget(8).build();
/// assert!(matches!(refused.map_err(lodtensor::Error::into_kind), Err(ErrorKind::Argument(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LoaderBuilder<'a> {
    source: LoaderSource<'a>,
    config: PlanConfig,
    length: Option<(String, usize)>,
    quantiles: Option<usize>,
    /// The option that set each group of alternatives: batch size, shuffle, buckets,
    /// sharding.
    chosen: [Option<&'static str>; 4],
    /// The first two alternatives both given.
    conflict: Option<(&'static str, &'static str)>,
    /// Whether shards may be mapped as batches reach them ([`LoaderBuilder::with_lazy_shards`]).
    lazy: bool,
    /// Whether batches are read by range requests ([`LoaderBuilder::with_range_reads`]).
    ranges: bool,
    /// Whether to gather into shared memory ([`LoaderBuilder::with_shared_memory`]).
    pub(super) shared_memory: bool,
    /// Options over training ([`LoaderBuilder::with_batch_size_schedule`] and the like).
    schedules: Schedules,
}

/// The groups of alternative options, indices into [`LoaderBuilder::chosen`].
const BATCHING: usize = 0;
const SHUFFLING: usize = 1;
const BUCKETING: usize = 2;
const SHARDING: usize = 3;

impl<'a> LoaderBuilder<'a> {
    pub(super) fn new(source: LoaderSource<'a>) -> Self {
        LoaderBuilder {
            source,
            config: PlanConfig {
                batch: BatchSize::Samples(32),
                drop_last: false,
                shuffle: Shuffle::None,
                buckets: Vec::new(),
                ranks: Ranks::Parts { rank: 0, world: 1 },
                packing: None,
                balance: None,
                balance_lookahead: BALANCE_LOOKAHEAD,
            },
            length: None,
            quantiles: None,
            chosen: [None; 4],
            conflict: None,
            lazy: true,
            ranges: false,
            shared_memory: false,
            schedules: Schedules::default(),
        }
    }

    /// Records that option `name` of group `group` was given.
    fn choose(&mut self, group: usize, name: &'static str) {
        match self.chosen[group] {
            Some(earlier) if earlier != name => {
                self.conflict.get_or_insert((earlier, name));
            }
            _ => self.chosen[group] = Some(name),
        }
    }

    /// Batches of `samples` samples (the default is 32). Not with
    /// [`LoaderBuilder::with_token_budget`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(4).build()?;
    /// assert_eq!(loader.plan(0).batches().map(<[usize]>::len).collect::<Vec<_>>(), [4, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_batch_size(mut self, samples: usize) -> Self {
        self.choose(BATCHING, "batch_size");
        self.config.batch = BatchSize::Samples(samples);
        self
    }

    /// Batches of at most `tokens` tokens, a token being one unit of the length column
    /// (see [`LoaderBuilder::with_length_column`]). Not with
    /// [`LoaderBuilder::with_batch_size`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_token_budget(6).build()?;
    /// assert!(loader.plan(0).infos().iter().all(|b| b.tokens <= 6 || b.oversize));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_token_budget(mut self, tokens: usize) -> Self {
        self.choose(BATCHING, "token_budget");
        self.config.batch = BatchSize::Tokens(tokens);
        self
    }

    /// The length of a sample: the sum of the lengths of `level` of column `column` under
    /// it (for the last level: its elements). The default is the last level of the first
    /// column that has levels, or 1 per sample when none has.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_length_column("x", 0).build()?;
    /// assert_eq!(loader.sample_lengths(), &[1, 2, 3, 4, 5]);         // the elements under each row
    /// assert!(Loader::builder(&file).with_length_column("y", 0).build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_length_column(mut self, column: impl Into<String>, level: usize) -> Self {
        self.length = Some((column.into(), level));
        self
    }

    /// Leaves out the last batch of each bucket when it is incomplete: fewer samples than
    /// the batch size, or (with a token budget) not closed by a sample that did not fit.
    /// Over several ranks it also makes every rank read the same number of batches, as
    /// data-parallel training needs (every rank takes every step): with
    /// [`LoaderBuilder::shard`] the ranks share the batches of the whole epoch, the
    /// `len % world_size` that do not divide evenly left out (never more than
    /// `world_size - 1` batches, and a sample over the token budget only when nothing else
    /// is left to leave out);
    /// with [`LoaderBuilder::elastic_shard`] the epoch's last step is left out when it has
    /// fewer batches than ranks (than data-parallel ranks, with
    /// [`LoaderBuilder::elastic_shard_of_workers`]).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(3).with_drop_last(true).build()?;
    /// assert_eq!(loader.plan(0).samples(), &[0, 1, 2]);         // 3 and 4 would be incomplete
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_drop_last(mut self, drop_last: bool) -> Self {
        self.config.drop_last = drop_last;
        self
    }

    /// Shuffles the samples each epoch with `seed`. Not with
    /// [`LoaderBuilder::with_chunk_shuffle`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let a = Loader::builder(&file).with_shuffle(1).build()?;
    /// let b = Loader::builder(&file).with_shuffle(1).build()?;
    /// assert_eq!(a.plan(0), b.plan(0));                         // the same on every machine
    /// assert_ne!(a.plan(0).samples(), a.plan(1).samples());     // new each epoch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_shuffle(mut self, seed: u64) -> Self {
        self.choose(SHUFFLING, "shuffle");
        self.config.shuffle = Shuffle::Samples { seed };
        self
    }

    /// Shuffles runs of up to `rows` consecutive samples each epoch with `seed`, keeping
    /// each run in file order, so most batches stay views of the mapping. Not with
    /// [`LoaderBuilder::with_shuffle`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(5).with_chunk_shuffle(3, 2).build()?;
    /// let samples = loader.plan(0).samples().to_vec();
    /// // Runs of 2 (0-1, 2-3, 4) in a seeded order, each in file order.
    /// assert!(samples.windows(2).all(|w| w[1] == w[0] + 1 || w[1] % 2 == 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_chunk_shuffle(mut self, seed: u64, rows: usize) -> Self {
        self.choose(SHUFFLING, "chunk_shuffle");
        self.config.shuffle = Shuffle::Chunks { seed, rows };
        self
    }

    /// Shuffles globally yet reads contiguously, each epoch with `seed`
    /// ([`Shuffle::Windowed`]): the shards in a seeded order, within each its runs of up to
    /// `rows` samples in a seeded order, then a window of `window` samples mixing them
    /// (the bound: no sample comes more than `window - 1` places before its place in the
    /// stream, so reads stay front to back). A single file is one shard. Not with [`LoaderBuilder::with_shuffle`] or
    /// [`LoaderBuilder::with_chunk_shuffle`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset, LodTensor};
    /// # use lodtensor::io::{ipc_reader::MappedDataset, ipc_writer::{DatasetWriter, WriteOptions}};
    /// # use arrow_array::types::Float32Type;
    /// use lodtensor::loader::Loader;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("d.arrow");
    /// # let t = LodTensor::from_lengths::<Float32Type>(&[vec![1; 64]], vec![1.0; 64], vec![])?;
    /// # let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    /// # w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
    /// # w.finish()?;
    /// let file = MappedDataset::open(&path)?;
    /// let loader = Loader::builder(&file).with_windowed_shuffle(7, 8, 16).build()?;
    /// let mut samples = loader.plan(0).samples().to_vec();
    /// assert_ne!(samples, (0..64).collect::<Vec<_>>());
    /// samples.sort();
    /// assert_eq!(samples, (0..64).collect::<Vec<_>>()); // every sample once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_windowed_shuffle(mut self, seed: u64, rows: usize, window: usize) -> Self {
        self.choose(SHUFFLING, "windowed_shuffle");
        self.config.shuffle = Shuffle::Windowed { seed, rows, window };
        self
    }

    /// Length buckets by inclusive upper bounds (`[64, 256, 1024]`: four buckets, the last
    /// for longer samples). Batches hold samples of one bucket. Not with
    /// [`LoaderBuilder::with_quantile_buckets`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_batch_size(5).with_buckets(vec![2]).build()?;
    /// assert_eq!(loader.plan(0).batches().collect::<Vec<_>>(), [&[0, 1][..], &[2, 3, 4]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_buckets(mut self, bounds: Vec<usize>) -> Self {
        self.choose(BUCKETING, "buckets");
        self.config.buckets = bounds;
        self
    }

    /// `n` length buckets with about as many samples each (bounds at the length
    /// quantiles). Not with [`LoaderBuilder::with_buckets`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).with_quantile_buckets(2).build()?;
    /// assert_eq!(loader.buckets(), &[2]);                       // lengths 1, 2 | 3, 4, 5
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_quantile_buckets(mut self, n: usize) -> Self {
        self.choose(BUCKETING, "quantile_buckets");
        self.quantiles = Some(n);
        self
    }

    /// Only part `rank` of `world_size` contiguous, near-equal parts of each epoch's order,
    /// batched by this rank alone. With [`LoaderBuilder::with_drop_last`] the parts are of
    /// batches instead, so that every rank takes the same number of steps: the whole epoch
    /// is batched once (as one rank would, each bucket's incomplete last batch left out),
    /// `len % world_size` batches are left out (the last ones within the budget; a sample
    /// over it only when there are too few of those), and rank `r` takes the `r`-th run of
    /// `len / world_size` consecutive batches. Not with [`LoaderBuilder::elastic_shard`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let rank = |r| Loader::builder(&file).shard(r, 2).build();
    /// assert_eq!(rank(0)?.plan(0).samples(), &[0, 1]);
    /// assert_eq!(rank(1)?.plan(0).samples(), &[2, 3, 4]);
    /// // With drop_last: the batches [0, 1], [2, 3] (sample 4 is an incomplete batch).
    /// let even = |r| Loader::builder(&file).with_batch_size(2).with_drop_last(true).shard(r, 2).build();
    /// assert_eq!((even(0)?.plan(0).samples(), even(1)?.plan(0).samples()), (&[0, 1][..], &[2, 3][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shard(mut self, rank: usize, world_size: usize) -> Self {
        self.choose(SHARDING, "shard");
        self.config.ranks = Ranks::Parts {
            rank,
            world: world_size,
        };
        self
    }

    /// Rank `rank` of `world_size` taking turns over the batches of the whole epoch, so
    /// that a saved position resumes on any number of ranks (elastic resume).
    ///
    /// Every rank makes the same plan, that of one rank; the ranks go through it in steps
    /// of `world_size` batches, rank `r` reading batch `step + r`. A [`Position`](super::Position)'s `batch`
    /// is then the step: the first batch of the plan not yet read by every rank, the same
    /// on every rank after the same number of batches, and not tied to the world size (the
    /// fingerprint leaves rank and world size out). Saved on 8 ranks, it resumes on 6 or 1,
    /// each batch of the epoch read once. In an epoch's last step, ranks past its last
    /// batch get none ([`Loader::num_batches`] says how many each rank gets), unless
    /// [`LoaderBuilder::with_drop_last`] leaves that step out: then every rank reads the
    /// same number of batches. Not with [`LoaderBuilder::shard`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset, LodTensor};
    /// # use lodtensor::io::{ipc_reader::MappedDataset, ipc_writer::{DatasetWriter, WriteOptions}};
    /// # use arrow_array::types::Float32Type;
    /// use lodtensor::loader::Loader;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("d.arrow");
    /// # let t = LodTensor::from_lengths::<Float32Type>(&[vec![1; 10]], vec![1.0; 10], vec![])?;
    /// # let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    /// # w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
    /// # w.finish()?;
    /// let file = MappedDataset::open(&path)?;
    /// // Three ranks read a step of three batches of 1 sample: batches 0, 1, 2.
    /// let mut saved = None;
    /// for rank in 0..3 {
    ///     let mut loader = Loader::builder(&file)
    ///         .with_batch_size(1).with_shuffle(5).elastic_shard(rank, 3).build()?;
    ///     saved = Some(loader.next_batch()?.expect("a batch").next_position());
    /// }
    /// let saved = saved.expect("three ranks");
    /// assert_eq!(saved.batch, 3);                       // the next step starts at batch 3
    /// // The job resumes on two ranks: they read batches 3 and 4, then 5 and 6, ...
    /// let mut read = Vec::new();
    /// for rank in 0..2 {
    ///     let mut loader = Loader::builder(&file)
    ///         .with_batch_size(1).with_shuffle(5).elastic_shard(rank, 2).build()?;
    ///     loader.seek(saved)?;
    ///     for batch in &mut loader {
    ///         read.extend_from_slice(batch?.samples());
    ///     }
    /// }
    /// let whole = Loader::builder(&file).with_batch_size(1).with_shuffle(5).build()?;
    /// let mut rest = whole.plan(0).samples()[3..].to_vec();
    /// rest.sort();
    /// read.sort();
    /// assert_eq!(read, rest);                           // every remaining sample once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn elastic_shard(self, rank: usize, world_size: usize) -> Self {
        self.elastic_shard_of_workers(rank, world_size, world_size)
    }

    /// [`LoaderBuilder::elastic_shard`] for ranks that are the workers of `step_ranks`
    /// data-parallel ranks (of `world_size / step_ranks` workers each, worker `w` of rank
    /// `r` being rank `w * step_ranks + r`, as `lodtensor.torch` numbers DataLoader
    /// workers): with [`LoaderBuilder::with_drop_last`] the data-parallel ranks take equal
    /// steps, so the epoch ends after its last step of `step_ranks` batches, leaving out at
    /// most `step_ranks - 1` (not `world_size - 1`) beyond the incomplete ones.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let turns = |step_ranks| -> Result<Vec<usize>, lodtensor::Error> {
    ///     let builder = || Loader::builder(&file).with_batch_size(1).with_drop_last(true);
    ///     (0..4).map(|r| Ok(builder().elastic_shard_of_workers(r, 4, step_ranks).build()?.num_batches(0))).collect()
    /// };
    /// // 5 batches, 4 workers of one data-parallel rank: every batch read, none left out.
    /// assert_eq!(turns(1)?, [2, 1, 1, 1]);
    /// assert_eq!(turns(4)?, [1, 1, 1, 1]);                  // elastic_shard(r, 4): batch 4 left out
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn elastic_shard_of_workers(
        mut self,
        rank: usize,
        world_size: usize,
        step_ranks: usize,
    ) -> Self {
        self.choose(SHARDING, "elastic_shard");
        self.config.ranks = Ranks::Turns {
            rank,
            world: world_size,
            group: step_ranks,
        };
        self
    }

    /// Packs the epoch's documents into windows of tokens ([`Packing`] says exactly how):
    /// a batch then holds `batch_size` windows
    /// ([`LoaderBuilder::with_batch_size`]; the default 32), of every tensor column with as
    /// many elements per row as the length column, which must be counted at its innermost
    /// level (the default). With [`LoaderBuilder::with_shuffle`] the documents and then the
    /// windows are shuffled; with a chunk or windowed shuffle the documents only (the
    /// windows keep reading front to back). Ranks, `drop_last` and positions apply to the
    /// windows' batches as they do to samples' batches. Not with a token budget or buckets.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// // Documents of 1..=5 tokens: 15 tokens, three windows of 4 (3 tokens dropped).
    /// let mut loader = Loader::builder(&file).with_batch_size(3).with_packing(Packing::new(4)).build()?;
    /// let batch = loader.next_batch()?.expect("one batch of three windows");
    /// assert_eq!(batch.data().column("x")?.elements().len(), 12);
    /// assert_eq!(batch.cu_seqlens("x")?, [0, 1, 3, 4, 6, 8, 10, 12]);
    /// assert_eq!(batch.position_ids("x")?[..6], [0, 0, 1, 0, 0, 1]);
    /// assert!(batch.is_view());                                  // tokens 0..12 of one record batch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_packing(mut self, packing: Packing) -> Self {
        self.config.packing = Some(packing);
        self
    }

    /// Over a sharded dataset, whether a shard may be mapped only when a batch first reads
    /// it and released once the epoch is done with it (the default, `true`). That holds
    /// when the plan needs no sample lengths (batches of a number of samples, no buckets,
    /// no packing, and for a chunk or windowed shuffle one record batch per shard): then
    /// building reads the manifest only, and over a dataset opened by URL the first batch
    /// waits for its own shards, not the dataset's; such a loader counts every sample as
    /// length 1, so its positions' fingerprints differ from an eager loader's and
    /// [`Loader::seek`] resumes them on a loader built the same way (a state, by
    /// [`Loader::restore`], goes on either way: the lengths are read when the state's
    /// loader had them). Over a dataset opened by URL it holds as well when
    /// the plan needs lengths (a token budget, buckets, packing, record-batch boundaries):
    /// building reads each shard's footer, record-batch messages and the length column's
    /// offsets by range requests (`docs/remote.md`), no values, and the loader has the
    /// eager loader's lengths, plans and fingerprint. With `false`, or over a local
    /// directory when the plan needs lengths, every shard is mapped (downloaded) when the
    /// loader is built and held while it lives. Either way the batches are the same.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// use lodtensor::Loader;
    /// let data = ShardedDataset::open(dir.path())?;
    /// let mut lazy = Loader::builder(&data).with_batch_size(2).build()?;        // maps no shard
    /// let mut eager = Loader::builder(&data).with_batch_size(2).with_lazy_shards(false).build()?;
    /// assert_eq!(lazy.next_batch()?.expect("a batch").data(), eager.next_batch()?.expect("a batch").data());
    /// assert_ne!(lazy.fingerprint(), eager.fingerprint());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_lazy_shards(mut self, lazy: bool) -> Self {
        self.lazy = lazy;
        self
    }

    /// The loader, positioned at batch 0 of epoch 0.
    ///
    /// # Errors
    /// [`ArgumentError::LoaderConfig`] for an option out of range or two alternatives given
    /// (naming both); [`ArgumentError::NoSuchColumn`] or [`ArgumentError::LevelOutOfBounds`] for a length
    /// column or level the file does not have.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert_eq!(loader.next_batch()?.expect("a batch").samples(), &[0, 1]);
    /// assert!(Loader::builder(&file).with_batch_size(0).build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<Loader> {
        if let Some((first, second)) = self.conflict {
            return Err(ArgumentError::LoaderConfig {
                option: first,
                reason: format!("conflicts with {second}: give one of them"),
            }
            .into());
        }
        let LoaderBuilder {
            source,
            mut config,
            length,
            quantiles,
            lazy,
            ranges,
            shared_memory: shared,
            schedules,
            ..
        } = self;
        if let Some(batch) = &schedules.batch {
            // The first value decides what the store measures (lengths for a budget).
            config.batch = batch.at(0);
        }
        let (mut store, inputs, blend) =
            store::open(source, &mut config, length, quantiles, (lazy, ranges))?;
        schedules.check(&config)?;
        let config = config.with_turns(!schedules.is_empty());
        store.take_turns(config.ranks.turn().1);
        let (rows, shards) = (inputs.rows.starts(), inputs.shards.starts());
        let mut fingerprint = config.fingerprint(&inputs.lengths, rows, shards);
        let mut options = Hasher::new();
        options.add(&[fingerprint.options]);
        if !schedules.is_empty() {
            schedules.hash_into(&mut options);
            fingerprint.options = options.finish();
        }
        let blend = match blend {
            Some(mut blend) => {
                blend.count_first_epochs(&config, &schedules, &inputs.lengths)?;
                let mut options = Hasher::new();
                options.add(&[fingerprint.options]);
                options.add(&blend.hash_words());
                fingerprint.options = options.finish();
                Some(Arc::new(blend))
            }
            None => None,
        };
        Ok(Loader {
            store,
            inputs,
            blend,
            config,
            fingerprint,
            plan: None,
            position: (0, 0),
            gatherer: Gatherer::new(shared),
            schedules,
            resumed: None,
            tokens: Some((0, 0)),
            packs_through: (0, 0),
        })
    }
}

/// The columns of `schema`, without rows.
pub(super) fn empty_columns(schema: &Schema) -> Result<Vec<Column>> {
    schema
        .fields()
        .iter()
        .map(|field| {
            let empty = arrow_array::new_empty_array(field.data_type());
            Column::try_from_arrow(field, empty.as_ref()).map_err(|e| e.in_column(field.name(), 0))
        })
        .collect()
}

mod balance;
mod ranges;
mod schedule;
