//! Files: the atomic Arrow IPC writer, the memory-mapped reader, PaddlePaddle files.

mod atomic;
pub mod ipc_reader;
pub mod ipc_writer;
pub mod paddle;

pub use atomic::AtomicFile;
