//! Columns of a tensor's type holding nulls, in files that do not declare them tensors (as
//! pyarrow and the `parquet` crate write them): side columns (format-spec §2.2) through
//! `validate`, `info`, `show`, `slice` and `convert` to Parquet and back; a column the
//! file declares a tensor is still refused for its nulls.

#![cfg(feature = "parquet")]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float32Builder, Int64Builder, ListBuilder};
use arrow_array::{ArrayRef, Int32Array, LargeListArray, RecordBatch};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::parquet::{ParquetReadOptions, read_parquet};
use serde_json::Value;

use crate::support::lodtensor_in;

/// Six rows: `tokens` (a LoD tensor), `flags` (`list<bool>`), `ids` (`list<int64>`) and
/// `frames` (`list<list<float>>`), each of the last three with a null row and a null item;
/// `ids`' nulls all in rows 3.. (the second record batch).
fn batch() -> RecordBatch {
    let tokens = LargeListArray::new(
        Arc::new(Field::new("item", DataType::Int32, true)),
        OffsetBuffer::from_lengths([2, 0, 1, 3, 1, 2]),
        Arc::new(Int32Array::from((0..9).collect::<Vec<i32>>())),
        None,
    );
    let mut flags = ListBuilder::new(BooleanBuilder::new());
    let mut ids = ListBuilder::new(Int64Builder::new());
    let mut frames = ListBuilder::new(ListBuilder::new(Float32Builder::new()));
    for r in 0..6i64 {
        match r {
            1 => flags.append_null(),
            _ => flags.append_value([Some(r % 2 == 0), (r == 2).then_some(true).or(Some(false))]),
        }
        match r {
            4 => ids.append_null(),
            5 => ids.append_value([Some(r), None]),
            _ => ids.append_value((0..r).map(Some)),
        }
        match r {
            2 => frames.append_null(),
            _ => {
                for f in 0..r % 3 {
                    let item = if r + f == 3 {
                        None
                    } else {
                        Some(r as f32 / 2.0)
                    };
                    frames.values().append_value([item, Some(1.5)]);
                }
                frames.append(true);
            }
        }
    }
    RecordBatch::try_from_iter([
        ("tokens", Arc::new(tokens) as ArrayRef),
        ("flags", Arc::new(flags.finish())),
        ("ids", Arc::new(ids.finish())),
        ("frames", Arc::new(frames.finish())),
    ])
    .unwrap()
}

/// `batch` as another tool writes it: an Arrow file of two record batches and a Parquet
/// file, with no `lodtensor.*` metadata.
fn write_theirs(dir: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(dir.join("theirs.arrow")).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
    w.write(&batch.slice(0, 3)).unwrap();
    w.write(&batch.slice(3, 3)).unwrap();
    w.finish().unwrap();
    let file = std::fs::File::create(dir.join("theirs.parquet")).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// Every row of an Arrow or Parquet file, as one record batch.
fn read(path: &Path) -> RecordBatch {
    let parts: Vec<RecordBatch> = if path.extension().is_some_and(|e| e == "parquet") {
        let ds = read_parquet(path, &ParquetReadOptions::default()).unwrap();
        vec![ds.to_record_batch()]
    } else {
        let file = MappedDataset::open(path).unwrap();
        file.batches().iter().map(|d| d.to_record_batch()).collect()
    };
    arrow_select::concat::concat_batches(&parts[0].schema(), &parts).unwrap()
}

/// Whether `got` holds `expected`'s columns (names and arrays; metadata aside).
fn assert_same(got: &RecordBatch, expected: &RecordBatch, what: &str) {
    assert_eq!(got.num_columns(), expected.num_columns(), "{what}");
    for (i, field) in expected.schema().fields().iter().enumerate() {
        assert_eq!(got.schema().field(i).name(), field.name(), "{what}");
        let (g, e) = (got.column(i), expected.column(i));
        assert_eq!(g.to_data(), e.to_data(), "{what}: column {}", field.name());
    }
}

#[test]
fn nullable_lists_are_side_columns_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    write_theirs(dir.path(), &batch);
    for input in ["theirs.arrow", "theirs.parquet"] {
        let valid = lodtensor_in(dir.path(), ["validate", input])
            .ok()
            .to_owned();
        assert!(valid.contains("4 columns"), "{input}: {valid}");
        let json: Value =
            serde_json::from_str(lodtensor_in(dir.path(), ["info", input, "--json"]).ok()).unwrap();
        let sides: Vec<&str> = (json["side_columns"].as_array().unwrap().iter())
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(sides, ["flags", "ids", "frames"], "{input}");
        let kinds: Vec<(&str, &str)> = (json["columns"].as_array().unwrap().iter())
            .map(|c| (c["name"].as_str().unwrap(), c["kind"].as_str().unwrap()))
            .collect();
        let expected = [
            ("tokens", "tensor"),
            ("flags", "side"),
            ("ids", "side"),
            ("frames", "side"),
        ];
        assert_eq!(kinds, expected, "{input}");
        let json: Value = serde_json::from_str(
            lodtensor_in(
                dir.path(),
                ["info", input, "--json", "--columns", "ids,tokens"],
            )
            .ok(),
        )
        .unwrap();
        let names: Vec<&str> = (json["columns"].as_array().unwrap().iter())
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ids", "tokens"], "{input}");
        let shown = lodtensor_in(
            dir.path(),
            ["show", input, "--column", "ids", "--rows", "4..6"],
        );
        let shown = shown.ok();
        assert!(shown.contains("row 4: null"), "{input}: {shown}");
        assert!(
            shown.contains("row 5: ") && shown.contains("5 null"),
            "{input}: {shown}"
        );

        let sliced = format!("{input}.slice.arrow");
        lodtensor_in(dir.path(), ["slice", input, &sliced, "--rows", "1..5"]).ok();
        assert_same(&read(&dir.path().join(&sliced)), &batch.slice(1, 4), input);

        let parquet = format!("{input}.x.parquet");
        let back = format!("{input}.back.arrow");
        lodtensor_in(dir.path(), ["convert", input, &parquet]).ok();
        lodtensor_in(dir.path(), ["convert", &parquet, &back]).ok();
        assert_same(&read(&dir.path().join(&parquet)), &batch, input);
        assert_same(&read(&dir.path().join(&back)), &batch, input);

        // Shards carry the side columns (manifest version 2), and give them back.
        let shards = format!("{input}.shards/");
        let again = format!("{input}.again.arrow");
        lodtensor_in(dir.path(), ["convert", input, &shards, "--shard-rows", "2"]).ok();
        let json: Value =
            serde_json::from_str(lodtensor_in(dir.path(), ["info", &shards, "--json"]).ok())
                .unwrap();
        assert_eq!(json["format_version"], "2", "{input}");
        assert_eq!(json["columns"][2]["kind"], "side", "{input}");
        lodtensor_in(dir.path(), ["validate", &shards]).ok();
        lodtensor_in(dir.path(), ["convert", &shards, &again]).ok();
        assert_same(&read(&dir.path().join(&again)), &batch, input);
    }
}

#[test]
fn a_column_declared_a_tensor_is_refused_for_its_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let batch = batch();
    let declared = HashMap::from([("lodtensor.lod_levels".to_owned(), "1".to_owned())]);
    let fields: Vec<Field> = (batch.schema().fields().iter())
        .map(|f| match f.name() == "ids" {
            true => f.as_ref().clone().with_metadata(declared.clone()),
            false => f.as_ref().clone(),
        })
        .collect();
    let batch = batch.with_schema(Arc::new(Schema::new(fields))).unwrap();
    write_theirs(dir.path(), &batch);
    for input in ["theirs.arrow", "theirs.parquet"] {
        let err = lodtensor_in(dir.path(), ["validate", input]);
        let err = err.fails(1);
        assert!(
            err.contains("\"ids\"") && err.contains("null"),
            "{input}: {err}"
        );
    }
}
