//! Sharded datasets in object storage, against moto's S3 server on 127.0.0.1
//! (`common::S3Server`; skipped without Python unless `LODTENSOR_REQUIRE_PYTHON=1`): the
//! remote dataset reads as the local one, through a cache that downloads each shard once.

use std::path::{Path, PathBuf};

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Dataset, DatasetError, ErrorKind, FormatError, Loader};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

use crate::common::S3Server;

/// `n` small documents drawn with `seed`.
fn documents(seed: u64, n: usize) -> Dataset {
    let spec = Documents {
        sentences: (0, 4),
        tokens: (1, 5),
        dim: 3,
    };
    spec.generate(&mut SplitMix64::new(seed), n).unwrap()
}

/// 120 small documents in shards of 25 rows.
pub(crate) fn write_local(dir: &Path) -> Dataset {
    let ds = documents(5, 120);
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(25)).unwrap();
    writer.write(&ds).unwrap();
    writer.finish().unwrap();
    ds
}

/// Every batch of one epoch of each loader mode: samples and data.
fn epochs(data: &ShardedDataset) -> Vec<(Vec<usize>, Dataset)> {
    let modes: [fn(lodtensor::LoaderBuilder<'_>) -> lodtensor::LoaderBuilder<'_>; 4] = [
        |b| b.with_batch_size(7),
        |b| b.with_token_budget(12).with_shuffle(3),
        |b| b.with_batch_size(4).with_windowed_shuffle(9, 5, 2),
        |b| b.with_batch_size(3).with_shuffle(1).shard(1, 3),
    ];
    let mut out = Vec::new();
    for mode in modes {
        let mut loader = mode(Loader::builder(data)).build().unwrap();
        while let Some(batch) = loader.next_batch().unwrap() {
            out.push((batch.samples().to_vec(), batch.data().clone()));
        }
    }
    out
}

#[test]
fn a_remote_dataset_reads_as_the_local_one_and_downloads_each_shard_once() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "docs", write_local);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache);
    let local = ShardedDataset::open(&local_dir).unwrap();
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    assert_eq!(remote.url(), Some(url.as_str()));
    assert_eq!(remote.manifest(), local.manifest());
    assert_eq!(remote.cache_stats().unwrap().bytes_downloaded, 0);
    assert_eq!(remote.rows(10..90).unwrap(), local.rows(10..90).unwrap());
    assert_eq!(epochs(&remote), epochs(&local));
    let stats = remote.cache_stats().unwrap();
    let total: u64 = local.manifest().shards.iter().map(|s| s.bytes).sum();
    assert_eq!(
        (stats.shards_downloaded, stats.bytes_downloaded),
        (5, total)
    );
    // A second open (another process, or the next run) finds every shard in the cache.
    let again = ShardedDataset::open_with(&url, &options).unwrap();
    again.validate().unwrap();
    let stats = again.cache_stats().unwrap();
    assert_eq!((stats.bytes_downloaded, stats.shards_cached), (0, 5));
}

#[test]
fn a_changed_remote_shard_is_refused_naming_it_and_not_cached() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, url) = uploaded_with_a_flipped_byte(&s3, "changed", write_local, 1);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache).with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    remote.shard(0).unwrap();
    let err = remote.shard(1).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Format(FormatError::ShardMismatch { field, .. }) if field == "crc32c"),
        "{err}"
    );
    assert_eq!(
        err.path().unwrap(),
        Path::new(&format!("{url}part-00001.arrow"))
    );
    let left: Vec<_> = crate::common::files_under(&cache)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".lock"))
        .filter(|p| !p.to_string_lossy().contains("_meta"))
        .collect();
    assert_eq!(left.len(), 1, "{left:?}"); // shard 0 only
}

/// A cache whose disk fills during a download: an I/O error naming the cache's file, and
/// no temporary file left. The download runs in a child process whose files cannot grow
/// past 2 KiB, less than a shard (a full disk, without root).
#[test]
fn a_full_cache_disk_is_an_io_error_naming_the_file_and_leaves_nothing() {
    let Some(s3) = S3Server::start() else { return };
    let cache = tempfile::tempdir().unwrap();
    let (_dir, _, url, _) = uploaded(&s3, "full", write_local);
    let endpoint = s3.endpoint();
    let stdout = crate::common::run_with_file_size_limit(
        "remote::child_validates_into_a_full_cache",
        2 << 10,
        &[
            ("LODTENSOR_CHILD_URL", url.as_ref()),
            ("LODTENSOR_CHILD_ENDPOINT", endpoint.as_ref()),
            ("LODTENSOR_CHILD_CACHE", cache.path().as_os_str()),
        ],
    );
    let path = crate::common::child_line(&stdout, "DISK FULL AT ");
    assert!(Path::new(path).starts_with(cache.path()), "{stdout}");
    let temporary = crate::common::files_under(cache.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp-"))
        .count();
    assert_eq!(temporary, 0);
}

/// Run by `a_full_cache_disk_is_an_io_error_naming_the_file_and_leaves_nothing` under a
/// file-size limit: validates the dataset into the cache and prints where it failed.
#[test]
#[ignore = "run as a child process by the full-disk test"]
fn child_validates_into_a_full_cache() {
    let (Ok(url), Ok(endpoint), Ok(cache)) = (
        std::env::var("LODTENSOR_CHILD_URL"),
        std::env::var("LODTENSOR_CHILD_ENDPOINT"),
        std::env::var("LODTENSOR_CHILD_CACHE"),
    ) else {
        return;
    };
    // No download ahead: the temporary files the parent counts are the failed download's
    // only (a prefetch thread still writing would race with the count).
    let options = S3Server::options_at(&endpoint)
        .with_cache_dir(cache)
        .with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let err = remote.validate().unwrap_err();
    assert!(crate::common::is_disk_full(&err), "{err}");
    println!("DISK FULL AT {}", err.path().unwrap().display());
}

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

/// The documents of [`write_local`], each shard compressed with zstd.
fn write_compressed(dir: &Path) -> Dataset {
    let ds = documents(5, 120);
    let write =
        lodtensor::WriteOptions::default().with_compression(lodtensor::IpcCompression::Zstd);
    let options = ShardOptions::default()
        .with_shard_rows(25)
        .with_write_options(write);
    let mut writer = ShardWriter::create(dir, options).unwrap();
    writer.write(&ds).unwrap();
    writer.finish().unwrap();
    ds
}

#[test]
fn a_compressed_remote_shard_is_decompressed_once_into_the_cache_then_mapped() {
    use arrow_array::types::Float32Type;
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "zstd", write_compressed);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache);
    let local = ShardedDataset::open(&local_dir).unwrap();
    assert!(local.shard(0).unwrap().is_compressed());
    let first = ShardedDataset::open_with(&url, &options).unwrap();
    assert_eq!(first.rows(0..120).unwrap(), local.rows(0..120).unwrap());
    first.validate().unwrap();
    let compressed: u64 = local.manifest().shards.iter().map(|s| s.bytes).sum();
    assert_eq!(first.cache_stats().unwrap().bytes_downloaded, compressed);
    drop(first);
    // The cache holds each shard decompressed, beside its size and checksum.
    let on_disk: u64 = entries(&cache)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "arrow"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(on_disk > compressed, "{on_disk} {compressed}");
    let sums = entries(&cache)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".sum"))
        .count();
    assert_eq!(sums, 5);
    let again = ShardedDataset::open_with(&url, &options).unwrap();
    for i in 0..5 {
        let shard = again.shard(i).unwrap();
        assert!(!shard.is_compressed(), "shard {i}");
        let mapping = shard.as_bytes().as_ptr_range();
        for batch in shard.batches() {
            let tokens = batch.column("tokens").unwrap();
            let values = tokens.typed_values::<Float32Type>().unwrap();
            assert!(values.is_empty() || mapping.contains(&(values.as_ptr() as *const u8)));
        }
    }
    assert_eq!(epochs(&again), epochs(&local));
    let stats = again.cache_stats().unwrap();
    assert_eq!((stats.bytes_downloaded, stats.shards_downloaded), (0, 0));
    // The cache's limit counts the decompressed bytes on disk: room for one shard of them
    // evicts the others.
    let largest = entries(&cache)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .max();
    let limited = options
        .clone()
        .with_cache_limit(largest.unwrap() + 64)
        .with_prefetch_bytes(0);
    drop(again);
    std::fs::remove_dir_all(&cache).unwrap();
    let small = ShardedDataset::open_with(&url, &limited).unwrap();
    small.shard(0).unwrap();
    drop(small);
    let small = ShardedDataset::open_with(&url, &limited).unwrap();
    small.shard(1).unwrap();
    assert_eq!(small.cache_stats().unwrap().shards_evicted, 1);
}

#[test]
fn a_changed_compressed_remote_shard_is_refused_before_it_is_decompressed() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, url) = uploaded_with_a_flipped_byte(&s3, "changed-zstd", write_compressed, 2);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache).with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let err = remote.shard(2).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Format(FormatError::ShardMismatch { field, .. }) if field == "crc32c"),
        "{err}"
    );
    assert_eq!(
        err.path().unwrap(),
        Path::new(&format!("{url}part-00002.arrow"))
    );
    assert!(entries(&cache).is_empty(), "{:?}", entries(&cache));
}

/// The dataset `write` makes, with a byte in the middle of shard `shard` flipped, uploaded
/// to the bucket `data` under `name`: the temporary directory and the dataset's URL.
fn uploaded_with_a_flipped_byte(
    s3: &S3Server,
    name: &str,
    write: fn(&Path) -> Dataset,
    shard: usize,
) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let local_dir = dir.path().join("local");
    write(&local_dir);
    let shard = local_dir.join(format!("part-{shard:05}.arrow"));
    let mut bytes = std::fs::read(&shard).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&shard, bytes).unwrap();
    let url = s3.upload_dir(&local_dir, "data", name);
    (dir, url)
}

/// The complete entries in the dataset's cache directory under `cache`.
fn entries(cache: &Path) -> Vec<std::path::PathBuf> {
    crate::common::files_under(cache)
        .into_iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            !name.ends_with(".lock") && !name.contains(".tmp-") && !name.contains("_meta")
        })
        .collect()
}

#[test]
fn the_cache_limit_evicts_what_no_reader_uses_least_recently_used_first() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "limited", write_local);
    let local = ShardedDataset::open(&local_dir).unwrap();
    let largest = largest_shard(&local);
    let cache = dir.path().join("cache");
    // Room for two shards, no prefetch.
    let options = s3
        .options()
        .with_cache_dir(&cache)
        .with_cache_limit(2 * largest)
        .with_prefetch_bytes(0);
    let first = ShardedDataset::open_with(&url, &options).unwrap();
    first.shard(0).unwrap();
    first.shard(1).unwrap();
    drop(first);
    let second = ShardedDataset::open_with(&url, &options).unwrap();
    for s in 2..5 {
        assert_eq!(
            second
                .rows(local.row_index().starts()[s]..local.row_index().starts()[s] + 1)
                .unwrap(),
            local
                .rows(local.row_index().starts()[s]..local.row_index().starts()[s] + 1)
                .unwrap()
        );
    }
    let stats = second.cache_stats().unwrap();
    assert_eq!((stats.shards_downloaded, stats.shards_evicted), (3, 2));
    // Shards 0 and 1 went; the three this reader maps stay (removing them frees nothing).
    let kept = entries(&cache);
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert!(
        kept.iter()
            .all(|p| !p.to_string_lossy().ends_with("part-00000.arrow"))
    );
}

#[test]
fn reading_a_shard_downloads_the_next_ones_ahead() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, _) = uploaded(&s3, "ahead", write_local);
    let cache = dir.path().join("cache");
    let data = ShardedDataset::open_with(&url, &s3.options().with_cache_dir(&cache)).unwrap();
    data.shard(0).unwrap();
    // The other four arrive without being asked for (waiting as long as it takes).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while entries(&cache).len() < 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            entries(&cache)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    data.validate().unwrap();
    let stats = data.cache_stats().unwrap();
    assert_eq!(stats.shards_downloaded, 5);
}

/// 120 small documents in 8 shards of 15 rows, each one record batch; the dataset's bytes.
fn write_eight(dir: &Path) -> u64 {
    let ds = documents(8, 120);
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(15)).unwrap();
    writer.write(&ds).unwrap();
    let manifest = writer.finish().unwrap();
    assert!(manifest.shards.iter().all(|s| s.batches == 1));
    manifest.shards.iter().map(|s| s.bytes).sum()
}

#[test]
fn a_loader_waits_for_its_first_shard_and_an_epoch_downloads_each_shard_once() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, total) = uploaded(&s3, "lazy", write_eight);
    let local = ShardedDataset::open(&local_dir).unwrap();
    // A cache of a quarter of the dataset (two shards), which leaves no room to prefetch.
    let options = s3
        .options()
        .with_cache_dir(dir.path().join("cache"))
        .with_cache_limit(total / 4);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    type Build = fn(lodtensor::LoaderBuilder<'_>) -> lodtensor::LoaderBuilder<'_>;
    let modes: [Build; 2] = [
        |b| b.with_batch_size(4),
        |b| b.with_batch_size(4).with_windowed_shuffle(3, 5, 4),
    ];
    for build in modes {
        let before = remote.cache_stats().unwrap();
        let mut loader = build(Loader::builder(&remote)).build().unwrap();
        let mut expected = build(Loader::builder(&local)).build().unwrap();
        assert_eq!(remote.cache_stats().unwrap(), before); // building downloads nothing
        let first = loader.next_batch().unwrap().unwrap();
        let stats = remote.cache_stats().unwrap();
        assert_eq!(
            stats.shards_downloaded - before.shards_downloaded,
            1,
            "{stats:?}"
        );
        assert_eq!(first.data(), expected.next_batch().unwrap().unwrap().data());
        while let Some(batch) = loader.next_batch().unwrap() {
            assert_eq!(batch.data(), expected.next_batch().unwrap().unwrap().data());
        }
        assert!(expected.next_batch().unwrap().is_none());
        let stats = remote.cache_stats().unwrap();
        let fetched = stats.bytes_downloaded - before.bytes_downloaded;
        assert!(
            fetched * 100 <= total * 105,
            "{fetched} of {total}: {stats:?}"
        );
        assert_eq!(stats.shards_downloaded - before.shards_downloaded, 8);
    }
}

#[test]
fn a_loader_downloads_ahead_the_next_shard_of_its_plan() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "ahead-of-plan", write_eight);
    let local = ShardedDataset::open(&local_dir).unwrap();
    let largest = largest_shard(&local);
    let cache = dir.path().join("cache");
    // Room to download one shard ahead.
    let options = s3
        .options()
        .with_cache_dir(&cache)
        .with_prefetch_bytes(largest);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    // A seed whose plan does not read the shards in their order.
    let shard_order = |seed| {
        let plan = Loader::builder(&local)
            .with_windowed_shuffle(seed, 15, 1)
            .build()
            .unwrap()
            .plan(0);
        let mut order: Vec<usize> = Vec::new();
        for &s in plan.samples() {
            let shard = local.locate_row(s).unwrap().0;
            if !order.contains(&shard) {
                order.push(shard);
            }
        }
        order
    };
    let seed = (0..)
        .find(|&seed| {
            let o = shard_order(seed);
            o[1] != o[0] + 1
        })
        .unwrap();
    let order = shard_order(seed);
    let mut loader = Loader::builder(&remote)
        .with_batch_size(1)
        .with_windowed_shuffle(seed, 15, 1)
        .build()
        .unwrap();
    loader.next_batch().unwrap().unwrap();
    let next = &local.manifest().shards[order[1]].file;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !entries(&cache)
        .iter()
        .any(|p| p.to_string_lossy().ends_with(next.as_str()))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            entries(&cache)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(entries(&cache).len(), 2, "{:?}", entries(&cache));
}

/// The size of the largest shard of `data`, in bytes.
fn largest_shard(data: &ShardedDataset) -> u64 {
    let sizes = data.manifest().shards.iter().map(|s| s.bytes);
    sizes.max().expect("a shard at least")
}

/// A dataset written by `write` into `local/` of a new temporary directory and uploaded to
/// `s3` under `data/PREFIX`: the directory, the local dataset's path, its URL and what
/// `write` returned.
pub(crate) fn uploaded<T>(
    s3: &S3Server,
    prefix: &str,
    write: impl FnOnce(&Path) -> T,
) -> (tempfile::TempDir, PathBuf, String, T) {
    let dir = tempfile::tempdir().unwrap();
    let local_dir = dir.path().join("local");
    let written = write(&local_dir);
    let url = s3.upload_dir(&local_dir, "data", prefix);
    (dir, local_dir, url, written)
}
