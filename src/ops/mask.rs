//! `sequence_mask`: a mask row per length (Paddle's `sequence_mask`).
//!
//! ```text
//! lengths [3, 1, 0]   maxlen 4   →   [[1, 1, 1, 0],
//!                                     [1, 0, 0, 0],
//!                                     [0, 0, 0, 0]]
//! ```
//!
//! Item `j` of the row of length `n` is 1 when `j < n`: a negative length gives a row of
//! zeros. Without `maxlen` the rows are as long as the longest length.

use std::sync::Arc;

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{ArrayRef, ArrowNativeTypeOp, BooleanArray};
use arrow_buffer::BooleanBufferBuilder;

use super::{array_of, output_items, with_arrow_type, with_int_type};
use crate::error::{Error, Result};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

const OP: &str = "sequence_mask";

/// The `int64` mask of `lengths` (Paddle's `sequence_mask` with its default dtype): element
/// shape `lengths`' element shape followed by `[maxlen]`, item `j` of each row 1 when `j` is
/// below its length. `maxlen` `None` is Paddle's `-1`: the largest length. The output has
/// `lengths`' LoD (re-based to start at 0).
///
/// # Errors
/// As [`sequence_mask_as`].
///
/// # Example
/// ```
/// use arrow_array::types::Int64Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_mask;
/// let lengths = LodTensor::from_lengths::<Int64Type>(&[], vec![3, 1, 0], vec![])?;
/// let mask = sequence_mask(&lengths, None)?;
/// assert_eq!(mask.shape(), vec![3, 3]);
/// assert_eq!(mask.typed_values::<Int64Type>()?, &[1, 1, 1, 1, 0, 0, 0, 0, 0]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_mask(lengths: &LodTensor, maxlen: Option<usize>) -> Result<LodTensor> {
    sequence_mask_as(lengths, maxlen, DType::Int64)
}

/// [`sequence_mask`] with items of `dtype` (Paddle's `dtype` argument): 1 and 0, or
/// `true` and `false`.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) when `lengths` is not an integer dtype, when `maxlen` is
/// `Some(0)` (Paddle rejects a `maxlen` of 0), when it is `None` and no length is positive
/// (Paddle's mask then has rows of 0 items, which this crate's elements cannot be), or when
/// the mask's size overflows.
///
/// # Example
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{DType, LodTensor};
/// use lodtensor::ops::sequence_mask_as;
/// let lengths = LodTensor::from_lengths::<Int32Type>(&[], vec![2, -1], vec![])?;
/// let mask = sequence_mask_as(&lengths, Some(3), DType::Bool)?;
/// let bits: Vec<bool> = mask.values().booleans()?.iter().map(Option::unwrap).collect();
/// assert_eq!(bits, [true, true, false, false, false, false]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_mask_as(
    lengths: &LodTensor,
    maxlen: Option<usize>,
    dtype: DType,
) -> Result<LodTensor> {
    if maxlen == Some(0) {
        return Err(Error::invalid_argument(
            OP,
            "maxlen",
            "0",
            "None or at least 1",
        ));
    }
    let x = lengths.rebased();
    let wide: Vec<i128> = with_int_type!(
        x.dtype(),
        |T| x.values().typed::<T>()?.iter().map(|&n| n.into()).collect(),
        other => {
            return Err(Error::invalid_argument(OP, "lengths' dtype", x.dtype().to_string(), "an integer dtype"));
        }
    );
    let maxlen = match maxlen {
        Some(n) => n,
        None => match wide.iter().copied().max() {
            Some(max) if max > 0 => usize::try_from(max).unwrap_or(usize::MAX),
            // Paddle gives [N, 0]; elements of no items have no Arrow layout.
            _ => {
                return Err(Error::invalid_argument(
                    OP,
                    "maxlen",
                    "None with no positive length",
                    "Some(maxlen) or a positive length",
                ));
            }
        },
    };
    let total = output_items(OP, ("maxlen", maxlen), wide.len(), maxlen, dtype)?;
    // The number of ones in each row.
    let ones =
        move |n: i128| usize::try_from(n.clamp(0, maxlen as i128)).expect("clamped to maxlen");
    let items: ArrayRef = with_arrow_type!(
        dtype,
        |T| mask_of::<T>(&wide, maxlen, total, ones),
        bool => {
            let mut bits = BooleanBufferBuilder::new(total);
            for &n in &wide {
                bits.append_n(ones(n), true);
                bits.append_n(maxlen - ones(n), false);
            }
            Arc::new(BooleanArray::new(bits.finish(), None))
        }
    );
    let mut shape = x.element_shape().to_vec();
    shape.push(maxlen);
    let (lod, _) = x.into_parts();
    LodTensor::try_new(lod, Values::try_new(items, shape)?)
}

fn mask_of<T: ArrowPrimitiveType>(
    lengths: &[i128],
    maxlen: usize,
    total: usize,
    ones: impl Fn(i128) -> usize,
) -> ArrayRef {
    let mut out = Vec::with_capacity(total);
    for &n in lengths {
        out.resize(out.len() + ones(n), T::Native::ONE);
        out.resize(out.len() + maxlen - ones(n), T::Native::ZERO);
    }
    array_of::<T>(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, ErrorKind};
    use arrow_array::types::{Float32Type, Int64Type, UInt8Type};
    use proptest::prelude::*;

    #[test]
    fn errors_and_shapes() {
        let x =
            LodTensor::from_lengths::<Int64Type>(&[vec![1, 1]], vec![1, 2, 0, 3], vec![2]).unwrap();
        let m = sequence_mask_as(&x, None, DType::Float32).unwrap();
        assert_eq!(m.element_shape(), &[2, 3]);
        assert_eq!(m.lod().lengths(), vec![vec![1, 1]]);
        assert_eq!(
            m.typed_values::<Float32Type>().unwrap(),
            &[1., 0., 0., 1., 1., 0., 0., 0., 0., 1., 1., 1.]
        );
        let e = sequence_mask(&x, Some(0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_mask: maxlen is 0, expected None or at least 1"
        );
        let f = LodTensor::from_lengths::<Float32Type>(&[], vec![1.0], vec![]).unwrap();
        assert!(matches!(
            sequence_mask(&f, None).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "lengths' dtype",
                ..
            }))
        ));
        let none = LodTensor::from_lengths::<UInt8Type>(&[], vec![], vec![]).unwrap();
        let e = sequence_mask(&none, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_mask: maxlen is None with no positive length, expected Some(maxlen) or a positive length"
        );
        assert_eq!(sequence_mask(&none, Some(2)).unwrap().shape(), vec![0, 2]);
    }

    proptest! {
        #[test]
        fn mask_matches_the_model(mut lengths in prop::collection::vec(-2i64..7, 0..8), maxlen in prop::option::of(1usize..6)) {
            lengths.push(1);
            let x = LodTensor::from_lengths::<Int64Type>(&[], lengths.clone(), vec![]).unwrap();
            let m = sequence_mask(&x, maxlen).unwrap();
            let width = maxlen.unwrap_or_else(|| lengths.iter().copied().max().unwrap_or(0).max(0) as usize);
            let want: Vec<i64> = lengths
                .iter()
                .flat_map(|&n| (0..width as i64).map(move |j| i64::from(j < n)))
                .collect();
            prop_assert_eq!(m.typed_values::<Int64Type>().unwrap(), &want[..]);
            prop_assert_eq!(m.shape(), vec![lengths.len(), width]);
            let b = sequence_mask_as(&x, maxlen, DType::Bool).unwrap();
            let bits: Vec<i64> = b.values().booleans().unwrap().iter().map(|v| i64::from(v.unwrap())).collect();
            prop_assert_eq!(bits, want);
        }
    }
}
