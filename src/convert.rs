//! The exact, zero-copy mapping between a [`LodTensor`] and nested Arrow lists.
//!
//! ```text
//! k levels            Arrow type                                        one Arrow row
//! 0                   FixedSizeList<T, D1·D2·…> (fixed_shape_tensor)    one element
//!                     or T for scalar elements
//! 1                   LargeList<FixedSizeList<T, …>>                    one sequence
//! 2                   LargeList<LargeList<FixedSizeList<T, …>>>         one sequence of sequences
//! ```
//!
//! Level `k`'s offsets are the offsets of the `k`-th list from the outside, buffer for
//! buffer; the values are the `FixedSizeList`'s child, buffer for buffer. Reading accepts
//! `List` and `LargeList` at any level, sliced arrays, nested `FixedSizeList`s without
//! metadata (their sizes become the element shape) and plain primitive values.

use crate::error::{DataError, UnsupportedError};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, GenericListArray, OffsetSizeTrait};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, FieldRef};

use crate::error::{Error, Result};
use crate::extension;
use crate::lod::{LevelOffsets, Lod, ascend};
use crate::tensor::LodTensor;
use crate::values::Values;

use crate::layout::{ColumnLayout, ITEM};

impl LodTensor {
    /// The Arrow field of a column named `name` holding this tensor.
    ///
    /// # Example
    /// ```
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::arrow::array::Array;
    /// let field = t.arrow_field("x");
    /// assert_eq!(field.data_type(), t.to_arrow().data_type());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn arrow_field(&self, name: &str) -> Field {
        let widths = self
            .lod()
            .levels()
            .iter()
            .map(LevelOffsets::width)
            .collect();
        ColumnLayout::new(widths, element_field(self.values(), ITEM)).to_field(name)
    }

    /// The tensor as one Arrow array, one row per top-level sequence, sharing every buffer.
    ///
    /// # Example
    /// ```
    /// use lodtensor::LodTensor;
    /// use arrow_array::types::Float32Type;
    /// let t = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1]], vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// let array = t.to_arrow();
    /// assert_eq!(array.len(), 2);
    /// assert!(array.data_type().to_string().starts_with("LargeList(FixedSizeList(2 x Float32)"));
    /// let back = LodTensor::try_from_arrow(&t.arrow_field("x"), array.as_ref())?;
    /// assert_eq!(back, t);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn to_arrow(&self) -> ArrayRef {
        let values = self.values();
        let mut field = Arc::new(element_field(values, ITEM));
        let mut array = element_array(values);
        for level in self.lod().levels().iter().rev() {
            array = match level {
                LevelOffsets::I32(o) => Arc::new(list::<i32>(field, o, array)),
                LevelOffsets::I64(o) => Arc::new(list::<i64>(field, o, array)),
            };
            field = Arc::new(Field::new(ITEM, array.data_type().clone(), true));
        }
        array
    }

    /// The tensor an Arrow column holds, sharing every buffer. `field` is the column's field
    /// (its metadata carries the element shape of a 0-level tensor).
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedType`] for a layout that is not nested lists over fixed-size
    /// lists or primitives; [`DataError::Nulls`] for null lists or values;
    /// [`FormatError::ExtensionMetadata`](crate::FormatError::ExtensionMetadata) for bad `arrow.fixed_shape_tensor` metadata;
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) when `array`
    /// does not have `field`'s type.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::LodTensor;
    /// # let t = lodtensor::doc_fixtures::words();
    /// let back = LodTensor::try_from_arrow(&t.arrow_field("x"), t.to_arrow().as_ref())?;
    /// assert_eq!(back, t);                                          // the same buffers, viewed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_from_arrow(field: &Field, array: &dyn Array) -> Result<Self> {
        Self::from_levels_and(field, array, element_values)
    }

    /// The tensor of `array`, another batch of the column `self` was read from (the same
    /// field): the field's metadata, checked and parsed for `self`, is not read again; only
    /// the arrays are new. Reading a file of many batches takes each field once.
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) when `array`
    /// is not of the column's type; [`DataError::Nulls`] for null
    /// lists or values; [`DataError::ElementShape`] when the items are not whole elements.
    pub(crate) fn try_from_arrow_like(&self, field: &Field, array: &dyn Array) -> Result<Self> {
        let shape = self.element_shape();
        Self::from_levels_and(field, array, |_, elements| {
            Values::try_new(element_items(elements)?, shape.to_vec())
        })
    }

    /// Peels the list levels off `array` (of `field`'s type), then makes the values of the
    /// elements left with `elements`, given their field and array.
    fn from_levels_and(
        field: &Field,
        array: &dyn Array,
        elements: impl FnOnce(&Field, &dyn Array) -> Result<Values>,
    ) -> Result<Self> {
        check_array(field, array)?;
        let mut levels: Vec<LevelOffsets> = Vec::new();
        let mut field: &Field = field;
        let mut array = array;
        loop {
            // Each level keeps its offsets up to its parent's last one (Arrow allows a
            // child to run on past it; those entries belong to no sequence).
            let bound = levels.last().map(LevelOffsets::last);
            if array.null_count() > 0 {
                return Err(nulls_at(&levels, array));
            }
            let (offsets, child, child_field) = match array.data_type() {
                DataType::List(f) => {
                    let (o, child) = level_parts::<i32>(array, bound);
                    (LevelOffsets::I32(o), child, f)
                }
                DataType::LargeList(f) => {
                    let (o, child) = level_parts::<i64>(array, bound);
                    (LevelOffsets::I64(o), child, f)
                }
                _ => break,
            };
            levels.push(offsets);
            array = child;
            field = child_field;
        }
        let bound = levels.last().map(LevelOffsets::last);
        if array.null_count() > 0 {
            return Err(nulls_at(&levels, array));
        }
        let mut values = elements(field, array)?;
        if let Some(elements) = bound
            && elements < values.num_elements()
        {
            values = values.slice_elements(0..elements);
        }
        LodTensor::try_new(Lod::try_new(levels)?, values)
    }
}

/// The offsets of one list level, cut to `bound` sequences when its parent ends there,
/// and its child.
fn level_parts<O: OffsetSizeTrait>(
    array: &dyn Array,
    bound: Option<usize>,
) -> (OffsetBuffer<O>, &dyn Array) {
    let list = array
        .as_any()
        .downcast_ref::<GenericListArray<O>>()
        .expect("the data type says this is a list of this offset width");
    let offsets = match bound {
        // Arrow guarantees the parent's last offset <= this list's length.
        Some(n) if n < list.len() => list.offsets().slice(0, n),
        _ => list.offsets().clone(),
    };
    (offsets, list.values().as_ref())
}

/// The error for `array`, the entries of the level below `levels` (a list level, or the
/// elements), holding nulls: naming the level and the row of the first.
fn nulls_at(levels: &[LevelOffsets], array: &dyn Array) -> Error {
    let first = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
    let what = match array.data_type() {
        DataType::List(_) | DataType::LargeList(_) => format!("level {}", levels.len()),
        _ => "elements".to_owned(),
    };
    DataError::Nulls {
        what: format!("{what} (the first in row {})", ascend(levels, first)),
        count: array.null_count(),
    }
    .into()
}

/// The element field of `values`, named `name`: a tagged `FixedSizeList` or the item type.
fn element_field(values: &Values, name: &str) -> Field {
    let item = values.dtype().arrow_type();
    if values.element_shape().is_empty() {
        return Field::new(name, item, true);
    }
    Field::new(
        name,
        DataType::FixedSizeList(
            Arc::new(Field::new(ITEM, item, true)),
            values.element_size() as i32,
        ),
        true,
    )
    .with_metadata(extension::metadata(values.element_shape()))
}

/// The values as the Arrow array of their element field.
fn element_array(values: &Values) -> ArrayRef {
    if values.element_shape().is_empty() {
        return values.items().clone();
    }
    let size = values.element_size();
    Arc::new(FixedSizeListArray::new(
        Arc::new(Field::new(ITEM, values.dtype().arrow_type(), true)),
        size as i32,
        values.items().clone(),
        None,
    ))
}

fn list<O: OffsetSizeTrait>(
    field: FieldRef,
    offsets: &OffsetBuffer<O>,
    child: ArrayRef,
) -> GenericListArray<O> {
    GenericListArray::<O>::try_new(field, offsets.clone(), child, None)
        .expect("a valid LoD has its last offset within the child and the child's type")
}

/// The values an element array holds: fixed-size lists (tagged or nested) or primitives.
fn element_values(field: &Field, array: &dyn Array) -> Result<Values> {
    match array.data_type() {
        DataType::FixedSizeList(item_field, size) => {
            let fsl = array
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .expect("the data type says this is a fixed-size list");
            if fsl.null_count() > 0 {
                return Err(DataError::Nulls {
                    what: "elements".to_owned(),
                    count: fsl.null_count(),
                }
                .into());
            }
            let size = *size as usize;
            if let Some(shape) = extension::parse_shape(field.metadata(), size)? {
                if item_field.data_type().is_nested() {
                    return Err(UnsupportedError::UnsupportedType {
                        what: "fixed_shape_tensor storage",
                        data_type: field.data_type().clone(),
                    }
                    .into());
                }
                return Values::try_new(fsl.values().clone(), shape);
            }
            // Untagged: nested fixed-size lists give the dimensions, outermost first.
            let inner = element_values(item_field, fsl.values().as_ref())?;
            let shape = std::iter::once(size)
                .chain(inner.element_shape().iter().copied())
                .collect();
            Values::try_new(inner.items().clone(), shape)
        }
        DataType::List(_) | DataType::LargeList(_) => unreachable!("levels are peeled first"),
        other if other.is_primitive() || other == &DataType::Boolean => {
            Values::try_new(arrow_array::make_array(array.to_data()), vec![])
        }
        other => Err(UnsupportedError::UnsupportedType {
            what: "values",
            data_type: other.clone(),
        }
        .into()),
    }
}

/// The items of `elements`: the innermost array under its fixed-size lists, which must
/// hold no nulls.
fn element_items(elements: &dyn Array) -> Result<ArrayRef> {
    let Some(fsl) = elements.as_any().downcast_ref::<FixedSizeListArray>() else {
        return Ok(arrow_array::make_array(elements.to_data()));
    };
    if fsl.null_count() > 0 {
        return Err(DataError::Nulls {
            what: "elements".to_owned(),
            count: fsl.null_count(),
        }
        .into());
    }
    if fsl.values().as_any().is::<FixedSizeListArray>() {
        element_items(fsl.values().as_ref())
    } else {
        Ok(fsl.values().clone())
    }
}

/// Refuses an array that is not of the column's type:
/// [`ArgumentError::InvalidArgument`](crate::error::ArgumentError::InvalidArgument).
pub(crate) fn check_array(field: &Field, array: &dyn Array) -> Result<()> {
    if field.data_type() != array.data_type() {
        return Err(Error::invalid_argument(
            "Column",
            "array type",
            array.data_type(),
            format!(
                "{} (the type of field {:?})",
                field.data_type(),
                field.name()
            ),
        ));
    }
    Ok(())
}

/// Downcasts a tensor column to its outermost list (tests).
#[cfg(test)]
pub(crate) fn as_list<O: OffsetSizeTrait>(array: &ArrayRef) -> &GenericListArray<O> {
    array.as_any().downcast_ref().expect("a list")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, Error, ErrorKind, UnsupportedError};
    use crate::lod::OffsetWidth;
    use arrow_array::types::{Float32Type, Int64Type};
    use arrow_array::{Float32Array, Int64Array, LargeListArray};
    use arrow_buffer::ScalarBuffer;

    /// `items` as a fixed-size list of `size`, no nulls.
    fn fixed_list(items: ArrayRef, size: i32) -> ArrayRef {
        let item = Field::new("item", items.data_type().clone(), true);
        Arc::new(FixedSizeListArray::new(Arc::new(item), size, items, None))
    }

    /// `items` as a list (`i32` offsets) or large list (`i64`) of `offsets`, no nulls.
    fn list_of<O: OffsetSizeTrait>(items: ArrayRef, offsets: Vec<O>) -> ArrayRef {
        let item = Field::new("item", items.data_type().clone(), true);
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        Arc::new(GenericListArray::new(Arc::new(item), offsets, items, None))
    }

    fn example() -> LodTensor {
        LodTensor::from_lengths::<Float32Type>(
            &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
            (0..30).map(|i| i as f32).collect(),
            vec![2],
        )
        .unwrap()
    }

    #[test]
    fn offsets_are_the_lod_buffer_for_buffer() {
        let t = example();
        let array = t.to_arrow();
        let top = as_list::<i64>(&array);
        assert_eq!(top.value_offsets(), &[0, 3, 4, 6]);
        assert_eq!(
            top.value_offsets().as_ptr() as *const u8,
            t.lod().levels()[0].as_ptr()
        );
        let sentences = as_list::<i64>(top.values());
        assert_eq!(sentences.value_offsets(), &[0, 3, 5, 9, 10, 12, 15]);
        let fsl = sentences
            .values()
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .unwrap();
        assert_eq!(
            fsl.values().to_data().buffers()[0].as_ptr(),
            t.values().as_ptr()
        );
        let field = t.arrow_field("tokens");
        assert_eq!(field.data_type(), array.data_type());
        let back = LodTensor::try_from_arrow(&field, array.as_ref()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.values().as_ptr(), t.values().as_ptr());
        assert_eq!(
            back.lod().levels()[1].as_ptr(),
            t.lod().levels()[1].as_ptr()
        );
    }

    #[test]
    fn sliced_arrow_arrays_keep_their_base() {
        let t = example();
        let array = t.to_arrow().slice(1, 2);
        let back = LodTensor::try_from_arrow(&t.arrow_field("x"), array.as_ref()).unwrap();
        assert_eq!(
            back.lod().offsets(),
            vec![vec![3, 4, 6], vec![9, 10, 12, 15]]
        );
        assert_eq!(back, t.slice_rows(1..3).unwrap());
        // And a view goes back out as the same sliced layout.
        let again = back.to_arrow();
        assert_eq!(again.len(), 2);
        assert_eq!(as_list::<i64>(&again).value_offsets(), &[3, 4, 6]);
    }

    #[test]
    fn plain_lists_without_metadata() {
        // list<list<fixed_size_list<int64, 3>>> as pyarrow writes from nested Python lists.
        let items = Arc::new(Int64Array::from_iter_values(0..12)) as ArrayRef;
        let outer = list_of(
            list_of(fixed_list(items, 3), vec![0i32, 1, 4]),
            vec![0i64, 2],
        );
        let field = Field::new("x", outer.data_type().clone(), true);
        let t = LodTensor::try_from_arrow(&field, outer.as_ref()).unwrap();
        assert_eq!(t.lod().lengths(), vec![vec![2], vec![1, 3]]);
        assert_eq!(t.lod().levels()[0].width(), OffsetWidth::I64);
        assert_eq!(t.lod().levels()[1].width(), OffsetWidth::I32);
        assert_eq!(t.element_shape(), &[3]);
        // Same widths on the way out.
        let out = t.to_arrow();
        let DataType::LargeList(inner) = out.data_type() else {
            panic!("{}", out.data_type())
        };
        assert!(matches!(inner.data_type(), DataType::List(_)));
    }

    #[test]
    fn nested_fixed_size_lists_give_the_shape() {
        let items = Arc::new(Float32Array::from_iter_values((0..12).map(|i| i as f32))) as ArrayRef;
        let outer = fixed_list(fixed_list(items, 3), 2);
        let field = Field::new("x", outer.data_type().clone(), true);
        let t = LodTensor::try_from_arrow(&field, outer.as_ref()).unwrap();
        assert_eq!(t.shape(), vec![2, 2, 3]);
    }

    #[test]
    fn zero_level_columns_carry_the_shape_on_the_field() {
        let t = LodTensor::dense::<Float32Type>((0..8).map(|i| i as f32).collect(), &[2, 2, 2])
            .unwrap();
        let field = t.arrow_field("images");
        assert_eq!(
            field.metadata()[extension::EXTENSION_NAME_KEY],
            extension::EXTENSION_NAME
        );
        let back = LodTensor::try_from_arrow(&field, t.to_arrow().as_ref()).unwrap();
        assert_eq!(back.shape(), vec![2, 2, 2]);
        let labels = LodTensor::dense::<Int64Type>(vec![1, 2], &[2]).unwrap();
        assert_eq!(labels.to_arrow().data_type(), &DataType::Int64);
    }

    #[test]
    fn bad_layouts_are_errors() {
        let strings = arrow_array::StringArray::from(vec!["a"]);
        let field = Field::new("s", DataType::Utf8, true);
        assert!(matches!(
            LodTensor::try_from_arrow(&field, &strings).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(UnsupportedError::UnsupportedType {
                what: "values",
                ..
            }))
        ));
        let with_null = LargeListArray::new(
            Arc::new(Field::new("item", DataType::Int64, true)),
            OffsetBuffer::new(ScalarBuffer::from(vec![0i64, 1, 1])),
            Arc::new(Int64Array::from(vec![1])),
            Some(vec![true, false].into()),
        );
        let field = Field::new("x", with_null.data_type().clone(), true);
        assert!(matches!(
            LodTensor::try_from_arrow(&field, &with_null).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::Nulls { count: 1, .. }))
        ));
        let other = Field::new("x", DataType::Int32, true);
        assert!(matches!(
            LodTensor::try_from_arrow(&other, &with_null).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::InvalidArgument {
                name: "array type",
                ..
            }))
        ));
    }
}
