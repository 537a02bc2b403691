//! Shared test fixtures: a reference model of a LoD tensor (nested `Vec`s) and strategies;
//! with `plain`, the support the benches and fuzz targets share too.
#![allow(dead_code)]

mod disk;
mod plain;
#[cfg(feature = "remote")]
mod s3;
mod small_disk;
#[allow(unused_imports)]
pub use disk::{child_line, files_under, is_disk_full, run_with_file_size_limit};
#[allow(unused_imports)]
pub use plain::*;
#[cfg(feature = "remote")]
#[allow(unused_imports)]
pub use s3::S3Server;
#[allow(unused_imports)]
pub use small_disk::{run_on_small_disk, small_disks_available};

use std::sync::Arc;

use arrow_array::types::Int64Type;
use arrow_array::{
    ArrayRef, BooleanArray, Float16Array, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use lodtensor::{Column, DType, Dataset, Lod, LodTensor, OffsetWidth, Values};
use proptest::prelude::*;

/// The reference model: a tree whose leaves are elements (each a `Vec` of its items).
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A sequence of sub-sequences (or of elements, at the last level).
    Seq(Vec<Node>),
    /// One element's items.
    Elem(Vec<i64>),
}

/// A generated tensor: its model rows, dtype, element shape and offset width.
#[derive(Clone, Debug)]
pub struct Case {
    pub rows: Vec<Node>,
    pub levels: usize,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub width: OffsetWidth,
}

impl Case {
    pub fn element_size(&self) -> usize {
        self.shape.iter().product()
    }

    /// The lengths per level and the flat items the model describes.
    pub fn flatten(rows: &[Node], levels: usize) -> (Vec<Vec<usize>>, Vec<i64>) {
        let mut lengths = vec![Vec::new(); levels];
        let mut items = Vec::new();
        fn walk(node: &Node, level: usize, lengths: &mut Vec<Vec<usize>>, items: &mut Vec<i64>) {
            match node {
                Node::Seq(children) => {
                    lengths[level].push(children.len());
                    for c in children {
                        walk(c, level + 1, lengths, items);
                    }
                }
                Node::Elem(e) => items.extend(e),
            }
        }
        for r in rows {
            walk(r, 0, &mut lengths, &mut items);
        }
        (lengths, items)
    }

    pub fn tensor(&self) -> LodTensor {
        let (lengths, items) = Self::flatten(&self.rows, self.levels);
        let lod = if self.levels == 0 {
            Lod::default()
        } else {
            Lod::try_from_lengths_with_width(&lengths, self.width).unwrap()
        };
        let values = Values::try_new(items_array(self.dtype, &items), self.shape.clone()).unwrap();
        LodTensor::try_new(lod, values).unwrap()
    }
}

/// `items` as an Arrow array of `dtype`.
pub fn items_array(dtype: DType, items: &[i64]) -> ArrayRef {
    let it = items.iter().copied();
    match dtype {
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
    }
}

fn node(levels_left: usize, size: usize) -> BoxedStrategy<Node> {
    if levels_left == 0 {
        prop::collection::vec(-1000i64..1000, size)
            .prop_map(Node::Elem)
            .boxed()
    } else {
        prop::collection::vec(node(levels_left - 1, size), 0..4)
            .prop_map(Node::Seq)
            .boxed()
    }
}

/// Random tensors: 0–4 levels, lengths including zeros, element shapes of 0–2 dims, every
/// dtype, both offset widths.
pub fn case() -> impl Strategy<Value = Case> {
    (
        0usize..=4,
        prop::collection::vec(1usize..4, 0..=2),
        prop::sample::select(DType::ALL.to_vec()),
        prop::bool::ANY,
    )
        .prop_flat_map(|(levels, shape, dtype, wide)| {
            let size: usize = shape.iter().product();
            let rows = prop::collection::vec(node(levels, size), 0..6);
            (rows, Just(levels), Just(dtype), Just(shape), Just(wide))
        })
        .prop_map(|(rows, levels, dtype, shape, wide)| Case {
            rows,
            levels,
            dtype,
            shape,
            width: if wide {
                OffsetWidth::I64
            } else {
                OffsetWidth::I32
            },
        })
}

/// The reference documents' dataset: 2-level `tokens` (f32[2]) and a 0-level `label`.
pub fn example_dataset() -> Dataset {
    reference_dataset("tokens", [7, 8, 9])
}

/// The reference example as a dataset: three articles of 3, 1 and 2 sentences of 3, 2, 4,
/// 1, 2 and 3 words of f32[2] (word `w` holds `2w, 2w + 1`) in a column `column` with its
/// levels named, and an i64 `label` per article.
pub fn reference_dataset(column: &str, labels: [i64; 3]) -> Dataset {
    let tokens = LodTensor::from_lengths::<arrow_array::types::Float32Type>(
        &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
        (0..30).map(|i| i as f32).collect(),
        vec![2],
    )
    .unwrap();
    let label = LodTensor::try_new(
        Lod::default(),
        Values::from_vec::<Int64Type>(labels.to_vec(), vec![]).unwrap(),
    )
    .unwrap();
    Dataset::try_new(vec![
        Column::new(column, tokens)
            .with_level_names(["articles", "sentences"])
            .unwrap(),
        Column::new("label", label),
    ])
    .unwrap()
}
