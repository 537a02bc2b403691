//! `sequence_expand` and `sequence_expand_as`: repeat sequences (or rows) of `x` as a
//! reference LoD says.
//!
//! The zero-copy form is an Arrow `LargeListView`: one entry per output sequence, each an
//! (offset, size) pair into `x`'s own values array, so a sequence repeated three times is
//! three entries pointing at the same elements and no value is copied:
//!
//! ```text
//! x:     lengths [1, 3]    values [1.1 | 2.2 3.3 4.4]
//! y:     level 0 lengths [1, 3]
//! view:  offsets [0, 1, 1, 1]   sizes [1, 3, 3, 3]   values = x's values (same buffer)
//! materialised: lengths [1, 3, 3, 3]   values [1.1 | 2.2 3.3 4.4 | 2.2 3.3 4.4 | 2.2 3.3 4.4]
//! ```
//!
//! arrow-rs 60 writes and reads such a `LargeListView` in IPC files unchanged (the shared
//! elements are stored once, and decoding from one buffer copies nothing); see the
//! `list_view_round_trips_through_ipc` test. pyarrow 26.0.1 opens the same file from a
//! memory map with 0 bytes allocated, as
//! `large_list_view<item: extension<arrow.fixed_shape_tensor[value_type=float, shape=[64]]>>`.

use crate::error::{ArgumentError, DataError, UnsupportedError};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, LargeListViewArray};
use arrow_schema::{Field, FieldRef};

use super::{Piece, assemble, element_offsets, one_level, width_of};
use crate::error::Result;
use crate::lod::{Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::Values;

const EXPAND: &str = "sequence_expand";
const EXPAND_AS: &str = "sequence_expand_as";

/// The result of [`sequence_expand_view`]: an Arrow `LargeListView` over `x`'s values.
///
/// Each entry of the list view is one output sequence (when `x` has a LoD) or one output
/// row (when it has none), pointing into the very array that holds `x`'s values.
///
/// # Example
/// ```
/// use lodtensor::{Lod, LodTensor};
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::sequence_expand_view;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![1])?;
/// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![2, 1]])?, 0)?;
/// assert_eq!(view.lengths(), vec![2, 2, 1]);                 // no value copied yet
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ExpandedView {
    array: LargeListViewArray,
    values: Values,
    has_lod: bool,
    width: OffsetWidth,
}

impl ExpandedView {
    /// The list view: offsets and sizes into `x`'s values array.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::sequence_expand_view;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])?;
    /// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![1, 3], vec![1, 2, 1, 2]])?, 0)?;
    /// assert_eq!(view.as_list_view().value_sizes(), &[1, 3, 3, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_list_view(&self) -> &LargeListViewArray {
        &self.array
    }

    /// The list view, consumed.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::Array;
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::sequence_expand_view;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])?;
    /// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![1, 3], vec![1, 2, 1, 2]])?, 0)?;
    /// assert_eq!(view.into_list_view().len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_list_view(self) -> LargeListViewArray {
        self.array
    }

    /// The Arrow field of a column named `name` holding [`ExpandedView::as_list_view`]
    /// (its item field carries the `arrow.fixed_shape_tensor` metadata of the elements).
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::Array;
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::sequence_expand_view;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])?;
    /// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![1, 3], vec![1, 2, 1, 2]])?, 0)?;
    /// assert_eq!(view.field("expanded").data_type(), view.as_list_view().data_type());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn field(&self, name: &str) -> Field {
        Field::new(name, self.array.data_type().clone(), true)
    }

    /// The number of output sequences (rows, when `x` has no LoD).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::sequence_expand_view;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])?;
    /// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![1, 3], vec![1, 2, 1, 2]])?, 0)?;
    /// assert_eq!(view.len(), 4);                                 // 1 + 3 output sequences
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.array.len()
    }

    /// Whether there are no output sequences.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::sequence_expand_view;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![0]], vec![], vec![1])?;
    /// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![0]])?, 0)?;
    /// assert!(view.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.array.is_empty()
    }

    /// The output lengths: elements per output sequence.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::sequence_expand_view;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![1])?;
    /// let view = sequence_expand_view(&x, &Lod::try_from_lengths(&[vec![2, 1]])?, 0)?;
    /// assert_eq!(view.lengths(), vec![2, 2, 1]);                 // x's first sequence twice
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lengths(&self) -> Vec<usize> {
        self.array.sizes().iter().map(|&s| s as usize).collect()
    }

    /// The expansion as a regular tensor with its own contiguous values (the copy the view
    /// avoided): one LoD level when `x` had one, none otherwise, as Paddle returns it.
    ///
    /// # Errors
    /// [`DataError::OffsetOverflow`] when the output offsets do not fit `x`'s offset width.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, LodTensor};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::{sequence_expand, sequence_expand_view};
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![1])?;
    /// let y = Lod::try_from_lengths(&[vec![2, 1]])?;
    /// let copy = sequence_expand_view(&x, &y, 0)?.materialize()?;
    /// assert_eq!(copy, sequence_expand(&x, &y, 0)?);
    /// assert_eq!(copy.typed_values::<Float32Type>()?, &[1.0, 2.0, 1.0, 2.0, 3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn materialize(&self) -> Result<LodTensor> {
        let pieces: Vec<Piece> = self
            .array
            .offsets()
            .iter()
            .zip(self.array.sizes().iter())
            .map(|(&o, &s)| Piece::once(0, o as usize..(o + s) as usize))
            .collect();
        let values = assemble(EXPAND, &[&self.values], &pieces)?;
        let lod = if self.has_lod {
            Lod::try_from_lengths_with_width(&[self.lengths()], self.width)?
        } else {
            Lod::default()
        };
        LodTensor::try_new(lod, values)
    }
}

/// The level of `y` that `ref_level` names (`-1`: the last).
fn resolve_ref_level(op: &'static str, y: &Lod, ref_level: isize) -> Result<usize> {
    let levels = y.num_levels();
    let bad = || {
        ArgumentError::RefLevel {
            op,
            ref_level,
            levels,
        }
        .into()
    };
    if levels == 0 {
        return Err(bad());
    }
    if ref_level == -1 {
        return Ok(levels - 1);
    }
    usize::try_from(ref_level)
        .ok()
        .filter(|&l| l < levels)
        .ok_or_else(bad)
}

/// Paddle's `sequence_expand`, zero-copy: repeats `x`'s `i`-th sequence (or row, when `x`
/// has no LoD) as many times as `y`'s `i`-th sequence at `ref_level` has children
/// (`ref_level = -1`: `y`'s last level). Only `y`'s LoD matters; pass a [`LodTensor`] or
/// a [`Lod`].
///
/// The result shares `x`'s values buffer; [`ExpandedView::materialize`] makes the regular
/// tensor, which [`sequence_expand`] returns directly.
///
/// # Errors
/// [`UnsupportedError::TooManyLevels`] when `x` has more than one level (as in Paddle);
/// [`ArgumentError::RefLevel`] when `y` has no level `ref_level`;
/// [`DataError::SequenceCountMismatch`] when `x`'s sequences (or rows) are not as many as `y`'s
/// sequences at `ref_level`.
///
/// # Example
/// The reference documents' example: x = [1.1, 2.2, 3.3, 4.4] with lengths [[1, 3]], y with
/// lengths [[1, 3], [1, 2, 1, 2]], `ref_level = 0`:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::{Lod, LodTensor};
/// use lodtensor::ops::sequence_expand_view;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])?;
/// let y = Lod::try_from_lengths(&[vec![1, 3], vec![1, 2, 1, 2]])?;
/// let view = sequence_expand_view(&x, &y, 0)?;
/// assert_eq!(view.as_list_view().value_offsets(), &[0, 1, 1, 1]);
/// assert_eq!(view.lengths(), vec![1, 3, 3, 3]);
/// let out = view.materialize()?;
/// assert_eq!(out.lod().lengths(), vec![vec![1, 3, 3, 3]]);
/// assert_eq!(
///     out.typed_values::<Float32Type>()?,
///     &[1.1, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4]
/// );
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_expand_view<Y: AsRef<Lod>>(
    x: &LodTensor,
    y: Y,
    ref_level: isize,
) -> Result<ExpandedView> {
    let y = y.as_ref();
    if x.num_levels() > 1 {
        return Err(UnsupportedError::TooManyLevels {
            op: EXPAND,
            found: x.num_levels(),
            expected: 1,
        }
        .into());
    }
    let level = resolve_ref_level(EXPAND, y, ref_level)?;
    let repeats = y.level_lengths(level)?;
    let has_lod = x.num_levels() == 1;
    // x's sequences as element positions: its level 0, or one row per element.
    let starts: Vec<usize> = if has_lod {
        element_offsets(x.lod(), 0)?
    } else {
        (x.elements().start..=x.elements().end).collect()
    };
    let found = starts.len() - 1;
    if found != repeats.len() {
        return Err(DataError::SequenceCountMismatch {
            op: EXPAND,
            level,
            found,
            expected: repeats.len(),
        }
        .into());
    }
    let total: usize = repeats.iter().sum();
    let mut offsets = Vec::with_capacity(total);
    let mut sizes = Vec::with_capacity(total);
    for (w, &times) in starts.windows(2).zip(&repeats) {
        // Element positions are below the values' length, so they fit i64.
        let (start, size) = (w[0] as i64, (w[1] - w[0]) as i64);
        offsets.extend(std::iter::repeat_n(start, times));
        sizes.extend(std::iter::repeat_n(size, times));
    }
    let plain = LodTensor::try_new(Lod::default(), x.values().clone())?;
    let item: FieldRef = Arc::new(plain.arrow_field("item"));
    let values: ArrayRef = plain.to_arrow();
    let array = LargeListViewArray::try_new(item, offsets.into(), sizes.into(), values, None)?;
    Ok(ExpandedView {
        array,
        values: x.values().clone(),
        has_lod,
        width: width_of(x.lod()),
    })
}

/// Paddle's `sequence_expand`: [`sequence_expand_view`], materialised.
///
/// The output has one LoD level (the lengths of the repeated sequences) when `x` has one,
/// and none when `x` has none, as Paddle's kernel writes it.
///
/// # Errors
/// As [`sequence_expand_view`].
///
/// # Example
/// Paddle's documented cases. Case 1: `x.lod = [[0, 2, 4]]`, `x.data = [[a], [b], [c], [d]]`,
/// `y.lod = [[0, 2, 4], [0, 3, 6, 7, 8]]`, `ref_level = 0` → `out.lod = [[0, 2, 4, 6, 8]]`,
/// `out.data = [[a], [b], [a], [b], [c], [d], [c], [d]]`:
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{Lod, LodTensor};
/// use lodtensor::ops::sequence_expand;
/// let (a, b, c, d) = (1, 2, 3, 4);
/// let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 2]], vec![a, b, c, d], vec![1])?;
/// let y = Lod::try_from_offsets(&[vec![0, 2, 4], vec![0, 3, 6, 7, 8]])?;
/// let out = sequence_expand(&x, &y, 0)?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 2, 4, 6, 8]]);
/// assert_eq!(out.typed_values::<Int32Type>()?, &[a, b, a, b, c, d, c, d]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
/// Case 2: `x.data = [[a], [b], [c]]` without LoD, `y.lod = [[0, 2, 2, 5]]`, `ref_level = -1`
/// → `out.data = [[a], [a], [c], [c], [c]]`, a plain tensor:
/// ```
/// # use arrow_array::types::Int32Type;
/// # use lodtensor::{Lod, LodTensor, Values};
/// # use lodtensor::ops::sequence_expand;
/// let (a, b, c) = (1, 2, 3);
/// let x = LodTensor::try_new(Lod::default(), Values::from_vec::<Int32Type>(vec![a, b, c], vec![1])?)?;
/// let y = Lod::try_from_offsets(&[vec![0, 2, 2, 5]])?;
/// let out = sequence_expand(&x, &y, -1)?;
/// assert_eq!(out.num_levels(), 0);
/// assert_eq!(out.typed_values::<Int32Type>()?, &[a, a, c, c, c]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_expand<Y: AsRef<Lod>>(x: &LodTensor, y: Y, ref_level: isize) -> Result<LodTensor> {
    sequence_expand_view(x, y, ref_level)?.materialize()
}

/// Paddle's `sequence_expand_as`: row `i` of `x` repeated as many times as `y`'s sequence
/// `i` has elements; the output's LoD is `y`'s. `x`'s own LoD is ignored (its elements in
/// view are the rows), as in Paddle; `y` must have exactly one level.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] when `y` has no level; [`UnsupportedError::TooManyLevels`] when it has
/// more than one; [`DataError::SequenceCountMismatch`] when `x`'s rows are not as many as `y`'s
/// sequences.
///
/// # Example
/// Paddle's case 1: `x.data = [[a], [b], [c], [d]]`, y lengths `[[3, 3, 1, 1]]` →
/// `out.lod = [[0, 3, 6, 7, 8]]`, `out.data = [[a], [a], [a], [b], [b], [b], [c], [d]]`:
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::sequence_expand_as;
/// let (a, b, c, d) = (1, 2, 3, 4);
/// let x = LodTensor::try_new(Lod::default(), Values::from_vec::<Int32Type>(vec![a, b, c, d], vec![1])?)?;
/// let y = Lod::try_from_lengths(&[vec![3, 3, 1, 1]])?;
/// let out = sequence_expand_as(&x, &y)?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 3, 6, 7, 8]]);
/// assert_eq!(out.typed_values::<Int32Type>()?, &[a, a, a, b, b, b, c, d]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_expand_as<Y: AsRef<Lod>>(x: &LodTensor, y: Y) -> Result<LodTensor> {
    let y = y.as_ref();
    one_level(EXPAND_AS, y.num_levels())?;
    let lengths = y.level_lengths(0)?;
    let rows = x.elements();
    if rows.len() != lengths.len() {
        return Err(DataError::SequenceCountMismatch {
            op: EXPAND_AS,
            level: 0,
            found: rows.len(),
            expected: lengths.len(),
        }
        .into());
    }
    let pieces: Vec<Piece> = rows
        .zip(&lengths)
        .map(|(row, &times)| Piece {
            source: 0,
            elements: row..row + 1,
            times,
        })
        .collect();
    let values = assemble(EXPAND_AS, &[x.values()], &pieces)?;
    LodTensor::try_new(
        Lod::try_from_lengths_with_width(&[lengths], width_of(y))?,
        values,
    )
}

#[cfg(test)]
mod tests;
