//! The LoD (level-of-detail) index: levels of offsets, their rules, and slicing arithmetic.
//!
//! Level 0 is the outermost level (documents), the last level indexes elements (the rows of
//! the values tensor). `offsets` always means n + 1 non-decreasing positions, `lengths`
//! always n counts. The reference documents' 2-level example, three articles of 3, 1 and 2
//! sentences of 3, 2, 4, 1, 2 and 3 words:
//!
//! ```text
//! lengths                      offsets
//! level 0: 3           1  2    [0,          3, 4,     6]   (into level 1)
//! level 1: 3   2  4    1  2  3 [0, 3, 5, 9, 10, 12,  15]   (into elements)
//! elements ||| || |||| |  || |||
//! ```
//!
//! Each level is the offset buffer of one nested Arrow `List` (`i32`) or `LargeList` (`i64`)
//! and follows Arrow's rules for them, so a LoD can also be a *view*: like a sliced Arrow
//! list, level 0 may start past 0 and a deeper level may hold entries before the part in
//! view. Level `k`'s offsets always point into level `k + 1` as a whole; the part of level
//! `k + 1` in view runs from level `k`'s first offset to its last, which is always level
//! `k + 1`'s last offset. Slicing is therefore O(levels) and never copies:
//!
//! ```text
//! rows 2..3 of the example                        in view
//! level 0: [4, 6]                                  sequences 4..6 of level 1
//! level 1: [0, 3, 5, 9, 10, 12, 15]                elements 10..15
//! ```

mod draw;
mod level;

use std::ops::Range;

use crate::error::Result;
use crate::error::{ArgumentError, DataError};

use level::to_width;
pub use level::{LevelOffsets, OffsetWidth};

/// The most LoD levels a tensor read from a file (Paddle, Parquet, a shard manifest) may
/// have. Arrow IPC readers refuse a schema nested past their flatbuffers depth limit (about
/// 60 lists for this crate's reader), so a deeper tensor could be written but not read
/// back; and readers that recurse per level are bounded by this, not by the stack.
///
/// # Example
/// ```
/// assert_eq!(lodtensor::MAX_LEVELS, 32);
/// ```
pub const MAX_LEVELS: usize = 32;
pub(crate) use level::{OffsetSlice, ascend, descend, validate_offsets};

/// A LoD index: zero or more levels of offsets, level 0 outermost.
///
/// Rules (Paddle's, in Arrow's form): every level has at least one offset, starts at or
/// above 0 and never decreases; level `k`'s last offset is the number of sequences of level
/// `k + 1` (its offsets minus one); the last level's last offset is the number of elements
/// of the values (checked by [`crate::LodTensor`]). Empty sequences are valid.
///
/// # Example
/// ```
/// use lodtensor::Lod;
/// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
/// assert_eq!(lod.offsets(), vec![vec![0, 3, 4, 6], vec![0, 3, 5, 9, 10, 12, 15]]);
/// assert_eq!(lod.lengths(), vec![vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]);
/// assert_eq!(lod.sequence_elements(0, 2)?, 10..15);
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Lod {
    levels: Vec<LevelOffsets>,
}

impl Lod {
    /// A LoD from validated levels, checking the rules between levels.
    ///
    /// # Errors
    /// [`DataError::LevelEndMismatch`] when a level's last offset is not the number of
    /// sequences of the next level.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, Lod};
    /// let top = LevelOffsets::try_new_i64(0, vec![0, 2, 3].into())?;
    /// let bottom = LevelOffsets::try_new_i64(1, vec![0, 1, 3, 6].into())?;
    /// let lod = Lod::try_new(vec![top.clone(), bottom])?;
    /// assert_eq!(lod.lengths(), vec![vec![2, 1], vec![1, 2, 3]]);
    /// // Level 0 ends at 3, but level 1 holds one sequence:
    /// let short = LevelOffsets::try_new_i64(1, vec![0, 4].into())?;
    /// assert!(Lod::try_new(vec![top, short]).is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_new(levels: Vec<LevelOffsets>) -> Result<Self> {
        for (level, pair) in levels.windows(2).enumerate() {
            let sequences = pair[1].len() - 1;
            if pair[0].last() != sequences {
                return Err(DataError::LevelEndMismatch {
                    level,
                    last_offset: pair[0].last() as i64,
                    sequences,
                }
                .into());
            }
        }
        Ok(Lod { levels })
    }

    /// Like [`Lod::try_new`], for literals.
    ///
    /// # Panics
    /// When [`Lod::try_new`] fails.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, Lod};
    /// let lod = Lod::new(vec![LevelOffsets::try_new_i64(0, vec![0, 2, 3].into())?]);
    /// assert_eq!(lod.lengths(), vec![vec![2, 1]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn new(levels: Vec<LevelOffsets>) -> Self {
        Self::try_new(levels).expect("invalid LoD")
    }

    /// A LoD from `i64` offsets, one `Vec` per level (Paddle's `lod()`).
    ///
    /// # Errors
    /// Any rule broken, naming the level and index.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DataError, ErrorKind, Lod};
    /// let err = Lod::try_from_offsets(&[vec![0, 3, 4, 7], vec![0, 3, 5, 9, 10, 12, 15]]).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::Data(DataError::LevelEndMismatch { level: 0, last_offset: 7, sequences: 6 })));
    /// ```
    pub fn try_from_offsets<L: AsRef<[i64]>>(offsets: &[L]) -> Result<Self> {
        let levels = offsets
            .iter()
            .enumerate()
            .map(|(level, o)| LevelOffsets::try_new_i64(level, o.as_ref().to_vec().into()))
            .collect::<Result<_>>()?;
        Self::try_new(levels)
    }

    /// A LoD from lengths, one `Vec` per level (Paddle's `recursive_sequence_lengths`),
    /// with `i64` offsets.
    ///
    /// # Errors
    /// [`DataError::LevelEndMismatch`] when a level's lengths do not add up to the number of
    /// sequences of the next level; [`DataError::OffsetOverflow`] when a sum overflows.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// assert_eq!(lod.offsets(), vec![vec![0, 3, 4, 6], vec![0, 3, 5, 9, 10, 12, 15]]);
    /// assert!(Lod::try_from_lengths(&[vec![2], vec![1]]).is_err()); // 2 sequences named, 1 given
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_from_lengths<L: AsRef<[usize]>>(lengths: &[L]) -> Result<Self> {
        Self::try_from_lengths_with_width(lengths, OffsetWidth::I64)
    }

    /// Like [`Lod::try_from_lengths`], with offsets of the given width.
    ///
    /// # Errors
    /// As [`Lod::try_from_lengths`]; [`DataError::OffsetOverflow`] when an offset does not fit
    /// `width`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, OffsetWidth};
    /// let lod = Lod::try_from_lengths_with_width(&[vec![2, 1]], OffsetWidth::I32)?;
    /// assert_eq!(lod.levels()[0].width(), OffsetWidth::I32);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_from_lengths_with_width<L: AsRef<[usize]>>(
        lengths: &[L],
        width: OffsetWidth,
    ) -> Result<Self> {
        let levels = lengths
            .iter()
            .enumerate()
            .map(|(level, l)| {
                let l = l.as_ref();
                let mut positions = Vec::with_capacity(l.len() + 1);
                let mut end = 0usize;
                positions.push(0);
                for (i, &n) in l.iter().enumerate() {
                    end = end.checked_add(n).ok_or(DataError::OffsetOverflow {
                        level,
                        index: i + 1,
                        value: end as u128 + n as u128,
                        width: "usize",
                    })?;
                    positions.push(end);
                }
                to_width(level, positions, width)
            })
            .collect::<Result<_>>()?;
        Self::try_new(levels)
    }

    /// The same LoD with every level's offsets in `width` (copies the levels that change).
    ///
    /// # Errors
    /// [`DataError::OffsetOverflow`] when an offset does not fit `width`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{Lod, OffsetWidth};
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// let narrow = lod.clone().with_offset_width(OffsetWidth::I32)?;
    /// assert_eq!(narrow, lod); // equal LoDs: the same lengths, whatever the width
    /// assert_eq!(narrow.levels()[1].width(), OffsetWidth::I32);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn with_offset_width(self, width: OffsetWidth) -> Result<Self> {
        let levels = self
            .levels
            .into_iter()
            .enumerate()
            .map(|(level, o)| {
                if o.width() == width {
                    Ok(o)
                } else {
                    to_width(level, (0..o.len()).map(|i| o.get(i)).collect(), width)
                }
            })
            .collect::<Result<_>>()?;
        Ok(Lod { levels })
    }

    /// The number of levels (0 for a plain tensor).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.num_levels(), 2);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The levels' offset buffers, as a whole (including entries before the part in view).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.levels()[1].to_vec(), vec![0, 1, 3, 6]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn levels(&self) -> &[LevelOffsets] {
        &self.levels
    }

    /// The number of top-level sequences (Arrow rows); `None` for a 0-level LoD.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.num_rows(), Some(2));
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn num_rows(&self) -> Option<usize> {
        self.levels.first().map(|o| o.len() - 1)
    }

    /// Index, in level `level`'s offsets, of the first offset in view.
    #[inline]
    fn window_start(&self, level: usize) -> usize {
        descend(&self.levels[..level], 0..0).start
    }

    #[inline]
    fn check_level(&self, level: usize) -> Result<()> {
        ArgumentError::check_level(level, self.levels.len())
    }

    /// The number of sequences in view at `level`.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!((lod.num_sequences(0)?, lod.num_sequences(1)?), (2, 3));
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn num_sequences(&self, level: usize) -> Result<usize> {
        self.check_level(level)?;
        Ok(self.levels[level].len() - 1 - self.window_start(level))
    }

    /// The elements in view: from the first level's first offset, followed down, to the
    /// last level's last offset. `0..0` for a 0-level LoD (the tensor knows its rows).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.elements(), 0..6);
    /// assert_eq!(lod.slice_rows(1..2)?.elements(), 3..6);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn elements(&self) -> Range<usize> {
        let Some(last) = self.levels.last() else {
            return 0..0;
        };
        self.window_start(self.levels.len())..last.last()
    }

    /// The elements of sequence `index` at `level` (Paddle's absolute offsets), in O(levels).
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`], [`ArgumentError::SequenceOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// assert_eq!(lod.num_sequences(1)?, 6);
    /// assert_eq!(lod.elements(), 0..15);
    /// assert_eq!(lod.sequence_elements(1, 4)?, 10..12); // sentence 4
    /// assert_eq!(lod.sequence_elements(0, 2)?, 10..15); // article 2
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn sequence_elements(&self, level: usize, index: usize) -> Result<Range<usize>> {
        let range = self.sequence_children(level, index)?;
        Ok(descend(&self.levels[level + 1..], range))
    }

    /// Follows `range`, positions in level `from`'s offsets (absolute, as stored: a row
    /// range when `from` is 0 and the LoD is not a view), down to level `to`: the positions
    /// under them there, that is the entries of level `to`, or the elements when
    /// `to == num_levels()`. O(`to - from`), no allocation. The one walk down the levels
    /// that slicing, sampling, gathering and encoding share.
    ///
    /// ```text
    /// level 0 offsets [0, 3, 4, 6]                  rows 1..3
    /// level 1 offsets [0, 3, 5, 9, 10, 12, 15]      -> level 1 entries 3..6
    /// elements                                      -> elements 9..15
    /// ```
    ///
    /// # Panics
    /// When `from > to`, `to > num_levels()`, or `range` runs past level `from`'s offsets.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// assert_eq!(lod.descend(0, 1..3, 1), 3..6);
    /// assert_eq!(lod.descend(0, 1..3, 2), 9..15);
    /// assert_eq!(lod.descend(1, 4..5, 2), 10..12);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn descend(&self, from: usize, range: Range<usize>, to: usize) -> Range<usize> {
        descend(&self.levels[from..to], range)
    }

    /// Sequence `index` at `level` as a range of absolute indexes into level `level + 1`
    /// (or into the elements, for the last level).
    #[inline]
    fn sequence_children(&self, level: usize, index: usize) -> Result<Range<usize>> {
        self.check_level(level)?;
        let offsets = &self.levels[level];
        let start = self.window_start(level);
        start
            .checked_add(index)
            .and_then(|i| offsets.pair(i))
            .ok_or_else(|| {
                ArgumentError::SequenceOutOfBounds {
                    level,
                    index,
                    len: offsets.len() - 1 - start,
                }
                .into()
            })
    }

    /// Level `level`'s offsets in view, borrowed, and the levels below it.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`].
    pub(crate) fn level_in_view(&self, level: usize) -> Result<(OffsetSlice<'_>, &[LevelOffsets])> {
        self.check_level(level)?;
        let offsets = self.levels[level].slice_from(self.window_start(level));
        Ok((offsets, &self.levels[level + 1..]))
    }

    /// The offsets in view, one `Vec` per level, as stored (a view's may start past 0).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.offsets(), vec![vec![0, 2, 3], vec![0, 1, 3, 6]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn offsets(&self) -> Vec<Vec<i64>> {
        let mut start = 0;
        self.levels
            .iter()
            .map(|o| {
                let v = (start..o.len()).map(|i| o.get(i) as i64).collect();
                start = o.get(start);
                v
            })
            .collect()
    }

    /// The lengths in view, one `Vec` per level (Paddle's `recursive_sequence_lengths`).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.lengths(), vec![vec![2, 1], vec![1, 2, 3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn lengths(&self) -> Vec<Vec<usize>> {
        (0..self.levels.len())
            .map(|level| self.level_lengths(level).expect("level exists"))
            .collect()
    }

    /// The lengths in view of one level.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert_eq!(lod.level_lengths(1)?, vec![1, 2, 3]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn level_lengths(&self, level: usize) -> Result<Vec<usize>> {
        self.check_level(level)?;
        let o = &self.levels[level];
        let start = self.window_start(level);
        Ok((start..o.len() - 1)
            .map(|i| o.get(i + 1) - o.get(i))
            .collect())
    }

    /// Every level's offsets in view, translated to element positions (Paddle's
    /// `ToAbsOffset`): level `k`'s entry `j` is where its sequence `j` begins in the values.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// assert_eq!(lod.absolute_offsets(), vec![vec![0, 9, 10, 15], vec![0, 3, 5, 9, 10, 12, 15]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn absolute_offsets(&self) -> Vec<Vec<usize>> {
        let mut start = 0;
        (0..self.levels.len())
            .map(|level| {
                let o = &self.levels[level];
                let v = (start..o.len())
                    .map(|i| descend(&self.levels[level..], i..i).start)
                    .collect();
                start = o.get(start);
                v
            })
            .collect()
    }

    /// Rows `rows` of level 0 with every level below them, as a view (O(levels), no copy).
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`]; [`ArgumentError::LevelOutOfBounds`] for a 0-level LoD.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// let view = lod.slice_rows(1..3)?;
    /// assert_eq!(view.lengths(), vec![vec![1, 2], vec![1, 2, 3]]);
    /// assert_eq!(view.elements(), 9..15);
    /// assert!(!view.is_zero_based());
    /// let (rebased, elements) = view.rebased();
    /// assert_eq!(rebased.offsets(), vec![vec![0, 1, 3], vec![0, 1, 3, 6]]);
    /// assert_eq!(elements, 9..15);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn slice_rows(&self, rows: Range<usize>) -> Result<Self> {
        let Some(top) = self.levels.first() else {
            return Err(ArgumentError::LevelOutOfBounds {
                level: 0,
                levels: 0,
            }
            .into());
        };
        ArgumentError::check_rows(&rows, top.len() - 1)?;
        let mut levels = Vec::with_capacity(self.levels.len());
        levels.push(top.slice(rows.start, rows.end - rows.start + 1));
        for o in &self.levels[1..] {
            let end = levels.last().expect("level 0 pushed").last();
            levels.push(o.slice(0, end + 1));
        }
        Ok(Lod { levels })
    }

    /// The LoD without its `n` outermost levels: level `n` in view becomes level 0.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`] when `n > num_levels()`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// assert_eq!(lod.drop_outer_levels(1)?.lengths(), vec![vec![3, 2, 4, 1, 2, 3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn drop_outer_levels(&self, n: usize) -> Result<Self> {
        if n > self.levels.len() {
            return Err(ArgumentError::LevelOutOfBounds {
                level: n,
                levels: self.levels.len(),
            }
            .into());
        }
        let mut levels = self.levels[n..].to_vec();
        if let Some(top) = levels.first_mut() {
            let start = self.window_start(n);
            *top = top.slice(start, top.len() - start);
        }
        Ok(Lod { levels })
    }

    /// The `<level, index>`-slice: sequence `index` of `level` with the levels below it, as
    /// a LoD of `num_levels() - level` levels whose level 0 has one sequence.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`], [`ArgumentError::SequenceOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// let article = lod.slice_sequence(0, 2)?;
    /// assert_eq!(article.lengths(), vec![vec![2], vec![2, 3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn slice_sequence(&self, level: usize, index: usize) -> Result<Self> {
        self.sequence_children(level, index)?;
        self.drop_outer_levels(level)?.slice_rows(index..index + 1)
    }

    /// The sequence a branch names: `[i]` is sequence `i` of level 0, `[i, j]` its `j`-th
    /// sub-sequence, and so on. Returns the level it lies on and its index there.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`] for an empty branch or one longer than the levels;
    /// [`ArgumentError::SequenceOutOfBounds`] for a step past its parent's children.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// let lod = Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]])?;
    /// assert_eq!(lod.branch_position(&[2, 1])?, (1, 5)); // sentence 1 of article 2
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn branch_position(&self, branch: &[usize]) -> Result<(usize, usize)> {
        let Some((&first, rest)) = branch.split_first() else {
            return Err(ArgumentError::LevelOutOfBounds {
                level: 0,
                levels: self.levels.len(),
            }
            .into());
        };
        self.check_level(branch.len() - 1)?;
        self.sequence_children(0, first)?;
        let mut index = first;
        for (parent, &step) in rest.iter().enumerate() {
            let children = self.sequence_children(parent, index)?;
            let len = children.end - children.start;
            if step >= len {
                return Err(ArgumentError::SequenceOutOfBounds {
                    level: parent + 1,
                    index: step,
                    len,
                }
                .into());
            }
            index = children.start - self.window_start(parent + 1) + step;
        }
        Ok((branch.len() - 1, index))
    }

    /// A copy of the levels in view with offsets starting at 0, and the elements they
    /// index (the part of the values to keep).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// let (rebased, elements) = lod.slice_rows(1..2)?.rebased();
    /// assert_eq!(rebased.offsets(), vec![vec![0, 1], vec![0, 3]]);
    /// assert_eq!(elements, 3..6);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn rebased(&self) -> (Self, Range<usize>) {
        let mut start = 0;
        let levels = self
            .levels
            .iter()
            .enumerate()
            .map(|(level, o)| {
                let base = o.get(start);
                let positions = (start..o.len()).map(|i| o.get(i) - base).collect();
                start = base;
                o.with_positions(level, positions)
                    .expect("rebased offsets are no larger than the originals")
            })
            .collect();
        (Lod { levels }, self.elements())
    }

    /// Whether the offsets in view start at 0 at every level (as Paddle requires).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Lod;
    /// // Paddle's example: 2 sequences of 2 and 1 sub-sequences of 1, 2 and 3 elements.
    /// let lod = Lod::try_from_lengths(&[vec![2, 1], vec![1, 2, 3]])?;
    /// assert!(lod.is_zero_based());
    /// assert!(!lod.slice_rows(1..2)?.is_zero_based());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn is_zero_based(&self) -> bool {
        self.levels.first().is_none_or(|o| o.get(0) == 0) && self.elements().start == 0
    }
}

/// Two LoDs are equal when they have the same lengths in view at every level, whatever
/// their offset widths and whatever lies outside the view.
impl PartialEq for Lod {
    fn eq(&self, other: &Self) -> bool {
        self.num_levels() == other.num_levels() && self.lengths() == other.lengths()
    }
}

#[cfg(test)]
mod tests;
