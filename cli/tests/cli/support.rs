//! Running the built `lodtensor` binary on files written with the library.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use lodtensor::Dataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};

#[path = "../../../tests/common/mod.rs"]
pub mod common;

/// What a run printed and its exit code.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts success with nothing on stderr; returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.stderr, "", "{self:?}");
        &self.stdout
    }

    /// Asserts failure with `code`, nothing on stdout and one `lodtensor: …` line on stderr
    /// (no panic, no backtrace); returns the line.
    #[track_caller]
    pub fn fails(&self, code: i32) -> &str {
        assert_eq!(self.code, code, "{self:?}");
        assert_eq!(self.stdout, "", "{self:?}");
        assert!(self.stderr.starts_with("lodtensor: "), "{self:?}");
        assert_eq!(self.stderr.lines().count(), 1, "{self:?}");
        assert!(!self.stderr.contains("panicked"), "{self:?}");
        self.stderr.trim_end()
    }
}

/// Runs `lodtensor ARGS…` in `dir`.
pub fn lodtensor_in<I, S>(dir: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    lodtensor_env(dir, args, [])
}

/// Runs `lodtensor ARGS…` in `dir` with the environment variables `envs` set too.
pub fn lodtensor_env<I, S>(
    dir: &Path,
    args: I,
    envs: impl IntoIterator<Item = (&'static str, String)>,
) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run(
        Command::new(env!("CARGO_BIN_EXE_lodtensor")).args(args),
        dir,
        envs,
    )
}

/// Runs `lodtensor ARGS…` in `dir`, its files unable to grow past `bytes` (`prlimit
/// --fsize`, no root needed): a write past them fails as on a full disk (`EFBIG` for
/// `ENOSPC`; `SIGXFSZ` ignored so that the write returns the error).
pub fn lodtensor_limited<I, S>(dir: &Path, bytes: u64, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let script = format!("trap '' XFSZ; exec prlimit --fsize={bytes} -- \"$@\"");
    let mut command = Command::new("bash");
    command
        .args(["-c", &script, "bash", env!("CARGO_BIN_EXE_lodtensor")])
        .args(args);
    run(&mut command, dir, [])
}

/// Runs `command` in `dir` with `envs` set too.
fn run(
    command: &mut Command,
    dir: &Path,
    envs: impl IntoIterator<Item = (&'static str, String)>,
) -> Run {
    let out = command
        .current_dir(dir)
        .env("RUST_BACKTRACE", "1")
        .envs(envs)
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// A golden Paddle file.
pub fn paddle(name: &str) -> PathBuf {
    crate::support::repo().join("tests/data/paddle").join(name)
}

/// The reference example (`common::reference_dataset`) with its words in a column `words`
/// and the labels 10, 11, 12.
pub fn words() -> Dataset {
    common::reference_dataset("words", [10, 11, 12])
}

/// Writes `datasets` to `dir/name` with `options`.
pub fn write(dir: &Path, name: &str, datasets: &[Dataset], options: WriteOptions) -> PathBuf {
    let path = dir.join(name);
    let mut writer = DatasetWriter::create(&path, options).unwrap();
    for d in datasets {
        writer.write(d).unwrap();
    }
    writer.finish().unwrap();
    path
}

/// `words.arrow`: the reference example in one batch.
pub fn words_file(dir: &Path) -> PathBuf {
    write(dir, "words.arrow", &[words()], WriteOptions::default())
}

/// `batches.arrow`: the reference example written four times, one article per record
/// batch (12 rows in 12 batches).
pub fn batches_file(dir: &Path) -> PathBuf {
    let ds = words();
    let all = vec![ds.clone(), ds.clone(), ds.clone(), ds];
    write(
        dir,
        "batches.arrow",
        &all,
        WriteOptions::default().with_batch_bytes(1),
    )
}

/// The repository's root (the library's crate), where `tests/data`, README.md and docs/ are.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the CLI crate is a directory of the repository")
}
