//! The loader's unit tests: booleans and 32-bit offsets gathered, zero items of every dtype,
//! gathering into shared memory.

use super::batch::zero;
use super::*;

use crate::dataset::{Column, Dataset};
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::lod::{Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};
use arrow_array::BooleanArray;

/// A file of five samples in five record batches: booleans under 32-bit offsets and
/// 3-item elements (the bit and `i32` paths of gathering).
fn boolean_file(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("b.arrow");
    let lengths = vec![vec![1, 3, 0, 2, 1], vec![2, 1, 1, 3, 2, 1, 1]];
    let items: Vec<bool> = (0..11 * 3).map(|i| i % 3 == 0 || i % 5 == 0).collect();
    let t = LodTensor::try_new(
        Lod::try_from_lengths(&lengths).unwrap(),
        Values::try_new(Arc::new(BooleanArray::from(items)), vec![3]).unwrap(),
    )
    .unwrap();
    let ds = Dataset::try_new(vec![Column::new("flags", t)]).unwrap();
    let options = WriteOptions::default()
        .with_offset_width(OffsetWidth::I32)
        .with_batch_bytes(1);
    let mut w = DatasetWriter::create(&path, options).unwrap();
    for row in 0..5 {
        w.write(&ds.slice_rows(row..row + 1).unwrap()).unwrap();
    }
    w.finish().unwrap();
    path
}

#[test]
fn gathers_booleans_and_i32_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let mut loader = Loader::builder(&file)
        .with_batch_size(5)
        .with_shuffle(1)
        .build()
        .unwrap();
    let b = loader.next_batch().unwrap().unwrap();
    assert!(!b.is_view());
    let t = b.data().column("flags").unwrap();
    assert!(
        t.lod()
            .levels()
            .iter()
            .all(|l| l.width() == OffsetWidth::I32)
    );
    for (k, &s) in b.samples().iter().enumerate() {
        assert_eq!(
            b.data().slice_rows(k..k + 1).unwrap(),
            file.sample(s).unwrap()
        );
    }
}

#[test]
fn zero_pads_every_dtype() {
    for dtype in DType::ALL {
        let z = zero(dtype).unwrap();
        assert_eq!((z.dtype(), z.num_elements()), (dtype, 1));
    }
}

/// Every buffer of `batch`'s columns, as byte ranges of this process.
fn buffer_ranges(batch: &Batch) -> Vec<std::ops::Range<usize>> {
    let data = batch.data().column("flags").unwrap().to_arrow();
    let mut ranges = Vec::new();
    let mut stack = vec![data.to_data()];
    while let Some(d) = stack.pop() {
        for b in d.buffers() {
            ranges.push(b.as_ptr() as usize..b.as_ptr() as usize + b.len());
        }
        stack.extend(d.child_data().iter().cloned());
    }
    ranges
}

#[cfg(target_os = "linux")]
#[test]
fn shared_memory_batches_equal_heap_ones_and_lie_in_their_region() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let build = |shared| {
        Loader::builder(&file)
            .with_batch_size(2)
            .with_shuffle(3)
            .with_shared_memory(shared)
            .build()
            .unwrap()
    };
    let (mut heap, mut shared) = (build(false), build(true));
    for _ in 0..6 {
        let (a, b) = (heap.next_batch().unwrap(), shared.next_batch().unwrap());
        let (Some(a), Some(b)) = (a, b) else {
            assert!(heap.next_batch().unwrap().is_some() == shared.next_batch().unwrap().is_some());
            continue;
        };
        assert_eq!(a.data(), b.data());
        assert!(a.shared_memory().is_none());
        if b.is_view() {
            assert!(b.shared_memory().is_none());
            continue;
        }
        let region = b
            .shared_memory()
            .expect("a gathered batch in shared memory");
        let inside = region.as_ptr() as usize + super::shared::HEADER
            ..region.as_ptr() as usize + region.len();
        for r in buffer_ranges(&b) {
            assert!(
                inside.start <= r.start && r.end <= inside.end,
                "{r:?} outside {inside:?}"
            );
        }
    }
}

/// The lend flag as another process clears it: through a mapping of its own.
#[cfg(target_os = "linux")]
fn give_back(region: (i32, u64)) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/self/fd/{}", region.0))
        .unwrap();
    // SAFETY: a mapping of the memfd's first page, written only at byte 0 as the borrower does.
    let mut map = unsafe { memmap2::MmapOptions::new().len(64).map_mut(&f).unwrap() };
    map[0] = 0;
}

#[cfg(target_os = "linux")]
#[test]
fn a_region_lent_or_held_is_not_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let mut loader = Loader::builder(&file)
        .with_batch_size(2)
        .with_shuffle(3)
        .with_shared_memory(true)
        .build()
        .unwrap();
    let id = |b: &Batch| b.shared_memory().map(|r| (r.fd(), r.inode()));
    let mut next = || loop {
        if let Some(b) = loader.next_batch().unwrap()
            && !b.is_view()
        {
            return b;
        }
    };
    let lent = next();
    lent.shared_memory().unwrap().lend();
    let lent_id = id(&lent).unwrap();
    drop(lent);
    let kept = next();
    assert_ne!(id(&kept), Some(lent_id)); // lent: not written again
    for _ in 0..20 {
        let b = next();
        assert!(id(&b) != Some(lent_id) && id(&b) != id(&kept));
    }
    give_back(lent_id);
    // Given back and dropped, it is written again (before a new region is made); with
    // every region held, a batch is gathered on the heap, and still right.
    let held: Vec<Batch> = (0..super::gather::REGION_SLOTS).map(|_| next()).collect();
    assert!(held.iter().any(|b| id(b) == Some(lent_id)));
    assert!(held.iter().any(|b| b.shared_memory().is_none()));
    for b in &held {
        for (k, &s) in b.samples().iter().enumerate() {
            assert_eq!(
                b.data().slice_rows(k..k + 1).unwrap(),
                file.sample(s).unwrap()
            );
        }
    }
}
