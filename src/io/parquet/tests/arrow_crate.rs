//! What the `parquet` crate's own Arrow writer and reader make of the same rows, to check
//! this crate's encoders against.

use bytes::Bytes;
use parquet::arrow::ArrowWriter;

use super::super::ParquetWriteOptions;
use crate::dataset::Dataset;
use crate::values::DType;

/// What the `parquet` crate's Arrow writer makes of `parts` with the same options and row
/// groups of `row_group_rows` rows.
pub(in crate::io::parquet) fn arrow_writer_bytes(
    parts: &[Dataset],
    options: &ParquetWriteOptions,
    row_group_rows: usize,
) -> Bytes {
    let schema = parts[0].schema();
    let dtypes: Vec<Option<DType>> = parts[0]
        .columns()
        .iter()
        .map(|c| c.as_tensor().map(|t| t.dtype()))
        .collect();
    let props = options
        .properties(&schema, &dtypes)
        .unwrap()
        .into_builder()
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
    for part in parts {
        writer
            .write(&part.to_record_batch_with_schema(schema.clone()))
            .unwrap();
    }
    Bytes::from(writer.into_inner().unwrap())
}

/// What the `parquet` crate's own Arrow reader reads of the file `bytes`: its rows, and
/// per row group and column the rows and the chunk statistics (min, max, nulls).
pub(in crate::io::parquet) fn arrow_read(
    bytes: &Bytes,
) -> (arrow_array::RecordBatch, Vec<(i64, Vec<String>)>) {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.clone()).unwrap();
    let groups = (builder.metadata().row_groups().iter())
        .map(|g| {
            let stats = (g.columns().iter())
                .map(|c| {
                    c.statistics().map_or("none".into(), |s| {
                        format!(
                            "{:?} {:?} {:?}",
                            s.min_bytes_opt(),
                            s.max_bytes_opt(),
                            s.null_count_opt()
                        )
                    })
                })
                .collect();
            (g.num_rows(), stats)
        })
        .collect();
    let schema = builder.schema().clone();
    let batches: Vec<arrow_array::RecordBatch> =
        builder.build().unwrap().map(|b| b.unwrap()).collect();
    (
        arrow_select::concat::concat_batches(&schema, &batches).unwrap(),
        groups,
    )
}
