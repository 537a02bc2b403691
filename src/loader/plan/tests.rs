use super::*;
use crate::error::{ArgumentError, ErrorKind};
use crate::loader::config::{BatchSize, Shuffle};
use crate::loader::pack::{PackMode, Packing};

/// The plan of `epoch` for a file of one record batch.
fn one_batch(config: &PlanConfig, lengths: &[u32], epoch: u64) -> Plan {
    let all = RowIndex::from_counts([lengths.len()]);
    Plan::build(config, lengths, &all, &all, epoch)
}

fn config(batch: BatchSize) -> PlanConfig {
    PlanConfig {
        batch,
        drop_last: false,
        shuffle: Shuffle::None,
        buckets: Vec::new(),
        ranks: Ranks::Parts { rank: 0, world: 1 },
        packing: None,
        balance: None,
        balance_lookahead: crate::loader::config::BALANCE_LOOKAHEAD,
    }
}

fn sorted(plan: &Plan) -> Vec<usize> {
    let mut s = plan.samples().to_vec();
    s.sort_unstable();
    s
}

#[test]
fn fixed_sizes_in_order() {
    let lengths = [1; 7];
    let plan = one_batch(&config(BatchSize::Samples(3)), &lengths, 0);
    assert_eq!(
        plan.batches().collect::<Vec<_>>(),
        vec![&[0, 1, 2][..], &[3, 4, 5], &[6]]
    );
    let mut c = config(BatchSize::Samples(3));
    c.drop_last = true;
    let plan = one_batch(&c, &lengths, 0);
    assert_eq!((plan.len(), plan.dropped()), (2, 1));
}

#[test]
fn token_budgets_and_oversize() {
    let lengths = [3, 4, 2, 9, 1, 5];
    let plan = one_batch(&config(BatchSize::Tokens(7)), &lengths, 0);
    // Sample 3 (9 tokens) is over the budget: the batch being filled ([2]) comes first,
    // so the samples keep their order.
    assert_eq!(
        plan.batches().collect::<Vec<_>>(),
        vec![&[0, 1][..], &[2], &[3], &[4, 5]]
    );
    assert_eq!(plan.samples(), &[0, 1, 2, 3, 4, 5]);
    assert_eq!(plan.oversize(), 1);
    assert!(plan.infos()[2].oversize);
    assert_eq!(plan.infos()[0].tokens, 7);
}

#[test]
fn buckets_group_similar_lengths() {
    let lengths = [1, 10, 2, 11, 3, 12];
    let mut c = config(BatchSize::Samples(3));
    c.buckets = vec![5];
    let plan = one_batch(&c, &lengths, 0);
    assert_eq!(
        plan.batches().collect::<Vec<_>>(),
        vec![&[0, 2, 4][..], &[1, 3, 5]]
    );
    assert!(plan.padding_ratio() < 0.5);
    let unbucketed = one_batch(&config(BatchSize::Samples(3)), &lengths, 0);
    assert!(unbucketed.padding_ratio() > plan.padding_ratio());
}

#[test]
fn shuffles_are_permutations_and_seeded() {
    let lengths = [1; 100];
    let mut c = config(BatchSize::Samples(8));
    c.shuffle = Shuffle::Samples { seed: 42 };
    let a = one_batch(&c, &lengths, 3);
    assert_eq!(sorted(&a), (0..100).collect::<Vec<_>>());
    assert_eq!(a, one_batch(&c, &lengths, 3));
    assert_ne!(a.samples(), one_batch(&c, &lengths, 4).samples());
    // Fixed forever: the first samples of seed 42, epoch 3.
    assert_eq!(&a.samples()[..4], GOLDEN);
    c.shuffle = Shuffle::Chunks { seed: 42, rows: 10 };
    let rows = RowIndex::from_counts([35, 65]);
    let chunks = Plan::build(&c, &lengths, &rows, &RowIndex::from_counts([100]), 0);
    assert_eq!(sorted(&chunks), (0..100).collect::<Vec<_>>());
    // Every run starts at a chunk start: chunks of 10 from 0 and from 35.
    let starts: Vec<usize> = (0..35).step_by(10).chain((35..100).step_by(10)).collect();
    let s = chunks.samples();
    assert!(starts.contains(&s[0]));
    for w in s.windows(2) {
        assert!(w[1] == w[0] + 1 || starts.contains(&w[1]), "{w:?}");
    }
}

#[test]
fn the_windowed_shuffle_keeps_its_bound() {
    let lengths = [1; 100];
    let rows = RowIndex::from_counts([35, 65]);
    let shards = RowIndex::from_counts([20, 30, 50]);
    let mut c = config(BatchSize::Samples(8));
    let order = |c: &PlanConfig, epoch| {
        Plan::build(c, &lengths, &rows, &shards, epoch)
            .samples()
            .to_vec()
    };
    // Window 1: the stream itself, so every shard's samples together and each run of
    // consecutive samples starting at a chunk start (chunks of 10 from 0, 20, 35, 50).
    c.shuffle = Shuffle::Windowed {
        seed: 9,
        rows: 10,
        window: 1,
    };
    let stream = order(&c, 2);
    let starts = [0, 10, 20, 30, 35, 45, 50, 60, 70, 80, 90];
    for w in stream.windows(2) {
        assert!(w[1] == w[0] + 1 || starts.contains(&w[1]), "{w:?}");
    }
    let shard = |s| shards.locate(s).unwrap().0;
    let switches = stream
        .windows(2)
        .filter(|w| shard(w[0]) != shard(w[1]))
        .count();
    assert_eq!(switches, 2);
    // A window of 8 over the same stream: a permutation, each sample at most 7 places
    // ahead of where the stream has it.
    c.shuffle = Shuffle::Windowed {
        seed: 9,
        rows: 10,
        window: 8,
    };
    let mixed = order(&c, 2);
    assert_ne!(mixed, stream);
    assert_eq!(
        sorted(&Plan::build(&c, &lengths, &rows, &shards, 2)),
        stream
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    for (o, s) in mixed.iter().enumerate() {
        let p = stream.iter().position(|x| x == s).unwrap();
        assert!(p < o + 8, "sample {s}: stream place {p}, epoch place {o}");
    }
    assert_ne!(mixed, order(&c, 3));
    c.shuffle = Shuffle::Windowed {
        seed: 9,
        rows: 10,
        window: 0,
    };
    assert!(c.validate().is_err());
}

const GOLDEN: &[usize] = &[34, 61, 12, 50];

#[test]
fn shards_are_disjoint_complete_and_near_equal() {
    let lengths = [1; 10];
    let mut all = Vec::new();
    for rank in 0..3 {
        let mut c = config(BatchSize::Samples(2));
        c.ranks = Ranks::Parts { rank, world: 3 };
        c.shuffle = Shuffle::Samples { seed: 1 };
        let p = one_batch(&c, &lengths, 0);
        assert!((3..=4).contains(&p.samples().len()));
        all.extend_from_slice(p.samples());
    }
    all.sort_unstable();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
}

#[test]
fn bad_options_are_named() {
    let bad = |c: PlanConfig| match c.validate().map_err(crate::error::Error::into_kind) {
        Err(ErrorKind::Argument(ArgumentError::LoaderConfig { option, .. })) => option,
        other => panic!("{other:?}"),
    };
    assert_eq!(bad(config(BatchSize::Samples(0))), "batch_size");
    assert_eq!(bad(config(BatchSize::Tokens(0))), "token_budget");
    let mut c = config(BatchSize::Samples(1));
    c.ranks = Ranks::Parts { rank: 2, world: 2 };
    assert_eq!(bad(c.clone()), "rank");
    c.ranks = Ranks::Turns {
        rank: 0,
        world: 0,
        group: 0,
    };
    assert_eq!(bad(c.clone()), "world_size");
    c.ranks = Ranks::Turns {
        rank: 0,
        world: 4,
        group: 3,
    };
    assert_eq!(bad(c), "step_ranks");
    let mut c = config(BatchSize::Samples(1));
    c.buckets = vec![4, 4];
    assert_eq!(bad(c), "buckets");
    let mut c = config(BatchSize::Samples(1));
    c.shuffle = Shuffle::Chunks { seed: 0, rows: 0 };
    assert_eq!(bad(c.clone()), "chunk_rows");
    c.shuffle = Shuffle::Windowed {
        seed: 0,
        rows: 1,
        window: 0,
    };
    assert_eq!(bad(c), "window");
}

#[test]
fn drop_last_ranks_share_the_epochs_batches_keeping_oversize_samples() {
    // Batches of the epoch: [0, 1], [2] (closed before the oversize sample), [3] (oversize).
    let lengths = [1, 1, 1, 9];
    let mut c = config(BatchSize::Tokens(2));
    c.drop_last = true;
    let rank = |rank| {
        let mut c = c.clone();
        c.ranks = Ranks::Parts { rank, world: 2 };
        one_batch(&c, &lengths, 0)
    };
    let (a, b) = (rank(0), rank(1));
    // Three batches on two ranks: one is left out, the last that is within the budget.
    assert_eq!(a.batches().collect::<Vec<_>>(), [&[0, 1][..]]);
    assert_eq!(b.batches().collect::<Vec<_>>(), [&[3][..]]);
    assert!(b.infos()[0].oversize && b.infos()[0].start == 0);
    assert_eq!((a.dropped(), b.dropped()), (0, 1));
}

/// Each kind of shuffle: seeds from `seed`, chunks of `chunk` rows, windowed runs of
/// `rows` in a window of `window`.
fn every_shuffle(seed: u64, chunk: usize, (rows, window): (usize, usize)) -> [Shuffle; 4] {
    [
        Shuffle::None,
        Shuffle::Samples { seed },
        Shuffle::Chunks {
            seed: seed.wrapping_add(1),
            rows: chunk,
        },
        Shuffle::Windowed {
            seed: seed.wrapping_add(2),
            rows,
            window,
        },
    ]
}

/// A digest of every plan of a grid of options (shuffles, batch sizes, budgets, buckets,
/// ranks, drop_last, packing) over 5,000 samples of seeded lengths in record batches and
/// shards of uneven sizes: plans are fixed forever, whatever integers they are made in.
fn plans_digest() -> u64 {
    use crate::rng::SplitMix64;
    let mut rng = SplitMix64::new(7);
    let lengths: Vec<u32> = (0..5000)
        .map(|_| 1 + (rng.next_u64() % 300) as u32)
        .collect();
    let rows = RowIndex::from_counts([700, 1300, 1000, 2000]);
    let shards = RowIndex::from_counts([2000, 3000]);
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    let mut add = |x: usize| {
        digest = (digest ^ x as u64).wrapping_mul(0x0100_0000_01b3);
    };
    for shuffle in every_shuffle(3, 64, (32, 300)) {
        for batch in [BatchSize::Samples(17), BatchSize::Tokens(2048)] {
            for buckets in [vec![], vec![50, 150]] {
                for (world, drop_last) in [(1, false), (3, false), (3, true)] {
                    for rank in 0..world {
                        let mut c = config(batch);
                        (c.shuffle, c.buckets, c.drop_last) = (shuffle, buckets.clone(), drop_last);
                        c.ranks = Ranks::Parts { rank, world };
                        for epoch in [0, 5] {
                            let plan = Plan::build(&c, &lengths, &rows, &shards, epoch);
                            plan.samples().iter().for_each(|&s| add(s));
                            for i in plan.infos() {
                                [i.start, i.end, i.tokens, i.max_len, i.oversize as usize, 7]
                                    .into_iter()
                                    .for_each(&mut add);
                            }
                            add(plan.dropped());
                        }
                    }
                }
            }
            let mut c = config(BatchSize::Samples(4));
            c.shuffle = shuffle;
            c.packing = Some(Packing::new(512));
            for epoch in [0, 2] {
                let plan = Plan::build(&c, &lengths, &rows, &shards, epoch);
                plan.samples().iter().for_each(|&s| add(s));
                let windows = plan.windows().expect("packed");
                (0..windows.len()).for_each(|w| add(windows.tokens_of(w)));
            }
        }
    }
    digest
}

#[test]
fn plans_are_those_of_64_bit_orders_and_lengths() {
    // Made before lengths and orders were narrowed to 32 bits.
    assert_eq!(plans_digest(), PLANS_DIGEST);
}

const PLANS_DIGEST: u64 = 14_785_573_230_521_875_191;

#[test]
fn orders_in_32_and_64_bits_make_the_same_plans() {
    // The 64-bit order is that of datasets of 2^32 samples or more.
    let lengths: Vec<u32> = (0..3000).map(|i| 1 + (i * 37 % 101) as u32).collect();
    let rows = RowIndex::from_counts([1000, 500, 1500]);
    let shards = RowIndex::from_counts([1500, 1500]);
    for shuffle in every_shuffle(11, 40, (16, 100)) {
        for (world, drop_last) in [(1, false), (4, true), (4, false)] {
            let mut c = config(BatchSize::Tokens(500));
            (c.shuffle, c.drop_last) = (shuffle, drop_last);
            c.ranks = Ranks::Parts {
                rank: world - 1,
                world,
            };
            let narrow = Plan::build_in::<u32>(&c, &lengths, (&rows, &shards), 3);
            let wide = Plan::build_in::<usize>(&c, &lengths, (&rows, &shards), 3);
            assert_eq!(narrow, wide, "{shuffle:?}, world {world}");
            assert_eq!(narrow, Plan::build(&c, &lengths, &rows, &shards, 3));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn any_plan_is_the_same_in_32_and_64_bits(
        lengths in proptest::collection::vec(1u32..400, 1..1500),
        cuts in proptest::collection::vec(1usize..400, 1..8),
        (kind, seed, world, drop_last, tokens) in (0..4u8, proptest::prelude::any::<u64>(), 1..5usize, proptest::prelude::any::<bool>(), proptest::prelude::any::<bool>()),
        pack in 0..3u8,
    ) {
        // Record batches of `cuts` rows (the last takes the rest), two shards.
        let n = lengths.len();
        let mut counts: Vec<usize> = Vec::new();
        let mut left = n;
        for c in cuts {
            if left == 0 {
                break;
            }
            counts.push(c.min(left));
            left -= c.min(left);
        }
        if left > 0 {
            counts.push(left);
        }
        let rows = RowIndex::from_counts(counts);
        let shards = RowIndex::from_counts([n / 2, n - n / 2]);
        let shuffle = every_shuffle(seed, 16, (8, 50))[kind as usize];
        let batch = if tokens { BatchSize::Tokens(600) } else { BatchSize::Samples(7) };
        let mut c = config(batch);
        (c.shuffle, c.drop_last) = (shuffle, drop_last);
        // Packed: the documents' order and the windows' in 32 or 64 bits.
        c.packing = match pack {
            0 => None,
            1 => Some(Packing::new(64)),
            _ => Some(Packing::new(64).with_mode(PackMode::best_fit(16))),
        };
        for rank in 0..world {
            c.ranks = Ranks::Parts { rank, world };
            let narrow = Plan::build_in::<u32>(&c, &lengths, (&rows, &shards), seed % 7);
            let wide = Plan::build_in::<usize>(&c, &lengths, (&rows, &shards), seed % 7);
            proptest::prop_assert_eq!(narrow, wide);
        }
    }
}
