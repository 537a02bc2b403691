//! Writes the seed corpora under `fuzz/seeds/`: small valid files of each kind.
//!
//! `cargo run --release --example make_seeds` from `fuzz/`.

use std::path::Path;

use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::io::paddle;
use lodtensor::io::parquet::{ParquetWriteOptions, write_parquet};
use lodtensor::shards::{MANIFEST_NAME, Manifest, ShardOptions, ShardWriter};
use lodtensor::{Column, DType, Dataset, OffsetWidth};
use lodtensor_fuzz::tensor_of;

fn dataset(levels: usize, dtype: DType, shape: Vec<usize>, width: OffsetWidth) -> Dataset {
    let all = [vec![2, 0, 1], vec![1, 3, 2], vec![2, 1, 0, 1, 2, 1]];
    let lengths = all[..levels].to_vec();
    let elements = if levels == 0 {
        3
    } else {
        lengths[levels - 1].iter().sum()
    };
    let items: Vec<i64> = (0..elements * shape.iter().product::<usize>() as usize)
        .map(|i| i as i64 - 3)
        .collect();
    let x = tensor_of(&lengths, dtype, shape, &items, width).expect("a valid tensor");
    let label = tensor_of(&[], DType::Int64, vec![], &[7, 8, 9], width).expect("labels");
    Dataset::try_new(vec![Column::new("x", x), Column::new("label", label)]).expect("3 rows")
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let cases = [
        (0, DType::Float32, vec![], OffsetWidth::I32, 1 << 20),
        (1, DType::Int64, vec![], OffsetWidth::I64, 1 << 20),
        (2, DType::Float32, vec![2], OffsetWidth::I32, 64),
        (3, DType::Bool, vec![], OffsetWidth::I64, 1 << 20),
        (2, DType::Float16, vec![2, 2], OffsetWidth::I64, 1 << 20),
    ];
    let ipc = root.join("ipc_open");
    let pq = root.join("parquet_read");
    let pd = root.join("paddle_record");
    let direct = root.join("parquet_direct");
    let manifests = root.join("manifest_parse");
    let dirs = root.join("dir_open");
    let pendings = root.join("pending_commit");
    for dir in [&ipc, &pq, &pd, &direct, &manifests, &dirs, &pendings] {
        std::fs::create_dir_all(dir).expect("a seed directory");
    }
    for (i, (levels, dtype, shape, width, batch)) in cases.into_iter().enumerate() {
        let ds = dataset(levels, dtype, shape, width);
        let path = ipc.join(format!("levels{levels}_{}.arrow", dtype.name()));
        let options = WriteOptions::default()
            .with_batch_bytes(batch)
            .with_offset_width(width);
        let mut w = DatasetWriter::create(&path, options).expect("creating a seed");
        w.write(&ds).expect("writing a seed");
        w.finish().expect("finishing a seed");
        if i < 3 {
            let path = pq.join(format!("levels{levels}_{}.parquet", dtype.name()));
            write_parquet(&path, [&ds], &ParquetWriteOptions::default()).expect("a parquet seed");
            std::fs::copy(&path, direct.join(path.file_name().expect("a name")))
                .expect("a direct-decoder seed");
            let path = direct.join(format!(
                "levels{levels}_{}_dictionary.parquet",
                dtype.name()
            ));
            let options = ParquetWriteOptions::default().with_dictionary(true);
            write_parquet(&path, [&ds], &options).expect("a dictionary-encoded seed");
        }
        sharded_seed(&ds, i, &manifests, &dirs);
        pending_seed(&ds, i, &pendings);
        if dtype != DType::Float16 || i == 4 {
            let bytes = paddle::to_bytes(ds.column("x").expect("x")).expect("a paddle seed");
            std::fs::write(
                pd.join(format!("levels{levels}_{}.pdtensor", dtype.name())),
                bytes,
            )
            .expect("writing a paddle seed");
        }
    }
}

/// A sharded dataset of `ds` (shards of 2 rows): its manifest as a `manifest_parse` seed,
/// and the manifest and shards joined by `\0SHARD\0` as a `dir_open` seed (first byte 0).
fn sharded_seed(ds: &Dataset, i: usize, manifests: &Path, dirs: &Path) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let options = ShardOptions::default().with_shard_rows(2);
    let mut writer = ShardWriter::create(tmp.path(), options).expect("a shard writer");
    writer.write(ds).expect("writing shards");
    writer.finish().expect("finishing shards");
    let manifest = std::fs::read(tmp.path().join(MANIFEST_NAME)).expect("the manifest");
    std::fs::write(manifests.join(format!("dataset{i}.json")), &manifest).expect("a seed");
    let mut joined = vec![0u8];
    joined.extend_from_slice(&manifest);
    let parsed = Manifest::parse(std::str::from_utf8(&manifest).expect("UTF-8")).expect("parses");
    for entry in &parsed.shards {
        joined.extend_from_slice(lodtensor_fuzz::SHARD);
        joined.extend(std::fs::read(tmp.path().join(&entry.file)).expect("a shard"));
    }
    std::fs::write(dirs.join(format!("dataset{i}.bin")), joined).expect("a seed");
}

/// A dataset of `ds`'s first 2 rows and a pending writer `w1` of all of `ds` (shards of 2
/// rows), joined by `\0SHARD\0` as a `pending_commit` seed: the dataset's manifest, the
/// pending manifest, the staged shards.
fn pending_seed(ds: &Dataset, i: usize, pendings: &Path) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let options = ShardOptions::default().with_shard_rows(2);
    let mut writer = ShardWriter::create(tmp.path(), options.clone()).expect("a shard writer");
    writer
        .write(&ds.slice_rows(0..2).expect("2 rows"))
        .expect("writing shards");
    writer.finish().expect("finishing shards");
    let mut writer = ShardWriter::pending(tmp.path(), options.with_prefix("w1")).expect("pending");
    writer.write(ds).expect("writing pending shards");
    writer.finish().expect("finishing pending shards");
    let pending = std::fs::read(tmp.path().join("_lodtensor.pending.w1.json")).expect("pending");
    let mut joined = std::fs::read(tmp.path().join(MANIFEST_NAME)).expect("the manifest");
    joined.extend_from_slice(lodtensor_fuzz::SHARD);
    joined.extend_from_slice(&pending);
    let parsed = Manifest::parse(std::str::from_utf8(&pending).expect("UTF-8")).expect("parses");
    let staged = tmp.path().join("_pending").join("w1.pending");
    for entry in &parsed.shards {
        joined.extend_from_slice(lodtensor_fuzz::SHARD);
        joined.extend(std::fs::read(staged.join(&entry.file)).expect("a staged shard"));
    }
    std::fs::write(pendings.join(format!("dataset{i}.bin")), joined).expect("a seed");
}
