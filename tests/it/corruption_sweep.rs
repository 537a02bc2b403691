//! Every truncation and every single-byte change (0x00, 0xFF, +1) of small valid `.arrow`
//! files with 0 to 3 levels, and of small `.parquet` files, gives a typed error or data that
//! reads in full: never a panic or a hang. (`.pdtensor` files are swept in `tests/it/paddle.rs`.)

use arrow_array::types::Int32Type;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Column, Dataset, Lod, LodTensor, Values};

/// A one-column dataset of `levels` levels over int32[2] elements, with an empty sequence.
fn dataset(levels: usize) -> Dataset {
    let all = [
        vec![2, 0, 1],
        vec![1, 2, 1],
        vec![2, 1, 0, 1],
        vec![1, 2, 0, 3],
    ];
    let lengths = &all[4 - levels..];
    let elements = lengths.last().map_or(3, |l| l.iter().sum());
    let lod = Lod::try_from_lengths(lengths).unwrap();
    let values =
        Values::from_vec::<Int32Type>((0..2 * elements as i32).collect(), vec![2]).unwrap();
    Dataset::try_new(vec![Column::new(
        "x",
        LodTensor::try_new(lod, values).unwrap(),
    )])
    .unwrap()
}

/// Every variant of `good`: each truncation, and each byte set to 0x00, 0xFF or +1.
fn variants(good: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    let cuts = (0..good.len()).map(|n| good[..n].to_vec());
    let changes = (0..good.len()).flat_map(move |at| {
        [0x00u8, 0xff, good[at].wrapping_add(1)]
            .into_iter()
            .map(move |b| {
                let mut bad = good.to_vec();
                bad[at] = b;
                bad
            })
    });
    cuts.chain(changes)
}

/// Reads every row and value of `t`: its offsets, each row's slice and values.
fn read_tensor(t: &LodTensor) {
    let _ = t.lod().absolute_offsets();
    for row in 0..t.num_rows() {
        let s = t.slice_rows(row..row + 1).unwrap();
        let items = s.values().items();
        let _ = items.to_data().get_slice_memory_size();
    }
}

/// Refuses an error of a corrupt file that is not about the file: whichever dependency
/// noticed the fault, it is an invalid file (or bad data in it, or a form this crate does
/// not read), never an internal error or an I/O fault.
fn check_about_the_file(e: &lodtensor::Error) {
    use lodtensor::ErrorKind;
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Format(_) | ErrorKind::Data(_) | ErrorKind::Unsupported(_)
        ),
        "{e:?}"
    );
}

/// Writes `dataset`, then opens every variant of its file: the ones that open are read in
/// full (a changed byte may leave a valid file with another column name, dtype or kind:
/// whatever columns it has). Returns how many opened.
fn sweep_arrow(dataset: &Dataset, options: WriteOptions) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("good.arrow");
    let mut w = DatasetWriter::create(&path, options).unwrap();
    w.write(dataset).unwrap();
    w.finish().unwrap();
    let good = std::fs::read(&path).unwrap();
    let bad_path = dir.path().join("bad.arrow");
    let mut opened = 0;
    for bad in variants(&good) {
        std::fs::write(&bad_path, &bad).unwrap();
        let opening = MappedDataset::open(&bad_path);
        if let Err(e) = &opening {
            check_about_the_file(e);
        }
        if let Ok(file) = opening {
            for column in file.batches().iter().flat_map(|b| b.columns()) {
                match column.as_tensor() {
                    Some(t) => read_tensor(t),
                    // Arrow's Debug text reads every value.
                    None => drop(format!("{:?}", column.to_arrow())),
                }
            }
            opened += 1;
        }
    }
    opened
}

#[test]
fn arrow_files_of_0_to_3_levels() {
    for levels in 0..=3 {
        let opened = sweep_arrow(&dataset(levels), WriteOptions::default());
        assert!(opened > 0, "{levels} levels: no variant opened at all");
    }
}

/// Compressed files (zstd and lz4 frames, whose lengths, checksums and uncompressed-length
/// prefixes the sweep changes and cuts): a typed error or a file that reads in full.
#[cfg(feature = "compression")]
#[test]
fn compressed_arrow_files() {
    use lodtensor::IpcCompression;
    for codec in [IpcCompression::Zstd, IpcCompression::Lz4] {
        for levels in [0, 2] {
            let options = WriteOptions::default().with_compression(codec);
            let opened = sweep_arrow(&dataset(levels), options);
            assert!(opened > 0, "{codec:?}, {levels} levels: no variant opened");
        }
    }
}

/// Parquet files of 2 levels (snappy, plain) and 3 levels (zstd, dictionary), read by the
/// direct decoder and by the general reader: the `parquet` crate's page reader trusted page
/// headers that a single changed byte can make it spin on, so every variant must also
/// finish in well under a second.
#[cfg(feature = "parquet")]
#[test]
fn parquet_files() {
    use lodtensor::io::parquet::{
        Compression, ParquetReadOptions, ParquetReader, ParquetWriteOptions, ParquetWriter,
    };
    use std::time::{Duration, Instant};
    let plain = ParquetWriteOptions::default();
    let dictionary = ParquetWriteOptions::default()
        .with_compression(Compression::Zstd(3))
        .with_dictionary(true);
    for (levels, options) in [(2, plain), (3, dictionary)] {
        let mut writer = ParquetWriter::new(Vec::new(), options);
        writer.write(&dataset(levels)).unwrap();
        let good = writer.finish().unwrap();
        // The direct decoder (the default for this layout), then the general reader.
        for direct in [true, false] {
            let read_options = ParquetReadOptions::default()
                .with_batch_size(2)
                .with_direct(direct);
            let mut read = 0;
            for (case, bad) in variants(&good).enumerate() {
                let start = Instant::now();
                let opening = ParquetReader::try_new(bytes::Bytes::from(bad), &read_options);
                if let Err(e) = &opening {
                    check_about_the_file(e);
                }
                if let Ok(reader) = opening {
                    let mut complete = true;
                    for dataset in reader {
                        let dataset = match dataset {
                            Ok(dataset) => dataset,
                            Err(e) => {
                                check_about_the_file(&e);
                                complete = false;
                                break;
                            }
                        };
                        for column in dataset.columns() {
                            read_tensor(column.tensor().unwrap());
                        }
                    }
                    read += usize::from(complete);
                }
                let took = start.elapsed();
                assert!(
                    took < Duration::from_secs(5),
                    "{levels} levels, variant {case}: {took:?}"
                );
            }
            assert!(read > 0, "{levels} levels: no variant read at all");
        }
    }
}

/// A file with side columns beside a tensor (strings with nulls, a dictionary, a struct,
/// string views, a list marked side): every variant gives a typed error or a file whose
/// every value can be read (Arrow's validation of side columns, after the layout walk).
#[test]
fn arrow_files_with_side_columns() {
    use arrow_array::builder::{ListBuilder, StringDictionaryBuilder};
    use arrow_array::{ArrayRef, Int64Array, StringArray, StringViewArray, StructArray};
    use arrow_schema::{DataType, Field};
    use std::sync::Arc;
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    let mut list = ListBuilder::new(arrow_array::builder::Float32Builder::new());
    for r in 0..4 {
        dict.append_value(["en", "fr"][r % 2]);
        list.values().append_option((r != 1).then_some(r as f32));
        list.append(r != 2);
    }
    let meta = StructArray::from(vec![(
        Arc::new(Field::new("n", DataType::Int64, true)),
        Arc::new(Int64Array::from(vec![Some(1), None, Some(3), None])) as ArrayRef,
    )]);
    let side = |name: &str, array: ArrayRef| Column::side(name, array).unwrap();
    let mut columns = dataset(1).columns().to_vec();
    columns.extend([
        side(
            "id",
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some("ccc"),
                Some(""),
            ])),
        ),
        side("lang", Arc::new(dict.finish())),
        side("meta", Arc::new(meta)),
        side(
            "view",
            Arc::new(StringViewArray::from(vec![
                "x",
                "a longer string value",
                "z",
                "",
            ])),
        ),
        side("scores", Arc::new(list.finish())),
    ]);
    let opened = sweep_arrow(&Dataset::try_new(columns).unwrap(), WriteOptions::default());
    assert!(opened > 0, "no variant opened at all");
}
