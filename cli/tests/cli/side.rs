//! The CLI on files with side columns and with `--columns`: `info`, `show`, `slice` and
//! `convert` (to Parquet and back, and Paddle's refusal), every output read back with the
//! library.

#![cfg(feature = "parquet")]

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch, StringArray};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Column, Dataset, LodTensor};
use serde_json::Value;

use crate::support::lodtensor_in;

/// Five rows: `tokens` (1 level), `id` (strings) and `score` (int64 with a null, a side
/// column), written in two record batches.
fn write(dir: &Path) -> Dataset {
    let tokens =
        LodTensor::from_lengths::<Int64Type>(&[vec![2, 0, 1, 3, 1]], (0..7).collect(), vec![])
            .unwrap();
    let id = StringArray::from(vec!["a", "b", "c", "d", "e"]);
    let score = Int64Array::from(vec![Some(1), None, Some(3), Some(4), Some(5)]);
    let ds = Dataset::try_new(vec![
        Column::new("tokens", tokens),
        Column::side("id", Arc::new(id)).unwrap(),
        Column::side("score", Arc::new(score)).unwrap(),
    ])
    .unwrap();
    let options = WriteOptions::default().with_batch_bytes(64);
    let mut w = DatasetWriter::create(dir.join("side.arrow"), options).unwrap();
    w.write(&ds.slice_rows(0..2).unwrap()).unwrap();
    w.write(&ds.slice_rows(2..5).unwrap()).unwrap();
    w.finish().unwrap();
    ds
}

/// Every row of an Arrow or Parquet file as one record batch.
fn read(path: &Path) -> RecordBatch {
    let parts: Vec<RecordBatch> = if path.extension().is_some_and(|e| e == "parquet") {
        let ds = lodtensor::io::parquet::read_parquet(path, &Default::default()).unwrap();
        vec![ds.to_record_batch()]
    } else {
        let file = MappedDataset::open(path).unwrap();
        file.batches()
            .iter()
            .map(Dataset::to_record_batch)
            .collect()
    };
    arrow_select::concat::concat_batches(&parts[0].schema(), &parts).unwrap()
}

#[test]
fn info_show_slice_and_convert_carry_side_columns() {
    let dir = tempfile::tempdir().unwrap();
    let ds = write(dir.path());
    let text = lodtensor_in(dir.path(), ["info", "side.arrow"])
        .ok()
        .to_owned();
    assert!(text.contains("format version 2"), "{text}");
    assert!(text.contains("3 columns"), "{text}");
    assert!(
        text.contains("side column \"score\": Int64, 5 rows, 1 null"),
        "{text}"
    );
    let json: Value =
        serde_json::from_str(lodtensor_in(dir.path(), ["info", "side.arrow", "--json"]).ok())
            .unwrap();
    assert_eq!(json["side_columns"][0]["name"], "id");
    assert_eq!(json["side_columns"][1]["nulls"], 1);
    let kinds: Vec<&str> = (json["columns"].as_array().unwrap().iter())
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tensor", "side", "side"]);
    assert_eq!(json["columns"][2]["nulls"], 1);
    let valid = lodtensor_in(dir.path(), ["validate", "side.arrow"])
        .ok()
        .to_owned();
    assert!(valid.contains("3 columns"), "{valid}");

    let shown = lodtensor_in(
        dir.path(),
        ["show", "side.arrow", "--column", "id", "--rows", "1..4"],
    );
    let shown = shown.ok();
    assert!(shown.contains("row 1: \"b\""), "{shown}");
    assert!(shown.contains("row 3: \"d\""), "{shown}");

    lodtensor_in(
        dir.path(),
        ["slice", "side.arrow", "s.arrow", "--rows", "1..4"],
    )
    .ok();
    let expected = ds.slice_rows(1..4).unwrap().to_record_batch();
    assert_eq!(read(&dir.path().join("s.arrow")), expected);

    lodtensor_in(dir.path(), ["convert", "side.arrow", "x.parquet"]).ok();
    lodtensor_in(dir.path(), ["convert", "x.parquet", "back.arrow"]).ok();
    assert_eq!(read(&dir.path().join("back.arrow")), ds.to_record_batch());

    // LoD operations and Paddle name the side column.
    let err = lodtensor_in(
        dir.path(),
        [
            "slice",
            "side.arrow",
            "q.arrow",
            "--level",
            "0",
            "--index",
            "0",
            "--column",
            "id",
        ],
    );
    assert!(err.fails(2).contains("side column"), "{err:?}");
    let err = lodtensor_in(dir.path(), ["convert", "side.arrow", "p.pdiparams"]);
    assert!(err.fails(2).contains("\"id\" is a side column"), "{err:?}");
    assert!(!dir.path().join("p.pdiparams").exists());
}

#[test]
fn columns_projects_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let ds = write(dir.path());
    lodtensor_in(dir.path(), ["convert", "side.arrow", "x.parquet"]).ok();
    let expected = ds.to_record_batch().project(&[2, 0]).unwrap();
    for input in ["side.arrow", "x.parquet"] {
        let out = format!("{input}.projected.arrow");
        lodtensor_in(
            dir.path(),
            ["convert", input, out.as_str(), "--columns", "score,tokens"],
        )
        .ok();
        assert_eq!(
            read(&dir.path().join(&out)).columns(),
            expected.columns(),
            "{input}"
        );
        let text = lodtensor_in(dir.path(), ["info", input, "--columns", "id"])
            .ok()
            .to_owned();
        assert!(
            text.contains("1 column") && text.contains("\"id\""),
            "{text}"
        );
    }
    lodtensor_in(
        dir.path(),
        [
            "convert",
            "side.arrow",
            "t.pdiparams",
            "--columns",
            "tokens",
        ],
    )
    .ok();
    let err = lodtensor_in(dir.path(), ["info", "side.arrow", "--columns", "nope"]);
    assert!(err.fails(4).contains("nope"), "{err:?}");
}
