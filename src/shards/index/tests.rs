//! The lengths index: written by every local writer path, equal to the lengths the shards
//! give, appended to by commits, added by `index`, refused when it disagrees.

use std::path::Path;

use super::*;
use crate::dataset::Dataset;
use crate::error::{DataError, ErrorKind, FormatError};
use crate::io::ipc_writer::WriteOptions;
use crate::shards::ShardedDataset;
use crate::shards::commit::commit;
use crate::shards::manifest::MANIFEST_NAME;
use crate::shards::writer::{ShardOptions, ShardWriter};

/// Documents of 1-4 sentences of 1-9 tokens of `f32[2]` (two levels), and a 0-level
/// label column: a pattern of `seed`, no generator needed.
fn documents(rows: usize, seed: u64) -> Dataset {
    use crate::dataset::Column;
    use crate::tensor::LodTensor;
    use arrow_array::types::{Float32Type, Int64Type};
    let seed = seed as usize;
    let docs: Vec<usize> = (0..rows).map(|r| 1 + (r * 7 + seed) % 4).collect();
    let sentences: Vec<usize> = (0..docs.iter().sum::<usize>())
        .map(|i| 1 + (i * 5 + seed) % 9)
        .collect();
    let values = (0..sentences.iter().sum::<usize>() * 2)
        .map(|i| i as f32)
        .collect();
    let tokens = LodTensor::from_lengths::<Float32Type>(&[docs, sentences], values, vec![2]);
    let label = LodTensor::dense::<Int64Type>((0..rows as i64).collect(), &[rows]).unwrap();
    let columns = vec![
        Column::new("tokens", tokens.unwrap()),
        Column::new("label", label),
    ];
    Dataset::try_new(columns).unwrap()
}

/// Shards of 7 rows in record batches of about 3 (by bytes).
fn options() -> ShardOptions {
    let write = WriteOptions::default().with_batch_bytes(3 * 7 * 2 * 2 * 4);
    ShardOptions::default()
        .with_shard_rows(7)
        .with_write_options(write)
}

fn write(dir: &Path, rows: usize, seed: u64) -> Manifest {
    let mut writer = match dir.join(MANIFEST_NAME).exists() {
        true => ShardWriter::append(dir, options()).unwrap(),
        false => ShardWriter::create(dir, options()).unwrap(),
    };
    writer.write(&documents(rows, seed)).unwrap();
    writer.finish().unwrap()
}

/// Per shard, its record batches' rows and the lengths of `level` of column `column`,
/// from the mapped shards.
fn mapped_lengths(data: &ShardedDataset, column: usize, level: usize) -> ColumnLengths {
    let mut out = ColumnLengths::default();
    for s in 0..data.num_shards() {
        let shard = data.shard(s).unwrap();
        out.push_batches(shard.batches().iter().map(|b| b.num_rows()));
        for b in shard.batches() {
            let lod = b.columns()[column].as_tensor().unwrap().lod();
            let lengths = (0..b.num_rows()).map(|r| lod.descend(0, r..r + 1, level + 1).len());
            out.lengths.extend(lengths.map(|l| l as u32));
        }
    }
    out
}

fn assert_index_is_exact(dir: &Path) {
    let data = ShardedDataset::open(dir).unwrap();
    assert!(is_complete(data.manifest()) && !data.manifest().index.is_empty());
    for (column, level) in length_fields(data.columns()) {
        let indexed = data
            .files()
            .indexed_lengths(column, level)
            .unwrap()
            .unwrap();
        assert_eq!(
            indexed,
            mapped_lengths(&data, column, level),
            "{column}.{level}"
        );
    }
}

#[test]
fn a_writer_writes_the_index_and_an_append_adds_an_object() {
    let dir = tempfile::tempdir().unwrap();
    let first = write(dir.path(), 30, 1);
    assert_eq!(first.shards.len(), 5);
    assert_eq!(first.index.len(), 1);
    assert!(
        first.shards.iter().any(|s| s.batches > 1),
        "several batches"
    );
    assert_index_is_exact(dir.path());
    let second = write(dir.path(), 10, 2);
    assert_eq!(second.index.len(), 2);
    assert_eq!(second.index[0], first.index[0]); // never rewritten
    assert_eq!((second.index[1].shards, second.shards.len()), (2, 7));
    assert_index_is_exact(dir.path());
    assert_eq!(Manifest::parse(&second.to_json()).unwrap(), second);
}

#[test]
fn pending_writers_and_their_commit_write_the_index() {
    let dir = tempfile::tempdir().unwrap();
    for (i, prefix) in ["w0", "w1"].into_iter().enumerate() {
        let mut writer = ShardWriter::pending(dir.path(), options().with_prefix(prefix)).unwrap();
        writer.write(&documents(9, i as u64)).unwrap();
        writer.finish().unwrap();
    }
    let manifest = commit(dir.path()).unwrap();
    assert_eq!((manifest.shards.len(), manifest.index.len()), (4, 1));
    assert_index_is_exact(dir.path());
}

#[test]
fn a_dataset_without_an_index_stays_so_until_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let mut manifest = write(dir.path(), 20, 3);
    manifest.index.clear(); // as an earlier version wrote it
    manifest.write(dir.path().join(MANIFEST_NAME)).unwrap();
    let data = ShardedDataset::open(dir.path()).unwrap();
    assert_eq!(data.files().indexed_lengths(0, 1).unwrap(), None);
    // An append onto it does not index a part of it.
    assert!(write(dir.path(), 5, 4).index.is_empty());
    let indexed = index(dir.path()).unwrap();
    assert_eq!((indexed.index.len(), indexed.index[0].shards), (1, 4));
    assert_index_is_exact(dir.path());
    assert_eq!(index(dir.path()).unwrap(), indexed); // the same bytes, the same name
}

/// The manifest of `dir` with its index object replaced by one made of `rows`.
fn lie(dir: &Path, change: impl FnOnce(&mut Vec<ShardLengths>)) -> Manifest {
    let mut manifest = Manifest::load(dir.join(MANIFEST_NAME)).unwrap();
    let data = ShardedDataset::open(dir).unwrap();
    let mut rows: Vec<ShardLengths> = (0..data.num_shards())
        .map(|s| measure(data.shard(s).unwrap(), data.columns()).unwrap())
        .collect();
    change(&mut rows);
    let files: Vec<&str> = manifest.shards.iter().map(|s| s.file.as_str()).collect();
    let bytes = encode(&manifest.columns, &files, &rows);
    let entry = entry_of(&bytes, 0, files.len());
    std::fs::write(dir.join(&entry.file), bytes).unwrap();
    manifest.index = vec![entry];
    manifest.write(dir.join(MANIFEST_NAME)).unwrap();
    manifest
}

fn mismatch_of(err: &Error) -> (String, Option<&Path>) {
    match err.kind() {
        ErrorKind::Format(FormatError::ShardMismatch { field, .. }) => (field.clone(), err.path()),
        other => panic!("{other:?}: {err}"),
    }
}

/// A change made to an index's rows.
type Change = &'static dyn Fn(&mut Vec<ShardLengths>);

#[test]
fn an_index_that_disagrees_with_the_manifest_is_refused_naming_the_shard() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(dir.path(), 20, 5);
    let shard2 = dir.path().join(&manifest.shards[2].file);
    let cases: [(Change, &str); 3] = [
        (&|rows| rows[2].batch_rows[0] += 1, "index rows"),
        (&|rows| rows[2].lengths[1][0] += 1, "index lengths.0.1 sum"),
        (
            &|rows| rows[2].lengths[0].pop().map(drop).unwrap(),
            "index lengths.0.0 count",
        ),
    ];
    for (change, field) in cases {
        lie(dir.path(), change);
        let data = ShardedDataset::open(dir.path()).unwrap();
        let err = data.files().indexed_lengths(0, 1).unwrap_err();
        assert_eq!(
            mismatch_of(&err),
            (field.to_owned(), Some(shard2.as_path())),
            "{err}"
        );
    }
    // A changed byte: the checksum, naming the object.
    let manifest = lie(dir.path(), |_| {});
    let object = dir.path().join(&manifest.index[0].file);
    let mut bytes = std::fs::read(&object).unwrap();
    let last = bytes.len() - 20;
    bytes[last] ^= 1;
    std::fs::write(&object, bytes).unwrap();
    let data = ShardedDataset::open(dir.path()).unwrap();
    let err = data.files().indexed_lengths(0, 0).unwrap_err();
    assert_eq!(
        mismatch_of(&err),
        ("crc32c".to_owned(), Some(object.as_path()))
    );
}

#[test]
fn integers_are_narrowed() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(dir.path(), 14, 6);
    let bytes = std::fs::read(dir.path().join(&manifest.index[0].file)).unwrap();
    let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None).unwrap();
    for field in reader.schema().fields().iter().skip(1) {
        let DataType::LargeList(item) = field.data_type() else {
            panic!("{field:?}")
        };
        assert_eq!(item.data_type(), &DataType::UInt8, "{}", field.name());
    }
}

#[test]
fn manifest_index_entries_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(dir.path(), 14, 7);
    let text = manifest.to_json();
    let name = &manifest.index[0].file;
    for (from, to) in [
        (name.as_str(), "../x.arrow"),
        (name.as_str(), "part-00000.arrow"),
        ("\"shards\":2", "\"shards\":3"),
        ("\"shards\":2", "\"shards\":0"),
    ] {
        assert!(text.contains(from), "{from} in {text}");
        let err = Manifest::parse(&text.replacen(from, to, 1)).unwrap_err();
        assert!(err.to_string().contains("index"), "{err}");
    }
}

#[test]
fn a_sample_of_2_pow_32_elements_is_refused_naming_the_shard_column_batch_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write(dir.path(), 20, 5);
    let shard2 = dir.path().join(&manifest.shards[2].file);
    let data = ShardedDataset::open(dir.path()).unwrap();
    let batch_rows = measure(data.shard(2).unwrap(), data.columns())
        .unwrap()
        .batch_rows;
    // Sample 4's record batch and row in it.
    let (mut batch, mut row) = (0, 4);
    while row >= batch_rows[batch] {
        (row, batch) = (row - batch_rows[batch], batch + 1);
    }
    assert!(
        batch > 0,
        "sample 4 in a later batch than the first: {batch_rows:?}"
    );
    drop(data);
    // Sample 4 of shard 2 grows by 2^32 tokens, in the index and the manifest's counts
    // (no shard is read: the index is refused before).
    let mut manifest = lie(dir.path(), |rows| rows[2].lengths[1][4] += 1 << 32);
    manifest.shards[2].columns[0].elements += 1 << 32;
    manifest.shards[2].bytes += 8 << 32; // f32[2] elements: the manifest's bound on them
    manifest.write(dir.path().join(MANIFEST_NAME)).unwrap();
    let data = ShardedDataset::open(dir.path()).unwrap();
    let err = data.files().indexed_lengths(0, 1).unwrap_err();
    let found = match err.kind() {
        ErrorKind::Data(DataError::SequenceTooLong {
            level: 1,
            found,
            expected,
            index,
        }) if *expected == u32::MAX as usize && *index as u64 == row => *found,
        other => panic!("{other:?}: {err}"),
    };
    assert!(found > u32::MAX as usize, "{found}");
    assert_eq!(
        (err.path(), err.column()),
        (Some(shard2.as_path()), Some(("tokens", batch)))
    );
    // The level above still fits: its lengths are read.
    assert!(data.files().indexed_lengths(0, 0).unwrap().is_some());
}
