//! Encoding of a row group's column chunks straight from the LoD offsets.
//!
//! Each dataset column is one Parquet leaf (format-spec.md §8.1). Its levels follow from
//! the offsets alone: an element's first item repeats at the depth of the outermost
//! sequence it begins (0 for a row), its other items at the element's own depth; every
//! item is defined to the maximum; an empty sequence at level `j` is one entry, defined to
//! `2j + 1`, with no value. Levels are filled in runs, a few rows at a time, and the values
//! go to the column writer as the slice they are in the dataset (converted only where the
//! Parquet physical type is wider or a byte array). The file is byte for byte what the
//! `parquet` crate's Arrow writer makes of the same rows, without its per-item index of
//! values. Columns of plain numbers are written by [`super::page_encoder`] instead, which
//! keeps these levels as runs.

use std::io::Write;
use std::ops::Range;

use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, compute_leaves};
use parquet::column::writer::{ColumnCloseResult, ColumnWriter, get_column_writer};
use parquet::data_type::{ByteArray, FixedLenByteArray};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};

use crate::dataset::{Column, Dataset};
use crate::error::Result;
use crate::lod::Lod;
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// About how many level entries one call of the column writer gets (a longer row goes
/// whole).
const LEVELS_PER_WRITE: usize = 1 << 16;

/// Writes the rows of `parts` (in order) as one row group of `file`, column after column,
/// each page straight into the file. Side columns (any number of leaves each) go through
/// the `parquet` crate's Arrow column writers, made for `schema` (the file's Arrow schema).
pub(super) fn write_row_group<W: Write + Send>(
    file: &mut SerializedFileWriter<W>,
    parts: &[Dataset],
    schema: &SchemaRef,
) -> Result<()> {
    let leaves = file.schema_descr().columns().to_vec();
    let mut side_writers = match parts.first() {
        Some(p) if p.columns().iter().any(Column::is_side) => {
            let index = file.flushed_row_groups().len();
            ArrowRowGroupWriterFactory::new(file, schema.clone()).create_column_writers(index)?
        }
        _ => Vec::new(),
    }
    .into_iter();
    let mut row_group = file.next_row_group()?;
    let mut leaf = 0;
    for (column, field) in schema.fields().iter().enumerate() {
        let side = parts.first().is_some_and(|p| p.columns()[column].is_side());
        if !side {
            let descr = &leaves[leaf];
            let mut writer = row_group
                .next_column()?
                .ok_or_else(|| internal(format!("no column writer for leaf {}", descr.path())))?;
            write_column(writer.untyped(), parts, column, descr)?;
            writer.close()?;
            if let Some(skipped) = side_writers.next() {
                drop(skipped); // The Arrow writer of this tensor's leaf, not used.
            }
            leaf += 1;
            continue;
        }
        let n = leaf_count(field.data_type());
        let mut writers: Vec<_> = side_writers.by_ref().take(n).collect();
        for part in parts {
            let array = part.columns()[column].to_arrow();
            for (writer, leaf) in writers.iter_mut().zip(compute_leaves(field, &array)?) {
                writer.write(&leaf)?;
            }
        }
        for writer in writers {
            writer.close()?.append_to_row_group(&mut row_group)?;
        }
        leaf += n;
    }
    row_group.close()?;
    Ok(())
}

/// The number of Parquet leaves of a column of `data_type`, as the `parquet` crate's Arrow
/// writer maps it: one per primitive, through lists, maps and dictionaries, summed over a
/// struct's fields.
pub(super) fn leaf_count(data_type: &DataType) -> usize {
    match data_type {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::Map(f, _) => leaf_count(f.data_type()),
        DataType::Struct(fields) => fields.iter().map(|f| leaf_count(f.data_type())).sum(),
        _ => 1,
    }
}

/// One column chunk, encoded in memory, ready to be appended to its row group.
pub(super) struct EncodedChunk {
    data: Bytes,
    close: ColumnCloseResult,
}

/// Encodes the rows of `parts` (in order) as the chunks of one row group, in memory, so
/// that several row groups can be encoded at once; `buffers` (emptied ones from earlier
/// row groups, any number) are used before new ones.
pub(super) fn encode_row_group(
    parts: &[Dataset],
    schema: &SchemaDescriptor,
    props: &WriterPropertiesPtr,
    mut buffers: Vec<Vec<u8>>,
) -> Result<Vec<EncodedChunk>> {
    schema
        .columns()
        .iter()
        .enumerate()
        .map(|(column, descr)| {
            let capacity = parts
                .iter()
                .filter_map(|p| p.columns().get(column))
                .map(raw_bytes)
                .sum();
            let mut buffer = buffers.pop().unwrap_or_default();
            buffer.clear();
            buffer.reserve(capacity);
            let mut sink = TrackedWrite::new(buffer);
            let close = {
                let page_writer = Box::new(SerializedPageWriter::new(&mut sink));
                let mut writer = get_column_writer(descr.clone(), props.clone(), page_writer);
                write_column(&mut writer, parts, column, descr)?;
                writer.close()?
            };
            Ok(EncodedChunk {
                data: Bytes::from(sink.into_inner()?),
                close,
            })
        })
        .collect()
}

/// Writes encoded chunks as the next row group of `file`, and returns their buffers (to
/// be reused: their pages are already in place, which saves the kernel zeroing new ones).
pub(super) fn append_row_group<W: Write + Send>(
    file: &mut SerializedFileWriter<W>,
    chunks: Vec<EncodedChunk>,
) -> Result<Vec<Vec<u8>>> {
    let mut row_group = file.next_row_group()?;
    let mut buffers = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        row_group.append_column(&chunk.data, chunk.close)?;
        buffers.push(Vec::from(chunk.data));
    }
    row_group.close()?;
    Ok(buffers)
}

/// Writes column `column` of every part with `writer`, the column writer of leaf `descr`.
fn write_column(
    writer: &mut ColumnWriter<'_>,
    parts: &[Dataset],
    column: usize,
    descr: &ColumnDescPtr,
) -> Result<()> {
    let mut levels = Levels::default();
    let mut scratch = Scratch::default();
    for part in leaves(parts, column, descr) {
        let (tensor, leaf) = part?;
        let mut row = 0;
        while row < tensor.num_rows() {
            let (end, items) = levels.fill(tensor, &leaf, row);
            write_values(writer, tensor.values(), items, &levels, &mut scratch)?;
            row = end;
        }
    }
    Ok(())
}

/// Column `column` of each of `parts`, with the leaf `descr` it is written to.
pub(super) fn leaves<'a>(
    parts: &'a [Dataset],
    column: usize,
    descr: &'a ColumnDescPtr,
) -> impl Iterator<Item = Result<(&'a LodTensor, Leaf)>> + 'a {
    parts.iter().map(move |part| {
        let tensor = part
            .columns()
            .get(column)
            .ok_or_else(|| internal(format!("no column {column} for leaf {}", descr.path())))?
            .tensor()?;
        Ok((tensor, Leaf::of(tensor, descr)?))
    })
}

/// What the levels of one column's leaf are made of.
#[derive(Clone)]
pub(super) struct Leaf {
    /// The LoD levels.
    pub(super) levels: usize,
    /// Items per element when elements are tensors (a `FixedSizeList`), `None` for scalars.
    pub(super) element_items: Option<usize>,
    pub(super) max_rep: i16,
    pub(super) max_def: i16,
}

impl Leaf {
    /// The leaf of `tensor`, checked against the Parquet column it is written to. Every
    /// field of the layout is nullable, so each list adds two definition levels (present,
    /// non-empty) and one repetition level, and the item one definition level.
    pub(super) fn of(tensor: &LodTensor, descr: &ColumnDescPtr) -> Result<Leaf> {
        let levels = tensor.num_levels();
        let element_items =
            (!tensor.element_shape().is_empty()).then(|| tensor.values().element_size());
        let lists = levels + usize::from(element_items.is_some());
        let max_rep = i16::try_from(lists).map_err(|_| internal(format!("{lists} levels")))?;
        let leaf = Leaf {
            levels,
            element_items,
            max_rep,
            max_def: 2 * max_rep + 1,
        };
        if (descr.max_rep_level(), descr.max_def_level()) != (leaf.max_rep, leaf.max_def) {
            return Err(internal(format!(
                "leaf {} has levels ({}, {}), the tensor ({}, {})",
                descr.path(),
                descr.max_rep_level(),
                descr.max_def_level(),
                leaf.max_rep,
                leaf.max_def
            )));
        }
        Ok(leaf)
    }
}

/// The repetition and definition levels of a few rows of one column.
#[derive(Default)]
struct Levels {
    rep: Vec<i16>,
    def: Vec<i16>,
    /// Whether the leaf has repetition levels (it has none for scalars with no LoD).
    repeated: bool,
}

impl Levels {
    /// Fills the levels of the rows of `tensor` from `first` on, stopping after the row that
    /// reaches [`LEVELS_PER_WRITE`] entries. Returns the row after the last one filled and
    /// the items of those rows in the values.
    fn fill(&mut self, tensor: &LodTensor, leaf: &Leaf, first: usize) -> (usize, Range<usize>) {
        self.rep.clear();
        self.def.clear();
        self.repeated = leaf.max_rep > 0;
        let lod = tensor.lod();
        let rows = tensor.num_rows();
        let mut row = first;
        while row < rows && self.def.len() < LEVELS_PER_WRITE {
            if leaf.levels == 0 {
                self.element(leaf, 0);
            } else {
                self.sequence(lod, leaf, 0, row, 0);
            }
            row += 1;
        }
        let size = tensor.values().element_size();
        let elements = if leaf.levels == 0 {
            first..row
        } else {
            element_position(lod, first)..element_position(lod, row)
        };
        (row, elements.start * size..elements.end * size)
    }

    /// Sequence `index` of `level`, whose first entry repeats at `rep`.
    fn sequence(&mut self, lod: &Lod, leaf: &Leaf, level: usize, index: usize, rep: i16) {
        let offsets = &lod.levels()[level];
        let children = offsets.get(index)..offsets.get(index + 1);
        if children.is_empty() {
            // `level` < `leaf.levels` <= `max_rep`, an i16.
            self.push(rep, 2 * level as i16 + 1);
            return;
        }
        // The children are entries of the list at depth `level + 1`.
        let next = level as i16 + 1;
        for child in children.clone() {
            let rep = if child == children.start { rep } else { next };
            if level + 1 == leaf.levels {
                self.element(leaf, rep);
            } else {
                self.sequence(lod, leaf, level + 1, child, rep);
            }
        }
    }

    /// One element whose first item repeats at `rep`.
    fn element(&mut self, leaf: &Leaf, rep: i16) {
        match leaf.element_items {
            None => self.push(rep, leaf.max_def),
            Some(items) => {
                if self.repeated {
                    self.rep.push(rep);
                    self.rep
                        .extend(std::iter::repeat_n(leaf.max_rep, items - 1));
                }
                self.def.extend(std::iter::repeat_n(leaf.max_def, items));
            }
        }
    }

    fn push(&mut self, rep: i16, def: i16) {
        if self.repeated {
            self.rep.push(rep);
        }
        self.def.push(def);
    }

    fn rep(&self) -> Option<&[i16]> {
        self.repeated.then_some(&self.rep[..])
    }
}

/// About how many bytes the rows in view of `column` hold (values and offsets).
pub(super) fn raw_bytes(column: &Column) -> usize {
    let Some(t) = column.as_tensor() else {
        return column.to_arrow().get_buffer_memory_size();
    };
    let elements = t.elements();
    let items = (elements.end - elements.start) * t.values().element_size();
    let values = match t.dtype().byte_width() {
        Some(width) => items * width,
        None => items.div_ceil(8),
    };
    let offsets: usize = (0..t.num_levels())
        .map(|level| (t.lod().num_sequences(level).unwrap_or(0) + 1) * 8)
        .sum();
    values + offsets
}

/// Where row `row`'s elements begin, followed down the levels.
pub(super) fn element_position(lod: &Lod, row: usize) -> usize {
    lod.descend(0, row..row, lod.num_levels()).start
}

/// Buffers reused for values whose Parquet physical type differs from their dtype.
#[derive(Default)]
struct Scratch {
    int32: Vec<i32>,
    int64: Vec<i64>,
    booleans: Vec<bool>,
    fixed: Vec<FixedLenByteArray>,
}

/// Writes `items` of `values` with `levels` to `writer`.
fn write_values(
    writer: &mut ColumnWriter<'_>,
    values: &Values,
    items: Range<usize>,
    levels: &Levels,
    scratch: &mut Scratch,
) -> Result<()> {
    let (def, rep) = (Some(&levels.def[..]), levels.rep());
    let count = items.len();
    let written = match (writer, values.dtype()) {
        (ColumnWriter::FloatColumnWriter(w), DType::Float32) => {
            w.write_batch(&values.typed::<Float32Type>()?[items], def, rep)
        }
        (ColumnWriter::DoubleColumnWriter(w), DType::Float64) => {
            w.write_batch(&values.typed::<Float64Type>()?[items], def, rep)
        }
        (ColumnWriter::Int32ColumnWriter(w), DType::Int32) => {
            w.write_batch(&values.typed::<Int32Type>()?[items], def, rep)
        }
        (ColumnWriter::Int64ColumnWriter(w), DType::Int64) => {
            w.write_batch(&values.typed::<Int64Type>()?[items], def, rep)
        }
        // Narrower and unsigned integers are stored as INT32 / INT64, unsigned ones by
        // their bits (the column's INTEGER annotation says how to read them back).
        (ColumnWriter::Int32ColumnWriter(w), DType::Int8) => {
            let v = convert::<Int8Type, _>(values, items, &mut scratch.int32, i32::from)?;
            w.write_batch(v, def, rep)
        }
        (ColumnWriter::Int32ColumnWriter(w), DType::Int16) => {
            let v = convert::<Int16Type, _>(values, items, &mut scratch.int32, i32::from)?;
            w.write_batch(v, def, rep)
        }
        (ColumnWriter::Int32ColumnWriter(w), DType::UInt8) => {
            let v = convert::<UInt8Type, _>(values, items, &mut scratch.int32, i32::from)?;
            w.write_batch(v, def, rep)
        }
        (ColumnWriter::Int32ColumnWriter(w), DType::UInt16) => {
            let v = convert::<UInt16Type, _>(values, items, &mut scratch.int32, i32::from)?;
            w.write_batch(v, def, rep)
        }
        (ColumnWriter::Int32ColumnWriter(w), DType::UInt32) => {
            let v = convert::<UInt32Type, _>(values, items, &mut scratch.int32, |x| x as i32)?;
            w.write_batch(v, def, rep)
        }
        (ColumnWriter::Int64ColumnWriter(w), DType::UInt64) => {
            let v = convert::<UInt64Type, _>(values, items, &mut scratch.int64, |x| x as i64)?;
            w.write_batch(v, def, rep)
        }
        (ColumnWriter::BoolColumnWriter(w), DType::Bool) => {
            let bits = values.booleans()?.values().slice(items.start, items.len());
            scratch.booleans.clear();
            scratch.booleans.extend(bits.iter());
            w.write_batch(&scratch.booleans, def, rep)
        }
        (ColumnWriter::FixedLenByteArrayColumnWriter(w), DType::Float16) => {
            let halves = &values.typed::<Float16Type>()?[items];
            w.write_batch(float16_bytes(halves, &mut scratch.fixed), def, rep)
        }
        (_, dtype) => {
            return Err(internal(format!(
                "{} values for a leaf of another physical type",
                dtype.name()
            )));
        }
    }?;
    if written != count {
        return Err(internal(format!("{written} of {count} values written")));
    }
    Ok(())
}

/// `halves` as the 2-byte little-endian arrays Parquet stores float16 in (a
/// `FIXED_LEN_BYTE_ARRAY(2)` annotated `FLOAT16`), in `out`.
fn float16_bytes<'a>(
    halves: &[half::f16],
    out: &'a mut Vec<FixedLenByteArray>,
) -> &'a [FixedLenByteArray] {
    let bytes = Bytes::from(
        halves
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    out.clear();
    out.extend(
        (0..halves.len())
            .map(|i| FixedLenByteArray::from(ByteArray::from(bytes.slice(2 * i..2 * i + 2)))),
    );
    out
}

/// `items` of `values` converted by `f` into `out`.
fn convert<'a, T: ArrowPrimitiveType, O>(
    values: &Values,
    items: Range<usize>,
    out: &'a mut Vec<O>,
    f: impl Fn(T::Native) -> O,
) -> Result<&'a [O]> {
    out.clear();
    out.extend(values.typed::<T>()?[items].iter().map(|&v| f(v)));
    Ok(out)
}

/// An inconsistency between the dataset and the Parquet schema made from it.
pub(super) fn internal(message: String) -> crate::error::Error {
    ParquetError::General(message).into()
}
