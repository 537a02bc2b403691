//! One level of offsets: its width, its Arrow offset buffer, the per-level rules, and the
//! walk of a range of positions down several levels.

use std::ops::Range;

use arrow_buffer::{ArrowNativeType, OffsetBuffer, ScalarBuffer};

use crate::error::DataError;
use crate::error::Result;

/// The integer width of a level's offsets: Arrow `List` (`i32`) or `LargeList` (`i64`).
///
/// # Example
/// ```
/// use lodtensor::OffsetWidth;
/// assert_eq!((OffsetWidth::I32.name(), OffsetWidth::I64.name()), ("int32", "int64"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OffsetWidth {
    /// 32-bit offsets, Arrow `List`.
    I32,
    /// 64-bit offsets, Arrow `LargeList` (the default).
    #[default]
    I64,
}

impl OffsetWidth {
    /// The Arrow name of the integer type (`int32`, `int64`), as dtypes are named.
    ///
    /// # Example
    /// ```
    /// use lodtensor::OffsetWidth;
    /// assert_eq!(OffsetWidth::I64.name(), "int64");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            OffsetWidth::I32 => "int32",
            OffsetWidth::I64 => "int64",
        }
    }
}

/// The offsets of one level, as the Arrow offset buffer of a `List` or `LargeList`.
///
/// An [`OffsetBuffer`] is non-empty, starts at or above 0 and never decreases, so every
/// `LevelOffsets` obeys the per-level rules; [`Lod`](crate::Lod) adds the rules between levels.
///
/// # Example
/// ```
/// use lodtensor::{LevelOffsets, OffsetWidth};
/// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 5].into())?;
/// assert_eq!((level.width(), level.to_vec()), (OffsetWidth::I32, vec![0, 2, 5]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.width(), OffsetWidth::I32);
    /// assert!(LevelOffsets::try_new_i32(0, vec![0, 3, 2].into()).is_err()); // decreasing
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_new_i32(level: usize, offsets: ScalarBuffer<i32>) -> Result<Self> {
        validate_offsets(level, &offsets)?;
        // SAFETY: as in try_new_i64.
        Ok(LevelOffsets::I32(unsafe {
            OffsetBuffer::new_unchecked(offsets)
        }))
    }

    /// The width of these offsets.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.width(), OffsetWidth::I32);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn width(&self) -> OffsetWidth {
        match self {
            LevelOffsets::I32(_) => OffsetWidth::I32,
            LevelOffsets::I64(_) => OffsetWidth::I64,
        }
    }

    /// The number of offsets (one more than the sequences they delimit).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.len(), 4); // 3 sequences
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
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
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.get(3), 5);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
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
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.pair(2), Some(2..5));
    /// assert_eq!(level.pair(3), None);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn pair(&self, index: usize) -> Option<Range<usize>> {
        let window = index..index.checked_add(2)?;
        match self {
            LevelOffsets::I32(o) => o.get(window).map(|w| w[0].as_usize()..w[1].as_usize()),
            LevelOffsets::I64(o) => o.get(window).map(|w| w[0].as_usize()..w[1].as_usize()),
        }
    }

    /// Offsets from `start` on, borrowed.
    pub(super) fn slice_from(&self, start: usize) -> OffsetSlice<'_> {
        match self {
            LevelOffsets::I32(o) => OffsetSlice::I32(&o[start..]),
            LevelOffsets::I64(o) => OffsetSlice::I64(&o[start..]),
        }
    }

    /// The last offset.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.last(), 5);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn last(&self) -> usize {
        self.get(self.len() - 1)
    }

    /// The offsets as `i64`, copied.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LevelOffsets, OffsetWidth};
    /// let level = LevelOffsets::try_new_i32(0, vec![0, 2, 2, 5].into())?;
    /// assert_eq!(level.to_vec(), vec![0, 2, 2, 5]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn to_vec(&self) -> Vec<i64> {
        match self {
            LevelOffsets::I32(o) => o.iter().map(|&v| i64::from(v)).collect(),
            LevelOffsets::I64(o) => o.to_vec(),
        }
    }

    /// The address of the first offset (to check that a view shares a buffer).
    ///
    /// # Example
    /// ```
    /// use lodtensor::LevelOffsets;
    /// let level = LevelOffsets::try_new_i64(0, vec![0, 2, 5].into())?;
    /// let copy = level.to_vec();                                      // a copy, elsewhere
    /// assert_ne!(level.as_ptr(), copy.as_ptr().cast());
    /// assert_eq!(level.as_ptr(), level.clone().as_ptr());                 // clones share the buffer
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            LevelOffsets::I32(o) => o.inner().inner().as_ptr(),
            LevelOffsets::I64(o) => o.inner().inner().as_ptr(),
        }
    }

    /// `len` offsets starting at `start`, without copying.
    pub(super) fn slice(&self, start: usize, len: usize) -> Self {
        match self {
            // OffsetBuffer::slice counts the sequences, one less than the offsets.
            LevelOffsets::I32(o) => LevelOffsets::I32(o.slice(start, len - 1)),
            LevelOffsets::I64(o) => LevelOffsets::I64(o.slice(start, len - 1)),
        }
    }

    /// `positions` (already validated for this level) in this level's width.
    pub(super) fn with_positions(&self, level: usize, positions: Vec<usize>) -> Result<Self> {
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
pub(super) fn to_width(
    level: usize,
    positions: Vec<usize>,
    width: OffsetWidth,
) -> Result<LevelOffsets> {
    /// The positions as offsets of type `O`, each checked to fit.
    fn convert<O: TryFrom<usize> + ArrowNativeType>(
        level: usize,
        positions: &[usize],
        width: OffsetWidth,
    ) -> Result<OffsetBuffer<O>> {
        let v: Vec<O> = positions
            .iter()
            .enumerate()
            .map(|(index, &p)| {
                O::try_from(p).map_err(|_| {
                    DataError::OffsetOverflow {
                        level,
                        index,
                        value: p as u128,
                        width: width.name(),
                    }
                    .into()
                })
            })
            .collect::<Result<_>>()?;
        // SAFETY: positions are non-decreasing and non-negative by the caller's contract,
        // and each conversion is exact.
        Ok(unsafe { OffsetBuffer::new_unchecked(v.into()) })
    }
    let offsets = match width {
        OffsetWidth::I64 => LevelOffsets::I64(convert(level, &positions, width)?),
        OffsetWidth::I32 => LevelOffsets::I32(convert(level, &positions, width)?),
    };
    if offsets.len() == 0 {
        return Err(DataError::EmptyLevel { level }.into());
    }
    Ok(offsets)
}

/// Follows `range`, positions in the offsets of `levels[0]`, down through every level of
/// `levels`: the positions under them in the level below the last (its entries, or the
/// elements). An empty `levels` gives `range` back. O(levels).
#[inline]
pub(crate) fn descend(levels: &[LevelOffsets], range: Range<usize>) -> Range<usize> {
    levels
        .iter()
        .fold(range, |r, offsets| offsets.get(r.start)..offsets.get(r.end))
}

/// The row that entry `index` of the level below `levels` lies in (an element, for every
/// level): `levels` followed up, each time to the last sequence that starts at or before
/// the position. An empty `levels` gives `index` back. O(levels · log sequences).
pub(crate) fn ascend(levels: &[LevelOffsets], index: usize) -> usize {
    levels.iter().rev().fold(index, |index, offsets| {
        let (mut lo, mut hi) = (0, offsets.len().saturating_sub(1));
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if offsets.get(mid) <= index {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    })
}
