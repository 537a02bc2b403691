//! `lodtensor tokenize` on real files with the fixture tokenizer (`tests/data/tokenize/`):
//! what it writes, a run killed midway and started again (every document once), and bad
//! inputs named with their exit codes.

#![cfg(feature = "tokenize")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lodtensor::arrow::types::UInt16Type;
use lodtensor::shards::ShardedDataset;
use lodtensor::tokenize::Tokenizer;

use crate::support::lodtensor_in;

pub(crate) fn tokenizer() -> String {
    lodtensor::doc_fixtures::tokenizer_json()
        .to_string_lossy()
        .into_owned()
}

/// The token ids of every row of the dataset in `dir`, flattened per row.
pub(crate) fn rows(dir: &Path) -> Vec<Vec<u16>> {
    let data = ShardedDataset::open(dir).unwrap();
    (0..data.num_rows())
        .map(|row| {
            let sample = data.sample(row).unwrap();
            let tokens = sample.column("tokens").unwrap();
            tokens.typed_values::<UInt16Type>().unwrap().to_vec()
        })
        .collect()
}

pub(crate) fn jsonl(path: &Path, docs: &[&str]) {
    let lines: Vec<String> = docs
        .iter()
        .map(|d| serde_json::json!({ "text": d }).to_string())
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn tokenizes_text_files_and_json_lines_into_shards() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("texts")).unwrap();
    std::fs::write(dir.path().join("texts/a.txt"), "LoD tensors, mapped.").unwrap();
    std::fs::write(dir.path().join("texts/b.txt"), "").unwrap();
    jsonl(&dir.path().join("c.jsonl"), &["one\n\ntwo", "three"]);
    let run = lodtensor_in(
        dir.path(),
        [
            "tokenize",
            "texts",
            "c.jsonl",
            "out",
            "--tokenizer",
            &tokenizer(),
        ],
    );
    assert!(run.ok().contains("4 documents"), "{run:?}");
    let got = rows(&dir.path().join("out"));
    let eos = Tokenizer::from_file(tokenizer()).unwrap().eos_id().unwrap() as u16;
    assert_eq!(got.len(), 4);
    assert!(got.iter().all(|doc| doc.last() == Some(&eos)));
    assert_eq!(got[1], [eos]); // the empty document
    // Two levels with --split: the first JSON document is two pieces.
    let run = lodtensor_in(
        dir.path(),
        [
            "tokenize",
            "c.jsonl",
            "split",
            "--tokenizer",
            &tokenizer(),
            "--split",
            r"\n\n",
            "--eos",
            "none",
        ],
    );
    run.ok();
    let data = ShardedDataset::open(dir.path().join("split")).unwrap();
    let first = data.sample(0).unwrap();
    assert_eq!(first.column("tokens").unwrap().lod().lengths()[0], [2]);
}

#[test]
fn a_killed_run_started_again_writes_every_document_once() {
    let dir = tempfile::tempdir().unwrap();
    let docs: Vec<String> = (0..30)
        .map(|i| format!("document {i} of the corpus"))
        .collect();
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    jsonl(&dir.path().join("a.jsonl"), &docs[..10]);
    jsonl(&dir.path().join("b.jsonl"), &docs[10..20]);
    // The last input is a FIFO no one writes to: the run blocks reading it, and is killed.
    let fifo = dir.path().join("z.txt");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let exe = env!("CARGO_BIN_EXE_lodtensor");
    let args = [
        "tokenize",
        "a.jsonl",
        "b.jsonl",
        "z.txt",
        "out",
        "--tokenizer",
    ];
    let mut child = Command::new(exe)
        .args(args)
        .arg(tokenizer())
        .args(["--shard-rows", "3", "--quiet"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = dir.path().join("out");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pending = || {
        std::fs::read_dir(&out).map_or(0, |d| {
            (d.flatten())
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("_lodtensor.pending.")
                })
                .count()
        })
    };
    while pending() < 2 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended");
        assert!(Instant::now() < deadline, "no pending shards were written");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !out.join("_lodtensor.json").exists(),
        "killed before the commit"
    );
    // The FIFO becomes a file of the last 10 documents; the run started again.
    std::fs::remove_file(&fifo).unwrap();
    std::fs::write(&fifo, docs[20..].join("\n")).unwrap();
    let again = Command::new(exe)
        .args(args)
        .arg(tokenizer())
        .args(["--shard-rows", "3", "--quiet"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    let got = rows(&out);
    assert_eq!(got.len(), 21); // 20 JSON documents once, and the text file
    let fresh = dir.path().join("fresh");
    let run = lodtensor_in(
        dir.path(),
        [
            "tokenize",
            "a.jsonl",
            "b.jsonl",
            "z.txt",
            "fresh",
            "--tokenizer",
            &tokenizer(),
        ],
    );
    run.ok();
    assert_eq!(got, rows(&fresh));
}

#[test]
fn bad_inputs_are_named_with_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let run = lodtensor_in(
        dir.path(),
        ["tokenize", "missing.txt", "out", "--tokenizer", &tok],
    );
    assert!(run.fails(3).contains("missing.txt"), "{run:?}");
    std::fs::write(dir.path().join("ok.txt"), "fine").unwrap();
    let run = lodtensor_in(
        dir.path(),
        ["tokenize", "ok.txt", "out", "--tokenizer", "no.json"],
    );
    assert!(run.fails(3).contains("no.json"), "{run:?}");
    std::fs::write(
        dir.path().join("bad.jsonl"),
        "{\"text\": \"a\"}\n{\"text\": 3}\n",
    )
    .unwrap();
    let run = lodtensor_in(
        dir.path(),
        ["tokenize", "bad.jsonl", "out", "--tokenizer", &tok],
    );
    let line = run.fails(1);
    assert!(
        line.contains("bad.jsonl") && line.contains("line 2"),
        "{line}"
    );
    let run = lodtensor_in(
        dir.path(),
        [
            "tokenize",
            "ok.txt",
            "out",
            "--tokenizer",
            &tok,
            "--bos",
            "auto",
        ],
    );
    assert!(run.fails(1).contains("bos"), "{run:?}");
    assert!(!dir.path().join("out/_lodtensor.json").exists());
}
