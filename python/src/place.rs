//! Where a batch's arrays lie, for another process (`lodtensor._shm`): the places Rust
//! reports ([`lodtensor::loader::Place`]) as plain tuples, and the layout of a region of
//! shared memory, defined once in the crate.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::array::Array;

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

/// A process's pool of reused shared-memory regions (the crate's `RegionPool`, the
/// loader's): a DataLoader worker copies the arrays that lie nowhere another process can
/// map (a padded batch, what a collate function made) into one, lent to the main process.
#[pyclass(frozen, module = "lodtensor._native", name = "RegionPool")]
pub struct RegionPool {
    pool: Mutex<lodtensor::loader::RegionPool>,
    pid: u32,
}

/// A region [`RegionPool::take`] gave: `(pid, fd, ino, size, array)`.
type Taken<'py> = (u32, i32, u64, usize, Bound<'py, PyAny>);

#[lodtensor_python_guard::guard]
#[pymethods]
impl RegionPool {
    /// A pool keeping at most `slots` regions (`memfd`s named `lodtensor-batch`, apart
    /// from the loader's `lodtensor-gather`).
    #[new]
    fn new(slots: usize) -> Self {
        RegionPool {
            pool: Mutex::new(
                lodtensor::loader::RegionPool::new(slots).with_name(c"lodtensor-batch"),
            ),
            pid: std::process::id(),
        }
    }

    /// The process that made the pool (a forked child's pool makes regions of its own).
    #[getter]
    fn pid(&self) -> u32 {
        self.pid
    }

    /// A free region with at least `nbytes` after its header, marked lent (the process it
    /// is handed to clears the lend flag when done): `(pid, fd, ino, size, array)`, the
    /// array a writable `uint8` numpy array over the whole region (header included; the
    /// region stays busy while it lives). `None` when every region is busy or shared
    /// memory cannot be made.
    fn take<'py>(&self, py: Python<'py>, nbytes: usize) -> PyResult<Option<Taken<'py>>> {
        let taken = {
            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
            pool.take(nbytes)
        };
        let Some(region) = taken else {
            return Ok(None);
        };
        region.lend();
        let (pid, fd, ino, size) = (region.pid(), region.fd(), region.inode(), region.len());
        let address = region.as_mut_ptr();
        // The array holds the region (busy in the pool) while numpy holds the array; the
        // region was free (no holder, flag clear) when taken, so only this array writes it.
        let array = Array::writable_bytes(Arc::new(region), address, size).into_numpy(py)?;
        Ok(Some((pid, fd, ino, size, array)))
    }
}

/// Adds the region layout to the module: `REGION_HEADER` (the bytes before a region's
/// buffer: the lend flag, then padding), `LEND_FLAG` (the flag's offset), `region_size`
/// and `RegionPool`.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("REGION_HEADER", lodtensor::loader::SharedMemory::HEADER)?;
    m.add("LEND_FLAG", lodtensor::loader::SharedMemory::LEND_FLAG)?;
    m.add_function(wrap_pyfunction!(region_size, m)?)?;
    m.add_class::<RegionPool>()?;
    Ok(())
}
