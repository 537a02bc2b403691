//! The file formats the subcommands read and write, chosen by extension.

use std::path::Path;

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
