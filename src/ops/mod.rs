//! Sequence operations, with PaddlePaddle's sequence operators as the reference semantics.
//!
//! | module | operations |
//! | --- | --- |
//! | `context` | [`context_project`] (the im2col of `sequence_conv`) |
//! | `expand` | [`sequence_expand`] (and its zero-copy [`ExpandedView`]), [`sequence_expand_as`] |
//! | `ids` | [`sequence_enumerate`], [`sequence_erase`] |
//! | `mask` | [`sequence_mask`], [`sequence_mask_as`] |
//! | `pad` | [`to_padded`] (with [`PadOptions`]), [`to_padded_nested`], [`from_padded`] |
//! | `pool` | [`sequence_pool_any`] (any numeric dtype), [`sequence_pool_typed`], [`sequence_max_index`], [`sequence_first_step`], [`sequence_last_step`] |
//! | `reshape` | [`sequence_reshape`] (a view) |
//! | `scatter` | [`sequence_scatter`] |
//! | `softmax` | [`sequence_softmax`] |
//! | `structure` | [`concat()`], [`split`], [`split_rows`], [`sequence_concat`], [`sequence_reverse`], [`sequence_slice`], [`lod_reset`] |
//!
//! Level 0 is the outermost level; the last level indexes elements (rows of the values).
//! Every operation accepts views (offsets that do not start at 0, values with elements
//! before the view) and looks only at what is in view. Operations that only re-index
//! ([`split`], [`split_rows`], [`lod_reset`], [`sequence_expand_view`], [`sequence_reshape`]) share the input's
//! value buffer; the others write new values, in one pass over the input.

mod context;
mod expand;
mod ids;
mod mask;
mod pad;
mod pool;
mod reshape;
mod scatter;
mod softmax;
mod structure;

use crate::error::{ArgumentError, DataError, UnsupportedError};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBufferBuilder, ScalarBuffer};

pub use context::context_project;
pub use expand::{ExpandedView, sequence_expand, sequence_expand_as, sequence_expand_view};
pub use ids::{sequence_enumerate, sequence_erase};
pub use mask::{sequence_mask, sequence_mask_as};
#[allow(deprecated)]
pub use pad::to_padded_truncating;
pub use pad::{PadOptions, Padded, PaddedNested, from_padded, to_padded, to_padded_nested};
#[allow(deprecated)]
pub use pool::sequence_pool;
pub use pool::{
    PoolItem, PoolType, sequence_first_step, sequence_last_step, sequence_max_index,
    sequence_pool_any, sequence_pool_typed,
};
pub use reshape::sequence_reshape;
pub use scatter::sequence_scatter;
pub use softmax::sequence_softmax;
pub use structure::{
    concat, lod_reset, sequence_concat, sequence_reverse, sequence_slice, split, split_rows,
};

use crate::error::{Error, Result};
use crate::lod::{Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// Checks that an input of `op` has exactly one level.
fn one_level(op: &'static str, levels: usize) -> Result<()> {
    match levels {
        0 => Err(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels: 0,
        }
        .into()),
        1 => Ok(()),
        found => Err(UnsupportedError::TooManyLevels {
            op,
            found,
            expected: 1,
        }
        .into()),
    }
}

impl AsRef<Lod> for Lod {
    fn as_ref(&self) -> &Lod {
        self
    }
}

/// A tensor's LoD, so that operations taking a reference LoD accept the tensor itself.
impl AsRef<Lod> for LodTensor {
    fn as_ref(&self) -> &Lod {
        self.lod()
    }
}

/// Runs `$body` with `$T` bound to `arrow_array::types::$arrow` when `$dtype` is
/// `DType::$variant`, one of the listed pairs, and `$rest` for the dtypes `$rest_pat`
/// matches.
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident, $body:expr; $($variant:ident => $arrow:ident),+; $rest_pat:pat => $rest:expr) => {
        match $dtype {
            $($crate::values::DType::$variant => {
                type $T = arrow_array::types::$arrow;
                $body
            })+
            $rest_pat => $rest,
        }
    };
}
pub(crate) use dispatch_dtype;

/// Runs `$body` with `$T` bound to the Arrow type of a numeric `$dtype`, or `$bool` for
/// booleans.
macro_rules! with_arrow_type {
    ($dtype:expr, |$T:ident| $body:expr, bool => $bool:expr) => {
        $crate::ops::dispatch_dtype!(
            $dtype, $T, $body;
            UInt8 => UInt8Type, UInt16 => UInt16Type, UInt32 => UInt32Type, UInt64 => UInt64Type,
            Int8 => Int8Type, Int16 => Int16Type, Int32 => Int32Type, Int64 => Int64Type,
            Float16 => Float16Type, Float32 => Float32Type, Float64 => Float64Type;
            $crate::values::DType::Bool => $bool
        )
    };
}
pub(crate) use with_arrow_type;

/// Runs `$body` with `$T` bound to the Arrow type of an integer `$dtype`, or `$other` for
/// the other dtypes.
macro_rules! with_int_type {
    ($dtype:expr, |$T:ident| $body:expr, other => $other:expr) => {
        $crate::ops::dispatch_dtype!(
            $dtype, $T, $body;
            UInt8 => UInt8Type, UInt16 => UInt16Type, UInt32 => UInt32Type, UInt64 => UInt64Type,
            Int8 => Int8Type, Int16 => Int16Type, Int32 => Int32Type, Int64 => Int64Type;
            _ => $other
        )
    };
}
pub(crate) use with_int_type;

/// One run of output elements: elements `elements` of source `source`, written `times`
/// times in a row.
#[derive(Clone, Debug)]
pub(crate) struct Piece {
    pub source: usize,
    pub elements: Range<usize>,
    pub times: usize,
}

impl Piece {
    pub fn once(source: usize, elements: Range<usize>) -> Self {
        Piece {
            source,
            elements,
            times: 1,
        }
    }
}

/// New values made of `pieces` of `sources` (which share dtype and element shape, and
/// hold every element a piece names: callers check both).
pub(crate) fn assemble(op: &'static str, sources: &[&Values], pieces: &[Piece]) -> Result<Values> {
    let first = sources.first().expect("assemble has at least one source");
    for (index, s) in sources.iter().enumerate().skip(1) {
        check_same(op, index, first, s)?;
    }
    let size = first.element_size();
    let mut total = 0usize;
    for p in pieces {
        let n = (p.elements.end - p.elements.start)
            .checked_mul(p.times)
            .and_then(|n| n.checked_mul(size))
            .and_then(|n| total.checked_add(n));
        total = n.ok_or_else(|| ArgumentError::InvalidArgument {
            op,
            name: "output size",
            found: "more than usize::MAX items".to_owned(),
            expected: "an allocatable size".to_owned(),
        })?;
    }
    // Each piece's items (a range of its source's items), once per repetition, in order.
    let runs = pieces.iter().flat_map(|p| {
        let items = p.elements.start * size..p.elements.end * size;
        std::iter::repeat_n((p.source, items), p.times)
    });
    let items: ArrayRef = with_arrow_type!(
        first.dtype(),
        |T| {
            let slices = sources
                .iter()
                .map(|v| v.typed::<T>())
                .collect::<Result<Vec<_>>>()?;
            let mut out = Vec::with_capacity(total);
            runs.for_each(|(source, items)| out.extend_from_slice(&slices[source][items]));
            array_of::<T>(out)
        },
        bool => {
            let arrays = sources
                .iter()
                .map(|v| v.booleans())
                .collect::<Result<Vec<_>>>()?;
            let mut out = BooleanBufferBuilder::new(total);
            for (source, items) in runs {
                out.append_buffer(&arrays[source].values().slice(items.start, items.len()));
            }
            Arc::new(BooleanArray::new(out.finish(), None))
        }
    );
    Values::try_new(items, first.element_shape().to_vec())
}

/// An Arrow array that takes ownership of `items` (no copy).
pub(crate) fn array_of<T: ArrowPrimitiveType>(items: Vec<T::Native>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(items), None))
}

/// Checks that input `index` has the dtype and element shape of `first`.
pub(crate) fn check_same(
    op: &'static str,
    index: usize,
    first: &Values,
    other: &Values,
) -> Result<()> {
    if other.dtype() != first.dtype() {
        return Err(DataError::InputMismatch {
            op,
            index,
            what: "dtype",
            found: other.dtype().to_string(),
            expected: first.dtype().to_string(),
        }
        .into());
    }
    if other.element_shape() != first.element_shape() {
        return Err(DataError::InputMismatch {
            op,
            index,
            what: "element shape",
            found: format!("{:?}", other.element_shape()),
            expected: format!("{:?}", first.element_shape()),
        }
        .into());
    }
    Ok(())
}

/// The element ranges of every sequence in view at `level`, as `n + 1` positions (Paddle's
/// absolute offsets of one level).
pub(crate) fn element_offsets(lod: &Lod, level: usize) -> Result<Vec<usize>> {
    let n = lod.num_sequences(level)?;
    let mut offsets = Vec::with_capacity(n + 1);
    for j in 0..n {
        offsets.push(lod.sequence_elements(level, j)?.start);
    }
    offsets.push(if n == 0 {
        lod.elements().start
    } else {
        lod.sequence_elements(level, n - 1)?.end
    });
    Ok(offsets)
}

/// The offset width of a LoD's outermost level (`i64` for a 0-level LoD).
pub(crate) fn width_of(lod: &Lod) -> OffsetWidth {
    lod.levels().first().map_or(OffsetWidth::I64, |o| o.width())
}

/// The dtype check of typed operations.
pub(crate) fn check_dtype<T: ArrowPrimitiveType>(values: &Values) -> Result<()> {
    if values.dtype().arrow_type() == T::DATA_TYPE {
        Ok(())
    } else {
        Err(ArgumentError::DTypeMismatch {
            expected: T::DATA_TYPE.to_string(),
            found: values.dtype().name().to_owned(),
        }
        .into())
    }
}

/// `rows · width` items of `dtype`, checked to be an allocatable size (at most `isize::MAX`
/// bytes); otherwise an [`ArgumentError::InvalidArgument`] naming argument `name` of value
/// `found`.
pub(crate) fn output_items(
    op: &'static str,
    (name, found): (&'static str, usize),
    rows: usize,
    width: usize,
    dtype: DType,
) -> Result<usize> {
    rows.checked_mul(width)
        .filter(|n| {
            n.checked_mul(dtype.byte_width().unwrap_or(1))
                .is_some_and(|bytes| bytes <= isize::MAX as usize)
        })
        .ok_or_else(|| {
            Error::invalid_argument(
                op,
                name,
                found,
                format!("an output size that fits in memory ({rows} rows of {width} items)"),
            )
        })
}

/// `dtype` named in errors of operations that need arithmetic.
pub(crate) fn unsupported(op: &'static str, found: DType) -> Error {
    UnsupportedError::UnsupportedDType { op, found }.into()
}

#[cfg(test)]
pub(crate) mod model {
    //! The reference model: a LoD tensor as nested `Vec`s of scalar elements, and the
    //! strategies that make random tensors (with empty sequences and sliced views).

    use arrow_array::ArrowPrimitiveType;
    use arrow_array::types::Float64Type;
    use proptest::prelude::*;

    use crate::lod::Lod;
    use crate::tensor::LodTensor;
    use crate::values::Values;

    /// A 2-level tensor as documents of sentences of words (each word one `f64`).
    pub type Nested = Vec<Vec<Vec<f64>>>;

    /// Documents with 0..4 sentences of 0..5 small integers (exact in any float sum).
    pub fn nested() -> impl Strategy<Value = Nested> {
        prop::collection::vec(
            prop::collection::vec(
                prop::collection::vec((-20i32..20).prop_map(f64::from), 0..5),
                0..4,
            ),
            0..6,
        )
    }

    /// The tensor of `docs`, as a view of rows `skip..skip + docs.len()` of a tensor that
    /// has `skip` documents of junk before them (so offsets start past 0).
    pub fn tensor(docs: &Nested, skip: usize) -> LodTensor {
        let junk: Nested = (0..skip).map(|i| vec![vec![99.0; i + 1]; 2]).collect();
        let all: Nested = junk.iter().chain(docs).cloned().collect();
        let l0 = all.iter().map(Vec::len).collect::<Vec<_>>();
        let l1 = all.iter().flatten().map(Vec::len).collect::<Vec<_>>();
        let items = all.iter().flatten().flatten().copied().collect();
        let t = LodTensor::try_new(
            Lod::try_from_lengths(&[l0, l1]).unwrap(),
            Values::from_vec::<Float64Type>(items, vec![]).unwrap(),
        )
        .unwrap();
        t.slice_rows(skip..skip + docs.len()).unwrap()
    }

    /// A 1-level tensor of scalar items: sequence `i` holds the next `lengths[i]` items.
    pub fn sequences<T: ArrowPrimitiveType>(lengths: &[usize], items: Vec<T::Native>) -> LodTensor {
        LodTensor::from_lengths::<T>(&[lengths.to_vec()], items, vec![]).unwrap()
    }

    /// The model of a tensor with two levels of scalar `f64` elements.
    pub fn to_nested(t: &LodTensor) -> Nested {
        let items = t.values().typed::<Float64Type>().unwrap();
        let lod = t.lod();
        let mut sentence = 0;
        lod.level_lengths(0)
            .unwrap()
            .into_iter()
            .map(|count| {
                (0..count)
                    .map(|_| {
                        let r = lod.sequence_elements(1, sentence).unwrap();
                        sentence += 1;
                        items[r].to_vec()
                    })
                    .collect()
            })
            .collect()
    }
}
