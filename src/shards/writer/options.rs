//! The options of [`ShardWriter`]: where shards roll, their names, how each is written,
//! and for a URL how the store is reached.

use crate::io::ipc_writer::WriteOptions;
#[cfg(feature = "remote")]
use crate::shards::remote_options::RemoteOptions;
#[cfg(doc)]
use crate::shards::writer::ShardWriter;

/// Options of [`ShardWriter`].
///
/// # Example
/// ```
/// use lodtensor::shards::ShardOptions;
/// let options = ShardOptions::default().with_shard_rows(10_000).with_prefix("w3");
/// assert!(format!("{options:?}").contains("w3"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ShardOptions {
    pub(super) shard_rows: Option<usize>,
    pub(super) shard_bytes: Option<usize>,
    pub(crate) prefix: String,
    pub(super) write: WriteOptions,
    /// How a writer to a URL reaches the store.
    #[cfg(feature = "remote")]
    pub(crate) remote: RemoteOptions,
}

impl Default for ShardOptions {
    fn default() -> Self {
        ShardOptions {
            shard_rows: None,
            shard_bytes: Some(256 << 20),
            prefix: "part".to_owned(),
            write: WriteOptions::default(),
            #[cfg(feature = "remote")]
            remote: RemoteOptions::default(),
        }
    }
}

impl ShardOptions {
    /// Closes a shard once it holds `rows` rows (no row limit by default). `0` is refused
    /// by [`ShardWriter`]'s constructors naming `shard_rows`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(1))?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.finish()?.shards.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_shard_rows(mut self, rows: usize) -> Self {
        self.shard_rows = Some(rows);
        self
    }

    /// Closes a shard once its rows hold `bytes` bytes of values and offsets (default
    /// 256 MiB). A shard holds at least one row, however large. `0` is refused by
    /// [`ShardWriter`]'s constructors naming `shard_bytes`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_bytes(1))?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.finish()?.shards.len(), 3);            // each row fills a shard
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_shard_bytes(mut self, bytes: usize) -> Self {
        self.shard_bytes = Some(bytes);
        self
    }

    /// Shard files are named `PREFIX-00000.arrow`, … (default `part`). Independent writers
    /// of one dataset each take their own prefix.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_prefix("w1"))?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.finish()?.shards[0].file, "w1-00000.arrow");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Options of each shard's file (record batch size, offset width).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// use lodtensor::{OffsetWidth, WriteOptions};
    /// let write = WriteOptions::default().with_offset_width(OffsetWidth::I32);
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_write_options(write))?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.finish()?.columns[0].offsets, [OffsetWidth::I32]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_write_options(mut self, write: WriteOptions) -> Self {
        self.write = write;
        self
    }

    /// How a writer to a URL reaches the store (credentials, endpoint; default: the
    /// environment's). Unused by a writer to a directory.
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::{RemoteOptions, ShardOptions};
    /// let remote = RemoteOptions::default().with_storage_option("aws_region", "eu-west-1");
    /// let options = ShardOptions::default().with_remote_options(remote);
    /// assert!(format!("{options:?}").contains("eu-west-1"));
    /// ```
    #[cfg(feature = "remote")]
    pub fn with_remote_options(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }
}
