//! Row groups read by the direct decoder ([`super::decode`]), one after the other; with
//! read-ahead, the pages of a compressed column chunk are read and decompressed on a second
//! thread, a few pages ahead of the decoder.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::basic::Compression;
use parquet::column::page::Page;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::ChunkReader;
use parquet::file::serialized_reader::SerializedPageReader;

use super::decode::{At, ColumnDecoder, Plan};
use crate::error::{Error, FileFormat, Result};

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
    /// Compressed chunks of more than this many bytes are read ahead; `None`: none.
    read_ahead_above: Option<i64>,
}

/// Pages decompressed ahead of the decoder: a few, so memory stays a few pages per chunk.
const PAGES_AHEAD: usize = 4;

/// The compressed chunks read ahead are larger than this: a chunk of about one page (1 MiB by default in
/// the writers we know) has nothing to overlap, and a thread per tiny chunk would cost more
/// than it saves.
const READ_AHEAD_MIN_BYTES: i64 = 1 << 20;

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

    /// The direct decoder of `reader`, with the `plans` of its columns, reading pages ahead
    /// or not.
    pub(super) fn new(
        reader: R,
        metadata: Arc<ParquetMetaData>,
        schema: SchemaRef,
        plans: Vec<Plan>,
        read_ahead: bool,
    ) -> Self {
        Direct {
            reader: Arc::new(reader),
            metadata,
            schema,
            columns: plans.into_iter().map(ColumnDecoder::new).collect(),
            read_ahead_above: read_ahead.then_some(READ_AHEAD_MIN_BYTES),
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
            let rows = row_group.num_rows();
            Error::invalid(
                FileFormat::Parquet,
                format!("row group {index}: {rows} rows"),
            )
        })?;
        for (c, decoder) in self.columns.iter_mut().enumerate() {
            let chunk = row_group.column(c);
            let pages = SerializedPageReader::new(self.reader.clone(), chunk, rows, None)
                .map_err(Error::decoding(FileFormat::Parquet))?;
            let at = At {
                row_group: index,
                column: self.schema.field(c).name(),
            };
            // At most one value per level entry, and (when plain) per `width` bytes.
            let expected = usize::try_from(chunk.num_values())
                .unwrap_or(0)
                .min(usize::try_from(chunk.uncompressed_size()).unwrap_or(0) / decoder.width());
            let compressed = chunk.compression() != Compression::UNCOMPRESSED;
            let large = self
                .read_ahead_above
                .is_some_and(|min| chunk.compressed_size() > min);
            if compressed && large {
                decode_ahead(decoder, pages, rows, expected, &at)?;
            } else {
                decoder.decode_chunk(&mut pages.into_iter(), rows, expected, &at)?;
            }
        }
        Ok(())
    }

    fn take_batch(&mut self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .iter_mut()
            .map(ColumnDecoder::take_array)
            .collect::<Result<Vec<ArrayRef>>>()?;
        RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(Error::decoding(FileFormat::Parquet))
    }
}

/// Decodes a chunk while a second thread reads and decompresses its pages, up to
/// [`PAGES_AHEAD`] ahead: decompression and decoding overlap. The same pages, in the same
/// order, reach the decoder as without it; a panic of the page reader is resumed here.
fn decode_ahead(
    decoder: &mut ColumnDecoder,
    pages: impl Iterator<Item = parquet::errors::Result<Page>> + Send,
    rows: usize,
    expected: usize,
    at: &At<'_>,
) -> Result<()> {
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel(PAGES_AHEAD);
        let reader = scope.spawn(move || {
            for page in pages {
                let failed = page.is_err();
                // The decoder stopped (its receiver is gone), or the reader failed: stop.
                if sender.send(page).is_err() || failed {
                    return;
                }
            }
        });
        let decoded = decoder.decode_chunk(&mut receiver.iter(), rows, expected, at);
        // Unblocks a reader waiting on a full channel after the decoder stopped early.
        drop(receiver);
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        decoded
    })
}

#[cfg(test)]
mod tests;
