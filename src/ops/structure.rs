//! Structure operations: joining tensors and sequences, splitting, reversing, slicing and
//! re-indexing.
//!
//! Splitting and re-indexing are views ([`split`], [`split_rows`], [`lod_reset`]);
//! joining, reversing and slicing write new values ([`concat`](fn@concat),
//! [`sequence_concat`], [`sequence_reverse`], [`sequence_slice`]).

use crate::error::{ArgumentError, DataError};
use std::ops::Range;

use super::{Piece, assemble, check_same, element_offsets, one_level, width_of};
use crate::error::{Error, Result};
use crate::lod::Lod;
use crate::tensor::LodTensor;

const CONCAT: &str = "concat";
const SPLIT: &str = "split";
const SEQUENCE_CONCAT: &str = "sequence_concat";
const SEQUENCE_SLICE: &str = "sequence_slice";

fn no_inputs(op: &'static str) -> Error {
    ArgumentError::InvalidArgument {
        op,
        name: "number of inputs",
        found: "0".to_owned(),
        expected: "at least 1".to_owned(),
    }
    .into()
}

/// The LoD with lengths `lengths` (one `Vec` per level) in `like`'s offset width.
fn lod_like(like: &Lod, lengths: &[Vec<usize>]) -> Result<Lod> {
    if lengths.is_empty() {
        return Ok(Lod::default());
    }
    Lod::try_from_lengths_with_width(lengths, width_of(like))
}

/// Joins tensors along the top level (Paddle's `MergeLoDTensor`): the rows of `tensors[0]`,
/// then those of `tensors[1]`, …; offsets shifted, values appended (copied).
///
/// # Errors
/// [`ArgumentError::InvalidArgument`] for no input; [`DataError::InputMismatch`] when an input differs
/// from the first in levels, dtype or element shape.
///
/// # Example
/// Paddle's `MergeLoDTensor` test: parts with LoD [[0, 2, 4], [0, 1, 6, 8, 13]] and
/// [[0, 1, 2], [0, 2, 7]] merge to [[0, 2, 4, 5, 6], [0, 1, 6, 8, 13, 15, 20]]:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::concat;
/// let part = |offsets: &[Vec<i64>], items: std::ops::Range<i32>| LodTensor::try_new(
///     Lod::try_from_offsets(offsets).unwrap(),
///     Values::from_vec::<Float32Type>(items.map(|v| v as f32).collect(), vec![1]).unwrap(),
/// ).unwrap();
/// let a = part(&[vec![0, 2, 4], vec![0, 1, 6, 8, 13]], 0..13);
/// let b = part(&[vec![0, 1, 2], vec![0, 2, 7]], 13..20);
/// let merged = concat(&[a, b])?;
/// assert_eq!(merged.lod().offsets(), vec![vec![0, 2, 4, 5, 6], vec![0, 1, 6, 8, 13, 15, 20]]);
/// assert_eq!(merged.typed_values::<Float32Type>()?[12..14], [12.0, 13.0]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn concat(tensors: &[LodTensor]) -> Result<LodTensor> {
    let first = tensors.first().ok_or_else(|| no_inputs(CONCAT))?;
    let levels = first.num_levels();
    let mut lengths = vec![Vec::new(); levels];
    let mut pieces = Vec::with_capacity(tensors.len());
    for (index, t) in tensors.iter().enumerate() {
        if t.num_levels() != levels {
            return Err(DataError::InputMismatch {
                op: CONCAT,
                index,
                what: "levels",
                found: t.num_levels().to_string(),
                expected: levels.to_string(),
            }
            .into());
        }
        check_same(CONCAT, index, first.values(), t.values())?;
        for (all, mine) in lengths.iter_mut().zip(t.lod().lengths()) {
            all.extend(mine);
        }
        pieces.push(Piece::once(index, t.elements()));
    }
    let sources: Vec<_> = tensors.iter().map(LodTensor::values).collect();
    let values = assemble(CONCAT, &sources, &pieces)?;
    LodTensor::try_new(lod_like(first.lod(), &lengths)?, values)
}

/// Splits `x` into at most `k` parts of consecutive top-level sequences (rows of a 0-level
/// tensor), as views, the way Paddle's `SplitLoDTensor` does: parts of
/// `ceil(rows / k)` rows, the last one shorter; an empty `x` gives `k` empty parts.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`] when `k` is 0.
///
/// # Example
/// Paddle's `SplitLoDTensor` test: LoD [[0, 2, 4, 5, 6], [0, 1, 6, 8, 13, 15, 20]] split in
/// two gives [[0, 2, 4], [0, 1, 6, 8, 13]] and [[0, 1, 2], [0, 2, 7]]:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::split;
/// let x = LodTensor::try_new(
///     Lod::try_from_offsets(&[vec![0, 2, 4, 5, 6], vec![0, 1, 6, 8, 13, 15, 20]])?,
///     Values::from_vec::<Float32Type>((0..20).map(|v| v as f32).collect(), vec![1])?,
/// )?;
/// let parts = split(&x, 2)?;
/// assert_eq!(parts[0].rebased().lod().offsets(), vec![vec![0, 2, 4], vec![0, 1, 6, 8, 13]]);
/// assert_eq!(parts[1].rebased().lod().offsets(), vec![vec![0, 1, 2], vec![0, 2, 7]]);
/// assert_eq!(parts[1].typed_values::<Float32Type>()?[0], 13.0);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn split(x: &LodTensor, k: usize) -> Result<Vec<LodTensor>> {
    if k == 0 {
        return Err(ArgumentError::InvalidArgument {
            op: SPLIT,
            name: "number of parts",
            found: "0".to_owned(),
            expected: "at least 1".to_owned(),
        }
        .into());
    }
    let n = x.num_rows();
    if n == 0 {
        return Ok(vec![x.clone(); k]);
    }
    let step = n.div_ceil(k);
    let ranges: Vec<Range<usize>> = (0..n.div_ceil(step))
        .map(|i| i * step..((i + 1) * step).min(n))
        .collect();
    split_rows(x, &ranges)
}

/// Views of the given row ranges of `x` (top-level sequences, or rows of a 0-level tensor).
///
/// # Errors
/// [`ArgumentError::RowsOutOfBounds`] for a range past the last row or reversed.
///
/// # Example
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::split_rows;
/// let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 0, 1]], vec![1, 2, 3], vec![])?;
/// let parts = split_rows(&x, &[0..1, 1..3])?;
/// assert_eq!(parts[1].lod().lengths(), vec![vec![0, 1]]);
/// assert_eq!(parts[1].typed_values::<Int32Type>()?, &[3]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn split_rows(x: &LodTensor, ranges: &[Range<usize>]) -> Result<Vec<LodTensor>> {
    ranges.iter().map(|r| x.slice_rows(r.clone())).collect()
}

/// Reverses the elements of every sequence of the last level (Paddle's
/// `sequence_reverse`); the LoD stays as it is (re-based to start at 0).
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] for a 0-level tensor.
///
/// # Example
/// Paddle's example: x.lod = [[0, 2, 5]], x.data = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10,
/// 11, 12], [13, 14, 15, 16], [17, 18, 19, 20]] → out.data = [[5, 6, 7, 8], [1, 2, 3, 4],
/// [17, 18, 19, 20], [13, 14, 15, 16], [9, 10, 11, 12]], out.lod = [[0, 2, 5]]:
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::sequence_reverse;
/// let x = LodTensor::try_new(
///     Lod::try_from_offsets(&[vec![0, 2, 5]])?,
///     Values::from_vec::<Int32Type>((1..=20).collect(), vec![4])?,
/// )?;
/// let out = sequence_reverse(&x)?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 2, 5]]);
/// assert_eq!(&out.typed_values::<Int32Type>()?[..8], &[5, 6, 7, 8, 1, 2, 3, 4]);
/// assert_eq!(&out.typed_values::<Int32Type>()?[8..], &[17, 18, 19, 20, 13, 14, 15, 16, 9, 10, 11, 12]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_reverse(x: &LodTensor) -> Result<LodTensor> {
    let levels = x.num_levels();
    ArgumentError::check_level(0, levels)?;
    let offsets = element_offsets(x.lod(), levels - 1)?;
    let pieces: Vec<Piece> = offsets
        .windows(2)
        .flat_map(|w| (w[0]..w[1]).rev().map(|e| Piece::once(0, e..e + 1)))
        .collect();
    let values = assemble("sequence_reverse", &[x.values()], &pieces)?;
    LodTensor::try_new(lod_like(x.lod(), &x.lod().lengths())?, values)
}

/// Joins sequence `i` of every input into output sequence `i` (Paddle's
/// `sequence_concat`): inputs have one level and the same number of sequences.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`] for no input; [`UnsupportedError::TooManyLevels`](crate::UnsupportedError::TooManyLevels) /
/// [`ArgumentError::LevelOutOfBounds`] for an input without exactly one level;
/// [`DataError::SequenceCountMismatch`] when the sequence counts differ;
/// [`DataError::InputMismatch`] for another dtype or element shape.
///
/// # Example
/// Paddle's example: x1.lod = [[0, 3, 5]], x1.data = [1, 2, 3, 4, 5]; x2.lod = [[0, 4,
/// 6]], x2.data = [11, 12, 13, 14, 15, 16] → out.lod = [[0, 3+4, 5+6]], out.data = [1, 2,
/// 3, 11, 12, 13, 14, 4, 5, 15, 16]:
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::sequence_concat;
/// let x1 = LodTensor::try_new(Lod::try_from_offsets(&[vec![0, 3, 5]])?, Values::from_vec::<Int32Type>(vec![1, 2, 3, 4, 5], vec![1])?)?;
/// let x2 = LodTensor::try_new(Lod::try_from_offsets(&[vec![0, 4, 6]])?, Values::from_vec::<Int32Type>(vec![11, 12, 13, 14, 15, 16], vec![1])?)?;
/// let out = sequence_concat(&[x1, x2])?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 7, 11]]);
/// assert_eq!(out.typed_values::<Int32Type>()?, &[1, 2, 3, 11, 12, 13, 14, 4, 5, 15, 16]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_concat(inputs: &[LodTensor]) -> Result<LodTensor> {
    let first = inputs.first().ok_or_else(|| no_inputs(SEQUENCE_CONCAT))?;
    let mut all_offsets = Vec::with_capacity(inputs.len());
    for (index, t) in inputs.iter().enumerate() {
        one_level(SEQUENCE_CONCAT, t.num_levels())?;
        check_same(SEQUENCE_CONCAT, index, first.values(), t.values())?;
        let offsets = element_offsets(t.lod(), 0)?;
        if let Some(expected) = all_offsets.first().map(|o: &Vec<usize>| o.len() - 1)
            && offsets.len() - 1 != expected
        {
            return Err(DataError::SequenceCountMismatch {
                op: SEQUENCE_CONCAT,
                level: 0,
                found: offsets.len() - 1,
                expected,
            }
            .into());
        }
        all_offsets.push(offsets);
    }
    let n = all_offsets[0].len() - 1;
    let mut pieces = Vec::with_capacity(n * inputs.len());
    let mut lengths = Vec::with_capacity(n);
    for j in 0..n {
        let mut len = 0;
        for (source, o) in all_offsets.iter().enumerate() {
            pieces.push(Piece::once(source, o[j]..o[j + 1]));
            len += o[j + 1] - o[j];
        }
        lengths.push(len);
    }
    let sources: Vec<_> = inputs.iter().map(LodTensor::values).collect();
    let values = assemble(SEQUENCE_CONCAT, &sources, &pieces)?;
    LodTensor::try_new(lod_like(first.lod(), &[lengths])?, values)
}

/// Keeps `lengths[i]` elements from element `offsets[i]` of every sequence `i` of the last
/// level (Paddle's `sequence_slice`); the outer levels stay as they are.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] for a 0-level tensor; [`DataError::SequenceCountMismatch`] when
/// `offsets` or `lengths` do not have one entry per sequence; [`DataError::SequenceTooLong`]
/// when `offsets[i] + lengths[i]` passes the end of sequence `i`.
///
/// # Example
/// Paddle's example: `x.lod = [[3, 2]]` (lengths),
/// `x.data = [[a1, a2], [b1, b2], [c1, c2], [d1, d2], [e1, e2]]`, `offset = [[0], [1]]`,
/// `length = [[2], [1]]` → `out.lod = [[2, 1]]`, `out.data = [[a1, a2], [b1, b2], [e1, e2]]`:
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_slice;
/// let x = LodTensor::from_lengths::<Int32Type>(&[vec![3, 2]], (1..=10).collect(), vec![2])?;
/// let out = sequence_slice(&x, &[0, 1], &[2, 1])?;
/// assert_eq!(out.lod().lengths(), vec![vec![2, 1]]);
/// assert_eq!(out.typed_values::<Int32Type>()?, &[1, 2, 3, 4, 9, 10]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_slice(x: &LodTensor, offsets: &[usize], lengths: &[usize]) -> Result<LodTensor> {
    let levels = x.num_levels();
    ArgumentError::check_level(0, levels)?;
    let level = levels - 1;
    let elements = element_offsets(x.lod(), level)?;
    let n = elements.len() - 1;
    for found in [offsets.len(), lengths.len()] {
        if found != n {
            return Err(DataError::SequenceCountMismatch {
                op: SEQUENCE_SLICE,
                level,
                found,
                expected: n,
            }
            .into());
        }
    }
    let mut pieces = Vec::with_capacity(n);
    for (index, ((w, &offset), &len)) in elements.windows(2).zip(offsets).zip(lengths).enumerate() {
        let end = offset.saturating_add(len);
        if end > w[1] - w[0] {
            return Err(DataError::SequenceTooLong {
                level,
                index,
                found: end,
                expected: w[1] - w[0],
            }
            .into());
        }
        pieces.push(Piece::once(0, w[0] + offset..w[0] + end));
    }
    let values = assemble(SEQUENCE_SLICE, &[x.values()], &pieces)?;
    let mut all = x.lod().lengths();
    all[level] = lengths.to_vec();
    LodTensor::try_new(lod_like(x.lod(), &all)?, values)
}

/// The elements of `x` in view under a new LoD (Paddle's `lod_reset`), without copying
/// values. `lod` may be a view; its elements in view must be as many as `x`'s.
///
/// # Errors
/// [`DataError::ElementCountMismatch`] when `lod` indexes another number of elements.
///
/// # Example
/// Paddle's example: x.lod = [[0, 2, 5, 6]], x.data = [1.0 … 6.0], target_lod = [4, 2] →
/// out.lod = [[4, 2]] (lengths), out.data = x.data:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::{Lod, LodTensor};
/// use lodtensor::ops::lod_reset;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 3, 1]], vec![1., 2., 3., 4., 5., 6.], vec![1])?;
/// let out = lod_reset(&x, Lod::try_from_lengths(&[vec![4, 2]])?)?;
/// assert_eq!(out.lod().lengths(), vec![vec![4, 2]]);
/// assert_eq!(out.values().as_ptr(), x.values().as_ptr());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn lod_reset(x: &LodTensor, lod: Lod) -> Result<LodTensor> {
    let elements = x.elements();
    let (lod, theirs) = lod.rebased();
    let view = x.drop_outer_levels(x.num_levels())?;
    if lod.num_levels() > 0 && theirs.len() != elements.len() {
        return Err(DataError::ElementCountMismatch {
            level: lod.num_levels() - 1,
            last_offset: theirs.len() as i64,
            elements: elements.len(),
        }
        .into());
    }
    let (_, values) = view.into_parts();
    LodTensor::try_new(lod, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, Error, ErrorKind, UnsupportedError};
    use crate::ops::model;
    use crate::values::Values;
    use arrow_array::types::{Float64Type, Int32Type};
    use proptest::prelude::*;

    #[test]
    fn errors_are_typed() {
        let a = LodTensor::from_lengths::<Int32Type>(&[vec![2]], vec![1, 2], vec![]).unwrap();
        let b = LodTensor::from_lengths::<Float64Type>(&[vec![1]], vec![1.0], vec![]).unwrap();
        let c = LodTensor::from_lengths::<Int32Type>(&[vec![1], vec![1]], vec![1], vec![]).unwrap();
        let d = LodTensor::from_lengths::<Int32Type>(&[vec![1]], vec![1, 2], vec![2]).unwrap();
        let e = concat(&[a.clone(), b.clone()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "concat: input 1: dtype is float64, expected int32"
        );
        assert!(matches!(
            concat(&[a.clone(), c.clone()]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::InputMismatch {
                what: "levels",
                ..
            }))
        ));
        assert!(matches!(
            concat(&[a.clone(), d]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::InputMismatch {
                what: "element shape",
                ..
            }))
        ));
        assert!(matches!(
            concat(&[]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument { .. }))
        ));
        assert!(matches!(
            split(&a, 0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument { .. }))
        ));
        assert_eq!(split(&a.slice_rows(0..0).unwrap(), 3).unwrap().len(), 3);
        assert!(matches!(
            split_rows(&a, &[0..2, 0..0]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::RowsOutOfBounds { .. }))
        ));
    }

    #[test]
    fn sequence_errors_are_typed() {
        let a = LodTensor::from_lengths::<Int32Type>(&[vec![2]], vec![1, 2], vec![]).unwrap();
        let c = LodTensor::from_lengths::<Int32Type>(&[vec![1], vec![1]], vec![1], vec![]).unwrap();
        let plain = a.drop_outer_levels(1).unwrap();
        assert!(matches!(
            sequence_reverse(&plain).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
        ));
        assert!(matches!(
            sequence_slice(&a, &[0], &[3]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::SequenceTooLong {
                index: 0,
                found: 3,
                expected: 2,
                ..
            }))
        ));
        assert!(matches!(
            sequence_slice(&a, &[], &[]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::SequenceCountMismatch {
                found: 0,
                expected: 1,
                ..
            }))
        ));
        assert!(matches!(
            sequence_concat(&[a.clone(), c]).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(
                UnsupportedError::TooManyLevels { .. }
            ))
        ));
        let two = LodTensor::from_lengths::<Int32Type>(&[vec![1, 1]], vec![1, 2], vec![]).unwrap();
        assert!(matches!(
            sequence_concat(&[a.clone(), two]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::SequenceCountMismatch {
                found: 2,
                expected: 1,
                ..
            }))
        ));
        assert!(matches!(
            lod_reset(&a, Lod::try_from_lengths(&[vec![3]]).unwrap()).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ElementCountMismatch {
                level: 0,
                last_offset: 3,
                elements: 2
            }))
        ));
        let _ = Values::from_vec::<Int32Type>(vec![], vec![]).unwrap();
    }

    proptest! {
        #[test]
        fn structure_matches_the_model(
            docs in model::nested(),
            more in model::nested(),
            skip in 0usize..3,
            k in 1usize..5,
        ) {
            let t = model::tensor(&docs, skip);
            let u = model::tensor(&more, 1);
            // concat = model concatenation.
            let joined = concat(&[t.clone(), u.clone()]).unwrap();
            let want: model::Nested = docs.iter().chain(&more).cloned().collect();
            prop_assert_eq!(model::to_nested(&joined), want);
            // split: parts share the values and concatenate back.
            let parts = split(&t, k).unwrap();
            prop_assert!(parts.len() <= k.max(1));
            for p in &parts {
                prop_assert_eq!(p.values().as_ptr(), t.values().as_ptr());
            }
            if !docs.is_empty() {
                prop_assert_eq!(concat(&parts).unwrap(), t.clone());
            } else {
                prop_assert_eq!(parts.len(), k);
            }
            // reverse: each sentence reversed.
            let r = sequence_reverse(&t).unwrap();
            let want: model::Nested = docs
                .iter()
                .map(|d| d.iter().map(|s| s.iter().rev().copied().collect()).collect())
                .collect();
            prop_assert_eq!(model::to_nested(&r), want);
            // slice: drop the first word of every non-empty sentence.
            let sentences: Vec<&Vec<f64>> = docs.iter().flatten().collect();
            let offsets: Vec<usize> = sentences.iter().map(|s| usize::from(!s.is_empty())).collect();
            let lengths: Vec<usize> = sentences.iter().map(|s| s.len().saturating_sub(1)).collect();
            let s = sequence_slice(&t, &offsets, &lengths).unwrap();
            let want: model::Nested = docs
                .iter()
                .map(|d| d.iter().map(|s| s.iter().skip(1).copied().collect()).collect())
                .collect();
            prop_assert_eq!(model::to_nested(&s), want);
            // lod_reset to the same lengths is the same tensor, sharing values.
            let same = lod_reset(&t, t.lod().clone()).unwrap();
            prop_assert_eq!(&same, &t);
            prop_assert!(same.values().as_ptr() >= t.values().as_ptr());
            // sequence_concat of sentences with themselves.
            let x = t.drop_outer_levels(1).unwrap();
            let sc = sequence_concat(&[x.clone(), x.clone()]).unwrap();
            let want: Vec<f64> = sentences.iter().flat_map(|s| s.iter().chain(s.iter()).copied()).collect();
            prop_assert_eq!(sc.typed_values::<Float64Type>().unwrap(), &want[..]);
        }
    }
}
