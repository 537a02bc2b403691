//! The loader's unit tests: booleans and 32-bit offsets gathered, zero items of every dtype.

use super::batch::zero;
use super::*;

use crate::dataset::Column;
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::lod::{Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};
use arrow_array::BooleanArray;

/// Booleans under 32-bit offsets and 3-item elements: the bit and `i32` paths.
#[test]
fn gathers_booleans_and_i32_offsets() {
    let dir = tempfile::tempdir().unwrap();
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
    let file = MappedDataset::open(&path).unwrap();
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
