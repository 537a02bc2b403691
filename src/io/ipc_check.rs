//! Checks one record batch of an IPC file against its schema before Arrow touches a buffer.
//!
//! Side columns (format-spec §2.2) and columns left out of a projection are only walked
//! past: their nodes counted and their buffers checked to lie in the body, 8-byte aligned,
//! so that Arrow's decoder (which validates side columns itself) never slices outside it.
//!
//! The walk follows the IPC layout — for each array, depth first, one field node, then its
//! buffers: validity, offsets (lists), data (primitives) — and checks that every node's
//! null count is 0, every buffer lies in the body, is 8-byte aligned, is a whole number of
//! its items and is long enough for its node, every fixed-size list's child is long enough,
//! and (unless trusted) every offset of every level is in order and within its child.
//! That is everything Arrow's decoder and array constructors rely on for the types a
//! lodtensor column may have, so Arrow's own (slower, panicking on some bad inputs, and
//! less specific) validation can be skipped, and errors name the column, level and index.
//!
//! References: "spec §N" is a section of `format-spec.md` (the format, normative); "Arrow
//! IPC" and "Arrow layout" are the Arrow columnar format's sections on the IPC record batch
//! message and on physical memory layout.

use crate::error::{DataError, ErrorKind, FileFormat, FormatError};
use std::mem::size_of;

use std::collections::VecDeque;

use arrow_buffer::{ArrowNativeType, Buffer, ScalarBuffer};
use arrow_ipc::{FieldNode, RecordBatch as BatchMessage};
use arrow_schema::{DataType, Schema};

use crate::error::{Error, Result};
use crate::lod::validate_offsets;

/// Checks the record batch message `message`, whose body is `body`, against `schema`:
/// fully the columns for which `tensors` says `true` (LoD tensor columns to be read), the
/// others walked past. Errors are wrapped with the column and `batch`.
///
/// With `offsets == false` (trusted files) the order and bounds of offsets are not read;
/// everything else is still checked.
pub(crate) fn check_batch(
    schema: &Schema,
    tensors: &[bool],
    message: &BatchMessage<'_>,
    body: &Buffer,
    batch: usize,
    offsets: bool,
) -> Result<bool> {
    // spec §6: a compressed body is decompressed by Arrow's decoder, with full validation.
    if message.compression().is_some() {
        check_compressed(message, body).map_err(|e| match e.into_kind() {
            ErrorKind::Format(FormatError::InvalidFile { reason, .. }) => {
                invalid(format!("batch {batch}: {reason}"))
            }
            other => Error::new(other),
        })?;
        return Ok(true);
    }
    // Arrow IPC, RecordBatch message: `length` rows, then the field nodes and buffers of
    // every column, in schema order, depth first.
    let rows = usize::try_from(message.length())
        .map_err(|_| invalid(format!("negative row count {}", message.length())))?;
    let mut walk = Walk::new(message, body, offsets);
    for (field, &tensor) in schema.fields().iter().zip(tensors) {
        let len = if tensor {
            walk.array(field.data_type(), 0)
        } else {
            walk.skip(field.data_type())
        }
        .map_err(|e| e.in_column(field.name(), batch))?;
        if len != rows {
            return Err(
                invalid(format!("{len} rows in a batch of {rows}")).in_column(field.name(), batch)
            );
        }
    }
    // Arrow IPC: the message holds exactly the nodes and buffers the schema's types use.
    if walk.next_node != walk.nodes.len() || walk.next_buffer != walk.buffers.len() {
        return Err(invalid(format!(
            "batch {batch}: {} nodes and {} buffers, the schema uses {} and {}",
            walk.nodes.len(),
            walk.buffers.len(),
            walk.next_node,
            walk.next_buffer
        )));
    }
    Ok(false)
}

/// The most bytes a compressed body may declare per byte it holds: zstd and lz4 reach
/// ratios near this only on runs of one byte; a larger claim is taken as a lie (a
/// decompression bomb) before anything is allocated.
pub(crate) const MAX_RATIO: usize = 1024;

/// Checks a compressed record batch before Arrow decompresses it (Arrow IPC,
/// `BodyCompression`, method `BUFFER`: every buffer is an 8-byte little-endian uncompressed
/// length, -1 for a buffer stored as it is, then the codec's frame): every buffer lies in
/// the body, 8-byte aligned, and the lengths declared add up to at most [`MAX_RATIO`] times
/// the body, so that a lying length gives an error, not an allocation of that size.
fn check_compressed(message: &BatchMessage<'_>, body: &Buffer) -> Result<()> {
    let Some(compression) = message.compression() else {
        return Ok(());
    };
    if compression.method() != arrow_ipc::BodyCompressionMethod::BUFFER {
        return Err(invalid(format!(
            "unsupported body compression method {:?}",
            compression.method()
        )));
    }
    let mut walk = Walk::new(message, body, false);
    let mut declared: usize = 0;
    while walk.next_buffer < walk.buffers.len() {
        let i = walk.next_buffer;
        let buffer = walk.buffer(1)?;
        if buffer.is_empty() {
            continue;
        }
        let prefix: [u8; 8] = (buffer.as_slice().get(..8))
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| {
                invalid(format!(
                    "compressed buffer {i} of {} bytes has no length",
                    buffer.len()
                ))
            })?;
        let length = match i64::from_le_bytes(prefix) {
            -1 => buffer.len() - 8,
            n => usize::try_from(n)
                .map_err(|_| invalid(format!("compressed buffer {i} declares a length of {n}")))?,
        };
        declared = declared.saturating_add(length);
    }
    let limit = body.len().saturating_mul(MAX_RATIO);
    if declared > limit {
        return Err(invalid(format!(
            "the compressed buffers declare {declared} bytes uncompressed, more than \
             {MAX_RATIO} times the body's {} bytes",
            body.len()
        )));
    }
    Ok(())
}

/// Checks that every buffer of the record batch message `message` lies inside `body`,
/// 8-byte aligned, whatever the types (for dictionary batches, which Arrow decodes itself);
/// compressed ones also checked as [`check_compressed`] does.
pub(crate) fn check_buffers(message: &BatchMessage<'_>, body: &Buffer) -> Result<()> {
    if message.compression().is_some() {
        return check_compressed(message, body);
    }
    let mut walk = Walk::new(message, body, false);
    while walk.next_buffer < walk.buffers.len() {
        walk.buffer(1)?;
    }
    Ok(())
}

/// How many buffers an array of `data_type` has of its own in a record batch message, its
/// children's not counted (Arrow IPC, buffer layout of each type); a view array's count
/// of data buffers is taken from `variadic` (the message's `variadicBufferCounts`, in
/// order).
pub(crate) fn own_buffers(data_type: &DataType, variadic: &mut VecDeque<i64>) -> Result<usize> {
    Ok(match data_type {
        DataType::Null => 0,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => 3,
        DataType::Utf8View | DataType::BinaryView => {
            let count = variadic.pop_front().and_then(|c| usize::try_from(c).ok());
            2 + count.ok_or_else(|| invalid(format!("no buffer count for {data_type}")))?
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(..) => 2,
        DataType::FixedSizeList(..) | DataType::Struct(_) => 1,
        DataType::Union(..)
        | DataType::RunEndEncoded(..)
        | DataType::ListView(_)
        | DataType::LargeListView(_) => {
            return Err(invalid(format!("unsupported type {data_type}")));
        }
        _ => 2,
    })
}

/// The child arrays of an array of `data_type`, in the IPC order (depth first).
pub(crate) fn children(data_type: &DataType) -> Vec<&DataType> {
    match data_type {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::Map(f, _)
        | DataType::FixedSizeList(f, _) => vec![f.data_type()],
        DataType::Struct(fields) => fields.iter().map(|f| f.data_type()).collect(),
        _ => Vec::new(),
    }
}

pub(crate) fn invalid(reason: impl Into<String>) -> Error {
    Error::invalid(FileFormat::Ipc, reason)
}

struct Walk<'a> {
    nodes: Vec<FieldNode>,
    buffers: Vec<(i64, i64)>,
    next_node: usize,
    next_buffer: usize,
    /// The buffer counts of the view arrays, in order.
    variadic: VecDeque<i64>,
    body: &'a Buffer,
    offsets: bool,
}

impl<'a> Walk<'a> {
    /// A walk over the nodes and buffers of `message`, whose body is `body`, reading
    /// offsets when `offsets`.
    fn new(message: &BatchMessage<'_>, body: &'a Buffer, offsets: bool) -> Self {
        Walk {
            nodes: message
                .nodes()
                .map(|n| n.iter().copied().collect())
                .unwrap_or_default(),
            buffers: message
                .buffers()
                .map(|b| b.iter().map(|b| (b.offset(), b.length())).collect())
                .unwrap_or_default(),
            next_node: 0,
            next_buffer: 0,
            variadic: message
                .variadicBufferCounts()
                .map(|v| v.iter().collect())
                .unwrap_or_default(),
            body,
            offsets,
        }
    }

    /// The next field node and its length.
    fn node(&mut self) -> Result<(FieldNode, usize)> {
        let node = *self
            .nodes
            .get(self.next_node)
            .ok_or_else(|| invalid("the message has fewer field nodes than the schema needs"))?;
        self.next_node += 1;
        let len = usize::try_from(node.length())
            .map_err(|_| invalid(format!("negative length {}", node.length())))?;
        Ok((node, len))
    }

    /// Walks past one array of `data_type` that Arrow decodes and validates itself (or
    /// that is not read): its nodes, and its buffers, each checked to lie in the body, in
    /// the IPC order (Arrow IPC, buffer layout of each type). Returns its length.
    fn skip(&mut self, data_type: &DataType) -> Result<usize> {
        let (_, len) = self.node()?;
        for _ in 0..own_buffers(data_type, &mut self.variadic)? {
            self.buffer(1)?;
        }
        for child in children(data_type) {
            self.skip(child)?;
        }
        Ok(len)
    }

    /// Checks one array of `data_type` (at LoD level `level`) and returns its length.
    fn array(&mut self, data_type: &DataType, level: usize) -> Result<usize> {
        let (node, len) = self.node()?;
        // Arrow layout: every array's first buffer is its validity bitmap (unused: no nulls).
        let validity = self.buffer(1)?;
        // spec §2: no level and no element is null.
        if node.null_count() != 0 {
            let is_list = matches!(data_type, DataType::List(_) | DataType::LargeList(_));
            let what = if is_list {
                format!("level {level}")
            } else {
                "values".to_owned()
            };
            // The first null entry, when the bitmap covers it: at level 0, a row.
            let first = (0..len.min(validity.len() * 8))
                .find(|&i| !arrow_buffer::bit_util::get_bit(validity.as_slice(), i));
            let at = match (first, level) {
                (Some(i), 0) => format!("{what} (the first in row {i})"),
                (Some(i), _) => format!("{what} (the first at entry {i})"),
                (None, _) => what,
            };
            return Err(DataError::Nulls {
                what: at,
                count: usize::try_from(node.null_count()).unwrap_or(usize::MAX),
            }
            .into());
        }
        match data_type {
            DataType::List(f) => self.list::<i32>(f.data_type(), len, level),
            DataType::LargeList(f) => self.list::<i64>(f.data_type(), len, level),
            DataType::FixedSizeList(f, size) => {
                // Arrow layout, fixed-size list: no buffer but validity; the child holds
                // `size` entries per list (spec §2.1: the element's items).
                let child = self.array(f.data_type(), level)?;
                let needed = usize::try_from(*size).ok().and_then(|s| s.checked_mul(len));
                if needed.is_none_or(|n| child < n) {
                    return Err(invalid(format!(
                        "{len} fixed-size lists of {size} items have a child of {child} items"
                    )));
                }
                Ok(len)
            }
            DataType::Boolean => {
                // Arrow layout, boolean: one bit per item, least significant bit first.
                let data = self.buffer(1)?;
                self.long_enough(&data, len.div_ceil(8), "values")?;
                Ok(len)
            }
            other => {
                let width = other
                    .primitive_width()
                    .ok_or_else(|| invalid(format!("unsupported type {other}")))?;
                let data = self.buffer(width)?;
                let bytes = len
                    .checked_mul(width)
                    .ok_or_else(|| invalid(format!("{len} items overflow")))?;
                self.long_enough(&data, bytes, "values")?;
                Ok(len)
            }
        }
    }

    /// Checks a list of `len` sequences at `level`: its offsets, then its child (Arrow
    /// layout, variable-size list: validity, then `len + 1` offsets of `O`; the child array
    /// follows depth first).
    fn list<O: ArrowNativeType + Ord + Into<i64>>(
        &mut self,
        child_type: &DataType,
        len: usize,
        level: usize,
    ) -> Result<usize> {
        let buffer = self.buffer(size_of::<O>())?;
        let child = self.array(child_type, level + 1)?;
        if len == 0 && buffer.is_empty() {
            return Ok(0);
        }
        // spec §4 rule 5: at least `len + 1` offsets. `len` comes from the file: a length
        // near i64::MAX must not wrap the byte count.
        let count = len + 1;
        let bytes = count
            .checked_mul(size_of::<O>())
            .ok_or_else(|| invalid(format!("level {level}: {len} sequences overflow")))?;
        self.long_enough(&buffer, bytes, &format!("level {level} offsets"))?;
        if self.offsets {
            // Aligned and long enough: checked above.
            let offsets = ScalarBuffer::<O>::new(buffer, 0, count);
            // spec §4 rules 1-2: at least one offset, the first >= 0, never decreasing.
            validate_offsets(level, &offsets)?;
            // spec §4 rules 3-4: the last offset within the child (entries past it belong
            // to no sequence).
            let last = offsets[len];
            if last.as_usize() > child {
                return Err(DataError::OffsetOutOfBounds {
                    level,
                    index: len,
                    offset: last.into(),
                    len: child,
                }
                .into());
            }
        }
        Ok(len)
    }

    /// The next buffer, checked to lie in the body, be 8-byte aligned and hold whole items
    /// of `item` bytes (spec §4 rule 5, §6; Arrow IPC, Buffer: offset and length in the body).
    fn buffer(&mut self, item: usize) -> Result<Buffer> {
        let i = self.next_buffer;
        let &(offset, length) = self
            .buffers
            .get(i)
            .ok_or_else(|| invalid("the message has fewer buffers than the schema needs"))?;
        self.next_buffer += 1;
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(length).ok())
            .filter(|&(o, l)| o.checked_add(l).is_some_and(|end| end <= self.body.len()));
        let Some((start, len)) = range else {
            return Err(invalid(format!(
                "buffer {i} at {offset} of {length} bytes lies outside the body of {} bytes",
                self.body.len()
            )));
        };
        if start % 8 != 0 {
            return Err(invalid(format!(
                "buffer {i} at {start} is not 8-byte aligned"
            )));
        }
        if len % item != 0 {
            return Err(invalid(format!(
                "buffer {i} of {len} bytes is not a whole number of {item}-byte items"
            )));
        }
        Ok(self.body.slice_with_length(start, len))
    }

    fn long_enough(&self, buffer: &Buffer, bytes: usize, what: &str) -> Result<()> {
        if buffer.len() < bytes {
            return Err(invalid(format!(
                "{what}: buffer of {} bytes, {bytes} needed",
                buffer.len()
            )));
        }
        Ok(())
    }
}
