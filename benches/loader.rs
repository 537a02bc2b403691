//! Loader throughput on the synthetic documents dataset: 4096-token batches in file order
//! (views) and shuffled (gathered), each consumed by summing its token values, against a
//! raw loop over the mapped values and a memcpy of the same bytes, in the same run; and the
//! shuffled gather alone, against the memcpy; and the same loaders over the same rows
//! written as 16 shards (`ShardedDataset`), against the single file; and the windowed
//! shuffle over the 16 shards (shards, runs of 32 documents, a window of 256 documents),
//! against the sample shuffle of the single file.
//!
//! `LODTENSOR_BENCH_MB` sets the dataset size (default 200 MB of values).

use arrow_array::types::Float32Type;
use std::hint::black_box;
use std::path::Path;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::loader::{Loader, LoaderSource};
use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

fn sum(values: &[f32]) -> f32 {
    // Eight lanes, so the sum vectorises like a consumer's would.
    let mut acc = [0f32; 8];
    let chunks = values.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// The documents dataset of about `mb` MB of values, as one file and as 16 shards of the
/// same rows, in `dir`.
fn write_documents(dir: &Path, mb: usize) -> (MappedDataset, ShardedDataset, Documents) {
    let path = dir.join("documents.arrow");
    let docs = Documents::default();
    let total_docs = docs.docs_for_bytes((mb << 20) as u64);
    let mut rng = SplitMix64::new(2026);
    let shards_dir = dir.join("shards");
    let mut writer = DatasetWriter::create(&path, WriteOptions::default()).expect("create");
    let shard_options = ShardOptions::default().with_shard_rows(total_docs.div_ceil(16));
    let mut shard_writer = ShardWriter::create(&shards_dir, shard_options).expect("create");
    let mut left = total_docs;
    while left > 0 {
        let n = left.min(200);
        let part = docs.generate(&mut rng, n).expect("generate");
        writer.write(&part).expect("write");
        shard_writer.write(&part).expect("write a shard");
        left -= n;
    }
    writer.finish().expect("finish");
    shard_writer.finish().expect("finish the shards");
    let shards = ShardedDataset::open(&shards_dir).expect("open the shards");
    let file = MappedDataset::open(&path).expect("open");
    (file, shards, docs)
}

/// The baselines: a raw loop summing the mapped values, and a memcpy of the same bytes in
/// 4096-token pieces.
fn bench_baselines(g: &mut BenchmarkGroup<'_, WallTime>, file: &MappedDataset, dim: usize) {
    g.bench_function("raw loop over the mapping", |b| {
        b.iter(|| {
            let mut s = 0f32;
            for batch in file.batches() {
                let t = batch.column("tokens").expect("tokens");
                s += sum(t.typed_values::<Float32Type>().expect("f32"));
            }
            black_box(s)
        })
    });
    let mut scratch = vec![0f32; 4096 * dim];
    g.bench_function("memcpy of 4096-token pieces", |b| {
        b.iter(|| {
            for batch in file.batches() {
                let t = batch.column("tokens").expect("tokens");
                for piece in t
                    .typed_values::<Float32Type>()
                    .expect("f32")
                    .chunks(4096 * 64)
                {
                    scratch[..piece.len()].copy_from_slice(piece);
                    black_box(&scratch);
                }
            }
        })
    });
}

/// The loaders, each batch summed: in order and shuffled over the file and the shards, and
/// the windowed shuffle over the shards.
fn bench_loaders(
    g: &mut BenchmarkGroup<'_, WallTime>,
    file: &MappedDataset,
    shards: &ShardedDataset,
) {
    // Shuffle: 0 none, 1 samples, 2 windowed.
    let loaders = [
        ("loader in order", 0, LoaderSource::File(file)),
        (
            "loader in order, 16 shards",
            0,
            LoaderSource::Shards(shards),
        ),
        ("loader shuffled", 1, LoaderSource::File(file)),
        (
            "loader shuffled, 16 shards",
            1,
            LoaderSource::Shards(shards),
        ),
        (
            "loader windowed shuffle, 16 shards",
            2,
            LoaderSource::Shards(shards),
        ),
    ];
    for (name, shuffle, source) in loaders {
        let builder = Loader::builder(source).with_token_budget(4096);
        let builder = match shuffle {
            1 => builder.with_shuffle(7),
            2 => builder.with_windowed_shuffle(7, 32, 256),
            _ => builder,
        };
        let mut loader = builder.build().expect("loader");
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut s = 0f32;
                while let Some(batch) = loader.next_batch().expect("batch") {
                    let t = batch.data().column("tokens").expect("tokens");
                    s += sum(t.typed_values::<Float32Type>().expect("f32"));
                }
                black_box(s)
            })
        });
        let stats = loader.stats();
        eprintln!("{name}: {stats:?}");
    }
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("LODTENSOR_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (file, shards, docs) = write_documents(dir.path(), mb);
    let tokens: usize = file
        .batches()
        .iter()
        .map(|b| b.column("tokens").expect("tokens").elements().len())
        .sum();
    let bytes = tokens * docs.dim * 4;
    eprintln!(
        "dataset: {} documents, {tokens} tokens, {:.1} MB of values, {} record batches",
        file.num_rows(),
        bytes as f64 / 1e6,
        file.batches().len()
    );

    let mut g = c.benchmark_group("loader");
    g.sample_size(10);
    g.throughput(Throughput::Elements(tokens as u64));
    bench_baselines(&mut g, &file, docs.dim);
    bench_loaders(&mut g, &file, &shards);
    // The gather alone, against the memcpy baseline: each batch is touched, not summed.
    let mut loader = Loader::builder(&file)
        .with_token_budget(4096)
        .with_shuffle(7)
        .build()
        .expect("loader");
    g.bench_function("loader shuffled, gather only", |b| {
        b.iter(|| {
            while let Some(batch) = loader.next_batch().expect("batch") {
                black_box(batch.data().num_rows());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
