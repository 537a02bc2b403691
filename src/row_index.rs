//! Rows split into parts (the record batches of a file, the tensors of a column): where
//! each part starts, as prefix sums of their row counts.

use std::ops::Range;

use crate::error::ArgumentError;
use crate::error::Result;

/// Where each part of a sequence of parts starts (the record batches of a file, for
/// instance), as prefix sums of their row counts: the map from a global row to its part and
/// its row inside the part, in O(log parts).
///
/// ```text
/// parts of 3, 2 and 4 rows    starts [0, 3, 5, 9]
/// global row 6                -> part 2, row 1
/// global rows 2..6            -> part 0 rows 2..3, part 1 rows 0..2, part 2 rows 0..1
/// ```
///
/// # Example
/// ```
/// use lodtensor::RowIndex;
/// let index = RowIndex::from_counts([3, 2, 4]);
/// assert_eq!(index.num_rows(), 9);
/// assert_eq!(index.locate(6), Some((2, 1)));
/// assert_eq!(index.locate(9), None);
/// assert_eq!(index.part_rows(1), 3..5);
/// assert_eq!(index.split(2..6)?, vec![(0, 2..3), (1, 0..2), (2, 0..1)]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowIndex {
    /// `starts[p]` is the first global row of part `p`; one more entry closes the last part.
    starts: Vec<usize>,
}

impl Default for RowIndex {
    fn default() -> Self {
        RowIndex { starts: vec![0] }
    }
}

impl RowIndex {
    /// The index of parts of `counts` rows, in order.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.starts(), &[0, 4, 4, 7]);
    /// ```
    pub fn from_counts(counts: impl IntoIterator<Item = usize>) -> Self {
        let mut starts = vec![0];
        let mut total = 0;
        for n in counts {
            total += n;
            starts.push(total);
        }
        RowIndex { starts }
    }

    /// The number of rows of all parts.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.num_rows(), 7);
    /// ```
    pub fn num_rows(&self) -> usize {
        *self.starts.last().expect("never empty")
    }

    /// The number of parts.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.num_parts(), 3);
    /// ```
    pub fn num_parts(&self) -> usize {
        self.starts.len() - 1
    }

    /// The first row of every part, closed by the number of rows.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.starts(), &[0, 4, 4, 7]);
    /// ```
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }

    /// The global rows of part `part`.
    ///
    /// # Panics
    /// When `part >= num_parts()`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.part_rows(2), 4..7);
    /// ```
    pub fn part_rows(&self, part: usize) -> Range<usize> {
        self.starts[part]..self.starts[part + 1]
    }

    /// The part holding global row `row` and the row's index inside it; `None` past the
    /// last row. Empty parts hold no row.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.locate(4), Some((2, 0)));  // the empty part is skipped
    /// assert_eq!(rows.locate(7), None);
    /// ```
    #[inline]
    pub fn locate(&self, row: usize) -> Option<(usize, usize)> {
        if row >= self.num_rows() {
            return None;
        }
        let part = self.starts.partition_point(|&start| start <= row) - 1;
        Some((part, row - self.starts[part]))
    }

    /// As [`RowIndex::locate`], with an error past the last row.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`] when `row >= num_rows()`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.try_locate(6)?, (2, 2));
    /// assert!(rows.try_locate(7).is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_locate(&self, row: usize) -> Result<(usize, usize)> {
        self.locate(row).ok_or_else(|| {
            ArgumentError::RowsOutOfBounds {
                start: row,
                end: row + 1,
                len: self.num_rows(),
            }
            .into()
        })
    }

    /// The pieces of the global rows `rows`, one per part they touch, in order, each as the
    /// part and the rows inside it. An empty range touches no part.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`] when `rows` is reversed or ends past the last row.
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// // Three record batches (or shards) of 4, 0 and 3 rows.
    /// let rows = RowIndex::from_counts([4, 0, 3]);
    /// assert_eq!(rows.split(2..6)?, vec![(0, 2..4), (2, 0..2)]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn split(&self, rows: Range<usize>) -> Result<Vec<(usize, Range<usize>)>> {
        self.check(&rows)?;
        Ok(self
            .starts
            .windows(2)
            .enumerate()
            .filter_map(|(part, w)| {
                let (lo, hi) = (rows.start.max(w[0]), rows.end.min(w[1]));
                (lo < hi).then(|| (part, lo - w[0]..hi - w[0]))
            })
            .collect())
    }

    /// Refuses a range that is reversed or ends past the last row.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::RowIndex;
    /// let index = RowIndex::from_counts([2, 3]);
    /// assert!(index.check(&(1..5)).is_ok());
    /// assert!(index.check(&(4..6)).is_err());                      // past the last row
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, rows: &Range<usize>) -> Result<()> {
        ArgumentError::check_rows(rows, self.num_rows())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against the model: the global rows listed part by part.
        #[test]
        fn agrees_with_the_listed_rows(
            counts in proptest::collection::vec(0usize..5, 0..6),
            rows in (0usize..30, 0usize..30).prop_map(|(a, b)| a.min(b)..a.max(b)),
        ) {
            let index = RowIndex::from_counts(counts.iter().copied());
            let listed: Vec<(usize, usize)> = counts
                .iter()
                .enumerate()
                .flat_map(|(p, &n)| (0..n).map(move |r| (p, r)))
                .collect();
            prop_assert_eq!(index.num_rows(), listed.len());
            for (row, &at) in listed.iter().enumerate() {
                prop_assert_eq!(index.locate(row), Some(at));
            }
            prop_assert_eq!(index.locate(listed.len()), None);
            let past = index.try_locate(listed.len()).map_err(crate::error::Error::into_kind);
            let refused = matches!(
                past,
                Err(crate::error::ErrorKind::Argument(ArgumentError::RowsOutOfBounds { .. }))
            );
            prop_assert!(refused);
            match index.split(rows.clone()) {
                Ok(pieces) => {
                    let flat: Vec<(usize, usize)> = pieces
                        .iter()
                        .flat_map(|(p, r)| r.clone().map(move |r| (*p, r)))
                        .collect();
                    prop_assert_eq!(&flat[..], &listed[rows]);
                }
                Err(_) => prop_assert!(rows.end > listed.len()),
            }
        }
    }

    #[test]
    fn reversed_ranges_are_refused() {
        let index = RowIndex::from_counts([2, 2]);
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 3..1;
        assert!(index.split(reversed).is_err());
        assert_eq!(RowIndex::default().num_parts(), 0);
    }
}
