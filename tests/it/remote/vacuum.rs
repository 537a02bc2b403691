//! `vacuum_with` of a URL: what killed writers left goes once older than the grace period;
//! listed shards, a pending writer's, a writer's whose pending manifest is unreadable and
//! objects not named as shards stay.

use std::time::Duration;

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset, vacuum_with};
use lodtensor::{DatasetError, ErrorKind};

use crate::common::S3Server;

use super::*;

#[test]
fn vacuum_of_a_url_removes_the_shards_no_manifest_lists_once_older_than_the_grace() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local, url, rows) = uploaded(&s3, "swept", write_local);
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    // Left by killed writers: a shard no manifest lists, one of a writer whose pending
    // manifest cannot be parsed; and objects not named as shards.
    s3.put_object("data", "swept/part-00099.arrow", b"a killed writer's");
    s3.put_object(
        "data",
        "swept/w2-00000.arrow",
        b"an unreadable pending writer's",
    );
    s3.put_object("data", "swept/_lodtensor.pending.w2.t0.json", b"{not json");
    s3.put_object("data", "swept/notes.txt", b"someone else's");
    s3.put_object(
        "data",
        "swept/_scratch.arrow",
        b"the dataset's own name space",
    );
    assert!(s3.has_object("data", "swept/part-00099.arrow"));
    // A pending writer's shards, recorded in its pending manifest.
    let pending = ShardOptions::default()
        .with_shard_rows(40)
        .with_prefix("w1")
        .with_remote_options(s3.options());
    let mut writer = ShardWriter::pending(url.as_str(), pending).unwrap();
    writer.write(&rows).unwrap();
    writer.finish().unwrap();
    let before = ShardedDataset::open_with(url.as_str(), &options).unwrap();
    // Too recent: nothing goes.
    let day = Duration::from_secs(86_400);
    assert!(vacuum_with(url.as_str(), &options, day).unwrap().is_empty());
    assert!(s3.has_object("data", "swept/part-00099.arrow"));
    let removed = vacuum_with(url.as_str(), &options, Duration::ZERO).unwrap();
    assert_eq!(removed, ["s3://data/swept/part-00099.arrow"]);
    assert!(!s3.has_object("data", "swept/part-00099.arrow"));
    for kept in ["w2-00000.arrow", "notes.txt", "_scratch.arrow"] {
        assert!(s3.has_object("data", &format!("swept/{kept}")), "{kept}");
    }
    let after = ShardedDataset::open_with(url.as_str(), &options).unwrap();
    assert_eq!(after.manifest(), before.manifest());
    after.validate().unwrap();
    let n = after.num_rows();
    let local = ShardedDataset::open(&local).unwrap();
    assert_eq!(after.rows(0..n).unwrap(), local.rows(0..n).unwrap());
    // Nothing left to remove; the pending writer still commits, every shard of it (a
    // commit skips a pending manifest whose shard the store does not hold).
    assert!(
        vacuum_with(url.as_str(), &options, Duration::ZERO)
            .unwrap()
            .is_empty()
    );
    let report = lodtensor::shards::commit_report(url.as_str(), &options).unwrap();
    assert_eq!(report.manifest.num_rows(), 2 * rows.num_rows());
}

#[test]
fn vacuum_of_a_url_removes_the_shards_a_replace_left() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, rows) = uploaded(&s3, "replaced", write_local);
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let old = ShardedDataset::open_with(url.as_str(), &options).unwrap();
    let replace = ShardOptions::default()
        .with_shard_rows(50)
        .with_remote_options(s3.options());
    let mut writer = ShardWriter::overwrite(url.as_str(), replace).unwrap();
    let half = rows.slice_rows(0..rows.num_rows() / 2).unwrap();
    writer.write(&half).unwrap();
    let manifest = writer.finish().unwrap();
    let mut removed = vacuum_with(url.as_str(), &options, Duration::ZERO).unwrap();
    removed.sort();
    let mut expected: Vec<String> = (old.manifest().shards.iter())
        .filter(|s| !manifest.shards.iter().any(|n| n.file == s.file))
        .map(|s| format!("{url}{}", s.file))
        .collect();
    expected.sort();
    assert!(!expected.is_empty());
    assert_eq!(removed, expected);
    let data = ShardedDataset::open_with(url.as_str(), &options).unwrap();
    data.validate().unwrap();
    let taken: Vec<usize> = (0..data.num_rows()).collect();
    assert_eq!(*data.take(&taken).unwrap().data(), half);
}

#[test]
fn vacuum_of_a_url_without_a_dataset_is_refused() {
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("data");
    s3.put_object("data", "loose/part-00000.arrow", b"not a dataset's");
    let err = vacuum_with("s3://data/loose/", &s3.options(), Duration::ZERO).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Dataset(DatasetError::NotADataset)),
        "{err}"
    );
    assert!(err.to_string().contains("s3://data/loose/"), "{err}");
    assert!(s3.has_object("data", "loose/part-00000.arrow"));
}
