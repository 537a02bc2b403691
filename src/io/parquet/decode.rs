//! A direct decoder for the column layout this format writes: repetition and definition
//! levels become offsets, values go straight into the output buffer.
//!
//! The `parquet` crate's Arrow reader handles every layout, and pays for it on nested
//! lists: it materialises both levels of every item and walks them once per list level,
//! building validity bitmaps on the way. A column of this crate's layout (format-spec.md
//! §8) is nested `List` / `LargeList`s, perhaps a `FixedSizeList` innermost, over one
//! primitive leaf, every field nullable and no entry null. Its levels are long runs, read
//! here as runs ([`super::runs`]):
//!
//! ```text
//! L lists (depth 0 = the rows), max_rep = L, max_def = 2L + 1
//! entry (rep r, def d):  d = 2j + 1, j < L  -> lists at depths r..=j begin, the one at j empty
//!                        d = 2L + 1         -> lists at depths r..L begin (none when r = L),
//!                                              then one item
//!                        d even             -> a null: refused (LoD tensors hold none)
//! a run of (L, 2L + 1)   -> that many items of the current innermost list, counted at once
//! ```
//!
//! A list that begins records where it starts in its children; the innermost
//! `FixedSizeList` only checks that every element has its size. Values are `PLAIN` (copied)
//! or dictionary-encoded (gathered). Anything else (other encodings, nulls, struct or byte
//! array leaves, required fields) goes to the general reader: [`Plan::of`] decides per file,
//! before any page is read. Every level, run, index and count is checked: a corrupted page
//! is an error naming its row group, column and page.

use std::sync::Arc;

use arrow_array::{ArrayRef, FixedSizeListArray, GenericListArray, OffsetSizeTrait, make_array};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field, FieldRef};
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::Page;
use parquet::file::metadata::RowGroupMetaData;
use parquet::schema::types::ColumnDescriptor;

use super::levels::Leaf;
use crate::error::{Error, FileFormat};

use super::runs::{Fault, Runs, bit_width};
use crate::layout::{Nest, peel};

/// How one column of a file is decoded, when it has this crate's layout.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    /// The column's Arrow type, as the reader's schema has it.
    data_type: DataType,
    /// Variable-length lists (the LoD levels), outermost first.
    var_lists: usize,
    /// Items per element, when the innermost list is a `FixedSizeList`.
    fixed: Option<usize>,
    /// Bytes per value.
    width: usize,
    max_rep: i16,
    max_def: i16,
}

/// Encodings the decoder reads: levels in RLE, values plain or through a dictionary.
const ENCODINGS: [Encoding; 4] = [
    Encoding::PLAIN,
    Encoding::RLE,
    Encoding::PLAIN_DICTIONARY,
    Encoding::RLE_DICTIONARY,
];

impl Plan {
    /// The plan of a column of Arrow type `data_type` stored in leaf `descr`, or `None`
    /// when the general reader must read it.
    pub(super) fn of(data_type: &DataType, descr: &ColumnDescriptor) -> Option<Plan> {
        if cfg!(target_endian = "big") {
            return None;
        }
        let (mut var_lists, mut fixed) = (0usize, None);
        let mut leaf = data_type;
        while let Some(Nest::List(_, f)) = peel(leaf) {
            var_lists += 1;
            leaf = f.data_type();
        }
        if let Some(Nest::Fixed(size, f)) = peel(leaf) {
            fixed = Some(usize::try_from(size).ok().filter(|&s| s > 0)?);
            leaf = f.data_type();
        }
        let (physical, width) = match leaf {
            DataType::Float32 => (PhysicalType::FLOAT, 4),
            DataType::Float64 => (PhysicalType::DOUBLE, 8),
            DataType::Int32 | DataType::UInt32 => (PhysicalType::INT32, 4),
            DataType::Int64 | DataType::UInt64 => (PhysicalType::INT64, 8),
            _ => return None,
        };
        // The levels the writer gives this layout.
        let levels = Leaf::of_lists(var_lists, fixed)?;
        let plan = Plan {
            data_type: data_type.clone(),
            var_lists,
            fixed,
            width,
            max_rep: levels.max_rep,
            max_def: levels.max_def,
        };
        (descr.physical_type() == physical
            && descr.max_rep_level() == plan.max_rep
            && descr.max_def_level() == plan.max_def)
            .then_some(plan)
    }

    /// Whether every column chunk of `row_group` at `column` uses only encodings read here.
    pub(super) fn reads_encodings(row_group: &RowGroupMetaData, column: usize) -> bool {
        row_group
            .columns()
            .get(column)
            .is_some_and(|c| c.encodings().all(|e| ENCODINGS.contains(&e)))
    }
}

/// The lists, elements and values of one column decoded so far.
pub(super) struct ColumnDecoder {
    plan: Plan,
    /// Where each list of each variable depth begins in its children, one per list begun.
    starts: Vec<Vec<i64>>,
    /// Lists begun at the `FixedSizeList` depth.
    elements: usize,
    items: usize,
    values: Words,
    /// Whether the column chunk being read has begun a row.
    open: bool,
}

/// Where in the file a fault is: row group, column, page.
pub(super) struct At<'a> {
    pub(super) row_group: usize,
    pub(super) column: &'a str,
}

impl ColumnDecoder {
    /// Bytes per value.
    pub(super) fn width(&self) -> usize {
        self.plan.width
    }

    pub(super) fn new(plan: Plan) -> Self {
        ColumnDecoder {
            starts: vec![Vec::new(); plan.var_lists],
            values: Words::of_width(plan.width),
            plan,
            elements: 0,
            items: 0,
            open: false,
        }
    }

    /// The rows begun so far.
    fn rows(&self) -> usize {
        match (self.plan.var_lists, self.plan.fixed) {
            (0, None) => self.items,
            (0, Some(_)) => self.elements,
            _ => self.starts[0].len(),
        }
    }

    /// Decodes the pages of one column chunk of `rows` rows, appending to what is decoded;
    /// `expected` values (from the footer: only a hint) are reserved first.
    ///
    /// # Errors
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) naming the row group,
    /// column and page (also when the page reader fails), or [`ErrorKind::Io`](crate::ErrorKind::Io).
    pub(super) fn decode_chunk(
        &mut self,
        pages: &mut dyn Iterator<Item = parquet::errors::Result<Page>>,
        rows: usize,
        expected: usize,
        at: &At<'_>,
    ) -> crate::error::Result<()> {
        self.values.try_reserve(expected);
        let fault = |page: usize, reason: String| {
            Error::invalid(
                FileFormat::Parquet,
                format!(
                    "row group {}, column {:?}, page {page}: {reason}",
                    at.row_group, at.column
                ),
            )
        };
        let rows_before = self.rows();
        self.open = false;
        let mut dictionary: Option<Words> = None;
        let mut page_index = 0;
        let page_fault = Error::decoding(FileFormat::Parquet);
        while let Some(page) = pages.next().transpose().map_err(&page_fault)? {
            self.page(page, &mut dictionary)
                .map_err(|reason| fault(page_index, reason))?;
            page_index += 1;
        }
        self.check_elements()
            .map_err(|reason| fault(page_index, reason))?;
        let decoded = self.rows() - rows_before;
        if decoded != rows {
            return Err(fault(
                page_index,
                format!("the pages hold {decoded} rows, the row group {rows}"),
            ));
        }
        Ok(())
    }

    /// Decodes one page; a dictionary page is kept in `dictionary` with its value count.
    fn page(&mut self, page: Page, dictionary: &mut Option<Words>) -> Result<(), Fault> {
        match page {
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                ..
            } => {
                if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    return Err(format!("a dictionary page in encoding {encoding}"));
                }
                let n = num_values as usize;
                let bytes = n
                    .checked_mul(self.plan.width)
                    .filter(|&b| b <= buf.len())
                    .ok_or_else(|| format!("a dictionary of {n} values in {} bytes", buf.len()))?;
                let mut words = Words::of_width(self.plan.width);
                words.extend_le(&buf[..bytes]);
                *dictionary = Some(words);
                Ok(())
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                let mut rest = &buf[..];
                let rep = if self.plan.max_rep > 0 {
                    Some(prefixed_levels(
                        &mut rest,
                        rep_level_encoding,
                        "repetition",
                    )?)
                } else {
                    None
                };
                let def = prefixed_levels(&mut rest, def_level_encoding, "definition")?;
                let items = self.levels(rep, def, num_values as usize)?;
                self.values(rest, encoding, items, dictionary.as_ref())
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                let (rep_len, def_len) =
                    (rep_levels_byte_len as usize, def_levels_byte_len as usize);
                if rep_len + def_len > buf.len() {
                    return Err(format!(
                        "{} bytes of levels in a page of {} bytes",
                        rep_len + def_len,
                        buf.len()
                    ));
                }
                let rep = (self.plan.max_rep > 0).then(|| &buf[..rep_len]);
                let def = &buf[rep_len..rep_len + def_len];
                let items = self.levels(rep, def, num_values as usize)?;
                self.values(
                    &buf[rep_len + def_len..],
                    encoding,
                    items,
                    dictionary.as_ref(),
                )
            }
        }
    }

    /// Reads `n` entries of levels; returns how many items they hold.
    fn levels(&mut self, rep: Option<&[u8]>, def: &[u8], n: usize) -> Result<usize, Fault> {
        let (max_rep, max_def) = (self.plan.max_rep, self.plan.max_def);
        let mut rep_runs = rep.map(|r| Runs::new(r, bit_width(max_rep))).transpose()?;
        let mut def_runs = Runs::new(def, bit_width(max_def))?;
        let (mut r, mut r_left) = (0i16, if rep_runs.is_some() { 0 } else { usize::MAX });
        let (mut d, mut d_left) = (0i16, 0usize);
        let items_before = self.items;
        let mut left = n;
        while left > 0 {
            if let (0, Some(runs)) = (r_left, rep_runs.as_mut()) {
                let (value, count) = runs.next_run()?;
                r = level(value, max_rep, "repetition")?;
                r_left = count;
            }
            if d_left == 0 {
                let (value, count) = def_runs.next_run()?;
                d = level(value, max_def, "definition")?;
                d_left = count;
            }
            let k = r_left.min(d_left).min(left);
            if r == max_rep && d == max_def && (self.open || max_rep == 0) {
                // Items of the innermost list begun last: counted at once.
                self.items += k;
            } else {
                for _ in 0..k {
                    self.entry(r, d)?;
                }
            }
            r_left -= k;
            d_left -= k;
            left -= k;
        }
        Ok(self.items - items_before)
    }

    /// One entry that begins lists (or is a lone item): see the module docs.
    fn entry(&mut self, r: i16, d: i16) -> Result<(), Fault> {
        if d % 2 == 0 {
            return Err(format!(
                "a null at depth {} (definition level {d}): LoD tensors hold no nulls",
                d / 2
            ));
        }
        if !self.open && r != 0 {
            return Err(format!(
                "the column chunk's first entry repeats at level {r}, not 0"
            ));
        }
        let depth = (d - 1) / 2;
        if depth < r {
            return Err(format!(
                "definition level {d} is below what repetition level {r} implies ({})",
                2 * r + 1
            ));
        }
        self.open = true;
        let lists = self.plan.max_rep;
        for t in r..(depth + 1).min(lists) {
            self.begin(t as usize, t == depth)?;
        }
        if depth == lists {
            self.items += 1;
        }
        Ok(())
    }

    /// Begins a list at depth `t`, `empty` when the entry ends there.
    fn begin(&mut self, t: usize, empty: bool) -> Result<(), Fault> {
        if t == self.plan.var_lists {
            let size = self
                .plan
                .fixed
                .expect("a depth past the variable lists is the element");
            if empty {
                return Err(format!(
                    "element {} is empty, not of {size} values",
                    self.elements
                ));
            }
            self.check_elements()?;
            self.elements += 1;
        } else {
            let children = self.children(t);
            self.starts[t].push(children as i64);
        }
        Ok(())
    }

    /// The children begun so far of the lists at variable depth `t`.
    fn children(&self, t: usize) -> usize {
        if t + 1 < self.plan.var_lists {
            self.starts[t + 1].len()
        } else if self.plan.fixed.is_some() {
            self.elements
        } else {
            self.items
        }
    }

    /// Every element begun so far has its size.
    fn check_elements(&self) -> Result<(), Fault> {
        let Some(size) = self.plan.fixed else {
            return Ok(());
        };
        if self.items != self.elements * size {
            let last = self.elements.saturating_sub(1);
            return Err(format!(
                "element {last} has {} values, not {size}",
                self.items + size - self.elements * size
            ));
        }
        Ok(())
    }

    /// Appends the `items` values of a page, `PLAIN` or dictionary-encoded.
    fn values(
        &mut self,
        buf: &[u8],
        encoding: Encoding,
        items: usize,
        dictionary: Option<&Words>,
    ) -> Result<(), Fault> {
        let width = self.plan.width;
        match encoding {
            Encoding::PLAIN => {
                let bytes = items
                    .checked_mul(width)
                    .filter(|&b| b <= buf.len())
                    .ok_or_else(|| {
                        format!("{items} values of {width} bytes in {} bytes", buf.len())
                    })?;
                self.values.extend_le(&buf[..bytes]);
                Ok(())
            }
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let dict = dictionary
                    .ok_or_else(|| "a dictionary-encoded page without a dictionary".to_owned())?;
                let (&bits, indices) = buf
                    .split_first()
                    .ok_or_else(|| "a dictionary-encoded page without its bit width".to_owned())?;
                self.values.gather(dict, indices, bits, items)
            }
            other => Err(format!("values in encoding {other}")),
        }
    }

    /// The column decoded so far as one Arrow array of the plan's type; the decoder is
    /// empty afterwards.
    ///
    /// # Errors
    /// An offset that does not fit an `i32` list.
    pub(super) fn take_array(&mut self) -> crate::error::Result<ArrayRef> {
        let mut ends = Vec::with_capacity(self.plan.var_lists);
        for t in 0..self.plan.var_lists {
            ends.push(self.children(t) as i64);
        }
        let mut starts = std::mem::replace(&mut self.starts, vec![Vec::new(); self.plan.var_lists]);
        for (s, end) in starts.iter_mut().zip(ends) {
            s.push(end);
        }
        let values = std::mem::replace(&mut self.values, Words::of_width(self.plan.width));
        let items = std::mem::take(&mut self.items);
        self.elements = 0;
        build(&self.plan.data_type, starts.into_iter(), values, items)
    }
}

/// The levels of a v1 page, after their 4-byte length, taken off the front of `rest`.
fn prefixed_levels<'a>(
    rest: &mut &'a [u8],
    encoding: Encoding,
    what: &str,
) -> Result<&'a [u8], Fault> {
    if encoding != Encoding::RLE {
        return Err(format!("{what} levels in encoding {encoding}"));
    }
    let len = rest
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or_else(|| format!("{what} levels without their length"))?;
    let levels = rest.get(4..4 + len).ok_or_else(|| {
        format!(
            "{len} bytes of {what} levels, {} left in the page",
            rest.len() - 4
        )
    })?;
    *rest = &rest[4 + len..];
    Ok(levels)
}

/// A level read from the runs, checked against its maximum.
fn level(value: u32, max: i16, what: &str) -> Result<i16, Fault> {
    i16::try_from(value)
        .ok()
        .filter(|&v| v <= max)
        .ok_or_else(|| format!("{what} level {value}, more than the column's {max}"))
}

/// The Arrow array of `data_type` from the starts (then ends) of its variable lists and its
/// values.
fn build(
    data_type: &DataType,
    mut offsets: impl Iterator<Item = Vec<i64>>,
    values: Words,
    items: usize,
) -> crate::error::Result<ArrayRef> {
    Ok(match data_type {
        DataType::List(field) => {
            let level = offsets.next().expect("one offsets vector per list");
            let child = build(field.data_type(), offsets, values, items)?;
            list::<i32>(field, &level, child)?
        }
        DataType::LargeList(field) => {
            let level = offsets.next().expect("one offsets vector per list");
            let child = build(field.data_type(), offsets, values, items)?;
            list::<i64>(field, &level, child)?
        }
        DataType::FixedSizeList(field, size) => {
            let child = build(field.data_type(), offsets, values, items)?;
            Arc::new(
                FixedSizeListArray::try_new(field.clone(), *size, child, None)
                    .map_err(Error::decoding(FileFormat::Parquet))?,
            )
        }
        leaf => {
            let data = ArrayDataBuilder::new(leaf.clone())
                .len(items)
                .add_buffer(values.into_buffer())
                .build()
                .map_err(Error::decoding(FileFormat::Parquet))?;
            make_array(data)
        }
    })
}

/// A list array over `child` with `offsets` (begun lists' starts and the last end).
fn list<O: OffsetSizeTrait>(
    field: &FieldRef,
    offsets: &[i64],
    child: ArrayRef,
) -> crate::error::Result<ArrayRef> {
    let converted = offsets
        .iter()
        .map(|&o| {
            O::from_usize(o as usize).ok_or_else(|| {
                Error::invalid(
                    FileFormat::Parquet,
                    format!(
                        "offset {o} does not fit the column's {} list offsets",
                        std::mem::size_of::<O>() * 8
                    ),
                )
            })
        })
        .collect::<crate::error::Result<Vec<O>>>()?;
    let offsets = OffsetBuffer::new(ScalarBuffer::from(converted));
    let array = GenericListArray::<O>::try_new(Field::clone(field).into(), offsets, child, None)
        .map_err(Error::decoding(FileFormat::Parquet))?;
    Ok(Arc::new(array))
}

/// Values as the little-endian words of their width, in a `Vec` (which grows in place)
/// handed to Arrow without a copy.
enum Words {
    W4(Vec<u32>),
    W8(Vec<u64>),
}

impl Words {
    fn of_width(width: usize) -> Words {
        if width == 8 {
            Words::W8(Vec::new())
        } else {
            Words::W4(Vec::new())
        }
    }

    /// Appends the values of `bytes`, whole words of the width.
    fn extend_le(&mut self, bytes: &[u8]) {
        match self {
            Words::W4(v) => v.extend(
                bytes
                    .chunks_exact(4)
                    .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))),
            ),
            Words::W8(v) => v.extend(
                bytes
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))),
            ),
        }
    }

    /// Room for about `n` more values; a failure to get it is left to the growth.
    fn try_reserve(&mut self, n: usize) {
        let _ = match self {
            Words::W4(v) => v.try_reserve(n),
            Words::W8(v) => v.try_reserve(n),
        };
    }

    /// Appends `items` values of `dict` at the indices read from `indices` (`bits` wide).
    fn gather(
        &mut self,
        dict: &Words,
        indices: &[u8],
        bits: u8,
        items: usize,
    ) -> Result<(), Fault> {
        match (self, dict) {
            (Words::W4(out), Words::W4(dict)) => gather(out, dict, indices, bits, items),
            (Words::W8(out), Words::W8(dict)) => gather(out, dict, indices, bits, items),
            _ => Err("a dictionary of another width".to_owned()),
        }
    }

    fn into_buffer(self) -> Buffer {
        match self {
            Words::W4(v) => Buffer::from_vec(v),
            Words::W8(v) => Buffer::from_vec(v),
        }
    }
}

/// Appends `items` values of `dict` at the indices read from `indices` (`bits` wide).
fn gather<T: Copy>(
    out: &mut Vec<T>,
    dict: &[T],
    indices: &[u8],
    bits: u8,
    items: usize,
) -> Result<(), Fault> {
    let mut runs = Runs::new(indices, bits)?;
    let mut left = items;
    while left > 0 {
        let (index, count) = runs.next_run()?;
        let value = *dict.get(index as usize).ok_or_else(|| {
            format!(
                "dictionary index {index}, the dictionary holds {}",
                dict.len()
            )
        })?;
        let count = count.min(left);
        out.extend(std::iter::repeat_n(value, count));
        left -= count;
    }
    Ok(())
}
