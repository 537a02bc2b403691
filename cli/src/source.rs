//! Any supported file, or some shards of a sharded dataset, opened as named columns
//! ([`Source`]); each format's opening is in `open.rs`, the columns' parts in `parts.rs`,
//! what the subcommands print in `text.rs`, the formats in `format.rs`.

use std::ops::Range;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::{ArgumentError, Column, Dataset, Error};

pub use crate::format::Format;
use crate::input::{IpcKind, ReadArgs, check_path, ipc_kind, stream_refused};
pub use crate::parts::{Parts, level_label, split_rows};
use crate::side::SideParts;
pub use crate::text::{RowRange, bytes_text, element_text, plural, progress};
use crate::{Result, usage};

/// A file, or some shards of a sharded dataset, open.
pub struct Source {
    pub path: PathBuf,
    pub format: Format,
    /// The format version the file declares (the `lodtensor.format_version` of an Arrow
    /// file, the LoDTensor version of a Paddle file).
    pub format_version: Option<String>,
    /// The file's size (the shards' sizes, for a sharded dataset).
    pub bytes: u64,
    /// Record batches (Arrow), row groups (Parquet), 1 for Paddle files.
    pub batches: usize,
    /// The LoD tensor columns.
    pub columns: Vec<Parts>,
    /// The side columns.
    pub sides: Vec<SideParts>,
    /// Where the parts come from, for a sharded dataset.
    pub shards: Option<ShardParts>,
    /// Keeps the mappings' shared locks while the columns' views are in use.
    pub(crate) _held: Held,
}

/// What keeps the mappings of a [`Source`] locked.
pub enum Held {
    /// Nothing: the file was read into memory.
    Nothing,
    /// A mapped Arrow file.
    File { _mapped: MappedDataset },
    /// The mapped shards of a sharded dataset.
    Shards {
        _data: std::sync::Arc<lodtensor::shards::ShardedDataset>,
    },
}

/// The shards some parts of a [`Source`] come from.
pub struct ShardParts {
    /// The shards opened, of the dataset's.
    pub opened: Range<usize>,
    /// The dataset's row of the source's first row.
    pub first_row: usize,
    /// Each part's shard file and record batch in it.
    pub origins: Vec<(PathBuf, usize)>,
}

impl Source {
    /// Opens `path`, validating everything the format's reader validates, then applies
    /// `--element-shape`. An Arrow IPC stream is refused (it cannot be mapped in place).
    ///
    /// # Errors
    /// A usage error for an unknown extension or a stream; [`crate::input::check_path`]'s
    /// errors; the reader's error otherwise.
    pub fn open(path: &Path, read: &ReadArgs) -> Result<Source> {
        Self::open_as(path, read, false)
    }

    /// Like [`Source::open`], reading an Arrow IPC stream into memory (for `convert`).
    pub fn open_reading_streams(path: &Path, read: &ReadArgs) -> Result<Source> {
        Self::open_as(path, read, true)
    }

    fn open_as(path: &Path, read: &ReadArgs, streams: bool) -> Result<Source> {
        if crate::shards::is_dir(path) {
            let sharded = crate::shards::Sharded::open(path, read)?;
            return sharded.source(0..sharded.data.num_shards(), read);
        }
        let format = Format::of(path)?;
        let bytes = check_path(path)?;
        let mut source = match format {
            Format::Arrow | Format::ArrowStream => match (ipc_kind(path)?, streams) {
                (IpcKind::File, _) => Self::open_arrow(path, &read.columns)?,
                (IpcKind::Stream, true) => Self::open_stream(path, bytes)?,
                (IpcKind::Stream, false) => return stream_refused(path),
            },
            Format::Shards => unreachable!("a directory is opened above"),
            _ => {
                // Parquet and Paddle files are decoded whole, which can take a while.
                let spinner =
                    ProgressBar::new_spinner().with_message(format!("reading {}", path.display()));
                spinner.enable_steady_tick(std::time::Duration::from_millis(200));
                let source = match format {
                    Format::Parquet => crate::open::open_parquet(path, bytes),
                    _ => Self::open_paddle(path, format),
                };
                spinner.finish_and_clear();
                source?
            }
        };
        if format != Format::Arrow {
            source.project(&read.columns)?;
        }
        read.apply(path, &mut source.columns)?;
        Ok(source)
    }

    /// `3 batches`, `3 row groups` for a Parquet file, `3 batches in 2 shards` for shards.
    pub fn batches_text(&self) -> String {
        match (self.format, &self.shards) {
            (Format::Parquet, _) => plural(self.batches, "row group"),
            (_, Some(shards)) => format!(
                "{} in {}",
                plural(self.batches, "batch"),
                plural(shards.opened.len(), "shard")
            ),
            _ => plural(self.batches, "batch"),
        }
    }

    /// The dataset's row of the source's first row (0 but for some shards of a dataset).
    pub fn first_row(&self) -> usize {
        self.shards.as_ref().map_or(0, |s| s.first_row)
    }

    /// The file part `part` comes from and its record batch there.
    pub fn origin(&self, part: usize) -> (&Path, usize) {
        match self.shards.as_ref().and_then(|s| s.origins.get(part)) {
            Some((file, batch)) => (file, *batch),
            None => (&self.path, part),
        }
    }

    /// `record batch 3`, or `part-00002.arrow, record batch 0` for a shard's part.
    pub fn part_label(&self, part: usize) -> String {
        match self.shards.as_ref().and_then(|s| s.origins.get(part)) {
            Some((file, batch)) => {
                let name = file.file_name().unwrap_or_default().to_string_lossy();
                format!("{name}, record batch {batch}")
            }
            None => format!("record batch {part}"),
        }
    }

    /// The row count every column shares, `None` when they differ (a `.pdiparams` file of
    /// unrelated parameters).
    pub fn num_rows(&self) -> Option<usize> {
        let sides = self.sides.iter().map(SideParts::num_rows);
        let mut rows = self.columns.iter().map(Parts::num_rows).chain(sides);
        let first = rows.next().unwrap_or(0);
        rows.all(|r| r == first).then_some(first)
    }

    /// The column named `name`, or the first column.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`], `NotATensor` for a side column; a usage error for a file without columns.
    pub fn column(&self, name: Option<&str>) -> Result<&Parts> {
        if let Some(side) = name.and_then(|n| self.side(n)) {
            let e = ArgumentError::NotATensor {
                column: side.name().to_owned(),
                data_type: side.field.data_type().clone(),
            };
            return Err(Error::from(e).in_file(&self.path).into());
        }
        match name {
            Some(name) => self.columns.iter().find(|c| c.name == name).ok_or_else(|| {
                Error::from(ArgumentError::NoSuchColumn(name.to_owned()))
                    .in_file(&self.path)
                    .into()
            }),
            None => match self.columns.first() {
                Some(c) => Ok(c),
                None => usage(format!("{}: the file has no columns", self.path.display())),
            },
        }
    }

    /// The file as datasets, one per part (record batch).
    ///
    /// # Errors
    /// [`DataError::ColumnRows`](lodtensor::DataError::ColumnRows) when the columns do not share a row count.
    pub fn datasets(&self) -> Result<Vec<Dataset>> {
        let parts = match (self.columns.first(), self.sides.first()) {
            (Some(c), _) => c.tensors.len(),
            (None, Some(s)) => s.arrays.len(),
            (None, None) => 0,
        };
        (0..parts)
            .map(|p| {
                let mut columns = self
                    .columns
                    .iter()
                    .map(|c| {
                        Column::new(c.name.clone(), c.tensors[p].clone())
                            .with_level_names(c.level_names.clone())
                    })
                    .collect::<lodtensor::Result<Vec<_>>>()?;
                // Side columns back in their places (increasing positions).
                for side in &self.sides {
                    let column =
                        Column::side_with_field(side.field.clone(), side.arrays[p].clone())?;
                    columns.insert(side.position.min(columns.len()), column);
                }
                Dataset::try_new(columns).map_err(|e| e.in_file(&self.path).into())
            })
            .collect()
    }
}
