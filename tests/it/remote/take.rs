//! `take` over a URL: rows of shards not in the cache read by byte ranges (no shard
//! downloaded), equal to the local dataset's, in little more than the rows' own bytes.

use std::path::Path;

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Dataset, rng::SplitMix64, synthetic::Documents};

use super::{uploaded, write_compressed, write_local};
use crate::common::S3Server;

/// The bytes of `data`'s arrays (values, offsets, validity) as they sit in memory.
fn own_bytes(data: &Dataset) -> u64 {
    let batch = data.to_record_batch();
    batch
        .columns()
        .iter()
        .map(|a| a.to_data().get_slice_memory_size().unwrap() as u64)
        .sum()
}

/// 120 documents of 1–4 sentences of 1–20 tokens of 64 floats (a few KiB a row), in
/// shards of 25 rows.
fn write_wide(dir: &Path) {
    let spec = Documents {
        sentences: (1, 4),
        tokens: (1, 20),
        dim: 64,
    };
    let ds = spec.generate(&mut SplitMix64::new(6), 120).unwrap();
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(25)).unwrap();
    writer.write(&ds).unwrap();
    writer.finish().unwrap();
}

#[test]
fn take_reads_the_rows_by_ranges_without_downloading_a_shard() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "take", write_wide);
    let local = ShardedDataset::open(&local_dir).unwrap();
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let mut rng = SplitMix64::new(4);
    let mut rows: Vec<usize> = (0..30).map(|_| (rng.next_u64() % 120) as usize).collect();
    rows.extend([0, 119, 24, 25, 26, 26, 7]); // shard edges, repeats
    let taken = remote.take(&rows).unwrap();
    let stats = remote.cache_stats().unwrap();
    assert_eq!(taken.samples(), rows);
    assert_eq!(taken.data(), local.take(&rows).unwrap().data());
    assert_eq!(
        (stats.shards_downloaded, stats.bytes_downloaded),
        (0, 0),
        "{stats:?}"
    );
    // Ranges of a shard under 1 MiB apart are read as one request, unless the gap is over
    // 16 times the bytes wanted: here a request or two a round (three: two levels and the
    // values) per shard touched, never more than 16 times the rows' bytes.
    let mut unique = rows.clone();
    unique.sort_unstable();
    unique.dedup();
    let own = own_bytes(local.take(&unique).unwrap().data());
    let shards: u64 = local.manifest().shards.iter().map(|s| s.bytes).sum();
    assert!(
        (1..=2 * 3 * 5).contains(&stats.range_requests)
            && stats.range_bytes <= shards.min(17 * own),
        "{} bytes read for {own}: {stats:?}",
        stats.range_bytes
    );
    eprintln!("take of {} rows ({own} bytes): {stats:?}", rows.len());
    // The shards' footers and messages are read once: a second take reads rows alone.
    remote.take(&[rows[3], rows[9]]).unwrap();
    let again = remote.cache_stats().unwrap();
    assert_eq!(again.metadata_requests, stats.metadata_requests);
    assert!(again.range_requests > stats.range_requests);
    // With no gap merged, the rows' own bytes alone (and their offsets' edges).
    let options = s3.options().with_cache_dir(dir.path().join("exact"));
    let exact = ShardedDataset::open_with(&url, &options.with_range_gap(0)).unwrap();
    assert_eq!(exact.take(&rows).unwrap().data(), taken.data());
    let stats = exact.cache_stats().unwrap();
    assert!(stats.range_bytes <= own * 11 / 10, "{own}: {stats:?}");
    let projected = remote.take_columns(&rows[..5], &["label"]).unwrap();
    assert_eq!(
        projected.data(),
        local.take_columns(&rows[..5], &["label"]).unwrap().data()
    );
    assert_eq!(remote.cache_stats().unwrap().shards_downloaded, 0);
}

#[test]
fn a_cached_shard_is_mapped_and_a_compressed_batch_read_whole() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "cached", write_local);
    let options = s3
        .options()
        .with_cache_dir(dir.path().join("cache"))
        .with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    remote.shard(1).unwrap(); // rows 25..50, now in the cache
    let before = remote.cache_stats().unwrap();
    let taken = remote.take(&[30, 49, 26]).unwrap();
    let local = ShardedDataset::open(&local_dir).unwrap();
    assert_eq!(taken.data(), local.take(&[30, 49, 26]).unwrap().data());
    let after = remote.cache_stats().unwrap();
    assert_eq!(after.range_requests, before.range_requests);
    // Compressed record batches cannot be cut by bytes: the batch holding the rows is read
    // whole, into memory, and the shard is not downloaded.
    let (dir, local_dir, url, _) = uploaded(&s3, "zstd", write_compressed);
    let options = s3
        .options()
        .with_cache_dir(dir.path().join("cache"))
        .with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let local = ShardedDataset::open(&local_dir).unwrap();
    assert_eq!(
        remote.take(&[3, 1]).unwrap().data(),
        local.take(&[3, 1]).unwrap().data()
    );
    let stats = remote.cache_stats().unwrap();
    let shard = local.manifest().shards[0].bytes;
    assert_eq!(
        (stats.shards_downloaded, stats.range_requests),
        (0, 1),
        "{stats:?}"
    );
    assert!(stats.range_bytes < shard, "{shard}: {stats:?}");
}

#[test]
fn a_loader_reading_by_ranges_gives_the_cached_loader_s_batches() {
    use lodtensor::{Loader, LoaderBuilder};
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, _) = uploaded(&s3, "ranged", write_wide);
    let modes: [fn(LoaderBuilder<'_>) -> LoaderBuilder<'_>; 3] = [
        // Few batches: each is a round of range requests per level on moto.
        |b| b.with_batch_size(30).with_shuffle(2),
        |b| b.with_token_budget(2000).with_shuffle(3),
        |b| b.with_batch_size(16).with_buckets(vec![20]).shard(1, 2),
    ];
    let cached =
        ShardedDataset::open_with(&url, &s3.options().with_cache_dir(dir.path().join("a")))
            .unwrap();
    let ranged =
        ShardedDataset::open_with(&url, &s3.options().with_cache_dir(dir.path().join("b")))
            .unwrap();
    for mode in modes {
        let mut a = mode(Loader::builder(&cached)).build().unwrap();
        let mut b = mode(Loader::builder(&ranged))
            .with_range_reads(true)
            .build()
            .unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        while let Some(x) = a.next_batch().unwrap() {
            let y = b.next_batch().unwrap().expect("as many batches");
            assert_eq!(
                (x.samples(), x.data(), x.tokens()),
                (y.samples(), y.data(), y.tokens())
            );
        }
        assert!(b.next_batch().unwrap().is_none());
    }
    let stats = ranged.cache_stats().unwrap();
    assert_eq!(
        (stats.shards_downloaded, stats.bytes_downloaded),
        (0, 0),
        "{stats:?}"
    );
    assert!(stats.range_bytes > 0);
    // Packed, shuffled: the same windows, tokens and side columns.
    let packed = |data| {
        let b = Loader::builder(data).with_batch_size(16).with_shuffle(5);
        b.with_packing(lodtensor::loader::Packing::new(40))
    };
    let mut a = packed(&cached).build().unwrap();
    let mut b = packed(&ranged).with_range_reads(true).build().unwrap();
    let mut windows = 0;
    while let Some(x) = a.next_batch().unwrap() {
        let y = b.next_batch().unwrap().expect("as many batches");
        assert_eq!((x.samples(), x.data()), (y.samples(), y.data()));
        windows += x.samples().len();
    }
    assert!(windows > 10 && b.next_batch().unwrap().is_none());
    assert_eq!(ranged.cache_stats().unwrap().shards_downloaded, 0);
}

#[test]
fn a_loader_reading_by_ranges_reads_the_rows_of_its_coming_batches_together() {
    use lodtensor::Loader;
    let Some(s3) = S3Server::start() else { return };
    let open = |dir: &tempfile::TempDir, url: &str, cache: &str, gap: Option<u64>| {
        let options = s3.options().with_cache_dir(dir.path().join(cache));
        let options = options.with_prefetch_bytes(0);
        let options = gap.map_or(options.clone(), |g| options.with_range_gap(g));
        ShardedDataset::open_with(url, &options).unwrap()
    };
    // Runs of 5 rows through a window of 10, batches of 2: 60 batches, each of a run or
    // two. Read batch by batch, each would be a request or more (111); read in rounds (16
    // batches, then 44 read ahead), gaps filled by the rows of the later batches, each run
    // is read whole once: with gaps of 1 MiB merged, a request or two a shard (6); with
    // none merged, a request a run and level (12), each row's bytes once.
    let (dir, local, url, _) = uploaded(&s3, "ahead", write_wide);
    fn windowed(data: &ShardedDataset) -> lodtensor::LoaderBuilder<'_> {
        let builder = Loader::builder(data).with_batch_size(2);
        builder.with_windowed_shuffle(4, 5, 10)
    }
    let all: Vec<usize> = (0..120).collect();
    let local = ShardedDataset::open(&local).unwrap();
    let own = own_bytes(local.take(&all).unwrap().data());
    let cached = open(&dir, &url, "a", None);
    for (gap, requests, bytes) in [(None, 20, 17 * own), (Some(0), 20, own * 11 / 10)] {
        let ranged = open(&dir, &url, &format!("{gap:?}"), gap);
        let mut a = windowed(&cached).build().unwrap();
        let mut b = windowed(&ranged).with_range_reads(true).build().unwrap();
        let mut batches = 0;
        while let Some(x) = a.next_batch().unwrap() {
            let y = b.next_batch().unwrap().expect("as many batches");
            assert_eq!((x.samples(), x.data()), (y.samples(), y.data()));
            batches += 1;
        }
        assert!(b.next_batch().unwrap().is_none());
        let stats = ranged.cache_stats().unwrap();
        eprintln!("ranges epoch of {own} bytes, gap {gap:?}: {stats:?}");
        assert_eq!((batches, stats.shards_downloaded), (60, 0), "{stats:?}");
        assert!(
            stats.range_requests < requests && stats.range_bytes <= bytes,
            "{own} bytes: {stats:?}"
        );
    }
    let ranged = open(&dir, &url, "b", None);
    // A state saved midway goes on in a new loader reading by ranges: the same batches.
    let mut first = windowed(&ranged).with_range_reads(true).build().unwrap();
    (0..21).for_each(|_| drop(first.next_batch().unwrap()));
    let mut resumed = windowed(&ranged).with_range_reads(true).build().unwrap();
    resumed.restore(&first.state()).unwrap();
    while let Some(x) = first.next_batch().unwrap() {
        let y = resumed.next_batch().unwrap().expect("as many batches");
        assert_eq!((x.samples(), x.data()), (y.samples(), y.data()));
    }
    // Compressed shards: each record batch read whole, into memory, none downloaded.
    let (dir, local, url, _) = uploaded(&s3, "ahead-zstd", write_compressed);
    let (cached, ranged) = (open(&dir, &url, "a", None), open(&dir, &url, "b", None));
    let mut a = windowed(&cached).build().unwrap();
    let mut b = windowed(&ranged).with_range_reads(true).build().unwrap();
    while let Some(x) = a.next_batch().unwrap() {
        let y = b.next_batch().unwrap().expect("as many batches");
        assert_eq!((x.samples(), x.data()), (y.samples(), y.data()));
    }
    let stats = ranged.cache_stats().unwrap();
    let shards: u64 = (ShardedDataset::open(&local)
        .unwrap()
        .manifest()
        .shards
        .iter())
    .map(|s| s.bytes)
    .sum();
    assert_eq!(stats.shards_downloaded, 0, "{stats:?}");
    assert!(stats.range_bytes <= shards, "{shards}: {stats:?}");
}

#[test]
fn a_rank_taking_turns_reads_by_ranges_the_rows_of_its_own_batches_alone() {
    use lodtensor::Loader;
    let Some(s3) = S3Server::start() else { return };
    let (dir, local, url, _) = uploaded(&s3, "turns", write_wide);
    let local = ShardedDataset::open(&local).unwrap();
    for rank in 0..2 {
        let options = s3
            .options()
            .with_cache_dir(dir.path().join(format!("{rank}")));
        let ranged = ShardedDataset::open_with(&url, &options.with_range_gap(0)).unwrap();
        let builder = Loader::builder(&ranged).with_batch_size(2);
        let builder = builder
            .with_windowed_shuffle(4, 5, 10)
            .elastic_shard(rank, 2);
        let mut loader = builder.with_range_reads(true).build().unwrap();
        let mut rows = Vec::new();
        while let Some(batch) = loader.next_batch().unwrap() {
            assert_eq!(batch.data(), local.take(batch.samples()).unwrap().data());
            rows.extend_from_slice(batch.samples());
        }
        // Half the epoch's rows, each read once: the other rank's rows are not read.
        let (own, stats) = (
            own_bytes(local.take(&rows).unwrap().data()),
            ranged.cache_stats().unwrap(),
        );
        assert_eq!(rows.len(), 60);
        assert!(stats.range_bytes <= own * 11 / 10, "{own} bytes: {stats:?}");
    }
}

#[test]
fn threads_taking_rows_of_a_shard_at_once_read_its_footer_and_messages_once() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, _, url, _) = uploaded(&s3, "once", write_wide);
    let open = |cache: &str| {
        let options = s3.options().with_cache_dir(dir.path().join(cache));
        ShardedDataset::open_with(&url, &options).unwrap()
    };
    let alone = open("alone");
    alone.take(&[0]).unwrap();
    let once = alone.cache_stats().unwrap().metadata_requests;
    // Four threads (as a loader's rounds read ahead) at once: one reads the shard's
    // metadata, the others wait for it (an empty node cache each time).
    let together = open("together");
    let start = std::sync::Barrier::new(4);
    std::thread::scope(|scope| {
        for row in 1..5 {
            let (start, together) = (&start, &together);
            scope.spawn(move || {
                start.wait();
                together.take(&[row]).unwrap();
            });
        }
    });
    let stats = together.cache_stats().unwrap();
    assert_eq!(stats.metadata_requests, once, "{stats:?}");
}

#[test]
fn lying_offsets_in_the_bucket_are_a_typed_error_naming_the_shard() {
    use lodtensor::{DataError, ErrorKind, MappedDataset};
    let Some(s3) = S3Server::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("local");
    write_wide(&local);
    // Shard 1's sentence offsets: the sixth set below the fifth.
    let path = local.join("part-00001.arrow");
    let at = {
        let shard = MappedDataset::open(&path).unwrap();
        let tokens = shard.batches()[0].column("tokens").unwrap();
        let level = &tokens.lod().levels()[1];
        let base = shard.as_bytes().as_ptr() as usize;
        let width = match level.width() {
            lodtensor::OffsetWidth::I32 => 4,
            lodtensor::OffsetWidth::I64 => 8,
        };
        (level.as_ptr() as usize - base, width)
    };
    let mut bytes = std::fs::read(&path).unwrap();
    let (start, width) = (at.0 + 5 * at.1, at.1);
    bytes[start..start + width].fill(0xff); // -1
    std::fs::write(&path, bytes).unwrap();
    let url = s3.upload_dir(&local, "data", "lying");
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let err = remote.take(&(25..50).collect::<Vec<_>>()).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Data(DataError::NegativeOffset { .. } | DataError::DecreasingOffset { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("lying/part-00001.arrow"), "{err}");
    assert_eq!(err.column(), Some(("tokens", 0)), "{err}");
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Data(DataError::DecreasingOffset {
                level: 1,
                index: 5,
                ..
            })
        ),
        "{err}"
    );
    // Rows of the other shards still read.
    assert_eq!(remote.take(&[3, 60]).unwrap().samples(), [3, 60]);
}
