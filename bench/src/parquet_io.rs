//! Parquet both ways on files, per value distribution and codec: our export (one thread and
//! every core) and import against pyarrow's `write_table` and `read_table` in the same run,
//! and whole `lodtensor convert` processes against a Python process doing the same with
//! pyarrow. The values of the standard dataset are replaced by normal ones (incompressible,
//! like real embeddings) and by quantized ones (low entropy), under the same LoD.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::Float32Array;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::io::parquet::{
    Compression, ParquetReadOptions, ParquetWriteOptions, RowGroupSize, read_parquet, write_parquet,
};
use lodtensor::rng::SplitMix64;
use lodtensor::{Column, Dataset, LodTensor, Values};
use serde_json::Value;

use crate::Result;
use crate::measure::{Samples, alternate, repeat};
use crate::python::{SCRIPT, interpreter, run_script};

/// The codecs: pyarrow's key, the name shown, ours.
pub const CODECS: [(&str, &str, Compression); 3] = [
    ("none", "none", Compression::None),
    ("snappy", "snappy", Compression::Snappy),
    ("zstd1", "zstd(1)", Compression::Zstd(1)),
];

/// A copy of the dataset with other values.
pub struct Variant {
    /// `normal` or `low-entropy`.
    pub label: &'static str,
    /// The `.arrow` file.
    pub path: PathBuf,
}

/// The figures of one distribution and codec.
pub struct CodecIo {
    pub label: &'static str,
    /// `write_parquet` to a file, one thread and every core.
    pub export_one: Samples,
    pub export_all: Samples,
    /// `read_parquet` of pyarrow's file.
    pub import: Samples,
    /// `lodtensor convert` .parquet -> .arrow and the Python process doing it.
    pub convert_import: Option<(Samples, Samples)>,
    /// `lodtensor convert` .arrow -> .parquet and the Python process doing it.
    pub convert_export: Option<(Samples, Samples)>,
    /// pyarrow's `write_table` and `read_table`, or why there are none.
    pub pyarrow: std::result::Result<(f64, f64), String>,
}

/// Writes `dir/normal.arrow` and `dir/low-entropy.arrow`: the batches of `file` with normal
/// values (Box–Muller, seeded) and with those values quantized to steps of 0.25 in [-2, 2].
///
/// # Errors
/// Writing fails.
pub fn variants(file: &MappedDataset, dir: &Path) -> Result<Vec<Variant>> {
    let mut out = Vec::new();
    for (label, quantized) in [("normal", false), ("low-entropy", true)] {
        let path = dir.join(format!("{label}.arrow"));
        let mut rng = SplitMix64::new(7);
        let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
        for batch in file.batches() {
            let columns = batch
                .columns()
                .iter()
                .map(|c| {
                    let t = c.tensor().expect("the bench's columns are tensors");
                    let n = t.values().items().len();
                    let items: Vec<f32> = (0..n)
                        .map(|_| {
                            let x = normal(&mut rng);
                            if quantized {
                                ((x * 4.0).round() / 4.0).clamp(-2.0, 2.0)
                            } else {
                                x
                            }
                        })
                        .collect();
                    let values = Values::try_new(
                        Arc::new(Float32Array::from(items)),
                        t.element_shape().to_vec(),
                    )?;
                    Column::new(c.name(), LodTensor::try_new(t.lod().clone(), values)?)
                        .with_level_names(c.level_names().to_vec())
                })
                .collect::<lodtensor::Result<Vec<_>>>()?;
            writer.write(&Dataset::try_new(columns)?)?;
        }
        writer.finish()?;
        out.push(Variant { label, path });
    }
    Ok(out)
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SplitMix64) -> f32 {
    let u1 = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

/// The `lodtensor` binary next to this one, when it was built.
pub fn lodtensor_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.with_file_name(format!("lodtensor{}", std::env::consts::EXE_SUFFIX));
    bin.exists().then_some(bin)
}

/// Measures `variant` with `group_rows` documents per row group, in `dir`; each whole
/// process runs `process_runs` times.
///
/// # Errors
/// A write or read of ours fails, or a `convert` process does.
pub fn measure(
    variant: &Variant,
    dir: &Path,
    group_rows: usize,
    process_runs: usize,
) -> Result<Vec<CodecIo>> {
    let stem = variant.label;
    let pyarrow = pyarrow_both_ways(&variant.path, dir, group_rows);
    let mut out = Vec::new();
    for (key, label, codec) in CODECS {
        let written = dir.join(format!("{stem}-{key}-ours.parquet"));
        let options = ParquetWriteOptions::default()
            .with_compression(codec)
            .with_row_group_size(RowGroupSize::Rows(group_rows));
        let file = MappedDataset::open(&variant.path)?;
        let export = |threads: usize| {
            let options = options.clone().with_threads(threads);
            let (file, written) = (&file, &written);
            move || write_parquet(written, file.batches(), &options)
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (export_one, export_all) = alternate(3, export(1), export(cores))?;
        // pyarrow's file when there is one (as users have them), else ours.
        let theirs = dir.join(format!("{stem}-{key}.parquet"));
        let source = if theirs.exists() {
            theirs
        } else {
            written.clone()
        };
        let read = ParquetReadOptions::default();
        let import = repeat(3, || read_parquet(&source, &read).map(drop))?;
        let converts = lodtensor_binary().filter(|_| pyarrow.is_ok()).map(|bin| {
            let arrow_out = dir.join("converted.arrow");
            let parquet_out = dir.join("converted.parquet");
            let ours_in = [
                bin.as_os_str(),
                "convert".as_ref(),
                source.as_os_str(),
                arrow_out.as_os_str(),
            ];
            let py_in = python_convert(&source, &arrow_out, key);
            let ours_out = [
                bin.as_os_str().to_owned(),
                "convert".into(),
                variant.path.clone().into_os_string(),
                parquet_out.clone().into_os_string(),
                "--compression".into(),
                key.trim_end_matches('1').into(),
            ];
            let py_out = python_convert(&variant.path, &parquet_out, key);
            let import = alternate(process_runs, || run(&ours_in), || run(&py_in))?;
            let export = alternate(process_runs, || run(&ours_out), || run(&py_out))?;
            Ok::<_, Box<dyn std::error::Error>>((import, export))
        });
        let (convert_import, convert_export) = match converts.transpose()? {
            Some((i, e)) => (Some(i), Some(e)),
            None => (None, None),
        };
        out.push(CodecIo {
            label,
            export_one,
            export_all,
            import,
            convert_import,
            convert_export,
            pyarrow: pyarrow.as_ref().map_err(Clone::clone).and_then(|figures| {
                let f = &figures[key];
                match (f["write"].as_f64(), f["read"].as_f64()) {
                    (Some(w), Some(r)) => Ok((w, r)),
                    _ => Err(format!("output: no figures for {key}")),
                }
            }),
        });
    }
    Ok(out)
}

/// The Python process converting `source` into `target` with pyarrow.
fn python_convert(source: &Path, target: &Path, codec: &str) -> [std::ffi::OsString; 6] {
    [
        interpreter().into_os_string(),
        SCRIPT.into(),
        "convert".into(),
        source.as_os_str().to_owned(),
        target.as_os_str().to_owned(),
        codec.into(),
    ]
}

/// Runs a command to its end; an error when it fails.
fn run(command: &[impl AsRef<std::ffi::OsStr>]) -> Result<()> {
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        let words: Vec<_> = command
            .iter()
            .map(|w| w.as_ref().to_string_lossy().into_owned())
            .collect();
        return Err(format!("{} failed ({status})", words.join(" ")).into());
    }
    Ok(())
}

/// pyarrow's figures per codec, writing `dir/<stem>-<codec>.parquet` on the way.
fn pyarrow_both_ways(
    arrow: &Path,
    dir: &Path,
    group_rows: usize,
) -> std::result::Result<Value, String> {
    let group_rows = group_rows.to_string();
    run_script(&[
        "parquet".as_ref(),
        arrow.as_os_str(),
        dir.as_os_str(),
        group_rows.as_ref(),
    ])
}

/// The uncompressed bytes of the largest row group of the Parquet file at `path`.
///
/// # Errors
/// The file cannot be read as Parquet.
pub fn largest_row_group(path: &Path) -> Result<u64> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(path)?)?;
    let groups = reader.metadata().row_groups();
    Ok(groups
        .iter()
        .map(|g| g.total_byte_size().max(0) as u64)
        .max()
        .unwrap_or(0))
}

/// The peak resident memory of `lodtensor convert <parquet> <arrow>`, in bytes: the
/// process's `VmHWM`, polled until it exits (Linux).
///
/// # Errors
/// The process fails or cannot be watched.
pub fn convert_peak_rss(parquet: &Path, arrow: &Path) -> Result<Option<u64>> {
    let Some(bin) = lodtensor_binary() else {
        return Ok(None);
    };
    let mut child = Command::new(bin)
        .arg("convert")
        .arg(parquet)
        .arg(arrow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let status = format!("/proc/{}/status", child.id());
    let mut peak = None;
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(Some(kb * 1024));
        }
        if let Some(exit) = child.try_wait()? {
            if !exit.success() {
                return Err(format!("convert of {} failed ({exit})", parquet.display()).into());
            }
            return Ok(peak);
        }
        if started.elapsed() > Duration::from_secs(600) {
            child.kill()?;
            return Err("convert took over 10 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
