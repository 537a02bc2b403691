//! The sharded dataset reader: the manifest on open, each shard mapped and checked against
//! it when first touched.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;

use crate::dataset::Dataset;
use crate::error::FormatError;
use crate::error::{Error, Result};
use crate::io::ipc_reader::MappedDataset;
use crate::io::regular::{check_inside, check_regular};
use crate::row_index::RowIndex;
use crate::shards::files::ShardFiles;
use crate::shards::location::{Location, open_url_default};
use crate::shards::manifest::{ColumnSpec, ColumnStats, MANIFEST_NAME, Manifest, ShardEntry};
use crate::shards::parse::cut;
use crate::shards::source::{CacheStats, LocalShards, ShardSource};

/// The longest value a [`FormatError::ShardMismatch`] shows of the manifest's or the shard's.
const MAX_MISMATCH_CHARS: usize = 300;

/// A sharded dataset, open: the manifest read, each shard mapped on first touch.
///
/// Opening reads and checks the manifest only, so it costs the same for shards of a
/// kilobyte or a gigabyte. The first access to a shard maps it and checks it against the
/// manifest (size, CRC-32C, rows, batches, columns, sequence and element counts) and with
/// every check of [`MappedDataset::open`]; [`ShardedDataset::validate`] does so for all.
/// A [`Loader`](crate::Loader) whose plan needs no sample lengths maps a shard of its own
/// when a batch first reads it and drops it when its plan is done with it; one whose plan
/// needs lengths maps every shard when it is built. Either checks each shard's checksum
/// when a batch first reads the shard: a rank reads the values of the shards it reads only.
/// Rows are numbered across shards, in manifest order; every sample and row range is a view
/// into a shard's mapping, as with one file.
///
/// `ShardedDataset` is `Send + Sync`: threads can touch shards concurrently.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// use arrow_array::types::Int64Type;
/// let dir = tempfile::tempdir()?;
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1, 3]], (0..6).collect(), vec![])?;
/// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// writer.finish()?;
///
/// let data = ShardedDataset::open(dir.path())?;
/// assert_eq!((data.num_rows(), data.num_shards()), (3, 2));
/// let rows = data.rows(1..3)?;   // row 1 in shard 0, row 2 in shard 1
/// assert_eq!(rows.len(), 2);
/// assert_eq!(rows[1].column("ids")?.typed_values::<Int64Type>()?, &[3, 4, 5]);
/// data.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ShardedDataset {
    /// The manifest and where the shards are (for a dataset opened by
    /// [`ShardedDataset::open`] from a URL, the node's cache).
    files: ShardFiles,
    /// The global rows of each shard.
    rows: RowIndex,
    shards: Vec<ShardSlot>,
}

impl ShardedDataset {
    /// Opens the dataset at `location`, reading its manifest only: a directory (a
    /// [`Path`], or a string that is not a URL) or, with the `remote` feature, a URL
    /// (`s3://bucket/prefix/`, …; [`Location`] tells them apart) reached with the
    /// environment's credentials and the default cache, as
    /// `ShardedDataset::open_with(location, &RemoteOptions::default())`.
    ///
    /// # Errors
    /// [`Manifest::load`]'s errors, with the manifest's path; for a URL,
    /// `ShardedDataset::open_with`'s, and without the `remote` feature an
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) naming it.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(ShardedDataset::open(dir.path())?.num_rows(), 3);
    /// assert!(ShardedDataset::open(dir.path().join("nowhere")).is_err());
    /// let text = dir.path().to_str().unwrap();
    /// assert_eq!(ShardedDataset::open(format!("file://{text}"))?.num_rows(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(location: impl Into<Location>) -> Result<Self> {
        match location.into() {
            Location::Path(dir) => Self::open_dir(&dir),
            Location::Url(url) => open_url_default(&url),
        }
    }

    /// The dataset in the directory `dir`.
    pub(crate) fn open_dir(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST_NAME);
        check_inside(dir, &path).map_err(|e| Error::from(e).in_file(&path))?;
        let manifest = Manifest::load(path)?;
        let source = Arc::new(LocalShards {
            dir: dir.to_path_buf(),
        });
        Ok(Self::from_parts(dir.to_path_buf(), manifest, source))
    }

    /// The dataset of `manifest`, its shards in `dir` (for a remote dataset, the cache's
    /// directory), read through `source`.
    pub(crate) fn from_parts(
        dir: PathBuf,
        manifest: Manifest,
        source: Arc<dyn ShardSource>,
    ) -> Self {
        // The manifest's parser checked that the rows add up without overflow.
        let rows = RowIndex::from_counts(manifest.shards.iter().map(|s| s.rows));
        let shards = manifest
            .shards
            .iter()
            .map(|_| ShardSlot::default())
            .collect();
        ShardedDataset {
            files: ShardFiles {
                dir,
                manifest: Arc::new(manifest),
                source,
                layouts: Arc::default(),
            },
            rows,
            shards,
        }
    }

    /// For a dataset opened by [`ShardedDataset::open`] from a URL, what its cache did since it
    /// was opened; `None` for a local dataset.
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
    /// assert!(ShardedDataset::open(dir.path())?.cache_stats().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.files.cache_stats()
    }

    /// For a dataset opened by [`ShardedDataset::open`] from a URL, its URL (ending in `/`);
    /// `None` for a local dataset.
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
    /// assert_eq!(ShardedDataset::open(dir.path())?.url(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn url(&self) -> Option<&str> {
        self.files.url()
    }

    /// The dataset directory (for a dataset in object storage, its directory in the cache).
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.dir(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dir(&self) -> &Path {
        &self.files.dir
    }

    /// The manifest.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.manifest().shards[0].file, "part-00000.arrow");
    /// assert_eq!(data.manifest().shards[1].rows, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn manifest(&self) -> &Manifest {
        &self.files.manifest
    }

    /// The columns every shard holds.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.columns()[0].name, "ids");
    /// assert_eq!(data.columns()[0].offsets.len(), 1);          // one LoD level
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn columns(&self) -> &[ColumnSpec] {
        &self.files.manifest.columns
    }

    /// The number of rows over all shards.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.num_rows(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.rows.num_rows()
    }

    /// The number of shards.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.num_shards(), 2);                        // rows 0..2, then row 2
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The global rows of each shard.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.row_index().starts(), &[0, 2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn row_index(&self) -> &RowIndex {
        &self.rows
    }

    /// Shard `index`, mapped and checked against the manifest on first touch.
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for an index past the last shard; for a shard
    /// that is missing, differs from the manifest ([`FormatError::ShardMismatch`]) or is
    /// invalid, the error with the shard's path.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.shard(1)?.num_rows(), 1);                // mapped and checked now
    /// assert!(data.shard(2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shard(&self, index: usize) -> Result<&MappedDataset> {
        let slot = self.slot(index)?;
        if let Some(shard) = slot.file.get() {
            if slot.checksum_ok.get().is_none() {
                self.checksum(index).verify(shard.as_bytes())?;
                slot.checksum_ok.get_or_init(|| ());
            }
            return Ok(shard);
        }
        let shard = self.open_shard(index, true)?;
        slot.checksum_ok.get_or_init(|| ());
        // Another thread may have opened it meanwhile: either mapping serves.
        Ok(slot.file.get_or_init(|| Box::new(shard)))
    }

    /// A dataset over the same shards (manifest, store, cache and layouts shared), none of
    /// them mapped by it yet: a loader's own handle.
    pub(crate) fn sharing(&self) -> ShardedDataset {
        ShardedDataset {
            files: self.files.clone(),
            rows: self.rows.clone(),
            shards: (self.shards.iter()).map(|_| ShardSlot::default()).collect(),
        }
    }

    /// Whether shard `index` is at hand: a local dataset's, or a remote one's whose entry
    /// is in the node's cache, so that [`shard`](Self::shard) maps it without a download.
    /// Rows of a remote shard that is not are read by [`take`](Self::take) by range
    /// requests, their bytes alone. `false` past the last shard.
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
    /// let data = ShardedDataset::open(dir.path())?;
    /// assert!(data.is_shard_at_hand(1));                       // a local file
    /// assert!(!data.is_shard_at_hand(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_shard_at_hand(&self, index: usize) -> bool {
        index < self.files.manifest.shards.len() && self.files.at_hand(index)
    }

    /// Shard `index` for a reader that goes on to read part of the shards (a loader's rank),
    /// checked against the manifest in everything but, unless checked already, its
    /// checksum: the [`PendingChecksum`] to verify once the reader reads the shard's values.
    /// Offsets and metadata are read, values are not.
    pub(crate) fn shard_for_reading(
        &self,
        index: usize,
    ) -> Result<(&MappedDataset, Option<PendingChecksum>)> {
        let slot = self.slot(index)?;
        let shard = match slot.file.get() {
            Some(shard) => shard,
            None => {
                let shard = self.open_shard(index, false)?;
                slot.file.get_or_init(|| Box::new(shard))
            }
        };
        let pending = slot.checksum_ok.get().is_none().then(|| PendingChecksum {
            mapping: shard.mapping().clone(),
            checksum: self.checksum(index),
        });
        Ok((shard, pending))
    }

    /// Shard `index`'s place, or the error for an index past the last shard.
    fn slot(&self, index: usize) -> Result<&ShardSlot> {
        self.shards.get(index).ok_or_else(|| {
            Error::invalid_argument(
                "ShardedDataset::shard",
                "index",
                index,
                format!("less than {}", self.shards.len()),
            )
        })
    }

    /// Shard `index`'s checksum in the manifest.
    fn checksum(&self, index: usize) -> Checksum {
        self.files.checksum(index)
    }

    /// Maps shard `index` and checks it against the manifest, its checksum only if
    /// `checksum`.
    fn open_shard(&self, index: usize, checksum: bool) -> Result<MappedDataset> {
        self.files.open(index, checksum, None)
    }

    /// The manifest and the place of the shards, for a loader that maps shards of its own.
    pub(crate) fn files(&self) -> &ShardFiles {
        &self.files
    }

    /// Maps and checks every shard not touched yet.
    ///
    /// # Errors
    /// The first shard's error, as [`ShardedDataset::shard`].
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// data.validate()?;
    /// std::fs::write(dir.path().join("part-00001.arrow"), b"changed")?;
    /// assert!(ShardedDataset::open(dir.path())?.validate().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        (0..self.num_shards()).try_for_each(|s| self.shard(s).map(|_| ()))
    }

    /// The shard holding row `row` and the row's index inside it, in O(log shards).
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`](crate::ArgumentError::RowsOutOfBounds).
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.locate_row(2)?, (1, 0));                 // shard 1, its row 0
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn locate_row(&self, row: usize) -> Result<(usize, usize)> {
        self.rows.try_locate(row)
    }

    /// Sample `row` (one row of every column), as a view into its shard. Over a URL, a row
    /// whose shard is not in the node's cache is read by range requests, its bytes alone,
    /// as [`take`](Self::take) reads it (the shard's CRC-32C, which covers the whole
    /// object, is then not checked: docs/remote.md, "Random access"); a cached shard is
    /// mapped.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`](crate::ArgumentError::RowsOutOfBounds); the shard's errors on first touch; over a
    /// URL, [`take`](Self::take)'s.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::arrow::types::Int64Type;
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// # let data = ShardedDataset::open(dir.path())?;
    /// let row = data.sample(2)?;
    /// assert_eq!(row.column("ids")?.typed_values::<Int64Type>()?, &[3, 4, 5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample(&self, row: usize) -> Result<Dataset> {
        let (shard, local) = self.locate_row(row)?;
        if self.files.url().is_some() && !self.files.at_hand(shard) {
            return Ok(self.take(&[row])?.data().clone());
        }
        self.shard(shard)?.sample(local)
    }

    /// Rows `rows`, as one view per record batch they touch, across shards, in order.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`](crate::ArgumentError::RowsOutOfBounds); the shards' errors on first touch.
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
    /// # let data = ShardedDataset::open(dir.path())?;
    /// let parts = data.rows(1..3)?;                            // one view per shard touched
    /// assert_eq!(parts.iter().map(Dataset::num_rows).collect::<Vec<_>>(), [1, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rows(&self, rows: Range<usize>) -> Result<Vec<Dataset>> {
        let mut out = Vec::new();
        for (shard, local) in self.rows.split(rows)? {
            out.extend(self.shard(shard)?.rows(local)?);
        }
        Ok(out)
    }
}

/// A shard's place: the shard once mapped and checked but for its checksum, and whether
/// its checksum was checked.
#[derive(Debug, Default)]
struct ShardSlot {
    /// Boxed: a slot not touched costs a pointer, not a mapping's fields (a manifest may
    /// list a million shards).
    file: OnceLock<Box<MappedDataset>>,
    checksum_ok: OnceLock<()>,
}

/// A shard's checksum in the manifest.
#[derive(Clone, Debug)]
pub(crate) struct Checksum {
    pub path: PathBuf,
    pub crc32c: u32,
}

impl Checksum {
    /// Checks `bytes` (the shard's) against the checksum.
    fn verify(&self, bytes: &[u8]) -> Result<()> {
        mismatch("crc32c", self.crc32c, crc32c::crc32c(bytes)).map_err(|e| e.in_file(&self.path))
    }
}

/// A shard's checksum still to check against its bytes ([`ShardedDataset::shard_for_reading`]).
#[derive(Debug)]
pub(crate) struct PendingChecksum {
    mapping: Buffer,
    checksum: Checksum,
}

impl PendingChecksum {
    /// The check of `mapping` (a shard's bytes) against `checksum`.
    pub(crate) fn new(mapping: Buffer, checksum: Checksum) -> Self {
        PendingChecksum { mapping, checksum }
    }

    /// Checks the shard's bytes against the manifest's checksum.
    ///
    /// # Errors
    /// [`FormatError::ShardMismatch`] naming `crc32c`, with the shard's path.
    pub(crate) fn verify(&self) -> Result<()> {
        self.checksum.verify(self.mapping.as_slice())
    }
}

/// Maps the shard at `path` and checks it against its manifest entry, its checksum only if
/// `checksum`.
pub(crate) fn open_checked(
    path: &Path,
    entry: &ShardEntry,
    columns: &[ColumnSpec],
    checksum: bool,
) -> Result<MappedDataset> {
    let meta = std::fs::metadata(path)?;
    check_regular(&meta)?;
    mismatch("bytes", entry.bytes, meta.len())?;
    // The checksum comes before the structural checks: a changed shard is named as such.
    let shard = MappedDataset::open_verified(path, true, |bytes| {
        mismatch("bytes", entry.bytes, bytes.len() as u64)?;
        if !checksum {
            return Ok(());
        }
        mismatch("crc32c", entry.crc32c, crc32c::crc32c(bytes))
    })?;
    mismatch("rows", entry.rows, shard.num_rows())?;
    mismatch("batches", entry.batches, shard.batches().len())?;
    let specs = ColumnSpec::of_schema(shard.schema())?;
    if specs != columns {
        return Err(FormatError::ShardMismatch {
            field: "columns".to_owned(),
            manifest: cut(&format!("{columns:?}"), MAX_MISMATCH_CHARS),
            found: cut(&format!("{specs:?}"), MAX_MISMATCH_CHARS),
        }
        .into());
    }
    for (c, expected) in entry.columns.iter().enumerate() {
        let mut found = ColumnStats::default();
        for batch in shard.batches() {
            found.add_column(&batch.columns()[c]);
        }
        if found.sequences.is_empty() {
            found.sequences = vec![0; expected.sequences.len()];
        }
        mismatch(
            &format!("columns[{c}].sequences"),
            format!("{:?}", expected.sequences),
            format!("{:?}", found.sequences),
        )?;
        mismatch(
            &format!("columns[{c}].elements"),
            expected.elements,
            found.elements,
        )?;
    }
    Ok(shard)
}

/// [`FormatError::ShardMismatch`] unless the manifest's value equals the shard's.
pub(crate) fn mismatch<T: PartialEq + std::fmt::Display>(
    field: &str,
    manifest: T,
    found: T,
) -> Result<()> {
    if manifest == found {
        return Ok(());
    }
    Err(FormatError::ShardMismatch {
        field: field.to_owned(),
        manifest: cut(&manifest.to_string(), MAX_MISMATCH_CHARS),
        found: cut(&found.to_string(), MAX_MISMATCH_CHARS),
    }
    .into())
}
