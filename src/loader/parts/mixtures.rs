//! Mixtures resumed under other options against the rule: the places read before the
//! state and after it are the epoch's, each once, counted by row (a source that repeats
//! within the epoch holds a row at more than one place); packed, every window's tokens
//! once; changes that cannot keep this refused, naming what differs.

use proptest::prelude::*;

use super::Epoch;
use super::tests::{Side, end_of, read_rest, side, with};
use crate::io::ipc_reader::MappedDataset;
use crate::loader::pack::tests::file;
use crate::loader::{Loader, LoaderBuilder, LoaderState, Mixture, Packing, Piece, Plan, Schedule};

/// Three sources of `sizes` documents, their lengths taken from `lengths` in turn.
pub(super) fn sources(
    sizes: [usize; 3],
    lengths: &[usize],
) -> Vec<(tempfile::TempDir, MappedDataset)> {
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
pub(super) fn mixture<'a>(
    data: &'a [(tempfile::TempDir, MappedDataset)],
    weights: &[f64],
) -> Mixture<'a> {
    let sources = data.iter().map(|(_, d)| d.into()).collect();
    Mixture::new(sources, weights.to_vec()).with_seed(7)
}

/// `plan`'s samples before batch `batch`, sorted.
fn read_before(plan: &Plan, batch: usize) -> Vec<usize> {
    plan.samples()[..end_of(plan, batch)].to_vec()
}

/// The rows of `loader`'s mixture's epoch 0, place by place, by its stream.
fn epoch_rows(loader: &Loader) -> Vec<usize> {
    let blend = loader.blend.as_ref().unwrap();
    match blend.epoch(&loader.config, &loader.inputs.lengths, 0) {
        Epoch::Rows(rows) => rows,
        _ => unreachable!("not packed"),
    }
}

/// Every token of `windows` as (loader row, token in its document).
pub(super) fn token_places(windows: &[Vec<Piece>]) -> Vec<(usize, usize)> {
    (windows.iter().flatten())
        .flat_map(|p| (0..p.n_tokens).map(move |k| (p.row, p.first_token + k)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// A reads some steps, B goes on under other options and weights for some more, C's
    /// ranks read the rest under others again: the rows read are the epoch's, each as
    /// often as the epoch draws it; the places before each change keep their rows, each
    /// source's stream goes on where it was, and each source keeps within a sample of its
    /// share of the samples drawn under each set of weights.
    #[test]
    fn a_mixture_resumed_under_other_options_and_weights_reads_every_place_once(
        sizes in (1usize..5, 5usize..40, 1usize..25),
        lengths in prop::collection::vec(1usize..40, 1..60),
        weights in prop::collection::vec(prop::collection::vec(0.05f64..1.0, 3), 3),
        same in prop::collection::vec(any::<bool>(), 2),
        (a, b, c) in (side(), side(), side()),
        (steps, more) in (0usize..10, 0usize..10),
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        // B and C keep the weights before them, or change them.
        let mut sets = vec![weights[0].clone()];
        for i in 1..3 {
            sets.push(if same[i - 1] { sets[i - 1].clone() } else { weights[i].clone() });
        }
        let mixtures: Vec<Mixture> = sets.iter().map(|w| mixture(&data, w)).collect();
        let build = |m: usize, s: Side, rank| {
            let b = Loader::builder(&mixtures[m]);
            with(match shuffle { Some(seed) => b.with_shuffle(seed), None => b }, s, rank)
        };
        let mut first = build(0, a, 0).build().unwrap();
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&first.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan_a = first.plan(0);
        let read_a = read_before(&plan_a, state.position().batch);
        let mut second = build(1, b, 0).build().unwrap();
        second.restore(&state).unwrap();
        for _ in 0..more {
            second.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&second.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan = second.plan(0);
        prop_assert_eq!(&plan.samples()[..read_a.len()], &read_a[..]);
        let mut all = read_before(&plan, state.position().batch);
        let ranks: Vec<Loader> = (0..c.world).map(|r| {
            let mut l = build(2, c, r).build().unwrap();
            l.restore(&state).unwrap();
            l
        }).collect();
        let (rows_a, rows_c) = (epoch_rows(&first), epoch_rows(&ranks[0]));
        let stream = ranks[0].plan(0).parts.mixture.clone().unwrap();
        all.extend(read_rest(ranks));
        all.sort_unstable();
        let mut epoch = rows_c.clone();
        epoch.sort_unstable();
        prop_assert_eq!(all, epoch);
        // Before the first change the places keep A's rows; each source's rows are a
        // prefix of its stream's, or the other way round.
        let s = stream.changes.first().map_or(rows_a.len(), |c| c.start as usize);
        prop_assert_eq!(&rows_a[..s], &rows_c[..s]);
        let blend = first.blend.clone().unwrap();
        for k in 0..3 {
            let of = |rows: &[usize]| -> Vec<usize> {
                rows.iter().copied().filter(|&r| blend.source_of(r).0 == k).collect()
            };
            let (x, y) = (of(&rows_a), of(&rows_c));
            let n = x.len().min(y.len());
            prop_assert_eq!(&x[..n], &y[..n]);
        }
        // Each set's share, at every prefix of the samples it draws.
        let mut cuts = vec![(0, stream.switches[0].weights.clone())];
        cuts.extend(stream.changes.iter().map(|c| (c.start as usize, c.weights.clone())));
        cuts.push((rows_c.len(), Vec::new()));
        for pair in cuts.windows(2) {
            let ((from, w), (to, _)) = (&pair[0], &pair[1]);
            let mut drawn = [0usize; 3];
            for (i, &r) in rows_c[*from..*to].iter().enumerate() {
                drawn[blend.source_of(r).0] += 1;
                for k in 0..3 {
                    let share = w[k] * (i + 1) as f64;
                    prop_assert!((drawn[k] as f64 - share).abs() <= 1.0 + 1e-9, "{drawn:?} at {i} of {w:?}");
                }
            }
        }
    }

    /// A mixture (its weights fixed or scheduled) with a batch-size or token-budget
    /// schedule: one plan on every rank; each place of the epoch's draws read once, a
    /// state saved midway and resumed by the ranks of the same options included; each
    /// step under the value the schedule gives at the global tokens read before it.
    #[test]
    fn a_mixture_takes_a_batch_size_or_budget_schedule(
        sizes in (1usize..5, 5usize..40, 1usize..25),
        lengths in prop::collection::vec(1usize..40, 1..60),
        values in prop::collection::vec(1usize..6, 1..4),
        budget in any::<bool>(),
        reweigh in prop::option::of(1u64..400),
        world in 1usize..4,
        steps in 0usize..8,
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let mut mixed = mixture(&data, &[0.3, 0.5, 0.2]);
        if let Some(at) = reweigh {
            let sets = vec![(0, vec![0.3, 0.5, 0.2]), (at, vec![0.6, 0.1, 0.3])];
            mixed = mixed.with_weight_schedule(Schedule::new(sets).unwrap());
        }
        // Points 60 tokens apart; a budget's values in tens of tokens.
        let points: Vec<(u64, usize)> = (values.iter().enumerate())
            .map(|(i, &v)| (60 * i as u64, if budget { 35 + 10 * v } else { v }))
            .collect();
        let schedule = Schedule::new(points).unwrap();
        let build = |rank| {
            let b = Loader::builder(&mixed);
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            let b = match budget {
                true => b.with_token_budget_schedule(schedule.clone()),
                false => b.with_batch_size_schedule(schedule.clone()),
            };
            b.elastic_shard(rank, world).build().unwrap()
        };
        let ranks: Vec<Loader> = (0..world).map(build).collect();
        let plan = ranks[0].plan(0);
        for r in &ranks[1..] {
            prop_assert_eq!(&*r.plan(0), &*plan);
        }
        let mut epoch = epoch_rows(&ranks[0]);
        epoch.sort_unstable();
        let mut read = plan.samples().to_vec();
        read.sort_unstable();
        prop_assert_eq!(&read, &epoch);
        let (mut tokens, mut step) = (0u64, 0);
        while step < plan.len() {
            let value = schedule.at(tokens);
            for info in &plan.infos()[step..(step + world).min(plan.len())] {
                match budget {
                    true => prop_assert!(info.tokens <= value || info.len() == 1),
                    false => prop_assert!(info.len() <= value),
                }
                tokens += info.tokens as u64;
            }
            step += world;
        }
        // Rank 0 reads some steps (as every rank does its own); the ranks go on from its
        // state.
        let mut first = build(0);
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&first.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let mut read = read_before(&first.plan(0), state.position().batch);
        let others: Vec<Loader> = (0..world).map(|r| {
            let mut l = build(r);
            l.restore(&state).unwrap();
            l
        }).collect();
        read.extend(read_rest(others));
        read.sort_unstable();
        prop_assert_eq!(read, epoch);
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
        reweigh in any::<bool>(),
    ) {
        let data = sources([sizes.0, sizes.1, sizes.2], &lengths);
        let mixed = [mixture(&data, &[0.3, 0.5, 0.2]), mixture(&data, &[0.1, 0.2, 0.7])];
        let build = |m: usize, batch: usize, rank, world| {
            let m = &mixed[m];
            let b = Loader::builder(m).with_batch_size(batch).with_packing(Packing::new(seq));
            let b = match shuffle { Some(seed) => b.with_shuffle(seed), None => b };
            b.elastic_shard(rank, world)
        };
        // A source too short for a window is refused when the loader is built.
        let first = build(0, batches.0, 0, worlds.0).build();
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
        let before = read_before(&plan_a, state.position().batch);
        let mut read = token_places(&pieces(&plan_a, &before));
        let mut epoch = Vec::new();
        for rank in 0..worlds.1 {
            let b = build(usize::from(reweigh), batches.1, rank, worlds.1);
            let mut l = b.build().unwrap();
            l.restore(&state).unwrap();
            let plan = l.plan(0);
            // The windows before the state as A read them, then the rest (by the other
            // weights after the last place they hold).
            prop_assert_eq!(pieces(&plan, &plan.samples()[..before.len()]), pieces(&plan_a, &before));
            epoch = token_places(&pieces(&plan, plan.samples()));
            while let Some(batch) = l.next_batch().unwrap() {
                read.extend(token_places(&pieces(&plan, batch.samples())));
            }
        }
        read.sort_unstable();
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
    // Other weights, one set or a schedule, take the stream over.
    let points = vec![(0, vec![0.2, 0.5, 0.3]), (40, vec![0.6, 0.2, 0.2])];
    let scheduled = mixture(&data, &weights)
        .with_weight_schedule(crate::loader::Schedule::new(points).unwrap());
    base(&scheduled).build().unwrap().restore(&state).unwrap();
    let reweighted = mixture(&data, &[0.5, 0.3, 0.2]);
    let mut other = base(&reweighted).build().unwrap();
    other.restore(&state).unwrap();
    // A packed mixture goes on at another pack length, its weights one set or a schedule.
    let packed = |m, seq| base(m).with_packing(Packing::new(seq));
    let mut a = packed(&mixed, 3).build().unwrap();
    a.next_batch().unwrap();
    let state = a.state();
    packed(&mixed, 4).build().unwrap().restore(&state).unwrap();
    let mut s = packed(&scheduled, 3).build().unwrap();
    s.next_batch().unwrap();
    packed(&scheduled, 4)
        .build()
        .unwrap()
        .restore(&s.state())
        .unwrap();
    // The same options resume exactly.
    let mut same = packed(&mixed, 3).build().unwrap();
    same.restore(&state).unwrap();
    let next = |l: &mut Loader| l.next_batch().unwrap().unwrap().samples().to_vec();
    assert_eq!(next(&mut same), next(&mut a));
}

#[test]
fn a_stream_taken_over_goes_on_exactly_under_the_same_options() {
    let lengths: Vec<usize> = (1..30).collect();
    let data = sources([3, 20, 9], &lengths);
    let (a, b) = (
        mixture(&data, &[0.2, 0.5, 0.3]),
        mixture(&data, &[0.6, 0.1, 0.3]),
    );
    let build = |m| {
        Loader::builder(m)
            .with_shuffle(3)
            .with_batch_size(2)
            .elastic_shard(0, 1)
    };
    let mut first = build(&a).build().unwrap();
    first.next_batch().unwrap();
    let mut second = build(&b).with_batch_size(3).build().unwrap();
    second.restore(&first.state()).unwrap();
    assert_ne!(
        second.fingerprint(),
        build(&b).build().unwrap().fingerprint()
    );
    second.next_batch().unwrap();
    let state = LoaderState::from_json(&second.state().to_json()).unwrap();
    let rest = |l: &mut Loader| -> Vec<Vec<usize>> {
        l.by_ref().map(|b| b.unwrap().samples().to_vec()).collect()
    };
    let mut again = build(&b).with_batch_size(3).build().unwrap();
    again.restore(&state).unwrap();
    assert_eq!(rest(&mut again), rest(&mut second));
    let later = |l: &mut Loader| {
        l.set_epoch(2);
        l.next_batch().unwrap().unwrap().samples().to_vec()
    };
    assert_eq!(later(&mut again), later(&mut second));
    // A position alone does not resume on a loader drawing by the weights from the start.
    let position = second.next_position();
    assert!(
        build(&b)
            .with_batch_size(3)
            .build()
            .unwrap()
            .seek(position)
            .is_err()
    );
}

#[test]
fn a_mixture_state_that_does_not_fit_its_sources_is_refused() {
    let lengths: Vec<usize> = (1..30).collect();
    let data = sources([3, 20, 9], &lengths);
    let mixed = mixture(&data, &[0.2, 0.5, 0.3]);
    let build = || {
        Loader::builder(&mixed)
            .with_batch_size(2)
            .elastic_shard(0, 1)
    };
    let mut a = build().build().unwrap();
    a.next_batch().unwrap();
    let good = a.state().to_json();
    assert!(good.contains(r#""drawn":"0,0,0""#), "{good}");
    // Draws that do not add up to their switch's place, a source too many, other weights'
    // sum, a change of a part that is not there: refused naming the sources.
    for (from, to) in [
        (r#""drawn":"0,0,0""#, r#""drawn":"0,5,0""#),
        (
            r#""drawn":"0,0,0","start":"0","weights":[0.2,0.5,0.3]"#,
            r#""drawn":"0,0,0,0","start":"0","weights":[0.2,0.5,0.2,0.1]"#,
        ),
        (r#""weights":[0.2,0.5,0.3]"#, r#""weights":[0.2,0.5,0.9]"#),
        (
            r#""switches":["#,
            r#""changes":[{"part":7,"start":"1","weights":[0.2,0.5,0.3]}],"switches":["#,
        ),
        (
            r#""switches":["#,
            r#""changes":[{"part":1,"start":"99999999999999","weights":[0.2,0.5,0.3]}],"switches":["#,
        ),
    ] {
        let bad = good.replace(from, to);
        assert_ne!(bad, good);
        let state = LoaderState::from_json(&bad).unwrap();
        let e = build().with_batch_size(3).build().unwrap().restore(&state);
        assert!(
            e.unwrap_err().to_string().contains("the mixture's sources"),
            "{bad}"
        );
    }
    for (from, to) in [
        (r#""drawn":"0,0,0""#, r#""drawn":"x""#),
        (r#""drawn":"0,0,0""#, r#""drawn":"0,0,0,0""#),
        (r#""start":"0""#, r#""start":-1"#),
        (r#""weights":[0.2,0.5,0.3]"#, r#""weights":[0.2,-0.5,0.3]"#),
    ] {
        let bad = good.replace(from, to);
        assert!(LoaderState::from_json(&bad).is_err(), "{bad}");
    }
}
