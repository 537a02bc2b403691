//! Row groups read by the direct decoder ([`super::decode`]), one after the other.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::ChunkReader;
use parquet::file::serialized_reader::SerializedPageReader;

use super::decode::{At, ColumnDecoder, Plan};
use crate::error::{Error, Result};

/// Decodes row groups of one file into record batches; object-safe, so the reader need not
/// be generic over the file's [`ChunkReader`].
pub(super) trait RowGroupSource: Send {
    /// The number of row groups.
    fn num_row_groups(&self) -> usize;

    /// Decodes row group `index`, appending its rows to what is decoded.
    fn decode(&mut self, index: usize) -> Result<()>;

    /// Everything decoded since the last call, as one record batch.
    fn take_batch(&mut self) -> Result<RecordBatch>;
}

/// The direct decoder of a file whose every column has this crate's layout.
pub(super) struct Direct<R> {
    reader: Arc<R>,
    metadata: Arc<ParquetMetaData>,
    schema: SchemaRef,
    columns: Vec<ColumnDecoder>,
}

impl<R: ChunkReader + 'static> Direct<R> {
    /// The plans of the columns of a file, or `None` when a column needs the general
    /// reader: a side column (format-spec §2.2), a type or level structure other than this
    /// crate's layout, a column that is not one Parquet leaf, or an encoding the decoder
    /// does not read in some row group.
    pub(super) fn plans(metadata: &ParquetMetaData, schema: &SchemaRef) -> Option<Vec<Plan>> {
        let descr = metadata.file_metadata().schema_descr();
        if schema.fields().is_empty() || descr.num_columns() != schema.fields().len() {
            return None;
        }
        let mut plans = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            if crate::dataset::is_side(field).unwrap_or(true) {
                return None;
            }
            let leaf = descr.column(i);
            if descr.get_column_root_idx(i) != i || leaf.path().parts()[0] != *field.name() {
                return None;
            }
            if !metadata
                .row_groups()
                .iter()
                .all(|rg| Plan::reads_encodings(rg, i))
            {
                return None;
            }
            plans.push(Plan::of(field.data_type(), &leaf)?);
        }
        Some(plans)
    }

    /// The direct decoder of `reader`, with the `plans` of its columns.
    pub(super) fn new(
        reader: R,
        metadata: Arc<ParquetMetaData>,
        schema: SchemaRef,
        plans: Vec<Plan>,
    ) -> Self {
        Direct {
            reader: Arc::new(reader),
            metadata,
            schema,
            columns: plans.into_iter().map(ColumnDecoder::new).collect(),
        }
    }
}

impl<R: ChunkReader + 'static> RowGroupSource for Direct<R> {
    fn num_row_groups(&self) -> usize {
        self.metadata.num_row_groups()
    }

    fn decode(&mut self, index: usize) -> Result<()> {
        let row_group = self.metadata.row_group(index);
        let rows = usize::try_from(row_group.num_rows()).map_err(|_| {
            Error::invalid_file(format!("row group {index}: {} rows", row_group.num_rows()))
        })?;
        for (c, decoder) in self.columns.iter_mut().enumerate() {
            let chunk = row_group.column(c);
            let mut pages = SerializedPageReader::new(self.reader.clone(), chunk, rows, None)?;
            let at = At {
                row_group: index,
                column: self.schema.field(c).name(),
            };
            // At most one value per level entry, and (when plain) per `width` bytes.
            let expected = usize::try_from(chunk.num_values())
                .unwrap_or(0)
                .min(usize::try_from(chunk.uncompressed_size()).unwrap_or(0) / decoder.width());
            decoder.decode_chunk(&mut pages, rows, expected, &at)?;
        }
        Ok(())
    }

    fn take_batch(&mut self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .iter_mut()
            .map(ColumnDecoder::take_array)
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

#[cfg(test)]
mod tests;
