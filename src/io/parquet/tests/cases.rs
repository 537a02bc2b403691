//! Random datasets for the Parquet tests, one seed one dataset, and the property-test
//! cases built on them.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float16Array, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use super::super::{
    Compression, ParquetReadOptions, ParquetReader, ParquetWriteOptions, ParquetWriter,
    RowGroupSize,
};
use crate::dataset::{Column, Dataset};
use crate::lod::{Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// A small deterministic generator (splitmix64), so one proptest seed makes one dataset.
pub(in crate::io::parquet) struct Rng(pub(in crate::io::parquet) u64);

impl Rng {
    pub(in crate::io::parquet) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(in crate::io::parquet) fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
}

/// `n` random items of `dtype` (no NaN, so equality is plain).
pub(in crate::io::parquet) fn items(dtype: DType, n: usize, rng: &mut Rng) -> ArrayRef {
    let v: Vec<i64> = (0..n).map(|_| rng.next() as i64 >> 40).collect();
    match dtype {
        DType::Bool => Arc::new(BooleanArray::from_iter(v.iter().map(|x| Some(x & 1 == 1)))),
        DType::UInt8 => Arc::new(UInt8Array::from_iter_values(v.iter().map(|&x| x as u8))),
        DType::Int8 => Arc::new(Int8Array::from_iter_values(v.iter().map(|&x| x as i8))),
        DType::Int16 => Arc::new(Int16Array::from_iter_values(v.iter().map(|&x| x as i16))),
        DType::Int32 => Arc::new(Int32Array::from_iter_values(v.iter().map(|&x| x as i32))),
        DType::Int64 => Arc::new(Int64Array::from_iter_values(v.iter().copied())),
        DType::UInt16 => Arc::new(UInt16Array::from_iter_values(v.iter().map(|&x| x as u16))),
        DType::UInt32 => Arc::new(UInt32Array::from_iter_values(v.iter().map(|&x| x as u32))),
        DType::UInt64 => Arc::new(UInt64Array::from_iter_values(v.iter().map(|&x| x as u64))),
        DType::Float16 => Arc::new(Float16Array::from_iter_values(
            v.iter().map(|&x| half::f16::from_f32(x as f32 / 64.0)),
        )),
        DType::Float32 => Arc::new(Float32Array::from_iter_values(
            v.iter().map(|&x| x as f32 / 7.0),
        )),
        DType::Float64 => Arc::new(Float64Array::from_iter_values(
            v.iter().map(|&x| x as f64 / 7.0),
        )),
    }
}

/// A random tensor of `depth` levels over `rows` top-level sequences (empty ones included).
pub(in crate::io::parquet) fn tensor(
    dtype: DType,
    depth: usize,
    shape: &[usize],
    rows: usize,
    width: OffsetWidth,
    rng: &mut Rng,
) -> LodTensor {
    let mut lengths: Vec<Vec<usize>> = Vec::new();
    let mut sequences = rows;
    for _ in 0..depth {
        let level: Vec<usize> = (0..sequences).map(|_| rng.below(4)).collect();
        sequences = level.iter().sum();
        lengths.push(level);
    }
    let size: usize = shape.iter().product();
    let values = Values::try_new(items(dtype, sequences * size, rng), shape.to_vec()).unwrap();
    let lod = Lod::try_from_lengths_with_width(&lengths, width).unwrap();
    LodTensor::try_new(lod, values).unwrap()
}

/// A dataset of a random tensor column (named levels) and an `int64` label column.
pub(in crate::io::parquet) fn dataset(
    dtype: DType,
    depth: usize,
    shape: &[usize],
    rows: usize,
    width: OffsetWidth,
    seed: u64,
) -> Dataset {
    let mut rng = Rng(seed);
    let t = tensor(dtype, depth, shape, rows, width, &mut rng);
    let label = tensor(DType::Int64, 0, &[], rows, width, &mut rng);
    let names: Vec<String> = (0..depth).map(|i| format!("level{i}")).collect();
    Dataset::try_new(vec![
        Column::new("x", t).with_level_names(names).unwrap(),
        Column::new("label", label),
    ])
    .unwrap()
}

pub(in crate::io::parquet) fn write_bytes<'a>(
    datasets: impl IntoIterator<Item = &'a Dataset>,
    options: &ParquetWriteOptions,
) -> Bytes {
    let mut w = ParquetWriter::new(Vec::new(), options.clone());
    for d in datasets {
        w.write(d).unwrap();
    }
    Bytes::from(w.finish().unwrap())
}

pub(in crate::io::parquet) fn read_bytes(bytes: Bytes, options: &ParquetReadOptions) -> Dataset {
    ParquetReader::try_new(bytes, options)
        .unwrap()
        .read_all()
        .unwrap()
}

pub(in crate::io::parquet) const CODECS: [Compression; 3] =
    [Compression::None, Compression::Snappy, Compression::Zstd(3)];

/// One property-test case: a random dataset and the options it is written and read with.
#[derive(Clone, Debug)]
pub(in crate::io::parquet) struct Case {
    pub(in crate::io::parquet) dtype: DType,
    pub(in crate::io::parquet) ds: Dataset,
    pub(in crate::io::parquet) options: ParquetWriteOptions,
    pub(in crate::io::parquet) row_group_rows: usize,
    pub(in crate::io::parquet) batch_size: usize,
}

/// Cases of every dtype, 0–3 levels of either offset width, element shapes of 0–2 dims,
/// fewer than `rows` rows, every codec, dictionary on or off, and row groups and read
/// batches of fewer than `chunk` rows.
pub(in crate::io::parquet) fn cases(rows: usize, chunk: usize) -> impl Strategy<Value = Case> {
    (
        (
            0..DType::ALL.len(),
            0usize..4,
            vec(1usize..4, 0..3),
            0..rows,
        ),
        (any::<bool>(), 0..CODECS.len(), any::<bool>()),
        (1..chunk, 1..chunk, any::<u64>()),
    )
        .prop_map(
            |(
                (dtype, depth, shape, rows),
                (i64_offsets, codec, dictionary),
                (group, batch, seed),
            )| {
                let dtype = DType::ALL[dtype];
                let width = if i64_offsets {
                    OffsetWidth::I64
                } else {
                    OffsetWidth::I32
                };
                let options = ParquetWriteOptions::default()
                    .with_compression(CODECS[codec])
                    .with_dictionary(dictionary)
                    .with_row_group_size(RowGroupSize::Rows(group));
                Case {
                    dtype,
                    ds: dataset(dtype, depth, &shape, rows, width, seed),
                    options,
                    row_group_rows: group,
                    batch_size: batch,
                }
            },
        )
}

/// `bytes` read in batches of at most `batch_size` rows: each batch the next run of `ds`'s
/// rows, all of them in the end.
pub(in crate::io::parquet) fn check_batches(
    bytes: Bytes,
    ds: &Dataset,
    batch_size: usize,
) -> std::result::Result<(), TestCaseError> {
    let read = ParquetReadOptions::default().with_batch_size(batch_size);
    let mut start = 0;
    for part in ParquetReader::try_new(bytes, &read).unwrap() {
        let part = part.unwrap();
        prop_assert!(part.num_rows() <= batch_size);
        prop_assert_eq!(
            &part,
            &ds.slice_rows(start..start + part.num_rows()).unwrap()
        );
        start += part.num_rows();
    }
    prop_assert_eq!(start, ds.num_rows());
    Ok(())
}
