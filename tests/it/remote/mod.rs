//! Sharded datasets in object storage, against moto's S3 server on 127.0.0.1
//! (`common::S3Server`; skipped without Python unless `LODTENSOR_REQUIRE_PYTHON=1`): the
//! remote dataset reads as the local one, through a cache that downloads each shard once.

mod cache;
mod loader;
mod one_round;
mod take;
mod vacuum;
mod writers;

use std::path::{Path, PathBuf};

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Dataset, ErrorKind, FormatError, Loader};
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

/// The documents of [`write_local`], each shard compressed with zstd.
pub(crate) fn write_compressed(dir: &Path) -> Dataset {
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

/// 120 small documents in 8 shards of 15 rows, each one record batch; the dataset's bytes.
fn write_eight(dir: &Path) -> u64 {
    let ds = documents(8, 120);
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(15)).unwrap();
    writer.write(&ds).unwrap();
    let manifest = writer.finish().unwrap();
    assert!(manifest.shards.iter().all(|s| s.batches == 1));
    manifest.shards.iter().map(|s| s.bytes).sum()
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
