//! Opening a sharded dataset of 1,000 shards: `ShardedDataset::open` in this process and
//! `lodtensor info DIR` as a whole process, each for shards of about 1.5 kB and of about
//! 1 MB (the open cost must be the manifest's, flat in the shards' size), next to what a
//! user would run instead, measured in the same run: opening every shard eagerly
//! (`MappedDataset::open` of each), and pyarrow's `pyarrow.dataset.dataset(DIR,
//! format="ipc")` (discovery, then `count_rows()`) in process and as a whole `python -c`.
//!
//! `cargo bench --bench shards_open`; `LODTENSOR_BENCH_SHARD_DOCS` sets the documents per
//! large shard (default 4: about 1 MB each, 1 GB for the 1,000 shards, written once under
//! `target/bench-data/`).

#[path = "../../bench/src/measure.rs"]
#[allow(dead_code)] // the bench times pairs only
mod measure;

#[path = "../../tests/common/plain.rs"]
mod support;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, criterion_group};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::shards::{MANIFEST_NAME, ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{rng::SplitMix64, synthetic::Documents};
use measure::bests;

/// The number of shards of both datasets.
const SHARDS: usize = 1000;

fn docs_per_large_shard() -> usize {
    std::env::var("LODTENSOR_BENCH_SHARD_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

/// A dataset of `SHARDS` shards of `docs` documents of `shape` each, written once.
fn dataset(name: &str, shape: &Documents, docs: usize) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/bench-data")
        .join(format!("shards-{SHARDS}-{name}-{docs}"));
    if dir.join(MANIFEST_NAME).exists() {
        return dir;
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let options = ShardOptions::default().with_shard_rows(docs);
    let mut writer = ShardWriter::create(&dir, options).unwrap();
    let mut rng = SplitMix64::new(42);
    for _ in 0..SHARDS {
        writer
            .write(&shape.generate(&mut rng, docs).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
    dir
}

/// Shards of one tiny document (1–2 sentences of 1–4 `f32[4]` tokens): about 1.5 kB each.
fn tiny() -> PathBuf {
    let shape = Documents {
        sentences: (1, 2),
        tokens: (1, 4),
        dim: 4,
    };
    dataset("tiny", &shape, 1)
}

/// Shards of the default documents (1–30 sentences of 1–120 `f32[64]` tokens).
fn large() -> PathBuf {
    dataset("large", &Documents::default(), docs_per_large_shard())
}

fn shard_bytes(dir: &Path) -> f64 {
    let data = ShardedDataset::open(dir).unwrap();
    let total: u64 = data.manifest().shards.iter().map(|s| s.bytes).sum();
    total as f64 / data.num_shards() as f64
}

/// Maps and validates every shard, as a reader without a manifest would.
fn open_eagerly(dir: &Path) -> Vec<MappedDataset> {
    let data = ShardedDataset::open(dir).unwrap();
    let files = data.manifest().shards.iter();
    files
        .map(|s| MappedDataset::open(dir.join(&s.file)).unwrap())
        .collect()
}

fn info(dir: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_lodtensor"))
        .arg("info")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn benches(c: &mut Criterion) {
    let (tiny, large) = (tiny(), large());
    let mut g = c.benchmark_group("open 1000 shards");
    g.sample_size(20);
    for (name, dir) in [("tiny shards", &tiny), ("large shards", &large)] {
        g.bench_function(format!("ShardedDataset::open, {name}"), |b| {
            b.iter(|| ShardedDataset::open(dir).unwrap())
        });
        g.bench_function(format!("lodtensor info (process), {name}"), |b| {
            b.iter(|| info(dir))
        });
    }
    g.finish();
}

criterion_group!(shards_open, benches);

fn row(operation: &str, ours: f64, baseline: &str, theirs: f64) {
    println!(
        "| {operation} | {:.2} ms | {baseline}: {:.2} ms | {:.2}× |",
        ours * 1e3,
        theirs * 1e3,
        theirs / ours
    );
}

/// One table, every figure measured in this run; ratios above 1 mean lodtensor is faster.
fn summary() {
    let (tiny, large) = (tiny(), large());
    println!(
        "\n{SHARDS} shards each: tiny {} ({:.0} bytes a shard), large {} ({:.0} bytes a shard)\n",
        tiny.display(),
        shard_bytes(&tiny),
        large.display(),
        shard_bytes(&large)
    );
    println!("| operation (1,000 shards) | lodtensor | baseline | ratio |");
    println!("|---|---|---|---|");
    let open = |dir: &Path| drop(ShardedDataset::open(dir).unwrap());
    let (small, big) = bests(31, || open(&tiny), || open(&large));
    row(
        "`ShardedDataset::open`, large shards",
        big,
        "the same, tiny shards",
        small,
    );
    for (name, dir) in [("tiny", &tiny), ("large", &large)] {
        let (lazy, eager) = bests(5, || open(dir), || drop(open_eagerly(dir)));
        row(
            &format!("`ShardedDataset::open`, {name} shards"),
            lazy,
            "`MappedDataset::open` of every shard",
            eager,
        );
    }
    let (small, big) = bests(31, || info(&tiny), || info(&large));
    row(
        "`lodtensor info DIR` (process), large shards",
        big,
        "the same, tiny shards",
        small,
    );
    python_rows(&tiny, &large);
}

/// pyarrow's dataset discovery and row count on the same directories, in process (a
/// child Python times itself) and as whole `python -c` processes.
fn python_rows(tiny: &Path, large: &Path) {
    let figures = match support::script_figures(
        "shards_open_pyarrow.py",
        &[tiny.as_os_str(), large.as_os_str()],
    ) {
        Ok(figures) => figures,
        Err(why) => {
            println!("\n(pyarrow rows skipped: {why})");
            return;
        }
    };
    let figure = |key: &str| figures.get(key).map_or(f64::NAN, |ms| ms / 1e3);
    let python = support::find_python().expect("found for the script");
    for (name, dir) in [("tiny", tiny), ("large", large)] {
        let open = || {
            drop(ShardedDataset::open(dir).unwrap());
            Ok::<_, Infallible>(())
        };
        let Ok(ours) = measure::repeat(31, open).map(|s| s.best());
        row(
            &format!("`ShardedDataset::open`, {name} shards"),
            ours,
            "pyarrow `ds.dataset(DIR, format=\"ipc\")`",
            figure(&format!("{name}_discover_ms")),
        );
        row(
            &format!("`ShardedDataset::open` (rows from the manifest), {name} shards"),
            ours,
            "pyarrow `ds.dataset(…).count_rows()`",
            figure(&format!("{name}_count_rows_ms")),
        );
        let count = format!(
            "import pyarrow.dataset as ds; print(ds.dataset({:?}, format='ipc').count_rows())",
            dir.display().to_string()
        );
        let (ours, theirs) = bests(
            5,
            || info(dir),
            || {
                let out = Command::new(&python).args(["-c", &count]).output().unwrap();
                assert!(out.status.success(), "{out:?}");
            },
        );
        row(
            &format!("`lodtensor info DIR` (process), {name} shards"),
            ours,
            "`python -c` pyarrow `count_rows()` (process)",
            theirs,
        );
    }
}

fn main() {
    shards_open();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
