//! numpy arrays made through numpy's C API (the `_ARRAY_API` function table), about five
//! times cheaper than numpy parsing an `__array_interface__` dict (0.3 µs against 1.5 µs
//! an array), which matters at one array per column per batch. Used when numpy's table
//! can be found; [`crate::array::Array`] falls back to `__array_interface__` otherwise.
//!
//! The table's layout is numpy's stable ABI, the same in numpy 1.x and 2.x for the entries
//! used here.

use std::ffi::{c_int, c_void};

use pyo3::ffi::{Py_intptr_t, PyObject, PyTypeObject};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCapsule;

/// Index of `PyArray_Type` in the table.
const ARRAY_TYPE: usize = 2;
/// Index of `PyArray_DescrFromType(int) -> PyArray_Descr*`.
const DESCR_FROM_TYPE: usize = 45;
/// Index of `PyArray_NewFromDescr(...)`.
const NEW_FROM_DESCR: usize = 94;
/// Index of `PyArray_SetBaseObject(PyArrayObject*, PyObject*) -> int`.
const SET_BASE_OBJECT: usize = 282;

/// numpy's most dimensions (`NPY_MAXDIMS` of numpy 2; numpy 1 refuses more than 32 itself).
const MAX_DIMS: usize = 64;

const NPY_ARRAY_C_CONTIGUOUS: c_int = 0x0001;
const NPY_ARRAY_ALIGNED: c_int = 0x0100;
const NPY_ARRAY_WRITEABLE: c_int = 0x0400;

type DescrFromType = unsafe extern "C" fn(c_int) -> *mut PyObject;
type NewFromDescr = unsafe extern "C" fn(
    *mut PyTypeObject,
    *mut PyObject,
    c_int,
    *const Py_intptr_t,
    *const Py_intptr_t,
    *mut c_void,
    c_int,
    *mut PyObject,
) -> *mut PyObject;
type SetBaseObject = unsafe extern "C" fn(*mut PyObject, *mut PyObject) -> c_int;

/// The address of numpy's function table (an address, so that it can live in a static).
struct Table(usize);

static TABLE: PyOnceLock<Option<Table>> = PyOnceLock::new();

fn table(py: Python<'_>) -> Option<*const *const c_void> {
    TABLE
        .get_or_init(py, || {
            let version: String = py
                .import("numpy")
                .ok()?
                .getattr("__version__")
                .ok()?
                .extract()
                .ok()?;
            let module = if version.starts_with('1') {
                "numpy.core.multiarray"
            } else {
                "numpy._core.multiarray"
            };
            let capsule = py
                .import(module)
                .ok()?
                .getattr("_ARRAY_API")
                .ok()?
                .cast_into::<PyCapsule>()
                .ok()?;
            let pointer = capsule.pointer_checked(None).ok()?;
            // The module holds the capsule, and the table lives as long as numpy is loaded
            // (never unloaded once imported).
            Some(Table(pointer.as_ptr() as usize))
        })
        .as_ref()
        .map(|t| t.0 as *const *const c_void)
}

/// A numpy array of `shape` over `address`, typed `typenum`, whose base is `base` (which
/// keeps the memory alive); `None` when numpy's table was not found.
///
/// # Safety
/// `address` must point to `product(shape)` items of type `typenum`, aligned, that stay
/// valid (and, when `writable`, may be written by the array's users) while `base` lives.
pub unsafe fn new_array<'py>(
    py: Python<'py>,
    base: Bound<'py, PyAny>,
    address: *mut c_void,
    shape: &[usize],
    typenum: c_int,
    writable: bool,
) -> Option<PyResult<Bound<'py, PyAny>>> {
    let table = table(py)?;
    let flags =
        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | if writable { NPY_ARRAY_WRITEABLE } else { 0 };
    // SAFETY: the table is numpy's; the caller vouches for the memory. SetBaseObject (numpy's
    // stable ABI) steals the reference to `base`, also on failure.
    unsafe {
        let array = match new_from_descr(py, table, shape, typenum, address, flags) {
            Ok(array) => array,
            Err(e) => return Some(Err(e)),
        };
        let set_base: SetBaseObject = std::mem::transmute(*table.add(SET_BASE_OBJECT));
        if set_base(array.as_ptr(), base.into_ptr()) != 0 {
            return Some(Err(PyErr::fetch(py)));
        }
        Some(Ok(array))
    }
}

/// A new writable C-contiguous numpy array of `n` items typed `typenum`, with memory numpy
/// allocated (uninitialised: fill it before handing the array out), and the address of its
/// items; `None` when numpy's table was not found.
pub fn empty(
    py: Python<'_>,
    n: usize,
    typenum: c_int,
) -> Option<PyResult<(Bound<'_, PyAny>, *mut c_void)>> {
    let table = table(py)?;
    // SAFETY: the table is numpy's; with a null data pointer numpy allocates the items.
    // The array object starts with numpy's `PyArrayObject_fields`, whose first field after
    // the object header is the data pointer (numpy's stable ABI).
    unsafe {
        let flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE;
        let made = new_from_descr(py, table, &[n], typenum, std::ptr::null_mut(), flags);
        Some(made.map(|array| {
            let data = (*array.as_ptr().cast::<ArrayFields>()).data;
            (array, data)
        }))
    }
}

/// The head of numpy's `PyArrayObject_fields`.
#[repr(C)]
struct ArrayFields {
    header: PyObject,
    data: *mut c_void,
}

/// `PyArray_NewFromDescr(&PyArray_Type, DescrFromType(typenum), shape, NULL strides,
/// address, flags, NULL)`.
///
/// # Safety
/// `table` is numpy's; `address` is null (numpy allocates) or as for [`new_array`].
unsafe fn new_from_descr<'py>(
    py: Python<'py>,
    table: *const *const c_void,
    shape: &[usize],
    typenum: c_int,
    address: *mut c_void,
    flags: c_int,
) -> PyResult<Bound<'py, PyAny>> {
    let mut dims = [0 as Py_intptr_t; MAX_DIMS];
    let Some(dims) = dims.get_mut(..shape.len()) else {
        let message = format!("{} dimensions: numpy takes at most {MAX_DIMS}", shape.len());
        return Err(pyo3::exceptions::PyValueError::new_err(message));
    };
    for (d, &s) in dims.iter_mut().zip(shape) {
        *d = s as Py_intptr_t;
    }
    // SAFETY: the table's entries at these indices have these signatures (numpy's stable
    // ABI). DescrFromType returns a new reference that NewFromDescr steals; NewFromDescr
    // returns a new reference or null with an exception set.
    unsafe {
        let array_type = *table.add(ARRAY_TYPE) as *mut PyTypeObject;
        let descr_from_type: DescrFromType = std::mem::transmute(*table.add(DESCR_FROM_TYPE));
        let new_from_descr: NewFromDescr = std::mem::transmute(*table.add(NEW_FROM_DESCR));
        let descr = descr_from_type(typenum);
        if descr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let array = new_from_descr(
            array_type,
            descr,
            dims.len() as c_int,
            dims.as_ptr(),
            std::ptr::null(),
            address,
            flags,
            std::ptr::null_mut(),
        );
        if array.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, array))
    }
}
