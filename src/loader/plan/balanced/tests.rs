//! Balanced steps: every item once, the same plan on every rank, and the long tail's steps
//! within 5 % of their mean cost.

use proptest::prelude::*;

use super::*;
use crate::loader::config::{ATTENTION_WEIGHT, BALANCE_LOOKAHEAD, Balance, Ranks, cost};
use crate::loader::order::Rows;
use crate::loader::pack::{PackMode, Packing, Windows};

fn config(batch: BatchSize, world: usize, balance: Option<Balance>) -> PlanConfig {
    PlanConfig {
        batch,
        drop_last: false,
        shuffle: Shuffle::None,
        buckets: Vec::new(),
        ranks: Ranks::Turns {
            rank: 0,
            world,
            group: world,
        },
        packing: None,
        balance,
        balance_lookahead: BALANCE_LOOKAHEAD,
    }
}

/// The plan of samples of `lengths` in file order (shuffled when the config says).
fn plan_of(config: &PlanConfig, lengths: &[u32], epoch: u64) -> Plan {
    let all = crate::row_index::RowIndex::from_counts([lengths.len()]);
    Plan::build(config, lengths, &all, &all, epoch)
}

/// Log-normal lengths: median 300 tokens, σ 1.0 (a long tail: 1 % over 3,100, 0.1 % over
/// 6,600; `log_normal_lengths`), clipped to `1..=max`.
fn long_tail(n: usize, max: usize, seed: u64) -> Vec<u32> {
    let lengths = crate::loader::pack::tests::log_normal_lengths(n, seed);
    lengths.into_iter().map(|l| l.min(max as u32)).collect()
}

/// Each step's max / mean batch cost, over the steps of `world` batches but the plan's
/// last three (the epoch's leftovers).
fn step_ratios(plan: &Plan, world: usize) -> Vec<f64> {
    let costs = plan.costs();
    let steps = costs.len() / world;
    (0..steps.saturating_sub(3))
        .map(|s| {
            let step = &costs[s * world..(s + 1) * world];
            let max = step.iter().copied().fold(0.0, f64::max);
            max / (step.iter().sum::<f64>() / world as f64)
        })
        .collect()
}

fn worst(ratios: &[f64]) -> f64 {
    ratios.iter().copied().fold(1.0, f64::max)
}

/// The long tail in budgets and in packed windows of `context` tokens, at 2, 8 and 64
/// ranks, for `w` 0 and the causal-attention weight: every step but the last within 5 %.
fn long_tail_steps_balance(context: usize, n: usize, per_rank: usize) {
    let lengths = long_tail(n, context, 7);
    for world in [2, 8, 64] {
        for w in [0.0, ATTENTION_WEIGHT] {
            let balance = Balance::Attention { weight: w };
            // A budget of one context per rank.
            let mut plain = config(BatchSize::Tokens(context), world, None);
            plain.shuffle = Shuffle::Samples { seed: 3 };
            let mut balanced = plain.clone();
            balanced.balance = Some(balance);
            // `cost()` of the unbalanced plan counts tokens: weigh its batches here.
            let before = plan_of(&plain, &lengths, 1);
            let weighed = weigh(&before, &lengths, w);
            let after = plan_of(&balanced, &lengths, 1);
            let (was, is) = (step_ratios(&weighed, world), step_ratios(&after, world));
            eprintln!(
                "budget {context}, {world} ranks, w {w:.2e}: unbalanced worst {:.3} mean {:.3}; balanced worst {:.3} over {} steps",
                worst(&was),
                was.iter().sum::<f64>() / was.len().max(1) as f64,
                worst(&is),
                is.len()
            );
            assert!(!is.is_empty());
            assert!(
                worst(&is) <= 1.05,
                "budget {context}, {world} ranks, w {w}: {}",
                worst(&is)
            );
            // Packed: best-fit windows of `context` tokens, `per_rank` windows per rank and
            // step (at 32k one window a rank cannot be balanced: see docs/design.md).
            let mut packed = config(BatchSize::Samples(per_rank), world, Some(balance));
            packed.shuffle = Shuffle::Samples { seed: 3 };
            let packing = Packing::new(context).with_mode(PackMode::best_fit(256));
            let order: Vec<usize> = (0..lengths.len()).collect();
            let windows = Windows::build(&packing, &lengths, Rows::Wide(order));
            let window_order: Vec<usize> = (0..windows.len()).collect();
            let after = windows.plan(&packed, &window_order, 1);
            let is = step_ratios(&after, world);
            eprintln!(
                "  packed: balanced worst {:.3} over {} steps",
                worst(&is),
                is.len()
            );
            assert!(
                worst(&is) <= 1.05,
                "packed {context}, {world} ranks, w {w}: {}",
                worst(&is)
            );
        }
    }
}

/// `plan`'s batches' costs under weight `w` (a plan made without balance counts tokens).
fn weigh(plan: &Plan, lengths: &[u32], w: f64) -> Plan {
    let mut out = plan.clone();
    out.costs = plan
        .batches()
        .map(|b| b.iter().map(|&s| cost(lengths[s] as usize, w)).sum())
        .collect();
    out
}

#[test]
fn long_tail_steps_balance_at_4k() {
    long_tail_steps_balance(4096, 100_000, 1);
}

#[test]
fn long_tail_steps_balance_at_32k() {
    long_tail_steps_balance(32768, 200_000, 4);
}

/// Checks a balanced plan of samples of `lengths`: every sample once (or counted as
/// dropped), steps of `world` batches but the last (none short with `drop_last`), batches
/// within the budget or of `b` samples in whole steps, and costs as counted by hand.
fn check(config: &PlanConfig, lengths: &[u32], plan: &Plan, w: f64) -> Result<(), TestCaseError> {
    let world = config.ranks.rank_and_world().1;
    let mut seen = plan.samples().to_vec();
    seen.sort_unstable();
    seen.dedup();
    prop_assert_eq!(seen.len(), plan.samples().len(), "a sample twice");
    prop_assert_eq!(seen.len() + plan.dropped(), lengths.len());
    if !config.drop_last {
        prop_assert_eq!(plan.dropped(), 0);
    } else {
        prop_assert_eq!(plan.len() % world, 0);
    }
    // The batches before the last step's.
    let whole = plan.len().saturating_sub(1) / world * world;
    for (i, (batch, info)) in plan.batches().zip(plan.infos()).enumerate() {
        prop_assert!(!batch.is_empty());
        let tokens: usize = batch.iter().map(|&s| lengths[s] as usize).sum();
        prop_assert_eq!(tokens, info.tokens);
        let cost: f64 = batch.iter().map(|&s| cost(lengths[s] as usize, w)).sum();
        prop_assert!((cost - plan.costs()[i]).abs() <= 1e-9 * cost.max(1.0));
        match config.batch {
            BatchSize::Samples(b) if i < whole || config.drop_last => {
                prop_assert_eq!(batch.len(), b)
            }
            BatchSize::Samples(b) => prop_assert!(batch.len() <= b),
            BatchSize::Tokens(t) => {
                prop_assert!(tokens <= t || (batch.len() == 1 && info.oversize));
                prop_assert_eq!(info.oversize, tokens > t);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Every sample once per epoch with balance, at any world size, batch size or budget,
    /// shuffled or not, with or without `drop_last`; the plan the same on every rank.
    #[test]
    fn every_sample_once_in_steps_of_world_batches(
        lengths in proptest::collection::vec(0u32..300, 0..1200),
        world in 1usize..70,
        (tokens, size, lookahead) in (any::<bool>(), 1usize..400, 1usize..4),
        (shuffle, drop_last, attention) in (any::<bool>(), any::<bool>(), any::<bool>()),
    ) {
        let batch = match tokens {
            true => BatchSize::Tokens(size),
            false => BatchSize::Samples(size % 9 + 1),
        };
        let w = if attention { 0.01 } else { 0.0 };
        let mut c = config(batch, world, Some(Balance::Attention { weight: w }));
        c.drop_last = drop_last;
        c.balance_lookahead = lookahead;
        if shuffle {
            c.shuffle = Shuffle::Samples { seed: size as u64 };
        }
        let plan = plan_of(&c, &lengths, 2);
        check(&c, &lengths, &plan, w)?;
        // Any rank, sharded either way: the same plan.
        for ranks in [Ranks::Turns { rank: world - 1, world, group: world }, Ranks::Parts { rank: world / 2, world }] {
            let other = PlanConfig { ranks, ..c.clone() };
            prop_assert_eq!(&plan_of(&other, &lengths, 2), &plan);
        }
    }
}

/// Whether the steps `by_budget` makes of `lengths` at costs `n + w·n²` are the same filled
/// each way of `fills` (one scratch for all: it is left ready from one pool to the next).
fn same_steps_each_fill(
    lengths: &[usize],
    (world, t, w, last): (usize, usize, f64, bool),
    fills: &[budget::Fill],
) -> Result<(Steps, Steps), TestCaseError> {
    let costs: Vec<(usize, f64)> = lengths.iter().map(|&len| (len, cost(len, w))).collect();
    same_steps_of_costs(&costs, (world, t, w, last), fills)
}

/// [`same_steps_each_fill`] of items of lengths and costs `items` (the steps and last
/// steps made).
fn same_steps_of_costs(
    items: &[(usize, f64)],
    (world, t, w, last): (usize, usize, f64, bool),
    fills: &[budget::Fill],
) -> Result<(Steps, Steps), TestCaseError> {
    let mut pool: Vec<Item> = (items.iter().enumerate())
        .map(|(pos, &(len, cost))| Item {
            pos,
            slot: 0,
            len,
            cost,
        })
        .collect();
    sort_pool(&mut pool, &mut Vec::new(), &mut Vec::new());
    let mut scratch = budget::Scratch::default();
    let mut deal = |fill| {
        let (mut steps, mut tail) = (Steps::default(), Steps::default());
        let both = (&mut steps, &mut tail);
        let carry = budget::by_budget(&pool, world, (t, w, fill), last, both, &mut scratch);
        (steps, tail, carry)
    };
    let first = deal(fills[0]);
    prop_assert!(first.0.len() + first.1.len() > 0 || pool.is_empty() || !last);
    for &fill in &fills[1..] {
        prop_assert_eq!(&first, &deal(fill), "{:?} against {:?}", fill, fills[0]);
    }
    Ok((first.0, first.1))
}

/// An item of 0 tokens fits every batch, one over the budget too: it goes to the cheapest
/// batch of all, here the one over the budget, when costs are not `n + w·n²` of the length
/// (a packed window's count its padding).
#[test]
fn an_item_of_no_tokens_goes_to_the_cheapest_batch_over_the_budget_too() {
    use budget::Fill::{Costs, Pass};
    // Over the budget of 6 (a batch alone, costing 4), two of 1 token costing 2.5 each
    // (in the other rank's batch, within the cap 2.5 + 5), and one of none.
    let items = [(7, 4.0), (1, 2.5), (1, 2.5), (0, 0.0)];
    let (steps, tail) =
        same_steps_of_costs(&items, (2, 6, 0.01, true), &[Pass, Costs]).expect("the same steps");
    assert_eq!(steps.len(), 0);
    let batches: Vec<(Vec<usize>, bool)> = (tail.step(0))
        .map(|k| {
            let batch = tail.batches[k];
            (tail.places[batch.start..batch.end].to_vec(), batch.oversize)
        })
        .collect();
    assert_eq!(batches, [(vec![0, 3], true), (vec![1, 2], false)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// With costs in tokens (`w` 0), the steps filled from the batches kept by cost (in
    /// tokens, and in the order of their costs) are those of the pass over every batch per
    /// item: at
    /// any world size (not only powers of two), budget, with samples over it, of 0 tokens,
    /// and in the epoch's last pool.
    #[test]
    fn steps_filled_by_tokens_are_those_of_the_pass_over_the_batches(
        lengths in proptest::collection::vec(0usize..400, 0..1500),
        world in 1usize..70,
        t in 1usize..300,
        last in any::<bool>(),
    ) {
        use budget::Fill::{Costs, Pass, Tokens};
        same_steps_each_fill(&lengths, (world, t, 0.0, last), &[Tokens, Pass, Costs, Tokens])?;
    }

    /// With attention costs (`w` > 0: the cheapest batch may lack the tokens another has),
    /// the steps filled from the batches kept by cost are those of the pass over every
    /// batch per item: weights from the causal decoder's to one where a sample's attention
    /// outweighs its tokens many times (or the cap under an item's cost), budgets small and
    /// large against the samples, samples of 0 tokens (batches of no cost but not empty),
    /// any world size, in the epoch's last pool too.
    #[test]
    fn steps_filled_by_cost_are_those_of_the_pass_over_the_batches(
        lengths in proptest::collection::vec(
            prop_oneof![0usize..8, 0usize..400, 0usize..5000],
            0..1500,
        ),
        world in 1usize..70,
        t in prop_oneof![1usize..40, 1usize..300, 1000usize..6000],
        w in prop_oneof![Just(ATTENTION_WEIGHT), 1e-6f64..1e-2, Just(0.5), Just(3.0)],
        last in any::<bool>(),
    ) {
        use budget::Fill::{Costs, Pass};
        same_steps_each_fill(&lengths, (world, t, w, last), &[Pass, Costs, Pass])?;
    }
}

#[test]
fn drop_last_leaves_out_a_last_step_short_of_ranks() {
    // 10 samples of 1..=10 tokens, batches of 2 on 3 ranks: one step of 6 samples, then 4
    // samples make 2 batches of a last step of 2.
    let lengths: Vec<u32> = (1..=10).collect();
    let mut c = config(BatchSize::Samples(2), 3, Some(Balance::Tokens));
    c.balance_lookahead = 1;
    let plan = plan_of(&c, &lengths, 0);
    assert_eq!(plan.len(), 5);
    // The first pool (samples 0..6) sorted: 5 4 3 2 1 0, dealt largest first to the
    // cheapest rank with room: {5, 0}, {4, 1}, {3, 2}, each 7 tokens.
    assert_eq!(&plan.costs()[..3], [7.0, 7.0, 7.0]);
    c.drop_last = true;
    let dropped = plan_of(&c, &lengths, 0);
    assert_eq!((dropped.len(), dropped.dropped()), (3, 4));
}

#[test]
fn steps_are_shuffled_with_the_seed_and_kept_in_pool_order_without() {
    let lengths = long_tail(5000, 4096, 1);
    let mut c = config(BatchSize::Tokens(4096), 4, Some(Balance::Tokens));
    let plain = plan_of(&c, &lengths, 0);
    // Without a shuffle, a pool's steps come largest first: costs do not increase much.
    assert!(plain.infos()[0].max_len >= plain.infos()[plain.len() / 8].max_len);
    c.shuffle = Shuffle::Samples { seed: 5 };
    let (a, b) = (plan_of(&c, &lengths, 0), plan_of(&c, &lengths, 1));
    assert_ne!(a, b);
    assert_eq!(a, plan_of(&c, &lengths, 0));
}

#[test]
fn longest_within_inverts_the_cost() {
    for w in [0.0, 1e-5, 0.25, 3.0] {
        for x in [0.0, 0.5, 1.0, 2.0, 17.5, 1e4, 1e9] {
            let n = longest_within(x, w, usize::MAX);
            assert!(cost(n, w) <= x && cost(n + 1, w) > x, "w {w} x {x}: {n}");
            // At most `most`.
            assert_eq!(longest_within(x, w, 3), n.min(3));
        }
    }
    assert_eq!(longest_within(f64::INFINITY, 1.0, usize::MAX), usize::MAX);
    assert_eq!(longest_within(-1.0, 1.0, 10), 0);
}

mod loaders {
    use super::long_tail;
    use crate::error::{ArgumentError, ErrorKind};
    use crate::loader::pack::tests::file;
    use crate::loader::{Balance, Loader, LoaderBuilder, Mixture, Packing};

    /// Every rank's batches, read with `next_batch`: rank `r` reads batches `r`, `r + world`,
    /// … of the one plan, whether sharded with `shard` or `elastic_shard`.
    fn ranks_read_the_plan_in_turns(builder: &dyn Fn() -> LoaderBuilder<'static>, world: usize) {
        let plan = builder().shard(0, world).build().unwrap().plan(0);
        for elastic in [false, true] {
            let mut read = vec![None; plan.len()];
            for rank in 0..world {
                let b = builder();
                let b = if elastic {
                    b.elastic_shard(rank, world)
                } else {
                    b.shard(rank, world)
                };
                let mut loader = b.build().unwrap();
                assert_eq!(*loader.plan(0), *plan);
                let mut index = rank;
                while let Some(batch) = loader.next_batch().unwrap() {
                    assert_eq!(batch.samples(), plan.batch(index).unwrap());
                    assert_eq!(batch.cost(), plan.costs()[index]);
                    read[index] = Some(batch.samples().to_vec());
                    index += world;
                }
                assert_eq!(loader.num_batches(0), (index - rank) / world);
            }
            assert!(read.iter().all(Option::is_some), "every batch read once");
        }
    }

    #[test]
    fn ranks_take_their_turns_in_balanced_steps() {
        let lengths: Vec<usize> = long_tail(600, 512, 4)
            .into_iter()
            .map(|l| l as usize)
            .collect();
        let (_dir, data) = file(&lengths, 64);
        let data: &'static _ = Box::leak(Box::new(data));
        let budget = || {
            Loader::builder(data)
                .with_token_budget(512)
                .with_shuffle(3)
                .with_balance(Balance::Attention { weight: 1e-3 })
        };
        ranks_read_the_plan_in_turns(&budget, 3);
        let packed = || {
            Loader::builder(data)
                .with_batch_size(2)
                .with_packing(Packing::new(128))
                .with_balance(Balance::Tokens)
        };
        ranks_read_the_plan_in_turns(&packed, 4);
    }

    #[test]
    fn a_balanced_position_resumes_on_as_many_ranks_only() {
        let (_dir, data) = file(&[3, 5, 7, 9, 11, 13], 2);
        let b = |world| {
            Loader::builder(&data)
                .with_batch_size(1)
                .with_balance(Balance::Tokens)
                .elastic_shard(0, world)
                .build()
                .unwrap()
        };
        let mut two = b(2);
        let saved = two.next_batch().unwrap().unwrap().next_position();
        b(2).seek(saved).unwrap();
        let refused = b(3).seek(saved).map_err(crate::error::Error::into_kind);
        let Err(ErrorKind::Argument(ArgumentError::PositionMismatch { differs })) = refused else {
            panic!("{refused:?}");
        };
        assert!(differs.contains("with balance the world size"), "{differs}");
        // Balance, its weight and look-ahead are options too.
        let plain = Loader::builder(&data)
            .with_batch_size(1)
            .elastic_shard(0, 2)
            .build()
            .unwrap();
        assert_ne!(plain.fingerprint(), two.fingerprint());
        let other = |b: LoaderBuilder<'_>| b.elastic_shard(0, 2).build().unwrap().fingerprint();
        let base = || Loader::builder(&data).with_batch_size(1);
        let weighted = other(base().with_balance(Balance::Attention { weight: 0.1 }));
        assert_ne!(weighted, two.fingerprint());
        let ahead = other(
            base()
                .with_balance(Balance::Tokens)
                .with_balance_lookahead(3),
        );
        assert_ne!(ahead, two.fingerprint());
    }

    #[test]
    fn bad_balance_options_are_named() {
        let (_dir, data) = file(&[3, 5, 7], 2);
        let option = |b: LoaderBuilder<'_>| match b.build().map_err(crate::error::Error::into_kind)
        {
            Err(ErrorKind::Argument(ArgumentError::LoaderConfig { option, .. })) => option,
            other => panic!("{other:?}"),
        };
        for w in [-1.0, f64::NAN, f64::INFINITY] {
            let b = Loader::builder(&data).with_balance(Balance::Attention { weight: w });
            assert_eq!(option(b), "attention_weight");
        }
        let b = Loader::builder(&data).with_balance(Balance::Tokens);
        assert_eq!(option(b.with_balance_lookahead(0)), "balance_lookahead");
        let b = Loader::builder(&data)
            .with_balance(Balance::Tokens)
            .with_buckets(vec![4]);
        assert_eq!(option(b), "buckets");
    }

    #[test]
    fn a_mixtures_drawn_stream_is_balanced_too() {
        let lengths: Vec<usize> = long_tail(800, 2048, 9)
            .into_iter()
            .map(|l| l as usize)
            .collect();
        let (_a, a) = file(&lengths, 32);
        let (_b, b) = file(&lengths[..500], 32);
        let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![0.6, 0.4]);
        let plain = Loader::builder(&mixture)
            .with_token_budget(2048)
            .build()
            .unwrap()
            .plan(0);
        let loader = Loader::builder(&mixture)
            .with_token_budget(2048)
            .with_balance(Balance::Tokens)
            .shard(1, 4)
            .build()
            .unwrap();
        let plan = loader.plan(0);
        let (mut x, mut y) = (plain.samples().to_vec(), plan.samples().to_vec());
        x.sort_unstable();
        y.sort_unstable();
        assert_eq!(x, y, "the same samples, once each");
        assert_ne!(plain.samples(), plan.samples(), "in balanced steps");
        let steps = plan.len() / 4;
        for s in 0..steps.saturating_sub(3) {
            let step = &plan.costs()[4 * s..4 * s + 4];
            let (max, mean) = (
                step.iter().copied().fold(0.0, f64::max),
                step.iter().sum::<f64>() / 4.0,
            );
            assert!(max / mean <= 1.05, "step {s}: {step:?}");
        }
    }
}

/// A digest of balanced plans over a grid of batch sizes and budgets, costs in tokens and
/// with attention, shuffles, `drop_last`, look-aheads, 2, 8 and 64 ranks, and packed
/// windows: every batch's samples, tokens, longest sample, oversize flag and cost bits.
fn balanced_plans_digest() -> u64 {
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    let mut add = |x: u64| digest = (digest ^ x).wrapping_mul(0x0100_0000_01b3);
    let mut add_plan = |plan: &Plan| {
        for (batch, (info, cost)) in plan.batches().zip(plan.infos().iter().zip(plan.costs())) {
            batch.iter().for_each(|&s| add(s as u64));
            let oversize = u64::from(info.oversize);
            for x in [info.start, info.end, info.tokens, info.max_len] {
                add(x as u64);
            }
            add(oversize);
            add(cost.to_bits());
        }
        add(plan.dropped() as u64);
    };
    // A long tail over the budgets (some samples over them), and short ones with zeros.
    let tail = long_tail(3000, 5000, 11);
    let short: Vec<u32> = (0..2000u32).map(|i| (i * 37) % 300).collect();
    let batches = [
        BatchSize::Samples(1),
        BatchSize::Samples(4),
        BatchSize::Samples(32),
        BatchSize::Tokens(256),
        BatchSize::Tokens(4096),
    ];
    let balances = [
        Balance::Tokens,
        Balance::Attention {
            weight: ATTENTION_WEIGHT,
        },
        Balance::Attention { weight: 0.01 },
    ];
    for lengths in [&tail, &short] {
        for batch in batches {
            for balance in balances {
                for world in [2, 8, 64] {
                    for (shuffle, drop_last, lookahead) in
                        [(false, false, 64), (true, false, 64), (true, true, 2)]
                    {
                        let mut c = config(batch, world, Some(balance));
                        c.drop_last = drop_last;
                        c.balance_lookahead = lookahead;
                        if shuffle {
                            c.shuffle = Shuffle::Samples { seed: 9 };
                        }
                        add_plan(&plan_of(&c, lengths, 3));
                    }
                }
            }
        }
    }
    for mode in [PackMode::Split { pad_last: true }, PackMode::best_fit(64)] {
        for w in [0.0, ATTENTION_WEIGHT] {
            for world in [2, 8, 64] {
                let mut c = config(
                    BatchSize::Samples(2),
                    world,
                    Some(Balance::Attention { weight: w }),
                );
                c.shuffle = Shuffle::Samples { seed: 4 };
                let packing = Packing::new(1024).with_mode(mode);
                let order: Vec<usize> = (0..tail.len()).collect();
                let windows = Windows::build(&packing, &tail, Rows::Wide(order));
                let window_order: Vec<usize> = (0..windows.len()).collect();
                add_plan(&windows.plan(&c, &window_order, 3));
            }
        }
    }
    digest
}

#[test]
fn balanced_plans_are_those_of_the_first_balanced_planner() {
    // Made with the planner of pools sorted by comparisons and batches kept apart.
    assert_eq!(balanced_plans_digest(), BALANCED_PLANS_DIGEST);
}

const BALANCED_PLANS_DIGEST: u64 = 8_028_157_227_892_417_033;
