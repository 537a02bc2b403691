//! A Parquet file whose every column is written by the page encoder: the magic, the row
//! groups' column chunks straight into the sink, then the footer (Parquet format, "File
//! Format": `PAR1`, column chunks, `FileMetaData`, its length, `PAR1`).
//!
//! The `parquet` crate's file writer only takes column chunks from its own column writers
//! or whole from memory; this one takes the pages as they are made, so a row group is
//! never held encoded in memory.

use std::io::Write;

use parquet::basic::ColumnOrder;
use parquet::file::metadata::{
    FileMetaData, ParquetMetaData, ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::TrackedWrite;
use parquet::schema::types::SchemaDescPtr;

use super::page_encoder;
use crate::dataset::Dataset;
use crate::error::{Error, Result};

const MAGIC: &[u8; 4] = b"PAR1";

/// A Parquet file being written, row group after row group.
pub(super) struct PlainFile<W: Write + Send> {
    sink: TrackedWrite<W>,
    schema: SchemaDescPtr,
    props: WriterPropertiesPtr,
    row_groups: Vec<RowGroupMetaData>,
}

impl<W: Write + Send> PlainFile<W> {
    /// Starts the file of leaves `schema` (one per dataset column) in `sink`.
    pub(super) fn new(sink: W, schema: SchemaDescPtr, props: WriterPropertiesPtr) -> Result<Self> {
        let mut sink = TrackedWrite::new(sink);
        sink.write_all(MAGIC)?;
        Ok(PlainFile {
            sink,
            schema,
            props,
            row_groups: Vec::new(),
        })
    }

    /// Writes the rows of `parts` (in order) as the next row group, pages on `threads`
    /// threads.
    pub(super) fn write_row_group(&mut self, parts: &[Dataset], threads: usize) -> Result<()> {
        let rows: usize = parts.iter().map(Dataset::num_rows).sum();
        let start = self.sink.bytes_written() as i64;
        let columns = (self.schema.columns().iter().enumerate())
            .map(|(column, descr)| {
                let props = &self.props;
                page_encoder::write_column(&mut self.sink, parts, column, descr, props, threads)
            })
            .collect::<Result<Vec<_>>>()?;
        let bytes = columns.iter().map(|c| c.uncompressed_size()).sum();
        let ordinal = i32::try_from(self.row_groups.len())
            .map_err(|_| Error::internal("too many row groups"))?;
        let group = RowGroupMetaData::builder(self.schema.clone())
            .set_num_rows(rows as i64)
            .set_total_byte_size(bytes)
            .set_column_metadata(columns)
            .set_ordinal(ordinal)
            .set_file_offset(start)
            .build()?;
        self.row_groups.push(group);
        Ok(())
    }

    /// Writes the footer; returns the sink.
    pub(super) fn finish(mut self) -> Result<W> {
        let rows = self.row_groups.iter().map(RowGroupMetaData::num_rows).sum();
        // The column orders the crate's writer declares: IEEE 754 total order for floats,
        // which the statistics follow (`super::stats`).
        let orders = (self.schema.columns().iter())
            .map(|c| {
                ColumnOrder::column_order_for_type(
                    c.logical_type_ref(),
                    c.converted_type(),
                    c.physical_type(),
                )
            })
            .collect();
        let file = FileMetaData::new(
            self.props.writer_version().as_num(),
            rows,
            Some(self.props.created_by().to_string()),
            self.props.key_value_metadata().cloned(),
            self.schema.clone(),
            Some(orders),
        );
        let metadata = ParquetMetaData::new(file, self.row_groups);
        ParquetMetaDataWriter::new(&mut self.sink, &metadata).finish()?;
        Ok(self.sink.into_inner()?)
    }
}
