//! A child process on a really small disk: a tmpfs of a few MiB mounted in a new user and
//! mount namespace (`unshare`, no root needed where the kernel allows unprivileged user
//! namespaces), seen by that child only and gone when it exits.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// Whether this process can give a child a small disk ([`run_on_small_disk`]): a test
/// calls it first. Where `unshare` is missing or the kernel refuses the namespace or the
/// mount, this says why on one line of stderr and fails the test, unless
/// `LODTENSOR_NO_NAMESPACES=1`: then it returns `false` and the test skips. `prlimit
/// --fsize` ([`super::run_with_file_size_limit`]) is no stand-in: it bounds each file, not
/// the sum of a directory's files, so a cache that outgrows its disk would pass under it.
#[track_caller]
pub fn small_disks_available(test: &str) -> bool {
    let Some(why) = namespaces_refused() else {
        return true;
    };
    eprintln!("{test}: no small disk, {why}");
    let allowed = std::env::var_os("LODTENSOR_NO_NAMESPACES").is_some_and(|v| v == "1");
    assert!(
        allowed,
        "{test} needs a tmpfs in a user namespace: {why} (set LODTENSOR_NO_NAMESPACES=1 to \
         skip the small-disk tests)"
    );
    false
}

/// Runs the `#[ignore]`d test `child` (its path in this test binary,
/// `hostile_remote::child_reads_every_row_on_a_small_disk`) in a child process that sees a
/// tmpfs of `bytes` bytes (mode `0700`) mounted on the directory `dir`, in a new user and
/// mount namespace: its writes there past the disk's room fail with `ENOSPC`, as on a full
/// disk. `envs` tell the child what to do. Returns the child's stdout; the test fails when
/// the child does (or when namespaces are refused: see [`small_disks_available`]).
#[track_caller]
pub fn run_on_small_disk(child: &str, dir: &Path, bytes: u64, envs: &[(&str, &OsStr)]) -> String {
    // `$0` the test binary, `$1` the child, `$2` the directory, `$3` the disk's size.
    let script = "exec unshare --user --map-root-user --mount -- sh -c \
        'mount -t tmpfs -o size=\"$3\",mode=0700 lodtensor-small-disk \"$2\" \
        && exec \"$0\" \"$1\" --exact --ignored --nocapture' \"$0\" \"$1\" \"$2\" \"$3\"";
    let size = bytes.to_string();
    let args = [dir.as_os_str(), OsStr::new(&size)];
    let setting = format!("a tmpfs of {bytes} bytes on {}", dir.display());
    super::disk::run_ignored_child(script, &args, child, envs, &setting)
}

/// Why this process cannot mount a tmpfs in a new user and mount namespace, if it cannot
/// (tried on a directory of its own).
fn namespaces_refused() -> Option<String> {
    let probe = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--"])
        .args(["mount", "-t", "tmpfs", "-o", "size=64k", "lodtensor-probe"])
        .arg(probe.path())
        .output();
    match out {
        Err(e) => Some(format!("unshare (util-linux) does not run: {e}")),
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
            Some(format!(
                "unshare --user --map-root-user --mount and a tmpfs refused ({}): {said}",
                out.status
            ))
        }
        Ok(_) => None,
    }
}
