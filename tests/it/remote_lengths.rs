//! Loaders over a remote dataset whose plans need sample lengths (token budgets, buckets,
//! quantile buckets, chunk or windowed shuffles over shards of several record batches)
//! read the lengths from the lengths index, or without one from the shards' metadata: building downloads no shard, the batches and
//! positions are those of the loader over the same local dataset, and the first batch
//! downloads the shards it reads.

use std::path::Path;

use lodtensor::loader::{PackMode, Packing};
use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Dataset, ErrorKind, FormatError, Loader, LoaderBuilder};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

use crate::common::S3Server;
use crate::hostile_remote::entry_of;
use crate::remote::uploaded;

/// 240 documents of up to 6 sentences of up to `tokens` tokens of 32 floats, in shards of
/// 30 rows, written in `pieces` writes (several record batches per shard when more than 1).
/// Returns the dataset's bytes.
fn write(dir: &Path, seed: u64, pieces: usize, tokens: usize) -> u64 {
    let spec = Documents {
        sentences: (1, 6),
        tokens: (1, tokens),
        dim: 32,
    };
    let ds: Dataset = spec.generate(&mut SplitMix64::new(seed), 240).unwrap();
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(30)).unwrap();
    let step = 240usize.div_ceil(pieces);
    for start in (0..240).step_by(step) {
        let rows = start..(start + step).min(240);
        writer.write(&ds.slice_rows(rows).unwrap()).unwrap();
    }
    let manifest = writer.finish().unwrap();
    manifest.shards.iter().map(|s| s.bytes).sum()
}

/// [`write`], the manifest without its lengths index (as an earlier version wrote it): a
/// loader measures the shards' metadata.
fn write_unindexed(dir: &Path, seed: u64, pieces: usize, tokens: usize) -> u64 {
    let bytes = write(dir, seed, pieces, tokens);
    let path = dir.join(lodtensor::shards::MANIFEST_NAME);
    let mut manifest = lodtensor::shards::Manifest::load(&path).unwrap();
    manifest.index.clear();
    manifest.write(&path).unwrap();
    bytes
}

type Build = fn(LoaderBuilder<'_>) -> LoaderBuilder<'_>;

/// Every mode whose plan needs sample lengths: packing (split, best fit), token budgets,
/// buckets, quantile buckets, chunk shuffles over shards of several record batches.
const MODES: [Build; 12] = [
    |b| b.with_batch_size(3).with_packing(Packing::new(64)),
    |b| {
        b.with_batch_size(2)
            .with_packing(Packing::new(50).with_mode(PackMode::best_fit(16)))
            .with_shuffle(6)
    },
    |b| {
        b.with_batch_size(4)
            .with_packing(Packing::new(32).with_extra_token(true))
            .with_windowed_shuffle(1, 4, 8)
            .shard(0, 2)
    },
    |b| b.with_token_budget(600),
    |b| b.with_token_budget(500).with_shuffle(3),
    |b| b.with_token_budget(400).with_windowed_shuffle(5, 7, 9),
    |b| {
        b.with_token_budget(700)
            .with_chunk_shuffle(2, 5)
            .shard(1, 3)
    },
    |b| {
        b.with_batch_size(6)
            .with_buckets(vec![40, 90])
            .with_shuffle(1)
    },
    |b| {
        b.with_batch_size(5)
            .with_quantile_buckets(3)
            .elastic_shard(1, 2)
    },
    |b| b.with_token_budget(300).with_drop_last(true).shard(0, 2),
    |b| b.with_batch_size(4).with_chunk_shuffle(8, 3),
    |b| b.with_token_budget(500).with_length_column("tokens", 0),
];

/// Two epochs: each batch's samples, data, view flag and tokens, and the positions.
fn epochs(loader: &mut Loader) -> Vec<(Vec<usize>, Dataset, bool, usize, String)> {
    let mut out = Vec::new();
    for _ in 0..2 {
        while let Some(batch) = loader.next_batch().unwrap() {
            let position = batch.next_position().to_json();
            let (samples, data) = (batch.samples().to_vec(), batch.data().clone());
            out.push((samples, data, batch.is_view(), batch.tokens(), position));
        }
    }
    out
}

#[test]
fn a_length_needing_loader_over_a_url_makes_the_local_batches_and_positions() {
    let Some(s3) = S3Server::start() else { return };
    for pieces in [1, 3] {
        let (dir, local_dir, url, _) = uploaded(&s3, &format!("lengths{pieces}"), |d| {
            // Shards in one piece with the lengths index, in three measured.
            match pieces {
                1 => write(d, 7, pieces, 40),
                _ => write_unindexed(d, 7, pieces, 40),
            }
        });
        let local = ShardedDataset::open(&local_dir).unwrap();
        let options = s3.options().with_cache_dir(dir.path().join("cache"));
        let remote = ShardedDataset::open_with(&url, &options).unwrap();
        for (m, build) in MODES.iter().enumerate() {
            let mut lazy = build(Loader::builder(&remote)).build().unwrap();
            let mut eager = build(Loader::builder(&local)).build().unwrap();
            assert_eq!(lazy.fingerprint(), eager.fingerprint(), "mode {m}");
            assert_eq!(lazy.sample_lengths(), eager.sample_lengths(), "mode {m}");
            assert!(
                epochs(&mut lazy) == epochs(&mut eager),
                "mode {m}, {pieces} pieces"
            );
            // A position saved by one resumes on the other, either way.
            let mut eager = build(Loader::builder(&local)).build().unwrap();
            eager.next_batch().unwrap().unwrap();
            let saved = eager.next_batch().unwrap().unwrap().next_position();
            let mut lazy = build(Loader::builder(&remote)).build().unwrap();
            lazy.seek(saved).unwrap();
            let (a, b) = (lazy.next_batch().unwrap(), eager.next_batch().unwrap());
            assert_eq!(a.map(|b| b.data().clone()), b.map(|b| b.data().clone()));
        }
    }
}

#[test]
fn building_a_token_budget_loader_over_a_url_reads_metadata_only() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, total) = uploaded(&s3, "budget", |d| write_unindexed(d, 9, 1, 40));
    let local = ShardedDataset::open(&local_dir).unwrap();
    // No download ahead: the first batch downloads exactly the shards it reads.
    let options = s3
        .options()
        .with_cache_dir(dir.path().join("cache"))
        .with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let build: Build = |b| b.with_token_budget(500).with_windowed_shuffle(4, 10, 16);
    let mut loader = build(Loader::builder(&remote)).build().unwrap();
    let stats = remote.cache_stats().unwrap();
    assert_eq!((stats.bytes_downloaded, stats.shards_downloaded), (0, 0));
    assert!(stats.metadata_bytes > 0, "{stats:?}");
    // Footers, messages and the offsets of two levels: under 3 % of these small shards.
    assert!(
        stats.metadata_bytes * 100 <= total * 3,
        "{} of {total}",
        stats.metadata_bytes
    );
    let first = loader.next_batch().unwrap().unwrap();
    let mut touched: Vec<usize> = (first.samples().iter())
        .map(|&s| local.locate_row(s).unwrap().0)
        .collect();
    touched.dedup();
    assert_eq!(touched.len(), 1); // a windowed shuffle reads one shard at a time here
    let stats = remote.cache_stats().unwrap();
    assert_eq!(stats.shards_downloaded, 1, "{stats:?}");
    let mut expected = build(Loader::builder(&local)).build().unwrap();
    assert_eq!(first.data(), expected.next_batch().unwrap().unwrap().data());
    // So does a packing loader's: the length column's offsets, and every other tensor
    // column's with levels (to find those with as many elements per row).
    let packing = Loader::builder(&remote)
        .with_packing(Packing::new(128))
        .build()
        .unwrap();
    assert_eq!(remote.cache_stats().unwrap().shards_downloaded, 1);
    drop(packing);
    // A second build reads the shard it has from the cache, the others from the store.
    let before = remote.cache_stats().unwrap();
    build(Loader::builder(&remote)).build().unwrap();
    let after = remote.cache_stats().unwrap();
    assert!(after.metadata_requests - before.metadata_requests < before.metadata_requests);
}

#[test]
fn a_shard_whose_metadata_differed_from_its_bytes_is_refused_when_mapped() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "changed", |d| write_unindexed(d, 1, 1, 8));
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache).with_prefetch_bytes(0);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    // Shard 0's cache entry planted with other documents of as many rows (shorter ones,
    // padded before the footer to the shard's size): the metadata is read from it.
    let other = dir.path().join("other");
    write(&other, 2, 1, 4);
    let real = std::fs::read(local_dir.join("part-00000.arrow")).unwrap();
    let mut fake = std::fs::read(other.join("part-00000.arrow")).unwrap();
    let footer = u32::from_le_bytes(fake[fake.len() - 10..fake.len() - 6].try_into().unwrap());
    let at = fake.len() - 10 - footer as usize;
    fake.splice(at..at, vec![0; real.len() - fake.len()]);
    let (_, planted) = entry_of(&cache, &url, &remote);
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::fs::write(&planted, &fake).unwrap();
    let mut loader = Loader::builder(&remote)
        .with_token_budget(400)
        .build()
        .unwrap();
    // The real shard is downloaded: its checksum is right, its lengths are not the plan's.
    std::fs::remove_file(&planted).unwrap();
    let err = loader.next_batch().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("changed since the loader read its metadata"),
        "{text}"
    );
    assert!(text.contains("part-00000.arrow"), "{text}");
}

#[test]
fn a_shard_that_is_not_an_ipc_file_or_is_short_is_refused_at_build_naming_it() {
    let Some(s3) = S3Server::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let local_dir = dir.path().join("local");
    write_unindexed(&local_dir, 3, 1, 20);
    let shard = local_dir.join("part-00001.arrow");
    let bytes = std::fs::read(&shard).unwrap();
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    // Garbage of the shard's size, then the shard cut short (the manifest says more).
    for (prefix, changed) in [
        ("garbage", vec![0x5a; bytes.len()]),
        ("short", bytes[..bytes.len() / 2].to_vec()),
    ] {
        std::fs::write(&shard, &changed).unwrap();
        let url = s3.upload_dir(&local_dir, "data", prefix);
        let remote = ShardedDataset::open_with(&url, &options).unwrap();
        let err = Loader::builder(&remote)
            .with_token_budget(400)
            .build()
            .unwrap_err();
        let named = err.path().map(|p| p.to_string_lossy().into_owned());
        assert_eq!(named, Some(format!("{url}part-00001.arrow")), "{err}");
        match prefix {
            "garbage" => assert!(
                matches!(
                    err.kind(),
                    ErrorKind::Format(FormatError::InvalidFile { .. })
                ),
                "{err}"
            ),
            _ => assert!(
                matches!(err.kind(), ErrorKind::Format(FormatError::ShardMismatch { field, .. }) if field == "bytes"),
                "{err}"
            ),
        }
        assert_eq!(remote.cache_stats().unwrap().shards_downloaded, 0);
    }
}

/// `index_with` adds the lengths index to a dataset at a URL (the deprecated `index_url`
/// too, to the same manifest) or in a directory, and a loader then reads it.
#[test]
#[allow(deprecated)]
fn index_with_indexes_a_url_or_a_directory() {
    use lodtensor::shards::{RemoteOptions, index_url, index_with};
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "indexed", |d| write_unindexed(d, 4, 1, 20));
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let indexed = index_with(url.as_str(), &options).unwrap();
    assert_eq!(
        indexed.index.iter().map(|e| e.shards).sum::<usize>(),
        indexed.shards.len()
    );
    assert_eq!(index_url(&url, &options).unwrap(), indexed);
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    assert_eq!(remote.manifest(), &indexed);
    let local = index_with(local_dir.as_path(), &RemoteOptions::default()).unwrap();
    assert_eq!(local.index.len(), 1);
    assert_eq!(local.shards, indexed.shards);
}
