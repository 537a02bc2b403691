//! The interop tests, one binary: files checked by pyarrow through Python
//! (`LODTENSOR_PYTHON`, else the project's `.venv`) and files pyarrow wrote. A test that
//! needs Python skips without one, unless `LODTENSOR_REQUIRE_PYTHON=1` (set by
//! `scripts/test`), where it fails.

#[path = "../common/mod.rs"]
mod common;

mod interop;
mod parquet_pyarrow;
mod python_example;
mod python_required;
mod side_columns_pyarrow;
