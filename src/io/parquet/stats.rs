//! Column-chunk statistics of plain numbers, as the Parquet format defines them: min and max
//! leaving NaN out (a minimum of zero written as -0.0, a maximum as +0.0) and the null count
//! (entries without a value: here, empty sequences).

use std::ops::Range;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use parquet::basic::Type as PhysicalType;
use parquet::file::statistics::Statistics;

use super::encode::internal;
use crate::error::Result;
use crate::values::{DType, Values};

/// Chunk statistics: min and max of the values (NaN left out, as the Parquet format asks
/// of floats) and the null count (empty sequences: entries without a value).
#[derive(Default)]
pub(super) struct Stats {
    min_max: Option<(Number, Number)>,
    nulls: u64,
}

/// A value of one of the plain physical types, for statistics.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Number {
    F32(f32),
    F64(f64),
    I32(i32),
    I64(i64),
}

impl Stats {
    /// Adds the values of `items` and `nulls` entries without a value.
    pub(super) fn add(&mut self, values: &Values, items: Range<usize>, nulls: u64) -> Result<()> {
        self.nulls += nulls;
        let found = match values.dtype() {
            DType::Float32 => float_min_max(&values.typed::<Float32Type>()?[items])
                .map(|(a, b)| (Number::F32(a), Number::F32(b))),
            DType::Float64 => float_min_max(&values.typed::<Float64Type>()?[items])
                .map(|(a, b)| (Number::F64(a), Number::F64(b))),
            DType::Int32 => int_min_max(&values.typed::<Int32Type>()?[items])
                .map(|(a, b)| (Number::I32(a), Number::I32(b))),
            DType::Int64 => int_min_max(&values.typed::<Int64Type>()?[items])
                .map(|(a, b)| (Number::I64(a), Number::I64(b))),
            other => {
                return Err(internal(format!(
                    "{} values for a plain page",
                    other.name()
                )));
            }
        };
        self.merge(Stats {
            min_max: found,
            nulls: 0,
        });
        Ok(())
    }

    /// Adds the statistics of `other`.
    pub(super) fn merge(&mut self, other: Stats) {
        self.nulls += other.nulls;
        if let Some((lo, hi)) = other.min_max {
            self.min_max = Some(match self.min_max {
                None => (lo, hi),
                Some((a, b)) => (if lo < a { lo } else { a }, if hi > b { hi } else { b }),
            });
        }
    }

    /// The statistics of a chunk of `physical` values. A float minimum of zero is written
    /// as -0.0 and a maximum of zero as +0.0 (the Parquet format's rule for signed zeros).
    pub(super) fn finish(self, physical: PhysicalType) -> Statistics {
        let nulls = Some(self.nulls);
        match (physical, self.min_max) {
            (_, Some((Number::F32(lo), Number::F32(hi)))) => {
                let (lo, hi) = (
                    if lo == 0.0 { -0.0 } else { lo },
                    if hi == 0.0 { 0.0 } else { hi },
                );
                Statistics::float(Some(lo), Some(hi), None, nulls, false)
            }
            (_, Some((Number::F64(lo), Number::F64(hi)))) => {
                let (lo, hi) = (
                    if lo == 0.0 { -0.0 } else { lo },
                    if hi == 0.0 { 0.0 } else { hi },
                );
                Statistics::double(Some(lo), Some(hi), None, nulls, false)
            }
            (_, Some((Number::I32(lo), Number::I32(hi)))) => {
                Statistics::int32(Some(lo), Some(hi), None, nulls, false)
            }
            (_, Some((Number::I64(lo), Number::I64(hi)))) => {
                Statistics::int64(Some(lo), Some(hi), None, nulls, false)
            }
            (PhysicalType::FLOAT, _) => Statistics::float(None, None, None, nulls, false),
            (PhysicalType::DOUBLE, _) => Statistics::double(None, None, None, nulls, false),
            (PhysicalType::INT32, _) => Statistics::int32(None, None, None, nulls, false),
            _ => Statistics::int64(None, None, None, nulls, false),
        }
    }
}

/// Min and max of `values` leaving NaN out (`None` when there is nothing else), in lanes
/// the compiler can keep in vector registers.
fn float_min_max<T: num_float::Float>(values: &[T]) -> Option<(T, T)> {
    const LANES: usize = 16;
    let mut lo = [T::INFINITY; LANES];
    let mut hi = [T::NEG_INFINITY; LANES];
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for i in 0..LANES {
            // `min`/`max` return the other operand when one is NaN.
            lo[i] = lo[i].min(chunk[i]);
            hi[i] = hi[i].max(chunk[i]);
        }
    }
    for &v in rest {
        lo[0] = lo[0].min(v);
        hi[0] = hi[0].max(v);
    }
    let lo = lo.into_iter().fold(T::INFINITY, T::min);
    let hi = hi.into_iter().fold(T::NEG_INFINITY, T::max);
    // Only NaN (or nothing): no min and max. Infinities alone are real values.
    (lo <= hi).then_some((lo, hi))
}

fn int_min_max<T: Ord + Copy>(values: &[T]) -> Option<(T, T)> {
    let lo = values.iter().copied().min()?;
    let hi = values.iter().copied().max()?;
    Some((lo, hi))
}

/// `f32` and `f64` alike, for [`float_min_max`].
mod num_float {
    pub trait Float: Copy + PartialOrd {
        const INFINITY: Self;
        const NEG_INFINITY: Self;
        fn min(self, other: Self) -> Self;
        fn max(self, other: Self) -> Self;
    }
    macro_rules! float {
        ($t:ty) => {
            impl Float for $t {
                const INFINITY: Self = <$t>::INFINITY;
                const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
                fn min(self, other: Self) -> Self {
                    <$t>::min(self, other)
                }
                fn max(self, other: Self) -> Self {
                    <$t>::max(self, other)
                }
            }
        };
    }
    float!(f32);
    float!(f64);
}
