//! The crate's error type.
//!
//! Every fault names where it is: the level and index of a bad offset, the column and
//! record batch of a file, the path. Errors nest: a fault inside a file is an
//! [`Error::InFile`] around the fault itself, so the message reads
//! `data.arrow: column "tokens", batch 3: level 1: offset at index 7 (12) is less than the
//! previous offset (15)`.

use std::path::PathBuf;

use arrow_schema::{ArrowError, DataType};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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

    /// A level index past the last level.
    #[error("level {level} does not exist (the LoD has {levels} levels)")]
    LevelOutOfBounds {
        /// The level asked for.
        level: usize,
        /// The number of levels.
        levels: usize,
    },

    /// A sequence index past the end of its level.
    #[error("level {level}: sequence {index} does not exist (the level has {len} sequences)")]
    SequenceOutOfBounds {
        /// The level.
        level: usize,
        /// The index asked for.
        index: usize,
        /// The number of sequences at that level.
        len: usize,
    },

    /// A row range that is reversed or ends past the last row.
    #[error("rows {start}..{end} are out of bounds (there are {len} rows)")]
    RowsOutOfBounds {
        /// Start of the range.
        start: usize,
        /// End of the range.
        end: usize,
        /// The number of rows.
        len: usize,
    },

    /// The values do not have the shape the element shape asks for.
    #[error("invalid element shape {shape:?}: {reason}")]
    ElementShape {
        /// The element shape.
        shape: Vec<usize>,
        /// What is wrong.
        reason: String,
    },

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

    /// Typed access with the wrong element type.
    #[error("values are {found}, not {expected}")]
    DTypeMismatch {
        /// The type asked for.
        expected: String,
        /// The type the values have.
        found: String,
    },

    /// Null entries where the layout allows none.
    #[error("{what} contain {count} null entries; LoD tensors have no nulls")]
    Nulls {
        /// Which part held nulls (`"level 1"`, `"values"`).
        what: String,
        /// How many.
        count: usize,
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

    /// A format version this crate cannot read.
    #[error("format version {found:?} is not supported (this reader reads version {expected})")]
    UnsupportedVersion {
        /// The version found.
        found: String,
        /// The version this crate reads and writes.
        expected: &'static str,
    },

    /// Columns of one dataset that do not share the row count.
    #[error("column {column:?} has {rows} rows, the dataset has {expected}")]
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

    /// A column name that the dataset does not have.
    #[error("no column named {0:?}")]
    NoSuchColumn(String),

    /// A fault inside one column of one record batch.
    #[error("column {column:?}, batch {batch}: {source}")]
    InColumn {
        /// The column.
        column: String,
        /// The record batch, in file order.
        batch: usize,
        /// The fault.
        #[source]
        source: Box<Error>,
    },

    /// A fault inside a file.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The fault.
        #[source]
        source: Box<Error>,
    },

    /// A dataset written after the first with other columns or types.
    #[error("dataset does not match the file's schema: expected {expected}, found {found}")]
    SchemaMismatch {
        /// The schema of the file.
        expected: String,
        /// The schema of the dataset.
        found: String,
    },

    /// A writer finished before any dataset told it the schema.
    #[error("nothing was written, so the file has no schema")]
    NothingWritten,

    /// A file that is not what its format says it must be.
    #[error("invalid file: {0}")]
    InvalidFile(String),

    /// An error from Arrow.
    #[error(transparent)]
    Arrow(#[from] ArrowError),

    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),

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
        /// The text found.
        json: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A loader position saved by a loader with other options or data.
    #[error(
        "loader position was saved with fingerprint {found:016x}, this loader's is {expected:016x} (other options or data)"
    )]
    PositionMismatch {
        /// This loader's fingerprint.
        expected: u64,
        /// The position's.
        found: u64,
    },

    /// A loader position past the last batch of its epoch.
    #[error("epoch {epoch}: batch {batch} does not exist (the epoch has {batches} batches)")]
    BatchOutOfRange {
        /// The epoch.
        epoch: u64,
        /// The batch asked for.
        batch: usize,
        /// The batches of the epoch.
        batches: usize,
    },

    /// The prefetch thread panicked.
    #[error("the loader's prefetch thread panicked")]
    PrefetchPanicked,
}

impl Error {
    /// Wraps this error with the column and record batch it happened in.
    pub fn in_column(self, column: &str, batch: usize) -> Self {
        Error::InColumn {
            column: column.to_owned(),
            batch,
            source: Box::new(self),
        }
    }

    /// Wraps this error with the file it happened in.
    pub fn in_file(self, path: impl Into<PathBuf>) -> Self {
        Error::InFile {
            path: path.into(),
            source: Box::new(self),
        }
    }

    /// The innermost error, under every [`Error::InFile`] and [`Error::InColumn`].
    pub fn root(&self) -> &Error {
        match self {
            Error::InColumn { source, .. } | Error::InFile { source, .. } => source.root(),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_reads_outside_in() {
        let e = Error::DecreasingOffset {
            level: 1,
            index: 7,
            offset: 12,
            previous: 15,
        }
        .in_column("tokens", 3)
        .in_file("data.arrow");
        assert_eq!(
            e.to_string(),
            "data.arrow: column \"tokens\", batch 3: level 1: offset at index 7 (12) is less than the previous offset (15)"
        );
        assert!(matches!(e.root(), Error::DecreasingOffset { index: 7, .. }));
    }
}
