//! Prints the batches the Rust `Loader` makes, one JSON line per batch, for the Python
//! package's tests to compare with: `{"epoch", "index", "samples", "tokens"}`.
//!
//! ```sh
//! cargo run --example loader_batches -- DATA.arrow '{"token_budget": 64, "shuffle": 3}' 2
//! ```
//!
//! Options (all optional): `batch_size`, `token_budget`, `length_column` with `level`,
//! `shuffle` (the seed), `chunk_rows` (with `window`: the windowed shuffle), `buckets` (a
//! list of bounds) or `quantile_buckets`, `drop_last`, `rank` with `world_size` (and
//! `elastic`: ranks taking turns). `index` is the batch's index in the epoch's plan.

use lodtensor::Loader;
use lodtensor::MappedDataset;
use serde_json::{Value, json};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, options, epochs] = args.as_slice() else {
        return Err("usage: loader_batches FILE OPTIONS_JSON EPOCHS".into());
    };
    let o: Value = serde_json::from_str(options)?;
    let int = |key: &str| o[key].as_u64().map(|v| v as usize);
    let file = MappedDataset::open(path)?;
    let mut b = Loader::builder(&file);
    if let Some(n) = int("batch_size") {
        b = b.with_batch_size(n);
    }
    if let Some(t) = int("token_budget") {
        b = b.with_token_budget(t);
    }
    if let (Some(c), Some(l)) = (o["length_column"].as_str(), int("level")) {
        b = b.with_length_column(c, l);
    }
    if let Some(seed) = o["shuffle"].as_u64() {
        b = match (int("chunk_rows"), int("window")) {
            (Some(rows), Some(window)) => b.with_windowed_shuffle(seed, rows, window),
            (Some(rows), None) => b.with_chunk_shuffle(seed, rows),
            _ => b.with_shuffle(seed),
        };
    }
    if let Some(bounds) = o["buckets"].as_array() {
        b = b.with_buckets(
            bounds
                .iter()
                .filter_map(|v| v.as_u64())
                .map(|v| v as usize)
                .collect(),
        );
    }
    if let Some(n) = int("quantile_buckets") {
        b = b.with_quantile_buckets(n);
    }
    if let (Some(rank), Some(world)) = (int("rank"), int("world_size")) {
        b = match o["elastic"].as_bool() {
            Some(true) => b.elastic_shard(rank, world),
            _ => b.shard(rank, world),
        };
    }
    let mut loader = b
        .with_drop_last(o["drop_last"].as_bool() == Some(true))
        .build()?;
    for epoch in 0..epochs.parse::<u64>()? {
        loader.set_epoch(epoch);
        while let Some(batch) = loader.next_batch()? {
            let line = json!({
                "epoch": epoch,
                "index": batch.index(),
                "samples": batch.samples(),
                "tokens": batch.tokens(),
            });
            println!("{line}");
        }
    }
    Ok(())
}
