//! Sharded datasets: a directory of ordinary lodtensor Arrow files (`part-00000.arrow`, …)
//! and a manifest `_lodtensor.json` listing them, with their rows, sizes, checksums and
//! per-column counts (see `format-spec.md` and `docs/shards.md`).
//!
//! - [`ShardWriter`]: rolls to a new shard at a row or byte budget; shards are staged
//!   under `_pending/` and committed with the manifest, atomically, last; any number of
//!   concurrent appenders; independent writers with their own prefixes, merged by
//!   [`commit`](fn@commit).
//! - [`vacuum`](fn@vacuum): removes what killed writers left.
//! - [`ShardedDataset`]: opens by reading the manifest only; a shard is mapped and checked
//!   against the manifest when first touched; global rows across shards.
//! - [`Manifest`]: the manifest, parsed as untrusted input.
//! - [`Location`]: where a dataset lives, a directory or a URL, told apart once; with the
//!   `remote` feature, [`ShardedDataset::open`] of a URL opens a dataset in object storage
//!   (S3, GCS, Azure, HTTP), each shard downloaded once per node into a local cache.

mod commit;
mod files;
mod index;
mod layouts;
mod location;
mod manifest;
mod names;
mod parse;
mod reader;
#[cfg(feature = "remote")]
pub(crate) mod remote;
#[cfg(feature = "remote")]
mod remote_options;
mod side;
mod source;
mod store;
mod vacuum;
mod writer;

pub use commit::commit;
pub(crate) use files::ShardFiles;
pub(crate) use index::{ColumnLengths, narrow_length};
pub use index::{INDEX_PREFIX, IndexEntry, index};
pub(crate) use layouts::{ShardLayout, read_footers};
pub use location::{Location, is_url};
pub use manifest::{
    ColumnSpec, ColumnStats, MANIFEST_FORMAT, MANIFEST_NAME, MANIFEST_VERSION,
    MANIFEST_VERSION_SIDE_COLUMNS, MAX_MANIFEST_BYTES, Manifest, ShardEntry,
};
pub use reader::ShardedDataset;
pub(crate) use reader::{PendingChecksum, mismatch};
#[cfg(feature = "remote")]
#[allow(deprecated)]
pub use remote::{
    CommitReport, commit_report, commit_url, commit_url_report, commit_with, discard_pending,
    index_url, index_with, parse_size, pending_prefixes, read_manifest_url, upload_pending,
    upload_shards, vacuum_with,
};
#[cfg(feature = "remote")]
pub use remote_options::{DEFAULT_PREFETCH_BYTES, DEFAULT_RANGE_GAP, RemoteOptions};
pub use source::CacheStats;
pub use vacuum::vacuum;
#[cfg(feature = "tokenize")]
pub(crate) use writer::pending_path;
pub use writer::{ShardOptions, ShardWriter};

/// The examples of `docs/shards.md`, run as doctests.
#[doc = include_str!("../../docs/shards.md")]
#[cfg(doctest)]
pub struct ShardsDocDoctests;
