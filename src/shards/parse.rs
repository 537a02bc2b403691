//! Reading a manifest's JSON: every field checked against format-spec.md §7.1, an error
//! naming the field's JSON path (`shards[3].columns[0].sequences`) for anything else.

use serde_json::{Map, Value};

use super::manifest::{ColumnSpec, ColumnStats, MAX_LEVELS, ShardEntry, is_shard_name};
use crate::error::FormatError;
use crate::error::{Error, Result};
use crate::lod::OffsetWidth;
use crate::values::DType;

pub(super) fn manifest_error(field: &str, reason: impl Into<String>) -> Error {
    FormatError::Manifest {
        field: if field.is_empty() { "(root)" } else { field }.to_owned(),
        reason: reason.into(),
    }
    .into()
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

pub(super) fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| manifest_error(at, format!("is {v}, expected an object")))
}

pub(super) fn field<'a>(object: &'a Map<String, Value>, at: &str, key: &str) -> Result<&'a Value> {
    object
        .get(key)
        .ok_or_else(|| manifest_error(&join(at, key), "is missing"))
}

pub(super) fn array<'a>(v: &'a Value, at: &str) -> Result<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| manifest_error(at, format!("is {}, expected an array", short(v))))
}

pub(super) fn string<'a>(v: &'a Value, at: &str) -> Result<&'a str> {
    v.as_str()
        .ok_or_else(|| manifest_error(at, format!("is {}, expected a string", short(v))))
}

pub(super) fn count(v: &Value, at: &str) -> Result<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            manifest_error(
                at,
                format!("is {}, expected a non-negative integer", short(v)),
            )
        })
}

/// A value for an error message, cut to 60 characters.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

pub(super) fn parse_column(v: &Value, at: &str) -> Result<ColumnSpec> {
    let o = object(v, at)?;
    let name = string(field(o, at, "name")?, &join(at, "name"))?.to_owned();
    let dtype_at = join(at, "dtype");
    let dtype = DType::from_name(string(field(o, at, "dtype")?, &dtype_at)?)
        .map_err(|e| manifest_error(&dtype_at, e.to_string()))?;
    let shape_at = join(at, "element_shape");
    let element_shape = array(field(o, at, "element_shape")?, &shape_at)?
        .iter()
        .enumerate()
        .map(|(i, d)| count(d, &format!("{shape_at}[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let offsets_at = join(at, "offsets");
    let offsets = array(field(o, at, "offsets")?, &offsets_at)?;
    if offsets.len() > MAX_LEVELS {
        return Err(manifest_error(
            &offsets_at,
            format!("{} levels, at most {MAX_LEVELS} are read", offsets.len()),
        ));
    }
    let offsets = offsets
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let at = format!("{offsets_at}[{i}]");
            match string(w, &at)? {
                "int32" => Ok(OffsetWidth::I32),
                "int64" => Ok(OffsetWidth::I64),
                other => Err(manifest_error(
                    &at,
                    format!("is {other:?}, expected \"int32\" or \"int64\""),
                )),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let names_at = join(at, "level_names");
    let level_names = match o.get("level_names") {
        None => Vec::new(),
        Some(v) => array(v, &names_at)?
            .iter()
            .enumerate()
            .map(|(i, n)| Ok(string(n, &format!("{names_at}[{i}]"))?.to_owned()))
            .collect::<Result<Vec<_>>>()?,
    };
    if !level_names.is_empty() && level_names.len() != offsets.len() {
        return Err(manifest_error(
            &names_at,
            format!(
                "names {} levels, the column has {}",
                level_names.len(),
                offsets.len()
            ),
        ));
    }
    Ok(ColumnSpec {
        name,
        dtype,
        element_shape,
        offsets,
        level_names,
    })
}

pub(super) fn parse_shard(v: &Value, at: &str, columns: &[ColumnSpec]) -> Result<ShardEntry> {
    let o = object(v, at)?;
    let file_at = join(at, "file");
    let file = string(field(o, at, "file")?, &file_at)?.to_owned();
    if !is_shard_name(&file) {
        return Err(manifest_error(
            &file_at,
            format!(
                "{file:?} is not a shard file name (a `.arrow` name inside the directory, not starting with `.` or `_`)"
            ),
        ));
    }
    let number = |key: &str| count(field(o, at, key)?, &join(at, key));
    let (rows, batches) = (number("rows")?, number("batches")?);
    let bytes = number("bytes")? as u64;
    let crc_at = join(at, "crc32c");
    let crc32c = u32::try_from(number("crc32c")?)
        .map_err(|_| manifest_error(&crc_at, "does not fit 32 bits"))?;
    let stats_at = join(at, "columns");
    let stats = array(field(o, at, "columns")?, &stats_at)?;
    if stats.len() != columns.len() {
        return Err(manifest_error(
            &stats_at,
            format!(
                "{} entries, the dataset has {} columns",
                stats.len(),
                columns.len()
            ),
        ));
    }
    let columns = stats
        .iter()
        .zip(columns)
        .enumerate()
        .map(|(i, (s, spec))| parse_stats(s, &format!("{stats_at}[{i}]"), spec, rows))
        .collect::<Result<Vec<_>>>()?;
    Ok(ShardEntry {
        file,
        rows,
        batches,
        bytes,
        crc32c,
        columns,
    })
}

fn parse_stats(v: &Value, at: &str, spec: &ColumnSpec, rows: usize) -> Result<ColumnStats> {
    let o = object(v, at)?;
    let seq_at = join(at, "sequences");
    let sequences = array(field(o, at, "sequences")?, &seq_at)?;
    if sequences.len() != spec.offsets.len() {
        return Err(manifest_error(
            &seq_at,
            format!(
                "{} levels, column {:?} has {}",
                sequences.len(),
                spec.name,
                spec.offsets.len()
            ),
        ));
    }
    let sequences = sequences
        .iter()
        .enumerate()
        .map(|(i, n)| count(n, &format!("{seq_at}[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let elements = count(field(o, at, "elements")?, &join(at, "elements"))?;
    let outer = sequences.first().copied().unwrap_or(elements);
    if outer != rows {
        return Err(manifest_error(
            at,
            format!("{outer} top-level sequences, the shard has {rows} rows"),
        ));
    }
    Ok(ColumnStats {
        sequences,
        elements,
    })
}

/// Shard names are distinct and the rows add up without overflow.
pub(super) fn check_shards(shards: &[ShardEntry]) -> Result<()> {
    let mut names: Vec<&str> = shards.iter().map(|s| s.file.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(manifest_error(
            "shards",
            format!("{:?} is listed twice", w[0]),
        ));
    }
    shards
        .iter()
        .try_fold(0usize, |total, s| total.checked_add(s.rows))
        .ok_or_else(|| manifest_error("shards", "the rows add up past the address space"))?;
    Ok(())
}
