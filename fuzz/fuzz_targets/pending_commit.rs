//! Bytes as a dataset directory with an independent writer's pending work, split at the
//! marker `\0SHARD\0`: the dataset's manifest (`_lodtensor.json`, none when empty), the
//! pending manifest `_lodtensor.pending.w1.json`, then up to 8 staged shard files
//! (`_pending/w1.pending/w1-00000.arrow`, …). After the marker `\0NUM\0` at the end,
//! numeric overrides (`lodtensor_fuzz::apply_numbers`) are set in the pending manifest if
//! it parses. `shards::commit` must merge or refuse: an error is one line under 1,000
//! bytes, never a panic; a commit that succeeds has published a manifest that loads equal
//! to the one returned, and committing again changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::shards::{MANIFEST_NAME, Manifest, commit};
use lodtensor_fuzz::{apply_numbers, assert_bounded, scratch_dir, split_files, split_numbers};

fuzz_target!(|data: &[u8]| {
    let (data, numbers) = split_numbers(data);
    let parts = split_files(data);
    if parts.len() < 2 {
        return;
    }
    let dir = scratch_dir().join("pending_commit");
    let _ = std::fs::remove_dir_all(&dir);
    let staged = dir.join("_pending").join("w1.pending");
    std::fs::create_dir_all(&staged).expect("a staging directory");
    if !parts[0].is_empty() {
        std::fs::write(dir.join(MANIFEST_NAME), parts[0]).expect("the manifest");
    }
    let mut pending = parts[1].to_vec();
    if !numbers.is_empty()
        && let Ok(mut manifest) = std::str::from_utf8(parts[1])
            .map_err(|_| ())
            .and_then(|t| Manifest::parse(t).map_err(|_| ()))
    {
        apply_numbers(&mut manifest, numbers);
        pending = manifest.to_json().into_bytes();
    }
    std::fs::write(dir.join("_lodtensor.pending.w1.json"), &pending).expect("pending");
    for (i, shard) in parts.iter().enumerate().skip(2).take(8) {
        std::fs::write(staged.join(format!("w1-{:05}.arrow", i - 2)), shard).expect("a shard");
    }
    match commit(&dir) {
        Ok(manifest) => {
            let published = Manifest::load(dir.join(MANIFEST_NAME)).expect("published parses");
            assert_eq!(published, manifest);
            let again = commit(&dir).expect("a second commit");
            assert_eq!(again, manifest);
        }
        Err(e) => assert_bounded(&e),
    }
});
