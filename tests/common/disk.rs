//! Files on disk for the tests of writers: every file under a directory, and a child
//! process whose files cannot grow (a full disk, without root).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file under `dir`, in no particular order (none when `dir` is missing).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => out.extend(files_under(&path)),
            false => out.push(path),
        }
    }
    out
}

/// Runs the `#[ignore]`d test `child` (its path in this test binary, `ipc::child_full_disk`)
/// in a child process whose files cannot grow past `bytes` (`prlimit --fsize`, no root
/// needed): the kernel refuses the write that would (`EFBIG`, "File too large") as a full
/// disk refuses one (`ENOSPC`). `SIGXFSZ` is ignored so that the write returns the error
/// instead of killing the child. `envs` tell the child what to do. Returns the child's
/// stdout; the test fails (never skips) when `prlimit` is missing or the child fails.
#[track_caller]
pub fn run_with_file_size_limit(
    child: &str,
    bytes: u64,
    envs: &[(&str, &std::ffi::OsStr)],
) -> String {
    // `$0` the test binary, `$1` the child, `$2` the limit.
    let script =
        "trap '' XFSZ; exec prlimit --fsize=\"$2\" -- \"$0\" \"$1\" --exact --ignored --nocapture";
    let limit = bytes.to_string();
    let setting = format!("prlimit --fsize={bytes}");
    run_ignored_child(script, &[limit.as_ref()], child, envs, &setting)
}

/// Runs the `#[ignore]`d test `child` of this test binary through the `bash` script
/// `script`, to which the binary is `$0`, `child` `$1` and `args` the next ones, with
/// `envs`; fails the test unless the child ran and passed (`setting` says how it was run).
/// Returns the child's stdout.
#[track_caller]
pub(super) fn run_ignored_child(
    script: &str,
    args: &[&std::ffi::OsStr],
    child: &str,
    envs: &[(&str, &std::ffi::OsStr)],
    setting: &str,
) -> String {
    let out = Command::new("bash")
        .args(["-c", script])
        .arg(std::env::current_exe().unwrap())
        .arg(child)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{child} under {setting}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The line of `stdout` that starts with `tag`, without it: what a child run by
/// [`run_with_file_size_limit`] or [`super::run_on_small_disk`] printed.
#[track_caller]
pub fn child_line<'a>(stdout: &'a str, tag: &str) -> &'a str {
    let line = stdout.lines().find_map(|l| l.strip_prefix(tag));
    line.unwrap_or_else(|| panic!("no line {tag:?} in the child's output: {stdout}"))
}

/// Whether `e` is what a write past the disk's room or the file-size limit gives.
pub fn is_disk_full(e: &lodtensor::Error) -> bool {
    matches!(e.kind(), lodtensor::ErrorKind::Io(io) if matches!(io.raw_os_error(), Some(27 | 28)))
}
