//! Copying the samples of a shuffled batch into one reused buffer.
//!
//! A gathered batch lives in a single 64-byte-aligned buffer: for each column, each level's
//! rebased offsets, then the values, every part starting on a 64-byte boundary:
//!
//! ```text
//! | col 0 level 0 offsets | col 0 level 1 offsets | col 0 values ……… | col 1 values | pad
//! ```
//!
//! Side columns (format-spec §2.2) are gathered by Arrow's `interleave` into arrays of
//! their own, row for row with the tensors.
//!
//! The buffers come from a small pool: a buffer whose batch has been dropped (the pool then
//! holds the only reference) is taken back and refilled in place, so once the pool holds
//! buffers as large as the largest batch, gathering allocates no data buffer. With shared
//! memory (`super::shared`) the buffer is a region of a `memfd`, from a pool of its own.

use super::packed::Layout;
use crate::error::DataError;
use crate::row_index::RowIndex;
use arrow_array::{Array, ArrayRef, make_array};
use arrow_buffer::{
    ArrowNativeType, Buffer, MutableBuffer, OffsetBuffer, ScalarBuffer, ToByteSlice, bit_util,
};
use arrow_data::ArrayData;
use arrow_schema::{DataType, FieldRef};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::dataset::{Column, Dataset};
use crate::error::Result;
use crate::lod::{LevelOffsets, Lod, OffsetWidth, descend};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

use super::shared::{RegionPool, SharedMemory};

/// Each part of a gathered buffer starts at a multiple of 64 bytes, as the IPC writer aligns
/// buffers (spec §6: at least 8, SHOULD 64), so that typed views of it are aligned.
const ALIGN: usize = 64;

fn align(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// One column of one record batch of the file, ready for copying from.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    /// Level 0 is exactly the record batch's rows; deeper levels as stored.
    levels: Vec<LevelOffsets>,
    /// The whole items buffer.
    items: Buffer,
    /// Where item 0 is in `items` (in items, bits for booleans).
    item_offset: usize,
    /// A side column's array (then the other fields are empty).
    side: Option<ArrayRef>,
}

impl Source {
    pub(crate) fn new(column: &Column) -> Self {
        let Some(tensor) = column.as_tensor() else {
            return Source {
                levels: Vec::new(),
                items: Buffer::from_vec(Vec::<u8>::new()),
                item_offset: 0,
                side: column.side_array().cloned(),
            };
        };
        let data = tensor.values().items().to_data();
        Source {
            levels: tensor.lod().levels().to_vec(),
            items: data.buffers()[0].clone(),
            item_offset: data.offset(),
            side: None,
        }
    }

    /// The bytes of items `items` (items of `width` bytes; not booleans).
    pub(super) fn item_bytes(&self, items: std::ops::Range<usize>, width: usize) -> &[u8] {
        let at = |i: usize| (self.item_offset + i) * width;
        &self.items.as_slice()[at(items.start)..at(items.end)]
    }

    /// The entries of level `level` (or the elements, for `level == num_levels`) under
    /// rows `rows`.
    fn range(&self, rows: (usize, usize), level: usize) -> (usize, usize) {
        let r = descend(&self.levels[..level], rows.0..rows.1);
        (r.start, r.end)
    }
}

/// What every record batch of a column shares.
#[derive(Clone, Debug)]
pub(crate) struct ColumnInfo {
    pub name: String,
    pub level_names: Vec<String>,
    /// Every level's offset width (none for a side column).
    pub widths: Vec<OffsetWidth>,
    pub values: ValuesInfo,
}

/// What a column's values are.
#[derive(Clone, Debug)]
pub(crate) enum ValuesInfo {
    /// A tensor's elements.
    Tensor {
        dtype: DType,
        element_shape: Vec<usize>,
        element_size: usize,
    },
    /// A side column, of this field.
    Side(FieldRef),
}

impl ValuesInfo {
    /// A tensor's item type and items per element; `None` for a side column.
    fn tensor(&self) -> Option<(DType, usize)> {
        match *self {
            ValuesInfo::Tensor {
                dtype,
                element_size,
                ..
            } => Some((dtype, element_size)),
            ValuesInfo::Side(_) => None,
        }
    }
}

impl ColumnInfo {
    pub(crate) fn new(column: &Column) -> Self {
        let Some(t) = column.as_tensor() else {
            let field = column.arrow_field().with_name(column.name());
            return ColumnInfo {
                name: column.name().to_owned(),
                level_names: Vec::new(),
                widths: Vec::new(),
                values: ValuesInfo::Side(std::sync::Arc::new(field)),
            };
        };
        ColumnInfo {
            name: column.name().to_owned(),
            level_names: column.level_names().to_vec(),
            widths: t.lod().levels().iter().map(LevelOffsets::width).collect(),
            values: ValuesInfo::Tensor {
                dtype: t.dtype(),
                element_shape: t.element_shape().to_vec(),
                element_size: t.values().element_size(),
            },
        }
    }
}

/// Counters of the gathering buffers.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let mut loader = Loader::builder(&file).with_batch_size(2).with_shuffle(8).build()?;
/// while loader.next_batch()?.is_some() {}
/// let stats = loader.stats();
/// assert_eq!(stats.views + stats.gathered, 3);
/// assert!(stats.allocations <= 2);                           // buffers are reused
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatherStats {
    /// Batches gathered (copied).
    pub gathered: u64,
    /// Batches returned as views of the mapping.
    pub views: u64,
    /// Buffers allocated because none in the pool was free.
    pub allocations: u64,
    /// Free buffers that had to grow for a larger batch.
    pub growths: u64,
    /// Bytes copied into gathered batches (values and offsets).
    pub bytes_copied: u64,
}

/// Reused buffers and scratch space for gathering.
#[derive(Debug)]
pub(crate) struct Gatherer {
    pool: Vec<Buffer>,
    /// `(record batch, first row, end row)` runs of the batch being gathered.
    runs: Vec<(usize, usize, usize)>,
    /// `(byte position, count)` of each part of the buffer being filled.
    parts: Vec<(usize, usize)>,
    /// The packed batch being loaded.
    pub layout: Layout,
    pub stats: GatherStats,
    /// The regions of shared memory to gather into, if gathering there.
    regions: Option<RegionPool>,
    /// The region the last gathered batch was written into (taken by the caller).
    pub region: Option<Arc<SharedMemory>>,
}

/// Buffers kept for reuse; more than this in flight and the extra ones are freed.
const POOL_SLOTS: usize = 8;
/// Shared-memory regions kept; with every one held or lent, a batch is gathered on the heap.
pub(super) const REGION_SLOTS: usize = 16;

impl Gatherer {
    /// A gatherer with no buffers yet, writing into shared memory when `shared`.
    pub(crate) fn new(shared: bool) -> Self {
        Gatherer {
            pool: Vec::new(),
            runs: Vec::new(),
            parts: Vec::new(),
            layout: Layout::default(),
            stats: GatherStats::default(),
            regions: shared.then(|| RegionPool::new(REGION_SLOTS)),
            region: None,
        }
    }

    /// A free buffer of at least `capacity` bytes, from the pool if one is free.
    pub(super) fn take(&mut self, capacity: usize) -> MutableBuffer {
        if let Some(i) = self.pool.iter().position(|b| b.strong_count() == 1) {
            match self.pool.swap_remove(i).into_mutable() {
                Ok(mut m) => {
                    m.clear();
                    if m.capacity() < capacity {
                        self.stats.growths += 1;
                        m.reserve(capacity);
                    }
                    return m;
                }
                Err(b) => self.pool.push(b),
            }
        }
        self.stats.allocations += 1;
        MutableBuffer::with_capacity(capacity)
    }

    pub(super) fn keep(&mut self, buffer: &Buffer) {
        if self.pool.len() == POOL_SLOTS {
            self.pool.remove(0);
        }
        self.pool.push(buffer.clone());
    }

    /// Copies the rows `samples` (global) of every column into one buffer and returns
    /// them as a dataset.
    pub(crate) fn gather(
        &mut self,
        samples: &[usize],
        rows: &RowIndex,
        sources: &[Vec<Source>],
        columns: &[ColumnInfo],
    ) -> Result<Dataset> {
        self.find_runs(samples, rows);
        // Sizes first, so the buffer is reserved once: per level `entries + 1` offsets
        // (spec §4 rule 5), then the items, each part padded to ALIGN.
        let total = self.total_bytes(sources, columns);
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        let mut sides = Vec::new();
        self.region = None;
        let buffer = match self.take_region(total) {
            Some(mut region) => {
                let bytes = Arc::get_mut(&mut region).expect("a region no one holds");
                let mut out = Filling {
                    bytes: bytes.buffer_mut(),
                    len: 0,
                };
                self.fill(&mut out, sources, columns, &mut parts, &mut sides)?;
                let len = out.len;
                let start = NonNull::new(region.as_ptr().cast_mut())
                    .expect("a mapping is not at address 0")
                    .map_addr(|a| a.saturating_add(super::shared::HEADER));
                if let Some(pool) = &mut self.regions {
                    pool.keep(region.clone());
                }
                self.region = Some(region.clone());
                // SAFETY: the region's buffer starts HEADER bytes into the mapping and
                // holds at least `total` >= `len` bytes; `region` (the owner) keeps the
                // mapping alive as long as the buffer, and the pool writes the region again
                // only when no buffer holds it (and it is not lent).
                unsafe { Buffer::from_custom_allocation(start, len, region) }
            }
            None => {
                let mut out = self.take(total);
                self.fill(&mut out, sources, columns, &mut parts, &mut sides)?;
                let buffer: Buffer = out.into();
                self.keep(&buffer);
                buffer
            }
        };
        debug_assert_eq!(buffer.len(), total);
        self.stats.bytes_copied += buffer.len() as u64;
        self.stats.gathered += 1;
        let dataset = build_dataset(&buffer, &parts, columns, sides);
        self.parts = parts;
        dataset
    }

    /// Writes every column's parts into `out`, recording `(position, count)` in `parts`
    /// and gathering side columns into `sides`.
    fn fill(
        &self,
        out: &mut impl Sink,
        sources: &[Vec<Source>],
        columns: &[ColumnInfo],
        parts: &mut Vec<(usize, usize)>,
        sides: &mut Vec<ArrayRef>,
    ) -> Result<()> {
        for (c, info) in columns.iter().enumerate() {
            let Some((dtype, element_size)) = info.values.tensor() else {
                sides.push(self.gather_side(sources, c)?);
                continue;
            };
            for (level, &width) in info.widths.iter().enumerate() {
                let at = out.len();
                let count = self.copy_offsets(out, sources, c, level, width)?;
                parts.push((at, count));
                pad_to_alignment(out);
            }
            let at = out.len();
            let items = self.copy_values(out, sources, c, info.widths.len(), (dtype, element_size));
            parts.push((at, items));
            pad_to_alignment(out);
        }
        Ok(())
    }

    /// A region of shared memory of at least `total` bytes that no batch holds and no
    /// process borrows, out of the pool (or new), when gathering into shared memory.
    fn take_region(&mut self, total: usize) -> Option<Arc<SharedMemory>> {
        let pool = self.regions.as_mut()?;
        let made = pool.made();
        let region = pool.take_unheld(total);
        self.stats.allocations += pool.made() - made;
        region
    }

    /// Splits `samples` into runs: consecutive rows of one record batch become one run.
    fn find_runs(&mut self, samples: &[usize], rows: &RowIndex) {
        self.runs.clear();
        for &row in samples {
            let (b, local) = rows.locate(row).expect("plans hold rows of the file");
            match self.runs.last_mut() {
                Some((rb, _, end)) if *rb == b && *end == local => *end += 1,
                _ => self.runs.push((b, local, local + 1)),
            }
        }
    }

    /// The bytes of the gathered buffer: every level's offsets and every column's values,
    /// each part padded to the alignment.
    fn total_bytes(&self, sources: &[Vec<Source>], columns: &[ColumnInfo]) -> usize {
        let mut total = 0;
        for (c, info) in columns.iter().enumerate() {
            let Some((dtype, element_size)) = info.values.tensor() else {
                continue;
            };
            for (level, width) in info.widths.iter().enumerate() {
                let entries: usize = self
                    .runs
                    .iter()
                    .map(|&(b, lo, hi)| {
                        let (s, e) = sources[b][c].range((lo, hi), level);
                        e - s
                    })
                    .sum();
                total += align((entries + 1) * offset_bytes(*width));
            }
            let items = self.elements(sources, c, info.widths.len()) * element_size;
            total += align(item_bytes(dtype, items));
        }
        total
    }

    /// Appends the rebased offsets of `level` of column `c` over the runs; returns how many.
    /// Spec §2, §4 rules 1-4: the offsets are rebuilt from 0 as running sums of the gathered
    /// lengths, so their last is the next level's count.
    fn copy_offsets(
        &self,
        out: &mut impl Sink,
        sources: &[Vec<Source>],
        c: usize,
        level: usize,
        width: OffsetWidth,
    ) -> Result<usize> {
        push_offset(out, width, 0, level, 0)?;
        let mut cur = 0usize;
        let mut count = 1;
        for &(b, lo, hi) in &self.runs {
            let src = &sources[b][c];
            let (s, e) = src.range((lo, hi), level);
            let o = &src.levels[level];
            let mut prev = o.get(s);
            for j in s..e {
                let next = o.get(j + 1);
                cur += next - prev;
                prev = next;
                push_offset(out, width, cur, level, count)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// Appends the values of column `c` (of `levels` levels, elements of `element_size`
    /// items of `dtype`) under the runs; returns how many items.
    fn copy_values(
        &self,
        out: &mut impl Sink,
        sources: &[Vec<Source>],
        c: usize,
        levels: usize,
        (dtype, element_size): (DType, usize),
    ) -> usize {
        let items = self.elements(sources, c, levels) * element_size;
        match dtype.byte_width() {
            // Arrow layout, primitive: the items back to back, row-major per element
            // (spec §2.1), copied run by run.
            Some(w) => {
                for &(b, lo, hi) in &self.runs {
                    let src = &sources[b][c];
                    let (s, e) = src.range((lo, hi), levels);
                    let first = (src.item_offset + s * element_size) * w;
                    let len = (e - s) * element_size * w;
                    out.extend_from_slice(&src.items.as_slice()[first..first + len]);
                }
            }
            // Arrow layout, boolean: one bit per item, least significant bit first, so
            // runs that do not start on a byte boundary are copied bit by bit.
            None => {
                let at = out.len();
                out.extend_zeros(items.div_ceil(8));
                let bits = &mut out.as_slice_mut()[at..];
                let mut i = 0;
                for &(b, lo, hi) in &self.runs {
                    let src = &sources[b][c];
                    let (s, e) = src.range((lo, hi), levels);
                    let from = src.items.as_slice();
                    for k in s * element_size..e * element_size {
                        if bit_util::get_bit(from, src.item_offset + k) {
                            bit_util::set_bit(bits, i);
                        }
                        i += 1;
                    }
                }
            }
        }
        items
    }

    /// The rows of side column `c` under the current runs, gathered by Arrow's
    /// `interleave` (a slice, sharing the buffers, when they are one run).
    fn gather_side(&self, sources: &[Vec<Source>], c: usize) -> Result<ArrayRef> {
        let arrays: Vec<&dyn Array> = sources
            .iter()
            .map(|b| {
                b[c].side
                    .as_deref()
                    .expect("a side column's source has its array")
            })
            .collect();
        if let [(b, lo, hi)] = self.runs[..] {
            return Ok(arrays[b].slice(lo, hi - lo));
        }
        let rows: Vec<(usize, usize)> = self
            .runs
            .iter()
            .flat_map(|&(b, lo, hi)| (lo..hi).map(move |row| (b, row)))
            .collect();
        interleave_rows(&arrays, &rows)
    }

    /// The elements of column `c` under the current runs.
    fn elements(&self, sources: &[Vec<Source>], c: usize, levels: usize) -> usize {
        self.runs
            .iter()
            .map(|&(b, lo, hi)| {
                let (s, e) = sources[b][c].range((lo, hi), levels);
                e - s
            })
            .sum()
    }
}

/// The rows `rows` (`(array, row)`) of `arrays`, by Arrow's `interleave` (dictionaries
/// sharing one dictionary: by their keys).
pub(super) fn interleave_rows(arrays: &[&dyn Array], rows: &[(usize, usize)]) -> Result<ArrayRef> {
    if let Some(gathered) = interleave_keys(arrays, rows)? {
        return Ok(gathered);
    }
    Ok(arrow_select::interleave::interleave(arrays, rows)?)
}

/// The rows `rows` of dictionary arrays that share one dictionary (every record batch of a
/// file does): their keys interleaved over that dictionary, which Arrow's `interleave`
/// would concatenate once per array. `None` for other arrays.
fn interleave_keys(arrays: &[&dyn Array], rows: &[(usize, usize)]) -> Result<Option<ArrayRef>> {
    let DataType::Dictionary(key_type, _) = arrays[0].data_type() else {
        return Ok(None);
    };
    let datas: Vec<ArrayData> = arrays.iter().map(|a| a.to_data()).collect();
    let values = &datas[0].child_data()[0];
    if !datas.iter().all(|d| d.child_data()[0].ptr_eq(values)) {
        return Ok(None);
    }
    let keys = datas
        .iter()
        .map(|d| {
            let keys = d
                .clone()
                .into_builder()
                .data_type(key_type.as_ref().clone());
            Ok(make_array(keys.child_data(Vec::new()).build()?))
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let keys: Vec<&dyn Array> = keys.iter().map(AsRef::as_ref).collect();
    let gathered = arrow_select::interleave::interleave(&keys, rows)?.to_data();
    let dictionary = gathered
        .into_builder()
        .data_type(arrays[0].data_type().clone())
        .child_data(vec![values.clone()])
        .build()?;
    Ok(Some(make_array(dictionary)))
}

/// The columns whose parts `parts` (`(byte position, count)`: each level's offsets, then
/// the values, tensor column after tensor column) lie in `buffer`, and whose side columns
/// are `sides`, in order.
fn build_dataset(
    buffer: &Buffer,
    parts: &[(usize, usize)],
    columns: &[ColumnInfo],
    sides: Vec<ArrayRef>,
) -> Result<Dataset> {
    let mut part = parts.iter().copied();
    let mut sides = sides.into_iter();
    let mut built = Vec::with_capacity(columns.len());
    for info in columns {
        let (dtype, element_shape) = match &info.values {
            ValuesInfo::Tensor {
                dtype,
                element_shape,
                ..
            } => (*dtype, element_shape),
            ValuesInfo::Side(field) => {
                let array = sides.next().expect("one array per side column");
                built.push(Column::side_with_field(field.as_ref().clone(), array)?);
                continue;
            }
        };
        let mut levels = Vec::with_capacity(info.widths.len());
        for &width in &info.widths {
            let (at, count) = part.next().expect("one part per level");
            levels.push(match width {
                // SAFETY: the offsets were written from 0 by adding non-negative lengths,
                // so they never decrease.
                OffsetWidth::I32 => LevelOffsets::I32(unsafe {
                    OffsetBuffer::new_unchecked(ScalarBuffer::new(buffer.clone(), at / 4, count))
                }),
                // SAFETY: as above.
                OffsetWidth::I64 => LevelOffsets::I64(unsafe {
                    OffsetBuffer::new_unchecked(ScalarBuffer::new(buffer.clone(), at / 8, count))
                }),
            });
        }
        let (at, items) = part.next().expect("one part per column's values");
        let bytes = item_bytes(dtype, items);
        let data = ArrayData::builder(dtype.arrow_type())
            .len(items)
            .add_buffer(buffer.slice_with_length(at, bytes))
            .build()?;
        let array: ArrayRef = make_array(data);
        let values = Values::try_new(array, element_shape.clone())?;
        let tensor = LodTensor::try_new(Lod::try_new(levels)?, values)?;
        built.push(
            Column::new(info.name.clone(), tensor)
                .with_level_names(info.level_names.iter().cloned())?,
        );
    }
    Ok(Dataset::from_checked_columns(built))
}

fn offset_bytes(width: OffsetWidth) -> usize {
    match width {
        OffsetWidth::I32 => 4,
        OffsetWidth::I64 => 8,
    }
}

fn item_bytes(dtype: DType, items: usize) -> usize {
    match dtype.byte_width() {
        Some(w) => items * w,
        None => items.div_ceil(8),
    }
}

fn pad_to_alignment(out: &mut impl Sink) {
    let len = out.len();
    out.extend_zeros(align(len) - len);
}

fn push_offset(
    out: &mut impl Sink,
    width: OffsetWidth,
    value: usize,
    level: usize,
    index: usize,
) -> Result<()> {
    let overflow = || DataError::OffsetOverflow {
        level,
        index,
        value: value as u128,
        width: width.name(),
    };
    match width {
        OffsetWidth::I32 => out.push(i32::try_from(value).map_err(|_| overflow())?),
        OffsetWidth::I64 => out.push(i64::try_from(value).map_err(|_| overflow())?),
    }
    Ok(())
}

/// What a gathered batch is written into, from the front: a heap buffer, or the buffer of a
/// shared-memory region (`Filling`).
trait Sink {
    fn len(&self) -> usize;
    fn extend_from_slice(&mut self, bytes: &[u8]);
    fn extend_zeros(&mut self, n: usize);
    fn push<T: ArrowNativeType>(&mut self, value: T);
    /// The bytes written so far.
    fn as_slice_mut(&mut self) -> &mut [u8];
}

impl Sink for MutableBuffer {
    fn len(&self) -> usize {
        MutableBuffer::len(self)
    }
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        MutableBuffer::extend_from_slice(self, bytes);
    }
    fn extend_zeros(&mut self, n: usize) {
        MutableBuffer::extend_zeros(self, n);
    }
    fn push<T: ArrowNativeType>(&mut self, value: T) {
        MutableBuffer::push(self, value);
    }
    fn as_slice_mut(&mut self) -> &mut [u8] {
        MutableBuffer::as_slice_mut(self)
    }
}

/// A region's buffer being filled: `len` bytes written. Sized by `total_bytes` first, so a
/// write past its end is a bug (and panics rather than write out of bounds).
struct Filling<'a> {
    bytes: &'a mut [u8],
    len: usize,
}

impl Filling<'_> {
    fn next(&mut self, n: usize) -> &mut [u8] {
        let at = self.len;
        self.len += n;
        &mut self.bytes[at..at + n]
    }
}

impl Sink for Filling<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.next(bytes.len()).copy_from_slice(bytes);
    }
    fn extend_zeros(&mut self, n: usize) {
        self.next(n).fill(0);
    }
    fn push<T: ArrowNativeType>(&mut self, value: T) {
        self.extend_from_slice(std::slice::from_ref(&value).to_byte_slice());
    }
    fn as_slice_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[..self.len]
    }
}
