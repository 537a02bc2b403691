//! `context_project`: the context projection `sequence_conv` performs before its matmul
//! (Paddle's `ContextProjectFunctor`, the im2col of sequences).
//!
//! Output element `t` is the concatenation of the input elements `t + context_start ..
//! t + context_start + context_length`, those outside `t`'s own sequence replaced by
//! zeros:
//!
//! ```text
//! context_start -1, context_length 3, lengths [3, 1]
//! elements [a, b, c | d]  →  [0 a b, a b c, b c 0 | 0 d 0]
//! ```
//!
//! Paddle's `sequence_conv` is this followed by one matmul with its filter
//! (`[context_length · d, filters]`), and its default `context_start` is
//! `-(context_length / 2)`.

use arrow_array::ArrayRef;
use arrow_array::types::ArrowPrimitiveType;

use super::{array_of, element_offsets, one_level, output_items, unsupported, with_arrow_type};
use crate::error::{Error, Result};
use crate::tensor::LodTensor;
use crate::values::Values;

const OP: &str = "context_project";

/// The context projection of a 1-level `x` (the `col` of Paddle's `sequence_conv`, with
/// zero padding, `paddingTrainable = false`): one output element per input element, of
/// shape `[context_length · d]` where `d` is `x`'s element size, holding the `context_length`
/// elements starting `context_start` elements away, zeros past the sequence's ends.
///
/// The output has `x`'s LoD (re-based to start at 0) and dtype. Paddle's CPU kernel takes
/// `float32` only (its im2col is written for `float`); this takes every numeric dtype.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`](crate::ArgumentError::LevelOutOfBounds) / [`UnsupportedError::TooManyLevels`](crate::UnsupportedError::TooManyLevels) unless `x` has one level (as
/// Paddle); [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) when `context_length` is 0 or the output's size
/// overflows; [`UnsupportedError::UnsupportedDType`](crate::UnsupportedError::UnsupportedDType) for booleans.
///
/// # Example
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::context_project;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![3, 1]], vec![1., 2., 3., 4.], vec![1])?;
/// let col = context_project(&x, -1, 3)?;
/// assert_eq!(col.element_shape(), &[3]);
/// assert_eq!(
///     col.typed_values::<Float32Type>()?,
///     &[0., 1., 2., 1., 2., 3., 2., 3., 0., 0., 4., 0.]
/// );
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn context_project(
    x: &LodTensor,
    context_start: isize,
    context_length: usize,
) -> Result<LodTensor> {
    one_level(OP, x.num_levels())?;
    let width = x.values().element_size();
    let out_width = context_length
        .checked_mul(width)
        .filter(|&w| w > 0)
        .ok_or_else(|| {
            Error::invalid_argument(
                OP,
                "context_length",
                context_length,
                "at least 1, with an element size that fits in memory",
            )
        })?;
    let x = x.rebased();
    let offsets = element_offsets(x.lod(), 0)?;
    let total = output_items(
        OP,
        ("context_length", context_length),
        x.values().num_elements(),
        out_width,
        x.dtype(),
    )?;
    let window = Window {
        start: context_start,
        length: context_length,
        width,
    };
    let items: ArrayRef = with_arrow_type!(
        x.dtype(),
        |T| project::<T>(x.values(), &offsets, &window, total)?,
        bool => return Err(unsupported(OP, x.dtype()))
    );
    let (lod, _) = x.into_parts();
    LodTensor::try_new(lod, Values::try_new(items, vec![out_width])?)
}

/// The context window: `length` elements of `width` items from `start` elements away.
struct Window {
    start: isize,
    length: usize,
    width: usize,
}

impl Window {
    /// The elements of `seq` in the window of element `t`, as the range of window slots
    /// they fill (`slots.start` slots of zeros before) and the first element.
    fn in_sequence(
        &self,
        t: usize,
        seq: &std::ops::Range<usize>,
    ) -> (std::ops::Range<usize>, usize) {
        // Signed positions: the window may reach before element 0.
        let first = t as i128 + self.start as i128;
        let lo = first.max(seq.start as i128);
        let hi = (first + self.length as i128).min(seq.end as i128);
        if lo >= hi {
            return (0..0, 0);
        }
        let slot = (lo - first) as usize;
        (slot..slot + (hi - lo) as usize, lo as usize)
    }
}

fn project<T: ArrowPrimitiveType>(
    values: &Values,
    offsets: &[usize],
    window: &Window,
    total: usize,
) -> Result<ArrayRef> {
    let items = values.typed::<T>()?;
    let d = window.width;
    let zero = T::Native::default();
    let mut out = Vec::with_capacity(total);
    for w in offsets.windows(2) {
        let seq = w[0]..w[1];
        for t in seq.clone() {
            let (slots, from) = window.in_sequence(t, &seq);
            out.resize(out.len() + slots.start * d, zero);
            out.extend_from_slice(&items[from * d..(from + slots.len()) * d]);
            out.resize(out.len() + (window.length - slots.end) * d, zero);
        }
    }
    Ok(array_of::<T>(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::error::{ArgumentError, ErrorKind, UnsupportedError};
    use arrow_array::types::{Float64Type, Int16Type};
    use proptest::prelude::*;

    #[test]
    fn errors_are_typed() {
        let x = LodTensor::from_lengths::<Int16Type>(&[vec![2]], vec![1, 2], vec![]).unwrap();
        let e = context_project(&x, 0, 0).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "context_length",
                ..
            })
        ));
        let two =
            LodTensor::from_lengths::<Int16Type>(&[vec![1], vec![2]], vec![1, 2], vec![]).unwrap();
        assert!(matches!(
            context_project(&two, 0, 1).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(
                UnsupportedError::TooManyLevels { .. }
            ))
        ));
        let out = context_project(&x, isize::MIN, 2).unwrap();
        assert_eq!(out.typed_values::<Int16Type>().unwrap(), &[0, 0, 0, 0]);
        let out = context_project(&x, isize::MAX, usize::MAX / 4).unwrap_err();
        assert!(matches!(
            out.kind(),
            ErrorKind::Argument(ArgumentError::InvalidArgument { .. })
        ));
    }

    proptest! {
        /// The model: for each element, each slot of the window looked up in its sequence.
        #[test]
        fn projection_matches_the_model(
            lengths in prop::collection::vec(0usize..6, 0..6),
            skip in 0usize..3,
            start in -7isize..4,
            length in 1usize..6,
            d in 1usize..3,
        ) {
            let all: Vec<usize> = std::iter::repeat_n(2, skip).chain(lengths.iter().copied()).collect();
            let n: usize = all.iter().sum();
            let t = LodTensor::from_lengths::<Float64Type>(std::slice::from_ref(&all), (0..n * d).map(|v| v as f64 + 1.0).collect(), vec![d])
                .unwrap()
                .slice_rows(skip..all.len())
                .unwrap();
            let out = context_project(&t, start, length).unwrap();
            let items = t.values().typed::<Float64Type>().unwrap();
            let mut want = Vec::new();
            let mut begin = 2 * skip;
            for &len in &lengths {
                for i in 0..len as isize {
                    for k in 0..length as isize {
                        let j = i + start + k;
                        for c in 0..d {
                            want.push(if (0..len as isize).contains(&j) {
                                items[(begin + j as usize) * d + c]
                            } else {
                                0.0
                            });
                        }
                    }
                }
                begin += len;
            }
            prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
            prop_assert_eq!(out.element_shape(), &[length * d]);
            prop_assert_eq!(out.lod().lengths(), vec![lengths]);
        }
    }
}
