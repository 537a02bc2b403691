//! Sequence packing and mixing, against baselines measured in the same run:
//!
//! 1. tokens/s of packed batches (`with_packing`, windows of 2048 tokens, 8 per batch)
//!    against the unpacked loader on the same file (batches of a 16384-token budget), in
//!    file order and shuffled (the same seeded shuffle of the documents), each batch
//!    consumed by summing its tokens;
//! 2. padding of best fit (look-ahead 1024) against first fit within the same look-ahead and
//!    against the token-budget batcher (its batches padded to their longest document), on
//!    log-normal document lengths;
//! 3. the time to make an epoch's plan for 10 M documents (concatenate and split, best fit,
//!    and the unpacked plan, with and without balanced steps on 8 and 64 ranks, their costs
//!    in tokens and with attention), and a mixture's plan of epoch 10 against its epoch 0;
//! 5. an epoch in parts: the plan of an epoch resumed under other options (the part read
//!    replayed, the rest planned again) and of a batch-size schedule, against the plain
//!    plan, 10 M documents;
//! 4. balanced global steps simulated: on a long tail (log-normal, median 300 tokens, σ 1.0,
//!    clipped to the budget), each step's max / mean rank cost `n + w·n²` with and without
//!    balance, budgets of 4096 and 32768 tokens, 8 and 64 ranks, `w` 0 and 1/(12·4096).
//!
//! `cargo bench --bench packing`; `LODTENSOR_BENCH_MB` sets the size of (1) (default 200 MB
//! of `int32` tokens), `LODTENSOR_BENCH_DOCS` the documents of (3) (default 10 M),
//! `LODTENSOR_BENCH_TAIL_DOCS` those of (4) (default 200,000), `LODTENSOR_BENCH_PARTS` the
//! parts to run (default `1,2,3,4`), `LODTENSOR_BENCH_PLANS` the rows of (3) to time (those
//! whose name holds one of its comma-separated words; default all).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use arrow_array::types::{Int32Type, UInt8Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::loader::{
    ATTENTION_WEIGHT, Balance, Loader, LoaderBuilder, Mixture, PackMode, Packing, Schedule,
};
use lodtensor::rng::SplitMix64;
use lodtensor::{Column, Dataset, LodTensor};

/// Log-normal document lengths: median `median` tokens, σ 1 (as text corpora have).
fn log_normal(n: usize, median: f64, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed);
    let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            let (u, v) = (uniform().max(f64::MIN_POSITIVE), uniform());
            let normal = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            ((median.ln() + normal).exp() as usize).max(1)
        })
        .collect()
}

/// A file of documents of `lengths` tokens, `int32` token ids (or `uint8`, `small`).
fn write(path: &Path, lengths: &[usize], small: bool) -> MappedDataset {
    let mut w = DatasetWriter::create(path, WriteOptions::default()).expect("create");
    for chunk in lengths.chunks(1 << 16) {
        let n: usize = chunk.iter().sum();
        let tensor = if small {
            LodTensor::from_lengths::<UInt8Type>(&[chunk.to_vec()], vec![1; n], vec![])
        } else {
            let ids = (0..n).map(|i| (i % 50_000) as i32).collect();
            LodTensor::from_lengths::<Int32Type>(&[chunk.to_vec()], ids, vec![])
        };
        let ds = Dataset::try_new(vec![Column::new("tokens", tensor.expect("tensor"))]);
        w.write(&ds.expect("dataset")).expect("write");
    }
    w.finish().expect("finish");
    MappedDataset::open(path).expect("open")
}

/// The best of three runs of `f` (`LODTENSOR_BENCH_REPEAT` runs).
fn best_of_three<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best: Option<(Duration, T)> = None;
    let runs = std::env::var("LODTENSOR_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok());
    for _ in 0..runs.unwrap_or(3) {
        let start = Instant::now();
        let out = f();
        let took = start.elapsed();
        if best.as_ref().is_none_or(|(b, _)| took < *b) {
            best = Some((took, out));
        }
    }
    best.expect("three runs")
}

/// Tokens/s of epoch 0 of `builder`'s loader, each batch's tokens summed, read
/// `LODTENSOR_BENCH_REPEAT` times (3 by default) by a new loader: each batch's best time
/// over the runs, added up (a whole epoch's time moves with whatever else the machine runs;
/// a batch's best much less). The first batch, which makes the epoch's plan (timed in part
/// 3), is left out.
fn tokens_per_second(builder: impl Fn() -> LoaderBuilder<'static>) -> f64 {
    let mut best: Vec<Duration> = Vec::new();
    let mut tokens = 0;
    let runs = std::env::var("LODTENSOR_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok());
    for _ in 0..runs.unwrap_or(3) {
        let mut loader = builder().build().expect("loader");
        black_box(loader.next_batch().expect("batch"));
        let (mut n, mut sum, mut k) = (0usize, 0i64, 0);
        loop {
            let start = Instant::now();
            let Some(batch) = loader.next_batch().expect("batch") else {
                break;
            };
            let t = batch.data().column("tokens").expect("tokens");
            let values = t.typed_values::<Int32Type>().expect("int32");
            sum += values.iter().map(|&v| i64::from(v)).sum::<i64>();
            n += values.len();
            drop(batch);
            let took = start.elapsed();
            match best.get_mut(k) {
                Some(b) => *b = took.min(*b),
                None => best.push(took),
            }
            k += 1;
        }
        black_box(sum);
        tokens = n;
    }
    tokens as f64 / best.iter().sum::<Duration>().as_secs_f64()
}

fn throughput(dir: &Path) {
    let mb: usize = std::env::var("LODTENSOR_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let lengths = log_normal(mb * (1 << 20) / 4 / 490, 300.0, 1);
    let file: &'static MappedDataset =
        Box::leak(Box::new(write(&dir.join("tokens.arrow"), &lengths, false)));
    let tokens: usize = lengths.iter().sum();
    println!(
        "## 1. tokens/s, {} documents, {tokens} int32 tokens, {} record batches",
        lengths.len(),
        file.batches().len()
    );
    println!("| order | unpacked (16384-token budget) | packed (8 × 2048) | packed / unpacked |");
    println!("|---|---|---|---|");
    for shuffled in [false, true] {
        let shuffle = |b: LoaderBuilder<'static>| if shuffled { b.with_shuffle(1) } else { b };
        let plain = tokens_per_second(|| shuffle(Loader::builder(file).with_token_budget(16384)));
        let packed = tokens_per_second(|| {
            shuffle(
                Loader::builder(file)
                    .with_batch_size(8)
                    .with_packing(Packing::new(2048)),
            )
        });
        let order = if shuffled { "shuffled" } else { "file order" };
        println!(
            "| {order} | {:.1} M/s | {:.1} M/s | {:.0} % |",
            plain / 1e6,
            packed / 1e6,
            100.0 * packed / plain
        );
    }
}

/// Windows first fit needs: in order, each document (or window's worth of it) into the first
/// window it fits, within the look-ahead.
fn first_fit_windows(lengths: &[usize], cap: usize, lookahead: usize) -> usize {
    let mut total = 0;
    for chunk in lengths.chunks(lookahead) {
        let mut used: Vec<usize> = Vec::new();
        for &l in chunk {
            for first in (0..l).step_by(cap) {
                let n = (l - first).min(cap);
                match used.iter().position(|&u| u + n <= cap) {
                    Some(b) => used[b] += n,
                    None => used.push(n),
                }
            }
        }
        total += used.len();
    }
    total
}

fn padding(dir: &Path) {
    let lengths = log_normal(200_000, 300.0, 2);
    let file = write(&dir.join("padding.arrow"), &lengths, true);
    let tokens: usize = lengths.iter().sum();
    println!(
        "\n## 2. padding, 200000 log-normal documents (median 300 tokens, σ 1), look-ahead 1024"
    );
    println!("| window | best fit | first fit | token budget (padded to longest) |");
    println!("|---|---|---|---|");
    for seq in [1024, 2048, 4096, 8192] {
        let best = Loader::builder(&file)
            .with_packing(Packing::new(seq).with_mode(PackMode::best_fit(1024)))
            .build()
            .expect("loader");
        let best = best.plan(0).windows().expect("packed").padding_fraction();
        let first = 1.0 - tokens as f64 / (first_fit_windows(&lengths, seq, 1024) * seq) as f64;
        let budget = Loader::builder(&file)
            .with_token_budget(seq)
            .build()
            .expect("loader")
            .plan(0)
            .padding_ratio();
        println!(
            "| {seq} | {:.2} % | {:.2} % | {:.2} % |",
            100.0 * best,
            100.0 * first,
            100.0 * budget
        );
    }
}

fn plan_time(dir: &Path) {
    let n: usize = std::env::var("LODTENSOR_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let lengths = log_normal(n, 6.0, 3);
    let file = write(&dir.join("plan.arrow"), &lengths, true);
    println!("\n## 3. an epoch's plan, {n} documents (shuffled; plan(1), not cached)");
    println!("| plan | time |");
    println!("|---|---|");
    let chosen = |name: &str| match std::env::var("LODTENSOR_BENCH_PLANS") {
        Ok(words) => words.split(',').any(|w| name.contains(w.trim())),
        Err(_) => true,
    };
    let time = |name: &str, b: LoaderBuilder<'_>| {
        if !chosen(name) {
            return;
        }
        let loader = b.with_shuffle(1).build().expect("loader");
        let (took, _) = best_of_three(|| black_box(loader.plan(1)));
        println!("| {name} | {:.2} s |", took.as_secs_f64());
    };
    time("unpacked, batches of 32", Loader::builder(&file));
    fn ranks(b: LoaderBuilder<'_>) -> LoaderBuilder<'_> {
        b.elastic_shard(0, 8)
    }
    fn balanced(b: LoaderBuilder<'_>) -> LoaderBuilder<'_> {
        ranks(b).with_balance(Balance::Tokens)
    }
    time(
        "unpacked, batches of 32, 8 ranks",
        ranks(Loader::builder(&file)),
    );
    fn attention(b: LoaderBuilder<'_>) -> LoaderBuilder<'_> {
        b.with_balance(Balance::Attention {
            weight: ATTENTION_WEIGHT,
        })
    }
    time(
        "unpacked, batches of 32, 8 ranks, balanced",
        balanced(Loader::builder(&file)),
    );
    time(
        "unpacked, batches of 32, 8 ranks, balanced, attention",
        attention(ranks(Loader::builder(&file))),
    );
    let budget = || Loader::builder(&file).with_token_budget(256);
    time("unpacked, budget of 256 tokens, 8 ranks", ranks(budget()));
    time(
        "unpacked, budget of 256 tokens, 8 ranks, balanced",
        balanced(budget()),
    );
    time(
        "unpacked, budget of 256 tokens, 8 ranks, balanced, attention",
        attention(ranks(budget())),
    );
    fn wide(b: LoaderBuilder<'_>) -> LoaderBuilder<'_> {
        b.elastic_shard(0, 64)
    }
    time("unpacked, budget of 256 tokens, 64 ranks", wide(budget()));
    time(
        "unpacked, budget of 256 tokens, 64 ranks, balanced",
        wide(budget()).with_balance(Balance::Tokens),
    );
    time(
        "unpacked, budget of 256 tokens, 64 ranks, balanced, attention",
        attention(wide(budget())),
    );
    time(
        "concatenate and split, 2048",
        Loader::builder(&file).with_packing(Packing::new(2048)),
    );
    time(
        "best fit, 64, look-ahead 1024",
        Loader::builder(&file).with_packing(Packing::new(64).with_mode(PackMode::best_fit(1024))),
    );
    let mixture = Mixture::new(vec![(&file).into(), (&file).into()], vec![0.7, 0.3]);
    let loader = Loader::builder(&mixture)
        .with_shuffle(1)
        .build()
        .expect("loader");
    for epoch in [0, 3].into_iter().filter(|_| chosen("mixture")) {
        let (took, _) = best_of_three(|| black_box(loader.plan(epoch)));
        println!(
            "| mixture of two, epoch {epoch} ({} M samples replayed) | {:.2} s |",
            2 * n as u64 * epoch / 1_000_000,
            took.as_secs_f64()
        );
    }
}

/// (4): each step's max / mean rank cost with and without balance, on a long tail.
fn balance(dir: &Path) {
    let n: usize = std::env::var("LODTENSOR_BENCH_TAIL_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    println!("\n## 4. balanced global steps, {n} documents (median 300, σ 1.0)");
    println!(
        "| budget | ranks | w | steps | mean max/mean, unbalanced | balanced | worst, unbalanced | balanced |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for budget in [4096, 32768] {
        let lengths: Vec<usize> = log_normal(n, 300.0, 5)
            .into_iter()
            .map(|l| l.min(budget))
            .collect();
        let file = write(&dir.join(format!("tail{budget}.arrow")), &lengths, true);
        for world in [8, 64] {
            for w in [0.0, ATTENTION_WEIGHT] {
                let b = || {
                    Loader::builder(&file)
                        .with_token_budget(budget)
                        .with_shuffle(1)
                };
                let plain = b().elastic_shard(0, world).build().expect("loader");
                let balanced = b()
                    .shard(0, world)
                    .with_balance(Balance::Attention { weight: w });
                let balanced = balanced.build().expect("loader");
                let (was, is) = (
                    steps(&plain, &lengths, w, world),
                    steps(&balanced, &lengths, w, world),
                );
                println!(
                    "| {budget} | {world} | {w:.3e} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    is.len(),
                    mean(&was),
                    mean(&is),
                    was.iter().copied().fold(1.0, f64::max),
                    is.iter().copied().fold(1.0, f64::max),
                );
            }
        }
    }
}

/// Each whole step's max / mean rank cost under weight `w` (the epoch's last three steps,
/// its leftovers, left out).
fn steps(loader: &Loader, lengths: &[usize], w: f64, world: usize) -> Vec<f64> {
    let plan = loader.plan(1);
    let weight = Balance::Attention { weight: w };
    let costs: Vec<f64> = plan
        .batches()
        .map(|b| b.iter().map(|&s| weight.cost(lengths[s])).sum())
        .collect();
    let whole = (costs.len() / world).saturating_sub(3);
    (costs.chunks(world).take(whole))
        .map(|step| {
            step.iter().copied().fold(0.0, f64::max) * world as f64 / step.iter().sum::<f64>()
        })
        .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is ignored.
    let dir = tempfile::tempdir().expect("tempdir");
    let parts = std::env::var("LODTENSOR_BENCH_PARTS").unwrap_or_else(|_| "1,2,3,4".into());
    let run = |part: &str| parts.split(',').any(|p| p.trim() == part);
    if run("1") {
        throughput(dir.path());
    }
    if run("2") {
        padding(dir.path());
    }
    if run("3") {
        plan_time(dir.path());
    }
    if run("4") {
        balance(dir.path());
    }
    if run("5") {
        epoch_parts(dir.path());
    }
}

/// (5): the plan of an epoch resumed under other options, and of a schedule, against the
/// plain plan.
fn epoch_parts(dir: &Path) {
    let n: usize = std::env::var("LODTENSOR_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let lengths = log_normal(n, 6.0, 3);
    let file = write(&dir.join("parts.arrow"), &lengths, true);
    println!("\n## 5. an epoch in parts, {n} documents (shuffled; 8 elastic ranks)");
    println!("| plan | time | ÷ plain |");
    println!("|---|---|---|");
    let base = || Loader::builder(&file).with_shuffle(1).elastic_shard(0, 8);
    let mixture = Mixture::new(vec![(&file).into(), (&file).into()], vec![0.7, 0.3]);
    let mixed = || {
        Loader::builder(&mixture)
            .with_shuffle(1)
            .elastic_shard(0, 8)
    };
    // Two switches of weights in the epoch (its tokens: about twice the file's).
    let tokens: u64 = lengths.iter().map(|&n| n as u64).sum();
    let weights = [(0, vec![0.7, 0.3]), (tokens / 2, vec![0.3, 0.7])];
    let weights = weights
        .into_iter()
        .chain([(tokens, vec![0.5, 0.5])])
        .collect();
    let scheduled = Mixture::new(vec![(&file).into(), (&file).into()], Vec::new())
        .with_weight_schedule(Schedule::new(weights).expect("schedule"));
    let scheduled_mix = || {
        Loader::builder(&scheduled)
            .with_shuffle(1)
            .elastic_shard(0, 8)
    };
    let time = |loader: &Loader| best_of_three(|| black_box(loader.plan(0))).0.as_secs_f64();
    let row = |name: &str, took: f64, plain: f64| {
        println!("| {name} | {took:.2} s | {:.2} |", took / plain);
    };
    type Make<'a> = Box<dyn Fn() -> LoaderBuilder<'a> + 'a>;
    let cases: [(&str, Make<'_>, Make<'_>); 4] = [
        (
            "batches of 32, resumed at half the epoch as a budget of 4096 tokens",
            Box::new(|| base().with_batch_size(32)),
            Box::new(|| base().with_token_budget(4096)),
        ),
        (
            "packed 2048, resumed at half the epoch packed 4096",
            Box::new(|| base().with_batch_size(8).with_packing(Packing::new(2048))),
            Box::new(|| base().with_batch_size(8).with_packing(Packing::new(4096))),
        ),
        (
            "a mixture of two packed 2048, resumed at half the epoch packed 4096",
            Box::new(|| mixed().with_batch_size(8).with_packing(Packing::new(2048))),
            Box::new(|| mixed().with_batch_size(8).with_packing(Packing::new(4096))),
        ),
        (
            "the same, its weights a schedule (two switches in the epoch)",
            Box::new(|| {
                scheduled_mix()
                    .with_batch_size(8)
                    .with_packing(Packing::new(2048))
            }),
            Box::new(|| {
                scheduled_mix()
                    .with_batch_size(8)
                    .with_packing(Packing::new(4096))
            }),
        ),
    ];
    for (name, plain, other) in cases {
        let plain_time = time(&plain().build().expect("loader"));
        let mut first = plain().build().expect("loader");
        let half = first.plan(0).len() / 2 / 8 * 8;
        let middle = lodtensor::loader::Position {
            batch: half,
            ..first.next_position()
        };
        first.seek(middle).expect("seek");
        let state = first.state();
        let mut resumed = other().build().expect("loader");
        let (restore, _) = best_of_three(|| resumed.restore(black_box(&state)).expect("restore"));
        row("plain plan (the first loader's)", plain_time, plain_time);
        row(name, restore.as_secs_f64(), plain_time);
    }
    let ramp = Schedule::new(vec![(0, 8), (200_000_000, 16), (400_000_000, 32)]).expect("schedule");
    let scheduled = base()
        .with_batch_size_schedule(ramp)
        .build()
        .expect("loader");
    let plain = time(&base().with_batch_size(32).build().expect("loader"));
    row(
        "batch size ramp 8, 16, 32 (two switches in the epoch)",
        time(&scheduled),
        plain,
    );
}
