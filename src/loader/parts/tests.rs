//! Epochs in parts against the rule: resumed under other options, every sample (packed:
//! every token) of the epoch is read once; a schedule takes over at the first step at or
//! past its point, the same on every rank.

use proptest::prelude::*;

use crate::io::ipc_reader::MappedDataset;
use crate::loader::pack::tests::{file, tokens};
use crate::loader::{Balance, Loader, LoaderBuilder, LoaderState, Packing, Piece, Plan, Schedule};

/// Batch size or budget, world size and balance of one side of a resume.
#[derive(Clone, Copy, Debug)]
pub(super) struct Side {
    pub world: usize,
    budget: Option<usize>,
    batch: usize,
    balance: u8,
}

pub(super) fn side() -> impl Strategy<Value = Side> {
    (1usize..5, prop::option::of(40usize..90), 1usize..6, 0u8..3).prop_map(
        |(world, budget, batch, balance)| Side {
            world,
            budget,
            batch,
            balance,
        },
    )
}

pub(super) fn with(b: LoaderBuilder<'_>, side: Side, rank: usize) -> LoaderBuilder<'_> {
    let b = match side.budget {
        Some(t) => b.with_token_budget(t),
        None => b.with_batch_size(side.batch),
    };
    let b = match side.balance {
        1 => b.with_balance(Balance::Tokens),
        2 => b.with_balance(Balance::Attention { weight: 0.01 }),
        _ => b,
    };
    b.elastic_shard(rank, side.world)
}

/// The samples every rank of `loaders` reads to the epoch's end.
pub(super) fn read_rest(loaders: Vec<Loader>) -> Vec<usize> {
    let mut out = Vec::new();
    for mut l in loaders {
        let epoch = l.next_position().epoch;
        while let Some(batch) = l.next_batch().unwrap() {
            assert_eq!(batch.next_position().epoch, epoch);
            out.extend_from_slice(batch.samples());
        }
    }
    out
}

/// Where the samples of the batches before `batch` end in `plan`'s samples.
pub(super) fn end_of(plan: &Plan, batch: usize) -> usize {
    batch.checked_sub(1).map_or(0, |b| plan.infos()[b].end)
}

/// The file-wide token ids (the "tokens" column's values) of `pieces`.
fn token_ids(pieces: &[Piece], lengths: &[usize]) -> Vec<i64> {
    let starts: Vec<usize> = (lengths.iter())
        .scan(0, |s, &l| {
            let at = *s;
            *s += l;
            Some(at)
        })
        .collect();
    (pieces.iter())
        .flat_map(|p| (0..p.n_tokens).map(|k| (starts[p.row] + p.first_token + k) as i64))
        .collect()
}

/// A packed loader over `data`: batches of 2 windows of `seq` tokens.
fn packed(data: &MappedDataset, seq: usize, shuffle: Option<u64>) -> LoaderBuilder<'_> {
    let b = Loader::builder(data)
        .with_batch_size(2)
        .with_packing(Packing::new(seq));
    match shuffle {
        Some(seed) => b.with_shuffle(seed),
        None => b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn a_resume_under_other_options_reads_every_sample_once(
        lengths in prop::collection::vec(1usize..40, 1..100),
        (a, b, c) in (side(), side(), side()),
        (steps, more) in (0usize..10, 0usize..10),
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let (_dir, data) = file(&lengths, 8);
        let build = |s: Side, rank| {
            let b = Loader::builder(&data);
            with(match shuffle { Some(seed) => b.with_shuffle(seed), None => b }, s, rank)
        };
        // A reads `steps` steps, B goes on from there for `more`, C's ranks read the rest.
        let mut first = build(a, 0).build().unwrap();
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = LoaderState::from_json(&first.state().to_json()).unwrap();
        prop_assume!(state.position().epoch == 0);
        let plan_a = first.plan(0);
        let read_a = plan_a.samples()[..end_of(&plan_a, state.position().batch)].to_vec();
        let mut second = build(b, 0).build().unwrap();
        second.restore(&state).unwrap();
        for _ in 0..more {
            second.next_batch().unwrap();
        }
        let state = second.state();
        prop_assume!(state.position().epoch == 0);
        let plan = second.plan(0);
        prop_assert_eq!(&plan.samples()[..read_a.len()], &read_a[..]);
        let mut all = plan.samples()[..end_of(&plan, state.position().batch)].to_vec();
        let ranks = (0..c.world).map(|r| {
            let mut l = build(c, r).build().unwrap();
            l.restore(&state).unwrap();
            l
        });
        all.extend(read_rest(ranks.collect()));
        all.sort_unstable();
        prop_assert_eq!(all, (0..lengths.len()).collect::<Vec<_>>());
    }

    #[test]
    fn a_packed_resume_under_another_length_reads_every_token_once(
        lengths in prop::collection::vec(1usize..30, 1..60),
        (s1, s2) in (2usize..12, 2usize..12),
        (world_a, world_b) in (1usize..4, 1usize..4),
        steps in 1usize..8,
        shuffle in prop::option::of(any::<u64>()),
    ) {
        let (_dir, data) = file(&lengths, 8);
        let mut first = packed(&data, s1, shuffle).elastic_shard(0, world_a).build().unwrap();
        for _ in 0..steps {
            first.next_batch().unwrap();
        }
        let state = first.state();
        prop_assume!(state.position().epoch == 0 && state.position().batch > 0);
        let a = first.plan(0);
        let mut read = Vec::new();
        let mut dropped = 0;
        for rank in 0..world_b {
            let mut l = packed(&data, s2, shuffle).elastic_shard(rank, world_b).build().unwrap();
            l.restore(&state).unwrap();
            let plan = l.plan(0);
            let windows = plan.windows().unwrap();
            if rank == 0 {
                // The windows read before the state, as A read them.
                dropped = windows.dropped_tokens();
                let before = &plan.samples()[..end_of(&plan, state.position().batch)];
                for (i, &w) in before.iter().enumerate() {
                    prop_assert_eq!(windows.pieces(w), a.windows().unwrap().pieces(a.samples()[i]));
                    read.extend(token_ids(&windows.pieces(w), &lengths));
                }
            }
            while let Some(batch) = l.next_batch().unwrap() {
                // The values read are the tokens the windows say.
                let values = tokens(&batch);
                let mut expected = Vec::new();
                for &w in batch.samples() {
                    expected.extend(token_ids(&windows.pieces(w), &lengths));
                }
                prop_assert_eq!(&values, &expected);
                read.extend(expected);
            }
        }
        let total: usize = lengths.iter().sum();
        read.sort_unstable();
        prop_assert_eq!(read.len() + dropped, total);
        read.dedup();
        prop_assert_eq!(read.len() + dropped, total);
    }
}

#[test]
fn a_schedule_takes_over_at_the_first_step_at_or_past_its_point_on_every_rank() {
    let lengths: Vec<usize> = (0..300).map(|i| 1 + (i * 7919) % 37).collect();
    let (_dir, data) = file(&lengths, 16);
    let points = vec![(0, 2), (150, 3), (900, 5), (2000, 1)];
    let plans: Vec<_> = (0..3)
        .map(|rank| {
            let b = Loader::builder(&data).with_shuffle(5).shard(rank, 3);
            let schedule = Schedule::new(points.clone()).unwrap();
            b.with_batch_size_schedule(schedule)
                .build()
                .unwrap()
                .plan(0)
        })
        .collect();
    assert!(
        plans.iter().all(|p| *p == plans[0]),
        "one plan on every rank"
    );
    let plan = &plans[0];
    let mut samples: Vec<usize> = plan.samples().to_vec();
    samples.sort_unstable();
    assert_eq!(samples, (0..300).collect::<Vec<_>>());
    // Each step's batches have the size the schedule gives at the tokens read before it
    // (the last batch of a part may be short).
    let schedule = Schedule::new(points).unwrap();
    let (mut read, mut step, mut sizes) = (0u64, 0, Vec::new());
    while step < plan.len() {
        let size = schedule.at(read);
        let end = (step + 3).min(plan.len());
        for info in &plan.infos()[step..end] {
            assert!(
                info.len() <= size,
                "step {step}: {} samples, over {size}",
                info.len()
            );
            read += info.tokens as u64;
        }
        sizes.push(size);
        step = end;
    }
    sizes.dedup();
    assert_eq!(sizes, [2, 3, 5, 1]);
}

#[test]
fn changes_that_cannot_keep_every_sample_once_are_refused_naming_them() {
    let lengths: Vec<usize> = (1..40).collect();
    let (_dir, data) = file(&lengths, 8);
    let base = |batch| {
        Loader::builder(&data)
            .with_shuffle(1)
            .with_batch_size(batch)
    };
    let mut a = base(3).elastic_shard(0, 2).build().unwrap();
    a.next_batch().unwrap();
    let state = a.state();
    let refused =
        |b: LoaderBuilder<'_>| b.build().unwrap().restore(&state).unwrap_err().to_string();
    let b = || Loader::builder(&data).with_batch_size(4);
    assert!(refused(b().with_shuffle(2).elastic_shard(0, 2)).contains("the shuffle or its seed"));
    assert!(refused(b().with_shuffle(1).shard(0, 2)).contains("shards by parts"));
    let packing = b().with_shuffle(1).with_packing(Packing::new(8));
    assert!(refused(packing.elastic_shard(0, 2)).contains("packing"));
    // The same options resume exactly, by seek.
    let mut same = base(3).elastic_shard(0, 2).build().unwrap();
    same.restore(&state).unwrap();
    let next = |l: &mut Loader| l.next_batch().unwrap().unwrap().samples().to_vec();
    assert_eq!(next(&mut same), next(&mut a));
}

#[test]
fn hostile_states_give_errors_not_allocations() {
    let lengths: Vec<usize> = (1..20).collect();
    let (_dir, data) = file(&lengths, 8);
    let mut a = Loader::builder(&data)
        .with_batch_size(3)
        .elastic_shard(0, 1)
        .build()
        .unwrap();
    a.next_batch().unwrap();
    let good = a.state().to_json();
    for (from, to) in [
        ("\"world\":1", "\"world\":99999999999"),
        ("\"end\":1", "\"end\":5"),
        ("\"batch_size\":3", "\"batch_size\":0"),
        ("\"kind\":\"none\"", "\"kind\":\"other\""),
    ] {
        assert!(good.contains(from), "{good}");
        let bad = good.replace(from, to);
        assert!(LoaderState::from_json(&bad).is_err(), "{bad}");
    }
    // Parts whose batches are not in their plans.
    let far = good
        .replace("\"end\":1", "\"end\":500")
        .replace("\"batch\":1", "\"batch\":500");
    let state = LoaderState::from_json(&far).unwrap();
    let mut b = Loader::builder(&data)
        .with_batch_size(2)
        .elastic_shard(0, 1)
        .build()
        .unwrap();
    assert!(b.restore(&state).is_err());
    assert_eq!(b.next_batch().unwrap().unwrap().samples(), &[0, 1]);
}

#[test]
fn a_scheduled_epoch_reached_by_set_epoch_is_the_one_read_through() {
    let lengths: Vec<usize> = (0..120).map(|i| 1 + (i * 31) % 17).collect();
    let (_dir, data) = file(&lengths, 16);
    let build = || {
        let ramp = Schedule::new(vec![(0, 2), (1500, 4), (3000, 7)]).unwrap();
        let b = Loader::builder(&data).with_shuffle(2).elastic_shard(0, 2);
        b.with_batch_size_schedule(ramp).build().unwrap()
    };
    let mut through = build();
    for _ in 0..3 {
        while through.next_batch().unwrap().is_some() {}
    }
    let mut jumped = build();
    jumped.set_epoch(3);
    assert_eq!(jumped.plan(3), through.plan(3));
    assert_eq!(jumped.state().to_json(), through.state().to_json());
    // The ramp reaches its last value by epoch 3 (about 1,000 tokens an epoch).
    assert!(jumped.plan(3).infos().iter().all(|i| i.len() <= 7));
    assert_ne!(jumped.plan(0), jumped.plan(3));
}

#[test]
fn a_schedule_s_later_parts_are_written_as_what_changed_and_read_back() {
    let lengths: Vec<usize> = (0..4000).map(|i| 1 + (i * 31) % 17).collect();
    let (_dir, data) = file(&lengths, 64);
    let points: Vec<(u64, usize)> = (0..8).map(|k| (k * 150, 2 + k as usize)).collect();
    let ramp = Schedule::new(points).unwrap();
    let b = Loader::builder(&data).with_shuffle(2).elastic_shard(0, 4);
    let mut loader = b.with_batch_size_schedule(ramp).build().unwrap();
    for _ in 0..15 {
        loader.next_batch().unwrap();
    }
    let state = loader.state();
    assert_eq!(state.position().epoch, 0);
    let json = state.to_json();
    let parts = json.matches("\"end\":").count();
    assert!(parts >= 6, "the ramp crossed {parts} points: {json}");
    // Each switch adds its batch size and its end, not the whole options again.
    assert_eq!(
        json.matches("\"options\":{\"balance\"").count(),
        1,
        "{json}"
    );
    assert_eq!(json.matches("\"changed\"").count(), parts - 1, "{json}");
    assert!(
        json.len() <= 300 + 40 * parts,
        "{} bytes: {json}",
        json.len()
    );
    assert_eq!(LoaderState::from_json(&json).unwrap(), state);
    // A change with no part before it, or of an unknown form, is refused.
    let first_changed = json.replacen("\"options\":{\"balance\"", "\"changed\":{\"balance\"", 1);
    assert!(LoaderState::from_json(&first_changed).is_err());
    let no_form = json.replacen("\"changed\"", "\"other\"", 1);
    assert!(LoaderState::from_json(&no_form).is_err());
}
