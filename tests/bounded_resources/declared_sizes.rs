//! Files that declare huge lengths, counts or dims cannot make a reader allocate more than
//! the file holds (plus a small constant).

use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::io::paddle;
use lodtensor::{rng::SplitMix64, synthetic::Documents};

use crate::{alone, peak_of};

/// A little-endian varint.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A Paddle record: `levels` given as (declared byte size, offsets actually present),
/// a TensorDesc of float32 with `dims`, then `data`.
fn paddle_record(levels: &[(u64, &[u64])], dims: &[u64], data: &[u8]) -> Vec<u8> {
    let mut b = 0u32.to_le_bytes().to_vec();
    b.extend((levels.len() as u64).to_le_bytes());
    for (size, offsets) in levels {
        b.extend(size.to_le_bytes());
        for o in *offsets {
            b.extend(o.to_le_bytes());
        }
    }
    b.extend(0u32.to_le_bytes());
    let mut desc = vec![0x08, 5];
    for d in dims {
        desc.push(0x10);
        desc.extend(varint(*d));
    }
    b.extend((desc.len() as i32).to_le_bytes());
    b.extend(desc);
    b.extend(data);
    b
}

/// Slack for the reader's own small structures (error messages, schema, a few arrays).
const SLACK: usize = 64 << 10;

#[test]
fn declared_sizes_never_drive_allocation() {
    alone(declared_sizes);
}

fn declared_sizes() {
    // Paddle records that declare far more than they hold.
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "2^40 elements, no data",
            paddle_record(&[], &[1 << 40], &[]),
        ),
        (
            "dims whose product overflows",
            paddle_record(&[], &[1 << 40, 1 << 40], &[0; 8]),
        ),
        (
            "a level of 2^60 bytes",
            paddle_record(&[(1 << 60, &[0, 1])], &[1], &[0; 4]),
        ),
        ("2^62 levels", {
            let mut b = 0u32.to_le_bytes().to_vec();
            b.extend((1u64 << 62).to_le_bytes());
            b
        }),
        ("a TensorDesc of 2^31 - 1 bytes", {
            let mut b = paddle_record(&[], &[1], &[0; 4]);
            b[16..20].copy_from_slice(&i32::MAX.to_le_bytes());
            b
        }),
    ];
    for (what, bytes) in &cases {
        let mut result = None;
        let peak = peak_of(|| result = Some(paddle::read_tensor(bytes)));
        assert!(result.unwrap().is_err(), "{what}: accepted");
        assert!(
            peak <= bytes.len() + SLACK,
            "{what}: {peak} bytes allocated"
        );
    }

    // An IPC file whose batch declares 2^40 rows and whose nodes declare 2^40 entries.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    let mut w = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
    w.write(
        &Documents::default()
            .generate(&mut SplitMix64::new(3), 3)
            .unwrap(),
    )
    .unwrap();
    w.finish().unwrap();
    let good = std::fs::read(&path).unwrap();
    let rows = 3i64.to_le_bytes();
    let mut patched = 0;
    for at in 0..good.len() - 8 {
        if good[at..at + 8] == rows {
            let mut bad = good.clone();
            bad[at..at + 8].copy_from_slice(&(1i64 << 40).to_le_bytes());
            let bad_path = dir.path().join("bad.arrow");
            std::fs::write(&bad_path, &bad).unwrap();
            let mut result = None;
            let peak =
                peak_of(|| result = Some(MappedDataset::open(&bad_path).map(|f| f.num_rows())));
            assert!(
                peak <= good.len() + SLACK,
                "a length of 2^40 at byte {at}: {peak} bytes allocated"
            );
            if let Some(Ok(n)) = result {
                assert!(n <= 3, "a length of 2^40 at byte {at} read as {n} rows");
            }
            patched += 1;
        }
    }
    assert!(patched > 0, "no length field found to patch");
}
