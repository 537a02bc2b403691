//! Column chunks of plain numbers encoded page by page straight from the LoD offsets.
//!
//! For the writer's common settings (32- and 64-bit floats and integers, `PLAIN` or, for
//! floats, `BYTE_STREAM_SPLIT`, no dictionary, data page v1, uncompressed, snappy or zstd)
//! a column chunk is made here rather than by the `parquet` crate's column writer, which
//! takes one repetition and one definition level per item and encodes them one at a time.
//! Here the levels are runs computed from the offsets ([`super::levels`]; an element of
//! `f32[64]` is two runs, not 64 entries), the values are the bytes they are in the
//! dataset, and the pages are compressed on `threads` threads. The chunk is what the
//! Parquet format's "Data Pages" section describes: per page, the repetition levels then
//! the definition levels, each as a 4-byte length and the RLE/bit-packing hybrid, then the
//! values (`PLAIN`, or split into byte streams), compressed together. Chunk statistics
//! (min, max, null count: [`super::stats`]) are kept; no page index, as pyarrow by default.

use std::io::Write;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::thread::ScopedJoinHandle;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_buffer::ToByteSlice;
use bytes::Bytes;
use parquet::basic::{Compression as ParquetCompression, Encoding, Type as PhysicalType};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::levels::{Leaf, LevelRuns, element_of_row, leaves, row_items};
use super::stats::Stats;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

/// Whether this module encodes column `descr` holding `dtype` under `props`.
pub(super) fn encodes(dtype: DType, descr: &ColumnDescPtr, props: &WriterProperties) -> bool {
    let path = descr.path();
    let physical = matches!(
        (dtype, descr.physical_type()),
        (DType::Float32, PhysicalType::FLOAT)
            | (DType::Float64, PhysicalType::DOUBLE)
            | (DType::Int32, PhysicalType::INT32)
            | (DType::Int64, PhysicalType::INT64)
    );
    let codec = matches!(
        props.compression(path),
        ParquetCompression::UNCOMPRESSED | ParquetCompression::SNAPPY | ParquetCompression::ZSTD(_)
    );
    physical
        && codec
        && !props.dictionary_enabled(path)
        && match props.encoding(path) {
            None | Some(Encoding::PLAIN) => true,
            Some(Encoding::BYTE_STREAM_SPLIT) => matches!(dtype, DType::Float32 | DType::Float64),
            Some(_) => false,
        }
        && props.writer_version() == WriterVersion::PARQUET_1_0
        && props.bloom_filter_properties(path).is_none()
}

/// Writes column `column` of `parts` (in order) as one column chunk of leaf `descr` into
/// `sink`, compressing pages on up to `threads` threads; returns the chunk's metadata.
pub(super) fn write_column<W: Write + Send>(
    sink: &mut TrackedWrite<W>,
    parts: &[Dataset],
    column: usize,
    descr: &ColumnDescPtr,
    props: &WriterProperties,
    threads: usize,
) -> Result<ColumnChunkMetaData> {
    let way = Way {
        encoding: props.encoding(descr.path()).unwrap_or(Encoding::PLAIN),
        codec: props.compression(descr.path()),
    };
    let page_bytes = props.data_page_size_limit().max(1);
    let mut pages = Vec::new();
    for part in leaves(parts, column, descr) {
        let (tensor, leaf) = part?;
        pages.extend(plan_pages(tensor, &leaf, page_bytes));
    }
    let mut totals = Totals::default();
    let mut stats = Stats::default();
    let pool = Pool::default();
    let start = sink.bytes_written() as u64;
    {
        let mut writer = SerializedPageWriter::new(sink);
        let mut write = |made: Vec<(CompressedPage, Stats)>| -> Result<()> {
            for (page, page_stats) in made {
                totals.add(&writer.write_page(page)?);
                stats.merge(page_stats);
            }
            Ok(())
        };
        if threads <= 1 {
            for plan in &pages {
                write(vec![make_page(plan, way, &pool)?])?;
            }
        } else {
            // A few pages per thread at a time: made on `threads` threads while the
            // calling thread writes the ones made before, in order.
            let mut made = Vec::new();
            for group in pages.chunks(threads * 4).map(Some).chain([None]) {
                made = std::thread::scope(|scope| {
                    let making = group.map(|plans| spawn_pages(scope, plans, way, threads, &pool));
                    write(std::mem::take(&mut made))?;
                    making.map_or(Ok(Vec::new()), join_pages)
                })?;
            }
        }
        writer.close()?;
    }
    Ok(ColumnChunkMetaData::builder(descr.clone())
        .set_compression(way.codec)
        .set_encodings(encodings(way.encoding))
        .set_num_values(totals.values as i64)
        .set_total_compressed_size(totals.compressed as i64)
        .set_total_uncompressed_size(totals.uncompressed as i64)
        .set_data_page_offset(totals.first_offset.unwrap_or(start) as i64)
        .set_statistics(stats.finish(descr.physical_type()))
        .build()?)
}

/// The encodings of a chunk whose values are in `values` (the levels are `RLE`), in the
/// order the `parquet` crate's column writer lists them.
fn encodings(values: Encoding) -> Vec<Encoding> {
    let mut all = vec![values, Encoding::RLE];
    all.sort();
    all
}

/// One page to make: rows of one tensor.
struct PagePlan<'a> {
    tensor: &'a LodTensor,
    leaf: Leaf,
    rows: Range<usize>,
}

/// The pages of `tensor`: runs of whole rows of about `page_bytes` bytes of values each (a
/// longer row is a page of its own).
fn plan_pages<'a>(tensor: &'a LodTensor, leaf: &Leaf, page_bytes: usize) -> Vec<PagePlan<'a>> {
    let item_bytes = tensor.dtype().byte_width().unwrap_or(1).max(1);
    let element_bytes = (tensor.values().element_size() * item_bytes).max(1);
    let rows = tensor.num_rows();
    let mut pages = Vec::new();
    let mut first = 0;
    while first < rows {
        // At least one row; then rows while the page stays under `page_bytes`.
        let start = element_of_row(tensor, leaf, first);
        let mut end = first + 1;
        while end < rows
            && (element_of_row(tensor, leaf, end + 1) - start) * element_bytes <= page_bytes
        {
            end += 1;
        }
        pages.push(PagePlan {
            tensor,
            leaf: leaf.clone(),
            rows: first..end,
        });
        first = end;
    }
    pages
}

/// Pages made, in order, with their statistics.
type Made = Vec<(CompressedPage, Stats)>;

/// Starts making (levels, values, compression) the pages of `plans` on `threads` threads.
fn spawn_pages<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plans: &'env [PagePlan<'env>],
    way: Way,
    threads: usize,
    pool: &'env Pool,
) -> Vec<ScopedJoinHandle<'scope, Result<Made>>> {
    plans
        .chunks(plans.len().div_ceil(threads).max(1))
        .map(|chunk| scope.spawn(move || chunk.iter().map(|p| make_page(p, way, pool)).collect()))
        .collect()
}

/// The pages made by `handles`, in order.
fn join_pages(
    handles: Vec<ScopedJoinHandle<'_, Result<Made>>>,
) -> Result<Vec<(CompressedPage, Stats)>> {
    let mut pages = Vec::new();
    for handle in handles {
        let made = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        pages.extend(made);
    }
    Ok(pages)
}

/// One data page v1 (repetition levels, definition levels, values in `encoding`,
/// compressed together) and its statistics.
fn make_page(plan: &PagePlan<'_>, way: Way, pool: &Pool) -> Result<(CompressedPage, Stats)> {
    let (leaf, tensor) = (&plan.leaf, plan.tensor);
    let mut levels = LevelRuns::new(leaf);
    levels.rows(tensor, leaf, plan.rows.clone());
    let items = row_items(tensor, leaf, plan.rows.clone());
    let mut stats = Stats::default();
    stats.add(tensor.values(), items.clone(), levels.nulls)?;
    let values = value_bytes(tensor.values(), items)?;
    let mut page = pool.take(levels.byte_len() + values.len());
    let num_values = levels.write(&mut page)?;
    match way.encoding {
        Encoding::BYTE_STREAM_SPLIT => {
            let width = tensor.dtype().byte_width().unwrap_or(1);
            split_streams(values, width, &mut page);
        }
        _ => page.extend_from_slice(values),
    }
    let uncompressed = page.len();
    let buf = compress(page, way.codec, pool)?;
    let data = Page::DataPage {
        buf: Bytes::from_owner(Pooled {
            buf,
            pool: pool.clone(),
        }),
        num_values,
        encoding: way.encoding,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    Ok((CompressedPage::new(data, uncompressed), stats))
}

/// How a column's pages are made: the values' encoding and the codec.
#[derive(Clone, Copy)]
struct Way {
    encoding: Encoding,
    codec: ParquetCompression,
}

/// The little-endian bytes of `items` of `values` (their `PLAIN` encoding).
fn value_bytes(values: &Values, items: Range<usize>) -> Result<&[u8]> {
    Ok(match values.dtype() {
        DType::Float32 => values.typed::<Float32Type>()?[items].to_byte_slice(),
        DType::Float64 => values.typed::<Float64Type>()?[items].to_byte_slice(),
        DType::Int32 => values.typed::<Int32Type>()?[items].to_byte_slice(),
        DType::Int64 => values.typed::<Int64Type>()?[items].to_byte_slice(),
        other => {
            return Err(Error::internal(format!(
                "{} values for a plain page",
                other.name()
            )));
        }
    })
}

/// Appends the `BYTE_STREAM_SPLIT` encoding of `values` (values of `width` bytes) to
/// `out`: byte `k` of every value, for `k` in `0..width`, one stream after the other.
fn split_streams(values: &[u8], width: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + values.len(), 0);
    let streams = &mut out[start..];
    match width {
        4 => split::<4>(values, streams),
        8 => split::<8>(values, streams),
        _ => split_any(values, streams, width),
    }
}

fn split<const W: usize>(values: &[u8], streams: &mut [u8]) {
    let n = values.len() / W;
    for (i, value) in values.chunks_exact(W).enumerate() {
        for k in 0..W {
            streams[k * n + i] = value[k];
        }
    }
}

fn split_any(values: &[u8], streams: &mut [u8], width: usize) {
    let n = values.len() / width.max(1);
    for (i, value) in values.chunks_exact(width.max(1)).enumerate() {
        for (k, &byte) in value.iter().enumerate() {
            streams[k * n + i] = byte;
        }
    }
}

/// `page` compressed with `codec` (the Parquet codecs' framing: raw snappy, a zstd frame).
/// `page` compressed with `codec` into a buffer of `pool` (given back to it).
fn compress(page: Vec<u8>, codec: ParquetCompression, pool: &Pool) -> Result<Vec<u8>> {
    let mut out = match codec {
        ParquetCompression::UNCOMPRESSED => return Ok(page),
        ParquetCompression::SNAPPY => pool.take(snap::raw::max_compress_len(page.len())),
        ParquetCompression::ZSTD(_) => pool.take(zstd::zstd_safe::compress_bound(page.len())),
        other => return Err(Error::internal(format!("codec {other} for a plain page"))),
    };
    let room = out.capacity();
    out.resize(room, 0);
    let len = match codec {
        ParquetCompression::ZSTD(level) => {
            zstd::bulk::compress_to_buffer(&page, &mut out[..], level.compression_level())
                .map_err(|e| Error::internal(format!("zstd: {e}")))?
        }
        _ => snap::raw::Encoder::new()
            .compress(&page, &mut out)
            .map_err(|e| Error::internal(format!("snappy: {e}")))?,
    };
    out.truncate(len);
    pool.give(page);
    Ok(out)
}

/// Page buffers, reused: a buffer freed and allocated again for every page would be
/// faulted in (zeroed by the kernel) every time.
#[derive(Clone, Default)]
struct Pool(Arc<Mutex<Vec<Vec<u8>>>>);

impl Pool {
    /// An empty buffer of at least `capacity` bytes.
    fn take(&self, capacity: usize) -> Vec<u8> {
        let mut buf = self
            .0
            .lock()
            .map(|mut p| p.pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        buf.clear();
        buf.reserve(capacity);
        buf
    }

    fn give(&self, buf: Vec<u8>) {
        if let Ok(mut pool) = self.0.lock() {
            pool.push(buf);
        }
    }
}

/// A page's bytes, whose buffer goes back to its pool when the page is dropped.
struct Pooled {
    buf: Vec<u8>,
    pool: Pool,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

/// Sizes and offsets of the pages written.
#[derive(Default)]
struct Totals {
    values: u64,
    compressed: u64,
    uncompressed: u64,
    first_offset: Option<u64>,
}

impl Totals {
    fn add(&mut self, page: &PageWriteSpec) {
        self.values += u64::from(page.num_values);
        self.compressed += page.compressed_size as u64;
        self.uncompressed += page.uncompressed_size as u64;
        self.first_offset.get_or_insert(page.offset);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{
        CODECS, arrow_read, arrow_writer_bytes, dataset, read_bytes, write_bytes,
    };
    use super::super::{ParquetReadOptions, ParquetWriteOptions, RowGroupSize};
    use super::*;
    use crate::lod::OffsetWidth;

    /// The data pages of the first column chunk of `file`.
    fn pages(file: &Bytes) -> usize {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let reader = SerializedFileReader::new(file.clone()).unwrap();
        let group = reader.get_row_group(0).unwrap();
        group.get_column_page_reader(0).unwrap().count()
    }

    /// Columns of many pages, every plain dtype, depth and codec, on 1 and 3 threads (floats
    /// byte-stream split on 3): the rows, row groups and chunk statistics the `parquet`
    /// crate reads are those of its own Arrow writer's file, and this crate reads the
    /// dataset back.
    #[test]
    fn many_pages_read_as_the_arrow_writers_file() {
        for (i, dtype) in [DType::Float32, DType::Float64, DType::Int32, DType::Int64]
            .into_iter()
            .enumerate()
        {
            for depth in 0..3 {
                for shape in [&[][..], &[300][..]] {
                    let codec = CODECS[(i + depth) % CODECS.len()];
                    let ds = dataset(dtype, depth, shape, 1500, OffsetWidth::I64, i as u64);
                    let parts = [
                        ds.slice_rows(0..567).unwrap(),
                        ds.slice_rows(567..1500).unwrap(),
                    ];
                    for threads in [1, 3] {
                        let options = ParquetWriteOptions::default()
                            .with_compression(codec)
                            .with_byte_stream_split(threads == 3)
                            .with_row_group_size(RowGroupSize::Rows(1000))
                            .with_threads(threads);
                        let ours = write_bytes(&parts, &options);
                        let theirs = arrow_writer_bytes(&parts, &options, 1000);
                        if shape.len() == 1 && depth == 0 {
                            assert!(pages(&ours) > 1, "several pages in a chunk");
                        }
                        assert_eq!(
                            arrow_read(&ours),
                            arrow_read(&theirs),
                            "{dtype:?} {depth} {shape:?} {threads}"
                        );
                        let back = read_bytes(ours, &ParquetReadOptions::default());
                        assert_eq!(back, ds, "{dtype:?} {depth} {shape:?} {threads}");
                    }
                }
            }
        }
    }
}
