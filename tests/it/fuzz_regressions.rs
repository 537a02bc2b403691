//! Inputs the fuzzers (`fuzz/`) found to crash the readers, minimized, each kept with the
//! fault it must now give. The files are under `tests/data/fuzz/`, named after the target
//! and the fault.

use lodtensor::{ErrorKind, FormatError};
use std::path::{Path, PathBuf};

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
        matches!(err.kind(), ErrorKind::Format(FormatError::InvalidFile { reason, .. }) if reason.contains("overflow")),
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
        matches!(err.kind(), ErrorKind::Format(FormatError::InvalidFile { reason, .. }) if reason.contains("column chunk")),
        "{err}"
    );
    // Through a file too, whose reader would allocate the declared size.
    let err = ParquetReader::open(
        data("parquet_read-negative-chunk-offset.parquet"),
        &ParquetReadOptions::default(),
    )
    .unwrap_err();
    assert!(err.path().is_some(), "{err}");
    assert!(err.to_string().contains("at -"), "{err}");
}

/// Opens `name` from memory with batches of 7 rows, as the `parquet_read` target does.
#[cfg(feature = "parquet")]
fn open_parquet(name: &str) -> lodtensor::Result<lodtensor::io::parquet::ParquetReader> {
    open_parquet_with(name, true)
}

/// As [`open_parquet`], with the direct decoder on or off (the general reader).
#[cfg(feature = "parquet")]
fn open_parquet_with(
    name: &str,
    direct: bool,
) -> lodtensor::Result<lodtensor::io::parquet::ParquetReader> {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    let bytes = std::fs::read(data(name)).unwrap();
    let options = ParquetReadOptions::default()
        .with_batch_size(7)
        .with_direct(direct);
    ParquetReader::try_new(bytes::Bytes::from(bytes), &options)
}

/// The direct decoder's error on the one batch of `name`: a typed invalid-file error whose
/// reason ends with `fault`, then nothing more.
#[cfg(feature = "parquet")]
fn direct_refuses(name: &str, fault: &str) {
    let results: Vec<_> = open_parquet(name).unwrap().take(1000).collect();
    assert_eq!(results.len(), 1, "{name}");
    let err = results[0].as_ref().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Format(FormatError::InvalidFile { reason, .. }) if reason.ends_with(fault)),
        "{name}: {err}"
    );
}

/// A data page header with an unknown field that is a list of 2³¹ − 1 elements (7 bytes;
/// the seed `levels0_float32.parquet` with bytes 11–18 rewritten): of booleans, which the
/// `parquet` crate's Thrift reader skips by counting without reading a byte
/// (`skip_till_depth`), over a minute in a debug build; or of doubles, which read nothing
/// once the input is exhausted (`skip_bytes` does not fail at its end), over 25 s. The
/// cause of the fuzzer's slow inputs. The page headers are now read first and the list
/// refused.
#[cfg(feature = "parquet")]
#[test]
fn parquet_read_page_header_long_lists() {
    for name in [
        "parquet_read-page-header-bool-list.parquet",
        "parquet_read-page-header-double-list.parquet",
    ] {
        let start = std::time::Instant::now();
        let err = open_parquet(name).unwrap_err();
        assert!(
            start.elapsed() < std::time::Duration::from_secs(1),
            "{name}: {:?}",
            start.elapsed()
        );
        assert_eq!(
            err.to_string(),
            "invalid Parquet file: row group 0, column chunk 0 (\"x\"): page 0 at byte 4: page \
             header: a list of 2147483647 elements, with 37 bytes left in the column chunk",
            "{name}"
        );
    }
}

/// Pages the `parquet` crate (60.1) panicked on while decoding them, each inside a chunk
/// that lies in the file; their page headers are now refused when the file is opened:
/// - a dictionary-encoded data page in a chunk without a dictionary page ("Decoder for dict
///   should have been set", `column/reader/decoder.rs`);
/// - a page header whose `crc` (field 4) is typed boolean, which the crate reads as an i32
///   anyway, reading the header out of step (here it ended in definition levels past their
///   buffer: "offset + len out of bounds", arrow-buffer's `bit_chunk_iterator.rs`);
/// - a data page header without its `DataPageHeader` (`Option::unwrap`, `column/page.rs`;
///   here field 6 is typed set, not struct).
#[cfg(feature = "parquet")]
#[test]
fn parquet_read_page_headers_that_made_the_decoder_panic() {
    for (name, fault) in [
        (
            "parquet_read-dictionary-decoder-unset.parquet",
            "page 0 at byte 4: a data page in dictionary encoding 8, and no dictionary page",
        ),
        (
            "parquet_read-definition-levels-out-of-bounds.parquet",
            "page 1 at byte 87: page header: page header field 4 has Thrift type 1, not 5",
        ),
        (
            "parquet_read-page-header-without-data-header.parquet",
            "page 1 at byte 41: page header: page header field 6 has Thrift type 10, not 12",
        ),
    ] {
        let err = open_parquet(name).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Format(FormatError::InvalidFile { reason, .. }) if reason.ends_with(fault)),
            "{name}: {err}"
        );
    }
}

/// Definition levels that run past their buffer in a page whose header is sound (the seed
/// `levels0_float32.parquet` with byte 27, in the levels, set to 0xFF). The `parquet` crate
/// panics while decoding it ("offset + len out of bounds", arrow-buffer's
/// `bit_chunk_iterator.rs`); the reader turns the panic into an error and stops. The direct
/// decoder finds the levels truncated.
#[cfg(feature = "parquet")]
#[test]
fn parquet_read_page_decoder_panic_becomes_an_error() {
    let name = "parquet_read-definition-levels-past-buffer.parquet";
    direct_refuses(name, "page 0: the runs end at byte 2, inside a run");
    let reader = open_parquet_with(name, false).expect("the footer and page headers are valid");
    let results: Vec<_> = reader.collect();
    assert_eq!(results.len(), 1);
    let err = results[0].as_ref().unwrap_err();
    assert!(
        err.to_string().starts_with(
            "invalid Parquet file: batch 0, from row 0: malformed page (offset + len out of bounds)"
        ),
        "{err}"
    );
}

/// The same seed with byte 27 set to 0: too few definition levels. The `parquet` crate's
/// reader returned that error for every later batch too, so collecting the reader's results
/// never ended; the reader now stops after an error. The direct decoder refuses the empty
/// run.
#[cfg(feature = "parquet")]
#[test]
fn parquet_read_stops_after_an_error() {
    let name = "parquet_read-definition-levels-missing.parquet";
    direct_refuses(name, "page 0: an RLE run of 0 values at byte 1");
    let reader = open_parquet_with(name, false).expect("the footer and page headers are valid");
    let results: Vec<_> = reader.take(1000).collect();
    assert_eq!(results.len(), 1);
    let err = results[0].as_ref().unwrap_err();
    assert!(
        err.to_string().contains("insufficient definition levels"),
        "{err}"
    );
}

/// The `pending_commit` target's input (an empty dataset manifest, a pending manifest, its
/// staged shards, split at `\0SHARD\0`) whose commit failed with an error of two lines: a
/// staged shard's text carried line breaks into the message. Errors are one line now.
#[test]
fn pending_commit_error_is_one_line() {
    let bytes = std::fs::read(data("pending_commit_two_line_breaks.bin")).unwrap();
    let marker = b"\0SHARD\0";
    let mut parts = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some(at) = rest.windows(marker.len()).position(|w| w == marker) {
        parts.push(&rest[..at]);
        rest = &rest[at + marker.len()..];
    }
    parts.push(rest);
    let dir = tempfile::tempdir().unwrap();
    let staged = dir.path().join("_pending/w1.pending");
    std::fs::create_dir_all(&staged).unwrap();
    if !parts[0].is_empty() {
        std::fs::write(dir.path().join("_lodtensor.json"), parts[0]).unwrap();
    }
    std::fs::write(dir.path().join("_lodtensor.pending.w1.json"), parts[1]).unwrap();
    for (i, shard) in parts.iter().enumerate().skip(2).take(8) {
        std::fs::write(staged.join(format!("w1-{:05}.arrow", i - 2)), shard).unwrap();
    }
    let err = lodtensor::shards::commit(dir.path()).unwrap_err();
    let text = err.to_string();
    assert!(!text.contains('\n') && text.len() <= 1000, "{text:?}");
}
