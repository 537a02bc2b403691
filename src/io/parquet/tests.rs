use crate::error::{
    ArgumentError, DataError, ErrorKind, FileFormat, UnsupportedError, UnusableError,
};
use std::sync::Arc;

use arrow_array::types::{Float32Type, Int64Type};
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use proptest::prelude::*;

use super::*;
use crate::dataset::{Column, Dataset};
use crate::error::Error;
use crate::format::KEY_LEVEL_NAMES;
use crate::lod::OffsetWidth;
use crate::tensor::LodTensor;
use crate::values::DType;
use std::io::Write;
use writer::State;

mod arrow_crate;
mod cases;
pub(super) use arrow_crate::{arrow_read, arrow_writer_bytes};
pub(super) use cases::tensor;
pub(super) use cases::{CODECS, Case, Rng, cases, check_batches, dataset, read_bytes, write_bytes};

fn widths(d: &Dataset) -> Vec<OffsetWidth> {
    d.columns()[0]
        .tensor()
        .unwrap()
        .lod()
        .levels()
        .iter()
        .map(|l| l.width())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn round_trips_exactly(
        case in cases(12, 8),
        byte_stream_split: bool,
        split in 0usize..12,
        threads in 1usize..4,
    ) {
        let Case { ds, row_group_rows, batch_size, .. } = &case;
        let options = case.options.clone()
            .with_byte_stream_split(byte_stream_split)
            .with_threads(threads);
        // Written in two parts (views), read back in batches.
        let rows = ds.num_rows();
        let split = split.min(rows);
        let parts = [ds.slice_rows(0..split).unwrap(), ds.slice_rows(split..rows).unwrap()];
        let bytes = write_bytes(&parts, &options);
        let theirs = arrow_writer_bytes(&parts, &options, *row_group_rows);
        prop_assert_eq!(arrow_read(&bytes), arrow_read(&theirs), "not what the Arrow writer wrote");
        let read = ParquetReadOptions::default().with_batch_size(*batch_size);
        let back = read_bytes(bytes.clone(), &read);
        prop_assert_eq!(&back, ds);
        prop_assert_eq!(widths(&back), widths(ds));
        prop_assert_eq!(back.columns()[0].level_names(), ds.columns()[0].level_names());
        check_batches(bytes, ds, *batch_size)?;
        // Forced offset widths.
        for forced in [OffsetWidth::I32, OffsetWidth::I64] {
            let back = read_bytes(write_bytes([ds], &options.clone().with_offset_width(forced)), &read);
            prop_assert_eq!(&back, ds);
            prop_assert!(widths(&back).iter().all(|&w| w == forced));
        }
    }
}

#[test]
fn every_codec_and_dtype_round_trips() {
    for (i, dtype) in DType::ALL.into_iter().enumerate() {
        let ds = dataset(dtype, 2, &[2, 3], 9, OffsetWidth::I64, i as u64);
        for codec in CODECS {
            for bss in [false, true] {
                let options = ParquetWriteOptions::default()
                    .with_compression(codec)
                    .with_byte_stream_split(bss);
                let back = read_bytes(write_bytes([&ds], &options), &ParquetReadOptions::default());
                assert_eq!(back, ds, "{dtype} {codec:?} {bss}");
            }
        }
    }
}

#[test]
fn embedded_schema_keeps_metadata_and_extension() {
    let ds = dataset(DType::Float32, 2, &[2, 2], 5, OffsetWidth::I64, 1);
    let bytes = write_bytes([&ds], &ParquetWriteOptions::default());
    let reader = ParquetReader::try_new(bytes, &ParquetReadOptions::default()).unwrap();
    assert_eq!(reader.num_rows(), 5);
    let schema = reader.schema();
    assert_eq!(schema.metadata()[crate::format::KEY_FORMAT_VERSION], "1");
    let x = schema.field(0);
    assert_eq!(x.metadata()[KEY_LEVEL_NAMES], r#"["level0","level1"]"#);
    assert_eq!(x, &ds.schema().fields()[0].as_ref().clone());
    let DataType::LargeList(l1) = x.data_type() else {
        panic!()
    };
    let DataType::LargeList(element) = l1.data_type() else {
        panic!()
    };
    assert_eq!(
        element.metadata()[crate::extension::EXTENSION_METADATA_KEY],
        r#"{"shape":[2,2]}"#
    );
    assert!(matches!(element.data_type(), DataType::FixedSizeList(item, 4) if item.is_nullable()));
}

#[test]
fn sliced_views_export_the_rows_in_view() {
    let ds = dataset(DType::Int64, 2, &[3], 10, OffsetWidth::I32, 7);
    let view = ds.slice_rows(3..7).unwrap();
    assert!(!view.columns()[0].tensor().unwrap().lod().is_zero_based());
    let back = read_bytes(
        write_bytes([&view], &ParquetWriteOptions::default()),
        &ParquetReadOptions::default(),
    );
    assert_eq!(back, view);
    assert_eq!(back.num_rows(), 4);
    let t = back.columns()[0].tensor().unwrap();
    assert!(t.lod().is_zero_based());
    assert_eq!(
        t.typed_values::<Int64Type>().unwrap(),
        view.columns()[0]
            .tensor()
            .unwrap()
            .typed_values::<Int64Type>()
            .unwrap()
    );
    assert_eq!(
        t.lod().lengths(),
        view.columns()[0].tensor().unwrap().lod().lengths()
    );
}

#[test]
fn empty_datasets_round_trip() {
    for depth in 0..4 {
        let ds = dataset(DType::Float32, depth, &[4], 0, OffsetWidth::I64, 3);
        let bytes = write_bytes([&ds], &ParquetWriteOptions::default());
        let reader = ParquetReader::try_new(bytes.clone(), &ParquetReadOptions::default()).unwrap();
        assert_eq!(reader.count(), 0);
        assert_eq!(read_bytes(bytes, &ParquetReadOptions::default()), ds);
    }
    // Rows whose sequences are all empty.
    let t = LodTensor::from_lengths::<Float32Type>(&[vec![0, 2, 0], vec![0, 0]], vec![], vec![2])
        .unwrap();
    let ds = Dataset::try_new(vec![Column::new("x", t)]).unwrap();
    let back = read_bytes(
        write_bytes([&ds], &ParquetWriteOptions::default()),
        &ParquetReadOptions::default(),
    );
    assert_eq!(back, ds);
}

#[test]
fn later_datasets_take_the_file_offset_widths() {
    let a = dataset(DType::Int32, 2, &[], 4, OffsetWidth::I32, 1);
    let b = dataset(DType::Int32, 2, &[], 3, OffsetWidth::I64, 2);
    let back = read_bytes(
        write_bytes([&a, &b], &ParquetWriteOptions::default()),
        &ParquetReadOptions::default(),
    );
    assert_eq!(widths(&back), vec![OffsetWidth::I32; 2]);
    assert_eq!(back.slice_rows(0..4).unwrap(), a);
    assert_eq!(back.slice_rows(4..7).unwrap(), b);
}

#[test]
fn mismatched_datasets_are_errors() {
    let a = dataset(DType::Int32, 2, &[], 4, OffsetWidth::I32, 1);
    let other_dtype = dataset(DType::Int64, 2, &[], 4, OffsetWidth::I32, 1);
    let other_depth = dataset(DType::Int32, 1, &[], 4, OffsetWidth::I32, 1);
    let fewer = Dataset::try_new(vec![a.columns()[0].clone()]).unwrap();
    let renamed = Dataset::try_new(vec![
        Column::new("y", a.columns()[0].tensor().unwrap().clone()),
        a.columns()[1].clone(),
    ])
    .unwrap();
    for bad in [other_dtype, other_depth, fewer, renamed] {
        let mut w = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
        w.write(&a).unwrap();
        let err = w.write(&bad).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Argument(ArgumentError::SchemaMismatch { batch: 1, .. })
            ),
            "{err}"
        );
    }
    let w = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    assert!(matches!(
        w.finish().map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::NoSchema))
    ));
    let mut w = ParquetWriter::new(
        Vec::new(),
        ParquetWriteOptions::default().with_compression(Compression::Zstd(99)),
    );
    assert!(matches!(
        w.write(&a).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
            name: "level",
            ..
        }))
    ));
    assert!(matches!(
        w.finish().map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::NoSchema))
    ));
    // A sink that fails as the file starts.
    #[derive(Debug)]
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::StorageFull))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = ParquetWriter::new(Full, ParquetWriteOptions::default());
    w.write(&a).unwrap(); // buffered
    let err = w.finish().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err}");
    // A writer whose Arrow writer could not be made.
    let mut w = ParquetWriter::new(Vec::new(), ParquetWriteOptions::default());
    w.state = State::Broken;
    assert!(matches!(
        w.write(&a).map_err(Error::into_kind),
        Err(ErrorKind::Unusable(UnusableError::WriterBroken))
    ));
    assert!(matches!(
        w.finish().map_err(Error::into_kind),
        Err(ErrorKind::Unusable(UnusableError::WriterBroken))
    ));
}

#[test]
fn bad_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not.parquet");
    std::fs::write(&path, b"PAR1 this is not parquet PAR1").unwrap();
    let err = read_parquet(&path, &ParquetReadOptions::default()).unwrap_err();
    assert!(err.path().is_some(), "{err}");
    assert!(
        matches!(err.kind(), ErrorKind::Format(f) if f.file_format() == Some(FileFormat::Parquet)),
        "{err}"
    );
    assert!(err.to_string().contains("not.parquet"), "{err}");
    let missing = dir.path().join("missing.parquet");
    let err = read_parquet(&missing, &ParquetReadOptions::default()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err}");
    // A column named in the options that the file lacks.
    let ds = dataset(DType::Int32, 1, &[], 4, OffsetWidth::I32, 1);
    write_parquet(
        dir.path().join("ok.parquet"),
        [&ds],
        &ParquetWriteOptions::default(),
    )
    .unwrap();
    let err = read_parquet(
        dir.path().join("ok.parquet"),
        &ParquetReadOptions::default().with_element_shape("nope", vec![2]),
    )
    .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Argument(ArgumentError::NoSuchColumn(_))
        ),
        "{err}"
    );
}

#[test]
fn newer_format_versions_are_refused() {
    let ds = dataset(DType::Int32, 1, &[], 4, OffsetWidth::I32, 1);
    let schema = Arc::new(
        Schema::new(ds.schema().fields().clone())
            .with_metadata([(crate::format::KEY_FORMAT_VERSION.to_owned(), "9".to_owned())]),
    );
    let batch = ds.to_record_batch_with_schema(schema.clone());
    let mut w = ArrowWriter::try_new(Vec::new(), schema, None).unwrap();
    w.write(&batch).unwrap();
    let bytes = Bytes::from(w.into_inner().unwrap());
    let err = ParquetReader::try_new(bytes, &ParquetReadOptions::default()).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unsupported(UnsupportedError::UnsupportedVersion { .. })
        ),
        "{err}"
    );
}

/// Parquet written without the Arrow schema, as a writer that does not embed it would.
fn without_arrow_schema(ds: &Dataset) -> Bytes {
    let options = ArrowWriterOptions::new().with_skip_arrow_metadata(true);
    let mut w = ArrowWriter::try_new_with_options(Vec::new(), ds.schema(), options).unwrap();
    w.write(&ds.to_record_batch()).unwrap();
    Bytes::from(w.into_inner().unwrap())
}

#[test]
fn without_arrow_schema_elements_read_as_levels() {
    let ds = dataset(DType::Float32, 2, &[2, 3], 6, OffsetWidth::I64, 5);
    let bytes = without_arrow_schema(&ds);
    // Each dimension of the element is one more list level, of scalars.
    let plain = read_bytes(bytes.clone(), &ParquetReadOptions::default());
    let x = plain.columns()[0].tensor().unwrap();
    assert_eq!(x.num_levels(), 3);
    assert!(x.element_shape().is_empty());
    assert_eq!(widths(&plain), vec![OffsetWidth::I32; 3]);
    let original = ds.columns()[0].tensor().unwrap();
    assert_eq!(
        x.typed_values::<Float32Type>().unwrap(),
        original.typed_values::<Float32Type>().unwrap()
    );
    // Folding the innermost levels back gives the tensor.
    let folded = read_bytes(
        bytes.clone(),
        &ParquetReadOptions::default()
            .with_element_shape("x", vec![2, 3])
            .with_batch_size(4),
    );
    assert_eq!(folded.columns()[0].tensor().unwrap(), original);
    assert_eq!(folded.columns()[1], ds.columns()[1]);
    // The same options are harmless on a file that keeps its shapes.
    let kept = read_bytes(
        write_bytes([&ds], &ParquetWriteOptions::default()),
        &ParquetReadOptions::default().with_element_shape("x", vec![2, 3]),
    );
    assert_eq!(kept, ds);
    // A 0-level column folds to a plain tensor.
    let images = Dataset::try_new(vec![Column::new(
        "img",
        tensor(DType::UInt8, 0, &[2, 2], 3, OffsetWidth::I64, &mut Rng(1)),
    )])
    .unwrap();
    let folded = read_bytes(
        without_arrow_schema(&images),
        &ParquetReadOptions::default().with_element_shape("img", vec![2, 2]),
    );
    assert_eq!(folded, images);
}

#[test]
fn folding_checks_the_lengths() {
    let ds = dataset(DType::Float32, 1, &[3], 6, OffsetWidth::I64, 5);
    let bytes = without_arrow_schema(&ds);
    for shape in [vec![2], vec![2, 2], vec![1, 1, 4]] {
        let err = ParquetReader::try_new(
            bytes.clone(),
            &ParquetReadOptions::default().with_element_shape("x", shape.clone()),
        )
        .unwrap()
        .read_all()
        .unwrap_err();
        assert!(matches!(err.column(), Some((_, 0))), "{err}");
        assert!(
            matches!(err.kind(), ErrorKind::Data(DataError::ElementShape { .. })),
            "{shape:?}: {err}"
        );
    }
    // Shapes that contradict a file that keeps its shape.
    let err = ParquetReader::try_new(
        write_bytes([&ds], &ParquetWriteOptions::default()),
        &ParquetReadOptions::default().with_element_shape("x", vec![1, 3]),
    )
    .unwrap()
    .read_all()
    .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Data(DataError::ElementShape { .. })),
        "{err}"
    );
}

#[test]
fn file_writer_is_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.parquet");
    let a = dataset(DType::Float32, 2, &[4], 5, OffsetWidth::I64, 1);
    let b = dataset(DType::Float32, 2, &[4], 3, OffsetWidth::I64, 2);
    let entries = || std::fs::read_dir(dir.path()).unwrap().count();

    // Dropped before finish: no file, no leftovers.
    let mut w = ParquetFileWriter::create(&path, ParquetWriteOptions::default()).unwrap();
    w.write(&a).unwrap();
    assert_eq!(entries(), 1, "the temporary file lives next to the target");
    drop(w);
    assert!(!path.exists());
    assert_eq!(entries(), 0);

    // Finished: the target appears whole.
    write_parquet(&path, [&a], &ParquetWriteOptions::default()).unwrap();
    assert_eq!(
        read_parquet(&path, &ParquetReadOptions::default()).unwrap(),
        a
    );

    // A failed or abandoned rewrite leaves the old file as it was.
    let before = std::fs::read(&path).unwrap();
    let mut w = ParquetFileWriter::create(&path, ParquetWriteOptions::default()).unwrap();
    w.write(&b).unwrap();
    let other = dataset(DType::Int64, 1, &[], 2, OffsetWidth::I64, 3);
    assert!(w.write(&other).is_err());
    drop(w);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(
        write_parquet(
            &path,
            std::iter::empty::<Dataset>(),
            &ParquetWriteOptions::default()
        )
        .is_err()
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(entries(), 1);

    // A rewrite replaces it.
    write_parquet(&path, [&b], &ParquetWriteOptions::default()).unwrap();
    assert_eq!(
        read_parquet(&path, &ParquetReadOptions::default()).unwrap(),
        b
    );
    assert_eq!(entries(), 1);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_ne!(
            mode & 0o044,
            0,
            "readable beyond the owner as File::create makes it: {mode:o}"
        );
    }

    // A directory that does not exist.
    let err = ParquetFileWriter::create(
        dir.path().join("no/such/dir.parquet"),
        ParquetWriteOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.path().is_some() && matches!(err.kind(), ErrorKind::Io(_)),
        "{err}"
    );
}

#[test]
fn row_groups_follow_the_size_option() {
    let ds = dataset(DType::Float32, 1, &[16], 50, OffsetWidth::I64, 9);
    let count = |options: ParquetWriteOptions| {
        let bytes = write_bytes([&ds], &options);
        let builder =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        builder.metadata().num_row_groups()
    };
    assert_eq!(count(ParquetWriteOptions::default()), 1);
    assert_eq!(
        count(ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(10))),
        5
    );
    let by_bytes =
        count(ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Bytes(1024)));
    assert!(by_bytes > 3, "{by_bytes}");
}

#[test]
fn threads_write_the_same_file() {
    let parts: Vec<Dataset> = (0..5)
        .map(|i| dataset(DType::Float32, 2, &[8], 7 + i, OffsetWidth::I64, i as u64))
        .collect();
    for codec in CODECS {
        let options = ParquetWriteOptions::default()
            .with_compression(codec)
            .with_row_group_size(RowGroupSize::Rows(6));
        let serial = write_bytes(&parts, &options);
        for threads in [2, 3] {
            let parallel = write_bytes(&parts, &options.clone().with_threads(threads));
            assert_eq!(parallel, serial, "{codec:?}, {threads} threads");
        }
    }
    // By bytes: row groups of about the size asked for, rows in order.
    let options = ParquetWriteOptions::default()
        .with_row_group_size(RowGroupSize::Bytes(2048))
        .with_threads(2);
    let bytes = write_bytes(&parts, &options);
    let builder =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .unwrap();
    assert!(builder.metadata().num_row_groups() > 2);
    let back = read_bytes(bytes, &ParquetReadOptions::default());
    let mut start = 0;
    for p in &parts {
        assert_eq!(&back.slice_rows(start..start + p.num_rows()).unwrap(), p);
        start += p.num_rows();
    }
}

/// The repetition and definition levels documented in `format-spec-parquet.md`.
#[test]
fn levels_are_as_specified() {
    use arrow_array::types::Int32Type;
    use parquet::column::reader::get_typed_column_reader;
    use parquet::data_type::Int32Type as ParquetInt32;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    // Documents [[w0, w1], [w2]], [], [[]]; each word an int32[2].
    let t = LodTensor::from_lengths::<Int32Type>(
        &[vec![2, 0, 1], vec![2, 1, 0]],
        (0..6).collect(),
        vec![2],
    )
    .unwrap();
    let ds = Dataset::try_new(vec![Column::new("tokens", t)]).unwrap();
    let bytes = write_bytes([&ds], &ParquetWriteOptions::default());
    let reader = SerializedFileReader::new(bytes).unwrap();
    let leaf = reader.metadata().file_metadata().schema_descr().column(0);
    assert_eq!(leaf.path().string(), "tokens.list.item.list.item.list.item");
    assert_eq!((leaf.max_rep_level(), leaf.max_def_level()), (3, 7));
    let row_group = reader.get_row_group(0).unwrap();
    let mut column =
        get_typed_column_reader::<ParquetInt32>(row_group.get_column_reader(0).unwrap());
    let (mut def, mut rep, mut values) = (Vec::new(), Vec::new(), Vec::new());
    let (records, _, _) = column
        .read_records(10, Some(&mut def), Some(&mut rep), &mut values)
        .unwrap();
    assert_eq!(records, 3);
    assert_eq!(rep, [0, 3, 2, 3, 1, 3, 0, 0]);
    assert_eq!(def, [7, 7, 7, 7, 7, 7, 1, 3]);
    assert_eq!(values, [0, 1, 2, 3, 4, 5]);
}
