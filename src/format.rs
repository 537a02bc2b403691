//! Format constants: the version and the `lodtensor.*` metadata keys; the specification
//! itself is [`spec`].

/// The format version of a file of LoD tensor columns alone: what this crate writes when a
/// dataset has no side column, so that readers of version 1 read it.
pub const FORMAT_VERSION: &str = "1";

/// The format version of a file with side columns (format-spec §2.2): what this crate writes
/// when a dataset has one. Readers of version 1 refuse it by its version, not by a column.
pub const FORMAT_VERSION_SIDE_COLUMNS: &str = "2";

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
/// Field metadata key: `"side"` on a side column (any Arrow type beside the tensors,
/// format-spec §2.2); absent, or `"tensor"`, on a LoD tensor column.
pub const KEY_KIND: &str = "lodtensor.kind";

/// The file format's specification, `format-spec.md`, normative and versioned.
#[doc = include_str!("../format-spec.md")]
pub mod spec {}
