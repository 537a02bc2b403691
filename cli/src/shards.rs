//! Sharded datasets (`docs/shards.md`) on the command line: a directory opened by its
//! manifest and read as a [`Source`] of the shards a command needs, each mapped and checked
//! against the manifest when opened; and `convert`'s directory output.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lodtensor::format::KEY_FORMAT_VERSION;
use lodtensor::io::ipc_writer::WriteOptions;
use lodtensor::shards::{
    Location, MANIFEST_NAME, Manifest, ShardOptions, ShardWriter, ShardedDataset,
};
use lodtensor::{ArgumentError, DatasetError, Error};

use crate::input::ReadArgs;
use crate::side::SideParts;
use crate::source::{Format, Held, Parts, ShardParts, Source, progress, split_rows};
use crate::{Result, usage};

/// Whether `path` names a directory or a URL (a sharded dataset as an input).
pub fn is_dir(path: &Path) -> bool {
    path.is_dir() || crate::remote::is_url(path)
}

/// A sharded dataset, open: its manifest read, no shard mapped yet.
pub struct Sharded {
    /// The dataset directory.
    pub path: PathBuf,
    pub data: Arc<ShardedDataset>,
}

impl Sharded {
    /// Opens the dataset in the directory (or at the URL) `path`, reading its manifest only.
    ///
    /// # Errors
    /// An I/O error naming the directory when it holds no manifest; the manifest's errors.
    pub fn open(path: &Path, read: &ReadArgs) -> Result<Sharded> {
        if crate::remote::is_url(path) {
            return Ok(Sharded {
                path: path.to_path_buf(),
                data: Arc::new(crate::remote::open(path, read)?),
            });
        }
        if !path.join(MANIFEST_NAME).exists() {
            return Err(Error::from(DatasetError::NotADataset).in_file(path).into());
        }
        Ok(Sharded {
            path: path.to_path_buf(),
            data: Arc::new(ShardedDataset::open(path)?),
        })
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        self.data.manifest()
    }

    /// The rows of every shard.
    pub fn num_rows(&self) -> usize {
        self.data.num_rows()
    }

    /// The shards that hold `rows` (for an empty range, the shard it starts in), opened.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`] naming
    /// the directory; [`Sharded::source`]'s errors.
    pub fn source_of_rows(&self, rows: Range<usize>, read: &ReadArgs) -> Result<Source> {
        let counts: Vec<usize> = self.manifest().shards.iter().map(|s| s.rows).collect();
        let pieces = split_rows(&counts, rows).map_err(|e| e.in_file(&self.path))?;
        let shards = match (pieces.first(), pieces.last()) {
            (Some(first), Some(last)) => first.0..last.0 + 1,
            _ => 0..0,
        };
        self.source(shards, read)
    }

    /// The shard holding sequence `index` of `level` of `column` (default: the first), and
    /// the sequence's index in it, from the manifest's counts.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`], [`ArgumentError::LevelOutOfBounds`] or
    /// [`ArgumentError::SequenceOutOfBounds`], naming the directory.
    pub fn locate_sequence(
        &self,
        column: Option<&str>,
        level: usize,
        index: usize,
    ) -> Result<(usize, usize)> {
        let columns = &self.manifest().columns;
        let c = match column {
            Some(name) => columns
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| ArgumentError::NoSuchColumn(name.to_owned())),
            None if columns.is_empty() => {
                return usage(format!(
                    "{}: the dataset has no columns",
                    self.path.display()
                ));
            }
            None => Ok(0),
        };
        let located = c.and_then(|c| {
            let levels = columns[c].offsets.len();
            if level >= levels {
                return Err(ArgumentError::LevelOutOfBounds { level, levels });
            }
            let mut before = 0;
            for (shard, entry) in self.manifest().shards.iter().enumerate() {
                let n = entry.columns[c].sequences.get(level).copied().unwrap_or(0);
                if index < before + n {
                    return Ok((shard, index - before));
                }
                before += n;
            }
            Err(ArgumentError::SequenceOutOfBounds {
                level,
                index,
                len: before,
            })
        });
        located.map_err(|e| Error::from(e).in_file(&self.path).into())
    }

    /// The shards `shards`, each mapped and checked against the manifest, as one source:
    /// a part per record batch, in order; then `--element-shape` applied.
    ///
    /// # Errors
    /// A shard that is missing, differs from the manifest or is invalid, naming the shard.
    pub fn source(&self, shards: Range<usize>, read: &ReadArgs) -> Result<Source> {
        let bar = progress(shards.len() as u64, "opening", "shards");
        let (mut batches, mut origins, mut bytes) = (Vec::new(), Vec::new(), 0);
        let mut format_version = None;
        for shard in shards.clone() {
            let file = self.data.shard(shard)?;
            bytes += file.as_bytes().len() as u64;
            format_version = format_version
                .or_else(|| file.schema().metadata().get(KEY_FORMAT_VERSION).cloned());
            // The shard's path in the dataset (not its cache entry's, for a URL).
            let origin = self.path.join(&self.manifest().shards[shard].file);
            for (batch, dataset) in file.batches().iter().enumerate() {
                batches.push(dataset.clone());
                origins.push((origin.clone(), batch));
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        let columns = if batches.is_empty() {
            self.empty_columns()?
        } else {
            Source::parts_of(&batches)?
        };
        let in_dir = |e: Error| e.in_file(&self.path);
        let empty = (self.data.columns().iter())
            .map(|spec| spec.empty_column())
            .collect::<lodtensor::Result<Vec<_>>>()
            .and_then(lodtensor::Dataset::try_new)
            .map_err(in_dir)?;
        let sides = SideParts::of(&batches, &empty.schema()).map_err(in_dir)?;
        let starts = self.data.row_index().starts();
        let mut source = Source {
            path: self.path.clone(),
            format: Format::Shards,
            format_version,
            bytes,
            batches: batches.len(),
            columns,
            sides,
            shards: Some(ShardParts {
                first_row: starts.get(shards.start).copied().unwrap_or(0),
                opened: shards,
                origins,
            }),
            _held: Held::Shards {
                _data: self.data.clone(),
            },
        };
        source.project(&read.columns)?;
        read.apply(&self.path, &mut source.columns)?;
        Ok(source)
    }

    /// The manifest's columns without rows.
    fn empty_columns(&self) -> Result<Vec<Parts>> {
        self.data
            .columns()
            .iter()
            .filter(|spec| spec.side.is_none())
            .map(|spec| {
                let column = spec.empty_column().map_err(|e| e.in_file(&self.path))?;
                Ok(Parts {
                    name: spec.name.clone(),
                    level_names: spec.level_names.clone(),
                    tensors: vec![column.tensor().map_err(|e| e.in_file(&self.path))?.clone()],
                })
            })
            .collect()
    }
}

/// Options of a sharded output (`convert … DIR/`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ShardArgs {
    /// Write a sharded dataset (OUT a directory) with at most N rows per shard.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    shard_rows: Option<u64>,
    /// Write a sharded dataset (OUT a directory) closing a shard once its rows hold N bytes
    /// of values and offsets (default 268435456, 256 MiB).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    shard_bytes: Option<u64>,
    /// Add the shards to the sharded dataset already in OUT.
    #[arg(long)]
    pub append: bool,
}

impl ShardArgs {
    /// Whether any option asks for a sharded output.
    pub fn given(&self) -> bool {
        self.shard_rows.is_some() || self.shard_bytes.is_some() || self.append
    }
}

/// Whether `path` names a directory output: it ends with `/` or is a directory.
pub fn is_dir_output(path: &Path) -> bool {
    path.as_os_str().to_string_lossy().ends_with('/') || path.is_dir()
}

/// The writer of the sharded dataset `dir` (a new one, or the one there with `--append`):
/// each shard is written atomically, the manifest by [`ShardWriter::finish`], last. For a
/// URL, the writer stages the shards in a local directory of its own and `finish` uploads
/// and commits them by a conditional PUT (the store's credentials from the environment).
///
/// # Errors
/// A usage error when `dir` holds a dataset and `--append` is not given (or the reverse);
/// the writer's errors (for a URL, [`lodtensor::DatasetError::AlreadyThere`] or
/// [`lodtensor::DatasetError::NothingToAppendTo`] in those cases).
pub fn writer(dir: &Path, args: &ShardArgs, write: WriteOptions) -> Result<ShardWriter> {
    let location = match crate::remote::is_url(dir) {
        true => crate::remote::url_location(dir)?,
        false => {
            refuse_local(dir, args)?;
            Location::from(dir)
        }
    };
    let mut options = ShardOptions::default().with_write_options(write);
    if let Some(rows) = args.shard_rows {
        options = options.with_shard_rows(usize::try_from(rows).unwrap_or(usize::MAX));
    }
    if let Some(bytes) = args.shard_bytes {
        options = options.with_shard_bytes(usize::try_from(bytes).unwrap_or(usize::MAX));
    }
    Ok(match args.append {
        true => ShardWriter::append(location, options)?,
        false => ShardWriter::create(location, options)?,
    })
}

/// A usage error when the directory `dir` holds a dataset and `--append` is not given, or
/// holds none and it is.
fn refuse_local(dir: &Path, args: &ShardArgs) -> Result<()> {
    let exists = dir.join(MANIFEST_NAME).exists();
    if exists && !args.append {
        return usage(format!(
            "{}: a sharded dataset is already there: add --append to add shards to it, or remove it first",
            dir.display()
        ));
    }
    if !exists && args.append {
        return usage(format!(
            "{}: --append needs a sharded dataset there (no {MANIFEST_NAME})",
            dir.display()
        ));
    }
    Ok(())
}
