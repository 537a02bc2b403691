//! Rust errors as Python exceptions.

use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError,
    PyValueError,
};

create_exception!(
    lodtensor,
    LodTensorError,
    PyValueError,
    "A file, argument or loader state that lodtensor refuses; the message says what and where."
);

/// The exception for `e`: an I/O fault becomes the matching `OSError`
/// (a missing file is `FileNotFoundError`), anything else `LodTensorError`; both carry the
/// whole message (file, column, level, index).
pub fn to_py(e: lodtensor::Error) -> PyErr {
    let message = e.to_string();
    let lodtensor::ErrorKind::Io(io) = e.kind() else {
        return LodTensorError::new_err(message);
    };
    let args = (io.raw_os_error().unwrap_or(0), message);
    match io.kind() {
        std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
        std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
        std::io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(args),
        std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(args),
        _ => PyOSError::new_err(args),
    }
}

/// A `LodTensorError` with `message` (bad arguments found on the Python side of the call).
pub fn invalid(message: impl Into<String>) -> PyErr {
    LodTensorError::new_err(message.into())
}

/// `?` on the crate's results inside `#[pymethods]`.
pub trait IntoPy<T> {
    /// The value, or the error as a Python exception.
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for lodtensor::Result<T> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
