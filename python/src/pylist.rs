//! A side column's rows as one Python list, built in Rust (`Batch._side_list`): what
//! `pyarrow.Array.to_pylist` gives, without the trip through the C data interface and
//! pyarrow's per-value objects, for the kinds a side column usually holds (strings, numbers,
//! booleans and lists of them). Any other kind is left to pyarrow (`None`).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_schema::DataType;
use pyo3::prelude::*;
use pyo3::types::PyList;

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
