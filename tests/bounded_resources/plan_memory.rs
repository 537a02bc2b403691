//! A packed epoch's plan keeps a few bytes a document (the documents' order and each
//! window's first document in 32 bits where they fit, each window's token count in 32 bits,
//! no table of costs when every window costs its length), a mixture's a few a sample (each
//! source's draws as bare rows).

use lodtensor::loader::{Mixture, Packing};
use lodtensor::{DatasetWriter, Loader, MappedDataset, WriteOptions};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

use crate::{alone, peak_of};

/// Documents in the tests' file.
const DOCS: usize = 200_000;

/// A file of [`DOCS`] documents of 1–8 tokens (in 1–2 sentences), in the returned directory.
fn documents() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docs.arrow");
    let spec = Documents {
        sentences: (1, 2),
        tokens: (1, 4),
        dim: 1,
    };
    let mut writer = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
    let mut rng = SplitMix64::new(3);
    for _ in 0..DOCS / 10_000 {
        writer
            .write(&spec.generate(&mut rng, 10_000).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
    (dir, path)
}

#[test]
fn a_packed_plan_keeps_few_bytes_a_document() {
    alone(|| {
        let (_dir, path) = documents();
        let data = MappedDataset::open(&path).unwrap();
        let loader = Loader::builder(&data)
            .with_batch_size(8)
            .with_packing(Packing::new(16))
            .with_shuffle(5)
            .build()
            .unwrap();
        let mut plan = None;
        let peak = peak_of(|| plan = Some(loader.plan(1)));
        let windows = plan.unwrap().windows().expect("packed").len();
        // Kept: the order (4 bytes a document) and where each starts in the stream (8), and
        // per window its first document (4), its place in the epoch's order (4), its token
        // count (4) and its number in the plan (8): 12 + 20 × windows / documents, 16.7
        // here, plus the plan's batches (their descriptions, and the growth of its list of
        // windows): 19.5 measured. In 64 bits with a table of costs it was 28.2.
        let per_document = peak as f64 / DOCS as f64;
        let kept = 12.0 + 20.0 * windows as f64 / DOCS as f64;
        assert!(
            per_document <= kept + 4.0,
            "{per_document:.1} bytes a document ({peak} bytes, {windows} windows; {kept:.1} kept)"
        );
    });
}

#[test]
fn a_mixture_plan_keeps_few_bytes_a_sample() {
    alone(|| {
        let (_dir, path) = documents();
        let (a, b) = (
            MappedDataset::open(&path).unwrap(),
            MappedDataset::open(&path).unwrap(),
        );
        let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![0.7, 0.3]);
        let loader = Loader::builder(&mixture)
            .with_batch_size(8)
            .with_shuffle(5)
            .build()
            .unwrap();
        let mut plan = None;
        let peak = peak_of(|| plan = Some(loader.plan(1)));
        let samples = plan.unwrap().samples().len();
        // Kept while the plan is made: each sample's row drawn from its source's epochs
        // (4 bytes), the source's epoch order (4), the interleaved order (4), then the plan's
        // own list (8) and its batches: 27.1 measured. With each sample's source kept and
        // rows in 64 bits it was 43.1; drawn as an enum of a row or a window's pieces (32
        // bytes a sample), 59.1.
        let per_sample = peak as f64 / samples as f64;
        assert!(
            per_sample <= 32.0,
            "{per_sample:.1} bytes a sample ({peak} bytes, {samples} samples)"
        );
    });
}
