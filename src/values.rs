//! The values of a LoD tensor: `N` elements of one shape `[D1, D2, …]` and one dtype.
//!
//! They are held as one flat Arrow array of `N · D1 · D2 · …` items (a primitive or boolean
//! array, never copied), plus the element shape. In Arrow they become a
//! `FixedSizeList<T, D1·D2·…>` tagged `arrow.fixed_shape_tensor`, or the flat array itself
//! for scalar elements (shape `[]`).

use crate::error::{ArgumentError, DataError, UnsupportedError};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{Array, ArrayRef, BooleanArray, PrimitiveArray};
use arrow_schema::DataType;

use crate::error::Result;

/// The element types a LoD tensor can hold.
///
/// # Example
/// ```
/// use lodtensor::DType;
/// assert_eq!(DType::from_name("float32")?, DType::Float32);
/// assert_eq!(DType::Float16.byte_width(), Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// Booleans (bit-packed in Arrow).
    Bool,
    /// `u8`.
    UInt8,
    /// `i8`.
    Int8,
    /// `i16`.
    Int16,
    /// `i32`.
    Int32,
    /// `i64`.
    Int64,
    /// `u16`.
    UInt16,
    /// `u32`.
    UInt32,
    /// `u64`.
    UInt64,
    /// IEEE half precision.
    Float16,
    /// `f32`.
    Float32,
    /// `f64`.
    Float64,
}

impl DType {
    /// Every dtype, in a fixed order.
    ///
    /// # Example
    /// ```
    /// use lodtensor::DType;
    /// assert!(DType::ALL.iter().all(|&d| DType::from_name(d.name()).ok() == Some(d)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Float16,
        DType::Float32,
        DType::Float64,
    ];

    /// The name used in metadata and on the command line (numpy's names).
    ///
    /// # Example
    /// ```
    /// use lodtensor::DType;
    /// assert_eq!(DType::Float32.name(), "float32");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Float16 => "float16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
        }
    }

    /// The dtype of a name given by [`DType::name`].
    ///
    /// # Errors
    /// [`UnsupportedError::UnknownDType`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::DType;
    /// assert_eq!(DType::from_name("int64")?, DType::Int64);
    /// assert!(DType::from_name("complex").is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| UnsupportedError::UnknownDType(name.to_owned()).into())
    }

    /// The Arrow type of one item.
    ///
    /// # Example
    /// ```
    /// use lodtensor::DType;
    /// use lodtensor::arrow::DataType;
    /// assert_eq!(DType::Float16.arrow_type(), DataType::Float16);
    /// ```
    pub fn arrow_type(self) -> DataType {
        match self {
            DType::Bool => DataType::Boolean,
            DType::UInt8 => DataType::UInt8,
            DType::Int8 => DataType::Int8,
            DType::Int16 => DataType::Int16,
            DType::Int32 => DataType::Int32,
            DType::Int64 => DataType::Int64,
            DType::UInt16 => DataType::UInt16,
            DType::UInt32 => DataType::UInt32,
            DType::UInt64 => DataType::UInt64,
            DType::Float16 => DataType::Float16,
            DType::Float32 => DataType::Float32,
            DType::Float64 => DataType::Float64,
        }
    }

    /// The dtype of an Arrow item type.
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedType`] for any other Arrow type.
    ///
    /// # Example
    /// ```
    /// use lodtensor::DType;
    /// use lodtensor::arrow::DataType;
    /// assert_eq!(DType::try_from_arrow(&DataType::UInt8)?, DType::UInt8);
    /// assert!(DType::try_from_arrow(&DataType::Utf8).is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_from_arrow(data_type: &DataType) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|d| &d.arrow_type() == data_type)
            .ok_or_else(|| {
                UnsupportedError::UnsupportedType {
                    what: "values",
                    data_type: data_type.clone(),
                }
                .into()
            })
    }

    /// Bytes per item; `None` for bit-packed booleans.
    ///
    /// # Example
    /// ```
    /// use lodtensor::DType;
    /// assert_eq!(DType::Float64.byte_width(), Some(8));
    /// assert_eq!(DType::Bool.byte_width(), None); // bits
    /// ```
    pub fn byte_width(self) -> Option<usize> {
        self.arrow_type().primitive_width()
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `N` elements of shape `element_shape`, held as one flat Arrow array of items.
///
/// # Example
/// ```
/// use lodtensor::{DType, Values};
/// use arrow_array::types::Float32Type;
/// let values = Values::from_vec::<Float32Type>(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], vec![3])?;
/// assert_eq!((values.dtype(), values.num_elements()), (DType::Float32, 2));
/// assert_eq!(values.typed::<Float32Type>()?, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Values {
    items: ArrayRef,
    dtype: DType,
    element_shape: Vec<usize>,
    element_size: usize,
}

impl Values {
    /// Values from a flat array of items and the shape of one element.
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedType`] for an item type that is not a [`DType`];
    /// [`DataError::Nulls`] when items are null; [`DataError::ElementShape`] when a dimension is 0,
    /// the element size overflows, or the items are not a whole number of elements.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Values;
    /// use lodtensor::arrow::array::{ArrayRef, Float32Array};
    /// let items: ArrayRef = std::sync::Arc::new(Float32Array::from(vec![0.0; 6]));
    /// assert_eq!(Values::try_new(items.clone(), vec![2, 3])?.num_elements(), 1);
    /// assert!(Values::try_new(items, vec![4]).is_err());               // 6 items are not rows of 4
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_new(items: ArrayRef, element_shape: Vec<usize>) -> Result<Self> {
        let dtype = DType::try_from_arrow(items.data_type())?;
        let element_size = element_size(&element_shape)?;
        if items.null_count() > 0 {
            return Err(DataError::Nulls {
                what: "values".to_owned(),
                count: items.null_count(),
            }
            .into());
        }
        if !items.len().is_multiple_of(element_size) {
            return Err(DataError::ElementShape {
                shape: element_shape,
                reason: format!(
                    "{} items are not a whole number of elements of {element_size} items",
                    items.len()
                ),
            }
            .into());
        }
        Ok(Values {
            items,
            dtype,
            element_shape,
            element_size,
        })
    }

    /// Values from a `Vec` of native items (moved, not copied).
    ///
    /// # Errors
    /// As [`Values::try_new`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.num_elements(), 3);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn from_vec<T: ArrowPrimitiveType>(
        items: Vec<T::Native>,
        element_shape: Vec<usize>,
    ) -> Result<Self> {
        Self::try_new(
            Arc::new(PrimitiveArray::<T>::from_iter_values(items)),
            element_shape,
        )
    }

    /// The item type.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.dtype(), DType::Float32);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape of one element, `[]` for scalars.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.element_shape(), &[2]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn element_shape(&self) -> &[usize] {
        &self.element_shape
    }

    /// Items per element (the product of the element shape).
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.element_size(), 2);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn element_size(&self) -> usize {
        self.element_size
    }

    /// The number of elements `N`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.num_elements(), 3);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn num_elements(&self) -> usize {
        self.items.len() / self.element_size
    }

    /// The flat array of items.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.items().len(), 6);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn items(&self) -> &ArrayRef {
        &self.items
    }

    /// The items as a native slice.
    ///
    /// # Errors
    /// [`ArgumentError::DTypeMismatch`] when `T` is not the values' type.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{DType, Values};
    /// use lodtensor::arrow::types::Float32Type;
    /// // 3 elements of shape [2].
    /// let v = Values::from_vec::<Float32Type>(vec![1., 2., 3., 4., 5., 6.], vec![2])?;
    /// assert_eq!(v.typed::<Float32Type>()?, &[1., 2., 3., 4., 5., 6.]);
    /// assert!(v.typed::<lodtensor::arrow::types::Int32Type>().is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    #[inline]
    pub fn typed<T: ArrowPrimitiveType>(&self) -> Result<&[T::Native]> {
        self.items
            .as_any()
            .downcast_ref::<PrimitiveArray<T>>()
            .map(|a| a.values().as_ref())
            .ok_or_else(|| {
                ArgumentError::DTypeMismatch {
                    expected: T::DATA_TYPE.to_string(),
                    found: self.dtype.name().to_owned(),
                }
                .into()
            })
    }

    /// The items as booleans.
    ///
    /// # Errors
    /// [`ArgumentError::DTypeMismatch`] when the values are not booleans.
    ///
    /// # Example
    /// ```
    /// use lodtensor::Values;
    /// use lodtensor::arrow::array::{ArrayRef, BooleanArray};
    /// let items: ArrayRef = std::sync::Arc::new(BooleanArray::from(vec![true, false]));
    /// let values = Values::try_new(items, vec![])?;
    /// assert!(values.booleans()?.value(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn booleans(&self) -> Result<&BooleanArray> {
        self.items
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| {
                ArgumentError::DTypeMismatch {
                    expected: DType::Bool.name().to_owned(),
                    found: self.dtype.name().to_owned(),
                }
                .into()
            })
    }

    /// Elements `elements`, as a view.
    ///
    /// # Panics
    /// When `elements` reaches past [`Values::num_elements`] (callers check it).
    pub(crate) fn slice_elements(&self, elements: Range<usize>) -> Self {
        let size = self.element_size;
        Values {
            items: self.items.slice(
                elements.start * size,
                (elements.end - elements.start) * size,
            ),
            ..self.clone()
        }
    }

    /// The address of the first byte of the items (to check that a view shares a buffer).
    ///
    /// # Example
    /// ```
    /// use lodtensor::Values;
    /// use lodtensor::arrow::types::Float32Type;
    /// let values = Values::from_vec::<Float32Type>(vec![1.0, 2.0], vec![])?;
    /// assert_eq!(values.as_ptr(), values.typed::<Float32Type>()?.as_ptr().cast());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_ptr(&self) -> *const u8 {
        let data = self.items.to_data();
        data.buffers()[0].as_ptr()
    }
}

/// The product of the element shape, checked.
fn element_size(shape: &[usize]) -> Result<usize> {
    let mut size = 1usize;
    for &d in shape {
        if d == 0 {
            return Err(DataError::ElementShape {
                shape: shape.to_vec(),
                reason: "dimensions must be at least 1".to_owned(),
            }
            .into());
        }
        size = size.checked_mul(d).ok_or_else(|| DataError::ElementShape {
            shape: shape.to_vec(),
            reason: "the element size overflows".to_owned(),
        })?;
    }
    if i32::try_from(size).is_err() {
        return Err(DataError::ElementShape {
            shape: shape.to_vec(),
            reason: "the element size does not fit an Arrow FixedSizeList (int32)".to_owned(),
        }
        .into());
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, Error, ErrorKind, UnsupportedError};
    use arrow_array::Float32Array;
    use arrow_array::types::{Float32Type, Int64Type};

    #[test]
    fn dtype_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()).unwrap(), d);
            assert_eq!(DType::try_from_arrow(&d.arrow_type()).unwrap(), d);
        }
        assert!(matches!(
            DType::from_name("complex64").map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(UnsupportedError::UnknownDType(_)))
        ));
        assert!(matches!(
            DType::try_from_arrow(&DataType::Utf8).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(UnsupportedError::UnsupportedType {
                what: "values",
                ..
            }))
        ));
    }

    #[test]
    fn shapes_are_checked() {
        let v = Values::from_vec::<Int64Type>(vec![1, 2, 3, 4, 5, 6], vec![2, 3]).unwrap();
        assert_eq!((v.num_elements(), v.element_size()), (1, 6));
        assert!(matches!(
            Values::from_vec::<Int64Type>(vec![1, 2, 3], vec![2]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ElementShape { .. }))
        ));
        assert!(matches!(
            Values::from_vec::<Int64Type>(vec![], vec![0]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ElementShape { .. }))
        ));
        assert!(matches!(
            Values::from_vec::<Int64Type>(vec![], vec![usize::MAX, 2]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ElementShape { .. }))
        ));
        assert!(matches!(
            v.typed::<Float32Type>().map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::DTypeMismatch { .. }))
        ));
    }

    #[test]
    fn nulls_are_refused() {
        let items = Arc::new(Float32Array::from(vec![Some(1.0), None]));
        assert!(matches!(
            Values::try_new(items, vec![]).map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::Nulls { count: 1, .. }))
        ));
    }
}
