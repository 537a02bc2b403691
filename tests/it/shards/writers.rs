//! Writers of a dataset that exists: appends, independent writers committed together, a
//! writer killed with SIGKILL at random moments, an overwrite that keeps the old shards for
//! their readers.

use std::path::Path;
use std::time::Duration;

use arrow_array::types::Int64Type;
use lodtensor::rng::SplitMix64;
use lodtensor::shards::{MANIFEST_NAME, ShardOptions, ShardWriter, ShardedDataset, commit};
use lodtensor::{ArgumentError, Dataset, DatasetError, ErrorKind};

use super::*;

#[test]
fn appends_and_independent_writers() {
    let dir = tempfile::tempdir().unwrap();
    three_shards(dir.path());
    appends(dir.path());
    independent_writers(dir.path());
}

/// Appends to the 3 shards of 4 rows of `three_shards` in `dir`: 6 rows in 2 shards, a
/// schema that differs refused; `create` refused there and `append` where nothing is.
fn appends(dir: &Path) {
    assert!(matches!(
        ShardWriter::create(dir, ShardOptions::default())
            .err()
            .unwrap()
            .kind(),
        ErrorKind::Dataset(DatasetError::AlreadyThere)
    ));
    let empty = tempfile::tempdir().unwrap();
    let err = ShardWriter::append(empty.path(), ShardOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Dataset(DatasetError::NothingToAppendTo)
        ),
        "{err}"
    );
    assert_eq!(
        err.path(),
        Some(empty.path().join("_lodtensor.json").as_path())
    );
    let mut writer = ShardWriter::append(dir, ShardOptions::default().with_shard_rows(4)).unwrap();
    writer.write(&documents(2, 6, 12)).unwrap();
    let other = documents(3, 2, 0).slice_rows(0..2).unwrap();
    let wrong = Dataset::try_new(vec![other.columns()[1].clone()]).unwrap();
    assert!(matches!(
        writer.write(&wrong).unwrap_err().kind(),
        ErrorKind::Argument(ArgumentError::SchemaMismatch { .. })
    ));
    let names: Vec<String> = writer
        .finish()
        .unwrap()
        .shards
        .into_iter()
        .map(|s| s.file)
        .collect();
    assert_eq!(names[3..], ["part-00003.arrow", "part-00004.arrow"]);
    let data = ShardedDataset::open(dir).unwrap();
    assert_eq!(
        flatten(&data.rows(0..18).unwrap()).3,
        (0..18).collect::<Vec<i64>>()
    );
}

/// Two independent writers, interleaved, over the 18 rows `appends` left in `dir`: nothing
/// visible before the commit; a later writer of the same prefix continues its numbering.
fn independent_writers(dir: &Path) {
    let pending = |prefix: &str| {
        ShardWriter::pending(
            dir,
            ShardOptions::default()
                .with_shard_rows(3)
                .with_prefix(prefix),
        )
        .unwrap()
    };
    let (mut w1, mut w0) = (pending("w1"), pending("w0"));
    w1.write(&documents(4, 5, 23)).unwrap();
    w0.write(&documents(5, 5, 18)).unwrap();
    w1.finish().unwrap();
    w0.finish().unwrap();
    assert_eq!(ShardedDataset::open(dir).unwrap().num_rows(), 18);
    let committed = commit(dir).unwrap();
    assert_eq!(committed.shards.len(), 5 + 4);
    let data = ShardedDataset::open(dir).unwrap();
    data.validate().unwrap();
    assert_eq!(
        flatten(&data.rows(0..28).unwrap()).3,
        (0..28).collect::<Vec<i64>>()
    );
    // Committing again changes nothing; a later writer of the same prefix continues its numbering.
    assert_eq!(commit(dir).unwrap(), committed);
    let mut w0 = pending("w0");
    w0.write(&documents(6, 1, 28)).unwrap();
    assert_eq!(w0.finish().unwrap().shards[0].file, "w0-00002.arrow");
    assert_eq!(commit(dir).unwrap().num_rows(), 29);
    assert!(
        ShardWriter::create(dir.join("new"), ShardOptions::default().with_prefix("_x")).is_err()
    );
}

/// Rows each round of the killed writer appends.
const ROUND_ROWS: usize = 7;

/// The child of `sigkill_leaves_a_complete_dataset`: appends rounds of rows (labels
/// continuing the dataset's) until killed. Run only by the parent, with `--ignored`.
#[test]
#[ignore = "the child process of sigkill_leaves_a_complete_dataset"]
fn sigkill_child() {
    let Ok(dir) = std::env::var("LODTENSOR_SHARDS_CHILD_DIR") else {
        return;
    };
    for round in 0.. {
        let mut writer =
            ShardWriter::append(&dir, ShardOptions::default().with_shard_rows(3)).unwrap();
        let first = ShardedDataset::open(&dir).unwrap().num_rows() as i64;
        writer.write(&documents(round, ROUND_ROWS, first)).unwrap();
        writer.finish().unwrap();
    }
}

#[test]
fn sigkill_leaves_a_complete_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = ShardWriter::create(dir.path(), ShardOptions::default()).unwrap();
    writer.write(&documents(0, ROUND_ROWS, 0)).unwrap();
    writer.finish().unwrap();
    let mut rng = SplitMix64::new(17);
    let mut grew = 0;
    for _ in 0..12 {
        let before = ShardedDataset::open(dir.path()).unwrap().num_rows();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "shards::writers::sigkill_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("LODTENSOR_SHARDS_CHILD_DIR", dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.range(20, 400) as u64));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let data = ShardedDataset::open(dir.path()).unwrap();
        data.validate().unwrap();
        let rows = data.num_rows();
        assert_eq!(rows % ROUND_ROWS, 0, "a partial round is visible");
        assert!(rows >= before);
        grew += usize::from(rows > before);
        let labels = flatten(&data.rows(0..rows).unwrap()).3;
        assert_eq!(labels, (0..rows as i64).collect::<Vec<_>>());
    }
    assert!(
        grew > 0,
        "the writer never finished a round before being killed"
    );
}

#[test]
fn an_overwrite_replaces_the_dataset_and_keeps_the_old_shards_for_its_readers() {
    let dir = tempfile::tempdir().unwrap();
    three_shards(dir.path());
    let old = ShardedDataset::open(dir.path()).unwrap();
    let old_rows = flatten(&old.rows(0..old.num_rows()).unwrap());
    // Other columns: the labels alone.
    let docs = documents(9, 5, 100);
    let new = Dataset::try_new(vec![docs.columns()[1].clone()]).unwrap();
    let mut writer =
        ShardWriter::overwrite(dir.path(), ShardOptions::default().with_shard_rows(2)).unwrap();
    writer.write(&new).unwrap();
    let manifest = writer.finish().unwrap();
    assert_eq!((manifest.num_rows(), manifest.shards.len()), (5, 3));
    let replaced = ShardedDataset::open(dir.path()).unwrap();
    let names: Vec<&str> = replaced.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["label"]);
    let labels: Vec<i64> = (replaced.rows(0..5).unwrap().iter())
        .flat_map(|part| {
            part.column("label")
                .unwrap()
                .typed_values::<Int64Type>()
                .unwrap()
                .to_vec()
        })
        .collect();
    assert_eq!(labels, [100, 101, 102, 103, 104]);
    // The old shards are where they were: a reader of the old manifest reads on.
    let old_files: Vec<&str> = old
        .manifest()
        .shards
        .iter()
        .map(|s| s.file.as_str())
        .collect();
    assert!(old_files.iter().all(|f| dir.path().join(f).exists()));
    assert_eq!(flatten(&old.rows(0..old.num_rows()).unwrap()), old_rows);
    assert!(
        manifest
            .shards
            .iter()
            .all(|s| !old_files.contains(&s.file.as_str()))
    );
    // ... until `vacuum` removes them.
    let removed = lodtensor::shards::vacuum(dir.path(), Duration::ZERO).unwrap();
    assert_eq!(removed.len(), old_files.len());
    assert_eq!(ShardedDataset::open(dir.path()).unwrap().num_rows(), 5);
    // An overwrite creates a dataset where none is, and refuses to replace one it cannot read.
    let empty = tempfile::tempdir().unwrap();
    let mut writer = ShardWriter::overwrite(empty.path(), ShardOptions::default()).unwrap();
    writer.write(&new).unwrap();
    assert_eq!(writer.finish().unwrap().num_rows(), 5);
    std::fs::write(empty.path().join(MANIFEST_NAME), b"{not json").unwrap();
    let err = ShardWriter::overwrite(empty.path(), ShardOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err.kind(), ErrorKind::Format(_)), "{err}");
}
