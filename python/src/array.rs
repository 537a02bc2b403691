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

/// The byte-order mark of numpy type strings on this machine.
const ORDER: char = if cfg!(target_endian = "little") {
    '<'
} else {
    '>'
};

/// A buffer for numpy: owner, address, shape and item type. Pass it to `numpy.asarray`.
#[pyclass(frozen, module = "lodtensor", name = "_Array")]
pub struct Array {
    /// Whatever keeps the memory at `address` alive (a mapping, a batch, a `Vec`).
    _owner: Arc<dyn Any + Send + Sync>,
    address: usize,
    shape: Vec<usize>,
    typestr: String,
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

#[pymethods]
impl Array {
    /// numpy's array interface (version 3) of the buffer.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("data", (self.address, !self.writable))?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", &self.typestr)?;
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

/// numpy's type string of `dtype` (booleans as numpy's one-byte `bool`).
fn typestr(dtype: DType) -> String {
    let code = match dtype {
        DType::Bool => return "|b1".to_owned(),
        DType::UInt8 => return "|u1".to_owned(),
        DType::Int8 => return "|i1".to_owned(),
        DType::Int16 => "i2",
        DType::Int32 => "i4",
        DType::Int64 => "i8",
        DType::UInt16 => "u2",
        DType::UInt32 => "u4",
        DType::UInt64 => "u8",
        DType::Float16 => "f2",
        DType::Float32 => "f4",
        DType::Float64 => "f8",
    };
    format!("{ORDER}{code}")
}

/// Elements `elements` of `values` as `[n, *element_shape]`: a read-only view kept alive by
/// `owner`, except for booleans, which Arrow packs in bits and numpy stores in bytes (copied).
pub fn values_array(
    owner: Arc<dyn Any + Send + Sync>,
    values: &Values,
    elements: Range<usize>,
) -> PyResult<Array> {
    let size = values.element_size();
    let shape: Vec<usize> = std::iter::once(elements.len())
        .chain(values.element_shape().iter().copied())
        .collect();
    let items = elements.start * size..elements.end * size;
    match values.dtype().byte_width() {
        Some(width) => {
            // `items` lies inside the values: the LoD that gave `elements` was validated
            // against them, so the address stays inside the buffer.
            let address = values.as_ptr().wrapping_add(items.start * width);
            Ok(Array::view(owner, address, shape, values.dtype()))
        }
        None => {
            let bits = values.booleans().py_err()?.values();
            let bytes: Vec<bool> = items.map(|i| bits.value(i)).collect();
            Ok(Array::owned(bytes, shape))
        }
    }
}

/// The offsets of level `level` of `lod` that its rows reach, as `i64` from 0: a view's inner
/// levels hold the offsets of the whole record batch, of which the rows use a run.
///
/// # Panics
/// When `level` is not a level of `lod` (callers check it).
pub fn rebased_offsets(lod: &lodtensor::Lod, level: usize) -> Vec<i64> {
    let rows = lod.num_rows().expect("a level exists");
    let entries = lod.descend(0, 0..rows, level);
    let offsets = &lod.levels()[level];
    let first = offsets.get(entries.start) as i64;
    (entries.start..=entries.end)
        .map(|i| offsets.get(i) as i64 - first)
        .collect()
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
        // of `Array::owned`, which nothing else reads, are writable.
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
