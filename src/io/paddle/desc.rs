//! The `TensorDesc` protobuf message (data type and dims), parsed with bounds and written,
//! and the dims checked against what can be held.

use super::dtype::item_size;
use crate::error::FormatError;
use crate::error::{Error, Result};
use crate::values::DType;

/// Parses a `TensorDesc` message: field 1 the data type, field 2 the dims.
///
/// `base` is the message's byte offset in the file, for error messages.
pub(super) fn parse_desc(msg: &[u8], record: usize, base: u64) -> Result<(i64, Vec<i64>)> {
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
pub(super) fn check_dims(
    dims: &[i64],
    dtype: DType,
    record: usize,
) -> Result<(usize, Vec<usize>, u64)> {
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

/// The `TensorDesc` message of a tensor of type `code` and dims `dims`: field 1 the
/// data type, field 2 each dim, unpacked, as Paddle writes it.
pub(super) fn encode_desc(code: i64, dims: &[usize]) -> Vec<u8> {
    let mut desc = vec![0x08];
    put_varint(&mut desc, code as u64);
    for &d in dims {
        desc.push(0x10);
        put_varint(&mut desc, d as u64);
    }
    desc
}

/// Appends `value` as a base-128 varint.
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}
