//! The library's integration tests, one binary (each former `tests/*.rs` file is a module,
//! so the crate is linked once). The suites that run Python or read pyarrow's files are the
//! `interop` binary; `bounded_resources` stays alone for its counting allocator.

#[path = "../common/mod.rs"]
mod common;

mod compression;
mod concurrency;
mod corruption_sweep;
mod fuzz_regressions;
mod hostile;
#[cfg(feature = "remote")]
mod hostile_remote;
mod ipc;
mod layers;
mod lazy_shards;
mod loader;
mod paddle;
mod paddle_ops;
mod places;
mod properties;
#[cfg(feature = "remote")]
mod remote;
#[cfg(feature = "remote")]
mod remote_lengths;
mod shards;
mod side_columns;
mod take;
