//! Rows of a record batch of an Arrow IPC file that is not mapped (an object in a store),
//! read by byte ranges: from the batch's message, where each column's buffers lie; from the
//! rows asked for, the bytes of those rows in each buffer, level by level (a list's
//! offsets say where its child's rows are). This module reads no bytes itself: it asks a
//! `fetch` for every range of a round at once and builds arrays over what comes back, the
//! values without a copy (a list's offsets are rebased to its rows, a copy of the offsets
//! only), every offset checked as the mapped reader checks it before it is used.
//!
//! ```text
//! round 1: validity, values, and the first level's offsets of every column, for every run
//! round 2: the next level's offsets (or a string column's bytes), where round 1 said ...
//! round k: the values under the last level
//! ```
//!
//! When the lengths index says where a run's rows lie at every level of a list column
//! ([`Marks`]), every range of that column is known before any read: its offsets and values
//! are read in the first round (the top level's offsets not at all: the marks are every one
//! of them), and the offsets received are then checked to be exactly the ones the index
//! implies (a disagreement names the column, record batch, level and index).
//!
//! Types whose bytes cannot be cut by rows here (dictionaries, views, unions, maps, run
//! ends) and compressed batches give no layout: the caller reads the batch whole.

use std::ops::Range;

use arrow_buffer::{ArrowNativeType, Buffer};
use arrow_data::{ArrayData, ArrayDataBuilder};
use arrow_schema::DataType;
use bytes::Bytes;

use super::ipc_check::{children, invalid, own_buffers};
use super::ipc_lengths::{FileFooter, Walk};
use crate::error::{DataError, Error, ErrorKind, Result};
use crate::lod::validate_offsets;

/// Where every column's buffers of one record batch lie in the file.
#[derive(Debug)]
pub(crate) struct BatchLayout {
    /// The batch's rows.
    pub(crate) rows: usize,
    /// Its index in the file.
    index: usize,
    /// The columns' names, for errors.
    names: Vec<String>,
    fields: Vec<FieldLayout>,
}

/// One array of a record batch: its type, entries, nulls, buffers (file ranges, in the IPC
/// order) and children.
#[derive(Debug)]
struct FieldLayout {
    data_type: DataType,
    len: usize,
    nulls: usize,
    buffers: Vec<Range<u64>>,
    children: Vec<FieldLayout>,
}

/// A record batch read whole (a compressed one: its buffers are codec frames): its rows,
/// its block in the file (message, then body) and its message's bytes.
#[derive(Clone, Debug)]
pub(crate) struct WholeBatch {
    pub(crate) rows: usize,
    pub(crate) block: Range<u64>,
    pub(crate) meta: u64,
}

impl FileFooter {
    /// Record batch `index` as a whole, from its message `message`.
    ///
    /// # Errors
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for a message that does
    /// not parse, is not a record batch or holds a negative row count.
    pub(crate) fn whole(&self, index: usize, message: &[u8]) -> Result<WholeBatch> {
        let (rows, _) = self.batch_message(index, message)?;
        let (block, meta) = self.block(index);
        Ok(WholeBatch { rows, block, meta })
    }

    /// Where record batch `index`'s columns lie, from its message `message`; `None` when
    /// the batch is compressed or a column's type cannot be read by rows.
    ///
    /// # Errors
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for a message that does
    /// not parse or whose nodes and buffers do not fit the schema or the body.
    pub(crate) fn layout(&self, index: usize, message: &[u8]) -> Result<Option<BatchLayout>> {
        let Some((rows, walk)) = self.walk(index, message)? else {
            return Ok(None);
        };
        let fields = self.schema().fields();
        if !fields.iter().all(|f| by_rows(f.data_type())) {
            return Ok(None);
        }
        let mut at = (0, 0, walk);
        let fields = (fields.iter())
            .map(|f| field_layout(f.data_type(), &mut at).map_err(|e| e.in_column(f.name(), index)))
            .collect::<Result<Vec<_>>>()?;
        if let Some((f, field)) =
            (self.schema().fields().iter().zip(&fields)).find(|(_, l)| l.len != rows)
        {
            let reason = format!(
                "batch {index}: {} entries in a batch of {rows} rows",
                field.len
            );
            return Err(invalid(reason).in_column(f.name(), index));
        }
        let names = self
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        Ok(Some(BatchLayout {
            rows,
            index,
            names,
            fields,
        }))
    }
}

impl BatchLayout {
    /// The bytes of the columns `columns` (indices in the file's schema; one past the last
    /// counts nothing) in the batch's body: all their buffers, children's too.
    pub(crate) fn bytes(&self, columns: &[usize]) -> u64 {
        fn of(field: &FieldLayout) -> u64 {
            let own: u64 = field.buffers.iter().map(|b| b.end - b.start).sum();
            own + field.children.iter().map(of).sum::<u64>()
        }
        columns
            .iter()
            .filter_map(|&c| self.fields.get(c))
            .map(of)
            .sum()
    }
}

/// Whether arrays of `data_type` can be read by rows here.
pub(crate) fn by_rows(data_type: &DataType) -> bool {
    let plain = matches!(
        data_type,
        DataType::Null
            | DataType::Boolean
            | DataType::FixedSizeBinary(_)
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
    ) || data_type.primitive_width().is_some();
    plain && children(data_type).into_iter().all(by_rows)
}

/// The layout of the next array of `data_type` in the walk `(node, buffer, walk)`, and of
/// its children.
fn field_layout(data_type: &DataType, at: &mut (usize, usize, Walk)) -> Result<FieldLayout> {
    let (len, nulls) = at.2.node(at.0)?;
    at.0 += 1;
    let count = own_buffers(data_type, &mut Default::default())?;
    let buffers = (at.1..at.1 + count)
        .map(|i| at.2.buffer(i).map(|(start, len)| start..start + len))
        .collect::<Result<Vec<_>>>()?;
    at.1 += count;
    let children = (children(data_type).into_iter())
        .map(|c| field_layout(c, at))
        .collect::<Result<Vec<_>>>()?;
    Ok(FieldLayout {
        data_type: data_type.clone(),
        len,
        nulls,
        buffers,
        children,
    })
}

/// Where a run's rows lie in one list column of a record batch, from the lengths index:
/// `at[l][i]` is the first entry of level `l` under the run's `i`-th row (`at[l][n]` the
/// end of the run), level 0 being the rows and the last the elements; `totals[l]` the
/// entries of level `l` in the whole batch.
///
/// ```text
/// rows r0..r0+2      at[0] = [r0, r0+1, r0+2]
/// level 0 offsets    o0[at[0][i]] must be at[1][i]
/// level 1 offsets    o1[at[1][i]] must be at[2][i]      values at[2][0]..at[2][2]
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    pub(crate) at: Vec<Vec<usize>>,
    pub(crate) totals: Vec<usize>,
}

/// A run of rows to read: its file, its record batch's layout, the rows (in the batch),
/// and per column asked for, the [`Marks`] the lengths index gives (`None`: read level by
/// level).
#[derive(Debug)]
pub(crate) struct Run<'a> {
    pub(crate) file: usize,
    pub(crate) layout: &'a BatchLayout,
    pub(crate) rows: Range<usize>,
    /// How many of `rows` are asked for: the others are read because their bytes lie
    /// between those of rows asked for, and count as bytes not wanted in a request.
    pub(crate) wanted: usize,
    pub(crate) marks: Vec<Option<Marks>>,
}

/// Rows asked for of a run, and its rows.
type Share = (usize, usize);
/// Whose part is: its record batch, its column and its list level there (for errors).
type At<'a> = (&'a BatchLayout, usize, usize);
/// The marks of a part's column and the part's level in them.
type MarksAt<'a> = (&'a Marks, usize);

/// A part of one array to read: entries `rows` of `field`, its buffers read from entry
/// `from` (the rows' start, or the byte boundary before it where bits are read).
struct Part<'a> {
    file: usize,
    /// Its run's rows asked for and rows read: the share of its bytes wanted.
    share: Share,
    /// The record batch and column it is of, and its list level there (for errors).
    at: At<'a>,
    field: &'a FieldLayout,
    rows: Range<usize>,
    from: usize,
    /// The bytes read of each of the field's buffers (a list's offsets rebased to `from`).
    got: Vec<Option<Buffer>>,
    children: Vec<usize>,
    /// A string or binary array whose bytes are read next (round after its offsets).
    data: Option<Range<u64>>,
    /// The index's marks of the part's column and the part's level in them, for a list
    /// whose child was added with it (read in the same round).
    marks: Option<MarksAt<'a>>,
}

/// Whether `field`'s nulls are read from its validity buffer (a null array has none).
fn has_validity(field: &FieldLayout) -> bool {
    field.nulls > 0 && field.data_type != DataType::Null
}

/// Bytes per offset of a list, string or binary type; `None` for other types.
fn offset_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::List(_) | DataType::Utf8 | DataType::Binary => Some(4),
        DataType::LargeList(_) | DataType::LargeUtf8 | DataType::LargeBinary => Some(8),
        _ => None,
    }
}

/// Reads the `(file, range, bytes wanted in it)`s asked for, in order.
pub(crate) type Fetch<'a> = &'a mut dyn FnMut(&[(usize, Range<u64>, u64)]) -> Result<Vec<Bytes>>;

/// Rows `runs` of the columns `columns`, as one list of arrays per run, in the columns'
/// order; `fetch` reads the `(file, range)`s of a round, in order; `in_file` says in which
/// file an error is (a file of `runs`). A column whose [`Marks`] a run has is read in one
/// round.
///
/// # Errors
/// [`ArgumentError::RowsOutOfBounds`](crate::ArgumentError::RowsOutOfBounds)-like invalid
/// arguments for rows past a batch; offsets that break the rules ([`DataError`]s naming the
/// level and index); offsets other than the marks say
/// ([`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) naming the level and
/// index); a buffer too short for the rows it is said to hold; `fetch`'s errors.
///
/// [`DataError`]: crate::DataError
pub(crate) fn read_rows(
    runs: &[Run<'_>],
    columns: &[usize],
    fetch: Fetch<'_>,
    in_file: &dyn Fn(usize, Error) -> Error,
) -> Result<Vec<Vec<ArrayData>>> {
    if columns.is_empty() {
        return Ok(vec![Vec::new(); runs.len()]);
    }
    let mut parts: Vec<Part<'_>> = Vec::new();
    let mut round = Vec::new();
    let mut roots = Vec::with_capacity(runs.len() * columns.len());
    for run in runs {
        let (layout, rows) = (run.layout, &run.rows);
        if rows.start > rows.end || rows.end > layout.rows {
            let reason = format!("rows {rows:?} of a batch of {}", layout.rows);
            return Err(Error::invalid_argument(
                "read_rows",
                "rows",
                reason,
                "rows of the batch",
            ));
        }
        for (i, &c) in columns.iter().enumerate() {
            let field = layout
                .fields
                .get(c)
                .ok_or_else(|| invalid(format!("no column {c}")))?;
            let at = (layout, c, 0);
            let marks = run.marks.get(i).and_then(Option::as_ref).map(|m| (m, 0));
            roots.push(add_part(
                &mut parts,
                &mut round,
                (run.file, (run.wanted, rows.len()), at, marks),
                field,
                rows.clone(),
            ));
        }
    }
    while !round.is_empty() {
        let mut wanted = Vec::new();
        for &i in &round {
            let ranges = ranges_of(&parts[i]).map_err(|e| locate(&parts[i], e, in_file))?;
            wanted.extend(ranges.into_iter().map(|(b, r)| (i, b, r)));
        }
        let requests: Vec<(usize, Range<u64>, u64)> = (wanted.iter())
            .map(|(i, _, r)| {
                let ((asked, of), len) = (parts[*i].share, r.end - r.start);
                let useful = u128::from(len) * asked as u128 / of.max(1) as u128;
                (parts[*i].file, r.clone(), useful as u64)
            })
            .collect();
        let got = match requests.is_empty() {
            true => Vec::new(),
            false => fetch(&requests)?,
        };
        for ((i, b, _), bytes) in wanted.into_iter().zip(got) {
            parts[i].got[b] = Some(Buffer::from(bytes));
        }
        let mut next = Vec::new();
        for i in std::mem::take(&mut round) {
            follow_offsets(&mut parts, &mut next, i).map_err(|e| locate(&parts[i], e, in_file))?;
        }
        round = next;
    }
    let arrays: Vec<ArrayData> = (roots.iter())
        .map(|&i| assemble(&parts, i).map_err(|e| locate(&parts[i], e, in_file)))
        .collect::<Result<_>>()?;
    Ok(arrays.chunks(columns.len()).map(<[_]>::to_vec).collect())
}

/// `e` said of part `p`'s column, record batch and file.
fn locate(p: &Part<'_>, e: Error, in_file: &dyn Fn(usize, Error) -> Error) -> Error {
    let (layout, column, _) = p.at;
    let name = layout.names.get(column).map_or("", String::as_str);
    in_file(p.file, e.in_column(name, layout.index))
}

/// Adds the part of entries `rows` of `field` (and of the children whose entries follow
/// from them without reading: a struct's, a fixed-size list's, a list's when `marks` say
/// where its rows are) to `parts` and `round`; its index. `(file, at, marks)` say whose
/// part it is ([`Part::share`], [`Part::at`], [`Part::marks`]).
fn add_part<'a>(
    parts: &mut Vec<Part<'a>>,
    round: &mut Vec<usize>,
    (file, share, at, marks): (usize, Share, At<'a>, Option<MarksAt<'a>>),
    field: &'a FieldLayout,
    rows: Range<usize>,
) -> usize {
    let bits = has_validity(field) || field.data_type == DataType::Boolean;
    let from = if bits { rows.start & !7 } else { rows.start };
    let marks = marks.filter(|&m| marked(field, &rows, m));
    let mut got = vec![None; field.buffers.len()];
    let known = marks.and_then(|m| known_offsets(field, m));
    if let (Some(offsets), Some(known)) = (got.get_mut(1), known) {
        *offsets = Some(known); // Not read: the marks are every entry's.
    }
    let i = parts.len();
    parts.push(Part {
        file,
        share,
        at,
        field,
        rows: rows.clone(),
        from,
        got,
        children: Vec::new(),
        data: None,
        marks,
    });
    round.push(i);
    let child_rows = match &field.data_type {
        DataType::Struct(_) => Some(from..rows.end),
        DataType::FixedSizeList(_, size) => {
            let size = usize::try_from(*size).unwrap_or(0);
            Some(from * size..rows.end * size)
        }
        _ => marks.map(|(m, level)| {
            let next = &m.at[level + 1];
            next[0]..next[next.len() - 1]
        }),
    };
    if let Some(child_rows) = child_rows {
        // Marks are kept for a list alone: its child is the next level of them.
        let below = match marks {
            Some((m, level)) => ((at.0, at.1, at.2 + 1), Some((m, level + 1))),
            None => (at, None),
        };
        let kids: Vec<usize> = (field.children.iter())
            .map(|c| {
                add_part(
                    parts,
                    round,
                    (file, share, below.0, below.1),
                    c,
                    child_rows.clone(),
                )
            })
            .collect();
        parts[i].children = kids;
    }
    i
}

/// Whether `marks` say where the rows `rows` of `field`, a list at `level` of its column,
/// lie in its child: a list without nulls (its entries read from its rows' start), marks of
/// that level and the next, non-decreasing, from `rows` and within the child, and a batch
/// whose entries at both are as many as the index says (so that, its offsets being valid,
/// they start at 0 and the run's offsets are the marks).
fn marked(field: &FieldLayout, rows: &Range<usize>, (marks, level): MarksAt<'_>) -> bool {
    let list = matches!(field.data_type, DataType::List(_) | DataType::LargeList(_));
    let child = field.children.first().map(|c| c.len);
    let (Some(here), Some(below)) = (marks.at.get(level), marks.at.get(level + 1)) else {
        return false;
    };
    let rising = |a: &[usize]| a.windows(2).all(|w| w[0] <= w[1]);
    list && !has_validity(field)
        && here.len() == below.len()
        && (here.first(), here.last()) == (Some(&rows.start), Some(&rows.end))
        && rising(here)
        && rising(below)
        && below.last().copied() <= child
        && marks.totals.get(level) == Some(&field.len)
        && marks.totals.get(level + 1).copied() == child
}

/// The offsets of a marked list part (its marks `at` level `level`) when the marks hold
/// an edge for every entry (the top level: an entry is a row), in the list's offset width:
/// what reading them would give, checked as read offsets are. `None` when they do not, or
/// an offset is past a 32-bit list's.
fn known_offsets(field: &FieldLayout, (marks, level): MarksAt<'_>) -> Option<Buffer> {
    let (here, below) = (marks.at.get(level)?, marks.at.get(level + 1)?);
    let first = *here.first()?;
    if !here
        .iter()
        .enumerate()
        .all(|(i, &entry)| entry == first + i)
    {
        return None;
    }
    Some(match offset_width(&field.data_type)? {
        4 => Buffer::from_vec(
            (below.iter())
                .map(|&o| i32::try_from(o).ok())
                .collect::<Option<Vec<i32>>>()?,
        ),
        _ => Buffer::from_vec(
            (below.iter())
                .map(|&o| i64::try_from(o).ok())
                .collect::<Option<Vec<i64>>>()?,
        ),
    })
}

/// The `(buffer, file range)`s part `p` reads in its next round.
fn ranges_of(p: &Part<'_>) -> Result<Vec<(usize, Range<u64>)>> {
    let f = p.field;
    if let Some(data) = &p.data {
        return Ok(vec![(2, data.clone())]);
    }
    let end = p.rows.end;
    let bits = |from: usize| (from / 8) as u64..end.div_ceil(8) as u64;
    let mut out = Vec::new();
    if has_validity(f) {
        out.push((0, bits(p.from)));
    }
    let width = |w: usize| (p.from * w) as u64..(end * w) as u64;
    let values = match &f.data_type {
        DataType::Boolean => Some(bits(p.from)),
        DataType::FixedSizeBinary(w) => Some(width(usize::try_from(*w).unwrap_or(0))),
        t => match (offset_width(t), t.primitive_width()) {
            (Some(w), _) => Some((p.from * w) as u64..((end + 1) * w) as u64),
            (None, Some(w)) => Some(width(w)),
            (None, None) => None,
        },
    };
    out.extend(values.map(|r| (1, r)));
    out.retain(|&(b, _)| p.got.get(b).is_none_or(Option::is_none)); // Known, not read.
    out.into_iter()
        .map(|(b, r)| {
            let buffer = f
                .buffers
                .get(b)
                .ok_or_else(|| invalid("a buffer is missing"))?;
            if r.end > buffer.end - buffer.start {
                return Err(invalid(format!(
                    "buffer {b} of {} bytes holds no bytes {r:?} for entries {:?}",
                    buffer.end - buffer.start,
                    p.from..end
                )));
            }
            Ok((b, buffer.start + r.start..buffer.start + r.end))
        })
        .collect()
}

/// After a round: part `i`'s offsets checked and rebased, and the part they lead to (a
/// list's child, a string array's bytes) added to `next`.
fn follow_offsets(parts: &mut Vec<Part<'_>>, next: &mut Vec<usize>, i: usize) -> Result<()> {
    let p = &parts[i];
    let Some(width) = offset_width(&p.field.data_type).filter(|_| p.data.is_none()) else {
        return Ok(()); // no offsets, or a string array's bytes just read
    };
    let raw = p.got[1]
        .as_ref()
        .ok_or_else(|| invalid("offsets were not read"))?;
    let (rebased, first, last) = match width {
        4 => rebase::<i32>(raw, (p.at.2, p.from))?,
        _ => rebase::<i64>(raw, (p.at.2, p.from))?,
    };
    if let Some((marks, level)) = p.marks {
        check_marks(&rebased, width, (first, p.from), marks, level)?;
    }
    let (file, share, field, (layout, column, level)) = (p.file, p.share, p.field, p.at);
    let marked = p.marks.is_some();
    parts[i].got[1] = Some(rebased);
    match &field.data_type {
        DataType::List(_) | DataType::LargeList(_) => {
            let child = &field.children[0];
            if last > child.len {
                return Err(invalid(format!(
                    "offset {last} past a child of {} entries",
                    child.len
                )));
            }
            if marked {
                return Ok(()); // its child was read in the same round
            }
            let at = (layout, column, level + 1);
            let kid = add_part(parts, next, (file, share, at, None), child, first..last);
            parts[i].children = vec![kid];
        }
        _ => {
            let data = field
                .buffers
                .get(2)
                .ok_or_else(|| invalid("a buffer is missing"))?;
            if last as u64 > data.end - data.start {
                let reason = format!("offset {last} past {} bytes of data", data.end - data.start);
                return Err(invalid(reason));
            }
            parts[i].data = Some(data.start + first as u64..data.start + last as u64);
            next.push(i);
        }
    }
    Ok(())
}

/// The offsets `rebased` (of `width` bytes each, rebased from `first`; entries from
/// `from` of list level `level`) checked to be those `marks` imply at every row's edge.
///
/// # Errors
/// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) naming the level and
/// the index in the level's offsets, with the index's value and the offset found.
fn check_marks(
    rebased: &Buffer,
    width: usize,
    (first, from): (usize, usize),
    marks: &Marks,
    level: usize,
) -> Result<()> {
    let offset = |i: usize| -> Option<usize> {
        Some(match width {
            4 => rebased.typed_data::<i32>().get(i)?.as_usize(),
            _ => rebased.typed_data::<i64>().get(i)?.as_usize(),
        })
    };
    for (&entry, &expected) in marks.at[level].iter().zip(&marks.at[level + 1]) {
        let found = entry.checked_sub(from).and_then(offset).map(|o| o + first);
        if found != Some(expected) {
            let found = found.map_or_else(|| "missing".to_owned(), |o| o.to_string());
            let field = format!("level {level}: offset at index {entry} (the lengths index)");
            return Err(crate::error::FormatError::ShardMismatch {
                field,
                manifest: expected.to_string(),
                found,
            }
            .into());
        }
    }
    Ok(())
}

/// Offsets `raw` (of list level `level`, from its offset `from`) checked (from ≥ 0,
/// non-decreasing) and rebased to start at 0, with their first and last.
fn rebase<O: ArrowNativeType + Ord + Into<i64>>(
    raw: &Buffer,
    (level, from): (usize, usize),
) -> Result<(Buffer, usize, usize)> {
    let width = std::mem::size_of::<O>();
    if raw.is_empty() || !raw.len().is_multiple_of(width) {
        return Err(invalid(format!("{} bytes of offsets", raw.len())));
    }
    // Bytes from the network lie anywhere: an unaligned buffer is copied (offsets only).
    let aligned = match raw.as_ptr().align_offset(std::mem::align_of::<O>()) {
        0 => raw.clone(),
        _ => Buffer::from_slice_ref(raw.as_slice()),
    };
    let offsets: &[O] = aligned.typed_data::<O>();
    validate_offsets(level, offsets).map_err(|e| match e.into_kind() {
        // The index in the level, not in the offsets read.
        ErrorKind::Data(DataError::DecreasingOffset {
            level,
            index,
            offset,
            previous,
        }) => Error::from(DataError::DecreasingOffset {
            level,
            index: index + from,
            offset,
            previous,
        }),
        other => Error::new(other),
    })?;
    let (first, last) = (offsets[0].as_usize(), offsets[offsets.len() - 1].as_usize());
    let rebased: Vec<O> = (offsets.iter())
        .map(|&o| O::usize_as(o.as_usize() - first))
        .collect();
    Ok((Buffer::from_vec(rebased), first, last))
}

/// Part `i` (and its children) as an array of its rows.
fn assemble(parts: &[Part<'_>], i: usize) -> Result<ArrayData> {
    let p = &parts[i];
    let own = |b: usize| p.got.get(b).cloned().flatten();
    let mut builder = ArrayDataBuilder::new(p.field.data_type.clone())
        .len(p.rows.len())
        .offset(p.rows.start - p.from)
        .align_buffers(true);
    if has_validity(p.field) {
        builder = builder.null_bit_buffer(own(0));
    }
    let buffers: Vec<Buffer> = (1..p.field.buffers.len()).filter_map(own).collect();
    let children = (p.children.iter())
        .map(|&c| assemble(parts, c))
        .collect::<Result<Vec<_>>>()?;
    // `build` checks the array fully (offsets, lengths, nulls, UTF-8), its children
    // having been checked as they were built.
    builder
        .buffers(buffers)
        .child_data(children)
        .build()
        .map_err(|e| invalid(format!("entries {:?}: {e}", p.rows)))
}

#[cfg(test)]
mod tests;
