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
pub(crate) fn entry_of(cache: &Path, url: &str, data: &ShardedDataset) -> (PathBuf, PathBuf) {
    let rest = url.trim_start_matches("s3://").trim_end_matches('/');
    let (parent, last) = rest.rsplit_once('/').unwrap();
    // The directory's name is the URL's last name, then `@` and a digest of the URL.
    let dir = std::fs::read_dir(cache.join("s3").join(parent))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{last}@"))
        })
        .unwrap();
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
    let data = ShardedDataset::open_with(&url, &options).unwrap();
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
    let first = ShardedDataset::open_with(&url, &options).unwrap();
    let expected = first.shard(0).unwrap().sample(0).unwrap();
    let (_, entry) = entry_of(&cache, &url, &first);
    drop(first);
    // Its bytes go bad, its size stays: the next process (another open) checks it.
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&entry, &bytes).unwrap();
    let again = ShardedDataset::open_with(&url, &options).unwrap();
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
    let data = ShardedDataset::open_with(&url, &options).unwrap();
    let (dataset_dir, _) = entry_of(&cache, &url, &data);
    let mode = std::fs::metadata(&dataset_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    std::fs::set_permissions(&dataset_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = ShardedDataset::open_with(&url, &options).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied),
        "{err}"
    );
    assert_eq!(err.path(), Some(dataset_dir.as_path()));
}

/// A pending writer `prefix` of 60 documents at `url`: its pending manifest.
fn pending_writer(s3: &S3Server, url: &str, prefix: &str) -> lodtensor::shards::Manifest {
    use lodtensor::shards::{ShardOptions, ShardWriter};
    use lodtensor::{rng::SplitMix64, synthetic::Documents};
    let options = ShardOptions::default()
        .with_shard_rows(25)
        .with_prefix(prefix)
        .with_remote_options(s3.options());
    let mut writer = ShardWriter::pending(url, options).unwrap();
    let spec = Documents {
        sentences: (0, 4),
        tokens: (1, 5),
        dim: 3,
    };
    writer
        .write(&spec.generate(&mut SplitMix64::new(7), 60).unwrap())
        .unwrap();
    writer.finish().unwrap()
}

/// Puts `text` at `data/PREFIX/name` in the store.
fn put(s3: &S3Server, prefix: &str, name: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    s3.upload_dir(dir.path(), "data", prefix);
}

#[test]
fn a_commit_skips_the_pending_manifests_it_cannot_trust_and_a_discard_drops_only_its_own() {
    use lodtensor::shards::{commit_report, discard_pending, pending_prefixes};
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("data");
    let url = "s3://data/skip/";
    let dir = tempfile::tempdir().unwrap();
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let w0 = pending_writer(&s3, url, "w0");
    let w1 = pending_writer(&s3, url, "w1");
    // Another writer's pending manifest listing w0's shards: dropping it drops none of them.
    put(&s3, "skip", "_lodtensor.pending.w6.a.json", &w0.to_json());
    discard_pending(url, &options, "w6").unwrap();
    // One unparsable, one naming a shard the store lacks, one a shard of another size.
    put(
        &s3,
        "skip",
        "_lodtensor.pending.w7.a.json",
        "not a manifest",
    );
    let mut missing = w1.clone();
    missing.shards[0].file = "w9-00000.arrow".to_owned();
    put(
        &s3,
        "skip",
        "_lodtensor.pending.w9.a.json",
        &missing.to_json(),
    );
    let mut resized = w0.clone();
    resized.shards.truncate(1);
    resized.shards[0].file = "w1-00000.arrow".to_owned();
    resized.shards[0].bytes = w1.shards[0].bytes + 1;
    put(
        &s3,
        "skip",
        "_lodtensor.pending.w8.a.json",
        &resized.to_json(),
    );
    let report = commit_report(url, &options).unwrap();
    assert_eq!(report.manifest.num_rows(), 120);
    let skipped: Vec<String> = report.skipped.iter().map(|e| e.to_string()).collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    for (error, prefix) in report.skipped.iter().zip(["w7", "w8", "w9"]) {
        let path = error.path().unwrap().to_string_lossy().into_owned();
        assert!(
            path.starts_with(&format!("{url}_lodtensor.pending.{prefix}.")),
            "{error}"
        );
    }
    assert!(skipped[2].contains("not in the store"), "{skipped:?}");
    ShardedDataset::open_with(url, &options)
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(pending_prefixes(url, &options).unwrap(), ["w7", "w8", "w9"]);
}

/// 12 shards of 20 rows of 2,000 `int32` values in 0..4 drawn at random, compressed with
/// zstd (each decompressed entry several times its shard's size); the largest shard's bytes.
fn write_compressible(dir: &Path) -> u64 {
    let manifest = write_small_ints(dir, 12, 2000, lodtensor::IpcCompression::Zstd);
    manifest.shards.iter().map(|s| s.bytes).max().unwrap()
}

/// `shards` shards of 20 rows of `per_row` `int32` values in 0..4 drawn at random (the same
/// whatever the compression), written with `compression`; the manifest.
fn write_small_ints(
    dir: &Path,
    shards: usize,
    per_row: usize,
    compression: lodtensor::IpcCompression,
) -> lodtensor::shards::Manifest {
    use lodtensor::arrow::types::Int32Type;
    use lodtensor::shards::{ShardOptions, ShardWriter};
    use lodtensor::{Column, Dataset, LodTensor, rng::SplitMix64};
    let mut rng = SplitMix64::new(11);
    let rows = 20 * shards;
    let values: Vec<i32> = (0..rows * per_row)
        .map(|_| (rng.next_u64() % 4) as i32)
        .collect();
    let tokens =
        LodTensor::from_lengths::<Int32Type>(&[vec![per_row; rows]], values, vec![]).unwrap();
    let ds = Dataset::try_new(vec![Column::new("tokens", tokens)]).unwrap();
    let write = lodtensor::WriteOptions::default().with_compression(compression);
    let options = ShardOptions::default()
        .with_shard_rows(20)
        .with_write_options(write);
    let mut writer = ShardWriter::create(dir, options).unwrap();
    writer.write(&ds).unwrap();
    let manifest = writer.finish().unwrap();
    assert_eq!(manifest.shards.len(), shards);
    manifest
}

/// The bytes of the shards' entries and downloads under way in `dir` (sidecars, locks and
/// the metadata aside).
fn cache_bytes(dir: &Path) -> u64 {
    crate::common::files_under(dir)
        .iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            !name.ends_with(".lock") && !name.contains(".sum") && !name.contains("_meta")
        })
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Reads every row of `remote` in batches of 20 rows (a lazy loader, in shard order),
/// calling `after_each` after each batch; the rows read.
fn read_every_row(remote: &ShardedDataset, mut after_each: impl FnMut()) -> usize {
    let mut loader = lodtensor::Loader::builder(remote)
        .with_batch_size(20)
        .build()
        .unwrap();
    let mut rows = 0;
    while let Some(batch) = loader.next_batch().unwrap() {
        rows += batch.samples().len();
        after_each();
    }
    rows
}

#[test]
fn the_cache_limit_counts_decompressed_bytes_and_room_is_made_before_writing() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, largest) = uploaded(&s3, "expand", write_compressible);
    let cache = dir.path().join("cache");
    // One shard's entry, decompressed, measured by a cache without a limit.
    let unlimited = s3.options().with_cache_dir(dir.path().join("measure"));
    let measured =
        ShardedDataset::open_with(url.as_str(), &unlimited.with_prefetch_bytes(0)).unwrap();
    measured.shard(0).unwrap();
    let decompressed = cache_bytes(&dir.path().join("measure"));
    assert!(decompressed > 4 * largest, "{decompressed} {largest}");
    drop(measured);
    // Room for six decompressed shards: prefetching counted in compressed bytes would
    // fetch more than fit, each evicting the one read next.
    let limit = 6 * decompressed;
    let options = s3.options().with_cache_dir(&cache).with_cache_limit(limit);
    let remote = ShardedDataset::open_with(url.as_str(), &options).unwrap();
    let (done, peak) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(cache_bytes(&cache), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        let rows = read_every_row(&remote, || {
            peak.fetch_max(cache_bytes(&cache), Ordering::Relaxed);
        });
        assert_eq!(rows, 240);
        done.store(true, Ordering::Relaxed);
    });
    let stats = remote.cache_stats().unwrap();
    assert_eq!(stats.shards_downloaded, 12, "{stats:?}");
    let peak = peak.load(Ordering::Relaxed);
    assert!(
        peak <= limit,
        "{peak} bytes on disk against a limit of {limit}"
    );
}

/// The small disk's size, and the cache limit that fits it with room for the lock files,
/// sidecars and metadata the limit does not count (each a page or more of tmpfs).
const SMALL_DISK: u64 = 8 << 20;
const SMALL_DISK_LIMIT: u64 = 6 << 20;

/// Every row of a dataset about twice the size of an 8 MiB disk (16 shards of 1,024,000
/// bytes of values), compressed with zstd and not, read through a cache on that disk with
/// a limit that fits it: no error (a full disk would be `ENOSPC`), every row, and at least
/// the shards the limit cannot hold evicted. The disk is a tmpfs in a user and mount
/// namespace (`common::run_on_small_disk`). The compressed dataset is smaller than the
/// limit: a limit counting the bytes downloaded rather than those the entries occupy would
/// evict nothing and fill the disk (issue 42, item 6). With a limit larger than the disk,
/// the child fails with `ENOSPC`.
#[test]
fn every_row_is_read_through_a_cache_on_a_disk_smaller_than_the_dataset() {
    let test =
        "hostile_remote::every_row_is_read_through_a_cache_on_a_disk_smaller_than_the_dataset";
    if !crate::common::small_disks_available(test) {
        return;
    }
    let Some(s3) = S3Server::start() else { return };
    let endpoint = s3.endpoint();
    for compression in [
        lodtensor::IpcCompression::Zstd,
        lodtensor::IpcCompression::None,
    ] {
        let name = format!("small-{compression:?}").to_lowercase();
        let write = |dir: &Path| write_small_ints(dir, 16, 12_800, compression);
        let (dir, _, url, manifest) = uploaded(&s3, &name, write);
        let stored = manifest.shards.iter().map(|s| s.bytes).sum::<u64>();
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let limit = SMALL_DISK_LIMIT.to_string();
        let stdout = crate::common::run_on_small_disk(
            "hostile_remote::child_reads_every_row_on_a_small_disk",
            &cache,
            SMALL_DISK,
            &[
                ("LODTENSOR_CHILD_URL", url.as_ref()),
                ("LODTENSOR_CHILD_ENDPOINT", endpoint.as_ref()),
                ("LODTENSOR_CHILD_CACHE", cache.as_os_str()),
                ("LODTENSOR_CHILD_LIMIT", limit.as_ref()),
            ],
        );
        let line = crate::common::child_line(&stdout, "READ ");
        let numbers: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
        let [rows, downloaded, evicted] = numbers[..] else {
            panic!("{line}")
        };
        assert_eq!((rows, downloaded), (320, 16), "{compression:?}: {line}");
        // At most 6 entries of 1,024,000 bytes and more fit in the limit.
        assert!(evicted >= 10, "{compression:?}: {line}");
        match compression {
            lodtensor::IpcCompression::None => assert!(stored > SMALL_DISK * 3 / 2, "{stored}"),
            _ => assert!(stored < SMALL_DISK_LIMIT, "{stored}"),
        }
    }
}

/// Run by `every_row_is_read_through_a_cache_on_a_disk_smaller_than_the_dataset` on a small
/// disk: reads every row of the dataset through a cache with the limit it is given, and
/// prints the rows read, the shards downloaded and those evicted.
#[test]
#[ignore = "run as a child process on a small disk"]
fn child_reads_every_row_on_a_small_disk() {
    let (Ok(url), Ok(endpoint), Ok(cache), Ok(limit)) = (
        std::env::var("LODTENSOR_CHILD_URL"),
        std::env::var("LODTENSOR_CHILD_ENDPOINT"),
        std::env::var("LODTENSOR_CHILD_CACHE"),
        std::env::var("LODTENSOR_CHILD_LIMIT"),
    ) else {
        return;
    };
    let options = S3Server::options_at(&endpoint)
        .with_cache_dir(cache)
        .with_cache_limit(limit.parse().unwrap());
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let rows = read_every_row(&remote, || {});
    let stats = remote.cache_stats().unwrap();
    let (downloaded, evicted) = (stats.shards_downloaded, stats.shards_evicted);
    println!("READ {rows} {downloaded} {evicted}");
}
