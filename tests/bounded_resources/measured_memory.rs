//! Planning by lengths without the lengths index reads every shard's footer and record
//! batch heads, but holds them for a few hundred shards at a time: what the build keeps
//! per shard above that is the lengths, not the metadata read.

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Loader, rng::SplitMix64, synthetic::Documents};

use crate::{alone, peak_of};

/// A dataset of `shards` shards of one small document each, its manifest without the
/// lengths index (as a dataset written before it).
fn unindexed(dir: &std::path::Path, shards: usize) {
    let spec = Documents {
        sentences: (1, 3),
        tokens: (1, 4),
        dim: 2,
    };
    let docs = spec.generate(&mut SplitMix64::new(7), shards).unwrap();
    let options = ShardOptions::default().with_shard_rows(1);
    let mut writer = ShardWriter::create(dir, options).unwrap();
    writer.write(&docs).unwrap();
    writer.finish().unwrap();
    let manifest = dir.join("_lodtensor.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("index");
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
}

/// The peak of the bytes allocated while a token-budget loader over `shards` shards is
/// built (every shard's metadata read).
fn build_peak(shards: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    unindexed(dir.path(), shards);
    let data = ShardedDataset::open(dir.path()).unwrap();
    let mut loader = None;
    let peak = peak_of(|| loader = Some(Loader::builder(&data).with_token_budget(64).build()));
    let mut loader = loader.unwrap().unwrap();
    assert!(loader.next_batch().unwrap().is_some());
    peak
}

#[test]
fn an_unindexed_plan_holds_few_shards_metadata_at_once() {
    alone(|| {
        let (small, large) = (build_peak(300), build_peak(1500));
        // Without the metadata released, each shard added its footer (a schema) and its
        // record batch's head (at least 1 KiB): several KiB a shard.
        let per_shard = large.saturating_sub(small) / 1200;
        assert!(
            per_shard <= 256,
            "{per_shard} bytes a shard ({small} bytes at 300 shards, {large} at 1500)"
        );
    });
}
