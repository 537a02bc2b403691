//! The `lodtensor` command inside the Python package (its console script): the CLI crate's
//! [`lodtensor_cli::run`] over the arguments.

use pyo3::prelude::*;

/// Runs the `lodtensor` command line `argv` (the program's name first), the GIL released;
/// returns its exit code (`lodtensor --help` lists them).
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| lodtensor_cli::run(argv))
}
