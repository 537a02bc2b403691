//! PaddlePaddle LoDTensor files: the records `paddle.base.core.save_dense_tensor` writes
//! (`.pdtensor`) and the files of several records `save_combine` writes (`.pdiparams`).
//!
//! Paddle reads these files without checking them. This module checks every field before
//! using it: both version fields, the level sizes against the bytes present, the LoD rules,
//! the `TensorDesc` message (parsed with bounds), the dims and their product against the
//! data present, and bool bytes. Nothing is allocated from a declared length before the
//! bytes it declares are known to be there. A truncated or corrupted file gives a typed
//! [`Error`], never a panic.
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
//! | Paddle `VarType.Type` | code | [`DType`] |
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
//! `FP8_E5M2` 33, `UINT16` 36, `UINT32` 37, `UINT64` 38, …) is an [`UnsupportedError::PaddleDType`].
//! The unsigned 16-, 32- and 64-bit codes are refused because Paddle's Python API cannot
//! make tensors of them (it stores numpy `uint16` as `BF16`), so no file of them could be
//! checked; writing `UInt16`, `UInt32` or `UInt64` values is an [`UnsupportedError::NoPaddleDType`].
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

use crate::{ArgumentError, DataError, ErrorKind, FormatError, UnsupportedError};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type,
};
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, ScalarBuffer};

use crate::error::{Error, Result};
use crate::lod::{LevelOffsets, Lod};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// The LoDTensor version this module reads and writes.
pub const LOD_TENSOR_VERSION: u32 = 0;

/// The tensor version this module reads and writes.
pub const TENSOR_VERSION: u32 = 0;

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
fn dtype_of_code(code: i64) -> std::result::Result<DType, &'static str> {
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
fn item_size(dtype: DType) -> usize {
    dtype.byte_width().unwrap_or(1)
}

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

/// Reads a file of exactly one record (`save_dense_tensor`'s `.pdtensor`).
///
/// # Errors
/// Any fault of the record (see the module docs), naming record 0 and the byte offset;
/// [`FormatError::PaddleTrailingBytes`] when bytes follow the record.
///
/// # Example
/// ```
/// use lodtensor::io::paddle;
/// // int64 [1, 2, 3], no LoD, as Paddle writes it.
/// let mut bytes = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
/// bytes.extend([4, 0, 0, 0, 0x08, 3, 0x10, 3]);
/// for v in [1i64, 2, 3] { bytes.extend(v.to_le_bytes()); }
/// let t = paddle::read_tensor(&bytes)?;
/// assert_eq!(t.typed_values::<arrow_array::types::Int64Type>()?, &[1, 2, 3]);
/// assert!(paddle::read_tensor(&bytes[..30]).is_err());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn read_tensor(bytes: &[u8]) -> Result<LodTensor> {
    let mut reader = Reader::new(bytes);
    let tensor = reader.record(0)?;
    reader.finish()?;
    Ok(tensor)
}

/// Reads every record of `bytes`, in file order (an empty input has none).
///
/// # Errors
/// The first fault of any record, naming the record and the byte offset.
pub fn read_records(bytes: &[u8]) -> Result<Vec<LodTensor>> {
    let mut reader = Reader::new(bytes);
    let mut tensors = Vec::new();
    while !reader.at_end() {
        tensors.push(reader.record(tensors.len())?);
    }
    Ok(tensors)
}

/// Reads a combined file (`save_combine`'s `.pdiparams`) as named tensors.
///
/// The records are named by `names` in order, or `tensor_0`, `tensor_1`, … when `names` is
/// empty. The tensors may have different row counts; when they share one,
/// [`Dataset::try_new`](crate::Dataset::try_new) makes them a dataset.
///
/// # Errors
/// As [`read_records`]; [`ArgumentError::PaddleRecordCount`] when `names` is not empty and does not
/// name every record.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
/// use lodtensor::io::paddle;
/// use arrow_array::types::{Float32Type, Int64Type};
/// let tokens = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![4, 5, 6], vec![])?;
/// let label = LodTensor::try_new(Lod::default(), Values::from_vec::<Float32Type>(vec![0.5, 1.5], vec![])?)?;
/// let mut bytes = Vec::new();
/// paddle::write_combined(&mut bytes, [&tokens, &label])?;
/// let named = paddle::read_combined(&bytes, &[])?;
/// assert_eq!(named[1].0, "tensor_1");
/// let named = paddle::read_combined(&bytes, &["tokens", "label"])?;
/// let ds = Dataset::try_new(named.into_iter().map(|(n, t)| Column::new(n, t)).collect())?;
/// assert_eq!(ds.column("tokens")?, &tokens);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn read_combined(bytes: &[u8], names: &[&str]) -> Result<Vec<(String, LodTensor)>> {
    let tensors = read_records(bytes)?;
    name_records(tensors, names)
}

/// Reads a `.pdtensor` file of exactly one record.
///
/// # Errors
/// As [`read_tensor`], or an I/O error, with `path` attached ([`Error::path`]).
pub fn read_tensor_file(path: impl AsRef<Path>) -> Result<LodTensor> {
    let path = path.as_ref();
    fs::read(path)
        .map_err(Error::from)
        .and_then(|bytes| read_tensor(&bytes))
        .map_err(|e| e.in_file(path))
}

/// Reads a combined `.pdiparams` file as named tensors (see [`read_combined`]).
///
/// # Errors
/// As [`read_combined`], or an I/O error, with `path` attached ([`Error::path`]).
pub fn read_combined_file(
    path: impl AsRef<Path>,
    names: &[&str],
) -> Result<Vec<(String, LodTensor)>> {
    let path = path.as_ref();
    fs::read(path)
        .map_err(Error::from)
        .and_then(|bytes| read_combined(&bytes, names))
        .map_err(|e| e.in_file(path))
}

fn name_records(tensors: Vec<LodTensor>, names: &[&str]) -> Result<Vec<(String, LodTensor)>> {
    if !names.is_empty() && names.len() != tensors.len() {
        return Err(ArgumentError::PaddleRecordCount {
            found: tensors.len(),
            expected: names.len(),
        }
        .into());
    }
    Ok(tensors
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let name = names
                .get(i)
                .map_or_else(|| format!("tensor_{i}"), |n| (*n).to_owned());
            (name, t)
        })
        .collect())
}

/// A bounds-checked cursor over the bytes of a file.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    record: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            pos: 0,
            record: 0,
        }
    }

    fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn offset(&self) -> u64 {
        self.pos as u64
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, after checking they are there.
    fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let available = self.remaining();
        match usize::try_from(n) {
            Ok(n) if n <= available => {
                let taken = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                Ok(taken)
            }
            _ => Err(FormatError::PaddleTruncated {
                record: self.record,
                offset: self.offset(),
                what,
                needed: n,
                available: available as u64,
            }
            .into()),
        }
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let bytes = self.take(N as u64, what)?;
        Ok(bytes.try_into().expect("take returned N bytes"))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn i32(&mut self, what: &'static str) -> Result<i32> {
        self.array(what).map(i32::from_le_bytes)
    }

    fn version(&mut self, what: &'static str, expected: u32) -> Result<()> {
        let offset = self.offset();
        let found = self.u32(what)?;
        if found != expected {
            return Err(FormatError::PaddleVersion {
                record: self.record,
                offset,
                what,
                found,
                expected,
            }
            .into());
        }
        Ok(())
    }

    /// Fails when bytes are left.
    fn finish(&self) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(FormatError::PaddleTrailingBytes {
                offset: self.offset(),
                count: self.remaining() as u64,
            }
            .into())
        }
    }

    /// Reads record `record`, starting at the cursor.
    fn record(&mut self, record: usize) -> Result<LodTensor> {
        self.record = record;
        self.version("LoDTensor version", LOD_TENSOR_VERSION)?;
        let lod_offset = self.offset();
        let lod = self.lod()?;
        self.version("tensor version", TENSOR_VERSION)?;

        let size_offset = self.offset();
        let desc_size = self.i32("tensor desc size")?;
        let desc_size = u64::try_from(desc_size).map_err(|_| FormatError::PaddleDesc {
            record,
            offset: size_offset,
            reason: format!("the message size ({desc_size}) is negative"),
        })?;
        let desc_offset = self.offset();
        let desc = self.take(desc_size, "tensor desc")?;
        let (code, dims) = parse_desc(desc, record, desc_offset)?;
        let dtype = dtype_of_code(code).map_err(|name| UnsupportedError::PaddleDType {
            record,
            code,
            name,
        })?;
        let (elements, element_shape, data_size) = check_dims(&dims, dtype, record)?;

        let data_offset = self.offset();
        let data = self.take(data_size, "tensor data")?;
        let values =
            decode(dtype, data, element_shape, record, data_offset).map_err(|e| {
                match e.kind() {
                    ErrorKind::Format(FormatError::PaddleBool { .. }) => e,
                    _ => FormatError::PaddleDims {
                        record,
                        dims: dims.clone(),
                        reason: e.to_string(),
                    }
                    .into(),
                }
            })?;
        debug_assert_eq!(values.num_elements(), elements);
        LodTensor::try_new(lod, values).map_err(|e| {
            FormatError::PaddleLod {
                record,
                offset: lod_offset,
                source: Box::new(e),
            }
            .into()
        })
    }

    /// Reads the LoD levels.
    fn lod(&mut self) -> Result<Lod> {
        let record = self.record;
        let lod_offset = self.offset();
        let num_levels = self.u64("LoD level count")?;
        let mut levels = Vec::new();
        // Each level takes at least its 8-byte size, so the loop ends within the file.
        let mut level = 0usize;
        while (level as u64) < num_levels {
            let size_offset = self.offset();
            let size = self.u64("LoD level size")?;
            if size % 8 != 0 {
                return Err(FormatError::PaddleLevelSize {
                    record,
                    offset: size_offset,
                    level,
                    size,
                }
                .into());
            }
            let start = self.offset();
            let raw = self.take(size, "LoD level offsets")?;
            let lod_error = |source| {
                FormatError::PaddleLod {
                    record,
                    offset: lod_offset,
                    source: Box::new(source),
                }
                .into()
            };
            let offsets = raw
                .chunks_exact(8)
                .enumerate()
                .map(|(index, chunk)| {
                    let value = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
                    i64::try_from(value).map_err(|_| {
                        lod_error(
                            DataError::OffsetOverflow {
                                level,
                                index,
                                value: u128::from(value),
                                width: "i64",
                            }
                            .into(),
                        )
                    })
                })
                .collect::<Result<Vec<i64>>>()?;
            if let Some(&found) = offsets.first()
                && found != 0
            {
                return Err(FormatError::PaddleLodStart {
                    record,
                    offset: start,
                    level,
                    found,
                }
                .into());
            }
            levels.push(LevelOffsets::try_new_i64(level, offsets.into()).map_err(lod_error)?);
            level += 1;
        }
        Lod::try_new(levels).map_err(|source| {
            FormatError::PaddleLod {
                record,
                offset: lod_offset,
                source: Box::new(source),
            }
            .into()
        })
    }
}

/// Parses a `TensorDesc` message: field 1 the data type, field 2 the dims.
///
/// `base` is the message's byte offset in the file, for error messages.
fn parse_desc(msg: &[u8], record: usize, base: u64) -> Result<(i64, Vec<i64>)> {
    let mut p = Proto {
        msg,
        pos: 0,
        record,
        base,
    };
    let mut code = None;
    let mut dims = Vec::new();
    while p.pos < msg.len() {
        let key_at = p.pos;
        let key = p.varint()?;
        let (field, wire) = (key >> 3, key & 7);
        match (field, wire) {
            (0, _) => return Err(p.error(key_at, "field number 0".to_owned())),
            (1, 0) => code = Some(p.varint()? as i64),
            (2, 0) => dims.push(p.varint()? as i64),
            (2, 2) => {
                let packed = p.bytes()?;
                let mut inner = Proto {
                    msg: packed,
                    pos: 0,
                    record,
                    base: base + (p.pos - packed.len()) as u64,
                };
                while inner.pos < packed.len() {
                    dims.push(inner.varint()? as i64);
                }
            }
            (1 | 2, _) => {
                return Err(p.error(
                    key_at,
                    format!("field {field} has wire type {wire}, expected a varint"),
                ));
            }
            (_, 0) => {
                p.varint()?;
            }
            (_, 1) => {
                p.skip(8)?;
            }
            (_, 2) => {
                p.bytes()?;
            }
            (_, 5) => {
                p.skip(4)?;
            }
            (_, _) => {
                return Err(p.error(
                    key_at,
                    format!("field {field} has unsupported wire type {wire}"),
                ));
            }
        }
    }
    let code = code.ok_or_else(|| p.error(msg.len(), "no data_type (field 1)".to_owned()))?;
    Ok((code, dims))
}

/// A bounds-checked cursor over a protobuf message.
struct Proto<'a> {
    msg: &'a [u8],
    pos: usize,
    record: usize,
    base: u64,
}

impl<'a> Proto<'a> {
    fn error(&self, at: usize, reason: String) -> Error {
        FormatError::PaddleDesc {
            record: self.record,
            offset: self.base + at as u64,
            reason,
        }
        .into()
    }

    /// A base-128 varint of at most 10 bytes whose value fits 64 bits.
    fn varint(&mut self) -> Result<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.msg.get(self.pos) else {
                return Err(self.error(start, "varint runs past the end of the message".to_owned()));
            };
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(self.error(start, "varint overflows 64 bits".to_owned()));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error(start, "varint is longer than 10 bytes".to_owned()))
    }

    fn skip(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.msg.len() - self.pos {
            return Err(self.error(
                self.pos,
                format!(
                    "field of {n} bytes runs past the end of the message ({} bytes remain)",
                    self.msg.len() - self.pos
                ),
            ));
        }
        let bytes = &self.msg[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// A length-delimited field's bytes.
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let at = self.pos;
        let len = self.varint()?;
        let remaining = self.msg.len() - self.pos;
        match usize::try_from(len) {
            Ok(n) if n <= remaining => self.skip(n),
            _ => Err(self.error(
                at,
                format!("length {len} runs past the end of the message ({remaining} bytes remain)"),
            )),
        }
    }
}

/// Checks the dims; returns the number of elements, the element shape and the data size.
fn check_dims(dims: &[i64], dtype: DType, record: usize) -> Result<(usize, Vec<usize>, u64)> {
    let fault = |reason: String| {
        FormatError::PaddleDims {
            record,
            dims: dims.to_vec(),
            reason,
        }
        .into()
    };
    let mut sizes = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        let d = u64::try_from(d).map_err(|_| fault(format!("dimension {i} is negative")))?;
        sizes.push(d);
    }
    let mut data_size = item_size(dtype) as u64;
    for &d in &sizes {
        data_size = data_size
            .checked_mul(d)
            .ok_or_else(|| fault("the data size overflows 64 bits".to_owned()))?;
    }
    let to_usize = |d: u64| {
        usize::try_from(d).map_err(|_| fault("a dimension does not fit in usize".to_owned()))
    };
    let (elements, element_shape) = match sizes.split_first() {
        // A 0-D tensor: one scalar element.
        None => (1, Vec::new()),
        Some((&n, rest)) => {
            let shape = rest
                .iter()
                .map(|&d| to_usize(d))
                .collect::<Result<Vec<_>>>()?;
            if let Some(i) = shape.iter().position(|&d| d == 0) {
                return Err(fault(format!(
                    "dimension {} is 0; elements of no items cannot be held",
                    i + 1
                )));
            }
            (to_usize(n)?, shape)
        }
    };
    Ok((elements, element_shape, data_size))
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
fn decode(
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

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

/// Items converted per write call.
const CHUNK: usize = 8192;

/// Writes `tensor` as one record, as `save_dense_tensor` does.
///
/// The LoD is written from its lengths in view, so every level starts at 0 as Paddle
/// requires, and only the elements in view are written. A level of one offset (no
/// sequences) is written as it is: Paddle loads it, though its `set_lod` refuses one.
///
/// # Errors
/// [`UnsupportedError::NoPaddleDType`] for `UInt16`, `UInt32` and `UInt64` values (before writing
/// anything); [`ErrorKind::Io`] when writing fails.
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::io::paddle;
/// use arrow_array::types::Int64Type;
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![7, 8, 9], vec![])?;
/// let mut bytes = Vec::new();
/// paddle::write_tensor(&mut bytes, &t)?;
/// assert_eq!(&bytes[..12], &[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]); // version, 1 level
/// assert_eq!(paddle::read_tensor(&bytes)?, t);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn write_tensor<W: Write + ?Sized>(writer: &mut W, tensor: &LodTensor) -> Result<()> {
    let header = header(tensor)?;
    writer.write_all(&header)?;
    write_items(writer, tensor)?;
    Ok(())
}

/// Writes `tensors` as one combined file, records back to back, as `save_combine` does.
///
/// The file holds no names: Paddle gives the records the names of the model program's
/// persistable variables, sorted by name, so write them in that order.
///
/// # Errors
/// As [`write_tensor`]; every tensor's dtype is checked before anything is written.
///
/// # Example
/// The columns of a [`Dataset`](crate::Dataset), in order:
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::io::paddle;
/// use arrow_array::types::{Int32Type, Int64Type};
/// let ds = Dataset::try_new(vec![
///     Column::new("ids", LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![1, 2, 3], vec![])?),
///     Column::new("pos", LodTensor::from_lengths::<Int32Type>(&[vec![1, 1]], vec![0, 1, 2, 3], vec![2])?),
/// ])?;
/// let mut bytes = Vec::new();
/// paddle::write_combined(&mut bytes, ds.columns().iter().map(|c| c.tensor()))?;
/// let back = paddle::read_combined(&bytes, &["ids", "pos"])?;
/// assert_eq!(back[1], ("pos".to_owned(), ds.column("pos")?.clone()));
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn write_combined<'a, W: Write + ?Sized>(
    writer: &mut W,
    tensors: impl IntoIterator<Item = &'a LodTensor>,
) -> Result<()> {
    let tensors: Vec<&LodTensor> = tensors.into_iter().collect();
    for t in &tensors {
        if paddle_code(t.dtype()).is_none() {
            return Err(UnsupportedError::NoPaddleDType { dtype: t.dtype() }.into());
        }
    }
    for t in tensors {
        write_tensor(writer, t)?;
    }
    Ok(())
}

/// One record's bytes.
///
/// # Errors
/// As [`write_tensor`].
pub fn to_bytes(tensor: &LodTensor) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    write_tensor(&mut bytes, tensor)?;
    Ok(bytes)
}

/// Writes `tensor` to a `.pdtensor` file at `path`.
///
/// # Errors
/// As [`write_tensor`], with `path` attached ([`Error::path`]).
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::io::paddle;
/// use arrow_array::types::Float64Type;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("x.pdtensor");
/// let t = LodTensor::from_lengths::<Float64Type>(&[vec![1, 0, 2]], vec![0.5, 1.5, 2.5], vec![])?;
/// paddle::write_tensor_file(&path, &t)?;
/// assert_eq!(paddle::read_tensor_file(&path)?, t);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn write_tensor_file(path: impl AsRef<Path>, tensor: &LodTensor) -> Result<()> {
    let path = path.as_ref();
    let write = || -> Result<()> {
        let header = header(tensor)?;
        let mut file = std::io::BufWriter::new(fs::File::create(path)?);
        file.write_all(&header)?;
        write_items(&mut file, tensor)?;
        file.flush()?;
        Ok(())
    };
    write().map_err(|e| e.in_file(path))
}

/// Writes `tensors` to a combined `.pdiparams` file at `path`.
///
/// # Errors
/// As [`write_combined`], with `path` attached ([`Error::path`]).
pub fn write_combined_file<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = &'a LodTensor>,
) -> Result<()> {
    let path = path.as_ref();
    let tensors: Vec<&LodTensor> = tensors.into_iter().collect();
    let write = || -> Result<()> {
        if let Some(t) = tensors.iter().find(|t| paddle_code(t.dtype()).is_none()) {
            return Err(UnsupportedError::NoPaddleDType { dtype: t.dtype() }.into());
        }
        let mut file = std::io::BufWriter::new(fs::File::create(path)?);
        write_combined(&mut file, tensors.iter().copied())?;
        file.flush()?;
        Ok(())
    };
    write().map_err(|e| e.in_file(path))
}

/// Everything of a record before its items.
fn header(tensor: &LodTensor) -> Result<Vec<u8>> {
    let code = paddle_code(tensor.dtype()).ok_or(UnsupportedError::NoPaddleDType {
        dtype: tensor.dtype(),
    })?;
    let mut out = Vec::new();
    out.extend(LOD_TENSOR_VERSION.to_le_bytes());
    out.extend((tensor.num_levels() as u64).to_le_bytes());
    for lengths in tensor.lod().lengths() {
        out.extend((((lengths.len() + 1) * 8) as u64).to_le_bytes());
        let mut offset = 0u64;
        out.extend(offset.to_le_bytes());
        for len in lengths {
            offset += len as u64;
            out.extend(offset.to_le_bytes());
        }
    }
    out.extend(TENSOR_VERSION.to_le_bytes());
    let mut desc = vec![0x08];
    put_varint(&mut desc, code as u64);
    for d in tensor.shape() {
        desc.push(0x10);
        put_varint(&mut desc, d as u64);
    }
    let desc_size = i32::try_from(desc.len()).expect("a desc of at most 10 bytes per dim");
    out.extend(desc_size.to_le_bytes());
    out.extend(desc);
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

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
fn write_items<W: Write + ?Sized>(writer: &mut W, tensor: &LodTensor) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArgumentError, DataError, Error, ErrorKind, FormatError, UnsupportedError};
    use arrow_array::types::{Float32Type, Int64Type};

    /// A record from its parts; `desc` is the raw TensorDesc message.
    fn record_raw(levels: &[&[u64]], desc: &[u8], data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(0u32.to_le_bytes());
        out.extend((levels.len() as u64).to_le_bytes());
        for level in levels {
            out.extend(((level.len() * 8) as u64).to_le_bytes());
            for o in *level {
                out.extend(o.to_le_bytes());
            }
        }
        out.extend(0u32.to_le_bytes());
        out.extend((desc.len() as i32).to_le_bytes());
        out.extend(desc);
        out.extend(data);
        out
    }

    fn desc(code: u64, dims: &[i64]) -> Vec<u8> {
        let mut d = vec![0x08];
        put_varint(&mut d, code);
        for &dim in dims {
            d.push(0x10);
            put_varint(&mut d, dim as u64);
        }
        d
    }

    /// float32 [3, 2] with LoD [[0, 2, 3]].
    fn good() -> Vec<u8> {
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        record_raw(&[&[0, 2, 3]], &desc(5, &[3, 2]), &data)
    }

    fn root(bytes: &[u8]) -> Error {
        read_tensor(bytes).unwrap_err()
    }

    #[test]
    fn reads_a_hand_built_record() {
        let t = read_tensor(&good()).unwrap();
        assert_eq!(t.lod().offsets(), vec![vec![0, 2, 3]]);
        assert_eq!(t.shape(), vec![3, 2]);
        assert_eq!(
            t.typed_values::<Float32Type>().unwrap(),
            &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
        assert_eq!(to_bytes(&t).unwrap(), good());
    }

    #[test]
    fn truncated() {
        let bytes = good();
        let e = root(&bytes[..bytes.len() - 1]);
        assert!(matches!(
            e.kind(),
            ErrorKind::Format(FormatError::PaddleTruncated {
                record: 0,
                what: "tensor data",
                needed: 24,
                available: 23,
                ..
            })
        ));
        assert!(matches!(
            root(&[]).kind(),
            ErrorKind::Format(FormatError::PaddleTruncated {
                offset: 0,
                what: "LoDTensor version",
                ..
            })
        ));
        // A level that declares more bytes than the file holds: no allocation, an error.
        let mut huge = Vec::new();
        huge.extend(0u32.to_le_bytes());
        huge.extend(1u64.to_le_bytes());
        huge.extend((u64::MAX - 7).to_le_bytes());
        assert!(matches!(
            root(&huge).kind(),
            ErrorKind::Format(FormatError::PaddleTruncated {
                offset: 20,
                what: "LoD level offsets",
                available: 0,
                ..
            })
        ));
        // So does a lod_level count far past the file.
        let mut many = huge[..4].to_vec();
        many.extend(u64::MAX.to_le_bytes());
        assert!(matches!(
            root(&many).kind(),
            ErrorKind::Format(FormatError::PaddleTruncated {
                what: "LoD level size",
                ..
            })
        ));
    }

    #[test]
    fn versions() {
        let mut bytes = good();
        bytes[0] = 1;
        let e = root(&bytes);
        assert_eq!(
            e.to_string(),
            "Paddle record 0: LoDTensor version at byte 0 is 1, expected 0"
        );
        let mut bytes = good();
        bytes[44] = 7; // after 4 + 8 + 8 + 24 bytes
        assert!(matches!(
            root(&bytes).kind(),
            ErrorKind::Format(FormatError::PaddleVersion {
                offset: 44,
                what: "tensor version",
                found: 7,
                expected: 0,
                ..
            })
        ));
    }

    #[test]
    fn level_size_not_multiple_of_8() {
        let mut bytes = good();
        bytes[12] = 23;
        assert!(matches!(
            root(&bytes).kind(),
            ErrorKind::Format(FormatError::PaddleLevelSize {
                offset: 12,
                level: 0,
                size: 23,
                ..
            })
        ));
    }

    #[test]
    fn lod_rules() {
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let lod_root = |levels: &[&[u64]], dims: &[i64], data: &[u8]| match root(&record_raw(
            levels,
            &desc(5, dims),
            data,
        ))
        .into_kind()
        {
            ErrorKind::Format(FormatError::PaddleLod {
                record: 0,
                offset: 4,
                source,
            }) => *source,
            other => panic!("not a LoD error: {other}"),
        };
        assert!(matches!(
            lod_root(&[&[0, 2, 1]], &[3, 2], &data).kind(),
            ErrorKind::Data(DataError::DecreasingOffset {
                level: 0,
                index: 2,
                ..
            })
        ));
        assert!(matches!(
            lod_root(&[&[0, 2, 4]], &[3, 2], &data).kind(),
            ErrorKind::Data(DataError::ElementCountMismatch {
                last_offset: 4,
                elements: 3,
                ..
            })
        ));
        assert!(matches!(
            lod_root(&[&[0, 3], &[0, 1, 3]], &[3, 2], &data).kind(),
            ErrorKind::Data(DataError::LevelEndMismatch {
                level: 0,
                last_offset: 3,
                sequences: 2
            })
        ));
        assert!(matches!(
            lod_root(&[&[]], &[3, 2], &data).kind(),
            ErrorKind::Data(DataError::EmptyLevel { level: 0 })
        ));
        assert!(matches!(
            lod_root(&[&[0, 1 << 63]], &[3, 2], &data).kind(),
            ErrorKind::Data(DataError::OffsetOverflow {
                level: 0,
                index: 1,
                width: "i64",
                ..
            })
        ));
        assert!(matches!(
            root(&record_raw(&[&[0, 1], &[1, 3]], &desc(5, &[3, 2]), &data)).kind(),
            ErrorKind::Format(FormatError::PaddleLodStart {
                offset: 44,
                level: 1,
                found: 1,
                ..
            })
        ));
    }

    #[test]
    fn desc_faults() {
        let with_desc = |d: &[u8]| root(&record_raw(&[], d, &[]));
        let reason = |e: Error| match e.into_kind() {
            ErrorKind::Format(FormatError::PaddleDesc { reason, .. }) => reason,
            other => panic!("not a desc error: {other}"),
        };
        let mut negative = record_raw(&[], &[], &[]);
        negative[16..20].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(reason(root(&negative)).contains("negative"));
        assert!(reason(with_desc(&[0x08])).contains("past the end"));
        assert!(
            reason(with_desc(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02
            ]))
            .contains("overflows")
        );
        assert!(
            reason(with_desc(&[
                0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00
            ]))
            .contains("overflows")
        );
        assert!(reason(with_desc(&[0x0a, 0x00])).contains("wire type 2"));
        assert!(reason(with_desc(&[0x08, 0x05, 0x1b])).contains("unsupported wire type 3"));
        assert!(reason(with_desc(&[0x08, 0x05, 0x12, 0x05, 0x01])).contains("length 5"));
        assert!(reason(with_desc(&[0x10, 0x01])).contains("no data_type"));
        assert!(reason(with_desc(&[0x00])).contains("field number 0"));
        assert!(reason(with_desc(&[0x08, 0x05, 0x19, 0x01])).contains("runs past"));
        match with_desc(&[0x08]).into_kind() {
            // The message starts at byte 20; the varint at its byte 1.
            ErrorKind::Format(FormatError::PaddleDesc { offset, .. }) => assert_eq!(offset, 21),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn desc_unknown_fields_and_packed_dims() {
        // data_type, unknown fields of each wire type, then dims [3, 2] packed.
        let mut d = vec![0x08, 0x05];
        d.extend([0x18, 0x96, 0x01]); // field 3, varint
        d.extend([0x21, 1, 2, 3, 4, 5, 6, 7, 8]); // field 4, fixed64
        d.extend([0x2a, 0x02, 0xaa, 0xbb]); // field 5, bytes
        d.extend([0x35, 1, 2, 3, 4]); // field 6, fixed32
        d.extend([0x12, 0x02, 0x03, 0x02]); // field 2, packed
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let t = read_tensor(&record_raw(&[&[0, 2, 3]], &d, &data)).unwrap();
        assert_eq!(t, read_tensor(&good()).unwrap());
    }

    #[test]
    fn refused_dtypes() {
        assert!(matches!(
            root(&record_raw(&[], &desc(22, &[1]), &[0, 0])).kind(),
            ErrorKind::Unsupported(UnsupportedError::PaddleDType {
                code: 22,
                name: "BF16",
                ..
            })
        ));
        assert!(matches!(
            root(&record_raw(&[], &desc(99, &[1]), &[0])).kind(),
            ErrorKind::Unsupported(UnsupportedError::PaddleDType {
                name: "unknown",
                ..
            })
        ));
        let t = LodTensor::try_new(
            Lod::default(),
            Values::from_vec::<arrow_array::types::UInt32Type>(vec![1], vec![]).unwrap(),
        )
        .unwrap();
        let mut out = Vec::new();
        assert!(matches!(
            write_tensor(&mut out, &t).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(UnsupportedError::NoPaddleDType {
                dtype: DType::UInt32
            }))
        ));
        let ok = read_tensor(&good()).unwrap();
        assert!(matches!(
            write_combined(&mut out, [&ok, &t]).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(
                UnsupportedError::NoPaddleDType { .. }
            ))
        ));
        assert!(out.is_empty(), "nothing is written before the check");
    }

    #[test]
    fn dims_faults() {
        let dims_reason = |d: &[i64]| match root(&record_raw(&[], &desc(5, d), &[])).into_kind() {
            ErrorKind::Format(FormatError::PaddleDims { reason, dims, .. }) => {
                assert_eq!(dims, d);
                reason
            }
            other => panic!("not a dims error: {other}"),
        };
        assert!(dims_reason(&[2, -1]).contains("dimension 1 is negative"));
        assert!(dims_reason(&[1 << 40, 1 << 40]).contains("overflows"));
        assert!(dims_reason(&[0, 0]).contains("dimension 1 is 0"));
        // Element size past i32: refused by the values, named as a dims fault.
        assert!(
            read_tensor(&record_raw(&[], &desc(21, &[0, 1 << 20, 1 << 20]), &[])).is_err_and(
                |e| matches!(e.kind(), ErrorKind::Format(FormatError::PaddleDims { .. }))
            )
        );
    }

    #[test]
    fn bool_bytes() {
        let bytes = record_raw(&[], &desc(0, &[3]), &[1, 0, 2]);
        assert!(matches!(
            root(&bytes).kind(),
            ErrorKind::Format(FormatError::PaddleBool { value: 2, offset, .. }) if *offset == bytes.len() as u64 - 1
        ));
    }

    #[test]
    fn trailing_bytes_and_record_count() {
        let mut bytes = good();
        bytes.push(0);
        assert!(matches!(
            root(&bytes).kind(),
            ErrorKind::Format(FormatError::PaddleTrailingBytes { count: 1, .. })
        ));
        let mut two = good();
        two.extend(good());
        assert_eq!(read_records(&two).unwrap().len(), 2);
        assert!(matches!(
            read_combined(&two, &["only"]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::PaddleRecordCount {
                found: 2,
                expected: 1
            }))
        ));
        // A fault in the second record names it.
        let mut bad = good();
        bad.extend(&good()[..10]);
        assert!(matches!(
            read_records(&bad).map_err(Error::into_kind),
            Err(ErrorKind::Format(FormatError::PaddleTruncated { record: 1, offset, .. })) if offset == good().len() as u64 + 4
        ));
    }

    #[test]
    fn scalar_is_one_element() {
        let t = read_tensor(&record_raw(&[], &desc(5, &[]), &2.5f32.to_le_bytes())).unwrap();
        assert_eq!((t.shape(), t.num_levels()), (vec![1], 0));
        assert_eq!(t.typed_values::<Float32Type>().unwrap(), &[2.5]);
    }

    #[test]
    fn views_are_written_from_zero() {
        let t = LodTensor::from_lengths::<Int64Type>(
            &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
            (0..15).collect(),
            vec![1],
        )
        .unwrap();
        let view = t.slice_rows(1..3).unwrap();
        let back = read_tensor(&to_bytes(&view).unwrap()).unwrap();
        assert_eq!(back, view);
        assert_eq!(back.lod().offsets(), vec![vec![0, 1, 3], vec![0, 1, 3, 6]]);
        assert_eq!(
            back.typed_values::<Int64Type>().unwrap(),
            &[9, 10, 11, 12, 13, 14]
        );
        let flat = LodTensor::try_new(
            Lod::default(),
            Values::from_vec::<Int64Type>((0..6).collect(), vec![2]).unwrap(),
        )
        .unwrap()
        .slice_rows(1..2)
        .unwrap();
        assert_eq!(
            read_tensor(&to_bytes(&flat).unwrap())
                .unwrap()
                .typed_values::<Int64Type>()
                .unwrap(),
            &[2, 3]
        );
    }

    #[test]
    fn every_dtype_round_trips() {
        for dtype in DType::ALL {
            let Some(code) = paddle_code(dtype) else {
                continue;
            };
            let n = 4;
            let data: Vec<u8> = (0..n * item_size(dtype)).map(|i| (i % 2) as u8).collect();
            let bytes = record_raw(&[&[0, 1, 4]], &desc(code as u64, &[n as i64]), &data);
            let t = read_tensor(&bytes).unwrap();
            assert_eq!(t.dtype(), dtype);
            assert_eq!(to_bytes(&t).unwrap(), bytes, "{dtype}");
        }
    }

    #[test]
    fn bool_view_written_from_its_offset() {
        let t = LodTensor::try_new(
            Lod::default(),
            Values::try_new(
                Arc::new(BooleanArray::from(vec![
                    true, false, false, true, true, true,
                ])),
                vec![2],
            )
            .unwrap(),
        )
        .unwrap()
        .slice_rows(1..3)
        .unwrap();
        let bytes = to_bytes(&t).unwrap();
        assert_eq!(&bytes[bytes.len() - 4..], &[0, 1, 1, 1]);
        assert_eq!(read_tensor(&bytes).unwrap(), t);
    }
}
