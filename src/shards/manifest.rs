//! `_lodtensor.json`: the manifest of a sharded dataset, parsed as untrusted input and
//! written atomically.

use std::io::Read;
use std::path::Path;

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::{FieldRef, Schema};
use serde_json::{Value, json};

use crate::dataset::Column;
use crate::error::{Error, Result};
use crate::io::atomic::write_atomically;
use crate::io::regular::open_regular;
use crate::lod::{LevelOffsets, Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};

use super::index::IndexEntry;
use super::parse::{manifest_error, parse_manifest};
use super::side::encode_field;
#[cfg(doc)]
use crate::error::{FormatError, UnsupportedError};
use crate::format::KEY_KIND;

/// The manifest's file name inside the dataset directory.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # writer.finish()?;
/// # let data = ShardedDataset::open(dir.path())?;
/// use lodtensor::shards::MANIFEST_NAME;
/// assert!(dir.path().join(MANIFEST_NAME).is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MANIFEST_NAME: &str = "_lodtensor.json";
/// The value of the manifest's `format` key.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # writer.finish()?;
/// # let data = ShardedDataset::open(dir.path())?;
/// use lodtensor::shards::{MANIFEST_FORMAT, MANIFEST_NAME};
/// let text = std::fs::read_to_string(dir.path().join(MANIFEST_NAME))?;
/// assert!(text.contains(&format!(r#""format": "{MANIFEST_FORMAT}""#)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MANIFEST_FORMAT: &str = "lodtensor.shards";
/// The manifest version this crate writes and reads.
///
/// # Example
/// ```
/// use lodtensor::shards::{MANIFEST_VERSION, Manifest};
/// let newer = r#"{"format": "lodtensor.shards", "version": 3, "columns": [], "shards": []}"#;
/// assert_eq!(MANIFEST_VERSION, 1);
/// assert!(Manifest::parse(newer).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MANIFEST_VERSION: u64 = 1;
/// The manifest version written when a column is a side column (format-spec §7.1); this
/// crate reads both.
///
/// # Example
/// ```
/// use lodtensor::shards::MANIFEST_VERSION_SIDE_COLUMNS;
/// assert_eq!(MANIFEST_VERSION_SIDE_COLUMNS, 2);
/// ```
pub const MANIFEST_VERSION_SIDE_COLUMNS: u64 = 2;
/// The largest manifest read, by the size its file's metadata gives (a million shards of
/// one column take about 145 MB; opened, about 1.7 times that: `examples/manifest_rss.rs`).
///
/// # Example
/// ```
/// use lodtensor::shards::MAX_MANIFEST_BYTES;
/// assert_eq!(MAX_MANIFEST_BYTES, 1 << 30);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_MANIFEST_BYTES: u64 = 1 << 30;
/// The most LoD levels a manifest column may declare.
pub(super) use crate::lod::MAX_LEVELS;

/// One column of a sharded dataset: what every shard's Arrow field must hold.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # writer.finish()?;
/// # let data = ShardedDataset::open(dir.path())?;
/// use lodtensor::DType;
/// let spec = &data.columns()[0];
/// assert_eq!((spec.name.as_str(), spec.dtype, spec.element_shape.len()), ("ids", DType::Int64, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    /// The column's name.
    pub name: String,
    /// The element dtype.
    pub dtype: DType,
    /// The shape of one element (`[]` for scalars).
    pub element_shape: Vec<usize>,
    /// The offset width of each level, outermost first (its length is the number of levels).
    pub offsets: Vec<OffsetWidth>,
    /// The level names, outermost first; empty when not given.
    pub level_names: Vec<String>,
    /// The Arrow field of a side column (format-spec §2.2), which shards carry as they
    /// carry rows; `None` for a LoD tensor column. A side column has no levels and no
    /// element shape, and its `dtype` is [`DType::UInt8`], unused.
    pub side: Option<FieldRef>,
}

impl ColumnSpec {
    /// The spec of a column.
    ///
    /// A side column's spec holds its Arrow field ([`ColumnSpec::side`]).
    ///
    /// # Errors
    /// None since side columns are carried; the `Result` is kept for compatibility.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// use lodtensor::shards::ColumnSpec;
    /// let spec = ColumnSpec::of_column(&ds.columns()[0])?;
    /// assert_eq!(spec.offsets.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_column(column: &Column) -> Result<Self> {
        let Some(t) = column.as_tensor() else {
            let mut field = column.arrow_field();
            // The mark is the file's, not the column's (`Column::side_with_field`).
            let mut metadata = field.metadata().clone();
            metadata.remove(KEY_KIND);
            field = field.with_metadata(metadata);
            return Ok(ColumnSpec {
                name: column.name().to_owned(),
                dtype: DType::UInt8,
                element_shape: Vec::new(),
                offsets: Vec::new(),
                level_names: Vec::new(),
                side: Some(Arc::new(field)),
            });
        };
        Ok(ColumnSpec {
            name: column.name().to_owned(),
            dtype: t.dtype(),
            element_shape: t.element_shape().to_vec(),
            offsets: t.lod().levels().iter().map(|l| l.width()).collect(),
            level_names: column.level_names().to_vec(),
            side: None,
        })
    }

    /// The specs of every field of a lodtensor file's schema.
    ///
    /// # Errors
    /// The error of [`Column::try_from_arrow`] for a field that is no LoD tensor column.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let ds = Dataset::try_new(vec![Column::new("ids", t)])?;
    /// use lodtensor::shards::ColumnSpec;
    /// let specs = ColumnSpec::of_schema(&ds.to_record_batch().schema())?;
    /// assert_eq!(specs, [ColumnSpec::of_column(&ds.columns()[0])?]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_schema(schema: &Schema) -> Result<Vec<Self>> {
        schema
            .fields()
            .iter()
            .map(|f| {
                let empty = arrow_array::new_empty_array(f.data_type());
                Self::of_column(&Column::try_from_arrow(f, empty.as_ref())?)
            })
            .collect()
    }

    /// A column of this spec without rows: what a dataset's schema is made from when no
    /// shard is at hand (a dataset without shards).
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::ColumnSpec;
    /// use lodtensor::{DType, OffsetWidth};
    /// let spec = ColumnSpec {
    ///     name: "tokens".into(), dtype: DType::Float32, element_shape: vec![4],
    ///     offsets: vec![OffsetWidth::I64; 2], level_names: vec![], side: None,
    /// };
    /// let column = spec.empty_column()?;
    /// assert_eq!((column.tensor()?.num_rows(), column.tensor()?.num_levels()), (0, 2));
    /// assert_eq!(ColumnSpec::of_column(&column)?, spec);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// The errors of [`Column::with_level_names`] when the level names do not fit.
    pub fn empty_column(&self) -> Result<Column> {
        if let Some(field) = &self.side {
            let empty = arrow_array::new_empty_array(field.data_type());
            return Column::side_with_field(field.as_ref().clone(), empty);
        }
        let levels = self
            .offsets
            .iter()
            .enumerate()
            .map(|(level, width)| match width {
                OffsetWidth::I32 => LevelOffsets::try_new_i32(level, vec![0].into()),
                OffsetWidth::I64 => LevelOffsets::try_new_i64(level, vec![0].into()),
            })
            .collect::<Result<Vec<_>>>()?;
        let items = arrow_array::new_empty_array(&self.dtype.arrow_type());
        let values = Values::try_new(items, self.element_shape.clone())?;
        let tensor = LodTensor::try_new(Lod::try_new(levels)?, values)?;
        Column::new(self.name.clone(), tensor).with_level_names(self.level_names.clone())
    }

    fn to_json(&self) -> Value {
        if let Some(field) = &self.side {
            return json!({
                "name": self.name,
                "kind": "side",
                "arrow_schema": encode_field(field),
            });
        }
        json!({
            "name": self.name,
            "dtype": self.dtype.name(),
            "element_shape": self.element_shape,
            "offsets": self.offsets.iter().map(|w| w.name()).collect::<Vec<_>>(),
            "level_names": self.level_names,
        })
    }
}

/// What one column of one shard holds: the sequences of each level and the elements.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # writer.finish()?;
/// # let data = ShardedDataset::open(dir.path())?;
/// let stats = &data.manifest().shards[0].columns[0];       // rows 0 and 1: 2 + 1 ids
/// assert_eq!((stats.sequences.as_slice(), stats.elements), (&[2][..], 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnStats {
    /// The number of sequences of each level, outermost first (level 0 counts the rows).
    pub sequences: Vec<usize>,
    /// The number of elements (each of the column's element shape).
    pub elements: usize,
}

impl ColumnStats {
    /// Adds what `column`, a part of the shard's column, holds: a side column counts its
    /// rows as elements, as a 0-level tensor does.
    pub(crate) fn add_column(&mut self, column: &Column) {
        match column.as_tensor() {
            Some(tensor) => self.add(tensor),
            None => self.elements += column.to_arrow().len(),
        }
    }

    /// Adds the sequences and elements of `tensor`, a part of the shard's column.
    pub(crate) fn add(&mut self, tensor: &LodTensor) {
        let levels = tensor.lod().levels();
        self.sequences.resize(levels.len(), 0);
        for (level, count) in self.sequences.iter_mut().enumerate() {
            *count += tensor.lod().num_sequences(level).expect("level exists");
        }
        self.elements += tensor.elements().len();
    }
}

/// One shard: a lodtensor Arrow file in the dataset directory.
///
/// # Example
/// ```
/// # use lodtensor::{Column, Dataset};
/// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
/// # let dir = tempfile::tempdir()?;
/// # let t = lodtensor::doc_fixtures::ids();
/// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
/// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
/// # writer.finish()?;
/// # let data = ShardedDataset::open(dir.path())?;
/// let entry = &data.manifest().shards[1];
/// assert_eq!((entry.rows, entry.batches), (1, 1));
/// assert_eq!(entry.bytes, std::fs::metadata(dir.path().join(&entry.file))?.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardEntry {
    /// The file name, relative to the dataset directory.
    pub file: String,
    /// Rows (top-level sequences).
    pub rows: usize,
    /// Record batches.
    pub batches: usize,
    /// The file's size.
    pub bytes: u64,
    /// CRC-32C (Castagnoli) of the whole file.
    pub crc32c: u32,
    /// What each column holds, in the manifest's column order.
    pub columns: Vec<ColumnStats>,
}

/// A sharded dataset's manifest: the columns every shard holds and the shards, in row order.
///
/// # Example
/// ```
/// use lodtensor::shards::Manifest;
/// let text = r#"{"format": "lodtensor.shards", "version": 1, "columns": [], "shards": []}"#;
/// let manifest = Manifest::parse(text)?;
/// assert_eq!(manifest.num_rows(), 0);
/// assert_eq!(Manifest::parse(&manifest.to_json())?, manifest);
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The columns, in order.
    pub columns: Vec<ColumnSpec>,
    /// The shards, in row order.
    pub shards: Vec<ShardEntry>,
    /// The lengths index's objects, each covering the shards after the previous one's
    /// (format-spec §7.2); empty for a dataset without an index.
    pub index: Vec<IndexEntry>,
}

impl Manifest {
    /// The rows of every shard.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// # let data = ShardedDataset::open(dir.path())?;
    /// assert_eq!(data.manifest().num_rows(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.shards.iter().map(|s| s.rows).sum()
    }

    /// Reads and parses the manifest at `path`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io); [`FormatError::Manifest`] naming the field;
    /// all with the path attached.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// # let data = ShardedDataset::open(dir.path())?;
    /// use lodtensor::shards::{MANIFEST_NAME, Manifest};
    /// let manifest = Manifest::load(dir.path().join(MANIFEST_NAME))?;
    /// assert_eq!(&manifest, data.manifest());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let read = || -> Result<Self> {
            let (file, meta) = open_regular(path)?;
            // The size from the file's metadata: a larger one is refused unread.
            if meta.len() > MAX_MANIFEST_BYTES {
                return Err(manifest_error(
                    "",
                    format!(
                        "{} bytes, larger than the limit of {MAX_MANIFEST_BYTES} bytes",
                        meta.len()
                    ),
                ));
            }
            let reader = std::io::BufReader::new(file.take(MAX_MANIFEST_BYTES));
            parse_manifest(&mut serde_json::Deserializer::from_reader(reader))
        };
        read().map_err(|e| e.in_file(path))
    }

    /// Parses a manifest, checking every field and rule of `format-spec.md`.
    ///
    /// # Errors
    /// [`FormatError::Manifest`] naming the field; [`UnsupportedError::UnsupportedVersion`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::shards::Manifest;
    /// let bad = r#"{"format": "lodtensor.shards", "version": 1, "columns": [], "shards": [{"file": "../x.arrow"}]}"#;
    /// let err = Manifest::parse(bad).unwrap_err();
    /// assert!(err.to_string().contains("shards[0]"), "{err}");  // the field is named
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        parse_manifest(&mut serde_json::Deserializer::from_str(text))
    }

    /// The manifest as JSON text (one shard per line).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// # let data = ShardedDataset::open(dir.path())?;
    /// use lodtensor::shards::Manifest;
    /// let text = data.manifest().to_json();
    /// assert_eq!(text.lines().filter(|l| l.contains(r#""rows""#)).count(), 2);   // a shard a line
    /// assert_eq!(&Manifest::parse(&text)?, data.manifest());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> String {
        let columns: Vec<Value> = self.columns.iter().map(ColumnSpec::to_json).collect();
        let shards: Vec<String> = self
            .shards
            .iter()
            .map(|s| {
                let stats: Vec<Value> = s
                    .columns
                    .iter()
                    .map(|c| json!({"sequences": c.sequences, "elements": c.elements}))
                    .collect();
                let shard = json!({
                    "file": s.file, "rows": s.rows, "batches": s.batches, "bytes": s.bytes,
                    "crc32c": s.crc32c, "columns": stats,
                });
                format!("    {shard}")
            })
            .collect();
        // The lengths index (format-spec §7.2), an object a line; no key without one.
        let index: Vec<String> = (self.index.iter())
            .map(|e| format!("    {}", json!({"file": e.file, "shards": e.shards, "bytes": e.bytes, "crc32c": e.crc32c})))
            .collect();
        let index = match index.is_empty() {
            true => String::new(),
            false => format!(",\n  \"index\": [\n{}\n  ]", index.join(",\n")),
        };
        // Version 2 when a column is a side column: readers of version 1 know none.
        let version = match self.columns.iter().any(|c| c.side.is_some()) {
            true => MANIFEST_VERSION_SIDE_COLUMNS,
            false => MANIFEST_VERSION,
        };
        format!(
            "{{\n  \"format\": {},\n  \"version\": {version},\n  \"columns\": {},\n  \"shards\": [\n{}\n  ]{index}\n}}\n",
            json!(MANIFEST_FORMAT),
            Value::Array(columns),
            shards.join(",\n")
        )
    }

    /// Writes the manifest to `path` atomically (a temporary file renamed over it).
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) with the path; the previous manifest is then untouched.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
    /// # let dir = tempfile::tempdir()?;
    /// # let t = lodtensor::doc_fixtures::ids();
    /// # let mut writer = ShardWriter::create(dir.path(), ShardOptions::default().with_shard_rows(2))?;
    /// # writer.write(&Dataset::try_new(vec![Column::new("ids", t)])?)?;
    /// # writer.finish()?;
    /// # let data = ShardedDataset::open(dir.path())?;
    /// use lodtensor::shards::Manifest;
    /// let copy = dir.path().join("copy.json");
    /// data.manifest().write(&copy)?;
    /// assert_eq!(&Manifest::load(&copy)?, data.manifest());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let text = self.to_json();
        write_atomically(path.as_ref(), |out| {
            Ok(std::io::Write::write_all(out, text.as_bytes())?)
        })
    }
}

/// CRC-32C of the file at `path`, read in chunks.
pub(crate) fn file_crc32c(path: &Path) -> Result<u32> {
    let read = || -> std::io::Result<u32> {
        let (mut file, _) = open_regular(path)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut crc = 0;
        loop {
            match file.read(&mut buf)? {
                0 => return Ok(crc),
                n => crc = crc32c::crc32c_append(crc, &buf[..n]),
            }
        }
    };
    read().map_err(|e| Error::from(e).in_file(path))
}

/// Whether `name` may name a shard: a plain `.arrow` file name inside the directory, not
/// hidden from dataset discovery (`.` or `_` first).
pub(crate) fn is_shard_name(name: &str) -> bool {
    name.ends_with(".arrow")
        && name.len() > ".arrow".len()
        && !name.starts_with(['.', '_'])
        && !name.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::error::{FormatError, UnsupportedError};

    fn sample() -> Manifest {
        Manifest {
            columns: vec![ColumnSpec {
                name: "tokens".into(),
                dtype: DType::Float32,
                element_shape: vec![4],
                offsets: vec![OffsetWidth::I64, OffsetWidth::I32],
                level_names: vec!["documents".into(), "sentences".into()],
                side: None,
            }],
            shards: vec![ShardEntry {
                file: "part-00000.arrow".into(),
                rows: 2,
                batches: 1,
                bytes: 1000,
                crc32c: 0xdead_beef,
                columns: vec![ColumnStats {
                    sequences: vec![2, 3],
                    elements: 7,
                }],
            }],
            index: Vec::new(),
        }
    }

    fn fault(text: &str) -> (String, String) {
        match Manifest::parse(text).unwrap_err().into_kind() {
            ErrorKind::Format(FormatError::Manifest { field, reason }) => (field, reason),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn round_trips() {
        let m = sample();
        assert_eq!(Manifest::parse(&m.to_json()).unwrap(), m);
    }

    #[test]
    fn faults_name_the_field() {
        let good = sample().to_json();
        let cases = [
            ("\"rows\":2", "\"rows\":-2", "shards[0].rows"),
            ("\"rows\":2", "\"rows\":3", "shards[0].columns[0]"),
            (
                "\"crc32c\":3735928559",
                "\"crc32c\":1e40",
                "shards[0].crc32c",
            ),
            (
                "\"crc32c\":3735928559",
                "\"crc32c\":4294967296",
                "shards[0].crc32c",
            ),
            ("part-00000.arrow", "../etc/passwd.arrow", "shards[0].file"),
            ("part-00000.arrow", "_hidden.arrow", "shards[0].file"),
            ("\"float32\"", "\"float33\"", "columns[0].dtype"),
            ("\"int32\"", "\"int16\"", "columns[0].offsets[1]"),
            ("[2,3]", "[2]", "shards[0].columns[0].sequences"),
            (
                "\"elements\":7",
                "\"elements\":\"7\"",
                "shards[0].columns[0].elements",
            ),
            ("\"version\": 1,", "", "version"),
            ("\"lodtensor.shards\"", "\"other\"", "format"),
        ];
        for (from, to, expected) in cases {
            assert!(good.contains(from), "{from} not in {good}");
            let (field, reason) = fault(&good.replacen(from, to, 1));
            assert_eq!(field, expected, "{from} -> {to}: {reason}");
        }
        let mut twice = sample();
        twice.shards.push(twice.shards[0].clone());
        assert_eq!(fault(&twice.to_json()).0, "shards");
        assert_eq!(fault("[1, 2]").0, "(root)");
        assert_eq!(fault(&good[..good.len() / 2]).0, "(root)");
        let newer = good.replacen("\"version\": 1", "\"version\": 3", 1);
        assert!(matches!(
            Manifest::parse(&newer).unwrap_err().kind(),
            ErrorKind::Unsupported(UnsupportedError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn side_columns_carry_their_arrow_field() {
        use arrow_schema::{DataType, Field};
        let utf8 = Field::new("id", DataType::Utf8, true);
        let labels: std::collections::HashMap<_, _> =
            [("k".to_owned(), "v".to_owned())].into_iter().collect();
        let mut manifest = sample();
        manifest.columns.push(ColumnSpec {
            name: "id".into(),
            dtype: DType::UInt8,
            element_shape: vec![],
            offsets: vec![],
            level_names: vec![],
            side: Some(Arc::new(utf8.with_metadata(labels))),
        });
        manifest.shards[0].columns.push(ColumnStats {
            sequences: vec![],
            elements: 2,
        });
        let text = manifest.to_json();
        assert!(
            text.contains("\"version\": 2") && text.contains("\"kind\":\"side\""),
            "{text}"
        );
        assert_eq!(Manifest::parse(&text).unwrap(), manifest);
        let encoded = encode_field(manifest.columns[1].side.as_ref().unwrap());
        for (from, to, expected) in [
            (encoded.as_str(), "bm90IGFycm93", "columns[1].arrow_schema"),
            (encoded.as_str(), "%%", "columns[1].arrow_schema"),
            ("\"side\"", "\"other\"", "columns[1].kind"),
            (
                "\"name\":\"id\"",
                "\"name\":\"ie\"",
                "columns[1].arrow_schema",
            ),
        ] {
            let (field, reason) = fault(&text.replacen(from, to, 1));
            assert_eq!(field, expected, "{from} -> {to}: {reason}");
        }
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_NAME);
        sample().write(&path).unwrap();
        assert_eq!(Manifest::load(&path).unwrap(), sample());
        std::fs::write(&path, b"{").unwrap();
        let err = Manifest::load(&path).unwrap_err();
        assert_eq!(err.path(), Some(path.as_path()));
        assert!(matches!(
            Manifest::load(dir.path().join("none.json"))
                .unwrap_err()
                .kind(),
            ErrorKind::Io(_)
        ));
    }
}
