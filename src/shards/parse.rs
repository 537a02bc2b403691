//! Reading a manifest's JSON: every field checked against format-spec.md §7.1, an error
//! naming the field's JSON path (`shards[3].columns[0].sequences`) for anything else.

use std::cell::RefCell;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::index::{IndexEntry, is_index_name};
use super::manifest::{
    ColumnSpec, ColumnStats, MANIFEST_FORMAT, MANIFEST_VERSION, MANIFEST_VERSION_SIDE_COLUMNS,
    MAX_LEVELS, Manifest, ShardEntry, is_shard_name,
};
use super::side::decode_field;
use crate::error::{Error, FormatError, Result, UnsupportedError};
use crate::io::ipc_check::MAX_RATIO;
use crate::lod::OffsetWidth;
use crate::values::DType;

/// The longest reason a manifest error gives: a value from the file is cut, never echoed
/// whole (a manifest may be any file of up to [`MAX_MANIFEST_BYTES`] bytes).
///
/// [`MAX_MANIFEST_BYTES`]: super::MAX_MANIFEST_BYTES
const MAX_REASON_CHARS: usize = 300;

pub(super) fn manifest_error(field: &str, reason: impl Into<String>) -> Error {
    FormatError::Manifest {
        field: cut(if field.is_empty() { "(root)" } else { field }, 100),
        reason: cut(&reason.into(), MAX_REASON_CHARS),
    }
    .into()
}

/// `text` cut to `chars` characters, with `…` when cut.
pub(crate) fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
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
        .ok_or_else(|| manifest_error(at, format!("is {}, expected an object", short(v))))
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

/// The most bytes a shard or index object may have (format-spec §7.1): 2^48, 256 TiB. A
/// shard is mapped whole, and no address space or object store holds more (S3's objects
/// hold at most 5 TiB); a manifest claiming more is forged or corrupt.
pub(crate) const MAX_OBJECT_BYTES: u64 = 1 << 48;

/// `bytes`, the size at `at`, if at most [`MAX_OBJECT_BYTES`].
fn object_bytes(bytes: usize, at: &str) -> Result<u64> {
    let bytes = bytes as u64;
    if bytes > MAX_OBJECT_BYTES {
        return Err(manifest_error(
            at,
            format!("is {bytes}, more than an object may hold (2^48 bytes, 256 TiB)"),
        ));
    }
    Ok(bytes)
}

/// A value for an error message, cut to 60 characters.
fn short(v: &Value) -> String {
    cut(&v.to_string(), 60)
}

/// A string for an error message, quoted and cut to 60 characters.
fn short_str(s: &str) -> String {
    cut(&format!("{s:?}"), 60)
}

/// The spec of the column `name` at `at` when its `kind` is `"side"` (its Arrow field
/// from `arrow_schema`); `None` for a LoD tensor column.
fn parse_side_column(o: &Map<String, Value>, name: &str, at: &str) -> Result<Option<ColumnSpec>> {
    let kind_at = join(at, "kind");
    match o.get("kind").map(|k| string(k, &kind_at)).transpose()? {
        None | Some("tensor") => Ok(None),
        Some("side") => {
            let schema_at = join(at, "arrow_schema");
            let encoded = string(field(o, at, "arrow_schema")?, &schema_at)?;
            Ok(Some(ColumnSpec {
                side: Some(decode_field(encoded, name, &schema_at)?),
                name: name.to_owned(),
                dtype: DType::UInt8,
                element_shape: Vec::new(),
                offsets: Vec::new(),
                level_names: Vec::new(),
            }))
        }
        Some(other) => {
            let reason = format!("is {}, expected \"tensor\" or \"side\"", short_str(other));
            Err(manifest_error(&kind_at, reason))
        }
    }
}

pub(super) fn parse_column(v: &Value, at: &str) -> Result<ColumnSpec> {
    let o = object(v, at)?;
    let name = string(field(o, at, "name")?, &join(at, "name"))?.to_owned();
    if let Some(side) = parse_side_column(o, &name, at)? {
        return Ok(side);
    }
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
                    format!("is {}, expected \"int32\" or \"int64\"", short_str(other)),
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
        side: None,
    })
}

pub(super) fn parse_shard(v: &Value, at: &str, columns_spec: &[ColumnSpec]) -> Result<ShardEntry> {
    let o = object(v, at)?;
    let file_at = join(at, "file");
    let file = string(field(o, at, "file")?, &file_at)?.to_owned();
    if !is_shard_name(&file) {
        return Err(manifest_error(
            &file_at,
            format!(
                "{} is not a shard file name (a `.arrow` name inside the directory, not starting with `.` or `_`)",
                short_str(&file)
            ),
        ));
    }
    let number = |key: &str| count(field(o, at, key)?, &join(at, key));
    let (rows, batches) = (number("rows")?, number("batches")?);
    let bytes = object_bytes(number("bytes")?, &join(at, "bytes"))?;
    let crc_at = join(at, "crc32c");
    let crc32c = u32::try_from(number("crc32c")?)
        .map_err(|_| manifest_error(&crc_at, "does not fit 32 bits"))?;
    let stats_at = join(at, "columns");
    let stats = array(field(o, at, "columns")?, &stats_at)?;
    if stats.len() != columns_spec.len() {
        return Err(manifest_error(
            &stats_at,
            format!(
                "{} entries, the dataset has {} columns",
                stats.len(),
                columns_spec.len()
            ),
        ));
    }
    let columns = stats
        .iter()
        .zip(columns_spec)
        .enumerate()
        .map(|(i, (s, spec))| parse_stats(s, &format!("{stats_at}[{i}]"), spec, rows))
        .collect::<Result<Vec<_>>>()
        .map(exact)?;
    let entry = ShardEntry {
        file,
        rows,
        batches,
        bytes,
        crc32c,
        columns,
    };
    check_counts_fit(&entry, columns_spec, at)?;
    Ok(entry)
}

/// The shard's counts are no more than its `bytes` can hold, so that nothing is sized from
/// a count the file cannot have: each level's offsets take at least 4 or 8 bytes per
/// sequence, each element its dtype's bits, each record batch a message; a compressed body
/// holds at most [`MAX_RATIO`] times its size (format-spec §6).
fn check_counts_fit(entry: &ShardEntry, specs: &[ColumnSpec], at: &str) -> Result<()> {
    let room = u128::from(entry.bytes) * MAX_RATIO as u128;
    let check = |need: u128, what: &dyn Fn() -> String| match need > room {
        true => Err(manifest_error(
            &join(at, &what()),
            format!(
                "needs at least {need} bytes, more than the shard's {} bytes can hold",
                entry.bytes
            ),
        )),
        false => Ok(()),
    };
    check(entry.batches as u128 * 8, &|| "batches".to_owned())?;
    for (c, (spec, stats)) in specs.iter().zip(&entry.columns).enumerate() {
        if spec.side.is_some() {
            continue;
        }
        for (l, (width, &n)) in spec.offsets.iter().zip(&stats.sequences).enumerate() {
            let width = match width {
                OffsetWidth::I32 => 4,
                OffsetWidth::I64 => 8,
            };
            check(n as u128 * width, &|| {
                format!("columns[{c}].sequences[{l}]")
            })?;
        }
        let bits = spec.dtype.byte_width().map_or(1, |w| w as u128 * 8);
        let shape = spec.element_shape.iter();
        let bits = shape.fold(bits, |b, &d| b.saturating_mul(d as u128));
        let need = (stats.elements as u128).saturating_mul(bits) / 8;
        check(need, &|| format!("columns[{c}].elements"))?;
    }
    Ok(())
}

fn parse_stats(v: &Value, at: &str, spec: &ColumnSpec, rows: usize) -> Result<ColumnStats> {
    let o = object(v, at)?;
    let seq_at = join(at, "sequences");
    let sequences = array(field(o, at, "sequences")?, &seq_at)?;
    if sequences.len() != spec.offsets.len() {
        return Err(manifest_error(
            &seq_at,
            format!(
                "{} levels, column {} has {}",
                sequences.len(),
                short_str(&spec.name),
                spec.offsets.len()
            ),
        ));
    }
    let sequences = sequences
        .iter()
        .enumerate()
        .map(|(i, n)| count(n, &format!("{seq_at}[{i}]")))
        .collect::<Result<Vec<_>>>()
        .map(exact)?;
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

/// `v` without spare capacity: a collected vector of a few items would otherwise keep room
/// for four, in each of a million shards.
fn exact<T>(mut v: Vec<T>) -> Vec<T> {
    v.shrink_to_fit();
    v
}

/// Shard names are distinct and every count a reader sums over the shards (rows, batches,
/// bytes, each column's sequences of each level and elements) adds up without overflow.
pub(super) fn check_shards(shards: &[ShardEntry]) -> Result<()> {
    let mut names: Vec<&str> = shards.iter().map(|s| s.file.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(manifest_error(
            "shards",
            format!("{} is listed twice", short_str(w[0])),
        ));
    }
    let overflow = |what: &str| {
        manifest_error(
            "shards",
            format!("the {what} add up past the address space"),
        )
    };
    // Every total in 64 bits; the counts a reader keeps in a `usize` must fit one too.
    let sum = |what: &str, count: &dyn Fn(&ShardEntry) -> u64| {
        shards
            .iter()
            .try_fold(0u64, |total, s| total.checked_add(count(s)))
            .ok_or_else(|| overflow(what))
    };
    let count = |what: &str, count: &dyn Fn(&ShardEntry) -> usize| {
        let total = sum(what, &|s| count(s) as u64)?;
        usize::try_from(total).map(drop).map_err(|_| overflow(what))
    };
    count("rows", &|s| s.rows)?;
    count("batches", &|s| s.batches)?;
    sum("bytes", &|s| s.bytes)?;
    let columns = shards.first().map_or(0, |s| s.columns.len());
    for c in 0..columns {
        count(&format!("columns[{c}] elements"), &|s| {
            s.columns[c].elements
        })?;
        for level in 0..shards[0].columns[c].sequences.len() {
            count(&format!("columns[{c}] level {level} sequences"), &|s| {
                s.columns[c].sequences[level]
            })?;
        }
    }
    Ok(())
}

/// Parses a manifest from `de`, streaming: the shards are read one at a time, each checked
/// and kept as a [`ShardEntry`] as soon as it is read, so the parse holds one shard's JSON
/// tree at a time, never the whole document's. The columns must come before the shards to
/// stream (as this crate writes them); otherwise the shards are kept as JSON until the end.
pub(super) fn parse_manifest<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
) -> Result<Manifest> {
    let failure = RefCell::new(None);
    let parsed = serde::de::DeserializeSeed::deserialize(Root { failure: &failure }, &mut *de)
        .and_then(|m| de.end().map(|()| m));
    match (parsed, failure.into_inner()) {
        (_, Some(e)) => Err(e),
        (Ok(manifest), None) => Ok(manifest),
        (Err(e), None) => Err(manifest_error("", e.to_string())),
    }
}

/// The manifest's root object; a fault found while reading it goes to `failure`.
struct Root<'a> {
    failure: &'a RefCell<Option<Error>>,
}

impl Root<'_> {
    /// Keeps `error` and returns the serde error that stops the parse.
    fn fail<E: serde::de::Error>(&self, error: Error) -> E {
        *self.failure.borrow_mut() = Some(error);
        E::custom("manifest fault")
    }
}

impl<'de> DeserializeSeed<'de> for Root<'_> {
    type Value = Manifest;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Manifest, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = Manifest;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a manifest object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Manifest, A::Error> {
        let (mut seen, mut columns, mut shards) = (Vec::new(), None, None);
        let mut index = Vec::new();
        let mut pending: Option<Value> = None;
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(self.fail(manifest_error(&key, "appears twice")));
            }
            match key.as_str() {
                "format" => check_format(&map.next_value()?).map_err(|e| self.fail(e))?,
                "version" => check_version(&map.next_value()?).map_err(|e| self.fail(e))?,
                "columns" => {
                    columns = Some(parse_columns(&map.next_value()?).map_err(|e| self.fail(e))?)
                }
                "index" => index = parse_index(&map.next_value()?).map_err(|e| self.fail(e))?,
                "shards" => match &columns {
                    Some(columns) => {
                        let seed = Shards {
                            root: &self,
                            columns,
                        };
                        shards = Some(map.next_value_seed(seed)?);
                    }
                    None => pending = Some(map.next_value()?),
                },
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            }
            seen.push(key);
        }
        for key in ["format", "version", "columns", "shards"] {
            if !seen.iter().any(|k| k == key) {
                return Err(self.fail(manifest_error(key, "is missing")));
            }
        }
        let columns = columns.expect("seen");
        let shards = match (shards, pending) {
            (Some(shards), _) => shards,
            (None, pending) => array(&pending.expect("seen"), "shards")
                .and_then(|all| {
                    all.iter()
                        .enumerate()
                        .map(|(i, s)| parse_shard(s, &format!("shards[{i}]"), &columns))
                        .collect()
                })
                .map_err(|e| self.fail(e))?,
        };
        check_shards(&shards).map_err(|e| self.fail(e))?;
        check_index(&index, shards.len()).map_err(|e| self.fail(e))?;
        Ok(Manifest {
            columns,
            shards,
            index,
        })
    }
}

/// The `index` array (format-spec §7.2): each object's name, shards, size and checksum.
fn parse_index(v: &Value) -> Result<Vec<IndexEntry>> {
    let entries = array(v, "index")?;
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let at = format!("index[{i}]");
        let o = object(e, &at)?;
        let file_at = join(&at, "file");
        let file = string(field(o, &at, "file")?, &file_at)?.to_owned();
        if !is_index_name(&file) {
            let reason = format!("{} is not an index object's name", short_str(&file));
            return Err(manifest_error(&file_at, reason));
        }
        let number = |key: &str| count(field(o, &at, key)?, &join(&at, key));
        let shards = number("shards")?;
        if shards == 0 {
            return Err(manifest_error(
                &join(&at, "shards"),
                "is 0, expected at least 1",
            ));
        }
        let bytes = object_bytes(number("bytes")?, &join(&at, "bytes"))?;
        let crc32c = u32::try_from(number("crc32c")?)
            .map_err(|_| manifest_error(&join(&at, "crc32c"), "does not fit 32 bits"))?;
        out.push(IndexEntry {
            file,
            shards,
            bytes,
            crc32c,
        });
    }
    Ok(exact(out))
}

/// The index objects cover at most the manifest's `shards`.
fn check_index(index: &[IndexEntry], shards: usize) -> Result<()> {
    let covered = index
        .iter()
        .try_fold(0usize, |total, e| total.checked_add(e.shards));
    match covered {
        Some(n) if n <= shards => Ok(()),
        _ => Err(manifest_error(
            "index",
            format!("covers more shards than the {shards} listed"),
        )),
    }
}

fn check_format(v: &Value) -> Result<()> {
    let format = string(v, "format")?;
    if format != MANIFEST_FORMAT {
        return Err(manifest_error(
            "format",
            format!("is {}, expected {MANIFEST_FORMAT:?}", short(v)),
        ));
    }
    Ok(())
}

fn check_version(v: &Value) -> Result<()> {
    let version = count(v, "version")?;
    if ![MANIFEST_VERSION, MANIFEST_VERSION_SIDE_COLUMNS].contains(&(version as u64)) {
        return Err(UnsupportedError::UnsupportedVersion {
            found: version.to_string(),
            expected: "1 or 2",
        }
        .into());
    }
    Ok(())
}

fn parse_columns(v: &Value) -> Result<Vec<ColumnSpec>> {
    let columns = array(v, "columns")?
        .iter()
        .enumerate()
        .map(|(i, c)| parse_column(c, &format!("columns[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|o| o.name == c.name) {
            return Err(manifest_error(
                &format!("columns[{i}].name"),
                format!("{} names two columns", short_str(&c.name)),
            ));
        }
    }
    Ok(columns)
}

/// The `shards` array, each shard parsed and checked as it is read.
struct Shards<'a, 'b> {
    root: &'a Root<'b>,
    columns: &'a [ColumnSpec],
}

impl<'de> DeserializeSeed<'de> for Shards<'_, '_> {
    type Value = Vec<ShardEntry>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Shards<'_, '_> {
    type Value = Vec<ShardEntry>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of shards")
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut shards = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            let at = format!("shards[{}]", shards.len());
            shards.push(parse_shard(&v, &at, self.columns).map_err(|e| self.root.fail(e))?);
        }
        Ok(shards)
    }
}
