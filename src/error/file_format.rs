//! Which file format an invalid file breaks.

use std::fmt;

use super::FormatError;

/// The file format an invalid file breaks: [`FormatError::InvalidFile`]
/// names it, and [`FormatError::file_format`](crate::FormatError::file_format) gives it for
/// every format fault.
///
/// # Example
/// ```
/// use lodtensor::{Error, ErrorKind, FileFormat, FormatError};
/// let err = Error::invalid(FileFormat::Parquet, "row group 2: -1 rows");
/// assert_eq!(err.to_string(), "invalid Parquet file: row group 2: -1 rows");
/// let ErrorKind::Format(fault) = err.kind() else { unreachable!() };
/// assert_eq!(fault.file_format(), Some(FileFormat::Parquet));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileFormat {
    /// A lodtensor file: an Arrow IPC file (format-spec.md).
    Ipc,
    /// A Parquet file.
    Parquet,
    /// A Paddle LoDTensor file (`paddle.save`, `save_combine`).
    Paddle,
    /// A sharded dataset: its manifest (`_lodtensor.json`), or a shard against it.
    Manifest,
    /// A text file read as one document (`lodtensor::tokenize`): not UTF-8.
    Text,
    /// A JSON lines file (one JSON object per line): a line that is not one, or lacks the
    /// text field.
    JsonLines,
    /// A HuggingFace tokenizer file (`tokenizer.json`).
    Tokenizer,
    /// A file whose format is not known (an empty input, or an error made with the
    /// deprecated `Error::invalid_file`).
    Unknown,
}

impl fmt::Display for FileFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileFormat::Ipc => "Arrow IPC",
            FileFormat::Parquet => "Parquet",
            FileFormat::Paddle => "Paddle",
            FileFormat::Manifest => "sharded dataset",
            FileFormat::Text => "text",
            FileFormat::JsonLines => "JSON lines",
            FileFormat::Tokenizer => "tokenizer.json",
            FileFormat::Unknown => "",
        })
    }
}

impl FileFormat {
    /// `Parquet file`, or `file` when the format is unknown: for messages.
    pub(crate) fn file(self) -> String {
        match self {
            FileFormat::Unknown => "file".to_owned(),
            known => format!("{known} file"),
        }
    }
}

impl FormatError {
    /// The file format this fault breaks, when the fault says: every Paddle variant is
    /// [`FileFormat::Paddle`], the manifest and shard variants [`FileFormat::Manifest`];
    /// metadata faults (in an IPC or a Parquet file alike) give `None`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{FileFormat, FormatError};
    /// let fault = FormatError::PaddleBool { record: 0, offset: 40, value: 2 };
    /// assert_eq!(fault.file_format(), Some(FileFormat::Paddle));
    /// ```
    pub fn file_format(&self) -> Option<FileFormat> {
        use FormatError::*;
        match self {
            InvalidFile { format, .. } => Some(*format),
            Manifest { .. } | ShardMismatch { .. } => Some(FileFormat::Manifest),
            PaddleTruncated { .. }
            | PaddleVersion { .. }
            | PaddleLevelSize { .. }
            | PaddleLod { .. }
            | PaddleLodStart { .. }
            | PaddleDesc { .. }
            | PaddleDims { .. }
            | PaddleBool { .. }
            | PaddleTrailingBytes { .. } => Some(FileFormat::Paddle),
            ExtensionMetadata { .. } | Metadata { .. } => None,
        }
    }
}
