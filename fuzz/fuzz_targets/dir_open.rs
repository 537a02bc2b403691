//! Bytes as a sharded dataset directory: a manifest and shard files, separated by the
//! marker `\0SHARD\0` (the first part is `_lodtensor.json`, the next `part-00000.arrow`,
//! `part-00001.arrow`, …). With the first byte odd, each listed shard's `bytes` and
//! `crc32c` in a manifest that parses are set to those of the file written, so the checks
//! past the checksum (rows, batches, columns, counts) are reached too; after the marker
//! `\0NUM\0` at the end, numeric overrides (`lodtensor_fuzz::apply_numbers`) are set in
//! the manifest then (forged rows, bytes, counts, index entries over real shards). Then
//! `ShardedDataset::open`, `validate`, and a read of every shard and of all rows across
//! shards: errors, never a panic, and every view inside its shard's mapping.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::shards::{MANIFEST_NAME, Manifest, ShardedDataset};
use lodtensor_fuzz::{apply_numbers, read_everything, scratch_dir, split_files, split_numbers};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, data)) = data.split_first() else {
        return;
    };
    let (data, numbers) = split_numbers(data);
    let dir = scratch_dir().join("dir_open");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a dataset directory");
    let parts = split_files(data);
    for (i, shard) in parts.iter().enumerate().skip(1).take(8) {
        std::fs::write(dir.join(format!("part-{:05}.arrow", i - 1)), shard).expect("a shard");
    }
    let mut manifest_bytes = parts[0].to_vec();
    if (flags & 1 == 1 || !numbers.is_empty())
        && let Ok(mut manifest) = std::str::from_utf8(parts[0])
            .map_err(|_| ())
            .and_then(|t| Manifest::parse(t).map_err(|_| ()))
    {
        if flags & 1 == 1 {
            for entry in &mut manifest.shards {
                if let Ok(bytes) = std::fs::read(dir.join(&entry.file)) {
                    entry.bytes = bytes.len() as u64;
                    entry.crc32c = crc32c::crc32c(&bytes);
                }
            }
        }
        apply_numbers(&mut manifest, numbers);
        manifest_bytes = manifest.to_json().into_bytes();
    }
    std::fs::write(dir.join(MANIFEST_NAME), &manifest_bytes).expect("the manifest");
    let Ok(data) = ShardedDataset::open(&dir) else {
        return;
    };
    let valid = data.validate().is_ok();
    for s in 0..data.num_shards() {
        if let Ok(shard) = data.shard(s) {
            read_everything(shard);
        }
    }
    if valid {
        let rows = data
            .rows(0..data.num_rows())
            .expect("a valid dataset reads");
        let total: usize = rows.iter().map(|d| d.num_rows()).sum();
        assert_eq!(total, data.num_rows());
        if data.num_rows() > 0 {
            data.sample(data.num_rows() - 1)
                .expect("the last row reads");
        }
    }
});
