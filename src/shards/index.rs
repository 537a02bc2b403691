//! The lengths index of a sharded dataset (format-spec §7.2): per shard, the rows of each
//! record batch and every sample's length at every level of every LoD tensor column, in
//! index objects (`_lodtensor.index.FIRST.CRC.ipc`, small Arrow IPC files) that the
//! manifest names with their size and CRC-32C. A commit writes one object for the shards
//! it appends, before the manifest; a loader whose plan needs lengths reads them from the
//! index instead of every shard's metadata.
//!
//! ```text
//! manifest "index": [{file, shards: 1000, bytes, crc32c}, {file, shards: 24, …}]
//!                         │                                   │
//!   object 0: one row per shard 0..1000            object 1: shards 1000..1024
//!   file │ batch_rows │ lengths.0.0 │ lengths.0.1   (LargeList<UInt8|16|32|64>, narrowest)
//! ```

use std::collections::HashMap;
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, LargeListArray, RecordBatch, StringArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema};

use crate::error::{Error, FileFormat, Result};
use crate::io::ipc_reader::MappedDataset;
use crate::shards::ShardFiles;
use crate::shards::location::{Location, index_url_default};
use crate::shards::manifest::{ColumnSpec, Manifest, ShardEntry};
use crate::shards::reader::mismatch;

mod lengths;
mod marks;
pub(crate) use lengths::{ColumnLengths, narrow_length};

/// The start of every index object's name.
///
/// # Example
/// ```
/// assert!(lodtensor::shards::INDEX_PREFIX.starts_with('_'));   // hidden from discovery
/// ```
pub const INDEX_PREFIX: &str = "_lodtensor.index.";

/// The end of an index object's name: `.ipc`, not `.arrow`, so that tools reading a
/// dataset's directory as `*.arrow` files (DataFusion's `register_arrow`) take the shards only.
const INDEX_EXTENSION: &str = ".ipc";
/// The schema metadata key of an index object's version.
const KEY_VERSION: &str = "lodtensor.index.version";
/// The version of index objects this crate writes and reads.
const VERSION: &str = "1";
/// The field metadata key naming a `lengths.C.L` field's column.
const KEY_COLUMN: &str = "lodtensor.column";

/// One index object named in the manifest (format-spec §7.2): it covers the `shards`
/// shards that follow those of the objects before it, in manifest order.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// let manifest = writer.finish()?;
/// let entry = &manifest.index[0];
/// assert_eq!(entry.shards, 2);                           // both shards, one object
/// assert_eq!(std::fs::metadata(dir.path().join(&entry.file))?.len(), entry.bytes);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The object's name in the dataset directory (or under the store's prefix).
    pub file: String,
    /// How many shards it covers.
    pub shards: usize,
    /// The object's size.
    pub bytes: u64,
    /// CRC-32C of the whole object.
    pub crc32c: u32,
}

/// Whether `name` may name an index object.
pub(crate) fn is_index_name(name: &str) -> bool {
    name.starts_with(INDEX_PREFIX)
        && name.ends_with(INDEX_EXTENSION)
        && name.len() > INDEX_PREFIX.len() + INDEX_EXTENSION.len()
        && !name.contains(['/', '\\', '\0'])
        && !name.contains("..")
}

/// One shard's row of an index object: its record batches' rows and, per `lengths.C.L`
/// field (in [`length_fields`] order), each sample's length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ShardLengths {
    pub batch_rows: Vec<u64>,
    pub lengths: Vec<Vec<u64>>,
}

/// The `(column, level)` of every `lengths.C.L` field of a dataset of `columns`, in order.
pub(crate) fn length_fields(columns: &[ColumnSpec]) -> Vec<(usize, usize)> {
    (columns.iter().enumerate())
        .filter(|(_, c)| c.side.is_none())
        .flat_map(|(c, spec)| (0..spec.offsets.len()).map(move |l| (c, l)))
        .collect()
}

/// Whether `manifest`'s index covers every shard.
pub(crate) fn is_complete(manifest: &Manifest) -> bool {
    covered(manifest) == manifest.shards.len()
}

/// The shards `manifest`'s index objects cover (the first ones).
pub(crate) fn covered(manifest: &Manifest) -> usize {
    manifest.index.iter().map(|e| e.shards).sum()
}

/// The lengths of the shard mapped as `file`, for the index of a dataset of `columns`.
///
/// # Errors
/// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) when a length
/// column is not a LoD tensor of the manifest's levels in the shard.
pub(crate) fn measure(file: &MappedDataset, columns: &[ColumnSpec]) -> Result<ShardLengths> {
    let fields = length_fields(columns);
    let mut out = ShardLengths {
        batch_rows: Vec::with_capacity(file.batches().len()),
        lengths: vec![Vec::new(); fields.len()],
    };
    for batch in file.batches() {
        out.batch_rows.push(batch.num_rows() as u64);
        for (f, &(c, level)) in fields.iter().enumerate() {
            let tensor = batch.columns().get(c).and_then(|c| c.as_tensor());
            let Some(lod) = tensor.map(|t| t.lod()).filter(|l| l.num_levels() > level) else {
                let field = format!("columns[{c}].levels");
                return Err(mismatch(&field, level + 1, 0).expect_err("differ"));
            };
            out.lengths[f].extend(
                (0..batch.num_rows()).map(|r| lod.descend(0, r..r + 1, level + 1).len() as u64),
            );
        }
    }
    Ok(out)
}

/// Measures the shard at `path` (a local file) for the index.
pub(crate) fn measure_file(path: &Path, columns: &[ColumnSpec]) -> Result<ShardLengths> {
    let file = MappedDataset::open(path).map_err(|e| e.in_file(path))?;
    measure(&file, columns).map_err(|e| e.in_file(path))
}

/// A `LargeList` of the narrowest unsigned integers holding `lists`' values.
fn uint_lists<'a>(lists: impl Iterator<Item = &'a [u64]> + Clone) -> LargeListArray {
    let max = lists.clone().flatten().copied().max().unwrap_or(0);
    let values = lists.clone().flatten().copied();
    let (item, values): (DataType, ArrayRef) = if max <= u8::MAX as u64 {
        let a: arrow_array::UInt8Array = values.map(|v| v as u8).collect();
        (DataType::UInt8, Arc::new(a))
    } else if max <= u16::MAX as u64 {
        let a: arrow_array::UInt16Array = values.map(|v| v as u16).collect();
        (DataType::UInt16, Arc::new(a))
    } else if max <= u32::MAX as u64 {
        let a: arrow_array::UInt32Array = values.map(|v| v as u32).collect();
        (DataType::UInt32, Arc::new(a))
    } else {
        let a: arrow_array::UInt64Array = values.collect();
        (DataType::UInt64, Arc::new(a))
    };
    let offsets = OffsetBuffer::<i64>::from_lengths(lists.map(<[u64]>::len));
    LargeListArray::new(
        Arc::new(Field::new("item", item, false)),
        offsets,
        values,
        None,
    )
}

/// The bytes of an index object of the shards `files` with lengths `rows`, in a dataset of
/// `columns`.
pub(crate) fn encode(columns: &[ColumnSpec], files: &[&str], rows: &[ShardLengths]) -> Vec<u8> {
    let fields = length_fields(columns);
    let mut schema_fields = vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("batch_rows", DataType::Null, false),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(files.iter())),
        Arc::new(uint_lists(rows.iter().map(|r| r.batch_rows.as_slice()))),
    ];
    for (f, &(c, level)) in fields.iter().enumerate() {
        let metadata = HashMap::from([(KEY_COLUMN.to_owned(), columns[c].name.clone())]);
        schema_fields.push(
            Field::new(format!("lengths.{c}.{level}"), DataType::Null, false)
                .with_metadata(metadata),
        );
        arrays.push(Arc::new(uint_lists(
            rows.iter().map(|r| r.lengths[f].as_slice()),
        )));
    }
    let schema_fields: Vec<Field> = (schema_fields.into_iter().zip(&arrays))
        .map(|(f, a)| f.with_data_type(a.data_type().clone()))
        .collect();
    let metadata = HashMap::from([(KEY_VERSION.to_owned(), VERSION.to_owned())]);
    let schema = Arc::new(Schema::new_with_metadata(schema_fields, metadata));
    let batch = RecordBatch::try_new(schema.clone(), arrays).expect("columns of one length");
    let mut out = Vec::new();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(&mut out, &schema).expect("writing to memory");
    writer.write(&batch).expect("writing to memory");
    writer.finish().expect("writing to memory");
    drop(writer);
    out
}

/// The name and entry of the index object `bytes` covering `shards` shards from manifest
/// position `first`.
pub(crate) fn entry_of(bytes: &[u8], first: usize, shards: usize) -> IndexEntry {
    let crc32c = crc32c::crc32c(bytes);
    IndexEntry {
        file: format!("{INDEX_PREFIX}{first:08}.{crc32c:08x}{INDEX_EXTENSION}"),
        shards,
        bytes: bytes.len() as u64,
        crc32c,
    }
}

/// An index object read and checked: its record batches, one row per shard.
#[derive(Debug)]
pub(crate) struct IndexObject {
    batches: Vec<RecordBatch>,
}

/// The unsigned integers of a `LargeList`'s values.
enum Uints<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

impl Uints<'_> {
    fn of(array: &dyn Array) -> Option<Uints<'_>> {
        Some(match array.data_type() {
            DataType::UInt8 => Uints::U8(array.as_primitive_opt::<UInt8Type>()?.values()),
            DataType::UInt16 => Uints::U16(array.as_primitive_opt::<UInt16Type>()?.values()),
            DataType::UInt32 => Uints::U32(array.as_primitive_opt::<UInt32Type>()?.values()),
            DataType::UInt64 => Uints::U64(array.as_primitive_opt::<UInt64Type>()?.values()),
            _ => return None,
        })
    }

    fn get(&self, i: usize) -> u64 {
        match self {
            Uints::U8(v) => v[i].into(),
            Uints::U16(v) => v[i].into(),
            Uints::U32(v) => v[i].into(),
            Uints::U64(v) => v[i],
        }
    }
}

impl IndexObject {
    /// Decodes and checks the object `bytes`, named by `entry`, against the shards it
    /// covers, `shards` (from the manifest, in order), in a dataset of `columns`;
    /// `location` gives what an error names for the shard at a position of `shards`.
    ///
    /// # Errors
    /// [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch) naming the object
    /// (its size, checksum) or the shard (its name, record batches, rows, lengths' sums);
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) for an object that is
    /// not an index object.
    pub(crate) fn read(
        bytes: &[u8],
        entry: &IndexEntry,
        shards: &[ShardEntry],
        columns: &[ColumnSpec],
        location: &dyn Fn(usize) -> std::path::PathBuf,
    ) -> Result<Self> {
        mismatch("bytes", entry.bytes, bytes.len() as u64)?;
        mismatch("crc32c", entry.crc32c, crc32c::crc32c(bytes))?;
        let bad = |reason: String| Error::invalid(FileFormat::Ipc, reason);
        let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None)
            .map_err(|e| bad(format!("index object: {e}")))?;
        let schema = reader.schema();
        let version = schema.metadata().get(KEY_VERSION).map(String::as_str);
        if version != Some(VERSION) {
            return Err(bad(format!(
                "index object version {version:?}, expected {VERSION:?}"
            )));
        }
        let fields = length_fields(columns);
        let mut expected = vec!["file".to_owned(), "batch_rows".to_owned()];
        expected.extend(fields.iter().map(|(c, l)| format!("lengths.{c}.{l}")));
        let found: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
        if found != expected.iter().collect::<Vec<_>>() {
            return Err(bad(format!(
                "index fields {found:?}, expected {expected:?}"
            )));
        }
        let batches = reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("index object: {e}")))?;
        let object = IndexObject { batches };
        object.check(shards, columns, location)?;
        Ok(object)
    }

    /// Every row checked against its shard's manifest entry.
    fn check(
        &self,
        shards: &[ShardEntry],
        columns: &[ColumnSpec],
        location: &dyn Fn(usize) -> std::path::PathBuf,
    ) -> Result<()> {
        let rows: usize = self.batches.iter().map(RecordBatch::num_rows).sum();
        mismatch("index shards", shards.len(), rows)?;
        let fields = length_fields(columns);
        let mut shard = 0;
        for batch in &self.batches {
            let bad = |what: &str| Error::invalid(FileFormat::Ipc, format!("index {what}"));
            let files = batch
                .column(0)
                .as_string_opt::<i32>()
                .ok_or_else(|| bad("file"))?;
            let lists: Vec<(&LargeListArray, Uints)> = (1..batch.num_columns())
                .map(|i| {
                    let list = batch
                        .column(i)
                        .as_list_opt::<i64>()
                        .ok_or_else(|| bad("list"))?;
                    let values = Uints::of(list.values().as_ref()).ok_or_else(|| bad("type"))?;
                    Ok((list, values))
                })
                .collect::<Result<_>>()?;
            if files.null_count() > 0 || lists.iter().any(|(l, _)| l.null_count() > 0) {
                return Err(bad("nulls"));
            }
            for r in 0..batch.num_rows() {
                let entry = &shards[shard];
                let in_shard = |e: Error| e.in_file(location(shard));
                mismatch("index file", entry.file.as_str(), files.value(r)).map_err(in_shard)?;
                let (counts, sums) = list_stats(&lists, r);
                mismatch("index batches", entry.batches, counts[0]).map_err(in_shard)?;
                mismatch("index rows", entry.rows as u64, sums[0]).map_err(in_shard)?;
                for (f, &(c, level)) in fields.iter().enumerate() {
                    let stats = &entry.columns[c];
                    let total = match stats.sequences.get(level + 1) {
                        Some(&n) => n,
                        None => stats.elements,
                    };
                    let name = format!("index lengths.{c}.{level}");
                    mismatch(&format!("{name} count"), entry.rows, counts[f + 1])
                        .and_then(|()| mismatch(&format!("{name} sum"), total as u64, sums[f + 1]))
                        .map_err(in_shard)?;
                }
                shard += 1;
            }
        }
        Ok(())
    }

    /// Calls `each` with every shard's name and row (the rows of its record batches and the
    /// lengths of every field), in order.
    #[cfg(feature = "remote")]
    pub(crate) fn each_shard(&self, mut each: impl FnMut(&str, ShardLengths)) {
        for batch in &self.batches {
            let files = batch.column(0).as_string::<i32>();
            let lists: Vec<(&LargeListArray, Uints)> = (1..batch.num_columns())
                .map(|i| {
                    let list = batch.column(i).as_list::<i64>();
                    (list, Uints::of(list.values().as_ref()).expect("checked"))
                })
                .collect();
            for r in 0..batch.num_rows() {
                let mut lists = lists.iter().map(|(list, values)| {
                    let o = list.value_offsets();
                    (o[r] as usize..o[r + 1] as usize)
                        .map(|i| values.get(i))
                        .collect::<Vec<u64>>()
                });
                let batch_rows = lists.next().expect("batch_rows");
                let row = ShardLengths {
                    batch_rows,
                    lengths: lists.collect(),
                };
                each(files.value(r), row);
            }
        }
    }
}

/// Per list of `lists`, the entries of row `r` and their sum (saturating: a sum past 64
/// bits differs from any manifest count).
fn list_stats(lists: &[(&LargeListArray, Uints)], r: usize) -> (Vec<usize>, Vec<u64>) {
    lists
        .iter()
        .map(|(list, values)| {
            let o = list.value_offsets();
            let range = o[r] as usize..o[r + 1] as usize;
            let sum = range
                .clone()
                .fold(0u64, |s, i| s.saturating_add(values.get(i)));
            (range.len(), sum)
        })
        .unzip()
}

/// Adds to `manifest` (the manifest a commit writes: `base`'s shards, then those it
/// appends) an index object for the shards it appends, when `base`'s index is complete
/// (or there is no base), each shard's lengths from `find`; `put` writes the object
/// (before the manifest). Shards whose lengths `find` cannot give (`None`) leave the
/// index as it is.
///
/// # Errors
/// `find`'s and `put`'s errors.
pub(crate) fn index_appended(
    base: Option<&Manifest>,
    manifest: &mut Manifest,
    find: &mut dyn FnMut(&ShardEntry) -> Result<Option<ShardLengths>>,
    put: &mut dyn FnMut(&str, Vec<u8>) -> Result<()>,
) -> Result<()> {
    if base.is_some_and(|b| !is_complete(b)) {
        return Ok(());
    }
    let first = covered(manifest);
    if first >= manifest.shards.len() {
        return Ok(());
    }
    let new = &manifest.shards[first..];
    let mut rows = Vec::with_capacity(new.len());
    for entry in new {
        match find(entry)? {
            Some(row) => rows.push(row),
            None => return Ok(()),
        }
    }
    let files: Vec<&str> = new.iter().map(|s| s.file.as_str()).collect();
    let bytes = encode(&manifest.columns, &files, &rows);
    let entry = entry_of(&bytes, first, new.len());
    put(&entry.file, bytes)?;
    manifest.index.push(entry);
    Ok(())
}

/// [`index_appended`] for a commit whose appended shards are local files: each at its
/// staged path in `publish` (relative to `dir`, or absolute), else at its name in `dir`.
///
/// # Errors
/// A shard's mapping errors naming it; `put`'s errors.
pub(crate) fn index_files(
    base: Option<&Manifest>,
    manifest: &mut Manifest,
    dir: &Path,
    publish: &[(std::path::PathBuf, String)],
    put: &mut dyn FnMut(&str, Vec<u8>) -> Result<()>,
) -> Result<()> {
    let staged: HashMap<&str, &Path> = (publish.iter())
        .map(|(path, name)| (name.as_str(), path.as_path()))
        .collect();
    let columns = manifest.columns.clone();
    let mut find = |entry: &ShardEntry| {
        let in_place = dir.join(&entry.file);
        // A staged shard another commit's roll-forward already moved is in its place.
        let path = match staged.get(entry.file.as_str()) {
            Some(staged) if dir.join(staged).exists() || !in_place.exists() => dir.join(staged),
            _ => in_place,
        };
        measure_file(&path, &columns).map(Some)
    };
    index_appended(base, manifest, &mut find, put)
}

/// Writes an index object into the local dataset directory `dir`, atomically.
pub(crate) fn put_local(dir: &Path) -> impl FnMut(&str, Vec<u8>) -> Result<()> + '_ {
    move |name, bytes| {
        crate::io::atomic::write_atomically(&dir.join(name), |out| Ok(out.write_all(&bytes)?))
    }
}

/// Every shard of `manifest` measured by `measure` (which checks it against its entry) and
/// one index object covering them all, written by `put`: the manifest's `index` replaced.
pub(crate) fn rebuild(
    manifest: &Manifest,
    measure: &mut dyn FnMut(usize, &ShardEntry) -> Result<ShardLengths>,
    put: &mut dyn FnMut(&str, Vec<u8>) -> Result<()>,
) -> Result<Manifest> {
    let mut manifest = Manifest {
        index: Vec::new(),
        ..manifest.clone()
    };
    let mut position = 0;
    let mut find = |entry: &ShardEntry| {
        let row = measure(position, entry);
        position += 1;
        row.map(Some)
    };
    index_appended(None, &mut manifest, &mut find, put)?;
    Ok(manifest)
}

/// Adds or rebuilds the lengths index of the sharded dataset at `location` (format-spec
/// §7.2): a local directory, or with the `remote` feature a URL reached with the
/// environment's credentials, as `index_with(location, &RemoteOptions::default())`. Every
/// shard is mapped and checked against the manifest (its checksum too) and measured, one
/// index object written, then the manifest committed with an `index` naming it alone. A
/// dataset written by this crate has an index already; this makes one for a dataset
/// written without it (by an earlier version, or by pyarrow).
/// Returns the manifest committed.
///
/// # Errors
/// The manifest's errors; `NotFound` without a dataset; a shard that disagrees with the
/// manifest, naming it; for a URL, `index_with`'s, and without the `remote` feature an
/// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) naming it.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset, MANIFEST_NAME, Manifest};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # let mut manifest = writer.finish()?;
/// manifest.index.clear();                                 // as an earlier version wrote it
/// manifest.write(dir.path().join(MANIFEST_NAME))?;
/// let indexed = lodtensor::shards::index(dir.path())?;
/// assert_eq!(indexed.index.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn index(location: impl Into<Location>) -> Result<Manifest> {
    match location.into() {
        Location::Path(dir) => index_dir(&dir),
        Location::Url(url) => index_url_default(&url),
    }
}

/// [`index`] of the local directory `dir`.
pub(crate) fn index_dir(dir: &Path) -> Result<Manifest> {
    use crate::shards::store::{Commit, LocalStore, commit_with};
    let store = LocalStore::new(dir);
    let current = store.load_current()?;
    let mut measured: HashMap<(String, u32), ShardLengths> = HashMap::new();
    commit_with(&store, current, |current, _| {
        let Some(manifest) = current else {
            let e = std::io::Error::new(std::io::ErrorKind::NotFound, "no sharded dataset");
            return Err(Error::from(e).in_file(dir.join(crate::shards::manifest::MANIFEST_NAME)));
        };
        let columns = manifest.columns.clone();
        let mut measure = |_: usize, entry: &ShardEntry| {
            let key = (entry.file.clone(), entry.crc32c);
            if let Some(row) = measured.get(&key) {
                return Ok(row.clone());
            }
            let path = dir.join(&entry.file);
            let row = crate::shards::reader::open_checked(&path, entry, &columns, true)
                .and_then(|file| measure(&file, &columns))
                .map_err(|e| e.in_file(&path))?;
            measured.insert(key, row.clone());
            Ok(row)
        };
        let manifest = rebuild(manifest, &mut measure, &mut put_local(dir))?;
        Ok(Commit {
            manifest,
            ..Commit::default()
        })
    })
}

impl ShardFiles {
    /// Per shard, the rows of its record batches and its samples' lengths at `level` of
    /// column `column` (its position in the manifest), from the lengths index
    /// (format-spec §7.2): no shard is read. `None` when the manifest has no complete
    /// index, or the column has no such level.
    ///
    /// # Errors
    /// The index object's read errors; [`FormatError::ShardMismatch`](crate::FormatError::ShardMismatch)
    /// naming the object (size, checksum) or the shard (name, record batches, rows, the
    /// lengths' count or sum) where the index disagrees with the manifest.
    pub(crate) fn indexed_lengths(
        &self,
        column: usize,
        level: usize,
    ) -> Result<Option<ColumnLengths>> {
        let files = self;
        let manifest = &files.manifest;
        if manifest.index.is_empty() || !is_complete(manifest) {
            return Ok(None);
        }
        let fields = length_fields(&manifest.columns);
        let Some(field) = fields.iter().position(|&f| f == (column, level)) else {
            return Ok(None);
        };
        let mut out = ColumnLengths {
            batches: Vec::with_capacity(manifest.shards.len()),
            ..ColumnLengths::default()
        };
        let rows = manifest.shards.iter().map(|s| s.rows).sum::<usize>();
        // A count from the manifest, untrusted: when it does not fit, the lengths grow.
        let _ = out.lengths.try_reserve_exact(rows);
        let name = manifest.columns[column].name.as_str();
        let mut first = 0;
        for entry in &manifest.index {
            let object_at = || files.dir.join(&entry.file);
            let bytes = files.index_object(entry)?;
            let shards = &manifest.shards[first..first + entry.shards];
            let location = |i: usize| files.location(first + i);
            let object = IndexObject::read(&bytes, entry, shards, &manifest.columns, &location)
                .map_err(|e| e.in_file(object_at()))?;
            let shard = |i: usize, e: Error| e.in_file(files.location(first + i));
            object.lengths((field, name, level), &mut out, &shard)?;
            first += entry.shards;
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests;
