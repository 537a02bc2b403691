//! Parquet export and import of [`Dataset`]s (feature `parquet`).
//!
//! A dataset is written as the `parquet` crate's Arrow writer maps it: each column's nested
//! lists become nested Parquet `LIST`s, the `FixedSizeList` of an element becomes one more
//! `LIST` level, and the values become one leaf column. The Arrow schema, with the
//! `lodtensor.*` metadata and the `arrow.fixed_shape_tensor` extension, is embedded in the
//! file's key-value metadata (`ARROW:schema`), so a reader that honours it (this one,
//! pyarrow, arrow-rs) gets the same types back. See `format-spec.md` §8 for the mapping to
//! repetition and definition levels. The column chunks are encoded here, straight from the
//! LoD offsets and the values' slices: the file is byte for byte the Arrow writer's, made
//! about twice as fast.
//!
//! ```text
//! write:  Dataset views ──► row group ──► levels from offsets + value slices ──► column
//!         chunks ──► … ──► footer   (row groups encoded on `threads` threads, in order)
//! read:   row groups ──► RecordBatch (batch_size rows) ──► Dataset
//! ```
//!
//! A Parquet file without an embedded Arrow schema has no fixed-size lists: a reader sees
//! the element's `FixedSizeList` as one more `List`, so such a column reads back with one
//! more LoD level per element dimension and scalar elements.
//! [`ParquetReadOptions::with_element_shape`] folds those innermost levels back into an
//! element shape, checking that every one of their sequences has the declared length.
//!
//! # Example
//! ```
//! use lodtensor::io::parquet::{read_parquet, write_parquet, Compression, ParquetReadOptions, ParquetWriteOptions};
//! use lodtensor::{Column, Dataset, LodTensor};
//! use arrow_array::types::Float32Type;
//! let tokens = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], vec![0.5; 6 * 4], vec![4])?;
//! let ds = Dataset::try_new(vec![Column::new("tokens", tokens)])?;
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("tokens.parquet");
//! write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_compression(Compression::Zstd(3)))?;
//! assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?, ds);
//! # Ok::<(), lodtensor::Error>(())
//! ```

use crate::{ArgumentError, ColumnLayout, DataError, FormatError, UnusableError};
use std::borrow::Borrow;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{Compression as ParquetCompression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::file::writer::SerializedFileWriter;

use crate::dataset::{Column, Dataset, check_version};
use crate::error::{Error, Result};
use crate::io::AtomicFile;
use crate::lod::{LevelOffsets, Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

mod encode;
mod pages;

use encode::{append_row_group, encode_row_group, raw_bytes, write_row_group};

/// The compression codec of every column chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// No compression.
    None,
    /// Snappy (pyarrow's default).
    #[default]
    Snappy,
    /// Zstandard at a level (1 to 22; 3 is zstd's default).
    Zstd(i32),
}

impl Compression {
    fn to_parquet(self) -> Result<ParquetCompression> {
        Ok(match self {
            Compression::None => ParquetCompression::UNCOMPRESSED,
            Compression::Snappy => ParquetCompression::SNAPPY,
            Compression::Zstd(level) => ParquetCompression::ZSTD(ZstdLevel::try_new(level)?),
        })
    }
}

/// When the writer closes a row group and starts the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowGroupSize {
    /// After this many rows (top-level sequences).
    Rows(usize),
    /// Once the row group's values and offsets reach about this many bytes (before
    /// encoding).
    Bytes(usize),
}

impl Default for RowGroupSize {
    /// 128 MiB.
    fn default() -> Self {
        RowGroupSize::Bytes(128 << 20)
    }
}

/// How a dataset is written to Parquet.
///
/// The defaults: snappy, row groups of about 128 MiB, offset widths as the datasets have
/// them, `PLAIN` encoding, no dictionary, one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ParquetWriteOptions {
    compression: Compression,
    row_group_size: RowGroupSize,
    offset_width: Option<OffsetWidth>,
    byte_stream_split: bool,
    dictionary: bool,
    threads: usize,
}

impl Default for ParquetWriteOptions {
    fn default() -> Self {
        ParquetWriteOptions {
            compression: Compression::default(),
            row_group_size: RowGroupSize::default(),
            offset_width: None,
            byte_stream_split: false,
            dictionary: false,
            threads: 1,
        }
    }
}

impl ParquetWriteOptions {
    /// The same options with `compression`.
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// The same options with row groups of `size`.
    pub fn with_row_group_size(mut self, size: RowGroupSize) -> Self {
        self.row_group_size = size;
        self
    }

    /// The same options converting every level's offsets to `width` before writing.
    ///
    /// Parquet stores no offsets, only repetition and definition levels: the width is kept
    /// in the embedded Arrow schema (`List` or `LargeList`) and decides what readers build.
    pub fn with_offset_width(mut self, width: OffsetWidth) -> Self {
        self.offset_width = Some(width);
        self
    }

    /// The same options with `BYTE_STREAM_SPLIT` encoding for float16/32/64 values, which
    /// usually helps a codec compress them (no dictionary for those columns then).
    pub fn with_byte_stream_split(mut self, enabled: bool) -> Self {
        self.byte_stream_split = enabled;
        self
    }

    /// The same options with dictionary encoding of the values on or off (off by default:
    /// it rarely pays for tensor values and costs time).
    pub fn with_dictionary(mut self, enabled: bool) -> Self {
        self.dictionary = enabled;
        self
    }

    /// The same options encoding up to `threads` row groups at once (1, the default,
    /// encodes on the calling thread).
    ///
    /// The writer holds up to `threads` row groups of rows (views of the datasets given, not
    /// copies), encodes them on scoped threads and writes them in order: the file is the
    /// same as with one thread, and memory is `threads` row groups of input plus their
    /// encoded chunks.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The Parquet writer properties for a file of `schema` whose columns hold `dtypes`.
    fn properties(&self, schema: &Schema, dtypes: &[DType]) -> Result<WriterProperties> {
        let mut builder = WriterProperties::builder()
            .set_compression(self.compression.to_parquet()?)
            .set_dictionary_enabled(self.dictionary);
        if self.byte_stream_split {
            let descr = ArrowSchemaConverter::new().convert(schema)?;
            for (i, leaf) in descr.columns().iter().enumerate() {
                let dtype = dtypes[descr.get_column_root_idx(i)];
                if matches!(dtype, DType::Float16 | DType::Float32 | DType::Float64) {
                    builder = builder
                        .set_column_encoding(leaf.path().clone(), Encoding::BYTE_STREAM_SPLIT)
                        .set_column_dictionary_enabled(leaf.path().clone(), false);
                }
            }
        }
        Ok(builder.build())
    }
}

/// Writes datasets to Parquet one after the other, as rows of one table.
///
/// The first dataset fixes the file's schema; each later one must have the same columns
/// (offset widths are converted to the file's when they differ and the file uses one width).
/// The writer gathers rows (views of the datasets given, not copies) until a row group is
/// full ([`ParquetWriteOptions::with_row_group_size`]), encodes it from the LoD offsets
/// (see `format-spec.md` §8.1) and writes it out: memory is bounded by one row group of
/// input and its encoded chunks per thread ([`ParquetWriteOptions::with_threads`]).
///
/// To write a file, prefer [`ParquetFileWriter`], which replaces the target atomically.
///
/// # Example
/// ```
/// use lodtensor::io::parquet::{ParquetWriter, ParquetWriteOptions};
/// use lodtensor::{Column, Dataset, LodTensor};
/// use arrow_array::types::Int64Type;
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![1, 2, 3], vec![])?;
/// let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
/// let mut writer = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
/// writer.write(&ds)?;
/// writer.write(&ds.slice_rows(1..2)?)?;
/// let bytes = writer.finish()?;
/// assert_eq!(&bytes[..4], b"PAR1");
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub struct ParquetWriter<W: Write + Send> {
    options: ParquetWriteOptions,
    state: State<W>,
    schema: Option<SchemaRef>,
    batches: usize,
    rows: usize,
}

impl<W: Write + Send> std::fmt::Debug for ParquetWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetWriter")
            .field("options", &self.options)
            .field("schema", &self.schema)
            .field("batches", &self.batches)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> ParquetWriter<W> {
    /// A writer to `sink`; nothing is written before the first dataset.
    pub fn new(sink: W, options: ParquetWriteOptions) -> Self {
        ParquetWriter {
            options,
            state: State::Waiting(sink),
            schema: None,
            batches: 0,
            rows: 0,
        }
    }

    /// Appends the rows of `dataset` (a view is written as the rows it shows).
    ///
    /// # Errors
    /// [`ArgumentError::SchemaMismatch`] when the columns differ from the first dataset's;
    /// [`DataError::OffsetOverflow`] (with the column, [`Error::column`]) when an offset does not fit the
    /// width asked for; [`ErrorKind::Parquet`](crate::ErrorKind::Parquet) or [`ErrorKind::Io`](crate::ErrorKind::Io) from the writer.
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        let batch = self.batches;
        let mut dataset = match self.options.offset_width {
            Some(width) => with_offset_width(dataset, width, batch)?,
            None => dataset.clone(),
        };
        match &self.schema {
            None => {
                let schema = dataset.schema();
                let dtypes: Vec<DType> = dataset
                    .columns()
                    .iter()
                    .map(|c| c.tensor().dtype())
                    .collect();
                let props = self.options.properties(&schema, &dtypes)?;
                let State::Waiting(sink) = std::mem::replace(&mut self.state, State::Broken) else {
                    return Err(UnusableError::WriterBroken.into());
                };
                // The Arrow writer makes the file writer with the Parquet schema and the
                // embedded Arrow schema; the row groups are encoded here.
                let (file, _) = ArrowWriter::try_new(sink, schema.clone(), Some(props))?
                    .into_serialized_writer()?;
                self.state = State::Open(Box::new(RowGroups {
                    file,
                    size: self.options.row_group_size,
                    threads: self.options.threads,
                    current: Vec::new(),
                    current_rows: 0,
                    current_bytes: 0,
                    full: Vec::new(),
                    spare: Vec::new(),
                }));
                self.schema = Some(schema);
            }
            Some(schema) => {
                if dataset.schema().fields() != schema.fields() {
                    dataset = conform(&dataset, schema, batch)?;
                }
            }
        }
        let State::Open(groups) = &mut self.state else {
            return Err(UnusableError::WriterBroken.into());
        };
        let rows = dataset.num_rows();
        groups.push(dataset)?;
        self.batches += 1;
        self.rows += rows;
        Ok(())
    }

    /// The number of rows written so far.
    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// The file's schema, once the first dataset has set it.
    pub fn schema(&self) -> Option<&SchemaRef> {
        self.schema.as_ref()
    }

    /// Writes the last row group and the footer, and returns the sink.
    ///
    /// # Errors
    /// [`ArgumentError::NoSchema`] when no dataset was written (a Parquet file needs a schema:
    /// write an empty dataset to make a file with no rows); [`ErrorKind::Parquet`](crate::ErrorKind::Parquet) from the
    /// writer.
    pub fn finish(self) -> Result<W> {
        match self.state {
            State::Waiting(_) => Err(ArgumentError::NoSchema.into()),
            State::Open(groups) => groups.finish(),
            State::Broken => Err(UnusableError::WriterBroken.into()),
        }
    }
}

/// Where a [`ParquetWriter`] is.
enum State<W: Write + Send> {
    /// Before the first dataset: the sink, no schema yet.
    Waiting(W),
    /// Writing row groups.
    Open(Box<RowGroups<W>>),
    /// After making the writer failed: nothing more can be written.
    Broken,
}

/// Row groups gathered from the datasets and encoded `threads` at a time.
struct RowGroups<W: Write + Send> {
    file: SerializedFileWriter<W>,
    size: RowGroupSize,
    threads: usize,
    /// The row group being gathered: views of the datasets' rows.
    current: Vec<Dataset>,
    current_rows: usize,
    current_bytes: usize,
    /// Gathered row groups waiting to be encoded.
    full: Vec<Vec<Dataset>>,
    /// Buffers of encoded chunks, emptied, for the next row groups encoded in memory.
    spare: Vec<Vec<u8>>,
}

impl<W: Write + Send> RowGroups<W> {
    /// Adds the rows of `dataset`, encoding once `threads` row groups are gathered.
    fn push(&mut self, mut dataset: Dataset) -> Result<()> {
        let row_bytes = row_bytes(&dataset);
        while dataset.num_rows() > 0 {
            let room = match self.size {
                RowGroupSize::Rows(rows) => rows.max(1) - self.current_rows,
                RowGroupSize::Bytes(bytes) => bytes
                    .saturating_sub(self.current_bytes)
                    .div_ceil(row_bytes)
                    .max(1),
            };
            let take = room.min(dataset.num_rows());
            let rest = dataset.slice_rows(take..dataset.num_rows())?;
            self.current.push(dataset.slice_rows(0..take)?);
            self.current_rows += take;
            self.current_bytes += take * row_bytes;
            dataset = rest;
            if take == room {
                self.close_current()?;
            }
        }
        Ok(())
    }

    /// Moves the row group being gathered to the full ones, encoding them once there are
    /// `threads`.
    fn close_current(&mut self) -> Result<()> {
        self.full.push(std::mem::take(&mut self.current));
        self.current_rows = 0;
        self.current_bytes = 0;
        if self.full.len() >= self.threads {
            self.encode_full()?;
        }
        Ok(())
    }

    /// Encodes the full row groups and writes them in order: the first straight into the
    /// file on the calling thread, the others at the same time into memory, each on a thread
    /// of its own, into buffers kept from one round to the next.
    fn encode_full(&mut self) -> Result<()> {
        let groups = std::mem::take(&mut self.full);
        let Some((first, others)) = groups.split_first() else {
            return Ok(());
        };
        let schema = self.file.schema_descr().clone();
        let props = self.file.properties().clone();
        let buffers: Vec<Vec<Vec<u8>>> = others
            .iter()
            .map(|_| {
                (0..schema.num_columns())
                    .map(|_| self.spare.pop().unwrap_or_default())
                    .collect()
            })
            .collect();
        let file = &mut self.file;
        let (schema, props) = (&schema, &props);
        let (written, encoded) = std::thread::scope(|scope| {
            let handles: Vec<_> = others
                .iter()
                .zip(buffers)
                .map(|(group, buffers)| {
                    scope.spawn(move || encode_row_group(group, schema, props, buffers))
                })
                .collect();
            let written = write_row_group(file, first);
            let encoded: Vec<Result<_>> = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect();
            (written, encoded)
        });
        written?;
        for chunks in encoded {
            let emptied = append_row_group(&mut self.file, chunks?)?;
            self.spare.extend(emptied);
        }
        Ok(())
    }

    /// Encodes what is left and writes the footer.
    fn finish(mut self) -> Result<W> {
        if self.current_rows > 0 {
            self.full.push(std::mem::take(&mut self.current));
        }
        self.encode_full()?;
        Ok(self.file.into_inner()?)
    }
}

/// About how many bytes one row of `dataset` holds (at least 1).
fn row_bytes(dataset: &Dataset) -> usize {
    let bytes: usize = dataset.columns().iter().map(raw_bytes).sum();
    bytes.div_ceil(dataset.num_rows().max(1)).max(1)
}

/// Writes datasets to a Parquet file atomically: into a temporary file in the target's
/// directory, synced and renamed over the target by [`ParquetFileWriter::finish`]. A writer
/// dropped before `finish` (or failing) leaves the target as it was.
///
/// # Example
/// ```
/// use lodtensor::io::parquet::{ParquetFileWriter, ParquetWriteOptions};
/// use lodtensor::{Column, Dataset, LodTensor};
/// use arrow_array::types::Int64Type;
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![1, 2, 3], vec![])?;
/// let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("ids.parquet");
/// let mut writer = ParquetFileWriter::create(&path, ParquetWriteOptions::default())?;
/// writer.write(&ds)?;
/// assert!(!path.exists());
/// writer.finish()?;
/// assert!(path.exists());
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Debug)]
pub struct ParquetFileWriter {
    inner: ParquetWriter<AtomicFile>,
    path: PathBuf,
}

impl ParquetFileWriter {
    /// A writer to a temporary file next to `path`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) (with the path, [`Error::path`]) when the temporary file cannot be created.
    pub fn create(path: impl AsRef<Path>, options: ParquetWriteOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        Ok(ParquetFileWriter {
            inner: ParquetWriter::new(AtomicFile::create(&path)?, options),
            path,
        })
    }

    /// Appends the rows of `dataset`, as [`ParquetWriter::write`].
    ///
    /// # Errors
    /// As [`ParquetWriter::write`], with the path attached ([`Error::path`]).
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        self.inner.write(dataset).map_err(|e| e.in_file(&self.path))
    }

    /// The number of rows written so far.
    pub fn num_rows(&self) -> usize {
        self.inner.num_rows()
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Finishes the file, syncs it and renames it over the target.
    ///
    /// # Errors
    /// As [`ParquetWriter::finish`]; [`ErrorKind::Io`](crate::ErrorKind::Io) when syncing or renaming fails;
    /// each with the path attached ([`Error::path`]). The target is untouched on error.
    pub fn finish(self) -> Result<()> {
        let path = self.path;
        self.inner.finish().map_err(|e| e.in_file(&path))?.commit()
    }
}

/// Writes `datasets`, one after the other, to a Parquet file at `path`, atomically.
///
/// # Errors
/// As [`ParquetFileWriter`]; [`ArgumentError::NoSchema`] when `datasets` is empty.
///
/// # Example
/// See the [module docs](self).
pub fn write_parquet<D: Borrow<Dataset>>(
    path: impl AsRef<Path>,
    datasets: impl IntoIterator<Item = D>,
    options: &ParquetWriteOptions,
) -> Result<()> {
    let mut writer = ParquetFileWriter::create(path, options.clone())?;
    for dataset in datasets {
        writer.write(dataset.borrow())?;
    }
    writer.finish()
}

/// The dataset with every level of every column in `width`.
fn with_offset_width(dataset: &Dataset, width: OffsetWidth, batch: usize) -> Result<Dataset> {
    if dataset.columns().is_empty() {
        return Ok(dataset.clone());
    }
    let columns = dataset
        .columns()
        .iter()
        .map(|c| {
            c.with_offset_width(width)
                .map_err(|e| e.in_column(c.name(), batch))
        })
        .collect::<Result<_>>()?;
    Dataset::try_new(columns)
}

/// The dataset with the offset widths of `schema`, or [`ArgumentError::SchemaMismatch`].
fn conform(dataset: &Dataset, schema: &Schema, batch: usize) -> Result<Dataset> {
    let mismatch = |reason: String| ArgumentError::SchemaMismatch { batch, reason }.into();
    let fields = schema.fields();
    if dataset.columns().len() != fields.len() {
        return Err(mismatch(format!(
            "{} columns, the file has {}",
            dataset.columns().len(),
            fields.len()
        )));
    }
    let mut columns = Vec::with_capacity(fields.len());
    for (c, f) in dataset.columns().iter().zip(fields.iter()) {
        if c.name() != f.name() {
            return Err(mismatch(format!(
                "column {:?} where the file has {:?}",
                c.name(),
                f.name()
            )));
        }
        let mut column = c.clone();
        let mut field = column.arrow_field();
        if field.data_type() != f.data_type() {
            // Same layout in other offset widths: convert, when the file uses one width.
            let layout = ColumnLayout::of(f);
            let widths = layout.widths();
            if let Some(&width) = widths.first()
                && widths.iter().all(|&w| w == width)
            {
                column = c
                    .with_offset_width(width)
                    .map_err(|e| e.in_column(c.name(), batch))?;
                field = column.arrow_field();
            }
        }
        if field != **f {
            return Err(mismatch(format!(
                "column {:?} is {} with metadata {:?}, the file's is {} with metadata {:?}",
                c.name(),
                field.data_type(),
                field.metadata(),
                f.data_type(),
                f.metadata()
            )));
        }
        columns.push(column);
    }
    Dataset::try_new(columns)
}

/// How a Parquet file is read.
#[derive(Clone, Debug, PartialEq)]
pub struct ParquetReadOptions {
    batch_size: usize,
    element_shapes: Vec<(String, Vec<usize>)>,
}

impl Default for ParquetReadOptions {
    /// Batches of 1024 rows, element shapes as the file declares them.
    fn default() -> Self {
        ParquetReadOptions {
            batch_size: 1024,
            element_shapes: Vec::new(),
        }
    }
}

impl ParquetReadOptions {
    /// The same options reading `rows` rows (top-level sequences) per dataset.
    pub fn with_batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows.max(1);
        self
    }

    /// The same options reading column `column` with elements of `shape`.
    ///
    /// For a file without an embedded Arrow schema (Parquet has no fixed-size lists, so
    /// the element's `FixedSizeList` reads back as one more `List` level of scalars):
    /// - when every sequence of the innermost level has `D1·D2·…` entries (one flat
    ///   `fixed_shape_tensor`, as this crate writes it), that level becomes the elements;
    /// - otherwise the `shape.len()` innermost levels do (nested fixed-size lists, one per
    ///   dimension, as pyarrow writes `fixed_size_list<fixed_size_list<…>>`), each
    ///   sequence of the j-th of them having `shape[j]` entries.
    ///
    /// Anything else is [`DataError::ElementShape`]. A column whose elements already have
    /// `shape` is left as it is, so the option is harmless on files that keep their schema.
    pub fn with_element_shape(mut self, column: impl Into<String>, shape: Vec<usize>) -> Self {
        self.element_shapes.push((column.into(), shape));
        self
    }
}

/// Reads a Parquet file as [`Dataset`]s, one per record batch of
/// [`ParquetReadOptions::with_batch_size`] rows.
///
/// Every page header is checked when the reader is made (one small read per page). A page
/// the `parquet` crate fails on, or panics on, gives [`ErrorKind::Parquet`](crate::ErrorKind::Parquet) naming the batch and
/// its first row, and ends the iteration.
///
/// # Example
/// ```
/// use lodtensor::io::parquet::{write_parquet, ParquetReader, ParquetReadOptions, ParquetWriteOptions};
/// use lodtensor::{Column, Dataset, LodTensor};
/// use arrow_array::types::Int64Type;
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1, 0]], vec![1, 2, 3], vec![])?;
/// let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("ids.parquet");
/// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
/// let reader = ParquetReader::open(&path, &ParquetReadOptions::default().with_batch_size(2))?;
/// let parts = reader.collect::<Result<Vec<Dataset>, _>>()?;
/// assert_eq!(parts.len(), 2);
/// assert_eq!(parts[1], ds.slice_rows(2..3)?);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub struct ParquetReader {
    batches: ParquetRecordBatchReader,
    schema: SchemaRef,
    num_rows: usize,
    path: Option<PathBuf>,
    options: ParquetReadOptions,
    next_batch: usize,
    next_row: usize,
    /// Set when the parquet crate failed (or panicked) on a page: its reader is then in no
    /// state to go on.
    failed: bool,
}

impl std::fmt::Debug for ParquetReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetReader")
            .field("schema", &self.schema)
            .field("num_rows", &self.num_rows)
            .field("path", &self.path)
            .field("options", &self.options)
            .field("next_batch", &self.next_batch)
            .finish_non_exhaustive()
    }
}

impl ParquetReader {
    /// A reader of the Parquet file at `path`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io), [`ErrorKind::Parquet`](crate::ErrorKind::Parquet) (not Parquet, or a type Arrow cannot read),
    /// [`FormatError::InvalidFile`] for a column chunk outside the file or a page header the
    /// `parquet` crate would misread or spin on (naming the row group, column chunk, page
    /// and byte), [`UnsupportedError::UnsupportedVersion`](crate::UnsupportedError::UnsupportedVersion), [`ArgumentError::NoSuchColumn`] for a column named
    /// in the options that the file lacks; each with the path attached ([`Error::path`]).
    pub fn open(path: impl AsRef<Path>, options: &ParquetReadOptions) -> Result<Self> {
        let path = path.as_ref();
        (|| {
            let file = File::open(path)?;
            let mut reader = Self::try_new(file, options)?;
            reader.path = Some(path.to_path_buf());
            Ok(reader)
        })()
        .map_err(|e: Error| e.in_file(path))
    }

    /// A reader of Parquet data in memory or in any [`ChunkReader`] (`bytes::Bytes`, a
    /// `File`).
    ///
    /// # Errors
    /// As [`ParquetReader::open`], without the file.
    pub fn try_new<R: ChunkReader + 'static>(
        reader: R,
        options: &ParquetReadOptions,
    ) -> Result<Self> {
        let metadata = ArrowReaderMetadata::load(&reader, ArrowReaderOptions::default())?;
        // Before the parquet crate reads a page: it trusts chunk offsets and page headers.
        pages::check_column_chunks(&reader, metadata.metadata())?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(reader, metadata);
        let schema = builder.schema().clone();
        check_version(&schema)?;
        for (column, _) in &options.element_shapes {
            if schema.field_with_name(column).is_err() {
                return Err(ArgumentError::NoSuchColumn(column.clone()).into());
            }
        }
        let num_rows = usize::try_from(builder.metadata().file_metadata().num_rows())
            .map_err(|_| FormatError::InvalidFile("negative row count in the footer".to_owned()))?;
        let batches = builder.with_batch_size(options.batch_size).build()?;
        Ok(ParquetReader {
            batches,
            schema,
            num_rows,
            path: None,
            options: options.clone(),
            next_batch: 0,
            next_row: 0,
            failed: false,
        })
    }

    /// The Arrow schema the file's record batches have (before element shapes are applied).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The number of rows of the file, from its footer.
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// The dataset of one record batch, element shapes applied, with context on error.
    fn to_dataset(&self, batch: &RecordBatch, index: usize) -> Result<Dataset> {
        let result = (|| {
            let dataset = Dataset::try_from_record_batch(batch).map_err(|e| e.with_batch(index))?;
            if self.options.element_shapes.is_empty() {
                return Ok(dataset);
            }
            let columns = dataset
                .columns()
                .iter()
                .map(|c| {
                    match self
                        .options
                        .element_shapes
                        .iter()
                        .rev()
                        .find(|(name, _)| name == c.name())
                    {
                        None => Ok(c.clone()),
                        Some((_, shape)) => {
                            fold_levels(c, shape).map_err(|e| e.in_column(c.name(), index))
                        }
                    }
                })
                .collect::<Result<_>>()?;
            Dataset::try_new(columns)
        })();
        match &self.path {
            Some(path) => result.map_err(|e| e.in_file(path)),
            None => result,
        }
    }

    /// Every remaining row as one dataset (the batches concatenated: a copy); a dataset
    /// with no rows when the file has none.
    ///
    /// # Errors
    /// As the iterator.
    pub fn read_all(mut self) -> Result<Dataset> {
        let mut datasets = Vec::new();
        for dataset in self.by_ref() {
            datasets.push(dataset?);
        }
        if datasets.len() == 1 {
            return Ok(datasets.pop().expect("one dataset"));
        }
        if datasets.is_empty() {
            return self.to_dataset(&RecordBatch::new_empty(self.schema.clone()), 0);
        }
        let schema = datasets[0].schema();
        let batches: Vec<RecordBatch> = datasets
            .iter()
            .map(|d| d.to_record_batch_with_schema(schema.clone()))
            .collect();
        let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
        Dataset::try_from_record_batch(&batch)
    }
}

impl Iterator for ParquetReader {
    type Item = Result<Dataset>;

    fn next(&mut self) -> Option<Result<Dataset>> {
        if self.failed {
            return None;
        }
        let index = self.next_batch;
        // The parquet crate panics on some malformed pages (levels past their buffer) where
        // it should return an error; a reader of untrusted files turns that into an error.
        // (A build with `panic = "abort"` cannot.)
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.batches.next()))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Some(Err(arrow_schema::ArrowError::ParquetError(format!(
                    "malformed page ({what})"
                ))))
            });
        let batch = match next? {
            Ok(batch) => batch,
            Err(e) => {
                // After an error (or a panic) the parquet crate's reader is in no state to
                // go on, and may return the same error forever: stop.
                self.failed = true;
                let what = match e {
                    arrow_schema::ArrowError::ParquetError(what) => what,
                    other => other.to_string(),
                };
                let e = Error::from(parquet::errors::ParquetError::General(format!(
                    "batch {index}, from row {}: {what}",
                    self.next_row
                )));
                return Some(Err(match &self.path {
                    Some(path) => e.in_file(path),
                    None => e,
                }));
            }
        };
        self.next_row += batch.num_rows();
        self.next_batch += 1;
        Some(self.to_dataset(&batch, index))
    }
}

/// Reads every row of the Parquet file at `path` as one dataset.
///
/// # Errors
/// As [`ParquetReader::open`] and its iterator.
///
/// # Example
/// See the [module docs](self).
pub fn read_parquet(path: impl AsRef<Path>, options: &ParquetReadOptions) -> Result<Dataset> {
    ParquetReader::open(path, options)?.read_all()
}

/// Folds the `shape.len()` innermost levels of a scalar column into elements of `shape`.
fn fold_levels(column: &Column, shape: &[usize]) -> Result<Column> {
    let t = column.tensor();
    let bad = |reason: String| {
        DataError::ElementShape {
            shape: shape.to_vec(),
            reason,
        }
        .into()
    };
    if !t.element_shape().is_empty() {
        if t.element_shape() == shape {
            return Ok(column.clone());
        }
        return Err(bad(format!(
            "the column's elements already have shape {:?}",
            t.element_shape()
        )));
    }
    let (k, r) = (t.num_levels(), shape.len());
    if k == 0 || r == 0 {
        return Err(bad(format!(
            "the column has {k} levels and scalar elements: there is no level to fold"
        )));
    }
    let t = t.rebased();
    let levels = t.lod().levels();
    let product: usize = shape.iter().product();
    // One innermost level of `product` entries (a flat fixed_shape_tensor, as this crate
    // writes it), else one level per dimension (nested fixed-size lists).
    let folded = if uniform(&levels[k - 1], product).is_ok() {
        1
    } else if r > 1 && r <= k {
        for (j, &dim) in shape.iter().enumerate() {
            let level = k - r + j;
            uniform(&levels[level], dim).map_err(|(i, len)| {
                bad(format!(
                    "level {level}: sequence {i} has {len} entries, not {dim} (nor do the \
                     sequences of level {} all have {product})",
                    k - 1
                ))
            })?;
        }
        r
    } else {
        let (i, len) = uniform(&levels[k - 1], product).expect_err("checked above");
        return Err(bad(format!(
            "level {}: sequence {i} has {len} entries, not {product}",
            k - 1
        )));
    };
    let k_kept = k - folded;
    let kept: Vec<LevelOffsets> = levels[..k_kept].to_vec();
    let lod = Lod::try_new(kept)?;
    let values = Values::try_new(t.values().items().clone(), shape.to_vec())?;
    let tensor = LodTensor::try_new(lod, values)?;
    let names: Vec<String> = column.level_names().iter().take(k_kept).cloned().collect();
    let names = if names.len() == k_kept {
        names
    } else {
        Vec::new()
    };
    Column::new(column.name(), tensor).with_level_names(names)
}

/// `Ok` when every sequence of `offsets` has `len` entries, else the first that does not
/// and its length.
fn uniform(offsets: &LevelOffsets, len: usize) -> std::result::Result<(), (usize, usize)> {
    for i in 1..offsets.len() {
        let found = offsets.get(i) - offsets.get(i - 1);
        if found != len {
            return Err((i - 1, found));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
