//! Rust errors as Python exceptions: one class per kind of what the caller does, each under
//! `LodTensorError` and also under the builtin a Python user would catch.
//!
//! ```text
//! LodTensorError(ValueError)
//! ├── InvalidFileError                         ErrorKind::Format
//! ├── InvalidDataError                         ErrorKind::Data
//! ├── ArgumentError(ValueError)                ErrorKind::Argument
//! │   ├── OutOfRangeError(IndexError)          a row, level, sequence or batch out of range
//! │   └── ColumnNotFoundError(KeyError)        a column the data does not have
//! ├── UnsupportedError                         ErrorKind::Unsupported
//! ├── UnusableError(RuntimeError)              ErrorKind::Unusable
//! ├── InternalError(RuntimeError)              ErrorKind::Internal, and any Rust panic
//! ├── DatasetExistsError(FileExistsError)      ErrorKind::Dataset: a dataset already there
//! └── DatasetNotFoundError(FileNotFoundError)  ErrorKind::Dataset: none where one is needed
//! ErrorKind::Io: the builtin OSError for the errno (FileNotFoundError, PermissionError, ...),
//!                MemoryError for OutOfMemory (counts too large to allocate)
//! ```

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use lodtensor::{ArgumentError, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyBaseException, PyFileExistsError, PyFileNotFoundError, PyIndexError, PyIsADirectoryError,
    PyKeyError, PyMemoryError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(
    lodtensor,
    LodTensorError,
    PyValueError,
    "A file, argument or loader state that lodtensor refuses; the message says what and where. \
     The base of lodtensor's exceptions (I/O faults are the builtin OSError subclasses)."
);

/// The classes under `LodTensorError`, in the order they are made (a parent first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A file that is not what its format says: damaged, truncated or foreign.
    InvalidFile,
    /// Data that breaks the rules of a LoD tensor or a dataset.
    InvalidData,
    /// A call the data or the operation does not allow.
    Argument,
    /// A row, level, sequence or batch index past the end.
    OutOfRange,
    /// A column name the data does not have.
    ColumnNotFound,
    /// A well-formed input lodtensor does not handle.
    Unsupported,
    /// An object unusable after an earlier failure.
    Unusable,
    /// A bug of lodtensor (or a Rust panic).
    Internal,
    /// A sharded dataset already where one is created.
    DatasetExists,
    /// No sharded dataset where one is appended to or opened.
    DatasetNotFound,
}

impl Class {
    /// Every class, parents first.
    pub const ALL: [Class; 10] = [
        Class::InvalidFile,
        Class::InvalidData,
        Class::Argument,
        Class::OutOfRange,
        Class::ColumnNotFound,
        Class::Unsupported,
        Class::Unusable,
        Class::Internal,
        Class::DatasetExists,
        Class::DatasetNotFound,
    ];

    /// The class's Python name.
    pub fn name(self) -> &'static str {
        match self {
            Class::InvalidFile => "InvalidFileError",
            Class::InvalidData => "InvalidDataError",
            Class::Argument => "ArgumentError",
            Class::OutOfRange => "OutOfRangeError",
            Class::ColumnNotFound => "ColumnNotFoundError",
            Class::Unsupported => "UnsupportedError",
            Class::Unusable => "UnusableError",
            Class::Internal => "InternalError",
            Class::DatasetExists => "DatasetExistsError",
            Class::DatasetNotFound => "DatasetNotFoundError",
        }
    }

    fn doc(self) -> &'static str {
        match self {
            Class::InvalidFile => {
                "A file (Arrow IPC, Parquet, Paddle, a sharded dataset's manifest or shard) that \
                 is not what its format says: damaged, truncated or foreign. Reject the file."
            }
            Class::InvalidData => {
                "Data that breaks the rules of a LoD tensor or a dataset (offsets, shapes, \
                 nulls, row counts). Fix the data."
            }
            Class::Argument => "A call the data or the operation does not allow. Fix the call.",
            Class::OutOfRange => "A row, level, sequence or batch index past the end.",
            Class::ColumnNotFound => "A column name the data does not have.",
            Class::Unsupported => {
                "A well-formed input lodtensor does not handle (a dtype, an Arrow type, a \
                 format version)."
            }
            Class::Unusable => "An object unusable after an earlier failure: drop it.",
            Class::Internal => {
                "A bug of lodtensor, not of the input (also any panic of its Rust code): \
                 please report the message."
            }
            Class::DatasetExists => {
                "A sharded dataset is already where one was to be created (also a \
                 FileExistsError): append to it, or choose another place."
            }
            Class::DatasetNotFound => {
                "No sharded dataset where one was to be appended to or opened (also a \
                 FileNotFoundError): create it, or check the path or prefix."
            }
        }
    }

    /// The bases: `LodTensorError` or a parent class, and the builtin a user would catch.
    fn bases<'py>(self, py: Python<'py>, made: &[Py<PyType>]) -> Vec<Bound<'py, PyType>> {
        let argument = || made[2].bind(py).clone();
        let base = || py.get_type::<LodTensorError>();
        match self {
            Class::InvalidFile | Class::InvalidData | Class::Unsupported => vec![base()],
            Class::Argument => vec![base(), py.get_type::<PyValueError>()],
            Class::OutOfRange => vec![argument(), py.get_type::<PyIndexError>()],
            Class::ColumnNotFound => vec![argument(), py.get_type::<PyKeyError>()],
            Class::Unusable | Class::Internal => vec![base(), py.get_type::<PyRuntimeError>()],
            Class::DatasetExists => vec![base(), py.get_type::<PyFileExistsError>()],
            Class::DatasetNotFound => vec![base(), py.get_type::<PyFileNotFoundError>()],
        }
    }

    /// The class's type object, made (with the others) on first use.
    pub fn type_object(self, py: Python<'_>) -> Bound<'_, PyType> {
        static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();
        let types = TYPES.get_or_init(py, || {
            let mut made = Vec::new();
            for class in Class::ALL {
                let made_one = class.make(py, &made).expect("an exception class is made");
                made.push(made_one);
            }
            made
        });
        let index = Class::ALL.iter().position(|c| *c == self).expect("a class");
        types[index].bind(py).clone()
    }

    /// `type(name, bases, {...})`.
    fn make(self, py: Python<'_>, made: &[Py<PyType>]) -> PyResult<Py<PyType>> {
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", "lodtensor")?;
        namespace.set_item("__doc__", self.doc())?;
        if self == Class::ColumnNotFound {
            // KeyError's str() is the repr of its key; the message reads better plain.
            let plain = py.get_type::<PyBaseException>().getattr("__str__")?;
            namespace.set_item("__str__", plain)?;
        }
        let bases = PyTuple::new(py, self.bases(py, made))?;
        let class = py
            .get_type::<PyType>()
            .call1((self.name(), bases, namespace))?;
        Ok(class.cast_into::<PyType>()?.unbind())
    }

    /// An exception of this class with `message`.
    pub fn err(self, message: impl Into<String>) -> PyErr {
        let message = message.into();
        Python::attach(|py| PyErr::from_type(self.type_object(py), (message,)))
    }
}

/// The exception for `e`: an I/O fault becomes the matching `OSError` with its errno
/// (a missing file is `FileNotFoundError`), anything else the class of its kind; each
/// carries the whole message (file, column, level, index).
pub fn to_py(e: lodtensor::Error) -> PyErr {
    let message = e.to_string();
    let class = match e.kind() {
        ErrorKind::Io(io) => return os_error(io, message),
        ErrorKind::Format(_) => Class::InvalidFile,
        ErrorKind::Data(_) => Class::InvalidData,
        ErrorKind::Argument(ArgumentError::NoSuchColumn(_)) => Class::ColumnNotFound,
        ErrorKind::Argument(
            ArgumentError::LevelOutOfBounds { .. }
            | ArgumentError::SequenceOutOfBounds { .. }
            | ArgumentError::RowsOutOfBounds { .. }
            | ArgumentError::BatchOutOfRange { .. },
        ) => Class::OutOfRange,
        ErrorKind::Argument(_) => Class::Argument,
        ErrorKind::Unsupported(_) => Class::Unsupported,
        ErrorKind::Unusable(_) => Class::Unusable,
        ErrorKind::Dataset(d) if d.is_present() => Class::DatasetExists,
        ErrorKind::Dataset(_) => Class::DatasetNotFound,
        _ => Class::Internal,
    };
    class.err(message)
}

/// The builtin `OSError` subclass of `io`'s kind, with `message` and the errno: the
/// system's, else the one of its kind (`ENOENT` for a missing object in a bucket); an
/// error of no errno (a store's, a network's) carries the message alone, not `[Errno 0]`.
fn os_error(io: &std::io::Error, message: String) -> PyErr {
    use std::io::ErrorKind as Kind;
    // ENOENT, EACCES, EEXIST and EISDIR: the same numbers on Linux and macOS.
    let errno = io.raw_os_error().or(match io.kind() {
        Kind::NotFound => Some(2),
        Kind::PermissionDenied => Some(13),
        Kind::AlreadyExists => Some(17),
        Kind::IsADirectory => Some(21),
        _ => None,
    });
    macro_rules! raise {
        ($class:ty) => {
            match errno {
                Some(errno) => <$class>::new_err((errno, message)),
                None => <$class>::new_err((message,)),
            }
        };
    }
    match io.kind() {
        Kind::NotFound => raise!(PyFileNotFoundError),
        Kind::PermissionDenied => raise!(PyPermissionError),
        Kind::AlreadyExists => raise!(PyFileExistsError),
        Kind::IsADirectory => raise!(PyIsADirectoryError),
        Kind::OutOfMemory => PyMemoryError::new_err(message),
        _ => raise!(PyOSError),
    }
}

/// An `ArgumentError` with `message` (bad arguments found on the Python side of the call).
pub fn invalid(message: impl Into<String>) -> PyErr {
    Class::Argument.err(message)
}

/// The size option `name` (a count of rows or bytes) given as `value`: an `int` from 0 to
/// 2^64 - 1 (0 is refused by the crate, naming the option). An `int` out of that range is
/// an `ArgumentError` naming the option (pyo3's conversion raises an `OverflowError` that
/// names none); another type a `TypeError` naming it.
pub fn size_option(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    use pyo3::exceptions::PyTypeError;
    use pyo3::types::{PyBool, PyInt};
    let Some(value) = value else {
        return Ok(None);
    };
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        let type_name = value.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {type_name}"
        )));
    }
    value
        .extract::<usize>()
        .map(Some)
        .map_err(|_| out_of_range(name, value))
}

/// An `ArgumentError`: option `name`'s `int` `value` is out of range (0 to 2^64 - 1); the
/// value shown cut to 40 characters.
pub fn out_of_range(name: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let text = value.to_string();
    let shown = match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}… ({} characters)", &text[..at], text.chars().count()),
        None => text,
    };
    invalid(format!(
        "{name}: {shown} is out of range (0 to {})",
        u64::MAX
    ))
}

/// `f`'s result, or a Rust panic in it as `InternalError`: a panic must not cross into
/// Python as pyo3's `PanicException`, a `BaseException` that `except Exception` misses.
/// Every entry point of the module runs through this ([`lodtensor_python_guard::guard`]).
pub fn guard<T, E: From<PyErr>>(f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| Err(panicked(panic).into()))
}

/// [`guard`] for an entry point that cannot fail otherwise.
pub fn guard_value<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(panicked)
}

/// The `InternalError` of a panic's payload.
fn panicked(panic: Box<dyn Any + Send>) -> PyErr {
    Class::Internal.err(panic_message(panic.as_ref()))
}

/// What a panic's payload says, as the message of an internal error.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned());
    format!("internal error: Rust code panicked: {what} (a bug in lodtensor: please report it)")
}

/// Panics with `message`: how the tests show that a panic reaches Python as
/// `InternalError` (`lodtensor._native._panic`, not part of the package's API).
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn _panic(message: String) {
    panic!("{message}");
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
