//! Compressed Arrow IPC files (zstd, lz4 frame): written, opened and read as uncompressed
//! ones, with a lying uncompressed length refused before anything is allocated.
#![cfg(feature = "compression")]

use arrow_array::types::Int32Type;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Column, Dataset, ErrorKind, FormatError, IpcCompression, LodTensor};

/// 40 rows of 2 levels over int32 token ids (repetitive, so they compress).
fn tokens() -> Dataset {
    let rows: Vec<i32> = (0..40).map(|r| 1 + r % 3).collect();
    let words: Vec<i32> = (0..rows.iter().sum::<i32>()).map(|w| 1 + w % 5).collect();
    let n: i32 = words.iter().sum();
    let t = LodTensor::from_lengths::<Int32Type>(
        &[
            rows.iter().map(|&r| r as usize).collect(),
            words.iter().map(|&w| w as usize).collect(),
        ],
        (0..n).map(|i| i % 7).collect(),
        vec![],
    )
    .unwrap();
    Dataset::try_new(vec![Column::new("ids", t)]).unwrap()
}

fn write(path: &std::path::Path, ds: &Dataset, codec: IpcCompression) -> u64 {
    let options = WriteOptions::default()
        .with_compression(codec)
        .with_batch_bytes(400);
    let mut w = DatasetWriter::create(path, options).unwrap();
    w.write(ds).unwrap();
    w.finish().unwrap().bytes
}

#[test]
fn compressed_files_read_as_uncompressed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ds = tokens();
    let plain = dir.path().join("plain.arrow");
    let plain_bytes = write(&plain, &ds, IpcCompression::None);
    let plain = MappedDataset::open(&plain).unwrap();
    assert!(!plain.is_compressed());
    for codec in [IpcCompression::Zstd, IpcCompression::Lz4] {
        let path = dir.path().join(format!("{codec:?}.arrow"));
        let bytes = write(&path, &ds, codec);
        assert!(bytes < plain_bytes, "{codec:?}: {bytes} >= {plain_bytes}");
        let file = MappedDataset::open(&path).unwrap();
        assert!(file.is_compressed());
        assert!(file.batches().len() > 1);
        assert_eq!(file.batches(), plain.batches());
        for row in 0..ds.num_rows() {
            assert_eq!(
                file.sample(row).unwrap(),
                ds.slice_rows(row..row + 1).unwrap()
            );
        }
        assert_eq!(file.rows(3..31).unwrap(), plain.rows(3..31).unwrap());
        for index in 0..10 {
            assert_eq!(
                file.slice_sequence("ids", 1, index).unwrap(),
                plain.slice_sequence("ids", 1, index).unwrap()
            );
        }
        let columns = MappedDataset::open_columns(&path, &["ids"]).unwrap();
        assert_eq!(columns.num_rows(), ds.num_rows());
    }
}

/// Replaces the first uncompressed-length prefix of `file` equal to `from` (8 bytes followed
/// by a zstd or lz4 frame's magic number) with `to`.
fn replace(file: &mut [u8], from: i64, to: i64) {
    let from = from.to_le_bytes();
    let magics = [[0x28, 0xb5, 0x2f, 0xfd], [0x04, 0x22, 0x4d, 0x18]];
    let at = (file.windows(12))
        .position(|w| w[..8] == from && magics.iter().any(|m| w[8..] == m[..]))
        .expect("the length prefix");
    file[at..at + 8].copy_from_slice(&to.to_le_bytes());
}

/// A buffer's uncompressed-length prefix claiming a terabyte (a decompression bomb), or a
/// few bytes more or less than its frame holds: a Format error naming the file and batch,
/// never an allocation of that size or a panic.
#[test]
fn lying_uncompressed_lengths_are_format_errors() {
    let dir = tempfile::tempdir().unwrap();
    // One batch whose values buffer holds 1000 int32 zeros: 4000 bytes uncompressed.
    let t = LodTensor::from_lengths::<Int32Type>(&[vec![1000]], vec![0; 1000], vec![]).unwrap();
    let ds = Dataset::try_new(vec![Column::new("ids", t)]).unwrap();
    for codec in [IpcCompression::Zstd, IpcCompression::Lz4] {
        let path = dir.path().join("x.arrow");
        write(&path, &ds, codec);
        let good = std::fs::read(&path).unwrap();
        for lie in [1 << 40, 4008, 3992, -7] {
            let err = refused_with_size(&path, &good, lie);
            assert!(err.path().is_some_and(|p| p.ends_with("x.arrow")), "{err}");
            assert!(
                err.to_string().contains("batch 0"),
                "{codec:?}, {lie}: {err}"
            );
        }
    }
}

/// The loader over a compressed file gives the batches it gives over the plain file.
#[test]
fn the_loader_reads_a_compressed_file_as_a_plain_one() {
    use lodtensor::{Loader, rng::SplitMix64, synthetic::Documents};
    let dir = tempfile::tempdir().unwrap();
    let docs = Documents {
        dim: 4,
        ..Documents::default()
    }
    .generate(&mut SplitMix64::new(3), 30)
    .unwrap();
    let batches = |codec: IpcCompression| {
        let path = dir.path().join(format!("{codec:?}.arrow"));
        write(&path, &docs, codec);
        let file = MappedDataset::open(&path).unwrap();
        let mut loader = Loader::builder(&file)
            .with_token_budget(512)
            .with_shuffle(7)
            .build()
            .unwrap();
        let mut out = Vec::new();
        while let Some(batch) = loader.next_batch().unwrap() {
            out.push(batch.data().clone());
        }
        out
    };
    let plain = batches(IpcCompression::None);
    assert!(plain.len() > 1);
    assert_eq!(batches(IpcCompression::Zstd), plain);
    assert_eq!(batches(IpcCompression::Lz4), plain);
}

/// A dictionary batch (of a dictionary-encoded side column) whose compressed buffer claims a
/// terabyte: a Format error naming the dictionary, before anything is allocated.
#[test]
fn a_lying_dictionary_batch_is_a_format_error() {
    use arrow_array::builder::StringDictionaryBuilder;
    let dir = tempfile::tempdir().unwrap();
    let t = LodTensor::from_lengths::<Int32Type>(&[vec![1, 1]], vec![1, 2], vec![]).unwrap();
    let mut b = StringDictionaryBuilder::<Int32Type>::new();
    b.append_value("a".repeat(4000));
    b.append_value("a".repeat(4000));
    let side = Column::side("lang", std::sync::Arc::new(b.finish())).unwrap();
    let ds = Dataset::try_new(vec![Column::new("ids", t), side]).unwrap();
    for codec in [IpcCompression::Zstd, IpcCompression::Lz4] {
        let path = dir.path().join("x.arrow");
        write(&path, &ds, codec);
        let good = std::fs::read(&path).unwrap();
        let opened = MappedDataset::open(&path).unwrap();
        assert_eq!(opened.num_rows(), 2);
        let err = refused_with_size(&path, &good, 1 << 40);
        assert!(err.to_string().contains("dictionary 0"), "{codec:?}: {err}");
    }
}

/// `good` (a compressed file's bytes) written to `path` with its buffer size 4000 replaced
/// by `lie`: the error opening it, which says the file is invalid.
fn refused_with_size(path: &std::path::Path, good: &[u8], lie: i64) -> lodtensor::Error {
    let mut bad = good.to_vec();
    replace(&mut bad, 4000, lie);
    std::fs::write(path, &bad).unwrap();
    let err = MappedDataset::open(path).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Format(FormatError::InvalidFile { .. })
        ),
        "{lie}: {err:?}"
    );
    err
}

/// Data from random to all zeros: whatever its compressibility, what the writer writes its
/// reader opens (a batch whose compressed buffers would declare more than 1024 times its
/// body is written uncompressed) and reads back exactly, through pyarrow's layout too.
#[test]
fn the_writer_writes_nothing_its_reader_refuses_at_any_compressibility() {
    use lodtensor::rng::SplitMix64;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(3);
    for zeros in [0.0, 0.5, 0.9, 0.999, 1.0] {
        let values: Vec<i32> = (0..1 << 20)
            .map(
                |_| match (rng.next_u64() % 10_000) as f64 / 10_000.0 < zeros {
                    true => 0,
                    false => rng.next_u64() as i32,
                },
            )
            .collect();
        let t = LodTensor::from_lengths::<Int32Type>(&[vec![1 << 10; 1 << 10]], values, vec![])
            .unwrap();
        let ds = Dataset::try_new(vec![Column::new("x", t)]).unwrap();
        for codec in [IpcCompression::Zstd, IpcCompression::Lz4] {
            let path = dir.path().join(format!("{zeros}-{codec:?}.arrow"));
            let options = WriteOptions::default().with_compression(codec);
            let mut w = DatasetWriter::create(&path, options).unwrap();
            w.write(&ds).unwrap();
            w.finish().unwrap();
            let file = MappedDataset::open(&path)
                .unwrap_or_else(|e| panic!("{zeros} zeros, {codec:?}: {e}"));
            assert_eq!(
                file.batches(),
                std::slice::from_ref(&ds),
                "{zeros} zeros, {codec:?}"
            );
        }
    }
}
