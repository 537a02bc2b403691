//! The inputs that many of the documentation's examples start from, made once here
//! instead of in hidden lines of every example (hidden from the docs; not for users).

use std::path::PathBuf;

use arrow_array::types::{Float32Type, Int64Type};

use crate::dataset::{Column, Dataset};
use crate::error::Result;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::tensor::LodTensor;

/// Two documents of 2 and 1 sentences of 1, 2 and 3 words, the words `0.0..6.0` (`f32`).
///
/// # Example
/// ```
/// let t = lodtensor::doc_fixtures::words();
/// assert_eq!(t.lod().lengths(), vec![vec![2, 1], vec![1, 2, 3]]);
/// ```
pub fn words() -> LodTensor {
    LodTensor::from_lengths::<Float32Type>(
        &[vec![2, 1], vec![1, 2, 3]],
        (0..6).map(|i| i as f32).collect(),
        vec![],
    )
    .expect("the lengths and the values agree")
}

/// Three sequences of 2, 1 and 3 ids, the ids `0..6` (`i64`).
///
/// # Example
/// ```
/// let t = lodtensor::doc_fixtures::ids();
/// assert_eq!(t.lod().lengths(), vec![vec![2, 1, 3]]);
/// ```
pub fn ids() -> LodTensor {
    LodTensor::from_lengths::<Int64Type>(&[vec![2, 1, 3]], (0..6).collect(), vec![])
        .expect("the lengths and the values agree")
}

/// A file `d.arrow` in a new temporary directory (returned too: the file lives as long as
/// it does) of one column `x`: five sequences of 1 to 5 `f32` ones.
///
/// # Errors
/// When the file cannot be written.
///
/// # Example
/// ```
/// let (_dir, path) = lodtensor::doc_fixtures::file()?;
/// assert_eq!(lodtensor::MappedDataset::open(&path)?.num_rows(), 5);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn file() -> Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("d.arrow");
    let t = LodTensor::from_lengths::<Float32Type>(&[vec![1, 2, 3, 4, 5]], vec![1.0; 15], vec![])?;
    let mut w = DatasetWriter::create(&path, WriteOptions::default())?;
    w.write(&Dataset::try_new(vec![Column::new("x", t)])?)?;
    w.finish()?;
    Ok((dir, path))
}

/// The tokenizer file of the examples and tests: a byte-level BPE of 512 ids with the
/// special token `<|endoftext|>` (`tests/data/tokenize/make_tokenizer.py`).
///
/// # Example
/// ```
/// assert!(lodtensor::doc_fixtures::tokenizer_json().exists());
/// ```
pub fn tokenizer_json() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenize/tokenizer.json")
}
