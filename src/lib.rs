//! Zero-copy storage and interchange of LoD (level-of-detail) tensors.
//!
//! A LoD tensor is a mini-batch of variable-length, recursively nested sequences
//! (articles → sentences → words) stored as one dense tensor `[N, D1, D2, …]` plus a
//! multi-level offset index, with no padding. This crate maps it exactly onto nested Arrow
//! lists: a LoD of k levels is k nested `List`/`LargeList` types whose offsets are the LoD's
//! offsets, over a `FixedSizeList` tagged `arrow.fixed_shape_tensor`; one top-level sequence
//! is one Arrow row. See `format-spec.md` for the on-disk format.
//!
//! - [`Lod`]: the offset index, its rules, lengths ↔ offsets, slicing arithmetic.
//! - [`LodTensor`]: a LoD over [`Values`]; views; Arrow conversion.
//! - [`Dataset`]: named columns sharing rows; an Arrow `RecordBatch`.
//! - [`io`]: the atomic IPC writer, the memory-mapped reader, and PaddlePaddle LoDTensor
//!   files (`.pdtensor`, `.pdiparams`), read with every check and written as Paddle does.
//! - [`ops`]: sequence operations (expand, pad, pool, concat, split, reverse, …) after
//!   PaddlePaddle's sequence operators.
//! - [`Loader`]: training batches from a mapped file: budgets, buckets, shuffles, shards.
#![deny(missing_docs)]

/// The README's examples, run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

mod convert;
mod dataset;
mod error;
pub mod extension;
pub mod format;
pub mod io;
mod layout;
pub mod loader;
mod lod;
pub mod ops;
mod row_index;
pub mod synthetic;
mod tensor;
mod values;

pub use dataset::{Column, Dataset, check_version};
pub use error::{
    ArgumentError, DataError, Error, ErrorKind, FormatError, Result, UnsupportedError,
    UnusableError,
};
pub use io::ipc_reader::MappedDataset;
pub use io::ipc_writer::{DatasetWriter, WriteOptions, WriteSummary};
pub use layout::ColumnLayout;
pub use loader::{Batch, Loader, LoaderBuilder, Position};
pub use lod::{LevelOffsets, Lod, OffsetWidth};
pub use row_index::RowIndex;
pub use tensor::{LodTensor, Sequences};
pub use values::{DType, Values};

/// The Arrow types that appear in this crate's API, so that a user needs no Arrow crate of
/// their own (and always gets the version this crate was built with).
///
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::arrow::types::Float32Type;
///
/// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1., 2., 3.], vec![1])?;
/// let array: lodtensor::arrow::ArrayRef = t.to_arrow();
/// assert_eq!(array.len(), 2);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub mod arrow {
    pub use arrow_array::types;
    pub use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, RecordBatch};
    pub use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
    pub use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema, SchemaRef};

    /// The `arrow-array` crate: every array type.
    pub use arrow_array as array;
    /// The `arrow-buffer` crate: buffers and offsets.
    pub use arrow_buffer as buffer;
    /// The `arrow-schema` crate: types, fields, schemas.
    pub use arrow_schema as schema;
}
