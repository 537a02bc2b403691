//! `lodtensor info FILE [--json]`: what a file holds, column by column and level by level;
//! for a sharded dataset's directory, what its manifest says (no shard is opened).

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use lodtensor::DType;
use lodtensor::shards::{
    ColumnSpec, ColumnStats, MANIFEST_VERSION, MANIFEST_VERSION_SIDE_COLUMNS, Manifest,
};

use crate::input::{ReadArgs, element_shape_hint};
use crate::shards::{Sharded, is_dir};
use crate::side::SideParts;
use crate::source::{Format, Parts, Source, bytes_text, level_label, plural};
use crate::{Result, usage};

/// Arguments of `lodtensor info`.
#[derive(clap::Args)]
pub struct Args {
    /// The file (.arrow, .parquet, .pdtensor or .pdiparams), or a sharded dataset's
    /// directory.
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    read: ReadArgs,
}

/// One level of a column: its sequences, offset width and lengths (min and max only when
/// the offsets were read, not from a manifest).
struct LevelStats {
    sequences: usize,
    offsets: &'static str,
    mean: Option<f64>,
    min_max: Option<(usize, usize)>,
}

/// What `info` says of one column.
struct ColumnSummary {
    name: String,
    dtype: DType,
    element_shape: Vec<usize>,
    level_names: Vec<String>,
    rows: usize,
    elements: usize,
    levels: Vec<LevelStats>,
    hint: Option<String>,
}

impl ColumnSummary {
    /// From the column's offsets.
    fn of_parts(column: &Parts) -> Result<Self> {
        let mut levels = Vec::new();
        for level in 0..column.num_levels() {
            let lengths = column.lengths(level)?;
            let min_max = lengths.iter().min().zip(lengths.iter().max());
            levels.push(LevelStats {
                sequences: lengths.len(),
                offsets: column.offset_width(level),
                mean: (!lengths.is_empty())
                    .then(|| lengths.iter().sum::<usize>() as f64 / lengths.len() as f64),
                min_max: min_max.map(|(&min, &max)| (min, max)),
            });
        }
        Ok(ColumnSummary {
            name: column.name.clone(),
            dtype: column.dtype(),
            element_shape: column.element_shape().to_vec(),
            level_names: column.level_names.clone(),
            rows: column.num_rows(),
            elements: column.num_elements(),
            levels,
            hint: element_shape_hint(column)?,
        })
    }

    /// From a manifest's counts, summed over the shards: the mean length of a level is the
    /// sequences (or elements) below it over its sequences.
    fn of_manifest<'a>(spec: &ColumnSpec, shards: impl Iterator<Item = &'a ColumnStats>) -> Self {
        let mut sequences = vec![0; spec.offsets.len()];
        let mut elements = 0;
        for stats in shards {
            for (total, n) in sequences.iter_mut().zip(&stats.sequences) {
                *total += n;
            }
            elements += stats.elements;
        }
        let below = |level: usize| sequences.get(level + 1).copied().unwrap_or(elements);
        let levels = spec
            .offsets
            .iter()
            .enumerate()
            .map(|(level, width)| LevelStats {
                sequences: sequences[level],
                offsets: width.name(),
                mean: (sequences[level] > 0).then(|| below(level) as f64 / sequences[level] as f64),
                min_max: None,
            })
            .collect();
        ColumnSummary {
            name: spec.name.clone(),
            dtype: spec.dtype,
            element_shape: spec.element_shape.clone(),
            level_names: spec.level_names.clone(),
            rows: sequences.first().copied().unwrap_or(elements),
            elements,
            levels,
            hint: None,
        }
    }

    /// Bytes of the values in view: items times the item size (bools are bits).
    fn values_bytes(&self) -> u64 {
        let items = self.elements as u64 * self.element_shape.iter().product::<usize>() as u64;
        match self.dtype.byte_width() {
            Some(w) => items * w as u64,
            None => items.div_ceil(8),
        }
    }

    fn write_text(&self, out: &mut impl Write) -> Result<()> {
        writeln!(
            out,
            "column {:?}: {}, element shape {:?}, {}, {}, {}, {} of values",
            self.name,
            self.dtype,
            self.element_shape,
            plural(self.levels.len(), "level"),
            plural(self.rows, "row"),
            plural(self.elements, "element"),
            bytes_text(self.values_bytes())
        )?;
        let labels: Vec<String> = (0..self.levels.len())
            .map(|l| level_label(&self.level_names, l))
            .collect();
        let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        for (stats, label) in self.levels.iter().zip(&labels) {
            let lengths = match (stats.min_max, stats.mean) {
                (Some((min, max)), Some(mean)) => {
                    format!("lengths min {min}, mean {mean:.2}, max {max}")
                }
                (None, Some(mean)) => format!("mean length {mean:.2}"),
                _ => "no lengths".to_owned(),
            };
            writeln!(
                out,
                "  {label:width$}  {}, {} offsets, {lengths}",
                plural(stats.sequences, "sequence"),
                stats.offsets
            )?;
        }
        if let Some(hint) = &self.hint {
            writeln!(out, "  hint: {hint}")?;
        }
        Ok(())
    }

    fn to_json(&self) -> Value {
        let levels: Vec<Value> = self
            .levels
            .iter()
            .enumerate()
            .map(|(level, stats)| {
                json!({
                    "level": level,
                    "name": self.level_names.get(level),
                    "sequences": stats.sequences,
                    "offsets": stats.offsets,
                    "min_length": stats.min_max.map(|m| m.0),
                    "mean_length": stats.mean,
                    "max_length": stats.min_max.map(|m| m.1),
                })
            })
            .collect();
        json!({
            "name": self.name,
            "dtype": self.dtype.name(),
            "element_shape": self.element_shape,
            "levels": self.levels.len(),
            "level_names": self.level_names,
            "sequences_per_level": self.levels.iter().map(|l| l.sequences).collect::<Vec<_>>(),
            "lengths": levels,
            "rows": self.rows,
            "values": self.elements,
            "values_bytes": self.values_bytes(),
        })
    }
}

pub fn run(args: Args) -> Result<()> {
    if is_dir(&args.file) {
        if !args.read.element_shape.is_empty() {
            return usage(
                "--element-shape does not apply to `info` on a sharded dataset, which reads the manifest only",
            );
        }
        return run_shards(&Sharded::open(&args.file, &args.read)?, args.json);
    }
    let source = Source::open(&args.file, &args.read)?;
    let columns = source
        .columns
        .iter()
        .map(ColumnSummary::of_parts)
        .collect::<Result<Vec<_>>>()?;
    let out = &mut std::io::stdout().lock();
    if args.json {
        let object = json!({
            "path": source.path.display().to_string(),
            "format": source.format.key(),
            "format_version": source.format_version,
            "rows": source.num_rows(),
            "batches": source.batches,
            "bytes": source.bytes,
            "columns": all_columns(&columns, &source.sides),
            // Deprecated: the side columns are in `columns` too, with "kind": "side".
            "side_columns": source.sides.iter().map(side_json).collect::<Vec<_>>(),
        });
        return print_json(out, &object);
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
        plural(source.columns.len() + source.sides.len(), "column")
    )?;
    columns.iter().try_for_each(|c| c.write_text(out))?;
    for side in &source.sides {
        writeln!(
            out,
            "side column {:?}: {}, {}, {}, {}",
            side.name(),
            side.field.data_type(),
            plural(side.num_rows(), "row"),
            plural(side.null_count(), "null"),
            bytes_text(side.bytes() as u64)
        )?;
    }
    Ok(())
}

/// Every column in `info --json`, in the file's (or `--columns`') order: the tensors'
/// summaries and the side columns', each with its `kind`.
fn all_columns(tensors: &[ColumnSummary], sides: &[SideParts]) -> Vec<Value> {
    in_order(
        tensors,
        sides.iter().map(|s| (s.position, side_json(s))).collect(),
    )
}

/// `summary` with `"kind": kind`.
fn with_kind(mut summary: Value, kind: &str) -> Value {
    if let Value::Object(fields) = &mut summary {
        fields.insert("kind".to_owned(), json!(kind));
    }
    summary
}

/// A side column in `info --json`.
fn side_json(side: &SideParts) -> Value {
    json!({
        "name": side.name(),
        "kind": "side",
        "type": side.field.data_type().to_string(),
        "rows": side.num_rows(),
        "nulls": side.null_count(),
        "bytes": side.bytes(),
    })
}

/// `info DIR`: the manifest alone (no shard is opened), so it takes the same time for
/// shards of a kilobyte or a gigabyte.
fn run_shards(sharded: &Sharded, json: bool) -> Result<()> {
    let manifest = sharded.manifest();
    let (columns, sides) = manifest_columns(manifest);
    let version = match sides.is_empty() {
        true => MANIFEST_VERSION,
        false => MANIFEST_VERSION_SIDE_COLUMNS,
    };
    let rows = manifest.num_rows();
    let bytes: u64 = manifest.shards.iter().map(|s| s.bytes).sum();
    let batches: usize = manifest.shards.iter().map(|s| s.batches).sum();
    let out = &mut std::io::stdout().lock();
    if json {
        let shards: Vec<Value> = manifest
            .shards
            .iter()
            .map(|s| json!({"file": s.file, "rows": s.rows, "batches": s.batches, "bytes": s.bytes, "crc32c": s.crc32c}))
            .collect();
        let object = json!({
            "path": sharded.path.display().to_string(),
            "format": Format::Shards.key(),
            "format_version": version.to_string(),
            "rows": manifest.num_rows(),
            "batches": batches,
            "bytes": bytes,
            "shards": shards,
            "columns": in_order(&columns, sides.clone()),
        });
        return print_json(out, &object);
    }
    writeln!(
        out,
        "{}: {}, manifest version {version}, {}, {}, {} in {}, {}",
        sharded.path.display(),
        Format::Shards.name(),
        plural(manifest.shards.len(), "shard"),
        bytes_text(bytes),
        plural(manifest.num_rows(), "row"),
        plural(batches, "batch"),
        plural(manifest.columns.len(), "column")
    )?;
    if let (Some(first), Some(last)) = (manifest.shards.first(), manifest.shards.last()) {
        let rows: Vec<u64> = manifest.shards.iter().map(|s| s.rows as u64).collect();
        let sizes: Vec<u64> = manifest.shards.iter().map(|s| s.bytes).collect();
        let names = match manifest.shards.len() {
            1 => first.file.clone(),
            _ => format!("{} … {}", first.file, last.file),
        };
        writeln!(
            out,
            "shards {names}: rows {}, bytes {}",
            min_mean_max(&rows),
            min_mean_max(&sizes)
        )?;
    }
    columns.iter().try_for_each(|c| c.write_text(out))?;
    for (_, side) in &sides {
        writeln!(
            out,
            "side column {}: {}, {}",
            side["name"],
            side["type"].as_str().unwrap_or(""),
            plural(rows, "row")
        )?;
    }
    Ok(())
}

/// The columns in order: the tensors' summaries (`"kind": "tensor"`), and `sides`, each
/// at its place among the columns.
fn in_order(tensors: &[ColumnSummary], sides: Vec<(usize, Value)>) -> Vec<Value> {
    let mut tensors = tensors.iter().map(|c| with_kind(c.to_json(), "tensor"));
    let mut all = Vec::with_capacity(tensors.len() + sides.len());
    for (position, side) in sides {
        while all.len() < position {
            match tensors.next() {
                Some(tensor) => all.push(tensor),
                None => break,
            }
        }
        all.push(side);
    }
    all.extend(tensors);
    all
}

/// The manifest's tensor columns' summaries, and its side columns in `--json` form, each
/// with its place among the columns.
fn manifest_columns(manifest: &Manifest) -> (Vec<ColumnSummary>, Vec<(usize, Value)>) {
    let (mut tensors, mut sides) = (Vec::new(), Vec::new());
    for (c, spec) in manifest.columns.iter().enumerate() {
        match &spec.side {
            Some(field) => sides.push((
                c,
                json!({"name": field.name(), "kind": "side", "type": field.data_type().to_string(), "rows": manifest.num_rows()}),
            )),
            None => tensors.push(ColumnSummary::of_manifest(
                spec,
                manifest.shards.iter().map(|s| &s.columns[c]),
            )),
        }
    }
    (tensors, sides)
}

/// `min 1, mean 2.00, max 3` of non-empty `values`.
fn min_mean_max(values: &[u64]) -> String {
    let (min, max) = (values.iter().min(), values.iter().max());
    let mean = values.iter().sum::<u64>() as f64 / values.len().max(1) as f64;
    format!(
        "min {}, mean {mean:.2}, max {}",
        min.copied().unwrap_or(0),
        max.copied().unwrap_or(0)
    )
}

fn print_json(out: &mut impl Write, object: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(object).expect("a JSON value serialises");
    writeln!(out, "{text}")?;
    Ok(())
}
