//! The Parquet reader: a file's row groups as datasets.

use std::path::{Path, PathBuf};

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::file::reader::ChunkReader;

use super::direct::{Direct, RowGroupSource};
use super::kinds::{Shared, null_tensor_columns};
use super::pages;
use crate::dataset::{Dataset, check_version, mark_sides};
use crate::error::{ArgumentError, Error, ErrorKind, FileFormat, FormatError, Result};

/// How a Parquet file is read.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::io::parquet::*;
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::words();
/// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
/// # let path = dir.path().join("d.parquet");
/// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
/// let options = ParquetReadOptions::default().with_batch_size(1);
/// assert_eq!(ParquetReader::open(&path, &options)?.count(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ParquetReadOptions {
    batch_size: usize,
    element_shapes: Vec<(String, Vec<usize>)>,
    direct: bool,
    read_ahead: bool,
}

impl Default for ParquetReadOptions {
    /// Batches of 1024 rows, element shapes as the file declares them, the direct decoder
    /// on, pages read ahead when the machine has more than one core.
    fn default() -> Self {
        ParquetReadOptions {
            batch_size: 1024,
            element_shapes: Vec::new(),
            direct: true,
            read_ahead: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
        }
    }
}

impl ParquetReadOptions {
    /// The same options reading `rows` rows (top-level sequences) per dataset.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
    /// let reader = ParquetReader::open(&path, &ParquetReadOptions::default().with_batch_size(1))?;
    /// let sizes: Vec<usize> = reader.map(|d| d.map(|d| d.num_rows())).collect::<lodtensor::Result<_>>()?;
    /// assert_eq!(sizes, [1, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// Anything else is [`DataError::ElementShape`](crate::DataError::ElementShape). A column whose elements already have
    /// `shape` is left as it is, so the option is harmless on files that keep their schema.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
    /// // The file keeps its schema: the option leaves a column of that shape as it is.
    /// let options = ParquetReadOptions::default().with_element_shape("x", vec![]);
    /// assert_eq!(read_parquet(&path, &options)?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_element_shape(mut self, column: impl Into<String>, shape: Vec<usize>) -> Self {
        self.element_shapes.push((column.into(), shape));
        self
    }

    /// The same options with the direct decoder on (the default) or off.
    ///
    /// A file whose every column has this crate's layout (nested lists over `f32`, `f64`,
    /// `i32`, `u32`, `i64` or `u64` values, plain or dictionary-encoded, no nulls: what
    /// this crate, pyarrow and arrow-rs write) is decoded directly, its levels turned into
    /// offsets and its values copied once, one row group at a time; batches then never span
    /// row groups. Off, or for any other file, the `parquet` crate's Arrow reader reads it.
    /// Both give the same datasets.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
    /// let direct = read_parquet(&path, &ParquetReadOptions::default())?;
    /// let general = read_parquet(&path, &ParquetReadOptions::default().with_direct(false))?;
    /// assert_eq!(direct, general);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_direct(mut self, enabled: bool) -> Self {
        self.direct = enabled;
        self
    }

    /// The same options with read-ahead on or off: the direct decoder (see
    /// [`with_direct`](Self::with_direct)) then has the pages of each compressed column
    /// chunk larger than 1 MiB read and decompressed on a second thread, a few pages
    /// ahead, so decompression and decoding overlap. On by default when the machine has more than one core; the
    /// datasets are the same either way.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_compression(Compression::Zstd(1)))?;
    /// let one_thread = ParquetReadOptions::default().with_read_ahead(false);
    /// assert_eq!(read_parquet(&path, &one_thread)?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_read_ahead(mut self, enabled: bool) -> Self {
        self.read_ahead = enabled;
        self
    }
}

/// Reads a Parquet file as [`Dataset`]s, one per record batch of at most
/// [`ParquetReadOptions::with_batch_size`] rows.
///
/// Files of this crate's layout are decoded directly, a row group at a time
/// ([`ParquetReadOptions::with_direct`]): memory is one row group's decoded columns plus a
/// page. Other files go through the `parquet` crate's Arrow reader.
///
/// Every page header is checked when the reader is made (one small read per page). A page
/// the `parquet` crate fails on, or panics on, gives [`FormatError::InvalidFile`] naming the
/// batch and its first row, and ends the iteration.
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
    batches: Batches,
    schema: SchemaRef,
    num_rows: usize,
    num_row_groups: usize,
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
    /// [`ErrorKind::Io`]; [`FormatError::InvalidFile`] for a file that is not Parquet (or of a
    /// type Arrow cannot read), a column chunk outside the file, a page header the
    /// `parquet` crate would misread or spin on (naming the row group, column chunk, page
    /// and byte) or, read by the direct decoder, a page it cannot decode (naming the row group,
    /// column and page), [`UnsupportedError::UnsupportedVersion`](crate::UnsupportedError::UnsupportedVersion),
    /// [`ArgumentError::NoSuchColumn`] for a column named in the options that the file
    /// lacks; each with the path attached ([`Error::path`](crate::Error::path)).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
    /// let reader = ParquetReader::open(&path, &ParquetReadOptions::default())?;
    /// assert_eq!(reader.num_rows(), 2);
    /// assert!(ParquetReader::open(dir.path().join("none.parquet"), &ParquetReadOptions::default()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, options: &ParquetReadOptions) -> Result<Self> {
        let path = path.as_ref();
        (|| {
            let (file, _) = crate::io::regular::open_regular(path)?;
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
    /// let bytes = bytes::Bytes::from(writer.finish()?);
    /// assert_eq!(ParquetReader::try_new(bytes, &ParquetReadOptions::default())?.read_all()?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_new<R: ChunkReader + 'static>(
        reader: R,
        options: &ParquetReadOptions,
    ) -> Result<Self> {
        // Before the parquet crate builds the schema, by recursion.
        super::footer::check_schema_depth(&reader)?;
        let metadata = ArrowReaderMetadata::load(&reader, ArrowReaderOptions::default())
            .map_err(Error::decoding(FileFormat::Parquet))?;
        // Before the parquet crate reads a page: it trusts chunk offsets and page headers.
        pages::check_column_chunks(&reader, metadata.metadata())?;
        check_version(metadata.schema())?;
        let reader = Shared(std::sync::Arc::new(reader));
        let nulls = catch_panic(|| null_tensor_columns(&reader, &metadata))?;
        let schema: SchemaRef = match nulls.is_empty() {
            true => metadata.schema().clone(),
            false => std::sync::Arc::new(mark_sides(metadata.schema(), &nulls)),
        };
        for (column, _) in &options.element_shapes {
            if schema.field_with_name(column).is_err() {
                return Err(ArgumentError::NoSuchColumn(column.clone()).into());
            }
        }
        let num_rows = usize::try_from(metadata.metadata().file_metadata().num_rows())
            .map_err(|_| Error::invalid(FileFormat::Parquet, "negative row count in the footer"))?;
        let num_row_groups = metadata.metadata().num_row_groups();
        let plans = options
            .direct
            .then(|| Direct::<R>::plans(metadata.metadata(), &schema))
            .flatten();
        let batches = match plans {
            Some(plans) => Batches::Direct {
                groups: Box::new(Direct::new(
                    reader,
                    metadata.metadata().clone(),
                    schema.clone(),
                    plans,
                    options.read_ahead,
                )),
                next_group: 0,
                pending: None,
            },
            None => Batches::General(
                ParquetRecordBatchReaderBuilder::new_with_metadata(reader, metadata)
                    .with_batch_size(options.batch_size)
                    .build()
                    .map_err(Error::decoding(FileFormat::Parquet))?,
            ),
        };
        Ok(ParquetReader {
            batches,
            schema,
            num_rows,
            num_row_groups,
            path: None,
            options: options.clone(),
            next_batch: 0,
            next_row: 0,
            failed: false,
        })
    }

    /// The Arrow schema the file's record batches have (before element shapes are applied).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default())?;
    /// let reader = ParquetReader::open(&path, &ParquetReadOptions::default())?;
    /// assert_eq!(reader.schema().field(0).name(), "x");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The number of rows of the file, from its footer.
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
    /// assert_eq!(ParquetReader::open(&path, &ParquetReadOptions::default())?.num_rows(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// The number of row groups of the file, from its footer.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let rows = ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(2));
    /// write_parquet(&path, [&ds, &ds], &rows)?;                 // 2 rows each
    /// assert_eq!(ParquetReader::open(&path, &ParquetReadOptions::default())?.num_row_groups(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_row_groups(&self) -> usize {
        self.num_row_groups
    }

    /// The dataset of one record batch, element shapes applied, with context on error.
    fn to_dataset(&self, batch: &RecordBatch, index: usize) -> Result<Dataset> {
        let result = (|| {
            // Under the schema whose side columns include those that hold nulls.
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            let batch = &RecordBatch::try_new_with_options(
                self.schema.clone(),
                batch.columns().to_vec(),
                &options,
            )?;
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
                        Some((_, shape)) => c
                            .fold_element_shape(shape)
                            .map_err(|e| e.in_column(c.name(), index)),
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
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(1)))?;
    /// let all = ParquetReader::open(&path, &ParquetReadOptions::default())?.read_all()?;
    /// assert_eq!(all, ds);                                     // the row groups as one dataset
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_all(mut self) -> Result<Dataset> {
        if let Batches::Direct {
            groups,
            next_group: 0,
            pending: None,
        } = &mut self.batches
        {
            // Every row group into the same buffers: no concatenation.
            let decoded = catch_panic(|| {
                for index in 0..groups.num_row_groups() {
                    groups.decode(index)?;
                }
                groups.take_batch()
            });
            let batch = decoded.map_err(|e| self.in_file(e))?;
            return self.to_dataset(&batch, 0);
        }
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
        let next = match self.batches {
            Batches::General(_) => self.next_general(),
            Batches::Direct { .. } => self.next_direct(),
        };
        if let Some(Ok(dataset)) = &next {
            self.next_row += dataset.num_rows();
            self.next_batch += 1;
        }
        next
    }
}

impl ParquetReader {
    /// The next batch from the `parquet` crate's Arrow reader.
    fn next_general(&mut self) -> Option<Result<Dataset>> {
        let Batches::General(batches) = &mut self.batches else {
            return None;
        };
        let index = self.next_batch;
        // The parquet crate panics on some malformed pages (levels past their buffer) where
        // it should return an error; a reader of untrusted files turns that into an error.
        // (A build with `panic = "abort"` cannot.)
        let decoding = Error::decoding(FileFormat::Parquet);
        match catch_panic(|| batches.next().transpose().map_err(decoding)) {
            Ok(batch) => batch.map(|b| self.to_dataset(&b, index)),
            Err(e) => {
                // After an error (or a panic) the parquet crate's reader is in no state to
                // go on, and may return the same error forever: stop.
                self.failed = true;
                let e = match e.into_kind() {
                    ErrorKind::Format(FormatError::InvalidFile { reason, .. }) => {
                        let at = format!("batch {index}, from row {}", self.next_row);
                        Error::invalid(FileFormat::Parquet, format!("{at}: {reason}"))
                    }
                    other => Error::new(other),
                };
                Some(Err(self.in_file(e)))
            }
        }
    }

    /// The next batch of the direct decoder: a view of the next rows of the row group
    /// decoded last, decoding the next row group when none are left.
    fn next_direct(&mut self) -> Option<Result<Dataset>> {
        loop {
            let Batches::Direct {
                groups,
                next_group,
                pending,
            } = &mut self.batches
            else {
                return None;
            };
            if let Some(rows) = pending.take().filter(|p| p.num_rows() > 0) {
                let take = rows.num_rows().min(self.options.batch_size);
                if take == rows.num_rows() {
                    return Some(Ok(rows));
                }
                let views = rows
                    .slice_rows(0..take)
                    .and_then(|head| Ok((head, rows.slice_rows(take..rows.num_rows())?)));
                return Some(views.map(|(head, rest)| {
                    *pending = Some(rest);
                    head
                }));
            }
            if *next_group == groups.num_row_groups() {
                return None;
            }
            let group = *next_group;
            *next_group += 1;
            let decoded = catch_panic(|| {
                groups.decode(group)?;
                groups.take_batch()
            })
            .and_then(|batch| self.to_dataset(&batch, self.next_batch));
            match decoded {
                Ok(dataset) => {
                    if let Batches::Direct { pending, .. } = &mut self.batches {
                        *pending = Some(dataset);
                    }
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(self.in_file(e)));
                }
            }
        }
    }

    /// Whether the direct decoder reads the file.
    #[cfg(test)]
    pub(super) fn is_direct(&self) -> bool {
        matches!(self.batches, Batches::Direct { .. })
    }

    /// `e` in the reader's file, when it has one.
    fn in_file(&self, e: Error) -> Error {
        match &self.path {
            Some(path) => e.in_file(path),
            _ => e,
        }
    }
}

/// Where the reader's batches come from.
enum Batches {
    /// The `parquet` crate's Arrow reader.
    General(ParquetRecordBatchReader),
    /// The direct decoder, a row group at a time, and the rows of the last one not yet
    /// handed out.
    Direct {
        groups: Box<dyn RowGroupSource>,
        next_group: usize,
        pending: Option<Dataset>,
    },
}

/// `f`'s result, or a panic in it as an invalid Parquet file: the `parquet` crate panics on
/// some malformed pages.
fn catch_panic<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    crate::error::catch_panic(f, |what| {
        Error::invalid(FileFormat::Parquet, format!("malformed page ({what})"))
    })
}

/// Reads every row of the Parquet file at `path` as one dataset.
///
/// # Errors
/// As [`ParquetReader::open`] and its iterator.
///
/// # Example
/// See the [module docs](super).
pub fn read_parquet(path: impl AsRef<Path>, options: &ParquetReadOptions) -> Result<Dataset> {
    ParquetReader::open(path, options)?.read_all()
}
