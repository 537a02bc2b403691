//! The loader over a remote dataset: it waits for its first shard, downloads each shard
//! once an epoch and the next shard of its plan ahead.

use lodtensor::Loader;
use lodtensor::shards::ShardedDataset;

use crate::common::S3Server;

use super::*;

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
