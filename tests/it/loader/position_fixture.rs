//! Positions saved by the crate before the loader's storage became a trait
//! (`tests/fixtures/position/`, made at commit bb7cd72 by its `make_fixture.rs`) resume in
//! today's loaders with the batches that build gave next.

use std::path::{Path, PathBuf};

use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::loader::{Loader, LoaderBuilder, Position};
use lodtensor::shards::ShardedDataset;

/// A copy of `tests/fixtures/position/` in a new temporary directory (a reader never
/// writes to the fixture), and the saved loaders of its `positions.json`.
fn fixture() -> (tempfile::TempDir, Vec<serde_json::Value>) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/position");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(from.join("docs.arrow"), dir.path().join("docs.arrow")).unwrap();
    std::fs::create_dir(dir.path().join("shards")).unwrap();
    for entry in std::fs::read_dir(from.join("shards")).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        let to = dir.path().join("shards").join(path.file_name().unwrap());
        std::fs::copy(&path, to).unwrap();
    }
    let json = std::fs::read_to_string(from.join("positions.json")).unwrap();
    (dir, serde_json::from_str(&json).unwrap())
}

/// The loader named `name` in `positions.json`, with today's spelling of its options.
fn builder<'a>(
    name: &str,
    file: &'a MappedDataset,
    shards: &'a ShardedDataset,
) -> LoaderBuilder<'a> {
    match name {
        "file, batch 5, shuffle 11" => Loader::builder(file).with_batch_size(5).with_shuffle(11),
        "file, 40 tokens a batch by tokens level 0, 3 quantile buckets, shuffle 5" => {
            Loader::builder(file)
                .with_token_budget(40)
                .with_length_column("tokens", 0)
                .with_quantile_buckets(3)
                .with_shuffle(5)
        }
        "shards, lazy, batch 4, windowed shuffle 3 of 8 rows in windows of 2" => {
            Loader::builder(shards)
                .with_lazy_shards(true)
                .with_batch_size(4)
                .with_windowed_shuffle(3, 8, 2)
        }
        "shards, batch 6, drop last, chunk shuffle 9 of 10 rows" => Loader::builder(shards)
            .with_batch_size(6)
            .with_drop_last(true)
            .with_chunk_shuffle(9, 10),
        other => panic!("a loader the fixture does not name: {other}"),
    }
}

#[test]
fn positions_saved_before_the_row_store_resume_with_the_same_batches() {
    let (dir, saved) = fixture();
    let file = MappedDataset::open(dir.path().join("docs.arrow")).unwrap();
    let shards = ShardedDataset::open(dir.path().join("shards")).unwrap();
    assert_eq!(saved.len(), 4);
    for case in &saved {
        let name = case["loader"].as_str().unwrap();
        let position = Position::from_json(&case["position"].to_string()).unwrap();
        let mut loader = builder(name, &file, &shards).build().unwrap();
        assert_eq!(loader.fingerprint(), position.fingerprint, "{name}");
        loader.seek(position).unwrap();
        let expected: Vec<Vec<usize>> =
            serde_json::from_value(case["next_samples"].clone()).unwrap();
        let got: Vec<Vec<usize>> = (0..expected.len())
            .map(|_| loader.next_batch().unwrap().unwrap().samples().to_vec())
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}
