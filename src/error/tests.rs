//! One test per kind, and the context and messages every kind shares.

use super::*;

#[test]
fn error_is_small() {
    assert_eq!(size_of::<Error>(), size_of::<usize>());
    assert_eq!(size_of::<Result<()>>(), size_of::<usize>());
}

#[test]
fn context_reads_outside_in() {
    let e = Error::from(DataError::DecreasingOffset {
        level: 1,
        index: 7,
        offset: 12,
        previous: 15,
    })
    .in_column("tokens", 3)
    .in_file("data.arrow");
    assert_eq!(
        e.to_string(),
        "data.arrow: column \"tokens\", batch 3: level 1: offset at index 7 (12) is less than the previous offset (15)"
    );
    assert!(matches!(
        e.kind(),
        ErrorKind::Data(DataError::DecreasingOffset { index: 7, .. })
    ));
    assert_eq!(e.path(), Some(Path::new("data.arrow")));
    assert_eq!(e.column(), Some(("tokens", 3)));
}

#[test]
fn context_is_attached_once() {
    let e = Error::invalid(FileFormat::Ipc, "short")
        .in_column("a", 1)
        .in_column("b", 2)
        .in_file("inner.arrow")
        .in_file("outer.arrow");
    assert_eq!(
        e.to_string(),
        "inner.arrow: column \"a\", batch 1: invalid Arrow IPC file: short"
    );
    assert_eq!(e.with_batch(5).column(), Some(("a", 5)));
}

#[test]
fn counts_read_as_plain_english() {
    let nulls = |count| {
        Error::from(DataError::Nulls {
            what: "values".to_owned(),
            count,
        })
        .to_string()
    };
    assert_eq!(
        nulls(1),
        "values contain 1 null entry; LoD tensors have no nulls"
    );
    assert_eq!(
        nulls(2),
        "values contain 2 null entries; LoD tensors have no nulls"
    );
    let batch = Error::from(ArgumentError::BatchOutOfRange {
        epoch: 0,
        batch: 3,
        batches: 1,
    });
    assert_eq!(
        batch.to_string(),
        "epoch 0: batch 3 does not exist (the epoch has 1 batch)"
    );
    let level = Error::from(ArgumentError::LevelOutOfBounds {
        level: 1,
        levels: 1,
    });
    assert_eq!(
        level.to_string(),
        "level 1 does not exist (the LoD has 1 level)"
    );
    let records = Error::from(ArgumentError::PaddleRecordCount {
        found: 1,
        expected: 2,
    });
    assert_eq!(
        records.to_string(),
        "Paddle file holds 1 record, 2 names were given"
    );
}

#[test]
fn data_kind() {
    let e = Error::from(DataError::EmptyLevel { level: 2 });
    assert!(matches!(
        e.kind(),
        ErrorKind::Data(DataError::EmptyLevel { level: 2 })
    ));
}

#[test]
fn format_kind_names_the_format() {
    for (format, message) in [
        (FileFormat::Ipc, "invalid Arrow IPC file: x"),
        (FileFormat::Parquet, "invalid Parquet file: x"),
        (FileFormat::Paddle, "invalid Paddle file: x"),
        (FileFormat::Manifest, "invalid sharded dataset file: x"),
        (FileFormat::Unknown, "invalid file: x"),
    ] {
        let e = Error::invalid(format, "x");
        assert_eq!(e.to_string(), message);
        let ErrorKind::Format(fault) = e.kind() else {
            panic!("{e:?}")
        };
        assert_eq!(fault.file_format(), Some(format));
    }
    #[allow(deprecated)]
    let old = Error::invalid_file("x");
    assert!(matches!(
        old.kind(),
        ErrorKind::Format(FormatError::InvalidFile {
            format: FileFormat::Unknown,
            ..
        })
    ));
    let paddle = FormatError::PaddleTrailingBytes {
        offset: 8,
        count: 1,
    };
    assert_eq!(paddle.file_format(), Some(FileFormat::Paddle));
    let manifest = FormatError::Manifest {
        field: "rows".into(),
        reason: "x".into(),
    };
    assert_eq!(manifest.file_format(), Some(FileFormat::Manifest));
}

#[test]
fn a_dependency_failing_on_a_file_is_an_invalid_file() {
    let e = Error::decoding(FileFormat::Ipc)(ArrowError::ParseError("bad flatbuffer".into()));
    assert!(matches!(
        e.kind(),
        ErrorKind::Format(FormatError::InvalidFile {
            format: FileFormat::Ipc,
            ..
        })
    ));
    assert_eq!(
        e.to_string(),
        "invalid Arrow IPC file: Parser error: bad flatbuffer"
    );
    // Arrow's name for an error it got from Parquet is left out.
    let e = Error::decoding(FileFormat::Parquet)(ArrowError::ParquetError("bad page".into()));
    assert_eq!(e.to_string(), "invalid Parquet file: bad page");
    // A panic in a dependency decoding a file stays an invalid file.
    let e = catch_panic::<()>(
        || panic!("offset + len out of bounds"),
        |what| Error::invalid(FileFormat::Parquet, format!("malformed page ({what})")),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid Parquet file: malformed page (offset + len out of bounds)"
    );
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_failures_are_sorted_too() {
    use parquet::errors::ParquetError;
    let e = Error::decoding(FileFormat::Parquet)(ParquetError::General("bad footer".into()));
    assert_eq!(e.to_string(), "invalid Parquet file: bad footer");
    let io = std::io::Error::from_raw_os_error(28); // ENOSPC
    let e = Error::decoding(FileFormat::Parquet)(ParquetError::External(Box::new(io)));
    assert!(matches!(e.kind(), ErrorKind::Io(io) if io.raw_os_error() == Some(28)));
    // A decompressor's verdict on the bytes comes as an I/O error with no OS code.
    let zstd = std::io::Error::other("Unknown frame descriptor");
    let e = Error::decoding(FileFormat::Parquet)(ParquetError::External(Box::new(zstd)));
    assert_eq!(
        e.to_string(),
        "invalid Parquet file: Unknown frame descriptor"
    );
    let e = Error::from(ParquetError::NYI("a thing".into()));
    assert!(matches!(e.kind(), ErrorKind::Internal(_)), "{e}");
}

#[test]
fn argument_kind() {
    let e = Error::invalid_argument("split", "parts", 0, "at least 1");
    assert!(matches!(
        e.kind(),
        ErrorKind::Argument(ArgumentError::InvalidArgument { name: "parts", .. })
    ));
}

#[test]
fn unsupported_kind() {
    let e = Error::from(UnsupportedError::UnknownDType("bfloat16".into()));
    assert!(matches!(
        e.kind(),
        ErrorKind::Unsupported(UnsupportedError::UnknownDType(_))
    ));
}

#[test]
fn unusable_kind() {
    let e = Error::from(UnusableError::WriterBroken);
    assert!(matches!(
        e.kind(),
        ErrorKind::Unusable(UnusableError::WriterBroken)
    ));
}

#[test]
fn io_kind_also_through_arrow() {
    let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
    assert!(matches!(Error::from(io()).kind(), ErrorKind::Io(_)));
    assert!(matches!(
        Error::from(ArrowError::from(io())).kind(),
        ErrorKind::Io(_)
    ));
    let external = ArrowError::ExternalError(Box::new(io()));
    assert!(matches!(Error::from(external).kind(), ErrorKind::Io(_)));
    // The crate's own error, carried through Arrow (a C stream of batches), comes back whole.
    let ours = Error::from(DataError::EmptyLevel { level: 1 }).in_file("a.arrow");
    let back = Error::from(ArrowError::ExternalError(Box::new(ours)));
    assert!(matches!(
        back.kind(),
        ErrorKind::Data(DataError::EmptyLevel { level: 1 })
    ));
    assert_eq!(back.path(), Some(Path::new("a.arrow")));
}

#[test]
fn internal_kind_is_located_where_it_was_found() {
    let line = line!() + 1;
    let e = Error::internal("offsets out of order");
    let ErrorKind::Internal(InternalError {
        message, location, ..
    }) = e.kind()
    else {
        panic!("{e:?}")
    };
    assert_eq!(message, "offsets out of order");
    assert_eq!((location.file(), location.line()), (file!(), line));
    assert!(
        e.to_string()
            .starts_with(&format!("internal error at {}:{line}:", file!()))
    );
    assert!(
        e.to_string()
            .ends_with("(a bug in lodtensor: please report it)")
    );
    // `?` on an Arrow failure of the crate's own making is located at the `?`.
    fn concat() -> Result<()> {
        Err(ArrowError::ComputeError("no arrays".into()))?
    }
    let line = line!() - 2;
    let e = concat().unwrap_err();
    let ErrorKind::Internal(internal) = e.kind() else {
        panic!("{e:?}")
    };
    assert_eq!(internal.location.line(), line);
}

#[test]
fn messages_are_bounded_whatever_they_echo() {
    // Any error: a 5 MB path, a 5 MB column name and a 5 MB value at once.
    let huge = "x".repeat(5_000_000);
    let e = Error::invalid_argument("op", "name", &huge, "short")
        .in_column(&huge, 1)
        .in_file(&huge);
    let message = e.to_string();
    assert!(
        message.len() <= bounded::MESSAGE_BYTES,
        "{} bytes",
        message.len()
    );
    assert!(message.ends_with("expected short"), "{message}");
    // A short message is whole.
    let e = Error::invalid_argument("split", "parts", 0, "at least 1");
    assert_eq!(e.to_string(), "split: parts is 0, expected at least 1");
}
