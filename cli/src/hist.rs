//! `lodtensor hist FILE [--column C] [--level L]`: a histogram of the sequence lengths of
//! each level (or of level `L`), drawn in the terminal.

use std::io::Write;

use crate::input::ColumnInput;
use crate::source::{Parts, Source, plural};
use crate::{Result, usage};

/// Arguments of `lodtensor hist`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: ColumnInput,
    /// At most this many bins (one per length when the lengths span fewer).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    bins: u64,
    /// Only this level (default: every level).
    #[arg(long)]
    level: Option<usize>,
    /// Width of the longest bar, in characters.
    #[arg(long, default_value_t = 50)]
    width: usize,
}

pub fn run(args: Args) -> Result<()> {
    let ColumnInput { file, column, read } = &args.input;
    let source = Source::open(file, read)?;
    let column = source.column(column.as_deref())?;
    let levels = column.num_levels();
    if levels == 0 {
        return usage(format!(
            "column {:?} has no LoD levels: its {} are not sequences",
            column.name,
            plural(column.num_rows(), "row")
        ));
    }
    let chosen: Vec<usize> = match args.level {
        Some(level) if level >= levels => {
            return Err(
                lodtensor::Error::from(lodtensor::ArgumentError::LevelOutOfBounds {
                    level,
                    levels,
                })
                .in_column(&column.name, 0)
                .in_file(&source.path)
                .into(),
            );
        }
        Some(level) => vec![level],
        None => (0..levels).collect(),
    };
    let out = &mut std::io::stdout().lock();
    for (i, &level) in chosen.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write!(
            out,
            "{}",
            histogram(column, level, args.bins as usize, args.width)?
        )?;
    }
    Ok(())
}

/// The histogram of one level: a title line, then one line per bin.
fn histogram(column: &Parts, level: usize, bins: usize, width: usize) -> Result<String> {
    let lengths = column.lengths(level)?;
    let below = if level + 1 < column.num_levels() {
        format!("level-{} sequences", level + 1)
    } else {
        "elements".to_owned()
    };
    let below = match column.level_names.get(level + 1) {
        Some(name) => name.clone(),
        None => below,
    };
    let mut text = format!(
        "column {:?}, {}: {}, lengths in {below}",
        column.name,
        column.level_label(level),
        plural(lengths.len(), "sequence")
    );
    let (Some(&min), Some(&max)) = (lengths.iter().min(), lengths.iter().max()) else {
        return Ok(text + "\n");
    };
    let mean = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
    text += &format!(" (min {min}, mean {mean:.2}, max {max})\n");
    let span = max - min + 1;
    let step = span.div_ceil(bins);
    let mut counts = vec![0usize; span.div_ceil(step)];
    for &l in &lengths {
        counts[(l - min) / step] += 1;
    }
    let labels: Vec<String> = (0..counts.len())
        .map(|b| {
            let lo = min + b * step;
            let hi = (lo + step - 1).min(max);
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    let label_width = labels.iter().map(String::len).max().unwrap_or(0);
    let top = counts.iter().copied().max().unwrap_or(0).max(1);
    for (label, &count) in labels.iter().zip(&counts) {
        let bar = (count * width).div_ceil(top);
        text += &format!("{label:>label_width$} │{} {count}\n", "█".repeat(bar));
    }
    Ok(text)
}
