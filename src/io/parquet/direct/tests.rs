//! The direct decoder against the general reader, on this crate's files, on files written
//! the ways other writers write them, and on corrupted files.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, LargeListArray, RecordBatch};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::properties::{WriterProperties, WriterVersion};
use proptest::prelude::*;

use super::super::tests::{CODECS, cases, check_batches, dataset, read_bytes, write_bytes};
use super::super::{ParquetReadOptions, ParquetReader, ParquetWriteOptions, RowGroupSize, pages};
use super::{Direct, RowGroupSource};
use crate::dataset::Dataset;
use crate::lod::OffsetWidth;
use crate::values::DType;

/// Value types the direct decoder reads.
const DIRECT: [DType; 6] = [
    DType::Float32,
    DType::Float64,
    DType::Int32,
    DType::UInt32,
    DType::Int64,
    DType::UInt64,
];

fn general() -> ParquetReadOptions {
    ParquetReadOptions::default().with_direct(false)
}

/// The file read whole by both readers, checked equal; whether the direct decoder read it.
fn both(bytes: &Bytes) -> (Dataset, bool) {
    let reader = ParquetReader::try_new(bytes.clone(), &ParquetReadOptions::default()).unwrap();
    let direct = reader.is_direct();
    let ds = reader.read_all().unwrap();
    assert_eq!(ds, read_bytes(bytes.clone(), &general()));
    (ds, direct)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn direct_matches_the_general_reader(case in cases(24, 10)) {
        let bytes = write_bytes([&case.ds], &case.options);
        let (back, direct) = both(&bytes);
        prop_assert_eq!(&back, &case.ds);
        // The label column is i64: the file is direct exactly when the tensor's type is.
        prop_assert_eq!(direct, DIRECT.contains(&case.dtype));
        // Batch by batch: views of one row group at a time, in order.
        check_batches(bytes, &case.ds, case.batch_size)?;
    }
}

/// A 2-level column of `f32[4]` elements written by the `parquet` crate's Arrow writer with
/// `props`, as other writers lay it out: many small pages, v1 or v2.
fn arrow_writer_file(ds: &Dataset, props: WriterProperties) -> Bytes {
    let schema = ds.schema();
    let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
    w.write(&ds.to_record_batch_with_schema(schema)).unwrap();
    Bytes::from(w.into_inner().unwrap())
}

#[test]
fn pages_of_every_version_and_dictionary_fallback_decode() {
    let ds = dataset(DType::Float32, 2, &[4], 300, OffsetWidth::I64, 7);
    // The tensor column alone: v2 pages store the i64 labels in a delta encoding.
    let ds = Dataset::try_new(vec![ds.columns()[0].clone()]).unwrap();
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        for dictionary in [false, true] {
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_dictionary_enabled(dictionary)
                // Small pages, and a dictionary that overflows: the chunk falls back from
                // dictionary to plain pages half way, as pyarrow's do on float data.
                .set_data_page_size_limit(512)
                .set_write_batch_size(64)
                .set_dictionary_page_size_limit(256)
                .set_max_row_group_row_count(Some(120))
                .build();
            let bytes = arrow_writer_file(&ds, props);
            let (back, direct) = both(&bytes);
            assert!(direct, "{version:?}, dictionary {dictionary}");
            assert_eq!(back, ds);
        }
    }
}

#[test]
fn low_entropy_values_decode_through_the_dictionary() {
    let mut ds = dataset(DType::Float32, 1, &[8], 200, OffsetWidth::I32, 3);
    // Quantized values: 4 distinct.
    let t = ds.columns()[0].tensor().unwrap();
    let items: Vec<f32> = (0..t.values().items().len())
        .map(|i| (i % 4) as f32)
        .collect();
    let values = crate::values::Values::try_new(Arc::new(Float32Array::from(items)), vec![8]);
    let t = crate::tensor::LodTensor::try_new(t.lod().clone(), values.unwrap()).unwrap();
    ds = Dataset::try_new(vec![crate::dataset::Column::new("x", t)]).unwrap();
    let bytes = write_bytes([&ds], &ParquetWriteOptions::default().with_dictionary(true));
    let (back, direct) = both(&bytes);
    assert!(direct);
    assert_eq!(back, ds);
}

#[test]
fn nulls_are_errors_and_other_layouts_go_to_the_general_reader() {
    // A null row in a list column the file declares a tensor: refused by both readers.
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let values: ArrayRef = Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0]));
    let offsets = OffsetBuffer::new(vec![0i64, 2, 2, 3].into());
    let nulls = Some(vec![true, false, true].into());
    let list = LargeListArray::new(item.clone(), offsets, values, nulls);
    let file = |metadata: &[(&str, &str)]| {
        let metadata = metadata.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let field = Field::new("x", list.data_type().clone(), true);
        let schema =
            Arc::new(Schema::new(vec![field.with_metadata(
                metadata.collect::<std::collections::HashMap<_, _>>(),
            )]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(list.clone())]).unwrap();
        let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
        w.write(&batch).unwrap();
        Bytes::from(w.into_inner().unwrap())
    };
    let bytes = file(&[("lodtensor.lod_levels", "1")]);
    let reader = ParquetReader::try_new(bytes.clone(), &ParquetReadOptions::default()).unwrap();
    assert!(reader.is_direct());
    let err = reader.read_all().unwrap_err();
    assert!(err.to_string().contains("null"), "{err}");
    assert!(
        ParquetReader::try_new(bytes, &general())
            .unwrap()
            .read_all()
            .is_err()
    );
    // Undeclared (format-spec §2.2): a side column, through the general reader.
    let reader = ParquetReader::try_new(file(&[]), &ParquetReadOptions::default()).unwrap();
    assert!(!reader.is_direct());
    let back = reader.read_all().unwrap();
    assert_eq!(
        back.columns()[0].side_array().unwrap().to_data(),
        list.to_data()
    );
    // Byte-stream-split values: the general reader.
    let ds = dataset(DType::Float32, 1, &[2], 20, OffsetWidth::I32, 5);
    let bytes = write_bytes(
        [&ds],
        &ParquetWriteOptions::default().with_byte_stream_split(true),
    );
    let (back, direct) = both(&bytes);
    assert!(!direct);
    assert_eq!(back, ds);
}

/// Reads `bytes` as the reader does, but with the direct decoder called straight, outside
/// the reader's panic guard: a panic here (or on the read-ahead thread) fails the test.
fn direct_unguarded(bytes: &Bytes, read_ahead: bool) -> crate::error::Result<Option<Dataset>> {
    let metadata = ArrowReaderMetadata::load(bytes, ArrowReaderOptions::default())?;
    pages::check_column_chunks(bytes, metadata.metadata())?;
    let schema = metadata.schema().clone();
    let Some(plans) = Direct::<Bytes>::plans(metadata.metadata(), &schema) else {
        return Ok(None);
    };
    let metadata = metadata.metadata().clone();
    let mut direct = Direct::new(bytes.clone(), metadata, schema, plans, read_ahead);
    // Every compressed chunk, however small, so that these small files take that path.
    direct.read_ahead_above = read_ahead.then_some(0);
    for group in 0..direct.num_row_groups() {
        direct.decode(group)?;
    }
    let batch = direct.take_batch()?;
    Dataset::try_from_record_batch(&batch).map(Some)
}

#[test]
fn corrupted_pages_are_errors_never_panics() {
    let ds = dataset(DType::Float32, 2, &[3], 40, OffsetWidth::I32, 11);
    let mut files = Vec::new();
    for (dictionary, codec) in [(false, CODECS[0]), (true, CODECS[1])] {
        let options = ParquetWriteOptions::default()
            .with_dictionary(dictionary)
            .with_compression(codec)
            .with_row_group_size(RowGroupSize::Rows(15));
        files.push(write_bytes([&ds], &options));
    }
    let (mut corrupted, mut refused) = (0, 0);
    for file in &files {
        assert_eq!(direct_unguarded(file, true).unwrap(), Some(ds.clone()));
        // Every byte before the footer, each changed two ways (tests/corruption_sweep.rs
        // sweeps whole files, footer included, through the reader).
        let footer = file.len()
            - 8
            - u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap()) as usize;
        for at in 4..footer {
            for change in [0xff_u8, 0x01] {
                let mut bad = file.to_vec();
                bad[at] ^= change;
                corrupted += 1;
                let bad = Bytes::from(bad);
                let read = direct_unguarded(&bad, false);
                // Read ahead on a second thread: the same dataset, or the same error.
                match (&read, direct_unguarded(&bad, true)) {
                    (Ok(one), Ok(ahead)) => assert_eq!(one, &ahead, "byte {at}"),
                    (Err(one), Err(ahead)) => assert_eq!(one.to_string(), ahead.to_string()),
                    (one, ahead) => panic!("byte {at}: {one:?} but read ahead {ahead:?}"),
                }
                match read {
                    Ok(Some(back)) => {
                        // A value byte changed: the same shape, other values.
                        assert_eq!(back.num_rows(), ds.num_rows());
                    }
                    Ok(None) => {}
                    Err(_) => refused += 1,
                }
            }
        }
    }
    assert!(refused > corrupted / 10, "{refused} of {corrupted} refused");
}
