//! `sequence_reshape`: each sequence's items re-cut into elements of a new width (Paddle's
//! `sequence_reshape`), as a view of the input's values.
//!
//! ```text
//! lengths [2, 4], elements of 2 items         new_dim 4: lengths [1, 2], elements of 4
//! [1 2][3 4] | [5 6][7 8][9 10][11 12]   →   [1 2 3 4] | [5 6 7 8][9 10 11 12]
//! ```
//!
//! The items do not move: the output's values are the input's (the part in view), read with
//! another element shape, and only the offsets are new.

use super::{element_offsets, one_level, width_of};
use crate::error::{Error, Result};
use crate::lod::Lod;
use crate::tensor::LodTensor;

const OP: &str = "sequence_reshape";

/// The sequences of a 1-level `x`, each re-cut into elements of `new_dim` items: a
/// sequence of `n` elements of `d` items becomes `n · d / new_dim` elements of shape
/// `[new_dim]`. The output shares `x`'s value buffer (a view, for every dtype); its LoD
/// starts at 0.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`](crate::ArgumentError::LevelOutOfBounds) / [`UnsupportedError::TooManyLevels`](crate::UnsupportedError::TooManyLevels) unless `x` has one level (as
/// Paddle); [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) when `new_dim` is 0, or naming the first sequence
/// whose item count `new_dim` does not divide.
///
/// # Example
/// Paddle's documented example: x.lod = [[0, 2, 6]], x.data = [[1, 2], [3, 4], [5, 6], [7,
/// 8], [9, 10], [11, 12]], new_dim 4 → out.lod = [[0, 1, 3]], out.data = [[1, 2, 3, 4], [5,
/// 6, 7, 8], [9, 10, 11, 12]]:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_reshape;
/// let x = LodTensor::from_lengths::<Float32Type>(
///     &[vec![2, 4]],
///     (1..=12).map(|v| v as f32).collect(),
///     vec![2],
/// )?;
/// let out = sequence_reshape(&x, 4)?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 1, 3]]);
/// assert_eq!(out.element_shape(), &[4]);
/// assert_eq!(out.values().as_ptr(), x.values().as_ptr()); // the same buffer
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_reshape(x: &LodTensor, new_dim: usize) -> Result<LodTensor> {
    one_level(OP, x.num_levels())?;
    if new_dim == 0 {
        return Err(Error::invalid_argument(OP, "new_dim", "0", "at least 1"));
    }
    let width = x.values().element_size();
    let offsets = element_offsets(x.lod(), 0)?;
    let mut lengths = Vec::with_capacity(offsets.len() - 1);
    for (index, w) in offsets.windows(2).enumerate() {
        // Fits: the items are in memory.
        let items = (w[1] - w[0]) * width;
        if !items.is_multiple_of(new_dim) {
            return Err(Error::invalid_argument(
                OP,
                "new_dim",
                new_dim,
                format!("a divisor of the {items} items of sequence {index}"),
            ));
        }
        lengths.push(items / new_dim);
    }
    let lod = Lod::try_from_lengths_with_width(&[lengths], width_of(x.lod()))?;
    let (_, values) = x.drop_outer_levels(1)?.into_parts();
    let values = crate::values::Values::try_new(values.items().clone(), vec![new_dim])?;
    LodTensor::try_new(lod, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, ErrorKind, UnsupportedError};
    use arrow_array::types::{Float64Type, Int32Type};
    use proptest::prelude::*;

    #[test]
    fn errors_name_the_sequence() {
        let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 1, 3]], (0..12).collect(), vec![2])
            .unwrap();
        let e = sequence_reshape(&x, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_reshape: new_dim is 4, expected a divisor of the 2 items of sequence 1"
        );
        assert!(matches!(
            sequence_reshape(&x, 0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument { .. }))
        ));
        let two =
            LodTensor::from_lengths::<Int32Type>(&[vec![1], vec![2]], vec![1, 2], vec![]).unwrap();
        assert!(matches!(
            sequence_reshape(&two, 1).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(
                UnsupportedError::TooManyLevels { .. }
            ))
        ));
        let plain = x.drop_outer_levels(1).unwrap();
        assert!(matches!(
            sequence_reshape(&plain, 1).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
        ));
    }

    #[test]
    fn booleans_are_viewed_too() {
        let items = arrow_array::BooleanArray::from(vec![true, false, true, true]);
        let x = LodTensor::try_new(
            Lod::try_from_lengths(&[vec![1, 1]]).unwrap(),
            crate::values::Values::try_new(std::sync::Arc::new(items), vec![2]).unwrap(),
        )
        .unwrap();
        let out = sequence_reshape(&x, 1).unwrap();
        assert_eq!(out.lod().lengths(), vec![vec![2, 2]]);
        assert_eq!(out.values().booleans().unwrap().len(), 4);
    }

    proptest! {
        /// The model: each sequence's items, flat, cut into rows of `new_dim`.
        #[test]
        fn reshape_is_a_view_matching_the_model(
            rows in prop::collection::vec(0usize..5, 0..6),
            skip in 0usize..3,
            width in 1usize..4,
            new_dim in 1usize..7,
        ) {
            // Sequences of `rows[i] · new_dim` items, as elements of `width` items when
            // that divides, after `skip` junk sequences of one element.
            let lengths: Vec<usize> = rows.iter().map(|r| r * new_dim * width).collect();
            let all: Vec<usize> = std::iter::repeat_n(1, skip).chain(lengths.iter().map(|n| n / width)).collect();
            let total: usize = all.iter().sum::<usize>() * width;
            let t = LodTensor::from_lengths::<Float64Type>(std::slice::from_ref(&all), (0..total).map(|v| v as f64).collect(), vec![width])
                .unwrap();
            let x = t.slice_rows(skip..all.len()).unwrap();
            let out = sequence_reshape(&x, new_dim).unwrap();
            prop_assert_eq!(out.lod().lengths(), vec![lengths.iter().map(|n| n / new_dim).collect::<Vec<_>>()]);
            prop_assert!(out.lod().is_zero_based());
            let want: Vec<f64> = ((skip * width)..total).map(|v| v as f64).collect();
            prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
            // Zero-copy: the output's items lie inside the input's buffer.
            let start = t.values().as_ptr() as usize;
            let ptr = out.values().as_ptr() as usize;
            prop_assert!(ptr >= start && ptr <= start + total * 8);
            prop_assert_eq!(ptr, start + skip * width * 8);
        }
    }
}
