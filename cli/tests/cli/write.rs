//! `lodtensor convert` and `slice`, run on real files: every output read back with the
//! library, failed writes leave the target as it was.

#![cfg(feature = "parquet")]

use std::path::Path;

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::paddle as pd;
use lodtensor::io::parquet::{
    ParquetFileWriter, ParquetReadOptions, ParquetWriteOptions, RowGroupSize, read_parquet,
};
use lodtensor::{Dataset, OffsetWidth};
use serde_json::Value;

use crate::support::{batches_file, lodtensor_in, paddle, words, words_file};

/// The files in `dir`, sorted (to see that nothing was left behind).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every row of an Arrow file as one dataset.
fn read_arrow(path: &Path) -> Dataset {
    let file = MappedDataset::open(path).unwrap();
    assert_eq!(file.batches().len(), 1, "one batch");
    file.batches()[0].clone()
}

fn info(dir: &Path, file: &str) -> Value {
    serde_json::from_str(lodtensor_in(dir, ["info", file, "--json"]).ok()).unwrap()
}

#[test]
fn paddle_files_round_trip_through_arrow_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "float16",
        "float32",
        "float64",
        "empty_rows",
        "empty_sequences",
    ] {
        let golden = paddle(&format!("{name}.pdtensor"));
        let run = lodtensor_in(
            dir.path(),
            [&"convert".into(), &golden, &dir.path().join("x.arrow")],
        );
        assert!(run.ok().starts_with("converted "), "{name}: {run:?}");
        lodtensor_in(dir.path(), ["convert", "x.arrow", "x.parquet"]).ok();
        lodtensor_in(dir.path(), ["convert", "x.parquet", "back.pdtensor"]).ok();
        assert_eq!(
            std::fs::read(dir.path().join("back.pdtensor")).unwrap(),
            std::fs::read(&golden).unwrap(),
            "{name}"
        );
        let tensor = pd::read_tensor_file(&golden).unwrap();
        if tensor.num_rows() == 0 {
            // No rows, no record batch: the schema alone.
            let file = MappedDataset::open(dir.path().join("x.arrow")).unwrap();
            assert_eq!(file.batches().len(), 0);
            assert_eq!(file.schema().field(0).name(), name);
            continue;
        }
        let column = read_arrow(&dir.path().join("x.arrow"));
        assert_eq!(column.columns()[0].name(), name);
        assert_eq!(column.columns()[0].tensor().unwrap(), &tensor);
    }
    // The three parameters have different row counts: no dataset, but .pdiparams to
    // .pdiparams keeps every record.
    let run = lodtensor_in(
        dir.path(),
        [
            &"convert".into(),
            &paddle("params.pdiparams"),
            &"p.arrow".into(),
        ],
    );
    assert!(
        run.fails(1)
            .ends_with("params.pdiparams: column \"tensor_2\" has 3 rows, the dataset has 2"),
        "{run:?}"
    );
    assert!(!dir.path().join("p.arrow").exists());
}

#[test]
fn arrow_to_paddle_and_parquet_options() {
    let dir = tempfile::tempdir().unwrap();
    batches_file(dir.path());
    // Twelve batches become one tensor per column.
    let run = lodtensor_in(dir.path(), ["convert", "batches.arrow", "all.pdiparams"]);
    assert!(
        run.ok().contains(
            "(Arrow IPC, 12 rows, 2 columns) to all.pdiparams (Paddle combined LoDTensors)"
        ),
        "{run:?}"
    );
    let records =
        pd::read_combined_file(dir.path().join("all.pdiparams"), &["words", "label"]).unwrap();
    assert_eq!(records[0].1.lod().lengths()[0], [3, 1, 2].repeat(4));
    assert_eq!(
        records[1].1.typed_values::<Int64Type>().unwrap(),
        [10, 11, 12].repeat(4)
    );

    // Offsets and compression.
    lodtensor_in(
        dir.path(),
        [
            "convert",
            "batches.arrow",
            "narrow.arrow",
            "--offsets",
            "i32",
        ],
    )
    .ok();
    let narrow = MappedDataset::open(dir.path().join("narrow.arrow")).unwrap();
    for level in narrow.batches()[0].column("words").unwrap().lod().levels() {
        assert_eq!(level.width(), OffsetWidth::I32);
    }
    assert_eq!(
        info(dir.path(), "narrow.arrow")["columns"][0]["lengths"][1]["offsets"],
        "int32"
    );
    for codec in ["none", "snappy", "zstd"] {
        let out = format!("{codec}.parquet");
        lodtensor_in(
            dir.path(),
            [
                "convert",
                "batches.arrow",
                &out,
                "--compression",
                codec,
                "--offsets",
                "int32",
            ],
        )
        .ok();
        let back = read_parquet(dir.path().join(&out), &ParquetReadOptions::default()).unwrap();
        assert_eq!(back.num_rows(), 12);
        assert_eq!(back.columns()[0].level_names(), ["articles", "sentences"]);
        assert_eq!(
            back.column("words")
                .unwrap()
                .sequence_values::<Float32Type>(1, 4)
                .unwrap(),
            [20., 21., 22., 23.]
        );
    }
    let parquet = info(dir.path(), "zstd.parquet");
    assert_eq!(parquet["format"], "parquet");
    assert_eq!(parquet["format_version"], "1");
    assert_eq!(
        parquet["columns"][0]["sequences_per_level"],
        serde_json::json!([12, 24])
    );
}

#[test]
fn parquet_row_groups_are_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("groups.parquet");
    let options = ParquetWriteOptions::default().with_row_group_size(RowGroupSize::Rows(2));
    let mut writer = ParquetFileWriter::create(&path, options).unwrap();
    for _ in 0..3 {
        writer.write(&words()).unwrap();
    }
    writer.finish().unwrap();
    let run = lodtensor_in(dir.path(), ["info", "groups.parquet"]);
    assert!(
        run.ok().contains(", 9 rows in 5 row groups, 2 columns\n"),
        "{run:?}"
    );
    lodtensor_in(dir.path(), ["validate", "groups.parquet"]).ok();
    let run = lodtensor_in(dir.path(), ["show", "groups.parquet", "--rows", "3..6"]);
    assert!(run.ok().contains("articles   3           1 2\n"), "{run:?}");
    // pyarrow's files: with and without the embedded Arrow schema.
    let data = crate::support::repo().join("tests/data/parquet");
    for name in [
        "pyarrow_nested_lists.parquet",
        "pyarrow_no_arrow_schema.parquet",
    ] {
        lodtensor_in(dir.path(), [&"validate".into(), &data.join(name)]).ok();
    }
    // Not Parquet.
    std::fs::write(dir.path().join("bad.parquet"), b"PAR1 and nothing else").unwrap();
    let run = lodtensor_in(dir.path(), ["info", "bad.parquet"]);
    assert!(
        run.fails(1).starts_with("lodtensor: bad.parquet: "),
        "{run:?}"
    );
}

#[test]
fn convert_refuses_what_the_output_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    std::fs::write(dir.path().join("old.pdtensor"), b"previous").unwrap();
    std::fs::write(dir.path().join("old.arrow"), b"previous").unwrap();
    let cases: [(&[&str], i32, &str); 7] = [
        (
            &["convert", "words.arrow", "old.pdtensor"],
            2,
            "lodtensor: old.pdtensor: a .pdtensor file holds one tensor, the input has 2 columns (write .pdiparams for all of them, or slice one column)",
        ),
        (
            &[
                "convert",
                "words.arrow",
                "old.arrow",
                "--compression",
                "snappy",
            ],
            2,
            "lodtensor: --compression snappy applies to .parquet output: .arrow files and shards take zstd or lz4",
        ),
        (
            &["convert", "words.arrow", "old.pdtensor", "--offsets", "i32"],
            2,
            "lodtensor: --offsets applies to .arrow and .parquet output: Paddle files always hold uint64 offsets",
        ),
        (
            &["convert", "words.arrow", "out.txt"],
            2,
            "lodtensor: out.txt: unsupported extension \"txt\" (expected .arrow, .arrows, .parquet, .pdtensor or .pdiparams)",
        ),
        (
            &["convert", "missing.arrow", "old.arrow"],
            3,
            "lodtensor: missing.arrow: no such file",
        ),
        (
            &["convert", "words.arrow", "no/such/dir/out.arrow"],
            3,
            "lodtensor: no/such/dir/out.arrow: No such file or directory (os error 2)",
        ),
        (
            &["convert", "old.pdtensor", "old.arrow"],
            1,
            "lodtensor: old.pdtensor: Paddle record 0: ",
        ),
    ];
    for (args, code, message) in cases {
        let run = lodtensor_in(dir.path(), args);
        assert!(run.fails(code).starts_with(message), "{args:?}: {run:?}");
    }
    // Nothing was replaced and no temporary file is left.
    assert_eq!(
        std::fs::read(dir.path().join("old.pdtensor")).unwrap(),
        b"previous"
    );
    assert_eq!(
        std::fs::read(dir.path().join("old.arrow")).unwrap(),
        b"previous"
    );
    assert_eq!(
        listing(dir.path()),
        ["old.arrow", "old.pdtensor", "words.arrow"]
    );
    // A uint32 column has no Paddle type: refused before the target is touched.
    let ids = lodtensor::LodTensor::from_lengths::<arrow_array::types::UInt32Type>(
        &[vec![2]],
        vec![1, 2],
        vec![],
    )
    .unwrap();
    let ds = Dataset::try_new(vec![lodtensor::Column::new("ids", ids)]).unwrap();
    crate::support::write(dir.path(), "u32.arrow", &[ds], Default::default());
    let run = lodtensor_in(dir.path(), ["convert", "u32.arrow", "old.pdtensor"]);
    assert_eq!(
        run.fails(1),
        "lodtensor: old.pdtensor: dtype uint32 has no Paddle data type"
    );
    assert_eq!(
        std::fs::read(dir.path().join("old.pdtensor")).unwrap(),
        b"previous"
    );
}

#[test]
fn convert_replaces_its_own_input() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    lodtensor_in(
        dir.path(),
        ["convert", "words.arrow", "words.arrow", "--offsets", "i32"],
    )
    .ok();
    assert_eq!(read_arrow(&dir.path().join("words.arrow")), words());
    assert_eq!(listing(dir.path()), ["words.arrow"]);
}

#[test]
fn slice_rows_and_sequences() {
    let dir = tempfile::tempdir().unwrap();
    batches_file(dir.path());
    // Rows across record batches, every column.
    let run = lodtensor_in(
        dir.path(),
        ["slice", "batches.arrow", "rows.arrow", "--rows", "2..7"],
    );
    assert!(
        run.ok()
            .starts_with("wrote rows 2..7 (5 rows of 12) of batches.arrow to rows.arrow: "),
        "{run:?}"
    );
    let rows = read_arrow(&dir.path().join("rows.arrow"));
    assert_eq!(
        rows.column("words").unwrap().lod().lengths()[0],
        [2, 3, 1, 2, 3]
    );
    assert_eq!(
        rows.column("label")
            .unwrap()
            .typed_values::<Int64Type>()
            .unwrap(),
        [12, 10, 11, 12, 10]
    );
    assert_eq!(rows.columns()[0].level_names(), ["articles", "sentences"]);

    // The <1, 10>-slice: sentence 10 of the file (sentence 4 of the second copy).
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "batches.arrow",
            "s.pdtensor",
            "--level",
            "1",
            "--index",
            "10",
        ],
    );
    assert_eq!(
        run.ok(),
        "wrote sequence 10 of level 1 (sentences) of column \"words\" of batches.arrow to s.pdtensor: 66 bytes\n"
    );
    let sentence = pd::read_tensor_file(dir.path().join("s.pdtensor")).unwrap();
    assert_eq!(
        sentence.typed_values::<Float32Type>().unwrap(),
        [20., 21., 22., 23.]
    );
    assert_eq!(sentence.lod().lengths(), [vec![2]]);

    // The <0, 2>-slice of one column keeps both level names; to Parquet.
    lodtensor_in(
        dir.path(),
        [
            "slice",
            "batches.arrow",
            "a.parquet",
            "--level",
            "0",
            "--index",
            "2",
            "--column",
            "words",
        ],
    )
    .ok();
    let article =
        read_parquet(dir.path().join("a.parquet"), &ParquetReadOptions::default()).unwrap();
    assert_eq!(article.columns().len(), 1);
    assert_eq!(
        article.columns()[0].level_names(),
        ["articles", "sentences"]
    );
    assert_eq!(
        article.column("words").unwrap().lod().lengths(),
        [vec![2], vec![2, 3]]
    );

    // Views of a Paddle file, written back as Paddle.
    lodtensor_in(
        dir.path(),
        [
            &"slice".into(),
            &paddle("int64.pdtensor"),
            &"r.pdtensor".into(),
            &"--rows".into(),
            &"1..".into(),
        ],
    )
    .ok();
    let r = pd::read_tensor_file(dir.path().join("r.pdtensor")).unwrap();
    assert_eq!(r.lod().offsets(), [vec![0, 1, 3], vec![0, 1, 3, 6]]);
}

#[test]
fn slice_errors() {
    let dir = tempfile::tempdir().unwrap();
    words_file(dir.path());
    let run = lodtensor_in(
        dir.path(),
        ["slice", "words.arrow", "o.arrow", "--rows", "1..9"],
    );
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: rows 1..9 are out of bounds (the data has 3 rows)"
    );
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "words.arrow",
            "o.arrow",
            "--level",
            "1",
            "--index",
            "6",
        ],
    );
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: level 1: sequence 6 does not exist (the level has 6 sequences)"
    );
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "words.arrow",
            "o.arrow",
            "--level",
            "2",
            "--index",
            "0",
        ],
    );
    assert_eq!(
        run.fails(4),
        "lodtensor: words.arrow: column \"words\", batch 0: level 2 does not exist (the LoD has 2 levels)"
    );
    let run = lodtensor_in(
        dir.path(),
        [
            "slice",
            "words.arrow",
            "o.arrow",
            "--level",
            "0",
            "--index",
            "0",
            "--column",
            "label",
        ],
    );
    assert!(
        run.fails(4)
            .contains("level 0 does not exist (the LoD has 0 levels)"),
        "{run:?}"
    );
    // clap: exactly one of --rows and --level with --index.
    for args in [
        &["slice", "words.arrow", "o.arrow"][..],
        &[
            "slice",
            "words.arrow",
            "o.arrow",
            "--rows",
            "1..2",
            "--level",
            "0",
            "--index",
            "1",
        ],
        &["slice", "words.arrow", "o.arrow", "--level", "0"],
    ] {
        let run = lodtensor_in(dir.path(), args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.starts_with("error: "), "{run:?}");
    }
    assert_eq!(listing(dir.path()), ["words.arrow"]);
}
