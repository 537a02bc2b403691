//! `lodtensor slice FILE OUT (--rows A..B | --level L --index J) [--column C]`: a row range
//! of every column (or of column `C`), or the `<L, J>`-slice of one column, written as a
//! new file. The input is read as views (mapped, for an Arrow file); the output appears
//! whole or not at all.

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;

use lodtensor::{Column, Dataset};

use crate::convert::{Offsets, Output, write};
use crate::input::ReadArgs;
use crate::shards::{Sharded, is_dir};
use crate::source::{RowRange, Source, bytes_text, plural};
use crate::{Result, usage};

/// Arguments of `lodtensor slice`.
#[derive(clap::Args)]
pub struct Args {
    /// The input file (.arrow, .parquet, .pdtensor or .pdiparams), or a sharded dataset's
    /// directory.
    file: PathBuf,
    /// The output file (.arrow, .parquet, .pdtensor or .pdiparams), written atomically.
    out: PathBuf,
    /// Rows of every column: A..B, A.., ..B or A.
    #[arg(long, required_unless_present = "level", conflicts_with_all = ["level", "index"])]
    rows: Option<RowRange>,
    /// With --index: the level of the sequence to cut out (0 is the outermost).
    #[arg(long, requires = "index")]
    level: Option<usize>,
    /// With --level: the sequence's index in its level, counted over the whole file (or
    /// dataset).
    #[arg(long, requires = "level")]
    index: Option<usize>,
    /// The column to write (default: every column with --rows, the first with --level).
    #[arg(long)]
    column: Option<String>,
    /// Offset width of every level of an Arrow or Parquet output (default int64).
    #[arg(long, value_enum)]
    offsets: Option<Offsets>,
    #[command(flatten)]
    read: ReadArgs,
}

pub fn run(args: Args) -> Result<()> {
    let column = args.column.as_deref();
    // A sharded dataset opens only the shards that hold the rows or the sequence.
    let sharded = match is_dir(&args.file) {
        true => Some(Sharded::open(&args.file, &args.read)?),
        false => None,
    };
    let (source, (what, datasets)) = match (args.rows, args.level, args.index, &sharded) {
        (Some(rows), _, _, Some(sharded)) => {
            let (total, rows) = (sharded.num_rows(), rows.resolve(sharded.num_rows()));
            let source = sharded.source_of_rows(rows.clone(), &args.read)?;
            let cut = rows_of(&source, rows, total, column)?;
            (source, cut)
        }
        (Some(rows), _, _, None) => {
            let source = Source::open(&args.file, &args.read)?;
            let total = source.num_rows().unwrap_or(0);
            let cut = rows_of(&source, rows.resolve(total), total, column)?;
            (source, cut)
        }
        (None, Some(level), Some(index), Some(sharded)) => {
            let (shard, local) = sharded.locate_sequence(column, level, index)?;
            let source = sharded.source(shard..shard + 1, &args.read)?;
            let cut = sequence_of(&source, level, (index, local), column)?;
            (source, cut)
        }
        (None, Some(level), Some(index), None) => {
            let source = Source::open(&args.file, &args.read)?;
            let cut = sequence_of(&source, level, (index, index), column)?;
            (source, cut)
        }
        _ => return usage("give --rows, or --level with --index"),
    };
    let output = Output {
        compression: None,
        offsets: args.offsets,
    };
    let bytes = write(&args.out, &datasets, output)?;
    writeln!(
        std::io::stdout().lock(),
        "wrote {what} of {} to {}: {}",
        source.path.display(),
        args.out.display(),
        bytes_text(bytes)
    )?;
    Ok(())
}

/// Rows `rows` (of `total`, counted over the dataset) of every column, or of `column`, as
/// views (one per record batch touched).
fn rows_of(
    source: &Source,
    rows: Range<usize>,
    total: usize,
    column: Option<&str>,
) -> Result<(String, Vec<Dataset>)> {
    if let Some(name) = column
        && source.side(name).is_none()
    {
        source.column(Some(name))?;
    }
    let batches = source.datasets()?;
    let counts: Vec<usize> = batches.iter().map(Dataset::num_rows).collect();
    let first = source.first_row();
    let local = rows.start.saturating_sub(first)..rows.end.saturating_sub(first);
    let mut views = Vec::new();
    for (batch, range) in
        crate::source::split_rows(&counts, local).map_err(|e| e.in_file(&source.path))?
    {
        let view = batches[batch].slice_rows(range)?;
        views.push(match column {
            None => view,
            Some(name) => {
                let kept = view.columns().iter().filter(|c| c.name() == name);
                Dataset::try_new(kept.cloned().collect())?
            }
        });
    }
    let of = match column {
        Some(name) => format!(" of column {name:?}"),
        None => String::new(),
    };
    let what = format!(
        "rows {}..{} ({} of {}){of}",
        rows.start,
        rows.end,
        plural(rows.len(), "row"),
        total
    );
    Ok((what, views))
}

/// The `<level, index>`-slice of `column` (default: the first): `index` counted over the
/// dataset, `local` over the source.
fn sequence_of(
    source: &Source,
    level: usize,
    (index, local): (usize, usize),
    column: Option<&str>,
) -> Result<(String, Vec<Dataset>)> {
    let column = source.column(column)?;
    let mut remaining = local;
    let mut found = None;
    for (part, tensor) in column.tensors.iter().enumerate() {
        let (file, batch) = source.origin(part);
        let at = |e: lodtensor::Error| e.in_column(&column.name, batch).in_file(file);
        let n = tensor.lod().num_sequences(level).map_err(at)?;
        if remaining < n {
            found = Some(tensor.slice_sequence(level, remaining).map_err(at)?);
            break;
        }
        remaining -= n;
    }
    let Some(tensor) = found else {
        let len = column.num_sequences(level)?;
        let e = lodtensor::Error::from(lodtensor::ArgumentError::SequenceOutOfBounds {
            level,
            index,
            len,
        });
        return Err(e.in_file(&source.path).into());
    };
    let names = column.level_names.get(level..).unwrap_or_default().to_vec();
    let dataset = Dataset::try_new(vec![
        Column::new(column.name.clone(), tensor).with_level_names(names)?,
    ])?;
    let what = format!(
        "sequence {index} of {} of column {:?}",
        column.level_label(level),
        column.name
    );
    Ok((what, vec![dataset]))
}
