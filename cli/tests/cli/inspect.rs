//! `lodtensor info`, `show`, `validate` and `hist`, run on real files: written with the
//! library, Paddle's golden files, corrupt files and missing paths.

use std::process::{Command, Stdio};

use lodtensor::io::ipc_writer::WriteOptions;
use serde_json::Value;

use crate::support::{batches_file, lodtensor_in, paddle, words_file};

/// Every golden Paddle file the reader accepts.
const GOLDEN: [&str; 13] = [
    "bool.pdtensor",
    "int8.pdtensor",
    "int16.pdtensor",
    "int32.pdtensor",
    "int64.pdtensor",
    "uint8.pdtensor",
    "float16.pdtensor",
    "float32.pdtensor",
    "float64.pdtensor",
    "empty_rows.pdtensor",
    "empty_sequences.pdtensor",
    "scalar.pdtensor",
    "params.pdiparams",
];

#[test]
fn info_describes_columns_and_levels() {
    let dir = tempfile::tempdir().unwrap();
    let path = words_file(dir.path());
    let bytes = std::fs::metadata(&path).unwrap().len();
    let run = lodtensor_in(dir.path(), ["info", "words.arrow"]);
    assert_eq!(
        run.ok(),
        format!(
            "words.arrow: Arrow IPC, format version 1, {bytes} bytes, 3 rows in 1 batch, 2 columns\n\
             column \"words\": float32, element shape [2], 2 levels, 3 rows, 15 elements, 120 bytes of values\n\
             \x20 level 0 (articles)   3 sequences, int64 offsets, lengths min 1, mean 2.00, max 3\n\
             \x20 level 1 (sentences)  6 sequences, int64 offsets, lengths min 1, mean 2.50, max 4\n\
             column \"label\": int64, element shape [], 0 levels, 3 rows, 3 elements, 24 bytes of values\n"
        )
    );
}

#[test]
fn info_json_has_the_documented_keys() {
    let dir = tempfile::tempdir().unwrap();
    batches_file(dir.path());
    let run = lodtensor_in(dir.path(), ["info", "batches.arrow", "--json"]);
    let info: Value = serde_json::from_str(run.ok()).unwrap();
    assert_eq!(info["format_version"], "1");
    assert_eq!(info["format"], "arrow");
    assert_eq!(info["rows"], 12);
    assert_eq!(info["batches"], 12);
    let words = &info["columns"][0];
    assert_eq!(words["name"], "words");
    assert_eq!(words["dtype"], "float32");
    assert_eq!(words["element_shape"], serde_json::json!([2]));
    assert_eq!(words["levels"], 2);
    assert_eq!(
        words["level_names"],
        serde_json::json!(["articles", "sentences"])
    );
    assert_eq!(words["sequences_per_level"], serde_json::json!([12, 24]));
    assert_eq!(words["values"], 60);
    assert_eq!(words["lengths"][1]["max_length"], 4);
    assert_eq!(words["lengths"][1]["mean_length"], 2.5);
    assert_eq!(info["columns"][1]["levels"], 0);
    assert_eq!(
        info["columns"][1]["sequences_per_level"],
        serde_json::json!([])
    );
}

#[test]
fn info_reads_paddle_files() {
    let dir = tempfile::tempdir().unwrap();
    let run = lodtensor_in(
        dir.path(),
        [&"info".into(), &paddle("int64.pdtensor"), &"--json".into()],
    );
    let info: Value = serde_json::from_str(run.ok()).unwrap();
    assert_eq!(info["format"], "pdtensor");
    assert_eq!(info["format_version"], "0");
    assert_eq!(info["rows"], 3);
    let c = &info["columns"][0];
    assert_eq!(c["name"], "int64");
    assert_eq!(c["dtype"], "int64");
    assert_eq!(c["element_shape"], serde_json::json!([1]));
    assert_eq!(c["sequences_per_level"], serde_json::json!([3, 6]));
    assert_eq!(c["values"], 15);

    // Parameters of different row counts: no common row count.
    let run = lodtensor_in(
        dir.path(),
        [
            &"info".into(),
            &paddle("params.pdiparams"),
            &"--json".into(),
        ],
    );
    let info: Value = serde_json::from_str(run.ok()).unwrap();
    assert_eq!(info["rows"], Value::Null);
    let names: Vec<&str> = info["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tensor_0", "tensor_1", "tensor_2"]);
    assert_eq!(info["columns"][2]["dtype"], "bool");

    for name in GOLDEN {
        let run = lodtensor_in(dir.path(), [&"info".into(), &paddle(name)]);
        assert!(run.ok().contains("Paddle"), "{name}: {run:?}");
    }
}

#[test]
fn info_of_a_file_without_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.arrow");
    let schema = crate::support::words().schema();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(file, &schema).unwrap();
    writer.finish().unwrap();
    let run = lodtensor_in(dir.path(), ["info", "empty.arrow", "--json"]);
    let info: Value = serde_json::from_str(run.ok()).unwrap();
    assert_eq!(
        (info["rows"].clone(), info["batches"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(info["columns"][0]["levels"], 2);
    assert_eq!(info["columns"][0]["lengths"][0]["min_length"], Value::Null);
    lodtensor_in(dir.path(), ["validate", "empty.arrow"]).ok();
    lodtensor_in(dir.path(), ["show", "empty.arrow"]).ok();
}

#[test]
fn missing_paths_and_unknown_extensions() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["info", "show", "validate", "hist"] {
        let run = lodtensor_in(dir.path(), [command, "missing.arrow"]);
        assert_eq!(run.fails(3), "lodtensor: missing.arrow: no such file");
        let run = lodtensor_in(dir.path(), [command, "missing.pdtensor"]);
        assert_eq!(run.fails(3), "lodtensor: missing.pdtensor: no such file");
        let run = lodtensor_in(dir.path(), [command, "data.csv"]);
        assert_eq!(
            run.fails(2),
            "lodtensor: data.csv: unsupported extension \"csv\" (expected .arrow, .arrows, .parquet, .pdtensor or .pdiparams)"
        );
    }
    // clap's own usage errors exit with 2 as well.
    let run = lodtensor_in(dir.path(), ["info"]);
    assert_eq!(run.code, 2);
    let run = lodtensor_in(dir.path(), ["frobnicate"]);
    assert_eq!(run.code, 2);
}

#[test]
fn show_draws_the_reference_example() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    let run = lodtensor_in(dir.path(), ["show", "words.arrow"]);
    assert_eq!(
        run.ok(),
        "column \"words\", rows 0..3 of 3 (one | per element):\n\
         articles   3           1 2\n\
         sentences  3   2  4    1 2  3\n\
         elements   ||| || |||| | || |||\n"
    );
    let run = lodtensor_in(
        dir.path(),
        ["show", "words.arrow", "--rows", "2..3", "--values"],
    );
    assert_eq!(
        run.ok(),
        "column \"words\", rows 2..3 of 3 (values):\n\
         articles   2\n\
         sentences  2                        3\n\
         elements   [20.0,21.0] [22.0,23.0]  [24.0,25.0] [26.0,27.0] [28.0,29.0]\n"
    );
    let run = lodtensor_in(
        dir.path(),
        [
            "show",
            "words.arrow",
            "--column",
            "label",
            "--values",
            "--rows",
            "1..",
        ],
    );
    assert_eq!(
        run.ok(),
        "column \"label\", rows 1..3 of 3 (values):\nelements  11 12\n"
    );
    let run = lodtensor_in(
        dir.path(),
        ["show", "words.arrow", "--rows", "1", "--width", "20"],
    );
    assert!(run.ok().ends_with("elements   |\n"), "{run:?}");
}

#[test]
fn show_across_record_batches_and_paddle_values() {
    let dir = tempfile::tempdir().unwrap();
    batches_file(dir.path());
    let run = lodtensor_in(dir.path(), ["show", "batches.arrow", "--rows", "1..3"]);
    assert_eq!(
        run.ok(),
        "column \"words\", rows 1..3 of 12 (one | per element):\n\
         rows 1..2 (record batch 1):\n\
         articles   1\n\
         sentences  1\n\
         elements   |\n\
         \n\
         rows 2..3 (record batch 2):\n\
         articles   2\n\
         sentences  2  3\n\
         elements   || |||\n"
    );
    let run = lodtensor_in(
        dir.path(),
        [
            &"show".into(),
            &paddle("int32.pdtensor"),
            &"--values".into(),
        ],
    );
    // An empty last-level sequence keeps its column, with no element under it.
    assert_eq!(
        run.ok(),
        "column \"int32\", rows 0..3 of 3 (values):\n\
         level 0   0 2                    1\n\
         elements    [0,1,2,3] [4,5,6,7]  [8,9,10,11]\n"
    );
    let run = lodtensor_in(
        dir.path(),
        [&"show".into(), &paddle("bool.pdtensor"), &"--values".into()],
    );
    assert!(
        run.ok()
            .starts_with("column \"bool\", rows 0..3 of 3 (values):\nlevel 0   "),
        "{run:?}"
    );
}

#[test]
fn show_errors() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    let run = lodtensor_in(dir.path(), ["show", "words.arrow", "--rows", "2..9"]);
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: rows 2..9 are out of bounds (the data has 3 rows)"
    );
    let run = lodtensor_in(dir.path(), ["show", "words.arrow", "--column", "nope"]);
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: no column named \"nope\""
    );
    let run = lodtensor_in(dir.path(), ["show", "words.arrow", "--rows", "3..1"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("the range ends before it starts"),
        "{run:?}"
    );
}

#[test]
fn validate_accepts_valid_files() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    batches_file(dir.path());
    let run = lodtensor_in(dir.path(), ["validate", "words.arrow"]);
    let bytes = std::fs::metadata(dir.path().join("words.arrow"))
        .unwrap()
        .len();
    assert_eq!(
        run.ok(),
        format!(
            "ok: words.arrow: Arrow IPC version 1, {bytes} bytes, 1 batch, 3 rows, 2 columns, 9 sequences over 2 levels, 18 elements\n"
        )
    );
    let run = lodtensor_in(dir.path(), ["validate", "batches.arrow"]);
    assert!(
        run.ok()
            .contains(", 12 batches, 12 rows, 2 columns, 36 sequences over 2 levels, 72 elements"),
        "{run:?}"
    );
    for name in GOLDEN {
        let run = lodtensor_in(dir.path(), [&"validate".into(), &paddle(name)]);
        assert!(run.ok().starts_with("ok: "), "{name}: {run:?}");
    }
}

#[test]
fn validate_names_the_fault_of_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = words_file(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    // Level 1's offsets, [0, 3, 5, 9, 10, 12, 15] as i64: make 9 a 4 (less than 5).
    let needle: Vec<u8> = [0i64, 3, 5, 9, 10, 12, 15]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("level 1's offsets are in the file");
    let mut bad = bytes.clone();
    bad[at + 3 * 8] = 4;
    std::fs::write(dir.path().join("bad.arrow"), &bad).unwrap();
    let run = lodtensor_in(dir.path(), ["validate", "bad.arrow"]);
    let line = run.fails(1);
    assert!(
        line.starts_with("lodtensor: bad.arrow: column \"words\", batch 0: "),
        "{line}"
    );
    assert!(line.contains('4') && line.contains('5'), "{line}");

    // Not an Arrow file at all, and a truncated one.
    std::fs::write(
        dir.path().join("text.arrow"),
        b"hello, this is not an Arrow file",
    )
    .unwrap();
    let run = lodtensor_in(dir.path(), ["validate", "text.arrow"]);
    assert_eq!(
        run.fails(1),
        "lodtensor: text.arrow: invalid file: starts with \"hello,\", not the Arrow file magic \"ARROW1\""
    );
    std::fs::write(dir.path().join("cut.arrow"), &bytes[..bytes.len() / 2]).unwrap();
    lodtensor_in(dir.path(), ["validate", "cut.arrow"]).fails(1);
    std::fs::write(dir.path().join("zero.arrow"), b"").unwrap();
    let run = lodtensor_in(dir.path(), ["validate", "zero.arrow"]);
    assert_eq!(
        run.fails(1),
        "lodtensor: zero.arrow: invalid file: the file is empty (0 bytes)"
    );
}

#[test]
fn validate_never_panics_on_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = words_file(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let target = dir.path().join("damaged.arrow");
    // Truncations and byte changes spread over the whole file.
    for cut in (0..bytes.len()).step_by(61) {
        std::fs::write(&target, &bytes[..cut]).unwrap();
        lodtensor_in(dir.path(), ["validate", "damaged.arrow"]).fails(1);
    }
    for at in (0..bytes.len()).step_by(37) {
        let mut damaged = bytes.clone();
        damaged[at] = damaged[at].wrapping_add(0x41);
        std::fs::write(&target, &damaged).unwrap();
        let run = lodtensor_in(dir.path(), ["validate", "damaged.arrow"]);
        match run.code {
            0 => assert!(run.stdout.starts_with("ok: "), "byte {at}: {run:?}"),
            _ => {
                run.fails(1);
            }
        }
    }
}

#[test]
fn validate_paddle_faults() {
    let dir = tempfile::tempdir().unwrap();
    let run = lodtensor_in(
        dir.path(),
        [&"validate".into(), &paddle("bfloat16.pdtensor")],
    );
    assert!(
        run.fails(1)
            .ends_with("Paddle record 0: data type BF16 (code 22) is not supported"),
        "{run:?}"
    );
    let bytes = std::fs::read(paddle("float32.pdtensor")).unwrap();
    std::fs::write(dir.path().join("cut.pdtensor"), &bytes[..bytes.len() - 3]).unwrap();
    let line = lodtensor_in(dir.path(), ["validate", "cut.pdtensor"])
        .fails(1)
        .to_owned();
    assert!(
        line.starts_with("lodtensor: cut.pdtensor: Paddle record 0"),
        "{line}"
    );
    // A .pdtensor holds one record: params.pdiparams under that name has trailing bytes.
    std::fs::copy(
        paddle("params.pdiparams"),
        dir.path().join("params.pdtensor"),
    )
    .unwrap();
    let line = lodtensor_in(dir.path(), ["validate", "params.pdtensor"])
        .fails(1)
        .to_owned();
    assert!(line.contains("bytes after the last record"), "{line}");
}

#[test]
fn hist_draws_lengths_per_level() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    let run = lodtensor_in(
        dir.path(),
        ["hist", "words.arrow", "--level", "1", "--width", "10"],
    );
    assert_eq!(
        run.ok(),
        "column \"words\", level 1 (sentences): 6 sequences, lengths in elements (min 1, mean 2.50, max 4)\n\
         1 │█████ 1\n\
         2 │██████████ 2\n\
         3 │██████████ 2\n\
         4 │█████ 1\n"
    );
    let run = lodtensor_in(
        dir.path(),
        ["hist", "words.arrow", "--width", "4", "--bins", "2"],
    );
    assert_eq!(
        run.ok(),
        "column \"words\", level 0 (articles): 3 sequences, lengths in sentences (min 1, mean 2.00, max 3)\n\
         1-2 │████ 2\n\
         \x20 3 │██ 1\n\
         \n\
         column \"words\", level 1 (sentences): 6 sequences, lengths in elements (min 1, mean 2.50, max 4)\n\
         1-2 │████ 3\n\
         3-4 │████ 3\n"
    );
    let run = lodtensor_in(dir.path(), ["hist", "words.arrow", "--level", "2"]);
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: column \"words\", batch 0: level 2 does not exist (the LoD has 2 levels)"
    );
    let run = lodtensor_in(dir.path(), ["hist", "words.arrow", "--column", "label"]);
    assert_eq!(
        run.fails(2),
        "lodtensor: column \"label\" has no LoD levels: its 3 rows are not sequences"
    );
    let run = lodtensor_in(
        dir.path(),
        [&"hist".into(), &paddle("empty_sequences.pdtensor")],
    );
    assert!(
        run.ok()
            .contains("lengths in elements (min 0, mean 0.00, max 0)\n0 │"),
        "{run:?}"
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let ds = crate::support::words();
    let many: Vec<_> = (0..2000).map(|_| ds.clone()).collect();
    crate::support::write(dir.path(), "many.arrow", &many, WriteOptions::default());
    let mut child = Command::new(env!("CARGO_BIN_EXE_lodtensor"))
        .args([
            "show",
            "many.arrow",
            "--rows",
            "0..6000",
            "--values",
            "--width",
            "100000",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
