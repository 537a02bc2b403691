//! Mixing against a model: Megatron-LM's BlendedDataset rule replayed by hand, every source
//! read as its own epochs, resume and elastic resume.

use proptest::prelude::*;

use super::*;
use arrow_array::types::Float32Type;

use crate::dataset::{Column, Dataset};
use crate::error::ErrorKind;
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::loader::pack::Packing;
use crate::loader::pack::tests::{check_resumes, file, tokens};
use crate::loader::{Batch, Loader, LoaderBuilder};
use crate::tensor::LodTensor;

fn weights_strategy() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![0.001f64..0.05, 0.01f64..10.0], 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After every number of samples, each source's count is within one sample of its
    /// share.
    #[test]
    fn proportions_hold_at_every_prefix(weights in weights_strategy(), n in 1u64..3000) {
        let sum: f64 = weights.iter().sum();
        let weights: Vec<f64> = weights.iter().map(|w| w / sum).collect();
        let mut drawn = vec![0u64; weights.len()];
        let bound = if weights.len() == 1 { 0.0 } else { 1.0 - 1.0 / (2 * weights.len() - 2) as f64 };
        for i in 0..n {
            let k = draw(&weights, i, &drawn);
            drawn[k] += 1;
            for (w, &d) in weights.iter().zip(&drawn) {
                prop_assert!((d as f64 - w * (i + 1) as f64).abs() <= bound + 1e-6, "{drawn:?} at {i}");
            }
        }
    }

    /// A mixture's batches: proportions per batch prefix, each source read as whole epochs of
    /// its own; resuming from any position continues exactly, also elastically on another
    /// number of ranks.
    #[test]
    fn mixture_reads_sources_and_resumes(
        sizes in (1usize..12, 1usize..40),
        weights in (0.05f64..1.0, 0.05f64..1.0),
        shuffle in any::<bool>(),
        size in 1usize..5,
        stop in 0usize..8,
        worlds in (1usize..4, 1usize..4),
    ) {
        let (_a, a) = file(&vec![2; sizes.0], 3);
        let (_b, b) = file(&vec![3; sizes.1], 3);
        let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![weights.0, weights.1]).with_seed(4);
        let build = |m| mixed(m, size, shuffle);
        let mut loader = build(&mixture).build().unwrap();
        let whole: Vec<Batch> = loader.by_ref().collect::<crate::error::Result<_>>().unwrap();
        let (mut seen, mut drawn) = (vec![Vec::new(), Vec::new()], 0usize);
        let share = weights.0 / (weights.0 + weights.1);
        for batch in &whole {
            for (k, r) in batch.sources().unwrap().into_iter().zip(batch.source_rows().unwrap()) {
                seen[k].push(r);
                drawn += 1;
                prop_assert!((seen[0].len() as f64 - share * drawn as f64).abs() <= 1.0 + 1e-9);
            }
        }
        prop_assert_eq!(drawn, sizes.0 + sizes.1);
        for (k, n) in [sizes.0, sizes.1].into_iter().enumerate() {
            for epoch in seen[k].chunks(n) {
                let mut rows = epoch.to_vec();
                rows.sort_unstable();
                rows.dedup();
                prop_assert_eq!(rows.len(), epoch.len()); // no row twice within its epoch
            }
        }
        // Resume, also elastically.
        let whole: Vec<Vec<i64>> = whole.iter().map(tokens).collect();
        check_resumes(|| build(&mixture), &whole, stop, worlds)?;
    }
}

fn mixed<'a>(m: &'a Mixture<'a>, size: usize, shuffle: bool) -> LoaderBuilder<'a> {
    let b = Loader::builder(m).with_batch_size(size);
    if shuffle { b.with_shuffle(9) } else { b }
}

/// Later epochs continue the stream: a small source repeats, in a new order each time.
#[test]
fn later_epochs_continue_every_source() {
    let (_a, a) = file(&[1; 3], 3);
    let (_b, b) = file(&[1; 30], 3);
    let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![0.5, 0.5]);
    let loader = mixed(&mixture, 4, true).build().unwrap();
    let small: Vec<usize> = (0..4)
        .flat_map(|e| {
            let plan = loader.plan(e);
            plan.samples()
                .iter()
                .copied()
                .filter(|&r| r < 3)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(small.len(), 4 * 33 / 2); // half of 4 epochs of 33 samples
    for epoch in small.chunks(3) {
        let mut e = epoch.to_vec();
        e.sort_unstable();
        assert_eq!(e, [0, 1, 2]);
    }
}

/// Packed sources: windows drawn whole from one source each, their tokens that source's.
#[test]
fn packed_windows_come_from_one_source() {
    let (_a, a) = file(&[5, 9, 2, 7], 2);
    let (_b, b) = file(&[4; 12], 5);
    let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![0.3, 0.7]);
    let mut loader = Loader::builder(&mixture)
        .with_batch_size(3)
        .with_shuffle(2)
        .with_packing(Packing::new(4))
        .build()
        .unwrap();
    let starts = |lengths: &[usize]| -> Vec<usize> {
        std::iter::once(0)
            .chain(lengths.iter().scan(0, |s, l| {
                *s += l;
                Some(*s)
            }))
            .collect()
    };
    let starts = [starts(&[5, 9, 2, 7]), starts(&[4; 12])];
    let mut windows = 0;
    for batch in &mut loader {
        let batch = batch.unwrap();
        let ids = tokens(&batch);
        let mut at = 0;
        for (pieces, k) in batch
            .windows()
            .unwrap()
            .iter()
            .zip(batch.sources().unwrap())
        {
            for p in pieces {
                for t in 0..p.n_tokens {
                    assert_eq!(ids[at + t] as usize, starts[k][p.row] + p.first_token + t);
                }
                at += p.n_tokens;
            }
            windows += 1;
        }
    }
    assert_eq!(windows, 23 / 4 + 48 / 4);
}

#[test]
fn sources_must_agree_and_weights_be_positive() {
    let (_a, a) = file(&[2, 3], 2);
    let refused = |m: &Mixture<'_>, needle: &str| {
        let err = Loader::builder(m).build().unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
        assert!(matches!(
            err.into_kind(),
            ErrorKind::Argument(ArgumentError::LoaderConfig { .. })
        ));
    };
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, columns: Vec<Column>| {
        let path = dir.path().join(name);
        let mut w = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
        w.write(&Dataset::try_new(columns).unwrap()).unwrap();
        w.finish().unwrap();
        MappedDataset::open(&path).unwrap()
    };
    let floats = |name: &str| {
        let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![0.0; 3], vec![]);
        Column::new(name, t.unwrap())
    };
    let other = write("other.arrow", vec![floats("tokens")]);
    let third = write(
        "third.arrow",
        vec![floats("tokens"), floats("labels"), floats("doc")],
    );
    let two = Mixture::new(vec![(&a).into(), (&other).into()], vec![1.0, 1.0]);
    refused(&two, "source 1 has columns");
    let two = Mixture::new(vec![(&a).into(), (&third).into()], vec![1.0, 1.0]);
    refused(&two, "column \"tokens\" differs");
    refused(
        &Mixture::new(vec![(&a).into()], vec![-1.0]),
        "must be positive",
    );
    let one_weight = Mixture::new(vec![(&a).into(), (&a).into()], vec![1.0]);
    refused(&one_weight, "1 weights for 2 sources");
    refused(&Mixture::new(vec![], vec![]), "at least one source");
    let inner = Mixture::new(vec![(&a).into()], vec![1.0]);
    refused(
        &Mixture::new(vec![(&inner).into()], vec![1.0]),
        "is a mixture",
    );
}

/// Any epoch's plan starts from the rule's counts at its first sample, found from the
/// rule's period (not by drawing every sample before it): the same sources as drawing them
/// one by one, and no epoch's arithmetic wraps (the last epoch too).
#[test]
fn a_far_epoch_is_planned_from_the_rule_s_period() {
    let (_a, a) = file(&[1; 3], 3);
    let (_b, b) = file(&[1; 5], 3);
    let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![0.6, 0.2]);
    let loader = mixed(&mixture, 2, true).build().unwrap();
    let weights = [0.75, 0.25];
    let mut drawn = [0u64; 2];
    let mut i = 0;
    for epoch in 0..40 {
        let plan = loader.plan(epoch);
        let first = plan.samples().iter().filter(|&&r| r < 3).count();
        let before = drawn[0];
        for _ in 0..8 {
            drawn[draw(&weights, i, &drawn)] += 1;
            i += 1;
        }
        assert_eq!(first as u64, drawn[0] - before, "epoch {epoch}");
    }
    for epoch in [10u64.pow(12), u64::MAX - 1, u64::MAX] {
        let plan = loader.plan(epoch);
        let first = plan.samples().iter().filter(|&&r| r < 3).count();
        assert_eq!((plan.samples().len(), first), (8, 6), "epoch {epoch}");
    }
    // The last epoch reads, then has no next: an error, not a wrap to epoch 0.
    let mut loader = loader;
    loader.set_epoch(u64::MAX);
    for _ in 0..4 {
        loader
            .next_batch()
            .unwrap()
            .expect("a batch of the last epoch");
    }
    let err = loader.next_batch().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Argument(_)), "{err}");
}

/// A digest of mixture plans over a grid of weights (with and without a period), shuffles,
/// batch sizes and packing, at near and far epochs: plans are fixed forever, whatever
/// integers they are made in.
fn mixture_plans_digest() -> u64 {
    let lengths = |n: usize, m: usize| (0..n).map(|i| 1 + (i * 7) % m).collect::<Vec<_>>();
    let (_a, a) = file(&lengths(40, 9), 7);
    let (_b, b) = file(&lengths(23, 5), 4);
    let (_c, c) = file(&lengths(61, 13), 10);
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    let mut add = |x: usize| digest = (digest ^ x as u64).wrapping_mul(0x0100_0000_01b3);
    for weights in [vec![0.5, 0.3, 0.2], vec![0.31, 0.69, std::f64::consts::PI]] {
        let mixture = Mixture::new(vec![(&a).into(), (&b).into(), (&c).into()], weights);
        for shuffle in [None, Some(false), Some(true)] {
            for pack in [None, Some(8)] {
                let mut builder = Loader::builder(&mixture).with_batch_size(5);
                builder = match shuffle {
                    None => builder,
                    Some(false) => builder.with_shuffle(3),
                    Some(true) => builder.with_chunk_shuffle(3, 4),
                };
                if let Some(seq_len) = pack {
                    builder = builder.with_packing(Packing::new(seq_len));
                }
                let loader = builder.build().unwrap();
                for epoch in [0, 1, 7, 1000] {
                    let plan = loader.plan(epoch);
                    plan.samples().iter().for_each(|&s| add(s));
                    if let Some(windows) = plan.windows() {
                        for w in 0..windows.len() {
                            for p in windows.pieces(w) {
                                [p.row, p.first_token, p.n_tokens]
                                    .into_iter()
                                    .for_each(&mut add);
                            }
                        }
                    }
                }
            }
        }
    }
    digest
}

#[test]
fn mixture_plans_are_those_of_64_bit_orders() {
    // Made when each source's draws were kept in 64-bit rows.
    assert_eq!(mixture_plans_digest(), MIXTURE_PLANS_DIGEST);
}

const MIXTURE_PLANS_DIGEST: u64 = 9_869_343_747_747_255_072;

#[test]
fn a_weight_schedule_holds_its_proportions_in_every_window_of_a_million_tokens() {
    // Two sources of 400 documents of 50..150 tokens; the stream walked over epochs.
    let lengths =
        |seed: usize| -> Vec<usize> { (0..400).map(|i| 50 + (i * 7919 + seed) % 101).collect() };
    let ((_a, a), (_b, b)) = (file(&lengths(1), 64), file(&lengths(2), 64));
    let points = vec![
        (0, vec![0.7, 0.3]),
        (2_000_000, vec![0.2, 0.8]),
        (3_500_000, vec![0.5, 0.5]),
    ];
    let schedule = crate::loader::Schedule::new(points.clone()).unwrap();
    let mixture =
        Mixture::new(vec![(&a).into(), (&b).into()], vec![]).with_weight_schedule(schedule);
    let loader = Loader::builder(&mixture)
        .with_batch_size(64)
        .with_shuffle(3)
        .build()
        .unwrap();
    let sample_lengths = loader.sample_lengths().to_vec();
    // (tokens drawn before, source) of every sample of the stream, in its order.
    let (mut stream, mut tokens) = (Vec::new(), 0u64);
    let mut epoch = 0;
    while tokens < 5_000_000 {
        for &row in loader.plan(epoch).samples() {
            stream.push((tokens, usize::from(row >= 400)));
            tokens += u64::from(sample_lengths[row]);
        }
        epoch += 1;
    }
    // The weights each sample was drawn by: those of the last point at or before the tokens
    // drawn before it.
    let rule = |t: u64| &points[points.partition_point(|p| p.0 <= t) - 1].1;
    for window in 0..5u64 {
        let span = window * 1_000_000..(window + 1) * 1_000_000;
        let inside: Vec<&(u64, usize)> = stream.iter().filter(|(t, _)| span.contains(t)).collect();
        let n = inside.len() as f64;
        for k in 0..2 {
            let realized = inside.iter().filter(|s| s.1 == k).count() as f64;
            let expected: f64 = inside.iter().map(|s| rule(s.0)[k]).sum();
            let off = (realized - expected).abs() / n;
            assert!(
                off <= 0.005,
                "window {window}, source {k}: {realized} of {n}, expected {expected:.1}"
            );
        }
    }
    // Every source read as its own stream: no sample twice within a source's epoch.
    let again = Loader::builder(&mixture)
        .with_batch_size(64)
        .with_shuffle(3)
        .build()
        .unwrap();
    assert_eq!(
        again.plan(epoch - 1),
        loader.plan(epoch - 1),
        "plans are a pure function"
    );
}
