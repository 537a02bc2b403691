//! Padding to dense tensors and back (Paddle's `sequence_pad` / `sequence_unpad`).
//!
//! ```text
//! lengths [2, 0, 3]          dense [3, max_len = 3, D…]     mask
//! elements [a b | | c d e]   [[a, b, p],                    [[1, 1, 0],
//!                             [p, p, p],                     [0, 0, 0],
//!                             [c, d, e]]                     [1, 1, 1]]
//! ```
//!
//! The dense values are [`Values`] of `n_seq · max_len` elements of the input's element
//! shape, row-major, with the full shape beside them. `max_len` shorter than the longest
//! sequence is an error in [`to_padded`] (as in Paddle), or cuts sequences with
//! [`PadOptions::with_truncation`], and [`Padded::truncated`] says how many were cut.

use super::{Piece, assemble, element_offsets};
use crate::error::Result;
use crate::error::{ArgumentError, DataError};
use crate::lod::Lod;
use crate::tensor::LodTensor;
use crate::values::Values;

const PAD: &str = "sequence_pad";
const UNPAD: &str = "sequence_unpad";

/// How [`to_padded`] pads: to the longest sequence (the default) or to `max_len`, and
/// whether a longer sequence is an error (the default, Paddle's rule) or is cut.
///
/// `Option<usize>` converts into it (`None`: the default; `Some(n)`: `with_max_len(n)`).
///
/// # Example
/// ```
/// use lodtensor::arrow::types::Int32Type;
/// use lodtensor::ops::{PadOptions, to_padded};
/// use lodtensor::{LodTensor, Values};
/// let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 3]], vec![1, 2, 3, 4, 5], vec![])?;
/// let zero = Values::from_vec::<Int32Type>(vec![0], vec![])?;
/// assert_eq!(to_padded(&x, 0, &zero, PadOptions::default())?.shape, vec![2, 3]);
/// assert!(to_padded(&x, 0, &zero, PadOptions::default().with_max_len(2)).is_err());
/// let cut = to_padded(&x, 0, &zero, PadOptions::default().with_max_len(2).with_truncation(true))?;
/// assert_eq!((cut.shape, cut.truncated), (vec![2, 2], 1));
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PadOptions {
    max_len: Option<usize>,
    truncate: bool,
}

impl PadOptions {
    /// Pads to `max_len` elements instead of the longest sequence.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LodTensor, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::{PadOptions, to_padded};
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
    /// let zero = Values::from_vec::<Float32Type>(vec![0.0], vec![])?;
    /// assert_eq!(to_padded(&x, 0, &zero, PadOptions::default().with_max_len(4))?.shape, vec![2, 4]);
    /// assert!(to_padded(&x, 0, &zero, PadOptions::default().with_max_len(1)).is_err());   // 2 > 1
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_max_len(mut self, max_len: usize) -> Self {
        self.max_len = Some(max_len);
        self
    }

    /// Whether a sequence longer than `max_len` is cut to its first `max_len` elements
    /// (`true`) or is an error (`false`, the default).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LodTensor, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::{PadOptions, to_padded};
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
    /// let zero = Values::from_vec::<Float32Type>(vec![0.0], vec![])?;
    /// let cut = to_padded(&x, 0, &zero, PadOptions::default().with_max_len(1).with_truncation(true))?;
    /// assert_eq!((cut.shape.clone(), cut.truncated), (vec![2, 1], 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_truncation(mut self, truncate: bool) -> Self {
        self.truncate = truncate;
        self
    }
}

impl From<Option<usize>> for PadOptions {
    fn from(max_len: Option<usize>) -> Self {
        PadOptions {
            max_len,
            truncate: false,
        }
    }
}

/// Sequences padded to one length: the result of [`to_padded`].
///
/// # Example
/// ```
/// use lodtensor::{LodTensor, Values};
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::to_padded;
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
/// let padded = to_padded(&x, 0, &Values::from_vec::<Float32Type>(vec![0.0], vec![])?, None)?;
/// assert_eq!(padded.values.typed::<Float32Type>()?, &[1.0, 2.0, 3.0, 0.0]);
/// assert_eq!(padded.mask, [true, true, true, false]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Padded {
    /// `n_seq · max_len` elements of the input's element shape, row-major.
    pub values: Values,
    /// `[n_seq, max_len, D…]`.
    pub shape: Vec<usize>,
    /// Elements of each padded row that hold data (at most `max_len`).
    pub lengths: Vec<usize>,
    /// `n_seq · max_len` flags, row-major: `true` where an element holds data.
    pub mask: Vec<bool>,
    /// How many sequences were cut to `max_len` (only with [`PadOptions::with_truncation`]).
    pub truncated: usize,
}

impl Padded {
    /// `max_len`, the second dimension.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LodTensor, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::to_padded;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
    /// let padded = to_padded(&x, 0, &Values::from_vec::<Float32Type>(vec![0.0], vec![])?, None)?;
    /// assert_eq!(padded.max_len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_len(&self) -> usize {
        self.shape[1]
    }

    /// The 1-level tensor of the rows without their padding ([`from_padded`]).
    ///
    /// # Errors
    /// As [`from_padded`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::{LodTensor, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// use lodtensor::ops::to_padded;
    /// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
    /// let padded = to_padded(&x, 0, &Values::from_vec::<Float32Type>(vec![0.0], vec![])?, None)?;
    /// assert_eq!(padded.to_lod_tensor()?, x);                    // the padding taken off again
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_lod_tensor(&self) -> Result<LodTensor> {
        from_padded(&self.values, &self.lengths)
    }
}

/// Documents of sentences padded on two levels: the result of [`to_padded_nested`].
///
/// # Example
/// ```
/// use lodtensor::{LodTensor, Values};
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::to_padded_nested;
/// // Two documents of [2, 1] and [1] sentences.
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![2, 1, 1]], vec![1.0; 4], vec![])?;
/// let padded = to_padded_nested(&x, 0, &Values::from_vec::<Float32Type>(vec![0.0], vec![])?)?;
/// assert_eq!(padded.shape, vec![2, 2, 2]);                   // docs, sentences, tokens
/// assert_eq!((padded.sentences.clone(), padded.lengths.clone()), (vec![2, 1], vec![2, 1, 1, 0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct PaddedNested {
    /// `n_docs · max_sents · max_tokens` elements of the input's element shape, row-major.
    pub values: Values,
    /// `[n_docs, max_sents, max_tokens, D…]`.
    pub shape: Vec<usize>,
    /// Sentences of each document.
    pub sentences: Vec<usize>,
    /// `n_docs · max_sents` token counts, row-major; 0 for padding sentences.
    pub lengths: Vec<usize>,
    /// `n_docs · max_sents · max_tokens` flags: `true` where an element holds data.
    pub mask: Vec<bool>,
}

/// The pad element: `pad_value` holds one item (broadcast) or one element.
fn pad_element(x: &LodTensor, pad_value: &Values) -> Result<Values> {
    if pad_value.dtype() != x.dtype() {
        return Err(DataError::InputMismatch {
            op: PAD,
            index: 1,
            what: "dtype",
            found: pad_value.dtype().to_string(),
            expected: x.dtype().to_string(),
        }
        .into());
    }
    let items = pad_value.items().len();
    let size = x.values().element_size();
    if items == size {
        return Values::try_new(pad_value.items().clone(), x.element_shape().to_vec());
    }
    if items == 1 {
        let one = Values::try_new(pad_value.items().clone(), vec![])?;
        let pieces = [Piece {
            source: 0,
            elements: 0..1,
            times: size,
        }];
        let broadcast = assemble(PAD, &[&one], &pieces)?;
        return Values::try_new(broadcast.items().clone(), x.element_shape().to_vec());
    }
    Err(ArgumentError::InvalidArgument {
        op: PAD,
        name: "pad value items",
        found: items.to_string(),
        expected: format!("1 or the element size {size}"),
    }
    .into())
}

fn pad_level(
    x: &LodTensor,
    level: usize,
    pad_value: &Values,
    options: PadOptions,
) -> Result<Padded> {
    let PadOptions { max_len, truncate } = options;
    let offsets = element_offsets(x.lod(), level)?;
    let pad = pad_element(x, pad_value)?;
    let longest = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let max_len = max_len.unwrap_or(longest);
    let n = offsets.len() - 1;
    let mut pieces = Vec::with_capacity(2 * n);
    let mut lengths = Vec::with_capacity(n);
    let mut mask = Vec::with_capacity(n * max_len);
    let mut truncated = 0;
    for (index, w) in offsets.windows(2).enumerate() {
        let len = w[1] - w[0];
        if len > max_len {
            if !truncate {
                return Err(DataError::SequenceTooLong {
                    level,
                    index,
                    found: len,
                    expected: max_len,
                }
                .into());
            }
            truncated += 1;
        }
        let kept = len.min(max_len);
        pieces.push(Piece::once(0, w[0]..w[0] + kept));
        pieces.push(Piece {
            source: 1,
            elements: 0..1,
            times: max_len - kept,
        });
        lengths.push(kept);
        mask.extend((0..max_len).map(|i| i < kept));
    }
    let values = assemble(PAD, &[x.values(), &pad], &pieces)?;
    let shape = [n, max_len]
        .into_iter()
        .chain(x.element_shape().iter().copied())
        .collect();
    Ok(Padded {
        values,
        shape,
        lengths,
        mask,
        truncated,
    })
}

/// Pads every sequence at `level` to one length (Paddle's `sequence_pad` at the last level;
/// at an outer level a sequence's elements are all those under it): the longest sequence's,
/// or the `max_len` of `options` ([`PadOptions`]; `None` and `Some(max_len)` convert into
/// it). `pad_value` holds one item (used for every item of a pad element) or one element,
/// of `x`'s dtype.
///
/// # Errors
/// [`DataError::SequenceTooLong`] when a sequence is longer than `max_len` (Paddle's rule; use
/// [`PadOptions::with_truncation`] to cut); [`ArgumentError::LevelOutOfBounds`];
/// [`DataError::InputMismatch`] / [`ArgumentError::InvalidArgument`] for a pad value of another dtype
/// or size.
///
/// # Example
/// Paddle's documented case 1: `x.lod = [[0, 2, 5]]`, `x.data = [a, b, c, d, e]`,
/// `pad_value = [0]`, `padded_length = 4` → `Out.data = [[a, b, 0, 0], [c, d, e, 0]]`,
/// `Length = [2, 3]`:
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{Lod, LodTensor, Values};
/// use lodtensor::ops::{from_padded, to_padded};
/// let (a, b, c, d, e) = (1, 2, 3, 4, 5);
/// let x = LodTensor::try_new(
///     Lod::try_from_offsets(&[vec![0, 2, 5]])?,
///     Values::from_vec::<Int32Type>(vec![a, b, c, d, e], vec![])?,
/// )?;
/// let zero = Values::from_vec::<Int32Type>(vec![0], vec![])?;
/// let padded = to_padded(&x, 0, &zero, Some(4))?;
/// assert_eq!(padded.shape, vec![2, 4]);
/// assert_eq!(padded.values.typed::<Int32Type>()?, &[a, b, 0, 0, c, d, e, 0]);
/// assert_eq!(padded.lengths, vec![2, 3]);
/// assert_eq!(padded.mask, vec![true, true, false, false, true, true, true, false]);
/// assert_eq!(from_padded(&padded.values, &padded.lengths)?, x);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn to_padded(
    x: &LodTensor,
    level: usize,
    pad_value: &Values,
    options: impl Into<PadOptions>,
) -> Result<Padded> {
    pad_level(x, level, pad_value, options.into())
}

/// [`to_padded`] that keeps the first `max_len` elements of longer sequences.
///
/// # Errors
/// As [`to_padded`], without [`DataError::SequenceTooLong`].
///
/// # Example
/// ```
/// use lodtensor::{LodTensor, Values};
/// use lodtensor::arrow::types::Float32Type;
/// use lodtensor::ops::{PadOptions, to_padded};
/// let x = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1.0, 2.0, 3.0], vec![])?;
/// let zero = Values::from_vec::<Float32Type>(vec![0.0], vec![])?;
/// #[allow(deprecated)]
/// let old = lodtensor::ops::to_padded_truncating(&x, 0, &zero, 1)?;
/// let new = to_padded(&x, 0, &zero, PadOptions::default().with_max_len(1).with_truncation(true))?;
/// assert_eq!(old.shape, new.shape);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[deprecated(
    since = "0.2.0",
    note = "use `to_padded(x, level, pad_value, PadOptions::default().with_max_len(max_len).with_truncation(true))`"
)]
pub fn to_padded_truncating(
    x: &LodTensor,
    level: usize,
    pad_value: &Values,
    max_len: usize,
) -> Result<Padded> {
    let options = PadOptions::default()
        .with_max_len(max_len)
        .with_truncation(true);
    to_padded(x, level, pad_value, options)
}

/// Pads documents of sentences on two levels: sequences of `level` (documents) to the most
/// sentences, sequences of `level + 1` (sentences) to the most elements, giving
/// `[n_docs, max_sents, max_tokens, D…]`.
///
/// # Errors
/// [`ArgumentError::LevelOutOfBounds`] when `x` has no level `level + 1`; pad value errors as
/// [`to_padded`].
///
/// # Example
/// ```
/// use arrow_array::types::Int32Type;
/// use lodtensor::{LodTensor, Values};
/// use lodtensor::ops::to_padded_nested;
/// // Documents [[1, 2], [3]] and [[4, 5, 6]].
/// let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 1], vec![2, 1, 3]], vec![1, 2, 3, 4, 5, 6], vec![])?;
/// let p = to_padded_nested(&x, 0, &Values::from_vec::<Int32Type>(vec![0], vec![])?)?;
/// assert_eq!(p.shape, vec![2, 2, 3]);
/// assert_eq!(p.values.typed::<Int32Type>()?, &[1, 2, 0, 3, 0, 0, 4, 5, 6, 0, 0, 0]);
/// assert_eq!((p.sentences, p.lengths), (vec![2, 1], vec![2, 1, 3, 0]));
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn to_padded_nested(x: &LodTensor, level: usize, pad_value: &Values) -> Result<PaddedNested> {
    let lod = x.lod();
    // Checks that level + 1 exists.
    let tokens = element_offsets(lod, level + 1)?;
    let sentences = lod.level_lengths(level)?;
    let pad = pad_element(x, pad_value)?;
    let max_sents = sentences.iter().copied().max().unwrap_or(0);
    let max_tokens = tokens.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let n = sentences.len();
    let mut pieces = Vec::new();
    let mut lengths = Vec::with_capacity(n * max_sents);
    let mut mask = Vec::with_capacity(n * max_sents * max_tokens);
    let mut sentence = 0;
    for &count in &sentences {
        for _ in 0..count {
            let (start, end) = (tokens[sentence], tokens[sentence + 1]);
            sentence += 1;
            pieces.push(Piece::once(0, start..end));
            pieces.push(Piece {
                source: 1,
                elements: 0..1,
                times: max_tokens - (end - start),
            });
            lengths.push(end - start);
            mask.extend((0..max_tokens).map(|i| i < end - start));
        }
        pieces.push(Piece {
            source: 1,
            elements: 0..1,
            times: (max_sents - count) * max_tokens,
        });
        lengths.extend(std::iter::repeat_n(0, max_sents - count));
        mask.extend(std::iter::repeat_n(false, (max_sents - count) * max_tokens));
    }
    let values = assemble(PAD, &[x.values(), &pad], &pieces)?;
    let shape = [n, max_sents, max_tokens]
        .into_iter()
        .chain(x.element_shape().iter().copied())
        .collect();
    Ok(PaddedNested {
        values,
        shape,
        sentences,
        lengths,
        mask,
    })
}

/// The 1-level tensor of padded rows without their padding (Paddle's `sequence_unpad`):
/// `dense` holds `lengths.len()` rows of `max_len` elements, row-major, and row `i` keeps
/// its first `lengths[i]` elements.
///
/// # Errors
/// [`ArgumentError::InvalidArgument`] when `dense`'s elements are not a whole number of rows;
/// [`DataError::SequenceTooLong`] when a length exceeds `max_len`.
///
/// # Example
/// Paddle's `sequence_unpad` example: x.data = [[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0,
/// 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0]], length = [2, 3, 4] → out.lod = [[0, 2, 5,
/// 9]], out.data = [1.0, 2.0, 6.0, 7.0, 8.0, 11.0, 12.0, 13.0, 14.0]:
/// ```
/// use arrow_array::types::Float32Type;
/// use lodtensor::Values;
/// use lodtensor::ops::from_padded;
/// let dense = Values::from_vec::<Float32Type>((1..=15).map(|v| v as f32).collect(), vec![])?;
/// let out = from_padded(&dense, &[2, 3, 4])?;
/// assert_eq!(out.lod().offsets(), vec![vec![0, 2, 5, 9]]);
/// assert_eq!(out.typed_values::<Float32Type>()?, &[1., 2., 6., 7., 8., 11., 12., 13., 14.]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn from_padded(dense: &Values, lengths: &[usize]) -> Result<LodTensor> {
    let elements = dense.num_elements();
    let n = lengths.len();
    let bad_rows = || {
        ArgumentError::InvalidArgument {
            op: UNPAD,
            name: "padded elements",
            found: elements.to_string(),
            expected: format!("a multiple of the {n} lengths"),
        }
        .into()
    };
    let max_len = match n {
        0 if elements == 0 => 0,
        0 => return Err(bad_rows()),
        _ if !elements.is_multiple_of(n) => return Err(bad_rows()),
        _ => elements / n,
    };
    let mut pieces = Vec::with_capacity(n);
    for (index, &len) in lengths.iter().enumerate() {
        if len > max_len {
            return Err(DataError::SequenceTooLong {
                level: 0,
                index,
                found: len,
                expected: max_len,
            }
            .into());
        }
        pieces.push(Piece::once(0, index * max_len..index * max_len + len));
    }
    let values = assemble(UNPAD, &[dense], &pieces)?;
    LodTensor::try_new(Lod::try_from_lengths(&[lengths])?, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, Error, ErrorKind};
    use crate::ops::model;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type};
    use proptest::prelude::*;

    /// Paddle's `sequence_pad` case 2: x.lod = [[0, 2, 5]], x.data = [[a1, a2], [b1, b2],
    /// [c1, c2], [d1, d2], [e1, e2]], pad_value = [0], padded_length = -1 → Out.data =
    /// [[[a1, a2], [b1, b2], [0, 0]], [[c1, c2], [d1, d2], [e1, e2]]], Length = [2, 3].
    /// Case 3: pad_value = [p1, p2] → [[[a1, a2], [b1, b2], [p1, p2]], …].
    #[test]
    fn paddle_cases_2_and_3() {
        let x = LodTensor::try_new(
            Lod::try_from_offsets(&[vec![0, 2, 5]]).unwrap(),
            Values::from_vec::<Int32Type>((1..=10).collect(), vec![2]).unwrap(),
        )
        .unwrap();
        let zero = Values::from_vec::<Int32Type>(vec![0], vec![]).unwrap();
        let p = to_padded(&x, 0, &zero, None).unwrap();
        assert_eq!(p.shape, vec![2, 3, 2]);
        assert_eq!(
            p.values.typed::<Int32Type>().unwrap(),
            &[1, 2, 3, 4, 0, 0, 5, 6, 7, 8, 9, 10]
        );
        assert_eq!(p.lengths, vec![2, 3]);
        assert_eq!(p.to_lod_tensor().unwrap(), x);
        let pp = Values::from_vec::<Int32Type>(vec![-1, -2], vec![2]).unwrap();
        let p = to_padded(&x, 0, &pp, None).unwrap();
        assert_eq!(
            p.values.typed::<Int32Type>().unwrap(),
            &[1, 2, 3, 4, -1, -2, 5, 6, 7, 8, 9, 10]
        );
    }

    #[test]
    fn errors_are_typed() {
        let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 3]], vec![1, 2, 3, 4, 5], vec![])
            .unwrap();
        let zero = Values::from_vec::<Int32Type>(vec![0], vec![]).unwrap();
        let e = to_padded(&x, 0, &zero, Some(2)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "level 0: sequence 1 has 3 elements, more than the maximum length 2"
        );
        let f = Values::from_vec::<Float32Type>(vec![0.0], vec![]).unwrap();
        assert!(matches!(
            to_padded(&x, 0, &f, None).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::InputMismatch {
                what: "dtype",
                ..
            }))
        ));
        let two = Values::from_vec::<Int32Type>(vec![0, 0], vec![]).unwrap();
        assert!(matches!(
            to_padded(&x, 0, &two, None).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "pad value items",
                ..
            }))
        ));
        assert!(matches!(
            to_padded_nested(&x, 0, &zero).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
                level: 1,
                levels: 1
            }))
        ));
        let dense = Values::from_vec::<Int32Type>(vec![1, 2, 3], vec![]).unwrap();
        assert!(matches!(
            from_padded(&dense, &[1, 1]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument { .. }))
        ));
        assert!(matches!(
            from_padded(&dense, &[4]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::SequenceTooLong {
                index: 0,
                found: 4,
                expected: 3,
                ..
            }))
        ));
        assert!(matches!(
            from_padded(&dense, &[]).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument { .. }))
        ));
        let empty = Values::from_vec::<Int32Type>(vec![], vec![]).unwrap();
        assert_eq!(from_padded(&empty, &[]).unwrap().num_rows(), 0);
    }

    proptest! {
        #[test]
        fn padding_matches_the_model(docs in model::nested(), skip in 0usize..3, cut in 0usize..6) {
            let t = model::tensor(&docs, skip);
            let pad = Values::from_vec::<Float64Type>(vec![-1.0], vec![]).unwrap();
            // Sentences (level 1), padded to the longest.
            let sentences: Vec<Vec<f64>> = docs.iter().flatten().cloned().collect();
            let longest = sentences.iter().map(Vec::len).max().unwrap_or(0);
            let p = to_padded(&t, 1, &pad, None).unwrap();
            prop_assert_eq!(&p.shape, &vec![sentences.len(), longest]);
            let mut want = Vec::new();
            for s in &sentences {
                want.extend_from_slice(s);
                want.extend(std::iter::repeat_n(-1.0, longest - s.len()));
            }
            prop_assert_eq!(p.values.typed::<Float64Type>().unwrap(), &want[..]);
            prop_assert_eq!(p.mask.iter().filter(|&&m| m).count(), sentences.iter().map(Vec::len).sum::<usize>());
            let back = p.to_lod_tensor().unwrap();
            prop_assert_eq!(back, t.drop_outer_levels(1).unwrap());
            // Truncated to `cut`.
            let options = PadOptions::default().with_max_len(cut).with_truncation(true);
            let p = to_padded(&t, 1, &pad, options).unwrap();
            let mut want = Vec::new();
            for s in &sentences {
                let k = s.len().min(cut);
                want.extend_from_slice(&s[..k]);
                want.extend(std::iter::repeat_n(-1.0, cut - k));
            }
            prop_assert_eq!(p.values.typed::<Float64Type>().unwrap(), &want[..]);
            prop_assert_eq!(p.truncated, sentences.iter().filter(|s| s.len() > cut).count());
            // Nested: [docs, max_sents, max_tokens].
            let p = to_padded_nested(&t, 0, &pad).unwrap();
            let max_sents = docs.iter().map(Vec::len).max().unwrap_or(0);
            prop_assert_eq!(&p.shape, &vec![docs.len(), max_sents, longest]);
            let mut want = Vec::new();
            for d in &docs {
                for s in d {
                    want.extend_from_slice(s);
                    want.extend(std::iter::repeat_n(-1.0, longest - s.len()));
                }
                want.extend(std::iter::repeat_n(-1.0, (max_sents - d.len()) * longest));
            }
            prop_assert_eq!(p.values.typed::<Float64Type>().unwrap(), &want[..]);
        }
    }
}
