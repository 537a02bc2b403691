//! What [`tokenize`](super::tokenize) reads: the inputs given, expanded into files (a
//! directory's files, sorted), then grouped into units, each written by a pending writer
//! of its own prefix, so that a run started again skips the units written before.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;

use crate::error::{Error, Result};

/// Text files are grouped into one unit up to this many bytes together.
const UNIT_BYTES: u64 = 64 << 20;

/// One input of [`tokenize`](super::tokenize).
///
/// # Example
/// ```
/// use lodtensor::tokenize::Input;
/// let input = Input::from("corpus/");
/// assert!(matches!(input, Input::Path(_)));
/// ```
pub enum Input {
    /// A file or a directory (its files, recursively, sorted by name; names starting with
    /// `.` skipped): `.jsonl`, `.ndjson` and `.json` files are JSON lines (one object per
    /// line, the text in a string field), `.parquet` files a string column, and any other
    /// file one document of UTF-8 text.
    Path(PathBuf),
    /// Record batches with a string column (a HuggingFace dataset, a pyarrow table);
    /// `name` is its `source` and identifies it when a run is started again.
    Stream {
        /// What the `source` column says of its documents.
        name: String,
        /// The record batches.
        reader: Box<dyn RecordBatchReader + Send>,
    },
}

impl<P: AsRef<Path>> From<P> for Input {
    fn from(path: P) -> Self {
        Input::Path(path.as_ref().to_path_buf())
    }
}

/// How the documents of a file are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FileKind {
    /// The whole file is one document.
    Text,
    /// One JSON object per line.
    JsonLines,
    /// A Parquet file.
    Parquet,
}

impl FileKind {
    fn of(path: &Path) -> Self {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext.to_ascii_lowercase().as_str() {
            "jsonl" | "ndjson" | "json" => FileKind::JsonLines,
            "parquet" => FileKind::Parquet,
            _ => FileKind::Text,
        }
    }
}

/// What a unit reads.
pub(super) enum Source {
    /// Text files, one document each.
    Texts(Vec<PathBuf>),
    /// A JSON lines or Parquet file.
    File(PathBuf, FileKind),
    /// A stream of record batches.
    Stream(String, Box<dyn RecordBatchReader + Send>),
}

/// A unit of work: what one pending writer writes.
pub(super) struct Unit {
    /// The writer's prefix: `t`, the unit's index and a hash of its sources.
    pub prefix: String,
    /// The input bytes (0 for a stream).
    pub bytes: u64,
    pub source: Source,
}

/// The units of `inputs`, in order. Every path is checked here, before any work.
///
/// # Errors
/// [`ErrorKind::Io`](crate::ErrorKind::Io) naming a path that is missing or unreadable.
pub(super) fn units(inputs: Vec<Input>) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    let mut texts: Vec<(PathBuf, u64)> = Vec::new();
    let flush = |texts: &mut Vec<(PathBuf, u64)>, units: &mut Vec<Unit>| {
        if texts.is_empty() {
            return;
        }
        let names: Vec<String> = texts.iter().map(|(p, _)| display(p)).collect();
        units.push(Unit {
            prefix: prefix_of(&names.join("\n")),
            bytes: texts.iter().map(|(_, b)| b).sum(),
            source: Source::Texts(texts.drain(..).map(|(p, _)| p).collect()),
        });
    };
    for input in inputs {
        match input {
            Input::Path(path) => {
                for (file, bytes) in files(&path)? {
                    let kind = FileKind::of(&file);
                    if kind != FileKind::Text {
                        flush(&mut texts, &mut units);
                        let prefix = prefix_of(&display(&file));
                        let source = Source::File(file, kind);
                        units.push(Unit {
                            prefix,
                            bytes,
                            source,
                        });
                        continue;
                    }
                    let size: u64 = texts.iter().map(|(_, b)| b).sum();
                    if size + bytes > UNIT_BYTES {
                        flush(&mut texts, &mut units);
                    }
                    texts.push((file, bytes));
                }
            }
            Input::Stream { name, reader } => {
                flush(&mut texts, &mut units);
                let prefix = prefix_of(&name);
                let source = Source::Stream(name, reader);
                units.push(Unit {
                    prefix,
                    bytes: 0,
                    source,
                });
            }
        }
    }
    flush(&mut texts, &mut units);
    // The pending manifests are committed in the order of their names: the inputs' order.
    for (index, unit) in units.iter_mut().enumerate() {
        unit.prefix = format!("t{index:05}_{}", unit.prefix);
    }
    Ok(units)
}

/// The files of `path` with their sizes: itself, or a directory's files recursively, sorted
/// by name, those whose names start with `.` skipped.
fn files(path: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let in_path = |e: std::io::Error| Error::from(e).in_file(path);
    let meta = std::fs::metadata(path).map_err(in_path)?;
    if !meta.is_dir() {
        return Ok(vec![(path.to_path_buf(), meta.len())]);
    }
    let mut entries: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(path).map_err(in_path)? {
        let entry = entry.map_err(in_path)?;
        if !entry.file_name().to_string_lossy().starts_with('.') {
            entries.push(entry.path());
        }
    }
    entries.sort();
    let mut out = Vec::new();
    for entry in entries {
        out.extend(files(&entry)?);
    }
    Ok(out)
}

/// A path as the `source` column says it.
pub(super) fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The 64-bit FNV-1a hash of the sources `names`, in hexadecimal.
fn prefix_of(names: &str) -> String {
    let hash = names.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_files_are_grouped_and_others_stand_alone() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.txt", "b.md", "c.jsonl", "d.txt", ".hidden"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let units = units(vec![Input::from(dir.path())]).unwrap();
        let shapes: Vec<String> = (units.iter().map(|u| match &u.source {
            Source::Texts(files) => format!("texts {}", files.len()),
            Source::File(_, kind) => format!("{kind:?}"),
            Source::Stream(..) => "stream".to_owned(),
        }))
        .collect();
        assert_eq!(shapes, ["texts 2", "JsonLines", "texts 1"]);
        // The same inputs give the same prefixes; other inputs others.
        let again = super::units(vec![Input::from(dir.path())]).unwrap();
        assert_eq!(units[0].prefix, again[0].prefix);
        assert_ne!(units[0].prefix, units[2].prefix);
        assert!(units.iter().all(|u| u.prefix.len() == 23));
        assert!(units[1].prefix.starts_with("t00001_"));
    }

    #[test]
    fn a_missing_path_is_named() {
        let err = units(vec![Input::from("no/such/corpus.txt")])
            .err()
            .unwrap();
        assert!(matches!(err.kind(), crate::error::ErrorKind::Io(_)));
        assert!(err.to_string().contains("no/such/corpus.txt"), "{err}");
    }
}
