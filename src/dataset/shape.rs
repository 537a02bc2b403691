//! Element shapes folded back into a column whose innermost levels hold them: how a file
//! that lost its element shape reads as tensors again (format-spec.md section 3.1).

use super::Column;
use crate::error::DataError;
use crate::error::Result;
use crate::lod::{LevelOffsets, Lod, ascend};
use crate::tensor::LodTensor;
use crate::values::Values;

impl Column {
    /// The column with its `shape.len()` innermost levels folded into elements of `shape`:
    /// how a file that lost its element shape (a plain `list<float>` where a
    /// `fixed_shape_tensor` was) reads as tensors again. The innermost level folds when every
    /// one of its sequences has `D1·D2·…` entries, else the `shape.len()` innermost levels
    /// fold when each has sequences of exactly `D_j` entries. The values stay a view; a
    /// column whose elements already have `shape` is returned as it is.
    ///
    /// # Errors
    /// [`DataError::ElementShape`] naming the row, level and sequence whose length does not
    /// fit, or when the column has no level to fold or elements of another shape.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Column, LodTensor};
    /// use arrow_array::types::Float32Type;
    /// // Two rows of 2 and 1 sequences of 3 values each: what a `list<list<float>>` holds.
    /// let plain = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![3, 3, 3]], vec![0.0; 9], vec![])?;
    /// let folded = Column::new("x", plain).fold_element_shape(&[3])?;
    /// assert_eq!(folded.tensor()?.element_shape(), &[3]);
    /// assert_eq!(folded.tensor()?.lod().lengths(), vec![vec![2, 1]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn fold_element_shape(&self, shape: &[usize]) -> Result<Column> {
        let t = self.tensor()?;
        let bad = |reason: String| -> crate::error::Error {
            DataError::ElementShape {
                shape: shape.to_vec(),
                reason,
            }
            .into()
        };
        if t.element_shape() == shape {
            return Ok(self.clone());
        }
        if !t.element_shape().is_empty() {
            return Err(bad(format!(
                "the column's elements already have shape {:?}",
                t.element_shape()
            )));
        }
        let (k, r) = (t.num_levels(), shape.len());
        if k == 0 || r == 0 {
            return Err(bad(format!(
                "the column has {k} levels and scalar elements: there is no level to fold"
            )));
        }
        let t = t.rebased();
        let levels = t.lod().levels();
        let product: usize = shape.iter().product();
        let misfit = |level: usize, (i, len): (usize, usize), expected: usize| {
            bad(format!(
                "row {}, level {level}: sequence {i} has {len} values, not {expected}",
                ascend(&levels[..level], i)
            ))
        };
        // One innermost level of `product` entries (a flat fixed_shape_tensor, as this crate
        // writes it), else one level per dimension (nested fixed-size lists).
        let folded = match uniform(&levels[k - 1], product) {
            Ok(()) => 1,
            Err(first) if r == 1 || r > k => return Err(misfit(k - 1, first, product)),
            Err(_) => {
                for (j, &dim) in shape.iter().enumerate() {
                    let level = k - r + j;
                    uniform(&levels[level], dim).map_err(|at| misfit(level, at, dim))?;
                }
                r
            }
        };
        let kept = k - folded;
        let lod = Lod::try_new(levels[..kept].to_vec())?;
        let values = Values::try_new(t.values().items().clone(), shape.to_vec())?;
        let tensor = LodTensor::try_new(lod, values)?;
        let names = match self.level_names.get(..kept) {
            Some(names) if !self.level_names.is_empty() => names.to_vec(),
            _ => Vec::new(),
        };
        Column::new(self.name(), tensor).with_level_names(names)
    }
}

/// `Ok` when every sequence of `offsets` has `len` entries, else the first that does not
/// and its length.
fn uniform(offsets: &LevelOffsets, len: usize) -> std::result::Result<(), (usize, usize)> {
    for i in 1..offsets.len() {
        let found = offsets.get(i) - offsets.get(i - 1);
        if found != len {
            return Err((i - 1, found));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::tests::dataset;
    use crate::error::{Error, ErrorKind};

    #[test]
    fn folds_innermost_levels_into_elements_naming_the_misfit() {
        let tokens = dataset().columns()[0].tensor().unwrap().clone();
        // What a writer that lost the element shape stores: one more level of 4 scalars.
        let items = tokens.values().items().clone();
        let mut offsets = tokens.lod().offsets();
        offsets.push((0..=15).map(|e| e * 4).collect());
        let plain = LodTensor::try_new(
            Lod::try_from_offsets(&offsets).unwrap(),
            Values::try_new(items.clone(), vec![]).unwrap(),
        )
        .unwrap();
        let column = Column::new("tokens", plain.clone());
        let folded = column.fold_element_shape(&[2, 2]).unwrap();
        assert_eq!(folded.tensor().unwrap(), &tokens);
        assert_eq!(folded.fold_element_shape(&[2, 2]).unwrap(), folded);
        // The values stay where they were.
        assert_eq!(
            folded
                .tensor()
                .unwrap()
                .values()
                .items()
                .to_data()
                .buffers()[0]
                .as_ptr(),
            items.to_data().buffers()[0].as_ptr()
        );
        // Row 2 holds sentences 4 and 5 of level 1, words 10..15 of level 2.
        let mut bad = offsets.clone();
        bad[2] = (0..=15).map(|e| e * 4).collect();
        bad[2][13] -= 1;
        let misfit = Column::new(
            "tokens",
            LodTensor::try_new(
                Lod::try_from_offsets(&bad).unwrap(),
                Values::try_new(items, vec![]).unwrap(),
            )
            .unwrap(),
        );
        let err = misfit.fold_element_shape(&[4]).unwrap_err();
        assert!(
            err.to_string()
                .contains("row 2, level 2: sequence 12 has 3 values, not 4"),
            "{err}"
        );
        assert!(matches!(
            column.fold_element_shape(&[5]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ElementShape { .. }))
        ));
    }
}
