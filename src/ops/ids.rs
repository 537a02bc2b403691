//! Operations on sequences of integer ids: `sequence_enumerate` (the windows starting at
//! each id) and `sequence_erase` (the ids that remain once some are removed), after
//! Paddle's operators of the same names.
//!
//! ```text
//! lengths [3, 2]                        lengths [3, 2]
//! ids     [1, 2, 3 | 4, 5]  enumerate   windows [[1,2], [2,3], [3,0] | [4,5], [5,0]]   (win 2, pad 0)
//!                           erase [2]   lengths [2, 2], ids [1, 3 | 4, 5]
//! ```
//!
//! Paddle takes `int32` and `int64` ids; these take every integer dtype. Elements must be
//! single ids (Paddle's `[N, 1]` inputs).

use arrow_array::ArrayRef;
use arrow_array::types::ArrowPrimitiveType;

use super::{array_of, element_offsets, one_level, output_items, width_of, with_int_type};
use crate::error::{ArgumentError, Error, Result};
use crate::lod::Lod;
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

const ENUMERATE: &str = "sequence_enumerate";
const ERASE: &str = "sequence_erase";

/// Checks that the elements of `x` are single ids.
fn check_ids(op: &'static str, x: &LodTensor) -> Result<()> {
    if x.values().element_size() == 1 {
        Ok(())
    } else {
        Err(Error::invalid_argument(
            op,
            "element shape",
            format!("{:?}", x.element_shape()),
            "one id per element",
        ))
    }
}

fn not_ids(op: &'static str, dtype: DType) -> Error {
    Error::invalid_argument(op, "dtype", dtype, "an integer dtype")
}

/// Every window of `win_size` ids starting at each position of each sequence of a 1-level
/// `x`, padded with `pad_value` past the sequence's end (Paddle's `sequence_enumerate`).
///
/// The output has `x`'s LoD (re-based to start at 0) and dtype, and elements of shape
/// `[win_size]`: element `i` holds ids `i..i + win_size` of its sequence, those past the
/// end replaced by `pad_value`. A window longer than its sequence is mostly padding.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] /
/// [`UnsupportedError::TooManyLevels`](crate::UnsupportedError::TooManyLevels) unless `x`
/// has one level (as Paddle); [`ArgumentError::InvalidArgument`] when `win_size < 2` (as
/// Paddle), when elements are not single ids, when the dtype is not an integer or
/// `pad_value` does not fit it.
///
/// # Example
/// Paddle's documented example: x.lod = [[0, 3, 5]], x.data = [1, 2, 3, 4, 5], win_size 2,
/// pad_value 0 → [[1, 2], [2, 3], [3, 0], [4, 5], [5, 0]], same LoD:
/// ```
/// use arrow_array::types::Int64Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_enumerate;
/// let x = LodTensor::from_lengths::<Int64Type>(&[vec![3, 2]], vec![1, 2, 3, 4, 5], vec![1])?;
/// let out = sequence_enumerate(&x, 2, 0)?;
/// assert_eq!(out.lod().lengths(), vec![vec![3, 2]]);
/// assert_eq!(out.element_shape(), &[2]);
/// assert_eq!(out.typed_values::<Int64Type>()?, &[1, 2, 2, 3, 3, 0, 4, 5, 5, 0]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_enumerate(x: &LodTensor, win_size: usize, pad_value: i64) -> Result<LodTensor> {
    one_level(ENUMERATE, x.num_levels())?;
    check_ids(ENUMERATE, x)?;
    if win_size < 2 {
        return Err(Error::invalid_argument(
            ENUMERATE,
            "win_size",
            win_size,
            "at least 2",
        ));
    }
    let x = x.rebased();
    let offsets = element_offsets(x.lod(), 0)?;
    let items = with_int_type!(
        x.dtype(),
        |T| enumerate::<T>(x.values(), &offsets, win_size, pad_value)?,
        other => return Err(not_ids(ENUMERATE, x.dtype()))
    );
    let (lod, _) = x.into_parts();
    LodTensor::try_new(lod, Values::try_new(items, vec![win_size])?)
}

fn enumerate<T: ArrowPrimitiveType>(
    values: &Values,
    offsets: &[usize],
    win_size: usize,
    pad_value: i64,
) -> Result<ArrayRef>
where
    T::Native: TryFrom<i64>,
{
    let pad = T::Native::try_from(pad_value).map_err(|_| {
        Error::invalid_argument(
            ENUMERATE,
            "pad_value",
            pad_value,
            format!("a value of {}", values.dtype()),
        )
    })?;
    let ids = values.typed::<T>()?;
    let total = output_items(
        ENUMERATE,
        ("win_size", win_size),
        ids.len(),
        win_size,
        values.dtype(),
    )?;
    let mut out = Vec::with_capacity(total);
    for w in offsets.windows(2) {
        for start in w[0]..w[1] {
            let n = win_size.min(w[1] - start);
            out.extend_from_slice(&ids[start..start + n]);
            out.resize(out.len() + win_size - n, pad);
        }
    }
    Ok(array_of::<T>(out))
}

/// The ids of `x` that are not in `tokens`, each sequence of the last level shrunk to the
/// ids it keeps (Paddle's `sequence_erase`).
///
/// The output's outer levels are `x`'s (re-based to start at 0); its last level has the
/// new lengths, 0 for a sequence erased entirely; the dtype and element shape are `x`'s.
/// A token that no value of the dtype can equal removes nothing.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] for a tensor without levels;
/// [`ArgumentError::InvalidArgument`] when elements are not single ids or the dtype is not
/// an integer.
///
/// # Example
/// Paddle's documented example: x.lod = [[0, 3, 6, 10]], x.data = [2, 2, 6, 1, 3, 9, 6, 1,
/// 0, 1], tokens [2, 3, 5] → out.lod = [[0, 1, 3, 7]], out.data = [6, 1, 9, 6, 1, 0, 1]:
/// ```
/// use arrow_array::types::Int64Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_erase;
/// let x = LodTensor::from_lengths::<Int64Type>(
///     &[vec![3, 3, 4]],
///     vec![2, 2, 6, 1, 3, 9, 6, 1, 0, 1],
///     vec![1],
/// )?;
/// let out = sequence_erase(&x, &[2, 3, 5])?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 1, 3, 7]]);
/// assert_eq!(out.typed_values::<Int64Type>()?, &[6, 1, 9, 6, 1, 0, 1]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_erase(x: &LodTensor, tokens: &[i64]) -> Result<LodTensor> {
    let levels = x.num_levels();
    if levels == 0 {
        return Err(Error::from(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels,
        }));
    }
    check_ids(ERASE, x)?;
    let x = x.rebased();
    let offsets = element_offsets(x.lod(), levels - 1)?;
    let mut tokens = tokens.to_vec();
    tokens.sort_unstable();
    tokens.dedup();
    let (items, kept) = with_int_type!(
        x.dtype(),
        |T| erase::<T>(x.values(), &offsets, &tokens)?,
        other => return Err(not_ids(ERASE, x.dtype()))
    );
    let mut lengths = x.lod().lengths();
    lengths[levels - 1] = kept;
    let lod = Lod::try_from_lengths_with_width(&lengths, width_of(x.lod()))?;
    LodTensor::try_new(lod, Values::try_new(items, x.element_shape().to_vec())?)
}

/// The ids not in `tokens` (sorted), and how many each sequence keeps.
fn erase<T: ArrowPrimitiveType>(
    values: &Values,
    offsets: &[usize],
    tokens: &[i64],
) -> Result<(ArrayRef, Vec<usize>)>
where
    T::Native: Into<i128>,
{
    let ids = values.typed::<T>()?;
    let erased = |id: T::Native| {
        let id: i128 = id.into();
        i64::try_from(id).is_ok_and(|id| tokens.binary_search(&id).is_ok())
    };
    let mut out = Vec::with_capacity(ids.len());
    let mut kept = Vec::with_capacity(offsets.len().saturating_sub(1));
    for w in offsets.windows(2) {
        let before = out.len();
        out.extend(ids[w[0]..w[1]].iter().copied().filter(|&id| !erased(id)));
        kept.push(out.len() - before);
    }
    Ok((array_of::<T>(out), kept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, ErrorKind, UnsupportedError};
    use crate::ops::model::sequences;
    use arrow_array::types::{Float32Type, Int32Type, Int64Type, UInt8Type};
    use proptest::prelude::*;

    #[test]
    fn enumerate_windows_longer_than_sequences() {
        let x = sequences::<Int64Type>(&[2, 0, 1], vec![7, 8, 9]);
        let out = sequence_enumerate(&x, 4, -1).unwrap();
        assert_eq!(
            out.typed_values::<Int64Type>().unwrap(),
            &[7, 8, -1, -1, 8, -1, -1, -1, 9, -1, -1, -1]
        );
        assert_eq!(out.lod().lengths(), vec![vec![2, 0, 1]]);
    }

    #[test]
    fn errors_are_typed() {
        let x = sequences::<Int64Type>(&[2], vec![1, 2]);
        let e = sequence_enumerate(&x, 1, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_enumerate: win_size is 1, expected at least 2"
        );
        let two =
            LodTensor::from_lengths::<Int64Type>(&[vec![1], vec![2]], vec![1, 2], vec![]).unwrap();
        assert!(matches!(
            sequence_enumerate(&two, 2, 0).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(UnsupportedError::TooManyLevels {
                found: 2,
                ..
            }))
        ));
        let plain = x.drop_outer_levels(1).unwrap();
        assert!(matches!(
            sequence_enumerate(&plain, 2, 0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
        ));
        assert!(matches!(
            sequence_erase(&plain, &[1]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
        ));
        let wide = LodTensor::from_lengths::<Int64Type>(&[vec![1]], vec![1, 2], vec![2]).unwrap();
        for e in [sequence_enumerate(&wide, 2, 0), sequence_erase(&wide, &[1])] {
            assert!(matches!(
                e.map_err(Error::into_kind),
                Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                    name: "element shape",
                    ..
                }))
            ));
        }
        let floats = LodTensor::from_lengths::<Float32Type>(&[vec![1]], vec![1.0], vec![]).unwrap();
        let e = sequence_erase(&floats, &[1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_erase: dtype is float32, expected an integer dtype"
        );
        let bytes = LodTensor::from_lengths::<UInt8Type>(&[vec![1]], vec![1], vec![]).unwrap();
        let e = sequence_enumerate(&bytes, 2, 300).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_enumerate: pad_value is 300, expected a value of uint8"
        );
    }

    #[test]
    fn erase_keeps_outer_levels_and_every_integer_dtype() {
        let x = LodTensor::from_lengths::<Int32Type>(
            &[vec![2, 1], vec![2, 0, 3]],
            vec![1, 2, 2, 1, 3],
            vec![],
        )
        .unwrap();
        let out = sequence_erase(&x, &[1, i64::MAX]).unwrap();
        assert_eq!(out.lod().lengths(), vec![vec![2, 1], vec![1, 0, 2]]);
        assert_eq!(out.typed_values::<Int32Type>().unwrap(), &[2, 2, 3]);
        let all = sequence_erase(&x, &[1, 2, 3]).unwrap();
        assert_eq!(all.lod().lengths(), vec![vec![2, 1], vec![0, 0, 0]]);
        assert_eq!(all.values().num_elements(), 0);
        let bytes =
            LodTensor::from_lengths::<UInt8Type>(&[vec![3]], vec![255, 0, 7], vec![]).unwrap();
        let out = sequence_erase(&bytes, &[255, -1]).unwrap();
        assert_eq!(out.typed_values::<UInt8Type>().unwrap(), &[0, 7]);
    }

    /// Sequences of small ids, as a view past `skip` sequences of junk.
    fn view(seqs: &[Vec<i64>], skip: usize) -> LodTensor {
        let all: Vec<Vec<i64>> = (0..skip)
            .map(|i| vec![-9; i + 1])
            .chain(seqs.iter().cloned())
            .collect();
        let lengths: Vec<usize> = all.iter().map(Vec::len).collect();
        sequences::<Int64Type>(&lengths, all.concat())
            .slice_rows(skip..all.len())
            .unwrap()
    }

    fn seqs() -> impl Strategy<Value = Vec<Vec<i64>>> {
        prop::collection::vec(prop::collection::vec(0i64..6, 0..9), 0..7)
    }

    proptest! {
        #[test]
        fn enumerate_matches_the_model(seqs in seqs(), skip in 0usize..3, win in 2usize..6, pad in -3i64..3) {
            let out = sequence_enumerate(&view(&seqs, skip), win, pad).unwrap();
            let mut want = Vec::new();
            for s in &seqs {
                for i in 0..s.len() {
                    want.extend((i..i + win).map(|j| s.get(j).copied().unwrap_or(pad)));
                }
            }
            prop_assert_eq!(out.typed_values::<Int64Type>().unwrap(), &want[..]);
            prop_assert_eq!(out.lod().lengths(), vec![seqs.iter().map(Vec::len).collect::<Vec<_>>()]);
            prop_assert!(out.lod().is_zero_based());
        }

        #[test]
        fn erase_matches_the_model(seqs in seqs(), skip in 0usize..3, tokens in prop::collection::vec(0i64..6, 0..4)) {
            let out = sequence_erase(&view(&seqs, skip), &tokens).unwrap();
            let kept: Vec<Vec<i64>> = seqs
                .iter()
                .map(|s| s.iter().copied().filter(|id| !tokens.contains(id)).collect())
                .collect();
            prop_assert_eq!(out.typed_values::<Int64Type>().unwrap(), &kept.concat()[..]);
            prop_assert_eq!(out.lod().lengths(), vec![kept.iter().map(Vec::len).collect::<Vec<_>>()]);
        }
    }
}
