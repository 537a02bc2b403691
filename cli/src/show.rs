//! `lodtensor show FILE [--column C] [--rows A..B] [--values]`: the LoD of some rows drawn
//! the way the reference documents draw it, one line of lengths per level above the
//! elements.

use std::io::Write;
use std::ops::Range;

use crate::Result;
use crate::input::ColumnInput;
use crate::shards::{Sharded, is_dir};
use crate::side::SideParts;
use crate::source::{Parts, RowRange, Source, element_text};

/// Rows drawn when `--rows` is not given.
const DEFAULT_ROWS: usize = 5;

/// Arguments of `lodtensor show`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: ColumnInput,
    /// The rows to draw: A..B, A.., ..B or A (default: the first 5).
    #[arg(long)]
    rows: Option<RowRange>,
    /// Draw each element's value instead of a `|`.
    #[arg(long)]
    values: bool,
    /// Cut lines to this many columns.
    #[arg(long, default_value_t = 120)]
    width: usize,
}

pub fn run(args: Args) -> Result<()> {
    let ColumnInput { file, column, read } = &args.input;
    let pick = |total: usize| match args.rows {
        Some(r) => r.resolve(total),
        None => 0..total.min(DEFAULT_ROWS),
    };
    // A sharded dataset opens only the shards that hold the rows.
    let (source, total, rows) = if is_dir(file) {
        let sharded = Sharded::open(file, read)?;
        let (total, rows) = (sharded.num_rows(), pick(sharded.num_rows()));
        (sharded.source_of_rows(rows.clone(), read)?, total, rows)
    } else {
        let source = Source::open(file, read)?;
        if let Some(side) = column.as_deref().and_then(|n| source.side(n)) {
            return show_side(side, pick(side.num_rows()), &source);
        }
        let total = source.column(column.as_deref())?.num_rows();
        (source, total, pick(total))
    };
    let column = source.column(column.as_deref())?;
    let first = source.first_row();
    let views = column
        .rows(rows.start.saturating_sub(first)..rows.end.saturating_sub(first))
        .map_err(|e| e.in_file(&source.path))?;
    let out = &mut std::io::stdout().lock();
    let cells = if args.values {
        "values"
    } else {
        "one | per element"
    };
    writeln!(
        out,
        "column {:?}, rows {}..{} of {} ({cells}):",
        column.name, rows.start, rows.end, total
    )?;
    let labels = row_labels(column);
    let label_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) + 2;
    for (i, (part, rows, view)) in views.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        if views.len() > 1 {
            writeln!(
                out,
                "rows {}..{} ({}):",
                first + rows.start,
                first + rows.end,
                source.part_label(*part)
            )?;
        }
        let values = view.values();
        let cell = |e: usize| {
            if args.values {
                element_text(values, e) + " "
            } else {
                "|".to_owned()
            }
        };
        let picture = view.lod().draw(
            view.num_rows(),
            &cell,
            args.width.saturating_sub(label_width).max(8),
        );
        let lines: Vec<&str> = picture.lines().collect();
        // A 0-level tensor draws only its elements.
        let offset = labels.len() - lines.len();
        for (line, label) in lines.iter().zip(&labels[offset..]) {
            writeln!(out, "{:label_width$}{}", label, line.trim_end())?;
        }
    }
    Ok(())
}

/// The label of each line of a drawing: each level's name (or `level N`), then `elements`.
fn row_labels(column: &Parts) -> Vec<String> {
    (0..column.num_levels())
        .map(|l| {
            column
                .level_names
                .get(l)
                .cloned()
                .unwrap_or_else(|| format!("level {l}"))
        })
        .chain(["elements".to_owned()])
        .collect()
}

/// Rows `rows` of a side column, one line each, as Arrow prints its values.
fn show_side(side: &SideParts, rows: Range<usize>, source: &Source) -> Result<()> {
    let out = &mut std::io::stdout().lock();
    writeln!(
        out,
        "side column {:?} ({}), rows {}..{} of {}:",
        side.name(),
        side.field.data_type(),
        rows.start,
        rows.end,
        side.num_rows()
    )?;
    for (_, range, view) in side.rows(rows).map_err(|e| e.in_file(&source.path))? {
        for (i, row) in range.enumerate() {
            let value = format!("{:?}", view.slice(i, 1));
            // Arrow's Debug of a one-row array: the type, then `[`, the value, `]`.
            let lines: Vec<&str> = value.lines().collect();
            let inner = lines
                .get(2..lines.len().saturating_sub(1))
                .unwrap_or_default();
            let text: Vec<&str> = inner
                .iter()
                .map(|l| l.trim().trim_end_matches(','))
                .collect();
            writeln!(out, "  row {row}: {}", text.join(" "))?;
        }
    }
    Ok(())
}
