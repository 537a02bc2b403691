//! Parquet export and import of [`Dataset`]s (feature `parquet`).
//!
//! A dataset is written with the `parquet` crate's Arrow writer: each column's nested lists
//! become nested Parquet `LIST`s, the `FixedSizeList` of an element becomes one more `LIST`
//! level, and the values become one leaf column. The Arrow schema, with the `lodtensor.*`
//! metadata and the `arrow.fixed_shape_tensor` extension, is embedded in the file's
//! key-value metadata (`ARROW:schema`), so a reader that honours it (this one, pyarrow,
//! arrow-rs) gets the same types back. See `format-spec-parquet.md` for the mapping to
//! repetition and definition levels.
//!
//! ```text
//! write:  Dataset ──► RecordBatch ──► ArrowWriter ──► row group ──► … ──► footer
//!         (one call of ParquetWriter::write per dataset; at most one row group buffered)
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
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
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

mod pages;

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
    /// Once the row group's encoded size reaches about this many bytes.
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
    /// encodes on the calling thread as rows arrive).
    ///
    /// With more than one thread the writer holds up to `threads` row groups of rows (views
    /// of the datasets given, not copies) and encodes them on scoped threads, then appends
    /// them in order: the file is the same as with one thread, memory is `threads` row groups
    /// of input plus their encoded chunks, and [`RowGroupSize::Bytes`] is measured on the
    /// unencoded values and offsets rather than on the encoded pages.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The Parquet writer properties for a file of `schema` whose columns hold `dtypes`.
    fn properties(&self, schema: &Schema, dtypes: &[DType]) -> Result<WriterProperties> {
        let mut builder = WriterProperties::builder()
            .set_compression(self.compression.to_parquet()?)
            .set_dictionary_enabled(self.dictionary);
        builder = match self.row_group_size {
            RowGroupSize::Rows(rows) => builder
                .set_max_row_group_row_count(Some(rows.max(1)))
                .set_max_row_group_bytes(None),
            RowGroupSize::Bytes(bytes) => builder
                .set_max_row_group_row_count(None)
                .set_max_row_group_bytes(Some(bytes.max(1))),
        };
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
/// Memory is bounded by one row group: the writer encodes rows as they come and writes a
/// row group out once it reaches [`ParquetWriteOptions::with_row_group_size`].
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
    /// [`Error::SchemaMismatch`] when the columns differ from the first dataset's;
    /// [`Error::OffsetOverflow`] (in [`Error::InColumn`]) when an offset does not fit the
    /// width asked for; [`Error::Parquet`] or [`Error::Io`] from the writer.
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        let batch = self.batches;
        let converted;
        let mut dataset = dataset;
        if let Some(width) = self.options.offset_width {
            converted = with_offset_width(dataset, width, batch)?;
            dataset = &converted;
        }
        let converted;
        let schema = match &self.schema {
            None => {
                let schema = dataset.schema();
                let dtypes: Vec<DType> = dataset
                    .columns()
                    .iter()
                    .map(|c| c.tensor().dtype())
                    .collect();
                let props = self.options.properties(&schema, &dtypes)?;
                let State::Waiting(sink) = std::mem::replace(&mut self.state, State::Broken) else {
                    return Err(Error::WriterBroken);
                };
                let writer = ArrowWriter::try_new(sink, schema.clone(), Some(props))?;
                self.state = if self.options.threads > 1 {
                    let (file, factory) = writer.into_serialized_writer()?;
                    State::Parallel(Box::new(Parallel {
                        file,
                        factory,
                        threads: self.options.threads,
                        group_rows: None,
                        current: Vec::new(),
                        current_rows: 0,
                        full: Vec::new(),
                    }))
                } else {
                    State::Serial(Box::new(writer))
                };
                self.schema = Some(schema.clone());
                schema
            }
            Some(schema) => {
                let schema = schema.clone();
                if dataset.schema().fields() != schema.fields() {
                    converted = conform(dataset, &schema, batch)?;
                    dataset = &converted;
                }
                schema
            }
        };
        let rows = dataset.num_rows();
        match &mut self.state {
            State::Serial(writer) => {
                // The Arrow writer only starts a row group by size between two writes, so a
                // large dataset goes in as slices of about a quarter of a row group.
                let step = match self.options.row_group_size {
                    RowGroupSize::Bytes(limit) => (limit / 4 / row_bytes(dataset)).max(1),
                    RowGroupSize::Rows(_) => rows.max(1),
                };
                if step >= rows {
                    writer.write(&dataset.to_record_batch_with_schema(schema))?;
                } else {
                    for start in (0..rows).step_by(step) {
                        let part = dataset.slice_rows(start..(start + step).min(rows))?;
                        writer.write(&part.to_record_batch_with_schema(schema.clone()))?;
                    }
                }
            }
            State::Parallel(parallel) => {
                if rows > 0 {
                    let group_rows = *parallel.group_rows.get_or_insert_with(|| {
                        match self.options.row_group_size {
                            RowGroupSize::Rows(n) => n.max(1),
                            RowGroupSize::Bytes(limit) => (limit / row_bytes(dataset)).max(1),
                        }
                    });
                    parallel.push(dataset.to_record_batch_with_schema(schema), group_rows)?;
                }
            }
            State::Waiting(_) | State::Broken => {
                unreachable!("the state is Serial or Parallel once the schema is set")
            }
        }
        self.batches += 1;
        self.rows += dataset.num_rows();
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
    /// [`Error::NoSchema`] when no dataset was written (a Parquet file needs a schema:
    /// write an empty dataset to make a file with no rows); [`Error::Parquet`] from the
    /// writer.
    pub fn finish(self) -> Result<W> {
        match self.state {
            State::Waiting(_) => Err(Error::NoSchema),
            State::Serial(writer) => Ok(writer.into_inner()?),
            State::Parallel(parallel) => parallel.finish(),
            State::Broken => Err(Error::WriterBroken),
        }
    }
}

/// Where a [`ParquetWriter`] is.
enum State<W: Write + Send> {
    /// Before the first dataset: the sink, no schema yet.
    Waiting(W),
    /// Encoding on the calling thread.
    Serial(Box<ArrowWriter<W>>),
    /// Encoding row groups on several threads.
    Parallel(Box<Parallel<W>>),
    /// After making the writer failed: nothing more can be written.
    Broken,
}

/// Row groups gathered from the datasets and encoded `threads` at a time.
struct Parallel<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    threads: usize,
    /// Rows per row group, set by the first dataset with rows.
    group_rows: Option<usize>,
    /// The row group being gathered: views of the datasets' rows.
    current: Vec<RecordBatch>,
    current_rows: usize,
    /// Gathered row groups waiting to be encoded.
    full: Vec<Vec<RecordBatch>>,
}

impl<W: Write + Send> Parallel<W> {
    /// Adds rows, encoding once `threads` row groups are gathered.
    fn push(&mut self, mut batch: RecordBatch, group_rows: usize) -> Result<()> {
        while batch.num_rows() > 0 {
            let take = (group_rows - self.current_rows).min(batch.num_rows());
            self.current.push(batch.slice(0, take));
            self.current_rows += take;
            batch = batch.slice(take, batch.num_rows() - take);
            if self.current_rows == group_rows {
                self.full.push(std::mem::take(&mut self.current));
                self.current_rows = 0;
                if self.full.len() == self.threads {
                    self.encode_full()?;
                }
            }
        }
        Ok(())
    }

    /// Encodes the gathered row groups, one per thread, and appends them in order.
    fn encode_full(&mut self) -> Result<()> {
        let groups = std::mem::take(&mut self.full);
        let first = self.file.flushed_row_groups().len();
        let writers = (0..groups.len())
            .map(|i| self.factory.create_column_writers(first + i))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let encoded: Vec<Result<Vec<ArrowColumnChunk>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = groups
                .iter()
                .zip(writers)
                .map(|(group, writers)| scope.spawn(move || encode_row_group(group, writers)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        for chunks in encoded {
            let mut row_group = self.file.next_row_group()?;
            for chunk in chunks? {
                chunk.append_to_row_group(&mut row_group)?;
            }
            row_group.close()?;
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

/// Encodes the batches of one row group with its column writers (one per leaf).
fn encode_row_group(
    group: &[RecordBatch],
    mut writers: Vec<ArrowColumnWriter>,
) -> Result<Vec<ArrowColumnChunk>> {
    for batch in group {
        let mut leaves = writers.iter_mut();
        for (field, array) in batch.schema_ref().fields().iter().zip(batch.columns()) {
            for leaf in compute_leaves(field, array)? {
                leaves
                    .next()
                    .expect("the writers are made from the batch's schema, one per leaf")
                    .write(&leaf)?;
            }
        }
    }
    Ok(writers
        .into_iter()
        .map(ArrowColumnWriter::close)
        .collect::<std::result::Result<_, _>>()?)
}

/// About how many bytes one row of `dataset` holds (at least 1).
fn row_bytes(dataset: &Dataset) -> usize {
    raw_bytes(dataset)
        .div_ceil(dataset.num_rows().max(1))
        .max(1)
}

/// About how many bytes the rows in view of `dataset` hold (values and offsets).
fn raw_bytes(dataset: &Dataset) -> usize {
    dataset
        .columns()
        .iter()
        .map(|c| {
            let t = c.tensor();
            let elements = t.elements();
            let items = (elements.end - elements.start) * t.values().element_size();
            let values = match t.dtype().byte_width() {
                Some(width) => items * width,
                None => items.div_ceil(8),
            };
            let offsets: usize = t.lod().levels().iter().map(|l| l.len() * 8).sum();
            values + offsets
        })
        .sum()
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
    /// [`Error::Io`] (in [`Error::InFile`]) when the temporary file cannot be created.
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
    /// As [`ParquetWriter::write`], in [`Error::InFile`].
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
    /// As [`ParquetWriter::finish`]; [`Error::Io`] when syncing or renaming fails; all in
    /// [`Error::InFile`]. The target is untouched on error.
    pub fn finish(self) -> Result<()> {
        let path = self.path;
        self.inner.finish().map_err(|e| e.in_file(&path))?.commit()
    }
}

/// Writes `datasets`, one after the other, to a Parquet file at `path`, atomically.
///
/// # Errors
/// As [`ParquetFileWriter`]; [`Error::NoSchema`] when `datasets` is empty.
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

/// The dataset with the offset widths of `schema`, or [`Error::SchemaMismatch`].
fn conform(dataset: &Dataset, schema: &Schema, batch: usize) -> Result<Dataset> {
    let mismatch = |reason: String| Error::SchemaMismatch { batch, reason };
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
            let widths = list_widths(f.data_type());
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

/// The offset widths of the nested lists of a type, outermost first.
fn list_widths(data_type: &arrow_schema::DataType) -> Vec<OffsetWidth> {
    use arrow_schema::DataType;
    let mut widths = Vec::new();
    let mut t = data_type;
    loop {
        t = match t {
            DataType::List(f) => {
                widths.push(OffsetWidth::I32);
                f.data_type()
            }
            DataType::LargeList(f) => {
                widths.push(OffsetWidth::I64);
                f.data_type()
            }
            _ => return widths,
        }
    }
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
    /// Anything else is [`Error::ElementShape`]. A column whose elements already have
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
/// the `parquet` crate fails on, or panics on, gives [`Error::Parquet`] naming the batch and
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
    /// [`Error::Io`], [`Error::Parquet`] (not Parquet, or a type Arrow cannot read),
    /// [`Error::InvalidFile`] for a column chunk outside the file or a page header the
    /// `parquet` crate would misread or spin on (naming the row group, column chunk, page
    /// and byte), [`Error::UnsupportedVersion`], [`Error::NoSuchColumn`] for a column named
    /// in the options that the file lacks; all in [`Error::InFile`].
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
                return Err(Error::NoSuchColumn(column.clone()));
            }
        }
        let num_rows = usize::try_from(builder.metadata().file_metadata().num_rows())
            .map_err(|_| Error::InvalidFile("negative row count in the footer".to_owned()))?;
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
            let dataset = Dataset::try_from_record_batch(batch).map_err(|e| match e {
                Error::InColumn { column, source, .. } => Error::InColumn {
                    column,
                    batch: index,
                    source,
                },
                other => other,
            })?;
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
                let e = Error::Parquet(parquet::errors::ParquetError::General(format!(
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
    let bad = |reason: String| Error::ElementShape {
        shape: shape.to_vec(),
        reason,
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
