//! Reading records and files.

use std::path::Path;

use super::record::Reader;
use crate::error::ArgumentError;
use crate::error::{Error, Result};
use crate::tensor::LodTensor;

/// Reads a file of exactly one record (`save_dense_tensor`'s `.pdtensor`).
///
/// # Errors
/// Any fault of the record (see the module docs), naming record 0 and the byte offset;
/// [`FormatError::PaddleTrailingBytes`](crate::FormatError::PaddleTrailingBytes) when bytes follow the record.
///
/// # Example
/// ```
/// use lodtensor::io::paddle;
/// // int64 [1, 2, 3], no LoD, as Paddle writes it.
/// let mut bytes = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
/// bytes.extend([4, 0, 0, 0, 0x08, 3, 0x10, 3]);
/// for v in [1i64, 2, 3] { bytes.extend(v.to_le_bytes()); }
/// let t = paddle::read_tensor(&bytes)?;
/// assert_eq!(t.typed_values::<arrow_array::types::Int64Type>()?, &[1, 2, 3]);
/// assert!(paddle::read_tensor(&bytes[..30]).is_err());
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn read_tensor(bytes: &[u8]) -> Result<LodTensor> {
    let mut reader = Reader::new(bytes);
    let tensor = reader.record(0)?;
    reader.finish()?;
    Ok(tensor)
}

/// Reads every record of `bytes`, in file order (an empty input has none).
///
/// # Errors
/// The first fault of any record, naming the record and the byte offset.
///
/// # Example
/// ```
/// # use lodtensor::LodTensor;
/// # use lodtensor::arrow::types::Int64Type;
/// # use lodtensor::io::paddle;
/// # let dir = tempfile::tempdir()?;
/// # let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![1])?;
/// let mut bytes = paddle::to_bytes(&t)?;
/// bytes.extend(paddle::to_bytes(&t.slice_rows(0..1)?)?);    // two records back to back
/// let records = paddle::read_records(&bytes)?;
/// assert_eq!(records.len(), 2);
/// assert_eq!(records[1].num_rows(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_records(bytes: &[u8]) -> Result<Vec<LodTensor>> {
    let mut reader = Reader::new(bytes);
    let mut tensors = Vec::new();
    while !reader.at_end() {
        tensors.push(reader.record(tensors.len())?);
    }
    Ok(tensors)
}

/// Reads a combined file (`save_combine`'s `.pdiparams`) as named tensors.
///
/// The records are named by `names` in order, or `tensor_0`, `tensor_1`, … when `names` is
/// empty. The tensors may have different row counts; when they share one,
/// [`Dataset::try_new`](crate::Dataset::try_new) makes them a dataset.
///
/// # Errors
/// As [`read_records`]; [`ArgumentError::PaddleRecordCount`] when `names` is not empty and does not
/// name every record.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
/// use lodtensor::io::paddle;
/// use arrow_array::types::{Float32Type, Int64Type};
/// let tokens = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![4, 5, 6], vec![])?;
/// let label = LodTensor::try_new(Lod::default(), Values::from_vec::<Float32Type>(vec![0.5, 1.5], vec![])?)?;
/// let mut bytes = Vec::new();
/// paddle::write_combined(&mut bytes, [&tokens, &label])?;
/// let named = paddle::read_combined(&bytes, &[])?;
/// assert_eq!(named[1].0, "tensor_1");
/// let named = paddle::read_combined(&bytes, &["tokens", "label"])?;
/// let ds = Dataset::try_new(named.into_iter().map(|(n, t)| Column::new(n, t)).collect())?;
/// assert_eq!(ds.column("tokens")?, &tokens);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn read_combined(bytes: &[u8], names: &[&str]) -> Result<Vec<(String, LodTensor)>> {
    let tensors = read_records(bytes)?;
    name_records(tensors, names)
}

/// Reads a `.pdtensor` file of exactly one record.
///
/// # Errors
/// As [`read_tensor`], or an I/O error, with `path` attached ([`Error::path`]).
///
/// # Example
/// ```
/// # use lodtensor::LodTensor;
/// # use lodtensor::arrow::types::Int64Type;
/// # use lodtensor::io::paddle;
/// # let dir = tempfile::tempdir()?;
/// # let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![1])?;
/// let path = dir.path().join("t.pdtensor");
/// paddle::write_tensor_file(&path, &t)?;
/// assert_eq!(paddle::read_tensor_file(&path)?, t);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_tensor_file(path: impl AsRef<Path>) -> Result<LodTensor> {
    let path = path.as_ref();
    read_regular(path)
        .map_err(Error::from)
        .and_then(|bytes| read_tensor(&bytes))
        .map_err(|e| e.in_file(path))
}

/// Reads a combined `.pdiparams` file as named tensors (see [`read_combined`]).
///
/// # Errors
/// As [`read_combined`], or an I/O error, with `path` attached ([`Error::path`]).
///
/// # Example
/// ```
/// # use lodtensor::LodTensor;
/// # use lodtensor::arrow::types::Int64Type;
/// # use lodtensor::io::paddle;
/// # let dir = tempfile::tempdir()?;
/// # let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![1])?;
/// let path = dir.path().join("model.pdiparams");
/// paddle::write_combined_file(&path, [&t, &t.slice_rows(2..3)?])?;
/// let named = paddle::read_combined_file(&path, &["embedding", "bias"])?;
/// assert_eq!((named[1].0.as_str(), named[1].1.num_rows()), ("bias", 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_combined_file(
    path: impl AsRef<Path>,
    names: &[&str],
) -> Result<Vec<(String, LodTensor)>> {
    let path = path.as_ref();
    read_regular(path)
        .map_err(Error::from)
        .and_then(|bytes| read_combined(&bytes, names))
        .map_err(|e| e.in_file(path))
}

/// The whole of the regular file at `path`.
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let (mut file, meta) = crate::io::regular::open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok(bytes)
}

fn name_records(tensors: Vec<LodTensor>, names: &[&str]) -> Result<Vec<(String, LodTensor)>> {
    if !names.is_empty() && names.len() != tensors.len() {
        return Err(ArgumentError::PaddleRecordCount {
            found: tensors.len(),
            expected: names.len(),
        }
        .into());
    }
    Ok(tensors
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let name = names
                .get(i)
                .map_or_else(|| format!("tensor_{i}"), |n| (*n).to_owned());
            (name, t)
        })
        .collect())
}
