//! The framing of a record: versions, LoD levels, the descriptor's size, the data's size,
//! each field checked against the bytes present before it is read.

use super::desc::{check_dims, parse_desc};
use super::dtype::{decode, dtype_of_code};
use super::{LOD_TENSOR_VERSION, TENSOR_VERSION};
use crate::error::{DataError, ErrorKind, FormatError, UnsupportedError};
use crate::error::{Error, Result};
use crate::lod::{LevelOffsets, Lod, MAX_LEVELS};
use crate::tensor::LodTensor;

/// A bounds-checked cursor over the bytes of a file.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    record: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            pos: 0,
            record: 0,
        }
    }

    pub(super) fn at_end(&self) -> bool {
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
    pub(super) fn finish(&self) -> Result<()> {
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
    pub(super) fn record(&mut self, record: usize) -> Result<LodTensor> {
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
        let in_lod = |source: Error| -> Error {
            FormatError::PaddleLod {
                record,
                offset: lod_offset,
                source: Box::new(source),
            }
            .into()
        };
        if num_levels > MAX_LEVELS as u64 {
            return Err(in_lod(
                UnsupportedError::TooManyLevels {
                    op: "lodtensor reads",
                    found: usize::try_from(num_levels).unwrap_or(usize::MAX),
                    expected: MAX_LEVELS,
                }
                .into(),
            ));
        }
        // At most MAX_LEVELS, and each takes at least its 8-byte size: the loop ends
        // within the file.
        let levels = (0..MAX_LEVELS.min(num_levels as usize))
            .map(|level| self.level(level, &in_lod))
            .collect::<Result<Vec<_>>>()?;
        Lod::try_new(levels).map_err(in_lod)
    }

    /// Reads LoD level `level`: its size in bytes, then its offsets; `in_lod` says a
    /// fault of the offsets is one of the record's LoD.
    fn level(&mut self, level: usize, in_lod: &impl Fn(Error) -> Error) -> Result<LevelOffsets> {
        let record = self.record;
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
        let offsets = raw
            .chunks_exact(8)
            .enumerate()
            .map(|(index, chunk)| {
                let value = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
                i64::try_from(value).map_err(|_| {
                    in_lod(
                        DataError::OffsetOverflow {
                            level,
                            index,
                            value: u128::from(value),
                            width: "int64",
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
        LevelOffsets::try_new_i64(level, offsets.into()).map_err(in_lod)
    }
}
