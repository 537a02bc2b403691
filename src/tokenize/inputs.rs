//! What [`tokenize`](super::tokenize) reads: the inputs given, expanded into files (a
//! directory's files, sorted), then grouped into units, each written by a pending writer
//! of its own prefix, so that a run started again skips the units written before. A URL
//! names objects in a store instead (`objects.rs`, the `remote` feature).

use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;

use crate::error::{Error, Result};
use crate::tokenize::TokenizeOptions;
#[cfg(feature = "remote")]
use crate::tokenize::objects::Object;

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
    /// file one document of UTF-8 text. With the `remote` feature, a URL (`s3://…`, as
    /// [`shards::is_url`](crate::shards::is_url) decides) names one object, every object
    /// under a prefix ending in `/` (sorted; names starting with `.` or `_` skipped) or
    /// the objects a glob matches (`s3://bucket/corpus/**/*.jsonl`), of the same kinds.
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
    fn of(name: &str) -> Self {
        let ext = Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        match ext.to_ascii_lowercase().as_str() {
            "jsonl" | "ndjson" | "json" => FileKind::JsonLines,
            "parquet" => FileKind::Parquet,
            _ => FileKind::Text,
        }
    }
}

/// Where a file's bytes are: a local file, or an object in a store.
#[derive(Clone, Debug)]
pub(super) enum Place {
    /// A local file.
    Path(PathBuf),
    /// An object of an input URL.
    #[cfg(feature = "remote")]
    Object(Object),
}

impl Place {
    /// The file's name: its `source`, and what errors name.
    pub fn name(&self) -> String {
        match self {
            Place::Path(path) => display(path),
            #[cfg(feature = "remote")]
            Place::Object(object) => object.url.clone(),
        }
    }
}

/// What a unit reads.
pub(super) enum Source {
    /// Text files, one document each.
    Texts(Vec<Place>),
    /// A JSON lines or Parquet file.
    File(Place, FileKind),
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

/// A file of the inputs: where it is, its size, and what identifies it for its unit's
/// prefix (a path its name; an object its URL, size and ETag).
struct Found {
    place: Place,
    bytes: u64,
    key: String,
}

/// The units of `inputs`, in order. Every path is checked here, before any work, and
/// every URL listed.
///
/// # Errors
/// [`ErrorKind::Io`](crate::ErrorKind::Io) naming a path that is missing or unreadable,
/// or a URL that names no object; the store's errors.
pub(super) fn units(inputs: Vec<Input>, options: &TokenizeOptions) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    let mut texts: Vec<Found> = Vec::new();
    let flush = |texts: &mut Vec<Found>, units: &mut Vec<Unit>| {
        if texts.is_empty() {
            return;
        }
        let keys: Vec<&str> = texts.iter().map(|f| f.key.as_str()).collect();
        units.push(Unit {
            prefix: prefix_of(&keys.join("\n")),
            bytes: texts.iter().map(|f| f.bytes).sum(),
            source: Source::Texts(texts.drain(..).map(|f| f.place).collect()),
        });
    };
    for input in inputs {
        match input {
            Input::Path(path) => {
                for file in found(&path, options)? {
                    let bytes = file.bytes;
                    let kind = FileKind::of(&file.place.name());
                    if kind != FileKind::Text {
                        flush(&mut texts, &mut units);
                        let prefix = prefix_of(&file.key);
                        let source = Source::File(file.place, kind);
                        units.push(Unit {
                            prefix,
                            bytes,
                            source,
                        });
                        continue;
                    }
                    let size: u64 = texts.iter().map(|f| f.bytes).sum();
                    if size + bytes > UNIT_BYTES {
                        flush(&mut texts, &mut units);
                    }
                    texts.push(file);
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

/// The files `path` names: a local path's files, or a URL's objects.
fn found(path: &Path, options: &TokenizeOptions) -> Result<Vec<Found>> {
    let text = path.to_string_lossy();
    if !crate::shards::is_url(&text) {
        let files = files(path)?.into_iter().map(|(file, bytes)| Found {
            key: display(&file),
            place: Place::Path(file),
            bytes,
        });
        return Ok(files.collect());
    }
    objects(&text, options)
}

/// The objects of the URL `url`.
#[cfg(feature = "remote")]
fn objects(url: &str, options: &TokenizeOptions) -> Result<Vec<Found>> {
    let objects = crate::tokenize::objects::objects(url, &options.remote)?;
    let found = objects.into_iter().map(|object| Found {
        key: format!("{}\t{}", object.url, object.version),
        bytes: object.size,
        place: Place::Object(object),
    });
    Ok(found.collect())
}

/// Without the `remote` feature: an argument error naming the URL.
#[cfg(not(feature = "remote"))]
fn objects(url: &str, _options: &TokenizeOptions) -> Result<Vec<Found>> {
    Err(Error::invalid_argument(
        "tokenize",
        "inputs",
        url,
        "files: this lodtensor was built without the `remote` feature (URLs)",
    ))
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
        let units = units(vec![Input::from(dir.path())], &Default::default()).unwrap();
        let shapes: Vec<String> = (units.iter().map(|u| match &u.source {
            Source::Texts(files) => format!("texts {}", files.len()),
            Source::File(_, kind) => format!("{kind:?}"),
            Source::Stream(..) => "stream".to_owned(),
        }))
        .collect();
        assert_eq!(shapes, ["texts 2", "JsonLines", "texts 1"]);
        // The same inputs give the same prefixes; other inputs others.
        let again = super::units(vec![Input::from(dir.path())], &Default::default()).unwrap();
        assert_eq!(units[0].prefix, again[0].prefix);
        assert_ne!(units[0].prefix, units[2].prefix);
        assert!(units.iter().all(|u| u.prefix.len() == 23));
        assert!(units[1].prefix.starts_with("t00001_"));
    }

    #[cfg(not(feature = "remote"))]
    #[test]
    fn a_url_without_the_remote_feature_is_an_argument_error() {
        let err = units(
            vec![Input::from("s3://bucket/corpus/")],
            &Default::default(),
        )
        .err()
        .unwrap();
        assert!(
            matches!(err.kind(), crate::error::ErrorKind::Argument(_)),
            "{err}"
        );
        assert!(err.to_string().contains("s3://bucket/corpus/"), "{err}");
    }

    #[test]
    fn a_missing_path_is_named() {
        let err = units(vec![Input::from("no/such/corpus.txt")], &Default::default())
            .err()
            .unwrap();
        assert!(matches!(err.kind(), crate::error::ErrorKind::Io(_)));
        assert!(err.to_string().contains("no/such/corpus.txt"), "{err}");
    }
}
