//! The streaming, atomic Arrow IPC file writer.

use crate::error::ArgumentError;
use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::io::ipc_file::IpcFileWriter;
use arrow_ipc::CompressionType;
use arrow_schema::SchemaRef;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::io::AtomicFile;
use crate::lod::OffsetWidth;

/// Buffer alignment in the file: every buffer can be mapped without a copy.
const ALIGNMENT: usize = 64;

/// Options of [`DatasetWriter`]: the target size of a record batch and the offset width.
///
/// # Example
/// ```
/// use lodtensor::{OffsetWidth, WriteOptions};
/// let options = WriteOptions::default()
///     .with_batch_bytes(16 << 20)             // record batches of about 16 MiB
///     .with_offset_width(OffsetWidth::I32);   // Arrow List, for readers without LargeList
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
pub struct WriteOptions {
    batch_bytes: usize,
    offset_width: OffsetWidth,
    schema_metadata: HashMap<String, String>,
    compression: IpcCompression,
}

/// The compression of an Arrow IPC file's record batch bodies (Arrow IPC, `BodyCompression`:
/// each buffer compressed on its own, prefixed with its uncompressed length).
///
/// A compressed file is smaller at rest but not zero-copy: opening it decompresses every
/// buffer read once into memory (format-spec §6). Needs the `compression` feature (on by
/// default) to write or read.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::{DatasetWriter, IpcCompression, MappedDataset, WriteOptions};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("d.arrow");
/// let options = WriteOptions::default().with_compression(IpcCompression::Zstd);
/// let mut w = DatasetWriter::create(&path, options)?;
/// w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
/// w.finish()?;
/// let file = MappedDataset::open(&path)?;
/// assert!(file.is_compressed());
/// assert_eq!(file.num_rows(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IpcCompression {
    /// Uncompressed: every buffer can be mapped without a copy (the default).
    #[default]
    None,
    /// Zstandard (level 1): the smaller files.
    Zstd,
    /// LZ4 frame: the faster to decompress.
    Lz4,
}

impl IpcCompression {
    /// Arrow's compression type, `None` when uncompressed.
    fn to_arrow(self) -> Option<CompressionType> {
        match self {
            IpcCompression::None => None,
            IpcCompression::Zstd => Some(CompressionType::ZSTD),
            IpcCompression::Lz4 => Some(CompressionType::LZ4_FRAME),
        }
    }
}

impl std::str::FromStr for IpcCompression {
    type Err = Error;

    /// `none`, `zstd` or `lz4`.
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`] naming the unknown codec.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "none" => Ok(IpcCompression::None),
            "zstd" => Ok(IpcCompression::Zstd),
            "lz4" => Ok(IpcCompression::Lz4),
            other => Err(Error::invalid_argument(
                "IpcCompression::from_str",
                "name",
                format!("{other:?}"),
                "none, zstd or lz4",
            )),
        }
    }
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            batch_bytes: 64 << 20,
            offset_width: OffsetWidth::I64,
            schema_metadata: HashMap::new(),
            compression: IpcCompression::None,
        }
    }
}

impl WriteOptions {
    /// Schema metadata written into the file beside lodtensor's own (`huggingface`'s
    /// features, `pandas`'): every key but those starting with `lodtensor.`, which are the
    /// writer's.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{DatasetWriter, MappedDataset, WriteOptions};
    /// let path = tempfile::tempdir()?.keep().join("d.arrow");
    /// let kept = [("huggingface".to_owned(), "{}".to_owned())];
    /// let mut w = DatasetWriter::create(&path, WriteOptions::default().with_schema_metadata(kept))?;
    /// w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
    /// w.finish()?;
    /// assert_eq!(MappedDataset::open(&path)?.schema().metadata()["huggingface"], "{}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_schema_metadata(
        mut self,
        metadata: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        self.schema_metadata = (metadata.into_iter())
            .filter(|(k, _)| !k.starts_with("lodtensor."))
            .collect();
        self
    }

    /// Target size of one record batch, in bytes of values and offsets (default 64 MiB).
    /// A batch holds at least one row, however large. `0` is refused by the writer
    /// ([`DatasetWriter::create`], [`ShardWriter`](crate::shards::ShardWriter)) naming
    /// `batch_bytes`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{DatasetWriter, MappedDataset, WriteOptions};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("d.arrow");
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// let mut w = DatasetWriter::create(&path, WriteOptions::default().with_batch_bytes(1))?;
    /// for row in 0..2 {
    ///     w.write(&ds.slice_rows(row..row + 1)?)?;              // each row fills a record batch
    /// }
    /// w.finish()?;
    /// assert_eq!(MappedDataset::open(&path)?.batches().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_batch_bytes(mut self, bytes: usize) -> Self {
        self.batch_bytes = bytes;
        self
    }

    /// These options, or [`ArgumentError::InvalidArgument`] naming a size of zero.
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        if self.batch_bytes == 0 {
            return Err(Error::invalid_argument(op, "batch_bytes", 0, "at least 1"));
        }
        Ok(())
    }

    /// Offset width of every level (default `i64`, Arrow `LargeList`).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{OffsetWidth, WriteOptions};
    /// let options = WriteOptions::default().with_offset_width(OffsetWidth::I32);
    /// assert_eq!(options.offset_width(), OffsetWidth::I32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_offset_width(mut self, width: OffsetWidth) -> Self {
        self.offset_width = width;
        self
    }

    /// The offset width of every level.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{OffsetWidth, WriteOptions};
    /// assert_eq!(WriteOptions::default().offset_width(), OffsetWidth::I64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn offset_width(&self) -> OffsetWidth {
        self.offset_width
    }

    /// Compression of the record batch bodies (default none: the file is mapped without a
    /// copy; a compressed one is decompressed into memory when opened).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{IpcCompression, WriteOptions};
    /// let options = WriteOptions::default().with_compression(IpcCompression::Lz4);
    /// assert_eq!(options.compression(), IpcCompression::Lz4);
    /// ```
    pub fn with_compression(mut self, compression: IpcCompression) -> Self {
        self.compression = compression;
        self
    }

    /// The compression of the record batch bodies.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{IpcCompression, WriteOptions};
    /// assert_eq!(WriteOptions::default().compression(), IpcCompression::None);
    /// ```
    pub fn compression(&self) -> IpcCompression {
        self.compression
    }
}

/// What a finished write produced.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::{DatasetWriter, WriteOptions};
/// let dir = tempfile::tempdir()?;
/// let mut w = DatasetWriter::create(dir.path().join("d.arrow"), WriteOptions::default())?;
/// w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
/// let summary = w.finish()?;
/// assert_eq!((summary.rows, summary.batches), (2, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteSummary {
    /// Rows written.
    pub rows: usize,
    /// Record batches written.
    pub batches: usize,
    /// Size of the file in bytes.
    pub bytes: u64,
}

/// Writes datasets to an Arrow IPC file, streaming, atomically.
///
/// Datasets are appended row after row: small ones are gathered, large ones cut, into
/// record batches of about [`WriteOptions::with_batch_bytes`] bytes, so a reader never has
/// to re-assemble a batch. Rows pending for a batch that are at least half that size and
/// would overflow it with the next dataset are written as they are rather than topped up
/// with a cut of it: a batch of one piece of one dataset is written without a copy, where
/// gathering pieces copies them into one batch. Nothing appears at the target path until [`DatasetWriter::finish`]
/// renames the complete file over it (see [`AtomicFile`]).
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
/// use arrow_array::types::Float32Type;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("tokens.arrow");
/// let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
/// for doc in 0..3 {
///     let t = LodTensor::from_lengths::<Float32Type>(&[vec![2], vec![1, 2]], vec![doc as f32; 3 * 4], vec![4])?;
///     writer.write(&Dataset::try_new(vec![Column::new("tokens", t)])?)?;
/// }
/// let summary = writer.finish()?;
/// assert_eq!((summary.rows, summary.batches), (3, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DatasetWriter {
    file: AtomicFile,
    options: WriteOptions,
    ipc: Option<(IpcFileWriter<BufWriter<File>>, SchemaRef)>,
    pending: Vec<Dataset>,
    pending_bytes: usize,
    /// Datasets given to `write` so far.
    datasets: usize,
    rows: usize,
    batches: usize,
}

impl DatasetWriter {
    /// Starts writing `path` (under a temporary name until [`DatasetWriter::finish`]).
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the directory cannot hold a new file;
    /// [`ArgumentError::InvalidArgument`] for a `batch_bytes` of 0.
    ///
    /// # Example
    /// ```
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{DatasetWriter, WriteOptions};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("d.arrow");
    /// let w = DatasetWriter::create(&path, WriteOptions::default())?;
    /// drop(w);                                                  // never finished: nothing appears
    /// assert!(!path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(path: impl AsRef<Path>, options: WriteOptions) -> Result<Self> {
        options.check("DatasetWriter")?;
        Ok(DatasetWriter {
            file: AtomicFile::create(path)?,
            options,
            ipc: None,
            pending: Vec::new(),
            pending_bytes: 0,
            datasets: 0,
            rows: 0,
            batches: 0,
        })
    }

    /// Appends the rows of `dataset`. The first dataset fixes the schema (columns, types,
    /// level names); later ones must have the same.
    ///
    /// # Errors
    /// [`ArgumentError::SchemaMismatch`] naming the dataset (in write order); [`DataError::OffsetOverflow`](crate::DataError::OffsetOverflow) when an offset does not fit
    /// the offset width; [`ErrorKind::Io`](crate::ErrorKind::Io) when writing fails.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{DatasetWriter, MappedDataset, WriteOptions};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("d.arrow");
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    /// w.write(&ds)?;
    /// w.write(&ds)?;
    /// w.finish()?;
    /// assert_eq!(MappedDataset::open(&path)?.num_rows(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        let dataset = dataset.with_offset_width(self.options.offset_width)?;
        self.check_schema(&dataset)?;
        self.datasets += 1;
        let target = self.options.batch_bytes;
        let rows = dataset.num_rows();
        let mut remaining: usize = (0..rows).map(|row| row_bytes(&dataset, row)).sum();
        let start_bytes = remaining;
        let mut start = 0;
        while start < rows {
            if self.pending_bytes >= target / 2 && self.pending_bytes + remaining > target {
                self.flush()?;
            }
            let mut end = start;
            let mut bytes = 0;
            while end < rows {
                let row = row_bytes(&dataset, end);
                if end > start && self.pending_bytes + bytes + row > target {
                    break;
                }
                bytes += row;
                end += 1;
            }
            self.pending.push(dataset.slice_rows(start..end)?);
            self.pending_bytes += bytes;
            remaining -= bytes;
            if end < rows || self.pending_bytes >= target {
                self.flush()?;
            }
            start = end;
        }
        if rows > 0 && start_bytes > target {
            self.own_pending()?;
        }
        Ok(())
    }

    /// Copies the rows pending (the tail of a dataset larger than a batch: less than half a
    /// batch) out of that dataset, so that it is not kept alive, whole, until the next
    /// write fills the batch: writing datasets of a row group each, memory stays at about
    /// one of them plus a batch.
    fn own_pending(&mut self) -> Result<()> {
        let Some((_, schema)) = &self.ipc else {
            return Ok(());
        };
        let Some(first) = self.pending.first() else {
            return Ok(());
        };
        let batches: Vec<RecordBatch> = (self.pending.iter())
            .map(|d| d.to_record_batch_with_schema(schema.clone()))
            .collect();
        // An empty slice beside a single batch makes `concat` copy rather than slice.
        let empty = batches[0].slice(0, 0);
        let owned = arrow_select::concat::concat_batches(schema, batches.iter().chain([&empty]))?;
        self.pending = vec![first.try_from_record_batch_like(&owned, self.batches)?];
        Ok(())
    }

    /// Writes what is pending, the footer, syncs and renames the file over the target.
    ///
    /// # Errors
    /// [`ArgumentError::NoSchema`] when no dataset was ever written (the schema is unknown);
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when writing fails (the target is then untouched).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{DatasetWriter, WriteOptions};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("d.arrow");
    /// let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    /// w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
    /// assert!(!path.exists());                                  // the file appears at finish
    /// w.finish()?;
    /// assert!(path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finish(mut self) -> Result<WriteSummary> {
        self.flush()?;
        let path = self.file.target().to_path_buf();
        let (ipc, _) = self.ipc.take().ok_or(ArgumentError::NoSchema)?;
        let in_file = |e: Error| e.in_file(&path);
        let buffered = ipc.finish().map_err(|e| in_file(e.into()))?;
        buffered
            .into_inner()
            .map_err(|e| in_file(e.into_error().into()))?;
        let bytes = self
            .file
            .file()
            .metadata()
            .map_err(|e| in_file(e.into()))?
            .len();
        self.file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            batches: self.batches,
            bytes,
        })
    }

    /// The target path.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DatasetWriter, WriteOptions};
    /// let dir = tempfile::tempdir()?;
    /// let w = DatasetWriter::create(dir.path().join("d.arrow"), WriteOptions::default())?;
    /// assert_eq!(w.path(), dir.path().join("d.arrow"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> PathBuf {
        self.file.target().to_path_buf()
    }

    fn check_schema(&mut self, dataset: &Dataset) -> Result<()> {
        let mut schema = dataset.schema();
        if !self.options.schema_metadata.is_empty() {
            let mut metadata = self.options.schema_metadata.clone();
            metadata.extend(schema.metadata().clone());
            schema = Arc::new(schema.as_ref().clone().with_metadata(metadata));
        }
        match &self.ipc {
            Some((_, expected)) if **expected != *schema => Err(ArgumentError::SchemaMismatch {
                batch: self.datasets,
                reason: format!("expected {expected}, found {schema}"),
            }
            .into()),
            Some(_) => Ok(()),
            None => {
                let out = BufWriter::with_capacity(
                    1 << 20,
                    self.file
                        .file()
                        .try_clone()
                        .map_err(|e| Error::from(e).in_file(self.file.target()))?,
                );
                let compression = self.options.compression.to_arrow();
                let ipc = IpcFileWriter::try_new(out, schema.clone(), ALIGNMENT, compression)?;
                self.ipc = Some((ipc, schema));
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        let Some((ipc, schema)) = &mut self.ipc else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let batches: Vec<RecordBatch> = self
            .pending
            .drain(..)
            .map(|d| d.to_record_batch_with_schema(schema.clone()))
            .collect();
        let batch = if batches.len() == 1 {
            batches.into_iter().next().expect("one batch")
        } else {
            arrow_select::concat::concat_batches(schema, &batches)?
        };
        let path = self.file.target();
        ipc.write(&batch)
            .map_err(|e| Error::from(e).in_file(path))?;
        self.rows += batch.num_rows();
        self.batches += 1;
        self.pending_bytes = 0;
        Ok(())
    }
}

/// Bytes of values and offsets that row `row` adds to a batch.
pub(crate) fn row_bytes(dataset: &Dataset, row: usize) -> usize {
    dataset
        .columns()
        .iter()
        .map(|c| {
            let Some(t) = c.as_tensor() else {
                // A side column: its buffers' bytes spread evenly over its rows.
                let array = c.side_array().expect("not a tensor: a side column");
                return array.get_buffer_memory_size() / array.len().max(1);
            };
            let elements = match t.num_levels() {
                0 => 1,
                _ => t.lod().sequence_elements(0, row).map_or(0, |r| r.len()),
            };
            let item_bits = t.dtype().byte_width().map_or(1, |w| w * 8);
            (elements * t.values().element_size() * item_bits).div_ceil(8) + 8 * t.num_levels()
        })
        .sum()
}

/// Writes the dataset `file` (a compressed one, say) to `out` as an uncompressed Arrow IPC
/// file: its schema (with its metadata) and each of its record batches as it is, so that
/// the copy has the same rows, batches and columns, and maps without a copy.
///
/// # Errors
/// [`ErrorKind::Io`](crate::ErrorKind::Io) when writing fails; Arrow's errors.
#[cfg(feature = "remote")]
pub(crate) fn write_uncompressed(
    file: &crate::io::ipc_reader::MappedDataset,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    use arrow_ipc::MetadataVersion;
    use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
    let options = IpcWriteOptions::try_new(ALIGNMENT, false, MetadataVersion::V5)?;
    let schema = file.schema();
    let mut ipc = FileWriter::try_new_with_options(out, schema, options)?;
    for batch in file.batches() {
        ipc.write(&batch.to_record_batch_with_schema(schema.clone()))?;
    }
    ipc.finish()?;
    Ok(())
}
