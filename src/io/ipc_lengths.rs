//! The sample lengths of an Arrow IPC file read from its metadata alone — the footer, each
//! record batch's message, and the offsets buffers of one column's levels — as byte ranges
//! of a file that is not mapped (an object in a store), never its values. This module reads
//! no bytes itself: it says which ranges it needs and takes them as they come, every size
//! and position taken from the file checked as the mapped reader checks them
//! (`ipc_check.rs`) before it is used.
//!
//! ```text
//! 1. the last TAIL_BYTES      ──▶ the footer: schema, record-batch blocks (a longer footer: its range)
//! 2. each block's message     ──▶ rows, field nodes, buffers: where the column's offsets lie
//! 3. those offsets, per level ──▶ checked (from ≥ 0, non-decreasing, within the child) ──▶ lengths
//! ```
//!
//! A compressed record batch (its buffers are codec frames) gives no lengths here: the
//! caller reads the file whole instead.

use std::collections::VecDeque;
use std::ops::Range;

use arrow_ipc::MetadataVersion;
use arrow_schema::{DataType, Schema};

use super::ipc_check::{children, invalid, own_buffers};
use super::ipc_reader::MAGIC;
use crate::error::{DataError, Error, Result};
use crate::lod::validate_offsets;

/// The most bytes at the end of a file read first: the footer of a file of a few hundred
/// record batches fits.
pub(crate) const TAIL_BYTES: u64 = 16 << 10;
/// The fewest: a footer of a schema of a few columns fits.
const MIN_TAIL_BYTES: u64 = 4 << 10;

/// The range of a file of `file_len` bytes to read first: its last 1/64, at least
/// [`MIN_TAIL_BYTES`] and at most [`TAIL_BYTES`] (a longer footer is read next).
pub(crate) fn tail_range(file_len: u64) -> Range<u64> {
    let tail = (file_len / 64).clamp(MIN_TAIL_BYTES, TAIL_BYTES);
    file_len.saturating_sub(tail)..file_len
}

/// What the tail of a file gave.
#[derive(Debug)]
pub(crate) enum Tail {
    /// The footer.
    Footer(FileFooter),
    /// The footer starts before the tail read: read this range (the footer and the tail).
    Longer(Range<u64>),
}

/// The footer of an IPC file: its schema and where its record batches are.
#[derive(Debug)]
pub(crate) struct FileFooter {
    version: MetadataVersion,
    schema: Schema,
    /// Per record batch: where it starts, its message's bytes, its body's bytes.
    blocks: Vec<(u64, u64, u64)>,
}

/// Where one record batch's offsets of the length column are.
#[derive(Debug)]
pub(crate) enum Located {
    /// A batch of `rows` rows whose levels' offsets lie at `levels`.
    Plain { rows: usize, levels: Vec<LevelAt> },
    /// A compressed batch: its offsets are not readable in place.
    Compressed,
}

/// One level's offsets in the file.
#[derive(Debug)]
pub(crate) struct LevelAt {
    /// The level's sequences.
    len: usize,
    /// The bytes of its `len + 1` offsets (empty: none stored, for an empty level).
    range: Range<u64>,
    /// Bytes per offset: 4 or 8.
    width: usize,
    /// The entries of its child (the next level's sequences, or the values).
    child: usize,
}

/// Reads the footer from `tail`, the last bytes of a file of `file_len` bytes.
///
/// # Errors
/// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for a file that is not an
/// IPC file (no magic, a footer length that does not fit, a footer that does not parse, a
/// block outside the file).
pub(crate) fn read_tail(file_len: u64, tail: &[u8]) -> Result<Tail> {
    let tail_start = file_len
        .checked_sub(tail.len() as u64)
        .ok_or_else(|| invalid("the tail read is longer than the file"))?;
    let Some(trailer) = tail.len().checked_sub(10).map(|at| &tail[at..]) else {
        return Err(invalid(format!(
            "{file_len} bytes: too short for an IPC file"
        )));
    };
    let trailer: [u8; 10] = trailer.try_into().expect("10 bytes");
    let footer_len = arrow_ipc::reader::read_footer_length(trailer)
        .map_err(|e| invalid(format!("footer: {e}")))? as u64;
    let footer_start = (file_len - 10)
        .checked_sub(footer_len)
        .filter(|&s| s >= MAGIC.len() as u64 + 2)
        .ok_or_else(|| {
            invalid(format!(
                "footer length {footer_len} does not fit in a file of {file_len} bytes"
            ))
        })?;
    if footer_start < tail_start {
        return Ok(Tail::Longer(footer_start..file_len));
    }
    let bytes = &tail[(footer_start - tail_start) as usize..tail.len() - 10];
    let footer = arrow_ipc::root_as_footer(bytes).map_err(|e| invalid(format!("footer: {e}")))?;
    let fb_schema = footer
        .schema()
        .ok_or_else(|| invalid("footer has no schema"))?;
    let schema = arrow_ipc::convert::try_fb_to_schema(fb_schema)
        .map_err(|e| invalid(format!("footer schema: {e}")))?;
    let mut blocks = Vec::new();
    for (index, block) in footer.recordBatches().into_iter().flatten().enumerate() {
        let (offset, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let fits = u64::try_from(offset).ok().zip(u64::try_from(meta).ok());
        let fits = fits.zip(u64::try_from(body).ok()).filter(|&((o, m), b)| {
            m >= 8 && (o + m) % 8 == 0 && o.checked_add(m + b).is_some_and(|e| e <= footer_start)
        });
        let Some(((offset, meta), body)) = fits else {
            return Err(invalid(format!(
                "batch {index}: block at {offset} of {meta} + {body} bytes is not an aligned \
                 block before the footer at {footer_start}"
            )));
        };
        blocks.push((offset, meta, body));
    }
    Ok(Tail::Footer(FileFooter {
        version: footer.version(),
        schema,
        blocks,
    }))
}

/// The end of `tail` from the footer on (the footer, its length, the magic): what
/// [`read_tail`] needs to read the footer again. All of `tail` when it holds no footer
/// length.
pub(crate) fn footer_suffix(tail: &bytes::Bytes) -> bytes::Bytes {
    let n = tail.len();
    let trailer = n
        .checked_sub(10)
        .and_then(|at| <[u8; 10]>::try_from(&tail[at..]).ok());
    let footer = trailer.and_then(|t| arrow_ipc::reader::read_footer_length(t).ok());
    let len = footer.and_then(|f| f.checked_add(10)).unwrap_or(n);
    tail.slice(n.saturating_sub(len)..)
}

impl FileFooter {
    /// The file's schema.
    pub(crate) fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The number of record batches.
    pub(crate) fn num_batches(&self) -> usize {
        self.blocks.len()
    }

    /// The range of each record batch's message, in order.
    pub(crate) fn message_ranges(&self) -> Vec<Range<u64>> {
        let ranges = self.blocks.iter();
        ranges
            .map(|&(offset, meta, _)| offset..offset + meta)
            .collect()
    }

    /// The range of each record batch's message and the start of its body, in order: 1/128
    /// of the body (1–64 KiB, at most the body), where the first columns' offsets are, so
    /// that they come in the same read.
    pub(crate) fn head_ranges(&self) -> Vec<Range<u64>> {
        let extra = |body: u64| (body / 128).clamp(1 << 10, 64 << 10).min(body);
        let ranges = self.blocks.iter();
        ranges
            .map(|&(offset, meta, body)| offset..offset + meta + extra(body))
            .collect()
    }

    /// Where record batch `index`'s offsets of levels `0..=level` of column `column` are,
    /// from its message `message` (the bytes of [`FileFooter::message_ranges`]'s range).
    ///
    /// # Errors
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for a message that does
    /// not parse, is not a record batch, or whose nodes and buffers do not fit the schema or
    /// the body; [`DataError::Nulls`] for a null level.
    pub(crate) fn locate(
        &self,
        index: usize,
        message: &[u8],
        column: usize,
        level: usize,
    ) -> Result<Located> {
        let Some((rows, walk)) = self.walk(index, message)? else {
            return Ok(Located::Compressed);
        };
        let at_batch = |e: Error| at_batch(index, e);
        let field =
            self.schema.fields().get(column).ok_or_else(|| {
                at_batch(invalid(format!("no column {column} in the file's schema")))
            })?;
        let levels = walk
            .levels(&self.schema, column, level)
            .map_err(|e| at_batch(e).in_column(field.name(), index))?;
        if levels[0].len != rows {
            let reason = format!("{} rows in a batch of {rows}", levels[0].len);
            return Err(at_batch(invalid(reason)).in_column(field.name(), index));
        }
        Ok(Located::Plain { rows, levels })
    }

    /// Record batch `index`'s rows and the walk over its field nodes and buffers, from its
    /// message `message` (the bytes of [`FileFooter::message_ranges`]'s range); `None` for
    /// a compressed batch.
    ///
    /// # Errors
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for a message that does
    /// not parse, is not a record batch or holds a negative row count.
    pub(super) fn walk(&self, index: usize, message: &[u8]) -> Result<Option<(usize, Walk)>> {
        let (offset, meta, body) = self.blocks[index];
        let (rows, batch) = self.batch_message(index, message)?;
        if batch.compression().is_some() {
            return Ok(None);
        }
        let walk = Walk {
            nodes: batch.nodes().map(|n| n.iter().copied().collect()),
            buffers: batch
                .buffers()
                .map(|b| b.iter().map(|b| (b.offset(), b.length())).collect()),
            variadic: (batch.variadicBufferCounts().into_iter().flatten()).collect(),
            body: offset + meta..offset + meta + body,
        };
        Ok(Some((rows, walk)))
    }

    /// Record batch `index`'s rows and its message's header, from its message `message`
    /// (compressed or not).
    ///
    /// # Errors
    /// [`FileFooter::walk`]'s.
    pub(super) fn batch_message<'m>(
        &self,
        index: usize,
        message: &'m [u8],
    ) -> Result<(usize, arrow_ipc::RecordBatch<'m>)> {
        let at_batch = |e: Error| at_batch(index, e);
        let (_, meta, _) = self.blocks[index];
        if message.len() as u64 != meta {
            return Err(at_batch(invalid("the message was not read whole")));
        }
        let skip = if message.get(..4) == Some(&[0xff; 4]) {
            8
        } else {
            4
        };
        let parsed = arrow_ipc::root_as_message(message.get(skip..).unwrap_or_default())
            .map_err(|e| at_batch(invalid(format!("message: {e}"))))?;
        if self.version != MetadataVersion::V1 && parsed.version() != self.version {
            return Err(at_batch(invalid(
                "message version differs from the footer's",
            )));
        }
        let batch = parsed
            .header_as_record_batch()
            .ok_or_else(|| at_batch(invalid("block is not a record batch")))?;
        let rows = usize::try_from(batch.length())
            .map_err(|_| at_batch(invalid(format!("negative row count {}", batch.length()))))?;
        Ok((rows, batch))
    }

    /// The file's metadata version.
    pub(crate) fn version(&self) -> MetadataVersion {
        self.version
    }

    /// Record batch `index`'s block (its message, then its body) in the file, and its
    /// message's bytes.
    pub(crate) fn block(&self, index: usize) -> (Range<u64>, u64) {
        let (offset, meta, body) = self.blocks[index];
        (offset..offset + meta + body, meta)
    }
}

/// `e`, an invalid-file error, said of record batch `index`.
fn at_batch(index: usize, e: Error) -> Error {
    match e.into_kind() {
        crate::error::ErrorKind::Format(crate::error::FormatError::InvalidFile {
            reason, ..
        }) => invalid(format!("batch {index}: {reason}")),
        other => Error::new(other),
    }
}

/// The field nodes and buffers of one record batch message, and where its body lies.
pub(super) struct Walk {
    nodes: Option<Vec<arrow_ipc::FieldNode>>,
    buffers: Option<Vec<(i64, i64)>>,
    variadic: VecDeque<i64>,
    body: Range<u64>,
}

impl Walk {
    /// The levels `0..=level` of column `column`: walks past the columns before it (their
    /// nodes and buffers counted), then reads the column's list nodes and offsets buffers.
    fn levels(mut self, schema: &Schema, column: usize, level: usize) -> Result<Vec<LevelAt>> {
        let (mut node, mut buffer) = (0, 0);
        let mut pending: Vec<&DataType> = schema.fields()[..column]
            .iter()
            .rev()
            .map(|f| f.data_type())
            .collect();
        while let Some(data_type) = pending.pop() {
            node += 1;
            buffer += own_buffers(data_type, &mut self.variadic)?;
            pending.extend(children(data_type).into_iter().rev());
        }
        let mut data_type = schema.field(column).data_type();
        let mut levels = Vec::with_capacity(level + 1);
        for l in 0..=level {
            let (child_type, width) = match data_type {
                DataType::List(f) => (f.data_type(), 4),
                DataType::LargeList(f) => (f.data_type(), 8),
                other => return Err(invalid(format!("level {l} is a {other}, not a list"))),
            };
            let (len, nulls) = self.node(node)?;
            if nulls != 0 {
                let what = format!("level {l}");
                return Err(DataError::Nulls { what, count: nulls }.into());
            }
            // Arrow layout, variable-size list: validity, then `len + 1` offsets.
            let (start, stored) = self.buffer(buffer + 1)?;
            let range = match len.checked_add(1).and_then(|n| n.checked_mul(width)) {
                Some(_) if len == 0 && stored == 0 => start..start,
                Some(bytes) if bytes as u64 <= stored => start..start + bytes as u64,
                _ => {
                    return Err(invalid(format!(
                        "level {l} offsets: buffer of {stored} bytes, {len} sequences need more"
                    )));
                }
            };
            let (child, _) = self.node(node + 1)?;
            levels.push(LevelAt {
                len,
                range,
                width,
                child,
            });
            (node, buffer, data_type) = (node + 1, buffer + 2, child_type);
        }
        Ok(levels)
    }

    /// Field node `i`: its length and null count.
    pub(super) fn node(&self, i: usize) -> Result<(usize, usize)> {
        let node = (self.nodes.as_ref().and_then(|n| n.get(i)))
            .ok_or_else(|| invalid("the message has fewer field nodes than the schema needs"))?;
        let len = usize::try_from(node.length())
            .map_err(|_| invalid(format!("negative length {}", node.length())))?;
        let nulls = usize::try_from(node.null_count())
            .map_err(|_| invalid(format!("negative null count {}", node.null_count())))?;
        Ok((len, nulls))
    }

    /// Buffer `i`: where it starts in the file and its length, checked to lie in the body,
    /// 8-byte aligned.
    pub(super) fn buffer(&self, i: usize) -> Result<(u64, u64)> {
        let &(offset, length) = (self.buffers.as_ref().and_then(|b| b.get(i)))
            .ok_or_else(|| invalid("the message has fewer buffers than the schema needs"))?;
        let body = self.body.end - self.body.start;
        let inside = u64::try_from(offset).ok().zip(u64::try_from(length).ok());
        let Some((start, len)) =
            inside.filter(|&(o, l)| o.checked_add(l).is_some_and(|e| e <= body))
        else {
            return Err(invalid(format!(
                "buffer {i} at {offset} of {length} bytes lies outside the body of {body} bytes"
            )));
        };
        if start % 8 != 0 {
            return Err(invalid(format!(
                "buffer {i} at {start} is not 8-byte aligned"
            )));
        }
        Ok((self.body.start + start, len))
    }
}

impl Located {
    /// The ranges of the offsets to read (none for a compressed batch), one per level.
    pub(crate) fn ranges(&self) -> Vec<Range<u64>> {
        match self {
            Located::Plain { levels, .. } => levels.iter().map(|l| l.range.clone()).collect(),
            Located::Compressed => Vec::new(),
        }
    }

    /// The length of every row: the entries of the last level located under it, from
    /// `offsets` (the bytes of [`Located::ranges`], in order), each level's offsets checked
    /// first (spec §4 rules 1–4: from ≥ 0, non-decreasing, the last within the child).
    ///
    /// # Errors
    /// [`DataError`]s naming the level and index of a bad offset.
    pub(crate) fn lengths(&self, offsets: &[bytes::Bytes]) -> Result<Vec<usize>> {
        let Located::Plain { rows, levels } = self else {
            return Ok(Vec::new());
        };
        let mut parsed: Vec<Vec<i64>> = Vec::with_capacity(levels.len());
        for (l, (at, bytes)) in levels.iter().zip(offsets).enumerate() {
            let values: Vec<i64> = match at.width {
                4 => (bytes.chunks_exact(4))
                    .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")).into())
                    .collect(),
                _ => (bytes.chunks_exact(8))
                    .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .collect(),
            };
            let values = if values.is_empty() { vec![0] } else { values };
            if values.len() != at.len + 1 {
                return Err(invalid(format!(
                    "level {l}: the offsets were not read whole"
                )));
            }
            validate_offsets(l, &values)?;
            let last = values[at.len];
            if last as u64 > at.child as u64 {
                return Err(DataError::OffsetOutOfBounds {
                    level: l,
                    index: at.len,
                    offset: last,
                    len: at.child,
                }
                .into());
            }
            parsed.push(values);
        }
        // Checked: every offset of level l is within level l + 1's offsets (its child).
        Ok((0..*rows)
            .map(|row| {
                let mut range = row..row + 1;
                for offsets in &parsed {
                    range = offsets[range.start] as usize..offsets[range.end] as usize;
                }
                range.len()
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::dataset::{Column, Dataset};
    use crate::io::ipc_reader::MappedDataset;
    use crate::io::ipc_writer::{DatasetWriter, WriteOptions};

    /// An IPC file of three record batches: a side column, a 0-level tensor, then the
    /// documents' two-level tokens.
    fn file() -> (tempfile::TempDir, Vec<u8>) {
        use crate::tensor::LodTensor;
        use arrow_array::types::{Float32Type, Int64Type};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.arrow");
        let mut writer = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
        for rows in [7usize, 0, 5] {
            // Row r: r % 4 sentences of 0, 1, 2, … tokens of 2 floats.
            let docs: Vec<usize> = (0..rows).map(|r| r % 4).collect();
            let sentences: Vec<usize> = docs.iter().flat_map(|&n| 0..n).collect();
            let tokens = sentences.iter().sum::<usize>();
            let values = (0..tokens * 2).map(|i| i as f32).collect();
            let tokens =
                LodTensor::from_lengths::<Float32Type>(&[docs, sentences], values, vec![2]);
            let labels = (0..rows as i64).collect();
            let label = LodTensor::dense::<Int64Type>(labels, &[rows]).unwrap();
            let names: Vec<String> = (0..rows).map(|r| format!("doc {r}")).collect();
            let side = Arc::new(arrow_array::StringArray::from(names));
            let columns = vec![
                Column::side("name", side).unwrap(),
                Column::new("label", label),
                Column::new("tokens", tokens.unwrap()),
            ];
            writer.write(&Dataset::try_new(columns).unwrap()).unwrap();
        }
        writer.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        (dir, bytes)
    }

    /// The three steps over `bytes`, as a reader of ranges would take them.
    fn read(bytes: &[u8], column: usize, level: usize) -> Result<Vec<Vec<usize>>> {
        let len = bytes.len() as u64;
        let slice = |r: Range<u64>| &bytes[r.start as usize..r.end as usize];
        let footer = match read_tail(len, slice(tail_range(len)))? {
            Tail::Footer(f) => f,
            Tail::Longer(r) => match read_tail(len, slice(r))? {
                Tail::Footer(f) => f,
                Tail::Longer(_) => panic!("the footer's range holds it"),
            },
        };
        let mut out = Vec::new();
        for (b, range) in footer.message_ranges().into_iter().enumerate() {
            let located = footer.locate(b, slice(range), column, level)?;
            let offsets: Vec<bytes::Bytes> = (located.ranges().into_iter())
                .map(|r| bytes::Bytes::copy_from_slice(slice(r)))
                .collect();
            out.push(located.lengths(&offsets)?);
        }
        Ok(out)
    }

    #[test]
    fn lengths_from_the_metadata_are_the_mapped_files() {
        let (dir, bytes) = file();
        let mapped = MappedDataset::open(dir.path().join("f.arrow")).unwrap();
        for level in 0..2 {
            let expected: Vec<Vec<usize>> = (mapped.batches().iter())
                .map(|b| {
                    let lod = b.columns()[2].as_tensor().unwrap().lod();
                    (0..b.num_rows())
                        .map(|r| lod.descend(0, r..r + 1, level + 1).len())
                        .collect()
                })
                .collect();
            assert_eq!(read(&bytes, 2, level).unwrap(), expected);
        }
        assert!(read(&bytes, 2, 2).is_err()); // the values are not a level
        assert!(read(&bytes, 3, 0).is_err()); // no such column
    }

    #[test]
    fn a_longer_footer_is_read_in_a_second_range() {
        let (_dir, bytes) = file();
        let len = bytes.len() as u64;
        let short = &bytes[bytes.len() - 12..];
        let Tail::Longer(range) = read_tail(len, short).unwrap() else {
            panic!("12 bytes hold no footer");
        };
        assert!(range.end == len && range.start < len - 12);
    }

    #[test]
    fn a_decreasing_offset_is_refused_naming_the_level_and_index() {
        let (_dir, mut bytes) = file();
        let len = bytes.len() as u64;
        let Tail::Footer(footer) = read_tail(len, &bytes[..]).unwrap() else {
            panic!("the whole file holds the footer");
        };
        let message = footer.message_ranges()[0].clone();
        let located = footer
            .locate(
                0,
                &bytes[message.start as usize..message.end as usize],
                2,
                1,
            )
            .unwrap();
        // Level 1's offset 2 set below offset 1.
        let at = located.ranges()[1].start as usize + 2 * 4;
        bytes[at..at + 4].copy_from_slice(&(-1i32).to_le_bytes());
        let err = read(&bytes, 2, 1).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                crate::error::ErrorKind::Data(DataError::DecreasingOffset {
                    level: 1,
                    index: 2,
                    ..
                })
            ),
            "{err}"
        );
    }

    /// Every byte of the file changed in turn: an error or lengths, never a panic or a read
    /// outside the file.
    #[test]
    fn every_changed_byte_gives_an_error_or_lengths() {
        let (_dir, bytes) = file();
        for i in 0..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut changed = bytes.clone();
                changed[i] ^= flip;
                let _ = read(&changed, 2, 1);
            }
        }
        for cut in 0..bytes.len() {
            let _ = read(&bytes[..cut], 2, 1);
        }
    }
}
