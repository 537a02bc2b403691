//! What went wrong, in detail: one enum per kind of fault, each variant with the numbers
//! that find it.

use arrow_schema::DataType;

use std::ops::Range;

use super::{Error, FileFormat, Result};

/// Input data that breaks the rules of a LoD tensor or a dataset: offsets, shapes, nulls,
/// row counts. The caller fixes the data (or reports it as bad).
///
/// # Example
/// ```
/// use lodtensor::{DataError, ErrorKind, Lod};
/// let err = Lod::try_from_offsets(&[vec![0, 3, 2]]).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Data(DataError::DecreasingOffset { level: 0, index: 2, .. })));
/// assert_eq!(err.to_string(), "level 0: offset at index 2 (2) is less than the previous offset (3)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A level has no offsets at all (a level needs at least the one offset that opens it).
    #[error("level {level}: offsets are empty (a level needs at least one offset)")]
    EmptyLevel {
        /// The level, 0 being the outermost.
        level: usize,
    },

    /// The first offset of a level is negative.
    #[error("level {level}: first offset ({offset}) is negative")]
    NegativeOffset {
        /// The level, 0 being the outermost.
        level: usize,
        /// The offset found.
        offset: i64,
    },

    /// An offset is smaller than the one before it.
    #[error(
        "level {level}: offset at index {index} ({offset}) is less than the previous offset ({previous})"
    )]
    DecreasingOffset {
        /// The level, 0 being the outermost.
        level: usize,
        /// Index of the offending offset in the level's offsets.
        index: usize,
        /// The offending offset.
        offset: i64,
        /// The offset before it.
        previous: i64,
    },

    /// An offset past the end of the level below it (or of the elements).
    #[error(
        "level {level}: offset at index {index} ({offset}) is past the end of its child ({})",
        counted(.len, "entry", "entries")
    )]
    OffsetOutOfBounds {
        /// The level, 0 being the outermost.
        level: usize,
        /// Index of the offending offset.
        index: usize,
        /// The offending offset.
        offset: i64,
        /// The number of entries of the child.
        len: usize,
    },

    /// A level's last offset is not the number of sequences of the level below it.
    #[error(
        "level {level}: last offset ({last_offset}) is not the number of sequences at level {} ({sequences})",
        level + 1
    )]
    LevelEndMismatch {
        /// The level whose last offset is wrong.
        level: usize,
        /// Its last offset.
        last_offset: i64,
        /// The number of sequences (offsets minus one) of level `level + 1`.
        sequences: usize,
    },

    /// The last level's last offset is not the number of elements (rows of values).
    #[error(
        "level {level}: last offset ({last_offset}) is not the number of elements of the values ({elements})"
    )]
    ElementCountMismatch {
        /// The last level.
        level: usize,
        /// Its last offset.
        last_offset: i64,
        /// The number of elements the values hold.
        elements: usize,
    },

    /// An offset or length does not fit the offset width asked for (or `usize`).
    #[error("level {level}: offset at index {index} ({value}) does not fit in {width}")]
    OffsetOverflow {
        /// The level, 0 being the outermost.
        level: usize,
        /// Index of the offset.
        index: usize,
        /// The value that does not fit.
        value: u128,
        /// The integer type it had to fit.
        width: &'static str,
    },

    /// The values do not have the shape the element shape asks for.
    #[error("invalid element shape {shape:?}: {reason}")]
    ElementShape {
        /// The element shape.
        shape: Vec<usize>,
        /// What is wrong.
        reason: String,
    },

    /// Null entries where the layout allows none.
    #[error(
        "{what} contain {}; LoD tensors have no nulls",
        counted(.count, "null entry", "null entries")
    )]
    Nulls {
        /// Which part held nulls (`"level 1"`, `"values"`).
        what: String,
        /// How many.
        count: usize,
    },

    /// Columns of one dataset that do not share the row count.
    #[error(
        "column {column:?} has {}, the dataset has {expected}",
        counted(.rows, "row", "rows")
    )]
    ColumnRows {
        /// The column.
        column: String,
        /// Its rows.
        rows: usize,
        /// The dataset's rows.
        expected: usize,
    },

    /// Two columns with one name.
    #[error("column {0:?} appears twice")]
    DuplicateColumn(String),

    /// Two inputs that must pair their sequences one to one have different counts.
    #[error("{op}: level {level}: found {found} sequences (or rows), expected {expected}")]
    SequenceCountMismatch {
        /// The operation.
        op: &'static str,
        /// The level of the reference input whose sequences were counted.
        level: usize,
        /// The count of the input being paired.
        found: usize,
        /// The count of the reference.
        expected: usize,
    },

    /// One of several inputs does not match the first one.
    #[error("{op}: input {index}: {what} is {found}, expected {expected}")]
    InputMismatch {
        /// The operation.
        op: &'static str,
        /// Index of the input.
        index: usize,
        /// What differs (`"dtype"`, `"element shape"`, `"levels"`).
        what: &'static str,
        /// Its value in input `index`.
        found: String,
        /// Its value in input 0.
        expected: String,
    },

    /// A sequence longer than the length it must fit.
    #[error(
        "level {level}: sequence {index} has {}, more than the maximum length {expected}",
        counted(.found, "element", "elements")
    )]
    SequenceTooLong {
        /// The level of the sequence.
        level: usize,
        /// Its index in view.
        index: usize,
        /// Its length.
        found: usize,
        /// The maximum length.
        expected: usize,
    },
}

/// A file or its metadata that is not what its format says it must be: a damaged,
/// truncated or foreign file. The caller rejects the file.
///
/// # Example
/// ```
/// use lodtensor::{ErrorKind, FormatError, MappedDataset};
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("x.arrow"), [0u8; 64])?;
/// let err = MappedDataset::open(dir.path().join("x.arrow")).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Format(FormatError::InvalidFile { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// A file that is not what its format says it must be; made by
    /// [`Error::invalid`](crate::Error::invalid).
    #[error("invalid {}: {reason}", .format.file())]
    InvalidFile {
        /// The format the file breaks.
        format: FileFormat,
        /// What is wrong, and where in the file.
        reason: String,
    },

    /// `arrow.fixed_shape_tensor` extension metadata that cannot be parsed or does not fit.
    #[error("fixed_shape_tensor metadata {metadata:?}: {reason}")]
    ExtensionMetadata {
        /// The metadata string found.
        metadata: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A `lodtensor.*` metadata entry that cannot be parsed or contradicts the Arrow type.
    #[error("metadata {key:?} = {value:?}: {reason}")]
    Metadata {
        /// The key.
        key: &'static str,
        /// The value found.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A sharded dataset's manifest (`_lodtensor.json`) that cannot be parsed or breaks
    /// its rules; `field` is the JSON path (`shards[3].rows`).
    #[error("manifest field {field}: {reason}")]
    Manifest {
        /// The JSON path of the field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A shard of a sharded dataset that disagrees with what the manifest says of it.
    #[error("shard disagrees with the manifest: {field} is {found}, the manifest says {manifest}")]
    ShardMismatch {
        /// What disagrees (`bytes`, `crc32c`, `rows`, `columns[0].sequences`, …).
        field: String,
        /// The manifest's value.
        manifest: String,
        /// The shard's value.
        found: String,
    },

    /// A Paddle LoDTensor record ends before a field it declares.
    #[error(
        "Paddle record {record}: {what} at byte {offset} needs {}, {available} remain",
        counted(.needed, "byte", "bytes")
    )]
    PaddleTruncated {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the field in the file.
        offset: u64,
        /// The field (`"lod level count"`, `"tensor data"`, …).
        what: &'static str,
        /// The bytes the field needs.
        needed: u64,
        /// The bytes left in the file.
        available: u64,
    },

    /// A Paddle version field that is not 0.
    #[error("Paddle record {record}: {what} at byte {offset} is {found}, expected {expected}")]
    PaddleVersion {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the field in the file.
        offset: u64,
        /// Which version (`"LoDTensor version"` or `"tensor version"`).
        what: &'static str,
        /// The version found.
        found: u32,
        /// The version this crate reads.
        expected: u32,
    },

    /// A LoD level whose byte size is not a whole number of `u64` offsets.
    #[error(
        "Paddle record {record}: level {level} at byte {offset} declares {}, not a multiple of 8",
        counted(.size, "byte", "bytes")
    )]
    PaddleLevelSize {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the size field in the file.
        offset: u64,
        /// The level, 0 being the outermost.
        level: usize,
        /// The byte size declared.
        size: u64,
    },

    /// A LoD level that breaks the LoD rules; `source` names the level and index.
    #[error("Paddle record {record}: LoD at byte {offset}: {source}")]
    PaddleLod {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the LoD (the level count) in the file.
        offset: u64,
        /// The rule broken.
        #[source]
        source: Box<Error>,
    },

    /// A LoD level whose first offset is not 0 (Paddle's levels always start at 0).
    #[error("Paddle record {record}: level {level} at byte {offset} starts at {found}, expected 0")]
    PaddleLodStart {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the level's first offset in the file.
        offset: u64,
        /// The level, 0 being the outermost.
        level: usize,
        /// The first offset found.
        found: i64,
    },

    /// A `TensorDesc` protobuf message that cannot be parsed.
    #[error("Paddle record {record}: tensor desc, byte {offset}: {reason}")]
    PaddleDesc {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the fault in the file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },

    /// Tensor dims that are negative, overflow, or cannot be held.
    #[error("Paddle record {record}: dims {dims:?}: {reason}")]
    PaddleDims {
        /// The record, in file order.
        record: usize,
        /// The dims found.
        dims: Vec<i64>,
        /// What is wrong.
        reason: String,
    },

    /// A bool item that is neither 0 nor 1.
    #[error("Paddle record {record}: bool item at byte {offset} is {value}, expected 0 or 1")]
    PaddleBool {
        /// The record, in file order.
        record: usize,
        /// The byte offset of the item in the file.
        offset: u64,
        /// The byte found.
        value: u8,
    },

    /// Bytes after the last record of a Paddle file.
    #[error(
        "Paddle file: {} after the last record, at byte {offset}",
        counted(.count, "byte", "bytes")
    )]
    PaddleTrailingBytes {
        /// The byte offset where they start.
        offset: u64,
        /// How many.
        count: u64,
    },
}

/// A call that asks for something the input does not have or the operation does not accept:
/// an index or range out of bounds, a column that does not exist, an option out of range.
/// The caller fixes the call.
///
/// # Example
/// ```
/// use lodtensor::{ArgumentError, ErrorKind, LodTensor};
/// use lodtensor::arrow::types::Float32Type;
/// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![0.0; 3], vec![])?;
/// let err = t.slice_rows(1..5).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Argument(ArgumentError::RowsOutOfBounds { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// A level index past the last level.
    #[error(
        "level {level} does not exist (the LoD has {})",
        counted(.levels, "level", "levels")
    )]
    LevelOutOfBounds {
        /// The level asked for.
        level: usize,
        /// The number of levels.
        levels: usize,
    },

    /// A sequence index past the end of its level.
    #[error(
        "level {level}: sequence {index} does not exist (the level has {})",
        counted(.len, "sequence", "sequences")
    )]
    SequenceOutOfBounds {
        /// The level.
        level: usize,
        /// The index asked for.
        index: usize,
        /// The number of sequences at that level.
        len: usize,
    },

    /// A row range that is reversed or ends past the last row.
    #[error(
        "rows {start}..{end} are out of bounds (the data has {})",
        counted(.len, "row", "rows")
    )]
    RowsOutOfBounds {
        /// Start of the range.
        start: usize,
        /// End of the range.
        end: usize,
        /// The number of rows.
        len: usize,
    },

    /// Typed access with the wrong element type.
    #[error("values are {found}, not {expected}")]
    DTypeMismatch {
        /// The type asked for.
        expected: String,
        /// The type the values have.
        found: String,
    },

    /// A column name that the dataset does not have.
    #[error("no column named {0:?}")]
    NoSuchColumn(String),

    /// A LoD operation asked of a side column (a column of another Arrow type beside the
    /// tensors, format-spec §2.2).
    #[error("column {column:?} is a side column of type {data_type}, not a LoD tensor")]
    NotATensor {
        /// The column.
        column: String,
        /// Its Arrow type.
        data_type: DataType,
    },

    /// A `ref_level` that names no level of the reference LoD.
    #[error(
        "{op}: ref_level {ref_level} does not exist (y has {}; expected -1 or 0..{levels})",
        counted(.levels, "level", "levels")
    )]
    RefLevel {
        /// The operation.
        op: &'static str,
        /// The level asked for.
        ref_level: isize,
        /// The number of levels of the reference LoD.
        levels: usize,
    },

    /// An argument outside what the operation accepts.
    #[error("{op}: {name} is {found}, expected {expected}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// The argument.
        name: &'static str,
        /// Its value.
        found: String,
        /// What was expected.
        expected: String,
    },

    /// A dataset whose columns do not match the ones the file was started with.
    #[error("batch {batch}: the dataset does not match the file's schema: {reason}")]
    SchemaMismatch {
        /// The dataset, in write order.
        batch: usize,
        /// What differs.
        reason: String,
    },

    /// A writer finished before any dataset gave it a schema.
    #[error("nothing to write: no dataset was given, so the file would have no schema")]
    NoSchema,

    /// A loader option out of range.
    #[error("loader option {option}: {reason}")]
    LoaderConfig {
        /// The option.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// A saved loader position that cannot be parsed.
    #[error("loader position {json:?}: {reason}")]
    InvalidPosition {
        /// The text found (a long one elided: its start, the bytes elided and its end).
        json: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A loader position saved by a loader that makes other plans.
    #[error("the loader position is from another plan: {differs} differ")]
    PositionMismatch {
        /// What differs between the position's plan and this loader's, in words.
        differs: String,
    },

    /// A loader position past the last batch of its epoch.
    #[error(
        "epoch {epoch}: batch {batch} does not exist (the epoch has {})",
        counted(.batches, "batch", "batches")
    )]
    BatchOutOfRange {
        /// The epoch.
        epoch: u64,
        /// The batch asked for.
        batch: usize,
        /// The batches of the epoch.
        batches: usize,
    },

    /// A combined Paddle file with another number of records than names given.
    #[error(
        "Paddle file holds {}, {} given",
        counted(.found, "record", "records"),
        counted(.expected, "name was", "names were")
    )]
    PaddleRecordCount {
        /// The records in the file.
        found: usize,
        /// The names given.
        expected: usize,
    },
}

/// A well-formed input this crate does not handle: an Arrow type with no LoD meaning, a
/// dtype, a format version. The caller converts the input or uses another tool.
///
/// # Example
/// ```
/// use lodtensor::{DType, ErrorKind, UnsupportedError};
/// let err = DType::from_name("bfloat16").unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Unsupported(UnsupportedError::UnknownDType(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedError {
    /// An Arrow type that has no LoD tensor meaning.
    #[error("unsupported Arrow type for {what}: {data_type}")]
    UnsupportedType {
        /// Which part of the layout had that type.
        what: &'static str,
        /// The type found.
        data_type: DataType,
    },

    /// A dtype name that is not one of the supported ones.
    #[error("unknown dtype {0:?}")]
    UnknownDType(String),

    /// A format version this crate cannot read.
    #[error("format version {found:?} is not supported (this reader reads version {expected})")]
    UnsupportedVersion {
        /// The version found.
        found: String,
        /// The version this crate reads and writes.
        expected: &'static str,
    },

    /// A Paddle data type with no [`DType`](crate::DType) (bfloat16, complex, fp8, …).
    #[error("Paddle record {record}: data type {name} (code {code}) is not supported")]
    PaddleDType {
        /// The record, in file order.
        record: usize,
        /// The `VarType.Type` code found.
        code: i64,
        /// Paddle's name for it, or `"unknown"`.
        name: &'static str,
    },

    /// A dtype that Paddle's tensor files cannot hold (`uint16`, `uint32`, `uint64`).
    #[error("dtype {dtype} has no Paddle data type")]
    NoPaddleDType {
        /// The dtype.
        dtype: crate::values::DType,
    },

    /// An input with more LoD levels than the operation accepts.
    #[error(
        "{op}: input has {}, expected at most {expected}",
        counted(.found, "LoD level", "LoD levels")
    )]
    TooManyLevels {
        /// The operation.
        op: &'static str,
        /// The number of levels found.
        found: usize,
        /// The largest number accepted.
        expected: usize,
    },

    /// An item type the operation has no arithmetic for.
    #[error("{op}: dtype {found} is not supported (expected a numeric dtype)")]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// The dtype found.
        found: crate::values::DType,
    },

    /// Never produced since sharded datasets carry side columns (manifest version 2,
    /// format-spec §7.1); kept so that code matching it still compiles, to be removed in
    /// the next release. Before: a side column given to a sharded dataset.
    #[error(
        "column {column:?} is a side column of type {data_type}: a sharded dataset holds LoD \
         tensor columns only (format-spec.md §7.1); write it to a single lodtensor file, or \
         leave it out of the shards"
    )]
    ShardedSideColumn {
        /// The column.
        column: String,
        /// Its Arrow type.
        data_type: arrow_schema::DataType,
    },
}

impl ArgumentError {
    /// Refuses `rows` unless it runs forward and ends within `len` rows:
    /// [`ArgumentError::RowsOutOfBounds`].
    pub(crate) fn check_rows(rows: &Range<usize>, len: usize) -> Result<()> {
        if rows.start > rows.end || rows.end > len {
            return Err(ArgumentError::RowsOutOfBounds {
                start: rows.start,
                end: rows.end,
                len,
            }
            .into());
        }
        Ok(())
    }

    /// Refuses `level` unless it is one of `levels` levels:
    /// [`ArgumentError::LevelOutOfBounds`].
    pub(crate) fn check_level(level: usize, levels: usize) -> Result<()> {
        if level >= levels {
            return Err(ArgumentError::LevelOutOfBounds { level, levels }.into());
        }
        Ok(())
    }
}

/// `1 row`, `3 rows`: a count in plain English, for messages.
pub(crate) fn counted<N: std::fmt::Display + PartialEq + From<u8>>(
    n: &N,
    one: &str,
    many: &str,
) -> String {
    if *n == N::from(1) {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
