//! `lodtensor validate FILE`: every batch, column and level checked. On a sharded
//! dataset's directory, every shard first against the manifest (size, CRC-32C, rows,
//! batches, columns, counts), then as a file.
//!
//! Opening already validates everything the readers check (for an Arrow file: the footer,
//! every block and buffer against the file, Arrow's offset checks and the LoD rules; for a
//! Paddle file: every field of every record). This then checks each column of each batch
//! once more from its parts: the LoD rules level by level (`Lod::try_new`), the values
//! against the last level (`LodTensor::try_new`), and Arrow's full validation of the nested
//! lists the column maps to.

use std::io::Write;
use std::path::PathBuf;

use lodtensor::{Lod, LodTensor};

use crate::Result;
use crate::input::ReadArgs;
use crate::source::{Source, bytes_text, plural};

/// Arguments of `lodtensor validate`.
#[derive(clap::Args)]
pub struct Args {
    /// The file (.arrow, .parquet, .pdtensor or .pdiparams), or a sharded dataset's
    /// directory.
    file: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
}

pub fn run(args: Args) -> Result<()> {
    let source = Source::open(&args.file, &args.read)?;
    let parts: usize = source.columns.iter().map(|c| c.tensors.len()).sum();
    let bar = crate::source::progress(parts as u64, "validating", "column batches");
    let (mut levels, mut sequences, mut elements) = (0, 0, 0);
    for column in &source.columns {
        levels += column.num_levels();
        for (part, tensor) in column.tensors.iter().enumerate() {
            let (file, batch) = source.origin(part);
            let at = |e: lodtensor::Error| e.in_column(&column.name, batch).in_file(file);
            let lod = Lod::try_new(tensor.lod().levels().to_vec()).map_err(at)?;
            LodTensor::try_new(lod, tensor.values().clone()).map_err(at)?;
            tensor
                .to_arrow()
                .to_data()
                .validate_full()
                .map_err(|e| at(e.into()))?;
            for level in 0..tensor.num_levels() {
                sequences += tensor.lod().num_sequences(level).map_err(at)?;
            }
            elements += tensor.elements().len();
            bar.inc(1);
        }
    }
    // Side columns: Arrow's full validation again (the mapped reader ran it already).
    for side in &source.sides {
        for (part, array) in side.arrays.iter().enumerate() {
            let (file, batch) = source.origin(part);
            let at = |e: lodtensor::Error| e.in_column(side.name(), batch).in_file(file);
            array.to_data().validate_full().map_err(|e| at(e.into()))?;
        }
    }
    bar.finish_and_clear();
    let version = source
        .format_version
        .as_deref()
        .map_or_else(String::new, |v| format!(" version {v}"));
    let rows = match source.num_rows() {
        Some(rows) => plural(rows, "row"),
        None => "rows differ per column".to_owned(),
    };
    writeln!(
        std::io::stdout().lock(),
        "ok: {}: {}{version}, {}, {}, {rows}, {}, {} over {}, {}",
        source.path.display(),
        source.format.name(),
        bytes_text(source.bytes),
        source.batches_text(),
        plural(source.columns.len() + source.sides.len(), "column"),
        plural(sequences, "sequence"),
        plural(levels, "level"),
        plural(elements, "element")
    )?;
    Ok(())
}
