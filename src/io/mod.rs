//! Files: the atomic Arrow IPC writer, the memory-mapped reader, Parquet, PaddlePaddle files.

pub(crate) mod atomic;
pub(crate) mod ipc_check;
pub(crate) mod ipc_decode;
mod ipc_file;
pub(crate) mod ipc_lengths;
pub mod ipc_reader;
pub(crate) mod ipc_rows;
pub mod ipc_writer;
mod mapped_file;
pub mod paddle;
#[cfg(feature = "parquet")]
pub mod parquet;
pub(crate) mod regular;

pub use atomic::AtomicFile;
pub(crate) use mapped_file::offset_in;
pub use mapped_file::{FileIdentity, MappedFile};
