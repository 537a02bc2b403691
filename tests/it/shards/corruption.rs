//! Corrupted shards and manifests: errors that name the shard's file or the manifest's
//! field, a changed byte caught by the checksum.

use std::path::Path;

use lodtensor::Loader;
use lodtensor::shards::{MANIFEST_NAME, Manifest, ShardedDataset};
use lodtensor::{ErrorKind, FormatError};

use super::*;

/// The error of touching shard 1, checked to name the shard's file.
fn shard_fault(dir: &Path) -> ErrorKind {
    let data = ShardedDataset::open(dir).unwrap();
    // Shards are checked when touched: shard 0 still serves.
    assert_eq!(data.sample(0).unwrap().num_rows(), 1);
    let err = data.sample(5).unwrap_err();
    assert_eq!(
        err.path(),
        Some(dir.join("part-00001.arrow").as_path()),
        "{err}"
    );
    assert!(err.to_string().contains("part-00001.arrow"), "{err}");
    assert!(data.validate().is_err());
    err.into_kind()
}

fn mismatch_field(kind: ErrorKind) -> String {
    match kind {
        ErrorKind::Format(FormatError::ShardMismatch { field, .. }) => field,
        other => panic!("{other:?}"),
    }
}

#[test]
fn corrupted_shards_are_errors_naming_the_shard() {
    let shard = |dir: &Path| dir.join("part-00001.arrow");
    // Truncated.
    let dir = tempfile::tempdir().unwrap();
    three_shards(dir.path());
    let bytes = std::fs::read(shard(dir.path())).unwrap();
    std::fs::write(shard(dir.path()), &bytes[..bytes.len() - 9]).unwrap();
    assert_eq!(mismatch_field(shard_fault(dir.path())), "bytes");
    // A changed value byte: same size, another checksum.
    std::fs::write(shard(dir.path()), &bytes).unwrap();
    ShardedDataset::open(dir.path())
        .unwrap()
        .validate()
        .unwrap();
    let mut changed = bytes.clone();
    let at = changed.len() / 2;
    changed[at] ^= 0x40;
    std::fs::write(shard(dir.path()), &changed).unwrap();
    assert_eq!(mismatch_field(shard_fault(dir.path())), "crc32c");
    // Missing.
    std::fs::remove_file(shard(dir.path())).unwrap();
    assert!(matches!(shard_fault(dir.path()), ErrorKind::Io(_)));
    // Another valid shard in its place.
    std::fs::copy(dir.path().join("part-00002.arrow"), shard(dir.path())).unwrap();
    let field = mismatch_field(shard_fault(dir.path()));
    assert!(["bytes", "crc32c"].contains(&field.as_str()), "{field}");
}

#[test]
fn a_changed_byte_is_a_checksum_error() {
    let dir = tempfile::tempdir().unwrap();
    three_shards(dir.path());
    let path = dir.path().join("part-00001.arrow");
    let mut bytes = std::fs::read(&path).unwrap();
    // A value byte: the file still parses, only the checksum tells.
    let data = ShardedDataset::open(dir.path()).unwrap();
    let view = data.sample(5).unwrap();
    let mapping = data.shard(1).unwrap().as_bytes().as_ptr() as usize;
    let at = view.column("tokens").unwrap().values().as_ptr() as usize - mapping;
    drop((view, data));
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(mismatch_field(shard_fault(dir.path())), "crc32c");
    // A loader is built (the shard's structure is sound), reads shard 0, then stops at the
    // first batch that takes a sample of shard 1, naming it, and again when asked again.
    let data = ShardedDataset::open(dir.path()).unwrap();
    let mut loader = Loader::builder(&data).with_batch_size(2).build().unwrap();
    for _ in 0..2 {
        assert_eq!(loader.next_batch().unwrap().unwrap().samples(), &[0, 1]);
        assert_eq!(loader.next_batch().unwrap().unwrap().samples(), &[2, 3]);
        for _ in 0..2 {
            let err = loader.next_batch().unwrap_err();
            assert_eq!(err.path(), Some(path.as_path()), "{err}");
            assert_eq!(mismatch_field(err.into_kind()), "crc32c");
        }
        loader.set_epoch(1);
    }
    // Rank 1 of 3 (shard 1's rows) meets it at once; ranks 0 and 2 read theirs whole.
    let rank = |r| Loader::builder(&data).shard(r, 3).build().unwrap();
    assert!(rank(1).next_batch().is_err());
    for r in [0, 2] {
        assert_eq!(
            rank(r).map(|b| b.unwrap().data().num_rows()).sum::<usize>(),
            4
        );
    }
}

#[test]
fn corrupted_manifests_are_errors_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    three_shards(dir.path());
    let path = dir.path().join(MANIFEST_NAME);
    let text = std::fs::read_to_string(&path).unwrap();
    let manifest_fault = |text: &str| {
        std::fs::write(&path, text).unwrap();
        let err = ShardedDataset::open(dir.path()).unwrap_err();
        assert_eq!(err.path(), Some(path.as_path()), "{err}");
        match err.into_kind() {
            ErrorKind::Format(FormatError::Manifest { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    };
    for cut in [0, 1, text.len() / 3, text.len() - 3] {
        assert_eq!(manifest_fault(&text[..cut]), "(root)");
    }
    assert_eq!(
        manifest_fault(&text.replacen("\"rows\":4", "\"rows\":5", 1)),
        "shards[0].columns[0]"
    );
    assert_eq!(
        manifest_fault(&text.replacen("part-00002.arrow", "../x.arrow", 1)),
        "shards[2].file"
    );
    // A manifest that parses but lies about a shard: an error on touching that shard.
    let m = Manifest::parse(&text).unwrap();
    let mut lying = m.clone();
    lying.shards[1].bytes += 1;
    std::fs::write(&path, lying.to_json()).unwrap();
    assert_eq!(mismatch_field(shard_fault(dir.path())), "bytes");
    let mut lying = m.clone();
    lying.shards[1].columns[0].elements += 1;
    std::fs::write(&path, lying.to_json()).unwrap();
    assert_eq!(
        mismatch_field(shard_fault(dir.path())),
        "columns[0].elements"
    );
    std::fs::remove_file(&path).unwrap();
    let err = ShardedDataset::open(dir.path()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)));
    assert_eq!(err.path(), Some(path.as_path()));
}
