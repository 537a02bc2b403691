//! The sharded dataset writer: rolls to a new shard at a row or byte budget, each shard
//! written atomically, the manifest replaced atomically last.

use std::path::{Path, PathBuf};

use crate::dataset::Dataset;
use crate::error::ArgumentError;
use crate::error::{Error, Result};
use crate::io::ipc_writer::{DatasetWriter, WriteOptions, row_bytes};
use crate::shards::manifest::{
    ColumnSpec, ColumnStats, MANIFEST_NAME, Manifest, ShardEntry, file_crc32c, is_shard_name,
};

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
    shard_rows: Option<usize>,
    shard_bytes: Option<usize>,
    prefix: String,
    write: WriteOptions,
}

impl Default for ShardOptions {
    fn default() -> Self {
        ShardOptions {
            shard_rows: None,
            shard_bytes: Some(256 << 20),
            prefix: "part".to_owned(),
            write: WriteOptions::default(),
        }
    }
}

impl ShardOptions {
    /// Closes a shard once it holds `rows` rows (no row limit by default).
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
        self.shard_rows = Some(rows.max(1));
        self
    }

    /// Closes a shard once its rows hold `bytes` bytes of values and offsets (default
    /// 256 MiB). A shard holds at least one row, however large.
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
        self.shard_bytes = Some(bytes.max(1));
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
}

/// Where [`ShardWriter::finish`] records the new shards.
#[derive(Debug)]
enum Target {
    /// The dataset's manifest, replaced by the previous shards plus the new ones.
    Manifest,
    /// A pending manifest of this writer's shards, merged by [`commit`](super::commit).
    Pending,
}

/// The shard being written.
struct OpenShard {
    writer: DatasetWriter,
    file: String,
    rows: usize,
    bytes: usize,
    stats: Vec<ColumnStats>,
}

/// Writes a sharded dataset: a directory of lodtensor Arrow files (`part-00000.arrow`, …)
/// and its manifest `_lodtensor.json` (see `format-spec.md`).
///
/// Rows are appended as with [`DatasetWriter`]; a shard is closed (synced and renamed into
/// place) once it reaches the row or byte budget of [`ShardOptions`], and the manifest is
/// replaced atomically by [`ShardWriter::finish`], last. A process killed at any moment
/// leaves the previous manifest, and every shard it lists, intact: readers see the dataset
/// before the write or after it, never a part of it.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// use arrow_array::types::Float32Type;
/// let dir = tempfile::tempdir()?;
/// let t = LodTensor::from_lengths::<Float32Type>(&[vec![1; 5]], (0..5).map(|i| i as f32).collect(), vec![])?;
/// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// writer.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
/// let manifest = writer.finish()?;
/// assert_eq!(manifest.shards.len(), 3);
/// let data = ShardedDataset::open(dir.path())?;
/// assert_eq!(data.sample(4)?.column("x")?.typed_values::<Float32Type>()?, &[4.]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardWriter {
    dir: PathBuf,
    options: ShardOptions,
    target: Target,
    /// The columns, once known; the shards finish writes (the previous ones, then the new).
    manifest: Manifest,
    /// The first of the shards this writer wrote, in `manifest.shards`.
    first_new: usize,
    next_index: usize,
    current: Option<OpenShard>,
}

impl ShardWriter {
    /// Starts a new dataset in `dir` (created if missing).
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) `AlreadyExists` when `dir` already holds a
    /// manifest (use [`ShardWriter::append`]); an invalid prefix.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// writer.write(&ds)?;
    /// writer.finish()?;
    /// assert!(ShardWriter::create(dir.path(), ShardOptions::default()).is_err());  // exists
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(dir: impl AsRef<Path>, options: ShardOptions) -> Result<Self> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
        let path = dir.join(MANIFEST_NAME);
        if path.exists() {
            let e = std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a sharded dataset is already there: append to it instead",
            );
            return Err(Error::from(e).in_file(path));
        }
        Self::start(dir, options, Target::Manifest, Manifest::default())
    }

    /// Appends shards to the dataset in `dir`; its columns fix the schema. One writer at a
    /// time: concurrent writers use [`ShardWriter::pending`] and [`commit`](super::commit).
    ///
    /// # Errors
    /// The manifest's errors ([`Manifest::load`]); an invalid prefix.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// writer.write(&ds)?;
    /// writer.finish()?;
    /// let mut more = ShardWriter::append(dir.path(), ShardOptions::default())?;
    /// more.write(&ds)?;
    /// assert_eq!(more.finish()?.shards.len(), 2);               // the old shard and a new one
    /// assert_eq!(ShardedDataset::open(dir.path())?.num_rows(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append(dir: impl AsRef<Path>, options: ShardOptions) -> Result<Self> {
        let dir = dir.as_ref();
        let manifest = Manifest::load(dir.join(MANIFEST_NAME))?;
        Self::start(dir, options, Target::Manifest, manifest)
    }

    /// An independent writer of new shards for the dataset in `dir` (created if missing):
    /// [`ShardWriter::finish`] records them in `_lodtensor.pending.PREFIX.json`, and
    /// [`commit`](super::commit) merges every pending manifest into the dataset. Each
    /// concurrent writer takes its own prefix.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io); an invalid prefix.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// use lodtensor::shards::commit;
    /// for worker in ["w0", "w1"] {
    ///     let options = ShardOptions::default().with_prefix(worker);
    ///     let mut writer = ShardWriter::pending(dir.path(), options)?;
    ///     writer.write(&ds)?;
    ///     writer.finish()?;                                    // a pending manifest of its own
    /// }
    /// assert_eq!(commit(dir.path())?.num_rows(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pending(dir: impl AsRef<Path>, options: ShardOptions) -> Result<Self> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
        let main = dir.join(MANIFEST_NAME);
        let manifest = match main.exists() {
            true => Manifest::load(&main)?,
            false => Manifest::default(),
        };
        Self::start(dir, options, Target::Pending, manifest)
    }

    fn start(
        dir: &Path,
        options: ShardOptions,
        target: Target,
        manifest: Manifest,
    ) -> Result<Self> {
        let probe = format!("{}-00000.arrow", options.prefix);
        if options.prefix.is_empty() || !is_shard_name(&probe) || options.prefix.contains('.') {
            return Err(Error::invalid_argument(
                "ShardWriter",
                "prefix",
                format!("{:?}", options.prefix),
                "a plain name not starting with `.` or `_`, without `/` or `.`",
            ));
        }
        let mut next_index = shard_index(&manifest, &options.prefix);
        let pending = pending_path(dir, &options.prefix);
        if let Target::Pending = target
            && pending.exists()
        {
            next_index = next_index.max(shard_index(&Manifest::load(&pending)?, &options.prefix));
        }
        Ok(ShardWriter {
            dir: dir.to_path_buf(),
            options,
            target,
            first_new: manifest.shards.len(),
            manifest,
            next_index,
            current: None,
        })
    }

    /// Appends the rows of `dataset`, closing shards at the budget. The first dataset of a
    /// new dataset fixes the columns; later ones (and appended ones) must match them.
    ///
    /// # Errors
    /// [`ArgumentError::SchemaMismatch`]; the errors of [`DatasetWriter::write`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// writer.write(&ds)?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.finish()?.num_rows(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        let dataset = dataset.with_offset_width(self.options.write.offset_width())?;
        let specs: Vec<ColumnSpec> = dataset
            .columns()
            .iter()
            .map(ColumnSpec::of_column)
            .collect::<Result<_>>()?;
        if self.manifest.columns.is_empty() && self.manifest.shards.is_empty() {
            self.manifest.columns = specs;
        } else if specs != self.manifest.columns {
            return Err(ArgumentError::SchemaMismatch {
                batch: 0,
                reason: format!(
                    "the dataset's columns are {specs:?}, the sharded dataset's {:?}",
                    self.manifest.columns
                ),
            }
            .into());
        }
        let rows = dataset.num_rows();
        let mut start = 0;
        while start < rows {
            let (shard_rows, shard_bytes) = (self.options.shard_rows, self.options.shard_bytes);
            let shard = self.open_shard()?;
            let mut end = start;
            while end < rows
                && shard_rows.is_none_or(|limit| shard.rows < limit)
                && shard_bytes.is_none_or(|limit| shard.bytes < limit)
            {
                if shard_bytes.is_some() {
                    shard.bytes += row_bytes(&dataset, end);
                }
                shard.rows += 1;
                end += 1;
            }
            let part = dataset.slice_rows(start..end)?;
            shard.writer.write(&part)?;
            for (stats, column) in shard.stats.iter_mut().zip(part.columns()) {
                stats.add(column.tensor()?);
            }
            let full = shard_rows.is_some_and(|l| shard.rows >= l)
                || shard_bytes.is_some_and(|l| shard.bytes >= l);
            if full {
                self.close_shard()?;
            }
            start = end;
        }
        Ok(())
    }

    /// Closes the open shard and replaces the manifest (or writes the pending manifest)
    /// atomically; returns what it wrote.
    ///
    /// # Errors
    /// [`ArgumentError::NoSchema`] for a new dataset that was given no dataset; I/O errors
    /// (the previous manifest is then untouched).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// writer.write(&ds)?;
    /// assert!(!dir.path().join("_lodtensor.json").exists());   // the manifest comes last
    /// let manifest = writer.finish()?;
    /// assert_eq!(ShardedDataset::open(dir.path())?.manifest(), &manifest);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finish(mut self) -> Result<Manifest> {
        self.close_shard()?;
        if self.manifest.columns.is_empty() && self.manifest.shards.is_empty() {
            return Err(ArgumentError::NoSchema.into());
        }
        match self.target {
            Target::Manifest => self.manifest.write(self.dir.join(MANIFEST_NAME))?,
            Target::Pending => {
                let path = pending_path(&self.dir, &self.options.prefix);
                let mut pending = match path.exists() {
                    true => Manifest::load(&path)?,
                    false => Manifest {
                        columns: self.manifest.columns.clone(),
                        shards: Vec::new(),
                    },
                };
                pending
                    .shards
                    .extend_from_slice(&self.manifest.shards[self.first_new..]);
                pending.write(&path)?;
                return Ok(pending);
            }
        }
        Ok(self.manifest)
    }

    /// The dataset directory.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// let writer = ShardWriter::create(dir.path(), ShardOptions::default())?;
    /// assert_eq!(writer.dir(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn open_shard(&mut self) -> Result<&mut OpenShard> {
        if self.current.is_none() {
            let file = format!("{}-{:05}.arrow", self.options.prefix, self.next_index);
            self.next_index += 1;
            let writer = DatasetWriter::create(self.dir.join(&file), self.options.write.clone())?;
            let columns = self.manifest.columns.len();
            self.current = Some(OpenShard {
                writer,
                file,
                rows: 0,
                bytes: 0,
                stats: vec![ColumnStats::default(); columns],
            });
        }
        Ok(self.current.as_mut().expect("opened above"))
    }

    fn close_shard(&mut self) -> Result<()> {
        let Some(shard) = self.current.take() else {
            return Ok(());
        };
        let path = shard.writer.path();
        let summary = shard.writer.finish()?;
        self.manifest.shards.push(ShardEntry {
            file: shard.file,
            rows: summary.rows,
            batches: summary.batches,
            bytes: summary.bytes,
            crc32c: file_crc32c(&path)?,
            columns: shard.stats,
        });
        Ok(())
    }
}

/// The pending manifest of the writer with `prefix`.
pub(crate) fn pending_path(dir: &Path, prefix: &str) -> PathBuf {
    dir.join(format!("_lodtensor.pending.{prefix}.json"))
}

/// One past the highest index of the shards named `PREFIX-NNNNN.arrow` in `manifest`.
fn shard_index(manifest: &Manifest, prefix: &str) -> usize {
    manifest
        .shards
        .iter()
        .filter_map(|s| {
            s.file
                .strip_prefix(prefix)?
                .strip_prefix('-')?
                .strip_suffix(".arrow")?
                .parse::<usize>()
                .ok()
        })
        .map(|i| i + 1)
        .max()
        .unwrap_or(0)
}
