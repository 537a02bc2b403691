//! Where a batch's buffers lie ([`Batch::place`]): a view batch in the file it was mapped
//! from (by the file's identity when opened, and the offset), over a file, eager shards,
//! lazy shards (the last batch of a shard too, after the loader released it) and packed
//! windows; a batch gathered into shared memory in its region; one on the heap nowhere.

use std::path::{Path, PathBuf};

use lodtensor::arrow::Array;
use lodtensor::io::FileIdentity;
use lodtensor::loader::{Packing, Place};
use lodtensor::shards::{ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Batch, Dataset, Loader, MappedDataset};
use lodtensor::{rng::SplitMix64, synthetic::Documents};

/// 60 documents in shards of 9 rows; returns the directory and its shard files.
fn shards(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let spec = Documents {
        sentences: (1, 4),
        tokens: (1, 5),
        dim: 3,
    };
    let ds: Dataset = spec.generate(&mut SplitMix64::new(3), 60).unwrap();
    let path = dir.join("docs");
    let options = ShardOptions::default().with_shard_rows(9);
    let mut writer = ShardWriter::create(&path, options).unwrap();
    writer.write(&ds).unwrap();
    writer.finish().unwrap();
    let data = ShardedDataset::open(&path).unwrap();
    let files = (data.manifest().shards.iter())
        .map(|s| std::path::absolute(path.join(&s.file)).unwrap())
        .collect();
    (path, files)
}

/// The name and the bytes of the values of the batch's first column (a tensor).
fn values_bytes(batch: &Batch) -> (String, Vec<u8>) {
    let column = &batch.data().columns()[0];
    let t = column.as_tensor().expect("a tensor column");
    let (values, elements) = (t.values(), t.elements());
    let data = values.items().to_data();
    let item = values.dtype().byte_width().unwrap();
    let start = (data.offset() + elements.start * values.element_size()) * item;
    let len = elements.len() * values.element_size() * item;
    let bytes = data.buffers()[0].as_slice()[start..start + len].to_vec();
    (column.name().to_owned(), bytes)
}

/// Checks that every view batch of `loader` says it lies in one of `files`, unchanged
/// since, at an offset where the file holds its values, and that a batch gathered on the
/// heap lies nowhere; returns how many views there were.
fn check_views(loader: &mut Loader, files: &[PathBuf]) -> usize {
    let mut views = 0;
    while let Some(batch) = loader.next_batch().unwrap() {
        let (name, expected) = values_bytes(&batch);
        let place = batch.values_place(&name).unwrap();
        if !batch.is_view() {
            assert!(place.is_none(), "a batch gathered on the heap: {place:?}");
            continue;
        }
        views += 1;
        let Some(Place::File { file, offset }) = place else {
            panic!("view batch {} lies nowhere: {place:?}", batch.index());
        };
        assert!(
            files.iter().any(|f| f == file.path()),
            "{}",
            file.path().display()
        );
        let now = FileIdentity::of(&std::fs::metadata(file.path()).unwrap());
        assert_eq!(*file.identity(), now);
        let bytes = std::fs::read(file.path()).unwrap();
        assert_eq!(&bytes[offset..offset + expected.len()], expected);
    }
    views
}

#[test]
fn view_batches_lie_in_their_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, files) = shards(dir.path());
    // One shard as a file.
    let file = MappedDataset::open(&files[0]).unwrap();
    let mut loader = Loader::builder(&file).with_batch_size(4).build().unwrap();
    assert_eq!(check_views(&mut loader, &files[..1]), 3);
    // Shards mapped eagerly (buckets need lengths) and lazily (each released after its
    // last batch, which still names its file).
    let data = ShardedDataset::open(&path).unwrap();
    let mut eager = Loader::builder(&data)
        .with_batch_size(4)
        .with_buckets(vec![8])
        .build()
        .unwrap();
    assert!(check_views(&mut eager, &files) > 0);
    let mut lazy = Loader::builder(&data).with_batch_size(3).build().unwrap();
    assert_eq!(check_views(&mut lazy, &files), 20); // 9 rows a shard: every batch a view
    // Packed windows, views where a run of documents lies in one record batch.
    let mut packed = Loader::builder(&data)
        .with_batch_size(1)
        .with_packing(Packing::new(4))
        .build()
        .unwrap();
    assert!(check_views(&mut packed, &files) > 0);
}

#[cfg(target_os = "linux")]
#[test]
fn a_shuffled_batch_lies_in_its_region_or_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let (_, files) = shards(dir.path());
    let file = MappedDataset::open(&files[0]).unwrap();
    let mut heap = Loader::builder(&file)
        .with_batch_size(9)
        .with_shuffle(1)
        .build()
        .unwrap();
    assert_eq!(check_views(&mut heap, &files), 0);
    let mut shared = Loader::builder(&file)
        .with_batch_size(9)
        .with_shuffle(1)
        .with_shared_memory(true)
        .build()
        .unwrap();
    let batch = shared.next_batch().unwrap().unwrap();
    let (name, expected) = values_bytes(&batch);
    match batch.values_place(&name).unwrap() {
        Some(Place::Shared { region, offset }) => {
            assert!(offset >= lodtensor::loader::SharedMemory::HEADER);
            assert!(offset + expected.len() <= region.len());
            let address = region.as_ptr() as usize + offset;
            assert!(matches!(
                batch.place(address, expected.len()),
                Some(Place::Shared { .. })
            ));
            assert!(batch.place(address, region.len()).is_none()); // runs past its end
        }
        other => panic!("a batch gathered into shared memory lies there, not {other:?}"),
    }
}
