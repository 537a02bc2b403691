//! Writing, opening, random sentence views and a full scan, each next to its in-process
//! baseline: a plain `write` of the values (into the page cache of a tmpfs, and to the disk
//! with `fsync`), arrow-rs's validated `FileDecoder`, raw offset arithmetic, a raw sum of
//! the mapped floats.

use std::fs::File;
use std::hint::black_box;
use std::io::Write;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Dataset, Sequences};

use crate::Result;
use crate::baseline::{Sum, arrow_open, random_pairs, sentences_and_floats};
use crate::dataset::BenchData;
use crate::measure::{Samples, alternate, repeat};

/// Random sentences looked up per timed run at scale 1 (fewer below, at least 4096).
const LOOKUPS: usize = 1 << 20;

/// The timings of the storage measurements.
pub struct Storage {
    /// Where `cache_write` wrote: `/dev/shm`, a tmpfs (page cache only, where `fsync` costs
    /// nothing), or the data directory when the machine has none.
    pub cache_dir: String,
    /// `DatasetWriter` of every document and a plain `write` of the values' bytes, in
    /// `cache_dir`.
    pub cache_write: (Samples, Samples),
    /// `DatasetWriter` of every document to the disk, atomic (fsync and rename included).
    pub write: Samples,
    /// `write` of the values' bytes to a new file on the disk, then `fsync`.
    pub raw_write: Samples,
    /// `MappedDataset::open`.
    pub open: Samples,
    /// arrow-rs's validated `FileDecoder` open.
    pub arrow_open: Samples,
    /// Random sentences looked up per run of `get`, `raw_get` and `slice`.
    pub lookups: usize,
    /// `lookups` × `Sequences::get` of a random sentence.
    pub get: Samples,
    /// `lookups` × the same sentence by raw arithmetic on arrow-rs's offsets.
    pub raw_get: Samples,
    /// `lookups` × `LodTensor::slice_sequence` of a random sentence.
    pub slice: Samples,
    /// Sum of every value, sentence by sentence through `Sequences::get`.
    pub scan: Samples,
    /// Sum of each batch's mapped `f32` slice, straight from arrow-rs's buffers.
    pub raw_scan: Samples,
}

/// Measures on `data` (mapped as `file`) at `scale`, writing its copies in `dir`.
///
/// # Errors
/// A write, open or lookup fails.
pub fn measure(data: &BenchData, dir: &Path, file: &MappedDataset, scale: f64) -> Result<Storage> {
    let lookups = ((LOOKUPS as f64 * scale.min(1.0)) as usize).max(4096);
    let shm = tempfile::tempdir_in("/dev/shm").ok();
    let cache = shm.as_ref().map_or(dir, |d| d.path());
    let cache_dir = if shm.is_some() {
        "/dev/shm"
    } else {
        "the data directory"
    }
    .to_owned();
    let cache_write = measure_write(&data.chunks, cache, Keep::OneRun)?;
    let (write, raw_write) = measure_write(&data.chunks, dir, Keep::AllRuns)?;

    let (open, arrow_open_) = alternate(
        51,
        || {
            MappedDataset::open(&data.path)
                .map(drop)
                .map_err(Into::into)
        },
        || arrow_open(&data.path).map(drop),
    )?;

    let tensors = file
        .batches()
        .iter()
        .map(|b| b.column("tokens").cloned())
        .collect::<lodtensor::Result<Vec<_>>>()?;
    let sequences = tensors
        .iter()
        .map(|t| t.sequences::<Float32Type>(1))
        .collect::<lodtensor::Result<Vec<Sequences<'_, f32>>>>()?;
    let counts: Vec<usize> = sequences.iter().map(Sequences::len).collect();
    let picks = random_pairs(&counts, 4096, 7);
    let arrow_batches = arrow_open(&data.path)?;
    let raw = sentences_and_floats(&arrow_batches);
    let (get, raw_get) = alternate(
        7,
        || {
            for i in 0..lookups {
                let (b, j) = picks[i & 4095];
                black_box(sequences[b].get(j));
            }
            Ok::<_, lodtensor::Error>(())
        },
        || {
            for i in 0..lookups {
                let (b, j) = picks[i & 4095];
                let (offsets, floats) = raw[b];
                black_box(&floats[offsets[j] as usize * 64..offsets[j + 1] as usize * 64]);
            }
            Ok(())
        },
    )?;
    let slice = repeat(5, || {
        for i in 0..lookups {
            let (b, j) = picks[i & 4095];
            black_box(tensors[b].slice_sequence(1, j)?);
        }
        Ok::<_, lodtensor::Error>(())
    })?;

    let (scan, raw_scan) = measure_scan(&sequences, &raw)?;
    Ok(Storage {
        lookups,
        cache_dir,
        cache_write,
        write,
        raw_write,
        open,
        arrow_open: arrow_open_,
        get,
        raw_get,
        slice,
        scan,
        raw_scan,
    })
}

/// A full scan summing every sentence's floats through `sequences`, alternating with the
/// same sum over `raw`, arrow-rs's mapped slices.
fn measure_scan(
    sequences: &[Sequences<'_, f32>],
    raw: &[(&[i64], &[f32])],
) -> Result<(Samples, Samples)> {
    alternate(
        5,
        || {
            let mut total = Sum::default();
            for s in sequences {
                for j in 0..s.len() {
                    total.add(s.get(j).unwrap_or_default());
                }
            }
            black_box(total.value());
            Ok::<_, lodtensor::Error>(())
        },
        || {
            let mut total = Sum::default();
            for (_, floats) in raw {
                total.add(floats);
            }
            black_box(total.value());
            Ok(())
        },
    )
    .map_err(Into::into)
}

/// Which written files stay until the last run.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// All of them: deleting one costs the next write on a disk mounted with `discard`.
    AllRuns,
    /// Only the current run's: in a tmpfs, files are memory.
    OneRun,
}

/// Our atomic write of `chunks` and a plain write + fsync of their values' bytes,
/// alternately, each run to a new file in `dir`, deleted (outside the timings) as `keep`
/// says.
fn measure_write(chunks: &[Dataset], dir: &Path, keep: Keep) -> Result<(Samples, Samples)> {
    const RUNS: usize = 5;
    let name = |kind: &str, run: usize| dir.join(format!("written-{run}.{kind}"));
    let (mut ours_run, mut plain_run) = (0, 0);
    let mut ours = || -> Result<()> {
        ours_run += 1;
        let mut writer = DatasetWriter::create(name("arrow", ours_run), WriteOptions::default())?;
        for chunk in chunks {
            writer.write(chunk)?;
        }
        writer.finish()?;
        Ok(())
    };
    let mut plain = || {
        plain_run += 1;
        let mut file = File::create(name("bin", plain_run))?;
        for chunk in chunks {
            let floats = chunk.column("tokens")?.values().items();
            let floats = floats.as_primitive::<Float32Type>();
            file.write_all(floats.values().inner().as_slice())?;
        }
        file.sync_all()?;
        Ok(())
    };
    let remove = |run: usize| -> Result<()> {
        std::fs::remove_file(name("arrow", run))?;
        std::fs::remove_file(name("bin", run))?;
        Ok(())
    };
    let (mut ours_samples, mut plain_samples) = (Vec::new(), Vec::new());
    for run in 1..=RUNS {
        let (o, p) = alternate(1, &mut ours, &mut plain)?;
        ours_samples.push(o);
        plain_samples.push(p);
        if keep == Keep::OneRun {
            remove(run)?;
        }
    }
    if keep == Keep::AllRuns {
        (1..=RUNS).try_for_each(remove)?;
    }
    Ok((
        Samples::merged(ours_samples),
        Samples::merged(plain_samples),
    ))
}
