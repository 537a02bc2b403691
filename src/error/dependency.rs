//! Arrow's and Parquet's errors, sorted into the kinds of what the caller does: the place
//! that calls a dependency says what a failure means there (decoding a file, or running on
//! data the crate built), and an I/O fault stays an I/O fault either way.

use std::fmt;

use arrow_schema::ArrowError;

use super::{Error, ErrorKind, FileFormat};

/// A dependency's error: Arrow's or Parquet's.
pub(crate) trait Dependency: fmt::Display + Sized {
    /// The I/O fault or the crate's own error it carries, or itself.
    fn unwrap_carried(self) -> Result<Error, Self>;

    /// What went wrong, without the dependency's own name for it (`Parquet error: `).
    fn reason(self) -> String;
}

/// `e` as the error it carries, if it carries one.
fn carried(
    e: Box<dyn std::error::Error + Send + Sync>,
) -> Result<Error, Box<dyn std::error::Error + Send + Sync>> {
    let e = match e.downcast::<std::io::Error>() {
        Ok(io) => return Ok(Error::from(*io)),
        Err(e) => e,
    };
    e.downcast::<Error>().map(|ours| *ours)
}

impl Dependency for ArrowError {
    fn unwrap_carried(self) -> Result<Error, Self> {
        match self {
            ArrowError::IoError(_, io) => Ok(io.into()),
            ArrowError::ExternalError(e) => carried(e).map_err(ArrowError::ExternalError),
            other => Err(other),
        }
    }

    fn reason(self) -> String {
        match self {
            ArrowError::ParquetError(what) => what,
            other => other.to_string(),
        }
    }
}

#[cfg(feature = "parquet")]
impl Dependency for parquet::errors::ParquetError {
    fn unwrap_carried(self) -> Result<Error, Self> {
        match self {
            parquet::errors::ParquetError::External(e) => {
                carried(e).map_err(parquet::errors::ParquetError::External)
            }
            other => Err(other),
        }
    }

    fn reason(self) -> String {
        match self {
            parquet::errors::ParquetError::General(what) => what,
            other => other.to_string(),
        }
    }
}

impl Error {
    /// What a dependency's failure while decoding a `format` file means: the file is
    /// invalid, or the I/O failed. For `map_err` where a dependency reads a file. An I/O
    /// error without an OS error code is the dependency's verdict on the bytes (a
    /// decompressor's `Unknown frame descriptor`, a short read), so the file is invalid.
    pub(crate) fn decoding<E: Dependency>(format: FileFormat) -> impl Fn(E) -> Error {
        move |e| match e.unwrap_carried() {
            Ok(carried) => match carried.kind() {
                ErrorKind::Io(io) if io.raw_os_error().is_none() => {
                    Error::invalid(format, io.to_string())
                }
                _ => carried,
            },
            Err(e) => Error::invalid(format, e.reason()),
        }
    }

    /// What a dependency's failure on data the crate built means: a bug of this crate
    /// (or an I/O fault), located at the caller.
    #[track_caller]
    pub(crate) fn unexpected<E: Dependency>(e: E) -> Error {
        match e.unwrap_carried() {
            Ok(carried) => carried,
            Err(e) => Error::internal(e.to_string()),
        }
    }
}

/// `?` on an Arrow result: an I/O fault is [`ErrorKind::Io`], an
/// error of this crate carried through Arrow ([`ArrowError::ExternalError`]) is itself, and
/// anything else [`ErrorKind::Internal`] located at the `?`:
/// the crate maps a failure that means something else (an invalid file, a bad argument)
/// where it calls Arrow.
///
/// # Example
/// ```
/// use lodtensor::{Error, ErrorKind};
/// use lodtensor::arrow::ArrowError;
/// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
/// assert!(matches!(Error::from(ArrowError::from(io)).kind(), ErrorKind::Io(_)));
/// let other = Error::from(ArrowError::ComputeError("overflow".into()));
/// assert!(matches!(other.kind(), ErrorKind::Internal(_)));
/// ```
impl From<ArrowError> for Error {
    #[track_caller]
    fn from(e: ArrowError) -> Self {
        Error::unexpected(e)
    }
}

/// `?` on a Parquet result, sorted as [`ArrowError`]s are: I/O stays I/O, anything else is
/// [`ErrorKind::Internal`] unless the crate says otherwise
/// where it calls Parquet.
#[cfg(feature = "parquet")]
impl From<parquet::errors::ParquetError> for Error {
    #[track_caller]
    fn from(e: parquet::errors::ParquetError) -> Self {
        Error::unexpected(e)
    }
}
