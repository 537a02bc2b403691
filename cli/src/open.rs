//! Each format's file opened as a [`Source`]: an Arrow IPC file mapped (its columns views
//! into the mapping, one part per record batch), an Arrow IPC stream or a Parquet file read
//! into memory, a Paddle file read and checked whole (one part per column).

use std::path::Path;

use lodtensor::format::KEY_FORMAT_VERSION;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::paddle;
use lodtensor::{Dataset, Error};

use crate::Result;
use crate::format::Format;
use crate::input::read_stream;
use crate::parts::{Parts, empty_columns};
use crate::side::SideParts;
use crate::source::{Held, Source};
#[cfg(not(feature = "parquet"))]
use crate::usage;

impl Source {
    pub(crate) fn open_stream(path: &Path, bytes: u64) -> Result<Source> {
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
    pub(crate) fn open_arrow(path: &Path, columns: &[String]) -> Result<Source> {
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

    pub(crate) fn open_paddle(path: &Path, format: Format) -> Result<Source> {
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
}

/// The Parquet file at `path` (of `bytes`), read whole (every row group decoded into one
/// dataset), opened once.
#[cfg(feature = "parquet")]
pub(crate) fn open_parquet(path: &Path, bytes: u64) -> Result<Source> {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    let reader = ParquetReader::open(
        path,
        &ParquetReadOptions::default().with_batch_size(usize::MAX),
    )?;
    let format_version = reader.schema().metadata().get(KEY_FORMAT_VERSION).cloned();
    let schema = reader.schema().clone();
    let row_groups = reader.num_row_groups();
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
    Ok(Source {
        path: path.to_path_buf(),
        format: Format::Parquet,
        format_version,
        bytes,
        batches: row_groups,
        sides: SideParts::of(&datasets, &schema).map_err(in_file)?,
        columns,
        shards: None,
        _held: Held::Nothing,
    })
}

#[cfg(not(feature = "parquet"))]
pub(crate) fn open_parquet(path: &Path, _bytes: u64) -> Result<Source> {
    usage(format!(
        "{}: Parquet support is not built in (feature `parquet`)",
        path.display()
    ))
}
