//! Packing against a model: the documents' tokens as nested `Vec`s, concatenated in the
//! epoch's order and cut by hand.

use std::collections::HashMap;

use arrow_array::types::Int64Type;
use proptest::prelude::*;

use super::*;
use crate::dataset::{Column, Dataset};
use crate::error::{ArgumentError, ErrorKind};
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::loader::{Batch, Loader, LoaderBuilder};
use crate::tensor::LodTensor;
use std::sync::Arc;

/// A file of documents of `lengths` tokens in record batches of about `per_batch` rows
/// (exactly 1 with 1): column
/// "tokens" holds each token's place in the file (so every token is unique), "labels" the
/// same plus one million, "doc" one element more than tokens per document (left out).
pub(in crate::loader) fn file(
    lengths: &[usize],
    per_batch: usize,
) -> (tempfile::TempDir, MappedDataset) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docs.arrow");
    // Record batches of about `per_batch` rows of 4 tokens (1: one row each).
    let options = WriteOptions::default().with_batch_bytes((per_batch - 1) * 80 + 1);
    let mut w = DatasetWriter::create(&path, options).unwrap();
    let mut first = 0i64;
    for chunk in lengths.chunks(per_batch.max(1)) {
        let n: usize = chunk.iter().sum();
        let ids: Vec<i64> = (first..first + n as i64).collect();
        first += n as i64;
        let column = |name: &str, add: i64| {
            let v = ids.iter().map(|i| i + add).collect();
            Column::new(
                name,
                LodTensor::from_lengths::<Int64Type>(&[chunk.to_vec()], v, vec![]).unwrap(),
            )
        };
        // One more element than tokens per document: never aligned, never packed.
        let doc = LodTensor::from_lengths::<Int64Type>(
            &[chunk.iter().map(|l| l + 1).collect::<Vec<_>>()],
            vec![7; n + chunk.len()],
            vec![],
        )
        .unwrap();
        let ds = Dataset::try_new(vec![
            column("tokens", 0),
            column("labels", 1_000_000),
            Column::new("doc", doc),
        ])
        .unwrap();
        w.write(&ds).unwrap();
    }
    w.finish().unwrap();
    (dir, MappedDataset::open(&path).unwrap())
}

/// `(row, token)` of every token id of the file.
fn token_places(lengths: &[usize]) -> Vec<(usize, usize)> {
    (lengths.iter().enumerate())
        .flat_map(|(r, &n)| (0..n).map(move |t| (r, t)))
        .collect()
}

pub(in crate::loader) fn tokens(batch: &Batch) -> Vec<i64> {
    batch
        .data()
        .column("tokens")
        .unwrap()
        .typed_values::<Int64Type>()
        .unwrap()
        .to_vec()
}

/// That the loaders `build` makes resume exactly, against `whole` (one epoch's batches as
/// their `tokens`): from the position after `stop` batches (saved as JSON) a new loader
/// reads the rest; with elastic ranks, `worlds.0` ranks read one step and `worlds.1` ranks
/// the rest from its position, every batch read once.
pub(in crate::loader) fn check_resumes<'a>(
    build: impl Fn() -> LoaderBuilder<'a>,
    whole: &[Vec<i64>],
    stop: usize,
    worlds: (usize, usize),
) -> Result<(), TestCaseError> {
    let mut first = build().build().unwrap();
    let mut saved = first.next_position();
    for _ in 0..stop.min(whole.len()) {
        saved = first.next_batch().unwrap().unwrap().next_position();
    }
    let mut resumed = build().build().unwrap();
    resumed
        .seek(crate::loader::Position::from_json(&saved.to_json()).unwrap())
        .unwrap();
    let rest: Vec<Vec<i64>> = resumed.by_ref().map(|b| tokens(&b.unwrap())).collect();
    prop_assert_eq!(&rest[..], &whole[saved.batch..]);
    let (a, b) = worlds;
    let mut read: HashMap<usize, Vec<i64>> = HashMap::new();
    let mut step = None;
    for rank in 0..a {
        let mut l = build().elastic_shard(rank, a).build().unwrap();
        if let Some(batch) = l.next_batch().unwrap() {
            read.insert(batch.index(), tokens(&batch));
            step = Some(batch.next_position());
        }
    }
    if let Some(step) = step {
        for rank in 0..b {
            let mut l = build().elastic_shard(rank, b).build().unwrap();
            l.seek(step).unwrap();
            for batch in &mut l {
                let batch = batch.unwrap();
                prop_assert!(read.insert(batch.index(), tokens(&batch)).is_none());
            }
        }
    }
    let mut got: Vec<(usize, Vec<i64>)> = read.into_iter().collect();
    got.sort();
    prop_assert_eq!(got.into_iter().map(|(_, t)| t).collect::<Vec<_>>(), whole);
    Ok(())
}

/// Every batch of epoch 0.
fn epoch(builder: LoaderBuilder<'_>) -> (Vec<Batch>, Loader) {
    let mut loader = builder.build().unwrap();
    let batches = loader
        .by_ref()
        .collect::<crate::error::Result<Vec<_>>>()
        .unwrap();
    (batches, loader)
}

/// The documents' order in epoch 0 under `shuffle`, from an unpacked loader.
fn doc_order(file: &MappedDataset, shuffle: u8) -> Vec<usize> {
    with_shuffle(Loader::builder(file).with_batch_size(1), shuffle)
        .build()
        .unwrap()
        .plan(0)
        .samples()
        .to_vec()
}

fn with_shuffle(b: LoaderBuilder<'_>, shuffle: u8) -> LoaderBuilder<'_> {
    match shuffle {
        0 => b,
        1 => b.with_shuffle(11),
        2 => b.with_chunk_shuffle(11, 3),
        _ => b.with_windowed_shuffle(11, 2, 5),
    }
}

/// The windows the model makes: stream tokens `w·S .. w·S + L` (the last one shorter when
/// padded), and the tokens dropped.
fn model_windows(stream: &[i64], seq: usize, extra: usize, pad: bool) -> (Vec<Vec<i64>>, usize) {
    let mut windows = Vec::new();
    let mut w = 0;
    while (w * seq + seq + extra) <= stream.len() {
        windows.push(stream[w * seq..w * seq + seq + extra].to_vec());
        w += 1;
    }
    let covered = if w == 0 { 0 } else { w * seq + extra };
    if pad && stream.len() > w * seq + extra {
        windows.push(stream[w * seq..].to_vec());
        return (windows, 0);
    }
    (windows, stream.len() - covered)
}

/// The checks every packed batch passes: windows of `len` tokens, `cu_seqlens` at every
/// window edge and every document edge, position ids restarting there, pieces matching the
/// tokens, and "labels" packed alike.
fn check_batch(batch: &Batch, places: &[(usize, usize)], len: usize) {
    let ids = tokens(batch);
    let windows = batch.windows().unwrap();
    assert_eq!(ids.len(), windows.len() * len);
    let cu = batch.cu_seqlens("tokens").unwrap();
    let pos = batch.position_ids("tokens").unwrap();
    let mut expected_cu = vec![0];
    let mut at = 0;
    for pieces in &windows {
        for p in pieces {
            for t in 0..p.n_tokens {
                assert_eq!(places[ids[at + t] as usize], (p.row, p.first_token + t));
                assert_eq!(pos[at + t], t as i64);
            }
            at += p.n_tokens;
            expected_cu.push(at as i32);
        }
        if at % len != 0 {
            // Padding: zeros to the window's end, a segment of its own.
            let pad_end = at.next_multiple_of(len);
            assert!(ids[at..pad_end].iter().all(|&v| v == 0));
            at = pad_end;
            expected_cu.push(at as i32);
        }
    }
    assert_eq!(cu, expected_cu);
    let labels = batch
        .data()
        .column("labels")
        .unwrap()
        .typed_values::<Int64Type>()
        .unwrap()
        .to_vec();
    let shifted: Vec<i64> = ids
        .iter()
        .zip(&cu_padding(&cu, &windows, len))
        .map(|(i, &p)| if p { 0 } else { i + 1_000_000 })
        .collect();
    assert_eq!(labels, shifted);
    assert!(batch.data().column("doc").is_err());
}

/// Whether each token of the batch is padding.
fn cu_padding(cu: &[i32], windows: &[Vec<Piece>], len: usize) -> Vec<bool> {
    let mut out = Vec::with_capacity(windows.len() * len);
    for pieces in windows {
        let real: usize = pieces.iter().map(|p| p.n_tokens).sum();
        out.extend((0..len).map(|t| t >= real));
    }
    assert_eq!(out.len(), *cu.last().unwrap() as usize);
    out
}

fn split_by_two(b: LoaderBuilder<'_>, shuffle: u8, seq: usize) -> LoaderBuilder<'_> {
    with_shuffle(b.with_batch_size(2), shuffle).with_packing(Packing::new(seq))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Concatenate and split: the windows are those of the model (in order without a
    /// sample shuffle, as a multiset with one), every token in exactly one window (as input)
    /// but the dropped tail, counted.
    #[test]
    fn split_matches_the_model(
        lengths in prop::collection::vec(0usize..12, 1..30),
        per_batch in 1usize..8,
        seq in 1usize..9,
        extra in any::<bool>(),
        pad in any::<bool>(),
        shuffle in 0u8..4,
        // Also more windows a batch than `pieces_of` reads ahead at a time (16).
        size in prop_oneof![1usize..4, 17usize..40],
    ) {
        let (_dir, file) = file(&lengths, per_batch);
        let places = token_places(&lengths);
        let order = doc_order(&file, shuffle);
        let mut starts = vec![0usize];
        for &l in &lengths { starts.push(starts.last().unwrap() + l); }
        let stream: Vec<i64> = order.iter().flat_map(|&d| (starts[d]..starts[d + 1]).map(|t| t as i64)).collect();
        let packing = Packing::new(seq).with_extra_token(extra).with_mode(PackMode::Split { pad_last: pad });
        let builder = with_shuffle(Loader::builder(&file).with_batch_size(size), shuffle).with_packing(packing);
        let (batches, loader) = epoch(builder);
        let plan = loader.plan(0);
        let windows = plan.windows().unwrap();
        let len = seq + usize::from(extra);
        let mut got: Vec<Vec<i64>> = Vec::new();
        for b in &batches {
            check_batch(b, &places, len);
            let ids = tokens(b);
            for (k, pieces) in b.windows().unwrap().iter().enumerate() {
                let real: usize = pieces.iter().map(|p| p.n_tokens).sum();
                got.push(ids[k * len..k * len + real].to_vec());
            }
        }
        let (mut expected, dropped) = model_windows(&stream, seq, usize::from(extra), pad);
        prop_assert_eq!(windows.dropped_tokens(), dropped);
        if shuffle == 1 {
            got.sort();
            expected.sort();
        }
        prop_assert_eq!(got, expected);
    }

    /// Resuming from any position gives the rest of the uninterrupted run; with elastic
    /// ranks, a position saved on one world size resumes on another, each batch read once.
    #[test]
    fn resumes_exactly_also_elastic(
        lengths in prop::collection::vec(0usize..12, 1..30),
        seq in 1usize..6,
        shuffle in 0u8..4,
        stop in 0usize..10,
        worlds in (1usize..4, 1usize..4),
    ) {
        let (_dir, file) = file(&lengths, 4);
        let build = |b| split_by_two(b, shuffle, seq);
        let (whole, _) = epoch(build(Loader::builder(&file)));
        let whole: Vec<Vec<i64>> = whole.iter().map(tokens).collect();
        check_resumes(|| build(Loader::builder(&file)), &whole, stop, worlds)?;
    }

    /// Best fit never splits a document that fits, never overfills a window, and places
    /// every token once (an overlong document cut into pieces, or dropped and counted).
    #[test]
    fn best_fit_keeps_documents_whole(
        lengths in prop::collection::vec(0usize..20, 1..40),
        seq in 1usize..12,
        lookahead in 1usize..16,
        drop in any::<bool>(),
        shuffle in 0u8..4,
        size in prop_oneof![Just(3usize), 17usize..40],
    ) {
        let (_dir, file) = file(&lengths, 5);
        let overlong = if drop { Overlong::Drop } else { Overlong::Cut };
        let packing = Packing::new(seq).with_mode(PackMode::BestFit { lookahead, overlong });
        let (batches, loader) = epoch(with_shuffle(Loader::builder(&file).with_batch_size(size), shuffle).with_packing(packing));
        let places = token_places(&lengths);
        let mut seen = vec![0usize; places.len()];
        for b in &batches {
            check_batch(b, &places, seq);
            for pieces in b.windows().unwrap() {
                prop_assert!(pieces.iter().map(|p| p.n_tokens).sum::<usize>() <= seq);
                for p in pieces {
                    let len = lengths[p.row];
                    if len <= seq {
                        prop_assert_eq!((p.first_token, p.n_tokens), (0, len));
                    } else {
                        prop_assert!(!drop);
                        prop_assert!(p.first_token % seq == 0);
                    }
                    let start: usize = lengths[..p.row].iter().sum();
                    for t in 0..p.n_tokens { seen[start + p.first_token + t] += 1; }
                }
            }
        }
        let plan = loader.plan(0);
        let padding = plan.windows().unwrap().padding_fraction();
        prop_assert!((plan.padding_ratio() - padding).abs() < 1e-9);
        let dropped: usize = lengths.iter().filter(|&&l| drop && l > seq).sum();
        prop_assert_eq!(loader.plan(0).windows().unwrap().dropped_tokens(), dropped);
        for (id, &(row, _)) in places.iter().enumerate() {
            let expected = usize::from(!(drop && lengths[row] > seq));
            prop_assert_eq!(seen[id], expected);
        }
    }
}

/// First fit in order, within the same look-ahead: the baseline best fit must not lose to.
fn first_fit_windows(lengths: &[u32], cap: usize, lookahead: usize) -> usize {
    let mut total = 0;
    for chunk in lengths.chunks(lookahead) {
        let mut bins: Vec<usize> = Vec::new();
        for l in chunk.iter().map(|&l| l as usize) {
            for first in (0..l).step_by(cap) {
                let n = (l - first).min(cap);
                match bins.iter().position(|&used| used + n <= cap) {
                    Some(b) => bins[b] += n,
                    None => bins.push(n),
                }
            }
        }
        total += bins.len();
    }
    total
}

/// Log-normal document lengths (median 300 tokens, σ 1), as text corpora have.
pub(crate) fn log_normal_lengths(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = crate::rng::SplitMix64::new(seed);
    let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            let (u, v) = (uniform().max(f64::MIN_POSITIVE), uniform());
            let normal = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            ((300f64.ln() + normal).exp() as u32).max(1)
        })
        .collect()
}

/// On log-normal lengths, best-fit decreasing pads less than first fit.
#[test]
fn best_fit_pads_less_than_first_fit() {
    for seed in 0..4 {
        let lengths = log_normal_lengths(5000, seed);
        let order: Vec<usize> = (0..lengths.len()).collect();
        for (seq, lookahead) in [(1024, 64), (2048, 256), (4096, 1024)] {
            let w = Windows::build(
                &Packing::new(seq).with_mode(PackMode::best_fit(lookahead)),
                &lengths,
                Rows::Wide(order.clone()),
            );
            let first_fit = first_fit_windows(&lengths, seq, lookahead);
            assert!(
                w.len() <= first_fit,
                "seed {seed}, seq {seq}: {} > {first_fit}",
                w.len()
            );
        }
    }
}

/// In file order, a batch of windows inside one record batch is a view of the mapping.
#[test]
fn consecutive_windows_are_views() {
    let (_dir, file) = file(&[6, 3, 5], 1);
    assert_eq!(file.batches().len(), 3);
    let packed = |p: Packing| Loader::builder(&file).with_batch_size(1).with_packing(p);
    let (batches, _) = epoch(packed(Packing::new(3)));
    let views: Vec<bool> = batches.iter().map(Batch::is_view).collect();
    // Tokens 0..3, 3..6 of row 0, 6..9 (row 1), 9..12 (row 2): views; 12..14 dropped.
    assert_eq!(views, [true, true, true, true]);
    let mapped = file.batches()[0]
        .column("tokens")
        .unwrap()
        .values()
        .as_ptr();
    assert_eq!(
        batches[0]
            .data()
            .column("tokens")
            .unwrap()
            .values()
            .as_ptr(),
        mapped
    );
    let (batches, _) = epoch(packed(Packing::new(4)));
    let views: Vec<bool> = batches.iter().map(Batch::is_view).collect();
    assert_eq!(views, [true, false, false]); // 4..8 and 8..12 cross rows
    let (batches, _) = epoch(packed(
        Packing::new(3).with_mode(PackMode::Split { pad_last: true }),
    ));
    assert!(!batches[4].is_view()); // padded
    // Empty documents between the windows' documents: still consecutive rows, a view.
    let (_dir2, gaps) = self::file(&[2, 0, 3, 0, 0, 4, 1], 8);
    assert_eq!(gaps.batches().len(), 1);
    let by_two = Loader::builder(&gaps).with_batch_size(2);
    let (batches, _) = epoch(by_two.with_packing(Packing::new(5)));
    assert!(batches[0].is_view());
    assert_eq!(batches[0].cu_seqlens("tokens").unwrap(), [0, 2, 5, 9, 10]);
    assert_eq!(tokens(&batches[0]), (0..10).collect::<Vec<i64>>());
}

#[test]
fn packing_refuses_what_it_cannot_do() {
    let (_dir, file) = file(&[5, 3], 3);
    let refused = |b: LoaderBuilder<'_>, option: &str| match b
        .build()
        .map_err(crate::error::Error::into_kind)
    {
        Err(ErrorKind::Argument(ArgumentError::LoaderConfig { option: o, .. })) => {
            assert_eq!(o, option)
        }
        other => panic!("{option}: {other:?}"),
    };
    refused(Loader::builder(&file).with_packing(Packing::new(0)), "pack");
    refused(
        Loader::builder(&file)
            .with_token_budget(8)
            .with_packing(Packing::new(4)),
        "token_budget",
    );
    refused(
        Loader::builder(&file)
            .with_buckets(vec![2])
            .with_packing(Packing::new(4)),
        "buckets",
    );
    refused(
        Loader::builder(&file).with_packing(Packing::new(4).with_mode(PackMode::best_fit(0))),
        "pack_lookahead",
    );
    let unpacked = Loader::builder(&file)
        .build()
        .unwrap()
        .next_batch()
        .unwrap()
        .unwrap();
    assert!(unpacked.cu_seqlens("tokens").is_err());
    assert!(unpacked.windows().is_none());
}

/// A position saved by a packed loader is refused by an unpacked one and by one packing
/// otherwise.
#[test]
fn positions_name_packing() {
    let (_dir, file) = file(&[5, 3, 8], 3);
    let saved = Loader::builder(&file)
        .with_packing(Packing::new(4))
        .build()
        .unwrap()
        .next_position();
    for other in [
        Loader::builder(&file),
        Loader::builder(&file).with_packing(Packing::new(5)),
    ] {
        let err = other.build().unwrap().seek(saved).unwrap_err();
        assert!(err.to_string().contains("packing"), "{err}");
    }
}

/// Booleans (bits) and 3-item elements are packed alike: each token's flags follow it.
#[test]
fn packs_booleans_and_wide_elements() {
    use arrow_array::BooleanArray;
    use arrow_array::types::Float32Type;
    let lengths = [3usize, 0, 5, 2, 7];
    let n: usize = lengths.iter().sum();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.arrow");
    let lod = || crate::lod::Lod::try_from_lengths(&[lengths.to_vec()]).unwrap();
    let flags: Vec<bool> = (0..n * 3).map(|i| (i / 3) % 2 == 0 || i % 3 == 1).collect();
    let flags =
        crate::values::Values::try_new(Arc::new(BooleanArray::from(flags)), vec![3]).unwrap();
    let ids =
        LodTensor::from_lengths::<Int64Type>(&[lengths.to_vec()], (0..n as i64).collect(), vec![])
            .unwrap();
    let wide = LodTensor::from_lengths::<Float32Type>(
        &[lengths.to_vec()],
        (0..n * 3).map(|i| i as f32).collect(),
        vec![3],
    )
    .unwrap();
    let ds = Dataset::try_new(vec![
        Column::new("tokens", ids),
        Column::new("flags", LodTensor::try_new(lod(), flags).unwrap()),
        Column::new("wide", wide),
    ])
    .unwrap();
    let mut w = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
    w.write(&ds).unwrap();
    w.finish().unwrap();
    let file = MappedDataset::open(&path).unwrap();
    let packing = Packing::new(4).with_mode(PackMode::Split { pad_last: true });
    let (batches, _) = epoch(
        Loader::builder(&file)
            .with_batch_size(2)
            .with_shuffle(3)
            .with_packing(packing),
    );
    for b in &batches {
        let ids = tokens(b);
        let flags = b
            .data()
            .column("flags")
            .unwrap()
            .values()
            .booleans()
            .unwrap()
            .clone();
        let wide = b
            .data()
            .column("wide")
            .unwrap()
            .typed_values::<Float32Type>()
            .unwrap()
            .to_vec();
        let padding = cu_padding(&b.cu_seqlens("tokens").unwrap(), &b.windows().unwrap(), 4);
        for (t, &id) in ids.iter().enumerate() {
            for k in 0..3 {
                let i = id as usize * 3 + k;
                let expected = !padding[t] && ((i / 3).is_multiple_of(2) || i % 3 == 1);
                assert_eq!(flags.value(t * 3 + k), expected);
                assert_eq!(wide[t * 3 + k], if padding[t] { 0.0 } else { i as f32 });
            }
        }
    }
}

/// A file of documents of `lengths` tokens, `per_batch` rows a record batch, with a side
/// column `id` (strings, every third null), a dictionary `lang`, and 0-level tensors
/// `label` (row + 100) and `emb` (`[row, -row]`, shape [2]).
fn file_with_side_columns(
    lengths: &[usize],
    per_batch: usize,
) -> (tempfile::TempDir, MappedDataset) {
    use arrow_array::types::{Float32Type, Int32Type};
    use arrow_array::{DictionaryArray, StringArray};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("side.arrow");
    let mut w = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
    for (i, chunk) in lengths.chunks(per_batch).enumerate() {
        let rows = i * per_batch..i * per_batch + chunk.len();
        let n: i64 = chunk.iter().sum::<usize>() as i64;
        let tokens =
            LodTensor::from_lengths::<Int64Type>(&[chunk.to_vec()], (0..n).collect(), vec![]);
        let id: StringArray = (rows.clone())
            .map(|r| (r % 3 != 1).then(|| format!("doc{r}")))
            .collect();
        let lang: DictionaryArray<Int32Type> = rows.clone().map(|r| ["en", "fr"][r % 2]).collect();
        let label = rows.clone().map(|r| r as i64 + 100).collect();
        let emb = rows.clone().flat_map(|r| [r as f32, -(r as f32)]).collect();
        let ds = Dataset::try_new(vec![
            Column::new("tokens", tokens.unwrap()),
            Column::side("id", Arc::new(id)).unwrap(),
            Column::side("lang", Arc::new(lang)).unwrap(),
            Column::new(
                "label",
                LodTensor::dense::<Int64Type>(label, &[chunk.len()]).unwrap(),
            ),
            Column::new(
                "emb",
                LodTensor::dense::<Float32Type>(emb, &[chunk.len(), 2]).unwrap(),
            ),
        ])
        .unwrap();
        w.write(&ds).unwrap();
    }
    w.finish().unwrap();
    (dir, MappedDataset::open(&path).unwrap())
}

/// Side columns and 0-level tensors are carried per window: the values of the documents
/// of its pieces, in piece order, across record batches, shuffled or not, split or best fit.
#[test]
fn side_columns_are_carried_per_window() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Int32Type};
    use arrow_array::{Array, ArrayAccessor};
    let lengths = [3usize, 0, 5, 2, 7, 1, 4, 6, 2, 3, 9, 1];
    let (_dir, file) = file_with_side_columns(&lengths, 3);
    for (shuffle, best_fit, seq) in [(0, false, 4), (1, false, 3), (2, true, 5), (1, true, 4)] {
        let packing = match best_fit {
            true => Packing::new(seq).with_mode(PackMode::best_fit(4)),
            false => Packing::new(seq).with_mode(PackMode::Split { pad_last: true }),
        };
        let builder = with_shuffle(Loader::builder(&file).with_batch_size(2), shuffle);
        let (batches, _) = epoch(builder.with_packing(packing));
        assert!(!batches.is_empty());
        for b in &batches {
            let windows = b.windows().unwrap();
            let names: Vec<&str> = b.data().columns().iter().map(|c| c.name()).collect();
            assert_eq!(names, ["tokens", "id", "lang", "label", "emb"]);
            let id = b.data().column_by_name("id").unwrap().side_array().unwrap();
            let lang = b
                .data()
                .column_by_name("lang")
                .unwrap()
                .side_array()
                .unwrap();
            let (id, lang) = (id.as_list::<i32>(), lang.as_list::<i32>());
            // One level, not a packed column: an error, not a panic.
            assert!(b.cu_seqlens("label").is_err() && b.position_ids("label").is_err());
            let label = b.data().column("label").unwrap();
            let emb = b.data().column("emb").unwrap();
            assert_eq!(
                (id.len(), lang.len(), label.num_rows()),
                (windows.len(), windows.len(), windows.len())
            );
            let (labels, embs) = (
                label.typed_values::<Int64Type>().unwrap(),
                emb.typed_values::<Float32Type>().unwrap(),
            );
            let mut at = 0;
            for (w, pieces) in windows.iter().enumerate() {
                let (ids, langs) = (id.value(w), lang.value(w));
                let (ids, langs) = (ids.as_string::<i32>(), langs.as_dictionary::<Int32Type>());
                let langs = langs.downcast_dict::<arrow_array::StringArray>().unwrap();
                assert_eq!(ids.len(), pieces.len());
                for (k, p) in pieces.iter().enumerate() {
                    let r = p.row;
                    let expected = (r % 3 != 1).then(|| format!("doc{r}"));
                    assert_eq!(ids.is_valid(k).then(|| ids.value(k).to_owned()), expected);
                    assert_eq!(langs.value(k), ["en", "fr"][r % 2]);
                    assert_eq!(labels[at], r as i64 + 100);
                    assert_eq!(&embs[at * 2..at * 2 + 2], &[r as f32, -(r as f32)]);
                    at += 1;
                }
                assert_eq!(
                    label.lod().sequence_elements(0, w).unwrap(),
                    at - pieces.len()..at
                );
            }
        }
    }
}

#[test]
fn best_fit_to_a_huge_window_allocates_by_the_documents_not_the_window() {
    // A window of 2^31 tokens: each look-ahead's documents in one window, no table of 2^31
    // rooms; a longer one refused.
    let (_dir, data) = file(&[3, 1, 4, 1, 5], 2);
    let huge = Packing::new(1 << 40);
    let refused = Loader::builder(&data)
        .with_packing(huge)
        .build()
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("at most 4294967295 tokens a window"),
        "{refused}"
    );
    let packing = Packing::new(1 << 31).with_mode(PackMode::best_fit(2));
    let plan = Loader::builder(&data)
        .with_packing(packing)
        .build()
        .unwrap()
        .plan(0);
    let windows = plan.windows().unwrap();
    let tokens: Vec<usize> = (0..windows.len()).map(|w| windows.tokens_of(w)).collect();
    assert_eq!(tokens, [4, 5, 5]);
}
