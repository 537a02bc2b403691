//! `lodtensor demo`: the main job on the built-in synthetic dataset.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use arrow_array::types::Float32Type;
use indicatif::{ProgressBar, ProgressStyle};
use lodtensor::Result;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::ops::sequence_expand_view;
use lodtensor::synthetic::{Documents, SplitMix64};

use crate::draw::draw;

/// Arguments of `lodtensor demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Directory for the files (default: a temporary directory, removed afterwards).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Number of documents.
    #[arg(long, default_value_t = 2000)]
    docs: usize,
    /// Seed of the synthetic data.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Documents generated and written per step.
const CHUNK: usize = 100;

pub fn run(args: Args) -> Result<()> {
    let temp;
    let dir = match &args.out {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let out = &mut std::io::stdout().lock();
    let path = dir.join("documents.arrow");

    // 1. Generate and write, streaming chunk by chunk.
    let shape = Documents::default();
    let mut rng = SplitMix64::new(args.seed);
    let bar = ProgressBar::new(args.docs as u64).with_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} documents")
            .expect("a valid template"),
    );
    bar.set_message("writing");
    let started = Instant::now();
    let mut generating = std::time::Duration::ZERO;
    let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
    let mut written = 0;
    while written < args.docs {
        let n = CHUNK.min(args.docs - written);
        let t = Instant::now();
        let chunk = shape.generate(&mut rng, n)?;
        generating += t.elapsed();
        writer.write(&chunk)?;
        written += n;
        bar.set_position(written as u64);
    }
    let summary = writer.finish()?;
    bar.finish_and_clear();
    let writing = started.elapsed() - generating;
    writeln!(
        out,
        "wrote {} documents to {} in {} batches: {:.1} MB in {:.0} ms ({:.0} MB/s, generation excluded, fsync included)",
        summary.rows,
        path.display(),
        summary.batches,
        summary.bytes as f64 / 1e6,
        writing.as_secs_f64() * 1e3,
        summary.bytes as f64 / 1e6 / writing.as_secs_f64()
    )?;

    // 2. Reopen, mapped and validated.
    let t = Instant::now();
    let file = MappedDataset::open(&path)?;
    let open = t.elapsed();
    let tokens: usize = file
        .batches()
        .iter()
        .map(|b| b.column("tokens").map(|t| t.elements().len()))
        .sum::<Result<usize>>()?;
    let sentences: usize = file
        .batches()
        .iter()
        .map(|b| b.column("tokens").and_then(|t| t.lod().num_sequences(1)))
        .sum::<Result<usize>>()?;
    writeln!(
        out,
        "opened it mapped in {:.2} ms (every offset validated): {} documents, {sentences} sentences, {tokens} tokens of f32[64]",
        open.as_secs_f64() * 1e3,
        file.num_rows()
    )?;

    // 3. Draw a sample the way the reference documents do.
    let sample = file.sample(0)?;
    let doc = sample.column("tokens")?;
    writeln!(out, "\ndocument 0 (one | per token):")?;
    let picture = draw(doc.lod(), doc.num_rows(), &|_| "|".to_owned(), 100);
    write!(out, "{picture}")?;

    // 4. Random sentence views: two offsets read, a slice of the mapping, no value touched.
    let sentences_of: Vec<_> = file
        .batches()
        .iter()
        .map(|b| b.column("tokens")?.sequences::<Float32Type>(1))
        .collect::<Result<_>>()?;
    let picks: Vec<(usize, usize)> = {
        let mut rng = SplitMix64::new(1);
        (0..4096)
            .map(|_| {
                let b = rng.range(0, sentences_of.len() - 1);
                (b, rng.range(0, sentences_of[b].len() - 1))
            })
            .collect()
    };
    let lookups = 1 << 22;
    let t = Instant::now();
    let mut items = 0usize;
    for i in 0..lookups {
        let (b, j) = picks[i & 4095];
        items += sentences_of[b].get(j).map_or(0, <[f32]>::len);
    }
    let per_view = t.elapsed().as_secs_f64() * 1e9 / lookups as f64;
    writeln!(
        out,
        "\n{lookups} random sentence views: {per_view:.1} ns each (mean length {:.1} tokens)",
        items as f64 / 64.0 / lookups as f64
    )?;

    // 5. Slices: the <1,j>-slice of a sentence, a branch, a row range across batches.
    let sentence = file.slice_sequence("tokens", 1, sentences / 2)?;
    let values: &[f32] = sentence.typed_values::<Float32Type>()?;
    let inside = file
        .as_bytes()
        .as_ptr_range()
        .contains(&(values.as_ptr() as *const u8));
    writeln!(
        out,
        "sentence {} of the file: {} tokens, shape {:?}, values inside the mapping: {inside}",
        sentences / 2,
        sentence.elements().len(),
        sentence.shape()
    )?;
    let branch = sample.column("tokens")?.branch(&[0, 0])?;
    writeln!(
        out,
        "branch <0,0> of document 0: {} tokens",
        branch.elements().len()
    )?;
    let rows = file.rows(0..file.num_rows())?;
    writeln!(
        out,
        "rows 0..{} span {} batch views",
        file.num_rows(),
        rows.len()
    )?;

    // 6. A full scan of the mapped values.
    let t = Instant::now();
    let mut sum = 0f64;
    for b in file.batches() {
        let v = b.column("tokens")?.typed_values::<Float32Type>()?;
        sum += v.iter().map(|&x| x as f64).sum::<f64>();
    }
    let scan = t.elapsed().as_secs_f64();
    writeln!(
        out,
        "full scan of {:.1} MB of values: {:.0} ms ({:.0} MB/s), sum {sum:.3}",
        (tokens * 64 * 4) as f64 / 1e6,
        scan * 1e3,
        (tokens * 64 * 4) as f64 / 1e6 / scan
    )?;

    // 7. Expand: each document's label repeated for each of its sentences, as an Arrow
    // list view over the label buffer (no copy), then materialised.
    let batch = &file.batches()[0];
    let (labels, tokens0) = (batch.column("label")?, batch.column("tokens")?);
    let view = sequence_expand_view(labels, tokens0, 0)?;
    let per_sentence = view.materialize()?;
    writeln!(
        out,
        "sequence_expand of the labels over sentences (batch 0): {} documents -> {} sentence labels",
        labels.num_rows(),
        per_sentence.num_rows()
    )?;

    // 8. Export to Parquet (the Arrow schema embedded: LoD, dtype, shape survive).
    #[cfg(feature = "parquet")]
    {
        use lodtensor::io::parquet::{ParquetWriteOptions, write_parquet};
        let parquet = dir.join("documents.parquet");
        let t = Instant::now();
        write_parquet(&parquet, file.batches(), &ParquetWriteOptions::default())?;
        let took = t.elapsed().as_secs_f64();
        let size = std::fs::metadata(&parquet)?.len();
        writeln!(
            out,
            "exported {} (snappy): {:.1} MB in {:.0} ms ({:.0} MB/s of values)",
            parquet.display(),
            size as f64 / 1e6,
            took * 1e3,
            (tokens * 64 * 4) as f64 / 1e6 / took
        )?;
    }
    Ok(())
}
