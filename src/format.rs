//! Format constants: the version and the `lodtensor.*` metadata keys; the specification
//! itself is [`spec`].

/// The format version of a file of LoD tensor columns alone: what this crate writes when a
/// dataset has no side column, so that readers of version 1 read it.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::format::{FORMAT_VERSION, KEY_FORMAT_VERSION};
/// let schema = Dataset::try_new(vec![Column::new("x", t)])?.schema();
/// assert_eq!(schema.metadata()[KEY_FORMAT_VERSION], FORMAT_VERSION);   // tensor columns only
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const FORMAT_VERSION: &str = "1";

/// The format version of a file with side columns (format-spec §2.2): what this crate writes
/// when a dataset has one. Readers of version 1 refuse it by its version, not by a column.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::arrow::array::{ArrayRef, Int64Array};
/// use lodtensor::format::{FORMAT_VERSION_SIDE_COLUMNS, KEY_FORMAT_VERSION};
/// let labels: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![1, 0]));
/// let ds = Dataset::try_new(vec![Column::new("x", t), Column::side("label", labels)?])?;
/// assert_eq!(ds.schema().metadata()[KEY_FORMAT_VERSION], FORMAT_VERSION_SIDE_COLUMNS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const FORMAT_VERSION_SIDE_COLUMNS: &str = "2";

/// Schema metadata key: the format version.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::format::KEY_FORMAT_VERSION;
/// let schema = Dataset::try_new(vec![Column::new("x", t)])?.schema();
/// assert!(schema.metadata().contains_key(KEY_FORMAT_VERSION));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KEY_FORMAT_VERSION: &str = "lodtensor.format_version";
/// Field metadata key: the number of LoD levels of the column.
///
/// # Example
/// ```
/// # use lodtensor::Column;
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::format::KEY_LOD_LEVELS;
/// let field = Column::new("x", t).arrow_field();
/// assert_eq!(field.metadata()[KEY_LOD_LEVELS], "2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KEY_LOD_LEVELS: &str = "lodtensor.lod_levels";
/// Field metadata key: JSON array naming each level, outermost first.
///
/// # Example
/// ```
/// # use lodtensor::Column;
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::format::KEY_LEVEL_NAMES;
/// let field = Column::new("x", t).with_level_names(["docs", "sentences"])?.arrow_field();
/// assert_eq!(field.metadata()[KEY_LEVEL_NAMES], r#"["docs","sentences"]"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KEY_LEVEL_NAMES: &str = "lodtensor.level_names";
/// Field metadata key: the dtype name (`float32`, …).
///
/// # Example
/// ```
/// # use lodtensor::Column;
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::format::KEY_DTYPE;
/// assert_eq!(Column::new("x", t).arrow_field().metadata()[KEY_DTYPE], "float32");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KEY_DTYPE: &str = "lodtensor.dtype";
/// Field metadata key: JSON array, the shape of one element (`[]` for scalars).
///
/// # Example
/// ```
/// # use lodtensor::Column;
/// # let t = lodtensor::doc_fixtures::words();
/// use lodtensor::format::KEY_ELEMENT_SHAPE;
/// assert_eq!(Column::new("x", t).arrow_field().metadata()[KEY_ELEMENT_SHAPE], "[]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KEY_ELEMENT_SHAPE: &str = "lodtensor.element_shape";
/// Field metadata key: `"side"` on a side column (any Arrow type beside the tensors,
/// format-spec §2.2); absent, or `"tensor"`, on a LoD tensor column.
///
/// # Example
/// ```
/// use lodtensor::Column;
/// use lodtensor::arrow::array::{ArrayRef, Int64Array};
/// use lodtensor::format::KEY_KIND;
/// let labels: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![1, 0]));
/// assert_eq!(Column::side("label", labels)?.arrow_field().metadata()[KEY_KIND], "side");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KEY_KIND: &str = "lodtensor.kind";

/// The file format's specification, `format-spec.md`, normative and versioned.
#[doc = include_str!("../format-spec.md")]
pub mod spec {}
