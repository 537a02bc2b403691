//! Old names kept for one release: each call warns with `DeprecationWarning`, naming the
//! new one (CHANGELOG.md says how to migrate).

use std::ffi::CStr;

use pyo3::exceptions::PyDeprecationWarning;
use pyo3::prelude::*;

/// Warns that the caller used an old name; `message` names the new one.
pub fn warn(py: Python<'_>, message: &CStr) -> PyResult<()> {
    PyErr::warn(py, &py.get_type::<PyDeprecationWarning>(), message, 1)
}
