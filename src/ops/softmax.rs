//! `sequence_softmax`: a softmax over each sequence of the last level (Paddle's
//! `sequence_softmax`).
//!
//! ```text
//! lengths [2, 3]
//! items   [1, 2 | 3, 4, 5]  →  [0.269, 0.731 | 0.090, 0.245, 0.665]   (same LoD)
//! ```
//!
//! Paddle's CPU kernel computes `exp(x) / Σ exp(x)` item by item in the item type, summing
//! in order, without subtracting the maximum. This computes the same, so its results are
//! Paddle's bit for bit, and falls back to the stable form `exp(x - max) / Σ exp(x - max)`
//! for a sequence whose sum is not a normal positive number (an `exp` overflowed, or every
//! item underflowed), where Paddle returns NaN or loses precision.

use arrow_array::ArrayRef;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use half::f16;

use super::{array_of, element_offsets};
use crate::error::{ArgumentError, Error, Result};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

const OP: &str = "sequence_softmax";

/// One softmax per sequence of `offsets` over `items`, into `out`, for one float type.
macro_rules! softmax_of {
    ($name:ident, $t:ty) => {
        fn $name(items: &[$t], offsets: &[usize], out: &mut Vec<$t>) {
            for w in offsets.windows(2) {
                let seq = &items[w[0]..w[1]];
                // Paddle's order of operations, for its exact results; each exp once.
                let start = out.len();
                let mut sum: $t = 0.0;
                for &v in seq {
                    let e = v.exp();
                    sum += e;
                    out.push(e);
                }
                if sum.is_normal() {
                    out[start..].iter_mut().for_each(|e| *e /= sum);
                    continue;
                }
                out.truncate(start);
                let max = seq.iter().copied().fold(<$t>::NEG_INFINITY, <$t>::max);
                let sum = seq.iter().fold(0.0, |s: $t, &v| s + (v - max).exp());
                out.extend(seq.iter().map(|&v| (v - max).exp() / sum));
            }
        }
    };
}
softmax_of!(softmax_f32, f32);
softmax_of!(softmax_f64, f64);

/// The softmax of every sequence of the last level of `x`, whose elements must be single
/// items (element size 1, as Paddle requires). The output has `x`'s LoD (re-based to start
/// at 0) and dtype.
///
/// `float32` and `float64` give Paddle's results bit for bit wherever Paddle's are finite;
/// where Paddle's `exp` overflows (an item above about 88 in `float32`) this gives the
/// softmax computed stably instead of NaN. `float16` (which Paddle's CPU kernel does not
/// take) is computed in `float32` and rounded.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] for a tensor without levels;
/// [`ArgumentError::InvalidArgument`] when elements have more than one item or the dtype is
/// not a float.
///
/// # Example
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_softmax;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 0, 3]], vec![1., 2., 3., 4., 5.], vec![1])?;
/// let y = sequence_softmax(&x)?;
/// assert_eq!(y.lod().lengths(), vec![vec![2, 0, 3]]);
/// // Paddle 2.6.2's float32 results, bit for bit.
/// assert_eq!(
///     y.typed_values::<Float32Type>()?,
///     &[0.2689414, 0.7310586, 0.09003057, 0.24472846, 0.66524094]
/// );
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_softmax(x: &LodTensor) -> Result<LodTensor> {
    let levels = x.num_levels();
    if levels == 0 {
        return Err(Error::from(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels,
        }));
    }
    if x.values().element_size() != 1 {
        return Err(Error::invalid_argument(
            OP,
            "element shape",
            format!("{:?}", x.element_shape()),
            "one item per element",
        ));
    }
    let x = x.rebased();
    let offsets = element_offsets(x.lod(), levels - 1)?;
    let values = x.values();
    let items: ArrayRef = match x.dtype() {
        DType::Float32 => {
            let mut out = Vec::with_capacity(values.num_elements());
            softmax_f32(values.typed::<Float32Type>()?, &offsets, &mut out);
            array_of::<Float32Type>(out)
        }
        DType::Float64 => {
            let mut out = Vec::with_capacity(values.num_elements());
            softmax_f64(values.typed::<Float64Type>()?, &offsets, &mut out);
            array_of::<Float64Type>(out)
        }
        DType::Float16 => {
            let wide: Vec<f32> = values
                .typed::<Float16Type>()?
                .iter()
                .map(|v| v.to_f32())
                .collect();
            let mut out = Vec::with_capacity(wide.len());
            softmax_f32(&wide, &offsets, &mut out);
            let narrow: Vec<f16> = out.into_iter().map(f16::from_f32).collect();
            array_of::<Float16Type>(narrow)
        }
        found => {
            return Err(Error::invalid_argument(
                OP,
                "dtype",
                found,
                "float16, float32 or float64",
            ));
        }
    };
    let shape = values.element_shape().to_vec();
    let (lod, _) = x.into_parts();
    LodTensor::try_new(lod, Values::try_new(items, shape)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, ErrorKind};
    use crate::lod::Lod;
    use crate::ops::model::sequences;
    use proptest::prelude::*;

    #[test]
    fn overflow_falls_back_to_the_stable_form() {
        let x = sequences::<Float32Type>(&[3, 2, 1], vec![100., 1., 89., -200., -150., 0.5]);
        let y = sequence_softmax(&x).unwrap();
        let got = y.typed_values::<Float32Type>().unwrap();
        // Paddle gives [nan, 0, nan], [nan, nan], [1].
        let want = [
            model(&[100., 1., 89.]),
            model(&[-200., -150.]),
            model(&[0.5]),
        ]
        .concat();
        for (g, w) in got.iter().zip(&want) {
            assert!(close(*g, *w), "{got:?} vs {want:?}");
        }
        assert!(got[4] == 1.0 && got[3] > 0.0);
    }

    #[test]
    fn errors_are_typed() {
        let plain = sequences::<Float32Type>(&[2], vec![1., 2.])
            .drop_outer_levels(1)
            .unwrap();
        assert!(matches!(
            sequence_softmax(&plain).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 0,
                levels: 0
            }))
        ));
        let wide =
            LodTensor::from_lengths::<Float32Type>(&[vec![1]], vec![1., 2.], vec![2]).unwrap();
        let e = sequence_softmax(&wide).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_softmax: element shape is [2], expected one item per element"
        );
        let ints =
            LodTensor::from_lengths::<arrow_array::types::Int64Type>(&[vec![1]], vec![1], vec![])
                .unwrap();
        assert!(matches!(
            sequence_softmax(&ints).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "dtype",
                ..
            }))
        ));
    }

    #[test]
    fn float16_and_float64() {
        let h = LodTensor::from_lengths::<Float16Type>(
            &[vec![2]],
            vec![f16::from_f32(0.0), f16::from_f32(0.0)],
            vec![],
        )
        .unwrap();
        let y = sequence_softmax(&h).unwrap();
        assert_eq!(
            y.typed_values::<Float16Type>().unwrap(),
            &[f16::from_f32(0.5); 2]
        );
        let d =
            LodTensor::from_lengths::<Float64Type>(&[vec![0, 2]], vec![3.0, 3.0], vec![1]).unwrap();
        let y = sequence_softmax(&d).unwrap();
        assert_eq!(y.typed_values::<Float64Type>().unwrap(), &[0.5, 0.5]);
        assert_eq!(y.element_shape(), &[1]);
    }

    /// The model: each sequence's softmax in `f64`, stable.
    fn model(seq: &[f32]) -> Vec<f64> {
        let max = seq
            .iter()
            .map(|&v| f64::from(v))
            .fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = seq.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        e.iter().map(|v| v / sum).collect()
    }

    fn close(got: f32, want: f64) -> bool {
        (f64::from(got) - want).abs() <= 1e-6 + 1e-5 * want
    }

    proptest! {
        #[test]
        fn softmax_matches_the_model(
            seqs in prop::collection::vec(prop::collection::vec(-300f32..300.0, 0..12), 0..8),
            skip in 0usize..3,
        ) {
            // `skip` sequences of junk before the view.
            let all: Vec<Vec<f32>> = (0..skip).map(|i| vec![7.0; i + 1]).chain(seqs.clone()).collect();
            let lengths: Vec<usize> = all.iter().map(Vec::len).collect();
            let t = sequences::<Float32Type>(&lengths, all.concat()).slice_rows(skip..all.len()).unwrap();
            let y = sequence_softmax(&t).unwrap();
            prop_assert!(y.lod().is_zero_based());
            prop_assert_eq!(y.lod(), &Lod::try_from_lengths(&[seqs.iter().map(Vec::len).collect::<Vec<_>>()]).unwrap());
            let got = y.typed_values::<Float32Type>().unwrap();
            let want: Vec<f64> = seqs.iter().flat_map(|s| model(s)).collect();
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                prop_assert!(close(*g, *w), "{} vs {}", g, w);
            }
        }
    }
}
