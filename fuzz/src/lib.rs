//! Helpers shared by the fuzz targets: a scratch directory for files, and a full read of
//! every sample, sequence, offset and value that checks every view stays inside its file.

#[path = "../../tests/common/plain.rs"]
mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arrow_array::Array;
use arrow_array::types::Int64Type;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::{DType, Lod, LodTensor, Values};
use support::inside;

/// At most this many sequences of a level are sliced one by one (the rest are still
/// reached through the offsets and the values).
const MAX_SLICES: usize = 2048;

/// A directory for this process's files, in memory when `/dev/shm` exists.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("lodtensor-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    })
}

/// Opens `bytes` with the validating reader, from memory (the checks of
/// `MappedDataset::open`, without writing and mapping a file).
pub fn open_bytes(bytes: &[u8]) -> lodtensor::Result<MappedDataset> {
    MappedDataset::from_bytes(bytes)
}

/// Reads every byte of every buffer of `data` (and its children); with `within`, asserts
/// each non-empty buffer lies inside it.
fn touch_data(data: &arrow_array::ArrayRef, within: Option<&[u8]>) -> u64 {
    fn walk(data: &arrow_data::ArrayData, within: Option<&[u8]>, sum: &mut u64) {
        for buffer in data.buffers() {
            let bytes = buffer.as_slice();
            if let Some(outer) = within.filter(|_| !bytes.is_empty()) {
                assert!(inside(bytes, outer), "a buffer outside the file");
            }
            *sum = bytes
                .iter()
                .fold(*sum, |s, &b| s.wrapping_mul(31).wrapping_add(u64::from(b)));
        }
        for child in data.child_data() {
            walk(child, within, sum);
        }
    }
    let mut sum = 0;
    walk(&data.to_data(), within, &mut sum);
    sum
}

/// Reads every offset and value of `tensor` and slices its sequences, checking that each
/// view is consistent and (with `within`) lies inside the file.
pub fn check_tensor(tensor: &LodTensor, within: Option<&[u8]>) {
    let lod = tensor.lod();
    let values = tensor.values();
    let absolute = lod.absolute_offsets();
    for level in &absolute {
        assert!(level.windows(2).all(|w| w[0] <= w[1]), "decreasing offsets");
        if let Some(&last) = level.last() {
            assert!(last <= values.num_elements(), "an offset past the values");
        }
    }
    black_box(touch_data(values.items(), within));
    black_box(lod.offsets());
    black_box(lod.lengths());
    let elements = tensor.elements();
    assert!(elements.start <= elements.end && elements.end <= values.num_elements());
    for level in 0..lod.num_levels() {
        let n = lod.num_sequences(level).expect("a level of the LoD");
        for index in 0..n.min(MAX_SLICES) {
            let slice = tensor
                .slice_sequence(level, index)
                .expect("a sequence the LoD counts");
            let range = slice.elements();
            assert!(range.end <= slice.values().num_elements());
            black_box(touch_data(slice.values().items(), within));
        }
        assert!(tensor.slice_sequence(level, n).is_err());
    }
    if tensor.num_rows() > 0 {
        let rows = tensor.slice_rows(0..tensor.num_rows()).expect("every row");
        black_box(rows.rebased());
    }
    match values.dtype() {
        DType::Bool => {
            black_box(values.booleans().expect("booleans").true_count());
        }
        DType::Int64 => {
            let typed = values.typed::<Int64Type>().expect("int64");
            black_box(typed.iter().fold(0i64, |s, &v| s.wrapping_add(v)));
        }
        _ => {}
    }
}

/// Reads everything a user can reach in `file`: every batch, column, sequence and value,
/// every sample, and the file-wide sequence slices.
pub fn read_everything(file: &MappedDataset) {
    let mapping = file.as_bytes();
    let mut rows = 0;
    for batch in file.batches() {
        rows += batch.num_rows();
        for column in batch.columns() {
            if let Some(t) = column.as_tensor() {
                check_tensor(t, Some(mapping));
            }
            black_box(column.arrow_field());
        }
        black_box(batch.to_record_batch());
    }
    assert_eq!(rows, file.num_rows());
    for row in 0..file.num_rows().min(MAX_SLICES) {
        let sample = file.sample(row).expect("a row the file counts");
        assert_eq!(sample.num_rows(), 1);
        for column in sample.columns() {
            if let Some(t) = column.as_tensor() {
                check_tensor(t, Some(mapping));
            }
        }
    }
    assert!(file.sample(file.num_rows()).is_err());
    let all = file.rows(0..file.num_rows()).expect("every row");
    assert_eq!(
        all.iter().map(|d| d.num_rows()).sum::<usize>(),
        file.num_rows()
    );
    for field in file.schema().fields() {
        for level in 0..4 {
            for index in 0..4 {
                if let Ok(t) = file.slice_sequence(field.name(), level, index) {
                    check_tensor(&t, Some(mapping));
                }
            }
        }
    }
}

/// A tensor of `lengths` (outermost level first) over `items` cast to `dtype`, elements of
/// shape `shape`; `None` when the parts do not fit together.
pub fn tensor_of(
    lengths: &[Vec<usize>],
    dtype: DType,
    shape: Vec<usize>,
    items: &[i64],
    width: lodtensor::OffsetWidth,
) -> Option<LodTensor> {
    use arrow_array::*;
    use std::sync::Arc;
    let it = items.iter().copied();
    let array: ArrayRef = match dtype {
        DType::Bool => Arc::new(BooleanArray::from_iter(it.map(|v| Some(v % 2 == 0)))),
        DType::UInt8 => Arc::new(UInt8Array::from_iter_values(it.map(|v| v as u8))),
        DType::Int8 => Arc::new(Int8Array::from_iter_values(it.map(|v| v as i8))),
        DType::Int16 => Arc::new(Int16Array::from_iter_values(it.map(|v| v as i16))),
        DType::Int32 => Arc::new(Int32Array::from_iter_values(it.map(|v| v as i32))),
        DType::Int64 => Arc::new(Int64Array::from_iter_values(it)),
        DType::UInt16 => Arc::new(UInt16Array::from_iter_values(it.map(|v| v as u16))),
        DType::UInt32 => Arc::new(UInt32Array::from_iter_values(it.map(|v| v as u32))),
        DType::UInt64 => Arc::new(UInt64Array::from_iter_values(it.map(|v| v as u64))),
        DType::Float16 => Arc::new(Float16Array::from_iter_values(
            it.map(|v| half::f16::from_f32(v as f32)),
        )),
        DType::Float32 => Arc::new(Float32Array::from_iter_values(it.map(|v| v as f32))),
        DType::Float64 => Arc::new(Float64Array::from_iter_values(it.map(|v| v as f64))),
    };
    let lod = if lengths.is_empty() {
        Lod::default()
    } else {
        Lod::try_from_lengths_with_width(lengths, width).ok()?
    };
    let values = Values::try_new(array, shape).ok()?;
    LodTensor::try_new(lod, values).ok()
}

/// The marker between a directory input's files.
pub const SHARD: &[u8] = b"\0SHARD\0";

/// `data` split at every [`SHARD`] marker: a directory input's files, in order.
pub fn split_files(data: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(SHARD.len()).position(|w| w == SHARD) {
        parts.push(&rest[..at]);
        rest = &rest[at + SHARD.len()..];
    }
    parts.push(rest);
    parts
}

/// The marker before a manifest input's numeric overrides (see [`apply_numbers`]).
pub const NUMBERS: &[u8] = b"\0NUM\0";

/// `data` split at its first [`NUMBERS`] marker: the text before it and the overrides
/// after it (empty without a marker, so a plain manifest is a plain input).
pub fn split_numbers(data: &[u8]) -> (&[u8], &[u8]) {
    match data.windows(NUMBERS.len()).position(|w| w == NUMBERS) {
        Some(at) => (&data[..at], &data[at + NUMBERS.len()..]),
        None => (data, &[]),
    }
}

/// Values a forged manifest reaches for: edges of 32, 48, 53, 62, 63 and 64 bits.
const EDGES: [u64; 14] = [
    0,
    1,
    2,
    7,
    255,
    (1 << 31) - 1,
    1 << 32,
    (1 << 48) - 1,
    1 << 48,
    (1 << 48) + 1,
    1 << 53,
    1 << 62,
    1 << 63,
    u64::MAX,
];

/// Sets numeric fields of `manifest` from `overrides`, records of 10 bytes: a field
/// selector, an index (shard, index entry; for a column's counts the column is the high
/// nibble, the level the low one) and a little-endian `u64` (with the selector's high bit,
/// its low byte picks one of [`EDGES`] instead). Fields: a shard's `rows`, `batches`,
/// `bytes`, `crc32c`, a column's `elements` and `sequences[level]`, an index entry's
/// `shards`, `bytes` and `crc32c`. Indices past the lists wrap; empty lists are skipped.
pub fn apply_numbers(manifest: &mut lodtensor::shards::Manifest, overrides: &[u8]) {
    for record in overrides.chunks_exact(10) {
        let (field, index) = (record[0], usize::from(record[1]));
        let raw = u64::from_le_bytes(record[2..10].try_into().expect("8 bytes"));
        let value = if field & 0x80 != 0 {
            EDGES[raw as usize % EDGES.len()]
        } else {
            raw
        };
        let size = value as usize;
        match field & 0x7f {
            f @ 0..=5 => {
                let shards = manifest.shards.len();
                let Some(shard) = manifest.shards.get_mut(index % shards.max(1)) else {
                    continue;
                };
                match f {
                    0 => shard.rows = size,
                    1 => shard.batches = size,
                    2 => shard.bytes = value,
                    3 => shard.crc32c = value as u32,
                    _ => {
                        let columns = shard.columns.len();
                        let Some(c) = shard.columns.get_mut((index >> 4) % columns.max(1)) else {
                            continue;
                        };
                        if f == 4 {
                            c.elements = size;
                        } else if !c.sequences.is_empty() {
                            let levels = c.sequences.len();
                            c.sequences[(index & 15) % levels] = size;
                        }
                    }
                }
            }
            f => {
                let entries = manifest.index.len();
                let Some(entry) = manifest.index.get_mut(index % entries.max(1)) else {
                    continue;
                };
                match f % 3 {
                    0 => entry.shards = size,
                    1 => entry.bytes = value,
                    _ => entry.crc32c = value as u32,
                }
            }
        }
    }
}

/// Asserts `e` is one line of fewer than 1,000 bytes (no value of the input echoed whole).
pub fn assert_bounded(e: &lodtensor::Error) {
    let message = e.to_string();
    assert!(
        message.len() < 1000,
        "a long error: {} bytes",
        message.len()
    );
    assert!(!message.contains('\n'), "a multi-line error: {message}");
}
