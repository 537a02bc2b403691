//! `lodtensor-bench`: one command that measures lodtensor against the machine's limits,
//! arrow-rs and pyarrow/numpy on the standard synthetic dataset, in one run, and writes the
//! table as markdown (and into README between `<!-- bench:begin -->` and
//! `<!-- bench:end -->`). One file per job.

mod baseline;
mod batches;
mod dataset;
mod export;
mod measure;
mod parquet_io;
mod pool;
mod python;
mod report;
mod rows;
mod storage;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use lodtensor::io::ipc_reader::MappedDataset;

/// Errors of any step.
pub type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

/// Performance of lodtensor against the machine's limits, arrow-rs and pyarrow, in one run.
#[derive(Parser)]
#[command(name = "lodtensor-bench", version, about)]
struct Args {
    /// Size of the dataset: 1 is about 1 GiB of values.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Where to write the report (markdown).
    #[arg(long, default_value = "target/lodtensor-bench.md")]
    out: PathBuf,
    /// A README whose section between `<!-- bench:begin -->` and `<!-- bench:end -->` the
    /// report replaces.
    #[arg(long)]
    readme: Option<PathBuf>,
    /// Directory for the data files, removed afterwards (default: the system's temporary
    /// directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lodtensor-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Parquet both ways per value distribution and codec; the peak RSS of an import and its
/// bound.
type ParquetFigures = (
    Vec<(&'static str, Vec<parquet_io::CodecIo>)>,
    Option<(u64, u64)>,
);

/// Parquet both ways per value distribution and codec, then the peak RSS of converting the
/// normal-valued, zstd-compressed Parquet file (pyarrow's, else ours) to `.arrow` with its
/// bound: 2 of its largest row group (uncompressed) + 64 MiB.
fn parquet_both_ways(
    file: &MappedDataset,
    dir: &std::path::Path,
    data: &dataset::BenchData,
    group_rows: usize,
) -> Result<ParquetFigures> {
    // Whole processes twice (once on a tiny dataset, where they only check the rows).
    let process_runs = if data.value_bytes < 16 << 20 { 1 } else { 2 };
    let mut parquet = Vec::new();
    for variant in parquet_io::variants(file, dir)? {
        let codecs = parquet_io::measure(&variant, dir, group_rows, process_runs)?;
        parquet.push((variant.label, codecs));
    }
    let theirs = dir.join("normal-zstd1.parquet");
    let source = if theirs.exists() {
        theirs
    } else {
        dir.join("normal-zstd1-ours.parquet")
    };
    let peak = parquet_io::convert_peak_rss(&source, &dir.join("peak.arrow"))?;
    let group = parquet_io::largest_row_group(&source)?;
    Ok((parquet, peak.map(|p| (p, 2 * group + (64 << 20)))))
}

/// The file whose bench section the report replaces, and its text; an error when it has
/// no such section.
fn read_readme(path: Option<&PathBuf>) -> Result<Option<(&PathBuf, String)>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)?;
    if report::replace_section(&text, "").is_none() {
        return Err(format!(
            "{} has no {} … {} section",
            path.display(),
            report::BEGIN,
            report::END
        )
        .into());
    }
    Ok(Some((path, text)))
}

fn run(args: Args) -> Result<()> {
    if !(args.scale.is_finite() && args.scale > 0.0) {
        return Err(format!("--scale must be a positive number, not {}", args.scale).into());
    }
    let readme = read_readme(args.readme.as_ref())?;
    let load = report::load_average();
    let dir = match &args.dir {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };

    let bar = ProgressBar::new(0).with_style(ProgressStyle::with_template(
        "generating the dataset [{bar:30}] {pos}/{len} documents",
    )?);
    let mut data = dataset::generate(dir.path(), args.scale, &bar)?;
    bar.finish_and_clear();
    let step = ProgressBar::new_spinner()
        .with_style(ProgressStyle::with_template("{spinner} {msg} ({elapsed})")?);
    step.enable_steady_tick(Duration::from_millis(200));

    step.set_message("write, open, views, scan");
    let file = MappedDataset::open(&data.path)?;
    let storage = storage::measure(&data, dir.path(), &file, args.scale)?;
    data.chunks = Vec::new();
    step.set_message("Parquet export");
    let group_rows = export::group_rows(data.docs, data.value_bytes);
    let export = export::measure(&file, group_rows)?;
    step.set_message("Parquet both ways, normal and low-entropy values; peak memory");
    let (parquet, peak_rss) = parquet_both_ways(&file, dir.path(), &data, group_rows)?;
    step.set_message("pooling");
    let pooling = pool::measure(&file)?;
    step.set_message("loader batches");
    let batches = batches::measure(&file)?;
    step.set_message("pyarrow and numpy");
    let python = python::run(&data.path, dir.path(), group_rows);
    step.finish_and_clear();

    let table = table::render(&rows::rows(&rows::Measured {
        data: &data,
        storage: &storage,
        export: &export,
        parquet: &parquet,
        peak_rss,
        pooling: &pooling,
        batches: &batches,
        python: &python,
    }));
    let body = report::body(
        &report::Context {
            scale: args.scale,
            data: &data,
            batches: file.batches().len(),
            group_rows,
            python: python
                .as_ref()
                .map(|p| p.versions.clone())
                .map_err(Clone::clone),
            load,
        },
        &table,
    );
    print!("{body}");
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.out, format!("# lodtensor-bench\n\n{body}"))?;
    if let Some((path, text)) = readme {
        let updated = report::replace_section(&text, &body).expect("markers checked above");
        std::fs::write(path, updated)?;
    }
    drop(file);
    dir.close()?;
    Ok(())
}
