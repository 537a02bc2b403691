//! Support shared by the tests, the benches and the fuzz targets, without test-only
//! dependencies: finding Python, the synthetic documents generator, a view check.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use lodtensor::LodTensor;
use lodtensor::{rng::SplitMix64, synthetic::Documents};

/// The Python with pyarrow and numpy to run: `LODTENSOR_PYTHON` (set but empty: none), else
/// the project's `.venv` (which the test command creates), else none.
pub fn find_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    python_from(
        std::env::var_os("LODTENSOR_PYTHON"),
        venv.exists().then_some(venv),
    )
}

/// `find_python()`'s rule on what it was given: the variable's path, unless it is empty; else
/// the `.venv`'s.
pub fn python_from(variable: Option<std::ffi::OsString>, venv: Option<PathBuf>) -> Option<PathBuf> {
    match variable {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => venv,
    }
}

/// The Python for a test that needs one, or `None` when the test is to skip (saying so on
/// stderr). When the test command requires Python (`LODTENSOR_REQUIRE_PYTHON=1`, which
/// `scripts/test` sets), a missing Python panics instead, so that a broken Python setup
/// fails the run rather than passing it with the Python tests skipped.
#[track_caller]
pub fn python() -> Option<PathBuf> {
    let required = std::env::var_os("LODTENSOR_REQUIRE_PYTHON").is_some_and(|v| v == "1");
    match python_for_test(find_python(), required) {
        Ok(python) => python,
        Err(why) => panic!("{why}"),
    }
}

/// `python()`'s rule: the Python found, a skip (`Ok(None)`, said on stderr) when
/// there is none and none is required, else why the test fails.
pub fn python_for_test(found: Option<PathBuf>, required: bool) -> Result<Option<PathBuf>, String> {
    const HOW: &str = "set LODTENSOR_PYTHON to a Python with pyarrow and numpy, or create .venv \
        (scripts/test does)";
    match (found, required) {
        (Some(python), _) => Ok(Some(python)),
        (None, false) => {
            eprintln!("skipped: no Python ({HOW})");
            Ok(None)
        }
        (None, true) => Err(format!(
            "LODTENSOR_REQUIRE_PYTHON=1 but no Python was found: {HOW}"
        )),
    }
}

/// Runs the benchmark script `script` (under `benches/`) with `args` and returns its
/// `name value` lines, or why there are none (no Python, a failure).
pub fn script_figures(
    script: &str,
    args: &[&std::ffi::OsStr],
) -> Result<std::collections::HashMap<String, f64>, String> {
    let python = find_python().ok_or("no Python with pyarrow")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches")
        .join(script);
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(' ')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect())
}

/// Runs `python script ARGS…`, asserting success (else printing its output); its stdout.
pub fn run_script(python: &Path, script: &Path, args: &[&Path]) -> String {
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The `tokens` column of seeded synthetic documents (`sentences` and `tokens` per
/// sentence as inclusive ranges, `f32[dim]` tokens of incompressible uniform floats) whose
/// values take about `bytes` bytes.
pub fn documents(
    sentences: (usize, usize),
    tokens: (usize, usize),
    dim: usize,
    bytes: u64,
    seed: u64,
) -> LodTensor {
    let shape = Documents {
        sentences,
        tokens,
        dim,
    };
    let docs = shape.docs_for_bytes(bytes);
    let dataset = shape
        .generate(&mut SplitMix64::new(seed), docs)
        .expect("the generator makes valid documents");
    dataset
        .column("tokens")
        .expect("the generator names its column tokens")
        .clone()
}

/// Whether `inner` lies inside `outer` (a view's bytes inside its source or mapping).
pub fn inside(inner: &[u8], outer: &[u8]) -> bool {
    let (a, b) = (inner.as_ptr() as usize, outer.as_ptr() as usize);
    a >= b && a + inner.len() <= b + outer.len()
}
