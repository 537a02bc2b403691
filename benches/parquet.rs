//! Parquet export throughput of a synthetic 2-level `float32[64]` dataset, per codec, on one
//! and two threads, with a breakdown of where the time goes (against the parquet crate's
//! own Arrow writer and a flat column of the same values), and pyarrow's `pq.write_table` of
//! the same table in the same run.
//!
//! ```text
//! LODTENSOR_BENCH_MB=200 \
//! LODTENSOR_BENCH_PYTHON=.venv/bin/python \
//!     cargo bench --bench parquet
//! ```
//! `LODTENSOR_BENCH_MB` sets the size of the values (default 200 MB). With
//! `LODTENSOR_BENCH_PYTHON` (a Python with pyarrow), `benches/parquet_pyarrow.py` times
//! pyarrow on the same data, written to `target/parquet-bench/input.parquet`.

#[path = "../tests/common/plain.rs"]
mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use arrow_array::{Array, Float32Array};
use criterion::{Criterion, Throughput, criterion_group};
use lodtensor::io::parquet::{
    Compression, ParquetReadOptions, ParquetReader, ParquetWriteOptions, ParquetWriter,
    RowGroupSize,
};
use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

const DIM: usize = 64;

/// Documents of 1–15 sentences of 1–39 words, each word a `float32[64]`, until the values
/// reach `mb` megabytes.
fn dataset(mb: usize) -> Dataset {
    let tokens = support::documents((1, 15), (1, 39), DIM, mb as u64 * 1_000_000, 0x2545_f491);
    Dataset::try_new(vec![Column::new("tokens", tokens)]).expect("one column")
}

fn write(ds: &Dataset, options: &ParquetWriteOptions, capacity: usize) -> Vec<u8> {
    let mut w = ParquetWriter::new(Vec::with_capacity(capacity), options.clone());
    w.write(ds).expect("writes");
    w.finish().expect("finishes")
}

fn codecs() -> [(&'static str, ParquetWriteOptions); 4] {
    let o = ParquetWriteOptions::default;
    [
        ("none", o().with_compression(Compression::None)),
        ("snappy", o().with_compression(Compression::Snappy)),
        ("zstd1", o().with_compression(Compression::Zstd(1))),
        (
            "zstd1_bss",
            o().with_compression(Compression::Zstd(1))
                .with_byte_stream_split(true),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let mb = std::env::var("LODTENSOR_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let ds = dataset(mb);
    let tokens = ds.column("tokens").expect("the column");
    let bytes = tokens.values().items().get_buffer_memory_size();
    // Four row groups, so that two threads have work to share.
    let group_rows = ds.num_rows().div_ceil(4);
    eprintln!(
        "dataset: {} documents, {} words of float32[{DIM}], {:.1} MB of values; row groups of {group_rows} documents",
        ds.num_rows(),
        tokens.elements().len(),
        bytes as f64 / 1e6
    );

    bench_write(c, &ds, bytes, group_rows);
    let file = bench_breakdown(c, &ds, bytes, group_rows);
    if let Ok(python) = std::env::var("LODTENSOR_BENCH_PYTHON") {
        bench_pyarrow(&python, &file, group_rows);
    }
}

/// Writing `ds` at every codec, on one thread and on two.
fn bench_write(c: &mut Criterion, ds: &Dataset, bytes: usize, group_rows: usize) {
    let mut g = c.benchmark_group("parquet_write");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Bytes(bytes as u64));
    for (name, options) in codecs() {
        let options = options.with_row_group_size(RowGroupSize::Rows(group_rows));
        let size = write(ds, &options, bytes + bytes / 4).len();
        eprintln!("{name}: file {:.1} MB", size as f64 / 1e6);
        for threads in [1, 2] {
            let options = options.clone().with_threads(threads);
            g.bench_function(format!("{name}/{threads}t"), |b| {
                b.iter(|| black_box(write(ds, &options, bytes + bytes / 4)))
            });
        }
    }
    g.finish();
}

/// Where the time goes, on one thread, uncompressed: the parquet crate's writer, a flat
/// column, the nested one, and reading it back. Returns the nested file.
fn bench_breakdown(
    c: &mut Criterion,
    ds: &Dataset,
    bytes: usize,
    group_rows: usize,
) -> bytes::Bytes {
    let tokens = ds.column("tokens").expect("the column");
    let mut g = c.benchmark_group("parquet_breakdown");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6))
        .throughput(Throughput::Bytes(bytes as u64));
    // The parquet crate's own Arrow writer on the same rows (the same rows and statistics):
    // it computes the levels item by item with an index of every value.
    let batch = ds.to_record_batch();
    let arrow_props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    g.bench_function("arrow_writer_none", |b| {
        b.iter(|| {
            let sink = Vec::with_capacity(bytes + bytes / 4);
            let mut w = ArrowWriter::try_new(sink, batch.schema(), Some(arrow_props.clone()))
                .expect("writer");
            w.write(&batch).expect("writes");
            black_box(w.into_inner().expect("finishes"))
        })
    });
    // The same values as one flat column: no levels to write.
    let flat_values = Float32Array::from(tokens.values().items().to_data());
    let flat = Dataset::try_new(vec![Column::new(
        "values",
        LodTensor::try_new(
            Lod::default(),
            Values::try_new(std::sync::Arc::new(flat_values), vec![]).expect("values"),
        )
        .expect("tensor"),
    )])
    .expect("dataset");
    let none = ParquetWriteOptions::default()
        .with_compression(Compression::None)
        .with_row_group_size(RowGroupSize::Rows(flat.num_rows().div_ceil(4)));
    g.bench_function("flat_f32_none", |b| {
        b.iter(|| black_box(write(&flat, &none, bytes + bytes / 4)))
    });
    let nested = none
        .clone()
        .with_row_group_size(RowGroupSize::Rows(group_rows));
    g.bench_function("nested_none", |b| {
        b.iter(|| black_box(write(ds, &nested, bytes + bytes / 4)))
    });
    let file = bytes::Bytes::from(write(ds, &nested, bytes + bytes / 4));
    g.bench_function("read_none", |b| {
        b.iter(|| {
            let reader = ParquetReader::try_new(
                file.clone(),
                &ParquetReadOptions::default().with_batch_size(group_rows),
            )
            .expect("opens");
            black_box(reader.read_all().expect("reads"))
        })
    });
    g.finish();
    file
}

/// The same table for pyarrow, with the interpreter `python`.
fn bench_pyarrow(python: &str, file: &[u8], group_rows: usize) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/parquet-bench");
    std::fs::create_dir_all(&dir).expect("creates the bench directory");
    let input = dir.join("input.parquet");
    std::fs::write(&input, file).expect("writes the input");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/parquet_pyarrow.py");
    let status = std::process::Command::new(python)
        .arg(script)
        .arg(&input)
        .arg(group_rows.to_string())
        .status()
        .expect("runs the pyarrow bench");
    assert!(status.success(), "the pyarrow bench failed");
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
