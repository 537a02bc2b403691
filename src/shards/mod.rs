//! Sharded datasets: a directory of ordinary lodtensor Arrow files (`part-00000.arrow`, …)
//! and a manifest `_lodtensor.json` listing them, with their rows, sizes, checksums and
//! per-column counts (see `format-spec.md` and `docs/shards.md`).
//!
//! - [`ShardWriter`]: rolls to a new shard at a row or byte budget; shards are staged
//!   under `_pending/` and committed with the manifest, atomically, last; any number of
//!   concurrent appenders; independent writers with their own prefixes, merged by
//!   [`commit`].
//! - [`vacuum`]: removes what killed writers left.
//! - [`ShardedDataset`]: opens by reading the manifest only; a shard is mapped and checked
//!   against the manifest when first touched; global rows across shards.
//! - [`Manifest`]: the manifest, parsed as untrusted input.

mod commit;
mod manifest;
mod parse;
mod reader;
mod side;
mod store;
mod vacuum;
mod writer;

pub use commit::commit;
pub use manifest::{
    ColumnSpec, ColumnStats, MANIFEST_FORMAT, MANIFEST_NAME, MANIFEST_VERSION,
    MANIFEST_VERSION_SIDE_COLUMNS, MAX_MANIFEST_BYTES, Manifest, ShardEntry,
};
pub(crate) use reader::PendingChecksum;
pub use reader::ShardedDataset;
pub use vacuum::vacuum;
pub use writer::{ShardOptions, ShardWriter};

/// The examples of `docs/shards.md`, run as doctests.
#[doc = include_str!("../../docs/shards.md")]
#[cfg(doctest)]
pub struct ShardsDocDoctests;
