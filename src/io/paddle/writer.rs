//! Writing records and files, as Paddle's `save_dense_tensor` and `save_combine` do.

use std::io::Write;
use std::path::Path;

use super::desc::encode_desc;
use super::dtype::{paddle_code, write_items};
use super::{LOD_TENSOR_VERSION, TENSOR_VERSION};
use crate::error::Result;
use crate::error::UnsupportedError;
use crate::io::atomic::write_atomically;
use crate::tensor::LodTensor;

///
/// The LoD is written from its lengths in view, so every level starts at 0 as Paddle
/// requires, and only the elements in view are written. A level of one offset (no
/// sequences) is written as it is: Paddle loads it, though its `set_lod` refuses one.
///
/// # Errors
/// [`UnsupportedError::NoPaddleDType`] for `UInt16`, `UInt32` and `UInt64` values (before writing
/// anything); [`ErrorKind::Io`](crate::ErrorKind::Io) when writing fails.
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::io::paddle;
/// use arrow_array::types::Int64Type;
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![7, 8, 9], vec![])?;
/// let mut bytes = Vec::new();
/// paddle::write_tensor(&mut bytes, &t)?;
/// assert_eq!(&bytes[..12], &[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]); // version, 1 level
/// assert_eq!(paddle::read_tensor(&bytes)?, t);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn write_tensor<W: Write + ?Sized>(writer: &mut W, tensor: &LodTensor) -> Result<()> {
    let header = header(tensor)?;
    writer.write_all(&header)?;
    write_items(writer, tensor)?;
    Ok(())
}

/// Writes `tensors` as one combined file, records back to back, as `save_combine` does.
///
/// The file holds no names: Paddle gives the records the names of the model program's
/// persistable variables, sorted by name, so write them in that order.
///
/// # Errors
/// As [`write_tensor`]; every tensor's dtype is checked before anything is written.
///
/// # Example
/// The columns of a [`Dataset`](crate::Dataset), in order:
/// ```
/// use lodtensor::{Column, Dataset, LodTensor};
/// use lodtensor::io::paddle;
/// use arrow_array::types::{Int32Type, Int64Type};
/// let ds = Dataset::try_new(vec![
///     Column::new("ids", LodTensor::from_lengths::<Int64Type>(&[vec![2, 1]], vec![1, 2, 3], vec![])?),
///     Column::new("pos", LodTensor::from_lengths::<Int32Type>(&[vec![1, 1]], vec![0, 1, 2, 3], vec![2])?),
/// ])?;
/// let mut bytes = Vec::new();
/// let tensors = ds.columns().iter().map(|c| c.tensor()).collect::<lodtensor::Result<Vec<_>>>()?;
/// paddle::write_combined(&mut bytes, tensors)?;   // a side column would be refused here
/// let back = paddle::read_combined(&bytes, &["ids", "pos"])?;
/// assert_eq!(back[1], ("pos".to_owned(), ds.column("pos")?.clone()));
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn write_combined<'a, W: Write + ?Sized>(
    writer: &mut W,
    tensors: impl IntoIterator<Item = &'a LodTensor>,
) -> Result<()> {
    let tensors: Vec<&LodTensor> = tensors.into_iter().collect();
    check_dtypes(&tensors)?;
    for t in tensors {
        write_tensor(writer, t)?;
    }
    Ok(())
}

/// One record's bytes.
///
/// # Errors
/// As [`write_tensor`].
///
/// # Example
/// ```
/// # use lodtensor::LodTensor;
/// # use lodtensor::arrow::types::Int64Type;
/// # use lodtensor::io::paddle;
/// # let dir = tempfile::tempdir()?;
/// # let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![1])?;
/// let bytes = paddle::to_bytes(&t)?;
/// assert_eq!(paddle::read_tensor(&bytes)?, t);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_bytes(tensor: &LodTensor) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    write_tensor(&mut bytes, tensor)?;
    Ok(bytes)
}

/// Writes `tensor` to a `.pdtensor` file at `path`.
///
/// # Errors
/// As [`write_tensor`], with `path` attached ([`Error::path`](crate::Error::path)).
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::io::paddle;
/// use arrow_array::types::Float64Type;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("x.pdtensor");
/// let t = LodTensor::from_lengths::<Float64Type>(&[vec![1, 0, 2]], vec![0.5, 1.5, 2.5], vec![])?;
/// paddle::write_tensor_file(&path, &t)?;
/// assert_eq!(paddle::read_tensor_file(&path)?, t);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn write_tensor_file(path: impl AsRef<Path>, tensor: &LodTensor) -> Result<()> {
    write_file(path.as_ref(), &[tensor])
}

/// Writes `tensors` to a combined `.pdiparams` file at `path`.
///
/// # Errors
/// As [`write_combined`], with `path` attached ([`Error::path`](crate::Error::path)).
///
/// # Example
/// ```
/// # use lodtensor::LodTensor;
/// # use lodtensor::arrow::types::Int64Type;
/// # use lodtensor::io::paddle;
/// # let dir = tempfile::tempdir()?;
/// # let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![1])?;
/// let path = dir.path().join("all.pdiparams");
/// paddle::write_combined_file(&path, [&t, &t])?;
/// assert_eq!(paddle::read_records(&std::fs::read(&path)?)?.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_combined_file<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = &'a LodTensor>,
) -> Result<()> {
    let tensors: Vec<&LodTensor> = tensors.into_iter().collect();
    write_file(path.as_ref(), &tensors)
}

/// Writes `tensors` as a file at `path`, atomically: every dtype is checked before the
/// file is started, and the previous file stays until the new one is complete.
pub(super) fn write_file(path: &Path, tensors: &[&LodTensor]) -> Result<()> {
    check_dtypes(tensors).map_err(|e| e.in_file(path))?;
    write_atomically(path, |out| write_combined(out, tensors.iter().copied()))
}

/// Refuses the first tensor whose dtype Paddle files cannot hold.
fn check_dtypes(tensors: &[&LodTensor]) -> Result<()> {
    match tensors.iter().find(|t| paddle_code(t.dtype()).is_none()) {
        Some(t) => Err(UnsupportedError::NoPaddleDType { dtype: t.dtype() }.into()),
        None => Ok(()),
    }
}

/// Everything of a record before its items.
fn header(tensor: &LodTensor) -> Result<Vec<u8>> {
    let code = paddle_code(tensor.dtype()).ok_or(UnsupportedError::NoPaddleDType {
        dtype: tensor.dtype(),
    })?;
    let mut out = Vec::new();
    out.extend(LOD_TENSOR_VERSION.to_le_bytes());
    out.extend((tensor.num_levels() as u64).to_le_bytes());
    for lengths in tensor.lod().lengths() {
        out.extend((((lengths.len() + 1) * 8) as u64).to_le_bytes());
        let mut offset = 0u64;
        out.extend(offset.to_le_bytes());
        for len in lengths {
            offset += len as u64;
            out.extend(offset.to_le_bytes());
        }
    }
    out.extend(TENSOR_VERSION.to_le_bytes());
    let desc = encode_desc(code, &tensor.shape());
    let desc_size = i32::try_from(desc.len()).expect("a desc of at most 10 bytes per dim");
    out.extend(desc_size.to_le_bytes());
    out.extend(desc);
    Ok(out)
}
