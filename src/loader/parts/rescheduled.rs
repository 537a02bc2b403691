//! A mixture whose weights change over training (a schedule in tokens drawn) against the
//! rule after any resume: a stream of other weights, or its own at another pack length,
//! taken over where the state's read batches end; from there each sample drawn by the
//! set the schedule gives at the tokens drawn before it, counted as the stream is packed
//! (a window's tokens at its packing), and every place of the epoch read once.

use proptest::prelude::*;

use super::mixtures::{mixture, sources, token_places};
use super::repacked::{
    each_source_epoch_once, each_step_at_its_length, packing, pieces, read_tokens, source_rows,
};
use super::tests::{end_of, read_rest};
use crate::loader::{Loader, LoaderState, Mixture, Plan, Schedule};

/// Weights drawing from source `k` alone for the first thousands of samples.
fn phase(k: usize) -> Vec<f64> {
    (0..3).map(|i| if i == k { 1.0 } else { 1e-4 }).collect()
}

/// Each place of `plan` (in the order drawn: no balance) as (source, tokens).
fn places(plan: &Plan, loader: &Loader, rows: &[std::ops::Range<usize>]) -> Vec<(usize, u64)> {
    let source = |row: usize| rows.iter().position(|r| r.contains(&row)).unwrap();
    let lengths = loader.sample_lengths();
    match plan.windows() {
        None => (plan.samples().iter())
            .map(|&r| (source(r), u64::from(lengths[r])))
            .collect(),
        Some(_) => (pieces(plan, plan.samples()).iter())
            .map(|w| {
                let tokens = w.iter().map(|p| p.n_tokens as u64).sum();
                (w.first().map_or(usize::MAX, |p| source(p.row)), tokens)
            })
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A (fixed weights, or the schedule) reads some steps, packed at P1 or not; B's ranks
    /// (the schedule, packed at P2 when A packs) resume its state: one plan on every rank,
    /// A's places kept, each place from where B took over (from the start when A drew by
    /// the schedule too) of the source the schedule gives at the tokens drawn before it,
    /// and every place (packed: every token) of the epoch read once.
    #[test]
    fn a_weight_schedule_goes_on_by_the_tokens_drawn_after_any_resume(
        sizes in (1usize..5, 5usize..30, 1usize..20),
        lengths in prop::collection::vec(1usize..30, 1..40),
        points in (1u64..150, 1u64..150),
        (packed, seqs, modes) in (any::<bool>(), (3usize..16, 3usize..16), (0usize..3, 0usize..3)),
        (batches, worlds) in ((1usize..4, 1usize..4), (1usize..4, 1usize..4)),
        steps in 0usize..8,
        shuffle in prop::option::of(any::<u64>()),
        scheduled_before in any::<bool>(),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let (t1, t2) = (points.0, points.0 + points.1);
        let schedule = Schedule::new(vec![(0, phase(0)), (t1, phase(1)), (t2, phase(2))]).unwrap();
        let fixed = mixture(&data, &[0.3, 0.5, 0.2]);
        let scheduled = mixture(&data, &[1.0; 3]).with_weight_schedule(schedule.clone());
        let build = |m: &Mixture, (seq, mode), batch: usize, rank, world| {
            let b = Loader::builder(m).with_batch_size(batch);
            let b = if packed { b.with_packing(packing(seq, mode)) } else { b };
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            b.elastic_shard(rank, world).build()
        };
        let a_mix = if scheduled_before { &scheduled } else { &fixed };
        let a = build(a_mix, (seqs.0, modes.0), batches.0, 0, worlds.0);
        // A source without a window is refused.
        prop_assume!(a.is_ok() && build(&scheduled, (seqs.1, modes.1), 1, 0, 1).is_ok());
        let mut a = a.unwrap();
        for _ in 0..steps {
            a.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&a.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan_a = a.plan(0);
        let before = end_of(&plan_a, state.position().batch);
        let ranks: Vec<Loader> = (0..worlds.1).map(|rank| {
            let mut l = build(&scheduled, (seqs.1, modes.1), batches.1, rank, worlds.1).unwrap();
            l.restore(&state).unwrap();
            l
        }).collect();
        let plan = ranks[0].plan(0);
        for r in &ranks[1..] {
            prop_assert_eq!(&*r.plan(0), &*plan);
        }
        let rows = source_rows(&data);
        let (drawn, kept) = (places(&plan, &ranks[0], &rows), places(&plan_a, &a, &rows));
        prop_assert_eq!(&drawn[..before], &kept[..before]);
        let stream = plan.parts.mixture.clone().unwrap();
        let from = match (scheduled_before, stream.changes.last()) {
            (true, _) => 0,
            (false, change) => change.expect("a schedule taken up").start as usize,
        };
        let mut tokens = 0;
        for (i, &(source, n)) in drawn.iter().enumerate() {
            let expected = schedule.at(tokens).iter().position(|&w| w == 1.0).unwrap();
            prop_assert!(i < from || source == expected, "place {} of {:?} (from {}): source {}, {} tokens before", i, drawn, from, source, tokens);
            tokens += n;
        }
        // Every place read once (packed: every token of the epoch's windows).
        match packed {
            false => {
                let mut read = plan_a.samples()[..before].to_vec();
                read.extend(read_rest(ranks));
                read.sort_unstable();
                let mut all = plan.samples().to_vec();
                all.sort_unstable();
                prop_assert_eq!(read, all);
            }
            true => {
                let mut read = token_places(&pieces(&plan_a, &plan_a.samples()[..before]));
                read.extend(read_tokens(ranks));
                read.sort_unstable();
                let mut all = token_places(&pieces(&plan, plan.samples()));
                all.sort_unstable();
                prop_assert_eq!(read, all);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A packed mixture with a weight schedule and a pack-length schedule: one plan on
    /// every rank, each step's windows at the length the pack schedule gives at the global
    /// tokens read before it, each window of the source the weight schedule gives at the
    /// tokens drawn before it (windows of each length counted as drawn), each source's
    /// epochs read once each.
    #[test]
    fn a_weight_schedule_counts_the_tokens_of_a_pack_schedule_s_windows(
        sizes in (1usize..5, 5usize..30, 1usize..20),
        lengths in prop::collection::vec(1usize..30, 1..40),
        points in (1u64..150, 1u64..150),
        seqs in prop::collection::vec(3usize..16, 1..4),
        mode in 0usize..3,
        (batch, world) in (1usize..4, 1usize..4),
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let (t1, t2) = (points.0, points.0 + points.1);
        let weights = Schedule::new(vec![(0, phase(0)), (t1, phase(1)), (t2, phase(2))]).unwrap();
        let mixed = mixture(&data, &[1.0; 3]).with_weight_schedule(weights.clone());
        let pack_points = (seqs.iter().enumerate()).map(|(i, &s)| (50 * i as u64, s)).collect();
        let packs = Schedule::new(pack_points).unwrap();
        let build = |rank| {
            let b = Loader::builder(&mixed)
                .with_batch_size(batch)
                .with_packing(packing(seqs[0], mode))
                .with_pack_schedule(packs.clone());
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            b.elastic_shard(rank, world).build()
        };
        let ranks: Vec<Loader> = (0..world).map(build).collect::<Result<_, _>>().unwrap();
        let plan = ranks[0].plan(0);
        for r in &ranks[1..] {
            prop_assert_eq!(&*r.plan(0), &*plan);
        }
        each_step_at_its_length(&plan, world, &packs)?;
        let rows = source_rows(&data);
        let mut tokens = 0;
        for (i, &(source, n)) in places(&plan, &ranks[0], &rows).iter().enumerate() {
            let expected = weights.at(tokens).iter().position(|&w| w == 1.0).unwrap();
            prop_assert_eq!(source, expected, "window {}, {} tokens drawn before it", i, tokens);
            tokens += n;
        }
        let drawn = pieces(&plan, plan.samples());
        each_source_epoch_once(&drawn, &rows, ranks[0].sample_lengths())?;
    }
}
