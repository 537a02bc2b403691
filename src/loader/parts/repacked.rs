//! A packed mixture whose pack length changes within an epoch (resumed at another pack
//! length or mode, or a pack-length schedule) against the rule: every window read before
//! the change is kept, each source reads its epochs' tokens one epoch after the other,
//! each token of an epoch once and none left out, and the place of a schedule's switch
//! is the first global step at or past its point on every rank.

use std::collections::HashSet;
use std::ops::Range;

use proptest::prelude::*;

use super::mixtures::{mixture, sources, token_places};
use super::tests::{end_of, read_rest};
use crate::io::ipc_reader::MappedDataset;
use crate::loader::{
    Balance, Loader, LoaderBuilder, LoaderState, Mixture, Overlong, PackMode, Packing, Piece, Plan,
    Schedule,
};

/// Packing of `seq` tokens in mode `mode`: concatenate and split padding the last window,
/// best fit of 1 or 4 documents at a time (long documents cut), in which no token is left
/// out (`mode` below 3); then concatenate and split with the extra token and the tail
/// left out, and best fit leaving long documents out.
pub(super) fn packing(seq: usize, mode: usize) -> Packing {
    let packing = Packing::new(seq);
    match mode {
        0 => packing.with_mode(PackMode::Split { pad_last: true }),
        3 => packing.with_extra_token(true),
        m => packing.with_mode(PackMode::BestFit {
            lookahead: if m == 1 { 4 } else { 1 },
            overlong: if m == 4 {
                Overlong::Drop
            } else {
                Overlong::Cut
            },
        }),
    }
}

/// Each source's rows among the loader's: the sources' rows one after the other.
pub(super) fn source_rows(data: &[(tempfile::TempDir, MappedDataset)]) -> Vec<Range<usize>> {
    let mut at = 0;
    (data.iter())
        .map(|(_, d)| {
            let rows = at..at + d.num_rows();
            at = rows.end;
            rows
        })
        .collect()
}

/// The pieces of windows `ids` of `plan`.
pub(super) fn pieces(plan: &Plan, ids: &[usize]) -> Vec<Vec<Piece>> {
    let windows = plan.windows().expect("packed");
    ids.iter().map(|&w| windows.pieces(w)).collect()
}

/// Checks `windows` (in the order the mixture drew them) against the rule: each is of one
/// source and holds no token twice; a source's windows read its epochs one after the
/// other, and one starts (a window holding a token read already) only once every token
/// of the source was read since the one before.
pub(super) fn each_source_epoch_once(
    windows: &[Vec<Piece>],
    sources: &[Range<usize>],
    lengths: &[u32],
) -> Result<(), TestCaseError> {
    let all: Vec<HashSet<(usize, usize)>> = (sources.iter())
        .map(|rows| {
            let rows = rows.clone();
            rows.flat_map(|r| (0..lengths[r] as usize).map(move |t| (r, t)))
                .collect()
        })
        .collect();
    let mut seen = vec![HashSet::new(); sources.len()];
    for (i, w) in windows.iter().enumerate().filter(|(_, w)| !w.is_empty()) {
        let k = sources.iter().position(|s| s.contains(&w[0].row)).unwrap();
        prop_assert!(
            w.iter().all(|p| sources[k].contains(&p.row)),
            "window {} of two sources",
            i
        );
        let tokens = token_places(std::slice::from_ref(w));
        let own: HashSet<(usize, usize)> = tokens.iter().copied().collect();
        prop_assert_eq!(own.len(), tokens.len(), "window {} holds a token twice", i);
        if !own.is_disjoint(&seen[k]) {
            let left = all[k].len() - seen[k].len();
            prop_assert_eq!(
                &seen[k],
                &all[k],
                "source {} starts an epoch at window {} with {} tokens left",
                k,
                i,
                left
            );
            seen[k].clear();
        }
        seen[k].extend(own);
    }
    Ok(())
}

/// Checks that every step of `plan` (`world` batches) has windows of the length
/// `schedule` gives at the global tokens read before it.
pub(super) fn each_step_at_its_length(
    plan: &Plan,
    world: usize,
    schedule: &Schedule<usize>,
) -> Result<(), TestCaseError> {
    let windows = plan.windows().unwrap();
    let (mut tokens, mut step) = (0u64, 0);
    while step < plan.len() {
        let len = schedule.at(tokens);
        for info in &plan.infos()[step..(step + world).min(plan.len())] {
            prop_assert_eq!(info.max_len, len);
            for &w in &plan.samples()[info.start..info.end] {
                prop_assert_eq!(windows.window_len_of(w), len);
            }
            tokens += info.tokens as u64;
        }
        step += world;
    }
    Ok(())
}

/// Every rank of `loaders` (restored from one state) reads to the epoch's end: the
/// windows' tokens read.
pub(super) fn read_tokens(loaders: Vec<Loader>) -> Vec<(usize, usize)> {
    let mut read = Vec::new();
    for mut l in loaders {
        let plan = l.plan(0);
        while let Some(batch) = l.next_batch().unwrap() {
            read.extend(token_places(&pieces(&plan, batch.samples())));
        }
    }
    read
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A packed mixture read by A (pack length and mode P1, its batch size and ranks) and
    /// restored into B (P2, its own) midway: B's plan keeps A's windows, the ranks read
    /// every window's tokens of the epoch once, each source reads its epochs once each (its
    /// tokens no window read before the change packed again at P2); at P1 again, B's
    /// windows are A's, place by place. B balanced or not.
    #[test]
    fn a_packed_mixture_resumed_at_another_pack_length_reads_each_source_epoch_once(
        sizes in (1usize..5, 5usize..30, 1usize..20),
        lengths in prop::collection::vec(1usize..30, 1..40),
        (seq, mode) in ((3usize..16, 3usize..16), (0usize..5, 0usize..5)),
        (batches, worlds) in ((1usize..4, 1usize..4), (1usize..4, 1usize..4)),
        steps in 0usize..8,
        shuffle in prop::option::of(any::<u64>()),
        (same, balance) in (any::<bool>(), any::<bool>()),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let mixed = mixture(&data, &[0.3, 0.5, 0.2]);
        let (seq2, mode2) = if same { (seq.0, mode.0) } else { (seq.1, mode.1) };
        let build = |(seq, mode), batch: usize, rank, world, balance| {
            let b = Loader::builder(&mixed).with_batch_size(batch).with_packing(packing(seq, mode));
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            let b = if balance { b.with_balance(Balance::Tokens) } else { b };
            b.elastic_shard(rank, world).build().unwrap()
        };
        let a = Loader::builder(&mixed).with_packing(packing(seq.0, mode.0)).build();
        let b = Loader::builder(&mixed).with_packing(packing(seq2, mode2)).build();
        // A source without a window (best fit leaving its documents out) is refused.
        prop_assume!(a.is_ok() && b.is_ok());
        let mut a = build((seq.0, mode.0), batches.0, 0, worlds.0, false);
        for _ in 0..steps {
            a.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&a.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan_a = a.plan(0);
        let before = plan_a.samples()[..end_of(&plan_a, state.position().batch)].to_vec();
        let mut read = token_places(&pieces(&plan_a, &before));
        let ranks: Vec<Loader> = (0..worlds.1).map(|rank| {
            let mut l = build((seq2, mode2), batches.1, rank, worlds.1, balance);
            l.restore(&state).unwrap();
            l
        }).collect();
        let plan = ranks[0].plan(0);
        for r in &ranks[1..] {
            prop_assert_eq!(&*r.plan(0), &*plan);
        }
        // A's windows kept; the windows after them of P2's length at most (balanced, the
        // batches of B's part mix the windows read in the order drawn).
        let drawn = pieces(&plan, plan.samples());
        prop_assert_eq!(&drawn[..before.len()], &pieces(&plan_a, &before)[..]);
        let windows = plan.windows().unwrap();
        for &w in &plan.samples()[before.len()..] {
            prop_assert!(balance || windows.window_len_of(w) == packing(seq2, mode2).window_len());
        }
        read.extend(read_tokens(ranks));
        let mut epoch = token_places(&drawn);
        read.sort_unstable();
        epoch.sort_unstable();
        prop_assert_eq!(read, epoch);
        // Every token of a source's epoch read when none is left out.
        if !balance && mode.0 < 3 && mode2 < 3 {
            each_source_epoch_once(&drawn, &source_rows(&data), a.sample_lengths())?;
        }
        if same && !balance {
            prop_assert_eq!(drawn, pieces(&plan_a, plan_a.samples()));
        }
    }

    /// A packed mixture with a pack-length schedule: one plan on every rank; each step's
    /// windows of the length the schedule gives at the global tokens read before it (the
    /// switch at the first step at or past its point); each source's epochs read once each;
    /// a state saved midway resumed by the ranks reads the rest of the plan.
    #[test]
    fn a_packed_mixture_takes_a_pack_length_schedule(
        sizes in (1usize..5, 5usize..30, 1usize..20),
        lengths in prop::collection::vec(1usize..30, 1..40),
        seqs in prop::collection::vec(3usize..16, 1..4),
        mode in 0usize..3,
        batch in 1usize..4,
        world in 1usize..4,
        steps in 0usize..8,
        shuffle in prop::option::of(any::<u64>()),
        other in 3usize..16,
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let mixed = mixture(&data, &[0.3, 0.5, 0.2]);
        // Points 50 tokens apart.
        let points: Vec<(u64, usize)> = (seqs.iter().enumerate()).map(|(i, &s)| (50 * i as u64, s)).collect();
        let schedule = Schedule::new(points).unwrap();
        let build = |rank| {
            let b: LoaderBuilder<'_> = Loader::builder(&mixed)
                .with_batch_size(batch)
                .with_packing(packing(seqs[0], mode))
                .with_pack_schedule(schedule.clone());
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            b.elastic_shard(rank, world).build().unwrap()
        };
        let ranks: Vec<Loader> = (0..world).map(build).collect();
        let plan = ranks[0].plan(0);
        for r in &ranks[1..] {
            prop_assert_eq!(&*r.plan(0), &*plan);
        }
        each_step_at_its_length(&plan, world, &schedule)?;
        let drawn = pieces(&plan, plan.samples());
        each_source_epoch_once(&drawn, &source_rows(&data), ranks[0].sample_lengths())?;
        // The next epoch goes on at the last length, each source where it was.
        let next = ranks[0].plan(1);
        let mut both = drawn.clone();
        both.extend(pieces(&next, next.samples()));
        each_source_epoch_once(&both, &source_rows(&data), ranks[0].sample_lengths())?;
        // Rank 0 reads some steps; the ranks go on from its state.
        let mut first = build(0);
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&first.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let mut read = plan.samples()[..end_of(&plan, state.position().batch)].to_vec();
        let others: Vec<Loader> = (0..world).map(|r| {
            let mut l = build(r);
            l.restore(&state).unwrap();
            l
        }).collect();
        read.extend(read_rest(others));
        read.sort_unstable();
        let mut all = plan.samples().to_vec();
        all.sort_unstable();
        prop_assert_eq!(&read, &all);
        // And under one other pack length, without a schedule: the windows read kept, the
        // rest packed at it, each source's epochs once each.
        let before = end_of(&plan, state.position().batch);
        let mut at_other = Loader::builder(&mixed).with_batch_size(batch).with_packing(packing(other, mode));
        if let Some(seed) = shuffle {
            at_other = at_other.with_shuffle(seed);
        }
        let mut l = at_other.elastic_shard(0, 1).build().unwrap();
        l.restore(&state).unwrap();
        let resumed = l.plan(0);
        let drawn = pieces(&resumed, resumed.samples());
        prop_assert_eq!(&drawn[..before], &pieces(&plan, &plan.samples()[..before])[..]);
        each_source_epoch_once(&drawn, &source_rows(&data), l.sample_lengths())?;
    }
}

/// Resumed twice within an epoch (P1, then P2, then P3; with the same weights, or other
/// weights at each change), the changes compose: every token of the epoch's windows read
/// once, each source's epochs once each, and the next epoch drawn at P3 going on from
/// where each source stood.
#[test]
fn changes_of_pack_length_within_an_epoch_compose() {
    let lengths: Vec<usize> = (1..30).collect();
    let data = sources([3, 20, 9], &lengths);
    let weights = [[0.2, 0.5, 0.3], [0.6, 0.2, 0.2], [0.1, 0.3, 0.6]];
    let mixes: Vec<Mixture> = weights.iter().map(|w| mixture(&data, w)).collect();
    let build = |m: usize, seq, mode| {
        Loader::builder(&mixes[m])
            .with_shuffle(3)
            .with_batch_size(2)
            .with_packing(packing(seq, mode))
            .elastic_shard(0, 1)
            .build()
            .unwrap()
    };
    let rows = source_rows(&data);
    for reweigh in [0, 1] {
        let mut a = build(0, 8, 0);
        a.next_batch().unwrap();
        let mut b = build(reweigh, 5, 1);
        b.restore(&a.state()).unwrap();
        b.next_batch().unwrap();
        b.next_batch().unwrap();
        let state = LoaderState::from_json(&b.state().to_json()).unwrap();
        let mut c = build(2 * reweigh, 12, 0);
        c.restore(&state).unwrap();
        let plan = c.plan(0);
        let lens: Vec<usize> = (plan.samples().iter())
            .map(|&w| plan.windows().unwrap().window_len_of(w))
            .collect();
        assert_eq!(&lens[..2], [8, 8]);
        assert_eq!(&lens[2..6], [5, 5, 5, 5]);
        assert!(lens[6..].iter().all(|&l| l == 12), "{lens:?}");
        let mut drawn = pieces(&plan, plan.samples());
        each_source_epoch_once(&drawn, &rows, c.sample_lengths()).unwrap();
        // Then at P3 by other weights: C's windows kept, B's change replayed.
        let mut d = build(1 - reweigh, 12, 0);
        let mut on = build(2 * reweigh, 12, 0);
        on.restore(&state).unwrap();
        on.next_batch().unwrap();
        d.restore(&on.state()).unwrap();
        let replayed = d.plan(0);
        let kept = pieces(&replayed, replayed.samples());
        assert_eq!(kept[..8], drawn[..8]);
        each_source_epoch_once(&kept, &rows, d.sample_lengths()).unwrap();
        let mut read = read_tokens(vec![c]);
        let mut epoch = token_places(&drawn[6..]);
        read.sort_unstable();
        epoch.sort_unstable();
        assert_eq!(read, epoch);
        // Epoch 1 at 12, each source going on.
        let mut again = build(2 * reweigh, 12, 0);
        again.restore(&state).unwrap();
        while again.next_batch().unwrap().is_some() {}
        let next = again.plan(1);
        drawn.extend(pieces(&next, next.samples()));
        each_source_epoch_once(&drawn, &rows, again.sample_lengths()).unwrap();
        let windows = next.windows().unwrap();
        assert!((next.samples().iter()).all(|&w| windows.window_len_of(w) == 12));
    }
}

/// A state saved after an epoch that changed its pack length carries where it changed:
/// a loader of the same options restored from it reads the next epoch's batches as the
/// loader that saved it; a state saved without its packings (by an earlier version)
/// resumes as packed throughout by its first part.
#[test]
fn a_change_of_pack_length_goes_on_in_the_epochs_after_it() {
    let lengths: Vec<usize> = (1..30).collect();
    let data = sources([3, 20, 9], &lengths);
    let mixed = mixture(&data, &[0.2, 0.5, 0.3]);
    let build = |seq| {
        Loader::builder(&mixed)
            .with_shuffle(5)
            .with_batch_size(3)
            .with_packing(packing(seq, 0))
            .elastic_shard(0, 1)
            .build()
            .unwrap()
    };
    let mut a = build(8);
    a.next_batch().unwrap();
    let mut b = build(16);
    b.restore(&a.state()).unwrap();
    while b.next_batch().unwrap().is_some() {}
    b.next_batch().unwrap();
    let json = b.state().to_json();
    let packs = &serde_json::from_str::<serde_json::Value>(&json).unwrap()["mixture"]["packs"];
    assert_eq!(packs.as_array().map(Vec::len), Some(2), "{json}");
    let mut c = build(16);
    c.restore(&LoaderState::from_json(&json).unwrap()).unwrap();
    let next = |l: &mut Loader| l.next_batch().unwrap().map(|b| b.windows());
    for _ in 0..4 {
        assert_eq!(next(&mut c), next(&mut b));
    }
    // Without "packs": packed at 8 throughout, as the state's first part was.
    let mut a = build(8);
    a.next_batch().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&a.state().to_json()).unwrap();
    v["mixture"].as_object_mut().unwrap().remove("packs");
    let old = LoaderState::from_json(&v.to_string()).unwrap();
    let mut same = build(8);
    same.restore(&old).unwrap();
    for _ in 0..4 {
        assert_eq!(next(&mut same), next(&mut a));
    }
}

/// A loader with a pack-length schedule plans a later epoch as one that read every epoch
/// before it does (the sources' streams packed anew where those epochs switched), going
/// there by `set_epoch` or asking for its plan.
#[test]
fn a_pack_schedule_plans_a_later_epoch_as_reading_up_to_it_does() {
    let lengths: Vec<usize> = (1..30).collect();
    let data = sources([3, 20, 9], &lengths);
    let mixed = mixture(&data, &[0.2, 0.5, 0.3]);
    let schedule = Schedule::new(vec![(0, 3), (300, 6), (700, 9), (1500, 5)]).unwrap();
    let build = || {
        Loader::builder(&mixed)
            .with_shuffle(2)
            .with_batch_size(2)
            .with_packing(packing(3, 0))
            .with_pack_schedule(schedule.clone())
            .elastic_shard(0, 2)
            .build()
            .unwrap()
    };
    let mut read = build();
    let mut drawn = Vec::new();
    for epoch in 0..3 {
        let plan = read.plan(epoch);
        drawn.extend(pieces(&plan, plan.samples()));
        while read.next_batch().unwrap().is_some() {}
    }
    each_source_epoch_once(&drawn, &source_rows(&data), read.sample_lengths()).unwrap();
    let asked = build();
    assert_eq!(asked.plan(3), read.plan(3));
    let mut set = build();
    set.set_epoch(3);
    for _ in 0..5 {
        let next = |l: &mut Loader| l.next_batch().unwrap().map(|b| b.windows());
        assert_eq!(next(&mut set), next(&mut read));
    }
}
