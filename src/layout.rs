//! How a column's Arrow type lays out a LoD tensor: list levels over an element field.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef};

use crate::error::Result;
use crate::lod::OffsetWidth;
use crate::values::DType;

/// The name of every list item field, as pyarrow and arrow-rs name them.
pub(crate) const ITEM: &str = "item";

/// One level of a tensor column's nested Arrow type, peeled off by [`peel`].
// Only the Parquet decoder reads a fixed-size list's size.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub(crate) enum Nest<'a> {
    /// A `List` (`i32` offsets) or `LargeList` (`i64`): a LoD level, over its item field.
    List(OffsetWidth, &'a FieldRef),
    /// A `FixedSizeList` of this size: a dimension of the element, over its item field.
    Fixed(i32, &'a FieldRef),
}

/// The outermost list level of `data_type`, `None` for any other type: the one place a
/// column's nested list types are told apart (the layout, the Parquet decoder's plan and
/// the side-column test all peel their levels with it).
pub(crate) fn peel(data_type: &DataType) -> Option<Nest<'_>> {
    match data_type {
        DataType::List(f) => Some(Nest::List(OffsetWidth::I32, f)),
        DataType::LargeList(f) => Some(Nest::List(OffsetWidth::I64, f)),
        DataType::FixedSizeList(f, size) => Some(Nest::Fixed(*size, f)),
        _ => None,
    }
}

/// The layout of a column's Arrow type: one nested `List` (`i32` offsets) or `LargeList`
/// (`i64`) per LoD level, outermost first, over the element field (a `FixedSizeList`
/// tagged `arrow.fixed_shape_tensor`, or the item type for scalar elements).
///
/// ```text
/// LargeList<List<FixedSizeList<f32, 64>>>   widths [I64, I32], element FixedSizeList<f32, 64>
/// ```
///
/// The one walk over a column's nested types: the readers, the writers and the conversions
/// find the levels, their offset widths and the element type through it.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use lodtensor::arrow::{DataType, Field};
/// use lodtensor::{ColumnLayout, DType, OffsetWidth};
///
/// let item = Arc::new(Field::new("item", DataType::Float32, true));
/// let inner = Arc::new(Field::new("item", DataType::List(item), true));
/// let field = Field::new("tokens", DataType::LargeList(inner), true);
/// let layout = ColumnLayout::of(&field);
/// assert_eq!(layout.widths(), &[OffsetWidth::I64, OffsetWidth::I32]);
/// assert_eq!(layout.element().data_type(), &DataType::Float32);
/// assert_eq!(layout.dtype()?, DType::Float32);
/// assert_eq!(layout.to_field("tokens"), field);
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnLayout {
    widths: Vec<OffsetWidth>,
    element: Field,
}

impl ColumnLayout {
    /// A layout of lists of `widths` (outermost first) over `element`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{ColumnLayout, OffsetWidth};
    /// use lodtensor::arrow::{DataType, Field};
    /// let layout = ColumnLayout::new(vec![OffsetWidth::I64; 2], Field::new("item", DataType::Int32, false));
    /// assert_eq!(ColumnLayout::of(&layout.to_field("x")), layout);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(widths: Vec<OffsetWidth>, element: Field) -> Self {
        ColumnLayout { widths, element }
    }

    /// The layout of `field`'s type: its `List` and `LargeList` levels peeled off, down to
    /// the first other type (the element field; `field` itself for a 0-level column).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::ColumnLayout;
    /// let layout = ColumnLayout::of(&Column::new("x", t).arrow_field());
    /// assert_eq!(layout.num_levels(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of(field: &Field) -> Self {
        let mut widths = Vec::new();
        let mut field = field;
        while let Some(Nest::List(width, item)) = peel(field.data_type()) {
            widths.push(width);
            field = item;
        }
        ColumnLayout {
            widths,
            element: field.clone(),
        }
    }

    /// The offset width of every level, outermost first.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{ColumnLayout, OffsetWidth};
    /// let layout = ColumnLayout::of(&Column::new("x", t).with_offset_width(OffsetWidth::I32)?.arrow_field());
    /// assert_eq!(layout.widths(), [OffsetWidth::I32, OffsetWidth::I32]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn widths(&self) -> &[OffsetWidth] {
        &self.widths
    }

    /// The number of LoD levels.
    ///
    /// # Example
    /// ```
    /// use lodtensor::ColumnLayout;
    /// use lodtensor::arrow::{DataType, Field};
    /// assert_eq!(ColumnLayout::of(&Field::new("plain", DataType::Int64, false)).num_levels(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_levels(&self) -> usize {
        self.widths.len()
    }

    /// The element field under the levels.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::ColumnLayout;
    /// use lodtensor::arrow::DataType;
    /// let layout = ColumnLayout::of(&Column::new("x", t).arrow_field());
    /// assert_eq!(layout.element().data_type(), &DataType::Float32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn element(&self) -> &Field {
        &self.element
    }

    /// The dtype of the element's items, under any fixed-size lists.
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedType`](crate::UnsupportedError::UnsupportedType)
    /// for an item type with no [`DType`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::{ColumnLayout, DType};
    /// assert_eq!(ColumnLayout::of(&Column::new("x", t).arrow_field()).dtype()?, DType::Float32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtype(&self) -> Result<DType> {
        let mut data_type = self.element.data_type();
        while let Some(Nest::List(_, f) | Nest::Fixed(_, f)) = peel(data_type) {
            data_type = f.data_type();
        }
        DType::try_from_arrow(data_type)
    }

    /// The column field named `name` of this layout: the element wrapped in the levels,
    /// innermost first, every item field named `item` and nullable.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::ColumnLayout;
    /// let field = Column::new("x", t).arrow_field();
    /// assert_eq!(ColumnLayout::of(&field).to_field("y").data_type(), field.data_type());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_field(&self, name: &str) -> Field {
        let mut field = self.element.clone().with_name(name);
        for width in self.widths.iter().rev() {
            let item = Arc::new(field.with_name(ITEM));
            let data_type = match width {
                OffsetWidth::I32 => DataType::List(item),
                OffsetWidth::I64 => DataType::LargeList(item),
            };
            field = Field::new(name, data_type, true);
        }
        field
    }
}
