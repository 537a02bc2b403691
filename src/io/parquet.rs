//! Parquet export and import of [`Dataset`](crate::Dataset)s (feature `parquet`).
//!
//! A dataset is written as the `parquet` crate's Arrow writer maps it: each column's nested
//! lists become nested Parquet `LIST`s, the `FixedSizeList` of an element becomes one more
//! `LIST` level, and the values become one leaf column. The Arrow schema, with the
//! `lodtensor.*` metadata and the `arrow.fixed_shape_tensor` extension, is embedded in the
//! file's key-value metadata (`ARROW:schema`), so a reader that honours it (this one,
//! pyarrow, arrow-rs) gets the same types back. See `format-spec.md` §8 for the mapping to
//! repetition and definition levels.
//!
//! # Two write paths
//! - **The page encoder** (`page_encoder.rs`) writes the tensor columns of 32- and 64-bit
//!   floats and integers, `PLAIN` (or `BYTE_STREAM_SPLIT` for floats), without dictionary,
//!   uncompressed, snappy or zstd: the bulk of tensor data. It exists for speed: the
//!   `parquet` crate's writers take one repetition and one definition level per item and
//!   encode them one at a time, where these columns' levels are long runs that follow from
//!   the LoD offsets (`levels.rs`; an element of `f32[64]` is two runs, not 64 entries),
//!   their values are written as the bytes they are in the dataset, and their pages are
//!   compressed on `threads` threads. Its files are not the Arrow writer's byte for byte
//!   (pages break elsewhere, levels are bit-packed differently, no page index is written),
//!   but the `parquet` crate reads back from them exactly the rows and the chunk
//!   statistics its own Arrow writer writes (tested, NaN, ±0 and ±∞ included).
//! - **The `parquet` crate's `ArrowColumnWriter`** (`crate_file.rs`) writes every other
//!   column: side columns, and tensor columns of booleans, float16, narrow or unsigned
//!   integers, or with a dictionary. These are rarer and smaller, and the crate handles
//!   their encodings, dictionaries and statistics as pyarrow expects them; a file with such
//!   a column is made by the crate's file writer (the page encoder's columns spliced in),
//!   and a file with only such columns is the crate's `ArrowWriter`'s file byte for byte
//!   (tested).
//!
//! ```text
//! write:  Dataset views ──► row group ──► levels from offsets + value slices ──► column
//!         chunks ──► … ──► footer   (a row group at a time, on `threads` threads)
//! read:   row groups ──► pages (decompressed a few ahead, on a second thread) ──► levels
//!         to offsets + values copied once ──► RecordBatch (batch_size rows) ──► Dataset
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

use arrow_schema::Schema;
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::{Compression as ParquetCompression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::lod::OffsetWidth;
use crate::values::DType;

mod crate_file;
mod decode;
mod direct;
mod footer;
mod kinds;
mod levels;
mod page_encoder;
mod pages;
mod plain_file;
mod reader;
mod runs;
mod stats;
mod writer;

pub use reader::{ParquetReadOptions, ParquetReader, read_parquet};
pub use writer::{ParquetFileWriter, ParquetWriter, write_parquet};

/// The compression codec of every column chunk.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::io::parquet::*;
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::words();
/// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
/// # let path = dir.path().join("d.parquet");
/// for codec in [Compression::None, Compression::Snappy, Compression::Zstd(1)] {
///     write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_compression(codec))?;
///     assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?, ds);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// No compression.
    None,
    /// Snappy (pyarrow's default).
    #[default]
    Snappy,
    /// Zstandard at a level (1 to 22; 1 is pyarrow's default, 3 zstd's).
    Zstd(i32),
}

impl Compression {
    fn to_parquet(self) -> Result<ParquetCompression> {
        Ok(match self {
            Compression::None => ParquetCompression::UNCOMPRESSED,
            Compression::Snappy => ParquetCompression::SNAPPY,
            Compression::Zstd(level) => {
                ParquetCompression::ZSTD(ZstdLevel::try_new(level).map_err(|_| {
                    Error::invalid_argument(
                        "Compression::Zstd",
                        "level",
                        level,
                        "a zstd level (1 to 22)",
                    )
                })?)
            }
        })
    }
}

/// When the writer closes a row group and starts the next.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::io::parquet::*;
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::words();
/// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
/// # let path = dir.path().join("d.parquet");
/// let options = ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(1));
/// write_parquet(&path, [&ds], &options)?;
/// let reader = ParquetReader::open(&path, &ParquetReadOptions::default())?;
/// assert_eq!(reader.count(), 2);                            // a row group a row
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
/// them, `PLAIN` encoding, no dictionary, one thread per core
/// ([`ParquetWriteOptions::with_threads`]; the file is the same with any number).
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::io::parquet::*;
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::words();
/// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
/// # let path = dir.path().join("d.parquet");
/// let options = ParquetWriteOptions::default().with_compression(Compression::Zstd(1)).with_threads(1);
/// write_parquet(&path, [&ds], &options)?;
/// assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?, ds);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl ParquetWriteOptions {
    /// The same options with `compression`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// let size = |codec| -> lodtensor::Result<u64> {
    ///     write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_compression(codec))?;
    ///     Ok(std::fs::metadata(&path)?.len())
    /// };
    /// assert!(size(Compression::None)? > 0 && size(Compression::Zstd(3))? > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// The same options with row groups of `size`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(2)))?;
    /// assert_eq!(ParquetReader::open(&path, &ParquetReadOptions::default())?.count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_row_group_size(mut self, size: RowGroupSize) -> Self {
        self.row_group_size = size;
        self
    }

    /// The same options converting every level's offsets to `width` before writing.
    ///
    /// Parquet stores no offsets, only repetition and definition levels: the width is kept
    /// in the embedded Arrow schema (`List` or `LargeList`) and decides what readers build.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// use lodtensor::OffsetWidth;
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_offset_width(OffsetWidth::I32))?;
    /// let back = read_parquet(&path, &ParquetReadOptions::default())?;
    /// assert_eq!(back.column("x")?.lod().levels()[0].width(), OffsetWidth::I32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_offset_width(mut self, width: OffsetWidth) -> Self {
        self.offset_width = Some(width);
        self
    }

    /// The same options with `BYTE_STREAM_SPLIT` encoding for float16/32/64 values, which
    /// usually helps a codec compress them (no dictionary for those columns then).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_byte_stream_split(true))?;
    /// assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_byte_stream_split(mut self, enabled: bool) -> Self {
        self.byte_stream_split = enabled;
        self
    }

    /// The same options with dictionary encoding of the values on or off (off by default:
    /// it rarely pays for tensor values and costs time).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_dictionary(true))?;
    /// assert_eq!(read_parquet(&path, &ParquetReadOptions::default())?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_dictionary(mut self, enabled: bool) -> Self {
        self.dictionary = enabled;
        self
    }

    /// The same options encoding on up to `threads` threads (by default, as many as the
    /// machine has cores; 1 encodes on the calling thread). The file is the same with any
    /// number.
    ///
    /// Row groups are encoded one at a time, each by up to `threads` threads, and written
    /// in order. The page encoder (plain numeric tensor columns, see the module docs) shares
    /// a column's pages among the threads while the calling thread writes the pages made
    /// before into the file: memory is one row group of input (views of the datasets
    /// given, not copies) and a few pages per thread. In a file with other columns, each
    /// thread takes whole columns (the `parquet` crate's column writer encodes one column on
    /// one thread), encoded into memory before the row group is written: memory is one row
    /// group of input and its encoded chunks.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::io::parquet::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::words();
    /// # let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// # let path = dir.path().join("d.parquet");
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_threads(1))?;
    /// let one = std::fs::read(&path)?;
    /// write_parquet(&path, [&ds], &ParquetWriteOptions::default().with_threads(4))?;
    /// assert_eq!(std::fs::read(&path)?, one);                  // the same file on any number
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The Parquet writer properties for a file of `schema` whose columns hold `dtypes`
    /// (`None`: a side column).
    pub(super) fn properties(
        &self,
        schema: &Schema,
        dtypes: &[Option<DType>],
    ) -> Result<WriterProperties> {
        let mut builder = WriterProperties::builder()
            .set_compression(self.compression.to_parquet()?)
            .set_dictionary_enabled(self.dictionary);
        if self.byte_stream_split {
            let descr = ArrowSchemaConverter::new().convert(schema)?;
            for (i, leaf) in descr.columns().iter().enumerate() {
                let dtype = dtypes[descr.get_column_root_idx(i)];
                if matches!(
                    dtype,
                    Some(DType::Float16 | DType::Float32 | DType::Float64)
                ) {
                    builder = builder
                        .set_column_encoding(leaf.path().clone(), Encoding::BYTE_STREAM_SPLIT)
                        .set_column_dictionary_enabled(leaf.path().clone(), false);
                }
            }
        }
        Ok(builder.build())
    }
}

#[cfg(test)]
mod tests;
