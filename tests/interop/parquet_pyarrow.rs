//! Parquet files written by pyarrow, DuckDB and Polars from plain nested Python lists (no
//! lodtensor metadata) import with the LoD, dtype, element shape and values they hold. The
//! files and the script that made them are in `tests/data/parquet/`.
#![cfg(feature = "parquet")]

use arrow_array::types::{Float32Type, Int32Type, Int64Type};
use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader, read_parquet};
use lodtensor::{DType, Dataset, OffsetWidth};
use lodtensor::{DataError, ErrorKind};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/parquet");

fn expected_tokens(ds: &Dataset) {
    let tokens = ds.column("tokens").unwrap();
    assert_eq!(tokens.dtype(), DType::Float32);
    assert_eq!(tokens.element_shape(), &[2, 2]);
    assert_eq!(
        tokens.lod().lengths(),
        vec![vec![2, 0, 2], vec![2, 1, 0, 1]]
    );
    let values: Vec<f32> = (0..16).map(|i| i as f32).collect();
    assert_eq!(tokens.typed_values::<Float32Type>().unwrap(), values);
    let ids = ds.column("ids").unwrap();
    assert_eq!(ids.lod().lengths(), vec![vec![3, 0, 1]]);
    assert_eq!(ids.typed_values::<Int64Type>().unwrap(), &[1, 2, 3, 4]);
    let label = ds.column("label").unwrap();
    assert_eq!(label.num_levels(), 0);
    assert_eq!(label.typed_values::<Int32Type>().unwrap(), &[7, 8, 9]);
}

#[test]
fn nested_lists_with_the_arrow_schema_keep_the_element_shape() {
    let ds = read_parquet(
        format!("{DIR}/pyarrow_nested_lists.parquet"),
        &ParquetReadOptions::default(),
    )
    .unwrap();
    assert_eq!(ds.num_rows(), 3);
    expected_tokens(&ds);
    // Offset widths as pyarrow declared them: list, list; large_list.
    let widths = |name: &str| -> Vec<OffsetWidth> {
        let t = ds.column(name).unwrap();
        t.lod().levels().iter().map(|l| l.width()).collect()
    };
    assert_eq!(widths("tokens"), vec![OffsetWidth::I32; 2]);
    assert_eq!(widths("ids"), vec![OffsetWidth::I64]);
}

#[test]
fn nested_lists_without_the_arrow_schema_need_the_element_shape() {
    let path = format!("{DIR}/pyarrow_no_arrow_schema.parquet");
    // Every fixed-size list came back as a list: one more level per element dimension.
    let plain = read_parquet(&path, &ParquetReadOptions::default()).unwrap();
    let tokens = plain.column("tokens").unwrap();
    assert_eq!(tokens.num_levels(), 4);
    assert!(tokens.element_shape().is_empty());
    // Declaring the shape folds those levels back.
    let options = ParquetReadOptions::default().with_element_shape("tokens", vec![2, 2]);
    let ds = read_parquet(&path, &options).unwrap();
    expected_tokens(&ds);
    // Batch by batch too.
    let parts: Vec<Dataset> = ParquetReader::open(&path, &options.clone().with_batch_size(2))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1], ds.slice_rows(2..3).unwrap());
    // A shape the lengths contradict names the file, column and batch.
    let err = read_parquet(
        &path,
        &ParquetReadOptions::default().with_element_shape("tokens", vec![4, 1]),
    )
    .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Data(DataError::ElementShape { .. })),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("pyarrow_no_arrow_schema.parquet")
            && message.contains("\"tokens\", batch 0"),
        "{message}"
    );
}

#[test]
fn polars_files_keep_the_element_shape() {
    // Polars embeds its Arrow schema: large lists over fixed-size lists.
    let path = format!("{DIR}/polars_nested_lists.parquet");
    let ds = read_parquet(&path, &ParquetReadOptions::default()).unwrap();
    expected_tokens(&ds);
    let tokens = ds.column("tokens").unwrap();
    let widths: Vec<OffsetWidth> = tokens.lod().levels().iter().map(|l| l.width()).collect();
    assert_eq!(widths, vec![OffsetWidth::I64; 2]);
}

#[test]
fn duckdb_files_need_the_element_shape() {
    // DuckDB keeps no Arrow schema: its arrays are plain lists, one level per dimension.
    let path = format!("{DIR}/duckdb_nested_lists.parquet");
    let plain = read_parquet(&path, &ParquetReadOptions::default()).unwrap();
    assert_eq!(plain.column("tokens").unwrap().num_levels(), 4);
    let options = ParquetReadOptions::default().with_element_shape("tokens", vec![2, 2]);
    expected_tokens(&read_parquet(&path, &options).unwrap());
}

#[test]
fn the_direct_decoder_reads_other_writers_files_as_the_general_reader_does() {
    for file in [
        "pyarrow_nested_lists",
        "pyarrow_no_arrow_schema",
        "duckdb_nested_lists",
        "polars_nested_lists",
    ] {
        let path = format!("{DIR}/{file}.parquet");
        for batch in [1, 2, 1024] {
            let read = |direct: bool| {
                let options = ParquetReadOptions::default()
                    .with_batch_size(batch)
                    .with_direct(direct);
                let parts: Vec<Dataset> = ParquetReader::open(&path, &options)
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                (parts, read_parquet(&path, &options).unwrap())
            };
            let (direct_parts, direct_all) = read(true);
            let (general_parts, general_all) = read(false);
            assert_eq!(direct_all, general_all, "{file}");
            let rows = |parts: &[Dataset]| parts.iter().map(Dataset::num_rows).sum::<usize>();
            assert_eq!(rows(&direct_parts), rows(&general_parts), "{file}");
            assert!(direct_parts.iter().all(|p| p.num_rows() <= batch));
        }
    }
}
