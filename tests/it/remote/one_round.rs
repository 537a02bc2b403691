//! Rows read by ranges with the lengths index: every level of every LoD tensor column in
//! one round (one request per far row in small batches; in a large one, one per level under
//! the documents), checked against the index; the shards' footers and
//! messages kept in the node's cache for the next process, a corrupted entry read again.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int64Array, StringArray};
use lodtensor::shards::{MANIFEST_NAME, Manifest, ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Column, DType, Dataset, ErrorKind, FormatError, OffsetWidth, WriteOptions};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

use super::uploaded;
use crate::common::{Case, Node, S3Server, files_under};

/// A model row of `levels` levels of elements of `size` items, drawn from `seed`: 0–3
/// entries a level (some empty).
fn node(levels: usize, seed: usize, size: usize) -> Node {
    match levels {
        0 => Node::Elem((0..size).map(|k| ((seed * 31 + k) % 1000) as i64).collect()),
        _ => Node::Seq(
            (0..(seed * 7 + 1) % 4)
                .map(|j| node(levels - 1, seed * 3 + j + 1, size))
                .collect(),
        ),
    }
}

/// `rows` rows of a tensor column of every dtype (0–3 levels, both offset widths, with
/// and without an element shape) and, when `varying`, side columns of strings and of
/// lists; always a side column of nullable integers and one of booleans.
fn every_dtype(rows: usize, varying: bool) -> Dataset {
    let mut columns = Vec::new();
    for (i, &dtype) in DType::ALL.iter().enumerate() {
        let (levels, shape) = (i % 4, if i % 3 == 0 { vec![2] } else { vec![] });
        let size = shape.iter().product();
        let case = Case {
            rows: (0..rows).map(|r| node(levels, r * 13 + i, size)).collect(),
            levels,
            dtype,
            shape,
            width: [OffsetWidth::I64, OffsetWidth::I32][i % 2],
        };
        columns.push(Column::new(format!("c{i}"), case.tensor()));
    }
    let ints: ArrayRef = Arc::new(Int64Array::from_iter(
        (0..rows).map(|r| (!r.is_multiple_of(3)).then_some(r as i64)),
    ));
    let flags: ArrayRef = Arc::new(BooleanArray::from_iter(
        (0..rows).map(|r| (!r.is_multiple_of(5)).then_some(r % 2 == 0)),
    ));
    columns.push(Column::side("ints", ints).unwrap());
    columns.push(Column::side("flags", flags).unwrap());
    if varying {
        let text: ArrayRef = Arc::new(StringArray::from_iter(
            (0..rows).map(|r| (!r.is_multiple_of(4)).then(|| "w".repeat(r % 9))),
        ));
        columns.push(Column::side("text", text).unwrap());
    }
    Dataset::try_new(columns).unwrap()
}

/// `ds` in shards of 20 rows, record batches of about 1 KiB.
fn write_sharded(dir: &Path, ds: &Dataset) {
    let options = ShardOptions::default()
        .with_shard_rows(20)
        .with_write_options(WriteOptions::default().with_batch_bytes(1024));
    let mut writer = ShardWriter::create(dir, options).unwrap();
    writer.write(ds).unwrap();
    writer.finish().unwrap();
}

#[test]
fn a_far_row_is_one_request_and_equals_the_local_row_for_every_dtype() {
    let Some(s3) = S3Server::start() else { return };
    for varying in [false, true] {
        let (dir, local_dir, url, _) = uploaded(&s3, &format!("every-{varying}"), |d| {
            write_sharded(d, &every_dtype(100, varying))
        });
        let local = ShardedDataset::open(&local_dir).unwrap();
        assert!(!local.manifest().index.is_empty());
        let options = s3.options().with_cache_dir(dir.path().join("cache"));
        let remote = ShardedDataset::open_with(&url, &options).unwrap();
        // One row a shard: far apart.
        let rows = [7, 38, 40, 79, 95];
        let taken = remote.take(&rows).unwrap();
        assert_eq!(taken.data(), local.take(&rows).unwrap().data());
        let stats = remote.cache_stats().unwrap();
        // A round for every level of every tensor column; a string's bytes next (none
        // for a null or empty string).
        let requests = |rows: &[usize]| {
            let text = |r: &&usize| varying && !r.is_multiple_of(4) && !r.is_multiple_of(9);
            (rows.len() + rows.iter().filter(text).count()) as u64
        };
        assert_eq!(stats.range_requests, requests(&rows), "{stats:?}");
        assert_eq!(stats.shards_downloaded, 0, "{stats:?}");
        // Other rows of those shards: no metadata read again, one request a row.
        let near = [8, 30, 59, 81];
        let again = remote.take(&near).unwrap();
        assert_eq!(again.data(), local.take(&near).unwrap().data());
        let after = remote.cache_stats().unwrap();
        assert_eq!(after.metadata_requests, stats.metadata_requests);
        let made = after.range_requests - stats.range_requests;
        assert_eq!(made, requests(&near), "{after:?}");
        // Runs, repeats, batch and shard edges, projections; `sample` reads by ranges.
        let mut rng = SplitMix64::new(varying as u64);
        let mut many: Vec<usize> = (0..40).map(|_| (rng.next_u64() % 100) as usize).collect();
        many.extend([0, 19, 20, 21, 21, 99, 60, 61, 62, 63]);
        assert_eq!(
            remote.take(&many).unwrap().data(),
            local.take(&many).unwrap().data()
        );
        let names = ["c5", "ints", "c2"];
        let projected = remote.take_columns(&many, &names).unwrap();
        assert_eq!(
            projected.data(),
            local.take_columns(&many, &names).unwrap().data()
        );
        for row in [3, 42, 99] {
            assert_eq!(remote.sample(row).unwrap(), local.sample(row).unwrap());
        }
        assert_eq!(remote.cache_stats().unwrap().shards_downloaded, 0);
    }
}

/// 40 documents of 0–3 sentences, shards of 20 rows.
fn documents(dir: &Path, ds: &Dataset) {
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(20)).unwrap();
    writer.write(ds).unwrap();
    writer.finish().unwrap();
}

#[test]
fn an_index_lying_about_a_row_s_length_is_a_typed_error_naming_the_shard() {
    let Some(s3) = S3Server::start() else { return };
    let spec = Documents {
        sentences: (0, 3),
        tokens: (1, 4),
        dim: 2,
    };
    let ds = spec.generate(&mut SplitMix64::new(3), 40).unwrap();
    let sentences = |r: usize| {
        let lod = ds.column("tokens").unwrap().lod().clone();
        lod.descend(0, r..r + 1, 1).len()
    };
    let truth = tempfile::tempdir().unwrap();
    documents(truth.path(), &ds);
    let read = ShardedDataset::open(truth.path()).unwrap();
    // Two neighbours of another length, swapped: the shard's sums stay the index's. A
    // row's documents → sentences offsets are the index's (not read); its sentences →
    // tokens offsets are read and checked at the row's edges, where the swap shows when
    // the sentence the index says starts row r + 1 starts elsewhere in the tokens.
    let offsets = |d: &Dataset| d.column("tokens").unwrap().lod().offsets();
    let swap = |r: usize| {
        let mut order: Vec<usize> = (0..40).collect();
        order.swap(r, r + 1);
        read.take(&order).unwrap().data().clone()
    };
    let (r, swapped) = (20..39)
        .filter(|&r| sentences(r) != sentences(r + 1))
        .map(|r| (r, swap(r)))
        .find(|(r, swapped)| {
            let (truth, lying) = (offsets(&ds), offsets(swapped));
            let edge = truth[0][r + 1] as usize;
            truth[1][edge] != lying[1][edge]
        })
        .unwrap();
    let (_dir, local_dir, url, _) = uploaded(&s3, "lying-index", |d| {
        documents(d, &swapped);
        // The shards of `swapped`, the index of `ds`.
        let mut manifest = Manifest::load(d.join(MANIFEST_NAME)).unwrap();
        for entry in &manifest.index {
            std::fs::remove_file(d.join(&entry.file)).unwrap();
        }
        for entry in &read.manifest().index {
            std::fs::copy(truth.path().join(&entry.file), d.join(&entry.file)).unwrap();
        }
        manifest.index = read.manifest().index.clone();
        manifest.write(d.join(MANIFEST_NAME)).unwrap();
    });
    let options = s3
        .options()
        .with_cache_dir(local_dir.with_extension("cache"));
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    let err = remote.take(&[r + 1]).unwrap_err();
    eprintln!("{err}");
    assert!(
        matches!(err.kind(), ErrorKind::Format(FormatError::ShardMismatch { field, .. })
            if field.contains("level 1: offset at index") && field.contains("lengths index")),
        "{err}"
    );
    assert!(
        err.to_string().contains("lying-index/part-00001.arrow"),
        "{err}"
    );
    assert_eq!(err.column(), Some(("tokens", 0)), "{err}");
    // The rows of the first shard agree with the index.
    let local = ShardedDataset::open(&local_dir).unwrap();
    assert_eq!(
        remote.take(&[2, 9]).unwrap().data(),
        local.take(&[2, 9]).unwrap().data()
    );
}

/// The kept footers and messages in the cache under `cache`.
fn kept_layouts(cache: &Path) -> Vec<std::path::PathBuf> {
    let files = files_under(cache).into_iter();
    files
        .filter(|p| p.extension().is_some_and(|e| e == "layout"))
        .collect()
}

#[test]
fn the_next_process_reads_the_footers_and_messages_from_the_node_s_cache() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) =
        uploaded(&s3, "kept", |d| write_sharded(d, &every_dtype(60, false)));
    let local = ShardedDataset::open(&local_dir).unwrap();
    let cache = dir.path().join("cache");
    let options = s3.options().with_cache_dir(&cache);
    let rows = [3, 25, 47, 59];
    let expected = local.take(&rows).unwrap();
    let first = ShardedDataset::open_with(&url, &options).unwrap();
    assert_eq!(first.take(&rows).unwrap().data(), expected.data());
    assert!(first.cache_stats().unwrap().metadata_requests > 0);
    assert_eq!(kept_layouts(&cache).len(), 3);
    // Another process of the node (a dataset opened again): no footer, message or index
    // request, one request a row.
    let second = ShardedDataset::open_with(&url, &options).unwrap();
    assert_eq!(second.take(&rows).unwrap().data(), expected.data());
    let stats = second.cache_stats().unwrap();
    assert_eq!(
        (stats.metadata_requests, stats.range_requests),
        (0, 4),
        "{stats:?}"
    );
    // Entries changed on disk (a flipped bit, a cut, another shard's): read from the store
    // again, and kept again.
    let entries = kept_layouts(&cache);
    let bytes: Vec<Vec<u8>> = entries.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut flipped = bytes[0].clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x08;
    std::fs::write(&entries[0], flipped).unwrap();
    std::fs::write(&entries[1], &bytes[1][..bytes[1].len() - 9]).unwrap();
    std::fs::write(&entries[2], &bytes[0]).unwrap();
    let third = ShardedDataset::open_with(&url, &options).unwrap();
    assert_eq!(third.take(&rows).unwrap().data(), expected.data());
    let stats = third.cache_stats().unwrap();
    assert!(stats.metadata_requests >= 3, "{stats:?}");
    let rewritten: Vec<Vec<u8>> = entries.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(rewritten, bytes);
    let fourth = ShardedDataset::open_with(&url, &options).unwrap();
    fourth.take(&rows).unwrap();
    assert_eq!(fourth.cache_stats().unwrap().metadata_requests, 0);
}

/// Token ids of `rows` documents of 200–600 tokens in one record batch (megabytes: a row's
/// offsets and values far apart), and the same documents split in sentences.
fn large_batch(dir: &Path, rows: usize) {
    let mut rng = SplitMix64::new(5);
    let lengths: Vec<usize> = (0..rows)
        .map(|_| 200 + (rng.next_u64() % 400) as usize)
        .collect();
    let tokens: usize = lengths.iter().sum();
    let ids: Vec<i32> = (0..tokens).map(|i| (i % 50_000) as i32).collect();
    let flat = lodtensor::LodTensor::from_lengths::<arrow_array::types::Int32Type>(
        std::slice::from_ref(&lengths),
        ids.clone(),
        vec![],
    );
    let sentences: Vec<usize> = lengths.iter().map(|&n| n.div_ceil(100)).collect();
    let pieces: Vec<usize> = (lengths.iter())
        .flat_map(|&n| (0..n.div_ceil(100)).map(move |k| (n - 100 * k).min(100)))
        .collect();
    let nested = lodtensor::LodTensor::from_lengths::<arrow_array::types::Int32Type>(
        &[sentences, pieces],
        ids,
        vec![],
    );
    let ds = Dataset::try_new(vec![
        Column::new("flat", flat.unwrap()),
        Column::new("nested", nested.unwrap()),
    ])
    .unwrap();
    let options = ShardOptions::default()
        .with_write_options(WriteOptions::default().with_batch_bytes(64 << 20));
    let mut writer = ShardWriter::create(dir, options).unwrap();
    writer.write(&ds).unwrap();
    writer.finish().unwrap();
}

#[test]
fn a_row_of_a_large_batch_is_one_request_a_level_under_the_documents() {
    let Some(s3) = S3Server::start() else { return };
    let (dir, local_dir, url, _) = uploaded(&s3, "large", |d| large_batch(d, 3000));
    let local = ShardedDataset::open(&local_dir).unwrap();
    let options = s3.options().with_cache_dir(dir.path().join("cache"));
    let remote = ShardedDataset::open_with(&url, &options).unwrap();
    remote.take(&[0]).unwrap(); // The footer and message read first.
    // Documents → tokens: the row's ids alone (its offsets are the lengths index's);
    // documents → sentences → tokens: the sentences' offsets, then the ids.
    for (column, expected) in [("flat", 1), ("nested", 2)] {
        for row in [1500, 2999] {
            let before = remote.cache_stats().unwrap().range_requests;
            let got = remote.take_columns(&[row], &[column]).unwrap();
            assert_eq!(
                got.data(),
                local.take_columns(&[row], &[column]).unwrap().data()
            );
            let made = remote.cache_stats().unwrap().range_requests - before;
            assert_eq!(made, expected, "{column} row {row}");
        }
    }
}
