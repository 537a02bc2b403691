//! Opening a column of a 20-column file against opening all of it: `MappedDataset::open`
//! (every column mapped and validated) next to `MappedDataset::open_columns` with one
//! column, and arrow-rs's own `FileReader` with the same one-column projection (what a Rust
//! user would write instead: validated, read into memory), all on the same file in the same
//! run.
//!
//! The file: 20 000 rows; 18 LoD tensor columns of 2 levels (1-15 sentences of 1-12 f32
//! tokens per row, lengths drawn from a seeded generator) and 2 string side columns (an
//! `id`, a `text` of 20-200 bytes), written in 64 MiB record batches.
//!
//! `cargo bench --bench projection`

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::StringArray;
use arrow_array::types::Float32Type;
use criterion::{Criterion, criterion_group};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::rng::SplitMix64;
use lodtensor::{Column, Dataset, LodTensor};

const ROWS: usize = 20_000;
const TENSORS: usize = 18;

/// The 20-column benchmark file, made once.
fn wide_file() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("wide-{ROWS}.arrow"));
    if path.exists() {
        return path;
    }
    let mut rng = SplitMix64::new(5);
    let mut draw = |lo: u64, hi: u64| (lo + rng.next_u64() % (hi - lo + 1)) as usize;
    let mut columns = Vec::new();
    for c in 0..TENSORS {
        let docs: Vec<usize> = (0..ROWS).map(|_| draw(1, 15)).collect();
        let sentences: Vec<usize> = (0..docs.iter().sum()).map(|_| draw(1, 12)).collect();
        let tokens: usize = sentences.iter().sum();
        let items = (0..tokens).map(|i| (i % 997) as f32 * 0.5).collect();
        let t = LodTensor::from_lengths::<Float32Type>(&[docs, sentences], items, vec![]).unwrap();
        columns.push(Column::new(format!("t{c:02}"), t));
    }
    let ids = StringArray::from_iter_values((0..ROWS).map(|r| format!("doc-{r:08}")));
    let text = StringArray::from_iter_values((0..ROWS).map(|r| "w".repeat(20 + r % 181)));
    columns.push(Column::side("id", Arc::new(ids)).unwrap());
    columns.push(Column::side("text", Arc::new(text)).unwrap());
    let ds = Dataset::try_new(columns).unwrap();
    let mut w = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
    w.write(&ds).unwrap();
    w.finish().unwrap();
    path
}

fn benches(c: &mut Criterion) {
    let path = wide_file();
    let mut g = c.benchmark_group("open 1 of 20 columns");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    g.bench_function("lodtensor open (all 20)", |b| {
        b.iter(|| black_box(MappedDataset::open(&path).unwrap()))
    });
    g.bench_function("lodtensor open_columns (1)", |b| {
        b.iter(|| black_box(MappedDataset::open_columns(&path, &["t07"]).unwrap()))
    });
    g.bench_function("arrow-rs FileReader projection (1)", |b| {
        b.iter(|| {
            let file = std::fs::File::open(&path).unwrap();
            let reader = arrow_ipc::reader::FileReader::try_new(file, Some(vec![7])).unwrap();
            black_box(reader.map(Result::unwrap).count())
        })
    });
    g.finish();
}

criterion_group!(projection, benches);

fn main() {
    projection();
    Criterion::default().configure_from_args().final_summary();
}
