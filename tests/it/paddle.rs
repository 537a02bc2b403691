//! Golden files written by real Paddle (`tests/data/paddle/make_golden.py`): the reader gives
//! exactly what Paddle loads, the writer gives Paddle's bytes, and no truncation or byte flip
//! makes either panic.

use lodtensor::{ErrorKind, FormatError, UnsupportedError};
use std::fs;
use std::path::PathBuf;

use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
};
use lodtensor::io::paddle;
use lodtensor::{DType, Error, LodTensor};
use serde_json::Value;

const TENSORS: [&str; 14] = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "float16",
    "float32",
    "float64",
    "empty_rows",
    "empty_sequences",
    "scalar",
    "bfloat16",
    "complex64",
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/paddle")
}

fn golden(name: &str) -> (Vec<u8>, Value) {
    let ext = if name == "params" {
        "pdiparams"
    } else {
        "pdtensor"
    };
    let bytes = fs::read(dir().join(format!("{name}.{ext}"))).unwrap();
    let json = fs::read_to_string(dir().join(format!("{name}.json"))).unwrap();
    (bytes, serde_json::from_str(&json).unwrap())
}

/// The items of a tensor as JSON numbers or booleans, row-major.
fn items(t: &LodTensor) -> Vec<Value> {
    fn num<T: Into<f64> + Copy>(v: &[T]) -> Vec<Value> {
        v.iter().map(|&x| Value::from(x.into())).collect()
    }
    match t.dtype() {
        DType::Bool => {
            let e = t.elements();
            let size = t.values().element_size();
            let b = t.values().booleans().unwrap();
            (e.start * size..e.end * size)
                .map(|i| Value::from(b.value(i)))
                .collect()
        }
        DType::Int8 => num(t.typed_values::<Int8Type>().unwrap()),
        DType::Int16 => num(t.typed_values::<Int16Type>().unwrap()),
        DType::Int32 => num(t.typed_values::<Int32Type>().unwrap()),
        DType::Int64 => t
            .typed_values::<Int64Type>()
            .unwrap()
            .iter()
            .map(|&x| Value::from(x))
            .collect(),
        DType::UInt8 => num(t.typed_values::<UInt8Type>().unwrap()),
        DType::Float16 => t
            .typed_values::<Float16Type>()
            .unwrap()
            .iter()
            .map(|x| Value::from(x.to_f64()))
            .collect(),
        DType::Float32 => num(t.typed_values::<Float32Type>().unwrap()),
        DType::Float64 => num(t.typed_values::<Float64Type>().unwrap()),
        other => panic!("no Paddle dtype {other}"),
    }
}

/// Compares a tensor with one record of a golden JSON.
fn check(name: &str, t: &LodTensor, expected: &Value) {
    assert_eq!(t.dtype().name(), expected["dtype"], "{name}: dtype");
    let dims: Vec<usize> = serde_json::from_value(expected["dims"].clone()).unwrap();
    // A 0-D tensor is one element of shape [].
    let shape = if dims.is_empty() { vec![1] } else { dims };
    assert_eq!(t.shape(), shape, "{name}: dims");
    let lod: Vec<Vec<i64>> = serde_json::from_value(expected["lod"].clone()).unwrap();
    assert_eq!(t.lod().offsets(), lod, "{name}: LoD");
    let want: Vec<Value> = expected["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Number(n) if t.dtype() != DType::Int64 => Value::from(n.as_f64().unwrap()),
            other => other.clone(),
        })
        .collect();
    assert_eq!(items(t), want, "{name}: items");
}

#[test]
fn reader_gives_what_paddle_loads_and_writer_gives_paddles_bytes() {
    for name in TENSORS {
        let (bytes, json) = golden(name);
        if let Some(refused) = json.get("refused") {
            match paddle::read_tensor(&bytes).map_err(Error::into_kind) {
                Err(ErrorKind::Unsupported(UnsupportedError::PaddleDType {
                    name: found, ..
                })) => assert_eq!(found, refused, "{name}"),
                other => panic!("{name}: expected a dtype error, got {other:?}"),
            }
            continue;
        }
        let t = paddle::read_tensor(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        check(name, &t, &json["records"][0]);
        let written = paddle::to_bytes(&t).unwrap();
        if name == "scalar" {
            // Written back with dims [1]: the desc gains `0x10 0x01`.
            assert_eq!(written.len(), bytes.len() + 2);
            assert_eq!(paddle::read_tensor(&written).unwrap(), t);
        } else {
            assert_eq!(written, bytes, "{name}: written bytes differ from Paddle's");
        }
    }
}

#[test]
fn combined_file() {
    let (bytes, json) = golden("params");
    let named = paddle::read_combined(&bytes, &[]).unwrap();
    let records = json["records"].as_array().unwrap();
    assert_eq!(named.len(), records.len());
    for (i, ((name, t), expected)) in named.iter().zip(records).enumerate() {
        assert_eq!(name, &format!("tensor_{i}"));
        check(name, t, expected);
    }
    let mut written = Vec::new();
    paddle::write_combined(&mut written, named.iter().map(|(_, t)| t)).unwrap();
    assert_eq!(written, bytes);

    let named = paddle::read_combined(&bytes, &["a", "b", "c"]).unwrap();
    assert_eq!(named[2].0, "c");
}

#[test]
fn files_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let t = paddle::read_tensor_file(dir().join("int64.pdtensor")).unwrap();
    let path = tmp.path().join("int64.pdtensor");
    paddle::write_tensor_file(&path, &t).unwrap();
    assert_eq!(
        fs::read(&path).unwrap(),
        fs::read(dir().join("int64.pdtensor")).unwrap()
    );
    let named = paddle::read_combined_file(dir().join("params.pdiparams"), &[]).unwrap();
    let path = tmp.path().join("params.pdiparams");
    paddle::write_combined_file(&path, named.iter().map(|(_, t)| t)).unwrap();
    assert_eq!(
        fs::read(&path).unwrap(),
        fs::read(dir().join("params.pdiparams")).unwrap()
    );
    let missing = tmp.path().join("missing.pdtensor");
    let e = paddle::read_tensor_file(&missing).unwrap_err();
    assert_eq!(e.path(), Some(missing.as_path()));
    assert!(matches!(e.kind(), ErrorKind::Io(_)));
    let e = paddle::read_tensor_file(dir().join("params.pdiparams")).unwrap_err();
    assert!(matches!(
        e.kind(),
        ErrorKind::Format(FormatError::PaddleTrailingBytes { .. })
    ));
}

#[test]
fn every_truncation_is_a_typed_error() {
    for name in TENSORS {
        let (bytes, json) = golden(name);
        let refused = json.get("refused").is_some();
        for len in 0..bytes.len() {
            match paddle::read_tensor(&bytes[..len]).map_err(Error::into_kind) {
                Err(ErrorKind::Format(FormatError::PaddleTruncated { record: 0, .. })) => {}
                // A refused dtype is named as soon as the desc is read.
                Err(ErrorKind::Unsupported(UnsupportedError::PaddleDType { .. })) if refused => {}
                other => panic!("{name} cut to {len} bytes: {other:?}"),
            }
        }
    }
    // A prefix of a combined file is whole records (read) or a truncated record.
    let (bytes, _) = golden("params");
    let mut whole = 0;
    for len in 0..bytes.len() {
        match paddle::read_records(&bytes[..len]).map_err(Error::into_kind) {
            Ok(records) => {
                assert!(records.len() < 3);
                whole += 1;
            }
            Err(ErrorKind::Format(FormatError::PaddleTruncated { .. })) => {}
            Err(other) => panic!("params cut to {len} bytes: {other}"),
        }
    }
    assert_eq!(whole, 3, "the empty prefix and the two record boundaries");
}

#[test]
fn every_byte_flip_is_a_result_or_a_typed_error() {
    let mut names: Vec<&str> = TENSORS.to_vec();
    names.push("params");
    for name in names {
        let (bytes, _) = golden(name);
        for offset in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut flipped = bytes.clone();
                flipped[offset] ^= mask;
                // Must return, never panic; whatever it reads must write without error.
                if let Ok(records) = paddle::read_records(&flipped) {
                    for t in &records {
                        paddle::to_bytes(t).unwrap();
                    }
                }
                let _ = paddle::read_tensor(&flipped);
            }
        }
    }
}

#[test]
fn header_flips_are_errors() {
    // A flipped bit in a version, the level count, a level size, a level's last offset, the
    // desc size or the desc is always caught (a middle offset may flip into another valid
    // LoD, and a data byte into another value).
    let (bytes, _) = golden("int64");
    let desc_size = i32::from_le_bytes(bytes[120..124].try_into().unwrap()) as usize;
    let fields = [
        0..4,                 // LoDTensor version
        4..12,                // 2 levels
        12..20,               // level 0: 32 bytes
        44..52,               // level 0's last offset
        52..60,               // level 1: 56 bytes
        108..116,             // level 1's last offset
        116..120,             // tensor version
        120..124 + desc_size, // desc size and desc
    ];
    for offset in fields.into_iter().flatten() {
        for bit in 0..8 {
            let mut flipped = bytes.clone();
            flipped[offset] ^= 1 << bit;
            match paddle::read_tensor(&flipped) {
                Err(_) => {}
                // The key of dims[1] (0x10) flipped to another field number (0x18: field
                // 3) is an unknown field, skipped as protobuf requires: int64 [15].
                Ok(t) if offset == 128 => assert_eq!(t.shape(), vec![15]),
                Ok(_) => panic!("flip of bit {bit} at byte {offset} went unnoticed"),
            }
        }
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random bytes written over random places of any golden file, then a random cut:
        /// reading returns, and whatever it reads writes back and reads back equal.
        #[test]
        fn mutated_golden_files_never_panic(
            file in 0usize..15,
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let name = if file == 14 { "params" } else { TENSORS[file] };
            let (mut bytes, _) = golden(name);
            for (at, byte) in edits {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            let len = cut.index(bytes.len() + 1);
            let _ = paddle::read_tensor(&bytes[..len]);
            if let Ok(records) = paddle::read_records(&bytes[..len]) {
                for t in &records {
                    let again = paddle::read_tensor(&paddle::to_bytes(t).unwrap()).unwrap();
                    prop_assert_eq!(&again, t);
                }
            }
        }

        /// Arbitrary bytes after a valid prefix never panic either.
        #[test]
        fn arbitrary_tails_never_panic(
            file in 0usize..14,
            keep in any::<prop::sample::Index>(),
            tail in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let (bytes, _) = golden(TENSORS[file]);
            let mut bytes = bytes[..keep.index(bytes.len())].to_vec();
            bytes.extend(tail);
            let _ = paddle::read_records(&bytes);
        }
    }
}
