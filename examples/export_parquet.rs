//! Writes a small 2-level dataset to Parquet: `cargo run --example export_parquet -- out.parquet`.
//!
//! Three documents of 3, 1 and 2 sentences of 3, 2, 4, 1, 2 and 3 words, each word a
//! `float32[2, 2]`, plus an `int64` label per document.

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::parquet::{Compression, ParquetWriteOptions, write_parquet};
use lodtensor::{Column, Dataset, LodTensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: export_parquet OUT.parquet")?;
    let tokens = LodTensor::from_lengths::<Float32Type>(
        &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
        (0..60).map(|i| i as f32).collect(),
        vec![2, 2],
    )?;
    let label = LodTensor::from_lengths::<Int64Type>(&[], vec![5, 6, 7], vec![])?;
    let ds = Dataset::try_new(vec![
        Column::new("tokens", tokens).with_level_names(["documents", "sentences"])?,
        Column::new("label", label),
    ])?;
    let options = ParquetWriteOptions::default().with_compression(Compression::Zstd(3));
    write_parquet(&path, [&ds], &options)?;
    println!("wrote {} rows to {path}", ds.num_rows());
    Ok(())
}
