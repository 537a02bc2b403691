//! Parquet export of the mapped file per codec, on one and on two threads, into memory
//! (the encoders compared, not the disk).

use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::parquet::{Compression, ParquetWriteOptions, ParquetWriter, RowGroupSize};

use crate::Result;
use crate::measure::{Samples, alternate};

/// The codecs compared: the key of pyarrow's figures, the name shown, ours.
const CODECS: [(&str, &str, Compression); 3] = [
    ("none", "none", Compression::None),
    ("snappy", "snappy", Compression::Snappy),
    ("zstd1", "zstd(1)", Compression::Zstd(1)),
];

/// Values per row group, about: `group_rows` turns it into documents for both writers.
pub const ROW_GROUP_BYTES: u64 = 128 << 20;

/// The timings of one codec.
pub struct CodecRuns {
    /// The codec's key in pyarrow's figures.
    pub key: &'static str,
    /// The codec's name.
    pub label: &'static str,
    /// One encoding thread.
    pub one_thread: Samples,
    /// Two encoding threads.
    pub two_threads: Samples,
}

/// Documents per row group: about [`ROW_GROUP_BYTES`] of values each.
pub fn group_rows(docs: usize, value_bytes: u64) -> usize {
    ((docs as u64 * ROW_GROUP_BYTES / value_bytes.max(1)) as usize).max(1)
}

/// Times the export of every batch of `file` with each codec, one and two threads
/// alternately, `group_rows` documents per row group.
///
/// # Errors
/// A write fails.
pub fn measure(file: &MappedDataset, group_rows: usize) -> Result<Vec<CodecRuns>> {
    let capacity = file.as_bytes().len() + file.as_bytes().len() / 4;
    let export = |options: ParquetWriteOptions| {
        move || -> Result<()> {
            let mut writer = ParquetWriter::new(Vec::with_capacity(capacity), options.clone());
            for batch in file.batches() {
                writer.write(batch)?;
            }
            writer.finish()?;
            Ok(())
        }
    };
    CODECS
        .into_iter()
        .map(|(key, label, codec)| {
            let options = ParquetWriteOptions::default()
                .with_compression(codec)
                .with_row_group_size(RowGroupSize::Rows(group_rows));
            let (one_thread, two_threads) = alternate(
                3,
                export(options.clone().with_threads(1)),
                export(options.with_threads(2)),
            )?;
            Ok(CodecRuns {
                key,
                label,
                one_thread,
                two_threads,
            })
        })
        .collect()
}
