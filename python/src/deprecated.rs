//! Old names kept for one release: each call warns with `DeprecationWarning`, naming the
//! new one (CHANGELOG.md says how to migrate).

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::PyDeprecationWarning;
use pyo3::prelude::*;

/// Warns that the caller used an old name; `message` names the new one.
pub fn warn(py: Python<'_>, message: &CStr) -> PyResult<()> {
    PyErr::warn(py, &py.get_type::<PyDeprecationWarning>(), message, 1)
}

/// [`warn`], on the first call with `warned` only: a deprecated method called in a loop
/// pays for the warning once per object.
pub fn warn_once(py: Python<'_>, warned: &AtomicBool, message: &CStr) -> PyResult<()> {
    if warned.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    warn(py, message)
}
