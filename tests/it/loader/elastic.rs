//! Elastic ranks: positions that resume on any number of ranks, and the workers of
//! data-parallel ranks.

use lodtensor::Batch;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::loader::{Loader, LoaderBuilder, Position};
use proptest::prelude::*;

use super::*;

/// One step of elastic ranks: each rank's next batch, checked to be the rows it names and
/// to leave every rank at the same position. Ranks past the epoch's last batch get none
/// (always the last ranks of a step); `None` when no rank gets one.
fn elastic_step(loaders: &mut [Loader], file: &MappedDataset) -> Option<(Vec<Batch>, Position)> {
    let mut batches: Vec<Batch> = Vec::new();
    for loader in loaders.iter_mut() {
        let before = loader.next_position();
        let Some(b) = loader.next_batch().unwrap() else {
            continue;
        };
        assert_eq!(
            batches.len(),
            b.index() - before.batch,
            "a rank skipped its turn"
        );
        for (k, &s) in b.samples().iter().enumerate() {
            assert_eq!(
                b.data().slice_rows(k..k + 1).unwrap(),
                file.sample(s).unwrap()
            );
        }
        assert_eq!(b.position(), before);
        if let Some(first) = batches.first() {
            assert_eq!(first.next_position(), b.next_position(), "ranks disagree");
        }
        batches.push(b);
    }
    let next = batches.first()?.next_position();
    Some((batches, next))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A job on `world_a` elastic ranks stops after `steps` steps and resumes from the
    /// position all its ranks saved on `world_b` ranks: together they read the plan of one
    /// rank, batch for batch, each batch once, and the rest of the epoch as it would have;
    /// with `drop_last`, every step has a batch for every rank and only a last step with
    /// fewer batches than ranks is left out.
    #[test]
    fn elastic_positions_resume_on_any_number_of_ranks(
        docs in prop::collection::vec(0usize..5, 0..40),
        mode in mode(),
        order in order(),
        drop_last in any::<bool>(),
        (world_a, world_b) in (1usize..5, 1usize..5),
        steps in 0usize..12,
        epoch in 0u64..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.arrow");
        write(&path, &docs, 400);
        let file = MappedDataset::open(&path).unwrap();
        let build = |b: LoaderBuilder<'_>| epoch_loader(b, (&mode, &order), drop_last, epoch);
        let ranks = |world: usize| -> Vec<Loader> {
            (0..world).map(|r| build(Loader::builder(&file).elastic_shard(r, world))).collect()
        };
        let plan = build(Loader::builder(&file)).plan(epoch);
        let mut read: Vec<usize> = Vec::new();
        let mut before = ranks(world_a);
        for (rank, l) in before.iter().enumerate() {
            let turns = match drop_last {
                true => plan.len() / world_a,
                false => plan.len().saturating_sub(rank).div_ceil(world_a),
            };
            prop_assert_eq!(l.num_batches(epoch), turns);
            prop_assert_eq!(l.fingerprint(), before[0].fingerprint());
        }
        let mut saved = before[0].next_position();
        for _ in 0..steps {
            let Some((batches, next)) = elastic_step(&mut before, &file) else { break };
            prop_assert!(!drop_last || batches.len() == world_a);
            read.extend(batches.iter().map(Batch::index));
            saved = next;
            if batches.len() < world_a {
                break; // the epoch's last step
            }
        }
        let saved = Position::from_json(&saved.to_json()).unwrap();
        let mut after = ranks(world_b);
        for l in &mut after {
            l.seek(saved).unwrap();
        }
        while let Some((batches, _)) = elastic_step(&mut after, &file) {
            prop_assert!(!drop_last || batches.len() == world_b);
            read.extend(batches.iter().map(Batch::index));
            if batches.len() < world_b {
                break;
            }
        }
        // Every batch of the plan, in plan order, once: each sample once; with `drop_last`
        // up to the last step that had a batch for every rank.
        let end = match drop_last {
            true => saved.batch + (plan.len() - saved.batch) / world_b * world_b,
            false => plan.len(),
        };
        prop_assert_eq!(read, (0..end).collect::<Vec<_>>());
        // A position of elastic ranks is refused by contiguous ones.
        let mut parts = build(Loader::builder(&file).shard(0, world_b));
        prop_assert!(parts.seek(saved).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Elastic ranks that are the workers of `ranks` data-parallel ranks
    /// (`elastic_shard_of_workers`, worker `w` of rank `r` being rank `w * ranks + r`), read
    /// as a DataLoader reads its workers, in turn, skipping those that ended: every
    /// data-parallel rank reads the plan's batches `r`, `r + ranks`, ... in order, with
    /// `drop_last` as many as every other (`len / ranks`), so at most `ranks - 1` batches
    /// of the plan are left out, whatever the number of workers.
    #[test]
    fn elastic_workers_of_data_parallel_ranks_lose_at_most_ranks_minus_one_batches(
        docs in prop::collection::vec(0usize..5, 0..40),
        mode in mode(),
        order in order(),
        drop_last in any::<bool>(),
        (ranks, workers) in (1usize..4, 1usize..4),
        epoch in 0u64..2,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.arrow");
        write(&path, &docs, 400);
        let file = MappedDataset::open(&path).unwrap();
        let build = |b: LoaderBuilder<'_>| epoch_loader(b, (&mode, &order), drop_last, epoch);
        let plan = build(Loader::builder(&file)).plan(epoch).len();
        let end = if drop_last { plan / ranks * ranks } else { plan };
        for r in 0..ranks {
            let world = ranks * workers;
            let mut loaders: Vec<Loader> = (0..workers)
                .map(|w| build(Loader::builder(&file).elastic_shard_of_workers(w * ranks + r, world, ranks)))
                .collect();
            let counts: Vec<usize> = loaders.iter().map(|l| l.num_batches(epoch)).collect();
            let mut read = Vec::new();
            let mut live: Vec<usize> = (0..workers).collect();
            while !live.is_empty() {
                live.retain(|&w| match loaders[w].next_batch().unwrap() {
                    Some(b) => {
                        read.push(b.index());
                        true
                    }
                    None => false,
                });
            }
            prop_assert_eq!(&read, &(r..end).step_by(ranks).collect::<Vec<_>>());
            prop_assert_eq!(counts.iter().sum::<usize>(), read.len());
        }
    }
}
