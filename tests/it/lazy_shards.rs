//! Loaders over shards whose plans need no lengths map a shard only when a batch first
//! reads it: the same batches as the loader that maps every shard when built, and a shard
//! that goes bad after the loader is built is an error only at the batch that reads it.

use std::path::Path;

use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Dataset, Loader, LoaderBuilder};
use lodtensor::{rng::SplitMix64, synthetic::Documents};
use proptest::prelude::*;

/// `docs` small documents in shards of `shard_rows` rows, written in `pieces` writes (so a
/// shard holds one record batch when `pieces` is 1, often two otherwise).
fn write(dir: &Path, seed: u64, docs: usize, shard_rows: usize, pieces: usize) {
    let spec = Documents {
        sentences: (0, 4),
        tokens: (1, 5),
        dim: 3,
    };
    let ds: Dataset = spec.generate(&mut SplitMix64::new(seed), docs).unwrap();
    let options = ShardOptions::default().with_shard_rows(shard_rows);
    let mut writer = ShardWriter::create(dir, options).unwrap();
    let step = docs.div_ceil(pieces).max(1);
    for start in (0..docs).step_by(step) {
        writer
            .write(&ds.slice_rows(start..(start + step).min(docs)).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
}

/// Options by number: every shuffle (file order, samples, chunks, windowed), with or
/// without `drop_last`, over ranks in parts or in turns.
fn options(
    b: LoaderBuilder<'_>,
    mode: usize,
    seed: u64,
    rank: usize,
    world: usize,
) -> LoaderBuilder<'_> {
    let b = b
        .with_batch_size(1 + mode % 4)
        .with_drop_last(mode.is_multiple_of(3));
    let b = match mode % 4 {
        0 => b,
        1 => b.with_shuffle(seed),
        2 => b.with_chunk_shuffle(seed, 3),
        _ => b.with_windowed_shuffle(seed, 2, 5),
    };
    if mode.is_multiple_of(2) {
        b.shard(rank, world)
    } else {
        b.elastic_shard(rank, world)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Two epochs of every rank: the same samples, data, views, tokens and longest
    /// samples as the loader that maps every shard when built.
    #[test]
    fn a_lazy_loader_makes_the_batches_of_the_eager_one(
        docs in 1usize..50,
        seed in 0u64..1000,
        shard_rows in 1usize..10,
        pieces in 1usize..3,
        mode in 0usize..12,
        world in 1usize..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), seed, docs, shard_rows, pieces);
        let data = ShardedDataset::open(dir.path()).unwrap();
        for rank in 0..world {
            let mut lazy = options(Loader::builder(&data), mode, seed, rank, world).build().unwrap();
            let eager = options(Loader::builder(&data), mode, seed, rank, world);
            let mut eager = eager.with_lazy_shards(false).build().unwrap();
            for epoch in 0..2 {
                let (p, q) = (lazy.plan(epoch), eager.plan(epoch));
                prop_assert_eq!(p.samples(), q.samples());
                prop_assert_eq!(lazy.num_batches(epoch), eager.num_batches(epoch));
                loop {
                    let (a, b) = (lazy.next_batch().unwrap(), eager.next_batch().unwrap());
                    prop_assert_eq!(a.is_some(), b.is_some());
                    let (Some(a), Some(b)) = (a, b) else { break };
                    prop_assert_eq!(a.samples(), b.samples());
                    prop_assert_eq!(a.data(), b.data());
                    prop_assert_eq!(a.is_view(), b.is_view());
                    prop_assert_eq!((a.tokens(), a.max_len()), (b.tokens(), b.max_len()));
                    prop_assert_eq!(a.next_position().batch, b.next_position().batch);
                }
            }
        }
    }
}

#[test]
fn building_a_lazy_loader_opens_no_shard() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 3, 30, 10, 1);
    let data = ShardedDataset::open(dir.path()).unwrap();
    // Shard 2 goes away after the dataset is open: the loader is built, reads shards 0
    // and 1, and meets the missing shard at the batch that reads it.
    let last = dir.path().join(&data.manifest().shards[2].file);
    std::fs::remove_file(&last).unwrap();
    assert!(
        Loader::builder(&data)
            .with_lazy_shards(false)
            .build()
            .is_err()
    );
    // Lengths from the manifest (batch sizes) or from the lengths index (token budgets).
    let by_size = Loader::builder(&data).with_batch_size(5);
    let by_tokens = Loader::builder(&data).with_token_budget(20);
    for builder in [by_size, by_tokens] {
        let mut loader = builder.build().unwrap();
        let err = loop {
            match loader.next_batch() {
                Ok(Some(batch)) => assert!(batch.samples().iter().all(|&s| s < 20)),
                Ok(None) => panic!("an epoch past a missing shard"),
                Err(err) => break err,
            }
        };
        assert_eq!(err.path(), Some(last.as_path()), "{err}");
    }
    // Without the index, a token budget's lengths come from every shard's metadata.
    let manifest = dir.path().join("_lodtensor.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("index");
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
    let unindexed = ShardedDataset::open(dir.path()).unwrap();
    let err = Loader::builder(&unindexed)
        .with_token_budget(20)
        .build()
        .unwrap_err();
    assert_eq!(err.path(), Some(last.as_path()), "{err}");
}

#[test]
fn positions_resume_on_a_loader_built_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 4, 30, 10, 1);
    let data = ShardedDataset::open(dir.path()).unwrap();
    let build = |lazy| {
        Loader::builder(&data)
            .with_batch_size(4)
            .with_shuffle(2)
            .with_lazy_shards(lazy)
            .build()
            .unwrap()
    };
    let mut first = build(true);
    first.next_batch().unwrap();
    let saved = first.next_position();
    let mut again = build(true);
    again.seek(saved).unwrap();
    assert_eq!(
        again.next_batch().unwrap().unwrap().data(),
        first.next_batch().unwrap().unwrap().data()
    );
    let err = build(false).seek(saved).unwrap_err();
    assert!(err.to_string().contains("lengths"), "{err}");
}

/// The samples of the rest of the epoch.
fn rest_of_epoch(loader: &mut Loader) -> Vec<usize> {
    let mut out = Vec::new();
    while let Some(batch) = loader.next_batch().unwrap() {
        out.extend_from_slice(batch.samples());
    }
    out
}

#[test]
fn a_state_goes_on_between_a_loader_counting_samples_and_one_reading_lengths() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 5, 40, 10, 1);
    let data = ShardedDataset::open(dir.path()).unwrap();
    let by_count = || Loader::builder(&data).with_batch_size(3);
    let by_budget = || Loader::builder(&data).with_token_budget(8);
    for (first, then) in [(by_count(), by_budget()), (by_budget(), by_count())] {
        let mut first = first.with_shuffle(7).elastic_shard(0, 1).build().unwrap();
        let mut read: Vec<usize> = (0..3)
            .flat_map(|_| first.next_batch().unwrap().unwrap().samples().to_vec())
            .collect();
        let mut then = then.with_shuffle(7).elastic_shard(0, 1).build().unwrap();
        then.restore(&first.state()).unwrap();
        read.extend(rest_of_epoch(&mut then));
        read.sort_unstable();
        assert_eq!(read, (0..40).collect::<Vec<_>>());
    }
    // Other data: as many samples of other lengths, or other samples, are refused.
    let other = tempfile::tempdir().unwrap();
    write(other.path(), 6, 40, 10, 1);
    let other = ShardedDataset::open(other.path()).unwrap();
    let fewer = tempfile::tempdir().unwrap();
    write(fewer.path(), 5, 39, 10, 1);
    let fewer = ShardedDataset::open(fewer.path()).unwrap();
    let state = |b: LoaderBuilder<'_>| {
        let mut loader = b.with_shuffle(7).elastic_shard(0, 1).build().unwrap();
        loader.next_batch().unwrap();
        loader.state()
    };
    let budget_state = state(Loader::builder(&other).with_token_budget(8));
    let count_state = state(Loader::builder(&fewer).with_batch_size(3));
    for (mut loader, saved) in [(by_count(), &budget_state), (by_budget(), &count_state)]
        .map(|(b, s)| (b.with_shuffle(7).elastic_shard(0, 1).build().unwrap(), s))
    {
        let err = loader.restore(saved).unwrap_err();
        assert!(err.to_string().contains("lengths"), "{err}");
    }
}
