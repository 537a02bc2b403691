//! Side columns (any Arrow type beside the LoD tensors) and column projection: written,
//! mapped without a copy, validated as Arrow validates them, sliced and loaded row for row
//! with the tensors; the model is arrow-rs's `take` of the same rows.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringDictionaryBuilder};
use arrow_array::types::{Float32Type, Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Int64Array, LargeStringArray, RecordBatch,
    StringArray, StringViewArray, StructArray, TimestampMicrosecondArray, UInt64Array,
};
use arrow_schema::{DataType, Field};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::loader::Loader;
use lodtensor::{ArgumentError, Column, Dataset, ErrorKind, LodTensor};
use proptest::prelude::*;

/// Side column `kind` (0..SIDE_KINDS) of `rows` rows, nulls at every row where
/// `(row + seed) % 3 == 0` for the nullable kinds.
fn side_array(kind: usize, rows: usize, seed: usize) -> ArrayRef {
    let null = |r: usize| (r + seed).is_multiple_of(3);
    let text = |r: usize| format!("row {r} of seed {seed}");
    match kind {
        0 => Arc::new(StringArray::from_iter((0..rows).map(|r| Some(text(r))))),
        1 => Arc::new(LargeStringArray::from_iter(
            (0..rows).map(|r| (!null(r)).then(|| text(r).repeat(r % 4))),
        )),
        2 => Arc::new(Int64Array::from_iter(
            (0..rows).map(|r| (!null(r)).then_some(r as i64 * 7 - 3)),
        )),
        3 => {
            let mut b = StringDictionaryBuilder::<Int32Type>::new();
            for r in 0..rows {
                b.append_value(["en", "fr", "zh"][(r + seed) % 3]);
            }
            Arc::new(b.finish())
        }
        4 => {
            let ids =
                Arc::new(UInt64Array::from_iter_values((0..rows).map(|r| r as u64))) as ArrayRef;
            let names = Arc::new(StringArray::from_iter(
                (0..rows).map(|r| (!null(r)).then(|| text(r))),
            )) as ArrayRef;
            Arc::new(StructArray::from(vec![
                (Arc::new(Field::new("source", DataType::UInt64, true)), ids),
                (Arc::new(Field::new("name", DataType::Utf8, true)), names),
            ]))
        }
        5 => Arc::new(StringViewArray::from_iter(
            (0..rows).map(|r| (!null(r)).then(|| text(r).repeat(1 + r % 3))),
        )),
        6 => Arc::new(BinaryArray::from_iter(
            (0..rows).map(|r| (!null(r)).then(|| vec![r as u8; r % 5])),
        )),
        7 => Arc::new(BooleanArray::from_iter(
            (0..rows).map(|r| (!null(r)).then_some(r % 2 == 0)),
        )),
        8 => Arc::new(TimestampMicrosecondArray::from_iter(
            (0..rows).map(|r| (!null(r)).then_some(1_700_000_000_000_000 + r as i64)),
        )),
        _ => {
            // A list of primitives with null lists and null items.
            let mut b = ListBuilder::new(arrow_array::builder::Float32Builder::new());
            for r in 0..rows {
                if null(r) {
                    b.append_null();
                } else {
                    for i in 0..r % 4 {
                        b.values().append_option((i != 1).then_some(i as f32));
                    }
                    b.append(true);
                }
            }
            Arc::new(b.finish())
        }
    }
}

const SIDE_KINDS: usize = 10;

/// Nested tokens (some documents empty) of `rows` rows and a dense per-row embedding.
fn tensors(rows: usize, seed: usize) -> Vec<Column> {
    let docs: Vec<usize> = (0..rows).map(|r| (r + seed) % 3).collect();
    let sentences: Vec<usize> = (0..docs.iter().sum()).map(|s| 1 + (s + seed) % 4).collect();
    let words: usize = sentences.iter().sum();
    let tokens = LodTensor::from_lengths::<Int64Type>(
        &[docs, sentences],
        (0..words as i64).collect(),
        vec![],
    )
    .unwrap();
    let embedding =
        LodTensor::dense::<Float32Type>((0..rows * 4).map(|i| i as f32).collect(), &[rows, 4])
            .unwrap();
    vec![
        Column::new("tokens", tokens)
            .with_level_names(["documents", "sentences"])
            .unwrap(),
        Column::new("embedding", embedding),
    ]
}

/// Tensors, then every side column kind in `kinds` (named `side{kind}`).
fn dataset(rows: usize, kinds: &[usize], seed: usize) -> Dataset {
    let mut columns = tensors(rows, seed);
    for &k in kinds {
        columns.push(Column::side(format!("side{k}"), side_array(k, rows, seed)).unwrap());
    }
    Dataset::try_new(columns).unwrap()
}

fn write(path: &Path, ds: &Dataset, batch_bytes: usize) {
    let mut w =
        DatasetWriter::create(path, WriteOptions::default().with_batch_bytes(batch_bytes)).unwrap();
    w.write(ds).unwrap();
    w.finish().unwrap();
}

/// A dataset of `rows` rows with every side column kind, written in batches of about
/// `batch_bytes` and mapped (the directory holding it, the mapping, the dataset).
pub(crate) fn every_kind_written(
    rows: usize,
    seed: usize,
    batch_bytes: usize,
) -> (tempfile::TempDir, MappedDataset, Dataset) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("side.arrow");
    let kinds: Vec<usize> = (0..SIDE_KINDS).collect();
    let ds = dataset(rows, &kinds, seed);
    write(&path, &ds, batch_bytes);
    (dir, MappedDataset::open(&path).unwrap(), ds)
}

/// Writes `ds` to `path`, then makes the first `zzzzzzzz` in the file invalid UTF-8.
fn write_bad_utf8(path: &Path, ds: &Dataset) {
    write(path, ds, 1 << 20);
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.windows(8).position(|w| w == b"zzzzzzzz").unwrap();
    bytes[at] = 0xff;
    std::fs::write(path, &bytes).unwrap();
}

/// Rows `rows` of `ds`, as arrow-rs's `take` gives them, as one record batch.
pub(crate) fn take(ds: &Dataset, rows: &[usize]) -> RecordBatch {
    let indices = UInt64Array::from_iter_values(rows.iter().map(|&r| r as u64));
    arrow_select::take::take_record_batch(&ds.to_record_batch(), &indices).unwrap()
}

/// The record batches of `parts`, concatenated.
pub(crate) fn concat(parts: &[Dataset]) -> RecordBatch {
    let batches: Vec<RecordBatch> = parts.iter().map(Dataset::to_record_batch).collect();
    arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// Whether `array`'s first buffer lies inside `mapping`.
fn in_mapping(array: &dyn Array, mapping: &[u8]) -> bool {
    let range = mapping.as_ptr_range();
    let data = array.to_data();
    let buffer = data.buffers().first().expect("a buffer");
    range.contains(&buffer.as_ptr())
}

#[test]
fn every_kind_round_trips_through_the_mapped_reader_as_views() {
    let (_dir, file, ds) = every_kind_written(40, 1, 2048);
    assert!(file.batches().len() > 1, "several record batches");
    assert_eq!(file.schema().metadata()["lodtensor.format_version"], "2");
    assert_eq!(concat(file.batches()), ds.to_record_batch());
    for batch in file.batches() {
        for column in batch.columns().iter().filter(|c| c.is_side()) {
            let array = column.side_array().unwrap();
            if !matches!(
                array.data_type(),
                DataType::Dictionary(..) | DataType::Struct(_)
            ) {
                assert!(
                    in_mapping(array.as_ref(), file.as_bytes()),
                    "{}",
                    column.name()
                );
            }
        }
    }
    // Samples and slices are Arrow's slices.
    for row in [0, 17, 39] {
        assert_eq!(
            file.sample(row).unwrap().to_record_batch(),
            take(&ds, &[row])
        );
    }
    let rows: Vec<usize> = (5..33).collect();
    assert_eq!(concat(&file.rows(5..33).unwrap()), take(&ds, &rows));
    // LoD operations on a side column name it and its type.
    let err = file.slice_sequence("side0", 0, 0).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Argument(ArgumentError::NotATensor { column, .. }) if column == "side0"),
        "{err}"
    );
}

#[test]
fn projection_reads_the_chosen_columns_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("side.arrow");
    let ds = dataset(25, &[0, 3, 4], 2);
    write(&path, &ds, 1024);
    let file = MappedDataset::open_columns(&path, &["side4", "tokens", "side3"]).unwrap();
    let names: Vec<&str> = file
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["side4", "tokens", "side3"]);
    let expected = ds.to_record_batch().project(&[4, 0, 3]).unwrap();
    assert_eq!(concat(file.batches()).columns(), expected.columns());
    assert_eq!(file.num_rows(), 25);
    let none = MappedDataset::open_columns(&path, &[]).unwrap();
    assert_eq!((none.num_rows(), none.schema().fields().len()), (25, 0));
    for (bad, what) in [
        (&["nope"][..], "no column"),
        (&["side0", "side0"][..], "twice"),
    ] {
        let err = MappedDataset::open_columns(&path, bad).unwrap_err();
        assert!(err.to_string().contains(what), "{err}");
    }
}

#[test]
fn a_corrupt_side_column_is_refused_by_arrow_validation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("side.arrow");
    // Bytes that are not UTF-8 in a string column: only Arrow's value validation sees them.
    let ds = Dataset::try_new(vec![
        Column::side("text", Arc::new(StringArray::from(vec!["zzzzzzzz"; 4]))).unwrap(),
    ])
    .unwrap();
    write_bad_utf8(&path, &ds);
    let err = MappedDataset::open(&path).unwrap_err();
    assert!(
        err.to_string().contains("utf8") || err.to_string().contains("UTF"),
        "{err}"
    );
    // Not read, not validated: projection leaves it alone.
    let ds = Dataset::try_new(vec![
        Column::side("text", Arc::new(StringArray::from(vec!["zzzzzzzz"; 4]))).unwrap(),
        Column::side("n", Arc::new(Int64Array::from(vec![1, 2, 3, 4]))).unwrap(),
    ])
    .unwrap();
    write_bad_utf8(&path, &ds);
    assert_eq!(
        MappedDataset::open_columns(&path, &["n"])
            .unwrap()
            .num_rows(),
        4
    );
}

#[test]
fn nulls_in_a_tensor_column_are_refused_and_in_a_side_column_kept() {
    let with_null = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef;
    let declared = |field: Field| {
        let kind = [("lodtensor.kind".to_owned(), "tensor".to_owned())];
        field.with_metadata(
            kind.into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
        )
    };
    let field = declared(Field::new("label", DataType::Int64, true));
    let batch = RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new(vec![field])),
        vec![with_null.clone()],
    )
    .unwrap();
    // Unmarked, an int64 column with a null is a side column (format-spec §2.2).
    let unmarked = RecordBatch::try_from_iter([("label", with_null.clone())]).unwrap();
    let ds = Dataset::try_from_record_batch(&unmarked).unwrap();
    assert_eq!(ds.columns()[0].side_array().unwrap(), &with_null);
    // Declared a tensor, the null is refused, naming its row, in memory and in a file
    // another writer made.
    let err = Dataset::try_from_record_batch(&batch).unwrap_err();
    assert!(err.to_string().contains("(the first in row 1)"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nulls.arrow");
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    let err = MappedDataset::open(&path).unwrap_err();
    assert!(err.to_string().contains("(the first in row 1)"), "{err}");
    // A null sentence (level 1) in row 2 of three documents.
    let mut b = ListBuilder::new(ListBuilder::new(arrow_array::builder::Int64Builder::new()));
    for (doc, null_sentence) in [(0, false), (1, false), (2, true)] {
        b.values().values().append_value(doc);
        b.values().append(true);
        if null_sentence {
            b.values().append_null();
        }
        b.append(true);
    }
    let nested = Arc::new(b.finish()) as ArrayRef;
    let field = declared(Field::new("tokens", nested.data_type().clone(), true));
    let err = Column::try_from_arrow(&field, nested.as_ref()).unwrap_err();
    assert!(
        err.to_string().contains("level 1 (the first in row 2)"),
        "{err}"
    );
    // As a side column, kept.
    let side = Column::side("label", with_null).unwrap();
    let ds = Dataset::try_new(vec![side]).unwrap();
    assert_eq!(
        Dataset::try_from_record_batch(&ds.to_record_batch()).unwrap(),
        ds
    );
}

#[test]
fn loader_batches_carry_side_columns_row_aligned() {
    let (_dir, file, ds) = every_kind_written(60, 3, 4096);
    // In order: views, the side arrays inside the mapping.
    let mut loader = Loader::builder(&file).with_batch_size(4).build().unwrap();
    let mut views = 0;
    while let Some(batch) = loader.next_batch().unwrap() {
        assert_eq!(batch.data().to_record_batch(), take(&ds, batch.samples()));
        if batch.is_view() {
            views += 1;
            let id = batch
                .data()
                .column_by_name("side0")
                .unwrap()
                .side_array()
                .unwrap()
                .clone();
            assert!(in_mapping(id.as_ref(), file.as_bytes()));
        }
    }
    assert!(views > 0);
    // Shuffled: gathered, still row for row.
    let mut loader = Loader::builder(&file)
        .with_batch_size(7)
        .with_shuffle(9)
        .build()
        .unwrap();
    let mut seen = Vec::new();
    let again = file.path().with_extension("again.arrow");
    let mut writer = DatasetWriter::create(&again, WriteOptions::default()).unwrap();
    while let Some(batch) = loader.next_batch().unwrap() {
        assert_eq!(batch.data().to_record_batch(), take(&ds, batch.samples()));
        seen.extend_from_slice(batch.samples());
        // Gathered dictionaries keep the file's one dictionary, so they can be written.
        writer.write(batch.data()).unwrap();
    }
    writer.finish().unwrap();
    assert_eq!(seen.len(), 60);
    let written = MappedDataset::open(&again).unwrap();
    assert_eq!(concat(written.batches()), take(&ds, &seen));
    // A side column gives no lengths.
    let err = Loader::builder(&file)
        .with_token_budget(10)
        .with_length_column("side2", 0)
        .build();
    assert!(matches!(
        err.map(|_| ()).unwrap_err().kind(),
        ErrorKind::Argument(ArgumentError::NotATensor { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random side-column kinds beside the tensors, random batch sizes: slices and loader
    /// batches (in order and shuffled) equal `take` of the same rows.
    #[test]
    fn slices_and_batches_equal_take(
        rows in 0usize..50,
        kinds in proptest::collection::vec(0usize..SIDE_KINDS, 0..5),
        seed in 0usize..100,
        batch_bytes in 256usize..4096,
        batch_size in 1usize..9,
        (a, b) in (0usize..50, 0usize..50),
    ) {
        let mut kinds = kinds;
        kinds.sort_unstable();
        kinds.dedup();
        let ds = dataset(rows, &kinds, seed);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.arrow");
        write(&path, &ds, batch_bytes);
        let file = MappedDataset::open(&path).unwrap();
        let (lo, hi) = (a.min(b).min(rows), a.max(b).min(rows));
        let rows_taken: Vec<usize> = (lo..hi).collect();
        let slice = ds.slice_rows(lo..hi).unwrap();
        prop_assert_eq!(slice.to_record_batch(), take(&ds, &rows_taken));
        if hi > lo {
            prop_assert_eq!(concat(&file.rows(lo..hi).unwrap()), take(&ds, &rows_taken));
        }
        for shuffle in [None, Some(seed as u64)] {
            let mut builder = Loader::builder(&file).with_batch_size(batch_size);
            if let Some(s) = shuffle {
                builder = builder.with_shuffle(s);
            }
            let mut loader = builder.build().unwrap();
            while let Some(batch) = loader.next_batch().unwrap() {
                prop_assert_eq!(batch.data().to_record_batch(), take(&ds, batch.samples()));
            }
        }
    }
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_carries_side_columns_both_ways() {
    use lodtensor::io::parquet::{
        ParquetReadOptions, ParquetWriteOptions, RowGroupSize, read_parquet, write_parquet,
    };
    let dir = tempfile::tempdir().unwrap();
    let kinds: Vec<usize> = (0..SIDE_KINDS).collect();
    let ds = dataset(50, &kinds, 4);
    for threads in [1, 3] {
        let path = dir.path().join(format!("side{threads}.parquet"));
        let options = ParquetWriteOptions::default()
            .with_row_group_size(RowGroupSize::Rows(7))
            .with_threads(threads);
        // Written in two parts, read back whole and in small batches.
        write_parquet(
            &path,
            [
                ds.slice_rows(0..20).unwrap(),
                ds.slice_rows(20..50).unwrap(),
            ],
            &options,
        )
        .unwrap();
        let back = read_parquet(&path, &ParquetReadOptions::default()).unwrap();
        assert_eq!(back.to_record_batch(), ds.to_record_batch());
        assert!(back.columns()[4].is_side());
    }
}
