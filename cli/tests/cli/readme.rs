//! The command-line examples of the README and of docs/cli.md, run: every `$ command` line of
//! their text blocks, in order, in one directory, must print what the document shows after it
//! (timings aside).

#![cfg(feature = "parquet")]

use std::path::Path;
use std::process::Command;

/// `in 12 ms` → `in N ms`.
fn without_timings(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" ms") {
        let (head, tail) = rest.split_at(at);
        let digits = head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&head[..head.len() - digits]);
        out.push_str(if digits > 0 { "N" } else { "" });
        out.push_str(" ms");
        rest = &tail[3..];
    }
    out + rest
}

#[test]
fn readme_examples_print_what_the_readme_shows() {
    let root = crate::support::repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("## Command line").unwrap()..];
    let section = &section[..3 + section[3..].find("\n## ").unwrap()];
    let checked = run_examples(section);
    assert!(checked >= 2, "only {checked} examples found");
}

#[test]
fn cli_reference_examples_print_what_it_shows() {
    let root = crate::support::repo();
    let reference = std::fs::read_to_string(root.join("docs/cli.md")).unwrap();
    let checked = run_examples(&reference);
    assert!(checked >= 12, "only {checked} examples found");
}

/// Runs the `sh` setup block of `section`, then every `$ command` of its text blocks,
/// checking each output; returns how many were checked.
fn run_examples(section: &str) -> usize {
    let root = crate::support::repo();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("tests"), dir.path().join("tests")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_lodtensor")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shell = |command: &str| {
        let out = Command::new("sh")
            .args(["-c", &format!("( {command} ) 2>&1")])
            .current_dir(dir.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    // The setup the README gives in its `sh` block.
    let setup = section
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    for line in setup.lines() {
        shell(line);
    }
    let mut checked = 0;
    for block in section.split("```text\n").skip(1) {
        let block = block.split("```").next().unwrap();
        let mut lines = block.lines().peekable();
        while let Some(line) = lines.next() {
            let Some(command) = line.strip_prefix("$ ") else {
                continue;
            };
            let mut expected = String::new();
            while let Some(next) = lines.next_if(|l| !l.starts_with("$ ")) {
                expected += next;
                expected += "\n";
            }
            let found = shell(command);
            if expected.starts_with('{') {
                let e: serde_json::Value = serde_json::from_str(&expected).unwrap();
                let f: serde_json::Value = serde_json::from_str(&found).unwrap();
                assert_eq!(f, e, "{command}");
            } else {
                assert_eq!(
                    without_timings(&found),
                    without_timings(&expected),
                    "{command}"
                );
            }
            checked += 1;
        }
    }
    checked
}

/// The README opens with `cargo run --release -p lodtensor --example demo`: the library's
/// `demo` example, which needs only the library's default features (`-p` keeps the CLI's out
/// of the build), so the first build a reader waits for is Arrow's and Parquet's (`scripts/test` runs the command
/// itself, as written).
#[test]
fn readme_first_command_runs_the_library_demo_example() {
    let root = crate::support::repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let first = readme
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap();
    assert!(
        first.starts_with("cargo run --release -p lodtensor --example demo "),
        "{first}"
    );
    assert!(root.join("examples/demo.rs").is_file());
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let demo = manifest.find("name = \"demo\"");
    assert!(
        demo.is_none_or(|at| !manifest[at..]
            .split("[[")
            .next()
            .unwrap()
            .contains("required-features")),
        "the demo example needs features beyond the defaults"
    );
}
