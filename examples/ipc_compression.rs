//! Size and open + full-scan time of compressed Arrow IPC files (zstd, lz4) against the
//! uncompressed file, on the synthetic documents (`f32[64]` tokens) and on int32 token ids:
//! `cargo run --release --example ipc_compression [MIB]` (default 256 MiB of values each).
//!
//! Token ids are drawn from a Zipf-like law over a 32,000-word vocabulary (id `⌊32000^u⌋`,
//! `u` uniform), in documents of 1–30 sentences of 1–120 tokens. The scan reads every value
//! of every column once (a sum), after `MappedDataset::open`; best of 5, page cache warm.

use std::time::Instant;

use arrow_array::types::{Float32Type, Int32Type, Int64Type};
use lodtensor::rng::SplitMix64;
use lodtensor::synthetic::Documents;
use lodtensor::{
    Column, Dataset, DatasetWriter, IpcCompression, LodTensor, MappedDataset, WriteOptions,
};

/// `docs` documents of int32 token ids and an int64 label.
fn token_ids(rng: &mut SplitMix64, docs: usize) -> lodtensor::Result<Dataset> {
    let (mut sentences, mut tokens) = (Vec::new(), Vec::new());
    for _ in 0..docs {
        let n = rng.range(1, 30);
        sentences.push(n);
        tokens.extend((0..n).map(|_| rng.range(1, 120)));
    }
    let total: usize = tokens.iter().sum();
    let ids: Vec<i32> = (0..total)
        .map(|_| 32000f32.powf(rng.unit()) as i32 - 1)
        .collect();
    let t = LodTensor::from_lengths::<Int32Type>(&[sentences, tokens], ids, vec![])?;
    let label = LodTensor::from_lengths::<Int64Type>(&[], (0..docs as i64).collect(), vec![])?;
    Dataset::try_new(vec![Column::new("ids", t), Column::new("label", label)])
}

/// Open + a sum over every value; the best of 5, in ms.
fn open_and_scan(path: &std::path::Path) -> lodtensor::Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let file = MappedDataset::open(path)?;
        let mut sum = 0f64;
        for batch in file.batches() {
            for column in batch.columns() {
                let t = column.tensor()?;
                if let Ok(v) = t.typed_values::<Float32Type>() {
                    sum += v.iter().map(|&x| x as f64).sum::<f64>();
                } else if let Ok(v) = t.typed_values::<Int32Type>() {
                    sum += v.iter().map(|&x| x as f64).sum::<f64>();
                } else if let Ok(v) = t.typed_values::<Int64Type>() {
                    sum += v.iter().map(|&x| x as f64).sum::<f64>();
                }
            }
        }
        std::hint::black_box(sum);
        best = best.min(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(best)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: u64 = std::env::args().nth(1).map_or(Ok(256), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let mut rng = SplitMix64::new(7);
    let docs = Documents::default();
    let float_docs = docs.docs_for_bytes(mib << 20);
    // Token ids: 4 bytes per token, 15.5 × 60.5 tokens per document.
    let id_docs = ((mib << 20) as f64 / (15.5 * 60.5 * 4.0)).round() as usize;
    let sets = [
        ("documents f32[64]", docs.generate(&mut rng, float_docs)?),
        ("token ids int32", token_ids(&mut rng, id_docs)?),
    ];
    println!("| dataset | codec | bytes | ratio | open + scan | vs uncompressed |");
    println!("|---|---|---|---|---|---|");
    for (name, ds) in &sets {
        let mut base = (0u64, 0f64);
        for codec in [
            IpcCompression::None,
            IpcCompression::Zstd,
            IpcCompression::Lz4,
        ] {
            let path = dir.path().join(format!("{codec:?}.arrow"));
            let mut w =
                DatasetWriter::create(&path, WriteOptions::default().with_compression(codec))?;
            w.write(ds)?;
            let bytes = w.finish()?.bytes;
            let ms = open_and_scan(&path)?;
            if codec == IpcCompression::None {
                base = (bytes, ms);
            }
            println!(
                "| {name} | {codec:?} | {bytes} | {:.2}× | {ms:.1} ms | {:.1}× |",
                base.0 as f64 / bytes as f64,
                ms / base.1
            );
        }
    }
    Ok(())
}
