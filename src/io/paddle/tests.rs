use std::io::Write;
use std::sync::Arc;

use arrow_array::BooleanArray;

use super::desc::put_varint;
use super::dtype::item_size;
use super::*;
use crate::error::{ArgumentError, DataError, Error, ErrorKind, FormatError, UnsupportedError};
use crate::lod::Lod;
use crate::tensor::LodTensor;
use crate::values::{DType, Values};
use arrow_array::types::{Float32Type, Int64Type};

/// A record from its parts; `desc` is the raw TensorDesc message.
fn record_raw(levels: &[&[u64]], desc: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0u32.to_le_bytes());
    out.extend((levels.len() as u64).to_le_bytes());
    for level in levels {
        out.extend(((level.len() * 8) as u64).to_le_bytes());
        for o in *level {
            out.extend(o.to_le_bytes());
        }
    }
    out.extend(0u32.to_le_bytes());
    out.extend((desc.len() as i32).to_le_bytes());
    out.extend(desc);
    out.extend(data);
    out
}

fn desc(code: u64, dims: &[i64]) -> Vec<u8> {
    let mut d = vec![0x08];
    put_varint(&mut d, code);
    for &dim in dims {
        d.push(0x10);
        put_varint(&mut d, dim as u64);
    }
    d
}

/// float32 [3, 2] with LoD [[0, 2, 3]].
fn good() -> Vec<u8> {
    let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    record_raw(&[&[0, 2, 3]], &desc(5, &[3, 2]), &data)
}

fn root(bytes: &[u8]) -> Error {
    read_tensor(bytes).unwrap_err()
}

#[test]
fn reads_a_hand_built_record() {
    let t = read_tensor(&good()).unwrap();
    assert_eq!(t.lod().offsets(), vec![vec![0, 2, 3]]);
    assert_eq!(t.shape(), vec![3, 2]);
    assert_eq!(
        t.typed_values::<Float32Type>().unwrap(),
        &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
    assert_eq!(to_bytes(&t).unwrap(), good());
}

#[test]
fn truncated() {
    let bytes = good();
    let e = root(&bytes[..bytes.len() - 1]);
    assert_eq!(
        e.to_string(),
        "Paddle record 0: tensor data at byte 58 needs 24 bytes, 23 remain"
    );
    assert_eq!(
        root(&[]).to_string(),
        "Paddle record 0: LoDTensor version at byte 0 needs 4 bytes, 0 remain"
    );
    // A level that declares more bytes than the file holds: no allocation, an error.
    let mut huge = Vec::new();
    huge.extend(0u32.to_le_bytes());
    huge.extend(1u64.to_le_bytes());
    huge.extend((u64::MAX - 7).to_le_bytes());
    assert_eq!(
        root(&huge).to_string(),
        "Paddle record 0: LoD level offsets at byte 20 needs 18446744073709551608 bytes, 0 remain"
    );
    // So does a lod_level count far past the file (refused past MAX_LEVELS, before any
    // level is read).
    let mut many = huge[..4].to_vec();
    many.extend(u64::MAX.to_le_bytes());
    assert_eq!(
        root(&many).to_string(),
        "Paddle record 0: LoD at byte 4: lodtensor reads: input has 18446744073709551615 LoD levels, expected at most 32"
    );
    let mut within = huge[..4].to_vec();
    within.extend(3u64.to_le_bytes());
    assert_eq!(
        root(&within).to_string(),
        "Paddle record 0: LoD level size at byte 12 needs 8 bytes, 0 remain"
    );
}

#[test]
fn versions() {
    let mut bytes = good();
    bytes[0] = 1;
    let e = root(&bytes);
    assert_eq!(
        e.to_string(),
        "Paddle record 0: LoDTensor version at byte 0 is 1, expected 0"
    );
    let mut bytes = good();
    bytes[44] = 7; // after 4 + 8 + 8 + 24 bytes
    assert!(matches!(
        root(&bytes).kind(),
        ErrorKind::Format(FormatError::PaddleVersion {
            offset: 44,
            what: "tensor version",
            found: 7,
            expected: 0,
            ..
        })
    ));
}

#[test]
fn level_size_not_multiple_of_8() {
    let mut bytes = good();
    bytes[12] = 23;
    assert!(matches!(
        root(&bytes).kind(),
        ErrorKind::Format(FormatError::PaddleLevelSize {
            offset: 12,
            level: 0,
            size: 23,
            ..
        })
    ));
}

#[test]
fn lod_rules() {
    let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let lod_root = |levels: &[&[u64]], dims: &[i64], data: &[u8]| match root(&record_raw(
        levels,
        &desc(5, dims),
        data,
    ))
    .into_kind()
    {
        ErrorKind::Format(FormatError::PaddleLod {
            record: 0,
            offset: 4,
            source,
        }) => *source,
        other => panic!("not a LoD error: {other}"),
    };
    assert!(matches!(
        lod_root(&[&[0, 2, 1]], &[3, 2], &data).kind(),
        ErrorKind::Data(DataError::DecreasingOffset {
            level: 0,
            index: 2,
            ..
        })
    ));
    assert!(matches!(
        lod_root(&[&[0, 2, 4]], &[3, 2], &data).kind(),
        ErrorKind::Data(DataError::ElementCountMismatch {
            last_offset: 4,
            elements: 3,
            ..
        })
    ));
    assert!(matches!(
        lod_root(&[&[0, 3], &[0, 1, 3]], &[3, 2], &data).kind(),
        ErrorKind::Data(DataError::LevelEndMismatch {
            level: 0,
            last_offset: 3,
            sequences: 2
        })
    ));
    assert!(matches!(
        lod_root(&[&[]], &[3, 2], &data).kind(),
        ErrorKind::Data(DataError::EmptyLevel { level: 0 })
    ));
    assert!(matches!(
        lod_root(&[&[0, 1 << 63]], &[3, 2], &data).kind(),
        ErrorKind::Data(DataError::OffsetOverflow {
            level: 0,
            index: 1,
            width: "int64",
            ..
        })
    ));
    assert!(matches!(
        root(&record_raw(&[&[0, 1], &[1, 3]], &desc(5, &[3, 2]), &data)).kind(),
        ErrorKind::Format(FormatError::PaddleLodStart {
            offset: 44,
            level: 1,
            found: 1,
            ..
        })
    ));
}

#[test]
fn desc_faults() {
    let with_desc = |d: &[u8]| root(&record_raw(&[], d, &[]));
    let reason = |e: Error| match e.into_kind() {
        ErrorKind::Format(FormatError::PaddleDesc { reason, .. }) => reason,
        other => panic!("not a desc error: {other}"),
    };
    let mut negative = record_raw(&[], &[], &[]);
    negative[16..20].copy_from_slice(&(-1i32).to_le_bytes());
    assert!(reason(root(&negative)).contains("negative"));
    assert!(reason(with_desc(&[0x08])).contains("past the end"));
    assert!(
        reason(with_desc(&[
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02
        ]))
        .contains("overflows")
    );
    assert!(
        reason(with_desc(&[
            0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00
        ]))
        .contains("overflows")
    );
    assert!(reason(with_desc(&[0x0a, 0x00])).contains("wire type 2"));
    assert!(reason(with_desc(&[0x08, 0x05, 0x1b])).contains("unsupported wire type 3"));
    assert!(reason(with_desc(&[0x08, 0x05, 0x12, 0x05, 0x01])).contains("length 5"));
    assert!(reason(with_desc(&[0x10, 0x01])).contains("no data_type"));
    assert!(reason(with_desc(&[0x00])).contains("field number 0"));
    assert!(reason(with_desc(&[0x08, 0x05, 0x19, 0x01])).contains("runs past"));
    match with_desc(&[0x08]).into_kind() {
        // The message starts at byte 20; the varint at its byte 1.
        ErrorKind::Format(FormatError::PaddleDesc { offset, .. }) => assert_eq!(offset, 21),
        other => panic!("{other}"),
    }
}

#[test]
fn desc_unknown_fields_and_packed_dims() {
    // data_type, unknown fields of each wire type, then dims [3, 2] packed.
    let mut d = vec![0x08, 0x05];
    d.extend([0x18, 0x96, 0x01]); // field 3, varint
    d.extend([0x21, 1, 2, 3, 4, 5, 6, 7, 8]); // field 4, fixed64
    d.extend([0x2a, 0x02, 0xaa, 0xbb]); // field 5, bytes
    d.extend([0x35, 1, 2, 3, 4]); // field 6, fixed32
    d.extend([0x12, 0x02, 0x03, 0x02]); // field 2, packed
    let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let t = read_tensor(&record_raw(&[&[0, 2, 3]], &d, &data)).unwrap();
    assert_eq!(t, read_tensor(&good()).unwrap());
}

#[test]
fn refused_dtypes() {
    assert!(matches!(
        root(&record_raw(&[], &desc(22, &[1]), &[0, 0])).kind(),
        ErrorKind::Unsupported(UnsupportedError::PaddleDType {
            code: 22,
            name: "BF16",
            ..
        })
    ));
    assert!(matches!(
        root(&record_raw(&[], &desc(99, &[1]), &[0])).kind(),
        ErrorKind::Unsupported(UnsupportedError::PaddleDType {
            name: "unknown",
            ..
        })
    ));
    let t = LodTensor::try_new(
        Lod::default(),
        Values::from_vec::<arrow_array::types::UInt32Type>(vec![1], vec![]).unwrap(),
    )
    .unwrap();
    let mut out = Vec::new();
    assert!(matches!(
        write_tensor(&mut out, &t).map_err(Error::into_kind),
        Err(ErrorKind::Unsupported(UnsupportedError::NoPaddleDType {
            dtype: DType::UInt32
        }))
    ));
    let ok = read_tensor(&good()).unwrap();
    assert!(matches!(
        write_combined(&mut out, [&ok, &t]).map_err(Error::into_kind),
        Err(ErrorKind::Unsupported(
            UnsupportedError::NoPaddleDType { .. }
        ))
    ));
    assert!(out.is_empty(), "nothing is written before the check");
}

#[test]
fn dims_faults() {
    let dims_reason = |d: &[i64]| match root(&record_raw(&[], &desc(5, d), &[])).into_kind() {
        ErrorKind::Format(FormatError::PaddleDims { reason, dims, .. }) => {
            assert_eq!(dims, d);
            reason
        }
        other => panic!("not a dims error: {other}"),
    };
    assert!(dims_reason(&[2, -1]).contains("dimension 1 is negative"));
    assert!(dims_reason(&[1 << 40, 1 << 40]).contains("overflows"));
    assert!(dims_reason(&[0, 0]).contains("dimension 1 is 0"));
    // Element size past i32: refused by the values, named as a dims fault.
    assert!(
        read_tensor(&record_raw(&[], &desc(21, &[0, 1 << 20, 1 << 20]), &[]))
            .is_err_and(|e| matches!(e.kind(), ErrorKind::Format(FormatError::PaddleDims { .. })))
    );
}

#[test]
fn bool_bytes() {
    let bytes = record_raw(&[], &desc(0, &[3]), &[1, 0, 2]);
    assert!(matches!(
        root(&bytes).kind(),
        ErrorKind::Format(FormatError::PaddleBool { value: 2, offset, .. }) if *offset == bytes.len() as u64 - 1
    ));
}

#[test]
fn trailing_bytes_and_record_count() {
    let mut bytes = good();
    bytes.push(0);
    assert!(matches!(
        root(&bytes).kind(),
        ErrorKind::Format(FormatError::PaddleTrailingBytes { count: 1, .. })
    ));
    let mut two = good();
    two.extend(good());
    assert_eq!(read_records(&two).unwrap().len(), 2);
    assert!(matches!(
        read_combined(&two, &["only"]).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::PaddleRecordCount {
            found: 2,
            expected: 1
        }))
    ));
    // A fault in the second record names it.
    let mut bad = good();
    bad.extend(&good()[..10]);
    assert!(matches!(
        read_records(&bad).map_err(Error::into_kind),
        Err(ErrorKind::Format(FormatError::PaddleTruncated { record: 1, offset, .. })) if offset == good().len() as u64 + 4
    ));
}

#[test]
fn scalar_is_one_element() {
    let t = read_tensor(&record_raw(&[], &desc(5, &[]), &2.5f32.to_le_bytes())).unwrap();
    assert_eq!((t.shape(), t.num_levels()), (vec![1], 0));
    assert_eq!(t.typed_values::<Float32Type>().unwrap(), &[2.5]);
}

#[test]
fn views_are_written_from_zero() {
    let t = LodTensor::from_lengths::<Int64Type>(
        &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
        (0..15).collect(),
        vec![1],
    )
    .unwrap();
    let view = t.slice_rows(1..3).unwrap();
    let back = read_tensor(&to_bytes(&view).unwrap()).unwrap();
    assert_eq!(back, view);
    assert_eq!(back.lod().offsets(), vec![vec![0, 1, 3], vec![0, 1, 3, 6]]);
    assert_eq!(
        back.typed_values::<Int64Type>().unwrap(),
        &[9, 10, 11, 12, 13, 14]
    );
    let flat = LodTensor::try_new(
        Lod::default(),
        Values::from_vec::<Int64Type>((0..6).collect(), vec![2]).unwrap(),
    )
    .unwrap()
    .slice_rows(1..2)
    .unwrap();
    assert_eq!(
        read_tensor(&to_bytes(&flat).unwrap())
            .unwrap()
            .typed_values::<Int64Type>()
            .unwrap(),
        &[2, 3]
    );
}

#[test]
fn every_dtype_round_trips() {
    for dtype in DType::ALL {
        let Some(code) = paddle_code(dtype) else {
            continue;
        };
        let n = 4;
        let data: Vec<u8> = (0..n * item_size(dtype)).map(|i| (i % 2) as u8).collect();
        let bytes = record_raw(&[&[0, 1, 4]], &desc(code as u64, &[n as i64]), &data);
        let t = read_tensor(&bytes).unwrap();
        assert_eq!(t.dtype(), dtype);
        assert_eq!(to_bytes(&t).unwrap(), bytes, "{dtype}");
    }
}

#[test]
fn bool_view_written_from_its_offset() {
    let t = LodTensor::try_new(
        Lod::default(),
        Values::try_new(
            Arc::new(BooleanArray::from(vec![
                true, false, false, true, true, true,
            ])),
            vec![2],
        )
        .unwrap(),
    )
    .unwrap()
    .slice_rows(1..3)
    .unwrap();
    let bytes = to_bytes(&t).unwrap();
    assert_eq!(&bytes[bytes.len() - 4..], &[0, 1, 1, 1]);
    assert_eq!(read_tensor(&bytes).unwrap(), t);
}

#[test]
fn a_failed_write_leaves_the_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pdtensor");
    let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![7, 8, 9], vec![]).unwrap();
    write_tensor_file(&path, &t).unwrap();
    let before = std::fs::read(&path).unwrap();
    // A dtype Paddle cannot hold: refused before the file is started.
    let u32s = LodTensor::try_new(
        Lod::default(),
        Values::from_vec::<arrow_array::types::UInt32Type>(vec![1], vec![]).unwrap(),
    )
    .unwrap();
    let err = write_combined_file(&path, [&t, &u32s]).unwrap_err();
    assert_eq!(err.path(), Some(path.as_path()));
    // An error in the middle of a record, through the path the file writers take.
    let err = crate::io::atomic::write_atomically(&path, |out| {
        let bytes = to_bytes(&t)?;
        out.write_all(&bytes[..bytes.len() / 2])?;
        Err(std::io::Error::other("injected").into())
    })
    .unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
    // A writer that dies mid-record (its temporary file dropped) leaves the previous file.
    let mut partial = crate::io::AtomicFile::create(&path).unwrap();
    partial.write_all(&to_bytes(&t).unwrap()[..10]).unwrap();
    drop(partial);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
