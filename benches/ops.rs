//! Pooling and padding on a synthetic 2-level dataset (documents → sentences → tokens, each
//! token an `f32[64]`), with numpy's `add.reduceat` on the same shapes measured in the same
//! run as the baseline; `sequence_softmax` (one normal `f32` score per token) and
//! `sequence_enumerate` (one `i64` id per token, windows of 4) over the same sentences,
//! beside numpy's segment softmax and sliding-window gather.
//!
//! ```text
//! LODTENSOR_BENCH_MB=200 cargo bench --bench ops      # value bytes (default 200)
//! LODTENSOR_BENCH_PYTHON=.venv/bin/python             # python with numpy (default: .venv/bin/python
//!                                                     # when it exists; "none" to skip)
//! ```
//!
//! The sentence offsets are written to `target/ops_bench_offsets.bin` (little-endian `u64`)
//! and `benches/ops_numpy.py` times `numpy.add.reduceat` over the same offsets and element
//! shape.

#[path = "../tests/common/plain.rs"]
mod support;

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use arrow_array::types::{Float32Type, Int64Type};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lodtensor::ops::{
    PoolType, from_padded, sequence_enumerate, sequence_pool_typed, sequence_softmax, to_padded,
    to_padded_nested,
};
use lodtensor::{LodTensor, Values};

const D: usize = 64;

/// xorshift64*, so that the shapes are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }

    /// A standard normal `f32` (Box-Muller): incompressible scores.
    fn normal(&mut self) -> f32 {
        let u1 = ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }
}

/// The sentences of `t` (its last level only) over one scalar per token.
fn per_token(t: &LodTensor, values: Values) -> LodTensor {
    let sentences = t.lod().drop_outer_levels(1).expect("2 levels");
    LodTensor::try_new(sentences, values).expect("one value per token")
}

/// Documents of 1..=20 sentences of 0..=40 tokens of `f32[64]`, until `bytes` of values.
fn dataset(bytes: usize) -> LodTensor {
    support::documents((1, 20), (0, 40), D, bytes as u64, 0x9e37_79b9_7f4a_7c15)
}

/// Runs `benches/ops_numpy.py` on the sentence offsets of `t`; prints its report.
fn numpy_baseline(t: &LodTensor) {
    let python = match std::env::var("LODTENSOR_BENCH_PYTHON") {
        Ok(p) if p == "none" => return,
        Ok(p) => std::path::PathBuf::from(p),
        Err(_) => match support::find_python() {
            Some(p) => p,
            None => {
                eprintln!("numpy baseline skipped: set LODTENSOR_BENCH_PYTHON");
                return;
            }
        },
    };
    let lod = t.lod();
    let n = lod.num_sequences(1).expect("2 levels");
    let mut bytes = Vec::with_capacity((n + 1) * 8);
    for j in 0..n {
        let start = lod.sequence_elements(1, j).expect("in range").start as u64;
        bytes.extend_from_slice(&start.to_le_bytes());
    }
    bytes.extend_from_slice(&(t.elements().end as u64).to_le_bytes());
    let path = Path::new("target/ops_bench_offsets.bin");
    std::fs::write(path, bytes).expect("write offsets");
    let out = Command::new(&python)
        .args(["benches/ops_numpy.py", "--offsets"])
        .arg(path)
        .args(["--dim", &D.to_string()])
        .output();
    match out {
        Ok(o) => {
            print!("{}", String::from_utf8_lossy(&o.stdout));
            eprint!("{}", String::from_utf8_lossy(&o.stderr));
        }
        Err(e) => eprintln!("numpy baseline failed to start ({}): {e}", python.display()),
    }
}

fn bench(c: &mut Criterion) {
    let mb: usize = std::env::var("LODTENSOR_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let t = dataset(mb << 20);
    let bytes = (t.elements().len() * D * 4) as u64;
    println!(
        "dataset: {} documents, {} sentences, {} tokens of f32[{D}], {:.1} MiB",
        t.num_rows(),
        t.lod().num_sequences(1).expect("2 levels"),
        t.elements().len(),
        bytes as f64 / (1 << 20) as f64
    );
    numpy_baseline(&t);
    bench_pool(c, &t, bytes);
    bench_pad(c, &t, bytes);
    bench_scalar_ops(c, &t);
}

/// `sequence_pool` of the sentences and documents, against a bare loop.
fn bench_pool(c: &mut Criterion, t: &LodTensor, bytes: u64) {
    let mut g = c.benchmark_group("pool");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes(bytes));
    for (name, pool) in [
        ("sum", PoolType::Sum),
        ("average", PoolType::Average),
        ("max", PoolType::Max),
        ("last", PoolType::Last),
    ] {
        g.bench_function(format!("sentences_{name}"), |b| {
            b.iter(|| sequence_pool_typed::<Float32Type>(black_box(t), 1, pool, 0.0).expect("pool"))
        });
    }
    g.bench_function("documents_sum", |b| {
        b.iter(|| {
            sequence_pool_typed::<Float32Type>(black_box(t), 0, PoolType::Sum, 0.0).expect("pool")
        })
    });
    // The same sum as a bare loop over precomputed offsets: the floor for this layout.
    let items = t.typed_values::<Float32Type>().expect("f32");
    let lod = t.lod();
    let offsets: Vec<usize> = (0..lod.num_sequences(1).expect("2 levels"))
        .map(|j| lod.sequence_elements(1, j).expect("in range").start)
        .chain([t.elements().end])
        .collect();
    g.bench_function("sentences_sum_raw_loop", |b| {
        b.iter(|| {
            let mut out = vec![0f32; (offsets.len() - 1) * D];
            for (dst, w) in out.chunks_exact_mut(D).zip(offsets.windows(2)) {
                for row in items[w[0] * D..w[1] * D].chunks_exact(D) {
                    for (a, &v) in dst.iter_mut().zip(row) {
                        *a += v;
                    }
                }
            }
            black_box(out)
        })
    });
    g.finish();
}

/// Padding the sentences and back, and the documents' nested padding.
fn bench_pad(c: &mut Criterion, t: &LodTensor, bytes: u64) {
    let pad = Values::from_vec::<Float32Type>(vec![0.0], vec![]).expect("pad");
    let mut g = c.benchmark_group("pad");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes(bytes));
    g.bench_function("sentences_to_padded", |b| {
        b.iter(|| to_padded(black_box(t), 1, &pad, None).expect("pad"))
    });
    let padded = to_padded(t, 1, &pad, None).expect("pad");
    println!(
        "padded sentences: shape {:?} ({:.1} MiB)",
        padded.shape,
        (padded.values.items().len() * 4) as f64 / (1 << 20) as f64
    );
    g.bench_function("sentences_from_padded", |b| {
        b.iter(|| from_padded(black_box(&padded.values), &padded.lengths).expect("unpad"))
    });
    drop(padded);
    // Nested padding multiplies the size by max_sents · max_tokens / tokens per document:
    // measured on the first tenth of the documents.
    let tenth = t.slice_rows(0..t.num_rows() / 10).expect("rows");
    g.throughput(Throughput::Bytes((tenth.elements().len() * D * 4) as u64));
    g.bench_function("documents_to_padded_nested_tenth", |b| {
        b.iter(|| to_padded_nested(black_box(&tenth), 0, &pad).expect("pad"))
    });
    g.finish();
}

/// `sequence_softmax` and `sequence_enumerate` over the sentences, one scalar per token.
fn bench_scalar_ops(c: &mut Criterion, t: &LodTensor) {
    let tokens = t.elements().len();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let scores = (0..tokens).map(|_| rng.normal()).collect();
    let scores = per_token(
        t,
        Values::from_vec::<Float32Type>(scores, vec![]).expect("f32"),
    );
    let mut g = c.benchmark_group("softmax");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes((tokens * 4) as u64));
    g.bench_function("sentences_normal_f32", |b| {
        b.iter(|| sequence_softmax(black_box(&scores)).expect("softmax"))
    });
    g.finish();
    best_of_10("sequence_softmax (float32)", tokens * 4, || {
        sequence_softmax(black_box(&scores)).expect("softmax")
    });
    let ids = (0..tokens).map(|_| rng.below(30_000) as i64).collect();
    let ids = per_token(t, Values::from_vec::<Int64Type>(ids, vec![]).expect("i64"));
    let mut g = c.benchmark_group("enumerate");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes((tokens * 8) as u64));
    g.bench_function("sentences_win4_i64", |b| {
        b.iter(|| sequence_enumerate(black_box(&ids), 4, 0).expect("enumerate"))
    });
    g.finish();
    best_of_10("sequence_enumerate (int64, win 4)", tokens * 8, || {
        sequence_enumerate(black_box(&ids), 4, 0).expect("enumerate")
    });
}

/// Prints the best of 10 runs of `f`, timed as `benches/ops_numpy.py` times numpy (under a
/// loaded machine criterion's mean and numpy's best differ by more than the ops do).
fn best_of_10<R>(name: &str, bytes: usize, f: impl Fn() -> R) {
    let best = (0..10)
        .map(|_| {
            let start = std::time::Instant::now();
            black_box(f());
            start.elapsed()
        })
        .min()
        .expect("ten runs");
    println!(
        "lodtensor {name}: {:.2} ms, {:.2} GiB/s (best of 10)",
        best.as_secs_f64() * 1e3,
        bytes as f64 / best.as_secs_f64() / (1u64 << 30) as f64
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
