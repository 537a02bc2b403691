//! Batches read by range requests ([`LoaderBuilder::with_range_reads`]).

use super::LoaderBuilder;

impl LoaderBuilder<'_> {
    /// Over a sharded dataset, each batch's rows of shards not in the node's cache read by
    /// range requests (their bytes alone, as [`ShardedDataset::take`] reads them) instead of
    /// downloading whole shards into the cache: for a bucket read once, a node without
    /// scratch disk, or a shuffle over a dataset larger than the cache. The plans, batches
    /// and positions are the lazy loader's ([`LoaderBuilder::with_lazy_shards`]); a shard
    /// already in the cache (or a local one) is mapped; a packed batch takes the documents
    /// its windows read. A compressed record batch is read whole into memory (`docs/remote.md`, "Random
    /// access").
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
    /// let mut ranged = Loader::builder(&data).with_batch_size(2).with_shuffle(1).with_range_reads(true).build()?;
    /// let mut cached = Loader::builder(&data).with_batch_size(2).with_shuffle(1).build()?;
    /// assert_eq!(ranged.next_batch()?.expect("a batch").data(), cached.next_batch()?.expect("a batch").data());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`ShardedDataset::take`]: crate::shards::ShardedDataset::take
    pub fn with_range_reads(mut self, ranges: bool) -> Self {
        self.ranges = ranges;
        self
    }
}
