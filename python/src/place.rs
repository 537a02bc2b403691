//! Where a batch's arrays lie, for another process (`lodtensor._shm`): the places Rust
//! reports ([`lodtensor::loader::Place`]) as plain tuples, and the layout of a region of
//! shared memory, defined once in the crate.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// `place` as a tuple: `("file", path, dev, ino, size, mtime_ns, offset)` for a mapped
/// file (its identity when the loader opened it), `("shm", pid, fd, ino, size, offset)`
/// for a region of shared memory (offsets from the region's first byte, its header).
pub fn place_tuple<'py>(
    py: Python<'py>,
    place: lodtensor::loader::Place<'_>,
) -> PyResult<Bound<'py, PyTuple>> {
    match place {
        lodtensor::loader::Place::File { file, offset } => {
            let id = file.identity();
            let path = file.path().to_string_lossy().into_owned();
            ("file", path, id.dev, id.ino, id.size, id.mtime_ns, offset).into_pyobject(py)
        }
        lodtensor::loader::Place::Shared { region, offset } => {
            let (pid, fd, ino, size) = (region.pid(), region.fd(), region.inode(), region.len());
            ("shm", pid, fd, ino, size, offset).into_pyobject(py)
        }
        _ => Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "a place this binding does not know",
        )),
    }
}

/// The size of a region of shared memory that holds `nbytes` after its header, rounded
/// up as the loader's regions are (reused by batches a little larger).
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn region_size(nbytes: usize) -> PyResult<usize> {
    Ok(lodtensor::loader::SharedMemory::region_size(nbytes))
}

/// Adds the region layout to the module: `REGION_HEADER` (the bytes before a region's
/// buffer: the lend flag, then padding), `LEND_FLAG` (the flag's offset) and `region_size`.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("REGION_HEADER", lodtensor::loader::SharedMemory::HEADER)?;
    m.add("LEND_FLAG", lodtensor::loader::SharedMemory::LEND_FLAG)?;
    m.add_function(wrap_pyfunction!(region_size, m)?)?;
    Ok(())
}
