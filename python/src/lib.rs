//! The `lodtensor` Python package's native module: the mapped reader, the writer, the
//! sharded datasets and the loader of the `lodtensor` crate, handing data to numpy through
//! `__array_interface__` and to pyarrow through the Arrow C data and C stream interfaces,
//! without copying values.
//!
//! Everything Rust does here runs with the GIL released; every error becomes a Python
//! exception of its kind ([`error`]), and every entry point is `#[guard]`ed, so a Rust panic
//! becomes `lodtensor.InternalError`.

/// mimalloc, not the system's malloc: `lt.tokenize` spends much of its time allocating
/// (the `tokenizers` crate's pre-tokens), 26% less CPU with it (docs/performance.md).
/// Freed memory is kept a second for reuse (mimalloc's delay) but while a loader plans
/// (`lodtensor_cli::returning_freed_memory`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod array;
mod batch;
mod cli;
mod credentials;
mod dataset;
mod demo;
mod deprecated;
mod error;
mod ffi;
mod loader;
mod loader_options;
mod location;
mod mix;
mod numpy_api;
mod pack;
mod place;
mod pylist;
mod remote;
mod rows;
mod shard_writer;
mod shards;
mod tokenize;

use pyo3::prelude::*;

/// The native part of the `lodtensor` package (import `lodtensor`, not this module).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("LodTensorError", m.py().get_type::<error::LodTensorError>())?;
    for class in error::Class::ALL {
        m.add(class.name(), class.type_object(m.py()))?;
    }
    m.add_class::<array::Array>()?;
    m.add_class::<dataset::Dataset>()?;
    m.add_class::<loader::Loader>()?;
    m.add_class::<loader::EpochIterator>()?;
    m.add_class::<batch::Batch>()?;
    place::add(m)?;
    m.add_class::<mix::Mixture>()?;
    m.add_function(wrap_pyfunction!(mix::mix, m)?)?;
    m.add_class::<shards::ShardedDataset>()?;
    m.add_class::<shard_writer::ShardWriter>()?;
    m.add_function(wrap_pyfunction!(dataset::open, m)?)?;
    m.add_function(wrap_pyfunction!(ffi::write, m)?)?;
    m.add_function(wrap_pyfunction!(ffi::side_schema, m)?)?;
    m.add_function(wrap_pyfunction!(demo::demo_documents, m)?)?;
    m.add_function(wrap_pyfunction!(shards::open_shards, m)?)?;
    m.add_function(wrap_pyfunction!(location::open_location, m)?)?;
    m.add_function(wrap_pyfunction!(location::location, m)?)?;
    m.add_function(wrap_pyfunction!(credentials::reopen_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::read_manifest_url, m)?)?;
    m.add_function(wrap_pyfunction!(remote::pending_prefixes, m)?)?;
    m.add_function(wrap_pyfunction!(remote::discard_pending, m)?)?;
    m.add_function(wrap_pyfunction!(location::commit, m)?)?;
    m.add_function(wrap_pyfunction!(location::index, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize::tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pylist::utf8_list, m)?)?;
    // The loader options' signature, for the test that the stub's `LoaderOptions` matches it.
    m.add(
        "_loader_options",
        wrap_pyfunction!(loader_options::loader_options, m)?,
    )?;
    m.add_function(wrap_pyfunction!(error::_panic, m)?)?;
    m.add_function(wrap_pyfunction!(shard_writer::vacuum, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli, m)?)?;
    Ok(())
}
