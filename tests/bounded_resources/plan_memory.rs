//! A packed epoch's plan keeps a few bytes a document: the documents' order and each
//! window's first document in 32 bits where they fit, each window's token count in 32 bits,
//! no table of costs when every window costs its length.

use lodtensor::loader::Packing;
use lodtensor::{DatasetWriter, Loader, MappedDataset, WriteOptions};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

use crate::{alone, peak_of};

/// Documents of 1–8 tokens (in 1–2 sentences), `docs` of them.
fn documents(path: &std::path::Path, docs: usize) {
    let spec = Documents {
        sentences: (1, 2),
        tokens: (1, 4),
        dim: 1,
    };
    let mut writer = DatasetWriter::create(path, WriteOptions::default()).unwrap();
    let mut rng = SplitMix64::new(3);
    for _ in 0..docs / 10_000 {
        writer
            .write(&spec.generate(&mut rng, 10_000).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn a_packed_plan_keeps_few_bytes_a_document() {
    alone(|| {
        let docs = 200_000;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.arrow");
        documents(&path, docs);
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
        let per_document = peak as f64 / docs as f64;
        let kept = 12.0 + 20.0 * windows as f64 / docs as f64;
        assert!(
            per_document <= kept + 4.0,
            "{per_document:.1} bytes a document ({peak} bytes, {windows} windows; {kept:.1} kept)"
        );
    });
}
