//! Concurrent `convert … DIR/ --append` processes lose no row; a conversion that fills the
//! disk exits 3 and leaves no shard; `vacuum` and `index` on the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lodtensor::arrow::types::Int64Type;
use lodtensor::io::ipc_writer::WriteOptions;
use lodtensor::shards::ShardedDataset;
use lodtensor::{Column, Dataset, Lod, LodTensor, Values};

use crate::support::common::files_under;
use crate::support::{lodtensor_in, lodtensor_limited, write};

/// `rows` rows: a 1-level `ids` column and a `label` column holding `first..first + rows`.
fn rows(first: i64, rows: usize) -> Dataset {
    let lengths: Vec<usize> = (0..rows).map(|r| 1 + r % 3).collect();
    let ids = (0..lengths.iter().sum::<usize>() as i64).collect();
    let ids = LodTensor::from_lengths::<Int64Type>(&[lengths], ids, vec![]).unwrap();
    let label = Values::from_vec::<Int64Type>((first..first + rows as i64).collect(), vec![]);
    let label = LodTensor::try_new(Lod::default(), label.unwrap()).unwrap();
    Dataset::try_new(vec![Column::new("ids", ids), Column::new("label", label)]).unwrap()
}

/// How many times each label is in the dataset `dir`, which must validate.
fn label_counts(dir: &Path) -> BTreeMap<i64, usize> {
    let data = ShardedDataset::open(dir).unwrap();
    data.validate().unwrap();
    let mut counts = BTreeMap::new();
    for part in data.rows(0..data.num_rows()).unwrap() {
        for label in part
            .column("label")
            .unwrap()
            .typed_values::<Int64Type>()
            .unwrap()
        {
            *counts.entry(*label).or_default() += 1;
        }
    }
    counts
}

/// `writers` processes append their own 5 rows at once, `rounds` times.
fn appending_processes(writers: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "first.arrow", &[rows(-1, 1)], WriteOptions::default());
    lodtensor_in(d, ["convert", "first.arrow", "ds/"]).ok();
    for w in 0..writers {
        let name = format!("w{w}.arrow");
        write(d, &name, &[rows(w as i64 * 5, 5)], WriteOptions::default());
    }
    for round in 0..rounds {
        let children: Vec<_> = (0..writers)
            .map(|w| {
                Command::new(env!("CARGO_BIN_EXE_lodtensor"))
                    .args(["convert", &format!("w{w}.arrow"), "ds/", "--append"])
                    .args(["--shard-rows", "2"])
                    .current_dir(d)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round}: {out:?}");
        }
    }
    let counts = label_counts(&d.join("ds"));
    let expected: BTreeMap<i64, usize> = std::iter::once((-1, 1))
        .chain((0..writers as i64 * 5).map(|l| (l, rounds)))
        .collect();
    assert_eq!(counts, expected, "{writers} writers: rows lost or doubled");
    let validate = lodtensor_in(d, ["validate", "ds/"]);
    assert!(validate.ok().starts_with("ok: ds/"));
}

#[test]
fn two_concurrent_appending_processes_lose_no_row() {
    appending_processes(2, 20);
}

#[test]
fn eight_concurrent_appending_processes_lose_no_row() {
    appending_processes(8, 20);
}

/// The `.arrow` files under `dir` (the shards, staged or not).
fn shards(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "arrow"))
        .collect()
}

/// A conversion into a directory on a full disk exits 3 and leaves no shard; an append
/// leaves the dataset as it was; a Parquet file that does not fit exits 3 and leaves
/// nothing. The writes run under a file-size limit of 64 KiB, half a shard (a full disk,
/// without root).
#[test]
fn a_full_disk_exits_3_and_leaves_no_shard() {
    const LIMIT: u64 = 64 << 10;
    let out = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<Dataset> = (0..40).map(|i| rows(i * 1000, 1000)).collect();
    write(dir.path(), "big.arrow", &big, WriteOptions::default());
    write(
        dir.path(),
        "small.arrow",
        &[rows(0, 3)],
        WriteOptions::default(),
    );
    let parquet = out.path().join("big.parquet");
    let parquet_args = [
        "convert",
        "big.arrow",
        parquet.to_str().unwrap(),
        "--compression",
        "none",
    ];
    let refused = lodtensor_limited(dir.path(), LIMIT, parquet_args);
    assert!(refused.fails(3).contains("too large"), "{refused:?}");
    assert!(
        files_under(out.path()).is_empty(),
        "{:?}",
        files_under(out.path())
    );
    let ds = out.path().join("ds");
    let new = out.path().join("new");
    let args = |input: &str, out: &Path, more: &[&str]| {
        let mut a = vec![input.to_owned(), format!("{}/", out.display())];
        a.extend(more.iter().map(|s| s.to_string()));
        a.insert(0, "convert".to_owned());
        a
    };
    let shards_args = args("big.arrow", &new, &["--shard-rows", "4000"]);
    lodtensor_limited(dir.path(), LIMIT, shards_args).fails(3);
    assert!(shards(&new).is_empty(), "{:?}", files_under(&new));
    assert!(!new.join("_lodtensor.json").exists());
    lodtensor_in(dir.path(), args("small.arrow", &ds, &[])).ok();
    let before = std::fs::read(ds.join("_lodtensor.json")).unwrap();
    let append = args("big.arrow", &ds, &["--append", "--shard-rows", "4000"]);
    lodtensor_limited(dir.path(), LIMIT, append).fails(3);
    assert_eq!(std::fs::read(ds.join("_lodtensor.json")).unwrap(), before);
    // The small file's shard (beside it, its lengths index object).
    let parts = |dir: &Path| {
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
        shards(dir)
            .into_iter()
            .filter(|p| name(p).is_some_and(|n| n.starts_with("part-")))
            .count()
    };
    assert_eq!(parts(&ds), 1, "{:?}", shards(&ds));
}

#[test]
fn vacuum_prints_what_it_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "small.arrow", &[rows(0, 3)], WriteOptions::default());
    lodtensor_in(d, ["convert", "small.arrow", "ds/", "--shard-rows", "2"]).ok();
    std::fs::create_dir_all(d.join("ds/_pending/part-dead")).unwrap();
    std::fs::write(d.join("ds/_pending/part-dead/part-00000.arrow"), b"x").unwrap();
    std::fs::write(d.join("ds/part-00005.arrow"), b"x").unwrap();
    let kept = lodtensor_in(d, ["vacuum", "ds"]);
    assert_eq!(kept.ok(), "vacuum ds: 0 files removed (grace 86400 s)\n");
    let removed = lodtensor_in(d, ["vacuum", "ds", "--grace", "0"]);
    assert_eq!(
        removed.ok(),
        "removed ds/_pending/part-dead/part-00000.arrow\nremoved ds/part-00005.arrow\n\
         vacuum ds: 2 files removed (grace 0 s)\n"
    );
    assert_eq!(label_counts(&d.join("ds")).len(), 3);
    let err = lodtensor_in(d, ["vacuum", "."]).fails(3).to_owned();
    assert!(err.contains("not a sharded dataset"), "{err}");
    assert!(d.join("small.arrow").exists());
    assert_eq!(lodtensor_in(d, ["vacuum", "ds", "--grace", "-1"]).code, 2);
}

#[test]
fn index_adds_the_lengths_index_of_a_dataset_without_one() {
    use lodtensor::shards::{MANIFEST_NAME, Manifest};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "small.arrow", &[rows(0, 5)], WriteOptions::default());
    lodtensor_in(d, ["convert", "small.arrow", "ds/", "--shard-rows", "2"]).ok();
    let path = d.join("ds").join(MANIFEST_NAME);
    let written = Manifest::load(&path).unwrap();
    assert_eq!(written.index.len(), 1); // `convert DIR/` writes it
    let mut old = written.clone();
    old.index.clear();
    old.write(&path).unwrap();
    let out = lodtensor_in(d, ["index", "ds"]);
    assert!(
        out.ok().starts_with("index ds: 3 shards in 1 object ("),
        "{}",
        out.ok()
    );
    assert_eq!(Manifest::load(&path).unwrap(), written); // the same object again
    let err = lodtensor_in(d, ["index", "nowhere"]).fails(3).to_owned();
    assert!(err.contains("nowhere"), "{err}");
}
