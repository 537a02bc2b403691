//! Side columns: columns of any other Arrow type beside the LoD tensors (`id`, `text`,
//! `label`, a `meta` struct), carried row for row (format-spec §2.2).
//!
//! A column is a LoD tensor when its field says `lodtensor.kind = "tensor"` or carries
//! `lodtensor.lod_levels`, or, with no such key, when its type is a LoD tensor's (nested
//! lists over fixed-size lists or items of a [`DType`]) and it holds no null at any
//! level; a column marked `lodtensor.kind = "side"`, or of any other type, or of a tensor's
//! type with nulls that its file does not declare a tensor, is a side column. A column is
//! declared a tensor by `lodtensor.kind = "tensor"`, `lodtensor.lod_levels` or an
//! `arrow.fixed_shape_tensor` element: only such a column is refused for nulls. Side
//! columns hold nulls freely; LoD tensors hold none.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, FieldRef, Schema};

use super::Column;
use super::column::ColumnData;
use crate::error::{ArgumentError, Error, FormatError, Result, UnsupportedError};
use crate::extension::{EXTENSION_NAME, EXTENSION_NAME_KEY};
use crate::format::{KEY_KIND, KEY_LOD_LEVELS};
use crate::layout::{Nest, peel};
use crate::values::DType;

/// The examples of `docs/side-columns.md`, run as doctests.
#[doc = include_str!("../../docs/side-columns.md")]
#[cfg(doctest)]
pub struct SideColumnsDocDoctests;

/// `lodtensor.kind` of a side column.
const SIDE: &str = "side";
/// `lodtensor.kind` of a tensor column (the default).
const TENSOR: &str = "tensor";

impl Column {
    /// A side column named `name` holding `array` as it is (nullable, no metadata): any
    /// Arrow type but unions, run-end encoded arrays and list views.
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedType`] for a type a lodtensor file cannot hold.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lodtensor::arrow::array::{Int64Array, StringArray};
    /// use lodtensor::{Column, Dataset};
    /// let text = Column::side("text", Arc::new(StringArray::from(vec!["a b", "c"])))?;
    /// let label = Column::side("label", Arc::new(Int64Array::from(vec![Some(1), None])))?;
    /// let ds = Dataset::try_new(vec![text, label])?;
    /// let second = ds.slice_rows(1..2)?;   // Arrow's zero-copy slice
    /// assert_eq!(second.column_by_name("label")?.side_array().unwrap().null_count(), 1);
    /// assert!(second.column("text").is_err());   // not a LoD tensor: a typed error
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn side(name: impl Into<String>, array: ArrayRef) -> Result<Self> {
        let field = Field::new(name, array.data_type().clone(), true);
        Self::side_with_field(field, array)
    }

    /// A side column of `array` under `field` (its name, nullability and metadata kept, but
    /// `lodtensor.kind`, which the writer adds).
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedType`] as for [`Column::side`]; an Arrow schema error
    /// when the array is not of the field's type, or holds nulls the field says it has not.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Column;
    /// use lodtensor::arrow::array::{ArrayRef, StringArray};
    /// use lodtensor::arrow::{DataType, Field};
    /// let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec![Some("a"), None]));
    /// let field = Field::new("id", DataType::Utf8, true);
    /// assert!(Column::side_with_field(field.clone(), ids.clone())?.is_side());
    /// assert!(Column::side_with_field(field.with_nullable(false), ids).is_err());   // a null
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn side_with_field(field: Field, array: ArrayRef) -> Result<Self> {
        check_type(field.data_type())?;
        // The mark is the writer's to add (see `field`), so that equal columns compare equal.
        let mut metadata = field.metadata().clone();
        metadata.remove(KEY_KIND);
        let field = Arc::new(field.with_metadata(metadata));
        crate::convert::check_array(&field, array.as_ref())?;
        if !field.is_nullable() && array.null_count() > 0 {
            return Err(Error::invalid_argument(
                "Column::side_with_field",
                "array",
                format!("{} with nulls", array.data_type()),
                format!("no nulls (field {:?} is not nullable)", field.name()),
            ));
        }
        Ok(Column {
            name: field.name().clone(),
            level_names: Vec::new(),
            data: ColumnData::Side(field, array),
        })
    }
}

/// Whether `field` is a side column (see the module docs).
///
/// # Errors
/// [`FormatError::Metadata`] for a `lodtensor.kind` that is neither `side` nor `tensor`, or
/// `side` beside `lodtensor.lod_levels`.
pub(crate) fn is_side(field: &Field) -> Result<bool> {
    let metadata = field.metadata();
    match metadata.get(KEY_KIND).map(String::as_str) {
        Some(SIDE) if metadata.contains_key(KEY_LOD_LEVELS) => Err(FormatError::Metadata {
            key: KEY_KIND,
            value: SIDE.to_owned(),
            reason: format!("the field also has {KEY_LOD_LEVELS}"),
        }
        .into()),
        Some(SIDE) => Ok(true),
        Some(TENSOR) => Ok(false),
        Some(other) => Err(FormatError::Metadata {
            key: KEY_KIND,
            value: other.to_owned(),
            reason: format!("expected {SIDE:?} or {TENSOR:?}"),
        }
        .into()),
        None if metadata.contains_key(KEY_LOD_LEVELS) => Ok(false),
        None => Ok(!is_tensor_type(field.data_type())),
    }
}

/// Whether `field` declares its column a LoD tensor (format-spec §2.2): `lodtensor.kind =
/// "tensor"`, `lodtensor.lod_levels`, or an `arrow.fixed_shape_tensor` element. Such a
/// column with nulls is refused; an undeclared one with nulls is a side column.
pub(crate) fn declares_tensor(field: &Field) -> bool {
    let metadata = field.metadata();
    if metadata.get(KEY_KIND).is_some_and(|k| k == TENSOR) || metadata.contains_key(KEY_LOD_LEVELS)
    {
        return true;
    }
    let mut field = field;
    loop {
        let tagged = field.metadata().get(EXTENSION_NAME_KEY);
        if tagged.is_some_and(|name| name == EXTENSION_NAME) {
            return true;
        }
        match peel(field.data_type()) {
            Some(Nest::List(_, f) | Nest::Fixed(_, f)) => field = f,
            None => return false,
        }
    }
}

/// Whether the column of `field` and `array` is a side column: [`is_side`] on the field,
/// or a tensor's type with a null at some level in a field that does not declare a tensor
/// ([`declares_tensor`]).
///
/// # Errors
/// As [`is_side`].
pub(crate) fn is_side_array(field: &Field, array: &dyn Array) -> Result<bool> {
    Ok(is_side(field)? || (!declares_tensor(field) && has_nulls(&array.to_data())))
}

/// Whether `data` or, down the lists of a tensor's type, a child holds a null.
pub(crate) fn has_nulls(data: &arrow_data::ArrayData) -> bool {
    data.null_count() > 0
        || (matches!(
            data.data_type(),
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
        ) && data.child_data().iter().any(has_nulls))
}

/// `field` marked `lodtensor.kind = "side"`: how a reader records that a column of a
/// tensor's type is a side column because it holds nulls.
pub(crate) fn mark_side(field: &Field) -> Field {
    let mut metadata = field.metadata().clone();
    metadata.insert(KEY_KIND.to_owned(), SIDE.to_owned());
    field.clone().with_metadata(metadata)
}

/// The columns of `schema` that hold a side column if they hold a null (format-spec §2.2):
/// of a tensor's type, neither marked side nor declared a tensor.
///
/// # Errors
/// As [`is_side`].
pub(crate) fn undeclared_tensors(schema: &Schema) -> Result<Vec<usize>> {
    let mut found = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        if !is_side(field).map_err(|e| e.in_column(field.name(), 0))? && !declares_tensor(field) {
            found.push(i);
        }
    }
    Ok(found)
}

/// `schema` with the columns `columns` marked side ([`mark_side`]).
pub(crate) fn mark_sides(schema: &Schema, columns: &[usize]) -> Schema {
    let fields: Vec<Field> = (schema.fields().iter().enumerate())
        .map(|(i, f)| match columns.contains(&i) {
            true => mark_side(f),
            false => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Whether `data_type` is a LoD tensor's: lists over fixed-size lists or items of a dtype.
pub(crate) fn is_tensor_type(data_type: &DataType) -> bool {
    let mut data_type = data_type;
    while let Some(Nest::List(_, f)) = peel(data_type) {
        data_type = f.data_type();
    }
    while let Some(Nest::Fixed(_, f)) = peel(data_type) {
        data_type = f.data_type();
    }
    DType::try_from_arrow(data_type).is_ok()
}

/// The field a side column is written with: `field` marked `lodtensor.kind = "side"`.
pub(super) fn field(field: &FieldRef) -> Field {
    mark_side(field)
}

/// Refuses the types a side column cannot have (format-spec §2.2): unions, run-end
/// encoded arrays and list views, at any depth.
pub(crate) fn check_type(data_type: &DataType) -> Result<()> {
    let refuse = || {
        Err(UnsupportedError::UnsupportedType {
            what: "side column",
            data_type: data_type.clone(),
        }
        .into())
    };
    match data_type {
        DataType::Union(..)
        | DataType::RunEndEncoded(..)
        | DataType::ListView(_)
        | DataType::LargeListView(_) => refuse(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => check_type(f.data_type()).or_else(|_| refuse()),
        DataType::Struct(fields) => fields
            .iter()
            .try_for_each(|f| check_type(f.data_type()))
            .or_else(|_| refuse()),
        DataType::Dictionary(_, values) => check_type(values).or_else(|_| refuse()),
        _ => Ok(()),
    }
}

/// The error for a LoD operation on a side column.
pub(crate) fn not_a_tensor(column: &str, data_type: &DataType) -> crate::error::Error {
    ArgumentError::NotATensor {
        column: column.to_owned(),
        data_type: data_type.clone(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Dataset;
    use crate::error::{Error, ErrorKind};
    use crate::tensor::LodTensor;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, StringArray, StructArray};
    use std::collections::HashMap;

    fn marked(data_type: DataType, kind: Option<&str>, levels: bool) -> Field {
        let mut m = HashMap::new();
        if let Some(k) = kind {
            m.insert(KEY_KIND.to_owned(), k.to_owned());
        }
        if levels {
            m.insert(KEY_LOD_LEVELS.to_owned(), "0".to_owned());
        }
        Field::new("x", data_type, true).with_metadata(m)
    }

    #[test]
    fn kind_follows_the_metadata_then_the_type() {
        assert!(!is_side(&marked(DataType::Int64, None, false)).unwrap());
        assert!(is_side(&marked(DataType::Int64, Some("side"), false)).unwrap());
        assert!(is_side(&marked(DataType::Utf8, None, false)).unwrap());
        assert!(!is_side(&marked(DataType::Int64, Some("tensor"), false)).unwrap());
        for bad in [
            marked(DataType::Int64, Some("other"), false),
            marked(DataType::Int64, Some("side"), true),
        ] {
            assert!(matches!(
                is_side(&bad).map_err(Error::into_kind),
                Err(ErrorKind::Format(FormatError::Metadata {
                    key: KEY_KIND,
                    ..
                }))
            ));
        }
        let ts = DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None);
        assert!(is_side(&marked(ts, None, false)).unwrap());
    }

    #[test]
    fn nulls_make_a_side_column_unless_the_field_declares_a_tensor() {
        use arrow_array::FixedSizeListArray;
        let with_null = Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef;
        let plain = Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef;
        let field = marked(DataType::Int64, None, false);
        assert!(is_side_array(&field, with_null.as_ref()).unwrap());
        assert!(!is_side_array(&field, plain.as_ref()).unwrap());
        for declared in [
            marked(DataType::Int64, Some("tensor"), false),
            marked(DataType::Int64, None, true),
        ] {
            assert!(!is_side_array(&declared, with_null.as_ref()).unwrap());
            assert!(Column::try_from_arrow(&declared, with_null.as_ref()).is_err());
        }
        // A null item under an `arrow.fixed_shape_tensor` element: declared, so refused.
        let item = Arc::new(Field::new("item", DataType::Int64, true));
        let fixed = FixedSizeListArray::new(item, 2, with_null.clone(), None);
        let tag = HashMap::from([
            (EXTENSION_NAME_KEY.to_owned(), EXTENSION_NAME.to_owned()),
            (
                "ARROW:extension:metadata".to_owned(),
                r#"{"shape":[2]}"#.to_owned(),
            ),
        ]);
        let untagged = Field::new("x", fixed.data_type().clone(), true);
        assert!(is_side_array(&untagged, &fixed).unwrap());
        let tagged = untagged.with_metadata(tag);
        assert!(declares_tensor(&tagged));
        assert!(!is_side_array(&tagged, &fixed).unwrap());
    }

    #[test]
    fn side_columns_round_trip_and_refuse_lod_operations() {
        let label = Arc::new(Int64Array::from(vec![Some(3), None, Some(5)])) as ArrayRef;
        let meta = Arc::new(StructArray::from(vec![(
            Arc::new(Field::new("source", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
        )])) as ArrayRef;
        let tokens =
            LodTensor::from_lengths::<Int64Type>(&[vec![1, 0, 2]], vec![1, 2, 3], vec![]).unwrap();
        let ds = Dataset::try_new(vec![
            Column::new("tokens", tokens),
            Column::side("label", label.clone()).unwrap(),
            Column::side("meta", meta).unwrap(),
        ])
        .unwrap();
        let batch = ds.to_record_batch();
        assert_eq!(batch.schema().metadata()["lodtensor.format_version"], "2");
        assert_eq!(batch.schema().field(1).metadata()[KEY_KIND], "side");
        let back = Dataset::try_from_record_batch(&batch).unwrap();
        assert_eq!(back, ds);
        assert!(back.columns()[1].is_side());
        // A view: the same buffer, one row in.
        let view = ds.slice_rows(1..3).unwrap();
        let sliced = view.columns()[1].side_array().unwrap();
        let base = label.to_data().buffers()[0].as_ptr();
        assert_eq!(sliced.to_data().buffers()[0].as_ptr(), base.wrapping_add(8));
        assert_eq!(sliced.null_count(), 1);
        let err = ds.column("meta").unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::Argument(ArgumentError::NotATensor { column, .. }) if column == "meta"
        ));
        assert!(
            ds.columns()[1].clone().with_level_names(["a"]).is_err(),
            "a side column has no levels to name"
        );
        let union = DataType::Union(
            arrow_schema::UnionFields::empty(),
            arrow_schema::UnionMode::Sparse,
        );
        assert!(matches!(
            check_type(&DataType::LargeList(Arc::new(Field::new(
                "item", union, true
            ))))
            .map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(
                UnsupportedError::UnsupportedType { .. }
            ))
        ));
    }
}
