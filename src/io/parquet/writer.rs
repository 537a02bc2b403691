//! The Parquet writer: rows gathered into row groups, each encoded on `threads` threads by
//! one of the two write paths (the module docs of [`super`]) and written in order,
//! atomically for a file.

use std::borrow::Borrow;
use std::io::Write;

use std::path::{Path, PathBuf};

use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::{ArrowSchemaConverter, add_encoded_arrow_schema_to_metadata};
use parquet::file::properties::WriterProperties;
use std::sync::Arc;

use super::crate_file::CrateFile;
use super::levels::{leaf_count, raw_bytes};
use super::page_encoder;
use super::plain_file::PlainFile;
use super::{ParquetWriteOptions, RowGroupSize};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::error::{ArgumentError, UnusableError};
use crate::io::AtomicFile;
use crate::layout::ColumnLayout;
use crate::lod::OffsetWidth;
use crate::values::DType;

/// Writes datasets to Parquet one after the other, as rows of one table.
///
/// The first dataset fixes the file's schema; each later one must have the same columns
/// (offset widths are converted to the file's when they differ and the file uses one width).
/// The writer gathers rows (views of the datasets given, not copies) until a row group is
/// full ([`ParquetWriteOptions::with_row_group_size`]), encodes it from the LoD offsets
/// (see `format-spec.md` §8.1) and writes it out: memory is bounded by one row group of
/// input and a few pages per thread, or, when some column is not plain numbers, one row
/// group of input and its encoded chunks ([`ParquetWriteOptions::with_threads`]).
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
    pub(super) state: State<W>,
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
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    /// writer.write(&ds)?;
    /// let bytes = writer.finish()?;
    /// assert!(bytes.starts_with(b"PAR1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// [`DataError::OffsetOverflow`](crate::DataError::OffsetOverflow) (with the column, [`Error::column`](crate::Error::column)) when an offset does not fit the
    /// width asked for; [`ErrorKind::Io`](crate::ErrorKind::Io) from the writer.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    /// writer.write(&ds)?;
    /// writer.write(&ds)?;
    /// let back = ParquetReader::try_new(bytes::Bytes::from(writer.finish()?), &ParquetReadOptions::default())?.read_all()?;
    /// assert_eq!(back.num_rows(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        let batch = self.batches;
        let mut dataset = match self.options.offset_width {
            Some(width) => with_offset_width(dataset, width, batch)?,
            None => dataset.clone(),
        };
        match &self.schema {
            None => {
                let schema = dataset.schema();
                let dtypes: Vec<Option<DType>> = dataset
                    .columns()
                    .iter()
                    .map(|c| c.as_tensor().map(|t| t.dtype()))
                    .collect();
                let props = self.options.properties(&schema, &dtypes)?;
                let State::Waiting(sink) = std::mem::replace(&mut self.state, State::Broken) else {
                    return Err(UnusableError::WriterBroken.into());
                };
                self.state = State::Open(Box::new(RowGroups {
                    file: Target::new(sink, &schema, &dtypes, props)?,
                    size: self.options.row_group_size,
                    threads: self.options.threads,
                    current: Vec::new(),
                    current_rows: 0,
                    current_bytes: 0,
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
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    /// writer.write(&ds)?;
    /// assert_eq!(writer.num_rows(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// The file's schema, once the first dataset has set it.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    /// assert!(writer.schema().is_none());                       // set by the first write
    /// writer.write(&ds)?;
    /// assert_eq!(writer.schema().map(|s| s.fields().len()), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schema(&self) -> Option<&SchemaRef> {
        self.schema.as_ref()
    }

    /// Writes the last row group and the footer, and returns the sink.
    ///
    /// # Errors
    /// [`ArgumentError::NoSchema`] when no dataset was written (a Parquet file needs a schema:
    /// write an empty dataset to make a file with no rows); [`ErrorKind::Io`](crate::ErrorKind::Io) from the
    /// writer.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    /// writer.write(&ds)?;
    /// let bytes = writer.finish()?;
    /// assert!(bytes.ends_with(b"PAR1"));                         // the footer written
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finish(self) -> Result<W> {
        match self.state {
            State::Waiting(_) => Err(ArgumentError::NoSchema.into()),
            State::Open(groups) => groups.finish(),
            State::Broken => Err(UnusableError::WriterBroken.into()),
        }
    }
}

/// Where a [`ParquetWriter`] is.
pub(super) enum State<W: Write + Send> {
    /// Before the first dataset: the sink, no schema yet.
    Waiting(W),
    /// Writing row groups.
    Open(Box<RowGroups<W>>),
    /// After making the writer failed: nothing more can be written.
    Broken,
}

/// Where the row groups go: one of the two write paths (see the module docs of
/// [`super`]).
pub(super) enum Target<W: Write + Send> {
    /// Every column is a plain numeric tensor column: the page encoder writes each one's
    /// pages straight into the file.
    Plain(PlainFile<W>),
    /// Some column is not: the `parquet` crate's file writer, that column encoded by its
    /// `ArrowColumnWriter`.
    Crate(CrateFile<W>),
}

impl<W: Write + Send> Target<W> {
    /// The file of `schema`, whose columns hold `dtypes` (`None`: a side column), with
    /// `props`, in `sink`.
    fn new(
        sink: W,
        schema: &SchemaRef,
        dtypes: &[Option<DType>],
        props: WriterProperties,
    ) -> Result<Self> {
        let leaves = ArrowSchemaConverter::new()
            .with_coerce_types(props.coerce_types())
            .convert(schema)?;
        // One leaf per tensor column (format-spec.md §8.1), any number per side column.
        let mut leaf = 0;
        let paged: Vec<bool> = (schema.fields().iter().zip(dtypes))
            .map(|(field, dtype)| {
                let descr = leaves.columns().get(leaf);
                leaf += leaf_count(field.data_type());
                (*dtype)
                    .zip(descr)
                    .is_some_and(|(dtype, descr)| page_encoder::encodes(dtype, descr, &props))
            })
            .collect();
        if !paged.iter().all(|&p| p) {
            return Ok(Target::Crate(CrateFile::new(sink, schema, paged, props)?));
        }
        let mut props = props;
        add_encoded_arrow_schema_to_metadata(schema, &mut props);
        Ok(Target::Plain(PlainFile::new(
            sink,
            Arc::new(leaves),
            Arc::new(props),
        )?))
    }
}

/// Row groups gathered from the datasets, each encoded on `threads` threads and written
/// once full.
pub(super) struct RowGroups<W: Write + Send> {
    file: Target<W>,
    size: RowGroupSize,
    threads: usize,
    /// The row group being gathered: views of the datasets' rows.
    current: Vec<Dataset>,
    current_rows: usize,
    current_bytes: usize,
}

impl<W: Write + Send> RowGroups<W> {
    /// Adds the rows of `dataset`, writing each row group once full.
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
                self.write_current()?;
            }
        }
        Ok(())
    }

    /// Encodes the row group being gathered and writes it.
    fn write_current(&mut self) -> Result<()> {
        let group = std::mem::take(&mut self.current);
        self.current_rows = 0;
        self.current_bytes = 0;
        match &mut self.file {
            Target::Plain(file) => file.write_row_group(&group, self.threads),
            Target::Crate(file) => file.write_row_group(&group, self.threads),
        }
    }

    /// Writes what is left and the footer.
    fn finish(mut self) -> Result<W> {
        if self.current_rows > 0 {
            self.write_current()?;
        }
        match self.file {
            Target::Plain(file) => file.finish(),
            Target::Crate(file) => file.finish(),
        }
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
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) (with the path, [`Error::path`](crate::Error::path)) when the temporary file cannot be created.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetFileWriter::create(&path, ParquetWriteOptions::default())?;
    /// writer.write(&ds)?;
    /// assert!(!path.exists());                                  // the file appears at finish
    /// writer.finish()?;
    /// assert!(path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// As [`ParquetWriter::write`], with the path attached ([`Error::path`](crate::Error::path)).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetFileWriter::create(&path, ParquetWriteOptions::default())?;
    /// writer.write(&ds)?;
    /// writer.write(&ds.slice_rows(0..1)?)?;
    /// writer.finish()?;
    /// assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?.num_rows(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&mut self, dataset: &Dataset) -> Result<()> {
        self.inner.write(dataset).map_err(|e| e.in_file(&self.path))
    }

    /// The number of rows written so far.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetFileWriter::create(&path, ParquetWriteOptions::default())?;
    /// writer.write(&ds)?;
    /// assert_eq!(writer.num_rows(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.inner.num_rows()
    }

    /// The target path.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let writer = ParquetFileWriter::create(&path, ParquetWriteOptions::default())?;
    /// assert_eq!(writer.path(), path);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Finishes the file, syncs it and renames it over the target.
    ///
    /// # Errors
    /// As [`ParquetWriter::finish`]; [`ErrorKind::Io`](crate::ErrorKind::Io) when syncing or renaming fails;
    /// each with the path attached ([`Error::path`](crate::Error::path)). The target is untouched on error.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let mut writer = ParquetFileWriter::create(&path, ParquetWriteOptions::default())?;
    /// writer.write(&ds)?;
    /// writer.finish()?;
    /// assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
/// See the [module docs](super).
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::io::parquet::*;
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::words();
/// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
/// # let path = dir.path().join("d.parquet");
/// write_parquet(&path, [&ds, &ds], &ParquetWriteOptions::default())?;
/// assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?.num_rows(), 4);
/// assert!(write_parquet(&path, Vec::<Dataset>::new(), &ParquetWriteOptions::default()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
