//! Any supported file opened as named columns, and the helpers the subcommands share.
//!
//! An Arrow IPC file is mapped (its columns are views into the mapping, one part per record
//! batch); a Paddle file is read and checked whole (one part per column). Every column keeps
//! its parts, so statistics and drawings never concatenate anything.

use lodtensor::ArgumentError;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use arrow_array::cast::AsArray;
use arrow_array::downcast_primitive_array;
use arrow_schema::DataType;
use indicatif::{ProgressBar, ProgressStyle};
use lodtensor::format::KEY_FORMAT_VERSION;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::paddle;
use lodtensor::{Column, DType, Dataset, Error, LodTensor, RowIndex, Values};

use crate::input::{IpcKind, ReadArgs, check_path, ipc_kind, read_stream, stream_refused};
use crate::side::SideParts;
use crate::{Result, usage};

/// The file formats, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.arrow`: lodtensor's Arrow IPC file.
    Arrow,
    /// `.arrows`: an Arrow IPC stream (read by `convert` only).
    ArrowStream,
    /// `.parquet`.
    Parquet,
    /// `.pdtensor`: one Paddle LoDTensor record.
    PaddleTensor,
    /// `.pdiparams`: Paddle records back to back (`save_combine`).
    PaddleCombined,
    /// A directory of shards and their manifest (`docs/shards.md`).
    Shards,
}

impl Format {
    /// The format of `path`, by its extension.
    ///
    /// # Errors
    /// A usage error for any other extension.
    pub fn of(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "arrow" => Ok(Format::Arrow),
            "arrows" => Ok(Format::ArrowStream),
            "parquet" => Ok(Format::Parquet),
            "pdtensor" => Ok(Format::PaddleTensor),
            "pdiparams" => Ok(Format::PaddleCombined),
            _ => usage(format!(
                "{}: unsupported extension {:?} (expected .arrow, .arrows, .parquet, .pdtensor or .pdiparams)",
                path.display(),
                ext
            )),
        }
    }

    /// The format's name, for people.
    pub fn name(self) -> &'static str {
        match self {
            Format::Arrow => "Arrow IPC",
            Format::ArrowStream => "Arrow IPC stream",
            Format::Parquet => "Parquet",
            Format::PaddleTensor => "Paddle LoDTensor",
            Format::PaddleCombined => "Paddle combined LoDTensors",
            Format::Shards => "sharded dataset",
        }
    }

    /// The name used in `info --json`.
    pub fn key(self) -> &'static str {
        match self {
            Format::Arrow => "arrow",
            Format::ArrowStream => "arrows",
            Format::Parquet => "parquet",
            Format::PaddleTensor => "pdtensor",
            Format::PaddleCombined => "pdiparams",
            Format::Shards => "shards",
        }
    }
}

/// One column: its name, level names, and one tensor per record batch.
pub struct Parts {
    pub name: String,
    pub level_names: Vec<String>,
    pub tensors: Vec<LodTensor>,
}

impl Parts {
    fn first(&self) -> &LodTensor {
        self.tensors
            .first()
            .expect("a column has at least one part")
    }

    pub fn num_levels(&self) -> usize {
        self.first().num_levels()
    }

    pub fn dtype(&self) -> DType {
        self.first().dtype()
    }

    pub fn element_shape(&self) -> &[usize] {
        self.first().element_shape()
    }

    pub fn num_rows(&self) -> usize {
        self.tensors.iter().map(LodTensor::num_rows).sum()
    }

    pub fn num_elements(&self) -> usize {
        self.tensors.iter().map(|t| t.elements().len()).sum()
    }

    /// The number of sequences of `level` over every part.
    pub fn num_sequences(&self, level: usize) -> Result<usize> {
        let mut n = 0;
        for t in &self.tensors {
            n += t.lod().num_sequences(level)?;
        }
        Ok(n)
    }

    /// The lengths of `level` over every part, in order.
    pub fn lengths(&self, level: usize) -> Result<Vec<usize>> {
        let mut all = Vec::new();
        for t in &self.tensors {
            all.extend(t.lod().level_lengths(level)?);
        }
        Ok(all)
    }

    /// The offset width of `level` (`int32` or `int64`; the schema fixes it for every batch).
    pub fn offset_width(&self, level: usize) -> &'static str {
        self.first().lod().levels()[level].width().name()
    }

    /// `level` with its name: `level 1 (sentences)`, or `level 1`.
    pub fn level_label(&self, level: usize) -> String {
        level_label(&self.level_names, level)
    }

    /// Rows `rows` as views, one per part they touch, each with its part (record batch)
    /// and its rows in the whole file.
    pub fn rows(&self, rows: Range<usize>) -> Result<Vec<(usize, Range<usize>, LodTensor)>> {
        let counts: Vec<usize> = self.tensors.iter().map(LodTensor::num_rows).collect();
        split_rows(&counts, rows)?
            .into_iter()
            .map(|(part, range)| {
                let first: usize = counts[..part].iter().sum();
                let view = self.tensors[part].slice_rows(range.clone())?;
                Ok((part, first + range.start..first + range.end, view))
            })
            .collect()
    }
}

/// `level` with its name in `names`: `level 1 (sentences)`, or `level 1`.
pub fn level_label(names: &[String], level: usize) -> String {
    match names.get(level) {
        Some(name) => format!("level {level} ({name})"),
        None => format!("level {level}"),
    }
}

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
                    Format::Parquet => open_parquet(path),
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

    fn open_stream(path: &Path, bytes: u64) -> Result<Source> {
        let (schema, datasets) = read_stream(path)?;
        let columns = if datasets.is_empty() {
            empty_columns(path, &schema)?
        } else {
            Self::parts_of(&datasets)?
        };
        Ok(Source {
            path: path.to_path_buf(),
            format: Format::ArrowStream,
            format_version: schema.metadata().get(KEY_FORMAT_VERSION).cloned(),
            bytes,
            batches: datasets.len(),
            sides: SideParts::of(&datasets, &schema).map_err(|e| e.in_file(path))?,
            columns,
            shards: None,
            _held: Held::Nothing,
        })
    }

    /// Maps the Arrow file at `path`: only the columns `columns` when some are named.
    fn open_arrow(path: &Path, columns: &[String]) -> Result<Source> {
        let file = if columns.is_empty() {
            MappedDataset::open(path)?
        } else {
            let names: Vec<&str> = columns.iter().map(String::as_str).collect();
            MappedDataset::open_columns(path, &names)?
        };
        let format_version = file.schema().metadata().get(KEY_FORMAT_VERSION).cloned();
        let columns = if file.batches().is_empty() {
            empty_columns(path, file.schema())?
        } else {
            Self::parts_of(file.batches())?
        };
        Ok(Source {
            path: path.to_path_buf(),
            format: Format::Arrow,
            format_version,
            bytes: file.as_bytes().len() as u64,
            batches: file.batches().len(),
            sides: SideParts::of(file.batches(), file.schema()).map_err(|e| e.in_file(path))?,
            columns,
            shards: None,
            _held: Held::File { _mapped: file },
        })
    }

    /// The LoD tensor columns of batches that share a schema.
    pub(crate) fn parts_of(batches: &[Dataset]) -> Result<Vec<Parts>> {
        let Some(first) = batches.first() else {
            return Ok(Vec::new());
        };
        first
            .columns()
            .iter()
            .enumerate()
            .filter(|(_, column)| !column.is_side())
            .map(|(c, column)| {
                Ok(Parts {
                    name: column.name().to_owned(),
                    level_names: column.level_names().to_vec(),
                    tensors: batches
                        .iter()
                        .map(|b| b.columns()[c].tensor().cloned())
                        .collect::<lodtensor::Result<_>>()?,
                })
            })
            .collect()
    }

    fn open_paddle(path: &Path, format: Format) -> Result<Source> {
        let named = if format == Format::PaddleTensor {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "tensor".to_owned());
            vec![(name, paddle::read_tensor_file(path)?)]
        } else {
            paddle::read_combined_file(path, &[])?
        };
        let bytes = std::fs::metadata(path)
            .map_err(|e| Error::from(e).in_file(path))?
            .len();
        Ok(Source {
            path: path.to_path_buf(),
            format,
            format_version: Some(paddle::LOD_TENSOR_VERSION.to_string()),
            bytes,
            batches: 1,
            sides: Vec::new(),
            columns: named
                .into_iter()
                .map(|(name, tensor)| Parts {
                    name,
                    level_names: Vec::new(),
                    tensors: vec![tensor],
                })
                .collect(),
            shards: None,
            _held: Held::Nothing,
        })
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

/// A Parquet file, read whole (every row group decoded into one dataset).
#[cfg(feature = "parquet")]
fn open_parquet(path: &Path) -> Result<Source> {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = ParquetReader::open(
        path,
        &ParquetReadOptions::default().with_batch_size(usize::MAX),
    )?;
    let format_version = reader.schema().metadata().get(KEY_FORMAT_VERSION).cloned();
    let schema = reader.schema().clone();
    let datasets = if reader.num_rows() == 0 {
        Vec::new()
    } else {
        vec![reader.read_all()?]
    };
    let columns = if datasets.is_empty() {
        empty_columns(path, &schema)?
    } else {
        Source::parts_of(&datasets)?
    };
    let in_file = |e: lodtensor::Error| e.in_file(path);
    let file = std::fs::File::open(path).map_err(|e| in_file(e.into()))?;
    let bytes = file.metadata().map_err(|e| in_file(e.into()))?.len();
    let footer = SerializedFileReader::new(file).map_err(|e| in_file(e.into()))?;
    Ok(Source {
        path: path.to_path_buf(),
        format: Format::Parquet,
        format_version,
        bytes,
        batches: footer.metadata().num_row_groups(),
        sides: SideParts::of(&datasets, &schema).map_err(in_file)?,
        columns,
        shards: None,
        _held: Held::Nothing,
    })
}

#[cfg(not(feature = "parquet"))]
fn open_parquet(path: &Path) -> Result<Source> {
    usage(format!(
        "{}: Parquet support is not built in (feature `parquet`)",
        path.display()
    ))
}

/// Columns of `schema` without rows (a file with a schema and no batch).
pub(crate) fn empty_columns(path: &Path, schema: &arrow_schema::Schema) -> Result<Vec<Parts>> {
    let mut columns = Vec::new();
    for field in schema.fields() {
        let empty = arrow_array::new_empty_array(field.data_type());
        let column = Column::try_from_arrow(field, empty.as_ref())
            .map_err(|e| e.in_column(field.name(), 0).in_file(path))?;
        if column.is_side() {
            continue;
        }
        columns.push(Parts {
            name: field.name().clone(),
            level_names: column.level_names().to_vec(),
            tensors: vec![column.tensor().map_err(|e| e.in_file(path))?.clone()],
        });
    }
    Ok(columns)
}

/// Which part each piece of `rows` lies in, for parts of `counts` rows.
///
/// # Errors
/// [`ArgumentError::RowsOutOfBounds`].
pub fn split_rows(counts: &[usize], rows: Range<usize>) -> Result<Vec<(usize, Range<usize>)>> {
    let index = RowIndex::from_counts(counts.iter().copied());
    let mut out = index.split(rows.clone())?;
    if out.is_empty() && index.num_parts() > 0 {
        // An empty range still names a (0-row) view: in the first part that ends at or
        // after it.
        let part = index.starts()[1..].partition_point(|&end| end < rows.start);
        let start = rows.start - index.starts()[part];
        out.push((part, start..start));
    }
    Ok(out)
}

/// A row range on the command line: `A..B`, `A..`, `..B` or `A` (the one row `A`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRange {
    pub start: usize,
    pub end: Option<usize>,
}

impl RowRange {
    /// The range over a file of `rows` rows (an open end is the last row).
    pub fn resolve(self, rows: usize) -> Range<usize> {
        self.start..self.end.unwrap_or(rows.max(self.start))
    }
}

impl FromStr for RowRange {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let number = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("{t:?} is not a row number (expected A..B, A.., ..B or A)"))
        };
        match s.split_once("..") {
            None => {
                let start = number(s)?;
                Ok(RowRange {
                    start,
                    end: Some(start + 1),
                })
            }
            Some((a, b)) => {
                let start = if a.is_empty() { 0 } else { number(a)? };
                let end = if b.is_empty() { None } else { Some(number(b)?) };
                if end.is_some_and(|e| e < start) {
                    return Err(format!("{s}: the range ends before it starts"));
                }
                Ok(RowRange { start, end })
            }
        }
    }
}

/// The text of element `e` of `values`: its item when it has one, or `[a,b,…]` (at most 8
/// items shown).
pub fn element_text(values: &Values, e: usize) -> String {
    let size = values.element_size();
    let items = e * size..(e + 1) * size;
    let shown = items.start..items.end.min(items.start + 8);
    let texts: Vec<String> = shown.map(|i| item_text(values, i)).collect();
    if size == 1 {
        return texts.concat();
    }
    let more = if size > 8 { ",…" } else { "" };
    format!("[{}{more}]", texts.join(","))
}

/// Item `i` of `values`: a number as Rust's `{:?}` writes it (floats keep their `.0`), a
/// boolean as `1` or `0`.
fn item_text(values: &Values, i: usize) -> String {
    let items = values.items().as_ref();
    downcast_primitive_array!(
        items => format!("{:?}", items.value(i)),
        DataType::Boolean => if items.as_boolean().value(i) { "1" } else { "0" }.to_owned(),
        _ => String::new(),
    )
}

/// `1 byte`, `2 bytes`, …, with the size in MB past 10 MB.
pub fn bytes_text(bytes: u64) -> String {
    match bytes {
        1 => "1 byte".to_owned(),
        b if b >= 10_000_000 => format!("{b} bytes ({:.1} MB)", b as f64 / 1e6),
        b => format!("{b} bytes"),
    }
}

/// `1 thing`, `n things` (`n batches`).
pub fn plural(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        _ if thing.ends_with("ch") => format!("{n} {thing}es"),
        _ => format!("{n} {thing}s"),
    }
}

/// A progress bar on stderr (drawn only when stderr is a terminal), cleared when done.
pub fn progress(len: u64, message: &'static str, unit: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(len).with_style(
        ProgressStyle::with_template(&format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit}"))
            .expect("a valid template"),
    );
    bar.set_message(message);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_row_ranges() {
        let r = |s: &str| s.parse::<RowRange>();
        assert_eq!(r("2..5").unwrap().resolve(10), 2..5);
        assert_eq!(r("2..").unwrap().resolve(10), 2..10);
        assert_eq!(r("..3").unwrap().resolve(10), 0..3);
        assert_eq!(r("4").unwrap().resolve(10), 4..5);
        assert!(r("5..2").is_err());
        assert!(r("a..b").is_err());
    }

    #[test]
    fn splits_rows_over_parts() {
        assert_eq!(
            split_rows(&[3, 2, 4], 2..6).unwrap(),
            vec![(0, 2..3), (1, 0..2), (2, 0..1)]
        );
        assert_eq!(split_rows(&[3, 2], 3..3).unwrap(), vec![(0, 3..3)]);
        assert!(split_rows(&[3, 2], 4..6).is_err());
    }
}
