//! pyarrow's and numpy's figures on the same file: `bench/compare_pyarrow.py`, run with
//! `LODTENSOR_PYTHON` (default `.venv/bin/python`), prints them as one JSON object.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The script, in this crate's sources.
pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/compare_pyarrow.py");

/// Medians in seconds, from the script.
pub struct PyFigures {
    /// `pyarrow X, numpy Y`.
    pub versions: String,
    /// `ipc.new_file` + `write_table` + `fsync`.
    pub write_ipc: f64,
    /// `pa.memory_map` + `ipc.open_file` + `read_all`.
    pub open: f64,
    /// One random sentence view (offsets + numpy slice).
    pub view: f64,
    /// `pq.write_table` into memory, by codec key (see `export::CODECS`).
    pub parquet: BTreeMap<String, f64>,
    /// `np.add.reduceat` over every sentence.
    pub pool_sum: f64,
    /// The same divided by the lengths.
    pub pool_mean: f64,
}

/// The Python to run: `LODTENSOR_PYTHON`, else `.venv/bin/python`.
pub fn interpreter() -> PathBuf {
    std::env::var_os("LODTENSOR_PYTHON").map_or_else(|| ".venv/bin/python".into(), PathBuf::from)
}

/// Runs the script with `args` and parses what it prints; `Err` says why there are no
/// figures (no Python, no pyarrow, a failure: the last line the script wrote to stderr).
pub fn run_script(args: &[&OsStr]) -> Result<Value, String> {
    let python = interpreter();
    let out = Command::new(&python)
        .arg(SCRIPT)
        .args(args)
        .output()
        .map_err(|e| format!("{} did not start: {e}", python.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!(
            "{} failed: {}",
            python.display(),
            last.unwrap_or("no message")
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("output: {e}"))
}

/// Runs the script on `file`, with `dir` for its own files.
pub fn run(file: &Path, dir: &Path, group_rows: usize) -> Result<PyFigures, String> {
    let group_rows = group_rows.to_string();
    let json = run_script(&[file.as_os_str(), dir.as_os_str(), group_rows.as_ref()])?;
    let seconds = |v: &Value, key: &str| {
        v[key]
            .as_f64()
            .ok_or_else(|| format!("output: no number {key:?}"))
    };
    let parquet = json["parquet"]
        .as_object()
        .ok_or("output: no \"parquet\" object")?
        .keys()
        .map(|k| Ok((k.clone(), seconds(&json["parquet"], k)?)))
        .collect::<Result<_, String>>()?;
    Ok(PyFigures {
        versions: format!(
            "pyarrow {}, numpy {}",
            json["pyarrow"].as_str().unwrap_or("?"),
            json["numpy"].as_str().unwrap_or("?")
        ),
        write_ipc: seconds(&json, "write_ipc")?,
        open: seconds(&json, "open")?,
        view: seconds(&json, "view")?,
        parquet,
        pool_sum: seconds(&json, "pool_sum")?,
        pool_mean: seconds(&json, "pool_mean")?,
    })
}
