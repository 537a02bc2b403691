//! The memory-mapped, zero-copy, validating Arrow IPC file reader.
//!
//! Opening maps the file, reads the footer and schema, and decodes each record batch's
//! metadata into views of the mapping: no value is read or copied (but a file written with
//! compressed bodies, which is decompressed into memory once: see
//! [`MappedDataset::is_compressed`]). Every offset of every
//! level is validated (Arrow's offset checks, then the LoD rules) before any access, so an
//! untrusted file gives a typed error, never a panic or an out-of-bounds read.
//!
//! # The mapping and SIGBUS
//! A mapped file that another process truncates or rewrites in place makes later reads of
//! the vanished pages fault (`SIGBUS`) or see changed bytes. This crate's writers never do
//! that: they write a temporary file and rename it over the target, so a reader keeps the
//! old, complete file until it drops it. Every mapped reader (this one, so the CLI, shards,
//! the loader and Python) holds a shared advisory lock (`flock`) while the mapping lives, so
//! a cooperating tool that takes an exclusive lock before rewriting in place waits for
//! readers. A tool that ignores locks cannot be stopped: [`MappedDataset::check_unchanged`]
//! (run by every method that hands out a view) turns a change of size or modification time
//! since opening into an error, but a view handed out before the change still faults when
//! read. So do not edit dataset files in place.
//!
//! The mapping is private and copy-on-write: its pages are the page cache's until written,
//! and a write through a view (only foreign code can make one, such as `torch.from_numpy` on
//! a Python array) copies that page into the writing process and never reaches the file.
//! Pages not yet written still show in-place changes to the file.

#[cfg(doc)]
use crate::error::DataError;
use crate::error::{ArgumentError, FileFormat, UnusableError};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::io::ipc_decode::decode;
use crate::io::mapped_file::{FileIdentity, MappedFile};
use crate::io::regular::open_regular;
use crate::layout::ColumnLayout;
use crate::row_index::RowIndex;
use crate::tensor::LodTensor;

/// `ARROW1`, at both ends of an IPC file.
pub(super) const MAGIC: &[u8; 6] = b"ARROW1";

/// A dataset file, memory-mapped; every batch, sample and slice is a view into the mapping.
///
/// `MappedDataset` is `Send + Sync`: many threads can read one mapping.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::io::ipc_reader::MappedDataset;
/// use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
/// use arrow_array::types::Float32Type;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("tokens.arrow");
/// let t = LodTensor::from_lengths::<Float32Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).map(|i| i as f32).collect(), vec![])?;
/// let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
/// writer.write(&Dataset::try_new(vec![Column::new("words", t)])?)?;
/// writer.finish()?;
///
/// let file = MappedDataset::open(&path)?;
/// assert_eq!(file.num_rows(), 3);
/// let article = file.sample(2)?;
/// assert_eq!(article.column("words")?.typed_values::<Float32Type>()?, &[10., 11., 12., 13., 14.]);
/// let sentence = file.slice_sequence("words", 1, 4)?;   // sentence 4 of the file
/// assert_eq!(sentence.typed_values::<Float32Type>()?, &[10., 11.]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MappedDataset {
    path: PathBuf,
    mapping: Buffer,
    schema: SchemaRef,
    batches: Vec<Dataset>,
    /// Where each record batch starts.
    rows: RowIndex,
    /// The file, held for its shared advisory lock, with its size and modification time
    /// when opened (none for a file read from memory).
    opened: Option<Opened>,
    /// The file's path, identity when opened and mapping (none for a file read from
    /// memory): where a view of it lies, for another process.
    file: Option<Arc<MappedFile>>,
    /// Whether a record batch was compressed: its values then live in memory, decompressed
    /// once when opened, not in the mapping.
    compressed: bool,
}

/// A mapped file as it was when opened.
#[derive(Debug)]
struct Opened {
    file: File,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl MappedDataset {
    /// Maps and validates the file at `path`.
    ///
    /// # Errors
    /// Any fault in the file, with the path attached ([`Error::path`]): [`ErrorKind::Io`](crate::ErrorKind::Io), [`FormatError::InvalidFile`](crate::FormatError::InvalidFile)
    /// for a file that is not a valid Arrow IPC file of LoD tensor columns (or whose
    /// compressed buffers declare more than 1024 times their size uncompressed),
    /// and offset or LoD errors naming the batch, column, level and index.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.num_rows(), 5);
    /// std::fs::write(dir.path().join("bad.arrow"), b"not an arrow file")?;
    /// let err = MappedDataset::open(dir.path().join("bad.arrow")).unwrap_err();
    /// assert!(err.path().is_some_and(|p| p.ends_with("bad.arrow")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_impl(path.as_ref(), true)
    }

    /// Maps the file at `path` and reads and validates only the columns named `columns`,
    /// in that order: the others are walked past, never decoded or validated, so opening
    /// costs what the chosen columns cost. [`MappedDataset::schema`] is then theirs.
    ///
    /// # Errors
    /// As [`MappedDataset::open`]; [`ArgumentError::NoSuchColumn`] for a name the file has
    /// not; [`DataError::DuplicateColumn`] for a name given twice.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lodtensor::arrow::array::StringArray;
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::{Column, Dataset, DatasetWriter, LodTensor, MappedDataset, WriteOptions};
    /// let path = tempfile::tempdir()?.keep().join("two.arrow");
    /// let tokens = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![1, 2, 3], vec![])?;
    /// let id = Column::side("id", Arc::new(StringArray::from(vec!["a", "b"])))?;
    /// let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
    /// writer.write(&Dataset::try_new(vec![Column::new("tokens", tokens), id])?)?;
    /// writer.finish()?;
    /// let file = MappedDataset::open_columns(&path, &["id"])?;
    /// assert_eq!(file.schema().fields().len(), 1);
    /// assert_eq!(file.sample(1)?.column_by_name("id")?.to_arrow().as_ref(), &StringArray::from(vec!["b"]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_columns(path: impl AsRef<Path>, columns: &[&str]) -> Result<Self> {
        let path = path.as_ref();
        Self::open_mapped(path, Some(columns), true, |_| Ok(()))
    }

    /// Maps the file at `path` without reading its offsets for order and bounds (the layout,
    /// bounds and sizes of every buffer and the LoD rules between levels are still checked).
    ///
    /// # Safety
    /// The file must be valid: written by this crate or another correct Arrow writer and not
    /// modified since. Offsets out of order or out of bounds in an unchecked file are
    /// undefined behaviour when read.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// // SAFETY: the file was written above by this crate's writer and is not changed since.
    /// let trusted = unsafe { MappedDataset::open_trusted(&path)? };
    /// assert_eq!(trusted.num_rows(), file.num_rows());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn open_trusted(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_impl(path.as_ref(), false)
    }

    fn open_impl(path: &Path, validate: bool) -> Result<Self> {
        Self::open_verified(path, validate, |_| Ok(()))
    }

    /// Maps the file at `path`, runs `verify` on its bytes (a checksum, say), then decodes
    /// and checks it as [`MappedDataset::open`] does.
    pub(crate) fn open_verified(
        path: &Path,
        validate: bool,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<Self> {
        Self::open_mapped(path, None, validate, verify)
    }

    /// Maps the file at `path`, runs `verify` on its bytes, then decodes and checks the
    /// columns named `columns` (all when `None`).
    fn open_mapped(
        path: &Path,
        columns: Option<&[&str]>,
        validate: bool,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<Self> {
        let in_file = |e: Error| e.in_file(path);
        let (file, meta) = open_regular(path).map_err(|e| in_file(e.into()))?;
        match file.try_lock_shared() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(in_file(Error::invalid(
                    FileFormat::Ipc,
                    "another process holds an exclusive lock on the file",
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(in_file(e.into())),
        }
        let len = meta.len();
        check_len(len).map_err(in_file)?;
        // SAFETY: the mapping is private (copy-on-write, MAP_PRIVATE) and stays alive as
        // long as any buffer made from it (Bytes::from_owner keeps it). This crate only reads
        // it. Its pages are writable so that a consumer which ignores the read-only flag the
        // Python binding sets (torch.from_numpy) does not fault: such a write copies the page
        // into this process and reaches neither the file nor any other mapping of it. The
        // mapping is not a snapshot: a page this process has not written still shows changes
        // another process makes to the file in place (Linux; POSIX leaves it unspecified), so
        // soundness still rests on nobody writing the file in place, which this crate never
        // does and which the shared lock taken above and the module docs guard against.
        let mmap = unsafe { memmap2::MmapOptions::new().map_copy(&file) }
            .map_err(|e| in_file(e.into()))?;
        let mapping = Buffer::from(bytes::Bytes::from_owner(mmap));
        verify(mapping.as_slice()).map_err(in_file)?;
        let identity = FileIdentity::of(&meta);
        let opened = Opened {
            len,
            modified: meta.modified().ok(),
            file,
        };
        let file = Arc::new(MappedFile::new(path, identity, mapping.clone()));
        let mut dataset =
            Self::from_mapping(path.to_path_buf(), mapping, Some(opened), columns, validate)
                .map_err(in_file)?;
        dataset.file = Some(file);
        Ok(dataset)
    }

    /// Reads a dataset file held in memory, copied into an aligned buffer, with every check
    /// of [`MappedDataset::open`]; [`MappedDataset::path`] is then empty. For the fuzz
    /// targets, which would otherwise write every input to a file: not part of the API.
    ///
    /// # Errors
    /// As [`MappedDataset::open`], without the file.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// let copy = MappedDataset::from_bytes(file.as_bytes())?;
    /// assert_eq!(copy.num_rows(), 5);
    /// assert!(copy.path().as_os_str().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[doc(hidden)]
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        check_len(bytes.len() as u64)?;
        Self::from_mapping(PathBuf::new(), Buffer::from(bytes), None, None, true)
    }

    fn from_mapping(
        path: PathBuf,
        mapping: Buffer,
        opened: Option<Opened>,
        columns: Option<&[&str]>,
        validate: bool,
    ) -> Result<Self> {
        let (schema, batches, compressed) = decode(&mapping, columns, validate)?;
        let rows = RowIndex::from_counts(batches.iter().map(Dataset::num_rows));
        Ok(MappedDataset {
            path,
            mapping,
            schema,
            batches,
            rows,
            opened,
            file: None,
            compressed,
        })
    }

    /// Checks that the file was not written in place since it was opened (its size and
    /// modification time, from `fstat` of the open file). [`MappedDataset::sample`],
    /// [`MappedDataset::rows`] and [`MappedDataset::slice_sequence`] check it before they
    /// hand out a view, so a file truncated or rewritten in place by a process that ignores
    /// the shared lock gives this error rather than `SIGBUS` or changed values. A view
    /// handed out before the change can still fault when read: see the module docs.
    ///
    /// # Errors
    /// [`UnusableError::FileChanged`] with the path, naming the sizes; the `fstat` I/O error.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset, DatasetWriter, LodTensor, MappedDataset, WriteOptions};
    /// # use lodtensor::arrow::types::Float32Type;
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("d.arrow");
    /// # let t = LodTensor::from_lengths::<Float32Type>(&[vec![1, 2, 3, 4, 5]], vec![1.0; 15], vec![])?;
    /// # let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    /// # w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
    /// # w.finish()?;
    /// let file = MappedDataset::open(&path)?;
    /// file.check_unchanged()?;
    /// std::fs::OpenOptions::new().write(true).open(&path)?.set_len(10)?;  // truncated in place
    /// assert!(file.check_unchanged().is_err());
    /// assert!(file.sample(0).is_err());                         // an error, not SIGBUS
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_unchanged(&self) -> Result<()> {
        let Some(opened) = &self.opened else {
            return Ok(());
        };
        let in_file = |e: Error| e.in_file(&self.path);
        let meta = opened.file.metadata().map_err(|e| in_file(e.into()))?;
        if meta.len() != opened.len || meta.modified().ok() != opened.modified {
            return Err(in_file(
                UnusableError::FileChanged {
                    opened_len: opened.len,
                    len: meta.len(),
                }
                .into(),
            ));
        }
        Ok(())
    }

    /// The path the file was opened from.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.path(), path);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mapped file: its path, its identity (device, inode, size, modification time)
    /// when opened, and where a view of it lies in it (`None` for a file read from memory).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = MappedDataset::open(&path)?;
    /// let mapped = file.mapped_file().expect("opened from a path");
    /// assert_eq!(mapped.identity().size, std::fs::metadata(&path)?.len());
    /// assert!(MappedDataset::from_bytes(file.as_bytes())?.mapped_file().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mapped_file(&self) -> Option<&Arc<MappedFile>> {
        self.file.as_ref()
    }

    /// The Arrow schema, with its metadata.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.schema().field(0).name(), "x");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The whole mapped file.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.as_bytes().len() as u64, std::fs::metadata(&path)?.len());
    /// assert!(file.as_bytes().starts_with(b"ARROW1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        self.mapping.as_slice()
    }

    /// Whether a record batch of the file is compressed (Arrow IPC body compression, zstd
    /// or lz4): its buffers were decompressed into memory once, when the file was opened,
    /// and views of it point there, not into the mapping (format-spec §6). Every method
    /// reads it as it reads an uncompressed file.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (_dir, path) = lodtensor::doc_fixtures::file()?;
    /// let file = MappedDataset::open(&path)?;
    /// assert!(!file.is_compressed());                          // every view is in the mapping
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_compressed(&self) -> bool {
        self.compressed
    }

    /// The mapping, shared.
    pub(crate) fn mapping(&self) -> &Buffer {
        &self.mapping
    }

    /// The number of rows (samples) over all batches.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.num_rows(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.rows.num_rows()
    }

    /// Where each record batch starts: the map from a row of the file to its batch.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.row_index().num_rows(), 5);
    /// assert_eq!(file.row_index().num_parts(), file.batches().len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn row_index(&self) -> &RowIndex {
        &self.rows
    }

    /// The record batches, each a dataset of views into the mapping.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Dataset, MappedDataset};
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// let rows: usize = file.batches().iter().map(Dataset::num_rows).sum();
    /// assert_eq!(rows, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn batches(&self) -> &[Dataset] {
        &self.batches
    }

    /// The batch holding row `row` and the row's index inside it, in O(log batches).
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// assert_eq!(file.locate_row(4)?, (0, 4));                   // one record batch
    /// assert!(file.locate_row(5).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn locate_row(&self, row: usize) -> Result<(usize, usize)> {
        self.rows.try_locate(row)
    }

    /// Sample `row` (one row of every column), as a view.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// let row = file.sample(2)?;                                // a view into the mapping
    /// assert_eq!(row.column("x")?.elements().len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample(&self, row: usize) -> Result<Dataset> {
        let (batch, local) = self.locate_row(row)?;
        self.check_unchanged()?;
        self.batches[batch].slice_rows(local..local + 1)
    }

    /// Rows `rows`, as one view per batch they touch, in order.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Dataset, MappedDataset};
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// let parts = file.rows(1..4)?;
    /// assert_eq!(parts.iter().map(Dataset::num_rows).sum::<usize>(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rows(&self, rows: Range<usize>) -> Result<Vec<Dataset>> {
        let parts = self.rows.split(rows)?;
        self.check_unchanged()?;
        parts
            .into_iter()
            .map(|(b, local)| self.batches[b].slice_rows(local))
            .collect()
    }

    /// The `<level, index>`-slice of column `column`, `index` counting the sequences of
    /// `level` over the whole file, as a view.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`], [`ArgumentError::LevelOutOfBounds`], [`ArgumentError::SequenceOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// let sequence = file.slice_sequence("x", 0, 3)?;            // row 3: 4 elements
    /// assert_eq!(sequence.elements().len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice_sequence(&self, column: &str, level: usize, index: usize) -> Result<LodTensor> {
        self.check_unchanged()?;
        let mut remaining = index;
        let mut total = 0;
        for batch in &self.batches {
            let tensor = batch.column(column)?;
            let n = tensor.lod().num_sequences(level)?;
            if remaining < n {
                return tensor.slice_sequence(level, remaining);
            }
            remaining -= n;
            total += n;
        }
        let schema_field = self
            .schema
            .field_with_name(column)
            .map_err(|_| ArgumentError::NoSuchColumn(column.to_owned()))?;
        let levels = ColumnLayout::of(schema_field).num_levels();
        ArgumentError::check_level(level, levels)?;
        Err(ArgumentError::SequenceOutOfBounds {
            level,
            index,
            len: total,
        }
        .into())
    }
}

/// Refuses a file too short to hold the magic numbers and a footer length.
fn check_len(len: u64) -> Result<()> {
    if len < (2 * MAGIC.len() + 2 + 4) as u64 {
        return Err(Error::invalid(
            FileFormat::Ipc,
            format!("{len} bytes is too short for an Arrow IPC file"),
        ));
    }
    Ok(())
}
