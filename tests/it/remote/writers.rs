//! Writing to a URL: a shard writer staged and uploaded by the crate, the deprecated URL
//! calls, concurrent appenders, pending writers committed together and concurrently.

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Dataset, DatasetError, ErrorKind};

use crate::common::S3Server;

use super::*;

/// A `ShardWriter` given a URL stages its shards in a directory of its own and uploads
/// them when it finishes: created, appended to and pending as in a directory; the staging
/// directory gone after `finish` and after a writer dropped unfinished.
#[test]
fn a_shard_writer_to_a_url_stages_and_uploads_in_the_crate() {
    use lodtensor::shards::commit_with;
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("data");
    let url = "s3://data/written/";
    let dir = tempfile::tempdir().unwrap();
    let rows = write_local(&dir.path().join("local"));
    let options = ShardOptions::default()
        .with_shard_rows(25)
        .with_remote_options(s3.options());
    let mut writer = ShardWriter::create(url, options.clone()).unwrap();
    let staging = writer.dir().to_path_buf();
    assert!(staging.is_dir() && !staging.starts_with(dir.path()));
    writer.write(&rows).unwrap();
    assert_eq!(writer.finish().unwrap().shards.len(), 5);
    assert!(!staging.exists());
    let err = ShardWriter::create(url, options.clone()).err().unwrap();
    assert!(
        matches!(err.kind(), ErrorKind::Dataset(DatasetError::AlreadyThere)),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("s3://data/written/_lodtensor.json"),
        "{err}"
    );
    let mut more = ShardWriter::append(url, options.clone()).unwrap();
    more.write(&rows).unwrap();
    assert_eq!(more.finish().unwrap().shards.len(), 10);
    let pending = options.clone().with_prefix("w1");
    let mut writer = ShardWriter::pending(url, pending.clone()).unwrap();
    writer.write(&rows).unwrap();
    writer.finish().unwrap();
    let dropped = ShardWriter::pending(url, pending).unwrap();
    let staging = dropped.dir().to_path_buf();
    drop(dropped);
    assert!(!staging.exists());
    let manifest = commit_with(url, &s3.options()).unwrap();
    assert_eq!((manifest.shards.len(), manifest.num_rows()), (15, 360));
    let none = ShardWriter::append("s3://data/nothing/", options)
        .err()
        .unwrap();
    assert!(
        matches!(
            none.kind(),
            ErrorKind::Dataset(DatasetError::NothingToAppendTo)
        ),
        "{none}"
    );
}

/// The deprecated spellings still open and commit a URL, as the calls taking a location do.
#[test]
#[allow(deprecated)]
fn the_deprecated_url_calls_still_open_and_commit() {
    use lodtensor::shards::{commit_report, commit_url, commit_url_report, commit_with};
    let Some(s3) = S3Server::start() else { return };
    let (dir, local, url, _) = uploaded(&s3, "old", write_local);
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let old = ShardedDataset::open_url(&url, &options).unwrap();
    let new = ShardedDataset::open_with(url.as_str(), &options).unwrap();
    assert_eq!(old.manifest(), new.manifest());
    assert_eq!(commit_url(&url, &options).unwrap(), *new.manifest());
    let (old, new_report) = (
        commit_url_report(&url, &options).unwrap(),
        commit_report(url.as_str(), &options).unwrap(),
    );
    assert_eq!(
        (old.manifest, old.skipped.len()),
        (new.manifest().clone(), 0)
    );
    assert_eq!(
        (new_report.manifest, new_report.skipped.len()),
        (new.manifest().clone(), 0)
    );
    let local_report = commit_report(local.as_path(), &options).unwrap();
    let local_manifest = ShardedDataset::open(local.as_path())
        .unwrap()
        .manifest()
        .clone();
    assert_eq!(
        (local_report.manifest, local_report.skipped.len()),
        (local_manifest, 0)
    );
    assert_eq!(
        commit_with(url.as_str(), &options).unwrap(),
        *new.manifest()
    );
    // `upload_shards`: a local dataset appended; refused as a new dataset where one is.
    use lodtensor::shards::upload_shards;
    let appended = upload_shards(&local, &url, &options, true).unwrap();
    assert_eq!(appended.num_rows(), 2 * new.num_rows());
    let err = upload_shards(&local, &url, &options, false).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::Dataset(DatasetError::AlreadyThere)
    ));
}

#[test]
fn concurrent_appenders_to_one_url_keep_every_shard() {
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("data");
    let url = "s3://data/appended/";
    let dir = tempfile::tempdir().unwrap();
    let ds = write_local(&dir.path().join("first"));
    let options = s3.options();
    let shards = ShardOptions::default()
        .with_shard_rows(25)
        .with_remote_options(options.clone());
    let write = |writer: lodtensor::Result<ShardWriter>, ds: &Dataset| {
        let mut writer = writer.unwrap();
        writer.write(ds).unwrap();
        writer.finish().unwrap();
    };
    write(ShardWriter::create(url, shards.clone()), &ds);
    // Creating again is refused: a dataset is there.
    let err = ShardWriter::create(url, shards.clone()).err().unwrap();
    assert!(
        matches!(err.kind(), ErrorKind::Dataset(DatasetError::AlreadyThere)),
        "{err}"
    );
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (ds, shards) = (ds.clone(), shards.clone());
            std::thread::spawn(move || {
                for _ in 0..3 {
                    write(ShardWriter::append(url, shards.clone()), &ds);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let cache = dir.path().join("cache");
    let data = ShardedDataset::open_with(url, &options.with_cache_dir(&cache)).unwrap();
    // The first upload and 2 writers × 3 appends, 5 shards each, none lost.
    assert_eq!(data.num_shards(), 7 * 5);
    assert_eq!(data.num_rows(), 7 * 120);
    data.validate().unwrap();
}

/// Also the deprecated `upload_pending` (kept one release): a local dataset uploaded as a
/// writer's pending shards.
#[test]
#[allow(deprecated)]
fn pending_writers_to_one_url_are_committed_together() {
    use lodtensor::shards::{commit_with, discard_pending, pending_prefixes, upload_pending};
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("data");
    let url = "s3://data/pending/";
    let dir = tempfile::tempdir().unwrap();
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    // Three independent writers, two of one prefix (the second adds to its pending manifest),
    // and one that is dropped; nothing is readable before the commit.
    let mut local = Vec::new();
    for (i, prefix) in ["w0", "w1", "w1", "gone"].into_iter().enumerate() {
        let path = dir.path().join(format!("local{i}"));
        let shards = ShardOptions::default()
            .with_shard_rows(25)
            .with_prefix(prefix);
        let mut writer = ShardWriter::create(&path, shards).unwrap();
        let ds = documents(i as u64, 60);
        writer.write(&ds).unwrap();
        writer.finish().unwrap();
        let pending = upload_pending(&path, url, &s3.options(), prefix).unwrap();
        local.push(ShardedDataset::open(&path).unwrap().rows(0..60).unwrap());
        assert_eq!(pending.num_rows(), 60); // a pending manifest of its own
        assert!(
            ShardedDataset::open_with(url, &options).is_err(),
            "no dataset yet"
        );
    }
    assert_eq!(
        pending_prefixes(url, &options).unwrap(),
        ["gone", "w0", "w1"]
    );
    discard_pending(url, &options, "gone").unwrap();
    let manifest = commit_with(url, &options).unwrap();
    assert!(pending_prefixes(url, &options).unwrap().is_empty());
    assert_eq!(manifest.num_rows(), 180);
    // Idempotent: committing again changes nothing.
    assert_eq!(commit_with(url, &options).unwrap(), manifest);
    let data = ShardedDataset::open_with(url, &options).unwrap();
    data.validate().unwrap();
    assert_eq!(data.rows(0..60).unwrap(), local[0]);
    assert_eq!(data.rows(60..120).unwrap(), local[1]);
    assert_eq!(data.rows(120..180).unwrap(), local[2]);
    let names: Vec<_> = manifest.shards.iter().map(|s| s.file.as_str()).collect();
    assert_eq!(
        names[..3],
        ["w0-00000.arrow", "w0-00001.arrow", "w0-00002.arrow"]
    );
    assert_eq!(
        names[6..],
        ["w1-00003.arrow", "w1-00004.arrow", "w1-00005.arrow"]
    );
    // The dropped writer's shards are gone from the store; a commit with nothing pending on a
    // prefix with no dataset is refused.
    let err = commit_with("s3://data/nothing/", &options).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Argument(_)), "{err}");
}

#[test]
fn concurrent_commits_of_pending_writers_keep_every_shard() {
    use lodtensor::shards::commit_with;
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("data");
    let url = "s3://data/committed/";
    let dir = tempfile::tempdir().unwrap();
    // Two writers, each writing pending shards to the URL and committing, three times, at
    // once: every commit that loses the manifest's conditional PUT merges again.
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let options = s3.options();
            let shards = ShardOptions::default()
                .with_shard_rows(25)
                .with_prefix(format!("w{w}"))
                .with_remote_options(options.clone());
            let ds = documents(w, 50);
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let mut writer = ShardWriter::pending(url, shards.clone()).unwrap();
                    writer.write(&ds).unwrap();
                    writer.finish().unwrap();
                    commit_with(url, &options).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let data = ShardedDataset::open_with(url, &options).unwrap();
    assert_eq!(data.num_rows(), 2 * 3 * 50);
    assert_eq!(data.num_shards(), 2 * 3 * 2);
    data.validate().unwrap();
    assert_eq!(commit_with(url, &options).unwrap(), *data.manifest());
}
