//! The training-loop loader against a model: every sample once per epoch in every mode,
//! batches equal to the samples they name, determinism, resumption, zero-copy views and
//! buffer reuse.

mod batches;
mod elastic;
mod epochs;
mod options;
mod position_fixture;

use std::path::Path;

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::loader::{Loader, LoaderBuilder};
use lodtensor::{Batch, Column, Dataset, Lod, LodTensor, Values};
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
