//! The lengths a loader's plan reads from the index: one level of one column, every
//! shard's in one flat array, in 32 bits.

use arrow_array::cast::AsArray;

use super::{IndexObject, Uints};
use crate::error::{DataError, Error, Result};

/// Every shard's record batches' rows and samples' lengths at one level of one column,
/// shard after shard, flat (one array each, not one per shard), as a loader's plan takes
/// them: lengths in 32 bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ColumnLengths {
    /// How many record batches each shard has.
    pub batches: Vec<usize>,
    /// The rows of every record batch.
    pub batch_rows: Vec<usize>,
    /// Every sample's length.
    pub lengths: Vec<u32>,
}

/// A sample's length as plans keep it, in 32 bits: sample `row` of `found` elements at
/// `level` (at most `u32::MAX`, else refused).
///
/// # Errors
/// [`DataError::SequenceTooLong`] naming the level and the row; the caller adds the
/// column, record batch and file.
pub(crate) fn narrow_length(found: usize, level: usize, row: usize) -> Result<u32> {
    u32::try_from(found).map_err(|_| {
        DataError::SequenceTooLong {
            level,
            index: row,
            found,
            expected: u32::MAX as usize,
        }
        .into()
    })
}

impl ColumnLengths {
    /// Appends a shard of record batches of `batch_rows` rows (its samples' lengths are
    /// appended to `lengths` by the caller).
    pub(crate) fn push_batches(&mut self, batch_rows: impl IntoIterator<Item = usize>) {
        let before = self.batch_rows.len();
        self.batch_rows.extend(batch_rows);
        self.batches.push(self.batch_rows.len() - before);
    }
}

impl IndexObject {
    /// Per shard, the rows of its record batches and the lengths of `field` (its position
    /// in [`length_fields`](super::length_fields), level `level` of column `column`), appended to `out`; the
    /// object's rows were checked (`check`), so its samples add up to the shards' rows.
    ///
    /// # Errors
    /// A length of 2^32 or more, naming the column, record batch and row; the caller adds
    /// the shard (its position in the object, given by `shard`).
    pub(crate) fn lengths(
        &self,
        (field, column, level): (usize, &str, usize),
        out: &mut ColumnLengths,
        shard: &dyn Fn(usize, Error) -> Error,
    ) -> Result<()> {
        let mut at = 0;
        for batch in &self.batches {
            let list = |i: usize| {
                let list = batch.column(i).as_list::<i64>();
                (
                    list.value_offsets(),
                    Uints::of(list.values().as_ref()).expect("checked"),
                )
            };
            let (rows, row_values) = list(1);
            let (lengths, values) = list(field + 2);
            for r in 0..batch.num_rows() {
                let first = out.batch_rows.len();
                out.push_batches(
                    (rows[r] as usize..rows[r + 1] as usize).map(|i| row_values.get(i) as usize),
                );
                let range = lengths[r] as usize..lengths[r + 1] as usize;
                out.lengths.reserve(range.len());
                let (mut b, mut row) = (first, 0);
                for i in range {
                    while out.batch_rows.get(b).is_some_and(|&n| row >= n) {
                        (b, row) = (b + 1, 0);
                    }
                    let found = usize::try_from(values.get(i)).unwrap_or(usize::MAX);
                    let length = narrow_length(found, level, row)
                        .map_err(|e| shard(at, e.in_column(column, b - first)))?;
                    out.lengths.push(length);
                    row += 1;
                }
                at += 1;
            }
        }
        Ok(())
    }
}
