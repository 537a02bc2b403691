//! `lodtensor demo`: it leaves its files in a directory the user keeps, never overwrites
//! anything that is not a previous demo, and ends with commands that work on those files.

#![cfg(feature = "parquet")]

use std::process::Command;

use crate::support::common::python;
use crate::support::lodtensor_in;

/// The indented command lines after "next, try".
fn next_commands(stdout: &str) -> Vec<String> {
    let after = &stdout[stdout.find("next, try").expect("next commands")..];
    after
        .lines()
        .skip(1)
        .filter_map(|l| l.strip_prefix("  "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn demo_writes_to_lodtensor_demo_by_default_and_keeps_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = lodtensor_in(dir.path(), ["demo", "--docs", "3"])
        .ok()
        .to_owned();
    let out = dir.path().join("lodtensor-demo");
    for name in ["documents.arrow", "documents.parquet", ".lodtensor-demo"] {
        assert!(out.join(name).is_file(), "{name} missing:\n{stdout}");
    }
    assert!(stdout.contains("wrote 3 documents to lodtensor-demo/documents.arrow in 1 batch:"));
    let commands = next_commands(&stdout);
    assert_eq!(commands.len(), 5, "{stdout}");
    assert!(commands[0].starts_with("lodtensor info "));
    assert!(commands[3].contains("pyarrow"));
    assert!(commands[4].contains("duckdb"));
    // A second demo overwrites the first one's files.
    lodtensor_in(dir.path(), ["demo", "--docs", "2"]).ok();
}

#[test]
fn the_next_commands_run_on_the_demo_files() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = lodtensor_in(dir.path(), ["demo", "--docs", "2", "--out", "d"])
        .ok()
        .to_owned();
    let commands = next_commands(&stdout);
    for command in &commands[..3] {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let out = lodtensor_in(dir.path(), &args);
        assert!(!out.ok().is_empty(), "{command}");
    }
    assert!(dir.path().join("d/copy.parquet").is_file());
    let Some(python) = python() else {
        return;
    };
    for command in &commands[3..] {
        let command = command.replacen("python3", &python.display().to_string(), 1);
        let out = Command::new("sh")
            .args(["-c", &command])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && !stdout.is_empty(),
            "{command}\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn demo_refuses_to_overwrite_what_is_not_a_demo() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("mine")).unwrap();
    std::fs::write(dir.path().join("mine/notes.txt"), "keep me").unwrap();
    let err = lodtensor_in(dir.path(), ["demo", "--docs", "2", "--out", "mine"]);
    assert!(err.fails(2).contains("not a previous demo's"), "{err:?}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("mine")).unwrap().count(),
        1
    );
    std::fs::write(dir.path().join("file"), "").unwrap();
    let err = lodtensor_in(dir.path(), ["demo", "--docs", "2", "--out", "file"]);
    assert!(err.fails(2).contains("not a directory"), "{err:?}");
    // An empty directory is fine.
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    lodtensor_in(dir.path(), ["demo", "--docs", "2", "--out", "empty"]).ok();
}
