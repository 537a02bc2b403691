//! A sharded dataset that is, or is not, where the call assumed: the caller changes its
//! assumption (creates instead of appending, appends instead of creating, checks the
//! path), where retrying the same call would fail again.

/// A sharded dataset present where a call creates one, or absent where a call needs one.
/// Not an I/O fault: the store answered; the call's assumption about it was wrong.
///
/// # Example
/// ```
/// use lodtensor::{DatasetError, Error, ErrorKind};
/// let err = Error::new(DatasetError::AlreadyThere).in_file("docs/_lodtensor.json");
/// assert!(matches!(err.kind(), ErrorKind::Dataset(DatasetError::AlreadyThere)));
/// assert_eq!(
///     err.to_string(),
///     "docs/_lodtensor.json: a sharded dataset is already there: append to it instead"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// Creating a dataset where one already is.
    #[error("a sharded dataset is already there: append to it instead")]
    AlreadyThere,
    /// Another writer created a dataset where this one was creating it.
    #[error("another writer created a sharded dataset there meanwhile")]
    CreatedMeanwhile,
    /// Appending where there is no dataset.
    #[error("no sharded dataset to append to")]
    NothingToAppendTo,
    /// The dataset being appended to was removed (its manifest gone) meanwhile.
    #[error("the sharded dataset was removed while appending")]
    RemovedMeanwhile,
    /// A directory without a manifest (`_lodtensor.json`) where a sharded dataset was
    /// expected.
    #[error("a directory without _lodtensor.json, not a sharded dataset")]
    NotADataset,
    /// A URL prefix without a manifest where a sharded dataset was expected.
    #[error("no manifest: not a sharded lodtensor dataset (check the prefix)")]
    NoManifestAtUrl,
}

impl DatasetError {
    /// Whether the condition is a dataset being there (the others: one missing).
    ///
    /// ```
    /// use lodtensor::DatasetError;
    /// assert!(DatasetError::AlreadyThere.is_present());
    /// assert!(!DatasetError::NothingToAppendTo.is_present());
    /// ```
    pub fn is_present(&self) -> bool {
        matches!(
            self,
            DatasetError::AlreadyThere | DatasetError::CreatedMeanwhile
        )
    }
}
