//! Sharded datasets: written with random roll points they read back as the single file
//! would; corrupted manifests and shards give errors naming them; appends and independent
//! writers; a writer killed with SIGKILL at random moments leaves a complete dataset.

mod corruption;
mod writers;

use std::ops::Range;
use std::path::Path;

use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::Loader;
use lodtensor::shards::{
    MANIFEST_NAME, Manifest, ShardOptions, ShardWriter, ShardedDataset, commit,
};
use lodtensor::{Dataset, ErrorKind};
use lodtensor::{rng::SplitMix64, synthetic::Documents};
use proptest::prelude::*;

/// Small documents: 0–4 sentences of 1–5 tokens of 3 floats, and a label per document
/// equal to its row in the dataset plus `first`.
fn documents(seed: u64, docs: usize, first: i64) -> Dataset {
    let spec = Documents {
        sentences: (0, 4),
        tokens: (1, 5),
        dim: 3,
    };
    let ds = spec.generate(&mut SplitMix64::new(seed), docs).unwrap();
    let labels = (first..first + docs as i64).collect();
    let label = lodtensor::LodTensor::try_new(
        lodtensor::Lod::default(),
        lodtensor::Values::from_vec::<Int64Type>(labels, vec![]).unwrap(),
    )
    .unwrap();
    Dataset::try_new(vec![
        ds.columns()[0].clone(),
        lodtensor::Column::new("label", label),
    ])
    .unwrap()
}

/// The lengths of both levels, the values and the labels of views, in order.
type Flat = (Vec<usize>, Vec<usize>, Vec<f32>, Vec<i64>);

fn flatten(parts: &[Dataset]) -> Flat {
    let mut flat = Flat::default();
    for part in parts {
        let tokens = part.column("tokens").unwrap();
        flat.0.extend(tokens.lod().level_lengths(0).unwrap());
        flat.1.extend(tokens.lod().level_lengths(1).unwrap());
        flat.2.extend(tokens.typed_values::<Float32Type>().unwrap());
        let label = part.column("label").unwrap();
        flat.3.extend(label.typed_values::<Int64Type>().unwrap());
    }
    flat
}

/// Writes `ds` in pieces cut at `cuts` (fractions of the rows) through a shard writer.
fn write_pieces(dir: &Path, ds: &Dataset, cuts: &[f64], options: ShardOptions) -> Manifest {
    let rows = ds.num_rows();
    let mut ends: Vec<usize> = cuts.iter().map(|c| (c * rows as f64) as usize).collect();
    ends.push(rows);
    ends.sort_unstable();
    let mut writer = ShardWriter::create(dir, options).unwrap();
    let mut start = 0;
    for end in ends {
        writer.write(&ds.slice_rows(start..end).unwrap()).unwrap();
        start = end;
    }
    writer.finish().unwrap()
}

fn in_mapping(view: &Dataset, data: &ShardedDataset, shard: usize) -> bool {
    let mapping = data.shard(shard).unwrap().as_bytes().as_ptr_range();
    let values = view.column("tokens").unwrap().values().as_ptr();
    view.column("tokens").unwrap().elements().is_empty() || mapping.contains(&values)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn shards_read_as_the_single_file(
        docs in 1usize..40,
        seed in 0u64..1000,
        cuts in prop::collection::vec(0.0f64..1.0, 0..4),
        shard_rows in prop::option::of(1usize..12),
        shard_bytes in prop::option::of(16usize..2000),
        range in (0.0f64..1.0, 0.0f64..1.0),
    ) {
        let ds = documents(seed, docs, 0);
        let dir = tempfile::tempdir().unwrap();
        let mut options = ShardOptions::default();
        if let Some(rows) = shard_rows {
            options = options.with_shard_rows(rows);
        }
        if let Some(bytes) = shard_bytes {
            options = options.with_shard_bytes(bytes);
        }
        let manifest = write_pieces(dir.path(), &ds, &cuts, options);
        let data = ShardedDataset::open(dir.path()).unwrap();
        prop_assert_eq!(&Manifest::load(dir.path().join(MANIFEST_NAME)).unwrap(), &manifest);
        prop_assert_eq!(data.num_rows(), docs);
        if let Some(limit) = shard_rows {
            prop_assert!(manifest.shards.iter().all(|s| s.rows <= limit && s.rows > 0));
        }
        data.validate().unwrap();
        for row in 0..docs {
            let sample = data.sample(row).unwrap();
            let expected = ds.slice_rows(row..row + 1).unwrap();
            prop_assert_eq!(flatten(std::slice::from_ref(&sample)), flatten(&[expected]));
            prop_assert!(in_mapping(&sample, &data, data.locate_row(row).unwrap().0));
        }
        let (a, b) = ((range.0 * docs as f64) as usize, (range.1 * docs as f64) as usize);
        let rows: Range<usize> = a.min(b)..a.max(b);
        prop_assert_eq!(
            flatten(&data.rows(rows.clone()).unwrap()),
            flatten(&[ds.slice_rows(rows).unwrap()])
        );
        let tokens = ds.column("tokens").unwrap();
        let sum = |level: usize| manifest.shards.iter().map(|s| s.columns[0].sequences[level]).sum::<usize>();
        prop_assert_eq!(sum(1), tokens.lod().num_sequences(1).unwrap());
        let elements: usize = manifest.shards.iter().map(|s| s.columns[0].elements).sum();
        prop_assert_eq!(elements, tokens.elements().len());
    }
}

/// Loader options by number: in order, token budgets, shuffled, buckets, drop last.
fn loader_mode(
    b: lodtensor::LoaderBuilder<'_>,
    mode: usize,
    seed: u64,
) -> lodtensor::LoaderBuilder<'_> {
    match mode {
        0 => b.with_batch_size(3),
        1 => b.with_token_budget(12),
        2 => b.with_batch_size(4).with_shuffle(seed),
        3 => b
            .with_token_budget(10)
            .with_quantile_buckets(3)
            .with_shuffle(seed),
        _ => b.with_batch_size(2).with_drop_last(true),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// The loader over shards makes the batches the loader over the single file makes
    /// (same options, same samples in the same order), in every mode whose plan does not
    /// follow record batches; a batch inside one record batch of a shard is a view of
    /// that shard's mapping; with a chunk shuffle (runs within a shard's record batches)
    /// the ranks together see every sample once.
    #[test]
    fn the_loader_over_shards_is_the_loader_over_the_file(
        docs in 1usize..60,
        seed in 0u64..1000,
        shard_rows in 1usize..12,
        mode in 0usize..5,
        world_size in 1usize..4,
    ) {
        use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
        use lodtensor::{Loader, MappedDataset};
        let ds = documents(seed, docs, 0);
        let dir = tempfile::tempdir().unwrap();
        let shards_dir = dir.path().join("shards");
        write_pieces(&shards_dir, &ds, &[0.5], ShardOptions::default().with_shard_rows(shard_rows));
        let path = dir.path().join("one.arrow");
        let mut writer = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
        writer.write(&ds).unwrap();
        writer.finish().unwrap();
        let (file, shards) = (MappedDataset::open(&path).unwrap(), ShardedDataset::open(&shards_dir).unwrap());
        let options = |b, rank| loader_mode(b, mode, seed).shard(rank, world_size);
        let mut seen = vec![0; docs];
        for rank in 0..world_size {
            let mut from_file = options(Loader::builder(&file), rank).build().unwrap();
            // Every shard mapped at build: a view is of the dataset's own mapping (a lazy
            // loader maps shards of its own: tests/it/lazy_shards.rs).
            let eager = options(Loader::builder(&shards), rank).with_lazy_shards(false);
            let mut from_shards = eager.build().unwrap();
            for epoch in 0..2 {
                from_file.set_epoch(epoch);
                from_shards.set_epoch(epoch);
                loop {
                    let (a, b) = (from_file.next_batch().unwrap(), from_shards.next_batch().unwrap());
                    prop_assert_eq!(a.is_some(), b.is_some());
                    let (Some(a), Some(b)) = (a, b) else { break };
                    prop_assert_eq!(a.samples(), b.samples());
                    prop_assert_eq!(flatten(&[a.data().clone()]), flatten(&[b.data().clone()]));
                    if b.is_view() {
                        let shard = shards.locate_row(b.samples()[0]).unwrap().0;
                        prop_assert!(in_mapping(b.data(), &shards, shard));
                    }
                }
            }
            // A chunk shuffle over the shards: every sample once across the ranks.
            let mut chunks = Loader::builder(&shards)
                .shard(rank, world_size)
                .with_chunk_shuffle(seed, 3)
                .build()
                .unwrap();
            while let Some(batch) = chunks.next_batch().unwrap() {
                for &s in batch.samples() {
                    seen[s] += 1;
                }
            }
        }
        prop_assert!(seen.iter().all(|&n| n == 1), "{:?}", seen);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// The windowed shuffle over shards: the ranks together see every sample once, the
    /// same on every build; with a window of 1 each shard's samples come together, in runs
    /// of consecutive samples that start at a chunk start of their shard's record batches.
    #[test]
    fn the_windowed_shuffle_reads_shards_then_runs(
        docs in 1usize..60,
        seed in 0u64..1000,
        shard_rows in 1usize..12,
        rows in 1usize..5,
        window in 1usize..20,
        world_size in 1usize..4,
    ) {
        use lodtensor::Loader;
        let ds = documents(seed, docs, 0);
        let dir = tempfile::tempdir().unwrap();
        write_pieces(dir.path(), &ds, &[0.5], ShardOptions::default().with_shard_rows(shard_rows));
        let shards = ShardedDataset::open(dir.path()).unwrap();
        let mut seen = vec![0; docs];
        for rank in 0..world_size {
            let build = || Loader::builder(&shards)
                .with_windowed_shuffle(seed, rows, window)
                .shard(rank, world_size)
                .build()
                .unwrap();
            let plan = build().plan(1);
            prop_assert_eq!(&plan, &build().plan(1));
            let mut loader = build();
            loader.set_epoch(1);
            while let Some(batch) = loader.next_batch().unwrap() {
                for &s in batch.samples() {
                    seen[s] += 1;
                }
            }
        }
        prop_assert!(seen.iter().all(|&n| n == 1), "{:?}", seen);
        let plan = Loader::builder(&shards).with_windowed_shuffle(seed, rows, 1).build().unwrap().plan(0);
        let order = plan.samples();
        let shard_of = |s: usize| shards.locate_row(s).unwrap().0;
        let mut done = std::collections::HashSet::new();
        for (i, w) in order.windows(2).enumerate() {
            if shard_of(w[0]) != shard_of(w[1]) {
                prop_assert!(done.insert(shard_of(w[0])), "shard {} split at {}", shard_of(w[0]), i);
            }
        }
        prop_assert!(!done.contains(&shard_of(order[order.len() - 1])));
    }
}

/// A dataset of 3 shards of 4 rows.
fn three_shards(dir: &Path) {
    let mut writer = ShardWriter::create(dir, ShardOptions::default().with_shard_rows(4)).unwrap();
    writer.write(&documents(1, 12, 0)).unwrap();
    assert_eq!(writer.finish().unwrap().shards.len(), 3);
}

#[test]
fn side_columns_ride_along_in_shards_and_the_loader_over_them() {
    use arrow_array::builder::{BooleanBuilder, ListBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, DictionaryArray, RecordBatch, StringArray};
    use lodtensor::Column;
    use std::sync::Arc;
    let docs = 23;
    let ds = documents(5, docs, 0);
    let ids: ArrayRef = Arc::new(StringArray::from_iter(
        (0..docs).map(|r| (r % 5 != 2).then(|| format!("doc-{r}"))),
    ));
    let lang: DictionaryArray<Int32Type> = (0..docs).map(|r| ["en", "fr"][r % 2]).collect();
    let mut flags = ListBuilder::new(BooleanBuilder::new());
    for r in 0..docs {
        match r % 7 {
            3 => flags.append_null(),
            _ => flags.append_value([Some(r % 2 == 0), (r % 3 != 1).then_some(true)]),
        }
    }
    let mut columns = ds.columns().to_vec();
    columns.insert(1, Column::side("id", ids).unwrap());
    columns.push(Column::side("lang", Arc::new(lang)).unwrap());
    columns.push(Column::side("flags", Arc::new(flags.finish())).unwrap());
    let ds = Dataset::try_new(columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ShardOptions::default().with_shard_rows(4);
    let manifest = write_pieces(dir.path(), &ds, &[0.3, 0.6], options);
    let text = std::fs::read_to_string(dir.path().join(MANIFEST_NAME)).unwrap();
    assert!(text.contains("\"version\": 2"), "{text}");
    assert_eq!(Manifest::parse(&text).unwrap(), manifest);
    let side = &manifest.columns[1];
    assert_eq!(
        side.side.as_ref().unwrap().data_type(),
        &arrow_schema::DataType::Utf8
    );
    // Read back: the rows are the dataset's, side columns included.
    let data = ShardedDataset::open(dir.path()).unwrap();
    data.validate().unwrap();
    assert!(data.num_shards() > 3);
    let whole = |parts: &[Dataset]| {
        let batches: Vec<RecordBatch> = parts.iter().map(Dataset::to_record_batch).collect();
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    };
    assert_eq!(whole(&data.rows(0..docs).unwrap()), ds.to_record_batch());
    // The loader gathers side columns across shards, row for row.
    let mut loader = Loader::builder(&data)
        .with_batch_size(5)
        .with_shuffle(3)
        .build()
        .unwrap();
    let mut seen = 0;
    while let Some(batch) = loader.next_batch().unwrap() {
        let rows: Vec<Dataset> = (batch.samples().iter())
            .map(|&r| ds.slice_rows(r..r + 1).unwrap())
            .collect();
        assert_eq!(batch.data().to_record_batch(), whole(&rows));
        seen += batch.samples().len();
    }
    assert_eq!(seen, docs);
}

/// A dataset's place given as a path, a string with a `:` or a `file://` URL is one
/// directory; a string of another scheme is a URL, never a directory of that name.
#[test]
fn a_location_is_a_path_or_a_url_decided_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data:v1");
    let pending = ShardOptions::default().with_prefix("w0");
    let mut writer = ShardWriter::pending(&dir, pending).unwrap();
    writer.write(&documents(3, 10, 0)).unwrap();
    writer.finish().unwrap();
    let text = dir.to_str().unwrap();
    let url = format!("file://{}", text.replace(' ', "%20"));
    assert_eq!(commit(url.as_str()).unwrap().shards.len(), 1);
    let by_path = ShardedDataset::open(&dir).unwrap();
    for place in [
        text.to_owned(),
        url.clone(),
        format!("file://localhost{text}"),
    ] {
        let data = ShardedDataset::open(place.as_str()).unwrap();
        assert_eq!(data.manifest(), by_path.manifest(), "{place}");
    }
    // Another scheme goes to the stores (or, without the `remote` feature, is refused as a
    // URL): an argument error naming it, not a missing directory.
    let err = ShardedDataset::open("memory://bucket/data/").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Argument(_)), "{err}");
    assert!(err.to_string().contains("memory://bucket/data/"), "{err}");
    let err = commit("memory://bucket/data/").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Argument(_)), "{err}");
}
