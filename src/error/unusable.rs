//! Objects unusable after an earlier failure: the caller drops them.

/// An object that can no longer be used after an earlier failure. The caller drops it.
///
/// # Example
/// ```
/// use lodtensor::{Error, ErrorKind, UnusableError};
/// let err = Error::new(UnusableError::PrefetchPanicked);
/// assert!(matches!(err.kind(), ErrorKind::Unusable(_)));
/// assert_eq!(err.to_string(), "the loader's prefetch thread panicked");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnusableError {
    /// A writer that failed to start and cannot be written to.
    #[error("the writer failed to start and cannot be used")]
    WriterBroken,

    /// The prefetch thread panicked.
    #[error("the loader's prefetch thread panicked")]
    PrefetchPanicked,

    /// A mapped file that another process changed in place since it was opened (its size
    /// or modification time differ): its views may fault, so it is read no more.
    #[error(
        "the file was changed in place since it was opened ({opened_len} bytes then, \
         {len} now): another process wrote it without taking the lock; open it again"
    )]
    FileChanged {
        /// The file's length when it was opened.
        opened_len: u64,
        /// Its length now.
        len: u64,
    },
}
