//! Reading and writing other file formats.

#[cfg(feature = "parquet")]
pub mod parquet;
