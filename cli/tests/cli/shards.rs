//! The CLI on sharded datasets, run on real directories: `convert` both ways (equal to the
//! source through the library and through pyarrow's dataset reader), `info`, `validate`,
//! `show`, `slice` and `hist` on a directory, and corrupted, truncated, missing shards and
//! bad manifests named with their exit codes.

#![cfg(feature = "parquet")]

use std::path::Path;
use std::process::Command;

use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::WriteOptions;
use lodtensor::io::parquet::{ParquetReadOptions, read_parquet};
use lodtensor::shards::ShardedDataset;
use lodtensor::{Dataset, LodTensor};
use lodtensor::{rng::SplitMix64, synthetic::Documents};
use serde_json::Value;

use crate::support::common::python;
use crate::support::{lodtensor_in, write};

/// Documents of 1–5 sentences of 1–9 `f32[4]` tokens.
fn docs_shape() -> Documents {
    Documents {
        sentences: (1, 5),
        tokens: (1, 9),
        dim: 4,
    }
}

/// `docs.arrow`: 40 synthetic documents (sentences of `f32[4]` tokens, level names, a
/// label column) in record batches of 7 documents.
fn docs_file(dir: &Path) -> Dataset {
    let data = docs_shape().generate(&mut SplitMix64::new(7), 40).unwrap();
    let batches: Vec<Dataset> = (0..40)
        .step_by(7)
        .map(|start| data.slice_rows(start..(start + 7).min(40)).unwrap())
        .collect();
    write(dir, "docs.arrow", &batches, WriteOptions::default());
    data
}

/// `docs.arrow` and `ds/`, the same rows in shards of 15, 15 and 10 rows.
fn sharded_docs(dir: &Path) -> Dataset {
    let data = docs_file(dir);
    let args = ["convert", "docs.arrow", "ds/", "--shard-rows", "15"];
    lodtensor_in(dir, args).ok();
    data
}

/// Every row of the datasets `parts`, one per column, concatenated.
fn columns(parts: &[Dataset]) -> Vec<(String, LodTensor)> {
    let first = &parts[0];
    (0..first.columns().len())
        .map(|c| {
            let tensors: Vec<LodTensor> = parts
                .iter()
                .map(|p| p.columns()[c].tensor().unwrap().clone())
                .collect();
            let name = first.columns()[c].name().to_owned();
            (name, lodtensor::ops::concat(&tensors).unwrap())
        })
        .collect()
}

fn arrow_rows(path: &Path) -> Vec<(String, LodTensor)> {
    columns(MappedDataset::open(path).unwrap().batches())
}

fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(lodtensor_in(dir, args).ok()).unwrap()
}

/// Overwrites the byte at `at` of `path` with its complement.
fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] = !bytes[at];
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn file_to_shards_and_back_is_equal() {
    let dir = tempfile::tempdir().unwrap();
    let data = docs_file(dir.path());
    let run = lodtensor_in(
        dir.path(),
        ["convert", "docs.arrow", "ds/", "--shard-rows", "15"],
    );
    assert!(
        run.ok()
            .starts_with("converted docs.arrow (Arrow IPC, 40 rows, 2 columns) to ds/ (sharded dataset of 3 shards, 40 rows): "),
        "{run:?}"
    );
    let shards = ShardedDataset::open(dir.path().join("ds")).unwrap();
    shards.validate().unwrap();
    let rows: Vec<usize> = shards.manifest().shards.iter().map(|s| s.rows).collect();
    assert_eq!(rows, [15, 15, 10]);
    let expected = columns(&[data]);
    assert_eq!(columns(&shards.rows(0..40).unwrap()), expected);

    // Back to one file, Arrow and Parquet; and directory to directory, resharded by bytes.
    lodtensor_in(dir.path(), ["convert", "ds", "back.arrow"]).ok();
    assert_eq!(arrow_rows(&dir.path().join("back.arrow")), expected);
    lodtensor_in(dir.path(), ["convert", "ds/", "back.parquet"]).ok();
    let parquet = read_parquet(
        dir.path().join("back.parquet"),
        &ParquetReadOptions::default(),
    )
    .unwrap();
    assert_eq!(columns(&[parquet]), expected);
    let run = lodtensor_in(
        dir.path(),
        ["convert", "ds", "ds2/", "--shard-bytes", "2000"],
    );
    run.ok();
    let resharded = ShardedDataset::open(dir.path().join("ds2")).unwrap();
    assert!(resharded.num_shards() > 3, "{run:?}");
    assert_eq!(columns(&resharded.rows(0..40).unwrap()), expected);

    // Compressed shards (zstd, lz4) and a compressed file: smaller, read back the same.
    for codec in ["zstd", "lz4"] {
        let out = format!("{codec}/");
        let args = [
            "convert",
            "docs.arrow",
            &out,
            "--shard-rows",
            "15",
            "--compression",
            codec,
        ];
        lodtensor_in(dir.path(), args).ok();
        let compressed = ShardedDataset::open(dir.path().join(codec)).unwrap();
        compressed.validate().unwrap();
        assert_eq!(columns(&compressed.rows(0..40).unwrap()), expected);
        let file = format!("{codec}.arrow");
        lodtensor_in(dir.path(), ["convert", "ds", &file, "--compression", codec]).ok();
        let opened = MappedDataset::open(dir.path().join(&file)).unwrap();
        assert!(opened.is_compressed(), "{codec}");
        assert_eq!(arrow_rows(&dir.path().join(&file)), expected);
        let size = |p: &str| std::fs::metadata(dir.path().join(p)).unwrap().len();
        assert!(size(&file) < size("back.arrow"), "{codec}");
    }

    // Parquet in, shards out (a row group at a time); --offsets applies to every shard.
    let run = lodtensor_in(
        dir.path(),
        [
            "convert",
            "back.parquet",
            "pq/",
            "--shard-rows",
            "8",
            "--offsets",
            "int32",
        ],
    );
    run.ok();
    let pq = ShardedDataset::open(dir.path().join("pq")).unwrap();
    assert_eq!(pq.num_shards(), 5);
    assert_eq!(columns(&pq.rows(0..40).unwrap()), expected);
    let offsets = &pq.manifest().columns[0].offsets;
    assert!(offsets.iter().all(|w| w.name() == "int32"), "{offsets:?}");
    lodtensor_in(dir.path(), ["validate", "pq"]).ok();
}

/// pyarrow's own dataset reader sees every row of the directory `convert` wrote, equal to
/// the file.
#[test]
fn pyarrow_reads_the_shards_convert_writes() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    docs_file(dir.path());
    lodtensor_in(
        dir.path(),
        ["convert", "docs.arrow", "ds/", "--shard-rows", "6"],
    )
    .ok();
    let script = r#"
import pyarrow as pa, pyarrow.dataset as pads
whole = pa.ipc.open_file(pa.memory_map("docs.arrow")).read_all()
shards = pads.dataset("ds", format="ipc").to_table()
assert shards.num_rows == 40, shards.num_rows
assert shards.schema.equals(whole.schema, check_metadata=False), (shards.schema, whole.schema)
assert shards.to_pylist() == whole.to_pylist()
print("equal", len(pads.dataset("ds", format="ipc").files))
"#;
    let out = Command::new(&python)
        .args(["-c", script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "equal 7");
}

#[test]
fn info_reads_the_manifest_and_agrees_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    sharded_docs(dir.path());
    let file = json(dir.path(), &["info", "docs.arrow", "--json"]);
    let shards = json(dir.path(), &["info", "ds", "--json"]);
    assert_eq!(shards["format"], "shards");
    assert_eq!(shards["rows"], 40);
    let listed: Vec<&Value> = shards["shards"].as_array().unwrap().iter().collect();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[2]["file"], "part-00002.arrow");
    assert_eq!(listed[2]["rows"], 10);
    let bytes: u64 = listed.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
    assert_eq!(shards["bytes"], bytes);
    let on_disk: u64 = (0..3)
        .map(|s| {
            let name = format!("ds/part-{s:05}.arrow");
            std::fs::metadata(dir.path().join(name)).unwrap().len()
        })
        .sum();
    assert_eq!(bytes, on_disk);
    // The counts and mean lengths agree with the file's; min and max need the offsets.
    for (f, s) in file["columns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(shards["columns"].as_array().unwrap())
    {
        for key in [
            "name",
            "dtype",
            "element_shape",
            "level_names",
            "sequences_per_level",
            "rows",
            "values",
            "values_bytes",
        ] {
            assert_eq!(f[key], s[key], "{key}");
        }
        for (fl, sl) in f["lengths"]
            .as_array()
            .unwrap()
            .iter()
            .zip(s["lengths"].as_array().unwrap())
        {
            let (a, b) = (fl["mean_length"].as_f64(), sl["mean_length"].as_f64());
            assert!((a.unwrap() - b.unwrap()).abs() < 1e-12, "{fl} {sl}");
            assert_eq!(sl["min_length"], Value::Null);
        }
    }
    let text = lodtensor_in(dir.path(), ["info", "ds"]);
    let text = text.ok();
    assert!(
        text.starts_with(&format!(
            "ds: sharded dataset, manifest version 1, 3 shards, {bytes} bytes, 40 rows in "
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "shards part-00000.arrow … part-00002.arrow: rows min 10, mean 13.33, max 15"
        ),
        "{text}"
    );
    assert!(text.contains("  level 1 (sentences)"), "{text}");
    // The manifest alone: a missing shard does not stop `info`.
    std::fs::remove_file(dir.path().join("ds/part-00001.arrow")).unwrap();
    assert_eq!(lodtensor_in(dir.path(), ["info", "ds"]).ok(), text);
}

#[test]
fn info_refuses_a_manifest_claiming_a_shard_no_store_can_hold() {
    let dir = tempfile::tempdir().unwrap();
    sharded_docs(dir.path());
    let path = dir.path().join("ds").join(lodtensor::shards::MANIFEST_NAME);
    let mut forged = lodtensor::shards::Manifest::load(&path).unwrap();
    forged.shards[1].bytes = 1 << 62;
    forged.write(&path).unwrap();
    for command in ["info", "validate"] {
        let out = lodtensor_in(dir.path(), [command, "ds"]);
        let line = out.fails(1);
        assert!(
            line.contains("shards[1].bytes") && line.contains("4611686018427387904"),
            "{out:?}"
        );
        assert!(!line.contains("EB"), "{line}");
    }
}

#[test]
fn show_slice_and_hist_read_the_shards_they_need() {
    let dir = tempfile::tempdir().unwrap();
    let data = sharded_docs(dir.path());
    let show = |input: &str, rows: &str| {
        let args = [
            "show", input, "--rows", rows, "--values", "--column", "tokens",
        ];
        lodtensor_in(dir.path(), args).ok().to_owned()
    };
    // Rows 15..17 lie in one shard and in one batch of the file: the same drawing.
    assert_eq!(show("ds", "15..17"), show("docs.arrow", "15..17"));
    // Rows 13..17 cross from shard 0 into shard 1: drawn shard by shard.
    let across = show("ds", "13..17");
    assert!(
        across.contains("rows 13..15 (part-00000.arrow, record batch 0):\n"),
        "{across}"
    );
    assert!(
        across.contains("rows 15..17 (part-00001.arrow, record batch 0):\n"),
        "{across}"
    );
    let second = across.split("(part-00001.arrow, record batch 0):\n").nth(1);
    let one = show("ds", "15..17");
    assert_eq!(second, one.split_once('\n').map(|(_, drawing)| drawing));
    // Shard 2 is never opened for rows 0..5: its corruption goes unseen.
    flip_byte(&dir.path().join("ds/part-00002.arrow"), 200);
    lodtensor_in(dir.path(), ["show", "ds"]).ok();

    // A row range across shards, and a sequence located through the manifest's counts.
    lodtensor_in(
        dir.path(),
        ["slice", "ds", "rows.arrow", "--rows", "12..16"],
    )
    .ok();
    assert_eq!(
        arrow_rows(&dir.path().join("rows.arrow")),
        columns(&[data.slice_rows(12..16).unwrap()])
    );
    let sentences = data
        .column("tokens")
        .unwrap()
        .lod()
        .num_sequences(1)
        .unwrap();
    let in_shard_1 = data
        .slice_rows(0..15)
        .unwrap()
        .column("tokens")
        .unwrap()
        .lod()
        .num_sequences(1)
        .unwrap()
        + 1;
    for index in [0, in_shard_1] {
        let run = lodtensor_in(
            dir.path(),
            [
                "slice",
                "ds",
                "sentence.arrow",
                "--column",
                "tokens",
                "--level",
                "1",
                "--index",
                &index.to_string(),
            ],
        );
        assert!(
            run.ok().starts_with(&format!(
                "wrote sequence {index} of level 1 (sentences) of column \"tokens\" of ds to sentence.arrow"
            )),
            "{run:?}"
        );
        let expected = data
            .column("tokens")
            .unwrap()
            .slice_sequence(1, index)
            .unwrap();
        assert_eq!(
            arrow_rows(&dir.path().join("sentence.arrow"))[0].1,
            expected
        );
    }
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "ds",
            "x.arrow",
            "--level",
            "1",
            "--index",
            &sentences.to_string(),
        ],
    );
    assert_eq!(
        run.fails(4),
        format!(
            "lodtensor: ds: level 1: sequence {sentences} does not exist (the level has {sentences} sequences)"
        )
    );
    let run = lodtensor_in(dir.path(), ["show", "ds", "--rows", "38..41"]);
    assert_eq!(
        run.fails(4),
        "lodtensor: ds: rows 38..41 are out of bounds (the data has 40 rows)"
    );
    // Row 30 lies in the corrupted shard 2.
    let run = lodtensor_in(dir.path(), ["show", "ds", "--rows", "30"]);
    assert!(
        run.fails(1).starts_with(
            "lodtensor: ds/part-00002.arrow: shard disagrees with the manifest: crc32c is "
        ),
        "{run:?}"
    );
    // hist reads every shard.
    let run = lodtensor_in(dir.path(), ["hist", "ds", "--column", "tokens"]);
    assert!(run.fails(1).contains("part-00002.arrow"), "{run:?}");
}

#[test]
fn validate_names_the_shard_or_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    sharded_docs(dir.path());
    let ok = lodtensor_in(dir.path(), ["validate", "ds"]);
    assert!(
        ok.ok().starts_with("ok: ds: sharded dataset version 1, "),
        "{ok:?}"
    );
    assert!(
        ok.stdout
            .contains(", 3 batches in 3 shards, 40 rows, 2 columns, "),
        "{ok:?}"
    );
    let copy = |name: &str| {
        let to = dir.path().join(name);
        std::fs::create_dir(&to).unwrap();
        for entry in std::fs::read_dir(dir.path().join("ds")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
        to
    };
    let validate = |name: &str| lodtensor_in(dir.path(), ["validate", name]);

    // A changed byte anywhere in a shard: its checksum.
    let corrupted = copy("corrupted");
    let len = std::fs::metadata(corrupted.join("part-00001.arrow"))
        .unwrap()
        .len() as usize;
    flip_byte(&corrupted.join("part-00001.arrow"), len / 2);
    let run = validate("corrupted");
    assert!(
        run.fails(1).starts_with(
            "lodtensor: corrupted/part-00001.arrow: shard disagrees with the manifest: crc32c is "
        ),
        "{run:?}"
    );
    // A truncated shard: its size.
    let truncated = copy("truncated");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(truncated.join("part-00002.arrow"))
        .unwrap();
    file.set_len(100).unwrap();
    assert!(
        validate("truncated").fails(1).starts_with(
            "lodtensor: truncated/part-00002.arrow: shard disagrees with the manifest: bytes is 100, the manifest says "
        )
    );
    // A missing shard: I/O.
    let missing = copy("missing");
    std::fs::remove_file(missing.join("part-00000.arrow")).unwrap();
    assert!(
        validate("missing")
            .fails(3)
            .starts_with("lodtensor: missing/part-00000.arrow: "),
    );
    // Manifests: not JSON, a field of the wrong type, a shard's rows that disagree.
    let manifest = |name: &str, edit: &dyn Fn(String) -> String| {
        let path = copy(name).join("_lodtensor.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, edit(text)).unwrap();
    };
    manifest("cut", &|t| t[..t.len() / 2].to_owned());
    assert!(
        validate("cut")
            .fails(1)
            .starts_with("lodtensor: cut/_lodtensor.json: "),
    );
    manifest("typed", &|t| {
        t.replace("\"version\": 1", "\"version\": \"1\"")
    });
    assert_eq!(
        validate("typed").fails(1),
        "lodtensor: typed/_lodtensor.json: manifest field version: is \"1\", expected a non-negative integer"
    );
    manifest("rows", &|t| t.replacen("\"rows\":15", "\"rows\":14", 1));
    assert_eq!(
        validate("rows").fails(1),
        "lodtensor: rows/_lodtensor.json: manifest field shards[0].columns[0]: 15 top-level sequences, the shard has 14 rows"
    );
    // A manifest that is valid but lists another checksum: the shard is named.
    manifest("checksum", &|t| {
        let mut m: Value = serde_json::from_str(&t).unwrap();
        m["shards"][1]["crc32c"] = 7.into();
        m.to_string()
    });
    let run = validate("checksum");
    let line = run.fails(1);
    assert!(
        line.starts_with(
            "lodtensor: checksum/part-00001.arrow: shard disagrees with the manifest: crc32c is "
        ) && line.ends_with(", the manifest says 7"),
        "{run:?}"
    );
    // A directory that is no dataset.
    std::fs::create_dir(dir.path().join("plain")).unwrap();
    assert_eq!(
        validate("plain").fails(3),
        "lodtensor: plain: a directory without _lodtensor.json, not a sharded dataset"
    );
    // The original still validates: the copies were independent.
    validate("ds").ok();
}

#[test]
fn convert_refuses_what_it_cannot_write_and_appends() {
    let dir = tempfile::tempdir().unwrap();
    sharded_docs(dir.path());
    let manifest = || std::fs::read_to_string(dir.path().join("ds/_lodtensor.json")).unwrap();
    let before = manifest();
    let run = lodtensor_in(dir.path(), ["convert", "docs.arrow", "ds/"]);
    assert_eq!(
        run.fails(2),
        "lodtensor: ds/: a sharded dataset is already there: add --append to add shards to it, or remove it first"
    );
    assert_eq!(manifest(), before);
    for args in [
        &["convert", "docs.arrow", "one.arrow", "--shard-rows", "3"][..],
        &["convert", "docs.arrow", "z/", "--compression", "snappy"],
        &["convert", "docs.arrow", "new/", "--append"],
    ] {
        lodtensor_in(dir.path(), args).fails(2);
    }
    assert!(!dir.path().join("one.arrow").exists());
    assert!(!dir.path().join("new/_lodtensor.json").exists());
    // A bad input leaves no dataset behind.
    std::fs::write(dir.path().join("broken.arrow"), b"ARROW1\0\0garbage").unwrap();
    lodtensor_in(dir.path(), ["convert", "broken.arrow", "out/"]).fails(1);
    assert!(!dir.path().join("out/_lodtensor.json").exists());

    // --append: the dataset grows by the file's rows, the first shards unchanged.
    let run = lodtensor_in(
        dir.path(),
        [
            "convert",
            "docs.arrow",
            "ds/",
            "--append",
            "--shard-rows",
            "25",
        ],
    );
    assert!(
        run.ok().contains("(sharded dataset of 5 shards, 80 rows)"),
        "{run:?}"
    );
    let shards = ShardedDataset::open(dir.path().join("ds")).unwrap();
    shards.validate().unwrap();
    let rows: Vec<usize> = shards.manifest().shards.iter().map(|s| s.rows).collect();
    assert_eq!(rows, [15, 15, 10, 25, 15]);
    assert_eq!(
        columns(&shards.rows(40..80).unwrap()),
        columns(&shards.rows(0..40).unwrap())
    );
}

/// `convert … --append` killed (SIGKILL) at several points: the dataset opens and validates
/// as it was before, or, once the manifest was replaced, with every new row.
#[test]
fn killed_append_leaves_the_dataset_whole() {
    let dir = tempfile::tempdir().unwrap();
    let before = columns(&[sharded_docs(dir.path())]);
    let more = docs_shape().generate(&mut SplitMix64::new(9), 300).unwrap();
    write(
        dir.path(),
        "more.arrow",
        std::slice::from_ref(&more),
        WriteOptions::default(),
    );
    for delay_ms in [2, 10, 40, 120, 400] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lodtensor"))
            .args([
                "convert",
                "more.arrow",
                "ds/",
                "--append",
                "--shard-rows",
                "1",
            ])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let shards = ShardedDataset::open(dir.path().join("ds")).unwrap();
        shards.validate().unwrap();
        match shards.num_rows() {
            40 => assert_eq!(columns(&shards.rows(0..40).unwrap()), before),
            340 => {
                let added = columns(&shards.rows(40..340).unwrap());
                assert_eq!(added, columns(&[more]));
                return;
            }
            rows => panic!("{rows} rows after a kill at {delay_ms} ms"),
        }
        lodtensor_in(dir.path(), ["validate", "ds"]).ok();
    }
}
