//! Which columns of a Parquet file are side columns because they hold nulls
//! (format-spec §2.2): a column of a tensor's type that the file does not declare a tensor
//! is a side column when any row group holds a null in it, at any level.

use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::{ChunkReader, Length};

use crate::dataset::{has_nulls, undeclared_tensors};
use crate::error::{Error, FileFormat, Result};

/// A [`ChunkReader`] shared by the reads of one file: the scan for nulls, then the reader.
pub(super) struct Shared<R>(pub(super) Arc<R>);

impl<R> Clone for Shared<R> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<R: ChunkReader> Length for Shared<R> {
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl<R: ChunkReader> ChunkReader for Shared<R> {
    type T = R::T;

    fn get_read(&self, start: u64) -> parquet::errors::Result<R::T> {
        self.0.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.0.get_bytes(start, length)
    }
}

/// The columns (by index in the Arrow schema) of the file `reader` whose type is a
/// tensor's, that the file does not declare tensors, and that hold a null. A column whose
/// every chunk's statistics count 0 nulls (no null and no empty list at any level) is not
/// read; the others are read once, those columns alone, before the file is.
///
/// # Errors
/// [`FileFormat::Parquet`] invalid for a page the `parquet` crate cannot decode.
pub(super) fn null_tensor_columns<R: ChunkReader + 'static>(
    reader: &Shared<R>,
    metadata: &ArrowReaderMetadata,
) -> Result<Vec<usize>> {
    let parquet = metadata.metadata();
    let descr = parquet.file_metadata().schema_descr();
    let maybe: Vec<usize> = undeclared_tensors(metadata.schema())?
        .into_iter()
        .filter(|&root| {
            parquet.row_groups().iter().any(|group| {
                (group.columns().iter().enumerate()).any(|(leaf, chunk)| {
                    descr.get_column_root_idx(leaf) == root
                        && chunk.statistics().and_then(|s| s.null_count_opt()) != Some(0)
                })
            })
        })
        .collect();
    if maybe.is_empty() {
        return Ok(maybe);
    }
    let batches =
        ParquetRecordBatchReaderBuilder::new_with_metadata(reader.clone(), metadata.clone())
            .with_projection(ProjectionMask::roots(descr, maybe.iter().copied()))
            .build()
            .map_err(Error::decoding(FileFormat::Parquet))?;
    let decoding = Error::decoding(FileFormat::Parquet);
    let mut nulls = vec![false; maybe.len()];
    for batch in batches {
        let batch = batch.map_err(&decoding)?;
        for (found, column) in nulls.iter_mut().zip(batch.columns()) {
            *found |= has_nulls(&column.to_data());
        }
    }
    Ok(maybe
        .into_iter()
        .zip(nulls)
        .filter(|(_, n)| *n)
        .map(|(i, _)| i)
        .collect())
}
