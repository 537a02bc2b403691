//! `lodtensor slice FILE OUT (--rows A..B | --level L --index J) [--column C]`: a row range
//! of every column (or of column `C`), or the `<L, J>`-slice of one column, written as a
//! new file. The input is read as views (mapped, for an Arrow file); the output appears
//! whole or not at all.

use std::io::Write;
use std::path::PathBuf;

use lodtensor::{Column, Dataset};

use crate::convert::{Offsets, Output, write};
use crate::input::ReadArgs;
use crate::source::{RowRange, Source, bytes_text, plural};
use crate::{Result, usage};

/// Arguments of `lodtensor slice`.
#[derive(clap::Args)]
pub struct Args {
    /// The input file (.arrow, .parquet, .pdtensor or .pdiparams).
    file: PathBuf,
    /// The output file (.arrow, .parquet, .pdtensor or .pdiparams), written atomically.
    out: PathBuf,
    /// Rows of every column: A..B, A.., ..B or A.
    #[arg(long, required_unless_present = "level", conflicts_with_all = ["level", "index"])]
    rows: Option<RowRange>,
    /// With --index: the level of the sequence to cut out (0 is the outermost).
    #[arg(long, requires = "index")]
    level: Option<usize>,
    /// With --level: the sequence's index in its level, counted over the whole file.
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
    let source = Source::open(&args.file, &args.read)?;
    let (what, datasets) = match (args.rows, args.level, args.index) {
        (Some(rows), _, _) => rows_of(&source, rows, args.column.as_deref())?,
        (None, Some(level), Some(index)) => {
            sequence_of(&source, level, index, args.column.as_deref())?
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

/// Rows `rows` of every column, or of `column`, as views (one per record batch touched).
fn rows_of(
    source: &Source,
    rows: RowRange,
    column: Option<&str>,
) -> Result<(String, Vec<Dataset>)> {
    if let Some(name) = column {
        source.column(Some(name))?;
    }
    let total = source.num_rows().unwrap_or(0);
    let rows = rows.resolve(total);
    let batches = source.datasets()?;
    let counts: Vec<usize> = batches.iter().map(Dataset::num_rows).collect();
    let mut views = Vec::new();
    for (batch, range) in
        crate::source::split_rows(&counts, rows.clone()).map_err(|e| in_file(e, source))?
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

/// The `<level, index>`-slice of `column` (default: the first), the index counted over the
/// whole file.
fn sequence_of(
    source: &Source,
    level: usize,
    index: usize,
    column: Option<&str>,
) -> Result<(String, Vec<Dataset>)> {
    let column = source.column(column)?;
    let mut remaining = index;
    let mut found = None;
    for (batch, tensor) in column.tensors.iter().enumerate() {
        let at = |e: lodtensor::Error| e.in_column(&column.name, batch).in_file(&source.path);
        let n = tensor.lod().num_sequences(level).map_err(at)?;
        if remaining < n {
            found = Some(tensor.slice_sequence(level, remaining).map_err(at)?);
            break;
        }
        remaining -= n;
    }
    let Some(tensor) = found else {
        let len = column.num_sequences(level)?;
        return Err(in_file(
            lodtensor::Error::from(lodtensor::ArgumentError::SequenceOutOfBounds {
                level,
                index,
                len,
            })
            .into(),
            source,
        ));
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

/// A library error inside the command's result, wrapped with the source's path.
fn in_file(e: crate::CliError, source: &Source) -> crate::CliError {
    match e {
        crate::CliError::Lib(e) => e.in_file(&source.path).into(),
        usage => usage,
    }
}
