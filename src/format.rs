//! Format constants: the version and the `lodtensor.*` metadata keys; the specification
//! itself is [`spec`].

/// The format version this crate writes and reads.
pub const FORMAT_VERSION: &str = "1";

/// Schema metadata key: the format version.
pub const KEY_FORMAT_VERSION: &str = "lodtensor.format_version";
/// Field metadata key: the number of LoD levels of the column.
pub const KEY_LOD_LEVELS: &str = "lodtensor.lod_levels";
/// Field metadata key: JSON array naming each level, outermost first.
pub const KEY_LEVEL_NAMES: &str = "lodtensor.level_names";
/// Field metadata key: the dtype name (`float32`, …).
pub const KEY_DTYPE: &str = "lodtensor.dtype";
/// Field metadata key: JSON array, the shape of one element (`[]` for scalars).
pub const KEY_ELEMENT_SHAPE: &str = "lodtensor.element_shape";

/// The file format's specification, `format-spec.md`, normative and versioned.
#[doc = include_str!("../format-spec.md")]
pub mod spec {}
