//! `lodtensor convert IN OUT [--compression none|snappy|zstd|lz4] [--offsets int32|int64]`: between
//! `.arrow`, `.parquet` and Paddle `.pdtensor` / `.pdiparams`, by extension, and sharded
//! datasets (a directory, `--shard-rows N` / `--shard-bytes N`). The output appears whole or
//! not at all.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use lodtensor::io::AtomicFile;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::io::paddle;
use lodtensor::shards::Manifest;
use lodtensor::{Dataset, IpcCompression, LodTensor, OffsetWidth};

use crate::input::ReadArgs;
use crate::shards::{self, ShardArgs};
use crate::source::{Format, Source, bytes_text, plural, progress};
use crate::{Result, usage};

/// Compression of the output: snappy and zstd for Parquet; zstd and lz4 for Arrow files and
/// shards (which are then decompressed into memory when opened, not mapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    None,
    Snappy,
    Zstd,
    Lz4,
}

/// Offset width of every level of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Offsets {
    /// Arrow `List`.
    #[value(name = "int32", alias = "i32")]
    I32,
    /// Arrow `LargeList`.
    #[value(name = "int64", alias = "i64")]
    I64,
}

impl From<Offsets> for OffsetWidth {
    fn from(o: Offsets) -> Self {
        match o {
            Offsets::I32 => OffsetWidth::I32,
            Offsets::I64 => OffsetWidth::I64,
        }
    }
}

/// Arguments of `lodtensor convert`.
#[derive(clap::Args)]
pub struct Args {
    /// The input file (.arrow, .arrows, .parquet, .pdtensor or .pdiparams), or a sharded
    /// dataset's directory.
    input: PathBuf,
    /// The output file (.arrow, .parquet, .pdtensor or .pdiparams), written atomically; or a
    /// directory (ending with /) to write a sharded dataset into.
    output: PathBuf,
    /// Compression of the output: of Parquet (default snappy; zstd at level 1, as pyarrow), or
    /// of an Arrow file or shards (default none: mapped without a copy; zstd or lz4: smaller,
    /// decompressed into memory when opened).
    #[arg(long, value_enum)]
    compression: Option<Codec>,
    /// Offset width of every level of an Arrow or Parquet output (default int64).
    #[arg(long, value_enum)]
    offsets: Option<Offsets>,
    #[command(flatten)]
    shards: ShardArgs,
    #[command(flatten)]
    read: ReadArgs,
}

/// How to write an output file.
#[derive(Clone, Copy, Debug, Default)]
pub struct Output {
    pub compression: Option<Codec>,
    pub offsets: Option<Offsets>,
}

pub fn run(args: Args) -> Result<()> {
    if shards::is_dir_output(&args.output) {
        return to_shards(args);
    }
    if args.shards.given() {
        return usage(format!(
            "--shard-rows, --shard-bytes and --append write a sharded dataset into a directory: end OUT with / ({}/)",
            args.output.display()
        ));
    }
    let format = Format::of(&args.output)?;
    let output = Output {
        compression: args.compression,
        offsets: args.offsets,
    };
    output.check(format)?;
    let started = Instant::now();
    #[cfg(feature = "parquet")]
    if format == Format::Arrow
        && let Some(reader) = parquet_stream(&args.input, &args.read)?
    {
        let mut writer = DatasetWriter::create(&args.output, arrow_options(output)?)?;
        let (rows, columns) = drain(reader, |d| Ok(writer.write(d)?))?;
        let bytes = writer.finish()?.bytes;
        let what = (Format::Parquet.name(), rows, columns);
        return report(
            &args.input,
            what,
            &args.output,
            format.name(),
            bytes,
            started,
        );
    }
    let source = Source::open_reading_streams(&args.input, &args.read)?;
    let datasets = source.datasets()?;
    let bytes = write(&args.output, &datasets, output)?;
    let rows: usize = datasets.iter().map(Dataset::num_rows).sum();
    let what = (
        source.format.name(),
        rows,
        source.columns.len() + source.sides.len(),
    );
    report(
        &source.path,
        what,
        &args.output,
        format.name(),
        bytes,
        started,
    )
}

/// `convert IN DIR/`: the input written as a sharded dataset, each shard atomically and the
/// manifest last; a Parquet input a row group at a time.
fn to_shards(args: Args) -> Result<()> {
    let started = Instant::now();
    let (input, what, manifest) = write_shards(&args, &args.output, &args.shards)?;
    let bytes: u64 = manifest.shards.iter().map(|s| s.bytes).sum();
    let dataset = format!(
        "sharded dataset of {}, {}",
        plural(manifest.shards.len(), "shard"),
        plural(manifest.num_rows(), "row")
    );
    report(&input, what, &args.output, &dataset, bytes, started)
}

/// The input of `args` written as shards; returns the input's path, its format's name, rows
/// and columns, and the dataset's manifest.
fn write_shards(
    args: &Args,
    dir: &Path,
    shard_args: &ShardArgs,
) -> Result<(PathBuf, (&'static str, usize, usize), Manifest)> {
    let options = arrow_options(Output {
        compression: args.compression,
        offsets: args.offsets,
    })?;
    #[cfg(feature = "parquet")]
    if let Some(reader) = parquet_stream(&args.input, &args.read)? {
        let mut writer = shards::writer(dir, shard_args, options)?;
        let (rows, columns) = drain(reader, |d| Ok(writer.write(d)?))?;
        let what = (Format::Parquet.name(), rows, columns);
        return Ok((args.input.clone(), what, writer.finish()?));
    }
    let source = Source::open_reading_streams(&args.input, &args.read)?;
    let datasets = source.datasets()?;
    let mut writer = shards::writer(dir, shard_args, options)?;
    let rows: usize = datasets.iter().map(Dataset::num_rows).sum();
    let bar = progress(rows as u64, "writing", "rows");
    for dataset in &datasets {
        writer.write(dataset)?;
        bar.inc(dataset.num_rows() as u64);
    }
    bar.finish_and_clear();
    let what = (
        source.format.name(),
        rows,
        source.columns.len() + source.sides.len(),
    );
    Ok((source.path.clone(), what, writer.finish()?))
}

/// `converted IN (FORMAT, N rows, C columns) to OUT (WHAT): BYTES in T ms`, on stdout.
fn report(
    input: &Path,
    (format, rows, columns): (&str, usize, usize),
    output: &Path,
    what: &str,
    bytes: u64,
    started: Instant,
) -> Result<()> {
    writeln!(
        std::io::stdout().lock(),
        "converted {} ({format}, {}, {}) to {} ({what}): {} in {:.0} ms",
        input.display(),
        plural(rows, "row"),
        plural(columns, "column"),
        output.display(),
        bytes_text(bytes),
        started.elapsed().as_secs_f64() * 1e3
    )?;
    Ok(())
}

/// The options of an Arrow output (a file or shards) with `--offsets` and `--compression`.
fn arrow_options(output: Output) -> Result<WriteOptions> {
    let mut options = WriteOptions::default();
    if let Some(offsets) = output.offsets {
        options = options.with_offset_width(offsets.into());
    }
    let compression = match output.compression {
        None | Some(Codec::None) => IpcCompression::None,
        Some(Codec::Zstd) => IpcCompression::Zstd,
        Some(Codec::Lz4) => IpcCompression::Lz4,
        Some(Codec::Snappy) => {
            return usage(
                "--compression snappy applies to .parquet output: .arrow files and shards take zstd or lz4",
            );
        }
    };
    Ok(options.with_compression(compression))
}

impl Output {
    /// Refuses options the format cannot honour.
    fn check(self, format: Format) -> Result<()> {
        let compressed = self.compression.is_some_and(|c| c != Codec::None);
        match format {
            Format::Arrow => arrow_options(self).map(drop),
            Format::Parquet if self.compression == Some(Codec::Lz4) => usage(
                "--compression lz4 applies to .arrow output and shards: .parquet takes snappy or zstd",
            ),
            Format::PaddleTensor | Format::PaddleCombined if compressed => {
                usage("--compression applies to .parquet output: Paddle files are not compressed")
            }
            Format::PaddleTensor | Format::PaddleCombined if self.offsets.is_some() => usage(
                "--offsets applies to .arrow and .parquet output: Paddle files always hold uint64 offsets",
            ),
            _ => Ok(()),
        }
    }
}

/// Writes `datasets` (batches of one schema) to `path` in the format its extension names,
/// atomically; returns the file's size.
///
/// # Errors
/// A usage error for an unknown extension, options the format cannot honour, or data it
/// cannot hold; the writer's error otherwise (the target is then untouched).
pub fn write(path: &Path, datasets: &[Dataset], output: Output) -> Result<u64> {
    let format = Format::of(path)?;
    output.check(format)?;
    match format {
        Format::ArrowStream => usage(format!(
            "{}: lodtensor reads Arrow IPC streams but writes Arrow IPC files, which can be mapped: write .arrow",
            path.display()
        )),
        Format::Shards => unreachable!("Format::of names files only"),
        Format::Arrow => write_arrow(path, datasets, output),
        Format::Parquet => write_parquet(path, datasets, output),
        Format::PaddleTensor => {
            let columns = concat_columns(datasets)?;
            match columns.as_slice() {
                [(_, tensor)] => write_paddle(path, [tensor]),
                _ => usage(format!(
                    "{}: a .pdtensor file holds one tensor, the input has {} (write .pdiparams for all of them, or slice one column)",
                    path.display(),
                    plural(columns.len(), "column")
                )),
            }
        }
        Format::PaddleCombined => {
            let columns = concat_columns(datasets)?;
            write_paddle(path, columns.iter().map(|(_, t)| t))
        }
    }
}

fn write_arrow(path: &Path, datasets: &[Dataset], output: Output) -> Result<u64> {
    let rows: usize = datasets.iter().map(Dataset::num_rows).sum();
    let bar = progress(rows as u64, "writing", "rows");
    let mut writer = DatasetWriter::create(path, arrow_options(output)?)?;
    for dataset in datasets {
        writer.write(dataset)?;
        bar.inc(dataset.num_rows() as u64);
    }
    let summary = writer.finish()?;
    bar.finish_and_clear();
    Ok(summary.bytes)
}

#[cfg(feature = "parquet")]
fn write_parquet(path: &Path, datasets: &[Dataset], output: Output) -> Result<u64> {
    use lodtensor::io::parquet::{Compression, ParquetFileWriter, ParquetWriteOptions};
    let compression = match output.compression {
        None | Some(Codec::Snappy) => Compression::Snappy,
        Some(Codec::None) => Compression::None,
        Some(Codec::Zstd) => Compression::Zstd(1),
        Some(Codec::Lz4) => unreachable!("refused by Output::check"),
    };
    let mut options = ParquetWriteOptions::default().with_compression(compression);
    if let Some(offsets) = output.offsets {
        options = options.with_offset_width(offsets.into());
    }
    let rows: usize = datasets.iter().map(Dataset::num_rows).sum();
    let bar = progress(rows as u64, "writing", "rows");
    let mut writer = ParquetFileWriter::create(path, options)?;
    for dataset in datasets {
        // The encoder copies what it is given anyway: pieces cost nothing and move the bar.
        let rows = dataset.num_rows();
        let step = rows.div_ceil(64).max(1);
        for start in (0..rows).step_by(step) {
            let end = (start + step).min(rows);
            writer.write(&dataset.slice_rows(start..end)?)?;
            bar.inc((end - start) as u64);
        }
        if rows == 0 {
            writer.write(dataset)?;
        }
    }
    writer.finish()?;
    bar.finish_and_clear();
    let bytes = std::fs::metadata(path)
        .map_err(|e| lodtensor::Error::from(e).in_file(path))?
        .len();
    Ok(bytes)
}

/// The Parquet file `input`, open to be read a row group at a time (memory is one row group,
/// not the file), when it is a Parquet file with rows read without `--element-shape`.
#[cfg(feature = "parquet")]
fn parquet_stream(
    input: &Path,
    read: &ReadArgs,
) -> Result<Option<lodtensor::io::parquet::ParquetReader>> {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    if shards::is_dir(input)
        || Format::of(input)? != Format::Parquet
        || !read.element_shape.is_empty()
        || !read.columns.is_empty()
    {
        return Ok(None);
    }
    crate::input::check_path(input)?;
    let options = ParquetReadOptions::default().with_batch_size(usize::MAX);
    let reader = ParquetReader::open(input, &options)?;
    Ok((reader.num_rows() > 0).then_some(reader))
}

/// Every row group of `reader` into `sink`, in order; returns the rows and columns.
#[cfg(feature = "parquet")]
fn drain(
    reader: lodtensor::io::parquet::ParquetReader,
    mut sink: impl FnMut(&Dataset) -> Result<()>,
) -> Result<(usize, usize)> {
    let (rows, columns) = (reader.num_rows(), reader.schema().fields().len());
    let bar = progress(rows as u64, "converting", "rows");
    for dataset in reader {
        let dataset = dataset?;
        sink(&dataset)?;
        bar.inc(dataset.num_rows() as u64);
    }
    bar.finish_and_clear();
    Ok((rows, columns))
}

#[cfg(not(feature = "parquet"))]
fn write_parquet(path: &Path, _datasets: &[Dataset], _output: Output) -> Result<u64> {
    usage(format!(
        "{}: Parquet support is not built in (feature `parquet`)",
        path.display()
    ))
}

/// Each column of `datasets` as one tensor (the batches concatenated, or the one batch's
/// view), in column order.
fn concat_columns(datasets: &[Dataset]) -> Result<Vec<(String, LodTensor)>> {
    let Some(first) = datasets.first() else {
        return Ok(Vec::new());
    };
    if let Some(side) = first.columns().iter().find(|c| c.is_side()) {
        return usage(format!(
            "column {:?} is a side column ({}): Paddle LoDTensor files hold LoD tensors only; write .arrow or .parquet, or keep the tensor columns with --columns",
            side.name(),
            side.to_arrow().data_type()
        ));
    }
    let bar = progress(datasets.len() as u64, "joining batches", "batches");
    let mut out = Vec::new();
    for (c, column) in first.columns().iter().enumerate() {
        let parts: Vec<LodTensor> = datasets
            .iter()
            .map(|d| d.columns()[c].tensor().cloned())
            .collect::<lodtensor::Result<_>>()?;
        let tensor = match parts.as_slice() {
            [one] => one.clone(),
            _ => lodtensor::ops::concat(&parts).map_err(|e| e.in_column(column.name(), 0))?,
        };
        out.push((column.name().to_owned(), tensor));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// Paddle records, through an [`AtomicFile`].
fn write_paddle<'a>(path: &Path, tensors: impl IntoIterator<Item = &'a LodTensor>) -> Result<u64> {
    let tensors: Vec<&LodTensor> = tensors.into_iter().collect();
    let in_file = |e: lodtensor::Error| e.in_file(path);
    if let Some(t) = tensors
        .iter()
        .find(|t| paddle::paddle_code(t.dtype()).is_none())
    {
        return Err(in_file(
            lodtensor::UnsupportedError::NoPaddleDType { dtype: t.dtype() }.into(),
        )
        .into());
    }
    let file = AtomicFile::create(path)?;
    let bar = progress(tensors.len() as u64, "writing", "tensors");
    {
        let mut out = BufWriter::with_capacity(1 << 20, file.file());
        for t in tensors {
            paddle::write_tensor(&mut out, t).map_err(in_file)?;
            bar.inc(1);
        }
        out.flush().map_err(|e| in_file(e.into()))?;
    }
    let bytes = file.file().metadata().map_err(|e| in_file(e.into()))?.len();
    file.commit()?;
    bar.finish_and_clear();
    Ok(bytes)
}
