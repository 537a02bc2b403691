//! Raw bytes as a sharded dataset's manifest (`_lodtensor.json`): `Manifest::parse` must
//! give a manifest or an error, never panic; an error is one line of bounded length (no
//! value of the input echoed whole); what parses writes back to JSON that parses to the
//! same manifest, and `Manifest::load` of the same bytes from a file agrees. After the
//! marker `\0NUM\0`, numeric overrides (`lodtensor_fuzz::apply_numbers`: a shard's rows,
//! batches, bytes, checksum, column counts; an index entry's shards, bytes, checksum) are
//! set in the manifest parsed, which is written and parsed again under the same rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::shards::Manifest;
use lodtensor_fuzz::{apply_numbers, assert_bounded, scratch_dir, split_numbers};

fuzz_target!(|data: &[u8]| {
    let (data, numbers) = split_numbers(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Manifest::parse(text);
    match &parsed {
        Ok(manifest) => {
            let again = Manifest::parse(&manifest.to_json()).expect("written manifests parse");
            assert_eq!(&again, manifest);
            if !numbers.is_empty() {
                let mut forged = manifest.clone();
                apply_numbers(&mut forged, numbers);
                match Manifest::parse(&forged.to_json()) {
                    Ok(m) => assert_eq!(m, forged),
                    Err(e) => assert_bounded(&e),
                }
            }
        }
        Err(e) => assert_bounded(e),
    }
    let path = scratch_dir().join("_lodtensor.json");
    std::fs::write(&path, data).expect("writing the manifest");
    let loaded = Manifest::load(&path);
    assert_eq!(loaded.is_ok(), parsed.is_ok());
    if let (Ok(a), Ok(b)) = (loaded, parsed) {
        assert_eq!(a, b);
    }
});
