//! `sequence_scatter`: adds each sequence of updates into one row of a tensor, at the
//! positions its ids give (Paddle's `sequence_scatter`).
//!
//! ```text
//! x (3 rows of 6)   ids lengths [3, 2, 0], ids [0 1 5 | 2 2], updates [a b c | d e]
//! out row 0 = x row 0 + a at 0, b at 1, c at 5
//! out row 1 = x row 1 + (d + e) at 2
//! out row 2 = x row 2
//! ```
//!
//! Sequence `i` of `ids` (and of `updates`, which has the same lengths) updates element `i`
//! of `x`; each id indexes an item of that element. Ids that repeat add up.

use std::borrow::Cow;

use arrow_array::ArrayRef;
use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type};

use super::pool::PoolItem;
use super::{array_of, element_offsets, one_level, unsupported, with_arrow_type};
use crate::error::{DataError, Error, Result};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

const OP: &str = "sequence_scatter";

/// `x` with sequence `i` of `updates` added into element `i` (Paddle's row `i`) at the
/// item positions sequence `i` of `ids` gives.
///
/// `ids` (`int64` as Paddle, or `int32`) and `updates` (`x`'s dtype) are 1-level tensors of
/// single items with the same lengths; their sequences update `x`'s first elements in view,
/// in order, so there may be fewer sequences than elements. The output has `x`'s LoD
/// (re-based to start at 0), dtype and element shape. Integer sums wrap.
///
/// Paddle does not check the ids: an id past its row writes into the next rows or out of
/// bounds. Here every id must index an item of its element.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`](crate::ArgumentError::LevelOutOfBounds) /
/// [`UnsupportedError::TooManyLevels`](crate::UnsupportedError::TooManyLevels) unless `ids`
/// has one level; [`DataError::SequenceCountMismatch`] when there are more sequences than
/// elements of `x`; [`DataError::InputMismatch`] when `updates`' lengths or dtype differ,
/// or `ids` or `updates` have elements of more than one item;
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) for ids that
/// are not integers or an id outside its element;
/// [`UnsupportedError::UnsupportedDType`](crate::UnsupportedError::UnsupportedDType) for
/// booleans.
///
/// # Example
/// Paddle's documented example, with updates that sum exactly in binary:
/// ```
/// use arrow_array::types::{Float32Type, Int64Type};
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_scatter;
/// let x = LodTensor::from_lengths::<Float32Type>(&[], vec![1.0; 18], vec![6])?;
/// let ids = LodTensor::from_lengths::<Int64Type>(
///     &[vec![3, 5, 4]],
///     vec![0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4],
///     vec![1],
/// )?;
/// let updates = LodTensor::from_lengths::<Float32Type>(
///     &[vec![3, 5, 4]],
///     vec![0.25, 0.25, 0.5, 0.125, 0.25, 0.25, 0.5, 0.0, 0.25, 0.25, 0.125, 0.5],
///     vec![1],
/// )?;
/// let out = sequence_scatter(&x, &ids, &updates)?;
/// assert_eq!(
///     out.typed_values::<Float32Type>()?,
///     &[
///         1.25, 1.25, 1.5, 1.0, 1.0, 1.0, // row 0: ids 0, 1, 2
///         1.0, 1.0, 1.5, 1.25, 1.25, 1.125, // row 1: ids 5, 4, 3, 2, 1
///         1.0, 1.0, 1.25, 1.25, 1.5, 1.125, // row 2: ids 3, 2, 5, 4
///     ]
/// );
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_scatter(x: &LodTensor, ids: &LodTensor, updates: &LodTensor) -> Result<LodTensor> {
    one_level(OP, ids.num_levels())?;
    let offsets = element_offsets(ids.lod(), 0)?;
    let lengths = ids.lod().level_lengths(0)?;
    if updates.num_levels() != 1 || updates.lod().level_lengths(0)? != lengths {
        return Err(Error::from(DataError::InputMismatch {
            op: OP,
            index: 2,
            what: "lengths",
            found: format!("{:?}", updates.lod().lengths()),
            expected: format!("{:?} (the ids' lengths)", [&lengths]),
        }));
    }
    let x = x.rebased();
    let rows = x.values().num_elements();
    if lengths.len() > rows {
        return Err(Error::from(DataError::SequenceCountMismatch {
            op: OP,
            level: 0,
            found: lengths.len(),
            expected: rows,
        }));
    }
    for (index, t) in [(1, ids), (2, updates)] {
        if t.values().element_size() != 1 {
            return Err(Error::from(DataError::InputMismatch {
                op: OP,
                index,
                what: "element size",
                found: t.values().element_size().to_string(),
                expected: "1".to_owned(),
            }));
        }
    }
    let updates = updates.drop_outer_levels(1)?;
    if updates.dtype() != x.dtype() {
        return Err(Error::from(DataError::InputMismatch {
            op: OP,
            index: 2,
            what: "dtype",
            found: updates.dtype().to_string(),
            expected: x.dtype().to_string(),
        }));
    }
    let positions = positions(ids, &offsets, x.values().element_size())?;
    let items: ArrayRef = with_arrow_type!(
        x.dtype(),
        |T| scatter::<T>(&x, updates.values(), &positions)?,
        bool => return Err(unsupported(OP, DType::Bool))
    );
    let (lod, values) = x.into_parts();
    LodTensor::try_new(
        lod,
        Values::try_new(items, values.element_shape().to_vec())?,
    )
}

/// The item of `x` each update goes to: `row · width + id`, checked.
fn positions(ids: &LodTensor, offsets: &[usize], width: usize) -> Result<Vec<usize>> {
    let ids = ids.drop_outer_levels(1)?;
    // int64 ids are read in place; int32 ids are widened.
    let wide: Cow<[i64]> = match ids.dtype() {
        DType::Int64 => Cow::Borrowed(ids.typed_values::<Int64Type>()?),
        DType::Int32 => Cow::Owned(
            ids.typed_values::<Int32Type>()?
                .iter()
                .map(|&i| i64::from(i))
                .collect(),
        ),
        found => {
            return Err(Error::invalid_argument(
                OP,
                "ids' dtype",
                found,
                "int64 or int32",
            ));
        }
    };
    let base = offsets[0];
    let mut out = Vec::with_capacity(wide.len());
    for (row, w) in offsets.windows(2).enumerate() {
        for (j, &id) in wide[w[0] - base..w[1] - base].iter().enumerate() {
            match usize::try_from(id) {
                Ok(id) if id < width => out.push(row * width + id),
                _ => {
                    return Err(Error::invalid_argument(
                        OP,
                        "id",
                        format!("{id} (sequence {row}, position {j})"),
                        format!("an item index below the element size {width}"),
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn scatter<T: ArrowPrimitiveType>(
    x: &LodTensor,
    updates: &Values,
    positions: &[usize],
) -> Result<ArrayRef>
where
    T::Native: PoolItem,
{
    let mut out = x.values().typed::<T>()?.to_vec();
    for (&p, &u) in positions.iter().zip(updates.typed::<T>()?) {
        out[p] = out[p].add(u);
    }
    Ok(array_of::<T>(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, ErrorKind};
    use crate::ops::model::sequences;
    use arrow_array::types::{Float64Type, Int8Type};
    use proptest::prelude::*;

    #[test]
    fn errors_are_typed() {
        let x = LodTensor::from_lengths::<Float64Type>(&[], vec![0.0; 6], vec![3]).unwrap();
        let ids = sequences::<Int64Type>(&[1, 1], vec![0, 2]);
        let up = sequences::<Float64Type>(&[1, 1], vec![1.0, 2.0]);
        let out = sequence_scatter(&x, &ids, &up).unwrap();
        assert_eq!(
            out.typed_values::<Float64Type>().unwrap(),
            &[1., 0., 0., 0., 0., 2.]
        );
        let far = sequences::<Int64Type>(&[1, 1], vec![0, 3]);
        let e = sequence_scatter(&x, &far, &up).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_scatter: id is 3 (sequence 1, position 0), expected an item index below the element size 3"
        );
        let negative = sequences::<Int32Type>(&[1, 1], vec![-1, 0]);
        assert!(matches!(
            sequence_scatter(&x, &negative, &up).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "id",
                ..
            }))
        ));
        let three = sequences::<Int64Type>(&[1, 1, 0], vec![0, 0]);
        let up3 = sequences::<Float64Type>(&[1, 1, 0], vec![1.0, 2.0]);
        assert!(matches!(
            sequence_scatter(&x, &three, &up3).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::SequenceCountMismatch {
                found: 3,
                expected: 2,
                ..
            }))
        ));
        assert!(matches!(
            sequence_scatter(&x, &ids, &sequences::<Float64Type>(&[2, 0], vec![1.0, 2.0]))
                .map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::InputMismatch {
                what: "lengths",
                ..
            }))
        ));
        assert!(matches!(
            sequence_scatter(
                &x,
                &ids,
                &sequences::<arrow_array::types::Float32Type>(&[1, 1], vec![1.0, 2.0])
            )
            .map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::InputMismatch {
                what: "dtype",
                ..
            }))
        ));
        assert!(matches!(
            sequence_scatter(&x, &sequences::<Int8Type>(&[1, 1], vec![0, 0]), &up)
                .map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "ids' dtype",
                ..
            }))
        ));
        assert!(matches!(
            sequence_scatter(&x, &ids.drop_outer_levels(1).unwrap(), &up).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
        ));
    }

    proptest! {
        /// The model: rows as `Vec`s, each update added at its id.
        #[test]
        fn scatter_matches_the_model(
            updates in prop::collection::vec(prop::collection::vec((0usize..4, -9i32..9), 0..6), 0..5),
            extra_rows in 0usize..3,
            skip in 0usize..3,
        ) {
            let rows = updates.len() + extra_rows;
            let x_items: Vec<f64> = (0..(skip + rows) * 4).map(|v| v as f64).collect();
            let x = LodTensor::from_lengths::<Float64Type>(&[], x_items.clone(), vec![4]).unwrap();
            let x = x.slice_rows(skip..skip + rows).unwrap();
            let lengths: Vec<usize> = updates.iter().map(Vec::len).collect();
            let ids = sequences::<Int64Type>(&lengths, updates.iter().flatten().map(|u| u.0 as i64).collect());
            let up = sequences::<Float64Type>(&lengths, updates.iter().flatten().map(|u| f64::from(u.1)).collect());
            let out = sequence_scatter(&x, &ids, &up).unwrap();
            let mut want = x_items[skip * 4..].to_vec();
            for (row, seq) in updates.iter().enumerate() {
                for &(id, u) in seq {
                    want[row * 4 + id] += f64::from(u);
                }
            }
            prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
            prop_assert_eq!(out.shape(), vec![rows, 4]);
        }
    }
}
