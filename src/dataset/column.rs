//! `Column`: one named column of a dataset, a LoD tensor or a side column, and its Arrow
//! field with the `lodtensor.*` metadata.

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::{Field, FieldRef};

use super::side;
use crate::error::Result;
use crate::error::{ArgumentError, FormatError};
use crate::format::{KEY_DTYPE, KEY_ELEMENT_SHAPE, KEY_LEVEL_NAMES, KEY_LOD_LEVELS};
use crate::lod::OffsetWidth;
use crate::tensor::LodTensor;

/// One named column: a LoD tensor, or a side column of any other Arrow type (format-spec
/// §2.2) that rides along with the rows.
///
/// # Example
/// ```
/// use lodtensor::arrow::types::Int64Type;
/// use lodtensor::{Column, LodTensor, OffsetWidth};
/// let t = LodTensor::from_lengths::<Int64Type>(&[vec![2, 1], vec![1, 2, 3]], (0..6).collect(), vec![])?;
/// let c = Column::new("tokens", t).with_level_names(["documents", "sentences"])?;
/// assert_eq!((c.name(), c.level_names()), ("tokens", &["documents".to_owned(), "sentences".to_owned()][..]));
/// let narrow = c.with_offset_width(OffsetWidth::I32)?;   // Arrow List instead of LargeList
/// assert_eq!(narrow.tensor()?, c.tensor()?);
/// assert!(narrow.arrow_field().data_type().to_string().starts_with("List("));
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub(super) name: String,
    pub(super) level_names: Vec<String>,
    pub(super) data: ColumnData,
}

/// What a column holds.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ColumnData {
    Tensor(LodTensor),
    /// A side column: its field (type, nullability, metadata) and its array.
    Side(FieldRef, ArrayRef),
}

impl Column {
    /// A LoD tensor column with unnamed levels.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// let column = Column::new("tokens", t);
    /// assert_eq!((column.name(), column.num_rows()), ("tokens", 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(name: impl Into<String>, tensor: LodTensor) -> Self {
        Column {
            name: name.into(),
            level_names: Vec::new(),
            data: ColumnData::Tensor(tensor),
        }
    }

    /// The same column with its levels named, outermost first (`["documents", "sentences"]`).
    ///
    /// # Errors
    /// [`FormatError::Metadata`] when the number of names is not the number of levels;
    /// [`ArgumentError::NotATensor`] for names given to a side column.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// let column = Column::new("tokens", t).with_level_names(["documents", "sentences"])?;
    /// assert_eq!(column.level_names(), ["documents", "sentences"]);
    /// assert!(column.clone().with_level_names(["only one"]).is_err());   // one name per level
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_level_names<S: Into<String>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Result<Self> {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        if names.is_empty() {
            return Ok(self);
        }
        let levels = self.tensor()?.num_levels();
        if names.len() != levels {
            return Err(FormatError::Metadata {
                key: KEY_LEVEL_NAMES,
                value: format!("{names:?}"),
                reason: format!("the column has {levels} levels"),
            }
            .into());
        }
        self.level_names = names;
        Ok(self)
    }

    /// The column's name.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// assert_eq!(Column::new("tokens", t).name(), "tokens");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The level names, outermost first; empty when not given (and for a side column).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// assert!(Column::new("tokens", t).level_names().is_empty());        // none given
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn level_names(&self) -> &[String] {
        &self.level_names
    }

    /// The tensor.
    ///
    /// # Errors
    /// [`ArgumentError::NotATensor`] for a side column, naming it and its type.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::arrow::array::{ArrayRef, StringArray};
    /// let column = Column::new("tokens", t);
    /// assert_eq!(column.tensor()?.num_levels(), 2);
    /// let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec!["a", "b"]));
    /// assert!(Column::side("id", ids)?.tensor().is_err());             // a side column
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tensor(&self) -> Result<&LodTensor> {
        match &self.data {
            ColumnData::Tensor(t) => Ok(t),
            ColumnData::Side(field, _) => Err(side::not_a_tensor(&self.name, field.data_type())),
        }
    }

    /// The tensor, or `None` for a side column.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// assert_eq!(Column::new("tokens", t).as_tensor().map(|t| t.num_rows()), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_tensor(&self) -> Option<&LodTensor> {
        match &self.data {
            ColumnData::Tensor(t) => Some(t),
            ColumnData::Side(..) => None,
        }
    }

    /// The array of a side column, or `None` for a tensor column.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Column;
    /// use lodtensor::arrow::array::{Array, ArrayRef, StringArray};
    /// let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec!["a", "b"]));
    /// let column = Column::side("id", ids)?;
    /// assert_eq!(column.side_array().map(|a| a.len()), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn side_array(&self) -> Option<&ArrayRef> {
        match &self.data {
            ColumnData::Tensor(_) => None,
            ColumnData::Side(_, array) => Some(array),
        }
    }

    /// Whether this is a side column.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::arrow::array::{ArrayRef, Int64Array};
    /// let labels: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![3, 7]));
    /// assert!(Column::side("label", labels)?.is_side());
    /// assert!(!Column::new("tokens", t).is_side());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_side(&self) -> bool {
        matches!(self.data, ColumnData::Side(..))
    }

    /// The number of rows.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// assert_eq!(Column::new("tokens", t).num_rows(), 2);              // top-level sequences
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        match &self.data {
            ColumnData::Tensor(t) => t.num_rows(),
            ColumnData::Side(_, array) => array.len(),
        }
    }

    /// The column as one Arrow array, one row per row, sharing every buffer.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::arrow::array::Array;
    /// let array = Column::new("tokens", t).to_arrow();                 // a list of lists
    /// assert_eq!(array.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_arrow(&self) -> ArrayRef {
        match &self.data {
            ColumnData::Tensor(t) => t.to_arrow(),
            ColumnData::Side(_, array) => array.clone(),
        }
    }

    /// Rows `rows`, as a view (Arrow's zero-copy slice for a side column).
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// let second = Column::new("tokens", t).slice_rows(1..2)?;
    /// assert_eq!(second.tensor()?.elements().len(), 3);                // a view of words 3..6
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice_rows(&self, rows: Range<usize>) -> Result<Self> {
        ArgumentError::check_rows(&rows, self.num_rows())?;
        let data = match &self.data {
            ColumnData::Tensor(t) => ColumnData::Tensor(t.slice_rows(rows)?),
            ColumnData::Side(field, array) => {
                ColumnData::Side(field.clone(), array.slice(rows.start, rows.len()))
            }
        };
        Ok(Column {
            data,
            ..self.clone()
        })
    }

    /// The same column with every level's offsets in `width` (copies the offsets that
    /// change, never the values); a side column is returned as it is.
    ///
    /// # Errors
    /// [`DataError::OffsetOverflow`](crate::DataError::OffsetOverflow) when an offset does not fit `width`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::OffsetWidth;
    /// let narrow = Column::new("tokens", t).with_offset_width(OffsetWidth::I32)?;
    /// assert!(narrow.tensor()?.lod().levels().iter().all(|l| l.width() == OffsetWidth::I32));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_offset_width(&self, width: OffsetWidth) -> Result<Self> {
        let ColumnData::Tensor(tensor) = &self.data else {
            return Ok(self.clone());
        };
        if tensor.lod().levels().iter().all(|l| l.width() == width) {
            return Ok(self.clone());
        }
        let (lod, values) = tensor.clone().into_parts();
        Ok(Column {
            data: ColumnData::Tensor(LodTensor::try_new(lod.with_offset_width(width)?, values)?),
            ..self.clone()
        })
    }

    /// The Arrow field, with this column's `lodtensor.*` metadata.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// let column = Column::new("tokens", t);
    /// let field = column.arrow_field();
    /// assert_eq!(field.name(), "tokens");
    /// assert_eq!(field.data_type(), column.to_arrow().data_type());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn arrow_field(&self) -> Field {
        match &self.data {
            ColumnData::Tensor(tensor) => {
                let field = tensor.arrow_field(&self.name);
                let mut metadata = field.metadata().clone();
                metadata.extend(column_metadata(self.level_names(), tensor));
                field.with_metadata(metadata)
            }
            ColumnData::Side(field, _) => side::field(field),
        }
    }

    /// The column an Arrow field and array hold: a LoD tensor when the field says so or its
    /// type is a LoD tensor's (format-spec §2.2), its metadata checked against its layout;
    /// else a side column. A column of a tensor's type with a null at some level is a side
    /// column unless its field declares it a tensor (`lodtensor.kind = "tensor"`,
    /// `lodtensor.lod_levels` or an `arrow.fixed_shape_tensor` element): then the nulls are
    /// an error.
    ///
    /// # Errors
    /// As [`LodTensor::try_from_arrow`]; [`FormatError::Metadata`] when a `lodtensor.*` key
    /// contradicts the layout.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::Column;
    /// # let t = lodtensor::doc_fixtures::words();
    /// let column = Column::new("tokens", t);
    /// let back = Column::try_from_arrow(&column.arrow_field(), column.to_arrow().as_ref())?;
    /// assert_eq!(back, column);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_from_arrow(field: &Field, array: &dyn arrow_array::Array) -> Result<Self> {
        if side::is_side_array(field, array)? {
            return Column::side_with_field(
                field.clone(),
                arrow_array::make_array(array.to_data()),
            );
        }
        let tensor = LodTensor::try_from_arrow(field, array)?;
        let column = Column::new(field.name(), tensor);
        let metadata = field.metadata();
        let names = match metadata.get(KEY_LEVEL_NAMES) {
            None => Vec::new(),
            Some(raw) => {
                serde_json::from_str::<Vec<String>>(raw).map_err(|e| FormatError::Metadata {
                    key: KEY_LEVEL_NAMES,
                    value: raw.clone(),
                    reason: e.to_string(),
                })?
            }
        };
        let column = column.with_level_names(names)?;
        let tensor = column.tensor()?;
        for (key, expected) in column_metadata(column.level_names(), tensor) {
            if let Some(found) = metadata.get(key)
                && key != KEY_LEVEL_NAMES
                && !same_metadata(key, found, &expected)
            {
                return Err(FormatError::Metadata {
                    key,
                    value: found.clone(),
                    reason: format!("the column's Arrow type says {expected}"),
                }
                .into());
            }
        }
        Ok(column)
    }

    /// The column of `array`, another batch of the same field as `self` (see
    /// [`LodTensor::try_from_arrow_like`]): name, level names and element shape are `self`'s.
    pub(super) fn try_from_arrow_like(&self, field: &Field, array: &ArrayRef) -> Result<Self> {
        let data = match &self.data {
            ColumnData::Tensor(t) => {
                ColumnData::Tensor(t.try_from_arrow_like(field, array.as_ref())?)
            }
            ColumnData::Side(side_field, _) => {
                crate::convert::check_array(side_field, array.as_ref())?;
                ColumnData::Side(side_field.clone(), array.clone())
            }
        };
        Ok(Column {
            name: self.name.clone(),
            level_names: self.level_names.clone(),
            data,
        })
    }
}

/// Whether metadata value `found` says what `expected` (as this crate writes it) says:
/// `lodtensor.element_shape` and `lodtensor.lod_levels` are JSON, compared as values (so
/// `"[2, 4]"` from Python's `json.dumps` is `"[2,4]"`); `lodtensor.dtype` is a name.
fn same_metadata(key: &str, found: &str, expected: &str) -> bool {
    if key == KEY_DTYPE {
        return found == expected;
    }
    let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
    match (parse(found), parse(expected)) {
        (Some(f), Some(e)) => f == e,
        _ => false,
    }
}

/// The `lodtensor.*` field metadata of a tensor column.
fn column_metadata(level_names: &[String], t: &LodTensor) -> Vec<(&'static str, String)> {
    let mut m = vec![
        (KEY_LOD_LEVELS, t.num_levels().to_string()),
        (KEY_DTYPE, t.dtype().name().to_owned()),
        (
            KEY_ELEMENT_SHAPE,
            serde_json::to_string(t.element_shape()).expect("integers serialise"),
        ),
    ];
    if !level_names.is_empty() {
        m.push((
            KEY_LEVEL_NAMES,
            serde_json::to_string(level_names).expect("strings serialise"),
        ));
    }
    m
}
