//! What every reading subcommand shares before and after a reader runs: the checks on the
//! input path (one clear line for a missing file, a directory, a FIFO, an empty file), Arrow
//! IPC streams (read by `convert` only: a stream cannot be mapped in place), and
//! `--element-shape` for files that lost their element shape.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use arrow_ipc::reader::StreamReader;
use lodtensor::{ArgumentError, Column, Dataset, Error, FileFormat};

use crate::source::Parts;
use crate::{Result, usage};

/// A file or a sharded dataset's directory, the column to use and how to read it: what
/// `show` and `hist` take first.
#[derive(clap::Args)]
pub struct ColumnInput {
    /// The file (.arrow, .parquet, .pdtensor or .pdiparams), or a sharded dataset's
    /// directory.
    pub file: PathBuf,
    /// The column (default: the first).
    #[arg(long)]
    pub column: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Options for reading an input file, shared by every subcommand that reads one.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReadArgs {
    /// Read a file that lost its element shape: its innermost level becomes elements of
    /// SHAPE (64, or 3,4); COLUMN=SHAPE for one column.
    ///
    /// For files whose innermost level is a plain `list<float>` (as DuckDB, Spark, Polars or
    /// pyarrow write without lodtensor's metadata): every sequence of that level must have
    /// exactly the shape's number of values, else the error names the row and level.
    /// Without a column name, it applies to every column of plain values under at least one
    /// level. Repeatable.
    #[arg(long, value_name = "[COLUMN=]SHAPE")]
    pub element_shape: Vec<ElementShape>,
    /// Read only these columns, in this order (comma-separated): an Arrow file then maps
    /// and validates only them, so opening costs what they cost.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub columns: Vec<String>,
    /// For a dataset at a URL: the directory its shards are cached in, shared by every
    /// process of the node (default: $LODTENSOR_CACHE_DIR, else ~/.cache/lodtensor).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// For a dataset at a URL: the most the cache keeps of its shards (bytes, or 20GB,
    /// 512MiB).
    #[arg(long, value_name = "SIZE")]
    pub cache_limit: Option<String>,
}

/// One `--element-shape`: a shape, for one column or for every column of plain values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementShape {
    pub column: Option<String>,
    pub shape: Vec<usize>,
}

impl FromStr for ElementShape {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (column, dims) = match s.rsplit_once('=') {
            Some((c, d)) => (Some(c.to_owned()), d),
            None => (None, s),
        };
        let dims = dims.trim().trim_start_matches('[').trim_end_matches(']');
        let shape = dims
            .split(',')
            .map(|d| match d.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "{d:?} is not a dimension (expected SHAPE or COLUMN=SHAPE, SHAPE as 64 or 3,4)"
                )),
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(ElementShape { column, shape })
    }
}

impl ReadArgs {
    /// Applies the `--element-shape` options to the columns of a file.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`] for a named column the file does not have; the column's
    /// `DataError::ElementShape` (naming row, level and sequence) when its values do not fit.
    pub fn apply(&self, path: &Path, columns: &mut [Parts]) -> Result<()> {
        for option in &self.element_shape {
            if let Some(name) = &option.column
                && !columns.iter().any(|c| &c.name == name)
            {
                let missing = Error::from(ArgumentError::NoSuchColumn(name.clone()));
                return Err(missing.in_file(path).into());
            }
        }
        for parts in columns.iter_mut() {
            let named = self
                .element_shape
                .iter()
                .rev()
                .find(|o| o.column.as_deref() == Some(parts.name.as_str()));
            let chosen = named.or_else(|| {
                let plain = parts.element_shape().is_empty() && parts.num_levels() > 0;
                let every = self.element_shape.iter().rev().find(|o| o.column.is_none());
                every.filter(|_| plain)
            });
            if let Some(option) = chosen {
                fold(path, parts, &option.shape)?;
            }
        }
        Ok(())
    }
}

/// Folds every part of a column into elements of `shape`.
fn fold(path: &Path, parts: &mut Parts, shape: &[usize]) -> Result<()> {
    let mut level_names = parts.level_names.clone();
    for (batch, tensor) in parts.tensors.iter_mut().enumerate() {
        let at = |e: Error| e.in_column(&parts.name, batch).in_file(path);
        let column = Column::new(parts.name.clone(), tensor.clone())
            .with_level_names(parts.level_names.clone())
            .map_err(at)?;
        let folded = column.fold_element_shape(shape).map_err(at)?;
        level_names = folded.level_names().to_vec();
        *tensor = folded.tensor().map_err(at)?.clone();
    }
    parts.level_names = level_names;
    Ok(())
}

/// The hint `info` gives for a column that looks like it lost its element shape: its
/// values are plain and every sequence of its innermost level has the same length `n > 1`.
pub fn element_shape_hint(parts: &Parts) -> Result<Option<String>> {
    let levels = parts.num_levels();
    if !parts.element_shape().is_empty() || levels == 0 {
        return Ok(None);
    }
    let lengths = parts.lengths(levels - 1)?;
    let Some(&first) = lengths.first() else {
        return Ok(None);
    };
    if first < 2 || lengths.iter().any(|&l| l != first) {
        return Ok(None);
    }
    Ok(Some(format!(
        "every sequence of level {} has {first} values: if each is one element (a file written \
         without the element shape), read it with --element-shape {first} (or {}={first})",
        levels - 1,
        parts.name
    )))
}

/// What the first bytes of an Arrow IPC input say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpcKind {
    /// An IPC file (`ARROW1` magic), mapped in place.
    File,
    /// An IPC stream (messages from the first byte), read into memory.
    Stream,
}

/// Checks that `path` is a regular, non-empty file, with one clear line otherwise.
///
/// # Errors
/// An I/O error for a missing path, a directory, a FIFO or another non-regular file;
/// `FormatError::InvalidFile` for an empty file.
pub fn check_path(path: &Path) -> Result<u64> {
    let io = |message: &str| -> crate::CliError {
        Error::from(std::io::Error::other(message.to_owned()))
            .in_file(path)
            .into()
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(io("no such file")),
        Err(e) => return Err(Error::from(e).in_file(path).into()),
    };
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(io("is a directory, not a file"));
    }
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_fifo() {
            "a FIFO (named pipe)"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Err(io(&format!(
            "is {what}, not a regular file: lodtensor maps or seeks its input; copy it to a file first"
        )));
    }
    if meta.len() == 0 {
        return Err(
            Error::invalid(FileFormat::Unknown, "the file is empty (0 bytes)")
                .in_file(path)
                .into(),
        );
    }
    Ok(meta.len())
}

/// Whether the Arrow input at `path` is an IPC file or an IPC stream (by its first bytes:
/// a file starts with `ARROW1`, a stream with a message's `0xFFFFFFFF` marker).
pub fn ipc_kind(path: &Path) -> Result<IpcKind> {
    let mut head = [0u8; 6];
    let mut file = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let n = file
        .read(&mut head)
        .map_err(|e| Error::from(e).in_file(path))?;
    Ok(if n >= 4 && head[..4] == [0xFF; 4] {
        IpcKind::Stream
    } else {
        IpcKind::File
    })
}

/// The usage error of a subcommand other than `convert` given an IPC stream.
pub fn stream_refused<T>(path: &Path) -> Result<T> {
    let target = path.with_extension("arrow");
    let target = if target == path {
        path.with_extension("file.arrow")
    } else {
        target
    };
    usage(format!(
        "{}: an Arrow IPC stream, which cannot be mapped in place; convert it to an Arrow IPC file first: lodtensor convert {} {}",
        path.display(),
        path.display(),
        target.display()
    ))
}

/// Every record batch of an Arrow IPC stream, read into memory, with its schema.
///
/// # Errors
/// The stream reader's error, or a batch's, naming the file and batch.
pub fn read_stream(path: &Path) -> Result<(arrow_schema::SchemaRef, Vec<Dataset>)> {
    let in_file = |e: Error| e.in_file(path);
    let file = File::open(path).map_err(|e| in_file(e.into()))?;
    let reader = StreamReader::try_new(std::io::BufReader::new(file), None)
        .map_err(|e| in_file(e.into()))?;
    let schema = reader.schema();
    lodtensor::check_version(&schema).map_err(in_file)?;
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| in_file(e.into()))?;
    // One kind per column for all batches: a null in any makes a side column (spec §2.2).
    let datasets = Dataset::try_from_record_batches(&batches).map_err(in_file)?;
    let schema = match datasets.first() {
        None => schema,
        Some(first) => {
            let fields: Vec<arrow_schema::Field> = (schema.fields().iter().zip(first.columns()))
                .map(|(f, c)| match c.is_side() {
                    true => c.arrow_field(),
                    false => f.as_ref().clone(),
                })
                .collect();
            let metadata = schema.metadata().clone();
            std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(fields, metadata))
        }
    };
    Ok((schema, datasets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_element_shapes() {
        let p = |s: &str| s.parse::<ElementShape>();
        assert_eq!(
            p("64").unwrap(),
            ElementShape {
                column: None,
                shape: vec![64]
            }
        );
        assert_eq!(
            p("tokens=3,4").unwrap(),
            ElementShape {
                column: Some("tokens".to_owned()),
                shape: vec![3, 4]
            }
        );
        assert_eq!(p("[2, 4]").unwrap().shape, vec![2, 4]);
        assert!(p("0").is_err());
        assert!(p("x=").is_err());
        assert!(p("3,,4").is_err());
    }
}
