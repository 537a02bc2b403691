//! Storage benchmarks on the synthetic dataset: open, random sequence views, full scan —
//! each next to a baseline measured in the same run (arrow-rs's own validated
//! `FileDecoder`, raw offset arithmetic, a raw scan of the mapped floats), then the same
//! operations in pyarrow on the same file when a Python with pyarrow is available.
//!
//! `cargo bench --bench storage`; `LODTENSOR_BENCH_DOCS` sets the size (default 4400
//! documents, about 1 GiB of values).

#[path = "../bench/src/baseline.rs"]
mod baseline;
#[path = "../bench/src/measure.rs"]
#[allow(dead_code)] // the bench times pairs only
mod measure;

#[path = "../tests/common/plain.rs"]
mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_array::types::Float32Type;
use baseline::{Sum, random_pairs, sentences_and_floats};
use criterion::{Criterion, criterion_group};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{rng::SplitMix64, synthetic::Documents};
use measure::bests;

fn docs() -> usize {
    std::env::var("LODTENSOR_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4400)
}

/// The benchmark file of `docs` documents of `dim`-float tokens, made once: in 64 MiB
/// record batches, or in one.
fn dataset_file(docs: usize, dim: usize, one_batch: bool) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let suffix = if one_batch { "-1batch" } else { "" };
    let path = dir.join(format!("documents-{docs}-{dim}{suffix}.arrow"));
    if !path.exists() {
        let shape = Documents {
            dim,
            ..Documents::default()
        };
        let mut rng = SplitMix64::new(42);
        let options = if one_batch {
            WriteOptions::default().with_batch_bytes(usize::MAX)
        } else {
            WriteOptions::default()
        };
        let mut w = DatasetWriter::create(&path, options).unwrap();
        let mut done = 0;
        while done < docs {
            let n = 200.min(docs - done);
            w.write(&shape.generate(&mut rng, n).unwrap()).unwrap();
            done += n;
        }
        w.finish().unwrap();
    }
    path
}

/// Random access to each batch's sentences.
fn sentences(file: &MappedDataset) -> Vec<lodtensor::Sequences<'_, f32>> {
    file.batches()
        .iter()
        .map(|b| {
            b.column("tokens")
                .unwrap()
                .sequences::<Float32Type>(1)
                .unwrap()
        })
        .collect()
}

/// 4096 random (batch, sentence) pairs.
fn random_sentences(file: &MappedDataset) -> Vec<(usize, usize)> {
    let counts: Vec<usize> = sentences(file).iter().map(|s| s.len()).collect();
    random_pairs(&counts, 4096, 7)
}

fn scan(file: &MappedDataset) -> f32 {
    let mut total = Sum::default();
    for b in file.batches() {
        total.add(
            b.column("tokens")
                .unwrap()
                .typed_values::<Float32Type>()
                .unwrap(),
        );
    }
    total.value()
}

/// The same sum over the float buffers arrow-rs decoded, with no LoD involved.
fn raw_scan(batches: &[RecordBatch]) -> f32 {
    let mut total = Sum::default();
    for (_, floats) in sentences_and_floats(batches) {
        total.add(floats);
    }
    total.value()
}

/// arrow-rs's validated open of `path`: the baseline.
fn arrow_open(path: &Path) -> Vec<RecordBatch> {
    baseline::arrow_open(path).unwrap()
}

fn benches(c: &mut Criterion) {
    let path = dataset_file(docs(), 64, false);
    let file = MappedDataset::open(&path).unwrap();
    let mut g = c.benchmark_group("open");
    g.bench_function("lodtensor (validated)", |b| {
        b.iter(|| MappedDataset::open(&path).unwrap())
    });
    g.bench_function("arrow-rs FileDecoder (validated)", |b| {
        b.iter(|| arrow_open(&path))
    });
    g.bench_function("lodtensor (trusted)", |b| {
        // SAFETY: the benchmark file was written by this crate and is not modified.
        b.iter(|| unsafe { MappedDataset::open_trusted(&path) }.unwrap())
    });
    // About the same sequences in one batch each, 4× larger elements: opening must not grow.
    for dim in [64, 256] {
        let one_batch = dataset_file(docs() / 4, dim, true);
        g.bench_function(
            format!("lodtensor (validated), 1/4 docs, one batch, f32[{dim}]"),
            |b| b.iter(|| MappedDataset::open(&one_batch).unwrap()),
        );
    }
    g.finish();

    let picks = random_sentences(&file);
    let tensors: Vec<_> = file
        .batches()
        .iter()
        .map(|b| b.column("tokens").unwrap().clone())
        .collect();
    let mut g = c.benchmark_group("random sentence view");
    g.bench_function("lodtensor sequence_values", |b| {
        let mut i = 0;
        b.iter(|| {
            let (batch, j) = picks[i & 4095];
            i += 1;
            black_box(tensors[batch].sequence_values::<Float32Type>(1, j).unwrap())
        })
    });
    let sequences = sentences(&file);
    g.bench_function("lodtensor sequences().get", |b| {
        let mut i = 0;
        b.iter(|| {
            let (batch, j) = picks[i & 4095];
            i += 1;
            black_box(sequences[batch].get(j).unwrap())
        })
    });
    let batches = arrow_open(&path);
    let raw = sentences_and_floats(&batches);
    g.bench_function("raw offset arithmetic", |b| {
        let mut i = 0;
        b.iter(|| {
            let (batch, j) = picks[i & 4095];
            i += 1;
            let (offsets, floats) = raw[batch];
            let (s, e) = (offsets[j] as usize, offsets[j + 1] as usize);
            black_box(&floats[s * 64..e * 64])
        })
    });
    g.finish();

    let mut g = c.benchmark_group("full scan");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("lodtensor typed_values", |b| b.iter(|| scan(&file)));
    g.bench_function("raw mapped floats", |b| b.iter(|| raw_scan(&batches)));
    g.finish();
}

criterion_group!(storage, benches);

fn row(operation: &str, ours: String, baseline: &str, theirs: String, ratio: f64) {
    println!("| {operation} | {ours} | {baseline}: {theirs} | {ratio:.2}× |");
}

/// One table, every figure measured in this process (and pyarrow's in a child process) on
/// the same file; ratios above 1 mean lodtensor is faster.
fn summary() {
    let path = dataset_file(docs(), 64, false);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let file = MappedDataset::open(&path).unwrap();
    let values: usize = file
        .batches()
        .iter()
        .map(|b| {
            b.column("tokens")
                .unwrap()
                .typed_values::<Float32Type>()
                .unwrap()
                .len()
                * 4
        })
        .sum();
    println!(
        "\nfile: {} ({:.0} MB, {} batches, {:.0} MB of values)\n",
        path.display(),
        bytes as f64 / 1e6,
        file.batches().len(),
        values as f64 / 1e6
    );
    println!("| operation | lodtensor | baseline | ratio |");
    println!("|---|---|---|---|");
    let open = open_rows(&path);
    let (view, scan) = view_and_scan_rows(&file, &path, values);
    pyarrow_rows(&path, values, open, view, scan);
}

/// The open rows: against arrow-rs, and flat in the size of the values. Returns our open
/// time in seconds.
fn open_rows(path: &Path) -> f64 {
    let (ours, arrow) = bests(
        51,
        || drop(MappedDataset::open(path).unwrap()),
        || drop(arrow_open(path)),
    );
    row(
        "open, validated",
        format!("{:.3} ms", ours * 1e3),
        "arrow-rs FileDecoder, validated",
        format!("{:.3} ms", arrow * 1e3),
        arrow / ours,
    );

    // Opening must not grow with the values: a quarter of the documents (so about the
    // same number of sequences in both files) with 64- and with 256-float tokens, each
    // file in one record batch so that only the values differ.
    let (narrow, wide) = (
        dataset_file(docs() / 4, 64, true),
        dataset_file(docs() / 4, 256, true),
    );
    let (small, large) = bests(
        51,
        || drop(MappedDataset::open(&narrow).unwrap()),
        || drop(MappedDataset::open(&wide).unwrap()),
    );
    row(
        "open, validated, one batch, f32[256] tokens (1/4 of the documents)",
        format!("{:.3} ms", large * 1e3),
        "the same with f32[64] tokens",
        format!("{:.3} ms", small * 1e3),
        small / large,
    );
    ours
}

/// The random sentence view and the full scan rows, against raw arithmetic over arrow-rs
/// buffers. Returns the view's nanoseconds and the scan's seconds.
fn view_and_scan_rows(file: &MappedDataset, path: &Path, values: usize) -> (f64, f64) {
    let picks = random_sentences(file);
    let sequences = sentences(file);
    let batches = arrow_open(path);
    let raw = sentences_and_floats(&batches);
    let lookups = 1 << 22;
    let (view, arith) = bests(
        7,
        || {
            for i in 0..lookups {
                let (b, j) = picks[i & 4095];
                black_box(sequences[b].get(j));
            }
        },
        || {
            for i in 0..lookups {
                let (b, j) = picks[i & 4095];
                let (offsets, floats) = raw[b];
                black_box(&floats[offsets[j] as usize * 64..offsets[j + 1] as usize * 64]);
            }
        },
    );
    let (view, arith) = (view * 1e9 / lookups as f64, arith * 1e9 / lookups as f64);
    row(
        "random sentence view (`Sequences::get`)",
        format!("{view:.1} ns"),
        "raw offset arithmetic",
        format!("{arith:.1} ns"),
        arith / view,
    );
    let (scan_ours, scan_raw) = bests(
        5,
        || {
            black_box(scan(file));
        },
        || {
            black_box(raw_scan(&batches));
        },
    );
    let gbs = |t: f64| values as f64 / 1e9 / t;
    row(
        "full scan (sum of the mapped f32)",
        format!("{:.1} GB/s", gbs(scan_ours)),
        "raw scan of arrow-rs buffers",
        format!("{:.1} GB/s", gbs(scan_raw)),
        scan_raw / scan_ours,
    );
    (view, scan_ours)
}

/// The same figures from pyarrow and numpy in a child process, beside ours (`values`
/// bytes scanned): the open time and the scan in seconds, the view in nanoseconds.
fn pyarrow_rows(path: &Path, values: usize, ours: f64, view: f64, scan_ours: f64) {
    let figures = match support::script_figures("storage_pyarrow.py", &[path.as_os_str()]) {
        Ok(figures) => figures,
        Err(why) => {
            println!("\n(pyarrow rows skipped: {why})");
            return;
        }
    };
    let figure = |key: &str| figures.get(key).copied().unwrap_or(f64::NAN);
    let open_ms = figure("open_read_all_ms");
    row(
        "open, validated",
        format!("{:.3} ms", ours * 1e3),
        "pyarrow memory_map + open_file + read_all",
        format!("{open_ms:.3} ms"),
        open_ms / (ours * 1e3),
    );
    let view_ns = figure("random_sentence_view_ns");
    row(
        "random sentence view (`Sequences::get`)",
        format!("{view:.1} ns"),
        "pyarrow offsets + numpy slice",
        format!("{view_ns:.1} ns"),
        view_ns / view,
    );
    let scan_ms = figure("full_scan_ms");
    row(
        "full scan (sum of the mapped f32)",
        format!("{:.1} GB/s", values as f64 / 1e9 / scan_ours),
        "numpy sum over pyarrow buffers",
        format!("{:.1} GB/s", values as f64 / 1e6 / scan_ms),
        scan_ms / 1e3 / scan_ours,
    );
}

fn main() {
    storage();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
