//! Decoding a mapped Arrow IPC file: the footer, then each dictionary and record batch
//! block checked to lie inside the file and its buffers inside the block (Arrow IPC format,
//! "File format" and "Buffers") before Arrow's decoder reads it; only the chosen columns
//! are decoded and validated.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_ipc::reader::FileDecoder;
use arrow_ipc::{Block, MetadataVersion};
use arrow_schema::{DataType, Schema, SchemaRef};

use super::ipc_check::invalid;
use super::ipc_reader::MAGIC;
use crate::dataset::{Dataset, check_type, check_version, is_side, mark_sides, undeclared_tensors};
use crate::error::{
    ArgumentError, DataError, Error, ErrorKind, FileFormat, FormatError, Result, catch_panic,
};
use crate::io::ipc_check::{check_batch, check_buffers};
use crate::layout::ColumnLayout;

/// Reads the footer, the schema and every record batch of a mapped IPC file: of the
/// columns named `columns` (all when `None`), in that order, and whether any batch was
/// compressed (its buffers then decompressed into memory, not views of the mapping).
pub(super) fn decode(
    mapping: &Buffer,
    columns: Option<&[&str]>,
    validate: bool,
) -> Result<(SchemaRef, Vec<Dataset>, bool)> {
    let footer = read_footer(mapping.as_slice())?;
    let fb_schema = footer
        .schema()
        .ok_or_else(|| invalid("footer has no schema".to_owned()))?;
    let schema = arrow_ipc::convert::try_fb_to_schema(fb_schema)
        .map_err(|e| invalid(format!("footer schema: {e}")))?;
    check_version(&schema)?;
    let schema: SchemaRef = Arc::new(mark_null_tensors(mapping, &footer, schema)?);
    let chosen = Chosen::of(&schema, columns)?;
    let version = footer.version();
    let mut decoders = Decoders::new(&schema, version, &chosen);
    if chosen.dictionaries {
        read_dictionaries(mapping, &footer, &mut decoders.sides)?;
    }
    let projected: SchemaRef = Arc::new(schema.project(&chosen.order)?);
    let mut compressed = false;
    let mut batches: Vec<Dataset> = Vec::new();
    let blocks = footer.recordBatches().map(|b| b.iter().collect::<Vec<_>>());
    for (index, block) in blocks.unwrap_or_default().into_iter().enumerate() {
        let read = (schema.as_ref(), version, &chosen, &projected);
        let (batch, is_compressed) = decoders.read(mapping, block, read, index, validate)?;
        compressed |= is_compressed;
        // Every batch has the file's schema: its fields are checked with the first batch.
        let dataset = match batches.first() {
            Some(first) => first.try_from_record_batch_like(&batch, index)?,
            None => Dataset::try_from_record_batch_at(&batch, index)?,
        };
        batches.push(dataset);
    }
    Ok((projected, batches, compressed))
}

/// Record batch `index` of an IPC file of `schema` and `version`, from `block`, its
/// block's bytes alone (its message of `meta` bytes, then its body): checked and decoded
/// as [`decode`] checks and decodes each batch of a mapped file (decompressed when
/// compressed), of the columns `columns` (all when `None`), in that order. A side column
/// with a dictionary cannot be read from a block alone.
///
/// # Errors
/// [`decode`]'s for a batch; [`FormatError::InvalidFile`] for a dictionary column.
pub(crate) fn decode_block(
    block: &Buffer,
    meta: usize,
    (schema, version): (&Schema, MetadataVersion),
    columns: Option<&[&str]>,
    index: usize,
) -> Result<RecordBatch> {
    let chosen = Chosen::of(schema, columns)?;
    if chosen.dictionaries {
        return Err(invalid(format!(
            "batch {index}: a dictionary column is read with the file's dictionaries"
        )));
    }
    let (meta, body) = (i32::try_from(meta), block.len().checked_sub(meta));
    let (Ok(meta), Some(body)) = (meta, body) else {
        return Err(invalid(format!(
            "batch {index}: a message longer than its block"
        )));
    };
    let at = Block::new(0, meta, body as i64);
    let projected: SchemaRef = Arc::new(schema.project(&chosen.order)?);
    let decoders = Decoders::new(schema, version, &chosen);
    let read = (schema, version, &chosen, &projected);
    Ok(decoders.read(block, &at, read, index, true)?.0)
}

/// The decoders of a file's record batches: of its tensor columns (uncompressed: checked
/// here, not by Arrow; compressed: by Arrow), and of its side columns.
struct Decoders {
    tensors: FileDecoder,
    decompressing: FileDecoder,
    sides: FileDecoder,
}

impl Decoders {
    /// The decoders of the columns `chosen` of a file of `schema` and `version`.
    fn new(schema: &Schema, version: MetadataVersion, chosen: &Chosen) -> Self {
        let schema = Arc::new(schema.clone());
        // SAFETY: `Decoders::read` runs `check_block` on every batch before it is decoded,
        // which verifies everything Arrow's validation would (buffer bounds, alignment and
        // sizes, child lengths, no nulls, and — unless the caller of open_trusted vouched
        // for the file — every offset's order and bounds) for the tensor columns, the only
        // ones this decoder reads (check_column_types lets only LoD tensor types through as
        // tensors).
        let tensors = unsafe {
            FileDecoder::new(schema.clone(), version)
                .with_projection(chosen.tensors.clone())
                .with_require_alignment(true)
                .with_skip_validation(true)
        };
        // Compressed batches (spec §6): their buffers are only known once decompressed, so
        // Arrow validates the tensor columns fully, and nulls are looked for after.
        let decompressing = FileDecoder::new(schema.clone(), version)
            .with_projection(chosen.tensors.clone())
            .with_require_alignment(false);
        // Side columns: Arrow's decoder with its full validation, after check_block has
        // seen that every buffer lies in the body, 8-byte aligned. Types whose items need
        // 16 bytes (string and binary views, 128- and 256-bit decimals) in a file aligned
        // to 8 only (pyarrow's) are copied into aligned memory by Arrow: the only copy
        // (format-spec §2.2).
        let sides = FileDecoder::new(schema, version)
            .with_projection(chosen.sides.clone())
            .with_require_alignment(false);
        Decoders {
            tensors,
            decompressing,
            sides,
        }
    }

    /// Record batch `index` at `block` of `mapping`: checked ([`check_block`]), then read
    /// under `projected`, and whether it was compressed.
    fn read(
        &self,
        mapping: &Buffer,
        block: &Block,
        (schema, version, chosen, projected): (&Schema, MetadataVersion, &Chosen, &SchemaRef),
        index: usize,
        validate: bool,
    ) -> Result<(RecordBatch, bool)> {
        let checked = &chosen.checked;
        let (data, compressed) =
            check_block(mapping, block, version, schema, checked, index, validate)?;
        let decoder = match compressed {
            true => &self.decompressing,
            false => &self.tensors,
        };
        let batch = chosen.read(decoder, &self.sides, block, &data, projected, index)?;
        if compressed {
            check_no_nulls(&batch, index)?;
        }
        Ok((batch, compressed))
    }
}

/// Checks that no level and no value of a decompressed batch's tensor columns is null
/// (spec §2), as [`check_batch`] does from the field nodes of an uncompressed one.
fn check_no_nulls(batch: &RecordBatch, index: usize) -> Result<()> {
    fn nulls(data: &arrow_data::ArrayData) -> usize {
        data.null_count() + data.child_data().iter().map(nulls).sum::<usize>()
    }
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if is_side(field)? {
            continue;
        }
        let count = nulls(&column.to_data());
        if count > 0 {
            let what = "levels or values".to_owned();
            return Err(
                Error::from(DataError::Nulls { what, count }).in_column(field.name(), index)
            );
        }
    }
    Ok(())
}

/// Reads every dictionary batch of the file into `sides` (the side columns' decoder), each
/// checked first to lie in the file with its buffers in its body.
fn read_dictionaries(
    mapping: &Buffer,
    footer: &arrow_ipc::Footer<'_>,
    sides: &mut FileDecoder,
) -> Result<()> {
    let dictionaries = footer.dictionaries().map(|b| b.iter().collect::<Vec<_>>());
    for (index, block) in dictionaries.unwrap_or_default().into_iter().enumerate() {
        let what = format!("dictionary {index}");
        let data = block_bytes(mapping, block, &what)?;
        check_dictionary(&data, block.metaDataLength() as usize, &what)?;
        let invalid = |e: String| invalid(format!("{what}: {e}"));
        catch_panic(
            || {
                sides
                    .read_dictionary(block, &data)
                    .map_err(|e| invalid(e.to_string()))
            },
            invalid,
        )?;
    }
    Ok(())
}

/// `schema` with the columns of a tensor's type that it does not declare tensors and that
/// hold a null in some batch marked side (format-spec §2.2). The nulls are counted in each
/// batch's field nodes, without reading a buffer; a batch whose message cannot be read is
/// left for [`check_block`] to report.
fn mark_null_tensors(
    mapping: &Buffer,
    footer: &arrow_ipc::Footer<'_>,
    schema: Schema,
) -> Result<Schema> {
    let candidates = undeclared_tensors(&schema)?;
    if candidates.is_empty() {
        return Ok(schema);
    }
    // Each column's first field node: the nodes of a batch are its columns', depth first.
    let mut starts = Vec::with_capacity(schema.fields().len() + 1);
    starts.push(0);
    for field in schema.fields() {
        starts.push(starts.last().copied().unwrap_or(0) + node_count(field.data_type()));
    }
    let mut nulls = vec![false; schema.fields().len()];
    let blocks = footer.recordBatches().map(|b| b.iter().collect::<Vec<_>>());
    for (index, block) in blocks.unwrap_or_default().into_iter().enumerate() {
        let Ok(data) = block_bytes(mapping, block, &format!("batch {index}")) else {
            continue;
        };
        let bytes = &data.as_slice()[..block.metaDataLength() as usize];
        let skip = if bytes[..4] == [0xff; 4] { 8 } else { 4 };
        let nodes = arrow_ipc::root_as_message(&bytes[skip..])
            .ok()
            .and_then(|m| m.header_as_record_batch())
            .and_then(|b| b.nodes());
        let Some(nodes) = nodes else { continue };
        for &i in &candidates {
            let (start, end) = (starts[i], starts[i + 1].min(nodes.len()));
            nulls[i] |= (start..end).any(|n| nodes.get(n).null_count() != 0);
        }
    }
    let marked: Vec<usize> = candidates.into_iter().filter(|&i| nulls[i]).collect();
    Ok(match marked.is_empty() {
        true => schema,
        false => mark_sides(&schema, &marked),
    })
}

/// How many field nodes an array of `data_type` has in a record batch message (Arrow IPC:
/// one per array, depth first; a dictionary's values are in its dictionary batch).
fn node_count(data_type: &DataType) -> usize {
    1 + match data_type {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => node_count(f.data_type()),
        DataType::Struct(fields) => fields.iter().map(|f| node_count(f.data_type())).sum(),
        DataType::Union(fields, _) => fields.iter().map(|(_, f)| node_count(f.data_type())).sum(),
        DataType::RunEndEncoded(ends, values) => {
            node_count(ends.data_type()) + node_count(values.data_type())
        }
        _ => 0,
    }
}

/// Whether a record batch of the Arrow IPC file `bytes` is compressed, read from the
/// messages' headers only (nothing is decoded); `false` for bytes that are not a readable
/// IPC file (opening it then says what is wrong).
#[cfg(feature = "remote")]
pub(crate) fn has_compressed_batches(bytes: &[u8]) -> bool {
    if bytes.len() < 2 * MAGIC.len() + 2 + 4 {
        return false;
    }
    let Ok(footer) = read_footer(bytes) else {
        return false;
    };
    footer.recordBatches().into_iter().flatten().any(|block| {
        let offset = usize::try_from(block.offset()).ok();
        let meta = usize::try_from(block.metaDataLength()).ok();
        let header = offset
            .zip(meta)
            .and_then(|(o, m)| bytes.get(o..o.checked_add(m)?));
        let message = header.and_then(|h| {
            let skip = if h.starts_with(&[0xff; 4]) { 8 } else { 4 };
            arrow_ipc::root_as_message(h.get(skip..)?).ok()
        });
        message
            .and_then(|m| m.header_as_record_batch())
            .is_some_and(|b| b.compression().is_some())
    })
}

/// The footer of the IPC file `bytes`, after checking the magic and the footer's length.
fn read_footer(bytes: &[u8]) -> Result<arrow_ipc::Footer<'_>> {
    let len = bytes.len();
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err(invalid(format!(
            "starts with {:?}, not the Arrow file magic \"ARROW1\"",
            String::from_utf8_lossy(&bytes[..MAGIC.len()])
        )));
    }
    let tail: [u8; 10] = bytes[len - 10..].try_into().expect("10 bytes");
    let footer_len =
        arrow_ipc::reader::read_footer_length(tail).map_err(|e| invalid(format!("footer: {e}")))?;
    let footer_start = (len - 10)
        .checked_sub(footer_len)
        .filter(|&s| s >= MAGIC.len() + 2)
        .ok_or_else(|| {
            invalid(format!(
                "footer length {footer_len} does not fit in a file of {len} bytes"
            ))
        })?;
    arrow_ipc::root_as_footer(&bytes[footer_start..len - 10])
        .map_err(|e| invalid(format!("footer: {e}")))
}

/// The columns a reader reads: tensors and side columns, by their index in the file.
struct Chosen {
    /// The columns, in the order asked for.
    order: Vec<usize>,
    /// The tensor columns, in file order (Arrow's projection reads in file order).
    tensors: Vec<usize>,
    /// The side columns, in file order.
    sides: Vec<usize>,
    /// For each column of the file, whether its layout and offsets are checked.
    checked: Vec<bool>,
    /// Whether a side column read has a dictionary.
    dictionaries: bool,
}

impl Chosen {
    /// The columns of `schema` named `names` (all when `None`), each checked to be a LoD
    /// tensor of a supported dtype or a side column of a supported type.
    fn of(schema: &Schema, names: Option<&[&str]>) -> Result<Self> {
        let order: Vec<usize> = match names {
            None => (0..schema.fields().len()).collect(),
            Some(names) => names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    if names[..i].contains(name) {
                        return Err(DataError::DuplicateColumn((*name).to_owned()).into());
                    }
                    schema
                        .index_of(name)
                        .map_err(|_| ArgumentError::NoSuchColumn((*name).to_owned()).into())
                })
                .collect::<Result<_>>()?,
        };
        let mut chosen = Chosen {
            tensors: Vec::new(),
            sides: Vec::new(),
            checked: vec![false; schema.fields().len()],
            dictionaries: false,
            order,
        };
        let mut sorted = chosen.order.clone();
        sorted.sort_unstable();
        for i in sorted {
            let field = schema.field(i);
            let in_column = |e: Error| e.in_column(field.name(), 0);
            if is_side(field).map_err(in_column)? {
                check_type(field.data_type()).map_err(in_column)?;
                chosen.dictionaries |= has_dictionary(field.data_type());
                chosen.sides.push(i);
            } else {
                ColumnLayout::of(field).dtype().map_err(in_column)?;
                chosen.checked[i] = true;
                chosen.tensors.push(i);
            }
        }
        Ok(chosen)
    }

    /// The record batch `block` holds (its bytes `data`, already checked), of the chosen
    /// columns in the order asked for, under `schema` (the projected schema).
    fn read(
        &self,
        tensors: &FileDecoder,
        sides: &FileDecoder,
        block: &Block,
        data: &Buffer,
        schema: &SchemaRef,
        index: usize,
    ) -> Result<RecordBatch> {
        let decode = |decoder: &FileDecoder, columns: &[usize]| -> Result<Option<RecordBatch>> {
            if columns.is_empty() && !self.order.is_empty() {
                return Ok(None);
            }
            decoder
                .read_record_batch(block, data)
                .map_err(|e| invalid(format!("batch {index}: {e}")))?
                .ok_or_else(|| invalid(format!("batch {index}: no record batch")))
                .map(Some)
        };
        // Arrow's decompression and validation of a compressed batch may panic too.
        let tensor_batch = catch_panic(
            || decode(tensors, &self.tensors),
            |what| invalid(format!("batch {index}: {what}")),
        )?;
        // Arrow's decoder and validation panic on some malformed side columns.
        let side_batch = catch_panic(
            || decode(sides, &self.sides),
            |what| invalid(format!("batch {index}: side columns: {what}")),
        )?;
        let rows = tensor_batch
            .iter()
            .chain(&side_batch)
            .map(RecordBatch::num_rows)
            .next()
            .unwrap_or(0);
        let arrays = self
            .order
            .iter()
            .map(|i| {
                let (batch, columns) = match self.tensors.binary_search(i) {
                    Ok(_) => (&tensor_batch, &self.tensors),
                    Err(_) => (&side_batch, &self.sides),
                };
                let at = columns
                    .binary_search(i)
                    .expect("every chosen column is read");
                batch.as_ref().expect("a decoded batch").column(at).clone()
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(schema.clone(), arrays, &options)
            .map_err(Error::decoding(FileFormat::Ipc))
    }
}

/// Whether `data_type` holds a dictionary at any depth.
fn has_dictionary(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(..) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_dictionary(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_dictionary(f.data_type())),
        _ => false,
    }
}

/// The bytes of `block` (named `what` in errors), checked to lie in the file with an 8-byte
/// aligned body.
fn block_bytes(mapping: &Buffer, block: &Block, what: &str) -> Result<Buffer> {
    let at_block = |reason: String| invalid(format!("{what}: {reason}"));
    let (offset, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
    let (Ok(offset), Ok(meta), Ok(body)) = (
        usize::try_from(offset),
        usize::try_from(meta),
        usize::try_from(body),
    ) else {
        return Err(at_block(format!(
            "block has a negative offset or length (offset {offset}, metadata {meta}, body {body})"
        )));
    };
    let end = offset
        .checked_add(meta)
        .and_then(|e| e.checked_add(body))
        .filter(|&e| e <= mapping.len())
        .ok_or_else(|| {
            at_block(format!(
                "block at {offset} of {meta} + {body} bytes ends past the file's {} bytes",
                mapping.len()
            ))
        })?;
    if meta < 8 {
        return Err(at_block(format!("metadata of {meta} bytes is too short")));
    }
    // The IPC format pads every buffer to 8 bytes and the mapping is page-aligned: a
    // misaligned body would otherwise be copied.
    if (offset + meta) % 8 != 0 {
        return Err(at_block(format!(
            "body at {} is not 8-byte aligned",
            offset + meta
        )));
    }
    Ok(mapping.slice_with_length(offset, end - offset))
}

/// Checks that the dictionary batch in `data` (its message in the first `meta` bytes) has
/// every buffer inside its body, 8-byte aligned: Arrow's decoder slices them unchecked.
fn check_dictionary(data: &Buffer, meta: usize, what: &str) -> Result<()> {
    let invalid = |reason: String| invalid(format!("{what}: {reason}"));
    let bytes = data.as_slice();
    let skip = if bytes[..4] == [0xff; 4] { 8 } else { 4 };
    let message = arrow_ipc::root_as_message(&bytes[skip..meta])
        .map_err(|e| invalid(format!("message: {e}")))?;
    let batch = message
        .header_as_dictionary_batch()
        .and_then(|d| d.data())
        .ok_or_else(|| invalid("block is not a dictionary batch".to_owned()))?;
    check_buffers(&batch, &data.slice(meta)).map_err(|e| match e.into_kind() {
        ErrorKind::Format(FormatError::InvalidFile { reason, .. }) => invalid(reason),
        other => Error::new(other),
    })
}

/// The bytes of one block, after checking that the block lies inside the file, that it
/// holds a record batch, and (see [`check_batch`]) that the batch's layout and offsets are
/// valid (`checked`: for which columns fully).
fn check_block(
    mapping: &Buffer,
    block: &Block,
    version: MetadataVersion,
    schema: &Schema,
    checked: &[bool],
    index: usize,
    validate: bool,
) -> Result<(Buffer, bool)> {
    let at_batch = |reason: String| invalid(format!("batch {index}: {reason}"));
    let data = block_bytes(mapping, block, &format!("batch {index}"))?;
    let meta = block.metaDataLength() as usize;
    let bytes = data.as_slice();
    let skip = if bytes[..4] == [0xff; 4] { 8 } else { 4 };
    let message = arrow_ipc::root_as_message(&bytes[skip..meta])
        .map_err(|e| at_batch(format!("message: {e}")))?;
    if version != MetadataVersion::V1 && message.version() != version {
        return Err(at_batch(
            "message version differs from the footer's".to_owned(),
        ));
    }
    let batch = message
        .header_as_record_batch()
        .ok_or_else(|| at_batch("block is not a record batch".to_owned()))?;
    let compressed = check_batch(schema, checked, &batch, &data.slice(meta), index, validate)?;
    Ok((data, compressed))
}
