//! What `shard(rank, world_size)` with `drop_last` leaves out of an epoch: tokens and
//! oversize samples no rank reads, next to what a single rank leaves out (each bucket's
//! incomplete last batch), over the synthetic documents.
//!
//! ```sh
//! cargo run --release --example drop_last_loss -- [DOCS] [BUDGET] [SEED]   # 2000 1500 42
//! ```

use lodtensor::rng::SplitMix64;
use lodtensor::synthetic::Documents;
use lodtensor::{DatasetWriter, Loader, MappedDataset, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let arg = |i: usize, default: usize| args.get(i).copied().unwrap_or(default);
    let (docs, budget, seed) = (arg(0, 2000), arg(1, 1500), arg(2, 42) as u64);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("docs.arrow");
    let data = Documents {
        dim: 1,
        ..Documents::default()
    }
    .generate(&mut SplitMix64::new(seed), docs)?;
    let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    w.write(&data)?;
    w.finish()?;
    let file = MappedDataset::open(&path)?;
    let loader = Loader::builder(&file).build()?;
    let lengths: Vec<usize> = loader
        .sample_lengths()
        .iter()
        .map(|&l| l as usize)
        .collect();
    let total: usize = lengths.iter().sum();
    println!("{docs} documents (seed {seed}), {total} tokens, token budget {budget}");
    println!(
        "per epoch: tokens left out (budgets' worth), oversize samples left out, steps per rank"
    );
    for shuffle in [None, Some(seed)] {
        for world in [1, 2, 4] {
            let order = shuffle.map_or("file order".into(), |s| format!("shuffle {s}"));
            print!("{order:<12} world {world}:");
            for epoch in 0..EPOCHS {
                let (tokens, oversize, steps) =
                    left_out(&file, &lengths, budget, shuffle, world, epoch)?;
                let worth = tokens as f64 / budget as f64;
                print!("  {tokens} ({worth:.1}), {oversize}, {steps}");
            }
            println!();
        }
    }
    Ok(())
}

/// Epochs of each row (file order makes the same plan every epoch).
const EPOCHS: u64 = 3;

/// Tokens and oversize samples of `epoch` no rank reads, and the steps of rank 0.
fn left_out(
    file: &MappedDataset,
    lengths: &[usize],
    budget: usize,
    shuffle: Option<u64>,
    world: usize,
    epoch: u64,
) -> lodtensor::Result<(usize, usize, usize)> {
    let mut read = vec![false; lengths.len()];
    let mut steps = Vec::new();
    for rank in 0..world {
        let mut b = Loader::builder(file)
            .with_token_budget(budget)
            .with_drop_last(true);
        if let Some(seed) = shuffle {
            b = b.with_shuffle(seed);
        }
        let plan = b.shard(rank, world).build()?.plan(epoch);
        for &s in plan.samples() {
            read[s] = true;
        }
        steps.push(plan.len());
    }
    assert!(
        steps.iter().all(|&s| s == steps[0]),
        "steps per rank: {steps:?}"
    );
    let unread = (0..lengths.len()).filter(|&s| !read[s]);
    let tokens = unread.clone().map(|s| lengths[s]).sum();
    let oversize = unread.filter(|&s| lengths[s] > budget).count();
    Ok((tokens, oversize, steps[0]))
}
