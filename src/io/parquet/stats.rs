//! Column-chunk statistics of plain numbers, as the `parquet` crate's writer makes them
//! (parquet-format's `IEEE_754_TOTAL_ORDER` column order for floats, which the file footer
//! declares): the min and max of the values in IEEE 754 total order, NaN left out unless
//! every value is NaN (then the least and greatest NaN), so -0 sorts below +0 and each is
//! kept as it is; the NaN count; the null count (entries without a value: here, empty
//! sequences). Integers are signed and their min and max are also written in the
//! deprecated fields, as the crate does.

use std::cmp::Ordering;
use std::ops::Range;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use parquet::basic::Type as PhysicalType;
use parquet::file::statistics::{Statistics, ValueStatistics};

use crate::error::{Error, Result};
use crate::values::{DType, Values};

/// Chunk statistics (see the module docs).
#[derive(Default)]
pub(super) struct Stats {
    /// Min and max of the values that are not NaN.
    min_max: Option<(Number, Number)>,
    /// Least and greatest NaN.
    nan_min_max: Option<(Number, Number)>,
    /// NaN values, `None` for integers.
    nans: Option<u64>,
    nulls: u64,
}

/// A value of one of the plain physical types, for statistics.
#[derive(Clone, Copy, Debug)]
enum Number {
    F32(f32),
    F64(f64),
    I32(i32),
    I64(i64),
}

impl Number {
    /// IEEE 754 total order for floats (-NaN < -∞ < … < -0 < +0 < … < +∞ < +NaN), the
    /// usual order for integers; values of different types are never compared.
    fn total_cmp(&self, other: &Number) -> Ordering {
        match (self, other) {
            (Number::F32(a), Number::F32(b)) => a.total_cmp(b),
            (Number::F64(a), Number::F64(b)) => a.total_cmp(b),
            (Number::I32(a), Number::I32(b)) => a.cmp(b),
            (Number::I64(a), Number::I64(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

/// The least and greatest of two ranges, in total order.
fn widen(a: Option<(Number, Number)>, b: Option<(Number, Number)>) -> Option<(Number, Number)> {
    match (a, b) {
        (Some((lo, hi)), Some((lo2, hi2))) => Some((
            if lo2.total_cmp(&lo).is_lt() { lo2 } else { lo },
            if hi2.total_cmp(&hi).is_gt() { hi2 } else { hi },
        )),
        (a, b) => a.or(b),
    }
}

impl Stats {
    /// Adds the values of `items` and `nulls` entries without a value.
    pub(super) fn add(&mut self, values: &Values, items: Range<usize>, nulls: u64) -> Result<()> {
        let page = match values.dtype() {
            DType::Float32 => float_stats(&values.typed::<Float32Type>()?[items], Number::F32),
            DType::Float64 => float_stats(&values.typed::<Float64Type>()?[items], Number::F64),
            DType::Int32 => int_stats(&values.typed::<Int32Type>()?[items], Number::I32),
            DType::Int64 => int_stats(&values.typed::<Int64Type>()?[items], Number::I64),
            other => {
                return Err(Error::internal(format!(
                    "{} values for a plain page",
                    other.name()
                )));
            }
        };
        self.merge(Stats { nulls, ..page });
        Ok(())
    }

    /// Adds the statistics of `other`.
    pub(super) fn merge(&mut self, other: Stats) {
        self.nulls += other.nulls;
        self.min_max = widen(self.min_max, other.min_max);
        self.nan_min_max = widen(self.nan_min_max, other.nan_min_max);
        self.nans = match (self.nans, other.nans) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// The statistics of a chunk of `physical` values.
    pub(super) fn finish(self, physical: PhysicalType) -> Statistics {
        let nulls = Some(self.nulls);
        let range = self.min_max.or(self.nan_min_max);
        let (lo, hi) = (range.map(|r| r.0), range.map(|r| r.1));
        match physical {
            PhysicalType::FLOAT => Statistics::Float(
                ValueStatistics::new(lo.and_then(f32_of), hi.and_then(f32_of), None, nulls, false)
                    .with_nan_count(Some(self.nans.unwrap_or(0))),
            ),
            PhysicalType::DOUBLE => Statistics::Double(
                ValueStatistics::new(lo.and_then(f64_of), hi.and_then(f64_of), None, nulls, false)
                    .with_nan_count(Some(self.nans.unwrap_or(0))),
            ),
            PhysicalType::INT32 => Statistics::Int32(
                ValueStatistics::new(lo.and_then(i32_of), hi.and_then(i32_of), None, nulls, false)
                    .with_backwards_compatible_min_max(true),
            ),
            _ => Statistics::Int64(
                ValueStatistics::new(lo.and_then(i64_of), hi.and_then(i64_of), None, nulls, false)
                    .with_backwards_compatible_min_max(true),
            ),
        }
    }
}

fn f32_of(n: Number) -> Option<f32> {
    if let Number::F32(v) = n {
        Some(v)
    } else {
        None
    }
}

fn f64_of(n: Number) -> Option<f64> {
    if let Number::F64(v) = n {
        Some(v)
    } else {
        None
    }
}

fn i32_of(n: Number) -> Option<i32> {
    if let Number::I32(v) = n {
        Some(v)
    } else {
        None
    }
}

fn i64_of(n: Number) -> Option<i64> {
    if let Number::I64(v) = n {
        Some(v)
    } else {
        None
    }
}

/// The statistics of float `values`: min and max leaving NaN out, in lanes the compiler can
/// keep in vector registers, then put in total order where they are zeros; the NaN count;
/// the least and greatest NaN when there is nothing else.
fn float_stats<T: num_float::Float>(values: &[T], number: fn(T) -> Number) -> Stats {
    const LANES: usize = 16;
    let mut lo = [T::INFINITY; LANES];
    let mut hi = [T::NEG_INFINITY; LANES];
    let mut nans = 0u64;
    // NaN counted in 32-bit lanes (a third as fast in 64-bit ones), per block so that a
    // lane cannot overflow.
    for block in values.chunks(LANES << 16) {
        let mut lane_nans = [0u32; LANES];
        let chunks = block.chunks_exact(LANES);
        let rest = chunks.remainder();
        for chunk in chunks {
            for i in 0..LANES {
                // `min`/`max` return the other operand when one is NaN.
                lo[i] = lo[i].min(chunk[i]);
                hi[i] = hi[i].max(chunk[i]);
                lane_nans[i] += u32::from(chunk[i].is_nan());
            }
        }
        for &v in rest {
            lo[0] = lo[0].min(v);
            hi[0] = hi[0].max(v);
            lane_nans[0] += u32::from(v.is_nan());
        }
        nans += lane_nans.iter().map(|&n| u64::from(n)).sum::<u64>();
    }
    let mut lo = lo.into_iter().fold(T::INFINITY, T::min);
    let mut hi = hi.into_iter().fold(T::NEG_INFINITY, T::max);
    // `min` and `max` do not tell -0 from +0: in total order -0 is the lesser.
    let has = |zero: T| values.iter().any(|v| v.same_bits(zero));
    if lo == T::ZERO {
        lo = if has(T::NEG_ZERO) {
            T::NEG_ZERO
        } else {
            T::ZERO
        };
    }
    if hi == T::ZERO {
        hi = if has(T::ZERO) { T::ZERO } else { T::NEG_ZERO };
    }
    // Only NaN (or nothing) when `lo > hi`: infinities alone are real values.
    let min_max = (lo <= hi).then(|| (number(lo), number(hi)));
    let nan_min_max = if min_max.is_none() && nans > 0 {
        let mut all = values.iter().filter(|v| v.is_nan()).map(|&v| number(v));
        all.next().map(|first| {
            all.fold((first, first), |(lo, hi), v| {
                widen(Some((lo, hi)), Some((v, v))).unwrap_or((lo, hi))
            })
        })
    } else {
        None
    };
    Stats {
        min_max,
        nan_min_max,
        nans: Some(nans),
        nulls: 0,
    }
}

fn int_stats<T: Ord + Copy>(values: &[T], number: fn(T) -> Number) -> Stats {
    let lo = values.iter().copied().min();
    let hi = values.iter().copied().max();
    Stats {
        min_max: lo.zip(hi).map(|(lo, hi)| (number(lo), number(hi))),
        ..Stats::default()
    }
}

/// `f32` and `f64` alike, for [`float_stats`].
mod num_float {
    pub trait Float: Copy + PartialOrd {
        const INFINITY: Self;
        const NEG_INFINITY: Self;
        const ZERO: Self;
        const NEG_ZERO: Self;
        fn min(self, other: Self) -> Self;
        fn max(self, other: Self) -> Self;
        fn is_nan(self) -> bool;
        fn same_bits(self, other: Self) -> bool;
    }
    macro_rules! float {
        ($t:ty) => {
            impl Float for $t {
                const INFINITY: Self = <$t>::INFINITY;
                const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
                const ZERO: Self = 0.0;
                const NEG_ZERO: Self = -0.0;
                fn min(self, other: Self) -> Self {
                    <$t>::min(self, other)
                }
                fn max(self, other: Self) -> Self {
                    <$t>::max(self, other)
                }
                fn is_nan(self) -> bool {
                    <$t>::is_nan(self)
                }
                fn same_bits(self, other: Self) -> bool {
                    self.to_bits() == other.to_bits()
                }
            }
        };
    }
    float!(f32);
    float!(f64);
}

#[cfg(test)]
mod tests {
    use arrow_array::types::{Float16Type, Float32Type, Float64Type};
    use bytes::Bytes;
    use half::f16;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::statistics::Statistics;

    use super::super::tests::{arrow_writer_bytes, write_bytes};
    use super::super::{ParquetWriteOptions, RowGroupSize};
    use crate::dataset::{Column, Dataset};
    use crate::tensor::LodTensor;

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    /// Values whose statistics are edge cases: NaN (left out unless alone), signed zeros
    /// (-0 below +0), infinities (real values).
    const CASES: [&[f64]; 15] = [
        &[NAN, 1.0, -2.0, NAN],
        &[NAN, NAN],
        &[NAN, -NAN],
        &[0.0, 1.0],
        &[-0.0, -1.0],
        &[-0.0, 0.0],
        &[0.0, -0.0],
        &[0.0],
        &[-0.0],
        &[INF, -INF, NAN],
        &[INF],
        &[-INF, NAN],
        &[NAN, -0.0, INF],
        &[3.5, -INF, 0.0],
        &[],
    ];

    /// One column of `values` as the rows [v0, v1], [], [v2], [v3], … (`rows` rows, the
    /// last one taking the rest), written by this crate and by the `parquet` crate's
    /// Arrow writer.
    fn files<T>(values: Vec<T::Native>, shape: Vec<usize>, rows: usize) -> (Bytes, Bytes)
    where
        T: arrow_array::ArrowPrimitiveType,
    {
        let size: usize = shape.iter().product::<usize>().max(1);
        let elements = values.len() / size;
        let mut lengths = vec![elements.min(2), 0];
        lengths.extend((2..elements).map(|_| 1).take(rows.saturating_sub(2)));
        let rest = elements - lengths.iter().sum::<usize>();
        *lengths.last_mut().unwrap() += rest;
        let t = LodTensor::from_lengths::<T>(&[lengths], values, shape).unwrap();
        let ds = Dataset::try_new(vec![Column::new("x", t)]).unwrap();
        let options =
            ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(1 << 20));
        (
            write_bytes([&ds], &options),
            arrow_writer_bytes(&[ds], &options, 1 << 20),
        )
    }

    /// The chunk statistics of the one column of `file`.
    fn stats(file: &Bytes) -> Statistics {
        let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
        let chunk = reader.metadata().row_group(0).column(0);
        chunk.statistics().unwrap().clone()
    }

    /// Everything a reader can see of the statistics of `file`: per row group the chunk
    /// statistics (min and max bytes as well, for NaN), and the column orders.
    fn seen(file: &Bytes) -> String {
        let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
        let metadata = reader.metadata();
        let groups: Vec<String> = (metadata.row_groups().iter())
            .map(|g| {
                let s = g.column(0).statistics().unwrap();
                format!("{s:?} {:?} {:?}", s.min_bytes_opt(), s.max_bytes_opt())
            })
            .collect();
        format!("{groups:?} {:?}", metadata.file_metadata().column_orders())
    }

    #[test]
    fn float_edge_cases_are_the_arrow_writers_statistics() {
        for case in CASES {
            let singles = case.iter().map(|&v| v as f32).collect();
            let (ours, theirs) = files::<Float32Type>(singles, vec![], 3);
            assert_eq!(seen(&ours), seen(&theirs), "f32 {case:?}");
            let (ours, theirs) = files::<Float64Type>(case.to_vec(), vec![], 3);
            assert_eq!(seen(&ours), seen(&theirs), "f64 {case:?}");
            let halves = case.iter().map(|&v| f16::from_f64(v)).collect();
            let (ours, theirs) = files::<Float16Type>(halves, vec![], 3);
            assert_eq!(seen(&ours), seen(&theirs), "f16 {case:?}");
        }
    }

    /// The rules, spelled out: NaN left out unless alone, signed zeros in total order,
    /// infinities kept, NaN and null counts.
    #[test]
    fn float_statistics_follow_the_total_order() {
        let of = |values: &[f64]| match stats(&files::<Float64Type>(values.to_vec(), vec![], 3).0) {
            Statistics::Double(s) => (
                s.min_opt().map(|v| v.to_bits()),
                s.max_opt().map(|v| v.to_bits()),
                s.nan_count_opt(),
                s.null_count_opt(),
            ),
            other => panic!("{other:?}"),
        };
        let bits = |v: f64| Some(v.to_bits());
        assert_eq!(
            of(&[NAN, 1.0, -2.0]),
            (bits(-2.0), bits(1.0), Some(1), Some(1))
        );
        assert_eq!(of(&[NAN, NAN]), (bits(NAN), bits(NAN), Some(2), Some(1)));
        assert_eq!(of(&[0.0, 1.0]).0, bits(0.0));
        assert_eq!(of(&[-0.0, -1.0]).1, bits(-0.0));
        let (min, max, ..) = of(&[0.0, -0.0]);
        assert_eq!((min, max), (bits(-0.0), bits(0.0)));
        let (min, max, nans, _) = of(&[-INF, NAN, INF]);
        assert_eq!((min, max, nans), (bits(-INF), bits(INF), Some(1)));
    }

    /// Statistics merged over many pages: the extremes in different pages, signed zeros
    /// in different pages, NaN alone in a page.
    #[test]
    fn statistics_merged_over_pages_are_the_arrow_writers() {
        let n = 1500 * 300;
        let patterns: [fn(usize, usize) -> f32; 4] = [
            |i, n| if i < n / 2 { 0.0 } else { -0.0 },
            |i, n| if i < n / 2 { f32::NAN } else { i as f32 },
            |i, n| match i {
                _ if i + 1 == n => f32::INFINITY,
                _ if i == n / 3 => -7.0,
                _ => f32::NAN,
            },
            |i, n| if i < n / 2 { -f32::NAN } else { f32::NAN },
        ];
        for (k, pattern) in patterns.iter().enumerate() {
            let values = (0..n).map(|i| pattern(i, n)).collect();
            let (ours, theirs) = files::<Float32Type>(values, vec![300], 1500);
            assert_eq!(seen(&ours), seen(&theirs), "pattern {k}");
        }
    }
}
