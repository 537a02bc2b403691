//! Which rows the report has: the machine's limits, then each of our operations next to its
//! baseline and the target.

use crate::batches::{Batches, TOKEN_BUDGET};
use crate::dataset::BenchData;
use crate::export::CodecRuns;
use crate::measure::Samples;
use crate::parquet_io::CodecIo;
use crate::pool::Pooling;
use crate::python::PyFigures;
use crate::storage::Storage;
use crate::table::{Figure, Ratio, Row, Target};

/// Everything measured in one run.
pub struct Measured<'a> {
    /// The dataset.
    pub data: &'a BenchData,
    /// Write, open, views, scan.
    pub storage: &'a Storage,
    /// Parquet export per codec, into memory.
    pub export: &'a [CodecRuns],
    /// Parquet both ways on files, per value distribution and codec.
    pub parquet: &'a [(&'static str, Vec<CodecIo>)],
    /// The peak RSS of `convert` of a Parquet file to `.arrow`, and the bound it should
    /// keep (2 of its largest row group, uncompressed, + 64 MiB).
    pub peak_rss: Option<(u64, u64)>,
    /// Pooling.
    pub pooling: &'a Pooling,
    /// Loader batches.
    pub batches: &'a Batches,
    /// pyarrow's and numpy's figures, or why there are none.
    pub python: &'a Result<PyFigures, String>,
}

/// The rows of the report, in order.
pub fn rows(m: &Measured<'_>) -> Vec<Row> {
    let mut rows = storage_rows(m);
    rows.extend(view_rows(m));
    rows.extend(export_rows(m));
    rows.extend(parquet_rows(m));
    rows.extend(compute_rows(m));
    rows
}

/// The machine's limits and the IPC writer.
fn storage_rows(m: &Measured<'_>) -> Vec<Row> {
    let (s, data) = (m.storage, m.data);
    let values =
        |samples: &crate::measure::Samples| Figure::gb_per_s(data.value_bytes, samples.best());
    let py = |f: fn(&PyFigures) -> f64| m.python.as_ref().map(f).map_err(Clone::clone);
    let memcpy = values(&m.batches.memcpy);
    let raw_write = values(&s.raw_write);
    let raw_scan = values(&s.raw_scan);
    let write = Figure::gb_per_s(data.file_bytes, s.write.best());
    let cache_ours = Figure::gb_per_s(data.file_bytes, s.cache_write.0.best());
    let cache_plain = values(&s.cache_write.1);
    vec![
        Row::alone("machine: memcpy of the values in 1 MiB pieces", memcpy),
        Row::alone(
            format!(
                "machine: plain `write` of the values to a new file in the page cache ({})",
                s.cache_dir
            ),
            cache_plain,
        ),
        Row::alone(
            "machine: plain `write` of the values to a new file on the disk + `fsync`",
            raw_write,
        ),
        Row::alone("machine: raw sum of the mapped `f32` values", raw_scan),
        Row::compared(
            format!(
                "write, `DatasetWriter`, into the page cache ({})",
                s.cache_dir
            ),
            cache_ours,
            "plain `write` into the page cache",
            Ok(cache_plain),
            Ratio::Percent,
        )
        .with_target(Target::RatioAtLeast(0.9)),
        Row::compared(
            "write, `DatasetWriter` to the disk (atomic: `fsync` + rename)",
            write,
            "plain `write` + `fsync`",
            Ok(raw_write),
            Ratio::Percent,
        ),
        Row::compared(
            "write, `DatasetWriter` to the disk (atomic: `fsync` + rename)",
            write,
            "pyarrow `ipc.new_file` + `fsync`",
            py(|p| p.write_ipc).map(|t| Figure::gb_per_s(data.file_bytes, t)),
            Ratio::Times,
        ),
    ]
}

/// Open, views and the full scan.
fn view_rows(m: &Measured<'_>) -> Vec<Row> {
    let (s, data) = (m.storage, m.data);
    let py = |f: fn(&PyFigures) -> f64| m.python.as_ref().map(f).map_err(Clone::clone);
    let raw_scan = Figure::gb_per_s(data.value_bytes, s.raw_scan.best());
    let open = Figure::ms(s.open.best());
    let per_lookup = |samples: &Samples| Figure::ns(samples.best() / s.lookups as f64);
    let get = per_lookup(&s.get);
    vec![
        Row::compared(
            "open with validation, `MappedDataset::open`",
            open,
            "arrow-rs `FileDecoder`, validated",
            Ok(Figure::ms(s.arrow_open.best())),
            Ratio::Times,
        )
        .with_target(Target::RatioAtLeast(1.0)),
        Row::compared(
            "open with validation, `MappedDataset::open`",
            open,
            "pyarrow `memory_map` + `open_file` + `read_all`",
            py(|p| p.open).map(Figure::ms),
            Ratio::Times,
        )
        .with_target(Target::RatioAtLeast(2.0)),
        Row::compared(
            "random sentence view, `Sequences::get`",
            get,
            "raw offset arithmetic",
            Ok(per_lookup(&s.raw_get)),
            Ratio::Times,
        )
        .with_target(Target::AtMost(Figure::ns(5e-9))),
        Row::compared(
            "random sentence view, `Sequences::get`",
            get,
            "pyarrow offsets + numpy slice",
            py(|p| p.view).map(Figure::ns),
            Ratio::Times,
        ),
        Row::alone(
            "random sentence view, `LodTensor::slice_sequence`",
            per_lookup(&s.slice),
        ),
        Row::compared(
            "full scan, every sentence through `Sequences::get`",
            Figure::gb_per_s(data.value_bytes, s.scan.best()),
            "raw sum of the mapped values",
            Ok(raw_scan),
            Ratio::Percent,
        )
        .with_target(Target::RatioAtLeast(0.9)),
    ]
}

/// Parquet export into memory, per codec and thread count.
fn export_rows(m: &Measured<'_>) -> Vec<Row> {
    let data = m.data;
    let mut rows = Vec::new();
    for runs in m.export {
        let codec = runs.label;
        let pyarrow = m
            .python
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|p| p.parquet.get(runs.key).ok_or_else(|| format!("no {codec}")))
            .map(|&t| Figure::mb_per_s(data.value_bytes, t));
        rows.extend(export_pair(
            &format!("Parquet export, {codec}"),
            [
                ("1 thread", &runs.one_thread),
                ("2 threads", &runs.two_threads),
            ],
            data.value_bytes,
            "pyarrow `pq.write_table`",
            pyarrow,
        ));
    }
    rows
}

/// The rows of one export on one thread and on several: MB/s of `bytes` against pyarrow's
/// `theirs`, targets 1× and 1.5×.
fn export_pair(
    title: &str,
    runs: [(&str, &Samples); 2],
    bytes: u64,
    theirs: &str,
    pyarrow: Result<Figure, String>,
) -> [Row; 2] {
    let [one, many] = runs;
    [(one, 1.0), (many, 1.5)].map(|((threads, samples), target)| {
        Row::compared(
            format!("{title}, {threads}"),
            Figure::mb_per_s(bytes, samples.best()),
            theirs,
            pyarrow.clone(),
            Ratio::Times,
        )
        .with_target(Target::RatioAtLeast(target))
    })
}

/// Pooling and loader batches.
fn compute_rows(m: &Measured<'_>) -> Vec<Row> {
    let data = m.data;
    let py = |f: fn(&PyFigures) -> f64| m.python.as_ref().map(f).map_err(Clone::clone);
    let mut rows = Vec::new();
    let tokens =
        |samples: &crate::measure::Samples| Figure::mtokens_per_s(data.tokens, samples.best());
    type Numpy = fn(&PyFigures) -> f64;
    let pooling: [(_, _, _, Numpy); 2] = [
        ("sum", &m.pooling.sum, "numpy `add.reduceat`", |p| {
            p.pool_sum
        }),
        (
            "mean",
            &m.pooling.mean,
            "numpy `add.reduceat` / lengths",
            |p| p.pool_mean,
        ),
    ];
    for (kind, samples, numpy, figure) in pooling {
        rows.push(
            Row::compared(
                format!("{kind}-pool of every sentence, `sequence_pool`"),
                Figure::ms(samples.best()),
                numpy,
                py(figure).map(Figure::ms),
                Ratio::Times,
            )
            .with_target(Target::RatioAtLeast(10.0)),
        );
    }
    rows.extend([
        Row::alone(
            format!("{TOKEN_BUDGET}-token batches, `Loader`, in file order (views)"),
            tokens(&m.batches.in_order),
        )
        .with_target(Target::AtLeast(Figure::mtokens_per_s(100_000_000, 1.0))),
        Row::compared(
            format!("{TOKEN_BUDGET}-token batches, `Loader`, shuffled (gathered)"),
            tokens(&m.batches.shuffled),
            "memcpy of the same bytes in 1 MiB pieces",
            Ok(tokens(&m.batches.memcpy)),
            Ratio::Percent,
        )
        .with_target(Target::RatioAtLeast(0.8)),
    ]);
    rows
}

/// Parquet both ways on files, per value distribution and codec, and the peak memory of a
/// whole-file import.
fn parquet_rows(m: &Measured<'_>) -> Vec<Row> {
    let data = m.data;
    let rate = |samples: &Samples| Figure::mb_per_s(data.value_bytes, samples.best());
    let mut rows = Vec::new();
    for (values, codecs) in m.parquet {
        for c in codecs {
            let name = format!("{values} values, {}", c.label);
            let pyarrow = |f: fn(&(f64, f64)) -> f64| {
                c.pyarrow
                    .as_ref()
                    .map(|p| Figure::mb_per_s(data.value_bytes, f(p)))
                    .map_err(Clone::clone)
            };
            rows.extend(export_pair(
                &format!("Parquet export to a file, {name}"),
                [("1 thread", &c.export_one), ("every core", &c.export_all)],
                data.value_bytes,
                "pyarrow `pq.write_table` to a file",
                pyarrow(|p| p.0),
            ));
            rows.push(
                Row::compared(
                    format!("Parquet import, `read_parquet`, {name}"),
                    rate(&c.import),
                    "pyarrow `pq.read_table`",
                    pyarrow(|p| p.1),
                    Ratio::Times,
                )
                .with_target(Target::RatioAtLeast(1.0)),
            );
            let process = |runs: &Option<(Samples, Samples)>, what: &str, python: &str| {
                let (ours, theirs) = match runs {
                    Some((ours, theirs)) => (ours.best(), Ok(rate(theirs))),
                    None => (
                        f64::NAN,
                        Err("no `lodtensor` binary or no pyarrow".to_owned()),
                    ),
                };
                Row::compared(
                    format!("`lodtensor convert` {what}, whole process, {name}"),
                    Figure::mb_per_s(data.value_bytes, ours),
                    python,
                    theirs,
                    Ratio::Times,
                )
                .with_target(Target::RatioAtLeast(1.0))
            };
            rows.push(process(
                &c.convert_import,
                ".parquet → .arrow",
                "python: `read_table`, `ipc.new_file`, fsync",
            ));
            rows.push(process(
                &c.convert_export,
                ".arrow → .parquet",
                "python: `read_all`, `write_table`, fsync",
            ));
        }
    }
    if let Some((peak, bound)) = m.peak_rss {
        rows.push(
            Row::alone(
                "peak RSS of `lodtensor convert` .parquet → .arrow (normal, zstd(1))",
                Figure::mib(peak),
            )
            .with_target(Target::AtMost(Figure::mib(bound))),
        );
    }
    rows
}
