//! PaddlePaddle LoDTensor files: the records `paddle.base.core.save_dense_tensor` writes
//! (`.pdtensor`) and the files of several records `save_combine` writes (`.pdiparams`).
//!
//! Paddle reads these files without checking them. This module checks every field before
//! using it: both version fields, the level sizes against the bytes present, the LoD rules,
//! the `TensorDesc` message (parsed with bounds), the dims and their product against the
//! data present, and bool bytes. Nothing is allocated from a declared length before the
//! bytes it declares are known to be there. A truncated or corrupted file gives a typed
//! [`Error`](crate::Error), never a panic.
//!
//! One record, little-endian, with no padding:
//!
//! ```text
//! u32     LoDTensor version, 0
//! u64     number of LoD levels
//! per level, outermost first:
//!   u64   byte size of the level's offsets (8 per offset)
//!   u64…  the offsets, starting at 0
//! u32     tensor version, 0
//! i32     byte size of the TensorDesc protobuf message
//! bytes   TensorDesc: field 1 data_type (VarType.Type, varint),
//!                     field 2 dims (repeated int64, packed or not)
//! bytes   the items, row-major: product(dims) × item size
//! ```
//!
//! A `.pdiparams` file is such records back to back, without names: Paddle takes the names
//! from the model program (its persistable variables, sorted by name). Here the records are
//! named `tensor_0`, `tensor_1`, … unless names are given.
//!
//! Levels must start at 0, as Paddle's do. A level of a single offset (no sequences) is
//! read and written, though Paddle's `set_lod` refuses one; its loader takes it.
//!
//! A tensor of dims `[N, D1, D2, …]` is `N` elements of shape `[D1, D2, …]`; the last LoD
//! level indexes those `N` elements. A 0-D tensor (dims `[]`, one item) is read as a
//! 0-level tensor of one element of shape `[]`, which is written back with dims `[1]`.
//!
//! | Paddle `VarType.Type` | code | [`DType`](crate::DType) |
//! | --- | --- | --- |
//! | `BOOL` (one byte, 0 or 1) | 0 | `Bool` |
//! | `INT16` | 1 | `Int16` |
//! | `INT32` | 2 | `Int32` |
//! | `INT64` | 3 | `Int64` |
//! | `FP16` | 4 | `Float16` |
//! | `FP32` | 5 | `Float32` |
//! | `FP64` | 6 | `Float64` |
//! | `UINT8` | 20 | `UInt8` |
//! | `INT8` | 21 | `Int8` |
//!
//! Every other code (`BF16` 22, `COMPLEX64` 23, `COMPLEX128` 24, `FP8_E4M3FN` 32,
//! `FP8_E5M2` 33, `UINT16` 36, `UINT32` 37, `UINT64` 38, …) is an [`UnsupportedError::PaddleDType`](crate::UnsupportedError::PaddleDType).
//! The unsigned 16-, 32- and 64-bit codes are refused because Paddle's Python API cannot
//! make tensors of them (it stores numpy `uint16` as `BF16`), so no file of them could be
//! checked; writing `UInt16`, `UInt32` or `UInt64` values is an [`UnsupportedError::NoPaddleDType`](crate::UnsupportedError::NoPaddleDType).
//!
//! # Example
//! ```
//! use lodtensor::LodTensor;
//! use lodtensor::io::paddle;
//! use arrow_array::types::Float32Type;
//! let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0], vec![2])?;
//! let mut bytes = Vec::new();
//! paddle::write_tensor(&mut bytes, &t)?;
//! assert_eq!(paddle::read_tensor(&bytes)?, t);
//! # Ok::<(), lodtensor::Error>(())
//! ```
//!
//! The module's parts: `dtype` (the table of Paddle's type codes and the item bytes),
//! `record` (the framing of a record: versions, LoD levels, sizes), `desc` (the `TensorDesc`
//! message and the dims), `reader` and `writer` (whole records and files; files are written
//! atomically).

mod desc;
mod dtype;
mod reader;
mod record;
mod writer;

#[cfg(test)]
mod tests;

pub use dtype::paddle_code;
pub use reader::{read_combined, read_combined_file, read_records, read_tensor, read_tensor_file};
pub use writer::{to_bytes, write_combined, write_combined_file, write_tensor, write_tensor_file};

/// The LoDTensor version this module reads and writes.
pub const LOD_TENSOR_VERSION: u32 = 0;

/// The tensor version this module reads and writes.
pub const TENSOR_VERSION: u32 = 0;
