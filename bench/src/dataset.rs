//! The standard benchmark dataset: seeded synthetic documents of uniformly 1–30 sentences
//! of uniformly 1–120 tokens, each token an `f32[64]` (two levels), about 1 GiB of values
//! at scale 1, generated in memory and written once as the file every measurement reads.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Dataset, Result};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

/// The seed of every benchmark dataset.
const SEED: u64 = 42;

/// Documents generated per in-memory dataset (about 48 MB of values).
const CHUNK: usize = 200;

/// The generated documents, in memory, and the file written from them.
pub struct BenchData {
    /// The documents, in chunks of [`CHUNK`], as generated (what the write measurement
    /// writes again).
    pub chunks: Vec<Dataset>,
    /// The file written from `chunks`.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub file_bytes: u64,
    /// Documents (rows).
    pub docs: usize,
    /// Sentences (level-1 sequences).
    pub sentences: usize,
    /// Tokens (elements).
    pub tokens: usize,
    /// Bytes of the tokens' values.
    pub value_bytes: u64,
}

/// Generates `scale` × 1 GiB of values and writes them to `dir/documents.arrow`.
///
/// # Errors
/// Writing the file fails.
pub fn generate(dir: &Path, scale: f64, bar: &ProgressBar) -> Result<BenchData> {
    let shape = Documents::default();
    let docs = shape.docs_for_bytes((scale * (1u64 << 30) as f64) as u64);
    bar.set_length(docs as u64);
    let mut rng = SplitMix64::new(SEED);
    let mut chunks = Vec::new();
    let mut done = 0;
    while done < docs {
        let n = CHUNK.min(docs - done);
        chunks.push(shape.generate(&mut rng, n)?);
        done += n;
        bar.set_position(done as u64);
    }
    let path = dir.join("documents.arrow");
    let mut writer = DatasetWriter::create(&path, WriteOptions::default())?;
    let (mut sentences, mut tokens) = (0, 0);
    for chunk in &chunks {
        writer.write(chunk)?;
        let t = chunk.column("tokens")?;
        sentences += t.lod().num_sequences(1)?;
        tokens += t.elements().len();
    }
    let summary = writer.finish()?;
    Ok(BenchData {
        chunks,
        path,
        file_bytes: summary.bytes,
        docs,
        sentences,
        tokens,
        value_bytes: (tokens * shape.dim * 4) as u64,
    })
}
