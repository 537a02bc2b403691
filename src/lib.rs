//! Zero-copy storage and interchange of LoD (level-of-detail) tensors.
//!
//! A LoD tensor is a mini-batch of variable-length, recursively nested sequences
//! (articles → sentences → words) stored as one dense tensor `[N, D1, D2, …]` plus a
//! multi-level offset index, with no padding. This crate maps it exactly onto nested Arrow
//! lists: a LoD of k levels is k nested `List`/`LargeList` types whose offsets are the LoD's
//! offsets, over a `FixedSizeList` tagged `arrow.fixed_shape_tensor`; one top-level sequence
//! is one Arrow row. The on-disk format is specified in [`format::spec`] (`format-spec.md`).
//!
//! # The three main paths
//!
//! **Write** a dataset file, atomically (the target appears whole, or keeps its old content):
//!
//! ```
//! use lodtensor::arrow::types::Float32Type;
//! use lodtensor::{Column, Dataset, DatasetWriter, LodTensor, WriteOptions};
//!
//! // Three articles of 3, 1 and 2 sentences of 3, 2, 4, 1, 2 and 3 words of f32[2].
//! let words = LodTensor::from_lengths::<Float32Type>(
//!     &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
//!     (0..30).map(|i| i as f32).collect(),
//!     vec![2],
//! )?;
//! let path = std::env::temp_dir().join(format!("crate-doc-{}.arrow", std::process::id()));
//! let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
//! writer.write(&Dataset::try_new(vec![Column::new("words", words)])?)?;
//! writer.finish()?;
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), lodtensor::Error>(())
//! ```
//!
//! **Map and view** it: opening validates every offset, and every sample, slice or
//! sequence is a view into the mapping, never a copy:
//!
//! ```
//! # use lodtensor::arrow::types::Float32Type;
//! # use lodtensor::{Column, Dataset, DatasetWriter, LodTensor, WriteOptions};
//! use lodtensor::MappedDataset;
//! # let words = LodTensor::from_lengths::<Float32Type>(
//! #     &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..30).map(|i| i as f32).collect(), vec![2])?;
//! # let path = std::env::temp_dir().join(format!("crate-doc-map-{}.arrow", std::process::id()));
//! # let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
//! # writer.write(&Dataset::try_new(vec![Column::new("words", words)])?)?;
//! # writer.finish()?;
//! let file = MappedDataset::open(&path)?;
//! let article = file.sample(2)?;                       // row 2, every column
//! assert_eq!(article.column("words")?.lod().lengths(), vec![vec![2], vec![2, 3]]);
//! let sentence = file.slice_sequence("words", 1, 4)?;  // sentence 4 of the file
//! assert_eq!(sentence.typed_values::<Float32Type>()?, &[20., 21., 22., 23.]);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), lodtensor::Error>(())
//! ```
//!
//! **Load batches** for training: budgets, buckets, shuffles, shards and resumable
//! positions; in-order batches are views, shuffled ones are gathered once:
//!
//! ```
//! use lodtensor::{rng::SplitMix64, synthetic::Documents};
//! use lodtensor::{DatasetWriter, Loader, MappedDataset, WriteOptions};
//!
//! let path = std::env::temp_dir().join(format!("crate-doc-docs-{}.arrow", std::process::id()));
//! let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
//! writer.write(&Documents::default().generate(&mut SplitMix64::new(1), 20)?)?;
//! writer.finish()?;
//! let file = MappedDataset::open(&path)?;
//! let mut loader = Loader::builder(&file).with_token_budget(2048).with_shuffle(7).build()?;
//! let mut rows = 0;
//! while let Some(batch) = loader.next_batch()? {
//!     rows += batch.data().num_rows();
//! }
//! assert_eq!(rows, 20);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), lodtensor::Error>(())
//! ```
//!
//! # The parts
//!
//! - [`Lod`]: the offset index, its rules, lengths ↔ offsets, [`Lod::descend`].
//! - [`LodTensor`]: a LoD over [`Values`]; views; Arrow conversion ([`ColumnLayout`]).
//! - [`Dataset`]: named columns sharing rows; an Arrow `RecordBatch`.
//! - [`io`]: the atomic IPC writer ([`DatasetWriter`]), the memory-mapped reader
//!   ([`MappedDataset`]), Parquet, and PaddlePaddle LoDTensor files.
//! - [`ops`]: sequence operations (expand, pad, pool, concat, split, reverse, …) after
//!   PaddlePaddle's sequence operators.
//! - [`shards`]: sharded datasets, a directory of files and a manifest, written atomically
//!   and read lazily.
//! - [`Loader`]: training batches from a mapped file.
//! - [`Error`]: one pointer wide; [`Error::kind`] says what went wrong, grouped by what a
//!   caller does about it.
//! - [`arrow`]: the Arrow types of the API, so that no Arrow crate is needed beside this one.
//! - [`demo`]: the tour of `cargo run --release -p lodtensor --example demo` and `lodtensor demo`.
#![deny(missing_docs)]

/// The README's examples, run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

mod convert;
mod dataset;
pub mod demo;
#[doc(hidden)]
pub mod doc_fixtures;
mod error;
pub mod extension;
pub mod format;
pub mod io;
mod layout;
pub mod loader;
mod lod;
pub mod ops;
pub mod rng;
mod row_index;
pub mod shards;
pub mod synthetic;
mod tensor;
#[cfg(feature = "tokenize")]
pub mod tokenize;
mod values;

pub use dataset::{Column, Dataset, check_version};
pub use error::{
    ArgumentError, DataError, DatasetError, Error, ErrorKind, FileFormat, FormatError,
    InternalError, Result, UnsupportedError, UnusableError,
};
pub use io::ipc_reader::MappedDataset;
pub use io::ipc_writer::{DatasetWriter, IpcCompression, WriteOptions, WriteSummary};
pub use layout::ColumnLayout;
pub use loader::{Batch, Loader, LoaderBuilder, Position};
pub use lod::{LevelOffsets, Lod, MAX_LEVELS, OffsetWidth};
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
