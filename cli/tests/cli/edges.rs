//! The command line at its edges: files that lost their element shape, Arrow IPC streams,
//! paths that are not files, metadata spelled by other writers, `slice --column`, and one
//! exit-code policy for every subcommand.

#![cfg(feature = "parquet")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, ListArray, RecordBatch};
use arrow_buffer::OffsetBuffer;
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::{DataType, Field, Schema};

use crate::support::common::python;
use crate::support::{lodtensor_in, words, words_file};

const READERS: [&str; 6] = ["info", "show", "validate", "hist", "slice", "convert"];

/// The arguments that make subcommand `command` read `file` (and write `out.arrow`).
fn reading(command: &str, file: &str) -> Vec<String> {
    let mut args = vec![command.to_owned(), file.to_owned()];
    match command {
        "slice" => args.extend(["out.arrow", "--rows", "0..1"].map(String::from)),
        "convert" => args.push("out.arrow".to_owned()),
        _ => {}
    }
    args
}

/// `name`: a `list<list<float>>` column "tokens" without any metadata, as DuckDB or pyarrow
/// write it: rows of 2 and 1 sentences, each a list of `lengths[i]` floats.
fn plain_lists(dir: &Path, name: &str, lengths: [i32; 3]) -> PathBuf {
    let mut inner = vec![0];
    for l in lengths {
        inner.push(inner.last().unwrap() + l);
    }
    let values = Float32Array::from_iter_values((0..inner[3]).map(|i| i as f32));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let sentences = ListArray::new(
        item.clone(),
        OffsetBuffer::new(inner.into()),
        Arc::new(values),
        None,
    );
    let sentence = Arc::new(Field::new("item", DataType::List(item), true));
    let docs = ListArray::new(
        sentence.clone(),
        OffsetBuffer::new(vec![0, 2, 3].into()),
        Arc::new(sentences),
        None,
    );
    let schema = Arc::new(Schema::new(vec![Field::new(
        "tokens",
        DataType::List(sentence),
        true,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(docs) as ArrayRef]).unwrap();
    let path = dir.join(name);
    let mut w = FileWriter::try_new(std::fs::File::create(&path).unwrap(), &schema).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn element_shape_reads_files_that_lost_it() {
    let dir = tempfile::tempdir().unwrap();
    plain_lists(dir.path(), "plain.arrow", [4, 4, 4]);
    let info = lodtensor_in(dir.path(), ["info", "plain.arrow"])
        .ok()
        .to_owned();
    assert!(info.contains("element shape [], 2 levels"), "{info}");
    assert!(
        info.contains("hint: every sequence of level 1 has 4 values: if each is one element (a file written without the element shape), read it with --element-shape 4 (or tokens=4)"),
        "{info}"
    );
    for shape in ["4", "tokens=4", "2,2", "[2, 2]"] {
        let out = lodtensor_in(
            dir.path(),
            ["info", "plain.arrow", "--element-shape", shape],
        );
        let out = out.ok();
        assert!(out.contains("float32, element shape ["), "{out}");
        assert!(
            out.contains("1 level, 2 rows, 3 elements"),
            "{shape}: {out}"
        );
        assert!(!out.contains("hint"), "{out}");
    }
    for command in READERS {
        let mut args = reading(command, "plain.arrow");
        args.extend(["--element-shape".to_owned(), "4".to_owned()]);
        lodtensor_in(dir.path(), &args).ok();
    }
    let out = lodtensor_in(dir.path(), ["info", "out.arrow"])
        .ok()
        .to_owned();
    assert!(out.contains("element shape [4], 1 level"), "{out}");
    // Every element is checked; the error names the row and the level.
    plain_lists(dir.path(), "ragged.arrow", [4, 4, 3]);
    for command in READERS {
        let mut args = reading(command, "ragged.arrow");
        args.extend(["--element-shape".to_owned(), "4".to_owned()]);
        let run = lodtensor_in(dir.path(), &args);
        assert_eq!(
            run.fails(1),
            "lodtensor: ragged.arrow: column \"tokens\", batch 0: invalid element shape [4]: \
             row 1, level 1: sequence 2 has 3 values, not 4"
        );
    }
    let run = lodtensor_in(
        dir.path(),
        ["info", "plain.arrow", "--element-shape", "x=4"],
    );
    assert_eq!(
        run.fails(4),
        "lodtensor: plain.arrow: no column named \"x\""
    );
    let run = lodtensor_in(dir.path(), ["info", "plain.arrow", "--element-shape", "0"]);
    assert_eq!(run.code, 2);
}

/// Files DuckDB and pyarrow write from plain nested lists, read with `--element-shape`.
#[test]
fn element_shape_reads_duckdb_and_pyarrow_files() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import duckdb, pyarrow as pa
duckdb.sql("COPY (SELECT * FROM (VALUES (1, [[1,2,3],[4,5,6]]::FLOAT[][]), (2, [[7,8,9]]::FLOAT[][])) t(id, tokens) ORDER BY id) TO 'duck.parquet' (FORMAT parquet)")
docs = pa.array([[[1.0, 2, 3], [4, 5, 6]], [[7.0, 8, 9]]], pa.list_(pa.list_(pa.float32())))
table = pa.table({"tokens": docs})
with pa.ipc.new_file("py.arrow", table.schema) as w:
    w.write_table(table)
"#;
    let out = Command::new(&python)
        .args(["-c", script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in ["duck.parquet", "py.arrow"] {
        let info = lodtensor_in(dir.path(), ["info", file]).ok().to_owned();
        assert!(info.contains("--element-shape 3"), "{file}: {info}");
        let run = lodtensor_in(
            dir.path(),
            ["convert", file, "x.arrow", "--element-shape", "tokens=3"],
        );
        run.ok();
        let shown = lodtensor_in(
            dir.path(),
            ["show", "x.arrow", "--column", "tokens", "--values"],
        );
        assert!(
            shown
                .ok()
                .contains("[1.0,2.0,3.0] [4.0,5.0,6.0]  [7.0,8.0,9.0]"),
            "{file}: {shown:?}"
        );
    }
}

#[test]
fn ipc_streams_are_converted_and_refused_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    let batch = words().to_record_batch();
    for name in ["words.arrows", "stream.arrow"] {
        let file = std::fs::File::create(dir.path().join(name)).unwrap();
        let mut w = StreamWriter::try_new(file, &batch.schema()).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    }
    for command in READERS.iter().filter(|c| **c != "convert") {
        let run = lodtensor_in(dir.path(), reading(command, "words.arrows"));
        assert_eq!(
            run.fails(2),
            "lodtensor: words.arrows: an Arrow IPC stream, which cannot be mapped in place; \
             convert it to an Arrow IPC file first: lodtensor convert words.arrows words.arrow"
        );
        let run = lodtensor_in(dir.path(), reading(command, "stream.arrow"));
        assert!(
            run.fails(2)
                .contains("lodtensor convert stream.arrow stream.file.arrow")
        );
    }
    let expected = lodtensor_in(dir.path(), ["show", "words.arrow", "--values"])
        .ok()
        .to_owned();
    for name in ["words.arrows", "stream.arrow"] {
        let run = lodtensor_in(dir.path(), ["convert", name, "back.arrow"]);
        assert!(
            run.ok().contains("(Arrow IPC stream, 3 rows, 2 columns)"),
            "{run:?}"
        );
        let shown = lodtensor_in(dir.path(), ["show", "back.arrow", "--values"]);
        assert_eq!(shown.ok(), expected);
    }
    let run = lodtensor_in(dir.path(), ["convert", "words.arrow", "out.arrows"]);
    assert!(run.fails(2).contains("write .arrow"), "{run:?}");
}

#[test]
fn paths_that_are_not_files_get_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("dir.arrow")).unwrap();
    std::fs::write(dir.path().join("empty.parquet"), b"").unwrap();
    let fifo = Command::new("mkfifo")
        .arg(dir.path().join("fifo.arrow"))
        .status()
        .unwrap();
    assert!(fifo.success());
    for command in READERS {
        let cases = [
            ("missing.arrow", 3, "lodtensor: missing.arrow: no such file"),
            (
                "dir.arrow",
                3,
                "lodtensor: dir.arrow: a directory without _lodtensor.json, not a sharded dataset",
            ),
            (
                "fifo.arrow",
                3,
                "lodtensor: fifo.arrow: is a FIFO (named pipe), not a regular file: lodtensor maps or seeks its input; copy it to a file first",
            ),
            (
                "empty.parquet",
                1,
                "lodtensor: empty.parquet: invalid file: the file is empty (0 bytes)",
            ),
        ];
        for (file, code, message) in cases {
            let run = lodtensor_in(dir.path(), reading(command, file));
            assert_eq!(run.fails(code), message, "{command} {file}");
        }
    }
}

/// Metadata other writers spell differently (Python's `json.dumps` puts spaces in) reads.
#[test]
fn metadata_spelled_by_json_dumps_reads() {
    let dir = tempfile::tempdir().unwrap();
    let batch = words().to_record_batch();
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let mut m = f.metadata().clone();
            for key in ["lodtensor.element_shape", "lodtensor.level_names"] {
                if let Some(v) = m.get(key) {
                    let value: serde_json::Value = serde_json::from_str(v).unwrap();
                    m.insert(
                        key.to_owned(),
                        serde_json::to_string_pretty(&value).unwrap(),
                    );
                }
            }
            (**f).clone().with_metadata(m)
        })
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        batch.schema().metadata().clone(),
    ));
    let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec()).unwrap();
    let file = std::fs::File::create(dir.path().join("spaced.arrow")).unwrap();
    let mut w = FileWriter::try_new(file, &schema).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    assert!(
        schema.fields()[0].metadata()["lodtensor.element_shape"].contains('\n'),
        "{schema:?}"
    );
    words_file(dir.path());
    let columns = |file: &str| {
        let run = lodtensor_in(dir.path(), ["info", file, "--json"]);
        serde_json::from_str::<serde_json::Value>(run.ok()).unwrap()["columns"].clone()
    };
    assert_eq!(columns("spaced.arrow"), columns("words.arrow"));
}

#[test]
fn slice_column_applies_to_rows_too() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "words.arrow",
            "w.arrow",
            "--rows",
            "1..3",
            "--column",
            "words",
        ],
    );
    assert!(
        run.ok().starts_with(
            "wrote rows 1..3 (2 rows of 3) of column \"words\" of words.arrow to w.arrow:"
        ),
        "{run:?}"
    );
    let info = lodtensor_in(dir.path(), ["info", "w.arrow"])
        .ok()
        .to_owned();
    assert!(info.contains("2 rows in 1 batch, 1 column"), "{info}");
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "words.arrow",
            "w.arrow",
            "--rows",
            "1..3",
            "--column",
            "nope",
        ],
    );
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: no column named \"nope\""
    );
}

/// One exit-code policy: 2 usage, 1 bad data, 3 I/O, 4 out of range, 5 internal error, for
/// every subcommand.
#[test]
fn every_subcommand_follows_the_exit_code_policy() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    std::fs::write(dir.path().join("bad.arrow"), b"not an arrow file at all").unwrap();
    std::fs::write(dir.path().join("file"), b"").unwrap();
    for command in READERS {
        let mut usage = reading(command, "words.arrow");
        usage.push("--no-such-flag".to_owned());
        assert_eq!(lodtensor_in(dir.path(), &usage).code, 2, "{command}");
        lodtensor_in(dir.path(), reading(command, "bad.arrow")).fails(1);
        lodtensor_in(dir.path(), reading(command, "missing.arrow")).fails(3);
        let mut out_of_range = reading(command, "words.arrow");
        out_of_range.extend(["--element-shape".to_owned(), "nope=2".to_owned()]);
        lodtensor_in(dir.path(), &out_of_range).fails(4);
    }
    assert_eq!(lodtensor_in(dir.path(), ["demo", "--docs", "0"]).code, 2);
    lodtensor_in(dir.path(), ["demo", "--docs", "1", "--out", "file/sub"]).fails(3);
    // The policy is in every --help.
    for command in READERS.iter().chain(&["demo"]) {
        let help = lodtensor_in(dir.path(), [command, "--help"])
            .ok()
            .to_owned();
        assert!(help.contains("4  out of range"), "{command}: {help}");
        assert!(help.contains("5  internal error"), "{command}: {help}");
    }
}
