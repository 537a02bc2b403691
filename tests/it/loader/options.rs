//! The loader's options and edges: typed errors for bad options and positions, conflicts
//! named, empty files, oversize samples, the iterator, the deprecated `position`.

use lodtensor::{ArgumentError, ErrorKind};
use std::sync::Arc;

use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::loader::{Loader, LoaderBuilder};
use lodtensor::{Batch, Error};

use super::*;

#[test]
fn bad_options_and_positions_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[2; 10], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    let err = |b: LoaderBuilder| b.build().unwrap_err();
    assert!(matches!(
        err(Loader::builder(&file).with_batch_size(0)).kind(),
        ErrorKind::Argument(ArgumentError::LoaderConfig {
            option: "batch_size",
            ..
        })
    ));
    assert_eq!(
        err(Loader::builder(&file).with_batch_size(0)).to_string(),
        "loader option batch_size: must be at least 1, got 0"
    );
    assert!(matches!(
        err(Loader::builder(&file).shard(3, 3)).kind(),
        ErrorKind::Argument(ArgumentError::LoaderConfig { option: "rank", .. })
    ));
    assert!(matches!(
        err(Loader::builder(&file).with_quantile_buckets(0)).kind(),
        ErrorKind::Argument(ArgumentError::LoaderConfig { .. })
    ));
    assert!(matches!(
        err(Loader::builder(&file).with_length_column("x", 0)).kind(),
        ErrorKind::Argument(ArgumentError::NoSuchColumn(_))
    ));
    assert!(matches!(
        err(Loader::builder(&file).with_length_column("tokens", 2)).kind(),
        ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 2,
            levels: 2
        })
    ));
    let mut a = Loader::builder(&file).with_batch_size(3).build().unwrap();
    let mut b = Loader::builder(&file).with_batch_size(4).build().unwrap();
    assert!(matches!(
        b.seek(a.next_position()).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::PositionMismatch { .. }))
    ));
    let mut p = a.next_position();
    p.batch = 5;
    assert!(matches!(
        a.seek(p).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::BatchOutOfRange {
            epoch: 0,
            batch: 5,
            batches: 4
        }))
    ));
    p.batch = 4;
    a.seek(p).unwrap();
    assert!(a.next_batch().unwrap().is_none());
    let _ = Arc::new(b.next_batch().unwrap());
}

#[test]
fn conflicting_options_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[2; 10], 1 << 20);
    let file = MappedDataset::open(&path).unwrap();
    let cases: [(LoaderBuilder, &str, &str); 4] = [
        (
            Loader::builder(&file)
                .with_batch_size(4)
                .with_token_budget(40),
            "batch_size",
            "token_budget",
        ),
        (
            Loader::builder(&file)
                .with_token_budget(40)
                .with_batch_size(4),
            "token_budget",
            "batch_size",
        ),
        (
            Loader::builder(&file)
                .with_shuffle(1)
                .with_chunk_shuffle(1, 4),
            "shuffle",
            "chunk_shuffle",
        ),
        (
            Loader::builder(&file)
                .with_buckets(vec![3])
                .with_quantile_buckets(2),
            "buckets",
            "quantile_buckets",
        ),
    ];
    for (builder, first, second) in cases {
        let err = builder.build().unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Argument(ArgumentError::LoaderConfig { option, .. }) if *option == first
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("loader option {first}: conflicts with {second}: give one of them")
        );
    }
    // The same option twice is not a conflict: the last one counts.
    let loader = Loader::builder(&file)
        .with_batch_size(4)
        .with_batch_size(5)
        .build()
        .unwrap();
    assert_eq!(loader.plan(0).infos()[0].len(), 5);
}

/// A file with a schema and no rows (no record batch, or one of 0 rows): zero batches in
/// every mode, and every option that names a column still checks it against the schema.
#[test]
fn empty_datasets_give_zero_batches_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let no_batch = dir.path().join("none.arrow");
    let schema = {
        let probe = dir.path().join("probe.arrow");
        write(&probe, &[1], 1 << 20);
        MappedDataset::open(&probe).unwrap().schema().clone()
    };
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&no_batch).unwrap(), &schema)
            .unwrap();
    w.finish().unwrap();
    let zero_rows = dir.path().join("zero.arrow");
    write(&zero_rows, &[], 1 << 20);
    for path in [&no_batch, &zero_rows] {
        let file = MappedDataset::open(path).unwrap();
        assert_eq!(file.num_rows(), 0);
        let modes: [fn(LoaderBuilder) -> LoaderBuilder; 6] = [
            |b| b,
            |b| b.with_length_column("tokens", 0).with_token_budget(8),
            |b| b.with_length_column("tokens", 1).with_quantile_buckets(3),
            |b| b.with_shuffle(3).with_buckets(vec![2, 5]),
            |b| b.with_chunk_shuffle(3, 4).with_drop_last(true),
            |b| b.with_batch_size(2).shard(1, 2),
        ];
        for (i, mode) in modes.iter().enumerate() {
            let mut loader = mode(Loader::builder(&file)).build().unwrap();
            for epoch in 0..2 {
                assert!(loader.plan(epoch).is_empty(), "mode {i}");
                assert!(loader.next_batch().unwrap().is_none(), "mode {i}");
            }
            assert_eq!(loader.by_ref().count(), 0);
        }
        assert!(matches!(
            Loader::builder(&file)
                .with_length_column("x", 0)
                .build()
                .map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::NoSuchColumn(_)))
        ));
        assert!(matches!(
            Loader::builder(&file)
                .with_length_column("tokens", 2)
                .build()
                .map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 2,
                levels: 2
            }))
        ));
    }
}

/// A sample over the token budget comes after the batch that was being filled: the epoch
/// keeps file order, and in file order every batch in one record batch stays a view.
#[test]
fn oversize_samples_keep_the_order_and_the_views() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    // Document 3 has 12 sentences: far over a 30-token budget.
    let doc_tokens = write(&path, &[1, 1, 1, 12, 1, 1, 2, 1], 1 << 20);
    assert!(
        doc_tokens[3] > 30
            && doc_tokens
                .iter()
                .enumerate()
                .all(|(i, &t)| i == 3 || t <= 30)
    );
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!(file.batches().len(), 1);
    let mut loader = Loader::builder(&file)
        .with_token_budget(30)
        .build()
        .unwrap();
    let batches = epoch(&mut loader, &file);
    assert_eq!(samples(&batches), (0..8).collect::<Vec<_>>());
    assert!(batches.iter().all(Batch::is_view));
    assert_eq!(batches.iter().filter(|b| b.is_oversize()).count(), 1);
    assert_eq!(loader.stats().gathered, 0);
}

#[test]
fn a_loader_is_an_iterator_over_its_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[1, 2, 3, 1, 2, 3, 1], 200);
    let file = MappedDataset::open(&path).unwrap();
    let build = || {
        Loader::builder(&file)
            .with_batch_size(3)
            .with_shuffle(4)
            .build()
            .unwrap()
    };
    let mut direct = build();
    let expected = epoch(&mut direct, &file);
    let mut loader = build();
    let mut got = Vec::new();
    for batch in &mut loader {
        got.push(batch.unwrap());
    }
    assert_eq!(got.len(), expected.len());
    for (a, b) in got.iter().zip(&expected) {
        assert_eq!((a.samples(), a.data()), (b.samples(), b.data()));
    }
    // The next iteration is the next epoch.
    let second: Vec<Batch> = loader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(second[0].position().epoch, 1);
    assert_eq!(second.len(), expected.len());
}

/// `Loader::position` stays for one release as a deprecated alias of `next_position`.
#[test]
#[allow(deprecated)]
fn deprecated_position_is_next_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    write(&path, &[3, 1, 2], 400);
    let file = MappedDataset::open(&path).unwrap();
    let mut loader = Loader::builder(&file).with_batch_size(2).build().unwrap();
    loader.next_batch().unwrap();
    assert_eq!(loader.position(), loader.next_position());
    assert_eq!(loader.next_position().batch, 1);
}
