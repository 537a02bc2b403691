//! `sequence_pool`: one element per sequence of a level, reduced over the elements it
//! covers.
//!
//! Pooling at the last level is Paddle's `sequence_pool`: each sequence of the last level
//! becomes one element and the output has one level fewer. Pooling at an outer level `l`
//! reduces every element under each sequence of level `l` and keeps levels `0..l`.
//!
//! ```text
//! level 0 lengths [2, 1]          pool(level 0, sum)
//! elements        [a, b | c]  →   elements [a+b | c]   (0 levels)
//! ```
//!
//! Empty sequences get `pad_value` (Paddle's `pad_value` attribute). The reduction is one
//! pass over the values: each sequence's items are a slice, folded row by row into the
//! output element with `chunks_exact(element_size)`, a loop the compiler vectorises.

use arrow_array::ArrayRef;
use arrow_array::types::ArrowPrimitiveType;
use half::f16;

use super::{array_of, check_dtype, element_offsets, unsupported, width_of, with_arrow_type};
use crate::error::{ArgumentError, Error, Result};
use crate::lod::Lod;
use crate::tensor::LodTensor;
use crate::values::Values;

const POOL: &str = "sequence_pool";

/// How a sequence is reduced to one element (Paddle's `pooltype`, plus `Min`).
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::{PoolType, sequence_pool_typed};
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 3.0, 5.0], vec![])?;
/// let mean = sequence_pool_typed::<Float32Type>(&x, 0, PoolType::Average, 0.0)?;
/// assert_eq!(mean.typed_values::<Float32Type>()?, &[2.0, 5.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolType {
    /// The sum of the elements.
    Sum,
    /// The sum divided by the length (`AVERAGE`); integers divide with truncation.
    Average,
    /// The sum divided by the square root of the length (`SQRT`).
    Sqrt,
    /// The item-wise maximum.
    Max,
    /// The item-wise minimum.
    Min,
    /// The first element.
    First,
    /// The last element.
    Last,
}

mod sealed {
    pub trait Sealed {}
}

/// Item types [`sequence_pool_typed`] has arithmetic for: every numeric [`crate::DType`].
///
/// Integer sums wrap on overflow; integer averages truncate; `Sqrt` on integers computes in
/// `f64` and converts back with saturation.
///
/// # Example
/// ```
/// use lodtensor::ops::PoolItem;
/// assert_eq!(7i32.div_len(2), 3);                            // integer averages truncate
/// assert_eq!(1.5f32.add(2.0), 3.5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait PoolItem: Copy + PartialOrd + Send + Sync + 'static + sealed::Sealed {
    /// `self + other`.
    fn add(self, other: Self) -> Self;
    /// `self / len` (`len > 0`).
    fn div_len(self, len: usize) -> Self;
    /// `self / √len` (`len > 0`).
    fn div_sqrt_len(self, len: usize) -> Self;
    /// `v` converted (`as`-style: saturating for integers).
    fn from_f64(v: f64) -> Self;
}

macro_rules! pool_float {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl PoolItem for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self { self + other }
            #[inline(always)]
            fn div_len(self, len: usize) -> Self { self / len as $t }
            #[inline(always)]
            fn div_sqrt_len(self, len: usize) -> Self { self / (len as $t).sqrt() }
            #[inline(always)]
            fn from_f64(v: f64) -> Self { v as $t }
        }
    )*};
}
pool_float!(f32, f64);

macro_rules! pool_int {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl PoolItem for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
            #[inline(always)]
            fn div_len(self, len: usize) -> Self { (self as i128 / len as i128) as $t }
            #[inline(always)]
            fn div_sqrt_len(self, len: usize) -> Self { (self as f64 / (len as f64).sqrt()) as $t }
            #[inline(always)]
            fn from_f64(v: f64) -> Self { v as $t }
        }
    )*};
}
pool_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl sealed::Sealed for f16 {}
impl PoolItem for f16 {
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn div_len(self, len: usize) -> Self {
        f16::from_f32(self.to_f32() / len as f32)
    }
    #[inline(always)]
    fn div_sqrt_len(self, len: usize) -> Self {
        f16::from_f32(self.to_f32() / (len as f32).sqrt())
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}

/// Folds the rows of `seq` (a whole number of rows of `dst.len()` items, at least one)
/// into `dst`.
#[inline(always)]
fn fold_rows<N: Copy>(dst: &mut [N], seq: &[N], f: impl Fn(N, N) -> N) {
    let (first, rest) = seq.split_at(dst.len());
    dst.copy_from_slice(first);
    for row in rest.chunks_exact(dst.len()) {
        for (a, &b) in dst.iter_mut().zip(row) {
            *a = f(*a, b);
        }
    }
}

/// Pools every sequence at `level` of `x` (Paddle's `sequence_pool` when `level` is the
/// last level), for values of the Arrow type `T` (the `_typed` functions take the type as a
/// parameter, as [`Values::typed`] does; [`sequence_pool_any`] takes any numeric dtype).
///
/// The output keeps levels `0..level` (re-based to start at 0) and has one element per
/// sequence of `level`, of `x`'s element shape; an empty sequence's element is `pad_value`
/// in every item.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] when `x` has no level `level`;
/// [`ArgumentError::DTypeMismatch`] when `T` is not the values' type.
///
/// # Example
/// Paddle's documented example: x.lod = [[0, 2, 5, 7, 7]], x.data = [1, 3, 2, 4, 6, 5, 1],
/// pad_value 0.0 → average [2, 4, 3, 0.0], sum [4, 12, 6, 0.0], sqrt [2.83, 6.93, 4.24,
/// 0.0], max [3, 6, 5, 0.0], last [3, 6, 1, 0.0], first [1, 2, 5, 0.0]:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::{PoolType, sequence_pool_typed};
/// let x = LodTensor::try_new(
///     Lod::try_from_offsets(&[vec![0, 2, 5, 7, 7]])?,
///     Values::from_vec::<Float32Type>(vec![1., 3., 2., 4., 6., 5., 1.], vec![1])?,
/// )?;
/// let avg = sequence_pool_typed::<Float32Type>(&x, 0, PoolType::Average, 0.0)?;
/// assert_eq!(avg.num_levels(), 0);
/// assert_eq!(avg.typed_values::<Float32Type>()?, &[2., 4., 3., 0.]);
/// let max = sequence_pool_typed::<Float32Type>(&x, 0, PoolType::Max, 0.0)?;
/// assert_eq!(max.typed_values::<Float32Type>()?, &[3., 6., 5., 0.]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_pool_typed<T>(
    x: &LodTensor,
    level: usize,
    pool: PoolType,
    pad_value: T::Native,
) -> Result<LodTensor>
where
    T: ArrowPrimitiveType,
    T::Native: PoolItem,
{
    let lod = x.lod();
    let offsets = element_offsets(lod, level)?;
    check_dtype::<T>(x.values())?;
    let items = x.values().typed::<T>()?;
    let size = x.values().element_size();
    let n = offsets.len() - 1;
    let mut out = vec![pad_value; n * size];
    for (dst, w) in out.chunks_exact_mut(size).zip(offsets.windows(2)) {
        let (start, end) = (w[0], w[1]);
        if start == end {
            continue;
        }
        let seq = &items[start * size..end * size];
        let len = end - start;
        match pool {
            PoolType::Sum => fold_rows(dst, seq, PoolItem::add),
            PoolType::Average => {
                fold_rows(dst, seq, PoolItem::add);
                dst.iter_mut().for_each(|a| *a = a.div_len(len));
            }
            PoolType::Sqrt => {
                fold_rows(dst, seq, PoolItem::add);
                dst.iter_mut().for_each(|a| *a = a.div_sqrt_len(len));
            }
            PoolType::Max => fold_rows(dst, seq, |a, b| if b > a { b } else { a }),
            PoolType::Min => fold_rows(dst, seq, |a, b| if b < a { b } else { a }),
            PoolType::First => dst.copy_from_slice(&seq[..size]),
            PoolType::Last => dst.copy_from_slice(&seq[seq.len() - size..]),
        }
    }
    let items: ArrayRef = array_of::<T>(out);
    let values = Values::try_new(items, x.element_shape().to_vec())?;
    let kept = lod.lengths()[..level].to_vec();
    let lod = if kept.is_empty() {
        Lod::default()
    } else {
        Lod::try_from_lengths_with_width(&kept, width_of(lod))?
    };
    LodTensor::try_new(lod, values)
}

/// [`sequence_pool_typed`], under its former name.
///
/// # Errors
/// As [`sequence_pool_typed`].
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::{PoolType, sequence_pool_typed};
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 3.0, 5.0], vec![])?;
/// #[allow(deprecated)]
/// let old = lodtensor::ops::sequence_pool::<Float32Type>(&x, 0, PoolType::Sum, 0.0)?;
/// assert_eq!(old, sequence_pool_typed::<Float32Type>(&x, 0, PoolType::Sum, 0.0)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[deprecated(
    since = "0.2.0",
    note = "use `sequence_pool_typed::<T>` (or `sequence_pool_any` for any dtype)"
)]
pub fn sequence_pool<T: ArrowPrimitiveType<Native: PoolItem>>(
    x: &LodTensor,
    level: usize,
    pool: PoolType,
    pad_value: T::Native,
) -> Result<LodTensor> {
    sequence_pool_typed::<T>(x, level, pool, pad_value)
}

/// [`sequence_pool_typed`] for whatever numeric dtype `x` holds, with `pad_value` converted to
/// it (`as`-style).
///
/// # Errors
/// [`UnsupportedError::UnsupportedDType`](crate::UnsupportedError::UnsupportedDType) for booleans; otherwise as [`sequence_pool_typed`].
///
/// # Example
/// ```
/// use arrow_array::types::Int64Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::{PoolType, sequence_pool_any};
/// // Two documents of sentences [1, 2] [3] | [4, 5, 6]: sentence sums, then document maxima.
/// let x = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1], vec![2, 1, 3]], vec![1, 2, 3, 4, 5, 6], vec![])?;
/// let sums = sequence_pool_any(&x, 1, PoolType::Sum, 0.0)?;
/// assert_eq!(sums.lod().lengths(), vec![vec![2, 1]]);
/// assert_eq!(sums.typed_values::<Int64Type>()?, &[3, 3, 15]);
/// let max = sequence_pool_any(&sums, 0, PoolType::Max, -1.0)?;
/// assert_eq!(max.typed_values::<Int64Type>()?, &[3, 15]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_pool_any(
    x: &LodTensor,
    level: usize,
    pool: PoolType,
    pad_value: f64,
) -> Result<LodTensor> {
    with_arrow_type!(
        x.dtype(),
        |T| sequence_pool_typed::<T>(x, level, pool, PoolItem::from_f64(pad_value)),
        bool => Err(unsupported(POOL, x.dtype()))
    )
}

/// Paddle's `MaxIndex`, the second output of `sequence_pool` with `MAX`: for each sequence
/// of `level` and each item of the element, the row of `x` holding the maximum, row-major
/// `[sequences, element size]`; `-1` for an empty sequence (Paddle's value).
///
/// Rows are numbered as `x.values()` numbers them (as [`Lod::sequence_elements`] does),
/// which for a tensor whose offsets start at 0 is Paddle's absolute row. Ties give the
/// first row; a NaN is never greater than anything, as in Paddle's `>`.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] when `x` has no level `level`;
/// [`UnsupportedError::UnsupportedDType`](crate::UnsupportedError::UnsupportedDType) for booleans.
///
/// # Example
/// Paddle's documented example (x.lod = [[0, 2, 5, 7, 7]], x.data = [1, 3, 2, 4, 6, 5, 1]):
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::sequence_max_index;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 3, 2, 0]], vec![1., 3., 2., 4., 6., 5., 1.], vec![1])?;
/// assert_eq!(sequence_max_index(&x, 0)?, vec![1, 4, 5, -1]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_max_index(x: &LodTensor, level: usize) -> Result<Vec<i64>> {
    let offsets = element_offsets(x.lod(), level)?;
    with_arrow_type!(
        x.dtype(),
        |T| max_index::<T>(x.values(), &offsets),
        bool => Err(unsupported(POOL, x.dtype()))
    )
}

fn max_index<T: ArrowPrimitiveType>(values: &Values, offsets: &[usize]) -> Result<Vec<i64>>
where
    T::Native: PartialOrd,
{
    let items = values.typed::<T>()?;
    let size = values.element_size();
    let mut out = vec![-1i64; (offsets.len() - 1) * size];
    let mut best = Vec::with_capacity(size);
    for (dst, w) in out.chunks_exact_mut(size).zip(offsets.windows(2)) {
        if w[0] == w[1] {
            continue;
        }
        best.clear();
        best.extend_from_slice(&items[w[0] * size..(w[0] + 1) * size]);
        dst.fill(w[0] as i64);
        for row in w[0] + 1..w[1] {
            for (k, &v) in items[row * size..(row + 1) * size].iter().enumerate() {
                if v > best[k] {
                    best[k] = v;
                    dst[k] = row as i64;
                }
            }
        }
    }
    Ok(out)
}

/// The first element of each sequence of the last level (Paddle's `sequence_first_step`),
/// 0 for an empty sequence: [`sequence_pool_any`] with [`PoolType::First`].
///
/// # Errors
/// As [`sequence_pool_any`] ([`ArgumentError::LevelOutOfBounds`] without levels).
///
/// # Example
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::LodTensor;
/// use lodtensor::ops::{sequence_first_step, sequence_last_step};
/// let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 1], vec![2, 0, 3]], vec![1, 2, 3, 4, 5], vec![])?;
/// let first = sequence_first_step(&x)?;
/// assert_eq!(first.lod().lengths(), vec![vec![2, 1]]);
/// assert_eq!(first.typed_values::<Int32Type>()?, &[1, 0, 3]);
/// assert_eq!(sequence_last_step(&x)?.typed_values::<Int32Type>()?, &[2, 0, 5]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn sequence_first_step(x: &LodTensor) -> Result<LodTensor> {
    sequence_pool_any(x, last_level(x)?, PoolType::First, 0.0)
}

/// The last element of each sequence of the last level (Paddle's `sequence_last_step`), 0
/// for an empty sequence: [`sequence_pool_any`] with [`PoolType::Last`].
///
/// # Errors
/// As [`sequence_first_step`].
///
/// # Example
/// See [`sequence_first_step`].
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::sequence_last_step;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 3.0, 5.0], vec![])?;
/// assert_eq!(sequence_last_step(&x)?.typed_values::<Float32Type>()?, &[3.0, 5.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sequence_last_step(x: &LodTensor) -> Result<LodTensor> {
    sequence_pool_any(x, last_level(x)?, PoolType::Last, 0.0)
}

fn last_level(x: &LodTensor) -> Result<usize> {
    x.num_levels()
        .checked_sub(1)
        .ok_or(Error::from(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels: 0,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, Error, ErrorKind};
    use crate::ops::model;
    use arrow_array::types::{Float16Type, Float32Type, Float64Type, Int32Type, UInt8Type};
    use proptest::prelude::*;

    /// Paddle's documented example (`sequence_pool`): x is a 1-level LoDTensor with
    /// x.lod = [[0, 2, 5, 7, 7]], x.data = [[1.], [3.], [2.], [4.], [6.], [5.], [1.]],
    /// x.dims = [7, 1], pad_value = 0.0; out.dims = [4, 1], out.lod = [] and
    /// average [2, 4, 3, 0.0], sum [4, 12, 6, 0.0], sqrt [2.83, 6.93, 4.24, 0.0],
    /// max [3, 6, 5, 0.0], last [3, 6, 1, 0.0], first [1, 2, 5, 0.0].
    #[test]
    fn paddle_documented_example() {
        let x = LodTensor::try_new(
            Lod::try_from_offsets(&[vec![0, 2, 5, 7, 7]]).unwrap(),
            Values::from_vec::<Float32Type>(vec![1., 3., 2., 4., 6., 5., 1.], vec![1]).unwrap(),
        )
        .unwrap();
        let run = |p| {
            let out = sequence_pool_typed::<Float32Type>(&x, 0, p, 0.0).unwrap();
            assert_eq!(out.shape(), vec![4, 1]);
            assert_eq!(out.num_levels(), 0);
            out.typed_values::<Float32Type>().unwrap().to_vec()
        };
        assert_eq!(run(PoolType::Average), vec![2., 4., 3., 0.]);
        assert_eq!(run(PoolType::Sum), vec![4., 12., 6., 0.]);
        let sqrt = run(PoolType::Sqrt);
        for (got, want) in sqrt.iter().zip([2.83, 6.93, 4.24, 0.0]) {
            assert!((got - want).abs() < 0.005, "{sqrt:?}");
        }
        assert_eq!(run(PoolType::Max), vec![3., 6., 5., 0.]);
        assert_eq!(run(PoolType::Last), vec![3., 6., 1., 0.]);
        assert_eq!(run(PoolType::First), vec![1., 2., 5., 0.]);
        assert_eq!(run(PoolType::Min), vec![1., 2., 1., 0.]);
    }

    #[test]
    fn vector_elements_pool_item_wise() {
        let x = LodTensor::from_lengths::<Float64Type>(
            &[vec![2, 0, 1]],
            vec![1., 10., 3., 30., 5., 50.],
            vec![2],
        )
        .unwrap();
        let out = sequence_pool_typed::<Float64Type>(&x, 0, PoolType::Sum, -1.0).unwrap();
        assert_eq!(
            out.typed_values::<Float64Type>().unwrap(),
            &[4., 40., -1., -1., 5., 50.]
        );
        assert_eq!(out.element_shape(), &[2]);
    }

    #[test]
    fn every_numeric_dtype_and_typed_errors() {
        let x = LodTensor::from_lengths::<UInt8Type>(&[vec![3, 1]], vec![200, 100, 1, 7], vec![])
            .unwrap();
        let out = sequence_pool_any(&x, 0, PoolType::Sum, 0.0).unwrap();
        assert_eq!(out.typed_values::<UInt8Type>().unwrap(), &[45, 7]); // wraps
        let out = sequence_pool_any(&x, 0, PoolType::Average, 0.0).unwrap();
        assert_eq!(out.typed_values::<UInt8Type>().unwrap(), &[15, 7]);
        let h = LodTensor::from_lengths::<Float16Type>(
            &[vec![2]],
            vec![f16::from_f32(1.0), f16::from_f32(2.0)],
            vec![],
        )
        .unwrap();
        let out = sequence_pool_any(&h, 0, PoolType::Average, 0.0).unwrap();
        assert_eq!(
            out.typed_values::<Float16Type>().unwrap(),
            &[f16::from_f32(1.5)]
        );
        assert!(matches!(
            sequence_pool_typed::<Int32Type>(&x, 0, PoolType::Sum, 0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::DTypeMismatch { .. }))
        ));
        assert!(matches!(
            sequence_pool_any(&x, 1, PoolType::Sum, 0.0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 1,
                levels: 1
            }))
        ));
        let b = LodTensor::try_new(
            Lod::try_from_lengths(&[vec![1]]).unwrap(),
            Values::try_new(
                std::sync::Arc::new(arrow_array::BooleanArray::from(vec![true])),
                vec![],
            )
            .unwrap(),
        )
        .unwrap();
        let e = sequence_pool_any(&b, 0, PoolType::Max, 0.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sequence_pool: dtype bool is not supported (expected a numeric dtype)"
        );
    }

    fn reduce(seq: &[f64], p: PoolType, pad: f64) -> f64 {
        if seq.is_empty() {
            return pad;
        }
        let sum: f64 = seq.iter().sum();
        match p {
            PoolType::Sum => sum,
            PoolType::Average => sum / seq.len() as f64,
            PoolType::Sqrt => sum / (seq.len() as f64).sqrt(),
            PoolType::Max => seq.iter().copied().fold(f64::MIN, f64::max),
            PoolType::Min => seq.iter().copied().fold(f64::MAX, f64::min),
            PoolType::First => seq[0],
            PoolType::Last => seq[seq.len() - 1],
        }
    }

    const ALL: [PoolType; 7] = [
        PoolType::Sum,
        PoolType::Average,
        PoolType::Sqrt,
        PoolType::Max,
        PoolType::Min,
        PoolType::First,
        PoolType::Last,
    ];

    #[test]
    fn max_index_of_vectors_ties_and_views() {
        let x = LodTensor::from_lengths::<Int32Type>(
            &[vec![1, 3, 0]],
            vec![9, 9, 1, 5, 3, 5, 3, 1],
            vec![2],
        )
        .unwrap();
        assert_eq!(sequence_max_index(&x, 0).unwrap(), vec![0, 0, 2, 1, -1, -1]);
        let view = x.slice_rows(1..3).unwrap();
        assert_eq!(sequence_max_index(&view, 0).unwrap(), vec![2, 1, -1, -1]);
        let nan =
            LodTensor::from_lengths::<Float32Type>(&[vec![3]], vec![1.0, f32::NAN, 2.0], vec![])
                .unwrap();
        assert_eq!(sequence_max_index(&nan, 0).unwrap(), vec![2]);
        assert!(matches!(
            sequence_max_index(&x, 1).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 1,
                ..
            }))
        ));
        let plain = x.drop_outer_levels(1).unwrap();
        assert!(matches!(
            sequence_first_step(&plain).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
        ));
    }

    proptest! {
        #[test]
        fn max_index_matches_the_model(docs in model::nested(), skip in 0usize..3) {
            let t = model::tensor(&docs, skip);
            let got = sequence_max_index(&t, 1).unwrap();
            let max = sequence_pool_typed::<Float64Type>(&t, 1, PoolType::Max, 0.0).unwrap();
            let items = t.values().typed::<Float64Type>().unwrap();
            let mut want = Vec::new();
            let mut row = t.elements().start;
            for s in docs.iter().flatten() {
                // The first position of the maximum, as an absolute row.
                let first = s.iter().enumerate().fold(None, |best: Option<(usize, f64)>, (i, &v)| match best {
                    Some((_, b)) if v <= b => best,
                    _ => Some((i, v)),
                });
                want.push(first.map_or(-1, |(i, _)| (row + i) as i64));
                row += s.len();
            }
            prop_assert_eq!(&got, &want);
            // The index points at the pooled maximum.
            for (&i, &m) in got.iter().zip(max.typed_values::<Float64Type>().unwrap()) {
                if i >= 0 {
                    prop_assert_eq!(items[i as usize], m);
                }
            }
        }

        #[test]
        fn pool_matches_the_model(docs in model::nested(), skip in 0usize..3, p in 0usize..7) {
            let p = ALL[p];
            let t = model::tensor(&docs, skip);
            // The last level: one element per sentence, level 0 kept.
            let out = sequence_pool_typed::<Float64Type>(&t, 1, p, -7.0).unwrap();
            prop_assert_eq!(out.lod().lengths(), vec![docs.iter().map(Vec::len).collect::<Vec<_>>()]);
            prop_assert!(out.lod().is_zero_based());
            let want: Vec<f64> = docs.iter().flatten().map(|s| reduce(s, p, -7.0)).collect();
            prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
            // Level 0: one element per document, over all its words.
            let out = sequence_pool_typed::<Float64Type>(&t, 0, p, -7.0).unwrap();
            prop_assert_eq!(out.num_levels(), 0);
            let want: Vec<f64> = docs
                .iter()
                .map(|d| reduce(&d.iter().flatten().copied().collect::<Vec<_>>(), p, -7.0))
                .collect();
            prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
        }
    }

    /// The former names, kept for one release, give what the new ones give.
    #[test]
    #[allow(deprecated)]
    fn former_names_still_work() {
        use crate::ops::{PadOptions, to_padded, to_padded_truncating};
        let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 3]], vec![1, 2, 3, 4, 5], vec![])
            .unwrap();
        assert_eq!(
            sequence_pool::<Int32Type>(&x, 0, PoolType::Max, 0).unwrap(),
            sequence_pool_typed::<Int32Type>(&x, 0, PoolType::Max, 0).unwrap()
        );
        let zero = Values::from_vec::<Int32Type>(vec![0], vec![]).unwrap();
        let old = to_padded_truncating(&x, 0, &zero, 2).unwrap();
        let options = PadOptions::default().with_max_len(2).with_truncation(true);
        let new = to_padded(&x, 0, &zero, options).unwrap();
        assert_eq!((old.lengths, old.truncated), (new.lengths, new.truncated));
        assert_eq!(
            old.values.typed::<Int32Type>().unwrap(),
            new.values.typed::<Int32Type>().unwrap()
        );
    }
}
