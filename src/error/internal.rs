//! A bug of this crate, found where it broke.

use std::panic::Location;

/// A bug of this crate: an invariant the crate established broke, or a dependency failed on
/// data the crate built itself. Nothing the caller passed is at fault; report it.
///
/// # Example
/// ```
/// use lodtensor::{ErrorKind, InternalError};
/// fn report(kind: &ErrorKind) -> Option<String> {
///     match kind {
///         ErrorKind::Internal(InternalError { message, location, .. }) => {
///             Some(format!("please report: {message} ({}:{})", location.file(), location.line()))
///         }
///         _ => None,
///     }
/// }
/// # let _ = report;
/// ```
#[derive(Debug, thiserror::Error)]
#[error("internal error at {location}: {message} (a bug in lodtensor: please report it)")]
#[non_exhaustive]
pub struct InternalError {
    /// What broke.
    pub message: String,
    /// Where in this crate's source it was found.
    pub location: &'static Location<'static>,
}

impl InternalError {
    /// An internal error with `message`, located at the caller.
    #[track_caller]
    pub(crate) fn new(message: String) -> Self {
        InternalError {
            message,
            location: Location::caller(),
        }
    }
}
