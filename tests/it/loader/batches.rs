//! What a batch is made of: views into the mapping in order, reused buffers when
//! shuffled, prefetch, padding and padding ratios.

use lodtensor::{ArgumentError, ErrorKind};

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::loader::Loader;
use lodtensor::{Batch, Error};

use super::*;

#[test]
fn in_order_batches_are_views_into_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[2; 40], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!(file.batches().len(), 1);
    let mapping = file.as_bytes().as_ptr_range();
    let inside = |p: *const u8| mapping.contains(&p);
    let mut loader = Loader::builder(&file).with_batch_size(8).build().unwrap();
    let mut n = 0;
    while let Some(b) = loader.next_batch().unwrap() {
        assert!(b.is_view());
        for c in b.data().columns() {
            let t = c.tensor().unwrap();
            let values = t
                .typed_values::<Float32Type>()
                .map(|v| v.as_ptr() as *const u8);
            let values = values
                .unwrap_or_else(|_| t.typed_values::<Int64Type>().unwrap().as_ptr() as *const u8);
            assert!(inside(values));
            for level in t.lod().levels() {
                assert!(inside(level.as_ptr()));
            }
        }
        n += 1;
    }
    assert_eq!(n, 5);
    let stats = loader.stats();
    assert_eq!((stats.views, stats.gathered, stats.bytes_copied), (5, 0, 0));
}

#[test]
fn next_is_view_predicts_the_next_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    // Small record batches: some in-order batches cross one and are gathered.
    write(&path, &[3; 60], 2000);
    let file = MappedDataset::open(&path).unwrap();
    assert!(file.batches().len() > 2);
    for shuffle in [false, true] {
        let mut b = Loader::builder(&file).with_batch_size(5);
        if shuffle {
            b = b.with_shuffle(9);
        }
        let mut loader = b.build().unwrap();
        // No plan yet: building it is work, so no promise.
        assert!(!loader.next_is_view());
        let (mut views, mut gathered) = (0, 0);
        loop {
            let predicted = loader.next_is_view();
            let Some(batch) = loader.next_batch().unwrap() else {
                assert!(!predicted);
                break;
            };
            if batch.position().batch > 0 {
                assert_eq!(predicted, batch.is_view(), "batch {:?}", batch.position());
            }
            if batch.is_view() {
                views += 1
            } else {
                gathered += 1
            }
        }
        assert!(gathered > 0 && (shuffle || views > 0), "{views} {gathered}");
    }
}

#[test]
fn shuffled_batches_reuse_their_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[4; 200], 2000);
    let file = MappedDataset::open(&path).unwrap();
    let mut loader = Loader::builder(&file)
        .with_batch_size(16)
        .with_shuffle(3)
        .build()
        .unwrap();
    let mut batches = 0;
    for _ in 0..3 {
        while let Some(b) = loader.next_batch().unwrap() {
            // The batch lives in the pool's buffer, not in the mapping.
            let values = b
                .data()
                .column("tokens")
                .unwrap()
                .typed_values::<Float32Type>()
                .unwrap();
            assert!(
                !file
                    .as_bytes()
                    .as_ptr_range()
                    .contains(&(values.as_ptr() as *const u8))
            );
            batches += 1;
        }
    }
    let stats = loader.stats();
    assert_eq!(stats.gathered, batches);
    // One buffer for the whole run: each batch was dropped before the next was gathered;
    // it grew only when a batch was larger than any before.
    assert_eq!(stats.allocations, 1);
    assert!(stats.growths <= 3, "{stats:?}");
    // A batch still held forces a second buffer, and only one.
    let held: Vec<Batch> = (0..2)
        .map(|_| loader.next_batch().unwrap().unwrap())
        .collect();
    assert_eq!(loader.stats().allocations, 2);
    drop(held);
}

#[test]
fn prefetch_gives_the_same_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 200);
    let file = MappedDataset::open(&path).unwrap();
    let build = || {
        Loader::builder(&file)
            .with_token_budget(60)
            .with_shuffle(5)
            .build()
            .unwrap()
    };
    let mut direct = build();
    let expected = epoch(&mut direct, &file);
    let mut prefetch = build().prefetch(2);
    let got: Vec<Batch> = prefetch.by_ref().map(Result::unwrap).collect();
    assert_eq!(got.len(), expected.len());
    for (a, b) in got.iter().zip(&expected) {
        assert_eq!((a.samples(), a.data()), (b.samples(), b.data()));
    }
    let loader = prefetch.into_loader().unwrap();
    assert_eq!(loader.next_position().epoch, 1);
    // Dropping a prefetch midway stops its thread.
    let mut early = build().prefetch(1);
    assert!(early.next().is_some());
    drop(early);
}

#[test]
fn padded_batches_and_padding_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    let doc_tokens = write(&path, &[1, 5, 1, 5, 1, 5, 1, 5], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    let mut plain = Loader::builder(&file).with_batch_size(2).build().unwrap();
    let mut bucketed = Loader::builder(&file)
        .with_batch_size(2)
        .with_quantile_buckets(2)
        .build()
        .unwrap();
    assert!(bucketed.plan(0).padding_ratio() < plain.plan(0).padding_ratio());
    let b = bucketed.next_batch().unwrap().unwrap();
    let p = b.to_padded("tokens", 0).unwrap();
    let lengths: Vec<usize> = b.samples().iter().map(|&s| doc_tokens[s]).collect();
    assert_eq!(p.lengths, lengths);
    assert_eq!(p.shape, vec![2, b.max_len(), 2]);
    let real = p.mask.iter().filter(|&&m| m).count();
    assert_eq!(real, b.tokens());
    assert!((1.0 - real as f64 / p.mask.len() as f64 - b.padding_ratio()).abs() < 1e-12);
    let b = plain.next_batch().unwrap().unwrap();
    assert!(matches!(
        b.to_padded("nope", 0).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::NoSuchColumn(_)))
    ));
    assert!(matches!(
        b.to_padded("label", 0).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels: 0
        }))
    ));
}
