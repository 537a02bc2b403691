//! `take(rows)` on a file and on shards: the rows in the order asked (repeats allowed), every
//! tensor and side column, equal to the rows' `sample`s one after the other and to
//! arrow-rs's `take`; a view when the rows are one run of one record batch.

use lodtensor::io::ipc_writer::WriteOptions;
use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{ArgumentError, Dataset, ErrorKind};
use proptest::prelude::*;

use super::side_columns::{concat, every_kind_written, take};

/// The model: every row's `sample`, concatenated.
fn samples(sample: impl Fn(usize) -> Dataset, rows: &[usize]) -> Vec<Dataset> {
    rows.iter().map(|&r| sample(r)).collect()
}

/// `ds` written as shards of `shard_rows` rows each.
fn sharded(ds: &Dataset, shard_rows: usize) -> (tempfile::TempDir, ShardedDataset) {
    let dir = tempfile::tempdir().unwrap();
    let options = ShardOptions::default()
        .with_shard_rows(shard_rows)
        .with_write_options(WriteOptions::default().with_batch_bytes(1024));
    let mut writer = ShardWriter::create(dir.path(), options).unwrap();
    writer.write(ds).unwrap();
    writer.finish().unwrap();
    let data = ShardedDataset::open(dir.path()).unwrap();
    (dir, data)
}

fn out_of_bounds(err: &lodtensor::Error, row: usize, len: usize) -> bool {
    matches!(err.kind(), ErrorKind::Argument(ArgumentError::RowsOutOfBounds { start, len: l, .. })
        if *start == row && *l == len)
}

#[test]
fn take_of_a_run_is_a_view_and_rows_past_the_end_are_named() {
    let (_dir, file, ds) = every_kind_written(40, 2, 1 << 20);
    let first = file.batches()[0].num_rows();
    assert!(first > 2, "a record batch of several rows");
    let batch = file.take(&[0, 1]).unwrap();
    assert!(batch.is_view());
    assert_eq!(batch.data().to_record_batch(), take(&ds, &[0, 1]));
    assert!(!file.take(&[1, 0]).unwrap().is_view());
    let err = file.take(&[3, 40, 41]).unwrap_err();
    assert!(out_of_bounds(&err, 40, 40), "{err}");
    assert!(err.to_string().contains("40 rows"), "{err}");
    let empty = file.take(&[]).unwrap();
    assert_eq!(empty.data().num_rows(), 0);
    assert_eq!(empty.data().columns().len(), ds.columns().len());
    let err = file.take_columns(&[0], &["nope"]).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn take_of_shards_maps_only_the_shards_it_reads() {
    let (_dir, file, ds) = every_kind_written(30, 3, 2048);
    let (sdir, data) = sharded(&ds, 7);
    assert_eq!(data.num_shards(), 5);
    // Shards 1..4 hold none of the rows: gone, they are not missed.
    for shard in &data.manifest().shards[1..4] {
        std::fs::remove_file(sdir.path().join(&shard.file)).unwrap();
    }
    let err = data.take(&[30]).unwrap_err();
    assert!(out_of_bounds(&err, 30, 30), "{err}");
    let empty = data.take_columns(&[], &["side2", "tokens"]).unwrap();
    assert_eq!(empty.data().num_rows(), 0);
    assert_eq!(empty.data().columns().len(), 2);
    let batch = data.take(&[29, 1, 29]).unwrap();
    assert_eq!(batch.samples(), &[29, 1, 29]);
    assert_eq!(batch.data().to_record_batch(), take(&ds, &[29, 1, 29]));
    assert_eq!(
        batch.data().to_record_batch(),
        file.take(&[29, 1, 29]).unwrap().data().to_record_batch()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn take_equals_the_samples_concatenated(
        seed in 0usize..5,
        rows in proptest::collection::vec(0usize..50, 1..24),
        shard_rows in 3usize..20,
        projected in any::<bool>(),
        batch_bytes in prop_oneof![Just(1024usize), Just(8192), Just(1 << 20)],
    ) {
        let (_dir, file, ds) = every_kind_written(50, seed, batch_bytes);
        let names = ["side3", "tokens", "side9", "embedding"];
        let project = |d: Dataset| match projected {
            true => Dataset::try_new(
                names.iter().map(|n| d.column_by_name(n).unwrap().clone()).collect(),
            )
            .unwrap(),
            false => d,
        };
        let model = concat(&samples(|r| project(file.sample(r).unwrap()), &rows));
        let got = match projected {
            true => file.take_columns(&rows, &names).unwrap(),
            false => file.take(&rows).unwrap(),
        };
        prop_assert_eq!(got.samples(), &rows[..]);
        prop_assert_eq!(&got.data().to_record_batch(), &model);
        let (_sdir, data) = sharded(&ds, shard_rows);
        let got = match projected {
            true => data.take_columns(&rows, &names).unwrap(),
            false => data.take(&rows).unwrap(),
        };
        prop_assert_eq!(&got.data().to_record_batch(), &model);
    }
}
