//! One epoch's guarantees in every mode, against the model: every sample once, ranks
//! that take equal steps, resumption from every position with the exact next batch, the
//! same plan for the same seed and epoch.

use lodtensor::{ArgumentError, ErrorKind};
use std::collections::HashSet;

use lodtensor::Error;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::loader::{Loader, LoaderBuilder, Position};
use proptest::prelude::*;

use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_sample_once_per_epoch(
        docs in prop::collection::vec(0usize..6, 0..40),
        drop_last in any::<bool>(),
        mode in mode(),
        order in order(),
        world in 1usize..4,
        buckets in prop::collection::btree_set(1usize..60, 0..3),
        batch_bytes in 64usize..2000,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.arrow");
        let doc_tokens = write(&path, &docs, batch_bytes);
        let file = MappedDataset::open(&path).unwrap();
        let buckets: Vec<usize> = buckets.into_iter().collect();
        let n = docs.len();
        for e in 0..2u64 {
            let mut all = Vec::new();
            let mut left_out = 0;
            let mut counts = HashSet::new();
            for rank in 0..world {
                let mut loader = configure(Loader::builder(&file), &mode, &order, &buckets)
                    .with_drop_last(drop_last)
                    .shard(rank, world)
                    .build()
                    .unwrap();
                loader.set_epoch(e);
                let batches = epoch(&mut loader, &file);
                let mine = samples(&batches);
                let dropped = loader.plan(e).dropped();
                prop_assert!(drop_last || dropped == 0);
                // Near-equal shards (with drop_last, equal numbers of batches: below).
                let part = mine.len() + dropped;
                prop_assert!(drop_last || (part >= n / world && part <= n.div_ceil(world)));
                for b in &batches {
                    let tokens: usize = b.samples().iter().map(|&s| doc_tokens[s]).sum();
                    prop_assert_eq!(tokens, b.tokens());
                    if let Mode::Tokens(budget) = mode {
                        prop_assert!(tokens <= budget || (b.is_oversize() && b.samples().len() == 1));
                        prop_assert_eq!(b.is_oversize(), tokens > budget);
                    }
                    if let Mode::Samples(size) = mode {
                        prop_assert!(b.samples().len() <= size);
                    }
                    // One bucket per batch.
                    let bucket = |s: usize| buckets.partition_point(|&x| x < doc_tokens[s]);
                    prop_assert!(b.samples().iter().all(|&s| bucket(s) == bucket(b.samples()[0])));
                }
                all.extend(mine);
                left_out += dropped;
                counts.insert(batches.len());
            }
            // With drop_last, every rank the same number of batches (data-parallel steps).
            prop_assert!(!drop_last || counts.len() == 1, "batches per rank: {:?}", counts);
            let distinct: HashSet<usize> = all.iter().copied().collect();
            prop_assert_eq!(distinct.len(), all.len(), "a sample twice");
            prop_assert_eq!(distinct.len() + left_out, n);
            if left_out == 0 {
                prop_assert_eq!(distinct, (0..n).collect::<HashSet<_>>());
            }
        }
    }

    /// With `drop_last`, ranks of `shard` take equal steps and leave out, beyond what one
    /// rank alone would (each bucket's incomplete last batch), at most `world - 1` batches'
    /// worth, and never a sample over the token budget while a batch within it can go.
    #[test]
    fn drop_last_ranks_take_equal_steps_losing_at_most_world_minus_one_batches(
        docs in prop::collection::vec(0usize..6, 0..60),
        mode in mode(),
        order in order(),
        world in 1usize..5,
        buckets in prop::collection::btree_set(1usize..60, 0..3),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.arrow");
        let doc_tokens = write(&path, &docs, 500);
        let file = MappedDataset::open(&path).unwrap();
        let buckets: Vec<usize> = buckets.into_iter().collect();
        let build = |b: LoaderBuilder| {
            configure(b, &mode, &order, &buckets).with_drop_last(true).build().unwrap()
        };
        for e in 0..2u64 {
            let alone = build(Loader::builder(&file)).plan(e);
            let plans: Vec<_> =
                (0..world).map(|r| build(Loader::builder(&file).shard(r, world)).plan(e)).collect();
            let steps: HashSet<usize> = plans.iter().map(|p| p.len()).collect();
            prop_assert_eq!(steps.len(), 1, "batches per rank: {:?}", steps);
            let read: HashSet<usize> = plans.iter().flat_map(|p| p.samples().to_vec()).collect();
            let in_alone: HashSet<usize> = alone.samples().iter().copied().collect();
            let unread = |kept: &HashSet<usize>| -> Vec<usize> {
                (0..docs.len()).filter(|s| !kept.contains(s)).collect()
            };
            let (tail, lost) = (unread(&in_alone), unread(&read));
            prop_assert_eq!(lost.len(), plans.iter().map(|p| p.dropped()).sum::<usize>());
            match mode {
                Mode::Samples(size) => {
                    prop_assert!(lost.len() <= tail.len() + (world - 1) * size,
                        "{} left out, {} by one rank alone", lost.len(), tail.len());
                }
                Mode::Tokens(budget) => {
                    let tokens = |s: &[usize]| -> usize {
                        s.iter().map(|&s| doc_tokens[s]).filter(|&t| t <= budget).sum()
                    };
                    prop_assert!(tokens(&lost) <= tokens(&tail) + (world - 1) * budget,
                        "{} tokens left out, {} by one rank alone", tokens(&lost), tokens(&tail));
                    let oversize_lost = lost.iter().filter(|&&s| doc_tokens[s] > budget).count();
                    let only_oversize_read = plans.iter().all(|p| p.oversize() == p.len());
                    prop_assert!(oversize_lost == 0 || (only_oversize_read && oversize_lost < world),
                        "{} oversize samples left out", oversize_lost);
                }
            }
        }
    }

    /// Resume from every position of two epochs, in every mode, on the same file and on
    /// the same rows written in other record batches: the identical continuation, or (only
    /// where the boundaries decide the order: a chunk shuffle) a refusal saying so.
    #[test]
    fn resume_from_every_position_even_after_rebatching(
        docs in prop::collection::vec(0usize..5, 0..24),
        mode in mode(),
        order in order(),
        buckets in prop::collection::btree_set(1usize..40, 0..3),
        drop_last in any::<bool>(),
        (world, rank) in (1usize..3).prop_flat_map(|w| (Just(w), 0..w)),
        (bytes_a, bytes_b) in (64usize..1500, 64usize..1500),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (path_a, path_b) = (dir.path().join("a.arrow"), dir.path().join("b.arrow"));
        write(&path_a, &docs, bytes_a);
        write(&path_b, &docs, bytes_b);
        let (a, b) = (MappedDataset::open(&path_a).unwrap(), MappedDataset::open(&path_b).unwrap());
        let buckets: Vec<usize> = buckets.into_iter().collect();
        let build = |file: &MappedDataset| {
            configure(Loader::builder(file), &mode, &order, &buckets)
                .with_drop_last(drop_last)
                .shard(rank, world)
                .build()
                .unwrap()
        };
        // The reference: two epochs straight through, with the position before each batch
        // and at each epoch's end.
        let mut reference = build(&a);
        let mut straight = Vec::new();
        let mut positions = vec![(reference.next_position(), 0)];
        for _ in 0..2 {
            for batch in &mut reference {
                let batch = batch.unwrap();
                positions.push((batch.next_position(), straight.len() + 1));
                straight.push(batch);
            }
            positions.push((reference.next_position(), straight.len()));
        }
        let rebatched = a.batches().iter().map(|d| d.num_rows()).collect::<Vec<_>>()
            != b.batches().iter().map(|d| d.num_rows()).collect::<Vec<_>>();
        for (position, done) in positions {
            let saved = Position::from_json(&position.to_json()).unwrap();
            for file in [&a, &b] {
                let mut loader = build(file);
                match loader.seek(saved).map_err(Error::into_kind) {
                    Err(ErrorKind::Argument(ArgumentError::PositionMismatch { differs })) => {
                        prop_assert!(
                            matches!(order, Order::Chunks(..)) && rebatched && std::ptr::eq(file, &b),
                            "refused: {}", differs
                        );
                        prop_assert!(differs.starts_with("the record-batch boundaries"), "{}", differs);
                        continue;
                    }
                    other => other.unwrap(),
                }
                let mut rest = Vec::new();
                while rest.len() + done < straight.len() {
                    if let Some(batch) = loader.next_batch().unwrap() {
                        rest.push(batch);
                    }
                }
                for (x, y) in straight[done..].iter().zip(&rest) {
                    prop_assert_eq!(x.samples(), y.samples());
                    prop_assert_eq!(x.data(), y.data());
                    prop_assert_eq!(x.position(), y.position());
                }
            }
        }
    }

    #[test]
    fn resume_continues_with_the_exact_next_batch(
        docs in prop::collection::vec(1usize..5, 1..30),
        mode in mode(),
        order in order(),
        stop in 0usize..40,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.arrow");
        write(&path, &docs, 300);
        let file = MappedDataset::open(&path).unwrap();
        let build = || configure(Loader::builder(&file), &mode, &order, &[]).build().unwrap();
        // The reference: two epochs straight through.
        let mut reference = build();
        let mut straight = epoch(&mut reference, &file);
        straight.extend(epoch(&mut reference, &file));
        let stop = stop.min(straight.len());
        // A job that stops after `stop` batches, saving its position as JSON.
        let mut first = build();
        let mut saved = first.next_position().to_json();
        let mut taken = 0;
        while taken < stop {
            match first.next_batch().unwrap() {
                Some(b) => {
                    saved = b.next_position().to_json();
                    taken += 1;
                }
                None => saved = first.next_position().to_json(),
            }
        }
        let mut second = build();
        second.seek(lodtensor::Position::from_json(&saved).unwrap()).unwrap();
        let mut rest = Vec::new();
        while rest.len() + stop < straight.len() {
            match second.next_batch().unwrap() {
                Some(b) => rest.push(b),
                None => continue,
            }
        }
        for (a, b) in straight[stop..].iter().zip(&rest) {
            prop_assert_eq!(a.samples(), b.samples());
            prop_assert_eq!(a.data(), b.data());
            prop_assert_eq!(a.position(), b.position());
        }
    }
}

#[test]
fn plans_are_deterministic_across_loaders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[3; 50], 400);
    let file = MappedDataset::open(&path).unwrap();
    let plan = |seed, epoch| {
        Loader::builder(&file)
            .with_token_budget(40)
            .with_shuffle(seed)
            .with_quantile_buckets(3)
            .build()
            .unwrap()
            .plan(epoch)
    };
    assert_eq!(plan(9, 2), plan(9, 2));
    assert_ne!(plan(9, 2).samples(), plan(9, 3).samples());
    assert_ne!(plan(9, 2).samples(), plan(10, 2).samples());
}
