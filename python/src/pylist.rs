//! A side column's rows as one Python list, built in Rust (`Batch._side_list`): what
//! `pyarrow.Array.to_pylist` gives, without the trip through the C data interface and
//! pyarrow's per-value objects, for the kinds a side column usually holds (strings, numbers,
//! booleans and lists of them). Any other kind is left to pyarrow (`None`). A column of
//! strings crosses to another process as two buffers instead (`Batch._side_utf8`), made a
//! list there (`utf8_list`).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, GenericListArray, GenericStringArray, OffsetSizeTrait};
use arrow_schema::DataType;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::error::invalid;

/// The rows of `array` as a Python list (`flatten`: the rows of each row, a list array's
/// values in order, as one list); `None` when the rows are numbers or booleans (numpy's),
/// or a kind inside is not one this converts.
pub fn side_list<'py>(
    py: Python<'py>,
    array: &ArrayRef,
    flatten: bool,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let row_type = match (flatten, array.data_type()) {
        (false, row_type) => row_type,
        (true, DataType::List(field) | DataType::LargeList(field)) => field.data_type(),
        (true, _) => return Ok(None),
    };
    // Numbers and booleans go to numpy (`Batch.values`), not to a list.
    if row_type.is_primitive() || *row_type == DataType::Boolean || !convertible(row_type) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(array.len());
    if flatten {
        match array.data_type() {
            DataType::List(_) => flat(py, array.as_list::<i32>(), &mut out)?,
            DataType::LargeList(_) => flat(py, array.as_list::<i64>(), &mut out)?,
            _ => return Ok(None),
        }
    } else {
        for i in 0..array.len() {
            out.push(value(py, array.as_ref(), i)?);
        }
    }
    PyList::new(py, out).map(Some)
}

/// Each value of each row of `lists` (a null row adds none).
fn flat<'py, O: OffsetSizeTrait>(
    py: Python<'py>,
    lists: &arrow_array::GenericListArray<O>,
    out: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<()> {
    let values = lists.values();
    for row in 0..lists.len() {
        if lists.is_null(row) {
            continue;
        }
        let offsets = lists.value_offsets();
        let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
        for i in start..end {
            out.push(value(py, values.as_ref(), i)?);
        }
    }
    Ok(())
}

/// Whether every kind inside `data_type` is one [`value`] converts.
fn convertible(data_type: &DataType) -> bool {
    use DataType::*;
    match data_type {
        Utf8 | LargeUtf8 | Utf8View | Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16
        | UInt32 | UInt64 | Float32 | Float64 => true,
        List(field) | LargeList(field) => convertible(field.data_type()),
        _ => false,
    }
}

/// Row `i` of `array` (of a kind [`convertible`] accepts) as a Python object.
fn value<'py>(py: Python<'py>, array: &dyn Array, i: usize) -> PyResult<Bound<'py, PyAny>> {
    if array.is_null(i) {
        return Ok(py.None().into_bound(py));
    }
    macro_rules! number {
        ($t:ty) => {
            array
                .as_primitive::<$t>()
                .value(i)
                .into_pyobject(py)?
                .into_any()
        };
    }
    Ok(match array.data_type() {
        DataType::Utf8 => array
            .as_string::<i32>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Utf8View => array
            .as_string_view()
            .value(i)
            .into_pyobject(py)?
            .into_any(),
        DataType::Boolean => array
            .as_boolean()
            .value(i)
            .into_pyobject(py)?
            .to_owned()
            .into_any(),
        DataType::Int8 => number!(Int8Type),
        DataType::Int16 => number!(Int16Type),
        DataType::Int32 => number!(Int32Type),
        DataType::Int64 => number!(Int64Type),
        DataType::UInt8 => number!(UInt8Type),
        DataType::UInt16 => number!(UInt16Type),
        DataType::UInt32 => number!(UInt32Type),
        DataType::UInt64 => number!(UInt64Type),
        DataType::Float32 => number!(Float32Type),
        DataType::Float64 => number!(Float64Type),
        DataType::List(_) => list(py, &array.as_list::<i32>().value(i))?,
        DataType::LargeList(_) => list(py, &array.as_list::<i64>().value(i))?,
        other => {
            let e = format!("side column values of type {other}: not converted here");
            return Err(pyo3::exceptions::PyTypeError::new_err(e));
        }
    })
}

fn list<'py>(py: Python<'py>, values: &ArrayRef) -> PyResult<Bound<'py, PyAny>> {
    let items = (0..values.len())
        .map(|i| value(py, values.as_ref(), i))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any())
}

/// The rows of a side column of strings without nulls as two buffers, `(data, offsets)`:
/// the strings' UTF-8 bytes one after another and `n + 1` native `int64` offsets into them
/// (`flatten`: each row's strings in turn, as [`side_list`]). What crosses to another
/// process instead of `n` Python strings ([`utf8_list`] makes them there); `None` for
/// another kind, or with a null.
pub fn side_utf8<'py>(
    py: Python<'py>,
    array: &ArrayRef,
    flatten: bool,
) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let strings = match (flatten, array.data_type()) {
        (false, _) => Some(array.clone()),
        (true, DataType::List(_)) => flat_values(array.as_list::<i32>()),
        (true, DataType::LargeList(_)) => flat_values(array.as_list::<i64>()),
        (true, _) => None,
    };
    let Some(strings) = strings.filter(|s| s.null_count() == 0) else {
        return Ok(None);
    };
    match strings.data_type() {
        DataType::Utf8 => buffers(py, strings.as_string::<i32>()).map(Some),
        DataType::LargeUtf8 => buffers(py, strings.as_string::<i64>()).map(Some),
        _ => Ok(None),
    }
}

/// The values the rows of `lists` reach, in order; `None` with a null row.
fn flat_values<O: OffsetSizeTrait>(lists: &GenericListArray<O>) -> Option<ArrayRef> {
    if lists.null_count() != 0 {
        return None;
    }
    let offsets = lists.value_offsets();
    let (start, end) = (offsets[0].as_usize(), offsets[lists.len()].as_usize());
    Some(lists.values().slice(start, end - start))
}

/// `strings` as `(data, offsets)` ([`side_utf8`]), the offsets from 0.
fn buffers<'py, O: OffsetSizeTrait>(
    py: Python<'py>,
    strings: &GenericStringArray<O>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let offsets = strings.value_offsets();
    let first = offsets[0].as_usize();
    let last = offsets[offsets.len() - 1].as_usize();
    let data = PyBytes::new(py, &strings.value_data()[first..last]);
    let offsets = PyBytes::new_with(py, offsets.len() * 8, |out| {
        for (bytes, o) in out.chunks_exact_mut(8).zip(offsets) {
            bytes.copy_from_slice(&((o.as_usize() - first) as i64).to_ne_bytes());
        }
        Ok(())
    })?;
    Ok((data, offsets))
}

/// The strings `data` holds at `offsets` (`n + 1` native `int64`), as a list of `n`: what
/// [`side_utf8`] gave, made in the process it crossed to. An `ArgumentError` naming the
/// first offset out of order or beyond `data`, or the first string that is not UTF-8.
#[lodtensor_python_guard::guard]
#[pyfunction]
pub fn utf8_list<'py>(
    py: Python<'py>,
    data: &[u8],
    offsets: &[u8],
) -> PyResult<Bound<'py, PyList>> {
    if offsets.is_empty() || !offsets.len().is_multiple_of(8) {
        let e = format!(
            "utf8_list: {} bytes of offsets: not n + 1 int64",
            offsets.len()
        );
        return Err(invalid(e));
    }
    let offsets: Vec<i64> = (offsets.chunks_exact(8))
        .map(|b| i64::from_ne_bytes(b.try_into().expect("chunks of 8 bytes")))
        .collect();
    let mut out = Vec::with_capacity(offsets.len() - 1);
    for (i, w) in offsets.windows(2).enumerate() {
        let (start, end) = (usize::try_from(w[0]).ok(), usize::try_from(w[1]).ok());
        let Some(text) = start.zip(end).and_then(|(start, end)| data.get(start..end)) else {
            let (start, end, n) = (w[0], w[1], data.len());
            let e = format!("utf8_list: string {i}: offsets {start}..{end} outside 0..{n}");
            return Err(invalid(e));
        };
        let text = std::str::from_utf8(text)
            .map_err(|e| invalid(format!("utf8_list: string {i} is not UTF-8: {e}")))?;
        out.push(PyString::new(py, text));
    }
    PyList::new(py, out)
}
