//! `Sequences`: the sequences of one level of a tensor, for random access by index without
//! building a view per sequence.

#[cfg(doc)]
use super::LodTensor;
use crate::lod::{LevelOffsets, OffsetSlice, descend};

/// The sequences of one level of a [`LodTensor`], for fast random access (see
/// [`LodTensor::sequences`]).
///
/// # Example
/// ```
/// use lodtensor::LodTensor;
/// use lodtensor::arrow::types::Float32Type;
/// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
/// let sequences = t.sequences::<Float32Type>(0)?;
/// assert_eq!(sequences.get(1), Some(&[3.0][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Sequences<'a, T> {
    pub(super) offsets: OffsetSlice<'a>,
    pub(super) below: &'a [LevelOffsets],
    pub(super) items: &'a [T],
    pub(super) element_size: usize,
}

impl<'a, T> Sequences<'a, T> {
    /// The items of sequence `index`, row-major; `None` past the last sequence.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// let sentences = t.sequences::<Float32Type>(1)?;
    /// assert_eq!(sentences.get(2), Some(&[6., 7., 8., 9., 10., 11.][..]));
    /// assert_eq!(sentences.get(3), None);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn get(&self, index: usize) -> Option<&'a [T]> {
        let elements = descend(self.below, self.offsets.pair(index)?);
        self.items
            .get(elements.start * self.element_size..elements.end * self.element_size)
    }

    /// The number of sequences.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert_eq!(t.sequences::<Float32Type>(1)?.len(), 3);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.offsets.num_sequences()
    }

    /// Whether there are no sequences.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use lodtensor::arrow::types::Float32Type;
    /// // 2 documents of 2 and 1 sentences of 1, 2 and 3 words, each word a f32[2].
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], (0..12).map(|v| v as f32).collect(), vec![2])?;
    /// assert!(!t.sequences::<Float32Type>(0)?.is_empty());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
