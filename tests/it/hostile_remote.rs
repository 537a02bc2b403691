//! A dataset in object storage read by a cache that others may have tampered with: links
//! planted in the cache, entries gone bad, a cache directory others may write. Against
//! moto's S3 server on 127.0.0.1 (`common::S3Server`, skipped without Python).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use lodtensor::ErrorKind;
use lodtensor::shards::ShardedDataset;

use crate::common::S3Server;
use crate::remote::{uploaded, write_local};

/// The cache directory of the dataset at `url` under `cache`, and shard 0's entry there.
fn entry_of(cache: &Path, url: &str, data: &ShardedDataset) -> (PathBuf, PathBuf) {
    let rest = url.trim_start_matches("s3://").trim_end_matches('/');
    let dir = cache.join("s3").join(rest);
    let shard = &data.manifest().shards[0];
    let entry = dir.join(format!("{:08x}-{}", shard.crc32c, shard.file));
    (dir, entry)
}

#[test]
fn links_planted_in_the_cache_are_neither_followed_nor_served() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local, url, _) = uploaded(&s3, "links", write_local);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache).with_prefetch_bytes(0);
    let data = ShardedDataset::open_url(&url, &options).unwrap();
    let (_, entry) = entry_of(&cache, &url, &data);
    // A lock that is a link to a file the reader may write: an error, the file untouched.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let lock = PathBuf::from(format!("{}.lock", entry.display()));
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let err = data.shard(0).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied),
        "{err}"
    );
    assert_eq!(err.path(), Some(lock.as_path()));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    std::fs::remove_file(&lock).unwrap();
    // An entry that is a link (to the right bytes, even): not served, downloaded instead.
    let outside = local.join(&data.manifest().shards[0].file);
    std::os::unix::fs::symlink(&outside, &entry).unwrap();
    data.shard(0).unwrap();
    let meta = std::fs::symlink_metadata(&entry).unwrap();
    assert!(meta.is_file(), "the entry is still a link");
    assert_eq!(data.cache_stats().unwrap().shards_downloaded, 1);
}

#[test]
fn an_entry_gone_bad_is_downloaded_once_more() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, _) = uploaded(&s3, "bad", write_local);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache).with_prefetch_bytes(0);
    let first = ShardedDataset::open_url(&url, &options).unwrap();
    let expected = first.shard(0).unwrap().sample(0).unwrap();
    let (_, entry) = entry_of(&cache, &url, &first);
    drop(first);
    // Its bytes go bad, its size stays: the next process (another open) checks it.
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&entry, &bytes).unwrap();
    let again = ShardedDataset::open_url(&url, &options).unwrap();
    assert_eq!(again.shard(0).unwrap().sample(0).unwrap(), expected);
    assert_eq!(again.cache_stats().unwrap().shards_downloaded, 1);
    assert_ne!(std::fs::read(&entry).unwrap(), bytes);
}

#[test]
fn a_cache_directory_every_user_may_write_is_refused_naming_it() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, _) = uploaded(&s3, "open", write_local);
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache);
    let data = ShardedDataset::open_url(&url, &options).unwrap();
    let (dataset_dir, _) = entry_of(&cache, &url, &data);
    let mode = std::fs::metadata(&dataset_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    std::fs::set_permissions(&dataset_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = ShardedDataset::open_url(&url, &options).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied),
        "{err}"
    );
    assert_eq!(err.path(), Some(dataset_dir.as_path()));
}
