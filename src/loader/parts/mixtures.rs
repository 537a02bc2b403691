//! Mixtures resumed under other options against the rule: the places read before the
//! state and after it are the epoch's, each once, counted by row (a source that repeats
//! within the epoch holds a row at more than one place); packed, every window's tokens
//! once; changes that cannot keep this refused, naming what differs.

use proptest::prelude::*;

use super::tests::{Side, end_of, read_rest, side, with};
use crate::io::ipc_reader::MappedDataset;
use crate::loader::pack::tests::file;
use crate::loader::{Loader, LoaderBuilder, LoaderState, Mixture, Packing, Piece, Plan};

/// Three sources of `sizes` documents, their lengths taken from `lengths` in turn.
fn sources(sizes: [usize; 3], lengths: &[usize]) -> Vec<(tempfile::TempDir, MappedDataset)> {
    let mut at = 0;
    (sizes.iter())
        .map(|&n| {
            let own: Vec<usize> = (0..n).map(|i| lengths[(at + i) % lengths.len()]).collect();
            at += n;
            file(&own, 4)
        })
        .collect()
}

/// A mixture of `data` by `weights`, seed 7.
fn mixture<'a>(data: &'a [(tempfile::TempDir, MappedDataset)], weights: &[f64]) -> Mixture<'a> {
    let sources = data.iter().map(|(_, d)| d.into()).collect();
    Mixture::new(sources, weights.to_vec()).with_seed(7)
}

/// `plan`'s samples before batch `batch`, sorted.
fn read_before(plan: &Plan, batch: usize) -> Vec<usize> {
    plan.samples()[..end_of(plan, batch)].to_vec()
}

/// Every token of `windows` as (loader row, token in its document).
fn token_places(windows: &[Vec<Piece>]) -> Vec<(usize, usize)> {
    (windows.iter().flatten())
        .flat_map(|p| (0..p.n_tokens).map(move |k| (p.row, p.first_token + k)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// A reads some steps, B goes on under other options for some more, C's ranks read
    /// the rest: the rows read are the epoch's, each as often as the epoch draws it.
    #[test]
    fn a_mixture_resumed_under_other_options_reads_every_place_once(
        sizes in (1usize..5, 5usize..40, 1usize..25),
        lengths in prop::collection::vec(1usize..40, 1..60),
        weights in prop::collection::vec(0.05f64..1.0, 3),
        (a, b, c) in (side(), side(), side()),
        (steps, more) in (0usize..10, 0usize..10),
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let mixed = mixture(&data, &weights);
        let build = |s: Side, rank| {
            let b = Loader::builder(&mixed);
            with(match shuffle { Some(seed) => b.with_shuffle(seed), None => b }, s, rank)
        };
        let mut first = build(a, 0).build().unwrap();
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&first.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan_a = first.plan(0);
        let read_a = read_before(&plan_a, state.position().batch);
        let mut second = build(b, 0).build().unwrap();
        second.restore(&state).unwrap();
        for _ in 0..more {
            second.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&second.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan = second.plan(0);
        prop_assert_eq!(&plan.samples()[..read_a.len()], &read_a[..]);
        let mut all = read_before(&plan, state.position().batch);
        let ranks = (0..c.world).map(|r| {
            let mut l = build(c, r).build().unwrap();
            l.restore(&state).unwrap();
            l
        });
        all.extend(read_rest(ranks.collect()));
        all.sort_unstable();
        let mut epoch = plan_a.samples().to_vec();
        epoch.sort_unstable();
        prop_assert_eq!(all, epoch);
    }

    /// A packed mixture resumed under another batch size and world size reads every
    /// window's tokens once.
    #[test]
    fn a_packed_mixture_resumed_under_other_options_reads_every_token_once(
        sizes in (1usize..5, 5usize..30, 1usize..20),
        lengths in prop::collection::vec(1usize..30, 1..40),
        seq in 4usize..16,
        (batches, worlds) in ((1usize..4, 1usize..4), (1usize..4, 1usize..4)),
        steps in 1usize..6,
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let mixed = mixture(&data, &[0.3, 0.5, 0.2]);
        let build = |batch: usize, rank, world| {
            let b = Loader::builder(&mixed).with_batch_size(batch).with_packing(Packing::new(seq));
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            b.elastic_shard(rank, world)
        };
        // A source too short for a window is refused when the loader is built.
        let first = build(batches.0, 0, worlds.0).build();
        prop_assume!(first.is_ok());
        let mut first = first.unwrap();
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = first.state();
        prop_assume!(state.position().epoch == 0 && state.position().batch > 0);
        let plan_a = first.plan(0);
        let pieces = |plan: &Plan, ids: &[usize]| -> Vec<Vec<Piece>> {
            ids.iter().map(|&w| plan.windows().unwrap().pieces(w)).collect()
        };
        let mut read = token_places(&pieces(&plan_a, &read_before(&plan_a, state.position().batch)));
        for rank in 0..worlds.1 {
            let mut l = build(batches.1, rank, worlds.1).build().unwrap();
            l.restore(&state).unwrap();
            let plan = l.plan(0);
            while let Some(batch) = l.next_batch().unwrap() {
                read.extend(token_places(&pieces(&plan, batch.samples())));
            }
        }
        read.sort_unstable();
        let mut epoch = token_places(&pieces(&plan_a, plan_a.samples()));
        epoch.sort_unstable();
        prop_assert_eq!(read, epoch);
    }
}

#[test]
fn changes_a_mixture_cannot_resume_under_are_refused_naming_them() {
    let lengths: Vec<usize> = (1..30).collect();
    let data = sources([3, 20, 9], &lengths);
    // The same rows in other sources, and one row more.
    let (other, longer) = (
        sources([3, 21, 8], &lengths),
        sources([3, 20, 10], &lengths),
    );
    let weights = [0.2, 0.5, 0.3];
    let (mixed, seeded) = (
        mixture(&data, &weights),
        mixture(&data, &weights).with_seed(8),
    );
    let (resized, grown) = (mixture(&other, &weights), mixture(&longer, &weights));
    let base = |m| {
        Loader::builder(m)
            .with_shuffle(1)
            .with_batch_size(3)
            .elastic_shard(0, 2)
    };
    let mut a = base(&mixed).build().unwrap();
    a.next_batch().unwrap();
    let state = a.state();
    let refused =
        |b: LoaderBuilder<'_>| b.build().unwrap().restore(&state).unwrap_err().to_string();
    let shuffled = base(&mixed).with_shuffle(2).with_batch_size(4);
    assert!(refused(shuffled).contains("the shuffle or its seed"));
    assert!(refused(base(&seeded)).contains("the mixture's sources or its seed"));
    assert!(refused(base(&resized)).contains("the mixture's sources or its seed"));
    assert!(refused(base(&grown)).contains("the samples or their lengths"));
    let alone = Mixture::new(vec![(&data[0].1).into()], vec![1.0]);
    assert!(refused(base(&alone)).contains("the mixture's sources"));
    // A packed mixture at another pack length.
    let packed = |m, seq| base(m).with_packing(Packing::new(seq));
    let mut a = packed(&mixed, 3).build().unwrap();
    a.next_batch().unwrap();
    let state = a.state();
    let mut b = packed(&mixed, 4).build().unwrap();
    let e = b.restore(&state).unwrap_err().to_string();
    assert!(e.contains("the packing of a packed mixture"), "{e}");
    // The same options resume exactly.
    let mut same = packed(&mixed, 3).build().unwrap();
    same.restore(&state).unwrap();
    let next = |l: &mut Loader| l.next_batch().unwrap().unwrap().samples().to_vec();
    assert_eq!(next(&mut same), next(&mut a));
}
