//! Reading a manifest costs about its size in memory, not a JSON tree of it: the peak of
//! the bytes allocated while `ShardedDataset::open` reads a manifest of many shards stays
//! under twice the manifest's size. (`cargo run --release --example manifest_rss` measures the peak RSS of a million
//! shards.)

use lodtensor::shards::{
    ColumnSpec, ColumnStats, MANIFEST_NAME, Manifest, ShardEntry, ShardedDataset,
};
use lodtensor::{DType, OffsetWidth};

use crate::{alone, peak_of};

/// A manifest of `shards` shards of one one-level column.
fn manifest(shards: usize) -> Manifest {
    let columns = vec![ColumnSpec {
        name: "tokens".into(),
        dtype: DType::Int64,
        element_shape: vec![],
        offsets: vec![OffsetWidth::I64],
        level_names: vec![],
        side: None,
    }];
    let shards = (0..shards)
        .map(|i| ShardEntry {
            file: format!("part-{i:07}.arrow"),
            rows: 1000,
            batches: 1,
            bytes: 123_456,
            crc32c: 0xdead_beef,
            columns: vec![ColumnStats {
                sequences: vec![1000],
                elements: 50_000,
            }],
        })
        .collect();
    Manifest {
        columns,
        shards,
        ..Manifest::default()
    }
}

#[test]
fn opening_a_manifest_allocates_less_than_twice_its_size() {
    alone(manifest_open);
}

fn manifest_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(MANIFEST_NAME);
    let shards = 50_000;
    manifest(shards).write(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    let mut data = None;
    let peak = peak_of(|| data = Some(ShardedDataset::open(dir.path()).unwrap()));
    let data = data.unwrap();
    assert_eq!(data.num_shards(), shards);
    assert!(
        peak <= 2 * size,
        "opening a manifest of {size} bytes allocated {peak} bytes at the peak"
    );
}
