//! A Parquet file with a column the page encoder does not write, made by the `parquet`
//! crate's file writer: such a column (a side column, or a tensor column of booleans,
//! float16, narrow or unsigned integers, or with a dictionary) is encoded by the crate's
//! `ArrowColumnWriter`, exactly as its `ArrowWriter` encodes it; the plain numeric tensor
//! columns beside it are still made by [`super::page_encoder`], into memory, and spliced
//! into the row group.

use std::io::Write;

use arrow_schema::{FieldRef, SchemaRef};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::levels::{leaf_count, raw_bytes};
use super::page_encoder;
use crate::dataset::Dataset;
use crate::error::Result;

/// A Parquet file being written by the `parquet` crate, row group after row group.
pub(super) struct CrateFile<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    /// The file's Arrow schema.
    schema: SchemaRef,
    /// Per column: whether the page encoder writes it.
    paged: Vec<bool>,
}

/// How one column of a row group is encoded.
enum Job {
    /// By the page encoder: column, leaf.
    Pages(usize, ColumnDescPtr),
    /// By the crate's writers: column, field, one writer per leaf.
    Arrow(usize, FieldRef, Vec<ArrowColumnWriter>),
}

/// One column chunk, encoded in memory.
enum Chunk {
    Pages(Bytes, ColumnCloseResult),
    Arrow(ArrowColumnChunk),
}

impl<W: Write + Send> CrateFile<W> {
    /// Starts the file of `schema` with `props` in `sink`; `paged` says which columns the
    /// page encoder writes.
    pub(super) fn new(
        sink: W,
        schema: &SchemaRef,
        paged: Vec<bool>,
        props: WriterProperties,
    ) -> Result<Self> {
        // The Arrow writer makes the file writer with the Parquet schema and the embedded
        // Arrow schema, and the factory of its column writers.
        let (file, factory) =
            ArrowWriter::try_new(sink, schema.clone(), Some(props))?.into_serialized_writer()?;
        Ok(CrateFile {
            file,
            factory,
            schema: schema.clone(),
            paged,
        })
    }

    /// Writes the rows of `parts` (in order) as the next row group, its columns encoded on
    /// up to `threads` threads (the page encoder's share of them making pages).
    pub(super) fn write_row_group(&mut self, parts: &[Dataset], threads: usize) -> Result<()> {
        let index = self.file.flushed_row_groups().len();
        let mut writers = self.factory.create_column_writers(index)?.into_iter();
        let descrs = self.file.schema_descr().columns();
        let mut jobs = Vec::with_capacity(self.paged.len());
        let mut leaf = 0;
        for (column, field) in self.schema.fields().iter().enumerate() {
            let n = leaf_count(field.data_type());
            let column_writers: Vec<_> = writers.by_ref().take(n).collect();
            jobs.push(match descrs.get(leaf) {
                Some(descr) if self.paged[column] => Job::Pages(column, descr.clone()),
                _ => Job::Arrow(column, field.clone(), column_writers),
            });
            leaf += n;
        }
        let workers = threads.clamp(1, jobs.len().max(1));
        let page_threads = (threads / workers).max(1);
        let props = self.file.properties().clone();
        let encoded = run(jobs, workers, |job| {
            encode(job, parts, &props, page_threads)
        });
        let mut row_group = self.file.next_row_group()?;
        for chunks in encoded {
            for chunk in chunks? {
                match chunk {
                    Chunk::Pages(data, close) => row_group.append_column(&data, close)?,
                    Chunk::Arrow(chunk) => chunk.append_to_row_group(&mut row_group)?,
                }
            }
        }
        row_group.close()?;
        Ok(())
    }

    /// Writes the footer; returns the sink.
    pub(super) fn finish(self) -> Result<W> {
        Ok(self.file.into_inner()?)
    }
}

/// The chunks of `job`'s column of `parts`.
fn encode(
    job: Job,
    parts: &[Dataset],
    props: &WriterPropertiesPtr,
    threads: usize,
) -> Result<Vec<Chunk>> {
    match job {
        Job::Pages(column, descr) => {
            let capacity = (parts.iter())
                .filter_map(|p| p.columns().get(column))
                .map(raw_bytes)
                .sum();
            let mut sink = TrackedWrite::new(Vec::with_capacity(capacity));
            let metadata =
                page_encoder::write_column(&mut sink, parts, column, &descr, props, threads)?;
            let close = ColumnCloseResult {
                bytes_written: sink.bytes_written() as u64,
                rows_written: parts.iter().map(Dataset::num_rows).sum::<usize>() as u64,
                metadata,
                bloom_filter: None,
                column_index: None,
                offset_index: None,
            };
            Ok(vec![Chunk::Pages(Bytes::from(sink.into_inner()?), close)])
        }
        Job::Arrow(column, field, mut writers) => {
            for part in parts {
                let array = part.columns()[column].to_arrow();
                for (writer, leaf) in writers.iter_mut().zip(compute_leaves(&field, &array)?) {
                    writer.write(&leaf)?;
                }
            }
            (writers.into_iter())
                .map(|w| Ok(Chunk::Arrow(w.close()?)))
                .collect()
        }
    }
}

/// `f` of every job, in order, on up to `workers` threads (the calling one among them).
fn run<J: Send, R: Send>(jobs: Vec<J>, workers: usize, f: impl Fn(J) -> R + Sync) -> Vec<R> {
    if workers <= 1 {
        return jobs.into_iter().map(f).collect();
    }
    let mut shares: Vec<Vec<(usize, J)>> = (0..workers).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        shares[i % workers].push((i, job));
    }
    let f = &f;
    let work = move |share: Vec<(usize, J)>| -> Vec<(usize, R)> {
        share.into_iter().map(|(i, job)| (i, f(job))).collect()
    };
    let mut done = std::thread::scope(|scope| {
        let mut shares = shares.into_iter();
        let first = shares.next().unwrap_or_default();
        let handles: Vec<_> = shares.map(|s| scope.spawn(move || work(s))).collect();
        let mut done = work(first);
        for handle in handles {
            let made = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            done.extend(made);
        }
        done
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, StringArray};

    use super::super::tests::{CODECS, Rng, arrow_writer_bytes, tensor, write_bytes};
    use super::super::{ParquetWriteOptions, RowGroupSize};
    use crate::dataset::{Column, Dataset};
    use crate::lod::OffsetWidth;
    use crate::values::DType;

    /// A dataset of `rows` rows whose every column goes to the crate's writers: tensors of
    /// `dtypes` and a string side column.
    fn dataset(dtypes: &[DType], rows: usize, seed: u64) -> Dataset {
        let mut rng = Rng(seed);
        let mut columns: Vec<Column> = (dtypes.iter().enumerate())
            .map(|(i, &dtype)| {
                let t = tensor(dtype, i % 3, &[2], rows, OffsetWidth::I64, &mut rng);
                Column::new(format!("t{i}"), t)
            })
            .collect();
        let words: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|r| format!("w{}", rng.below(5 + r as u64))),
        ));
        columns.push(Column::side("words", words).unwrap());
        Dataset::try_new(columns).unwrap()
    }

    /// A file of columns the page encoder does not write is the `parquet` crate's
    /// `ArrowWriter`'s file byte for byte, on any number of threads, with or without a
    /// dictionary, at every codec, written in two parts across row groups.
    #[test]
    fn files_of_crate_columns_are_the_arrow_writers_byte_for_byte() {
        let dtypes = [
            DType::Bool,
            DType::Float16,
            DType::Int8,
            DType::UInt32,
            DType::UInt64,
        ];
        for (k, codec) in CODECS.into_iter().enumerate() {
            let ds = dataset(&dtypes, 50, k as u64);
            let parts = [
                ds.slice_rows(0..23).unwrap(),
                ds.slice_rows(23..50).unwrap(),
            ];
            for dictionary in [false, true] {
                for threads in [1, 3] {
                    let options = ParquetWriteOptions::default()
                        .with_compression(codec)
                        .with_dictionary(dictionary)
                        .with_row_group_size(RowGroupSize::Rows(20))
                        .with_threads(threads);
                    let theirs = arrow_writer_bytes(&parts, &options, 20);
                    assert!(
                        write_bytes(&parts, &options) == theirs,
                        "{codec:?} dictionary {dictionary}, {threads} threads"
                    );
                }
            }
        }
    }

    /// Plain numeric tensor columns beside a side column are still made by the page
    /// encoder, and the file reads back as written.
    #[test]
    fn mixed_files_splice_the_page_encoders_chunks() {
        let ds = dataset(&[DType::Float32, DType::Int64, DType::Int8], 30, 9);
        for threads in [1, 2, 5] {
            let options = ParquetWriteOptions::default()
                .with_row_group_size(RowGroupSize::Rows(7))
                .with_threads(threads);
            let bytes = write_bytes([&ds], &options);
            let reader = parquet::file::reader::SerializedFileReader::new(bytes.clone()).unwrap();
            use parquet::file::reader::FileReader;
            let column = reader.metadata().row_group(0).column(0);
            assert!(
                column.offset_index_offset().is_none(),
                "no page index: the page encoder's"
            );
            assert!(
                reader
                    .metadata()
                    .row_group(0)
                    .column(2)
                    .offset_index_offset()
                    .is_some()
            );
            let back = super::super::tests::read_bytes(bytes, &Default::default());
            assert_eq!(back, ds, "{threads} threads");
        }
    }
}
