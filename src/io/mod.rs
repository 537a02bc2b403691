//! Files: the atomic Arrow IPC writer, the memory-mapped reader.

mod atomic;
pub mod ipc_reader;
pub mod ipc_writer;

pub use atomic::AtomicFile;
