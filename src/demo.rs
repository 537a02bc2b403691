//! The tour of `cargo run --release -p lodtensor --example demo` and `lodtensor demo`: the built-in
//! synthetic dataset ([`crate::synthetic::demo_chunks`]) written to a directory the user
//! keeps, mapped, sliced, scanned, expanded and exported to Parquet, each step timed, ending
//! with the commands to try next on the files.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let mut out = Vec::new();
//! lodtensor::demo::run(&dir.path().join("demo"), 3, 42, &mut out, &mut |_| {})?;
//! let text = String::from_utf8(out)?;
//! assert!(text.starts_with("wrote 3 documents to "));
//! assert!(dir.path().join("demo/documents.arrow").is_file());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use arrow_array::types::Float32Type;

use crate::error::{ArgumentError, Error, Result, counted};
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::ops::sequence_expand_view;
use crate::rng::SplitMix64;
use crate::synthetic::demo_chunks;

/// The file that marks a directory as a demo's, so that a later demo may overwrite it.
pub const MARKER: &str = ".lodtensor-demo";

/// Runs the tour: `docs` documents from `seed` written to `dir/documents.arrow` (and, with
/// the `parquet` feature, exported to `dir/documents.parquet`), what each step did and took
/// written to `out`, and `written(n)` called as the documents are written (`n` so far; the
/// last call has `n == docs`).
///
/// # Errors
/// [`ArgumentError::InvalidArgument`] when `dir` is not a directory, or holds files but no
/// [`MARKER`] (a previous demo's directory is written over, nothing else); any I/O error,
/// naming its file.
pub fn run(
    dir: &Path,
    docs: usize,
    seed: u64,
    out: &mut dyn Write,
    written: &mut dyn FnMut(usize),
) -> Result<()> {
    prepare(dir)?;
    let path = dir.join("documents.arrow");
    write_documents(out, &path, docs, seed, written)?;
    let (file, totals) = open(out, &path)?;
    writeln!(out, "\ndocument 0 (one | per token):")?;
    let sample = file.sample(0)?;
    let doc = sample.column("tokens")?;
    write!(
        out,
        "{}",
        doc.lod().draw(doc.num_rows(), &|_| "|".to_owned(), 100)
    )?;
    random_views(out, &file)?;
    slices(out, &file, totals.sentences)?;
    scan(out, &file, totals.value_bytes())?;
    expand(out, &file)?;
    #[cfg(feature = "parquet")]
    export(out, &file, &dir.join("documents.parquet"), totals)?;
    next_commands_text(out, dir)?;
    Ok(())
}

/// Makes `dir` ready: created when missing, else it must be empty or a previous demo's.
fn prepare(dir: &Path) -> Result<()> {
    let refused = |why: &str| -> Result<()> {
        Err(ArgumentError::InvalidArgument {
            op: "demo",
            name: "the directory",
            found: format!("{} ({why})", dir.display()),
            expected: "a missing or empty directory, or a previous demo's".to_owned(),
        }
        .into())
    };
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| in_path(e, dir))?
        }
        Err(e) => return Err(in_path(e, dir)),
        Ok(m) if !m.is_dir() => return refused("it exists and is not a directory"),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| in_path(e, dir))?;
            if entries.next().is_some() && !dir.join(MARKER).is_file() {
                return refused(&format!(
                    "it holds files that are not a previous demo's: no {MARKER} file"
                ));
            }
        }
    }
    let marker = dir.join(MARKER);
    std::fs::write(
        &marker,
        "written by `lodtensor demo`, which may overwrite this directory\n",
    )
    .map_err(|e| in_path(e, &marker))
}

fn in_path(e: std::io::Error, path: &Path) -> Error {
    Error::from(e).in_file(path)
}

/// Generates and writes the documents, streaming chunk by chunk.
fn write_documents(
    out: &mut dyn Write,
    path: &Path,
    docs: usize,
    seed: u64,
    written: &mut dyn FnMut(usize),
) -> Result<()> {
    let started = Instant::now();
    let mut generating = Duration::ZERO;
    let mut writer = DatasetWriter::create(path, WriteOptions::default())?;
    let mut rows = 0;
    let mut chunks = demo_chunks(docs, seed);
    loop {
        let t = Instant::now();
        let Some(chunk) = chunks.next().transpose()? else {
            break;
        };
        generating += t.elapsed();
        writer.write(&chunk)?;
        rows += chunk.num_rows();
        written(rows);
    }
    let summary = writer.finish()?;
    let writing = started.elapsed() - generating;
    writeln!(
        out,
        "wrote {} documents to {} in {}: {:.1} MB in {:.0} ms ({:.0} MB/s, generation excluded, fsync included)",
        summary.rows,
        path.display(),
        counted(&summary.batches, "batch", "batches"),
        summary.bytes as f64 / 1e6,
        writing.as_secs_f64() * 1e3,
        summary.bytes as f64 / 1e6 / writing.as_secs_f64()
    )?;
    Ok(())
}

/// Sentences and tokens of the whole file.
#[derive(Clone, Copy)]
struct Totals {
    sentences: usize,
    tokens: usize,
}

impl Totals {
    /// Bytes of the `float32[64]` token values.
    fn value_bytes(self) -> f64 {
        (self.tokens * 64 * 4) as f64
    }
}

/// Reopens the file, mapped and validated, and counts what it holds.
fn open(out: &mut dyn Write, path: &Path) -> Result<(MappedDataset, Totals)> {
    let t = Instant::now();
    let file = MappedDataset::open(path)?;
    let open = t.elapsed();
    let mut totals = Totals {
        sentences: 0,
        tokens: 0,
    };
    for b in file.batches() {
        let tokens = b.column("tokens")?;
        totals.tokens += tokens.elements().len();
        totals.sentences += tokens.lod().num_sequences(1)?;
    }
    writeln!(
        out,
        "opened it mapped in {:.2} ms (every offset validated): {} documents, {} sentences, {} tokens of float32[64]",
        open.as_secs_f64() * 1e3,
        file.num_rows(),
        totals.sentences,
        totals.tokens
    )?;
    Ok((file, totals))
}

/// Random sentence views: two offsets read, a slice of the mapping, no value touched.
fn random_views(out: &mut dyn Write, file: &MappedDataset) -> Result<()> {
    let sentences_of: Vec<_> = file
        .batches()
        .iter()
        .map(|b| b.column("tokens")?.sequences::<Float32Type>(1))
        .collect::<Result<_>>()?;
    let mut rng = SplitMix64::new(1);
    let picks: Vec<(usize, usize)> = (0..4096)
        .map(|_| {
            let b = rng.range(0, sentences_of.len() - 1);
            (b, rng.range(0, sentences_of[b].len() - 1))
        })
        .collect();
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
    Ok(())
}

/// The `<1,j>`-slice of a sentence, a branch, a row range across batches.
fn slices(out: &mut dyn Write, file: &MappedDataset, sentences: usize) -> Result<()> {
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
    let branch = file.sample(0)?.column("tokens")?.branch(&[0, 0])?;
    writeln!(
        out,
        "branch <0,0> of document 0: {} tokens",
        branch.elements().len()
    )?;
    let rows = file.rows(0..file.num_rows())?;
    writeln!(
        out,
        "rows 0..{} span {}",
        file.num_rows(),
        counted(&rows.len(), "batch view", "batch views")
    )?;
    Ok(())
}

/// A full scan of the mapped values.
fn scan(out: &mut dyn Write, file: &MappedDataset, value_bytes: f64) -> Result<()> {
    let t = Instant::now();
    let mut sum = 0f64;
    for b in file.batches() {
        let v = b.column("tokens")?.typed_values::<Float32Type>()?;
        sum += v.iter().map(|&x| x as f64).sum::<f64>();
    }
    let took = t.elapsed().as_secs_f64();
    writeln!(
        out,
        "full scan of {:.1} MB of values: {:.0} ms ({:.0} MB/s), sum {sum:.3}",
        value_bytes / 1e6,
        took * 1e3,
        value_bytes / 1e6 / took
    )?;
    Ok(())
}

/// Each document's label repeated for each of its sentences, as an Arrow list view over
/// the label buffer (no copy), then materialised.
fn expand(out: &mut dyn Write, file: &MappedDataset) -> Result<()> {
    let batch = &file.batches()[0];
    let (labels, tokens) = (batch.column("label")?, batch.column("tokens")?);
    let view = sequence_expand_view(labels, tokens, 0)?;
    let per_sentence = view.materialize()?;
    writeln!(
        out,
        "sequence_expand of the labels over sentences (batch 0): {} documents -> {} sentence labels",
        labels.num_rows(),
        per_sentence.num_rows()
    )?;
    Ok(())
}

/// Exports to Parquet (the Arrow schema embedded: LoD, dtype, shape survive).
#[cfg(feature = "parquet")]
fn export(out: &mut dyn Write, file: &MappedDataset, path: &Path, totals: Totals) -> Result<()> {
    use crate::io::parquet::{ParquetWriteOptions, write_parquet};
    let t = Instant::now();
    write_parquet(path, file.batches(), &ParquetWriteOptions::default())?;
    let took = t.elapsed().as_secs_f64();
    let size = std::fs::metadata(path).map_err(|e| in_path(e, path))?.len();
    writeln!(
        out,
        "exported {} (snappy): {:.1} MB in {:.0} ms ({:.0} MB/s of values)",
        path.display(),
        size as f64 / 1e6,
        took * 1e3,
        totals.value_bytes() / 1e6 / took
    )?;
    Ok(())
}

/// The commands to try next on the files just written.
fn next_commands(dir: &Path) -> Vec<String> {
    let arrow = dir.join("documents.arrow");
    let parquet = dir.join("documents.parquet");
    let (arrow, parquet) = (arrow.display(), parquet.display());
    vec![
        format!("lodtensor info {arrow}"),
        format!("lodtensor show {arrow} --rows 0..2"),
        format!(
            "lodtensor convert {arrow} {dir}/copy.parquet --compression zstd",
            dir = dir.display()
        ),
        format!(
            "python3 -c \"import pyarrow as pa; t = pa.ipc.open_file(pa.memory_map('{arrow}')).read_all(); print(t.num_rows, t.schema)\""
        ),
        format!(
            "python3 -c \"import duckdb; print(duckdb.read_parquet('{parquet}').project('label, len(tokens) AS sentences').limit(5))\""
        ),
    ]
}

fn next_commands_text(out: &mut dyn Write, dir: &Path) -> Result<()> {
    writeln!(
        out,
        "\nthe files stay in {}; next, try (`lodtensor` is `cargo run --release --` until `cargo install --path cli`):",
        dir.display()
    )?;
    for command in next_commands(dir) {
        writeln!(out, "  {command}")?;
    }
    Ok(())
}
