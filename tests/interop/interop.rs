//! Round trips with pyarrow: our files read by pyarrow from a memory map, pyarrow's files
//! read by us. Needs a Python with pyarrow and numpy: `LODTENSOR_PYTHON`, or the project's
//! `.venv` that the test command creates.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{case, python};
#[cfg(feature = "compression")]
use lodtensor::IpcCompression;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
#[cfg(feature = "parquet")]
use lodtensor::io::parquet::{ParquetWriteOptions, write_parquet};
use lodtensor::{Column, DType, Dataset};
use proptest::prelude::*;
use serde_json::{Value, json};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

fn run(python: &Path, args: &[&Path]) {
    let out = Command::new(python).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Items of a tensor's elements in view, as f64 (booleans as 0 and 1), for JSON.
fn items_f64(t: &lodtensor::LodTensor) -> Vec<f64> {
    use arrow_array::types::*;
    let e = t.elements();
    let size = t.values().element_size();
    let range = e.start * size..e.end * size;
    let v = t.values();
    macro_rules! typed {
        ($t:ty) => {
            v.typed::<$t>().unwrap()[range]
                .iter()
                .map(|&x| x as f64)
                .collect()
        };
    }
    match t.dtype() {
        DType::Bool => {
            let b = v.booleans().unwrap();
            range.map(|i| f64::from(u8::from(b.value(i)))).collect()
        }
        DType::UInt8 => typed!(UInt8Type),
        DType::Int8 => typed!(Int8Type),
        DType::Int16 => typed!(Int16Type),
        DType::Int32 => typed!(Int32Type),
        DType::Int64 => typed!(Int64Type),
        DType::UInt16 => typed!(UInt16Type),
        DType::UInt32 => typed!(UInt32Type),
        DType::UInt64 => typed!(UInt64Type),
        DType::Float16 => v.typed::<Float16Type>().unwrap()[range]
            .iter()
            .map(|x| x.to_f64())
            .collect(),
        DType::Float32 => typed!(Float32Type),
        DType::Float64 => typed!(Float64Type),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Rust → file → pyarrow (memory-mapped, no allocation) with the same offsets and values,
    /// and back: pyarrow → file → Rust gives the same dataset; and Rust → Parquet → pyarrow.
    #[test]
    fn pyarrow_reads_our_files(case in case(), batch_bytes in 16usize..400) {
        let Some(python) = python() else {
            return Ok(());
        };
        let t = case.tensor();
        let ds = Dataset::try_new(vec![Column::new("x", t)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ours.arrow");
        let mut w = DatasetWriter::create(&path, WriteOptions::default().with_batch_bytes(batch_bytes).with_offset_width(case.width)).unwrap();
        w.write(&ds).unwrap();
        w.finish().unwrap();
        let file = MappedDataset::open(&path).unwrap();
        let batches: Vec<Value> = file.batches().iter().map(|b| {
            let t = b.column("x").unwrap();
            json!({"offsets": t.lod().offsets(), "items": items_f64(t)})
        }).collect();
        let expected = json!({"x": {"levels": case.levels, "element_shape": case.shape, "batches": batches}});
        let json_path = dir.path().join("expected.json");
        std::fs::write(&json_path, expected.to_string()).unwrap();
        // Rust -> Parquet -> pyarrow: one table with the same LoD, shape and values.
        #[cfg(feature = "parquet")]
        {
        let parquet = dir.path().join("ours.parquet");
        write_parquet(&parquet, [&ds], &ParquetWriteOptions::default()).unwrap();
        let t = ds.column("x").unwrap();
        let whole = json!({"x": {"levels": case.levels, "element_shape": case.shape,
            "batches": [{"offsets": t.lod().offsets(), "items": items_f64(t)}]}});
        let whole_path = dir.path().join("whole.json");
        std::fs::write(&whole_path, whole.to_string()).unwrap();
        run(&python, &[&script("read_ours.py"), &parquet, &whole_path]);
        }
        // Rust -> compressed file (zstd or lz4) -> pyarrow: the same batches.
        #[cfg(feature = "compression")]
        {
        let (codec, name) = [(IpcCompression::Zstd, "ours.zstd.arrow"), (IpcCompression::Lz4, "ours.lz4.arrow")][batch_bytes % 2];
        let compressed = dir.path().join(name);
        let options = WriteOptions::default().with_batch_bytes(batch_bytes).with_offset_width(case.width).with_compression(codec);
        let mut w = DatasetWriter::create(&compressed, options).unwrap();
        w.write(&ds).unwrap();
        w.finish().unwrap();
        run(&python, &[&script("read_ours.py"), &compressed, &json_path]);
        }
        let rewritten = dir.path().join("rewritten.arrow");
        run(&python, &[&script("read_ours.py"), &path, &json_path, &rewritten]);
        // Rust -> pyarrow -> Rust: the file pyarrow wrote back reads as the original.
        let again = MappedDataset::open(&rewritten).unwrap();
        prop_assert_eq!(again.num_rows(), file.num_rows());
        for (a, b) in again.batches().iter().zip(file.batches()) {
            prop_assert_eq!(a, b);
        }
    }
}

/// pyarrow → file (list / large_list, 0–3 levels, three batches one of them sliced,
/// fixed_shape_tensor and plain fixed-size lists and scalars) → Rust, identical; and the
/// same rows through pyarrow's Parquet writer.
#[test]
fn we_read_pyarrow_files() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    run(&python, &[&script("write_theirs.py"), dir.path()]);
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("expected.json")).unwrap())
            .unwrap();
    let cases = expected.as_object().unwrap();
    assert_eq!(cases.len(), 24);
    for (name, want) in cases {
        let file = MappedDataset::open(dir.path().join(format!("{name}.arrow")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // pyarrow's compressed files (zstd, lz4 frame): the same batches, decompressed.
        #[cfg(feature = "compression")]
        for codec in ["zstd", "lz4"] {
            let path = dir.path().join(format!("{name}.{codec}.arrow"));
            let compressed = MappedDataset::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(compressed.is_compressed(), "{name}.{codec}");
            assert_eq!(compressed.batches(), file.batches(), "{name}.{codec}");
        }
        let levels = want["levels"].as_u64().unwrap() as usize;
        let shape: Vec<usize> = serde_json::from_value(want["element_shape"].clone()).unwrap();
        let batches = want["batches"].as_array().unwrap();
        assert_eq!(file.batches().len(), batches.len(), "{name}");
        for (b, w) in file.batches().iter().zip(batches) {
            let t = b.column("x").unwrap();
            assert_eq!(t.num_levels(), levels, "{name}");
            assert_eq!(t.element_shape(), &shape[..], "{name}");
            let lengths: Vec<Vec<usize>> = serde_json::from_value(w["lengths"].clone()).unwrap();
            assert_eq!(t.lod().lengths(), lengths, "{name}");
            let items: Vec<f64> = serde_json::from_value(w["items"].clone()).unwrap();
            assert_eq!(items_f64(t), items, "{name}");
        }
        // pyarrow -> Parquet -> Rust: the same rows, read as one dataset.
        #[cfg(feature = "parquet")]
        {
            use lodtensor::io::parquet::{ParquetReadOptions, read_parquet};
            let ds = read_parquet(
                dir.path().join(format!("{name}.parquet")),
                &ParquetReadOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{name}.parquet: {e}"));
            let t = ds.column("x").unwrap();
            assert_eq!(t.element_shape(), &shape[..], "{name}.parquet");
            let mut lengths = vec![Vec::new(); levels];
            let mut items = Vec::new();
            for w in batches {
                let l: Vec<Vec<usize>> = serde_json::from_value(w["lengths"].clone()).unwrap();
                for (all, level) in lengths.iter_mut().zip(l) {
                    all.extend(level);
                }
                items.extend(serde_json::from_value::<Vec<f64>>(w["items"].clone()).unwrap());
            }
            assert_eq!(t.lod().lengths(), lengths, "{name}.parquet");
            assert_eq!(items_f64(t), items, "{name}.parquet");
        }
    }
}

/// The pyarrow program of format-spec.md writes a file we read as the reference example.
#[test]
fn the_spec_example_is_a_valid_file() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.arrow");
    run(&python, &[&script("spec_example.py"), &path]);
    let file = MappedDataset::open(&path).unwrap();
    let words = file.batches()[0].column("words").unwrap();
    assert_eq!(
        words.lod().lengths(),
        vec![vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]
    );
    assert_eq!(words.shape(), vec![15, 2]);
    assert_eq!(
        file.batches()[0].columns()[0].level_names(),
        &["articles", "sentences"]
    );
    let article = file.slice_sequence("words", 0, 2).unwrap();
    assert_eq!(
        article
            .typed_values::<arrow_array::types::Float32Type>()
            .unwrap(),
        &(20..30).map(|i| i as f32).collect::<Vec<_>>()[..]
    );
}
