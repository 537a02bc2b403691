//! `lt.tokenize`'s native part: files and Arrow streams → token-id shards, a directory or a
//! URL (`lodtensor::tokenize`). The package's `tokenize` resolves globs, directories,
//! Parquet files (through pyarrow) and HuggingFace datasets first.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lodtensor::shards::{RemoteOptions, ShardOptions};
use lodtensor::tokenize::{Input, Special, TokenizeOptions, Tokenizer};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::error::{IntoPy, invalid, size_option};
use crate::ffi::{import_stream, write_options};
use crate::shards::manifest_dict;

/// Tokenizes `inputs` (each a path or a URL, or a `(name, stream)` pair of anything with
/// `__arrow_c_stream__`) into the sharded dataset at `output` with the tokenizer file
/// `tokenizer_path` or the tokenizer JSON `tokenizer_json`. Returns the manifest committed;
/// with `task=(i, n)`, writes only task `i`'s share of the units of `n` tasks, commits
/// nothing and returns that task's progress (`documents`, `tokens`, `skipped`).
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (inputs, output, *, tokenizer_path = None, tokenizer_json = None,
    field = None, eos = None, bos = None, split = None, shard_rows = None,
    storage_options = None, compression = None, task = None))]
#[allow(clippy::too_many_arguments)]
pub fn tokenize<'py>(
    py: Python<'py>,
    inputs: Vec<Bound<'py, PyAny>>,
    output: String,
    tokenizer_path: Option<PathBuf>,
    tokenizer_json: Option<String>,
    field: Option<String>,
    eos: Option<&Bound<'py, PyAny>>,
    bos: Option<&Bound<'py, PyAny>>,
    split: Option<String>,
    shard_rows: Option<&Bound<'py, PyAny>>,
    storage_options: Option<BTreeMap<String, String>>,
    compression: Option<&str>,
    task: Option<(usize, usize)>,
) -> PyResult<Bound<'py, PyAny>> {
    let tokenizer = py
        .detach(|| load(tokenizer_path, tokenizer_json))
        .py_err()?;
    let mut options = TokenizeOptions::default()
        .with_eos(special("eos", eos, Special::Auto)?)
        .with_bos(special("bos", bos, Special::None)?)
        .with_shard_options(shard_options(shard_rows, compression)?);
    if let Some(field) = field {
        options = options.with_field(field);
    }
    if let Some(split) = split {
        options = options.with_split(split);
    }
    let inputs = inputs
        .iter()
        .map(|item| input(py, item))
        .collect::<PyResult<Vec<_>>>()?;
    if let Some(storage) = storage_options {
        options = with_storage(options, &inputs, &output, storage)?;
    }
    if let Some((task, tasks)) = task {
        let done = py
            .detach(|| {
                lodtensor::tokenize::tokenize_task(
                    inputs, &output, &tokenizer, &options, task, tasks,
                )
            })
            .py_err()?;
        let dict = pyo3::types::PyDict::new(py);
        dict.set_item("documents", done.documents)?;
        dict.set_item("tokens", done.tokens)?;
        dict.set_item("skipped", done.skipped)?;
        return Ok(dict.into_any());
    }
    let manifest = py
        .detach(|| lodtensor::tokenize::tokenize(inputs, &output, &tokenizer, &options))
        .py_err()?;
    manifest_dict(py, &manifest)
}

/// The tokenizer of the file `path` or of the JSON text `json` (one of them).
fn load(path: Option<PathBuf>, json: Option<String>) -> lodtensor::Result<Tokenizer> {
    match (path, json) {
        (Some(path), None) => Tokenizer::from_file(path),
        (None, Some(json)) => Tokenizer::from_json(&json),
        _ => Err(lodtensor::Error::invalid_argument(
            "tokenize",
            "tokenizer",
            "both or neither of a path and a JSON text",
            "a path to tokenizer.json or a tokenizers.Tokenizer",
        )),
    }
}

/// The shards' options: `shard_rows` rows a shard, `compression`'s codec.
fn shard_options(
    shard_rows: Option<&Bound<'_, PyAny>>,
    compression: Option<&str>,
) -> PyResult<ShardOptions> {
    let shards =
        ShardOptions::default().with_write_options(write_options("i64", None, compression)?);
    Ok(match size_option("shard_rows", shard_rows)? {
        Some(rows) => shards.with_shard_rows(rows),
        None => shards,
    })
}

/// `options` with the store options `storage`, which only a URL input or output takes.
fn with_storage(
    options: TokenizeOptions,
    inputs: &[Input],
    output: &str,
    storage: BTreeMap<String, String>,
) -> PyResult<TokenizeOptions> {
    let url_input = inputs.iter().any(|input| match input {
        Input::Path(path) => lodtensor::shards::is_url(&path.to_string_lossy()),
        _ => false,
    });
    if !url_input && !lodtensor::shards::is_url(output) {
        return Err(invalid(
            "tokenize(PATH, storage_options=...): only for a URL input or output",
        ));
    }
    let remote = storage
        .into_iter()
        .fold(RemoteOptions::default(), |o, (k, v)| {
            o.with_storage_option(k, v)
        });
    Ok(options.with_remote_options(remote))
}

/// A path (`str` or `os.PathLike`) or a `(name, stream)` pair as an input.
fn input(py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok((name, stream)) = item.extract::<(String, Bound<'_, PyAny>)>() {
        let reader = import_stream(py, &stream)?;
        return Ok(Input::Stream {
            name,
            reader: Box::new(reader),
        });
    }
    match item.extract::<PathBuf>() {
        Ok(path) => Ok(Input::Path(path)),
        Err(_) => Err(PyTypeError::new_err(format!(
            "tokenize: an input must be a path or a (name, Arrow stream) pair, not {}",
            item.get_type().name()?
        ))),
    }
}

/// `eos`/`bos` (`True`, `False`, `None` or a token) as a [`Special`].
fn special(option: &str, value: Option<&Bound<'_, PyAny>>, default: Special) -> PyResult<Special> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(default);
    };
    if let Ok(on) = value.extract::<bool>() {
        return Ok(if on { Special::Auto } else { Special::None });
    }
    match value.extract::<String>() {
        Ok(token) => Ok(Special::Token(token)),
        Err(_) => Err(PyTypeError::new_err(format!(
            "tokenize: {option} must be True, False or a token (str), not {}",
            value.get_type().name()?
        ))),
    }
}
