//! Runs `examples/python_training_loop.py` on a dataset and a loader's plan, and checks that
//! Python gets the same batches (rows, tokens, sums) as the Rust loader. Needs a Python with
//! numpy and pyarrow: `LODTENSOR_PYTHON`, or the project's `.venv`; skipped otherwise.

use std::path::Path;

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::loader::Loader;
use lodtensor::{rng::SplitMix64, synthetic::Documents};
use serde_json::Value;

fn run(python: &Path, args: &[&Path]) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/python_training_loop.py");
    crate::common::run_script(python, &script, args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn python_gets_the_same_batches() {
    let Some(python) = crate::common::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docs.arrow");
    let docs = Documents {
        dim: 4,
        ..Documents::default()
    };
    let mut rng = SplitMix64::new(11);
    let mut writer =
        DatasetWriter::create(&path, WriteOptions::default().with_batch_bytes(100_000)).unwrap();
    for _ in 0..6 {
        writer.write(&docs.generate(&mut rng, 5).unwrap()).unwrap();
    }
    writer.finish().unwrap();
    let file = MappedDataset::open(&path).unwrap();
    assert!(file.batches().len() > 1);

    // In file order: every batch of 4 documents inside one record batch is a view in
    // Python too, with nothing allocated by pyarrow.
    let lines = run(&python, &[&path]);
    assert_eq!(lines.len(), file.num_rows().div_ceil(4));
    assert!(
        lines
            .iter()
            .filter(|l| l["view"] == true)
            .all(|l| l["allocated"] == 0)
    );

    // Shuffled under a token budget: the rows, tokens and sums of the Rust loader.
    let mut loader = Loader::builder(&file)
        .with_token_budget(4096)
        .with_shuffle(3)
        .build()
        .unwrap();
    loader.set_epoch(2);
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, loader.plan(2).to_json()).unwrap();
    let lines = run(&python, &[&path, &plan_path]);
    let mut n = 0;
    while let Some(b) = loader.next_batch().unwrap() {
        let line = &lines[n];
        let rows: Vec<usize> = line["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(rows, b.samples());
        let tokens = b.data().column("tokens").unwrap();
        assert_eq!(line["tokens"].as_u64().unwrap() as usize, b.tokens());
        let sum: f64 = tokens
            .typed_values::<Float32Type>()
            .unwrap()
            .iter()
            .map(|&v| f64::from(v))
            .sum();
        let py = line["sum"].as_f64().unwrap();
        assert!((sum - py).abs() <= 1e-6 * sum.abs().max(1.0), "{sum} {py}");
        let labels: i64 = b
            .data()
            .column("label")
            .unwrap()
            .typed_values::<Int64Type>()
            .unwrap()
            .iter()
            .sum();
        assert_eq!(line["labels"].as_i64().unwrap(), labels);
        n += 1;
    }
    assert_eq!(n, lines.len());
}
