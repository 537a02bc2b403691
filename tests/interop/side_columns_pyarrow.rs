//! A Hugging Face-style table written by pyarrow (side columns of every kind beside a dense
//! embedding and nested token tensors, several record batches, nulls in the side columns)
//! round-trips pyarrow → lodtensor file → Parquet → lodtensor file → pyarrow, pyarrow
//! comparing every step. Needs a Python with pyarrow (`LODTENSOR_PYTHON`, or `.venv`).
#![cfg(feature = "parquet")]

use std::path::Path;

use crate::common::python;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::io::parquet::{
    ParquetReadOptions, ParquetWriteOptions, read_parquet, write_parquet,
};
use lodtensor::{Dataset, LodTensor};

fn hf_table(python: &Path, args: &[&Path]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/hf_table.py");
    crate::common::run_script(python, &script, args)
}

fn write(path: &Path, datasets: &[Dataset]) {
    let mut writer = DatasetWriter::create(path, WriteOptions::default()).unwrap();
    for d in datasets {
        writer.write(d).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn hf_table_round_trips_through_lodtensor_and_parquet() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let [theirs, ours, parquet, again] =
        ["theirs.arrow", "ours.arrow", "ours.parquet", "again.arrow"].map(|n| dir.path().join(n));
    hf_table(&python, &["write".as_ref(), theirs.as_path()]);
    // pyarrow's file, mapped: tensors and side columns alike are views.
    let file = MappedDataset::open(&theirs).unwrap();
    assert!(file.batches().len() > 1);
    let first = &file.batches()[0];
    let kinds: Vec<(&str, bool)> = first
        .columns()
        .iter()
        .map(|c| (c.name(), c.is_side()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("id", true),
            ("text", true),
            ("label", false),
            ("lang", true),
            ("meta", true),
            ("embedding", false),
            ("tokens", false),
            ("view", true),
            ("blob", true),
            ("flag", true),
            ("at", true),
            ("scores", true),
            ("mask", true),
            ("counts", true),
            ("frames", true),
        ]
    );
    let embedding: &LodTensor = first.column("embedding").unwrap();
    assert_eq!(
        (embedding.num_levels(), embedding.element_shape()),
        (0, &[4][..])
    );
    write(&ours, file.batches());
    write_parquet(&parquet, file.batches(), &ParquetWriteOptions::default()).unwrap();
    let back = read_parquet(&parquet, &ParquetReadOptions::default()).unwrap();
    write(&again, &[back]);
    let said = hf_table(
        &python,
        &[
            "check".as_ref(),
            theirs.as_path(),
            ours.as_path(),
            parquet.as_path(),
            again.as_path(),
        ],
    );
    assert_eq!(said.trim(), "equal 3");
}
