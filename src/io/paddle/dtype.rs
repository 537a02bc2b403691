//! The table of Paddle's `VarType.Type` codes, and the items of a record as bytes.

use std::io::Write;
use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type,
};
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, ScalarBuffer};

use crate::error::Result;
use crate::error::{FormatError, UnsupportedError};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// Paddle's `VarType.Type` code of a dtype, `None` when Paddle files cannot hold it.
///
/// # Example
/// ```
/// use lodtensor::DType;
/// use lodtensor::io::paddle::paddle_code;
/// assert_eq!(paddle_code(DType::Float32), Some(5));
/// assert_eq!(paddle_code(DType::UInt32), None);
/// ```
pub fn paddle_code(dtype: DType) -> Option<i64> {
    match dtype {
        DType::Bool => Some(0),
        DType::Int16 => Some(1),
        DType::Int32 => Some(2),
        DType::Int64 => Some(3),
        DType::Float16 => Some(4),
        DType::Float32 => Some(5),
        DType::Float64 => Some(6),
        DType::UInt8 => Some(20),
        DType::Int8 => Some(21),
        DType::UInt16 | DType::UInt32 | DType::UInt64 => None,
    }
}

/// The dtype of a Paddle `VarType.Type` code, or Paddle's name of a code that has none.
pub(super) fn dtype_of_code(code: i64) -> std::result::Result<DType, &'static str> {
    Ok(match code {
        0 => DType::Bool,
        1 => DType::Int16,
        2 => DType::Int32,
        3 => DType::Int64,
        4 => DType::Float16,
        5 => DType::Float32,
        6 => DType::Float64,
        20 => DType::UInt8,
        21 => DType::Int8,
        19 => return Err("SIZE_T"),
        22 => return Err("BF16"),
        23 => return Err("COMPLEX64"),
        24 => return Err("COMPLEX128"),
        25 => return Err("STRING"),
        32 => return Err("FP8_E4M3FN"),
        33 => return Err("FP8_E5M2"),
        36 => return Err("UINT16"),
        37 => return Err("UINT32"),
        38 => return Err("UINT64"),
        _ => return Err("unknown"),
    })
}

/// Bytes per item in a Paddle file (bools take one byte).
pub(super) fn item_size(dtype: DType) -> usize {
    dtype.byte_width().unwrap_or(1)
}

/// Copies little-endian items into an aligned Arrow buffer.
fn primitive<T: ArrowPrimitiveType, const N: usize>(
    data: &[u8],
    from_le: fn([u8; N]) -> T::Native,
) -> ArrayRef {
    let items: Vec<T::Native> = data
        .chunks_exact(N)
        .map(|c| from_le(c.try_into().expect("chunks of N bytes")))
        .collect();
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(items), None))
}

/// The values of a record's data (whose size `check_dims` established).
pub(super) fn decode(
    dtype: DType,
    data: &[u8],
    element_shape: Vec<usize>,
    record: usize,
    offset: u64,
) -> Result<Values> {
    let items = match dtype {
        DType::Bool => {
            if let Some(i) = data.iter().position(|&b| b > 1) {
                return Err(FormatError::PaddleBool {
                    record,
                    offset: offset + i as u64,
                    value: data[i],
                }
                .into());
            }
            let bits = BooleanBuffer::collect_bool(data.len(), |i| data[i] == 1);
            Arc::new(BooleanArray::new(bits, None)) as ArrayRef
        }
        DType::UInt8 => primitive::<UInt8Type, 1>(data, u8::from_le_bytes),
        DType::Int8 => primitive::<Int8Type, 1>(data, i8::from_le_bytes),
        DType::Int16 => primitive::<Int16Type, 2>(data, i16::from_le_bytes),
        DType::Int32 => primitive::<Int32Type, 4>(data, i32::from_le_bytes),
        DType::Int64 => primitive::<Int64Type, 8>(data, i64::from_le_bytes),
        DType::Float16 => primitive::<Float16Type, 2>(data, half::f16::from_le_bytes),
        DType::Float32 => primitive::<Float32Type, 4>(data, f32::from_le_bytes),
        DType::Float64 => primitive::<Float64Type, 8>(data, f64::from_le_bytes),
        DType::UInt16 | DType::UInt32 | DType::UInt64 => {
            unreachable!("dtype_of_code never gives {dtype}")
        }
    };
    Values::try_new(items, element_shape)
}

/// Items converted per write call.
const CHUNK: usize = 8192;

fn write_primitive<T: ArrowPrimitiveType, const N: usize, W: Write + ?Sized>(
    writer: &mut W,
    tensor: &LodTensor,
    to_le: fn(T::Native) -> [u8; N],
) -> Result<()> {
    let items = tensor.typed_values::<T>()?;
    let mut buf = Vec::with_capacity(items.len().min(CHUNK) * N);
    for chunk in items.chunks(CHUNK) {
        buf.clear();
        for &v in chunk {
            buf.extend_from_slice(&to_le(v));
        }
        writer.write_all(&buf)?;
    }
    Ok(())
}

/// The items of the elements in view, as Paddle stores them.
pub(super) fn write_items<W: Write + ?Sized>(writer: &mut W, tensor: &LodTensor) -> Result<()> {
    match tensor.dtype() {
        DType::Bool => {
            let size = tensor.values().element_size();
            let elements = tensor.elements();
            let bools = tensor
                .values()
                .booleans()?
                .values()
                .slice(elements.start * size, elements.len() * size);
            let bytes: Vec<u8> = bools.iter().map(u8::from).collect();
            writer.write_all(&bytes)?;
            Ok(())
        }
        DType::UInt8 => write_primitive::<UInt8Type, 1, W>(writer, tensor, u8::to_le_bytes),
        DType::Int8 => write_primitive::<Int8Type, 1, W>(writer, tensor, i8::to_le_bytes),
        DType::Int16 => write_primitive::<Int16Type, 2, W>(writer, tensor, i16::to_le_bytes),
        DType::Int32 => write_primitive::<Int32Type, 4, W>(writer, tensor, i32::to_le_bytes),
        DType::Int64 => write_primitive::<Int64Type, 8, W>(writer, tensor, i64::to_le_bytes),
        DType::Float16 => {
            write_primitive::<Float16Type, 2, W>(writer, tensor, half::f16::to_le_bytes)
        }
        DType::Float32 => write_primitive::<Float32Type, 4, W>(writer, tensor, f32::to_le_bytes),
        DType::Float64 => write_primitive::<Float64Type, 8, W>(writer, tensor, f64::to_le_bytes),
        DType::UInt16 | DType::UInt32 | DType::UInt64 => Err(UnsupportedError::NoPaddleDType {
            dtype: tensor.dtype(),
        }
        .into()),
    }
}
