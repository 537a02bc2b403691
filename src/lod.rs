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

use crate::{ArgumentError, DataError};
use std::ops::Range;

use arrow_buffer::{ArrowNativeType, OffsetBuffer, ScalarBuffer};

use crate::error::Result;

/// The integer width of a level's offsets: Arrow `List` (`i32`) or `LargeList` (`i64`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OffsetWidth {
    /// 32-bit offsets, Arrow `List`.
    I32,
    /// 64-bit offsets, Arrow `LargeList` (the default).
    #[default]
    I64,
}

impl OffsetWidth {
    /// The Rust name of the integer type.
    pub fn name(self) -> &'static str {
        match self {
            OffsetWidth::I32 => "i32",
            OffsetWidth::I64 => "i64",
        }
    }
}

/// The offsets of one level, as the Arrow offset buffer of a `List` or `LargeList`.
///
/// An [`OffsetBuffer`] is non-empty, starts at or above 0 and never decreases, so every
/// `LevelOffsets` obeys the per-level rules; [`Lod`] adds the rules between levels.
#[derive(Clone, Debug)]
pub enum LevelOffsets {
    /// 32-bit offsets (Arrow `List`).
    I32(OffsetBuffer<i32>),
    /// 64-bit offsets (Arrow `LargeList`).
    I64(OffsetBuffer<i64>),
}

impl LevelOffsets {
    /// Validates `offsets` as level `level` of a LoD: non-empty, first offset at least 0,
    /// non-decreasing.
    ///
    /// # Errors
    /// [`DataError::EmptyLevel`], [`DataError::NegativeOffset`] or [`DataError::DecreasingOffset`],
    /// naming `level` and the index.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LevelOffsets;
    /// assert!(LevelOffsets::try_new_i64(0, vec![0, 3, 4, 6].into()).is_ok());
    /// let err = LevelOffsets::try_new_i64(1, vec![0, 3, 2].into()).unwrap_err();
    /// assert_eq!(err.to_string(), "level 1: offset at index 2 (2) is less than the previous offset (3)");
    /// ```
    pub fn try_new_i64(level: usize, offsets: ScalarBuffer<i64>) -> Result<Self> {
        validate_offsets(level, &offsets)?;
        // SAFETY: validate_offsets checked non-empty, first >= 0 and non-decreasing, which
        // is OffsetBuffer's whole contract.
        Ok(LevelOffsets::I64(unsafe {
            OffsetBuffer::new_unchecked(offsets)
        }))
    }

    /// Like [`LevelOffsets::try_new_i64`], for 32-bit offsets.
    ///
    /// # Errors
    /// As [`LevelOffsets::try_new_i64`].
    pub fn try_new_i32(level: usize, offsets: ScalarBuffer<i32>) -> Result<Self> {
        validate_offsets(level, &offsets)?;
        // SAFETY: as in try_new_i64.
        Ok(LevelOffsets::I32(unsafe {
            OffsetBuffer::new_unchecked(offsets)
        }))
    }

    /// The width of these offsets.
    pub fn width(&self) -> OffsetWidth {
        match self {
            LevelOffsets::I32(_) => OffsetWidth::I32,
            LevelOffsets::I64(_) => OffsetWidth::I64,
        }
    }

    /// The number of offsets (one more than the sequences they delimit).
    #[allow(clippy::len_without_is_empty)] // never empty
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            LevelOffsets::I32(o) => o.len(),
            LevelOffsets::I64(o) => o.len(),
        }
    }

    /// Offset `index` as a position.
    ///
    /// # Panics
    /// If `index >= self.len()`.
    #[inline]
    pub fn get(&self, index: usize) -> usize {
        // Offsets are >= 0 (OffsetBuffer's contract), so `as_usize` is exact.
        match self {
            LevelOffsets::I32(o) => o[index].as_usize(),
            LevelOffsets::I64(o) => o[index].as_usize(),
        }
    }

    /// Offsets `index` and `index + 1`: where sequence `index` begins and ends; `None`
    /// past the last sequence.
    #[inline]
    pub fn pair(&self, index: usize) -> Option<Range<usize>> {
        let window = index..index.checked_add(2)?;
        match self {
            LevelOffsets::I32(o) => o.get(window).map(|w| w[0].as_usize()..w[1].as_usize()),
            LevelOffsets::I64(o) => o.get(window).map(|w| w[0].as_usize()..w[1].as_usize()),
        }
    }

    /// Offsets from `start` on, borrowed.
    fn slice_from(&self, start: usize) -> OffsetSlice<'_> {
        match self {
            LevelOffsets::I32(o) => OffsetSlice::I32(&o[start..]),
            LevelOffsets::I64(o) => OffsetSlice::I64(&o[start..]),
        }
    }

    /// The last offset.
    pub fn last(&self) -> usize {
        self.get(self.len() - 1)
    }

    /// The offsets as `i64`, copied.
    pub fn to_vec(&self) -> Vec<i64> {
        match self {
            LevelOffsets::I32(o) => o.iter().map(|&v| i64::from(v)).collect(),
            LevelOffsets::I64(o) => o.to_vec(),
        }
    }

    /// The address of the first offset (to check that a view shares a buffer).
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            LevelOffsets::I32(o) => o.inner().inner().as_ptr(),
            LevelOffsets::I64(o) => o.inner().inner().as_ptr(),
        }
    }

    /// `len` offsets starting at `start`, without copying.
    fn slice(&self, start: usize, len: usize) -> Self {
        match self {
            // OffsetBuffer::slice counts the sequences, one less than the offsets.
            LevelOffsets::I32(o) => LevelOffsets::I32(o.slice(start, len - 1)),
            LevelOffsets::I64(o) => LevelOffsets::I64(o.slice(start, len - 1)),
        }
    }

    /// `positions` (already validated for this level) in this level's width.
    fn with_positions(&self, level: usize, positions: Vec<usize>) -> Result<Self> {
        to_width(level, positions, self.width())
    }
}

/// A borrowed run of one level's offsets, its width resolved once (for hot loops).
#[derive(Clone, Copy, Debug)]
pub(crate) enum OffsetSlice<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl OffsetSlice<'_> {
    /// Offsets `index` and `index + 1`; `None` past the last sequence.
    #[inline]
    pub(crate) fn pair(self, index: usize) -> Option<Range<usize>> {
        let window = index..index.checked_add(2)?;
        match self {
            OffsetSlice::I32(o) => o.get(window).map(|w| w[0].as_usize()..w[1].as_usize()),
            OffsetSlice::I64(o) => o.get(window).map(|w| w[0].as_usize()..w[1].as_usize()),
        }
    }

    /// The number of sequences.
    pub(crate) fn num_sequences(self) -> usize {
        match self {
            OffsetSlice::I32(o) => o.len() - 1,
            OffsetSlice::I64(o) => o.len() - 1,
        }
    }
}

/// Checks the per-level rules in one pass: non-empty, first offset >= 0, non-decreasing.
pub(crate) fn validate_offsets<O: ArrowNativeType + Ord + Into<i64>>(
    level: usize,
    offsets: &[O],
) -> Result<()> {
    let Some(&first) = offsets.first() else {
        return Err(DataError::EmptyLevel { level }.into());
    };
    if first < O::usize_as(0) {
        return Err(DataError::NegativeOffset {
            level,
            offset: first.into(),
        }
        .into());
    }
    // A branch-free fold vectorises; the position is looked for only on failure.
    let decreasing = offsets.windows(2).fold(false, |bad, w| bad | (w[1] < w[0]));
    if decreasing {
        let index = 1 + offsets
            .windows(2)
            .position(|w| w[1] < w[0])
            .expect("the fold found a decrease");
        return Err(DataError::DecreasingOffset {
            level,
            index,
            offset: offsets[index].into(),
            previous: offsets[index - 1].into(),
        }
        .into());
    }
    Ok(())
}

/// Builds offsets of `width` from positions that are already non-decreasing and start >= 0.
fn to_width(level: usize, positions: Vec<usize>, width: OffsetWidth) -> Result<LevelOffsets> {
    let overflow = |index: usize, value: usize, width: OffsetWidth| {
        DataError::OffsetOverflow {
            level,
            index,
            value: value as u128,
            width: width.name(),
        }
        .into()
    };
    let offsets = match width {
        OffsetWidth::I64 => {
            let v: Vec<i64> = positions
                .iter()
                .enumerate()
                .map(|(i, &p)| i64::try_from(p).map_err(|_| overflow(i, p, width)))
                .collect::<Result<_>>()?;
            // SAFETY: positions are non-decreasing and non-negative by the caller's contract
            // and the conversion is exact.
            LevelOffsets::I64(unsafe { OffsetBuffer::new_unchecked(v.into()) })
        }
        OffsetWidth::I32 => {
            let v: Vec<i32> = positions
                .iter()
                .enumerate()
                .map(|(i, &p)| i32::try_from(p).map_err(|_| overflow(i, p, width)))
                .collect::<Result<_>>()?;
            // SAFETY: as above.
            LevelOffsets::I32(unsafe { OffsetBuffer::new_unchecked(v.into()) })
        }
    };
    if offsets.len() == 0 {
        return Err(DataError::EmptyLevel { level }.into());
    }
    Ok(offsets)
}

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
    pub fn try_from_lengths<L: AsRef<[usize]>>(lengths: &[L]) -> Result<Self> {
        Self::try_from_lengths_with_width(lengths, OffsetWidth::I64)
    }

    /// Like [`Lod::try_from_lengths`], with offsets of the given width.
    ///
    /// # Errors
    /// As [`Lod::try_from_lengths`]; [`DataError::OffsetOverflow`] when an offset does not fit
    /// `width`.
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
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The levels' offset buffers, as a whole (including entries before the part in view).
    pub fn levels(&self) -> &[LevelOffsets] {
        &self.levels
    }

    /// The number of top-level sequences (Arrow rows); `None` for a 0-level LoD.
    pub fn num_rows(&self) -> Option<usize> {
        self.levels.first().map(|o| o.len() - 1)
    }

    /// Index, in level `level`'s offsets, of the first offset in view.
    #[inline]
    fn window_start(&self, level: usize) -> usize {
        self.levels[..level]
            .iter()
            .fold(0, |start, offsets| offsets.get(start))
    }

    #[inline]
    fn check_level(&self, level: usize) -> Result<()> {
        if level < self.levels.len() {
            Ok(())
        } else {
            Err(ArgumentError::LevelOutOfBounds {
                level,
                levels: self.levels.len(),
            }
            .into())
        }
    }

    /// The number of sequences in view at `level`.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`].
    pub fn num_sequences(&self, level: usize) -> Result<usize> {
        self.check_level(level)?;
        Ok(self.levels[level].len() - 1 - self.window_start(level))
    }

    /// The elements in view: from the first level's first offset, followed down, to the
    /// last level's last offset. `0..0` for a 0-level LoD (the tensor knows its rows).
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
    #[inline]
    pub fn sequence_elements(&self, level: usize, index: usize) -> Result<Range<usize>> {
        let range = self.sequence_children(level, index)?;
        Ok(self.levels[level + 1..]
            .iter()
            .fold(range, |r, o| o.get(r.start)..o.get(r.end)))
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
    pub fn lengths(&self) -> Vec<Vec<usize>> {
        (0..self.levels.len())
            .map(|level| self.level_lengths(level).expect("level exists"))
            .collect()
    }

    /// The lengths in view of one level.
    ///
    /// # Errors
    /// [`ArgumentError::LevelOutOfBounds`].
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
                    .map(|i| {
                        self.levels[level..]
                            .iter()
                            .fold(i, |position, offsets| offsets.get(position))
                    })
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
    pub fn slice_rows(&self, rows: Range<usize>) -> Result<Self> {
        let Some(top) = self.levels.first() else {
            return Err(ArgumentError::LevelOutOfBounds {
                level: 0,
                levels: 0,
            }
            .into());
        };
        let len = top.len() - 1;
        if rows.start > rows.end || rows.end > len {
            return Err(ArgumentError::RowsOutOfBounds {
                start: rows.start,
                end: rows.end,
                len,
            }
            .into());
        }
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
mod tests {
    use super::*;
    use crate::{ArgumentError, DataError, Error, ErrorKind};

    fn example() -> Lod {
        Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]).unwrap()
    }

    /// The 3-level example of the earlier design doc: one batch of the three articles.
    fn three_levels() -> Lod {
        Lod::try_from_lengths(&[vec![3], vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]).unwrap()
    }

    #[test]
    fn lengths_to_offsets_and_back() {
        let lod = example();
        assert_eq!(
            lod.offsets(),
            vec![vec![0, 3, 4, 6], vec![0, 3, 5, 9, 10, 12, 15]]
        );
        let again = Lod::try_from_offsets(&lod.offsets()).unwrap();
        assert_eq!(again.lengths(), vec![vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]);
        assert_eq!(lod.elements(), 0..15);
        assert_eq!(lod.num_rows(), Some(3));
    }

    #[test]
    fn absolute_offsets_as_in_the_design_doc() {
        // "0 9 10 / 0 3 5 9 10 12", plus the closing offsets.
        assert_eq!(
            example().absolute_offsets(),
            vec![vec![0, 9, 10, 15], vec![0, 3, 5, 9, 10, 12, 15]]
        );
        // The 3-level walkthrough: the third element of level 2 spans words 4..6 of
        // level 2 and elements 10..15.
        let lod = three_levels();
        assert_eq!(lod.sequence_elements(1, 2).unwrap(), 10..15);
        assert_eq!(lod.sequence_children(1, 2).unwrap(), 4..6);
    }

    #[test]
    fn branch_slices_of_the_design_doc() {
        let lod = example();
        // The <2>-slice: "10 15 / 10 12 15".
        let (level, index) = lod.branch_position(&[2]).unwrap();
        let slice = lod.slice_sequence(level, index).unwrap();
        assert_eq!(
            slice.absolute_offsets(),
            vec![vec![10, 15], vec![10, 12, 15]]
        );
        assert_eq!(slice.lengths(), vec![vec![2], vec![2, 3]]);
        // The <2,0>-slice: "10 12".
        let (level, index) = lod.branch_position(&[2, 0]).unwrap();
        assert_eq!((level, index), (1, 4));
        let slice = lod.slice_sequence(level, index).unwrap();
        assert_eq!(slice.absolute_offsets(), vec![vec![10, 12]]);
        // The same, taken from the <2>-slice.
        let outer = lod.slice_sequence(0, 2).unwrap();
        let (level, index) = outer.branch_position(&[0, 0]).unwrap();
        assert_eq!(outer.sequence_elements(level, index).unwrap(), 10..12);
        assert!(matches!(
            lod.branch_position(&[2, 2]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
                level: 1,
                index: 2,
                len: 2
            }))
        ));
    }

    #[test]
    fn level_sequence_slices_of_the_earlier_design_doc() {
        let lod = three_levels();
        // The <2,1>-slice: "2 / ||".
        let s = lod.slice_sequence(2, 1).unwrap();
        assert_eq!(s.lengths(), vec![vec![2]]);
        assert_eq!(s.elements(), 3..5);
        // The <1,2>-slice: "2 / 2 3 / || |||".
        let s = lod.slice_sequence(1, 2).unwrap();
        assert_eq!(s.lengths(), vec![vec![2], vec![2, 3]]);
        assert_eq!(s.elements(), 10..15);
        // Its <1,1>-slice: "3 / |||".
        let s = s.slice_sequence(1, 1).unwrap();
        assert_eq!(s.lengths(), vec![vec![3]]);
        assert_eq!(s.elements(), 12..15);
    }

    #[test]
    fn row_slices_are_views() {
        let lod = example();
        let s = lod.slice_rows(1..3).unwrap();
        assert_eq!(s.lengths(), vec![vec![1, 2], vec![1, 2, 3]]);
        assert_eq!(s.offsets(), vec![vec![3, 4, 6], vec![9, 10, 12, 15]]);
        assert_eq!(s.elements(), 9..15);
        assert_eq!(s.num_sequences(1).unwrap(), 3);
        assert_eq!(s.sequence_elements(1, 0).unwrap(), 9..10);
        assert_eq!(s.levels()[1].as_ptr(), lod.levels()[1].as_ptr());
        assert!(!s.is_zero_based());
        let (rebased, elements) = s.rebased();
        assert_eq!(rebased.offsets(), vec![vec![0, 1, 3], vec![0, 1, 3, 6]]);
        assert_eq!(elements, 9..15);
        assert!(rebased.is_zero_based());
        assert_eq!(rebased, s);
        let empty = lod.slice_rows(2..2).unwrap();
        assert_eq!(empty.lengths(), vec![Vec::<usize>::new(), vec![]]);
        assert_eq!(empty.elements(), 10..10);
    }

    #[test]
    fn empty_sequences_are_valid() {
        let lod = Lod::try_from_lengths(&[vec![0, 2, 0], vec![0, 3]]).unwrap();
        assert_eq!(lod.offsets(), vec![vec![0, 0, 2, 2], vec![0, 0, 3]]);
        assert_eq!(lod.sequence_elements(0, 0).unwrap(), 0..0);
        assert_eq!(lod.sequence_elements(0, 1).unwrap(), 0..3);
    }

    #[test]
    fn i32_offsets_on_request() {
        let lod = Lod::try_from_lengths_with_width(
            &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
            OffsetWidth::I32,
        )
        .unwrap();
        assert!(lod.levels().iter().all(|o| o.width() == OffsetWidth::I32));
        assert_eq!(lod, example());
        let wide = lod.with_offset_width(OffsetWidth::I64).unwrap();
        assert_eq!(wide.levels()[1].to_vec(), vec![0, 3, 5, 9, 10, 12, 15]);
        let big = Lod::try_from_lengths(&[vec![usize::MAX / 4, usize::MAX / 4]]);
        assert!(big.is_ok() == (usize::MAX / 2 <= i64::MAX as usize));
        let err = Lod::try_from_lengths_with_width(&[vec![1 << 31]], OffsetWidth::I32).unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::Data(DataError::OffsetOverflow {
                level: 0,
                index: 1,
                width: "i32",
                ..
            })
        ));
    }

    #[test]
    fn each_rule_has_its_error() {
        let empty: &[i64] = &[];
        assert!(matches!(
            Lod::try_from_offsets(&[empty]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::EmptyLevel { level: 0 }))
        ));
        assert!(matches!(
            Lod::try_from_offsets(&[vec![0, 2], vec![-1, 0, 1]]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::NegativeOffset {
                level: 1,
                offset: -1
            }))
        ));
        assert!(matches!(
            Lod::try_from_offsets(&[vec![0, 3, 2]]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::DecreasingOffset {
                level: 0,
                index: 2,
                offset: 2,
                previous: 3
            }))
        ));
        assert!(matches!(
            Lod::try_from_offsets(&[vec![0, 3, 4, 6], vec![0, 3, 5, 9]]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::LevelEndMismatch {
                level: 0,
                last_offset: 6,
                sequences: 3
            }))
        ));
        assert!(matches!(
            Lod::try_from_lengths(&[vec![1, 1], vec![3]]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::LevelEndMismatch {
                level: 0,
                last_offset: 2,
                sequences: 1
            }))
        ));
        assert!(matches!(
            Lod::try_from_lengths(&[vec![usize::MAX, 1]]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::OffsetOverflow {
                level: 0,
                index: 2,
                width: "usize",
                ..
            }))
        ));
        assert!(matches!(
            example().num_sequences(2).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 2,
                levels: 2
            }))
        ));
        assert!(matches!(
            example().sequence_elements(1, 6).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
                level: 1,
                index: 6,
                len: 6
            }))
        ));
        assert!(matches!(
            example()
                .sequence_elements(1, usize::MAX)
                .map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
                level: 1,
                index: usize::MAX,
                len: 6
            }))
        ));
        assert!(matches!(
            example().slice_rows(2..4).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::RowsOutOfBounds {
                start: 2,
                end: 4,
                len: 3
            }))
        ));
        assert!(matches!(
            Lod::default().slice_rows(0..0).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 0,
                levels: 0
            }))
        ));
    }
}
