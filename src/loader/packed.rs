//! Loading a packed batch: the tokens of its windows, column by column, as a LoD tensor of
//! two levels (windows, then the pieces of documents in them). The values are a view of the
//! mapping when the windows' tokens are consecutive elements of one record batch, else
//! copied once; padding is zeros, a piece of its own at the end of its window. Side
//! columns and 0-level tensors are carried per window: the values of its pieces'
//! documents, copied (one value per piece).

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ListArray, make_array};
use arrow_buffer::{Buffer, OffsetBuffer};
use arrow_data::ArrayData;
use arrow_schema::Field;

use super::gather::{ColumnInfo, Gatherer, Source, ValuesInfo, interleave_rows};
use super::pack::{PackMode, Packing, Piece, Windows};
use super::store::{Places, PlanInputs};
use crate::dataset::{Column, Dataset};
use crate::error::{ArgumentError, Error, Result};
use crate::lod::{LevelOffsets, Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// A batch of windows: its pieces of documents, window after window, and each window's
/// padding (a segment of its own after the window's pieces). Kept by the loader and
/// refilled for each batch, so that a batch allocates no scratch.
#[derive(Debug, Default)]
pub(super) struct Layout {
    pieces: Vec<Piece>,
    /// Pieces per window.
    counts: Vec<usize>,
    /// Tokens of padding per window (0: none).
    padding: Vec<usize>,
    /// Tokens per window, padding included.
    window_len: usize,
    /// Where a column's pieces lie: (record batch, elements), piece after piece.
    parts: Vec<(usize, Range<usize>)>,
}

impl Layout {
    /// Refills the layout with windows `ids` of `windows`.
    fn fill(&mut self, windows: &Windows, ids: &[usize]) {
        // Windows packed to other lengths (a packed mixture's, around a change of its pack
        // length) are padded to the longest.
        self.window_len = windows.longest_of(ids);
        self.pieces.clear();
        self.counts.clear();
        windows.pieces_of(ids, &mut self.pieces, &mut self.counts);
        self.padding.clear();
        (self.padding).extend(ids.iter().map(|&w| self.window_len - windows.tokens_of(w)));
    }

    fn padded(&self) -> bool {
        self.padding.iter().any(|&n| n > 0)
    }

    /// The windows, each its pieces and its padding (0: none).
    fn windows(&self) -> impl Iterator<Item = (&[Piece], usize)> {
        let mut at = 0;
        self.counts
            .iter()
            .zip(&self.padding)
            .map(move |(&n, &pad)| {
                at += n;
                (&self.pieces[at - n..at], pad)
            })
    }
}

/// Full windows that follow each other in the stream ([`Windows::run`]): their segments
/// are cut at the window edges and where documents start, found without making pieces.
struct Run<'a> {
    /// The stream's tokens of the windows.
    tokens: Range<usize>,
    /// Where the documents start in the stream: those after the one holding the first
    /// token, before the last token's end.
    starts: &'a [usize],
    seq_len: usize,
}

impl Segments for Run<'_> {
    fn tokens(&self) -> usize {
        self.tokens.len()
    }

    fn offsets<T>(&self, to: impl Fn(usize) -> T) -> (Vec<T>, Vec<T>) {
        let len = self.tokens.len();
        let mut windows = Vec::with_capacity(len / self.seq_len + 1);
        let mut ends = Vec::with_capacity(self.starts.len() + windows.capacity());
        windows.push(to(0));
        ends.push(to(0));
        // Boundaries in order: each window edge, then each document start not at one
        // (an empty document starts where the next does, and makes no segment).
        let (mut edge, mut last) = (self.seq_len, 0);
        for at in (self.starts.iter().map(|&s| s - self.tokens.start)).chain([len]) {
            while edge <= at {
                ends.push(to(edge));
                windows.push(to(ends.len() - 1));
                (last, edge) = (edge, edge + self.seq_len);
            }
            if at > last {
                ends.push(to(at));
                last = at;
            }
        }
        (windows, ends)
    }
}

/// A batch's two LoD levels, windows then their segments, made at either offset width.
trait Segments {
    /// The batch's tokens, padding included.
    fn tokens(&self) -> usize;

    /// The offsets of the windows' segments, and of the segments' tokens, as `to` makes
    /// them: from 0, never decreasing.
    fn offsets<T>(&self, to: impl Fn(usize) -> T) -> (Vec<T>, Vec<T>);

    /// The two-level LoD: windows, then their segments.
    fn lod(&self) -> Result<Lod> {
        // Checked like any offsets (one pass over a batch's windows and segments, next to
        // copying its tokens: nothing); `Lod::try_new` checks that level 0 ends at level
        // 1's count. A failure is this crate's bug, never undefined behaviour.
        let bug = |e: Error| Error::internal(format!("a packed batch's offsets: {e}"));
        let levels = if i32::try_from(self.tokens()).is_ok() {
            let (windows, ends) = self.offsets(|n| n as i32);
            vec![
                LevelOffsets::try_new_i32(0, windows.into()).map_err(bug)?,
                LevelOffsets::try_new_i32(1, ends.into()).map_err(bug)?,
            ]
        } else {
            let (windows, ends) = self.offsets(|n| n as i64);
            vec![
                LevelOffsets::try_new_i64(0, windows.into()).map_err(bug)?,
                LevelOffsets::try_new_i64(1, ends.into()).map_err(bug)?,
            ]
        };
        Lod::try_new(levels)
    }
}

impl Segments for Layout {
    fn tokens(&self) -> usize {
        self.counts.len() * self.window_len
    }

    fn offsets<T>(&self, to: impl Fn(usize) -> T) -> (Vec<T>, Vec<T>) {
        let padded = self.padding.iter().filter(|&&n| n > 0).count();
        let mut windows = Vec::with_capacity(self.counts.len() + 1);
        let mut ends = Vec::with_capacity(self.pieces.len() + padded + 1);
        windows.push(to(0));
        ends.push(to(0));
        let (mut segments, mut end) = (0, 0);
        for (pieces, pad) in self.windows() {
            for n in pieces
                .iter()
                .map(|p| p.n_tokens)
                .chain((pad > 0).then_some(pad))
            {
                end += n;
                ends.push(to(end));
            }
            segments += pieces.len() + usize::from(pad > 0);
            windows.push(to(segments));
        }
        (windows, ends)
    }
}

impl Places {
    /// The packed columns for windows `ids` of `windows` (of plans made from `inputs`),
    /// and whether it is a view.
    pub(super) fn load_packed(
        &mut self,
        inputs: &PlanInputs,
        gatherer: &mut Gatherer,
        windows: &Windows,
        ids: &[usize],
    ) -> Result<(Dataset, bool)> {
        let places = self;
        PackedLoad {
            places,
            inputs,
            gatherer,
        }
        .load(windows, ids)
    }
}

/// A packed batch being loaded: the record batches in their places, what the plans were
/// made from, and the gathering's buffers.
struct PackedLoad<'a> {
    places: &'a mut Places,
    inputs: &'a PlanInputs,
    gatherer: &'a mut Gatherer,
}

impl PackedLoad<'_> {
    /// The packed columns for windows `ids` of `windows`, and whether it is a view.
    fn load(&mut self, windows: &Windows, ids: &[usize]) -> Result<(Dataset, bool)> {
        if let Some(data) = self.load_run(windows, ids)? {
            return Ok((data, true));
        }
        let mut layout = std::mem::take(&mut self.gatherer.layout);
        layout.fill(windows, ids);
        let loaded = self.load_layout(&mut layout);
        self.gatherer.layout = layout;
        loaded
    }

    /// The packed columns of windows `ids` as views, when the windows are one run of the
    /// stream ([`Windows::run`]) whose documents are rows that follow each other in one
    /// record batch, and no column is carried per window; else `None`, nothing done.
    fn load_run(&mut self, windows: &Windows, ids: &[usize]) -> Result<Option<Dataset>> {
        let per_window =
            |c: usize| !self.inputs.packed.contains(&c) && self.inputs.columns[c].widths.is_empty();
        if !self.places.unchecked.is_empty() || (0..self.inputs.columns.len()).any(per_window) {
            return Ok(None);
        }
        let Some((tokens, (order, starts), first)) = windows.run(ids) else {
            return Ok(None);
        };
        let mut last = first;
        while starts[last + 1] < tokens.end {
            if order.get(last + 1) != order.get(last) + 1 {
                return Ok(None);
            }
            last += 1;
        }
        let locate = |i: usize| {
            (self.inputs.rows.locate(order.get(i))).expect("plans hold rows of the source")
        };
        let ((b, first_row), (b_last, last_row)) = (locate(first), locate(last));
        if b != b_last {
            return Ok(None);
        }
        let run = Run {
            starts: &starts[first + 1..=last],
            tokens: tokens.clone(),
            seq_len: windows.window_len(),
        };
        let lod = run.lod()?;
        let mut columns = Vec::with_capacity(self.inputs.packed.len());
        for &c in &self.inputs.packed {
            let t = self.places.batches[b].columns()[c].as_tensor();
            let t = t.expect("packed columns are tensors");
            let levels = t.lod().num_levels();
            let element =
                |row: usize, token| t.lod().descend(0, row..row + 1, levels).start + token;
            let from = element(first_row, tokens.start - starts[first]);
            let to = element(last_row, tokens.end - starts[last]);
            let values = t.values().slice_elements(from..to);
            let name = self.inputs.columns[c].name.clone();
            columns.push(Column::new(name, LodTensor::try_new(lod.clone(), values)?));
        }
        self.gatherer.stats.views += 1;
        Ok(Some(Dataset::from_checked_columns(columns)))
    }

    /// The packed columns of the batch `layout` holds, and whether it is a view.
    fn load_layout(&mut self, layout: &mut Layout) -> Result<(Dataset, bool)> {
        if !self.places.unchecked.is_empty() {
            let rows: Vec<usize> = layout.pieces.iter().map(|p| p.row).collect();
            self.places.check_shards(&rows, &self.inputs.shards)?;
        }
        let lod = layout.lod()?;
        let mut view = true;
        let mut columns = Vec::with_capacity(self.inputs.columns.len());
        for c in 0..self.inputs.columns.len() {
            let name = self.inputs.columns[c].name.clone();
            if self.inputs.packed.contains(&c) {
                let (values, is_view) = self.packed_values(c, layout)?;
                view &= is_view;
                columns.push(Column::new(name, LodTensor::try_new(lod.clone(), values)?));
            } else if let Some(column) = self.per_window(c, layout)? {
                columns.push(column);
            }
        }
        if view {
            self.gatherer.stats.views += 1;
        } else {
            self.gatherer.stats.gathered += 1;
        }
        Ok((Dataset::from_checked_columns(columns), view))
    }

    /// Column `c`'s tokens of `layout`: a slice of one record batch's values when they are
    /// consecutive there and nothing is padding, else concatenated.
    fn packed_values(&mut self, c: usize, layout: &mut Layout) -> Result<(Values, bool)> {
        let values_of = |b: usize| {
            let column = &self.places.batches[b].columns()[c];
            column
                .as_tensor()
                .expect("packed columns are tensors")
                .values()
        };
        let place = |p: &Piece| {
            let (b, local) =
                (self.inputs.rows.locate(p.row)).expect("plans hold rows of the source");
            let t = self.places.batches[b].columns()[c].as_tensor();
            let lod = t.expect("a tensor").lod();
            let first = lod.descend(0, local..local + 1, lod.num_levels()).start + p.first_token;
            (b, first..first + p.n_tokens)
        };
        if let Some(range) = self.consecutive(layout, place) {
            let (b, range) = range;
            return Ok((values_of(b).slice_elements(range), true));
        }
        layout.parts.clear();
        layout.parts.extend(layout.pieces.iter().map(place));
        let parts = &layout.parts;
        let contiguous = (parts.windows(2)).all(|w| w[0].0 == w[1].0 && w[0].1.end == w[1].1.start);
        if let (true, false, Some((b, first)), Some((_, last))) =
            (contiguous, layout.padded(), parts.first(), parts.last())
        {
            return Ok((values_of(*b).slice_elements(first.start..last.end), true));
        }
        let ValuesInfo::Tensor {
            dtype,
            element_shape,
            element_size,
        } = &self.inputs.columns[c].values
        else {
            unreachable!("packed columns are tensors")
        };
        if let Some(width) = dtype.byte_width() {
            let (gatherer, sources) = (&mut *self.gatherer, &self.places.sources);
            let items = copy_items(gatherer, sources, c, layout, (*element_size, width));
            let data = ArrayData::builder(dtype.arrow_type())
                .len(items.len() / width)
                .add_buffer(items)
                .build()?;
            return Ok((
                Values::try_new(make_array(data), element_shape.clone())?,
                false,
            ));
        }
        let mut items: Vec<ArrayRef> = Vec::with_capacity(parts.len() + layout.counts.len());
        let mut parts = parts.iter();
        for (pieces, pad) in layout.windows() {
            for (b, range) in parts.by_ref().take(pieces.len()) {
                items.push(values_of(*b).slice_elements(range.clone()).items().clone());
            }
            if pad > 0 {
                items.push(zeros(*dtype, pad * element_size)?);
            }
        }
        // Booleans, packed in bits: Arrow's concatenation.
        let refs: Vec<&dyn Array> = items.iter().map(AsRef::as_ref).collect();
        let all = arrow_select::concat::concat(&refs)?;
        let bytes = (all.to_data().buffers().iter())
            .map(|b| b.len() as u64)
            .sum::<u64>();
        self.gatherer.stats.bytes_copied += bytes;
        Ok((Values::try_new(all, element_shape.clone())?, false))
    }
}

impl PackedLoad<'_> {
    /// Column `c` (a side column, or a tensor of one element per row) as each window's list
    /// of the values of the documents its pieces come from, in piece order: a side column
    /// of lists, or a tensor of one level. Copied (one value per piece); `None` for a
    /// tensor column with levels, which a packed batch leaves out unless it is packed.
    fn per_window(&self, c: usize, layout: &Layout) -> Result<Option<Column>> {
        let info = &self.inputs.columns[c];
        if !info.widths.is_empty() {
            return Ok(None);
        }
        let rows: Vec<(usize, usize)> = (layout.pieces.iter())
            .map(|p| (self.inputs.rows.locate(p.row)).expect("plans hold rows of the source"))
            .collect();
        let columns = self.places.batches.iter().map(|b| &b.columns()[c]);
        match &info.values {
            ValuesInfo::Side(field) => {
                let arrays: Vec<&dyn Array> = columns
                    .map(|col| col.side_array().expect("a side column").as_ref())
                    .collect();
                let values = interleave_rows(&arrays, &rows)?;
                let item = Arc::new(Field::new_list_field(field.data_type().clone(), true));
                let offsets = OffsetBuffer::from_lengths(layout.counts.iter().copied());
                let lists = ListArray::try_new(item, offsets, values, None)?;
                Ok(Some(Column::side(info.name.clone(), Arc::new(lists))?))
            }
            ValuesInfo::Tensor {
                element_shape,
                element_size,
                ..
            } => {
                let items: Vec<&dyn Array> = columns
                    .map(|col| col.as_tensor().expect("a tensor").values().items().as_ref())
                    .collect();
                let n = *element_size;
                let rows: Vec<(usize, usize)> = (rows.iter())
                    .flat_map(|&(b, r)| (r * n..(r + 1) * n).map(move |i| (b, i)))
                    .collect();
                let values = arrow_select::interleave::interleave(&items, &rows)?;
                let values = Values::try_new(values, element_shape.clone())?;
                let width = match i32::try_from(rows.len()) {
                    Ok(_) => OffsetWidth::I32,
                    Err(_) => OffsetWidth::I64,
                };
                let lod = Lod::try_from_lengths_with_width(&[&layout.counts], width)?;
                let tensor = LodTensor::try_new(lod, values)?;
                Ok(Some(Column::new(info.name.clone(), tensor)))
            }
        }
    }

    /// (record batch, elements) of `layout`'s tokens when they follow each other in file
    /// order (a piece where the one before it ended, in its row or at the start of the
    /// next), within one record batch, and nothing is padding: a view, found without
    /// placing every piece (`place` places one).
    fn consecutive(
        &self,
        layout: &Layout,
        place: impl Fn(&Piece) -> (usize, Range<usize>),
    ) -> Option<(usize, Range<usize>)> {
        if layout.padded() {
            return None;
        }
        let mut pieces = layout.pieces.iter();
        let first = pieces.next()?;
        let mut last = first;
        for p in pieces {
            let end = last.first_token + last.n_tokens;
            let same_row = p.row == last.row && p.first_token == end;
            // The length last: shuffled, the rows differ, and it is a read that misses.
            let next_row = p.row == last.row + 1
                && p.first_token == 0
                && end == self.inputs.lengths[last.row] as usize;
            if !(same_row || next_row) {
                return None;
            }
            last = p;
        }
        let ((b, start), (b_last, end)) = (place(first), place(last));
        (b == b_last).then_some((b, start.start..end.end))
    }
}

/// Column `c`'s items of `layout` (its pieces at `layout.parts`), copied into a pooled
/// buffer: elements of `element_size` items of `width` bytes, padding zeros.
fn copy_items(
    gatherer: &mut Gatherer,
    sources: &[Vec<Source>],
    c: usize,
    layout: &Layout,
    (element_size, width): (usize, usize),
) -> Buffer {
    let element_bytes = element_size * width;
    let tokens = layout.counts.len() * layout.window_len;
    let mut out = gatherer.take(tokens * element_bytes);
    let mut parts = layout.parts.iter();
    for (pieces, pad) in layout.windows() {
        for (b, r) in parts.by_ref().take(pieces.len()) {
            let items = r.start * element_size..r.end * element_size;
            out.extend_from_slice(sources[*b][c].item_bytes(items, width));
        }
        out.extend_zeros(pad * element_bytes);
    }
    gatherer.stats.bytes_copied += out.len() as u64;
    let buffer: Buffer = out.into();
    gatherer.keep(&buffer);
    buffer
}

/// `n` zero items of `dtype` (`false` for booleans).
fn zeros(dtype: DType, n: usize) -> Result<ArrayRef> {
    let bytes = match dtype.byte_width() {
        Some(w) => n * w,
        None => n.div_ceil(8),
    };
    let data = ArrayData::builder(dtype.arrow_type())
        .len(n)
        .add_buffer(Buffer::from_vec(vec![0u8; bytes]))
        .build()?;
    Ok(make_array(data))
}

/// The columns a packed batch holds: the length column, which must count tokens at its
/// innermost level, and every tensor column with as many elements under each row.
pub(super) fn packed_columns(
    batches: &[Dataset],
    columns: &[ColumnInfo],
    length: Option<(usize, usize)>,
    lengths: &[u32],
) -> Result<Vec<usize>> {
    let bad = |reason: String| -> Result<Vec<usize>> {
        Err(ArgumentError::LoaderConfig {
            option: "pack",
            reason,
        }
        .into())
    };
    let Some((tokens, level)) = length else {
        return bad("needs a column with levels: no column has any".to_owned());
    };
    let levels = columns[tokens].widths.len();
    if level + 1 != levels {
        return bad(format!(
            "tokens are the elements of the length column: level {level} of {:?} is not its \
             innermost ({})",
            columns[tokens].name,
            levels - 1
        ));
    }
    let aligned = |c: usize| {
        let mut row = 0;
        batches.iter().all(|b| {
            let Some(t) = b.columns()[c].as_tensor() else {
                return false;
            };
            let lod = t.lod();
            (0..b.num_rows()).all(|r| {
                row += 1;
                lod.num_levels() > 0
                    && lod.descend(0, r..r + 1, lod.num_levels()).len() == lengths[row - 1] as usize
            })
        })
    };
    Ok((0..columns.len())
        .filter(|&c| c == tokens || (!columns[c].widths.is_empty() && aligned(c)))
        .collect())
}

/// The longest padded last window longer than the data [`check_pad_last`] lets through.
pub(super) const MAX_PADDED_WINDOW: usize = 1 << 20;

/// Refuses a padded last window of over [`MAX_PADDED_WINDOW`] tokens that is longer than
/// the data's tokens (`lengths`): it is allocated whole, and would be mostly padding (a
/// shorter one pads a small dataset's only window, as asked).
///
/// # Errors
/// [`ArgumentError::LoaderConfig`] naming `pack`.
pub(super) fn check_pad_last(packing: &Packing, lengths: &[u32]) -> Result<()> {
    let total = lengths
        .iter()
        .fold(0usize, |t, &n| t.saturating_add(n as usize));
    let pad_last = matches!(packing.mode(), PackMode::Split { pad_last: true });
    if pad_last && packing.seq_len() > total.max(MAX_PADDED_WINDOW) {
        return Err(ArgumentError::LoaderConfig {
            option: "pack",
            reason: format!(
                "{} tokens with pack_pad_last: longer than the data's {total} tokens, the \
                 window would be padding",
                packing.seq_len()
            ),
        }
        .into());
    }
    Ok(())
}
