//! The training-loop loader against a model: every sample once per epoch in every mode,
//! batches equal to the samples they name, determinism, resumption, zero-copy views and
//! buffer reuse.

use lodtensor::{ArgumentError, ErrorKind};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::loader::{Loader, LoaderBuilder, Position};
use lodtensor::{Batch, Column, Dataset, Error, Lod, LodTensor, Values};
use proptest::prelude::*;

/// Documents of `doc_sentences[i]` sentences of 1–7 tokens (2 floats each) and an `i64`
/// label per document, written in record batches of about `batch_bytes`.
fn write(path: &Path, doc_sentences: &[usize], batch_bytes: usize) -> Vec<usize> {
    let sentences: Vec<usize> = (0..doc_sentences.iter().sum::<usize>())
        .map(|i| 1 + (i * 5 + 3) % 7)
        .collect();
    let tokens: usize = sentences.iter().sum();
    let mut doc_tokens = Vec::new();
    let mut s = 0;
    for &n in doc_sentences {
        doc_tokens.push(sentences[s..s + n].iter().sum());
        s += n;
    }
    let t = LodTensor::from_lengths::<Float32Type>(
        &[doc_sentences.to_vec(), sentences],
        (0..tokens * 2).map(|i| i as f32).collect(),
        vec![2],
    )
    .unwrap();
    let label = LodTensor::try_new(
        Lod::default(),
        Values::from_vec::<Int64Type>((0..doc_sentences.len() as i64).collect(), vec![]).unwrap(),
    )
    .unwrap();
    let ds = Dataset::try_new(vec![
        Column::new("tokens", t)
            .with_level_names(["documents", "sentences"])
            .unwrap(),
        Column::new("label", label),
    ])
    .unwrap();
    let mut w =
        DatasetWriter::create(path, WriteOptions::default().with_batch_bytes(batch_bytes)).unwrap();
    // Written a document at a time, so record batches follow batch_bytes.
    for i in 0..ds.num_rows() {
        w.write(&ds.slice_rows(i..i + 1).unwrap()).unwrap();
    }
    if ds.num_rows() == 0 {
        w.write(&ds).unwrap(); // A schema and no rows.
    }
    w.finish().unwrap();
    doc_tokens
}

/// Every batch of one epoch, checked against the file: each row equals the sample named.
fn epoch(loader: &mut Loader, file: &MappedDataset) -> Vec<Batch> {
    let mut out = Vec::new();
    while let Some(b) = loader.next_batch().unwrap() {
        assert_eq!(b.data().num_rows(), b.samples().len());
        for (k, &s) in b.samples().iter().enumerate() {
            assert_eq!(
                b.data().slice_rows(k..k + 1).unwrap(),
                file.sample(s).unwrap()
            );
        }
        out.push(b);
    }
    out
}

fn samples(batches: &[Batch]) -> Vec<usize> {
    batches.iter().flat_map(|b| b.samples().to_vec()).collect()
}

#[derive(Clone, Debug)]
enum Mode {
    Samples(usize),
    Tokens(usize),
}

#[derive(Clone, Debug)]
enum Order {
    File,
    Shuffled(u64),
    Chunks(u64, usize),
}

/// The loader of `b` configured by `mode` and `order`, with `drop_last`, set to `epoch`.
fn epoch_loader(
    b: LoaderBuilder<'_>,
    (mode, order): (&Mode, &Order),
    drop_last: bool,
    epoch: u64,
) -> Loader {
    let mut loader = configure(b, mode, order, &[])
        .with_drop_last(drop_last)
        .build()
        .unwrap();
    loader.set_epoch(epoch);
    loader
}

fn configure<'a>(
    b: LoaderBuilder<'a>,
    mode: &Mode,
    order: &Order,
    buckets: &[usize],
) -> LoaderBuilder<'a> {
    let b = match *mode {
        Mode::Samples(n) => b.with_batch_size(n),
        Mode::Tokens(n) => b.with_token_budget(n),
    };
    let b = match *order {
        Order::File => b,
        Order::Shuffled(seed) => b.with_shuffle(seed),
        Order::Chunks(seed, rows) => b.with_chunk_shuffle(seed, rows),
    };
    if buckets.is_empty() {
        b
    } else {
        b.with_buckets(buckets.to_vec())
    }
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        (1usize..9).prop_map(Mode::Samples),
        (1usize..200).prop_map(Mode::Tokens)
    ]
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![
        Just(Order::File),
        any::<u64>().prop_map(Order::Shuffled),
        (any::<u64>(), 1usize..6).prop_map(|(s, r)| Order::Chunks(s, r)),
    ]
}

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

#[test]
fn in_order_batches_are_views_into_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[2; 40], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!(file.batches().len(), 1);
    let mapping = file.as_bytes().as_ptr_range();
    let inside = |p: *const u8| mapping.contains(&p);
    let mut loader = Loader::builder(&file).with_batch_size(8).build().unwrap();
    let mut n = 0;
    while let Some(b) = loader.next_batch().unwrap() {
        assert!(b.is_view());
        for c in b.data().columns() {
            let t = c.tensor().unwrap();
            let values = t
                .typed_values::<Float32Type>()
                .map(|v| v.as_ptr() as *const u8);
            let values = values
                .unwrap_or_else(|_| t.typed_values::<Int64Type>().unwrap().as_ptr() as *const u8);
            assert!(inside(values));
            for level in t.lod().levels() {
                assert!(inside(level.as_ptr()));
            }
        }
        n += 1;
    }
    assert_eq!(n, 5);
    let stats = loader.stats();
    assert_eq!((stats.views, stats.gathered, stats.bytes_copied), (5, 0, 0));
}

#[test]
fn next_is_view_predicts_the_next_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    // Small record batches: some in-order batches cross one and are gathered.
    write(&path, &[3; 60], 2000);
    let file = MappedDataset::open(&path).unwrap();
    assert!(file.batches().len() > 2);
    for shuffle in [false, true] {
        let mut b = Loader::builder(&file).with_batch_size(5);
        if shuffle {
            b = b.with_shuffle(9);
        }
        let mut loader = b.build().unwrap();
        // No plan yet: building it is work, so no promise.
        assert!(!loader.next_is_view());
        let (mut views, mut gathered) = (0, 0);
        loop {
            let predicted = loader.next_is_view();
            let Some(batch) = loader.next_batch().unwrap() else {
                assert!(!predicted);
                break;
            };
            if batch.position().batch > 0 {
                assert_eq!(predicted, batch.is_view(), "batch {:?}", batch.position());
            }
            if batch.is_view() {
                views += 1
            } else {
                gathered += 1
            }
        }
        assert!(gathered > 0 && (shuffle || views > 0), "{views} {gathered}");
    }
}

#[test]
fn shuffled_batches_reuse_their_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[4; 200], 2000);
    let file = MappedDataset::open(&path).unwrap();
    let mut loader = Loader::builder(&file)
        .with_batch_size(16)
        .with_shuffle(3)
        .build()
        .unwrap();
    let mut batches = 0;
    for _ in 0..3 {
        while let Some(b) = loader.next_batch().unwrap() {
            // The batch lives in the pool's buffer, not in the mapping.
            let values = b
                .data()
                .column("tokens")
                .unwrap()
                .typed_values::<Float32Type>()
                .unwrap();
            assert!(
                !file
                    .as_bytes()
                    .as_ptr_range()
                    .contains(&(values.as_ptr() as *const u8))
            );
            batches += 1;
        }
    }
    let stats = loader.stats();
    assert_eq!(stats.gathered, batches);
    // One buffer for the whole run: each batch was dropped before the next was gathered;
    // it grew only when a batch was larger than any before.
    assert_eq!(stats.allocations, 1);
    assert!(stats.growths <= 3, "{stats:?}");
    // A batch still held forces a second buffer, and only one.
    let held: Vec<Batch> = (0..2)
        .map(|_| loader.next_batch().unwrap().unwrap())
        .collect();
    assert_eq!(loader.stats().allocations, 2);
    drop(held);
}

#[test]
fn prefetch_gives_the_same_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 200);
    let file = MappedDataset::open(&path).unwrap();
    let build = || {
        Loader::builder(&file)
            .with_token_budget(60)
            .with_shuffle(5)
            .build()
            .unwrap()
    };
    let mut direct = build();
    let expected = epoch(&mut direct, &file);
    let mut prefetch = build().prefetch(2);
    let got: Vec<Batch> = prefetch.by_ref().map(Result::unwrap).collect();
    assert_eq!(got.len(), expected.len());
    for (a, b) in got.iter().zip(&expected) {
        assert_eq!((a.samples(), a.data()), (b.samples(), b.data()));
    }
    let loader = prefetch.into_loader().unwrap();
    assert_eq!(loader.next_position().epoch, 1);
    // Dropping a prefetch midway stops its thread.
    let mut early = build().prefetch(1);
    assert!(early.next().is_some());
    drop(early);
}

#[test]
fn padded_batches_and_padding_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    let doc_tokens = write(&path, &[1, 5, 1, 5, 1, 5, 1, 5], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    let mut plain = Loader::builder(&file).with_batch_size(2).build().unwrap();
    let mut bucketed = Loader::builder(&file)
        .with_batch_size(2)
        .with_quantile_buckets(2)
        .build()
        .unwrap();
    assert!(bucketed.plan(0).padding_ratio() < plain.plan(0).padding_ratio());
    let b = bucketed.next_batch().unwrap().unwrap();
    let p = b.to_padded("tokens", 0).unwrap();
    let lengths: Vec<usize> = b.samples().iter().map(|&s| doc_tokens[s]).collect();
    assert_eq!(p.lengths, lengths);
    assert_eq!(p.shape, vec![2, b.max_len(), 2]);
    let real = p.mask.iter().filter(|&&m| m).count();
    assert_eq!(real, b.tokens());
    assert!((1.0 - real as f64 / p.mask.len() as f64 - b.padding_ratio()).abs() < 1e-12);
    let b = plain.next_batch().unwrap().unwrap();
    assert!(matches!(
        b.to_padded("nope", 0).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::NoSuchColumn(_)))
    ));
    assert!(matches!(
        b.to_padded("label", 0).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels: 0
        }))
    ));
}

#[test]
fn bad_options_and_positions_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[2; 10], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    let err = |b: LoaderBuilder| b.build().unwrap_err();
    assert!(matches!(
        err(Loader::builder(&file).with_batch_size(0)).kind(),
        ErrorKind::Argument(ArgumentError::LoaderConfig {
            option: "batch_size",
            ..
        })
    ));
    assert_eq!(
        err(Loader::builder(&file).with_batch_size(0)).to_string(),
        "loader option batch_size: must be at least 1, got 0"
    );
    assert!(matches!(
        err(Loader::builder(&file).shard(3, 3)).kind(),
        ErrorKind::Argument(ArgumentError::LoaderConfig { option: "rank", .. })
    ));
    assert!(matches!(
        err(Loader::builder(&file).with_quantile_buckets(0)).kind(),
        ErrorKind::Argument(ArgumentError::LoaderConfig { .. })
    ));
    assert!(matches!(
        err(Loader::builder(&file).with_length_column("x", 0)).kind(),
        ErrorKind::Argument(ArgumentError::NoSuchColumn(_))
    ));
    assert!(matches!(
        err(Loader::builder(&file).with_length_column("tokens", 2)).kind(),
        ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 2,
            levels: 2
        })
    ));
    let mut a = Loader::builder(&file).with_batch_size(3).build().unwrap();
    let mut b = Loader::builder(&file).with_batch_size(4).build().unwrap();
    assert!(matches!(
        b.seek(a.next_position()).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::PositionMismatch { .. }))
    ));
    let mut p = a.next_position();
    p.batch = 5;
    assert!(matches!(
        a.seek(p).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::BatchOutOfRange {
            epoch: 0,
            batch: 5,
            batches: 4
        }))
    ));
    p.batch = 4;
    a.seek(p).unwrap();
    assert!(a.next_batch().unwrap().is_none());
    let _ = Arc::new(b.next_batch().unwrap());
}

#[test]
fn conflicting_options_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[2; 10], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    let cases: [(LoaderBuilder, &str, &str); 4] = [
        (
            Loader::builder(&file)
                .with_batch_size(4)
                .with_token_budget(40),
            "batch_size",
            "token_budget",
        ),
        (
            Loader::builder(&file)
                .with_token_budget(40)
                .with_batch_size(4),
            "token_budget",
            "batch_size",
        ),
        (
            Loader::builder(&file)
                .with_shuffle(1)
                .with_chunk_shuffle(1, 4),
            "shuffle",
            "chunk_shuffle",
        ),
        (
            Loader::builder(&file)
                .with_buckets(vec![3])
                .with_quantile_buckets(2),
            "buckets",
            "quantile_buckets",
        ),
    ];
    for (builder, first, second) in cases {
        let err = builder.build().unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Argument(ArgumentError::LoaderConfig { option, .. }) if *option == first
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("loader option {first}: conflicts with {second}: give one of them")
        );
    }
    // The same option twice is not a conflict: the last one counts.
    let loader = Loader::builder(&file)
        .with_batch_size(4)
        .with_batch_size(5)
        .build()
        .unwrap();
    assert_eq!(loader.plan(0).infos()[0].len(), 5);
}

/// A file with a schema and no rows (no record batch, or one of 0 rows): zero batches in
/// every mode, and every option that names a column still checks it against the schema.
#[test]
fn empty_datasets_give_zero_batches_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let no_batch = dir.path().join("none.arrow");
    let schema = {
        let probe = dir.path().join("probe.arrow");
        write(&probe, &[1], 1 << 20);
        MappedDataset::open(&probe).unwrap().schema().clone()
    };
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&no_batch).unwrap(), &schema)
            .unwrap();
    w.finish().unwrap();
    let zero_rows = dir.path().join("zero.arrow");
    write(&zero_rows, &[], 1 << 20);
    for path in [&no_batch, &zero_rows] {
        let file = MappedDataset::open(path).unwrap();
        assert_eq!(file.num_rows(), 0);
        let modes: [fn(LoaderBuilder) -> LoaderBuilder; 6] = [
            |b| b,
            |b| b.with_length_column("tokens", 0).with_token_budget(8),
            |b| b.with_length_column("tokens", 1).with_quantile_buckets(3),
            |b| b.with_shuffle(3).with_buckets(vec![2, 5]),
            |b| b.with_chunk_shuffle(3, 4).with_drop_last(true),
            |b| b.with_batch_size(2).shard(1, 2),
        ];
        for (i, mode) in modes.iter().enumerate() {
            let mut loader = mode(Loader::builder(&file)).build().unwrap();
            for epoch in 0..2 {
                assert!(loader.plan(epoch).is_empty(), "mode {i}");
                assert!(loader.next_batch().unwrap().is_none(), "mode {i}");
            }
            assert_eq!(loader.by_ref().count(), 0);
        }
        assert!(matches!(
            Loader::builder(&file)
                .with_length_column("x", 0)
                .build()
                .map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::NoSuchColumn(_)))
        ));
        assert!(matches!(
            Loader::builder(&file)
                .with_length_column("tokens", 2)
                .build()
                .map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 2,
                levels: 2
            }))
        ));
    }
}

/// A sample over the token budget comes after the batch that was being filled: the epoch
/// keeps file order, and in file order every batch in one record batch stays a view.
#[test]
fn oversize_samples_keep_the_order_and_the_views() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    // Document 3 has 12 sentences: far over a 30-token budget.
    let doc_tokens = write(&path, &[1, 1, 1, 12, 1, 1, 2, 1], 1 << 20);
    assert!(
        doc_tokens[3] > 30
            && doc_tokens
                .iter()
                .enumerate()
                .all(|(i, &t)| i == 3 || t <= 30)
    );
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!(file.batches().len(), 1);
    let mut loader = Loader::builder(&file)
        .with_token_budget(30)
        .build()
        .unwrap();
    let batches = epoch(&mut loader, &file);
    assert_eq!(samples(&batches), (0..8).collect::<Vec<_>>());
    assert!(batches.iter().all(Batch::is_view));
    assert_eq!(batches.iter().filter(|b| b.is_oversize()).count(), 1);
    assert_eq!(loader.stats().gathered, 0);
}

#[test]
fn a_loader_is_an_iterator_over_its_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[1, 2, 3, 1, 2, 3, 1], 200);
    let file = MappedDataset::open(&path).unwrap();
    let build = || {
        Loader::builder(&file)
            .with_batch_size(3)
            .with_shuffle(4)
            .build()
            .unwrap()
    };
    let mut direct = build();
    let expected = epoch(&mut direct, &file);
    let mut loader = build();
    let mut got = Vec::new();
    for batch in &mut loader {
        got.push(batch.unwrap());
    }
    assert_eq!(got.len(), expected.len());
    for (a, b) in got.iter().zip(&expected) {
        assert_eq!((a.samples(), a.data()), (b.samples(), b.data()));
    }
    // The next iteration is the next epoch.
    let second: Vec<Batch> = loader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(second[0].position().epoch, 1);
    assert_eq!(second.len(), expected.len());
}

/// `Loader::position` stays for one release as a deprecated alias of `next_position`.
#[test]
#[allow(deprecated)]
fn deprecated_position_is_next_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[3, 1, 2], 400);
    let file = MappedDataset::open(&path).unwrap();
    let mut loader = Loader::builder(&file).with_batch_size(2).build().unwrap();
    loader.next_batch().unwrap();
    assert_eq!(loader.position(), loader.next_position());
    assert_eq!(loader.next_position().batch, 1);
}
