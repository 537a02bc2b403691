//! `LodTensor`: a LoD index over values, and its views.
//!
//! Every slice is a view: it shares the offset and value buffers of its source and costs
//! O(levels). Like a sliced Arrow list, a view's offsets may start past 0; the values it
//! holds run from element 0 to the last element in view, and [`LodTensor::elements`] says
//! which of them are in view.

mod sequences;

use crate::error::{ArgumentError, DataError};
use std::ops::Range;

use arrow_array::types::ArrowPrimitiveType;

use crate::error::Result;
use crate::lod::Lod;
use crate::values::{DType, Values};
pub use sequences::Sequences;

/// A mini-batch of nested variable-length sequences: a [`Lod`] over [`Values`].
///
/// # Example
/// The reference documents' 2-level example, each word a 1-element vector:
/// ```
/// use lodtensor::LodTensor;
/// use arrow_array::types::Int64Type;
/// let t = LodTensor::from_lengths::<Int64Type>(
///     &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
///     (0..15).collect(),
///     vec![1],
/// )?;
/// assert_eq!(t.shape(), vec![15, 1]);
/// let article = t.branch(&[2])?;          // the <2>-slice
/// assert_eq!(article.elements(), 10..15);
/// assert_eq!(article.typed_values::<Int64Type>()?, &[10, 11, 12, 13, 14]);
/// assert_eq!(t.sequence_values::<Int64Type>(1, 4)?, &[10, 11]); // the <2,0> sentence
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LodTensor {
    lod: Lod,
    values: Values,
}

impl LodTensor {
    /// A tensor from a LoD and the values its last level indexes.
    ///
    /// # Errors
    /// [`DataError::ElementCountMismatch`] when the last level's last offset is not the number
    /// of elements of `values`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::{Lod, LodTensor, Values};
    /// let lod = Lod::try_from_lengths(&[vec![2, 1]])?;
    /// let t = LodTensor::try_new(lod.clone(), Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?)?;
    /// assert_eq!(t.shape(), vec![3, 2]);
    /// // Two elements where the LoD indexes three:
    /// assert!(LodTensor::try_new(lod, Values::from_vec::<Float32Type>(vec![1., 2.], vec![])?).is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_new(lod: Lod, values: Values) -> Result<Self> {
        if let Some(last) = lod.levels().last()
            && last.last() != values.num_elements()
        {
            return Err(DataError::ElementCountMismatch {
                level: lod.num_levels() - 1,
                last_offset: last.last() as i64,
                elements: values.num_elements(),
            }
            .into());
        }
        Ok(LodTensor { lod, values })
    }

    /// Like [`LodTensor::try_new`], for literals.
    ///
    /// # Panics
    /// When [`LodTensor::try_new`] fails.
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::{Lod, LodTensor, Values};
    /// let t = LodTensor::new(Lod::try_from_lengths(&[vec![2, 1]])?, Values::from_vec::<Int64Type>(vec![7, 8, 9], vec![])?);
    /// assert_eq!(t.num_rows(), 2);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn new(lod: Lod, values: Values) -> Self {
        Self::try_new(lod, values).expect("invalid LodTensor")
    }

    /// A tensor from lengths and native items, like Paddle's `create_lod_tensor`.
    ///
    /// # Errors
    /// As [`Lod::try_from_lengths`], [`Values::from_vec`] and [`LodTensor::try_new`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::LodTensor;
    /// let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![])?;
    /// assert_eq!((t.num_levels(), t.num_rows(), t.shape()), (2, 3, vec![15]));
    /// assert_eq!(t.typed_values::<Int64Type>()?.len(), 15);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn from_lengths<T: ArrowPrimitiveType>(
        lengths: &[Vec<usize>],
        items: Vec<T::Native>,
        element_shape: Vec<usize>,
    ) -> Result<Self> {
        Self::try_new(
            Lod::try_from_lengths(lengths)?,
            Values::from_vec::<T>(items, element_shape)?,
        )
    }

    /// A dense tensor of `shape` `[N, D1, …]` with no LoD level (a 0-level tensor: one row
    /// per element, an `arrow.fixed_shape_tensor` column), `items` row-major: an embedding or
    /// an image per sample, a label (`[N]`).
    ///
    /// # Errors
    /// [`DataError::ElementShape`] when `shape` is empty or
    /// its product is not the number of items; as [`Values::from_vec`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::LodTensor;
    /// let embedding = LodTensor::dense::<Float32Type>((0..6).map(|i| i as f32).collect(), &[3, 2])?;
    /// assert_eq!((embedding.num_levels(), embedding.num_rows(), embedding.shape()), (0, 3, vec![3, 2]));
    /// assert_eq!(embedding.slice_rows(1..2)?.typed_values::<Float32Type>()?, &[2., 3.]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn dense<T: ArrowPrimitiveType>(items: Vec<T::Native>, shape: &[usize]) -> Result<Self> {
        let product = shape.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
        if shape.is_empty() || product != Some(items.len()) {
            return Err(crate::error::DataError::ElementShape {
                shape: shape.to_vec(),
                reason: format!(
                    "a dense tensor's shape is [N, D1, …] with N·D1·… = {} items",
                    items.len()
                ),
            }
            .into());
        }
        Self::try_new(
            Lod::default(),
            Values::from_vec::<T>(items, shape[1..].to_vec())?,
        )
    }

    /// The LoD index.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.lod().lengths(), vec![vec![2, 1], vec![1, 2, 3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn lod(&self) -> &Lod {
        &self.lod
    }

    /// The values the last level indexes (elements before the view included).
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.values().num_elements(), 6);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn values(&self) -> &Values {
        &self.values
    }

    /// The LoD and the values.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// let (lod, values) = t.into_parts();
    /// assert_eq!((lod.num_levels(), values.element_size()), (2, 2));
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn into_parts(self) -> (Lod, Values) {
        (self.lod, self.values)
    }

    /// The number of levels.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.num_levels(), 2);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn num_levels(&self) -> usize {
        self.lod.num_levels()
    }

    /// The number of top-level sequences (samples, Arrow rows); the number of elements for a
    /// 0-level tensor.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.num_rows(), 2);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.lod
            .num_rows()
            .unwrap_or_else(|| self.values.num_elements())
    }

    /// The item type.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.dtype(), lodtensor::DType::Float32);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// The shape of one element.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.element_shape(), &[2]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn element_shape(&self) -> &[usize] {
        self.values.element_shape()
    }

    /// The elements in view.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.elements(), 0..6);
    /// assert_eq!(t.slice_rows(1..2)?.elements(), 3..6);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn elements(&self) -> Range<usize> {
        if self.lod.num_levels() == 0 {
            0..self.values.num_elements()
        } else {
            self.lod.elements()
        }
    }

    /// The shape of the dense tensor in view, `[N, D1, D2, …]`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.shape(), vec![6, 2]);
    /// assert_eq!(t.slice_rows(1..2)?.shape(), vec![3, 2]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn shape(&self) -> Vec<usize> {
        let elements = self.elements();
        std::iter::once(elements.end - elements.start)
            .chain(self.element_shape().iter().copied())
            .collect()
    }

    /// The items of the elements in view, row-major, without a copy.
    ///
    /// # Errors
    /// [`ArgumentError::DTypeMismatch`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// let second = t.slice_rows(1..2)?;
    /// assert_eq!(second.typed_values::<Float32Type>()?, &[6., 7., 8., 9., 10., 11.]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn typed_values<T: ArrowPrimitiveType>(&self) -> Result<&[T::Native]> {
        self.items_of::<T>(self.elements())
    }

    /// The items of sequence `index` at `level`, in O(levels), without a copy.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`], [`ArgumentError::SequenceOutOfBounds`], [`ArgumentError::DTypeMismatch`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::LodTensor;
    /// let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![])?;
    /// assert_eq!(t.sequence_values::<Int64Type>(1, 4)?, &[10, 11]);     // sentence 4
    /// assert_eq!(t.sequence_values::<Int64Type>(0, 1)?, &[9]);          // article 1
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn sequence_values<T: ArrowPrimitiveType>(
        &self,
        level: usize,
        index: usize,
    ) -> Result<&[T::Native]> {
        self.items_of::<T>(self.lod.sequence_elements(level, index)?)
    }

    /// Random access to the sequences of `level`, resolved once: each
    /// [`Sequences::get`] is then a bounds check, two offset reads per level below and a
    /// slice, with no dispatch. For hot loops over many lookups.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`], [`ArgumentError::DTypeMismatch`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use arrow_array::types::Int64Type;
    /// let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![])?;
    /// let sentences = t.sequences::<Int64Type>(1)?;
    /// assert_eq!(sentences.len(), 6);
    /// assert_eq!(sentences.get(4), Some(&[10, 11][..]));
    /// assert_eq!(t.sequences::<Int64Type>(0)?.get(2), Some(&[10, 11, 12, 13, 14][..]));
    /// assert_eq!(sentences.get(6), None);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn sequences<T: ArrowPrimitiveType>(
        &self,
        level: usize,
    ) -> Result<Sequences<'_, T::Native>> {
        let (offsets, below) = self.lod.level_in_view(level)?;
        Ok(Sequences {
            offsets,
            below,
            items: self.values.typed::<T>()?,
            element_size: self.values.element_size(),
        })
    }

    #[inline]
    fn items_of<T: ArrowPrimitiveType>(&self, elements: Range<usize>) -> Result<&[T::Native]> {
        let size = self.values.element_size();
        Ok(&self.values.typed::<T>()?[elements.start * size..elements.end * size])
    }

    /// Rows `rows` (top-level sequences, or elements of a 0-level tensor), as a view.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::LodTensor;
    /// let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![])?;
    /// let v = t.slice_rows(1..3)?;                      // articles 1 and 2, a view
    /// assert_eq!(v.lod().lengths(), vec![vec![1, 2], vec![1, 2, 3]]);
    /// assert_eq!(v.typed_values::<Int64Type>()?, &[9, 10, 11, 12, 13, 14]);
    /// assert_eq!(v.rebased().lod().offsets(), vec![vec![0, 1, 3], vec![0, 1, 3, 6]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn slice_rows(&self, rows: Range<usize>) -> Result<Self> {
        if self.lod.num_levels() == 0 {
            ArgumentError::check_rows(&rows, self.values.num_elements())?;
            return Ok(LodTensor {
                lod: Lod::default(),
                values: self.values.slice_elements(rows),
            });
        }
        self.with_lod(self.lod.slice_rows(rows)?)
    }

    /// The `<level, index>`-slice: sequence `index` at `level` with the levels below it,
    /// as a view.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`], [`ArgumentError::SequenceOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::LodTensor;
    /// let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![])?;
    /// let article = t.slice_sequence(0, 2)?;
    /// assert_eq!(article.lod().lengths(), vec![vec![2], vec![2, 3]]);
    /// assert_eq!(t.branch(&[2, 0])?.typed_values::<Int64Type>()?, &[10, 11]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn slice_sequence(&self, level: usize, index: usize) -> Result<Self> {
        self.with_lod(self.lod.slice_sequence(level, index)?)
    }

    /// The slice a branch names (`[2]`: article 2; `[2, 0]`: its first sentence).
    ///
    /// # Errors
    /// As [`Lod::branch_position`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// // Document 0, its sentence 1: words 1 and 2.
    /// assert_eq!(t.branch(&[0, 1])?.typed_values::<Float32Type>()?, &[2., 3., 4., 5.]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn branch(&self, branch: &[usize]) -> Result<Self> {
        let (level, index) = self.lod.branch_position(branch)?;
        self.slice_sequence(level, index)
    }

    /// The tensor without its `n` outermost levels (documents → sentences), as a view.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`] when `n > num_levels()`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::Int64Type;
    /// use lodtensor::LodTensor;
    /// let t = LodTensor::from_lengths::<Int64Type>(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]], (0..15).collect(), vec![])?;
    /// let sentences = t.drop_outer_levels(1)?;
    /// assert_eq!(sentences.lod().lengths(), vec![vec![3, 2, 4, 1, 2, 3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn drop_outer_levels(&self, n: usize) -> Result<Self> {
        let lod = self.lod.drop_outer_levels(n)?;
        if lod.num_levels() == 0 {
            return Ok(LodTensor {
                lod,
                values: self.values.slice_elements(self.elements()),
            });
        }
        self.with_lod(lod)
    }

    /// A copy of the LoD with offsets starting at 0 (as Paddle requires) over a view of
    /// the values in view.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// let second = t.slice_rows(1..2)?.rebased();
    /// assert_eq!(second.lod().offsets(), vec![vec![0, 1], vec![0, 3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn rebased(&self) -> Self {
        if self.lod.is_zero_based() {
            return self.clone();
        }
        let (lod, elements) = self.lod.rebased();
        LodTensor {
            lod,
            values: self.values.slice_elements(elements),
        }
    }

    /// This tensor's values under a view `lod` of its own LoD.
    fn with_lod(&self, lod: Lod) -> Result<Self> {
        let end = lod.elements().end;
        Ok(LodTensor {
            lod,
            values: self.values.slice_elements(0..end),
        })
    }
}

/// Two tensors are equal when their LoDs are (lengths in view) and their elements in view
/// are.
impl PartialEq for LodTensor {
    fn eq(&self, other: &Self) -> bool {
        self.lod == other.lod
            && self.element_shape() == other.element_shape()
            && self.dtype() == other.dtype()
            && {
                let (a, b) = (self.elements(), other.elements());
                let size = self.values.element_size();
                let a = self
                    .values
                    .items()
                    .slice(a.start * size, (a.end - a.start) * size);
                let b = other
                    .values
                    .items()
                    .slice(b.start * size, (b.end - b.start) * size);
                a.to_data() == b.to_data()
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, Error, ErrorKind};
    use arrow_array::types::{Float32Type, Int64Type};

    fn example() -> LodTensor {
        LodTensor::from_lengths::<Int64Type>(
            &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
            (0..15).collect(),
            vec![1],
        )
        .unwrap()
    }

    #[test]
    fn slices_share_the_values() {
        let t = example();
        let base = t.values().as_ptr();
        for s in [
            t.slice_rows(1..3).unwrap(),
            t.slice_sequence(1, 4).unwrap(),
            t.branch(&[2, 0]).unwrap(),
            t.drop_outer_levels(2).unwrap(),
        ] {
            let items = s.typed_values::<Int64Type>().unwrap();
            let p = items.as_ptr() as usize;
            assert!(
                p >= base as usize && p + std::mem::size_of_val(items) <= base as usize + 15 * 8
            );
        }
        assert_eq!(
            t.branch(&[2, 0])
                .unwrap()
                .typed_values::<Int64Type>()
                .unwrap(),
            &[10, 11]
        );
        let sentences = t.drop_outer_levels(1).unwrap();
        assert_eq!(sentences.num_rows(), 6);
        assert_eq!(
            sentences.sequence_values::<Int64Type>(0, 2).unwrap(),
            &[5, 6, 7, 8]
        );
    }

    #[test]
    fn sequences_of_views_agree_with_sequence_values() {
        let t = example();
        for view in [
            t.clone(),
            t.slice_rows(1..3).unwrap(),
            t.slice_sequence(0, 2).unwrap(),
        ] {
            for level in 0..2 {
                let seqs = view.sequences::<Int64Type>(level).unwrap();
                assert_eq!(seqs.len(), view.lod().num_sequences(level).unwrap());
                for j in 0..=seqs.len() {
                    assert_eq!(
                        seqs.get(j),
                        view.sequence_values::<Int64Type>(level, j).ok()
                    );
                }
            }
        }
        assert!(matches!(
            t.sequences::<Float32Type>(1).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::DTypeMismatch { .. }))
        ));
        assert!(matches!(
            t.sequences::<Int64Type>(2).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 2,
                levels: 2
            }))
        ));
    }

    #[test]
    fn rebased_copies_offsets_only() {
        let t = example().slice_rows(1..3).unwrap();
        let r = t.rebased();
        assert!(r.lod().is_zero_based());
        assert_eq!(r.elements(), 0..6);
        assert_eq!(r.values().num_elements(), 6);
        assert_eq!(r, t);
        assert_eq!(
            r.typed_values::<Int64Type>().unwrap(),
            &[9, 10, 11, 12, 13, 14]
        );
    }

    #[test]
    fn zero_level_tensor_is_a_plain_tensor() {
        // Fixed-size images: 4 elements of 2x2, no LoD.
        let t = LodTensor::dense::<Float32Type>((0..16).map(|i| i as f32).collect(), &[4, 2, 2])
            .unwrap();
        assert_eq!((t.num_rows(), t.shape()), (4, vec![4, 2, 2]));
        let s = t.slice_rows(1..3).unwrap();
        assert_eq!(s.typed_values::<Float32Type>().unwrap()[0], 4.0);
        assert_eq!(s.shape(), vec![2, 2, 2]);
        assert!(matches!(
            t.slice_rows(3..5).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::RowsOutOfBounds {
                start: 3,
                end: 5,
                len: 4
            }))
        ));
        assert!(matches!(
            t.slice_sequence(0, 0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 0,
                levels: 0
            }))
        ));
    }

    #[test]
    fn element_count_must_match() {
        let lod = Lod::try_from_lengths(&[vec![3, 1, 2]]).unwrap();
        let values = Values::from_vec::<Int64Type>(vec![0; 5], vec![]).unwrap();
        assert!(matches!(
            LodTensor::try_new(lod, values).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ElementCountMismatch {
                level: 0,
                last_offset: 6,
                elements: 5
            }))
        ));
    }
}
