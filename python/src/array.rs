//! numpy arrays over Rust memory: an [`Array`] describes a buffer through numpy's
//! `__array_interface__` and keeps the buffer's owner alive, so `numpy.asarray(array)` is a
//! view with no copy, valid for as long as numpy holds it (numpy keeps the `Array` as the
//! view's base).

use std::any::Any;
use std::ffi::c_int;
use std::ops::Range;
use std::sync::Arc;

use lodtensor::{DType, Values};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::error::IntoPy;
use crate::numpy_api;

/// A buffer for numpy: owner, address, shape and item type. Pass it to `numpy.asarray`.
#[pyclass(frozen, module = "lodtensor", name = "_Array")]
pub struct Array {
    /// Whatever keeps the memory at `address` alive (a mapping, a batch, a `Vec`).
    _owner: Arc<dyn Any + Send + Sync>,
    address: usize,
    shape: Vec<usize>,
    typestr: &'static str,
    /// numpy's type number of the items.
    typenum: c_int,
    writable: bool,
}

impl Array {
    /// A read-only view of memory that `owner` keeps alive.
    pub fn view(
        owner: Arc<dyn Any + Send + Sync>,
        address: *const u8,
        shape: Vec<usize>,
        dtype: DType,
    ) -> Self {
        Array {
            _owner: owner,
            address: address as usize,
            shape,
            typestr: typestr(dtype),
            typenum: typenum(dtype),
            writable: false,
        }
    }

    /// A writable array of `len` bytes at `address`, which `owner` keeps alive: memory the
    /// caller may write, such as a region of shared memory just taken from its pool.
    pub fn writable_bytes(owner: Arc<dyn Any + Send + Sync>, address: *mut u8, len: usize) -> Self {
        Array {
            _owner: owner,
            address: address as usize,
            shape: vec![len],
            typestr: typestr(DType::UInt8),
            typenum: typenum(DType::UInt8),
            writable: true,
        }
    }

    /// A writable array that owns `items` (moved, not copied).
    pub fn owned<T: Element>(items: Vec<T>, shape: Vec<usize>) -> Self {
        let address = items.as_ptr() as *const u8;
        Array {
            address: address as usize,
            _owner: Arc::new(items),
            shape,
            typestr: typestr(T::DTYPE),
            typenum: typenum(T::DTYPE),
            writable: true,
        }
    }
}

impl Array {
    /// The address and length of the bytes of an array of [`Array::writable_bytes`]
    /// (memory its holder may write); `None` for any other array.
    pub fn writable_range(&self) -> Option<(*mut u8, usize)> {
        let bytes = self.writable && self.typenum == typenum(DType::UInt8) && self.shape.len() == 1;
        bytes.then(|| (self.address as *mut u8, self.shape[0]))
    }
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl Array {
    /// numpy's array interface (version 3) of the buffer.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("data", (self.address, !self.writable))?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.typestr)?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}

/// Native item types an [`Array`] can own.
pub trait Element: Send + Sync + 'static {
    /// The item type.
    const DTYPE: DType;
}

impl Element for i64 {
    const DTYPE: DType = DType::Int64;
}

impl Element for i32 {
    const DTYPE: DType = DType::Int32;
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
}

/// numpy's type number of `dtype` (`NPY_BOOL`, `NPY_BYTE`, ...).
fn typenum(dtype: DType) -> c_int {
    // `long` is 64 bits except on Windows, where numpy's int64 is `long long`.
    let (i64_num, u64_num) = if cfg!(windows) { (9, 10) } else { (7, 8) };
    match dtype {
        DType::Bool => 0,
        DType::Int8 => 1,
        DType::UInt8 => 2,
        DType::Int16 => 3,
        DType::UInt16 => 4,
        DType::Int32 => 5,
        DType::UInt32 => 6,
        DType::Int64 => i64_num,
        DType::UInt64 => u64_num,
        DType::Float32 => 11,
        DType::Float64 => 12,
        DType::Float16 => 23,
    }
}

/// numpy's type string of `dtype` (booleans as numpy's one-byte `bool`), in this
/// machine's byte order.
fn typestr(dtype: DType) -> &'static str {
    let little = cfg!(target_endian = "little");
    let pick = |le: &'static str, be: &'static str| if little { le } else { be };
    match dtype {
        DType::Bool => "|b1",
        DType::UInt8 => "|u1",
        DType::Int8 => "|i1",
        DType::Int16 => pick("<i2", ">i2"),
        DType::Int32 => pick("<i4", ">i4"),
        DType::Int64 => pick("<i8", ">i8"),
        DType::UInt16 => pick("<u2", ">u2"),
        DType::UInt32 => pick("<u4", ">u4"),
        DType::UInt64 => pick("<u8", ">u8"),
        DType::Float16 => pick("<f2", ">f2"),
        DType::Float32 => pick("<f4", ">f4"),
        DType::Float64 => pick("<f8", ">f8"),
    }
}

/// Elements `elements` of `values` as `[n, *element_shape]`: a read-only view kept alive by
/// `owner`, except for booleans, which Arrow packs in bits and numpy stores in bytes (copied).
pub fn values_array(
    owner: Arc<dyn Any + Send + Sync>,
    values: &Values,
    elements: Range<usize>,
) -> PyResult<Array> {
    if let Some((address, shape)) = values_view(values, elements.clone()) {
        return Ok(Array::view(owner, address, shape, values.dtype()));
    }
    let size = values.element_size();
    let shape = values_shape(values, elements.len());
    let bits = values.booleans().py_err()?.values();
    let bytes: Vec<bool> = (elements.start * size..elements.end * size)
        .map(|i| bits.value(i))
        .collect();
    Ok(Array::owned(bytes, shape))
}

/// The address and shape `[n, *element_shape]` of elements `elements` of `values`; `None`
/// for booleans (bits, which numpy cannot view).
pub fn values_view(values: &Values, elements: Range<usize>) -> Option<(*const u8, Vec<usize>)> {
    let width = values.dtype().byte_width()?;
    // The elements lie inside the values: the LoD that gave them was validated against
    // them, so the address stays inside the buffer.
    let address = values
        .as_ptr()
        .wrapping_add(elements.start * values.element_size() * width);
    Some((address, values_shape(values, elements.len())))
}

fn values_shape(values: &Values, n: usize) -> Vec<usize> {
    std::iter::once(n)
        .chain(values.element_shape().iter().copied())
        .collect()
}

/// The numpy array of dtype `dtype` over `address`, `shape`, with `base` (a Python object
/// that keeps the memory alive) as its base, read-only; `None` when numpy's C API was not
/// found (then make an [`Array`]).
///
/// # Safety
/// As [`numpy_api::new_array`]: `address` holds `shape` aligned items of `dtype`, valid
/// while `base` lives.
pub unsafe fn view_numpy<'py>(
    base: &Bound<'py, PyAny>,
    address: *const u8,
    shape: &[usize],
    dtype: DType,
) -> Option<PyResult<Bound<'py, PyAny>>> {
    // SAFETY: the caller vouches for the memory and its owner.
    unsafe {
        numpy_api::new_array(
            base.py(),
            base.clone(),
            address as *mut _,
            shape,
            typenum(dtype),
            false,
        )
    }
}

/// A numpy `int64` array of `items`, allocated by numpy (no `Vec`, no owner object): for
/// small copies such as offsets.
pub fn i64_numpy<'py>(
    py: Python<'py>,
    items: impl ExactSizeIterator<Item = i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = items.len();
    match numpy_api::empty(py, n, typenum(DType::Int64)) {
        Some(made) => {
            let (array, data) = made?;
            // SAFETY: numpy allocated `n` aligned `int64` items at `data` for this new array,
            // which nothing else holds yet.
            let out = unsafe { std::slice::from_raw_parts_mut(data.cast::<i64>(), n) };
            for (slot, item) in out.iter_mut().zip(items) {
                *slot = item;
            }
            Ok(array)
        }
        None => Array::owned(items.collect(), vec![n]).into_numpy(py),
    }
}

/// The offsets of level `level` of `lod` that its rows reach, as `i64` from 0: a view's inner
/// levels hold the offsets of the whole record batch, of which the rows use a run.
///
/// # Panics
/// When `level` is not a level of `lod` (callers check it).
pub fn rebased_offsets(
    lod: &lodtensor::Lod,
    level: usize,
) -> impl ExactSizeIterator<Item = i64> + '_ {
    let rows = lod.num_rows().expect("a level exists");
    let entries = lod.descend(0, 0..rows, level);
    let offsets = &lod.levels()[level];
    let first = offsets.get(entries.start) as i64;
    (entries.start..entries.end + 1).map(move |i| offsets.get(i) as i64 - first)
}

/// `numpy.asarray`, looked up once.
static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl Array {
    /// The numpy array over this buffer (numpy keeps the `Array`, and so the owner, as its
    /// base).
    pub fn into_numpy(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        let (address, typenum, writable) = (self.address, self.typenum, self.writable);
        let shape = self.shape.clone();
        let base = Bound::new(py, self)?.into_any();
        // SAFETY: `address` holds `shape` items of the type (an Arrow buffer, whose items
        // are aligned, or a `Vec`), kept alive by the owner inside `base`; only the `Vec`s
        // of `Array::owned`, which nothing else reads, and the bytes of
        // `Array::writable_bytes`, which their caller may write, are writable.
        let made = unsafe {
            numpy_api::new_array(
                py,
                base.clone(),
                address as *mut _,
                &shape,
                typenum,
                writable,
            )
        };
        if let Some(array) = made {
            return array;
        }
        let asarray = ASARRAY.get_or_try_init(py, || {
            py.import("numpy")?.getattr("asarray").map(Bound::unbind)
        })?;
        asarray.bind(py).call1((base,))
    }

    /// The same items seen as `shape` (same number of items).
    pub fn reshape(&mut self, shape: Vec<usize>) {
        debug_assert_eq!(
            shape.iter().product::<usize>(),
            self.shape.iter().product::<usize>()
        );
        self.shape = shape;
    }
}
