//! Repetition and definition levels of this crate's column layout, both ways.
//!
//! Each tensor column is one Parquet leaf (format-spec.md §8.1): `L` nested lists (the LoD
//! levels, then one more for a tensor element's `FixedSizeList`), every field nullable, so
//! `max_rep = L` and `max_def = 2L + 1` ([`Leaf::of_lists`], which the writer and the
//! decoder both use to recognise the leaf). The writer's levels follow from the offsets
//! alone ([`LevelRuns`]): an element's first item repeats at the depth of the outermost
//! sequence it begins (0 for a row), its other items at the element's own depth; every item
//! is defined to the maximum; an empty sequence at level `j` is one entry, defined to
//! `2j + 1`, with no value. The decoder reads the same entries back into offsets
//! (`super::decode`).

use std::ops::Range;

use arrow_schema::DataType;
use parquet::schema::types::ColumnDescPtr;

use super::runs::Hybrid;
use crate::dataset::{Column, Dataset};
use crate::error::{Error, Result};
use crate::lod::Lod;
use crate::tensor::LodTensor;

/// What the levels of one column's leaf are made of.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Leaf {
    /// The LoD levels (variable-length lists).
    pub(super) levels: usize,
    /// Items per element when elements are tensors (a `FixedSizeList`), `None` for scalars.
    pub(super) element_items: Option<usize>,
    pub(super) max_rep: i16,
    pub(super) max_def: i16,
}

impl Leaf {
    /// The leaf of `levels` variable-length lists over elements of `element_items` items
    /// (`None`: scalars), or `None` when its levels do not fit an `i16`.
    pub(super) fn of_lists(levels: usize, element_items: Option<usize>) -> Option<Leaf> {
        let lists = levels.checked_add(usize::from(element_items.is_some()))?;
        let max_rep = i16::try_from(lists).ok()?;
        Some(Leaf {
            levels,
            element_items,
            max_rep,
            max_def: max_rep.checked_mul(2)?.checked_add(1)?,
        })
    }

    /// The leaf of `tensor`, checked against the Parquet column it is written to.
    pub(super) fn of(tensor: &LodTensor, descr: &ColumnDescPtr) -> Result<Leaf> {
        let levels = tensor.num_levels();
        let element_items =
            (!tensor.element_shape().is_empty()).then(|| tensor.values().element_size());
        let leaf = Leaf::of_lists(levels, element_items)
            .ok_or_else(|| Error::internal(format!("{levels} levels")))?;
        if (descr.max_rep_level(), descr.max_def_level()) != (leaf.max_rep, leaf.max_def) {
            return Err(Error::internal(format!(
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
            .ok_or_else(|| {
                Error::internal(format!("no column {column} for leaf {}", descr.path()))
            })?
            .tensor()?;
        Ok((tensor, Leaf::of(tensor, descr)?))
    })
}

/// Where row `row`'s elements begin, followed down the levels.
pub(super) fn element_position(lod: &Lod, row: usize) -> usize {
    lod.descend(0, row..row, lod.num_levels()).start
}

/// The items of rows `rows` of `tensor` in its values.
pub(super) fn row_items(tensor: &LodTensor, leaf: &Leaf, rows: Range<usize>) -> Range<usize> {
    let size = tensor.values().element_size();
    let start = element_of_row(tensor, leaf, rows.start);
    let end = element_of_row(tensor, leaf, rows.end);
    start * size..end * size
}

/// Where row `row`'s elements begin.
pub(super) fn element_of_row(tensor: &LodTensor, leaf: &Leaf, row: usize) -> usize {
    if leaf.levels == 0 {
        tensor.elements().start + row
    } else {
        element_position(tensor.lod(), row)
    }
}

/// The repetition and definition levels of some rows, as runs: the one walk from offsets
/// to levels.
pub(super) struct LevelRuns {
    rep: Option<Hybrid>,
    def: Hybrid,
    entries: u64,
    /// Entries without a value (empty sequences).
    pub(super) nulls: u64,
}

impl LevelRuns {
    pub(super) fn new(leaf: &Leaf) -> Self {
        LevelRuns {
            rep: (leaf.max_rep > 0).then(|| Hybrid::new(leaf.max_rep)),
            def: Hybrid::new(leaf.max_def),
            entries: 0,
            nulls: 0,
        }
    }

    /// The levels of rows `rows` of `tensor`.
    pub(super) fn rows(&mut self, tensor: &LodTensor, leaf: &Leaf, rows: Range<usize>) {
        if leaf.levels == 0 {
            self.elements(leaf, 0, rows.len());
        } else {
            for row in rows {
                self.sequence(tensor.lod(), leaf, 0, row, 0);
            }
        }
    }

    /// Sequence `index` of `level`, whose first entry repeats at `rep`.
    fn sequence(&mut self, lod: &Lod, leaf: &Leaf, level: usize, index: usize, rep: i16) {
        let offsets = &lod.levels()[level];
        let children = offsets.get(index)..offsets.get(index + 1);
        if children.is_empty() {
            // `level` < `leaf.levels` <= `max_rep`, an i16.
            self.entries(rep, 2 * level as i16 + 1, 1);
            self.nulls += 1;
            return;
        }
        // The children are entries of the list at depth `level + 1`.
        let next = level as i16 + 1;
        if level + 1 == leaf.levels {
            self.elements(leaf, rep, 1);
            self.elements(leaf, next, children.len() - 1);
            return;
        }
        for child in children.clone() {
            let rep = if child == children.start { rep } else { next };
            self.sequence(lod, leaf, level + 1, child, rep);
        }
    }

    /// `count` elements, each one's first item repeating at `rep`.
    fn elements(&mut self, leaf: &Leaf, rep: i16, count: usize) {
        match leaf.element_items {
            None => self.entries(rep, leaf.max_def, count),
            Some(items) => {
                for _ in 0..count {
                    self.entries(rep, leaf.max_def, 1);
                    self.entries(leaf.max_rep, leaf.max_def, items - 1);
                }
            }
        }
    }

    /// `count` entries of the same levels.
    fn entries(&mut self, rep: i16, def: i16, count: usize) {
        if count == 0 {
            return;
        }
        if let Some(r) = &mut self.rep {
            r.push(rep as u16, count);
        }
        self.def.push(def as u16, count);
        self.entries += count as u64;
    }

    /// About how many bytes [`LevelRuns::write`] appends.
    pub(super) fn byte_len(&self) -> usize {
        self.rep.as_ref().map_or(0, Hybrid::byte_len) + self.def.byte_len() + 8
    }

    /// Appends the levels to `page` (each a 4-byte length and its runs, as a data page v1
    /// holds them); returns the number of entries.
    ///
    /// # Errors
    /// More entries, or level bytes, than a data page header can count (a row of over
    /// 2³² − 1 items).
    pub(super) fn write(mut self, page: &mut Vec<u8>) -> Result<u32> {
        let too_many = || {
            Error::internal(format!(
                "a row of {} level entries: more than a page holds",
                self.entries
            ))
        };
        let entries = u32::try_from(self.entries).map_err(|_| too_many())?;
        for levels in self.rep.iter_mut().chain([&mut self.def]) {
            let bytes = levels.finish();
            let len = u32::try_from(bytes.len()).map_err(|_| too_many())?;
            page.extend_from_slice(&len.to_le_bytes());
            page.extend_from_slice(bytes);
        }
        Ok(entries)
    }
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
