//! Raw bytes as a sharded dataset's manifest (`_lodtensor.json`): `Manifest::parse` must
//! give a manifest or an error, never panic; an error is one line of bounded length (no
//! value of the input echoed whole); what parses writes back to JSON that parses to the
//! same manifest, and `Manifest::load` of the same bytes from a file agrees.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::shards::Manifest;
use lodtensor_fuzz::scratch_dir;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Manifest::parse(text);
    match &parsed {
        Ok(manifest) => {
            let again = Manifest::parse(&manifest.to_json()).expect("written manifests parse");
            assert_eq!(&again, manifest);
        }
        Err(e) => {
            let message = e.to_string();
            assert!(
                message.len() < 1000,
                "a long error: {} bytes",
                message.len()
            );
            assert!(!message.contains('\n'), "a multi-line error: {message}");
        }
    }
    let path = scratch_dir().join("_lodtensor.json");
    std::fs::write(&path, data).expect("writing the manifest");
    let loaded = Manifest::load(&path);
    assert_eq!(loaded.is_ok(), parsed.is_ok());
    if let (Ok(a), Ok(b)) = (loaded, parsed) {
        assert_eq!(a, b);
    }
});
