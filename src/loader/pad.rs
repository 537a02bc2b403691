//! Padding one level of a batch's column into a dense tensor, for frameworks without
//! ragged input.
//!
//! The sequences of the chosen level become the rows; each row's elements (all elements
//! under the sequence, whatever levels lie between) are followed by zero elements up to the
//! longest row:
//!
//! ```text
//! level 1 lengths 3 1 2        values [rows, max_len, D…]   mask
//!                              a a a                        1 1 1
//!                              b 0 0                        1 0 0
//!                              c c 0                        1 1 0
//! ```

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, make_array};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayData;

use crate::error::{Error, Result};
use crate::tensor::LodTensor;
use crate::values::Values;

/// A padded copy of one level of a column: dense values, lengths and mask.
#[derive(Clone, Debug)]
pub struct Padded {
    /// `rows · max_len` elements, row-major: element `j` of row `i` is element
    /// `i · max_len + j`; padding elements are zero (false).
    pub values: Values,
    /// The dense shape `[rows, max_len, D1, D2, …]`.
    pub shape: Vec<usize>,
    /// The true length of each row, in elements.
    pub lengths: Vec<usize>,
    /// `rows · max_len` flags, `true` where an element is real.
    pub mask: Vec<bool>,
}

impl Padded {
    /// The share of padding elements, in `0..=1`.
    pub fn padding_ratio(&self) -> f64 {
        let total = self.mask.len();
        if total == 0 {
            return 0.0;
        }
        1.0 - self.lengths.iter().sum::<usize>() as f64 / total as f64
    }
}

/// Pads the sequences of `level` of `tensor`.
///
/// # Errors
/// [`Error::LevelOutOfBounds`] when `level` is not a level of `tensor` (a 0-level tensor
/// has none: it is dense already); [`Error::ElementShape`] when the padded size overflows.
pub fn pad(tensor: &LodTensor, level: usize) -> Result<Padded> {
    let lod = tensor.lod();
    let rows = lod.num_sequences(level)?;
    let mut ranges = Vec::with_capacity(rows);
    for i in 0..rows {
        ranges.push(lod.sequence_elements(level, i)?);
    }
    let lengths: Vec<usize> = ranges.iter().map(|r| r.end - r.start).collect();
    let max_len = lengths.iter().copied().max().unwrap_or(0);
    let size = tensor.values().element_size();
    let too_big = || Error::ElementShape {
        shape: tensor.element_shape().to_vec(),
        reason: format!("{rows} rows of {max_len} padded elements overflow"),
    };
    let cells = rows.checked_mul(max_len).ok_or_else(too_big)?;
    let items = cells.checked_mul(size).ok_or_else(too_big)?;
    let dtype = tensor.dtype();
    let array: ArrayRef = match dtype.byte_width() {
        Some(w) => {
            let bytes = items.checked_mul(w).ok_or_else(too_big)?;
            let mut out = MutableBuffer::from_len_zeroed(bytes);
            let src = tensor.values().items().to_data();
            let from = &src.buffers()[0].as_slice()[src.offset() * w..];
            let dst = out.as_slice_mut();
            for (i, r) in ranges.iter().enumerate() {
                let n = (r.end - r.start) * size * w;
                let s = r.start * size * w;
                let d = i * max_len * size * w;
                dst[d..d + n].copy_from_slice(&from[s..s + n]);
            }
            let data = ArrayData::builder(dtype.arrow_type())
                .len(items)
                .add_buffer(Buffer::from(out))
                .build()?;
            make_array(data)
        }
        None => {
            let b = tensor.values().booleans()?;
            let mut out = vec![false; items];
            for (i, r) in ranges.iter().enumerate() {
                for k in 0..(r.end - r.start) * size {
                    out[i * max_len * size + k] = b.value(r.start * size + k);
                }
            }
            Arc::new(BooleanArray::from(out))
        }
    };
    let mut mask = vec![false; cells];
    for (i, &n) in lengths.iter().enumerate() {
        mask[i * max_len..i * max_len + n].fill(true);
    }
    let mut shape = vec![rows, max_len];
    shape.extend_from_slice(tensor.element_shape());
    Ok(Padded {
        values: Values::try_new(array, tensor.element_shape().to_vec())?,
        shape,
        lengths,
        mask,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::{Float32Type, Int64Type};

    #[test]
    fn pads_each_level() {
        let t = LodTensor::from_lengths::<Int64Type>(
            &[vec![2, 1], vec![3, 1, 2]],
            (0..12).collect(),
            vec![2],
        )
        .unwrap();
        let p = pad(&t, 1).unwrap();
        assert_eq!(p.shape, vec![3, 3, 2]);
        assert_eq!(p.lengths, vec![3, 1, 2]);
        assert_eq!(
            p.values.typed::<Int64Type>().unwrap(),
            &[0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 8, 9, 10, 11, 0, 0]
        );
        assert_eq!(
            p.mask,
            vec![true, true, true, true, false, false, true, true, false]
        );
        assert!((p.padding_ratio() - 3.0 / 9.0).abs() < 1e-12);
        // Level 0: documents, their sentences flattened.
        let p = pad(&t, 0).unwrap();
        assert_eq!(
            (p.shape.clone(), p.lengths.clone()),
            (vec![2, 4, 2], vec![4, 2])
        );
        assert_eq!(
            &p.values.typed::<Int64Type>().unwrap()[8..12],
            &[8, 9, 10, 11]
        );
        // A view pads only what is in view.
        let v = t.slice_rows(1..2).unwrap();
        let p = pad(&v, 1).unwrap();
        assert_eq!(p.values.typed::<Int64Type>().unwrap(), &[8, 9, 10, 11]);
        assert!(matches!(
            pad(&t, 2),
            Err(Error::LevelOutOfBounds {
                level: 2,
                levels: 2
            })
        ));
    }

    #[test]
    fn pads_booleans_and_empty_batches() {
        use crate::lod::Lod;
        let t = LodTensor::try_new(
            Lod::try_from_lengths(&[vec![1, 2]]).unwrap(),
            Values::try_new(
                Arc::new(BooleanArray::from(vec![true, true, false])),
                vec![],
            )
            .unwrap(),
        )
        .unwrap();
        let p = pad(&t, 0).unwrap();
        let b = p.values.booleans().unwrap();
        assert_eq!(
            (0..4).map(|i| b.value(i)).collect::<Vec<_>>(),
            vec![true, false, true, false]
        );
        let e = LodTensor::from_lengths::<Float32Type>(&[vec![]], vec![], vec![]).unwrap();
        let p = pad(&e, 0).unwrap();
        assert_eq!(p.shape, vec![0, 0]);
        assert_eq!(p.padding_ratio(), 0.0);
    }
}
