//! `lodtensor-bench` at a tiny scale: it runs, writes the report and the README section,
//! and has every row (with pyarrow's figures when `LODTENSOR_PYTHON` is set). Correctness
//! only: no figure is checked.

use std::process::Command;

/// The start of every row of the table, in order, after its header and rule.
fn rows() -> Vec<String> {
    let mut rows: Vec<String> = [
        "| machine: memcpy of the values in 1 MiB pieces |",
        "| machine: plain `write` of the values to a new file in the page cache (",
        "| machine: plain `write` of the values to a new file on the disk + `fsync` |",
        "| machine: raw sum of the mapped `f32` values |",
        "| write, `DatasetWriter`, into the page cache (",
        "| write, `DatasetWriter` to the disk (atomic: `fsync` + rename) | ",
        "| write, `DatasetWriter` to the disk (atomic: `fsync` + rename) | ",
        "| open with validation, `MappedDataset::open` |",
        "| open with validation, `MappedDataset::open` |",
        "| random sentence view, `Sequences::get` |",
        "| random sentence view, `Sequences::get` |",
        "| random sentence view, `LodTensor::slice_sequence` |",
        "| full scan, every sentence through `Sequences::get` |",
    ]
    .map(String::from)
    .to_vec();
    let codecs = ["none", "snappy", "zstd(1)"];
    for codec in codecs {
        for threads in ["1 thread", "2 threads"] {
            rows.push(format!("| Parquet export, {codec}, {threads} |"));
        }
    }
    for values in ["normal", "low-entropy"] {
        for codec in codecs {
            let name = format!("{values} values, {codec}");
            rows.extend([
                format!("| Parquet export to a file, {name}, 1 thread |"),
                format!("| Parquet export to a file, {name}, every core |"),
                format!("| Parquet import, `read_parquet`, {name} |"),
                format!("| `lodtensor convert` .parquet → .arrow, whole process, {name} |"),
                format!("| `lodtensor convert` .arrow → .parquet, whole process, {name} |"),
            ]);
        }
    }
    rows.push("| peak RSS of `lodtensor convert` .parquet → .arrow (normal, zstd(1)) |".into());
    rows.extend(
        [
            "| sum-pool of every sentence, `sequence_pool` |",
            "| mean-pool of every sentence, `sequence_pool` |",
            "| 4096-token batches, `Loader`, in file order (views) |",
            "| 4096-token batches, `Loader`, shuffled (gathered) |",
        ]
        .map(String::from),
    );
    rows
}

#[test]
fn tiny_run_writes_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.md");
    let readme = dir.path().join("README.md");
    std::fs::write(
        &readme,
        "# x\n\nbefore\n<!-- bench:begin -->\nold figures\n<!-- bench:end -->\nafter\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_lodtensor-bench"))
        .args(["--scale", "0.001", "--out"])
        .arg(&out)
        .arg("--readme")
        .arg(&readme)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let report = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = report.lines().filter(|l| l.starts_with('|')).collect();
    let rows = rows();
    assert_eq!(lines.len(), 2 + rows.len(), "{report}");
    assert!(lines[0].starts_with("| measurement |") && lines[1].starts_with("|---|"));
    for (line, start) in lines[2..].iter().zip(&rows) {
        assert!(
            line.starts_with(start.as_str()),
            "{line:?} should start with {start:?}"
        );
        assert_eq!(line.matches(" | ").count(), 5, "six cells: {line}");
    }
    assert!(report.contains("--scale 0.001"));
    assert!(report.contains("**best**"));
    if std::env::var_os("LODTENSOR_PYTHON").is_some() {
        assert!(!report.contains("not measured"), "{report}");
        assert!(report.contains("pyarrow 2"), "{report}");
    }

    let readme = std::fs::read_to_string(&readme).unwrap();
    assert!(readme.starts_with("# x\n\nbefore\n<!-- bench:begin -->\nMeasured "));
    assert!(readme.ends_with("<!-- bench:end -->\nafter\n"));
    assert!(!readme.contains("old figures"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 2, "data files left: {leftovers:?}");
}

#[test]
fn a_readme_without_markers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let readme = dir.path().join("README.md");
    std::fs::write(&readme, "# x\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_lodtensor-bench"))
        .args(["--scale", "0.001", "--readme"])
        .arg(&readme)
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("<!-- bench:begin -->"));
}
