//! The crate's error type.
//!
//! An [`Error`] is one pointer wide: what went wrong is its [`ErrorKind`], grouped by what a
//! caller does about it (fix the data, reject the file, fix the call, use another tool,
//! retry the I/O, drop an unusable object, report a bug of this crate), never by which
//! dependency noticed it: an Arrow or Parquet failure while decoding a file is an invalid
//! file ([`FormatError::InvalidFile`], naming its [`FileFormat`]), on a bad call an
//! argument error, on I/O an I/O error, and on data the crate built itself an
//! [`InternalError`]. Where it went wrong (the file, the column and record batch)
//! is attached once, outside the kind. Every fault names the numbers needed to find it (level,
//! index, byte, found and expected), so the message reads
//! `data.arrow: column "tokens", batch 3: level 1: offset at index 7 (12) is less than the
//! previous offset (15)`.
//!
//! ```
//! use lodtensor::{ArgumentError, ErrorKind, Lod};
//!
//! let lod = Lod::try_from_lengths(&[vec![2, 1]])?;
//! let err = lod.num_sequences(4).unwrap_err();
//! assert!(matches!(
//!     err.kind(),
//!     ErrorKind::Argument(ArgumentError::LevelOutOfBounds { level: 4, levels: 1 })
//! ));
//! assert_eq!(err.to_string(), "level 4 does not exist (the LoD has 1 level)");
//! # Ok::<(), lodtensor::Error>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use arrow_schema::ArrowError;

mod bounded;
mod dataset;
mod dependency;
mod details;
mod file_format;
mod internal;
mod unusable;

pub(crate) use bounded::{Elided, elided};
pub use dataset::DatasetError;
pub(crate) use details::counted;
pub use details::{ArgumentError, DataError, FormatError, UnsupportedError};
pub use file_format::FileFormat;
pub use internal::InternalError;
pub use unusable::UnusableError;

/// The result type of this crate.
///
/// # Example
/// ```
/// fn levels(lengths: &[Vec<usize>]) -> lodtensor::Result<usize> {
///     Ok(lodtensor::Lod::try_from_lengths(lengths)?.num_levels())
/// }
/// assert_eq!(levels(&[vec![2, 1], vec![1, 1, 1]])?, 2);
/// assert!(levels(&[vec![2, 1], vec![1, 1]]).is_err());       // 3 sentences counted, 2 given
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and where: an [`ErrorKind`] with the file, column and record batch it
/// happened in.
///
/// One pointer wide, so a `Result` costs little more than its value.
///
/// # Example
/// ```
/// use lodtensor::{ErrorKind, FormatError, MappedDataset};
/// let path = std::env::temp_dir().join(format!("not-arrow-{}.arrow", std::process::id()));
/// std::fs::write(&path, b"not an Arrow file at all")?;
/// let err = MappedDataset::open(&path).unwrap_err();
/// assert_eq!(err.path(), Some(path.as_path()));             // where
/// match err.kind() {                                         // what, by what to do
///     ErrorKind::Format(FormatError::InvalidFile { reason, .. }) => assert!(reason.contains("ARROW1")),
///     other => panic!("not a format error: {other}"),
/// }
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Error {
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    path: Option<PathBuf>,
    column: Option<(String, usize)>,
}

/// What went wrong, grouped by what a caller does about it.
///
/// # Example
/// ```
/// use lodtensor::{ErrorKind, Lod};
/// match Lod::try_from_lengths(&[vec![2], vec![1]]).map_err(lodtensor::Error::into_kind) {
///     Err(ErrorKind::Data(_)) => {}                        // bad input data
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Input data that breaks the rules: fix the data.
    #[error(transparent)]
    Data(DataError),
    /// A file that is not what its format says: reject the file.
    #[error(transparent)]
    Format(FormatError),
    /// A call outside what the input or the operation allows: fix the call.
    #[error(transparent)]
    Argument(ArgumentError),
    /// A well-formed input this crate does not handle.
    #[error(transparent)]
    Unsupported(UnsupportedError),
    /// An object unusable after an earlier failure: drop it.
    #[error(transparent)]
    Unusable(UnusableError),
    /// An I/O error: retry, or fix the path or the disk.
    #[error(transparent)]
    Io(std::io::Error),
    /// A sharded dataset there where a call creates one, or missing where a call needs
    /// one: change the call (create, append, check the path), retrying fails again.
    #[error(transparent)]
    Dataset(DatasetError),
    /// A bug of this crate: report it.
    #[error(transparent)]
    Internal(InternalError),
    /// Never produced: Arrow's errors come as the kind of what the caller does about them.
    #[deprecated(
        since = "0.2.0",
        note = "never produced: an Arrow failure is a `Format`, `Argument`, `Io` or `Internal` error"
    )]
    #[error(transparent)]
    Arrow(ArrowError),
    /// Never produced: the `parquet` crate's errors come as the kind of what the caller does
    /// about them.
    #[cfg(feature = "parquet")]
    #[deprecated(
        since = "0.2.0",
        note = "never produced: a Parquet failure is a `Format`, `Argument`, `Io` or `Internal` error"
    )]
    #[error(transparent)]
    Parquet(parquet::errors::ParquetError),
}

impl Error {
    /// An error of `kind`, with no context yet.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{ArgumentError, Error, ErrorKind};
    /// let err = Error::new(ArgumentError::NoSuchColumn("tokens".into()));
    /// assert!(matches!(err.kind(), ErrorKind::Argument(ArgumentError::NoSuchColumn(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(kind: impl Into<ErrorKind>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind: kind.into(),
                path: None,
                column: None,
            }),
        }
    }

    /// [`FormatError::InvalidFile`]: a file that is not what `format` says it must be, and
    /// why. The one way to make an invalid-file error, for every format.
    ///
    /// ```
    /// use lodtensor::{Error, FileFormat};
    /// let e = Error::invalid(FileFormat::Ipc, "footer: magic is b\"ARROX\", expected b\"ARROW\"");
    /// assert_eq!(e.to_string(), "invalid Arrow IPC file: footer: magic is b\"ARROX\", expected b\"ARROW\"");
    /// ```
    pub fn invalid(format: FileFormat, reason: impl Into<String>) -> Self {
        FormatError::InvalidFile {
            format,
            reason: reason.into(),
        }
        .into()
    }

    /// [`FormatError::InvalidFile`] of a file whose format is not named.
    ///
    /// ```
    /// #[allow(deprecated)]
    /// let e = lodtensor::Error::invalid_file("the file is empty (0 bytes)");
    /// assert_eq!(e.to_string(), "invalid file: the file is empty (0 bytes)");
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "name the format: `Error::invalid(FileFormat::Parquet, reason)`"
    )]
    pub fn invalid_file(reason: impl Into<String>) -> Self {
        Error::invalid(FileFormat::Unknown, reason)
    }

    /// [`ErrorKind::Internal`]: a bug of this crate, located where this is called.
    #[track_caller]
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        InternalError::new(message.into()).into()
    }

    /// [`ArgumentError::InvalidArgument`]: argument `name` of `op` is `found`, not `expected`.
    ///
    /// ```
    /// let e = lodtensor::Error::invalid_argument("split", "parts", 0, "at least 1");
    /// assert_eq!(e.to_string(), "split: parts is 0, expected at least 1");
    /// ```
    pub fn invalid_argument(
        op: &'static str,
        name: &'static str,
        found: impl fmt::Display,
        expected: impl fmt::Display,
    ) -> Self {
        ArgumentError::InvalidArgument {
            op,
            name,
            found: elided(found),
            expected: expected.to_string(),
        }
        .into()
    }

    /// What went wrong.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{ArgumentError, ErrorKind};
    /// let err = Dataset::try_new(vec![Column::new("x", t)])?.column("y").unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::Argument(ArgumentError::NoSuchColumn(c)) if c == "y"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// What went wrong, without the context.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::ErrorKind;
    /// let err = Dataset::try_new(vec![Column::new("x", t)])?.column("y").unwrap_err();
    /// assert!(matches!(err.into_kind(), ErrorKind::Argument(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_kind(self) -> ErrorKind {
        self.inner.kind
    }

    /// The file the error happened in, if known.
    ///
    /// # Example
    /// ```
    /// let err = lodtensor::MappedDataset::open("no/such/file.arrow").unwrap_err();
    /// assert_eq!(err.path(), Some(std::path::Path::new("no/such/file.arrow")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The column and record batch the error happened in, if known.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DataError, Error};
    /// let err = Error::new(DataError::EmptyLevel { level: 1 }).in_column("tokens", 3);
    /// assert_eq!(err.column(), Some(("tokens", 3)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn column(&self) -> Option<(&str, usize)> {
        self.inner.column.as_ref().map(|(c, b)| (c.as_str(), *b))
    }

    /// Attaches the column and record batch the error happened in; a column attached earlier
    /// (closer to the fault) is kept.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DataError, Error};
    /// let err = Error::new(DataError::EmptyLevel { level: 1 }).in_column("inner", 1).in_column("outer", 2);
    /// assert_eq!(err.column(), Some(("inner", 1)));            // the one closest to the fault
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_column(mut self, column: &str, batch: usize) -> Self {
        if self.inner.column.is_none() {
            self.inner.column = Some((column.to_owned(), batch));
        }
        self
    }

    /// Replaces the record batch of the attached column (a reader that counts batches across
    /// row groups knows the batch better than the decoder that named the column).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DataError, Error};
    /// let err = Error::new(DataError::EmptyLevel { level: 1 }).in_column("tokens", 0).with_batch(5);
    /// assert_eq!(err.column(), Some(("tokens", 5)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_batch(mut self, batch: usize) -> Self {
        if let Some((_, b)) = &mut self.inner.column {
            *b = batch;
        }
        self
    }

    /// Attaches the file the error happened in; a file attached earlier is kept.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DataError, Error};
    /// let err = Error::new(DataError::EmptyLevel { level: 1 }).in_file("a.arrow").in_file("b.arrow");
    /// assert_eq!(err.path(), Some(std::path::Path::new("a.arrow")));
    /// assert!(err.to_string().contains("a.arrow"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_file(mut self, path: impl Into<PathBuf>) -> Self {
        if self.inner.path.is_none() {
            self.inner.path = Some(path.into());
        }
        self
    }

    /// The error itself: context is attached once, so there is nothing to unwrap.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DataError, Error};
    /// let err = Error::new(DataError::EmptyLevel { level: 1 });
    /// #[allow(deprecated)]
    /// let root = err.root();
    /// assert!(std::ptr::eq(root, &err));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "context is attached once now: use `Error::kind`")]
    pub fn root(&self) -> &Error {
        self
    }
}

/// `f`'s result, or a panic in it as the error `wrap` makes of its message: for the places
/// where a dependency (the `parquet` crate on some malformed pages, Arrow's decoder and
/// validation on some malformed side columns) panics instead of returning an error.
pub(crate) fn catch_panic<T>(
    f: impl FnOnce() -> Result<T>,
    wrap: impl FnOnce(String) -> Error,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(wrap(what))
    })
}

/// At most 1,000 bytes: a longer message (a huge value echoed, a long
/// path) keeps its start and its end, the bytes between counted.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        let mut out = bounded::Bounded::new(&mut *f, bounded::MESSAGE_HEAD, bounded::MESSAGE_TAIL);
        if let Some(path) = &self.inner.path {
            write!(out, "{}: ", path.display())?;
        }
        if let Some((column, batch)) = &self.inner.column {
            write!(out, "column {column:?}, batch {batch}: ")?;
        }
        write!(out, "{}", self.inner.kind)?;
        out.finish()
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind);
        if let Some(path) = &self.inner.path {
            d.field("path", path);
        }
        if let Some(column) = &self.inner.column {
            d.field("column", column);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.inner.kind)
    }
}

macro_rules! from_kind {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl From<$t> for ErrorKind {
            fn from(e: $t) -> Self {
                ErrorKind::$v(e)
            }
        }
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::new(ErrorKind::$v(e))
            }
        }
    )*};
}

from_kind! {
    DataError => Data,
    FormatError => Format,
    ArgumentError => Argument,
    UnsupportedError => Unsupported,
    UnusableError => Unusable,
    std::io::Error => Io,
    DatasetError => Dataset,
    InternalError => Internal,
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

#[cfg(test)]
mod tests;
