//! Inputs the fuzzers (`fuzz/`) found to crash the readers, minimized, each kept with the
//! fault it must now give. The files are under `tests/data/fuzz/`, named after the target
//! and the fault.

use std::path::{Path, PathBuf};

use lodtensor::Error;
use lodtensor::io::ipc_reader::MappedDataset;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(name)
}

/// A list node declaring 2^61 - 1 sequences: the offsets' byte count overflowed while being
/// checked against the buffer (a panic with overflow checks, a wrapped count without).
#[test]
fn ipc_open_list_length_overflow() {
    let err = MappedDataset::open(data("ipc_open-list-length-overflow.arrow")).unwrap_err();
    assert!(
        matches!(err.root(), Error::InvalidFile(reason) if reason.contains("overflow")),
        "{err}"
    );
}

/// A column chunk whose footer entry has a negative offset: the `parquet` crate asserted
/// on it while reading the first batch; the reader now refuses the file when it opens it.
#[cfg(feature = "parquet")]
#[test]
fn parquet_read_negative_chunk_offset() {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    let bytes = std::fs::read(data("parquet_read-negative-chunk-offset.parquet")).unwrap();
    let err = ParquetReader::try_new(bytes::Bytes::from(bytes), &ParquetReadOptions::default())
        .unwrap_err();
    assert!(
        matches!(err.root(), Error::InvalidFile(reason) if reason.contains("column chunk")),
        "{err}"
    );
    // Through a file too, whose reader would allocate the declared size.
    let err = ParquetReader::open(
        data("parquet_read-negative-chunk-offset.parquet"),
        &ParquetReadOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InFile { .. }), "{err}");
    assert!(err.to_string().contains("at -"), "{err}");
}

/// Pages the `parquet` crate (60.1) panics on while decoding them, each inside a chunk
/// that lies in the file, so the footer checks cannot see them; the faults are in the
/// dependency's page reader:
/// - a dictionary-encoded data page in a chunk without a dictionary page ("Decoder for dict
///   should have been set", `column/reader/decoder.rs`);
/// - definition levels running past their buffer ("offset + len out of bounds",
///   arrow-buffer's `bit_chunk_iterator.rs`, from `read_def_levels`);
/// - a data page header without its `DataPageHeader` (`Option::unwrap`, `column/page.rs`).
///
/// Run with `--ignored` to check a newer `parquet`.
#[cfg(feature = "parquet")]
#[test]
fn parquet_read_page_decoder_panics_become_errors() {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    // The parquet crate panics on these pages; the reader turns each panic into an error.
    for name in [
        "parquet_read-dictionary-decoder-unset.parquet",
        "parquet_read-definition-levels-out-of-bounds.parquet",
        "parquet_read-page-header-without-data-header.parquet",
    ] {
        let bytes = std::fs::read(data(name)).unwrap();
        let options = ParquetReadOptions::default().with_batch_size(7);
        let reader = ParquetReader::try_new(bytes::Bytes::from(bytes), &options)
            .unwrap_or_else(|e| panic!("{name}: the footer is valid, got {e}"));
        let results: Vec<_> = reader.collect();
        assert!(
            results.last().is_some_and(|r| r.is_err()),
            "{name}: no error reported"
        );
    }
}
