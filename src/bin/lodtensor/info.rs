//! `lodtensor info FILE [--json]`: what a file holds, column by column and level by level.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::Result;
use crate::input::{ReadArgs, element_shape_hint};
use crate::source::{Parts, Source, bytes_text, plural};

/// Arguments of `lodtensor info`.
#[derive(clap::Args)]
pub struct Args {
    /// The file (.arrow, .parquet, .pdtensor or .pdiparams).
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    read: ReadArgs,
}

/// Lengths of one level: min, mean, max (`None` for a level without sequences).
struct LevelStats {
    sequences: usize,
    lengths: Option<(usize, f64, usize)>,
}

fn level_stats(column: &Parts, level: usize) -> Result<LevelStats> {
    let lengths = column.lengths(level)?;
    let stats = match (lengths.iter().min(), lengths.iter().max()) {
        (Some(&min), Some(&max)) => {
            let mean = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
            Some((min, mean, max))
        }
        _ => None,
    };
    Ok(LevelStats {
        sequences: lengths.len(),
        lengths: stats,
    })
}

/// Bytes of the values in view: items times the item size (bools are bits).
fn values_bytes(column: &Parts) -> u64 {
    let items =
        column.num_elements() as u64 * column.element_shape().iter().product::<usize>() as u64;
    match column.dtype().byte_width() {
        Some(w) => items * w as u64,
        None => items.div_ceil(8),
    }
}

pub fn run(args: Args) -> Result<()> {
    let source = Source::open(&args.file, &args.read)?;
    let out = &mut std::io::stdout().lock();
    if args.json {
        let object = to_json(&source)?;
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&object).expect("a JSON value serialises")
        )?;
        return Ok(());
    }
    let rows = match source.num_rows() {
        Some(rows) => format!("{} in {}", plural(rows, "row"), source.batches_text()),
        None => "columns of different row counts".to_owned(),
    };
    let version = source.format_version.as_deref().map_or_else(
        || "no format version".to_owned(),
        |v| format!("format version {v}"),
    );
    writeln!(
        out,
        "{}: {}, {version}, {}, {rows}, {}",
        source.path.display(),
        source.format.name(),
        bytes_text(source.bytes),
        plural(source.columns.len(), "column")
    )?;
    for column in &source.columns {
        let shape = format!("{:?}", column.element_shape());
        writeln!(
            out,
            "column {:?}: {}, element shape {shape}, {}, {}, {}, {} of values",
            column.name,
            column.dtype(),
            plural(column.num_levels(), "level"),
            plural(column.num_rows(), "row"),
            plural(column.num_elements(), "element"),
            bytes_text(values_bytes(column))
        )?;
        let labels: Vec<String> = (0..column.num_levels())
            .map(|l| column.level_label(l))
            .collect();
        let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        for (level, label) in labels.iter().enumerate() {
            let stats = level_stats(column, level)?;
            let lengths = match stats.lengths {
                Some((min, mean, max)) => {
                    format!("lengths min {min}, mean {mean:.2}, max {max}")
                }
                None => "no lengths".to_owned(),
            };
            writeln!(
                out,
                "  {label:width$}  {}, {} offsets, {lengths}",
                plural(stats.sequences, "sequence"),
                column.offset_width(level)
            )?;
        }
        if let Some(hint) = element_shape_hint(column)? {
            writeln!(out, "  hint: {hint}")?;
        }
    }
    Ok(())
}

fn to_json(source: &Source) -> Result<Value> {
    let mut columns = Vec::new();
    for column in &source.columns {
        let mut levels = Vec::new();
        let mut sequences = Vec::new();
        for level in 0..column.num_levels() {
            let stats = level_stats(column, level)?;
            sequences.push(stats.sequences);
            let (min, mean, max) = match stats.lengths {
                Some((min, mean, max)) => (json!(min), json!(mean), json!(max)),
                None => (Value::Null, Value::Null, Value::Null),
            };
            levels.push(json!({
                "level": level,
                "name": column.level_names.get(level),
                "sequences": stats.sequences,
                "offsets": column.offset_width(level),
                "min_length": min,
                "mean_length": mean,
                "max_length": max,
            }));
        }
        columns.push(json!({
            "name": column.name,
            "dtype": column.dtype().name(),
            "element_shape": column.element_shape(),
            "levels": column.num_levels(),
            "level_names": column.level_names,
            "sequences_per_level": sequences,
            "lengths": levels,
            "rows": column.num_rows(),
            "values": column.num_elements(),
            "values_bytes": values_bytes(column),
        }));
    }
    Ok(json!({
        "path": source.path.display().to_string(),
        "format": source.format.key(),
        "format_version": source.format_version,
        "rows": source.num_rows(),
        "batches": source.batches,
        "bytes": source.bytes,
        "columns": columns,
    }))
}
